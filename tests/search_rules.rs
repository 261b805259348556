//! Each ranking rule through the real CLI and model, over a small history written by the test: the message a
//! rule is about moves below (or above) the one that answers, and what the rule is not about stays where it was —
//! requests and announcements, times named or asked about, answer types (when, how many, why, how), the parties
//! of a dialogue, the session's other evidence, a typo, which line names a reply, and what an IDE added to a request.

use crate::common;
use crate::search::{
    Env, chat, entry, hit_content, hit_of, indexed, indexed_chat, indexed_from, score_of, search,
    talk, talk_ratio, uuids, words_only, write,
};

use serde_json::{Value, json};
use std::fs;
use std::process::Command;

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
    // A subagent's prompt is in the user's place but another agent wrote it: asked what the user said, it keeps
    // its ask factor.
    let prompt = |extra: &[&str]| {
        let v = words_only(&e, "what did I ask about the QUASAR modules", "/w/z", extra);
        score_of(&v, "sz-a0")
    };
    let (on, off) = (
        prompt(&[]),
        prompt(&["--without-rule", "users-words-asked"]),
    );
    assert!(on > 0.0 && (on - off).abs() < 1e-6, "{on} {off}");
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
    let e = indexed_chat(cwd, prefix, texts);
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

/// A question about which commit (issue #47) prefers the message that names one by its id: "pushed 5c1b231"
/// answers "which commit did we push for the parser fix?", and "all 14 files pushed", which says a number but
/// no commit, does not — it would answer "how many files …". The plain how-many question is untouched.
#[test]
fn a_question_about_which_commit_prefers_the_message_that_names_one() {
    an_answer_type_rule_moves_down_what_does_not_say_it(
        "/w/commit",
        "wc",
        &[
            "pushed all 14 files of the parser fix to main",
            "pushed 6eea407..5c1b231 of the parser fix to main",
            "unrelated: the kettle is broken",
        ],
        "which commit did we push for the parser fix?",
        "did we push the parser fix to main?",
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
    let e = indexed_chat(
        "/w/talk",
        "sa",
        &[
            "Thanks, Ana! Your painting looks great",
            "I paint seascapes, mostly at dawn",
            "the kettle is broken again",
        ],
    );
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
    let e = indexed_chat(
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
    let e = indexed_chat(
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
    let e = indexed_chat(
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
    let e = indexed_chat(
        "/w/talk",
        "st",
        &[
            "I won the regional tournament last week!",
            "congrats, the other finalists looked strong",
            "we repainted the kitchen on Sunday",
            "the harvest festival was packed",
        ],
    );
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

/// What an IDE adds to every request ("The user opened the file … in the IDE. This may or may not be related to
/// the current task.") is neither searched nor shown: a query in those words finds the message that says them,
/// not every request made from an editor, and a request is shown as the user wrote it.
#[test]
fn what_an_ide_added_to_a_request_is_not_searched() {
    let (cwd, s) = ("/w/ide", "ie");
    let at = |i: usize| format!("2025-05-04T09:{i:02}:00Z");
    let note = |file: &str| {
        format!(
            "<ide_opened_file>The user opened the file /w/ide/{file} in the IDE. This may or may not be related \
             to the current task.</ide_opened_file>"
        )
    };
    let request = |i: usize, file: &str, text: &str| {
        json!({"type": "user", "uuid": format!("{s}-{i}"), "sessionId": s, "cwd": cwd, "timestamp": at(i),
            "message": {"role": "user", "content": [{"type": "text", "text": note(file)},
                {"type": "text", "text": text}]}})
    };
    let lines = vec![
        request(
            0,
            "settings.css",
            "add a dark mode toggle to the settings page",
        ),
        entry(s, cwd, 1, &at(1), "Added the toggle to the settings page."),
        request(2, "notes.md", "now write the release notes"),
        entry(
            s,
            cwd,
            3,
            &at(3),
            "The flaky upload test may not be related to the current task: it failed before the change.",
        ),
    ];
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join("claude"), cwd, s, &lines);
    let e = indexed(tmp);
    let v = search(
        &e,
        "UTC",
        &[
            "--project",
            cwd,
            "--context",
            "0",
            "which file is related to the current task?",
        ],
    )
    .unwrap();
    assert_eq!(uuids(&v), ["ie-3"], "{v:#}");
    let v = search(
        &e,
        "UTC",
        &["--project", cwd, "--context", "0", "dark mode toggle"],
    )
    .unwrap();
    assert_eq!(
        hit_content(&v, "ie-0"),
        "add a dark mode toggle to the settings page"
    );
}
