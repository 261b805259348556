//! Secrets: a history with planted fake credentials of every kind (generated here, not real) in user text, a
//! Bash command, a tool result, thinking, an assistant reply, a subagent and a compaction summary. The report
//! finds each; the CLI, the real MCP server, the browser's pages and duncan's requests at the loopback model
//! carry none, and the messages are still found by their other words; `secrets redact` leaves no value in any
//! file under the index (the archive's frames read back, not only raw bytes), and a kill -9 during it loses no
//! message.

use crate::common;

use common::home::Home;
use common::mcp_client::Client;
use common::standin::{Reply, StandIn};
use common::transcript::Transcript;
use common::{run_fails, run_json, run_ok};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

const PAY: &str = "11111111-aaaa-4aaa-8aaa-111111111111";
const GONE: &str = "22222222-bbbb-4bbb-8bbb-222222222222";
const AGENT: &str = "a1b2c3d4e5f6";

/// `n` characters of `alphabet`, from a seed: fake credential material that is the same on every run.
fn chars(seed: u64, n: usize, alphabet: &str) -> String {
    let a = alphabet.as_bytes();
    let mut x = seed.wrapping_add(0x2545_F491_4F6C_DD1D);
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            a[((x >> 33) % a.len() as u64) as usize] as char
        })
        .collect()
}

const AZ09: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

const B32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const DIGITS: &str = "0123456789";

/// The planted credentials: (rule, value).
fn planted() -> Vec<(&'static str, String)> {
    let jwt = [chars(5, 16, AZ09), chars(6, 30, AZ09), chars(7, 43, AZ09)];
    let slack = [chars(11, 12, DIGITS), chars(12, 24, AZ09)];
    let pem = [chars(17, 64, AZ09), chars(18, 40, AZ09)];
    vec![
        ("aws-access-key-id", format!("AKIA{}", chars(1, 16, B32))),
        ("aws-secret-access-key", chars(2, 40, AZ09)),
        ("github-token", format!("ghp_{}", chars(3, 36, AZ09))),
        ("stripe-key", format!("sk_live_{}", chars(4, 24, AZ09))),
        ("jwt", format!("eyJ{}.eyJ{}.{}", jwt[0], jwt[1], jwt[2])),
        ("url-password", format!("{}9x", chars(8, 14, AZ09))),
        ("openai-api-key", format!("sk-proj-{}", chars(9, 48, AZ09))),
        (
            "anthropic-api-key",
            format!("sk-ant-api03-{}", chars(10, 80, AZ09)),
        ),
        ("slack-token", format!("xoxb-{}-{}", slack[0], slack[1])),
        ("gcp-api-key", format!("AIza{}", chars(13, 35, AZ09))),
        ("huggingface-token", format!("hf_{}", chars(14, 34, AZ09))),
        ("npm-token", format!("npm_{}", chars(15, 36, AZ09))),
        ("secret-assignment", format!("Pw{}7!", chars(16, 12, AZ09))),
        (
            "private-key",
            format!("{PEM_BEGIN}\n{}\n{}\n{PEM_END}", pem[0], pem[1]),
        ),
    ]
}

const PEM_BEGIN: &str = "-----BEGIN OPENSSH PRIVATE KEY-----";
const PEM_END: &str = "-----END OPENSSH PRIVATE KEY-----";

fn value(rule: &str) -> String {
    planted().into_iter().find(|(r, _)| *r == rule).unwrap().1
}

/// The fixture history: the planted values spread over every place a transcript holds text.
fn history(claude: &Path) {
    let v = value;
    Transcript::new(PAY, "/work/pay")
        .user(&format!(
            "Staging deploy for the payments ledger: my AWS key is {} and aws_secret_access_key={}",
            v("aws-access-key-id"),
            v("aws-secret-access-key")
        ))
        .thinking(
            &format!("The user pasted {} which is a github token.", v("github-token")),
            "I will rotate the github token after the deploy.",
        )
        .tool(
            "Bash",
            json!({"command": format!("export STRIPE_KEY={} && curl -H 'Authorization: Bearer {}' https://api.internal/deploy", v("stripe-key"), v("jwt"))}),
            &format!("deployed to postgres://app:{}@db.internal/pay without errors", v("url-password")),
        )
        .assistant(&format!(
            "The embeddings job reads OPENAI_API_KEY={} and the summariser uses {}.",
            v("openai-api-key"),
            v("anthropic-api-key")
        ))
        .compaction()
        .compact_summary(&format!(
            "Summary: the alerting webhook posts with {} and the maps widget uses {}.",
            v("slack-token"),
            v("gcp-api-key")
        ))
        .user("Now tidy the release checklist.")
        .write(claude);
    Transcript::new("agent", "/work/pay")
        .user(&format!(
            "Check the model download with {} and publish with {}",
            v("huggingface-token"),
            v("npm-token")
        ))
        .assistant(&format!(
            "The deploy key is:\n{}\nand the admin password: {}",
            v("private-key"),
            v("secret-assignment")
        ))
        .write_as_subagent(claude, PAY, AGENT);
    Transcript::new(GONE, "/work/pay")
        .starting("2025-03-02T09:00:00Z")
        .user(&format!(
            "The nightly backup job authenticates with {} to the bucket",
            v("aws-access-key-id")
        ))
        .assistant("Scheduled the nightly backup job at 02:00.")
        .write(claude);
}

/// Fails if `text` holds any planted value (or a long piece of the private key).
fn holds_none(text: &str, what: &str) {
    for (rule, v) in planted() {
        let needle = if rule == "private-key" {
            v.lines().nth(1).unwrap().to_string()
        } else {
            v
        };
        assert!(
            !text.contains(&needle),
            "{what} shows the {rule} value:\n{}",
            &text[..text.len().min(3000)]
        );
    }
}

/// A scratch machine with the fixture history.
fn home() -> Home {
    let h = Home::new();
    history(&h.claude);
    h
}

/// `ghola ARGS` on `h`, its stdout as text.
fn text(h: &Home, args: &[&str]) -> String {
    String::from_utf8(run_ok(h.ghola().args(args))).unwrap()
}

#[test]
fn the_report_finds_every_planted_credential_and_prints_no_value() {
    let h = home();
    let report = run_json(h.ghola().args(["secrets", "--json"]));
    let findings = report["findings"].as_array().unwrap();
    for (rule, _) in planted() {
        assert!(
            findings.iter().any(|f| f["rule"] == rule),
            "{rule} not found: {report:#}"
        );
    }
    let places: Vec<&str> = findings
        .iter()
        .map(|f| f["place"].as_str().unwrap())
        .collect();
    for place in ["text", "thinking", "tool_use", "tool_result", "summary"] {
        assert!(places.contains(&place), "{place}: {places:?}");
    }
    assert!(findings.iter().any(|f| f["agent_id"] == AGENT));
    let f = findings
        .iter()
        .find(|f| f["rule"] == "github-token")
        .unwrap();
    assert_eq!(f["session_id"], PAY);
    assert_eq!(f["preview"], "ghp_…****");
    assert!(f["message_uuid"].as_str().unwrap().starts_with(PAY));
    assert_eq!(report["by_project"]["/work/pay"], findings.len());
    holds_none(&report.to_string(), "secrets --json");
    let report_text = text(&h, &["secrets"]);
    holds_none(&report_text, "secrets");
    assert!(report_text.contains("aws-access-key-id"), "{report_text}");
    // A project with none.
    let none = run_json(
        h.ghola()
            .args(["secrets", "--project", "/elsewhere", "--json"]),
    );
    assert_eq!(none["total"], 0);
}

#[test]
fn search_show_and_status_show_placeholders_and_find_messages_by_their_other_words() {
    let h = home();
    run_ok(h.ghola().arg("index"));
    for (query, expect) in [
        ("staging deploy payments ledger", "Staging deploy"),
        ("rotate the github token", "rotate the github token"),
        ("embeddings job summariser", "embeddings job"),
        ("alerting webhook maps widget", "alerting webhook"),
        ("model download publish", "model download"),
    ] {
        let hits =
            run_json(
                h.ghola()
                    .args(["search", query, "--global", "--json", "--context", "2"]),
            );
        let all = hits.to_string();
        assert!(all.contains(expect), "{query}: {hits:#}");
        assert!(all.contains("[REDACTED:"), "{query}: {hits:#}");
        holds_none(&all, &format!("search {query} --json"));
        holds_none(
            &text(&h, &["search", query, "--global"]),
            &format!("search {query}"),
        );
    }
    for args in [
        vec!["show", PAY, "--json", "--subagents"],
        vec!["show", PAY, "--subagents"],
        vec!["sessions", "--global", "--json"],
    ] {
        let out = text(&h, &args);
        holds_none(&out, &args.join(" "));
    }
    let shown = text(&h, &["show", PAY, "--subagents"]);
    assert!(shown.contains("[REDACTED:github-token]"), "{shown}");
    let status = run_json(h.ghola().args(["status", "--json"]));
    assert!(
        status["credentials_hidden"].as_u64().unwrap() >= 14,
        "{status:#}"
    );
    // --reveal never writes to a pipe.
    let out = run_fails(h.ghola().args(["show", PAY, "--reveal"]), "terminal");
    holds_none(&String::from_utf8_lossy(&out), "show --reveal to a pipe");
    // On a terminal (util-linux `script` gives it one), the person sees the original.
    if common::browser::which("script").is_some() {
        let cmd = format!(
            "{} --claude-dir {} --index-dir {} show {PAY} --reveal",
            env!("CARGO_BIN_EXE_ghola"),
            h.claude.display(),
            h.idx.display()
        );
        let out = Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&value("github-token")), "{text}");
    }
}

#[test]
fn the_first_search_after_an_update_that_hid_credentials_says_so_once() {
    let h = home();
    let out = h
        .ghola()
        .args(["search", "nightly backup job", "--global", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("credential(s)") && err.contains("ghola secrets"),
        "{err}"
    );
    holds_none(&String::from_utf8_lossy(&out.stdout), "search");
    let again = h
        .ghola()
        .args(["search", "nightly backup job", "--global", "--json"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&again.stderr).contains("credential(s)"));
}

#[test]
fn the_mcp_server_shows_no_value() {
    let h = home();
    run_ok(h.ghola().arg("index"));
    let mut c = Client::start(&h.claude, &h.idx, &[]);
    let mut all = String::new();
    let mut id = 10;
    for query in [
        "staging deploy payments",
        "embeddings job summariser",
        "deploy key admin password",
    ] {
        id += 1;
        let (err, text) = c.call(id, "search_global_history", json!({"query": query}));
        assert!(!err, "{text}");
        all.push_str(&text);
    }
    id += 1;
    let (err, text) = c.call(id, "get_session_detail", json!({"session_id": PAY}));
    assert!(!err, "{text}");
    assert!(text.contains("[REDACTED:"), "{text}");
    all.push_str(&text);
    holds_none(&all, "MCP");
    assert!(all.contains("Staging deploy"), "{all}");
}

#[test]
fn duncan_sends_no_value_to_the_model() {
    let h = home();
    let standin = StandIn::start(
        2,
        Arc::new(|_: &Value| {
            Reply::tool_use(
                "duncan_response",
                json!({"hasContext": true, "answer": "They deployed the payments ledger to staging."}),
            )
        }),
    );
    let report = run_json(
        h.ghola()
            .args([
                "query",
                "how was the payments ledger deployed to staging",
                "--global",
                "--json",
                "--backend",
                "api",
            ])
            .env("ANTHROPIC_BASE_URL", &standin.url)
            .env("ANTHROPIC_API_KEY", "test-key"),
    );
    assert!(
        !report["results"].as_array().unwrap().is_empty(),
        "{report:#}"
    );
    let bodies: Vec<String> = standin.requests().iter().map(Value::to_string).collect();
    assert!(!bodies.is_empty());
    let all = bodies.join("\n");
    assert!(
        all.contains("[REDACTED:"),
        "the replayed window is the fixture's"
    );
    holds_none(&all, "duncan's request");
    holds_none(&report.to_string(), "ghola query --json");
}

#[test]
fn the_browser_pages_show_no_value() {
    let Some(chromium) = common::browser::chromium() else {
        return common::browser::skipped("chromium");
    };
    let h = home();
    run_ok(h.ghola().arg("index"));
    let ui = common::browser::Ui::start(h.ghola());
    let (base, token) = (format!("http://{}", ui.addr), &ui.token);
    let mut all = String::new();
    for page in [
        format!("{base}/search?q=staging+deploy+payments&token={token}"),
        format!("{base}/search?q=deploy+key+admin+password&token={token}"),
        format!("{base}/session/{PAY}?token={token}"),
    ] {
        let dom = common::browser::dump_dom(&chromium, &page);
        assert!(
            dom.contains("[REDACTED:"),
            "{page}: {}",
            &dom[..dom.len().min(500)]
        );
        all.push_str(&dom);
    }
    drop(ui);
    holds_none(&all, "the browser");
}

/// Every file under `dir`, with its bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out
}

/// Fails if a file under the index, or an archived copy read back through its frames, holds a value.
fn index_holds_none(idx: &Path) {
    for (path, bytes) in files_under(idx) {
        holds_none(
            &String::from_utf8_lossy(&bytes),
            &path.display().to_string(),
        );
    }
    let archive = ghola::index::archive::Archive::open(idx).unwrap();
    let files: Vec<String> = archive.files().map(|f| f.path.clone()).collect();
    assert!(!files.is_empty());
    for f in files {
        let bytes = archive.read(&f).unwrap().unwrap();
        holds_none(
            &String::from_utf8_lossy(&bytes),
            &format!("the archived copy of {f}"),
        );
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            serde_json::from_slice::<Value>(line).expect("an archived line is still JSON");
        }
    }
}

#[test]
fn redact_scrubs_the_archive_and_the_index_and_loses_no_message() {
    let h = home();
    run_ok(h.ghola().arg("index"));
    let before = run_json(h.ghola().args(["status", "--json"]))["messages"].clone();
    // Claude Code deleted one session: ghola's archive holds its only copy.
    std::fs::remove_file(Transcript::new(GONE, "/work/pay").path(&h.claude)).unwrap();
    let plan = run_json(
        h.ghola()
            .args(["secrets", "redact", "--all", "--dry-run", "--json"]),
    );
    assert!(
        plan["archive"]["aws-access-key-id"].as_u64().unwrap() >= 2,
        "{plan:#}"
    );
    // Without --yes and without a terminal, nothing happens.
    run_fails(h.ghola().args(["secrets", "redact", "--all"]), "--yes");
    let done = run_json(
        h.ghola()
            .args(["secrets", "redact", "--all", "--yes", "--json"]),
    );
    assert!(done["archive_files"].as_u64().unwrap() >= 3, "{done:#}");
    assert_eq!(done["originals_in_claude_transcripts"], 1, "{done:#}");
    index_holds_none(&h.idx);
    let log = std::fs::read_to_string(h.idx.join("secrets.log")).unwrap();
    assert!(log.contains("aws-access-key-id"));
    holds_none(&log, "secrets.log");
    // Every message is still there, found by its other words; the deleted session reads from the archive.
    let after = run_json(h.ghola().args(["status", "--json"]))["messages"].clone();
    assert_eq!(before, after);
    let hits =
        run_json(
            h.ghola()
                .args(["search", "nightly backup job bucket", "--global", "--json"]),
        );
    assert!(hits.to_string().contains("nightly backup"), "{hits:#}");
    let gone = text(&h, &["show", GONE]);
    assert!(
        gone.contains("[REDACTED:aws-access-key-id]") || gone.contains("[REDACTED]"),
        "{gone}"
    );
    // The report now sees only what Claude Code's own transcript still holds.
    let report = run_json(h.ghola().args(["secrets", "--json"]));
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["session_id"] == PAY)
    );
    // Appended to and indexed again: the scrubbed copy is not replaced by the original.
    let path = Transcript::new(PAY, "/work/pay").path(&h.claude);
    let mut body = std::fs::read_to_string(&path).unwrap();
    body.push_str(&format!("{}\n", json!({"type": "user", "uuid": "late-1", "sessionId": PAY, "cwd": "/work/pay",
        "timestamp": "2025-03-01T11:00:00Z", "message": {"role": "user", "content": "one more question"}})));
    std::fs::write(&path, body).unwrap();
    std::fs::remove_file(h.idx.join("manifest.bin")).ok();
    run_ok(h.ghola().args(["index", "--verify"]));
    index_holds_none(&h.idx);
}

#[test]
fn redact_stored_keeps_new_bytes_scrubbed_as_they_are_archived() {
    let h = home();
    std::fs::create_dir_all(&h.notes).unwrap();
    std::fs::write(h.notes.join("config.toml"), "redact_stored = true\n").unwrap();
    run_ok(h.ghola().arg("index"));
    index_holds_none(&h.idx);
}

#[test]
fn a_kill_during_redact_then_a_rerun_loses_no_message() {
    let h = home();
    // Enough sessions that a scrub takes a while.
    for s in 0..120 {
        let id = format!("33333333-cccc-4ccc-8ccc-{s:012}");
        let mut t = Transcript::new(&id, "/work/many");
        for i in 0..20 {
            t = t.user(&format!(
                "step {i} of batch {s}: token={} then the widget cache {}",
                chars(100 + s * 20 + i, 24, AZ09),
                "filler words ".repeat(40)
            ));
        }
        t.write(&h.claude);
    }
    run_ok(h.ghola().arg("index"));
    let count = |h: &Home| {
        run_json(h.ghola().args(["status", "--json"]))["messages"]
            .as_u64()
            .unwrap()
    };
    let before = count(&h);
    for delay in [30, 120, 400] {
        let mut child = h
            .ghola()
            .args(["secrets", "redact", "--all", "--yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay));
        let _ = child.kill();
        let _ = child.wait();
        // Whatever state it was killed in, the archive reads back whole.
        let archive = ghola::index::archive::Archive::open(&h.idx).unwrap();
        assert!(archive.verify().is_ok());
    }
    run_ok(h.ghola().args(["secrets", "redact", "--all", "--yes"]));
    assert_eq!(count(&h), before);
    index_holds_none(&h.idx);
    let sessions = run_json(h.ghola().args(["sessions", "--global", "--json"]));
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 122);
}
