//! The archive: every reader of transcripts says the same before and after Claude Code deletes them (apart
//! from the `archived` fields), duncan replays archived sessions, `ghola forget` removes sessions for good, and
//! the archive can be turned off.

use crate::common;

use common::mcp_client::Client;
use common::standin::{Reply, StandIn};
use common::{copy_dir, corpus, run_fails, run_json, run_ok};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// A copy of a corpus folder's transcripts (they get deleted), indexed: (its temp dir, claude dir, index dir).
fn indexed_copy(folder: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let (claude, idx) = (tmp.path().join("claude"), tmp.path().join("idx"));
    copy_dir(
        &corpus().join(folder).join("projects"),
        &claude.join("projects"),
    );
    common::index_by_words(&mut words_only(&claude, &idx));
    (tmp, claude, idx)
}

/// `ghola` without the model: no reader compared here reads a vector, and embedding all six corpus folders took
/// two minutes of this file's time.
fn words_only(claude: &Path, idx: &Path) -> Command {
    let mut c = ghola(claude, idx);
    common::without_model(&mut c, idx.parent().unwrap());
    c
}

fn ghola(claude: &Path, idx: &Path) -> Command {
    common::ghola_at(claude, idx)
}

/// The value without its `archived` / `archived_sessions` fields (the one difference allowed).
fn without_archived(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "archived" && *k != "archived_sessions")
                .map(|(k, v)| (k.clone(), without_archived(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_archived).collect()),
        v => v.clone(),
    }
}

/// A tool's answer as JSON; a long one cut to the output bound stays text, its `archived` flags made equal.
fn tool_value(text: &str) -> Value {
    // The flag's length moves the cut by a character: compare well before it.
    serde_json::from_str(text).unwrap_or_else(|_| {
        let same = text.replace("\"archived\":true", "\"archived\":false");
        Value::String(same.chars().take(30_000).collect())
    })
}

/// Everything every reader says about the history of `claude`: CLI listings and sessions, the MCP tools, and
/// the conversation duncan sends for each session's latest window.
fn record(claude: &Path, idx: &Path, api: &StandIn) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let projects = run_json(words_only(claude, idx).args(["projects", "--json"]));
    out.push(("projects".into(), projects));
    let sessions = run_json(words_only(claude, idx).args(["sessions", "--global", "--json"]));
    let ids: Vec<String> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap().to_string())
        .collect();
    out.push(("sessions".into(), sessions));
    for id in &ids {
        let shown = run_json(words_only(claude, idx).args(["show", id, "--subagents", "--json"]));
        out.push((format!("show {id}"), shown));
    }
    let no_model = common::no_model_env(idx.parent().unwrap());
    let env: Vec<(&str, &str)> = no_model.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut mcp = Client::start(claude, idx, &env);
    let (err, text) = mcp.call(
        10,
        "duncan_list_sessions",
        json!({"mode": "global", "limit": 200}),
    );
    assert!(!err, "{text}");
    out.push(("duncan_list_sessions".into(), tool_value(&text)));
    let (err, text) = mcp.call(11, "duncan_projects", json!({}));
    assert!(!err, "{text}");
    out.push(("duncan_projects".into(), tool_value(&text)));
    for (k, id) in ids.iter().enumerate() {
        let (err, text) = mcp.call(
            100 + k as u64,
            "get_session_detail",
            json!({"session_id": id, "limit": 200}),
        );
        assert!(!err, "{text}");
        out.push((format!("get_session_detail {id}"), tool_value(&text)));
    }
    drop(mcp);
    // Duncan: the conversation each session's latest window is replayed as.
    for id in &ids {
        api.requests.lock().unwrap().clear();
        let out_ = words_only(claude, idx)
            .args([
                "query",
                "What was decided?",
                "--mode",
                "session",
                "--session",
                id,
                "--backend",
                "api",
                "--json",
            ])
            .env("ANTHROPIC_BASE_URL", &api.url)
            .env("ANTHROPIC_API_KEY", "test-key")
            .output()
            .unwrap();
        // A session with nothing to replay (only subagent transcripts) is refused the same way both times.
        let report: Value = if out_.status.success() {
            serde_json::from_slice(&out_.stdout).unwrap()
        } else {
            json!({"results": [], "error": String::from_utf8_lossy(&out_.stderr).trim()})
        };
        let sent: Vec<Value> = api
            .requests
            .lock()
            .unwrap()
            .iter()
            .map(|r| r["messages"].clone())
            .collect();
        let results: Vec<Value> = report["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| json!([r["session_id"], r["window"], r["has_context"], r["error"]]))
            .collect();
        out.push((
            format!("duncan {id}"),
            json!({"sent": sent, "results": results}),
        ));
    }
    out
}

#[test]
fn every_reader_says_the_same_after_claude_code_deletes_the_transcripts() {
    let api = StandIn::start(
        2,
        Arc::new(|_: &Value| {
            Reply::tool_use(
                "duncan_response",
                json!({"hasContext": true, "answer": "from the window"}),
            )
        }),
    );
    let mut sessions_checked = 0;
    let mut replayed = 0;
    for folder in std::fs::read_dir(corpus())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("projects").is_dir())
    {
        let name = folder.file_name().unwrap().to_str().unwrap();
        let (_tmp, claude, idx) = indexed_copy(name);
        let before = record(&claude, &idx, &api);
        // Claude Code's cleanup: every transcript (and subagent file, and persisted output) gone.
        std::fs::remove_dir_all(claude.join("projects")).unwrap();
        std::fs::create_dir_all(claude.join("projects")).unwrap();
        // An update notices the deletions and keeps everything.
        common::index_by_words(&mut words_only(&claude, &idx));
        let after = record(&claude, &idx, &api);
        assert_eq!(before.len(), after.len(), "{}", folder.display());
        for ((what, b), (what2, a)) in before.iter().zip(&after) {
            assert_eq!(what, what2);
            if without_archived(b) != without_archived(a) {
                let dump = std::env::temp_dir().join("ghola-archive-diff");
                std::fs::create_dir_all(&dump).unwrap();
                let pretty =
                    |v: &Value| serde_json::to_string_pretty(&without_archived(v)).unwrap();
                std::fs::write(dump.join("before.json"), pretty(b)).unwrap();
                std::fs::write(dump.join("after.json"), pretty(a)).unwrap();
            }
            assert_eq!(
                without_archived(b),
                without_archived(a),
                "{}: {what} differs once the transcripts are deleted",
                folder.display()
            );
            // (A window with no conversation, only bookkeeping, is reported as such both times.)
            if what.starts_with("duncan ") && !b["sent"].as_array().unwrap().is_empty() {
                replayed += 1;
            }
        }
        // Every session is now marked as read from the archive.
        let listed = &after.iter().find(|(w, _)| w == "sessions").unwrap().1;
        for s in listed["sessions"].as_array().unwrap() {
            let has_main = s["files"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| !f["path"].as_str().unwrap().contains("agent-"));
            if has_main {
                assert_eq!(s["archived"], true, "{s}");
            }
            sessions_checked += 1;
        }
        let status = run_json(words_only(&claude, &idx).args(["status", "--json"]));
        assert!(status["sessions_only_in_archive"].as_u64().unwrap() > 0);
        assert!(status["archive"]["stored_bytes"].as_u64().unwrap() > 0);
        // The archive reads back whole under --verify.
        // (Without the model the index is not whole, so the command fails, but it verifies and says so.)
        let out = words_only(&claude, &idx)
            .args(["index", "--verify"])
            .output()
            .unwrap();
        let verified = String::from_utf8_lossy(&out.stdout);
        assert!(verified.contains("archive verified"), "{verified}");
    }
    assert!(
        sessions_checked > 40 && replayed > 40,
        "{sessions_checked} sessions, {replayed} replays"
    );
}

#[test]
fn forget_removes_sessions_for_good_and_the_archive_can_be_turned_off() {
    let (_tmp, claude, idx) = indexed_copy("cc-2.1.330");
    let search = |q: &str| -> Value {
        run_json(
            ghola(&claude, &idx).args([q, "--global", "--json", "--context", "0"].iter().fold(
                vec!["search"],
                |mut v, x| {
                    v.push(x);
                    v
                },
            )),
        )
    };
    // Hits of the session about to be forgotten.
    let of_it = |v: Value| -> usize {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| {
                h["matched_message"]["session_id"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("fec0adcb"))
            })
            .count()
    };
    assert!(of_it(search("test_leeway_accepts_recently_expired_token")) > 0);
    // Off a terminal, forget wants --yes.
    run_fails(
        ghola(&claude, &idx)
            .args(["forget", "fec0adcb"])
            .stdin(std::process::Stdio::null()),
        "--yes",
    );
    let done = run_json(ghola(&claude, &idx).args(["forget", "fec0adcb", "--yes", "--json"]));
    assert_eq!(done["sessions"], 1, "{done}");
    assert!(done["messages_removed"].as_u64().unwrap() > 0);
    // Gone from search, from the archive, from every file of the index — though its transcript still exists,
    // and an update does not bring it back.
    run_ok(ghola(&claude, &idx).arg("index"));
    assert_eq!(
        of_it(search("test_leeway_accepts_recently_expired_token")),
        0
    );
    fn grep(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
        let mut hits = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                hits.extend(grep(&e.path(), needle));
            } else {
                let bytes = std::fs::read(e.path()).unwrap().to_ascii_lowercase();
                if bytes.windows(needle.len()).any(|w| w == needle) {
                    hits.push(e.path());
                }
            }
        }
        hits
    }
    assert_eq!(grep(&idx, b"clock_skew_leeway"), Vec::<PathBuf>::new());
    // Nor does any reader bring it back from Claude Code's transcript: not the listings, not `show` (and so not
    // the MCP listings, `get_session_detail` or duncan, which find sessions the same way).
    let listed = |idx: &Path| -> bool {
        run_json(ghola(&claude, idx).args(["sessions", "--global", "--json"]))
            .to_string()
            .contains("fec0adcb")
    };
    assert!(!listed(&idx), "a forgotten session is still listed");
    let shown = ghola(&claude, &idx)
        .args(["show", "fec0adcb"])
        .output()
        .unwrap();
    assert!(
        !shown.status.success(),
        "a forgotten session is still shown"
    );
    // --allow-reindex names it again (it is on the forgotten list) and lets the transcript come back.
    let again = run_json(ghola(&claude, &idx).args([
        "forget",
        "fec0adcb",
        "--yes",
        "--json",
        "--allow-reindex",
    ]));
    assert_eq!(again["sessions"], 1, "{again}");
    run_ok(ghola(&claude, &idx).arg("index"));
    assert!(of_it(search("test_leeway_accepts_recently_expired_token")) > 0);
    assert!(listed(&idx), "allowed back, it is listed again");
    // --before: nothing is older than 2000, everything is older than 2100.
    let none = run_json(ghola(&claude, &idx).args([
        "forget",
        "--before",
        "2000-01-01",
        "--yes",
        "--json",
    ]));
    assert_eq!(none["sessions"], 0);

    // Off: nothing new is archived, and status says so.
    let tmp2 = tempfile::tempdir().unwrap();
    let idx2 = tmp2.path().join("idx");
    run_ok(ghola(&claude, &idx2).arg("index").env("GHOLA_ARCHIVE", "0"));
    let status = run_json(
        ghola(&claude, &idx2)
            .args(["status", "--json"])
            .env("GHOLA_ARCHIVE", "0"),
    );
    assert_eq!(status["archive_enabled"], false);
    assert_eq!(status["archive"]["files"], 0);
}

#[test]
fn a_damaged_index_is_rebuilt_with_the_sessions_only_the_archive_has() {
    let (_tmp, claude, idx) = indexed_copy("cc-2.1.330");
    let transcript =
        claude.join("projects/-home-dev-webapp/fec0adcb-6a09-4536-bb17-4d0550c09c1d.jsonl");
    assert!(transcript.is_file());
    std::fs::remove_file(&transcript).unwrap();
    // The index is damaged: it is set aside and rebuilt — and the deleted session comes back from the archive.
    std::fs::write(idx.join("manifest.bin"), b"not a manifest").unwrap();
    run_ok(ghola(&claude, &idx).arg("index"));
    let found = run_json(ghola(&claude, &idx).args([
        "search",
        "test_leeway_accepts_recently_expired_token",
        "--global",
        "--json",
        "--context",
        "0",
    ]));
    let first = &found["results"][0]["matched_message"];
    assert_eq!(
        first["session_id"], "fec0adcb-6a09-4536-bb17-4d0550c09c1d",
        "{found:#}"
    );
    let shown = run_json(ghola(&claude, &idx).args(["show", "fec0adcb", "--json"]));
    assert_eq!(shown["archived"], true);
    // And the next update leaves it alone (nothing to read, no full path).
    let again = run_json(ghola(&claude, &idx).args(["index", "--json"]));
    assert_eq!(again["files_read"], 0, "{again:#}");
    assert_eq!(again["full_update"], false, "{again:#}");
}
