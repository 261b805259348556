//! Search over a fixture history written by the test: filters, date rules in two time zones, exclusion of the
//! calling session's latest window, window merging, pagination, exact identifiers, the output bound.

use crate::common;

use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use std::process::Command;

fn entry(session: &str, cwd: &str, i: usize, ts: &str, text: &str) -> Value {
    let role = if i.is_multiple_of(2) {
        "user"
    } else {
        "assistant"
    };
    json!({"type": role, "uuid": format!("{session}-{i}"), "sessionId": session, "cwd": cwd, "timestamp": ts,
           "message": {"id": format!("m-{session}-{i}"), "role": role, "content": [{"type": "text", "text": text}]}})
}

fn write(claude: &Path, cwd: &str, session: &str, lines: &[Value]) {
    let dir = claude.join("projects").join(cwd.replace('/', "-"));
    fs::create_dir_all(&dir).unwrap();
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(dir.join(format!("{session}.jsonl")), body).unwrap();
}

fn fixture(claude: &Path) {
    // Project A: a session with a compaction; the retry decision is in window 0.
    let mut a = vec![
        entry(
            "sa",
            "/w/a",
            0,
            "2025-01-15T23:30:00Z",
            "How should the HTTP client retry?",
        ),
        entry(
            "sa",
            "/w/a",
            1,
            "2025-01-15T23:31:00Z",
            "Use exponential backoff with jitter; give up after ERR_CONNECTION_REFUSED five times.",
        ),
    ];
    a.push(json!({"type":"system","subtype":"compact_boundary","uuid":"b","timestamp":"2025-01-16T01:00:00Z"}));
    a.push(entry(
        "sa",
        "/w/a",
        3,
        "2025-01-16T01:00:01Z",
        "continue with parseUserToken in src/auth/token.rs",
    ));
    a.push(entry(
        "sa",
        "/w/a",
        4,
        "2025-01-16T01:01:00Z",
        "parseUserToken now validates the signature (retry policy unchanged).",
    ));
    write(claude, "/w/a", "sa", &a);
    // Project A/sub and project B.
    write(
        claude,
        "/w/a/sub",
        "sb",
        &[entry(
            "sb",
            "/w/a/sub",
            0,
            "2025-02-01T12:00:00Z",
            "retry budget for the worker queue",
        )],
    );
    write(
        claude,
        "/w/b",
        "sc",
        &[entry(
            "sc",
            "/w/b",
            0,
            "2025-03-01T12:00:00Z",
            "retry logic in project b",
        )],
    );
    // Many similar messages in one long session for pagination and the size bound.
    let long: Vec<Value> = (0..60)
        .map(|i| {
            entry(
                "sd",
                "/w/d",
                i,
                &format!("2025-04-01T10:{i:02}:00Z"),
                &format!(
                    "pagination topic number {i} {}",
                    "padding words ".repeat(300)
                ),
            )
        })
        .collect();
    write(claude, "/w/d", "sd", &long);
}

struct Env {
    _tmp: tempfile::TempDir,
    claude: String,
    idx: String,
}

fn setup() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    fixture(&tmp.path().join("claude"));
    indexed(tmp)
}

/// Indexes the history written under `tmp/claude` into `tmp/idx` with `ghola index`.
fn indexed(tmp: tempfile::TempDir) -> Env {
    let claude = tmp.path().join("claude");
    indexed_from(&claude, tmp)
}

/// Indexes the history under `claude` into `tmp/idx` with `ghola index`.
fn indexed_from(claude: &Path, tmp: tempfile::TempDir) -> Env {
    let e = Env {
        claude: claude.display().to_string(),
        idx: tmp.path().join("idx").display().to_string(),
        _tmp: tmp,
    };
    common::run_ok(Command::new(env!("CARGO_BIN_EXE_ghola")).args([
        "--claude-dir",
        &e.claude,
        "--index-dir",
        &e.idx,
        "index",
    ]));
    e
}

fn search(e: &Env, tz: &str, args: &[&str]) -> Result<Value, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_ghola"))
        .args([
            "--claude-dir",
            &e.claude,
            "--index-dir",
            &e.idx,
            "search",
            "--json",
            "--no-update",
        ])
        .args(args)
        .env("TZ", tz)
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&out.stdout).unwrap())
}

/// The text of the hit on message `uuid` in search response `v` (panics when it is not a hit).
fn hit_content<'v>(v: &'v Value, uuid: &str) -> &'v str {
    hit_of(v, uuid).unwrap_or_else(|| panic!("{uuid} is not a hit: {v:#}"))["matched_message"]["content"]
        .as_str()
        .unwrap()
}

fn uuids(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["matched_message"]["uuid"].as_str().unwrap().to_string())
        .collect()
}

/// A conversation of plain text messages in `cwd`, a minute apart, alternating user and assistant.
fn chat(claude: &Path, cwd: &str, session: &str, texts: &[&str]) {
    let lines: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| entry(session, cwd, i, &format!("2025-05-02T09:{i:02}:00Z"), t))
        .collect();
    write(claude, cwd, session, &lines);
}

/// The result whose hit is message `uuid` in a search response.
fn hit_of<'a>(v: &'a Value, uuid: &str) -> Option<&'a Value> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["matched_message"]["uuid"] == uuid)
}

/// The score of message `uuid` in a search response (0 when it is not a hit).
fn score_of(v: &Value, uuid: &str) -> f64 {
    hit_of(v, uuid).map_or(0.0, |r| r["score"].as_f64().unwrap())
}

/// The answer to query `q` in `project` (no context, no relative floor), with `extra` search arguments.
fn in_project(e: &Env, q: &str, project: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        q,
        "--project",
        project,
        "--context",
        "0",
        "--relative-floor",
        "0",
    ];
    args.extend_from_slice(extra);
    search(e, "UTC", &args).unwrap()
}

/// The answer to query `q` in project `/w/talk` (see [`in_project`]).
fn talk(e: &Env, q: &str, extra: &[&str]) -> Value {
    in_project(e, q, "/w/talk", extra)
}

/// The score of message `a` over that of message `b` for query `q` in project `/w/talk` (see [`talk`]): how a
/// rule moves one message against another. Without the session's share, which adds to both messages of one
/// session and would blur a prior's factor.
fn talk_ratio(e: &Env, q: &str, extra: &[&str], a: &str, b: &str) -> f64 {
    let mut extra = extra.to_vec();
    extra.extend(["--without-rule", "session-evidence"]);
    let v = talk(e, q, &extra);
    score_of(&v, a) / score_of(&v, b)
}

/// The answer to query `q` in `project` by its words alone (`--lexical-weight 1`; see [`in_project`]; no session's
/// share, which adds to every message of a session and would blur a prior's factor), with `extra` search
/// arguments: how a rule moves one message's score.
fn words_only(e: &Env, q: &str, project: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "--lexical-weight",
        "1",
        "--without-rule",
        "session-evidence",
    ];
    args.extend_from_slice(extra);
    in_project(e, q, project, &args)
}

fn sessions(v: &Value) -> Vec<String> {
    let mut s: Vec<String> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["matched_message"]["session_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    s.sort();
    s.dedup();
    s
}

#[test]
fn project_scope_includes_subfolders_not_siblings() {
    let e = setup();
    // Project scope includes subdirectories, not siblings.
    let v = search(&e, "UTC", &["retry", "--project", "/w/a", "--context", "0"]).unwrap();
    assert_eq!(sessions(&v), ["sa", "sb"]);
    let v = search(&e, "UTC", &["retry", "--global", "--context", "0"]).unwrap();
    assert!(sessions(&v).contains(&"sc".to_string()));
}

#[test]
fn identifiers_are_found_whole_and_by_parts() {
    let e = setup();
    // Exact identifiers, whole and by parts.
    for q in [
        "ERR_CONNECTION_REFUSED",
        "parseUserToken",
        "src/auth/token.rs",
        "token.rs",
    ] {
        let v = search(&e, "UTC", &[q, "--global", "--context", "0"]).unwrap();
        let top = v["results"][0]["matched_message"]["content"]
            .as_str()
            .unwrap()
            .to_lowercase();
        let probe = q.to_lowercase().replace("token.rs", "token");
        assert!(top.contains(&probe), "{q}: top hit {top:?}");
    }
}

#[test]
fn a_date_is_a_local_day_and_bad_bounds_are_refused() {
    let e = setup();
    // Dates: 2025-01-15 is a local day. In UTC the 23:30 message is on the 15th; in Tokyo (UTC+9) on the 16th.
    let day = [
        "backoff",
        "--global",
        "--context",
        "0",
        "--after",
        "2025-01-15",
        "--before",
        "2025-01-16",
    ];
    assert_eq!(uuids(&search(&e, "UTC", &day).unwrap())[0], "sa-1");
    assert!(uuids(&search(&e, "Asia/Tokyo", &day).unwrap()).is_empty());
    let exact = [
        "backoff",
        "--global",
        "--context",
        "0",
        "--after",
        "2025-01-15T23:31:00Z",
    ];
    let got = uuids(&search(&e, "Asia/Tokyo", &exact).unwrap());
    assert!(
        got[0] == "sa-1" && !got.contains(&"sa-0".to_string()),
        "{got:?}"
    );
    for bad in [
        &["x", "--after", "soon"][..],
        &["x", "--after", "2025-02-01", "--before", "2025-01-01"],
        &["x", "--limit", "0"],
    ] {
        let err = search(&e, "UTC", bad).unwrap_err();
        assert!(!err.is_empty());
    }
}

#[test]
fn the_calling_sessions_latest_window_is_left_out() {
    let e = setup();
    // The calling session's latest window is left out; its compacted window stays searchable.
    let v = search(
        &e,
        "UTC",
        &[
            "parseUserToken retry backoff",
            "--global",
            "--context",
            "0",
            "--exclude-session",
            "sa",
        ],
    )
    .unwrap();
    let got = uuids(&v);
    assert!(
        got.contains(&"sa-1".to_string()) && !got.iter().any(|u| u == "sa-3" || u == "sa-4"),
        "{got:?}"
    );
}

#[test]
fn hits_of_one_window_merge_into_one_result() {
    let e = setup();
    // Window merging: with context 3 the two window-0 messages of sa come back once.
    let v = search(&e, "UTC", &["retry backoff", "--project", "/w/a"]).unwrap();
    let in_window0 = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["matched_message"]["session_id"] == "sa" && r["matched_message"]["window"] == 0
        })
        .count();
    assert_eq!(in_window0, 1);
    let ctx = &v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["matched_message"]["session_id"] == "sa")
        .unwrap()["context"];
    assert!(
        ctx.as_array()
            .unwrap()
            .iter()
            .any(|c| c["is_match"] == true)
    );
}

#[test]
fn pages_never_overlap_or_skip_and_the_bound_holds() {
    let e = setup();
    // Pagination: pages never overlap or skip, total_matches is exact.
    let page = |limit: usize, offset: usize| {
        let (l, o) = (limit.to_string(), offset.to_string());
        search(
            &e,
            "UTC",
            &[
                "pagination topic",
                "--project",
                "/w/d",
                "--context",
                "0",
                "--limit",
                &l,
                "--offset",
                &o,
            ],
        )
        .unwrap()
    };
    let all = page(100, 0);
    let total = all["total_matches"].as_u64().unwrap() as usize;
    assert_eq!(total, 60);
    let mut paged = Vec::new();
    for off in (0..total).step_by(7) {
        let v = page(7, off);
        assert_eq!(v["has_more"], off + 7 < total);
        paged.extend(uuids(&v));
    }
    // Big pages may come back shorter (the output bound drops whole results from the end, saying has_more);
    // paging on by what came back still sees every result once.
    let mut big = uuids(&all);
    let mut more = all["has_more"] == true;
    while more {
        let v = page(100, big.len());
        assert!(v.to_string().chars().count() <= 40_000);
        big.extend(uuids(&v));
        more = v["has_more"] == true;
    }
    assert_eq!(paged, big);

    // The output bound holds with big messages and wide context.
    let v = search(
        &e,
        "UTC",
        &[
            "pagination",
            "--project",
            "/w/d",
            "--context",
            "10",
            "--limit",
            "100",
        ],
    )
    .unwrap();
    assert!(serde_json::to_string(&v).unwrap().chars().count() <= 40_000);
    assert!(
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["matched_message"]["uuid"].is_string())
    );
}

/// Every uuid marked as a hit in a response: the matched messages and the context messages marked `is_match`.
fn hit_uuids(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in v["results"].as_array().unwrap() {
        out.push(r["matched_message"]["uuid"].as_str().unwrap().to_string());
        for c in r["context"].as_array().unwrap() {
            if c["is_match"] == true {
                assert!(
                    c["scores"].is_object(),
                    "a hit in context carries its scores: {c}"
                );
                out.push(c["uuid"].as_str().unwrap().to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn merging_keeps_every_hit_that_context_zero_returns() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    // Hits 3 and 6 messages apart in one window, and one far away; one hit is long.
    let long = format!(
        "ZEBRAFISH calibration notes: {}",
        "the sensor drifts when warm. ".repeat(60)
    );
    let lines: Vec<Value> = (0..24)
        .map(|i| {
            let text = match i {
                2 => "We chose the ZEBRAFISH protocol for the lab sync.".to_string(),
                5 => long.clone(),
                8 => "ZEBRAFISH retries: three, then give up.".to_string(),
                20 => "Unrelated, but ZEBRAFISH came up again at the end.".to_string(),
                _ => format!("filler message {i} about lunch plans and the weather"),
            };
            entry("sm", "/w/m", i, &format!("2025-02-01T10:{i:02}:00Z"), &text)
        })
        .collect();
    write(&claude, "/w/m", "sm", &lines);
    let e = indexed(tmp);
    // Every hit, however weak: this is about merging, not the floor.
    let args = |context: &'static str| {
        [
            "ZEBRAFISH",
            "--global",
            "--relative-floor",
            "0",
            "--context",
            context,
        ]
    };
    let flat = search(&e, "UTC", &args("0")).unwrap();
    let expected = hit_uuids(&flat);
    for lexical in ["sm-2", "sm-20", "sm-5", "sm-8"] {
        assert!(expected.iter().any(|u| u == lexical), "{flat:#}");
    }
    let flat_total = flat["total_matches"].as_u64().unwrap();
    assert_eq!(flat_total as usize, expected.len());
    for context in ["1", "3", "5", "20"] {
        let v = search(&e, "UTC", &args(context)).unwrap();
        // No hit disappears, whatever the context.
        assert_eq!(hit_uuids(&v), expected, "context {context}: {v:#}");
        let results = v["results"].as_array().unwrap();
        // Each hit is in exactly one result, and total_matches counts results.
        let counted: u64 = results.iter().map(|r| r["matches"].as_u64().unwrap()).sum();
        assert_eq!(counted, flat_total, "context {context}: {v:#}");
        assert_eq!(v["total_matches"].as_u64().unwrap() as usize, results.len());
        // A hit shown as context keeps its full body (display cut: 2,000 characters), not the 1,000 of context.
        let long_hit = results
            .iter()
            .flat_map(|r| r["context"].as_array().unwrap())
            .find(|c| c["uuid"] == "sm-5")
            .unwrap();
        assert_eq!(long_hit["is_match"], true);
        assert!(
            long_hit["content"].as_str().unwrap().chars().count() > 1_500,
            "{long_hit}"
        );
    }
    // With context 3, hits 2, 5 and 8 share one result; 20 has its own.
    let v = search(&e, "UTC", &args("3")).unwrap();
    assert_eq!(v["total_matches"], 2, "{v:#}");
}

#[test]
fn function_words_are_not_evidence_and_long_queries_get_a_clear_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    write(
        &claude,
        "/w/f",
        "sf",
        &[
            entry(
                "sf",
                "/w/f",
                0,
                "2025-02-01T10:00:00Z",
                "what did we do about the lunch order?",
            ),
            entry(
                "sf",
                "/w/f",
                1,
                "2025-02-01T10:01:00Z",
                "We ordered pizza for everyone.",
            ),
            entry(
                "sf",
                "/w/f",
                2,
                "2025-02-01T10:02:00Z",
                "Set the_config flag in is-ready checks.",
            ),
        ],
    );
    let e = indexed(tmp);
    // Shares only "what did we … about" with the first message: no lexical evidence, and nothing here is about
    // retries, so nothing comes back.
    let v = search(
        &e,
        "UTC",
        &[
            "what did we decide about retries",
            "--global",
            "--context",
            "0",
        ],
    )
    .unwrap();
    for r in v["results"].as_array().unwrap() {
        assert_eq!(r["scores"]["lexical"], 0.0, "{v:#}");
    }
    // Identifiers that contain a function word still match whole.
    let v = search(&e, "UTC", &["the_config", "--global", "--context", "0"]).unwrap();
    assert_eq!(uuids(&v)[0], "sf-2");
    // A query of function words only is taken as it is.
    let v = search(
        &e,
        "UTC",
        &[
            "what did we do",
            "--global",
            "--context",
            "0",
            "--fusion",
            "lexical",
        ],
    )
    .unwrap();
    assert_eq!(uuids(&v)[0], "sf-0");
    // A huge query is refused with a clear limit, before anything is echoed.
    let huge = "x".repeat(100_000);
    let err = search(&e, "UTC", &[&huge, "--global"]).unwrap_err();
    assert!(err.contains("the limit is 2000"), "{err}");
}

#[test]
fn copies_collapse_to_the_first_and_weak_hits_fall_under_a_models_floor() {
    let report = "AGENT-REPORT: the QUOKKA parser keeps a cache of compiled grammars; ".to_string()
        + &"each grammar is keyed by its source hash. ".repeat(8);
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    let mut lines: Vec<Value> = (0..8)
        .map(|i| {
            let text = match i {
                1 => report.clone(),
                6 => "lunch plans, and a QUOKKA sticker on the fridge".to_string(),
                _ => format!("filler message {i} about the weather"),
            };
            entry("sq", "/w/q", i, &format!("2025-02-01T10:0{i}:00Z"), &text)
        })
        .collect();
    // Message 4 hands the same report back as a tool's output.
    lines[4] = json!({"type": "user", "uuid": "sq-4", "sessionId": "sq", "cwd": "/w/q",
        "timestamp": "2025-02-01T10:04:00Z",
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
            "content": report.clone()}]}});
    write(&claude, "/w/q", "sq", &lines);
    let e = indexed(tmp);
    // The query in every project, no context, with `extra` arguments.
    let answer = |extra: &[&str]| {
        let mut args = vec!["QUOKKA parser grammar cache", "--global", "--context", "0"];
        args.extend_from_slice(extra);
        search(&e, "UTC", &args).unwrap()
    };
    // The report and its hand-back are one hit, shown where it was first said.
    let kept = uuids(&answer(&["--relative-floor", "0"]));
    assert_eq!(kept[0], "sq-1", "{kept:?}");
    assert!(!kept.contains(&"sq-4".to_string()), "{kept:?}");
    // The sticker shares one word with the query: a hit with the floor off (a person's default, last in the
    // list), gone under a model's floor.
    assert_eq!(kept.last().map(String::as_str), Some("sq-6"), "{kept:?}");
    assert_eq!(uuids(&answer(&[])), kept);
    let floored = answer(&["--relative-floor", "0.5"]);
    assert_eq!(uuids(&floored), vec!["sq-1".to_string()], "{floored:#}");
    assert_eq!(floored["total_matches"], 1);
    assert!(search(&e, "UTC", &["x", "--relative-floor", "1.5"]).is_err());
}

/// The search scans the int8 copy of the vectors and re-scores its best hits from the f32 rows: on a real
/// history its results are those of the f32 scan, hit for hit and score for score. The scan of a large history
/// reads the 4-bit copy first: its best messages above the floor are the int8 scan's, score for score, and so
/// are the keyword matches it is asked to refine (`prefiltered_scan_keeps_what_the_int8_scan_keeps`). An index
/// whose segments predate the int8 copy and the fixed-width records (no `.q8`, no `.rows` files) is scanned in
/// f32, its records built from `.meta`, and answers the same.
#[test]
fn int8_scan_answers_like_the_f32_scan_and_old_segments_still_search() {
    let corpus =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/daaain-claude-code-log");
    if !corpus.exists() {
        assert!(
            std::env::var("CI").is_err(),
            "CI=true but {} is missing",
            corpus.display()
        );
        return;
    }
    let e = indexed_from(&corpus, tempfile::tempdir().unwrap());
    let segments = Path::new(&e.idx).join("segments");
    let newer: Vec<_> = fs::read_dir(&segments)
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x == "q8" || x == "q4" || x == "rows")
        })
        .collect();
    let metas = fs::read_dir(&segments)
        .unwrap()
        .filter(|f| {
            f.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "meta")
        })
        .count();
    assert_eq!(
        newer.len(),
        3 * metas,
        "every segment carries its int8 and 4-bit copies and its records"
    );
    prefiltered_scan_keeps_what_the_int8_scan_keeps(Path::new(&e.idx), true);
    let queries = [
        "how does the recorder use the audio worklet",
        "how are recordings saved to disk",
        "vendor prefixes removed from the docs",
        "AudioContext",
        "which browsers are supported",
        // A time named: the meaning is scanned for again without it.
        "what changed in the recorder in July 2025",
    ];
    let scored = |v: &Value| -> Vec<(String, String)> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["matched_message"]["uuid"].as_str().unwrap().to_string(),
                    r["score"].to_string(),
                )
            })
            .collect()
    };
    // The top twenty of a global search, with a scan's flags.
    let ask = |q: &str, scan: &[&str]| -> Value {
        let mut args = vec![q, "--global", "--context", "0", "--limit", "20"];
        args.extend_from_slice(scan);
        search(&e, "UTC", &args).unwrap()
    };
    let mut answers = Vec::new();
    for q in queries {
        let int8 = ask(q, &[]);
        let f32 = ask(q, &["--exact-scan"]);
        // The 4-bit copy read first, as over a large history: the same answer.
        let prefiltered = ask(q, &["--prefilter-from", "0"]);
        assert!(!scored(&int8).is_empty(), "{q}: no hits");
        assert_eq!(
            scored(&int8),
            scored(&f32),
            "{q}: int8 and f32 scans differ"
        );
        assert_eq!(
            scored(&prefiltered),
            scored(&int8),
            "{q}: the prefiltered and int8 scans differ"
        );
        answers.push(scored(&int8));
    }
    // Segments written before the 4-bit copy: a prefiltered scan reads their int8 rows.
    for f in newer
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "q4"))
    {
        fs::remove_file(f).unwrap();
    }
    prefiltered_scan_keeps_what_the_int8_scan_keeps(Path::new(&e.idx), false);
    for f in newer.iter().filter(|p| p.exists()) {
        fs::remove_file(f).unwrap();
    }
    for (q, before) in queries.iter().zip(answers) {
        let old = ask(q, &[]);
        assert_eq!(
            scored(&old),
            before,
            "{q}: segments without the int8 copy answer differently"
        );
    }
}

/// A prefiltered scan against the int8 scan, for queries that are messages' own vectors (each has close
/// neighbours): the best `keep` messages above the floor are the same with the same scores, a keyword match
/// refined afterwards reads its int8 score, and no other score is further than `INT4_ERROR` from it. Without
/// the 4-bit copy (`with_nibbles` false) every score is the int8 one.
fn prefiltered_scan_keeps_what_the_int8_scan_keeps(idx: &Path, with_nibbles: bool) {
    use ghola::search::scan::{INT4_ERROR, Precision, SemanticScan};
    let snap = ghola::index::Snapshot::open(idx).unwrap();
    let ok = vec![true; snap.messages.len()];
    let (floor, keep) = (0.3, 25);
    let best_above = |best: &[f32]| {
        let mut top: Vec<(usize, f32)> = best
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, s)| *s >= floor)
            .collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        top.truncate(keep);
        top
    };
    let n = snap.chunks.len();
    assert!(n > 1000, "a real history: {n} chunks");
    for probe in [0, n / 7, n / 3, n / 2, 4 * n / 5, n - 1] {
        let q = snap.vector(&snap.chunks[probe]).to_vec();
        let int8 = SemanticScan::run(&snap, &q, &ok, Precision::Int8);
        let mut pre = SemanticScan::run(&snap, &q, &ok, Precision::Prefiltered { floor, keep });
        let top = best_above(&int8.best);
        assert!(
            top.len() >= 2,
            "probe {probe}: the query finds its own message and more"
        );
        assert_eq!(best_above(&pre.best), top, "probe {probe}");
        let mut coarse = 0;
        for (m, (a, b)) in int8.best.iter().zip(&pre.best).enumerate() {
            // A message without vectors (or not eligible) has no score in either.
            assert!(
                a == b || (a - b).abs() <= INT4_ERROR,
                "probe {probe}, message {m}: {a} vs {b}"
            );
            coarse += usize::from(a != b);
        }
        assert_eq!(
            coarse > 0,
            with_nibbles,
            "probe {probe}: {coarse} 4-bit scores"
        );
        let matches: Vec<u32> = (0..snap.messages.len() as u32).step_by(97).collect();
        pre.refine(&snap, &q, matches.iter().copied());
        for m in matches {
            assert_eq!(
                pre.best[m as usize], int8.best[m as usize],
                "probe {probe}, match {m}"
            );
        }
    }
}

/// Where the answer is unlikely to be: the user's request to the agent (answered with a tool call), the main
/// conversation when the query names an agent. Each ranks below the message that answers, though it matches the
/// query's words at least as well; between people (no tool call in the reply) the user's message is evidence like
/// any other — and so it is when the query asks what the user said. A tool's output ranks below the reply that
/// read it for every query (rule unsaid); a why-question does not move it further.
#[test]
fn requests_and_the_main_thread_for_agents_rank_below_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    let at = |i: usize| format!("2025-03-01T10:{i:02}:00Z");
    let msg = |i: usize, role: &str, content: Value| {
        json!({"type": role, "uuid": format!("sz-{i}"), "sessionId": "sz", "cwd": "/w/z", "timestamp": at(i),
               "message": {"id": format!("m-sz-{i}"), "role": role, "content": content}})
    };
    let text = |t: &str| json!([{"type": "text", "text": t}]);
    let lines = vec![
        msg(0, "user", text("ZEPHYR cache eviction setting please")),
        msg(
            1,
            "assistant",
            json!([{"type": "tool_use", "id": "t1", "name": "Bash",
            "input": {"command": "grep -rn 'cache eviction' config/", "description": "Find the ZEPHYR setting"}}]),
        ),
        msg(
            2,
            "user",
            json!([{"type": "tool_result", "tool_use_id": "t1",
            "content": "ZEPHYR cache eviction setting: lru, ttl 5s"}]),
        ),
        msg(
            3,
            "assistant",
            text("The ZEPHYR cache eviction is LRU because the ttl is 5 s"),
        ),
        msg(
            4,
            "assistant",
            json!([{"type": "text", "text": "Handing the count off."},
            {"type": "tool_use", "id": "t2", "name": "Agent",
             "input": {"prompt": "count the QUASAR modules", "description": "Count them"}}]),
        ),
        msg(
            5,
            "user",
            json!([{"type": "tool_result", "tool_use_id": "t2", "content": "done"}]),
        ),
        msg(6, "assistant", text("Counting the QUASAR modules is done.")),
    ];
    write(&claude, "/w/z", "sz", &lines);
    // The subagent's transcript: its prompt (a copy of the call's), a tool call and its output, its report.
    let side = |i: usize, role: &str, content: Value| {
        json!({"type": role, "uuid": format!("sz-a{i}"), "sessionId": "sz", "agentId": "a1", "isSidechain": true,
               "cwd": "/w/z", "timestamp": at(10 + i),
               "message": {"id": format!("m-a{i}"), "role": role, "content": content}})
    };
    let agent = [
        side(0, "user", json!("list the QUASAR modules")),
        side(
            1,
            "assistant",
            json!([{"type": "tool_use", "id": "g1", "name": "Glob",
            "input": {"pattern": "src/**/*.rs"}}]),
        ),
        side(
            2,
            "user",
            json!([{"type": "tool_result", "tool_use_id": "g1", "content": "src/a.rs src/b.rs"}]),
        ),
        side(3, "assistant", text("There are 7 QUASAR modules in src/.")),
    ];
    let sub = claude.join("projects/-w-z/sz/subagents");
    fs::create_dir_all(&sub).unwrap();
    let body: String = agent.iter().map(|l| format!("{l}\n")).collect();
    fs::write(sub.join("agent-a1.jsonl"), body).unwrap();
    // Between people the user's message is the evidence.
    write(
        &claude,
        "/w/chat",
        "sc",
        &[
            entry(
                "sc",
                "/w/chat",
                0,
                &at(0),
                "my ORCHID garden bloomed in May",
            ),
            entry(
                "sc",
                "/w/chat",
                1,
                &at(1),
                "lovely, the ORCHID garden sounds great",
            ),
        ],
    );
    let e = indexed(tmp);
    // Words only (the weight is the user's to set), so the priors alone decide between equal matches.
    let ranked = |q: &str, project: &str, extra: &[&str]| {
        let mut args = vec![
            q,
            "--project",
            project,
            "--context",
            "0",
            "--lexical-weight",
            "1",
        ];
        args.extend_from_slice(extra);
        let v = search(&e, "UTC", &args).unwrap();
        uuids(&v)
    };
    let first = |q: &str, project: &str| ranked(q, project, &[]);
    let unsaid_off = |q: &str| ranked(q, "/w/z", &["--without-rule", "unsaid"]);
    let pos = |r: &[String], u: &str| r.iter().position(|x| x == u).unwrap_or(usize::MAX);
    // The request (× ASK_PRIOR) ranks below the tool's output that matches as well, measured without rule unsaid,
    // which moves the output below the reply that read it for every query (a why-question moves it no further).
    let r = unsaid_off("ZEPHYR cache eviction setting");
    assert!(
        pos(&r, "sz-2") < pos(&r, "sz-0"),
        "the request ranks below the tool's output: {r:?}"
    );
    for q in ["ZEPHYR cache eviction", "why ZEPHYR cache eviction"] {
        let r = first(q, "/w/z");
        assert!(
            pos(&r, "sz-3") < pos(&r, "sz-2"),
            "{q}: the reply ranks above the output it read: {r:?}"
        );
        let r = unsaid_off(q);
        assert!(
            pos(&r, "sz-2") < pos(&r, "sz-3"),
            "{q}: without rule unsaid the tool's output is as good as the explanation: {r:?}"
        );
    }
    // Named an agent, the subagent's report ranks above the main thread's mention of the result. (The hand-off
    // call itself, whose text repeats the query's words and names the Agent tool, is no longer moved down: that
    // rule gained nothing on held-back questions.)
    let r = first("how many QUASAR modules did the agent find", "/w/z");
    assert!(
        pos(&r, "sz-a3") < pos(&r, "sz-6"),
        "the subagent's report ranks above the main thread: {r:?}"
    );
    let r = first("how many QUASAR modules were found", "/w/z");
    assert_ne!(
        r[0], "sz-a1",
        "without an agent named, the main thread competes: {r:?}"
    );
    let r = first("ORCHID garden bloomed", "/w/chat");
    assert_eq!(r[0], "sc-0", "{r:?}");
    // Asked what the user said, the request is the answer: it takes no ask factor, and nothing else moves.
    let scores = |extra: &[&str]| {
        let q = "what did I ask about the ZEPHYR cache eviction setting";
        let v = words_only(&e, q, "/w/z", extra);
        (score_of(&v, "sz-0"), score_of(&v, "sz-2"))
    };
    let (request_on, output_on) = scores(&[]);
    let (request_off, output_off) = scores(&["--without-rule", "users-words-asked"]);
    assert!(
        (request_on * f64::from(ghola::search::ASK_PRIOR) - request_off).abs() < 2e-3,
        "the request's own words: {request_on} with the rule, {request_off} without"
    );
    assert!(
        (output_on - output_off).abs() < 1e-6,
        "{output_on} {output_off}"
    );
    assert!(request_on > output_on, "{request_on} {output_on}");
}

/// A question keeps the gentler factor (in a dialogue it is where a topic is raised); what passes the work on, an
/// announcement here, takes [`ghola::search::ASK_PRIOR`]. Each factor is read as the score with its rule over the
/// score without it, in sessions of their own so that nothing inherits from the other.
#[test]
fn a_question_takes_a_gentler_factor_than_an_announcement() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    chat(
        &claude,
        "/w/asks",
        "sq",
        &["hello there", "is the KESTREL queue depth limit 64?"],
    );
    chat(
        &claude,
        "/w/asks",
        "sa",
        &["hi", "Let me check the KESTREL queue depth limit."],
    );
    let e = indexed(tmp);
    let score = |uuid: &str, extra: &[&str]| {
        score_of(
            &words_only(&e, "KESTREL queue depth limit", "/w/asks", extra),
            uuid,
        )
    };
    let question = score("sq-1", &[]) / score("sq-1", &["--without-rule", "question"]);
    let announcement = score("sa-1", &[]) / score("sa-1", &["--without-rule", "announcement"]);
    assert!(
        (question - f64::from(ghola::search::QUESTION_PRIOR)).abs() < 2e-3,
        "the question's factor: {question}"
    );
    assert!(
        (announcement - f64::from(ghola::search::ASK_PRIOR)).abs() < 2e-3,
        "the announcement's factor: {announcement}"
    );
    assert!(announcement < question, "{announcement} {question}");
}

#[test]
fn a_time_named_in_the_query_ranks_what_was_said_then_first() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    // The same status reported in two sessions three months apart.
    for (session, day, status) in [
        ("s-march", "2025-03-04", "rolled back"),
        ("s-june", "2025-06-10", "shipped"),
    ] {
        write(
            &claude,
            "/w/t",
            session,
            &[
                entry(session, "/w/t", 0, &format!("{day}T09:00:00Z"), "morning"),
                entry(
                    session,
                    "/w/t",
                    1,
                    &format!("{day}T09:01:00Z"),
                    &format!("BRAMBLE deploy status: {status}"),
                ),
            ],
        );
    }
    let e = indexed(tmp);
    let first = |args: &[&str]| {
        // Every hit is kept (no floor), to see that the time is a preference, not a filter.
        let mut all = vec![
            "--project",
            "/w/t",
            "--context",
            "0",
            "--relative-floor",
            "0",
        ];
        all.extend_from_slice(args);
        let v = search(&e, "UTC", &all).unwrap();
        uuids(&v)
    };
    for (q, want) in [
        ("BRAMBLE deploy status on 4 March 2025", "s-march-1"),
        ("BRAMBLE deploy status on June 10th, 2025", "s-june-1"),
        ("BRAMBLE deploy status 2025-03-04", "s-march-1"),
        ("BRAMBLE deploy status in June 2025", "s-june-1"),
        // Without its year, a month is the latest one the history speaks from: nothing here was written in this
        // year's June or March (the sessions are from 2025), so those are not the ones meant.
        ("BRAMBLE deploy status in June", "s-june-1"),
        ("BRAMBLE deploy status in March", "s-march-1"),
        ("BRAMBLE deploy status on 4 March", "s-march-1"),
    ] {
        let r = first(&[q]);
        assert_eq!(r.first().map(String::as_str), Some(want), "{q}: {r:?}");
        assert_eq!(
            r.len(),
            2,
            "a named time is a preference, not a filter: {q}: {r:?}"
        );
    }
    // The order the dates gave is the dates' doing: without the rule both queries rank the same way.
    let plain = |q: &str| first(&[q, "--without-rule", "outside-named-time"]);
    assert_eq!(
        plain("BRAMBLE deploy status on 4 March 2025"),
        plain("BRAMBLE deploy status on June 10th, 2025")
    );
    // A time when nothing was written changes nothing.
    assert_eq!(
        first(&["BRAMBLE deploy status in 2019"]),
        first(&[
            "BRAMBLE deploy status in 2019",
            "--without-rule",
            "outside-named-time"
        ])
    );
}

/// The time a query names is weighed by when a message was written, not by its words: the query's meaning is
/// embedded without it ("what city was I visiting"; the words of a date pull its vector away from the answer),
/// and a message written in that time is a candidate a little under the semantic threshold (`TIMED_MARGIN`).
/// The same message written in another month is neither.
#[test]
fn a_named_time_is_read_from_when_a_message_was_written_not_from_its_words() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    // No word of the query is in it.
    let said = "Just landed in Lisbon for a week of holiday, the tiles everywhere are gorgeous";
    for (session, day) in [("s-march", "2025-03-04"), ("s-june", "2025-06-10")] {
        write(
            &claude,
            "/w/t",
            session,
            &[entry(session, "/w/t", 0, &format!("{day}T09:00:00Z"), said)],
        );
    }
    let e = indexed(tmp);
    let q = "what city was I visiting in March 2025";
    let run = |extra: &[&str]| {
        let mut all = vec![q, "--project", "/w/t", "--context", "0"];
        all.extend_from_slice(extra);
        search(&e, "UTC", &all).unwrap()
    };
    // The meaning without the date is close enough for both; the one written in March goes first.
    let v = run(&[]);
    assert_eq!(uuids(&v), ["s-march-0", "s-june-0"], "{v:#}");
    let untimed = semantic_of(&v, "s-march-0").unwrap();
    // With the date in what is embedded, the cosine falls under the threshold: only the March message, written
    // in the time named, is still a candidate.
    let v = run(&["--without-rule", "time-unnamed"]);
    assert_eq!(uuids(&v), ["s-march-0"], "{v:#}");
    let timed = semantic_of(&v, "s-march-0").unwrap();
    assert!(timed < 0.35 && timed < untimed, "{timed} vs {untimed}");
    // Without either, nothing: the threshold holds for a message no time speaks for.
    let v = run(&[
        "--without-rule",
        "time-unnamed",
        "--without-rule",
        "outside-named-time",
    ]);
    assert_eq!(v["total_matches"], 0, "{v:#}");
}

/// A question nothing in the history answers returns nothing, and says so, in the terminal, to a model and in
/// the browser: a message sharing no word with it is a hit only when close in meaning (cosine ≥ 0.35; issue #47:
/// it was 0.2, and "what did we decide about retries" over `cc-2.1.330` returned "Let me search the project
/// history." at 0.20). A search whose filters leave nothing to search (a project nothing was recorded in) says
/// that instead.
#[test]
fn a_question_nothing_answers_returns_nothing_and_says_so() {
    let claude = common::corpus().join("cc-2.1.330");
    let idx = tempfile::tempdir().unwrap();
    common::run_ok(common::ghola_at(&claude, idx.path()).arg("index"));
    let search = |args: &[&str]| {
        let mut c = common::ghola_at(&claude, idx.path());
        c.args(["search", "--global", "--no-update"]).args(args);
        String::from_utf8(common::run_ok(&mut c)).unwrap()
    };
    let nothing = "what did we decide about retries";
    let v: Value = serde_json::from_str(&search(&[nothing, "--json"])).unwrap();
    assert_eq!(v["total_matches"], 0, "{v}");
    let text = search(&[nothing]);
    assert!(text.contains("Nothing in this history matches"), "{text}");
    // The meaning half is there: with a floor as low as the old one's, the nearest unrelated message comes back.
    let v: Value =
        serde_json::from_str(&search(&[nothing, "--json", "--threshold", "0.1"])).unwrap();
    assert!(
        v["total_matches"].as_u64().unwrap() > 0,
        "the model did not search: {v}"
    );
    // Words the history has still find it.
    let v: Value = serde_json::from_str(&search(&["test_auth", "--json"])).unwrap();
    assert!(v["total_matches"].as_u64().unwrap() > 0, "{v}");

    // A project nothing was recorded in (`ghola search` run in a new directory): nothing is searched, and the
    // answer says so rather than blaming the query's words.
    let out = common::ghola_at(&claude, idx.path())
        .args([
            "search",
            "test_auth",
            "--no-update",
            "--project",
            "/nowhere",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stdout.contains("Nothing in this history matches"),
        "{stdout}"
    );
    assert!(
        stderr.contains("no session of this history was recorded in /nowhere")
            && stderr.contains("--global"),
        "{stderr}"
    );
    let v: Value = serde_json::from_slice(&common::run_ok(
        common::ghola_at(&claude, idx.path()).args([
            "search",
            "test_auth",
            "--no-update",
            "--json",
            "--global",
            "--before",
            "2001-01-01",
        ]),
    ))
    .unwrap();
    assert_eq!(v["total_matches"], 0, "{v}");
    assert!(
        v["note"].as_str().unwrap().contains("passes the filters"),
        "{v}"
    );

    let mut mcp = common::mcp_client::Client::start(&claude, idx.path(), &[]);
    let (err, text) = mcp.call(1, "search_global_history", json!({"query": nothing}));
    assert!(
        !err && text.contains("Nothing in this history matches"),
        "{text}"
    );
    let (err, text) = mcp.call(
        2,
        "search_project_history",
        json!({"query": "test_auth", "project": "/nowhere"}),
    );
    assert!(
        !err && text.contains("no session of this history was recorded in /nowhere")
            && !text.contains("Nothing in this history matches"),
        "{text}"
    );
    drop(mcp);

    let ui = common::browser::Ui::start(common::ghola_at(&claude, idx.path()));
    let login = ui.log_in();
    let page = common::browser::http_get(
        login.addr,
        &login.host,
        "/search?q=what+did+we+decide+about+retries",
        &login.cookie,
    )
    .unwrap();
    assert!(
        page.contains("No messages match") && page.contains("Nothing in this history matches"),
        "{page}"
    );
    let page = common::browser::http_get(
        login.addr,
        &login.host,
        "/search?q=test_auth&project=%2Fnowhere",
        &login.cookie,
    )
    .unwrap();
    assert!(
        page.contains("No messages to search")
            && page.contains("no session of this history was recorded in /nowhere")
            && !page.contains("Nothing in this history matches"),
        "{page}"
    );
}

/// A tool's output is indexed with the call that produced it (issue #47): "292 passed; 0 failed" alone shares no
/// word with "the whole suite", the call that ran it does; the hit names its call; with the call weight at 0 the
/// output is indexed alone (so the call is what finds it). A subagent's report handed back through its call is
/// still one hit with the report.
#[test]
fn a_tool_output_is_found_by_the_words_of_its_call() {
    let report = "AGENT-REPORT: the WOMBAT scheduler retries a job three times; ".to_string()
        + &"each retry waits twice as long as the last. ".repeat(8);
    let call = |i: usize, id: &str, name: &str, input: Value| {
        json!({"type": "assistant", "uuid": format!("tc-{i}"), "sessionId": "tc", "cwd": "/w/t",
            "timestamp": format!("2025-03-01T10:0{i}:00Z"),
            "message": {"id": format!("m-tc-{i}"), "role": "assistant",
                "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}})
    };
    let output = |i: usize, id: &str, text: &str| {
        json!({"type": "user", "uuid": format!("tc-{i}"), "sessionId": "tc", "cwd": "/w/t",
            "timestamp": format!("2025-03-01T10:0{i}:00Z"),
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": text}]}})
    };
    let lines = vec![
        entry(
            "tc",
            "/w/t",
            0,
            "2025-03-01T10:00:00Z",
            "run the tests please",
        ),
        call(
            1,
            "t1",
            "Bash",
            json!({"command": "cargo test --release", "description": "Run the whole suite"}),
        ),
        output(2, "t1", "test result: ok. 292 passed; 0 failed"),
        entry("tc", "/w/t", 3, "2025-03-01T10:03:00Z", &report),
        entry(
            "tc",
            "/w/t",
            4,
            "2025-03-01T10:04:00Z",
            "and once more through an agent",
        ),
        call(
            5,
            "t2",
            "Task",
            json!({"description": "Explain the scheduler", "prompt": "How does it retry?"}),
        ),
        output(6, "t2", &report),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    write(&claude, "/w/t", "tc", &lines);
    let e = indexed(tmp);
    let found = |e: &Env, q: &str| {
        search(
            e,
            "UTC",
            &[q, "--global", "--context", "0", "--fusion", "lexical"],
        )
        .unwrap()
    };
    let v = found(&e, "whole suite");
    assert!(uuids(&v).contains(&"tc-2".to_string()), "{v:#}");
    let content = hit_content(&v, "tc-2");
    assert!(
        content.starts_with("[tool result] test result: ok. 292 passed")
            && content.ends_with("\n[call] Bash: cargo test --release — Run the whole suite"),
        "{content}"
    );
    // The report and its hand-back (now ending with its call) are one hit, where it was first said.
    let v = search(
        &e,
        "UTC",
        &["WOMBAT scheduler retries", "--global", "--context", "0"],
    )
    .unwrap();
    let kept = uuids(&v);
    assert_eq!(kept[0], "tc-3", "{v:#}");
    assert!(!kept.contains(&"tc-6".to_string()), "{kept:?}");

    // The control: without the call, the output has none of the words.
    let alone = tempfile::tempdir().unwrap();
    let idx = alone.path().join("idx");
    common::run_ok(
        common::ghola_at(&claude, &idx)
            .env("GHOLA_CALL_WEIGHT", "0")
            .arg("index"),
    );
    let e0 = Env {
        claude: claude.display().to_string(),
        idx: idx.display().to_string(),
        _tmp: alone,
    };
    let v = found(&e0, "whole suite");
    assert_eq!(uuids(&v), vec!["tc-1".to_string()], "{v:#}");
}

/// What a call wrote or asked (issue #47): `ghola show --json` gives a plan's words past its summary line as the
/// call's `input`; the index keeps the call to its summary line — the words in its keyword document cost the
/// coding sets (docs/search.md, "What a call wrote"), so a keyword search for them finds nothing.
#[test]
fn what_a_call_wrote_is_read_not_searched() {
    let plan = "# Plan: rework the login flow\n\n## Context\n".to_string()
        + &"The login page posts the form, the server checks the password, then renders the dashboard. ".repeat(4)
        + "\n\n## Sessions\nSessions are stored in Redis and expire after thirty minutes of inactivity.";
    let lines = vec![
        entry(
            "cw",
            "/w/c",
            0,
            "2025-03-01T10:00:00Z",
            "plan the login rework, please",
        ),
        json!({"type": "assistant", "uuid": "cw-1", "sessionId": "cw", "cwd": "/w/c",
            "timestamp": "2025-03-01T10:01:00Z",
            "message": {"id": "m-cw-1", "role": "assistant",
                "content": [{"type": "tool_use", "id": "p1", "name": "ExitPlanMode", "input": {"plan": plan}}]}}),
        entry(
            "cw",
            "/w/c",
            2,
            "2025-03-01T10:02:00Z",
            "looks good, go ahead",
        ),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    write(&claude, "/w/c", "cw", &lines);
    let e = indexed(tmp);
    let shown = common::run_json(
        common::ghola_at(Path::new(&e.claude), Path::new(&e.idx)).args(["show", "cw", "--json"]),
    );
    let call = &shown["messages"][1]["parts"][0];
    assert!(
        call["summary"]
            .as_str()
            .unwrap()
            .starts_with("# Plan: rework the login flow"),
        "{call:#}"
    );
    assert!(
        !call["summary"].as_str().unwrap().contains("thirty minutes"),
        "{call:#}"
    );
    assert!(
        call["input"]
            .as_str()
            .unwrap()
            .ends_with("expire after thirty minutes of inactivity."),
        "{call:#}"
    );
    let v = search(
        &e,
        "UTC",
        &[
            "thirty minutes inactivity",
            "--global",
            "--fusion",
            "lexical",
        ],
    )
    .unwrap();
    assert!(uuids(&v).is_empty(), "{v:#}");
    let v = search(
        &e,
        "UTC",
        &["rework the login flow", "--global", "--context", "0"],
    )
    .unwrap();
    let content = hit_content(&v, "cw-1");
    assert!(
        content.starts_with("[tool] ExitPlanMode: # Plan") && !content.contains("thirty"),
        "{content}"
    );
}

/// The answer-type rules (`untimed-for-when`, `uncounted-for-how-many`, `reasonless-for-failure`) over a chat of
/// `texts` in `cwd`, whose second message (`{prefix}-1`) says what `asked` asks for and whose first says the same
/// words without it (see [`an_answer_type_rule_moves_down`]).
fn an_answer_type_rule_moves_down_what_does_not_say_it(
    cwd: &str,
    prefix: &str,
    texts: &[&str],
    asked: &str,
    not_asked: &str,
    rule: &str,
) {
    let tmp = tempfile::tempdir().unwrap();
    chat(&tmp.path().join("claude"), cwd, prefix, texts);
    let e = indexed(tmp);
    let (plain, answer) = (format!("{prefix}-0"), format!("{prefix}-1"));
    an_answer_type_rule_moves_down(&e, cwd, &plain, &answer, asked, not_asked, rule);
}

/// What an answer-type rule does in the history `e` of `cwd`, where message `answer` is of the type `asked` asks
/// for and message `plain` shares its words without being so: `answer` ranks first, `plain` is moved down (by
/// more than a third against `--without-rule rule`), and a query that does not ask (`not_asked`) scores both as
/// they are with or without the rule. No hit is left out by the relative floor, so a message moved down is
/// scored, not missing.
fn an_answer_type_rule_moves_down(
    e: &Env,
    cwd: &str,
    plain: &str,
    answer: &str,
    asked: &str,
    not_asked: &str,
    rule: &str,
) {
    let scores = |q: &str, extra: &[&str]| ranks_and_ratio(e, cwd, q, extra, plain, answer);
    let (ranked, with_rule) = scores(asked, &[]);
    assert_eq!(ranked[0], answer, "{ranked:?}");
    let (_, without) = scores(asked, &["--without-rule", rule]);
    assert!(
        with_rule < 0.7 * without,
        "{rule}: the message that does not say it is moved down: {with_rule} vs {without}"
    );
    let (_, as_is) = scores(not_asked, &[]);
    let (_, as_is_without) = scores(not_asked, &["--without-rule", rule]);
    assert!(
        (as_is - as_is_without).abs() < 1e-6,
        "{rule} applies only to a query that asks: {as_is} vs {as_is_without}"
    );
}

/// The hits of `q` in `cwd` (no context, no relative floor, `extra` arguments after) and the score of message
/// `plain` over that of `answer` — without the session's share, which adds to both messages and would blur a
/// prior's factor.
fn ranks_and_ratio(
    e: &Env,
    cwd: &str,
    q: &str,
    extra: &[&str],
    plain: &str,
    answer: &str,
) -> (Vec<String>, f64) {
    let mut args = vec![
        q,
        "--project",
        cwd,
        "--context",
        "0",
        "--relative-floor",
        "0",
    ];
    args.extend_from_slice(extra);
    args.extend(["--without-rule", "session-evidence"]);
    let v = search(e, "UTC", &args).unwrap();
    (uuids(&v), score_of(&v, plain) / score_of(&v, answer))
}

/// A question about when (issue #51) prefers the message that says when: "last spring" answers "When did Ana
/// repaint the fence?", a message with the same words and no time does not; the factor applies only to a
/// question that asks when, and `--without-rule untimed-for-when` takes it away.
#[test]
fn a_question_about_when_prefers_the_message_that_says_when() {
    an_answer_type_rule_moves_down_what_does_not_say_it(
        "/w/chat",
        "sw",
        &[
            "Ana repainted the fence, so pretty",
            "Ana repainted the fence last spring",
            "unrelated: the kettle is broken",
        ],
        "When did Ana repaint the fence?",
        "Ana repainted the fence",
        "untimed-for-when",
    );
}

/// A question about how many (issue #47) prefers the message that says a number: "All 49 tests pass" answers
/// "how many tests pass now?", a message with the same words and no number does not; the factor applies only to
/// a question that asks how many, and `--without-rule uncounted-for-how-many` takes it away.
#[test]
fn a_question_about_how_many_prefers_the_message_that_says_a_number() {
    an_answer_type_rule_moves_down_what_does_not_say_it(
        "/w/count",
        "hm",
        &[
            "the tests pass now after the parser fix",
            "all 49 tests pass now after the parser fix",
            "unrelated: the kettle is broken",
        ],
        "how many tests pass after the parser fix?",
        "do the tests pass after the parser fix?",
        "uncounted-for-how-many",
    );
}

/// A question about why something went wrong (issue #47) prefers the message that gives a reason: "it was
/// rejected because the code is not formatted" answers "why was the commit rejected?", a message with the same
/// words and no reason does not; the factor applies only to such a question, and `--without-rule
/// reasonless-for-failure` takes it away.
#[test]
fn a_question_about_why_something_failed_prefers_the_message_that_gives_a_reason() {
    an_answer_type_rule_moves_down_what_does_not_say_it(
        "/w/why",
        "wy",
        &[
            "the commit for the tail adapter went to the pre-commit hook",
            "the commit for the tail adapter was rejected by the pre-commit hook because the code is unformatted",
            "unrelated: the kettle is broken",
        ],
        "why was the commit for the tail adapter rejected?",
        "the commit for the tail adapter",
        "reasonless-for-failure",
    );
}

/// A question about how something works or why (issue #47) prefers the explanation to the file it was read
/// from: the listing of `pick_pull_request` shares the question's words with the assistant's explanation after
/// it, and is moved down; the factor applies only to such a question, and `--without-rule
/// listing-for-how-or-why` takes it away.
#[test]
fn a_question_about_how_prefers_the_explanation_to_the_file_listing() {
    let (cwd, s) = ("/w/how", "hw");
    let at = |i: usize| format!("2025-05-02T09:{i:02}:00Z");
    let listing = "     1\u{2192}def pick_pull_request(args):\n     2\u{2192}    # the extractor picks the pull request: \
                   the argument, else gh pr view for the current branch\n     3\u{2192}    if args.pr:\n     4\u{2192}  \
                   return args.pr\n     5\u{2192}    return gh_pr_view()";
    let lines = vec![
        entry(s, cwd, 0, &at(0), "read the extractor's pull request code"),
        json!({"type": "assistant", "uuid": format!("{s}-1"), "sessionId": s, "cwd": cwd, "timestamp": at(1),
            "message": {"id": "m-hw-1", "role": "assistant", "content": [{"type": "tool_use", "id": "r1",
                "name": "Read", "input": {"file_path": "/w/how/extract.py"}}]}}),
        json!({"type": "user", "uuid": format!("{s}-2"), "sessionId": s, "cwd": cwd, "timestamp": at(2),
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "r1",
                "content": listing}]}}),
        json!({"type": "assistant", "uuid": format!("{s}-3"), "sessionId": s, "cwd": cwd, "timestamp": at(3),
            "message": {"id": "m-hw-3", "role": "assistant", "content": [{"type": "text", "text":
                "The extractor picks the pull request from its argument; without one it asks gh pr view for the \
                 current branch."}]}}),
        entry(s, cwd, 4, &at(4), "unrelated: the kettle is broken"),
    ];
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join("claude"), cwd, s, &lines);
    let e = indexed(tmp);
    an_answer_type_rule_moves_down(
        &e,
        cwd,
        &format!("{s}-2"),
        &format!("{s}-3"),
        "how does the extractor pick the pull request for the current branch?",
        "the extractor's pull request for the current branch",
        "listing-for-how-or-why",
    );
}

/// Between people, a message that addresses the person a question names is said to them, not by them (issue
/// #51): "Thanks, Ana!" matches "what does Ana paint" by the name, Ana's own words ("I paint seascapes") are the
/// answer; `--without-rule addresses-the-named` takes the factor away, and a question naming nobody is as before.
#[test]
fn a_message_addressing_the_named_person_is_not_their_words() {
    let tmp = tempfile::tempdir().unwrap();
    chat(
        &tmp.path().join("claude"),
        "/w/talk",
        "sa",
        &[
            "Thanks, Ana! Your painting looks great",
            "I paint seascapes, mostly at dawn",
            "the kettle is broken again",
        ],
    );
    let e = indexed(tmp);
    let ratio = |q: &str, extra: &[&str]| talk_ratio(&e, q, extra, "sa-0", "sa-1");
    let q = "What does Ana paint?";
    let with_rule = ratio(q, &[]);
    let without = ratio(q, &["--without-rule", "addresses-the-named"]);
    assert!(
        with_rule < 0.7 * without,
        "the message addressing Ana is moved down: {with_rule} vs {without}"
    );
    let nobody = "what does she paint";
    assert!(
        (ratio(nobody, &[]) - ratio(nobody, &["--without-rule", "addresses-the-named"])).abs()
            < 1e-6
    );
}

/// A question that names both parties of a dialogue ("What advice does Ben give Ana?") is answered by a message
/// one of them says to the other, which addresses the other by name: it is said by a named party, so
/// `addresses-the-named` leaves it as it is (its factor applies only when the speaker is not named).
#[test]
fn a_message_between_the_two_named_parties_is_not_moved_down() {
    let tmp = tempfile::tempdir().unwrap();
    chat(
        &tmp.path().join("claude"),
        "/w/talk",
        "sa",
        &[
            "Ben, the roses look sad this week",
            "Ana, water the roses at dawn and feed them in spring",
            "Thanks Ben, I will try that",
            "Good luck, Ana, tell me how it goes",
            "Ben, they bloomed!",
            "Wonderful, Ana!",
            "the kettle is broken again",
        ],
    );
    let e = indexed(tmp);
    // The advice's own score, without the session's share (which the other hits' factors would move).
    let advice = |q: &str, rule_off: bool| {
        let mut extra = vec!["--without-rule", "session-evidence"];
        if rule_off {
            extra.extend(["--without-rule", "addresses-the-named"]);
        }
        score_of(&talk(&e, q, &extra), "sa-1")
    };
    let both = "What advice does Ben give Ana about the roses?";
    let (with_rule, without) = (advice(both, false), advice(both, true));
    assert!(
        with_rule > 0.0 && (with_rule - without).abs() < 1e-6,
        "the advice Ben gives Ana keeps its score: {with_rule} vs {without}"
    );
    // One named: the message addressing Ana is said to her, and moved down as before.
    let one = "What advice does Ana get about the roses?";
    assert!(advice(one, false) < 0.7 * advice(one, true));
}

/// In a dialogue the side that addresses the person a question names ("Hi Ana", "Thanks, Ana!") is the other
/// party: what that side says — here the user's own painting — is not what Ana paints, so it is moved below Ana's
/// words; with no one addressed (a name that is nobody in the history) nothing changes.
#[test]
fn the_other_party_of_a_dialogue_is_not_the_named_person() {
    let tmp = tempfile::tempdir().unwrap();
    chat(
        &tmp.path().join("claude"),
        "/w/talk",
        "sa",
        &[
            "Hi Ana, how was the weekend",
            "I paint seascapes, mostly at dawn",
            "Wow, Ana, that sounds lovely.",
            "the kettle is broken again",
            "Great, Ana! See you soon",
            "bye for now",
            "I paint portraits of my cat",
        ],
    );
    let e = indexed(tmp);
    let ratio = |q: &str, extra: &[&str]| talk_ratio(&e, q, extra, "sa-6", "sa-1");
    let off = ["--without-rule", "said-by-the-other"];
    let q = "What does Ana paint?";
    let (with_rule, without) = (ratio(q, &[]), ratio(q, &off));
    assert!(
        with_rule < 0.7 * without,
        "the user's painting is moved below Ana's: {with_rule} vs {without}"
    );
    let nobody = "What does Zoe paint?";
    assert!((ratio(nobody, &[]) - ratio(nobody, &off)).abs() < 1e-6);
    // Moved down, not cut: the relative floor judges it without the factor, as its window may hold the answer
    // (its own semantic score, 0.2, is far under the one that keeps a hit by itself). With Ana's name left out of
    // the query's meaning the user's painting comes nearer and clears the floor anyway, so that rule is off here;
    // and so is the session's share, which the floor does not count but the scores shown include.
    let v = search(
        &e,
        "UTC",
        &[
            q,
            "--project",
            "/w/talk",
            "--context",
            "0",
            "--without-rule",
            "parties-unnamed",
            "--without-rule",
            "session-evidence",
        ],
    )
    .unwrap();
    let best = v["results"][0]["score"].as_f64().unwrap();
    let kept = score_of(&v, "sa-6");
    assert!(
        kept > 0.0 && kept < f64::from(ghola::search::params::RELATIVE_FLOOR) * best,
        "kept though its score is under the floor: {v:#}"
    );
}

/// The cosine of message `uuid` with the query in a search response (`None` when it is not a hit).
fn semantic_of(v: &Value, uuid: &str) -> Option<f64> {
    hit_of(v, uuid).map(|r| r["scores"]["semantic"].as_f64().unwrap())
}

#[test]
fn a_partys_name_is_left_out_of_what_the_query_means() {
    let tmp = tempfile::tempdir().unwrap();
    chat(
        &tmp.path().join("claude"),
        "/w/talk",
        "sa",
        &[
            "Hi Ana, how was the weekend",
            "Quiet, mostly at home",
            "Great, Ana! Anything new?",
            "the kettle is broken again",
            "Oh no, Ana, not again.",
            "it is an old kettle",
            "so what else keeps you busy",
            "I paint seascapes, mostly at dawn",
        ],
    );
    let e = indexed(tmp);
    let cosine = |q: &str, extra: &[&str]| semantic_of(&talk(&e, q, extra), "sa-7");
    let off = ["--without-rule", "parties-unnamed"];
    // Ana is addressed three times: she is a party, and her own words never say "Ana".
    let q = "What does Ana paint?";
    let (unnamed, named) = (cosine(q, &[]).unwrap(), cosine(q, &off).unwrap());
    assert!(
        unnamed > named + 0.05,
        "Ana's painting is nearer the query's meaning without her name: {unnamed} vs {named}"
    );
    // Zoe is no one's party here: the query's meaning keeps her name.
    let nobody = "What does Zoe paint?";
    assert_eq!(cosine(nobody, &[]), cosine(nobody, &off));
}

/// A hit gains a share (`search::SESSION_SHARE`, 0.2) of the best score among the other hits of its session: of
/// two sessions that each hold a message about the query, the one whose other messages speak of it too goes
/// first, ahead of a message that matches the query better alone; what a hit gains is exactly that share of what
/// its session's best other hit scored without it; the relative floor keeps the same hits either way; and
/// `--without-rule session-evidence` takes the share away.
#[test]
fn a_session_that_says_more_about_the_query_goes_first() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    chat(
        &claude,
        "/w/talk",
        "sa",
        &[
            "the nightly deploy failed during migrations",
            "the migration step timed out because the nightly deploy locked the orders table",
            "the kettle is broken again",
        ],
    );
    chat(
        &claude,
        "/w/talk",
        "sb",
        &[
            "the nightly deploy failed on the migration step",
            "lunch at noon tomorrow?",
            "sure, the usual place",
        ],
    );
    let e = indexed_from(&claude, tmp);
    let q = "why did the nightly deploy fail on the migration step";
    let on = talk(&e, q, &[]);
    let off = talk(&e, q, &["--without-rule", "session-evidence"]);
    let at = |v: &Value, u: &str| uuids(v).iter().position(|x| x == u).unwrap();
    assert!(at(&off, "sb-0") < at(&off, "sa-0"), "{:?}", uuids(&off));
    assert!(at(&on, "sa-0") < at(&on, "sb-0"), "{:?}", uuids(&on));
    for (hit, others) in [("sa-0", ["sa-1", "sa-2"]), ("sb-0", ["sb-1", "sb-2"])] {
        let best_other = others.iter().map(|o| score_of(&off, o)).fold(0.0, f64::max);
        let gained = score_of(&on, hit) - score_of(&off, hit);
        assert!(
            (gained - 0.2 * best_other).abs() < 2e-3,
            "{hit} gained {gained}, its session's best other scored {best_other}"
        );
    }
    assert!(
        score_of(&off, "sa-0") / score_of(&off, "sb-0")
            < score_of(&on, "sa-0") / score_of(&on, "sb-0")
    );
    // The relative floor judges each hit by its own evidence: the share moves hits, it keeps no weak one.
    let floored = |extra: &[&str]| {
        let mut args = vec![q, "--project", "/w/talk", "--context", "0"];
        args.extend_from_slice(extra);
        let mut hits = uuids(&search(&e, "UTC", &args).unwrap());
        hits.sort();
        hits
    };
    let kept = floored(&[]);
    assert!(kept.len() < 6, "the floor cuts something here: {kept:?}");
    assert_eq!(kept, floored(&["--without-rule", "session-evidence"]));
}

/// A query word no message has, and that is not a word of the model's vocabulary, is a typo: it is searched as
/// the indexed word one edit away, and the answer says so. A real word the history lacks ("mother") is not read
/// as its neighbour ("other").
#[test]
fn a_typo_in_the_query_finds_what_the_right_word_finds_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    chat(
        &claude,
        "/w/talk",
        "st",
        &[
            "I won the regional tournament last week!",
            "congrats, the other finalists looked strong",
            "we repainted the kitchen on Sunday",
            "the harvest festival was packed",
        ],
    );
    let e = indexed_from(&claude, tmp);
    // The index holds "festival" as the stem "festiv"; the note names the word a message has.
    let v = talk(&e, "tell me about the fesetival", &[]);
    assert_eq!(uuids(&v)[0], "st-3", "{v}");
    let note = v["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("\"fesetival\"")
            && note.contains("\"festival\"")
            && !note.contains("festiv\""),
        "{v}"
    );
    let v = talk(&e, "which torunament did I win", &[]);
    assert_eq!(uuids(&v)[0], "st-0", "{v}");
    let note = v["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("\"torunament\"") && note.contains("\"tournament\""),
        "{v}"
    );
    let v = talk(&e, "what did his mother say", &[]);
    assert!(
        !v["note"].as_str().unwrap_or_default().contains("typo"),
        "{v}"
    );
    let text = String::from_utf8(common::run_ok(
        Command::new(env!("CARGO_BIN_EXE_ghola"))
            .args(["--claude-dir", &e.claude, "--index-dir", &e.idx])
            .args([
                "search",
                "torunament",
                "--project",
                "/w/talk",
                "--no-update",
            ]),
    ))
    .unwrap();
    assert!(text.contains("tournament"), "{text}");
}

/// A reply is the hit, the output it read its context (issue #47): a test run's output and the reply that reports
/// it share the question's words; the reply — named by its line of text, not by the thinking Claude Code wrote
/// first on a line of its own — ranks first, and `--without-rule unsaid` gives the output its full score back.
#[test]
fn a_reply_is_the_hit_before_the_output_it_read_and_is_named_by_its_text() {
    let (cwd, s) = ("/w/said", "sd");
    let at = |i: usize| format!("2025-05-03T09:{i:02}:00Z");
    let piece = |i: usize, id: &str, block: serde_json::Value| {
        json!({"type": "assistant", "uuid": format!("{s}-{i}"), "sessionId": s, "cwd": cwd, "timestamp": at(i),
            "message": {"id": id, "role": "assistant", "content": [block]}})
    };
    let lines = vec![
        entry(s, cwd, 0, &at(0), "run the retry tests please"),
        piece(
            1,
            "m-sd-1",
            json!({"type": "thinking", "thinking": "the user wants the suite run"}),
        ),
        piece(
            2,
            "m-sd-1",
            json!({"type": "tool_use", "id": "b1", "name": "Bash",
            "input": {"command": "cargo test retry"}}),
        ),
        json!({"type": "user", "uuid": format!("{s}-3"), "sessionId": s, "cwd": cwd, "timestamp": at(3),
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b1", "content":
                "test retry_backoff_doubles ... ok\ntest retry_gives_up_after_five ... ok\nretry tests: 2 passed"}]}}),
        piece(
            4,
            "m-sd-4",
            json!({"type": "thinking", "thinking": "both green"}),
        ),
        piece(
            5,
            "m-sd-4",
            json!({"type": "text", "text":
            "Both retry tests passed: the backoff doubles and it gives up after five tries."}),
        ),
        entry(s, cwd, 6, &at(6), "unrelated: the kettle is broken"),
    ];
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join("claude"), cwd, s, &lines);
    let e = indexed(tmp);
    let scores = |extra: &[&str]| {
        ranks_and_ratio(&e, cwd, "did the retry tests pass?", extra, "sd-3", "sd-5")
    };
    let (ranked, with_rule) = scores(&[]);
    assert_eq!(ranked[0], "sd-5", "{ranked:?}");
    assert!(!ranked.contains(&"sd-4".to_string()), "{ranked:?}");
    let (_, without) = scores(&["--without-rule", "unsaid"]);
    assert!(
        with_rule < 0.7 * without,
        "the output is moved down: {with_rule} vs {without}"
    );
}
