//! What a newcomer sees first (issue #49, in part): a search over no history at all says where ghola looked and
//! how to point it elsewhere, instead of a bare "no matches".

mod common;

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
