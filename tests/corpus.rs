//! Reads every real transcript under `../shared/corpus` in place and checks facts established by reading the
//! files by hand. Fails (does not skip) when `CI=true` and the corpus is missing.

use crate::common;

use ghola::transcript::{self, Part, Role, Session, SubagentLayout};
use std::path::{Path, PathBuf};

fn corpus() -> Option<PathBuf> {
    common::shared("corpus")
}

fn load(folder: &str) -> Vec<Session> {
    let dir = corpus().expect("corpus").join(folder);
    let (sessions, found) = transcript::load_all(&transcript::Sources::disk(), &dir);
    assert!(found.problems.is_empty(), "{folder}: {:?}", found.problems);
    sessions
}

fn session<'a>(sessions: &'a [Session], prefix: &str) -> &'a Session {
    sessions
        .iter()
        .find(|s| s.session_id.starts_with(prefix))
        .unwrap_or_else(|| panic!("no session {prefix}"))
}

fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            jsonl_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

#[test]
fn every_transcript_file_is_found_and_read() {
    let Some(root) = corpus() else { return };
    for folder in [
        "marot-spotter",
        "daaain-claude-code-log",
        "d-kimuson-claude-code-viewer",
        "chiphuyen-sniffly",
        "kfischer-okarin-claude-history",
        "cc-2.1.330",
    ] {
        let dir = root.join(folder);
        let (sessions, found) = transcript::load_all(&transcript::Sources::disk(), &dir);
        let mut on_disk = Vec::new();
        jsonl_files(&dir.join("projects"), &mut on_disk);
        let mut read: Vec<PathBuf> = sessions
            .iter()
            .flat_map(|s| s.files.iter().map(|f| f.path.clone()))
            .collect();
        on_disk.sort();
        read.sort();
        assert_eq!(
            read, on_disk,
            "{folder}: every .jsonl belongs to exactly one session"
        );
        assert!(found.problems.is_empty(), "{folder}: {:?}", found.problems);
        for s in &sessions {
            for m in s.all_messages() {
                assert!(matches!(m.role, Role::User | Role::Assistant));
                assert!((m.window as usize) < s.windows as usize);
            }
        }
    }
}

#[test]
fn marot_spotter_long_sessions_have_two_windows_and_nested_subagents() {
    let sessions = load("marot-spotter");
    assert_eq!(sessions.len(), 9);
    let long = ["4d5611e5", "fa812bfe", "ae4a77f8", "8463c716", "258c7280"];
    for id in long {
        let s = session(&sessions, id);
        assert_eq!(s.windows, 2, "{id}");
        assert_eq!(s.boundaries.len(), 1, "{id}");
        let summaries: Vec<_> = s.messages.iter().filter(|m| m.is_compact_summary).collect();
        assert_eq!(summaries.len(), 1, "{id}: one compaction summary");
        assert_eq!(summaries[0].window, 1, "{id}: the summary opens window 1");
        assert!(
            s.messages.iter().any(|m| m.window == 0) && s.messages.iter().any(|m| m.window == 1)
        );
        assert!(
            s.subagents
                .iter()
                .all(|a| a.layout == SubagentLayout::Nested)
        );
        assert!(
            s.subagents
                .iter()
                .any(|a| a.agent_id.starts_with("acompact-")),
            "{id}"
        );
        // The compaction subagent's prompt and the summary it wrote are the compaction summary, no one's words;
        // every other subagent speaks for itself.
        for a in &s.subagents {
            let compaction = a.agent_id.starts_with("acompact-");
            assert!(
                a.messages
                    .iter()
                    .all(|m| m.is_compact_summary == compaction),
                "{id}: {}",
                a.agent_id
            );
        }
        assert_eq!(s.skipped_lines(), 0);
        // The project is the first cwd: these sessions were started in worktrees.
        assert!(
            s.project
                .starts_with("/home/USER/projects/spotter-worktrees/spotter-"),
            "{}",
            s.project
        );
        // Every subagent message carries the agent id and the parent's project.
        for a in &s.subagents {
            assert!(
                a.messages
                    .iter()
                    .all(|m| m.agent_id.as_deref() == Some(&a.agent_id[..]))
            );
            assert!(a.messages.iter().all(|m| m.project == s.project));
        }
    }
    let counts: Vec<usize> = long
        .iter()
        .map(|id| session(&sessions, id).messages.len())
        .collect();
    assert_eq!(counts, [293, 358, 463, 323, 343]);
    // The subagent folder whose session file is missing is still found, as a session without main messages.
    let orphan = session(&sessions, "6c2214d7");
    assert!(orphan.messages.is_empty());
    assert_eq!(orphan.subagents.len(), 1);
    assert_eq!(orphan.subagents[0].messages.len(), 67);
    // Thinking survives.
    assert!(
        sessions
            .iter()
            .flat_map(|s| s.all_messages())
            .any(|m| m.parts.iter().any(|p| matches!(p, Part::Thinking { .. })))
    );
}

#[test]
fn d_kimuson_inline_sidechains_become_subagents() {
    let sessions = load("d-kimuson-claude-code-viewer");
    assert_eq!(sessions.len(), 3);
    let s = session(&sessions, "fe5e1c67");
    assert_eq!(s.messages.len(), 22);
    let inline: Vec<_> = s
        .subagents
        .iter()
        .filter(|a| a.layout == SubagentLayout::Inline)
        .collect();
    assert_eq!(inline.len(), 5);
    assert_eq!(
        inline.iter().map(|a| a.messages.len()).sum::<usize>(),
        18 + 68 + 80 + 50 + 106
    );
    // No sidechain turn is left in the main conversation.
    assert!(s.messages.iter().all(|m| m.agent_id.is_none()));
    assert_eq!(
        s.title.as_deref(),
        Some("Empty Repo Setup: CLAUDE.md Foundation Created")
    );
    // 2.0.x sibling agent files link to the session named inside them.
    let s = session(&sessions, "5c0375b4");
    let siblings: Vec<_> = s
        .subagents
        .iter()
        .filter(|a| a.layout == SubagentLayout::Sibling)
        .map(|a| a.agent_id.as_str())
        .collect();
    assert_eq!(siblings, ["test-hash-123", "test-hash-456"]);
    assert_eq!(
        s.subagents
            .iter()
            .filter(|a| a.layout == SubagentLayout::Inline)
            .count(),
        2
    );
}

#[test]
fn cc_2_1_330_current_format() {
    let sessions = load("cc-2.1.330");
    assert_eq!(sessions.len(), 5);
    let s = session(&sessions, "fec0adcb");
    assert_eq!(s.windows, 2);
    assert_eq!(s.messages.len(), 16);
    let texts: Vec<String> = s
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(
        texts.iter().any(|t| t.trim() == "/compact"),
        "the command itself is kept"
    );
    assert!(texts.iter().all(|t| !t.contains("<command-name>")
        && !t.contains("<local-command-")
        && !t.contains("<system-reminder>")));
    let s = session(&sessions, "147a17e6");
    assert_eq!(s.subagents.len(), 2);
    assert!(
        s.subagents
            .iter()
            .all(|a| a.agent_type.as_deref() == Some("general-purpose"))
    );
    let projects: Vec<&str> = sessions.iter().map(|s| s.project.as_str()).collect();
    assert!(projects.contains(&"/home/dev/my_app.v2-beta"));
}

#[test]
fn old_formats_and_edge_files() {
    let sessions = load("chiphuyen-sniffly");
    assert_eq!(sessions.len(), 4);
    let summary_only = session(&sessions, "ff71dbed");
    assert!(summary_only.messages.is_empty());
    assert_eq!(
        summary_only.title.as_deref(),
        Some("AI Music Generation from Word Embeddings")
    );
    assert_eq!(
        summary_only.project, "-Users-chip-dev-ai-music",
        "no cwd anywhere: the folder name"
    );
    assert_eq!(session(&sessions, "d3ad4cdc").messages.len(), 125);

    let sessions = load("kfischer-okarin-claude-history");
    assert_eq!(sessions.len(), 10);
    let main = session(&sessions, "b3edadab");
    assert_eq!(main.messages.len(), 31);
    assert_eq!(main.subagents.len(), 5);
    assert!(session(&sessions, "6d3dc917").messages.is_empty());
}

#[test]
fn edge_cases_report_their_malformed_lines() {
    let Some(root) = corpus() else { return };
    let found = transcript::discover_project_dir(&root.join("daaain-claude-code-log/fixtures"));
    let files: Vec<_> = found
        .sessions
        .iter()
        .filter(|s| s.session_id == "edge_cases")
        .cloned()
        .collect();
    let s = &transcript::load_sessions(&transcript::Sources::disk(), &files)[0];
    let report = &s.files[0].report;
    // 19 lines, the last (a summary) without a newline: a complete JSON object, so it is read (issue #32), and
    // nothing is pending.
    assert_eq!(report.lines, 19);
    assert_eq!(report.pending_bytes, 0);
    assert_eq!(
        s.files[0].consumed,
        std::fs::metadata(&s.files[0].path).unwrap().len()
    );
    // `"massive error"`, `42`, `[1]` are not objects; `{"silly": "this"}` has no type.
    assert_eq!(report.malformed_lines, 3, "{report:?}");
    assert_eq!(report.unknown_types.get("<none>"), Some(&1), "{report:?}");
    assert_eq!(s.skipped_lines(), 3 + report.invalid_entries);
    // The whole fixtures folder reads without a panic.
    let all = transcript::load_sessions(&transcript::Sources::disk(), &found.sessions);
    assert!(all.len() >= 25);
}
