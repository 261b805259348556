//! Each transcript rule on a synthetic Claude dir written by the test: layouts, merging, windows, stripping.

mod common;

use ghola::transcript::{self, Part, SubagentLayout};
use serde_json::{Value, json};
use std::fs;
use std::path::Path;

const S: &str = "11111111-2222-3333-4444-555555555555";

fn write_jsonl(path: &Path, lines: &[Value]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(path, body).unwrap();
}

fn user(uuid: &str, parent: Option<&str>, ts: &str, content: Value) -> Value {
    json!({"type":"user","uuid":uuid,"parentUuid":parent,"sessionId":S,"timestamp":ts,"cwd":"/work/app",
           "gitBranch":"main","message":{"role":"user","content":content}})
}

fn assistant(uuid: &str, parent: &str, ts: &str, msg_id: &str, block: Value) -> Value {
    json!({"type":"assistant","uuid":uuid,"parentUuid":parent,"sessionId":S,"timestamp":ts,"cwd":"/work/app/sub",
           "message":{"id":msg_id,"role":"assistant","model":"claude-opus-4","content":[block]}})
}

fn main_session(dir: &Path) -> Vec<Value> {
    let lines = vec![
        json!({"type":"file-history-snapshot","messageId":"x","snapshot":{}}),
        user(
            "u1",
            None,
            "2025-01-01T10:00:00Z",
            json!("Fix the retry loop<system-reminder>ignore me</system-reminder>"),
        ),
        json!({"type":"progress","data":{"type":"hook_progress"},"uuid":"p1"}),
        assistant(
            "a1",
            "u1",
            "2025-01-01T10:00:05Z",
            "msg_1",
            json!({"type":"thinking","thinking":"let me look"}),
        ),
        assistant(
            "a2",
            "a1",
            "2025-01-01T10:00:06Z",
            "msg_1",
            json!({"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cargo test","description":"Run tests"}}),
        ),
        user(
            "u2",
            Some("a2"),
            "2025-01-01T10:00:07Z",
            json!([{"type":"tool_result","tool_use_id":"t1","content":"1 failed","is_error":true}]),
        ),
        json!({"type":"user","uuid":"m1","parentUuid":"u2","sessionId":S,"isMeta":true,"timestamp":"2025-01-01T10:00:08Z",
               "message":{"role":"user","content":"<local-command-caveat>Caveat</local-command-caveat>"}}),
        user(
            "u3",
            Some("u2"),
            "2025-01-01T10:01:00Z",
            json!(
                "<command-name>/compact</command-name>\n<command-message>compact</command-message>\n<command-args></command-args>"
            ),
        ),
        json!({"type":"system","subtype":"compact_boundary","uuid":"b1","timestamp":"2025-01-01T10:02:00Z","content":"Conversation compacted"}),
        json!({"type":"user","uuid":"c1","parentUuid":"b1","sessionId":S,"isCompactSummary":true,"timestamp":"2025-01-01T10:02:01Z",
               "message":{"role":"user","content":"This session is being continued. Summary: retry loop fixed."}}),
        user(
            "u4",
            Some("c1"),
            "2025-01-01T10:03:00Z",
            json!("now the docs"),
        ),
        json!({"type":"user","uuid":"s1","parentUuid":"u4","isSidechain":true,"sessionId":S,"timestamp":"2025-01-01T10:03:01Z",
               "message":{"role":"user","content":"Explore the docs folder"}}),
        json!({"type":"assistant","uuid":"s2","parentUuid":"s1","isSidechain":true,"sessionId":S,"timestamp":"2025-01-01T10:03:02Z",
               "message":{"id":"msg_s","role":"assistant","content":[{"type":"text","text":"docs/ has 3 files"}]}}),
        json!({"type":"assistant","uuid":"a3","parentUuid":"u4","sessionId":S,"timestamp":"2025-01-01T10:03:05Z",
               "message":{"id":"msg_3","role":"assistant","content":[{"type":"text","text":"Done"},{"type":"brand_new_block"}]}}),
        json!({"type":"summary","summary":"Retry loop and docs","leafUuid":"a3"}),
    ];
    write_jsonl(&dir.join(format!("projects/-work-app/{S}.jsonl")), &lines);
    lines
}

fn subagent_line(agent: &str, uuid: &str, ts: &str, text: &str) -> Value {
    json!({"type":"user","uuid":uuid,"isSidechain":true,"agentId":agent,"sessionId":S,"timestamp":ts,
           "cwd":"/elsewhere/worktree","message":{"role":"user","content":text}})
}

fn setup() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    main_session(dir);
    // 2.0.x sibling layout: parent is the sessionId inside.
    write_jsonl(
        &dir.join("projects/-work-app/agent-sib1.jsonl"),
        &[subagent_line(
            "sib1",
            "x1",
            "2025-01-01T10:00:30Z",
            "sibling task",
        )],
    );
    // 2.1.x nested layout with meta.
    let nested = dir.join(format!(
        "projects/-work-app/{S}/subagents/agent-nest1.jsonl"
    ));
    write_jsonl(
        &nested,
        &[subagent_line(
            "nest1",
            "y1",
            "2025-01-01T10:04:00Z",
            "nested task",
        )],
    );
    fs::write(
        nested.with_file_name("agent-nest1.meta.json"),
        r#"{"agentType":"Explore"}"#,
    )
    .unwrap();
    // Empty and snapshot-only files are sessions without messages.
    fs::write(
        dir.join("projects/-work-app/22222222-0000-0000-0000-000000000000.jsonl"),
        "",
    )
    .unwrap();
    write_jsonl(
        &dir.join("projects/-work-app/33333333-0000-0000-0000-000000000000.jsonl"),
        &[json!({"type":"file-history-snapshot","snapshot":{}})],
    );
    tmp
}

#[test]
fn layouts_windows_merging_and_stripping() {
    let tmp = setup();
    let (sessions, found) = transcript::load_all(&transcript::Sources::disk(), tmp.path());
    assert!(found.problems.is_empty());
    assert_eq!(sessions.len(), 3);
    let s = sessions.iter().find(|s| s.session_id == S).unwrap();
    assert_eq!(s.project, "/work/app", "first cwd, not a later one");
    assert_eq!(s.title.as_deref(), Some("Retry loop and docs"));
    assert_eq!(s.windows, 2);

    // Main conversation: u1, a1+a2 merged, u2, u3 (/compact), c1 (summary), u4, a3. isMeta dropped.
    let ids: Vec<_> = s.messages.iter().map(|m| m.uuid.as_str()).collect();
    assert_eq!(ids, ["u1", "a1", "u2", "u3", "c1", "u4", "a3"]);
    let merged = &s.messages[1];
    assert_eq!(merged.parts.len(), 2);
    assert_eq!(merged.merged_uuids, ["a2"]);
    assert!(merged.is_named_by("a1") && merged.is_named_by("a2") && !merged.is_named_by(""));
    assert!(matches!(&merged.parts[0], Part::Thinking { .. }));
    assert!(
        matches!(&merged.parts[1], Part::ToolUse { name, summary, .. } if name == "Bash" && summary == "cargo test — Run tests")
    );
    assert_eq!(merged.model.as_deref(), Some("claude-opus-4"));
    assert_eq!(merged.cwd.as_deref(), Some("/work/app/sub"));
    assert!(
        matches!(&s.messages[2].parts[0], Part::ToolResult { text, is_error: true, .. } if text == "1 failed")
    );
    assert!(
        matches!(&s.messages[0].parts[0], Part::Text { text } if text.trim() == "Fix the retry loop")
    );
    assert!(matches!(&s.messages[3].parts[0], Part::Text { text } if text.trim() == "/compact"));
    let windows: Vec<_> = s.messages.iter().map(|m| m.window).collect();
    assert_eq!(windows, [0, 0, 0, 0, 1, 1, 1]);
    assert!(s.messages[4].is_compact_summary);
    assert_eq!(s.files[0].report.unknown_blocks, 1);
    assert_eq!(s.messages[0].git_branch.as_deref(), Some("main"));

    // Subagents: inline chain, sibling file, nested file with agentType; parent's project and window by time.
    let by = |layout| s.subagents.iter().find(|a| a.layout == layout).unwrap();
    let inline = by(SubagentLayout::Inline);
    assert_eq!(inline.agent_id, "sidechain-s1");
    assert_eq!(inline.messages.len(), 2);
    assert!(
        inline
            .messages
            .iter()
            .all(|m| m.window == 1 && m.project == "/work/app")
    );
    let sib = by(SubagentLayout::Sibling);
    assert_eq!((sib.agent_id.as_str(), sib.messages[0].window), ("sib1", 0));
    let nest = by(SubagentLayout::Nested);
    assert_eq!(nest.agent_type.as_deref(), Some("Explore"));
    assert_eq!(nest.messages[0].window, 1);
    assert_eq!(nest.messages[0].project, "/work/app");
    assert_eq!(nest.messages[0].cwd.as_deref(), Some("/elsewhere/worktree"));
    assert_eq!(nest.messages[0].agent_id.as_deref(), Some("nest1"));
}

#[test]
fn cli_sessions_json_and_id_validation() {
    let tmp = setup();
    let bin = env!("CARGO_BIN_EXE_ghola");
    let v = common::run_json(std::process::Command::new(bin).args([
        "--claude-dir",
        tmp.path().to_str().unwrap(),
        "sessions",
        "--project",
        "/work/app",
        "--json",
    ]));
    let s = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == S)
        .unwrap();
    assert_eq!(s["messages"], 7);
    assert_eq!(s["windows"], 2);
    assert_eq!(s["subagents"], 3);
    assert_eq!(s["skipped_lines"], 0);
    assert_eq!(s["subagent_sessions"].as_array().unwrap().len(), 3);

    for bad in ["../etc/passwd", "/tmp/x", "..", "nope-no-such"] {
        let out = std::process::Command::new(bin)
            .args(["--claude-dir", tmp.path().to_str().unwrap(), "show", bad])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad} accepted");
        assert!(!out.stderr.is_empty());
    }
    let stdout = common::run_ok(std::process::Command::new(bin).args([
        "--claude-dir",
        tmp.path().to_str().unwrap(),
        "show",
        "1111",
        "--window",
        "1",
    ]));
    let text = String::from_utf8_lossy(&stdout);
    assert!(
        text.contains("now the docs") && !text.contains("Fix the retry loop"),
        "{text}"
    );
}

#[test]
fn a_subagents_work_without_its_main_transcript_is_listed_and_warm_ups_are_not() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let line = |session: &str, agent: &str, uuid: &str, text: &str| {
        json!({"type":"user","uuid":uuid,"isSidechain":true,"agentId":agent,"sessionId":session,
               "timestamp":"2025-01-02T09:00:00Z","cwd":"/work/app","message":{"role":"user","content":text}})
    };
    // A session whose main file is gone, its subagent's work left (2.1.x nested layout).
    let orphan = "44444444-0000-0000-0000-000000000000";
    write_jsonl(
        &dir.join(format!(
            "projects/-work-app/{orphan}/subagents/agent-exp1.jsonl"
        )),
        &[line(orphan, "exp1", "o1", "Map the retry code paths")],
    );
    // Beside it, the warm-up Claude Code started on its own, with its reply: neither is the work.
    write_jsonl(
        &dir.join(format!(
            "projects/-work-app/{orphan}/subagents/agent-warm0.jsonl"
        )),
        &[
            line(orphan, "warm0", "ow1", "Warmup"),
            json!({"type":"assistant","uuid":"ow2","isSidechain":true,"agentId":"warm0","sessionId":orphan,
                 "timestamp":"2025-01-02T09:00:01Z","cwd":"/work/app",
                 "message":{"id":"mw0","role":"assistant","content":[{"type":"text","text":"I'm ready to help."}]}}),
        ],
    );
    // An empty session with only the warm-up run Claude Code 2.0.x starts beside it (sibling layout).
    let idle = "55555555-0000-0000-0000-000000000000";
    fs::create_dir_all(dir.join("projects/-work-app")).unwrap();
    fs::write(dir.join(format!("projects/-work-app/{idle}.jsonl")), "").unwrap();
    write_jsonl(
        &dir.join("projects/-work-app/agent-warm1.jsonl"),
        &[line(idle, "warm1", "w1", "Warmup")],
    );
    // And one whose reply alone was written (2.0.55): no one asked it anything.
    write_jsonl(
        &dir.join("projects/-work-app/agent-warm2.jsonl"),
        &[
            json!({"type":"assistant","uuid":"w2","isSidechain":true,"agentId":"warm2","sessionId":idle,
                 "timestamp":"2025-01-02T09:00:01Z","cwd":"/work/app",
                 "message":{"id":"mw2","role":"assistant","content":[{"type":"text","text":"I'm ready to help."}]}}),
        ],
    );
    let bin = env!("CARGO_BIN_EXE_ghola");
    let listed = |json: bool| {
        let mut cmd = std::process::Command::new(bin);
        cmd.args([
            "--claude-dir",
            dir.to_str().unwrap(),
            "sessions",
            "--global",
        ]);
        if json {
            cmd.arg("--json");
        }
        common::run_ok(&mut cmd)
    };
    let v: Value = serde_json::from_slice(&listed(true)).unwrap();
    let ids: Vec<&str> = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [orphan],
        "the orphan listed, the warm-up's session not"
    );
    let s = &v["sessions"][0];
    assert_eq!(s["messages"], 0);
    assert_eq!(s["title"], "Map the retry code paths");
    let text = String::from_utf8(listed(false)).unwrap();
    // The warm-up and its reply are not counted as the session's work.
    assert!(text.contains("1 subagent message, 1 subagent "), "{text}");
    // `show` and the browser's page show the subagent's work without being asked.
    let shown = String::from_utf8(common::run_ok(std::process::Command::new(bin).args([
        "--claude-dir",
        dir.to_str().unwrap(),
        "show",
        orphan,
    ])))
    .unwrap();
    assert!(
        shown.contains("not in its files") && shown.contains("Map the retry code paths"),
        "{shown}"
    );
    let (sessions, _) = transcript::load_all(&transcript::Sources::disk(), dir);
    let s = sessions.iter().find(|s| s.session_id == orphan).unwrap();
    let page = ghola::ui::conversation::page(s, None, "token");
    assert!(
        page.contains("<details class=agent id=\"agent-exp1\" open>"),
        "{page}"
    );
    let idle = sessions.iter().find(|s| s.session_id == idle).unwrap();
    assert_eq!(idle.subagents.len(), 2);
    assert!(idle.subagents.iter().all(|a| a.is_warmup()));
    assert_eq!(idle.title, None, "a warm-up names no session");
    // `search --session` searches that session from any directory: the current one is not assumed around it.
    let idx = tmp.path().join("idx");
    let words_only = || {
        let mut c = common::ghola_at(dir, &idx);
        common::without_model(&mut c, tmp.path());
        c.current_dir(tmp.path());
        c
    };
    common::index_by_words(&mut words_only());
    let found = |extra: &[&str]| {
        let mut c = words_only();
        c.args(["search", "retry code paths", "--json", "--no-update"])
            .args(extra);
        common::run_json(&mut c)["total_matches"].as_u64().unwrap()
    };
    assert_eq!(found(&["--session", "44444444"]), 1);
    assert_eq!(
        found(&["--session", "44444444", "--project", "/elsewhere"]),
        0
    );
}
