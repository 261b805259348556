//! Duncan: conversation rebuild (fixtures and every corpus session), the Messages API backend against a
//! loopback stand-in (request shape, corrective retries, transient errors, per-window failures, the
//! concurrency cap, cancellation), routing modes, the query log, `ghola query`, and the headless backend
//! with the real Claude Code CLI.

use crate::common;

use common::standin::{Reply, StandIn, last_user_text};
use common::{claude_bin, run_fails, run_json};
use ghola::model::api::MessagesApi;
use ghola::model::conversation::{ApiMessage, Block, Speaker, check};
use ghola::replay::route::RouteContext;
use ghola::replay::{Mode, QueryRequest, ReplayError, Source, rebuild};
use ghola::transcript::Sources;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const S1: &str = "11111111-1111-4111-8111-111111111111";
const S2: &str = "22222222-2222-4222-8222-222222222222";
const S3: &str = "33333333-3333-4333-8333-333333333333";
const S4: &str = "44444444-4444-4444-8444-444444444444";

fn entry(
    kind: &str,
    uuid: &str,
    parent: Option<&str>,
    session: &str,
    cwd: &str,
    t: u32,
    extra: Value,
) -> Value {
    let mut v = json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": session, "cwd": cwd,
        "timestamp": format!("2025-05-01T10:{:02}:00Z", t), "isSidechain": false});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn user(
    uuid: &str,
    parent: Option<&str>,
    session: &str,
    cwd: &str,
    t: u32,
    content: Value,
) -> Value {
    entry(
        "user",
        uuid,
        parent,
        session,
        cwd,
        t,
        json!({"message": {"role": "user", "content": content}}),
    )
}

#[allow(clippy::too_many_arguments)]
fn assistant(
    uuid: &str,
    parent: Option<&str>,
    session: &str,
    cwd: &str,
    t: u32,
    id: &str,
    model: &str,
    content: Value,
) -> Value {
    entry(
        "assistant",
        uuid,
        parent,
        session,
        cwd,
        t,
        json!({"message": {"id": id, "role": "assistant", "model": model, "content": content}}),
    )
}

fn write(path: &Path, lines: &[Value]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, body).unwrap();
}

fn simple_session(claude: &Path, id: &str, cwd: &str, branch: &str, q: &str, a: &str, t: u32) {
    let dir = claude.join("projects").join(cwd.replace('/', "-"));
    let mut u = user("u", None, id, cwd, t, json!(q));
    u["uuid"] = json!(format!("{id}-u"));
    u["gitBranch"] = json!(branch);
    let mut r = assistant(
        "a",
        None,
        id,
        cwd,
        t + 1,
        &format!("m-{id}"),
        "claude-sonnet-4-5",
        json!([{"type":"text","text":a}]),
    );
    r["uuid"] = json!(format!("{id}-a"));
    r["parentUuid"] = json!(format!("{id}-u"));
    r["gitBranch"] = json!(branch);
    write(&dir.join(format!("{id}.jsonl")), &[u, r]);
}

/// A Claude dir with: S1 (tool calls with a side-branch result and a persisted output, an image, a meta
/// line, a compaction, a rewind), S2 and S3 (short sessions), S4 (the calling session: compacted, with a
/// subagent).
fn fixture(claude: &Path) {
    let cwd = "/w/app";
    let dir = claude.join("projects/-w-app");
    // An assistant's text reply on S1's chain.
    let said = |uuid: &str, parent: &str, t: u32, id: &str, text: &str| {
        let content = json!([{"type": "text", "text": text}]);
        assistant(
            uuid,
            Some(parent),
            S1,
            cwd,
            t,
            id,
            "claude-sonnet-4-5",
            content,
        )
    };
    let s1 = vec![
        entry(
            "user",
            "u1",
            None,
            S1,
            cwd,
            0,
            json!({"gitBranch": "feature-x", "message": {"role": "user", "content": "How should we retry failed uploads?"}}),
        ),
        assistant(
            "a1",
            Some("u1"),
            S1,
            cwd,
            1,
            "m1",
            "claude-opus-4-1",
            json!([{"type":"thinking","thinking":"hmm","signature":"x"},{"type":"text","text":"Let me check the code."}]),
        ),
        assistant(
            "a2",
            Some("a1"),
            S1,
            cwd,
            1,
            "m1",
            "claude-opus-4-1",
            json!([{"type":"tool_use","id":"T1","name":"Read","input":{"file_path":"src/upload.rs"}}]),
        ),
        assistant(
            "a3",
            Some("a2"),
            S1,
            cwd,
            1,
            "m1",
            "claude-opus-4-1",
            json!([{"type":"tool_use","id":"T2","name":"Grep","input":{"pattern":"retry"}}]),
        ),
        // The result of T1 hangs off a2: a side branch of the chain that runs through a3.
        user(
            "r1",
            Some("a2"),
            S1,
            cwd,
            2,
            json!([{"type":"tool_result","tool_use_id":"T1","content":"fn upload() { /* no retry yet */ }"}]),
        ),
        user(
            "r2",
            Some("a3"),
            S1,
            cwd,
            2,
            json!([{"type":"tool_result","tool_use_id":"T2","content":format!("<persisted-output>\nOutput too large (60KB). Full output saved to: /home/someone/.claude/projects/-w-app/{S1}/tool-results/T2.txt\n\nPreview (first 2KB):\nsrc/a.rs: retry\n</persisted-output>")}]),
        ),
        entry(
            "progress",
            "p1",
            Some("r2"),
            S1,
            cwd,
            2,
            json!({"data": {"type": "hook_progress"}}),
        ),
        assistant(
            "a4",
            Some("p1"),
            S1,
            cwd,
            3,
            "m2",
            "claude-opus-4-1",
            json!([{"type":"text","text":"We decided: exponential backoff with 3 retries, capped at 30 seconds."}]),
        ),
        entry(
            "user",
            "meta",
            Some("a4"),
            S1,
            cwd,
            4,
            json!({"isMeta": true, "message": {"role": "user", "content": "Caveat: the messages below were generated by the user"}}),
        ),
        user(
            "u2",
            Some("meta"),
            S1,
            cwd,
            5,
            json!([{"type":"text","text":"Here is a screenshot of the failure"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]),
        ),
        assistant(
            "a5",
            Some("u2"),
            S1,
            cwd,
            6,
            "m3",
            "claude-opus-4-1",
            json!([{"type":"text","text":"The screenshot shows a timeout."}]),
        ),
        entry(
            "system",
            "b1",
            None,
            S1,
            cwd,
            7,
            json!({"subtype": "compact_boundary", "logicalParentUuid": "a5", "compactMetadata": {"trigger": "auto", "preTokens": 150000}}),
        ),
        entry(
            "user",
            "cs",
            Some("b1"),
            S1,
            cwd,
            7,
            json!({"isCompactSummary": true, "isVisibleInTranscriptOnly": true, "message": {"role": "user", "content": "This session is being continued. Summary: we agreed on exponential backoff for uploads."}}),
        ),
        user(
            "u3",
            Some("cs"),
            S1,
            cwd,
            8,
            json!("Now let's write the tests"),
        ),
        said("a6", "u3", 9, "m4", "Tests written."),
        user("u4", Some("a6"), S1, cwd, 10, json!("an abandoned prompt")),
        said("a7", "u4", 11, "m5", "an abandoned answer"),
        user("u5", Some("a6"), S1, cwd, 12, json!("the real follow-up")),
        said("a8", "u5", 13, "m6", "the final answer"),
    ];
    write(&dir.join(format!("{S1}.jsonl")), &s1);
    let tr = dir.join(S1).join("tool-results");
    std::fs::create_dir_all(&tr).unwrap();
    std::fs::write(
        tr.join("T2.txt"),
        "src/a.rs: retry_count = 3 (the FULL persisted output)",
    )
    .unwrap();

    simple_session(
        claude,
        S2,
        "/w/app",
        "main",
        "What database did we pick?",
        "We picked Postgres 16.",
        20,
    );
    simple_session(
        claude,
        S3,
        "/w/other",
        "main",
        "What colour is the logo?",
        "The logo is teal.",
        30,
    );

    let s4 = vec![
        user("c1", None, S4, cwd, 40, json!("Name the service")),
        assistant(
            "c2",
            Some("c1"),
            S4,
            cwd,
            41,
            "mc1",
            "claude-sonnet-4-5",
            json!([{"type":"text","text":"We chose the name Falcon for the service."}]),
        ),
        entry(
            "system",
            "cb",
            None,
            S4,
            cwd,
            42,
            json!({"subtype": "compact_boundary", "logicalParentUuid": "c2"}),
        ),
        entry(
            "user",
            "c3",
            Some("cb"),
            S4,
            cwd,
            42,
            json!({"isCompactSummary": true, "message": {"role": "user", "content": "Summary: the service was named."}}),
        ),
        user(
            "c4",
            Some("c3"),
            S4,
            cwd,
            43,
            json!("current work in the calling session"),
        ),
        assistant(
            "c5",
            Some("c4"),
            S4,
            cwd,
            44,
            "mc2",
            "claude-sonnet-4-5",
            json!([{"type":"text","text":"Working on it."}]),
        ),
    ];
    write(&dir.join(format!("{S4}.jsonl")), &s4);
    let mut sub_u = user("s1", None, S4, cwd, 41, json!("Find the bug"));
    sub_u["isSidechain"] = json!(true);
    sub_u["agentId"] = json!("abc");
    let mut sub_a = assistant(
        "s2",
        Some("s1"),
        S4,
        cwd,
        41,
        "ms1",
        "claude-haiku-4-5",
        json!([{"type":"text","text":"The subagent found the bug in parser.rs."}]),
    );
    sub_a["isSidechain"] = json!(true);
    sub_a["agentId"] = json!("abc");
    write(
        &dir.join(S4).join("subagents/agent-abc.jsonl"),
        &[sub_u, sub_a],
    );
}

fn source(claude: &Path, id: &str) -> Source {
    let dir = claude.join("projects/-w-app");
    Source {
        session_id: id.into(),
        path: dir.join(format!("{id}.jsonl")),
        tool_results_dir: Some(dir.join(id).join("tool-results")),
        sources: Sources::disk(),
    }
}

fn all_text(messages: &[ApiMessage]) -> String {
    serde_json::to_string(messages).unwrap()
}

#[test]
fn rebuild_pairs_tools_follows_the_chain_and_reads_persisted_output() {
    let tmp = tempfile::tempdir().unwrap();
    fixture(tmp.path());
    let c = rebuild(&source(tmp.path(), S1), Some(0), &Default::default()).unwrap();
    check(&c.messages).unwrap();
    assert_eq!(c.windows, 2);
    assert_eq!(c.model.as_deref(), Some("claude-opus-4-1"));
    assert_eq!(c.git_branch.as_deref(), Some("feature-x"));
    assert_eq!(c.stats.results_from_side_branches, 1, "{:?}", c.stats);
    assert_eq!(c.stats.persisted_results_resolved, 1);
    assert_eq!(c.stats.results_missing, 0);
    assert_eq!(c.stats.images_dropped, 1);
    // The split response is one assistant message: text, then both calls; both results follow it.
    assert_eq!(c.messages[1].role, Speaker::Assistant);
    assert_eq!(c.messages[1].content.len(), 3);
    let results: Vec<&Block> = c.messages[2].content.iter().collect();
    assert!(
        matches!(results[0], Block::ToolResult { tool_use_id, content, .. } if tool_use_id == "T1" && content.contains("no retry yet"))
    );
    assert!(
        matches!(results[1], Block::ToolResult { tool_use_id, content, .. } if tool_use_id == "T2" && content.contains("FULL persisted output"))
    );
    let text = all_text(&c.messages);
    assert!(text.contains("exponential backoff with 3 retries"));
    assert!(
        !text.contains("Caveat"),
        "meta lines are not part of the conversation"
    );
    assert!(!text.contains("hmm"), "thinking is left out");
    assert!(!text.contains("interrupted"));
    assert!(text.contains("image was attached"));

    let later = rebuild(&source(tmp.path(), S1), None, &Default::default()).unwrap();
    check(&later.messages).unwrap();
    assert_eq!(later.window, 1);
    let first = serde_json::to_string(&later.messages[0]).unwrap();
    assert!(
        first.contains("we agreed on exponential backoff"),
        "the summary opens the window: {first}"
    );
    let text = all_text(&later.messages);
    let window_0 = "Let me check the code";
    assert!(
        text.contains("the final answer")
            && !text.contains("abandoned")
            && !text.contains(window_0),
        "window 1 alone, its last branch: {text}"
    );
}

#[test]
fn over_budget_windows_lose_whole_turns_from_the_head_with_a_notice() {
    let tmp = tempfile::tempdir().unwrap();
    fixture(tmp.path());
    let opts = ghola::replay::RebuildOptions { budget_tokens: 60 };
    let c = rebuild(&source(tmp.path(), S1), Some(0), &opts).unwrap();
    check(&c.messages).unwrap();
    assert!(c.trim.messages_cut > 0, "{:?}", c.trim);
    assert!(all_text(&c.messages[..1]).contains("Replay notice"));
    assert!(
        all_text(&c.messages).contains("The screenshot shows a timeout"),
        "the tail is kept"
    );
    // A budget too small for the last turn still yields a valid conversation.
    let tiny = ghola::replay::RebuildOptions { budget_tokens: 5 };
    let c = rebuild(&source(tmp.path(), S1), Some(0), &tiny).unwrap();
    check(&c.messages).unwrap();
}

#[test]
fn every_corpus_window_rebuilds_into_a_valid_conversation() {
    let root = common::corpus();
    assert!(root.is_dir(), "../shared/corpus is missing");
    let mut windows = 0;
    let mut pairs = 0;
    let mut side = 0;
    let mut empty = Vec::new();
    for claude in std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
    {
        let mut found = ghola::transcript::discover(&claude).sessions;
        if claude.join("fixtures").is_dir() {
            found
                .extend(ghola::transcript::discover_project_dir(&claude.join("fixtures")).sessions);
        }
        for files in found {
            let mut sources: Vec<Source> = files
                .main
                .iter()
                .map(|p| Source {
                    session_id: files.session_id.clone(),
                    path: p.clone(),
                    tool_results_dir: Some(
                        files
                            .project_dir
                            .join(&files.session_id)
                            .join("tool-results"),
                    ),
                    sources: Sources::disk(),
                })
                .collect();
            sources.extend(files.subagents.iter().map(|s| Source {
                session_id: files.session_id.clone(),
                path: s.path.clone(),
                tool_results_dir: None,
                sources: Sources::disk(),
            }));
            for src in sources {
                let n = ghola::model::conversation::window_count(&DISK, &src.path);
                for w in 0..n {
                    match rebuild(&src, Some(w), &Default::default()) {
                        Ok(c) => {
                            check(&c.messages).unwrap_or_else(|e| {
                                panic!("{} window {w}: {e}", src.path.display())
                            });
                            windows += 1;
                            pairs += c.stats.tool_pairs;
                            side += c.stats.results_from_side_branches;
                        }
                        Err(ghola::replay::RebuildError::Empty { .. }) => {
                            empty.push(src.path.display().to_string())
                        }
                        Err(e) => panic!("{}: {e}", src.path.display()),
                    }
                }
            }
        }
    }
    eprintln!(
        "{windows} windows rebuilt, {pairs} tool pairs, {side} results from side branches; empty: {empty:#?}"
    );
    assert!(
        windows > 150 && pairs > 2000,
        "{windows} windows, {pairs} pairs"
    );
}

fn ctx<'a>(claude: &'a Path, idx: &'a Path, calling: Option<&'a str>) -> RouteContext<'a> {
    // One cache per context, kept for the test's life (a test makes a handful).
    let snapshots = Box::leak(Box::new(ghola::index::SnapshotCache::new(idx, u64::MAX)));
    RouteContext {
        claude_dir: claude,
        snapshots,
        log: None,
        embedder: None,
        calling_session: calling,
        current_project: Some("/w/app"),
        sources: &DISK,
        also: &[],
    }
}

/// Transcripts from disk only (the archive is tested in tests/archive.rs).
static DISK: Sources = Sources::disk();

fn answer(has: bool, text: &str) -> Reply {
    Reply::tool_use(
        "duncan_response",
        json!({"hasContext": has, "answer": text}),
    )
}

fn api(s: &StandIn) -> MessagesApi {
    let mut b = MessagesApi::new(&s.url, "test-key");
    b.backoff = Duration::from_millis(20);
    b
}

#[test]
fn the_api_request_is_shaped_as_the_messages_api_expects() {
    let tmp = tempfile::tempdir().unwrap();
    fixture(tmp.path());
    let s = StandIn::start(
        2,
        Arc::new(|_| answer(true, "exponential backoff, 3 retries, 30 s cap")),
    );
    let mut req = QueryRequest::new("What retry policy did we choose for uploads?");
    req.mode = Mode::Session;
    req.session_id = Some("1111".into());
    req.window = Some(0);
    let cancel = AtomicBool::new(false);
    let report = ghola::replay::query(
        &req,
        &ctx(tmp.path(), tmp.path(), Some(S4)),
        &api(&s),
        &cancel,
        &mut |_, _, _| {},
    )
    .unwrap();
    assert_eq!(report.results.len(), 1);
    let r = &report.results[0];
    assert!(r.has_context);
    assert_eq!(
        r.answer.as_deref(),
        Some("exponential backoff, 3 retries, 30 s cap")
    );
    assert_eq!(r.tokens.input_tokens, 1000);
    assert_eq!(r.tokens.cache_read_input_tokens, 800);
    assert_eq!(r.window_type_name(), "compacted");

    let reqs = s.requests();
    assert_eq!(reqs.len(), 1);
    let q = &reqs[0];
    assert_eq!(q["model"], "claude-opus-4-1", "the window's own model");
    assert_eq!(
        q["tool_choice"],
        json!({"type": "tool", "name": "duncan_response"})
    );
    assert_eq!(q["tools"].as_array().unwrap().len(), 1);
    assert_eq!(q["tools"][0]["name"], "duncan_response");
    assert_eq!(q["system"][0]["cache_control"]["type"], "ephemeral");
    assert!(q["system"][0]["text"].as_str().unwrap().contains("/w/app"));
    let messages = q["messages"].as_array().unwrap();
    let penultimate = &messages[messages.len() - 2];
    assert_eq!(
        penultimate["content"].as_array().unwrap().last().unwrap()["cache_control"]["type"],
        "ephemeral"
    );
    assert_eq!(
        messages
            .iter()
            .filter(|m| m.to_string().contains("cache_control"))
            .count(),
        1
    );
    assert!(last_user_text(q).contains("What retry policy did we choose for uploads?"));
    let parsed: Vec<ApiMessage> = serde_json::from_value(q["messages"].clone()).unwrap();
    check(&parsed).unwrap();

    // The answer was logged.
    let log = std::fs::read_to_string(tmp.path().join("duncan.jsonl")).unwrap();
    let line: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    for k in [
        "batchId",
        "question",
        "answer",
        "hasContext",
        "targetSession",
        "windowIndex",
        "windowType",
        "sourceSession",
        "strategy",
        "model",
        "inputTokens",
        "outputTokens",
        "cacheCreationInputTokens",
        "cacheReadInputTokens",
        "latencyMs",
        "timestamp",
    ] {
        assert!(line.get(k).is_some(), "log line lacks {k}: {line}");
    }
    assert_eq!(line["targetSession"], S1);
    assert_eq!(line["sourceSession"], S4);
    assert_eq!(line["strategy"], "session");
}

/// Session S2 asked "Which database?", over the fixture written in `dir`.
fn database_question(dir: &Path) -> QueryRequest {
    fixture(dir);
    let mut req = QueryRequest::new("Which database?");
    req.mode = Mode::Session;
    req.session_id = Some(S2.into());
    req
}

/// Asks the database question of a stand-in that gives `replies` in turn (see [`ask_scripted`]).
fn ask_database(replies: Vec<Reply>) -> (ghola::replay::QueryReport, Vec<Value>) {
    let tmp = tempfile::tempdir().unwrap();
    let req = database_question(tmp.path());
    let c = ctx(tmp.path(), tmp.path(), None);
    ask_scripted(&req, &c, replies)
}

/// The error a report's first window failed with.
fn first_error(report: &ghola::replay::QueryReport) -> &str {
    report.results[0].error.as_deref().unwrap_or_default()
}

/// Asks `req` of a stand-in that gives `replies` in turn (the last from then on); returns the report and the
/// requests the stand-in saw.
fn ask_scripted(
    req: &QueryRequest,
    c: &RouteContext,
    replies: Vec<Reply>,
) -> (ghola::replay::QueryReport, Vec<Value>) {
    let n = std::sync::atomic::AtomicUsize::new(0);
    let s = StandIn::start(
        1,
        Arc::new(move |_| {
            let k = n.fetch_add(1, Ordering::SeqCst).min(replies.len() - 1);
            replies[k].clone()
        }),
    );
    let cancel = AtomicBool::new(false);
    let report = ghola::replay::query(req, c, &api(&s), &cancel, &mut |_, _, _| {}).unwrap();
    (report, s.requests())
}

#[test]
fn invalid_answers_get_two_corrections_then_the_window_fails() {
    // Two bad inputs, then a good one.
    let (report, reqs) = ask_database(vec![
        Reply::tool_use("duncan_response", json!({"hasContext": "yes"})),
        Reply::text("Postgres, I think"),
        answer(true, "Postgres 16"),
    ]);
    assert_eq!(report.results[0].answer.as_deref(), Some("Postgres 16"));
    assert_eq!(reqs.len(), 3);
    let correction = last_user_text(&reqs[1]);
    assert!(
        correction.contains("hasContext must be a boolean") || correction.contains("lacks"),
        "{correction}"
    );
    assert_eq!(
        reqs[1]["messages"].as_array().unwrap().last().unwrap()["content"][0]["type"],
        "tool_result"
    );

    // Never valid: three calls, then a reported error.
    let never = Reply::tool_use("duncan_response", json!({"answer": 1}));
    let (report, reqs) = ask_database(vec![never]);
    assert_eq!(reqs.len(), 3);
    assert!(report.results[0].answer.is_none());
    let error = first_error(&report);
    assert!(
        error.contains("no valid duncan_response answer after 3"),
        "{error}"
    );
    assert_eq!(report.summary.failed, 1);
}

#[test]
fn transient_errors_are_retried_and_client_errors_are_not() {
    let (report, reqs) = ask_database(vec![
        Reply::Error(529, "Overloaded".into()),
        Reply::Error(500, "internal".into()),
        answer(true, "Postgres 16"),
    ]);
    assert_eq!(report.results[0].answer.as_deref(), Some("Postgres 16"));
    assert_eq!(reqs.len(), 3);

    let refused = Reply::Error(400, "messages: roles must alternate".into());
    let (report, reqs) = ask_database(vec![refused]);
    assert_eq!(reqs.len(), 1);
    let error = first_error(&report);
    assert!(
        error.contains("HTTP 400: messages: roles must alternate"),
        "{error}"
    );
}

fn many_sessions(claude: &Path, n: usize) {
    for i in 0..n {
        let id = format!("5555555{i}-5555-4555-8555-555555555555");
        let a = if i == 2 {
            "BROKEN window".to_string()
        } else {
            format!("Answer number {i}.")
        };
        simple_session(
            claude,
            &id,
            "/w/many",
            "main",
            &format!("Question {i}?"),
            &a,
            i as u32,
        );
    }
}

#[test]
fn concurrency_is_capped_failures_are_reported_and_answers_rank_first() {
    let tmp = tempfile::tempdir().unwrap();
    many_sessions(tmp.path(), 6);
    let s = StandIn::start(
        6,
        Arc::new(|req: &Value| {
            let text = req["messages"].to_string();
            let reply = if text.contains("BROKEN") {
                Reply::Error(400, "bad window".into())
            } else if text.contains("Answer number 4") {
                answer(true, "number 4")
            } else {
                answer(false, "not here")
            };
            Reply::Delayed(Duration::from_millis(150), Box::new(reply))
        }),
    );
    let mut req = QueryRequest::new("Which one says four?");
    req.mode = Mode::Project;
    req.project = Some("/w/many".into());
    req.batch_size = 2;
    req.limit = 10;
    let cancel = AtomicBool::new(false);
    let mut seen = Vec::new();
    let report = ghola::replay::query(
        &req,
        &ctx(tmp.path(), tmp.path(), None),
        &api(&s),
        &cancel,
        &mut |_, done, total| seen.push((done, total)),
    )
    .unwrap();
    assert_eq!(report.results.len(), 6, "no window is dropped");
    assert_eq!(seen.last(), Some(&(6, 6)));
    assert_eq!(
        s.in_flight.lock().unwrap().1,
        2,
        "at most batch_size requests at once"
    );
    assert!(
        report.results[0].has_context,
        "the answer with context ranks first"
    );
    assert!(report.results[5].answer.is_none(), "the failure ranks last");
    assert_eq!(report.summary.failed, 1);
    assert_eq!(report.summary.with_context, 1);
    let text = report.render();
    assert!(
        text.contains("number 4") && text.contains("1 of 6 window(s) had context, 1 failed"),
        "{text}"
    );
    assert!(
        !text.contains("not here"),
        "answers without context are not shown when one has context"
    );
}

#[test]
fn cancellation_stops_the_batch() {
    let tmp = tempfile::tempdir().unwrap();
    many_sessions(tmp.path(), 6);
    let s = StandIn::start(
        2,
        Arc::new(|_| Reply::Delayed(Duration::from_millis(200), Box::new(answer(false, "no")))),
    );
    let mut req = QueryRequest::new("anything?");
    req.mode = Mode::Global;
    req.global = true;
    req.batch_size = 1;
    req.limit = 6;
    let cancel = AtomicBool::new(false);
    let started = std::time::Instant::now();
    let report = ghola::replay::query(
        &req,
        &ctx(tmp.path(), tmp.path(), None),
        &api(&s),
        &cancel,
        &mut |_, _, _| cancel.store(true, Ordering::SeqCst),
    )
    .unwrap();
    assert!(report.cancelled);
    // The window in flight when the flag was set may still finish; nothing after it starts.
    assert!(
        (1..=2).contains(&report.results.len()),
        "{}",
        report.results.len()
    );
    assert!(s.requests().len() <= 2);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn routing_modes_choose_the_right_windows() {
    let tmp = tempfile::tempdir().unwrap();
    fixture(tmp.path());
    let s = StandIn::start(2, Arc::new(|_| answer(false, "no")));
    let cancel = AtomicBool::new(false);
    let c = ctx(tmp.path(), tmp.path(), Some(S4));
    let run = |mode: Mode, f: &dyn Fn(&mut QueryRequest)| {
        let mut req = QueryRequest::new("q?");
        req.mode = mode;
        f(&mut req);
        ghola::replay::query(&req, &c, &api(&s), &cancel, &mut |_, _, _| {})
    };
    let targets = |r: &ghola::replay::QueryReport| -> Vec<(String, u32, String)> {
        let mut v: Vec<_> = r
            .results
            .iter()
            .map(|x| {
                (
                    x.session_id.clone(),
                    x.window,
                    x.window_type_name().to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let r = run(Mode::Ancestors, &|_| {}).unwrap();
    assert_eq!(
        targets(&r),
        vec![(S4.to_string(), 0, "compacted".to_string())]
    );
    let r = run(Mode::Subagents, &|_| {}).unwrap();
    assert_eq!(r.results.len(), 1);
    assert_eq!(r.results[0].agent_id.as_deref(), Some("abc"));
    assert_eq!(r.results[0].window_type_name(), "subagent");
    let r = run(Mode::SelfCopies, &|q| q.copies = 2).unwrap();
    assert_eq!(
        targets(&r),
        vec![
            (S4.to_string(), 1, "self".to_string()),
            (S4.to_string(), 1, "self".to_string())
        ]
    );
    let r = run(Mode::Project, &|_| {}).unwrap();
    assert_eq!(
        targets(&r).iter().map(|t| t.0.as_str()).collect::<Vec<_>>(),
        vec![S1, S2],
        "the calling session and other projects are left out"
    );
    let r = run(Mode::Global, &|q| q.global = true).unwrap();
    assert_eq!(r.results.len(), 3);
    let r = run(Mode::Global, &|q| {
        q.global = true;
        q.limit = 1;
        q.offset = 1
    })
    .unwrap();
    assert_eq!(r.results.len(), 1);
    let r = run(Mode::Branch, &|q| q.git_branch = Some("feature-x".into())).unwrap();
    assert_eq!(
        targets(&r).iter().map(|t| t.0.as_str()).collect::<Vec<_>>(),
        vec![S1]
    );
    let e = run(Mode::Session, &|q| q.session_id = Some(S4.into())).unwrap_err();
    assert!(
        matches!(&e, ReplayError::Invalid { arg: "window", .. }),
        "{e}"
    );
    assert!(
        e.to_string().contains("calling session's current window"),
        "{e}"
    );
    let e = run(Mode::Session, &|q| q.session_id = Some("../etc".into())).unwrap_err();
    assert!(matches!(&e, ReplayError::Lookup(_)), "{e}");
    assert!(e.to_string().contains("not a session id"), "{e}");
    let e = run(Mode::Session, &|_| {}).unwrap_err();
    assert!(
        matches!(
            &e,
            ReplayError::Invalid {
                arg: "session_id",
                ..
            }
        ),
        "{e}"
    );
    let no_caller = ctx(tmp.path(), tmp.path(), None);
    let mut req = QueryRequest::new("q?");
    req.mode = Mode::Ancestors;
    let e =
        ghola::replay::query(&req, &no_caller, &api(&s), &cancel, &mut |_, _, _| {}).unwrap_err();
    assert!(e.to_string().contains("CLAUDE_CODE_SESSION_ID"), "{e}");
}

fn ghola() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_ghola"))
}

#[test]
fn ghola_query_searches_replays_and_reranks() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    fixture(&claude);
    let s = StandIn::start(
        3,
        Arc::new(|req: &Value| {
            if req["messages"]
                .to_string()
                .contains("exponential backoff with 3 retries")
            {
                answer(
                    true,
                    "Exponential backoff: 3 retries, capped at 30 seconds.",
                )
            } else {
                answer(false, "This conversation does not say.")
            }
        }),
    );
    let log = tmp.path().join("log.jsonl");
    let report = run_json(
        ghola()
            .args([
                "--claude-dir",
                claude.to_str().unwrap(),
                "--index-dir",
                tmp.path().join("idx").to_str().unwrap(),
            ])
            .args([
                "query",
                "retry policy for failed uploads backoff",
                "--project",
                "/w/app",
                "--json",
                "--backend",
                "api",
            ])
            .env("ANTHROPIC_BASE_URL", &s.url)
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("CLAUDE_CODE_SESSION_ID", S4)
            .env("DUNCAN_LOG", &log),
    );
    let results = report["results"].as_array().unwrap();
    assert!(!results.is_empty());
    assert_eq!(results[0]["session_id"], S1, "{report:#}");
    assert_eq!(results[0]["has_context"], true);
    assert!(
        results
            .iter()
            .all(|r| !(r["session_id"] == S4 && r["window"] == 1)),
        "the calling session's window is never asked"
    );
    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(lines.lines().count(), results.len());

    // Bad arguments are clear errors.
    run_fails(
        ghola().args([
            "--claude-dir",
            claude.to_str().unwrap(),
            "query",
            "x",
            "--mode",
            "sideways",
        ]),
        "unknown mode",
    );
}

#[test]
fn the_headless_backend_answers_through_the_real_claude_code() {
    let Some(bin) = claude_bin() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    fixture(&claude);
    // Claude Code offers the schema as a tool; whatever it is called, call it.
    let s = StandIn::start(
        4,
        Arc::new(|req: &Value| {
            let tools: Vec<String> = req["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect();
            let staged = req["messages"]
                .to_string()
                .contains("We picked Postgres 16");
            match tools
                .iter()
                .find(|t| t.contains("Structured") || t.contains("structured"))
            {
                Some(t) if staged => {
                    Reply::tool_use(t, json!({"hasContext": true, "answer": "Postgres 16"}))
                }
                Some(t) => Reply::tool_use(
                    t,
                    json!({"hasContext": false, "answer": "not in the window"}),
                ),
                None => Reply::text("ok"),
            }
        }),
    );
    let out = ghola()
        .args(["--claude-dir", claude.to_str().unwrap()])
        .args([
            "query",
            "Which database did we pick?",
            "--mode",
            "session",
            "--session",
            S2,
            "--json",
            "--backend",
            "claude-code",
        ])
        .env("GHOLA_CLAUDE_BIN", &bin)
        .env("HOME", tmp.path())
        .env("ANTHROPIC_BASE_URL", &s.url)
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DUNCAN_LOG", tmp.path().join("log.jsonl"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let reqs = s.requests();
    eprintln!(
        "headless: {} request(s) to the stand-in, tools {:?}",
        reqs.len(),
        reqs.iter()
            .map(|r| r["tools"]
                .as_array()
                .map(|t| t.iter().map(|x| x["name"].clone()).collect::<Vec<_>>()))
            .collect::<Vec<_>>()
    );
    assert!(
        reqs.iter()
            .any(|r| r["messages"].to_string().contains("We picked Postgres 16")),
        "the staged window reached the model: {reqs:#?}"
    );
    let r = &report["results"][0];
    assert_eq!(r["answer"], "Postgres 16", "{report:#}\n{stderr}");
    assert_eq!(r["has_context"], true);
    assert_eq!(report["backend"], "claude-code");
    // Nothing staged is left behind, and nothing was persisted for the replay.
    let projects: Vec<String> = std::fs::read_dir(claude.join("projects"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(projects.len(), 2, "{projects:?}");
}
