//! Nothing lost: the archive survives a lost `STATE`, odd session ids are listed, shown and survive the hooks,
//! duncan's search mode pages past the search's own limit, a transcript's last line without a newline is read
//! once, and damage to any file of the index, the archive or the notes store (deleted, truncated, a byte
//! flipped) ends in a clear message and a rebuild, never a panic or a lost session.
//! Uses the real model (run `models/fetch` first) and the CLI as a user runs it.

use crate::common;

use common::standin::{Reply, StandIn};
use common::{copy_dir, corpus, run_json, run_ok};
use serde_json::{Value, json};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use common::home::Home as Machine;

/// Fails on a panic that ended the process (exit code 101, or the main thread's panic message), whatever the
/// exit code otherwise. (A panic ghola contains, such as tantivy's on damaged postings, is reported and the
/// command carries on: that is checked where it matters.)
fn no_panic(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() != Some(101) && !err.contains("thread 'main' panicked"),
        "{what} panicked: {err}"
    );
}

/// Fails unless the command's error names the lack of space.
fn says_no_space(out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.to_lowercase().contains("space"), "{err}");
}

fn output(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().unwrap()
}

/// Runs `ghola hook EVENT` with `input` on stdin.
fn hook(m: &Machine, event: &str, input: &Value) -> Output {
    common::run_hook(m.ghola(), event, &input.to_string())
}

fn line(session: &str, cwd: &str, i: usize, text: &str) -> String {
    let role = if i.is_multiple_of(2) {
        "user"
    } else {
        "assistant"
    };
    let v = json!({"type": role, "uuid": format!("{session}-m{i}"), "sessionId": session, "cwd": cwd,
        "timestamp": format!("2025-03-01T10:{:02}:00Z", i % 60),
        "message": {"id": format!("msg-{session}-{i}"), "role": role, "content": [{"type":"text","text": text}]}});
    v.to_string()
}

/// Writes session `id` of `project` (its folder under the Claude dir's `projects/`) with `n` messages, the i-th
/// saying `text(i)`; returns the transcript's path.
fn write_session(
    m: &Machine,
    project: &str,
    id: &str,
    n: usize,
    text: impl Fn(usize) -> String,
) -> PathBuf {
    let dir = m.claude.join("projects").join(project.replace('/', "-"));
    fs::create_dir_all(&dir).unwrap();
    let body: String = (0..n)
        .map(|i| line(id, project, i, &text(i)) + "\n")
        .collect();
    let path = dir.join(format!("{id}.jsonl"));
    fs::write(&path, body).unwrap();
    path
}

/// Writes `sessions` sessions of `messages` messages each in `project` (ids `<prefix>-0000-4000-8000-<n>`, the
/// i-th message of session s saying `text(s, i)`), then indexes them.
fn indexed_sessions(
    m: &Machine,
    project: &str,
    prefix: &str,
    (sessions, messages): (usize, usize),
    text: impl Fn(usize, usize) -> String,
) {
    for s in 0..sessions {
        let id = format!("{prefix}-0000-4000-8000-{s:012}");
        write_session(m, project, &id, messages, |i| text(s, i));
    }
    run_ok(m.ghola().arg("index"));
}

fn session_ids(m: &Machine) -> Vec<String> {
    let v = run_json(m.ghola().args(["sessions", "--global", "--json"]));
    let mut ids: Vec<String> = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

/// Searches every project for `query` and fails unless a hit's text holds `expect`.
fn assert_found(m: &Machine, query: &str, expect: &str) {
    let hits = run_json(m.ghola().args(["search", query, "--global", "--json"]));
    assert!(hits["results"].to_string().contains(expect), "{hits:#}");
}

/// Appends `text` to the file at `path`, as Claude Code appends a line.
fn append(path: &Path, text: &str) {
    let mut f = fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn show(m: &Machine, id: &str) -> Output {
    output(m.ghola().args(["show", id, "--json"]))
}

#[test]
fn a_lost_archive_state_loses_no_archived_session() {
    let m = Machine::new();
    copy_dir(
        &corpus().join("cc-2.1.330/projects"),
        &m.claude.join("projects"),
    );
    run_ok(m.ghola().arg("index"));
    // Claude Code's 30-day cleanup deletes a transcript: the session now lives only in the archive.
    let gone = m
        .claude
        .join("projects/-home-dev-webapp/fec0adcb-6a09-4536-bb17-4d0550c09c1d.jsonl");
    fs::remove_file(&gone).unwrap();
    run_ok(m.ghola().arg("index"));
    let before = run_ok(m.ghola().args(["show", "fec0adcb", "--json"]));
    let packs_before: Vec<(PathBuf, Vec<u8>)> = fs::read_dir(m.idx.join("archive"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("pack-"))
        .map(|e| (e.path(), fs::read(e.path()).unwrap()))
        .collect();
    assert!(!packs_before.is_empty());
    // A user tidying a cache folder deletes STATE; another transcript grows; the index is updated.
    fs::remove_file(m.idx.join("archive/STATE")).unwrap();
    // Before any update, readers already see the archived session.
    assert_eq!(
        run_ok(m.ghola().args(["show", "fec0adcb", "--json"])),
        before
    );
    let other = m
        .claude
        .join("projects/-home-dev-notes/b1fdaf9d-a3c7-409d-8560-d22c2eff7550.jsonl");
    let mut f = fs::OpenOptions::new().append(true).open(&other).unwrap();
    writeln!(
        f,
        "{}",
        line(
            "b1fdaf9d-a3c7-409d-8560-d22c2eff7550",
            "/home/dev/notes",
            1000,
            "one more line after the state was lost"
        )
    )
    .unwrap();
    drop(f);
    run_ok(m.ghola().arg("index"));
    assert_eq!(
        run_ok(m.ghola().args(["show", "fec0adcb", "--json"])),
        before,
        "the archived session reads back the same"
    );
    // No pack was truncated or overwritten: each still begins with what it held.
    for (path, bytes) in &packs_before {
        let now = fs::read(path).unwrap();
        assert!(now.starts_with(bytes), "{} was rewritten", path.display());
    }
    assert!(m.idx.join("archive/STATE").exists());
    let verified = String::from_utf8(run_ok(m.ghola().args(["index", "--verify"]))).unwrap();
    assert!(verified.contains("archive verified"), "{verified}");
    assert_found(
        &m,
        "one more line after the state was lost",
        "state was lost",
    );
}

#[test]
fn a_session_id_that_is_not_ascii_is_listed_shown_and_survives_the_hooks() {
    let m = Machine::new();
    let project = "/home/dev/odd";
    let dir = m.claude.join("projects/-home-dev-odd");
    for id in ["aéééé", "bé", "ordinary-0000"] {
        write_session(&m, project, id, 4, |i| {
            format!("talk {i} in session {id} about widgets")
        });
    }
    run_ok(m.ghola().arg("index"));
    let ids = session_ids(&m);
    assert_eq!(ids, ["aéééé", "bé", "ordinary-0000"]);
    for id in &ids {
        let out = show(&m, id);
        no_panic(&out, "show");
        assert!(
            out.status.success(),
            "show {id}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["session_id"], id.as_str());
    }
    // A prefix of a multi-byte id resolves too.
    let out = show(&m, "aé");
    assert!(out.status.success());
    // The hooks: SessionStart lists the recent sessions (short ids cut between characters); with notes on,
    // SessionEnd queues the odd id.
    run_ok(m.ghola().args(["notes", "on", "--project", project]));
    for (event, id) in [
        ("session-start", "aéééé"),
        ("session-start", "new-session"),
        ("session-end", "aéééé"),
        ("pre-compact", "bé"),
    ] {
        let input = json!({"session_id": id, "cwd": project, "hook_event_name": event,
                           "transcript_path": dir.join(format!("{id}.jsonl"))});
        let out = hook(&m, event, &input);
        no_panic(&out, event);
        assert!(
            out.status.success(),
            "{event}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if event == "session-start" && id == "new-session" {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            let ctx = v["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .unwrap();
            assert!(ctx.contains("aéééé"), "{ctx}");
        }
    }
}

#[test]
fn duncan_search_mode_asks_more_windows_than_one_search_page() {
    let m = Machine::new();
    let project = "/home/dev/many";
    // 40 sessions that all talk about the same thing: more windows than one search page of hits covers.
    indexed_sessions(&m, project, "5e551000", (40, 6), |s, i| {
        format!("the caching layer of the billing service, part {i} of session {s}")
    });
    let api = StandIn::start(
        4,
        Arc::new(|_: &Value| {
            Reply::tool_use(
                "duncan_response",
                json!({"hasContext": true, "answer": "we cached the invoices"}),
            )
        }),
    );
    for (limit, offset, want) in [(30, 0, 30), (20, 15, 20), (50, 0, 40)] {
        let limit_s = limit.to_string();
        let offset_s = offset.to_string();
        let report = run_json(
            m.ghola()
                .args([
                    "query",
                    "caching layer of the billing service",
                    "--project",
                    project,
                    "--json",
                    "--backend",
                    "api",
                    "--limit",
                    &limit_s,
                    "--offset",
                    &offset_s,
                ])
                .env("ANTHROPIC_BASE_URL", &api.url)
                .env("ANTHROPIC_API_KEY", "test-key"),
        );
        let results = report["results"].as_array().unwrap();
        assert_eq!(
            results.len(),
            want,
            "--limit {limit} --offset {offset}: {report:#}"
        );
    }
}

/// What a machine holds, for the fault matrix: every session listed, and each one shown.
fn everything(m: &Machine) -> Vec<(String, String)> {
    session_ids(m)
        .into_iter()
        .map(|id| {
            let out = show(m, &id);
            assert!(out.status.success(), "show {id}");
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            let texts = v["messages"].to_string();
            (id, texts)
        })
        .collect()
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The notes folder of the one project `ghola notes on` turned on (the one holding a `meta.json`).
fn notes_folder(m: &Machine) -> PathBuf {
    files_under(&m.notes)
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == "meta.json"))
        .expect("the project's notes folder")
        .parent()
        .unwrap()
        .to_path_buf()
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    Delete,
    Truncate,
    Flip,
}

fn damage(path: &Path, how: Damage) {
    match how {
        Damage::Delete => fs::remove_file(path).unwrap(),
        Damage::Truncate => {
            let len = fs::metadata(path).unwrap().len();
            fs::OpenOptions::new()
                .write(true)
                .open(path)
                .unwrap()
                .set_len(len / 2)
                .unwrap();
        }
        Damage::Flip => {
            let mut b = fs::read(path).unwrap();
            if b.is_empty() {
                b.push(0xff);
            } else {
                let at = b.len() / 2;
                b[at] ^= 0x5a;
            }
            fs::write(path, b).unwrap();
        }
    }
}

#[test]
fn damage_to_any_file_ends_in_a_clear_message_never_a_panic_or_a_lost_session() {
    let m = Machine::new();
    let project = "/home/dev/fault";
    indexed_sessions(&m, project, "fa017000", (4, 8), |s, i| {
        format!("fault matrix talk {i} of session {s}: the parser and the {s} widgets")
    });
    run_ok(m.ghola().args(["notes", "on", "--project", project]));
    // Notes as a user edits them: one per category file.
    let notes_dir = notes_folder(&m);
    for (file, text) in [
        (
            "ARCHITECTURE.md",
            "The parser is a recursive descent parser.",
        ),
        ("DECISIONS.md", "Widgets are cached for a minute."),
        ("FAILURES.md", "The old lexer broke on tabs."),
        ("PLAN.md", "Ship the widget cache."),
    ] {
        fs::write(notes_dir.join(file), format!("# Notes\n\n- {text}\n")).unwrap();
    }
    let want = everything(&m);
    assert_eq!(want.len(), 4);
    let pristine = m.root().join("pristine");
    copy_dir(&m.idx, &pristine.join("idx"));
    copy_dir(&m.notes, &pristine.join("notes"));
    let restore = || {
        for d in [&m.idx, &m.notes] {
            let _ = fs::remove_dir_all(d);
        }
        copy_dir(&pristine.join("idx"), &m.idx);
        copy_dir(&pristine.join("notes"), &m.notes);
    };
    let targets: Vec<PathBuf> = files_under(&m.idx)
        .into_iter()
        .chain(files_under(&m.notes))
        .filter(|p| !p.to_string_lossy().ends_with(".lock"))
        .collect();
    assert!(targets.len() > 10, "{targets:?}");
    let mut cases = 0;
    for target in &targets {
        for how in [Damage::Delete, Damage::Truncate, Damage::Flip] {
            restore();
            damage(target, how);
            let what = format!("{how:?} {}", target.display());
            // Readers before any update: a clear answer or a clear error, never a panic.
            for args in [
                vec![
                    "search",
                    "widgets parser",
                    "--global",
                    "--json",
                    "--no-update",
                ],
                vec!["status", "--json"],
                vec!["notes", "show", "--project", project],
            ] {
                let out = output(m.ghola().args(&args));
                no_panic(&out, &format!("{args:?} after {what}"));
            }
            let start =
                json!({"session_id": "new", "cwd": project, "hook_event_name": "SessionStart"});
            no_panic(&hook(&m, "session-start", &start), &what);
            // An update repairs what can be repaired; nothing the transcripts hold is lost.
            let out = output(m.ghola().arg("index"));
            no_panic(&out, &format!("index after {what}"));
            assert!(
                out.status.success(),
                "index after {what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(everything(&m), want, "after {what}");
            let hits = run_json(
                m.ghola()
                    .args(["search", "widgets parser", "--global", "--json"]),
            );
            assert!(
                !hits["results"].as_array().unwrap().is_empty(),
                "search after {what}: {hits:#}"
            );
            // The notes other than the damaged file are all still there.
            let notes = String::from_utf8_lossy(
                &output(m.ghola().args(["notes", "show", "--project", project])).stdout,
            )
            .to_string();
            for (file, text) in [
                ("ARCHITECTURE.md", "recursive descent"),
                ("DECISIONS.md", "cached for a minute"),
                ("FAILURES.md", "broke on tabs"),
                ("PLAN.md", "widget cache"),
            ] {
                if !target.ends_with(file) {
                    assert!(notes.contains(text), "{text} after {what}: {notes}");
                }
            }
            cases += 1;
        }
    }
    eprintln!("{cases} damage cases over {} files", targets.len());
}

#[test]
fn a_last_line_without_newline_is_read_once_shown_and_archived() {
    let m = Machine::new();
    let project = "/home/dev/tail";
    let dir = m.claude.join("projects/-home-dev-tail");
    fs::create_dir_all(&dir).unwrap();
    let id = "7a110000-0000-4000-8000-000000000001";
    let torn_id = "7a110000-0000-4000-8000-000000000002";
    let path = dir.join(format!("{id}.jsonl"));
    let first = line(id, project, 0, "how do we rotate the signing keys");
    let last = line(
        id,
        project,
        1,
        "the answer the session ended with: rotate quarterly",
    );
    fs::write(&path, format!("{first}\n{last}")).unwrap();
    // A torn last line: never consumed, reported as pending.
    let torn = line(torn_id, project, 1, "half written");
    fs::write(
        dir.join(format!("{torn_id}.jsonl")),
        format!(
            "{}\n{}",
            line(torn_id, project, 0, "a session cut short"),
            &torn[..torn.len() / 2]
        ),
    )
    .unwrap();
    run_ok(m.ghola().arg("index"));
    let hits = run_json(
        m.ghola()
            .args(["search", "rotate quarterly", "--global", "--json"]),
    );
    assert!(
        hits["results"].to_string().contains("rotate quarterly"),
        "{hits:#}"
    );
    let shown = run_json(m.ghola().args(["show", id, "--json"]));
    assert_eq!(shown["messages"].as_array().unwrap().len(), 2);
    let listed = run_json(m.ghola().args(["sessions", "--global", "--json"]));
    for s in listed["sessions"].as_array().unwrap() {
        let pending: u64 = s["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["pending_bytes"].as_u64().unwrap_or(0))
            .sum();
        let want = if s["session_id"] == torn_id {
            (torn.len() / 2) as u64
        } else {
            0
        };
        assert_eq!(pending, want, "{s}");
    }
    // The newline arrives, then another line: nothing is read twice.
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    write!(f, "\n{}\n", line(id, project, 2, "and one more thing")).unwrap();
    drop(f);
    run_ok(m.ghola().arg("index"));
    let status = run_json(m.ghola().args(["status", "--json"]));
    let shown = run_json(m.ghola().args(["show", id, "--json"]));
    assert_eq!(shown["messages"].as_array().unwrap().len(), 3, "{shown:#}");
    let hits = run_json(m.ghola().args([
        "search",
        "rotate quarterly",
        "--global",
        "--json",
        "--context",
        "0",
    ]));
    let matched: Vec<&Value> = hits["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| {
            h["matched_message"]["content"]
                .to_string()
                .contains("rotate quarterly")
        })
        .collect();
    assert_eq!(matched.len(), 1, "{hits:#}");
    assert_eq!(status["messages"], 4, "{status:#}");
    // The archive's copy is byte-exact once the transcript is gone.
    let bytes = fs::read(&path).unwrap();
    fs::remove_file(&path).unwrap();
    run_ok(m.ghola().arg("index"));
    let shown_archived = run_json(m.ghola().args(["show", id, "--json"]));
    assert_eq!(shown_archived["messages"], shown["messages"]);
    assert_eq!(shown_archived["archived"], true);
    let verified = String::from_utf8(run_ok(m.ghola().args(["index", "--verify"]))).unwrap();
    assert!(verified.contains("archive verified"), "{verified}");
    fs::write(&path, &bytes).unwrap();
}

/// A tmpfs of `mb` MiB mounted at `at` for the life of the value (root only; `None` where mounting is not
/// allowed, and the test says it skipped).
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(at: &Path, mb: u64) -> Option<SmallDisk> {
        fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mb}m"), "tmpfs"])
            .arg(at)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| SmallDisk(at.to_path_buf()))
    }

    /// Fills what is left with a file, so the next write fails with "no space left".
    fn fill(&self) -> PathBuf {
        let filler = self.0.join("filler");
        let mut f = fs::File::create(&filler).unwrap();
        let block = vec![0u8; 64 * 1024];
        loop {
            if f.write_all(&block).is_err() {
                break;
            }
        }
        let _ = f.write_all(&[0u8; 1]);
        let _ = f.sync_all();
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_fails_clearly_and_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(disk) = SmallDisk::mount(&tmp.path().join("disk"), 48) else {
        eprintln!("skipped: this machine does not allow mounting a tmpfs (needs root)");
        return;
    };
    // The index and the notes on the small disk.
    let mut m = Machine::new();
    m.claude = tmp.path().join("claude");
    m.idx = disk.0.join("idx");
    m.notes = disk.0.join("notes");
    let project = "/home/dev/full";
    let id = "f0110000-0000-4000-8000-000000000001";
    let path = write_session(&m, project, id, 20, |i| {
        format!("before the disk filled up, message {i}")
    });
    run_ok(m.ghola().arg("index"));
    run_ok(m.ghola().args(["notes", "on", "--project", project]));
    let notes_file = notes_folder(&m).join("DECISIONS.md");
    fs::write(
        &notes_file,
        "# Decisions\n\n- Keep the disk tidy.\n- Cache the widgets.\n",
    )
    .unwrap();
    let settings_before = fs::read(m.notes.join("config.toml")).unwrap_or_default();
    let count = |m: &Machine| run_json(m.ghola().args(["status", "--json"]))["messages"].clone();
    assert_eq!(count(&m), 20);

    // The disk fills up; the session goes on.
    let filler = disk.fill();
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    for i in 20..400 {
        writeln!(
            f,
            "{}",
            line(
                id,
                project,
                i,
                &format!(
                    "after the disk filled up, message {i} {}",
                    "words ".repeat(40)
                )
            )
        )
        .unwrap();
    }
    drop(f);
    let out = output(m.ghola().arg("index"));
    no_panic(&out, "index on a full disk");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "index on a full disk succeeded");
    assert!(
        err.to_lowercase().contains("no space left"),
        "the error names the lack of space: {err}"
    );
    // The old index keeps answering.
    let hits = run_json(m.ghola().args([
        "search",
        "before the disk filled",
        "--global",
        "--json",
        "--no-update",
    ]));
    assert!(!hits["results"].as_array().unwrap().is_empty(), "{hits:#}");
    // Settings and notes writes fail clearly and leave the files as they were.
    let out = output(
        m.ghola()
            .args(["notes", "on", "--project", project, "--budget", "12345"]),
    );
    no_panic(&out, "notes on, full disk");
    if !out.status.success() {
        says_no_space(&out);
        assert_eq!(
            fs::read(m.notes.join("config.toml")).unwrap_or_default(),
            settings_before
        );
    }
    let out = output(
        m.ghola()
            .args(["notes", "forget", "widgets", "--yes", "--project", project]),
    );
    no_panic(&out, "notes forget, full disk");
    let notes_now = fs::read_to_string(&notes_file).unwrap();
    if out.status.success() {
        assert!(
            !notes_now.contains("widgets") && notes_now.contains("tidy"),
            "{notes_now}"
        );
    } else {
        says_no_space(&out);
        assert!(
            notes_now.contains("widgets") && notes_now.contains("tidy"),
            "{notes_now}"
        );
    }

    // Space is back: the next update completes with every message.
    fs::remove_file(filler).unwrap();
    run_ok(m.ghola().arg("index"));
    assert_eq!(count(&m), 400);
    assert_found(&m, "after the disk filled up message 399", "message 399");
    let shown = run_json(m.ghola().args(["show", id, "--json"]));
    assert_eq!(shown["messages"].as_array().unwrap().len(), 400);
    drop(disk);
}

#[test]
fn the_server_reads_a_last_line_without_newline_as_it_arrives() {
    let m = Machine::new();
    let project = "/home/dev/live";
    let dir = m.claude.join("projects/-home-dev-live");
    fs::create_dir_all(&dir).unwrap();
    let id = "11fe0000-0000-4000-8000-000000000001";
    let path = dir.join(format!("{id}.jsonl"));
    fs::write(
        &path,
        line(id, project, 0, "where do the release notes live") + "\n",
    )
    .unwrap();
    let mut c = common::mcp_client::Client::start(
        &m.claude,
        &m.idx,
        &[
            ("CLAUDE_PROJECT_DIR", project),
            ("GHOLA_NOTES_DIR", m.notes.to_str().unwrap()),
        ],
    );
    // A line arrives without its newline (a copy, a restore): the server indexes it.
    append(
        &path,
        &line(id, project, 1, "in docs/CHANGES.md under zebrafish heading"),
    );
    let found = |c: &mut common::mcp_client::Client, n: u64| {
        let (err, text) = c.call(
            n,
            "search_project_history",
            json!({"query": "zebrafish heading", "format": "json"}),
        );
        assert!(!err, "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| {
                h["matched_message"]["content"]
                    .to_string()
                    .contains("zebrafish")
            })
            .count()
    };
    let mut n = 10;
    let started = std::time::Instant::now();
    while found(&mut c, n) == 0 {
        assert!(started.elapsed().as_secs() < 60, "never indexed");
        std::thread::sleep(std::time::Duration::from_millis(200));
        n += 1;
    }
    // Its newline and one more line arrive: still one hit for it, and the new line is found.
    append(
        &path,
        &format!("\n{}\n", line(id, project, 2, "the okapi section follows")),
    );
    loop {
        n += 1;
        let (_, text) = c.call(
            n,
            "search_project_history",
            json!({"query": "okapi section"}),
        );
        if text.contains("okapi section follows") {
            break;
        }
        assert!(
            started.elapsed().as_secs() < 90,
            "the next line was never indexed"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // Nothing was read twice: three messages in the session, each once.
    let (_, text) = c.call(n + 2, "get_session_detail", json!({"session_id": id}));
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["total_messages"], 3, "{v:#}");
}
