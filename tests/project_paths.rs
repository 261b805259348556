//! One notion of a project path, whatever OS recorded the history: on this machine, a history recorded on
//! Windows (`C:\Users\…`) is listed by `ghola projects`, and `--project` given exactly as listed — or with the
//! other separator, another drive-letter case, a trailing separator, or a parent folder — finds its sessions,
//! subfolders included; and the MCP `project` argument does the same.

mod common;

use common::mcp_client::Client;
use common::{run_json, run_ok};
use serde_json::{Value, json};
use std::path::Path;

fn session(claude: &Path, folder: &str, id: &str, cwd: &str, text: &str) {
    let dir = claude.join("projects").join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    let body: String = (0..2)
        .map(|i| {
            let role = if i == 0 { "user" } else { "assistant" };
            json!({"type": role, "uuid": format!("{id}-{i}"), "sessionId": id, "cwd": cwd,
                   "timestamp": format!("2025-06-01T10:0{i}:00Z"),
                   "message": {"id": format!("m-{id}-{i}"), "role": role,
                               "content": [{"type": "text", "text": format!("{text} (message {i})")}]}})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.join(format!("{id}.jsonl")), body).unwrap();
}

fn hits(claude: &Path, idx: &Path, project: &str) -> Vec<String> {
    let v = run_json(common::ghola_at(claude, idx).args([
        "search",
        "quokka deployment",
        &format!("--project={project}"),
        "--json",
        "--no-update",
        "--context",
        "0",
        "--relative-floor",
        "0",
    ]));
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            h["matched_message"]["session_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect::<std::collections::BTreeSet<String>>()
        .into_iter()
        .collect()
}

#[test]
fn a_windows_history_on_this_machine_is_found_by_the_project_it_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let (claude, idx) = (tmp.path().join("claude"), tmp.path().join("idx"));
    let app = "C:\\Users\\Mischa\\app";
    session(
        &claude,
        "C--Users-Mischa-app",
        "w1000000-0000-4000-8000-000000000001",
        app,
        "the quokka deployment on the app",
    );
    session(
        &claude,
        "C--Users-Mischa-app-web",
        "w2000000-0000-4000-8000-000000000002",
        "C:\\Users\\Mischa\\app\\web",
        "the quokka deployment of the web part",
    );
    session(
        &claude,
        "C--Users-Mischa-application",
        "w3000000-0000-4000-8000-000000000003",
        "C:\\Users\\Mischa\\application",
        "the quokka deployment elsewhere",
    );
    session(
        &claude,
        "-home-dev-app",
        "u4000000-0000-4000-8000-000000000004",
        "/home/dev/app",
        "the quokka deployment on linux",
    );
    run_ok(common::ghola_at(&claude, &idx).arg("index"));
    let projects = run_json(common::ghola_at(&claude, &idx).args(["projects", "--json"]));
    let listed: Vec<&str> = common::strings(&projects, "projects", "project");
    assert!(listed.contains(&app), "{listed:?}");
    // Every project as listed finds its own sessions.
    for p in &listed {
        assert!(
            !hits(&claude, &idx, p).is_empty(),
            "--project {p} finds nothing"
        );
    }
    // The app and its subfolder, not the sibling whose name only starts the same, nor the Linux project.
    for spelling in [
        app,
        "C:\\Users\\Mischa\\app\\",
        "c:/users/mischa/app",
        "\\\\?\\C:\\Users\\Mischa\\app",
    ] {
        let mut found = hits(&claude, &idx, spelling);
        found.sort();
        assert_eq!(
            found,
            [
                "w1000000-0000-4000-8000-000000000001",
                "w2000000-0000-4000-8000-000000000002"
            ],
            "--project {spelling}"
        );
    }
    assert_eq!(hits(&claude, &idx, "C:\\Users\\Mischa").len(), 3);
    // The sessions listing takes the same spellings.
    let sessions = run_json(common::ghola_at(&claude, &idx).args([
        "sessions",
        "--project=c:/Users/Mischa/app/",
        "--json",
    ]));
    assert_eq!(
        sessions["sessions"].as_array().unwrap().len(),
        2,
        "{sessions:#}"
    );
    // And the MCP `project` argument.
    let mut c = Client::start(&claude, &idx, &[("CLAUDE_PROJECT_DIR", "/somewhere/else")]);
    let (err, text) = c.call(
        10,
        "search_project_history",
        json!({"query": "quokka deployment", "project": "c:\\users\\mischa\\APP", "context_before_after": 0, "relative_floor": 0, "format": "json"}),
    );
    assert!(!err, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut ids: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["matched_message"]["session_id"].as_str().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(
        ids,
        [
            "w1000000-0000-4000-8000-000000000001",
            "w2000000-0000-4000-8000-000000000002"
        ]
    );
}
