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
        // The same response's second piece (Claude Code writes a reply block by block): one message with a1.
        json!({"type":"assistant","uuid":"a2","parentUuid":"a1","sessionId":"aaaa1111-0000-0000-0000-000000000000","cwd":"/w/app","timestamp":"2025-05-01T10:00:06Z","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"Then run the build again."}]}}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("aaaa1111-0000-0000-0000-000000000000.jsonl"), body).unwrap();
}

#[test]
fn serves_tools_over_stdio() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    fixture(&claude);
    // A session of another project, for a search that names it by id from this one.
    let other = claude.join("projects/-w-other");
    std::fs::create_dir_all(&other).unwrap();
    let line = json!({"type":"user","uuid":"o1","sessionId":"cccc3333-0000-0000-0000-000000000000","cwd":"/w/other",
                      "timestamp":"2025-05-02T10:00:00Z","message":{"role":"user","content":"The ZEBRA_QUOTA limit was hit again."}});
    std::fs::write(
        other.join("cccc3333-0000-0000-0000-000000000000.jsonl"),
        format!("{line}\n"),
    )
    .unwrap();
    let idx = tmp.path().join("idx");
    let mut child = common::ghola_at(&claude, &idx)
        .args(["serve", "--poll-seconds", "1"])
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
        "project_notes",
        "open_history_browser",
        "file_history",
    ] {
        assert!(tools.contains(&t.to_string()), "{t} missing from {tools:?}");
    }
    // The background indexer makes the fixture searchable within a few seconds.
    let mut found = false;
    for id in 10..60 {
        send(
            json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"search_project_history","arguments":{"query":"ERR_LINKER_MISSING","context_before_after":0,"format":"json"}}}),
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
    // A session named by id is searched in whatever project it was recorded; the project alone does not hold it.
    let total = |id: u64,
                 args: Value,
                 send: &mut dyn FnMut(Value),
                 recv: &mut dyn FnMut() -> Value| {
        send(
            json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"search_project_history","arguments":args}}),
        );
        let r = recv();
        assert_ne!(r["result"]["isError"], true, "{r}");
        let resp: Value =
            serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        resp["total_matches"].as_u64().unwrap_or(0)
    };
    let asked = json!({"query":"ZEBRA_QUOTA","context_before_after":0,"format":"json"});
    let mut by_id = asked.clone();
    by_id["session_id"] = json!("cccc3333");
    assert_eq!(total(80, asked, &mut send, &mut recv), 0);
    assert_eq!(total(81, by_id, &mut send, &mut recv), 1);
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
        (
            94,
            "search_global_history",
            json!({"query": "x".repeat(240_000)}),
            "the limit is 2000",
        ),
    ] {
        send(
            json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":args}}),
        );
        let r = recv();
        assert_eq!(r["result"]["isError"], true, "{r}");
        assert!(
            r.to_string().len() < 40_000,
            "an error stays under the bound too"
        );
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
    // A piece's own id (read from the file, or a tool result's parentUuid) finds the message it was merged into.
    send(
        json!({"jsonrpc":"2.0","id":95,"method":"tools/call","params":{"name":"get_session_detail","arguments":{"session_id":"aaaa","around":"a2"}}}),
    );
    let r = recv();
    assert_ne!(r["result"]["isError"], true, "{r}");
    let page = r["result"]["content"][0]["text"].as_str().unwrap();
    let marked: Vec<&str> = page.lines().filter(|l| l.starts_with('>')).collect();
    assert!(
        marked.len() == 1
            && marked[0].contains("lld linker")
            && page.contains("Then run the build again"),
        "{page}"
    );
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
}

use crate::common;

use common::mcp_client::Client;
use common::standin::{Reply, StandIn};
use std::sync::Arc;
use std::time::Duration;

fn second_session(claude: &std::path::Path) {
    let lines = [
        json!({"type":"user","uuid":"v1","sessionId":"bbbb2222-0000-0000-0000-000000000000","cwd":"/w/app","timestamp":"2025-05-02T10:00:00Z","message":{"role":"user","content":"Which port does the dev server use?"}}),
        json!({"type":"assistant","uuid":"v2","parentUuid":"v1","sessionId":"bbbb2222-0000-0000-0000-000000000000","cwd":"/w/app","timestamp":"2025-05-02T10:00:05Z","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"The dev server listens on port 8137."}]}}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(
        claude.join("projects/-w-app/bbbb2222-0000-0000-0000-000000000000.jsonl"),
        body,
    )
    .unwrap();
}

#[test]
fn duncan_query_over_mcp_sends_progress_validates_and_cancels() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    fixture(&claude);
    second_session(&claude);
    let idx = tmp.path().join("idx");
    let slow = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let slow2 = slow.clone();
    let s = StandIn::start(
        4,
        Arc::new(move |req: &Value| {
            let has = req["messages"].to_string().contains("8137");
            let reply = Reply::tool_use(
                "duncan_response",
                json!({"hasContext": has, "answer": if has { "Port 8137." } else { "Not discussed here." }}),
            );
            if slow2.load(std::sync::atomic::Ordering::SeqCst) {
                Reply::Delayed(Duration::from_secs(3), Box::new(reply))
            } else {
                reply
            }
        }),
    );
    let log = tmp.path().join("duncan.jsonl");
    let mut c = Client::start(
        &claude,
        &idx,
        &[
            ("CLAUDE_PROJECT_DIR", "/w/app"),
            ("ANTHROPIC_BASE_URL", &s.url),
            ("ANTHROPIC_API_KEY", "test-key"),
            ("DUNCAN_LOG", log.to_str().unwrap()),
        ],
    );
    let tools = c.request(2, "tools/list", json!({}));
    let duncan = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "duncan_query")
        .expect("duncan_query is listed")
        .clone();
    assert!(
        duncan["description"]
            .as_str()
            .unwrap()
            .contains("MODEL PROVIDER")
    );
    let params = common::mcp_client::TOOLS
        .iter()
        .find(|(name, _)| *name == "duncan_query")
        .unwrap()
        .1;
    for p in params {
        assert!(
            duncan["inputSchema"]["properties"].get(p).is_some(),
            "duncan_query lacks {p}"
        );
    }

    let r = c.request(
        3,
        "tools/call",
        json!({"name": "duncan_query", "_meta": {"progressToken": "tok-1"},
               "arguments": {"question": "Which port does the dev server use?", "mode": "project"}}),
    );
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert_ne!(r["result"]["isError"], true, "{r}");
    assert!(
        text.contains("Port 8137.") && text.contains("1 of 2 window(s) had context"),
        "{text}"
    );
    let progress: Vec<&Value> = c
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert_eq!(
        progress.len(),
        2,
        "one progress notification per window: {:?}",
        c.notifications
    );
    assert!(
        progress
            .iter()
            .all(|p| p["params"]["progressToken"] == "tok-1" && p["params"]["total"] == 2.0)
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 2);

    for (id, args, needle) in [
        (
            4,
            json!({"question": "q", "mode": "sideways"}),
            "unknown mode",
        ),
        (
            5,
            json!({"question": "q", "limit": -1}),
            "must not be negative",
        ),
        (
            6,
            json!({"question": "q", "batch_size": 100}),
            "batch_size must be between",
        ),
        (7, json!({"question": "  "}), "question must not be empty"),
        (
            8,
            json!({"question": "q", "mode": "session", "session_id": "../x"}),
            "not a session id",
        ),
        (
            9,
            json!({"question": "q", "scope": "galaxy"}),
            "scope must be",
        ),
    ] {
        let (is_error, text) = c.call(id, "duncan_query", args);
        assert!(is_error && text.contains(needle), "{id}: {text}");
    }

    // Cancellation: the first window is in flight, the second never starts.
    slow.store(true, std::sync::atomic::Ordering::SeqCst);
    let before = s.requests().len();
    c.send(json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
        "params": {"name": "duncan_query", "arguments": {"question": "port?", "mode": "project", "batch_size": 1}}}));
    std::thread::sleep(Duration::from_millis(800));
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 20, "reason": "test"}}));
    let started = Instant::now();
    let r = c.request(
        21,
        "tools/call",
        json!({"name": "duncan_projects", "arguments": {}}),
    );
    assert_ne!(r["result"]["isError"], true);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the server stays responsive"
    );
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        s.requests().len() - before,
        1,
        "the second window was never asked"
    );
}

#[test]
fn appended_lines_become_searchable_and_two_servers_share_one_index() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    fixture(&claude);
    let idx = tmp.path().join("idx");
    let env = [("CLAUDE_PROJECT_DIR", "/w/app")];
    let mut a = Client::start(&claude, &idx, &env);
    let mut b = Client::start(&claude, &idx, &env);
    let search = |c: &mut Client, id: u64, q: &str| -> Value {
        let (is_error, text) = c.call(
            id,
            "search_project_history",
            json!({"query": q, "context_before_after": 0, "format": "json"}),
        );
        assert!(!is_error, "{text}");
        serde_json::from_str(&text).unwrap()
    };
    let wait_for = |c: &mut Client, base: u64, q: &str| -> Value {
        for i in 0..80 {
            let r = search(c, base + i, q);
            if r["total_matches"].as_u64().unwrap_or(0) >= 1 {
                return r;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("{q:?} never became searchable");
    };
    wait_for(&mut a, 100, "ERR_LINKER_MISSING");
    wait_for(&mut b, 200, "ERR_LINKER_MISSING");
    // A line appended while both servers run.
    let path = claude.join("projects/-w-app/aaaa1111-0000-0000-0000-000000000000.jsonl");
    let line = json!({"type":"user","uuid":"u9","parentUuid":"a1","sessionId":"aaaa1111-0000-0000-0000-000000000000","cwd":"/w/app","timestamp":"2025-05-01T10:05:00Z","message":{"role":"user","content":"Remember the codeword ZEPHYRQUARTZ for the release."}});
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(f, "{line}").unwrap();
    drop(f);
    let appended = Instant::now();
    let r = wait_for(&mut a, 300, "ZEPHYRQUARTZ");
    eprintln!("appended line searchable after {:?}", appended.elapsed());
    assert_eq!(r["results"][0]["matched_message"]["uuid"], "u9");
    let r = wait_for(&mut b, 400, "ZEPHYRQUARTZ");
    assert_eq!(r["total_matches"], 1, "indexed exactly once: {r}");
    let status = common::ghola_at(&claude, &idx)
        .args(["status", "--json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["messages"], 3, "{status}");
}

#[test]
fn project_notes_reads_the_notes_files_and_rejects_bad_arguments() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    fixture(&claude);
    let idx = tmp.path().join("idx");
    let notes = tmp.path().join("notes");
    // A project's notes, written by hand (the files are the truth).
    common::run_ok(
        std::process::Command::new(env!("CARGO_BIN_EXE_ghola"))
            .args(["notes", "edit", "--project", "/w/app"])
            .env("GHOLA_NOTES_DIR", &notes)
            .env("EDITOR", "true"),
    );
    let dir = std::fs::read_dir(notes.join("projects"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    std::fs::write(
        dir.join("DECISIONS.md"),
        "- [2026-11-01] Chose SQLite over Postgres because the app is single-user\n- [2026-11-02] Chose tabs\n",
    )
    .unwrap();
    std::fs::write(dir.join("PLAN.md"), "- Ship 1.0\n").unwrap();
    let notes_str = notes.to_str().unwrap();
    let env = [
        ("CLAUDE_PROJECT_DIR", "/w/app"),
        ("GHOLA_NOTES_DIR", notes_str),
    ];
    let mut c = Client::start(&claude, &idx, &env);
    let (is_error, text) = c.call(1, "project_notes", json!({}));
    assert!(!is_error, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["total"], 3, "{v:#}");
    assert_eq!(v["extraction"], "off");
    let (_, text) = c.call(
        2,
        "project_notes",
        json!({"category": "decisions", "limit": 1, "offset": 1}),
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["total"], 2);
    assert_eq!(v["has_more"], false);
    assert_eq!(v["notes"][0]["text"], "[2026-11-02] Chose tabs");
    assert!(v["notes"][0]["id"].as_str().unwrap().starts_with("d-"));
    for (id, args, needle) in [
        (3, json!({"category": "wishes"}), "category must be"),
        (4, json!({"offset": -1}), "must not be negative"),
    ] {
        let (is_error, text) = c.call(id, "project_notes", args);
        assert!(is_error && text.contains(needle), "{id}: {text}");
    }
    let (_, text) = c.call(5, "project_notes", json!({"project": "/elsewhere"}));
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["total"], 0);
}

#[test]
fn open_history_browser_serves_the_index_on_loopback_once_per_server() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    fixture(&claude);
    let idx = tmp.path().join("idx");
    common::run_ok(
        Command::new(env!("CARGO_BIN_EXE_ghola"))
            .args(["--claude-dir", claude.to_str().unwrap()])
            .args(["--index-dir", idx.to_str().unwrap(), "index"]),
    );
    let mut c = Client::start(&claude, &idx, &[("CLAUDE_PROJECT_DIR", "/w/app")]);
    let (is_error, text) = c.call(1, "open_history_browser", json!({"open": false}));
    assert!(!is_error, "{text}");
    let link = |text: &str| {
        text.split_whitespace()
            .find(|w| w.starts_with("http://127.0.0.1:"))
            .unwrap_or_else(|| panic!("no address in {text:?}"))
            .to_string()
    };
    let url = link(&text);
    let rest = url.strip_prefix("http://").unwrap();
    let (loopback, path) = rest.split_once('/').unwrap();
    let path = format!("/{path}");
    assert!(path.starts_with("/login?code="), "{url}");
    // The link logs a browser in once (by the way-in page, on the server's own host name); used again, it is
    // refused.
    let login = common::browser::log_in(&url).expect("the link logs in");
    let get = |path: &str, cookie: &str| -> u16 {
        let raw = common::browser::http_get(login.addr, &login.host, path, cookie).unwrap();
        raw.split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    };
    let again = common::browser::http_get(login.addr, loopback, &path, "").unwrap();
    assert!(
        again.starts_with("HTTP/1.1 401"),
        "a link works once: {again}"
    );
    // The page searches the server's index with the cookie, and refuses without it.
    let page =
        common::browser::http_get(login.addr, &login.host, "/search?q=linker", &login.cookie)
            .unwrap();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("<mark>linker</mark>"), "{page}");
    assert_eq!(get("/search?q=linker", ""), 401);
    // A second call gives a new link to the same server: one browser per server.
    let (_, again) = c.call(2, "open_history_browser", json!({"open": false}));
    let second = link(&again);
    assert_ne!(second, url);
    assert!(
        second.starts_with(&format!("http://{loopback}/login?code=")),
        "{again}"
    );
    let (is_error, text) = c.call(3, "open_history_browser", json!({"open": "yes"}));
    assert!(is_error, "a bad argument is an error: {text}");
}
