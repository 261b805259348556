//! Property test of every MCP tool's arguments: whatever JSON a client sends — of the right shape or the wrong
//! one — `ghola serve` answers with a result or a clear error, within the output bound, as valid JSON where the tool
//! answers JSON, and stays up for the next call. One server serves every case.

use crate::common;

use common::mcp_client::{Client, TOOLS};
use common::standin::{Reply, StandIn};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex, OnceLock};

/// The output bound every tool answer stays under (`search::response::RESPONSE_CHARS`).
const BOUND: usize = 40_000;

/// Whether a successful answer to these arguments is JSON: the listings always; a search and a session read when
/// asked for it (their default is text for a model, a session read's only with `around`); duncan never (a
/// readable report).
fn answers_json(tool: &str, args: &Value) -> bool {
    let asked = args["format"].as_str();
    match tool {
        "duncan_query" => false,
        "search_project_history" | "search_global_history" => asked == Some("json"),
        "get_session_detail" => match asked {
            Some(f) => f == "json",
            None => args.get("around").is_none_or(Value::is_null),
        },
        _ => true,
    }
}

struct Server {
    client: Client,
    next_id: u64,
    _tmp: tempfile::TempDir,
    _api: StandIn,
}

fn server() -> &'static Mutex<Server> {
    static S: OnceLock<Mutex<Server>> = OnceLock::new();
    S.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let claude = tmp.path().join("claude");
        let dir = claude.join("projects/-w-app");
        std::fs::create_dir_all(&dir).unwrap();
        for s in 0..3 {
            let id = format!("abcd{s:04}-0000-4000-8000-000000000000");
            let body: String = (0..30)
                .map(|i| {
                    let role = if i % 2 == 0 { "user" } else { "assistant" };
                    json!({"type": role, "uuid": format!("{id}-{i}"), "sessionId": id, "cwd": "/w/app",
                           "gitBranch": "main", "timestamp": format!("2025-05-0{}T10:{i:02}:00Z", s + 1),
                           "message": {"id": format!("m{s}-{i}"), "role": role,
                                       "content": [{"type": "text", "text": format!("the linker and the {i} widgets, {}", "long words ".repeat(i * 20))}]}})
                    .to_string()
                        + "\n"
                })
                .collect();
            std::fs::write(dir.join(format!("{id}.jsonl")), body).unwrap();
        }
        let api = StandIn::start(
            2,
            Arc::new(|_: &Value| {
                Reply::tool_use(
                    "duncan_response",
                    json!({"hasContext": true, "answer": "from the window"}),
                )
            }),
        );
        let notes = tmp.path().join("notes");
        let client = Client::start(
            &claude,
            &tmp.path().join("idx"),
            &[
                ("CLAUDE_PROJECT_DIR", "/w/app"),
                ("GHOLA_NOTES_DIR", notes.to_str().unwrap()),
                ("ANTHROPIC_BASE_URL", api.url.as_str()),
                ("ANTHROPIC_API_KEY", "test-key"),
            ],
        );
        Mutex::new(Server {
            client,
            next_id: 100,
            _tmp: tmp,
            _api: api,
        })
    })
}

/// Any JSON value, small.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-3i64..300).prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,40}".prop_map(Value::String),
        "[a-z0-9 ._/-]{0,20}".prop_map(Value::String),
        (0usize..3000).prop_map(|n| Value::String("é".repeat(n))),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// One of `values`, as a JSON string.
fn one_of(values: &[&'static str]) -> BoxedStrategy<Value> {
    prop::sample::select(values.to_vec())
        .prop_map(|v| json!(v))
        .boxed()
}

/// A value of the kind the key usually takes (so that many calls get past validation), or anything.
fn for_key(key: &'static str) -> BoxedStrategy<Value> {
    let plausible: BoxedStrategy<Value> = match key {
        "query" | "question" => prop_oneof![
            Just(json!("linker widgets")),
            Just(json!("")),
            "[a-z ]{1,30}".prop_map(Value::String),
            (0usize..2500).prop_map(|n| json!("x".repeat(n))),
        ]
        .boxed(),
        "mode" => one_of(&[
            "search", "project", "global", "session", "branch", "self", "sideways",
        ]),
        "session_id" => one_of(&["abcd0001", "abcd", "../etc/passwd", "aéééé"]),
        "project" => one_of(&["/w/app", "C:\\w\\app", ""]),
        "after" | "before" => one_of(&["2025-05-02", "2025-05-01T10:00:00Z", "yesterday"]),
        "category" => one_of(&["decisions", "plan", "nope"]),
        "threshold" | "relative_floor" => prop_oneof![
            4 => (0.0f64..1.0).prop_map(|f| json!(f)),
            1 => (-1.0f64..2.0).prop_map(|f| json!(f)),
        ]
        .boxed(),
        "max_results" | "context_before_after" | "offset" | "window" => prop_oneof![
            4 => (0i64..12).prop_map(Value::from),
            1 => (-5i64..400).prop_map(Value::from),
        ]
        .boxed(),
        "include_subagents" => any::<bool>().prop_map(Value::Bool).boxed(),
        "scope" => one_of(&["project", "global", "everywhere"]),
        "git_branch" => one_of(&["main", "no-such-branch"]),
        "model" => one_of(&["claude-haiku-4-5", ""]),
        "limit" | "copies" | "batch_size" => prop_oneof![
            4 => (1i64..6).prop_map(Value::from),
            1 => (-2i64..60).prop_map(Value::from),
        ]
        .boxed(),
        _ => (-5i64..400).prop_map(Value::from).boxed(),
    };
    prop_oneof![20 => plausible, 1 => any_json()].boxed()
}

/// Arguments for `tool`: a random subset of its keys, now and then an unknown key, or not an object at all.
fn args(tool: usize) -> BoxedStrategy<Value> {
    let keys = TOOLS[tool].1;
    let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = keys
        .iter()
        .map(|k| {
            // The key a tool needs is there most of the time, the others now and then: most calls get past
            // validation and do real work, and every key is still left out, or wrong, in some.
            let p = if matches!(*k, "query" | "question" | "session_id") {
                0.9
            } else {
                0.3
            };
            prop::option::weighted(p, for_key(k).prop_map(move |v| (k.to_string(), v))).boxed()
        })
        .collect();
    let object = (
        fields,
        prop::option::weighted(0.1, ("[a-z]{3,6}", any_json())),
    )
        .prop_map(|(fields, extra)| {
            let mut m = Map::new();
            for (k, v) in fields.into_iter().flatten() {
                m.insert(k, v);
            }
            if let Some((k, v)) = extra {
                m.insert(k, v);
            }
            Value::Object(m)
        });
    prop_oneof![15 => object, 1 => any_json()].boxed()
}

fn check(tool: &str, args: &Value) -> Result<(), TestCaseError> {
    let mut s = server().lock().unwrap_or_else(|e| e.into_inner());
    s.next_id += 1;
    let id = s.next_id;
    let r = s
        .client
        .request(id, "tools/call", json!({"name": tool, "arguments": args}));
    if let Some(e) = r.get("error") {
        // A protocol-level refusal (arguments that are not an object, or of the wrong types): it must say why.
        let msg = e["message"].as_str().unwrap_or_default();
        prop_assert!(
            !msg.is_empty(),
            "{tool} {args}: an error without a message: {r}"
        );
        return Ok(());
    }
    let result = &r["result"];
    let text = result["content"][0]["text"].as_str();
    prop_assert!(text.is_some(), "{tool} {args}: no text in {r}");
    let text = text.unwrap();
    prop_assert!(
        text.chars().count() <= BOUND,
        "{tool} {args}: {} characters",
        text.chars().count()
    );
    if result["isError"] == json!(true) {
        prop_assert!(!text.is_empty(), "{tool} {args}: an empty tool error");
    } else if answers_json(tool, args) {
        prop_assert!(
            serde_json::from_str::<Value>(text).is_ok(),
            "{tool} {args}: not JSON: {}",
            text.chars().take(300).collect::<String>()
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        // 96 cases (each starts a tool call), or proptest's own `PROPTEST_CASES` for a longer run.
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(96),
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_tool_answers_any_arguments_within_the_bound(
        (tool, a) in (0..TOOLS.len()).prop_flat_map(|t| (Just(t), args(t)))
    ) {
        check(TOOLS[tool].0, &a)?;
    }
}

#[test]
fn a_huge_listing_page_is_paged_as_valid_json() {
    // get_session_detail of the longest session with the largest page: far over the bound unpaged.
    check(
        "get_session_detail",
        &json!({"session_id": "abcd0002", "limit": 200}),
    )
    .unwrap();
    let mut s = server().lock().unwrap_or_else(|e| e.into_inner());
    s.next_id += 1;
    let id = s.next_id;
    let (err, text) = s.client.call(
        id,
        "get_session_detail",
        json!({"session_id": "abcd0002", "limit": 200}),
    );
    assert!(!err, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let kept = v["messages"].as_array().unwrap().len();
    assert!(kept < 30, "{kept} messages kept");
    assert_eq!(v["has_more"], true);
    assert_eq!(v["next_offset"], kept);
}
