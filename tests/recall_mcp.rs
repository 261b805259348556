//! Recall that fits the context window, through `ghola serve` as a client sees it: the compact text answer under
//! the caller's budget, one expansion around a hit by its ids, sessions grouped, `since`, and a search inside the
//! calling session's own compacted windows.

use crate::common;

use common::mcp_client::Client;
use serde_json::{Value, json};
use std::path::Path;

const RECENT: &str = "aaaa1111-0000-4000-8000-000000000001";
const OLD: &str = "bbbb2222-0000-4000-8000-000000000002";
const CALLING: &str = "cccc3333-0000-4000-8000-000000000003";

fn line(session: &str, n: usize, role: &str, days_ago: i64, text: &str) -> Value {
    let t =
        chrono::Utc::now() - chrono::Duration::days(days_ago) + chrono::Duration::seconds(n as i64);
    let uuid = format!("{n:02}{}", &session[2..]);
    if role == "user" {
        json!({"type":"user","uuid":uuid,"sessionId":session,"cwd":"/w/app","timestamp":t.to_rfc3339(),
               "message":{"role":"user","content":text}})
    } else {
        json!({"type":"assistant","uuid":uuid,"sessionId":session,"cwd":"/w/app","timestamp":t.to_rfc3339(),
               "message":{"id":format!("m{n}{session}"),"role":"assistant","content":[{"type":"text","text":text}]}})
    }
}

fn write(claude: &Path, session: &str, lines: &[Value]) {
    let dir = claude.join("projects/-w-app");
    std::fs::create_dir_all(&dir).unwrap();
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join(format!("{session}.jsonl")), body).unwrap();
}

fn fixture(claude: &Path) {
    // Two days ago: a long debugging session about the ZEPHYR cache, the fix in its middle.
    let mut recent = Vec::new();
    for n in 0..24 {
        let (role, text) = match n {
            11 => (
                "user",
                "So what finally fixed the ZEPHYR eviction storm?".to_string(),
            ),
            12 => (
                "assistant",
                "The ZEPHYR eviction storm stopped once the TTL jitter was set to 15%.".to_string(),
            ),
            _ if n % 2 == 0 => (
                "user",
                format!("step {n}: {}", "we kept looking at logs ".repeat(30)),
            ),
            _ => (
                "assistant",
                format!("step {n}: {}", "nothing conclusive yet ".repeat(30)),
            ),
        };
        recent.push(line(RECENT, n, role, 2, &text));
    }
    write(claude, RECENT, &recent);
    // Two months ago: ZEPHYR mentioned once.
    write(
        claude,
        OLD,
        &[
            line(
                OLD,
                0,
                "user",
                60,
                "Set up the ZEPHYR cache for the catalogue.",
            ),
            line(
                OLD,
                1,
                "assistant",
                60,
                "ZEPHYR is configured with a one hour TTL.",
            ),
        ],
    );
    // The calling session: window 0 (compacted away) holds the OTTER-42 token, window 1 is current.
    let mut calling = vec![
        line(
            CALLING,
            0,
            "user",
            0,
            "Which token does the ZEPHYR deploy use? It is OTTER-42.",
        ),
        line(
            CALLING,
            1,
            "assistant",
            0,
            "Noted: the ZEPHYR deploy token is OTTER-42.",
        ),
    ];
    calling.push(json!({"type":"system","subtype":"compact_boundary","uuid":"99cc3333-0000-4000-8000-000000000003",
        "sessionId":CALLING,"cwd":"/w/app","timestamp":chrono::Utc::now().to_rfc3339()}));
    calling.push(line(
        CALLING,
        3,
        "user",
        0,
        "Carry on with the release notes.",
    ));
    write(claude, CALLING, &calling);
}

/// The top hit's session and hit ids: `[1] … · session <id> window <w> · … · hit <id>`.
fn top_hit(text: &str) -> (String, String) {
    let header = text
        .lines()
        .find(|l| l.starts_with("[1] "))
        .unwrap_or_else(|| panic!("no first result in {text}"));
    let after = |key: &str| {
        header
            .split(" · ")
            .find_map(|p| p.strip_prefix(key))
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("no {key} in {header}"))
            .to_string()
    };
    (after("session "), after("hit "))
}

#[test]
fn a_model_recalls_in_few_characters_and_reads_more_by_id() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    fixture(&claude);
    let mut c = Client::start(
        &claude,
        &tmp.path().join("idx"),
        &[
            ("CLAUDE_PROJECT_DIR", "/w/app"),
            ("CLAUDE_CODE_SESSION_ID", CALLING),
        ],
    );
    let mut id = 10;
    let mut call = |c: &mut Client, tool: &str, args: Value| {
        id += 1;
        c.call(id, tool, args)
    };
    // The first search waits for the first indexing pass.
    let (err, text) = call(
        &mut c,
        "search_project_history",
        json!({"query": "what fixed the ZEPHYR eviction storm"}),
    );
    assert!(!err, "{text}");
    // Text for a model: a header per hit, lines, the hit marked; no JSON keys repeated per message.
    assert!(text.contains(" for \"what fixed the ZEPHYR"), "{text}");
    assert!(!text.contains("\"uuid\""), "{text}");
    let (session, hit) = top_hit(&text);
    assert_eq!(session, &RECENT[..8], "{text}");
    assert!(
        text.contains("> assistant: The ZEPHYR eviction storm stopped"),
        "{text}"
    );
    assert!(
        text.chars().count() <= 16_000,
        "the default budget: {}",
        text.chars().count()
    );

    // One expansion: the messages around the hit, by its ids, without searching again.
    let (err, more) = call(
        &mut c,
        "get_session_detail",
        json!({"session_id": session, "around": hit, "before": 3, "after": 2}),
    );
    assert!(!err, "{more}");
    assert!(
        more.starts_with(&format!("session {}", &RECENT[..8])),
        "{more}"
    );
    assert_eq!(
        more.lines().filter(|l| l.starts_with(['>', ' '])).count(),
        6,
        "{more}"
    );
    assert!(more.contains(&format!("> {hit} ")), "{more}");
    assert!(more.contains("So what finally fixed"), "{more}");
    assert!(more.contains("TTL jitter was set to 15%"), "{more}");
    // The JSON shape is still there for clients that want every part.
    let (err, json_page) = call(
        &mut c,
        "get_session_detail",
        json!({"session_id": session, "around": hit, "before": 1, "after": 0, "format": "json"}),
    );
    assert!(!err, "{json_page}");
    let v: Value = serde_json::from_str(&json_page).unwrap();
    assert_eq!(v["messages"].as_array().unwrap().len(), 2, "{v:#}");

    // The caller's budget: a small one is kept, and the answer says what was cut and how to get it.
    let (err, small) = call(
        &mut c,
        "search_project_history",
        json!({"query": "logs conclusive step", "max_chars": 2000, "relative_floor": 0}),
    );
    assert!(!err, "{small}");
    assert!(small.chars().count() <= 2000, "{}", small.chars().count());
    assert!(small.contains("cut to fit 2000 characters"), "{small}");
    assert!(small.contains("around=<hit>"), "{small}");

    // Grouped by session: the sessions about the query, best first, each with its snippets.
    let (err, groups) = call(
        &mut c,
        "search_project_history",
        json!({"query": "ZEPHYR", "group_by": "session", "relative_floor": 0}),
    );
    assert!(!err, "{groups}");
    assert!(
        groups.contains("sessions with hits for \"ZEPHYR\""),
        "{groups}"
    );
    assert!(
        groups.contains(&format!("session {}", &RECENT[..8])),
        "{groups}"
    );
    assert!(
        groups.contains(&format!("session {}", &OLD[..8])),
        "{groups}"
    );

    // since: the old session drops out of the search and of the listing.
    let (err, recent) = call(
        &mut c,
        "search_project_history",
        json!({"query": "ZEPHYR", "group_by": "session", "since": "7d", "relative_floor": 0}),
    );
    assert!(!err, "{recent}");
    assert!(
        !recent.contains(&format!("session {}", &OLD[..8])),
        "{recent}"
    );
    let (err, listed) = call(&mut c, "duncan_list_sessions", json!({"since": "7d"}));
    assert!(!err, "{listed}");
    let listed: Value = serde_json::from_str(&listed).unwrap();
    let ids: Vec<&str> = common::strings(&listed, "sessions", "session_id");
    assert!(ids.contains(&RECENT) && !ids.contains(&OLD), "{ids:?}");

    // Inside the calling session: what compaction took away, and nothing from other sessions.
    let (err, mine) = call(
        &mut c,
        "search_project_history",
        json!({"query": "ZEPHYR deploy token", "session_id": "current", "relative_floor": 0}),
    );
    assert!(!err, "{mine}");
    assert!(mine.contains("OTTER-42"), "{mine}");
    assert!(
        !mine.contains(&format!("session {}", &RECENT[..8])),
        "{mine}"
    );
    assert!(
        !mine.contains("Carry on with the release notes"),
        "the current window stays out: {mine}"
    );

    // Arguments that cannot be meant are refused, saying why.
    let search = "search_project_history";
    for (tool, args, needle) in [
        (
            search,
            json!({"query": "x", "format": "xml"}),
            "format must be",
        ),
        (
            search,
            json!({"query": "x", "group_by": "project"}),
            "group_by must be",
        ),
        (
            search,
            json!({"query": "x", "max_chars": 10}),
            "max_chars must be between",
        ),
        (
            search,
            json!({"query": "x", "since": "soon"}),
            "neither an age",
        ),
        (search, json!({"query": "x", "session_id": "zzzz"}), "zzzz"),
        (
            "get_session_detail",
            json!({"session_id": RECENT, "around": "ffff"}),
            "no message",
        ),
        (
            "duncan_list_sessions",
            json!({"since": "yesterday-ish"}),
            "neither an age",
        ),
    ] {
        let (err, text) = call(&mut c, tool, args.clone());
        assert!(err && text.contains(needle), "{tool} {args}: {text}");
    }
}

/// A call's line in a session read as text names only its file or its first words; under it comes what the call
/// wrote or asked (a plan, a file's content), cut at `CALL_INPUT_SHOWN` characters and without credentials.
#[test]
fn a_session_read_shows_what_a_call_wrote_cut_and_without_credentials() {
    const PLAN: &str = "dddd4444-0000-4000-8000-000000000004";
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    let token = format!("ghp_{}", "Q7".repeat(18));
    let at = |n: i64| {
        (chrono::Utc::now() - chrono::Duration::days(1) + chrono::Duration::seconds(n)).to_rfc3339()
    };
    let call = |n: usize, name: &str, input: Value| {
        json!({"type":"assistant","uuid":format!("{n:02}{}", &PLAN[2..]),"sessionId":PLAN,"cwd":"/w/app",
               "timestamp":at(n as i64),"message":{"id":format!("m{n}"),"role":"assistant","content":[
                   {"type":"text","text":"Here is the plan."},
                   {"type":"tool_use","id":format!("toolu_{n}"),"name":name,"input":input}]}})
    };
    let plan = format!(
        "# Plan: WOMBAT rollout\n1. Ship behind the wombat_enabled flag\n2. {}\n3. PAST-THE-CUT step",
        "Watch the error budget for a day. ".repeat(40)
    );
    write(
        &claude,
        PLAN,
        &[
            line(
                PLAN,
                0,
                "user",
                1,
                "Plan the WOMBAT rollout, then write the env file.",
            ),
            call(1, "ExitPlanMode", json!({"plan": plan})),
            json!({"type":"user","uuid":format!("02{}", &PLAN[2..]),"sessionId":PLAN,"cwd":"/w/app",
                   "timestamp":at(2),"message":{"role":"user","content":[{"type":"tool_result",
                   "tool_use_id":"toolu_1","content":"User has approved your plan."}]}}),
            call(
                3,
                "Write",
                json!({"file_path": "/w/app/.env", "content": format!("GITHUB_TOKEN={token}\nREGION=eu-west-3")}),
            ),
        ],
    );
    let mut c = Client::start(
        &claude,
        &tmp.path().join("idx"),
        &[("CLAUDE_PROJECT_DIR", "/w/app")],
    );
    let (err, read) = c.call(
        2,
        "get_session_detail",
        json!({"session_id": PLAN, "around": format!("01{}", &PLAN[2..8]), "before": 1, "after": 2}),
    );
    assert!(!err, "{read}");
    // The summary line, then what the call wrote under it.
    assert!(
        read.contains("[tool] ExitPlanMode: # Plan: WOMBAT rollout"),
        "{read}"
    );
    assert!(read.contains("(ExitPlanMode wrote:)"), "{read}");
    assert!(
        read.contains("Ship behind the wombat_enabled flag"),
        "{read}"
    );
    // Cut: the plan's end is not shown, and the cut says so.
    assert!(!read.contains("PAST-THE-CUT"), "{read}");
    let after = read.split("(ExitPlanMode wrote:) ").nth(1).unwrap();
    let end = after.find("\n  02").unwrap_or(after.len());
    let shown = after[..end].replace("\n      ", "\n");
    assert!(shown.ends_with('…'), "{read}");
    assert!(
        shown.starts_with("# Plan: WOMBAT rollout\n1. Ship"),
        "{shown}"
    );
    assert_eq!(shown.chars().count(), 1_000 + 1, "{shown}");
    // A file's content, its credential replaced.
    assert!(read.contains("(Write wrote:)"), "{read}");
    assert!(read.contains("REGION=eu-west-3"), "{read}");
    assert!(!read.contains(&token), "{read}");
    // A message without calls gets no such line.
    assert_eq!(read.matches(" wrote:)").count(), 2, "{read}");

    // A search answer shows the same words after the call's line, fewer of them (`index::shown`)…
    let (err, found) = c.call(
        3,
        "search_project_history",
        json!({"query": "the WOMBAT rollout plan"}),
    );
    assert!(!err, "{found}");
    assert!(
        found.contains("(ExitPlanMode wrote:) # Plan: WOMBAT rollout"),
        "{found}"
    );
    assert!(
        found.contains("Ship behind the wombat_enabled flag"),
        "{found}"
    );
    assert!(!found.contains("PAST-THE-CUT"), "{found}");
    assert!(!found.contains(&token), "{found}");
    assert!(
        !found.contains('\u{1e}'),
        "the mark that keeps them apart: {found}"
    );
    // …but does not search them by their words: only the file a call wrote says "eu-west-3".
    let (err, json_answer) = c.call(
        4,
        "search_project_history",
        json!({"query": "eu-west-3", "format": "json", "relative_floor": 0}),
    );
    assert!(!err, "{json_answer}");
    let v: Value = serde_json::from_str(&json_answer).unwrap();
    for r in v["results"].as_array().unwrap() {
        assert_eq!(r["scores"]["lexical"].as_f64(), Some(0.0), "{v:#}");
    }
}
