//! Notes end to end through the binary: extraction against the loopback Messages API stand-in (the request's
//! shape, redaction, idempotence, re-extraction of new messages only, bad tool input, provider errors, the
//! budget), the hooks (context bound, consent, the guard), the detached worker, and the CLI around the store.

use crate::common;

use common::home::Home;
use common::standin::{Reply, StandIn};
use common::{run_json, run_ok};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

const SESSION: &str = "5e551011-aaaa-4bbb-8ccc-000000000001";
const SECRET: &str = "sk-ant-api03-SECRETSECRETSECRETSECRET0123456789";

/// A scratch machine (`common::home::Home`) with one project, `/work/payments`.
struct Machine {
    home: Home,
    project: String,
}

impl std::ops::Deref for Machine {
    type Target = Home;
    fn deref(&self) -> &Home {
        &self.home
    }
}

impl Machine {
    fn new() -> Machine {
        let m = Machine {
            home: Home::new(),
            project: "/work/payments".into(),
        };
        std::fs::create_dir_all(&m.claude).unwrap();
        m
    }

    fn transcript(&self, session: &str) -> PathBuf {
        self.claude
            .join("projects/-work-payments")
            .join(format!("{session}.jsonl"))
    }

    /// Appends user/assistant turns to a session's transcript.
    fn append(&self, session: &str, turns: &[(&str, &str)], start: usize) {
        let path = self.transcript(session);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut text = String::new();
        for (k, (q, a)) in turns.iter().enumerate() {
            let n = start + k;
            let parent = if n == 0 {
                Value::Null
            } else {
                json!(format!("{session}-a{}", n - 1))
            };
            let common = |t: &str, uuid: String, parent: Value| {
                json!({"uuid": uuid, "parentUuid": parent, "sessionId": session, "cwd": self.project,
                       "timestamp": format!("2026-11-2{}T10:{:02}:00Z", 1 + n / 50, n % 50), "isSidechain": false,
                       "userType": "external", "version": "2.1.330", "type": t})
            };
            let mut u = common("user", format!("{session}-u{n}"), parent);
            u["message"] = json!({"role": "user", "content": q});
            let mut a_ = common(
                "assistant",
                format!("{session}-a{n}"),
                json!(format!("{session}-u{n}")),
            );
            a_["message"] = json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": a}],
                "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}});
            text.push_str(&format!("{u}\n{a_}\n"));
        }
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }

    fn ghola(&self, api: Option<&str>) -> Command {
        let mut c = self.home.ghola();
        c.env_remove("GHOLA_HOOKS_OFF")
            .env_remove("GHOLA_NOTES_MODEL")
            .env("GHOLA_CLAUDE_BIN", "/nonexistent/claude")
            .env("PATH", "/usr/bin:/bin");
        match api {
            Some(url) => c
                .env("ANTHROPIC_BASE_URL", url)
                .env("ANTHROPIC_API_KEY", "test-key"),
            None => c
                .env_remove("ANTHROPIC_BASE_URL")
                .env_remove("ANTHROPIC_API_KEY"),
        };
        c
    }

    fn notes_dir_of_project(&self) -> PathBuf {
        let projects = self.notes.join("projects");
        std::fs::read_dir(&projects)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains("-work-payments-"))
            .unwrap()
    }
}

/// `ghola notes extract --project P --json` against the stand-in.
fn extract(m: &Machine, standin: &StandIn) -> Value {
    run_json(m.ghola(Some(&standin.url)).args([
        "notes",
        "extract",
        "--project",
        &m.project,
        "--json",
    ]))
}

/// [`extract`], which must extract its one window; returns the requests the stand-in saw.
fn extracted(m: &Machine, standin: &StandIn) -> Vec<Value> {
    let out = extract(m, standin);
    assert_eq!(
        out["windows"][0]["result"]["outcome"], "extracted",
        "{out:#}"
    );
    standin.requests()
}

/// `ghola notes show --project P --json`.
fn shown_notes(m: &Machine) -> Value {
    run_json(
        m.ghola(None)
            .args(["notes", "show", "--project", &m.project, "--json"]),
    )
}

fn first_session(m: &Machine) {
    m.append(
        SESSION,
        &[
            (
                &format!("Set up the ledger client. My key is {SECRET}, keep it out of the repo."),
                "Done. I chose bincode over JSON for the ledger cache because it is four times faster to load.",
            ),
            (
                "The migration failed with ERR_LEDGER_LOCKED, why?",
                "Running two migrations at once locks the ledger table; run them one at a time.",
            ),
        ],
        0,
    );
}

fn findings() -> Value {
    json!({
        "architecture": ["The ledger client lives in src/ledger/ and caches with bincode"],
        "decisions": ["Chose bincode over JSON for the ledger cache because it loads four times faster"],
        "failures": ["Don't run two migrations at once — causes ERR_LEDGER_LOCKED because both lock the ledger table"],
        "plan": ["Finish the ledger migration", "Then add retries"],
        "supersedes": [],
        "no_updates": false
    })
}

fn extractor(input: Value) -> Arc<dyn Fn(&Value) -> Reply + Send + Sync> {
    Arc::new(move |_req: &Value| Reply::tool_use("record_notes", input.clone()))
}

fn user_text(req: &Value) -> String {
    req["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn extraction_sends_the_window_and_the_notes_redacted_and_merges_idempotently() {
    let m = Machine::new();
    first_session(&m);
    // A note written by hand before any extraction, without a provenance comment.
    run_ok(
        m.ghola(None)
            .args(["notes", "edit", "--project", &m.project])
            .env("EDITOR", "true"),
    );
    let dir = m.notes_dir_of_project();
    std::fs::write(
        dir.join("ARCHITECTURE.md"),
        "# Architecture\n\n- Services talk over gRPC only\n",
    )
    .unwrap();

    // The first answer, then the same findings with the decision in other words (MiniLM finds it a duplicate).
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let standin = StandIn::start(
        2,
        Arc::new(move |_req: &Value| {
            let mut f = findings();
            if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
                f["decisions"] = json!([
                    "The ledger cache uses bincode rather than JSON since loading it is about 4x faster"
                ]);
            }
            Reply::tool_use("record_notes", f)
        }),
    );
    let reqs = extracted(&m, &standin);
    assert_eq!(reqs.len(), 1);
    let req = &reqs[0];
    assert_eq!(
        req["tool_choice"],
        json!({"type": "tool", "name": "record_notes"})
    );
    assert_eq!(req["tools"][0]["name"], "record_notes");
    assert_eq!(req["model"], "claude-haiku-4-5");
    assert!(
        req["system"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Chose X over Y because Z")
    );
    let text = user_text(req);
    assert!(
        text.contains("Services talk over gRPC only"),
        "existing notes are sent: {text}"
    );
    assert!(
        text.contains("ERR_LEDGER_LOCKED"),
        "the window is sent: {text}"
    );
    assert!(
        !text.contains("SECRETSECRET"),
        "the key is redacted: {text}"
    );
    assert!(text.contains("[REDACTED"), "{text}");

    let shown = shown_notes(&m);
    let cat = |c: &str| -> Vec<String> {
        shown["categories"][c]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["text"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(cat("architecture").len(), 2);
    assert_eq!(
        cat("decisions"),
        [
            "[2026-11-21] Chose bincode over JSON for the ledger cache because it loads four times faster"
        ]
    );
    assert_eq!(
        cat("plan"),
        ["Finish the ledger migration", "Then add retries"]
    );
    let d = &shown["categories"]["decisions"][0];
    assert_eq!(d["session"], SESSION);
    assert_eq!(d["window"], 0);
    let decisions_md = std::fs::read_to_string(dir.join("DECISIONS.md")).unwrap();
    assert!(
        decisions_md.contains(&format!("session={SESSION}")),
        "{decisions_md}"
    );

    // Again: the window is extracted to its end, nothing is sent.
    let again = extract(&m, &standin);
    assert_eq!(
        again["windows"][0]["result"]["outcome"], "nothing_new",
        "{again:#}"
    );
    assert_eq!(standin.requests().len(), 1);

    // The session goes on: only the new messages are sent; the same findings (one in other words) add nothing.
    m.append(
        SESSION,
        &[(
            "Now add retries to the ledger client.",
            "Retries added with jittered backoff.",
        )],
        2,
    );
    let more = extract(&m, &standin);
    let r = &more["windows"][0]["result"];
    assert_eq!(r["outcome"], "extracted", "{more:#}");
    assert_eq!(r["added"], 0, "{more:#}");
    assert_eq!(r["duplicates"], 3, "{more:#}");
    let reqs = standin.requests();
    let text = user_text(&reqs[1]);
    assert!(text.contains("jittered backoff"));
    assert!(
        !text.contains("The migration failed with"),
        "old messages are not sent again"
    );
    assert!(!text.contains("My key is"), "{text}");
    assert!(
        text.contains("Chose bincode over JSON"),
        "the notes now include the first extraction"
    );

    // The log has both extractions; status counts them.
    let log = std::fs::read_to_string(dir.join("log.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
    let st = run_json(
        m.ghola(None)
            .args(["notes", "status", "--project", &m.project, "--json"]),
    );
    let p = &st["projects"][0];
    assert_eq!(p["items"]["decisions"], 1);
    assert_eq!(p["tokens_total"], 2 * 2050);
    assert_eq!(st["tokens_spent_today"], 2 * 2050);
    assert_eq!(
        p["enabled"], false,
        "extract on request does not turn extraction on"
    );
}

#[test]
fn bad_tool_input_is_corrected_and_provider_errors_back_off() {
    let m = Machine::new();
    first_session(&m);
    // First a list given as a string, then a valid call.
    let n = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let n2 = n.clone();
    let standin = StandIn::start(
        2,
        Arc::new(move |_req: &Value| {
            if n2.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                Reply::tool_use("record_notes", json!({"architecture": "not a list"}))
            } else {
                Reply::tool_use("record_notes", findings())
            }
        }),
    );
    let reqs = extracted(&m, &standin);
    assert_eq!(reqs.len(), 2);
    let retry = reqs[1]["messages"].to_string();
    assert!(
        retry.contains("must be a list of strings"),
        "the problem is sent back: {retry}"
    );

    // Empty input every time: three attempts, then a failure with a back-off, visible in status.
    let m = Machine::new();
    first_session(&m);
    let standin = StandIn::start(2, extractor(json!({})));
    let out = extract(&m, &standin);
    let r = &out["windows"][0]["result"];
    assert_eq!(r["outcome"], "failed", "{out:#}");
    assert!(
        r["error"].as_str().unwrap().contains("lacks the list"),
        "{r}"
    );
    assert_eq!(standin.requests().len(), 3);
    let st = run_json(
        m.ghola(None)
            .args(["notes", "status", "--project", &m.project, "--json"]),
    );
    let failures = st["projects"][0]["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{st:#}");
    assert!(failures[0].as_str().unwrap().contains("next try"), "{st:#}");
    assert_eq!(st["projects"][0]["windows_pending"], 1);

    // 529 overloaded, again and again: transient retries, then a failure; nothing written.
    let m = Machine::new();
    first_session(&m);
    let standin = StandIn::start(
        2,
        Arc::new(|_: &Value| Reply::Error(529, "Overloaded".into())),
    );
    let out = extract(&m, &standin);
    let r = &out["windows"][0]["result"];
    assert_eq!(r["outcome"], "failed", "{out:#}");
    assert!(r["error"].as_str().unwrap().contains("529"), "{r}");
    assert_eq!(standin.requests().len(), 3, "two transient retries");
    let shown = shown_notes(&m);
    assert_eq!(shown["categories"]["decisions"], json!([]), "{shown:#}");
}

#[test]
fn the_budget_stops_extraction_before_anything_is_sent_and_dry_run_sends_nothing() {
    let m = Machine::new();
    first_session(&m);
    let standin = StandIn::start(2, extractor(findings()));
    let dry = run_ok(m.ghola(Some(&standin.url)).args([
        "notes",
        "extract",
        "--project",
        &m.project,
        "--dry-run",
    ]));
    let dry = String::from_utf8(dry).unwrap();
    assert!(
        dry.contains("ERR_LEDGER_LOCKED") && dry.contains("Dry run: nothing sent. About "),
        "{dry}"
    );
    assert!(!dry.contains("SECRETSECRET"));
    assert_eq!(standin.requests().len(), 0);
    run_ok(
        m.ghola(None)
            .args(["notes", "on", "--project", &m.project, "--budget", "1000"]),
    );
    let out = extract(&m, &standin);
    assert_eq!(
        out["windows"][0]["result"]["outcome"], "budget_spent",
        "{out:#}"
    );
    assert_eq!(standin.requests().len(), 0);
    let st = run_json(
        m.ghola(None)
            .args(["notes", "status", "--project", &m.project, "--json"]),
    );
    assert_eq!(st["projects"][0]["windows_pending"], 1);
    assert!(
        st["projects"][0]["failures"][0]
            .as_str()
            .unwrap()
            .contains("budget"),
        "{st:#}"
    );
}

/// Runs the hook `event` with `input` as Claude Code does; its stdout and how long it took.
fn hook(
    m: &Machine,
    api: Option<&str>,
    event: &str,
    input: &Value,
) -> (String, std::time::Duration) {
    let started = std::time::Instant::now();
    let out = common::run_hook(m.ghola(api), event, &input.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (String::from_utf8(out.stdout).unwrap(), started.elapsed())
}

fn wait_for(what: &str, ok: impl FnMut() -> bool) {
    common::wait_for(what, std::time::Duration::from_secs(120), ok)
}

#[test]
fn hooks_queue_with_consent_only_and_the_worker_extracts_then_the_next_session_starts_with_the_notes()
 {
    let m = Machine::new();
    first_session(&m);
    run_ok(m.ghola(None).arg("index"));
    let standin = StandIn::start(2, extractor(findings()));
    let end = json!({"session_id": SESSION, "cwd": m.project, "hook_event_name": "SessionEnd", "reason": "other",
                     "transcript_path": m.transcript(SESSION)});
    // Off (the default): nothing queued, nothing sent.
    let (out, _) = hook(&m, Some(&standin.url), "session-end", &end);
    assert_eq!(out, "");
    assert!(
        !m.notes.join("queue").exists()
            || std::fs::read_dir(m.notes.join("queue"))
                .unwrap()
                .next()
                .is_none()
    );
    // On: the hook queues the session and starts the worker, which extracts it.
    run_ok(m.ghola(None).args(["notes", "on", "--project", &m.project]));
    let (out, _) = hook(&m, Some(&standin.url), "session-end", &end);
    assert_eq!(out, "");
    wait_for("the worker's extraction", || {
        std::fs::read_to_string(m.notes_dir_of_project().join("FAILURES.md"))
            .is_ok_and(|t| t.contains("ERR_LEDGER_LOCKED"))
    });
    assert_eq!(standin.requests().len(), 1);
    wait_for("the worker to finish", || {
        let st =
            run_json(
                m.ghola(None)
                    .args(["notes", "status", "--project", &m.project, "--json"]),
            );
        st["worker_running"] == false && st["queued_sessions"] == 0
    });
    let st = run_json(
        m.ghola(None)
            .args(["notes", "status", "--project", &m.project, "--json"]),
    );
    assert_eq!(st["projects"][0]["windows_extracted"], 1, "{st:#}");
    assert_eq!(st["projects"][0]["windows_pending"], 0, "{st:#}");

    // The next session starts with the notes and the recent session, as facts, under the bound.
    let start = json!({"session_id": "99999999-0000-4000-8000-000000000000", "cwd": m.project,
                       "hook_event_name": "SessionStart", "source": "startup"});
    let (out, took) = hook(&m, None, "session-start", &start);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    for want in [
        "## Recent sessions",
        "Set up the ledger client",
        "## Architecture",
        "## Key decisions",
        "## Known pitfalls",
        "ERR_LEDGER_LOCKED",
        "## Current plan",
        "Finish the ledger migration",
    ] {
        assert!(ctx.contains(want), "{want} in {ctx}");
    }
    assert!(!ctx.contains("SECRETSECRET"), "{ctx}");
    eprintln!(
        "session-start hook answered in {took:?} ({} chars)",
        ctx.len()
    );

    // With GHOLA_HOOKS_OFF (ghola's own `claude -p`), a hook is silent.
    let mut c = m.ghola(None);
    c.env("GHOLA_HOOKS_OFF", "1");
    let out = common::run_hook(c, "session-start", &start.to_string());
    assert!(out.stdout.is_empty());
}

#[test]
fn the_session_start_context_stays_under_the_hook_bound_and_bad_input_is_harmless() {
    let m = Machine::new();
    first_session(&m);
    run_ok(m.ghola(None).arg("index"));
    // Large hand-written notes in every category.
    run_ok(
        m.ghola(None)
            .args(["notes", "edit", "--project", &m.project])
            .env("EDITOR", "true"),
    );
    let dir = m.notes_dir_of_project();
    for (file, what) in [
        ("ARCHITECTURE.md", "architecture"),
        ("DECISIONS.md", "decision"),
        ("FAILURES.md", "failure"),
        ("PLAN.md", "plan step"),
    ] {
        let body: String = (0..40)
            .map(|k| format!("- {what} {k} {}\n", "detail ".repeat(20)))
            .collect();
        std::fs::write(dir.join(file), body).unwrap();
    }
    let start = json!({"session_id": "x", "cwd": m.project, "source": "startup"});
    let (out, _) = hook(&m, None, "session-start", &start);
    let v: Value = serde_json::from_str(&out).unwrap();
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(ctx.chars().count() <= 9_000, "{}", ctx.len());
    assert!(
        ctx.contains("plan step 0 ") && ctx.contains("plan step 14 "),
        "the plan (cap 15) is whole"
    );
    assert!(ctx.contains("failure 39 "), "the newest failure stays");
    // `notes context` writes a bigger file only where asked.
    let file = m.notes.join("context.md");
    run_ok(m.ghola(None).args([
        "notes",
        "context",
        "--project",
        &m.project,
        "--write",
        file.to_str().unwrap(),
    ]));
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.len() > ctx.len() && written.chars().count() <= 12_000 * 4);
    // Garbage on stdin, an unknown project: no output, success.
    for input in ["not json", "{}", "{\"cwd\": 5}"] {
        let out = common::run_hook(m.ghola(None), "session-start", input);
        assert!(out.status.success());
        assert!(out.stdout.is_empty(), "{input}");
    }
}

#[test]
fn forget_link_archive_and_hand_edits() {
    let m = Machine::new();
    first_session(&m);
    let standin = StandIn::start(2, extractor(findings()));
    run_ok(
        m.ghola(Some(&standin.url))
            .args(["notes", "extract", "--project", &m.project]),
    );
    let dir = m.notes_dir_of_project();
    // A person rewrites a decision but keeps its comment: the id and provenance survive.
    let d = std::fs::read_to_string(dir.join("DECISIONS.md")).unwrap();
    let edited = d.replace("loads four times faster", "loads much faster (measured)");
    std::fs::write(dir.join("DECISIONS.md"), &edited).unwrap();
    let shown = run_json(m.ghola(None).args([
        "notes",
        "show",
        "--project",
        &m.project,
        "--category",
        "decisions",
        "--json",
    ]));
    let item = &shown["categories"]["decisions"][0];
    assert!(
        item["text"]
            .as_str()
            .unwrap()
            .contains("much faster (measured)")
    );
    assert_eq!(item["session"], SESSION);
    let id = item["id"].as_str().unwrap().to_string();
    // Forget by id (not a terminal: no question).
    let out = run_ok(
        m.ghola(None)
            .args(["notes", "forget", &id, "--project", &m.project]),
    );
    assert!(String::from_utf8_lossy(&out).contains("Forgot 1 note(s)"));
    // Forget by text.
    run_ok(m.ghola(None).args([
        "notes",
        "forget",
        "ERR_LEDGER_LOCKED",
        "--project",
        &m.project,
        "--yes",
    ]));
    let shown = shown_notes(&m);
    assert_eq!(shown["categories"]["decisions"], json!([]), "{shown:#}");
    assert_eq!(shown["categories"]["failures"], json!([]), "{shown:#}");
    let log = std::fs::read_to_string(dir.join("log.jsonl")).unwrap();
    assert!(log.contains("forgotten") && log.contains("much faster (measured)"));
    // Unknown item: a clear error.
    let out = m
        .ghola(None)
        .args(["notes", "forget", "d-nope", "--project", &m.project])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no note of"));

    // A child project inherits the parent's architecture in its context.
    let child = "/work/payments/services/api";
    run_ok(m.ghola(None).args(["notes", "link", child, &m.project]));
    let out = run_ok(m.ghola(None).args(["notes", "context", "--project", child]));
    let ctx = String::from_utf8(out).unwrap();
    assert!(
        ctx.contains("From the parent project /work/payments"),
        "{ctx}"
    );
    assert!(ctx.contains("src/ledger/"), "{ctx}");
    let out = m
        .ghola(None)
        .args(["notes", "link", &m.project, child])
        .output()
        .unwrap();
    assert!(!out.status.success(), "no cycles");
    // Archived: kept, not injected.
    run_ok(m.ghola(None).args(["notes", "archive", &m.project]));
    let (out, _) = hook(
        &m,
        None,
        "session-start",
        &json!({"session_id": "x", "cwd": m.project}),
    );
    assert_eq!(out, "");
    assert!(dir.join("ARCHITECTURE.md").exists());
    let list = run_json(m.ghola(None).args(["notes", "list", "--json"]));
    assert!(
        list["projects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["project"] == m.project && p["archived"] == true)
    );
}

#[test]
fn extraction_through_headless_claude_code_writes_no_transcript() {
    let Some(bin) = common::claude_bin() else {
        return;
    };
    let m = Machine::new();
    first_session(&m);
    // Claude Code offers the schema as a tool; whatever it is called, call it with the findings.
    let standin = StandIn::start(
        4,
        Arc::new(|req: &Value| {
            let tool = req["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["name"].as_str())
                .find(|t| t.to_lowercase().contains("structured"))
                .map(str::to_owned);
            match tool {
                Some(t) => Reply::tool_use(&t, findings()),
                None => Reply::text("ok"),
            }
        }),
    );
    let out = m
        .ghola(None)
        .args([
            "notes",
            "extract",
            "--project",
            &m.project,
            "--json",
            "--backend",
            "claude-code",
        ])
        .env("GHOLA_CLAUDE_BIN", &bin)
        .env("HOME", m.claude.parent().unwrap())
        .env("PATH", std::env::var("PATH").unwrap())
        .env("ANTHROPIC_BASE_URL", &standin.url)
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["windows"][0]["result"]["outcome"], "extracted",
        "{v:#}\n{stderr}"
    );
    let reqs = standin.requests();
    let sent: Vec<&Value> = reqs
        .iter()
        .filter(|r| r["messages"].to_string().contains("ERR_LEDGER_LOCKED"))
        .collect();
    assert!(
        !sent.is_empty(),
        "the window reached the model through claude -p"
    );
    assert!(sent.iter().all(|r| !r.to_string().contains("SECRETSECRET")));
    let shown = shown_notes(&m);
    assert_eq!(shown["categories"]["failures"].as_array().unwrap().len(), 1);
    // Only the fixture's project folder: the extraction persisted no session.
    let projects: Vec<String> = std::fs::read_dir(m.claude.join("projects"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(projects, ["-work-payments"], "{projects:?}");
    let files = std::fs::read_dir(m.claude.join("projects/-work-payments"))
        .unwrap()
        .count();
    assert_eq!(files, 1);
}

#[test]
fn a_relative_notes_dir_is_made_absolute_where_ghola_starts() {
    let m = Machine::new();
    let root = m.notes.parent().unwrap().to_path_buf();
    let out = run_ok(
        m.ghola(None)
            .env("GHOLA_NOTES_DIR", "my-notes")
            .current_dir(&root)
            .args(["notes", "status"]),
    );
    let first = String::from_utf8(out).unwrap();
    let first = first.lines().next().unwrap_or_default().to_string();
    let want = format!("notes dir {};", root.join("my-notes").display());
    assert!(first.starts_with(&want), "{first}");
}
