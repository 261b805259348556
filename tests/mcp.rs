//! `ghola serve` over stdio as a client sees it: prompt answers to `server/discover` and `initialize`, the tool
//! list, a search, argument validation returned as tool errors, session detail, and nothing but JSON-RPC on stdout.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

fn fixture(claude: &std::path::Path) {
    let dir = claude.join("projects/-w-app");
    std::fs::create_dir_all(&dir).unwrap();
    let lines = [
        json!({"type":"user","uuid":"u1","sessionId":"aaaa1111-0000-0000-0000-000000000000","cwd":"/w/app","timestamp":"2025-05-01T10:00:00Z","message":{"role":"user","content":"Why does the build fail with ERR_LINKER_MISSING?"}}),
        json!({"type":"assistant","uuid":"a1","sessionId":"aaaa1111-0000-0000-0000-000000000000","cwd":"/w/app","timestamp":"2025-05-01T10:00:05Z","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"Install the lld linker; ERR_LINKER_MISSING means cc cannot find it."}]}}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("aaaa1111-0000-0000-0000-000000000000.jsonl"), body).unwrap();
}

#[test]
fn serves_tools_over_stdio() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    fixture(&claude);
    let idx = tmp.path().join("idx");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ghola"))
        .args([
            "--claude-dir",
            claude.to_str().unwrap(),
            "--index-dir",
            idx.to_str().unwrap(),
            "serve",
            "--poll-seconds",
            "1",
        ])
        .env("CLAUDE_PROJECT_DIR", "/w/app")
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    let mut recv = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line)
            .unwrap_or_else(|e| panic!("stdout is not JSON-RPC: {line:?} ({e})"))
    };
    let start = Instant::now();
    send(json!({"jsonrpc":"2.0","id":0,"method":"server/discover","params":{}}));
    assert_eq!(recv()["id"], 0);
    send(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}),
    );
    let init = recv();
    assert_eq!(init["result"]["serverInfo"]["name"], "ghola");
    assert!(
        start.elapsed().as_secs_f64() < 2.0,
        "initialize must not wait for the model or the index"
    );
    send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    send(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}));
    let tools: Vec<String> = recv()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    for t in [
        "search_project_history",
        "search_global_history",
        "get_session_detail",
        "duncan_projects",
        "duncan_list_sessions",
    ] {
        assert!(tools.contains(&t.to_string()), "{t} missing from {tools:?}");
    }
    // The background indexer makes the fixture searchable within a few seconds.
    let mut found = false;
    for id in 10..60 {
        send(
            json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"search_project_history","arguments":{"query":"ERR_LINKER_MISSING","context_before_after":0}}}),
        );
        let r = recv();
        assert_ne!(r["result"]["isError"], true, "{r}");
        let resp: Value =
            serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        if resp["total_matches"].as_u64().unwrap_or(0) >= 1 {
            assert_eq!(
                resp["results"][0]["matched_message"]["session_id"],
                "aaaa1111-0000-0000-0000-000000000000"
            );
            found = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    assert!(found, "the fixture never became searchable");
    for (id, name, args, needle) in [
        (
            90,
            "search_global_history",
            json!({"query":"x","max_results":-1}),
            "must not be negative",
        ),
        (
            91,
            "search_project_history",
            json!({"query":"x","after":"someday"}),
            "ISO 8601",
        ),
        (
            92,
            "get_session_detail",
            json!({"session_id":"../../etc/passwd"}),
            "not a session id",
        ),
        (
            93,
            "duncan_list_sessions",
            json!({"mode":"everything"}),
            "mode must be",
        ),
    ] {
        send(
            json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":args}}),
        );
        let r = recv();
        assert_eq!(r["result"]["isError"], true, "{r}");
        assert!(
            r["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains(needle),
            "{r}"
        );
    }
    send(
        json!({"jsonrpc":"2.0","id":94,"method":"tools/call","params":{"name":"get_session_detail","arguments":{"session_id":"aaaa"}}}),
    );
    let r = recv();
    let detail: Value =
        serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(detail["total_messages"], 2);
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
}
