//! What a newcomer sees first (issue #49): a search over no history at all says where ghola looked and how to
//! point it elsewhere; the listings show real sessions, titled, and count the empty transcripts; a person's
//! search pages, in the terminal and the browser, without the model's budget or tool names.

use crate::common;

use common::home::Home;
use common::run_ok;

#[test]
fn a_search_over_no_history_names_where_ghola_looked_and_the_fix() {
    let h = Home::new();
    for args in [
        &["search", "what did we decide about retries", "--global"][..],
        &["search", "retries", "--global", "--json"],
    ] {
        let out = h
            .ghola()
            .args(args)
            .env("HF_HUB_OFFLINE", "1")
            .env("HF_HUB_CACHE", h.root().join("no-model"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let looked = h.claude.join("projects").display().to_string();
        assert!(
            said.contains("no Claude Code history found")
                && said.contains(&looked)
                && said.contains("CLAUDE_CONFIG_DIR"),
            "{said}"
        );
    }
    // With a history, no such line.
    common::transcript::Transcript::new("f1000000-0000-4000-8000-000000000001", "/w/app")
        .user("we decided on three retries")
        .write(&h.claude);
    let out = run_ok(
        h.ghola()
            .args(["search", "retries", "--global", "--json"])
            .env("HF_HUB_OFFLINE", "1")
            .env("HF_HUB_CACHE", h.root().join("no-model")),
    );
    assert!(!String::from_utf8_lossy(&out).contains("no Claude Code history found"));
}

/// `ghola` over a corpus folder of real transcripts, with an index of its own.
fn over_corpus(name: &str) -> (tempfile::TempDir, std::process::Command) {
    let idx = tempfile::tempdir().unwrap();
    let c = common::ghola_over_corpus(name, idx.path());
    (idx, c)
}

#[test]
fn the_terminal_lists_real_sessions_titled_and_counts_the_empty_ones() {
    // daaain-claude-code-log holds transcripts of 0 bytes and sessions without a title.
    let (_idx, mut projects) = over_corpus("daaain-claude-code-log");
    let listed = String::from_utf8(run_ok(projects.arg("projects"))).unwrap();
    assert!(
        !listed.contains(" 0 messages"),
        "empty transcripts listed as a project's sessions:\n{listed}"
    );
    // Projects by their real path: a session that recorded none is listed under its folder's siblings' path.
    for line in listed.lines() {
        let project = line.split("  ").next().unwrap_or("");
        assert!(
            project.contains('/') || project.contains('\\'),
            "a project named by its escaped folder: {line}\n{listed}"
        );
    }
    let (_i, mut sessions) = over_corpus("daaain-claude-code-log");
    sessions.args(["sessions", "--global", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&run_ok(&mut sessions)).unwrap();
    let all = v["sessions"].as_array().unwrap();
    assert!(!all.is_empty());
    for s in all {
        assert!(
            s["messages"].as_u64().unwrap() > 0
                || !s["subagent_sessions"].as_array().unwrap().is_empty(),
            "{s}"
        );
        // A session without a title of its own is titled by its first request, never left as its uuid.
        let title = s["title"].as_str().unwrap_or("");
        assert!(!title.is_empty(), "untitled: {s}");
        assert!(title.chars().count() <= 81, "{title}");
    }
    let (_j, mut status) = over_corpus("daaain-claude-code-log");
    let said = String::from_utf8(run_ok(status.arg("status"))).unwrap();
    assert!(
        said.contains("hold no message") && said.contains("not listed"),
        "{said}"
    );
}

#[test]
fn a_persons_search_pages_without_budgets_or_tool_names() {
    let h = Home::new();
    // Sessions of their own (one line each), so that every hit is a result of its own.
    let dir = h.claude.join("projects").join("-w-app");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..45 {
        let id = format!("f2000000-0000-4000-8000-{i:012}");
        let line = serde_json::json!({"type": "user", "uuid": format!("u{i}"), "parentUuid": null,
            "sessionId": id, "cwd": "/w/app", "timestamp": "2025-03-01T10:00:00Z",
            "message": {"role": "user", "content": format!("retry budget note {i}: {}",
                "the uploader waits and tries again. ".repeat(40))}});
        std::fs::write(dir.join(format!("{id}.jsonl")), format!("{line}\n")).unwrap();
    }
    let out = h
        .ghola()
        .args([
            "search",
            "retry budget uploader",
            "--global",
            "--limit",
            "50",
        ])
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HUB_CACHE", h.root().join("no-model"))
        .env("GHOLA_RESPONSE_CHARS", "4000")
        .output()
        .unwrap();
    assert!(out.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !said.contains("get_session_detail") && !said.contains("characters"),
        "{said}"
    );
    assert!(
        said.contains("--offset"),
        "the terminal names its flag for the next page: {said}"
    );
    // The browser: a page of results and a link to the next, no budget, no tool name.
    let mut cmd = h.ghola();
    cmd.env("HF_HUB_OFFLINE", "1");
    let ui = common::browser::Ui::start(cmd);
    let login = ui.log_in();
    let get = |path: &str| {
        common::browser::http_get(login.addr, &login.host, path, &login.cookie)
            .expect("the page answers")
    };
    for path in [
        "/search?q=retry+budget+uploader",
        "/search?q=retry+budget+uploader&group=session",
    ] {
        let page = get(path);
        assert!(
            !page.contains("get_session_detail") && !page.contains("cut to fit"),
            "{page}"
        );
        if !path.contains("group") {
            assert!(page.contains("next page"), "{page}");
            let next = get("/search?q=retry+budget+uploader&offset=20");
            assert!(next.contains("class=hit"), "{next}");
        }
    }
}

#[test]
fn a_newcomers_tour_of_the_browser_over_a_real_history() {
    let Some(chromium) = common::browser::chromium() else {
        return common::browser::skipped("chromium (the newcomer's browser tour)");
    };
    // One index for the update and the browser, so that the pages answer at once.
    let idx = tempfile::tempdir().unwrap();
    let claude = common::corpus().join("daaain-claude-code-log");
    let ghola = || {
        let mut c = common::ghola_at(&claude, idx.path());
        common::without_model(&mut c, idx.path());
        c
    };
    common::index_by_words(&mut ghola());
    let ui = common::browser::Ui::start(ghola());
    let at = |path: &str| {
        let sep = if path.contains('?') { '&' } else { '?' };
        common::browser::dump_dom(
            &chromium,
            &format!("http://{}{path}{sep}token={}", ui.addr, ui.token),
        )
    };
    let uuid_shown =
        regex::Regex::new(r">\s*[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\s*<")
            .unwrap();
    // The sessions page: real sessions, titled, projects by their path, labels cut in the middle.
    let page = at("/projects");
    assert!(
        page.contains("<svg"),
        "the timeline: {}",
        &page[..page.len().min(300)]
    );
    assert!(
        !uuid_shown.is_match(&page),
        "a session shown as a bare uuid"
    );
    let no_messages = regex::Regex::new(r"[^0-9]0 messages?\b").unwrap();
    assert!(
        !no_messages.is_match(&page),
        "a session or project without messages listed"
    );
    let label_cut_at_start = regex::Regex::new(r"</title>…").unwrap();
    assert!(
        !label_cut_at_start.is_match(&page),
        "a timeline label cut at its start"
    );
    assert!(
        !page.contains(">-Users-"),
        "a project shown by its escaped folder name"
    );
    // A search by session: paged, no budget, no tool name.
    let page = at("/search?q=test&group=session");
    assert!(
        page.contains("class=hit") || page.contains("class=\"hit\""),
        "no results"
    );
    for said in ["cut to fit", "get_session_detail", "characters", "around="] {
        assert!(!page.contains(said), "{said:?} shown to a person");
    }
    assert!(
        !uuid_shown.is_match(&page),
        "a session heading shown as a bare uuid"
    );
    // A session page and `ghola show`: titled, even when Claude Code gave the session no title.
    let listed: serde_json::Value =
        serde_json::from_slice(&run_ok(ghola().args(["sessions", "--global", "--json"]))).unwrap();
    let first = &listed["sessions"][0];
    let (id, title) = (
        first["session_id"].as_str().unwrap(),
        first["title"].as_str().unwrap(),
    );
    let page = at(&format!("/session/{id}"));
    assert!(
        !page.contains("(untitled session)"),
        "an untitled session page"
    );
    assert!(!uuid_shown.is_match(&page.replace(&format!("session {id}"), "")));
    let shown = String::from_utf8(run_ok(ghola().args(["show", id]))).unwrap();
    let start: String = title.chars().take(20).collect();
    assert!(
        shown.contains(&start),
        "`ghola show` without its title {title:?}"
    );
    // Why is this file like this? From a tool call on a session page to the file's history (issue #48).
    let edited = "9e953218-585f-4692-89df-9e0747a31c68";
    let page = at(&format!("/session/{edited}"));
    let link = page
        .split("href=\"")
        .filter_map(|s| s.split('"').next())
        .find(|s| {
            s.starts_with("/file?path=")
                && s.replace("%2F", "/")
                    .ends_with("online-llm-tokenizer/tokenizer.js")
        })
        .expect("a tool call links to its file's history")
        .replace("&amp;", "&");
    let page = at(&link);
    assert!(
        page.contains(edited) && page.contains("asked:") && page.contains("undone later"),
        "the file's history: {}",
        &page[..page.len().min(2000)]
    );
    assert!(
        !page.contains("&lt;ide_opened_file"),
        "an IDE note shown as a request"
    );
}

#[test]
fn the_terminal_names_its_own_flags_in_errors() {
    let h = Home::new();
    for (args, flag, not) in [
        (&["--limit", "100000"][..], "--limit", "max_results"),
        (&["--context", "500"], "--context", "context_before_after"),
        (&["--session", "current"], "--session", "session_id"),
    ] {
        let out = h
            .ghola()
            .args(["search", "x", "--no-update"])
            .args(args)
            .env_remove("CLAUDE_CODE_SESSION_ID")
            .env("HF_HUB_OFFLINE", "1")
            .env("HF_HUB_CACHE", h.root().join("no-model"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(err.contains(flag) && !err.contains(not), "{err}");
    }
}
