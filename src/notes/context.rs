//! The compiled context a new session starts with (Clancy's sections): recent sessions of the project, one line
//! each, from the index; architecture (the parent project's too); key decisions, newest first; known pitfalls;
//! the current plan. Bounded: the oldest decisions go first, then the oldest architecture, then the oldest
//! failures (the newest few always stay), then session lines; the plan is never trimmed.

use super::item::{Category, Item};
use super::store::ProjectNotes;
use crate::index::snapshot::{NO_AGENT, Snapshot};

/// Claude Code replaces hook output over 10,000 characters with a file pointer: the hook stays under this.
pub const HOOK_MAX_CHARS: usize = 9_000;
/// `ghola notes context` by default (Clancy's `.claude/context.md`).
pub const DEFAULT_MAX_TOKENS: usize = 12_000;
/// Failures that survive any trimming (the newest).
const KEEP_FAILURES: usize = 5;
/// Recent sessions listed in a context.
const RECENT: usize = 5;

/// One recent session of the project.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionLine {
    pub session: String,
    pub date: String,
    pub title: String,
    pub messages: usize,
}

/// The `n` most recent sessions of `project` in the index (main conversations), newest first, leaving out
/// `exclude` (the session starting now).
pub fn recent_sessions(
    snap: &Snapshot,
    project: &str,
    exclude: Option<&str>,
    n: usize,
) -> Vec<SessionLine> {
    let Some(psym) = snap.sym_of(project) else {
        return Vec::new();
    };
    // Rows are grouped by session: one pass collects (session, first row, count, last time).
    let mut sessions: Vec<(u32, usize, usize, i64)> = Vec::new();
    for (i, r) in snap.messages.iter().enumerate() {
        if r.project != psym || r.agent != NO_AGENT {
            continue;
        }
        match sessions.last_mut() {
            Some(s) if s.0 == r.session => {
                s.2 += 1;
                s.3 = s.3.max(r.timestamp_ms.unwrap_or(0));
            }
            _ => sessions.push((r.session, i, 1, r.timestamp_ms.unwrap_or(0))),
        }
    }
    sessions.retain(|s| exclude != Some(snap.sym(s.0)));
    sessions.sort_by_key(|s| std::cmp::Reverse(s.3));
    sessions.truncate(n);
    sessions
        .into_iter()
        .map(|(sym, first, count, last)| {
            // The title: the first thing the user wrote.
            let title = (first..snap.messages.len().min(first + 40))
                .take_while(|&i| snap.messages[i].session == sym)
                .map(|i| snap.stored(i))
                .find(|m| m.role == "user" && m.kind == "text")
                .map(|m| {
                    let line = m
                        .content
                        .lines()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("");
                    let line = crate::secrets::redact(line);
                    let mut t: String = line.trim().chars().take(90).collect();
                    if line.trim().chars().count() > 90 {
                        t.push('…');
                    }
                    t
                })
                .unwrap_or_else(|| "(no prompt)".into());
            SessionLine {
                session: snap.sym(sym).to_string(),
                date: chrono::DateTime::from_timestamp_millis(last)
                    .map(|t| t.format("%Y-%m-%d").to_string())
                    .unwrap_or_default(),
                title,
                messages: count,
            }
        })
        .collect()
}

/// The compiled context of `notes` with its parent project's notes and the `RECENT` most recent sessions of
/// `project` in `snap` (leaving out `exclude`): what the SessionStart hook, `ghola notes context` and each task
/// of `ghola start` put in front of a session.
pub fn compile_for(
    store: &super::Store,
    notes: &ProjectNotes,
    project: &str,
    snap: Option<&Snapshot>,
    exclude: Option<&str>,
    max_chars: usize,
) -> String {
    let parent = notes.meta.parent.as_deref().map(|p| store.open(p));
    let recent = snap
        .map(|s| recent_sessions(s, project, exclude, RECENT))
        .unwrap_or_default();
    compile(notes, parent.as_ref(), &recent, max_chars)
}

/// Items newest first (by date, later in the file wins a tie).
fn newest_first(items: &[Item]) -> Vec<Item> {
    let mut v: Vec<(usize, Item)> = items.iter().cloned().enumerate().collect();
    v.sort_by(|(a, x), (b, y)| y.date.cmp(&x.date).then(b.cmp(a)));
    v.into_iter().map(|(_, i)| i).collect()
}

/// One note as a bullet, credentials replaced: a note typed by hand (or by an older ghola) may hold one, and
/// the compiled context goes into a model's context.
fn bullet(i: &Item) -> String {
    format!(
        "- {}\n",
        crate::secrets::redact(&i.text).replace('\n', "\n  ")
    )
}

/// The compiled context, at most `max_chars` characters; empty when there is nothing to say.
pub fn compile(
    notes: &ProjectNotes,
    parent: Option<&ProjectNotes>,
    recent: &[SessionLine],
    max_chars: usize,
) -> String {
    let parent = parent.filter(|p| !p.meta.archived);
    // Working lists, each newest first; trimming pops from the back (the oldest).
    let mut sessions: Vec<String> = recent
        .iter()
        .map(|s| {
            format!(
                "- {} {} — {} ({} messages)\n",
                s.date,
                crate::transcript::short_id(&s.session),
                s.title,
                s.messages
            )
        })
        .collect();
    let mut arch = newest_first(notes.get(Category::Architecture));
    let mut parent_arch =
        parent.map_or_else(Vec::new, |p| newest_first(p.get(Category::Architecture)));
    let mut decisions = newest_first(notes.get(Category::Decisions));
    let mut parent_decisions =
        parent.map_or_else(Vec::new, |p| newest_first(p.get(Category::Decisions)));
    let mut failures = newest_first(notes.get(Category::Failures));
    failures.extend(parent.map_or_else(Vec::new, |p| newest_first(p.get(Category::Failures))));
    let plan = notes.get(Category::Plan).to_vec();
    if sessions.is_empty()
        && [
            &arch,
            &parent_arch,
            &decisions,
            &parent_decisions,
            &failures,
            &plan,
        ]
        .iter()
        .all(|v| v.is_empty())
    {
        return String::new();
    }
    let render = |sessions: &[String],
                  arch: &[Item],
                  parent_arch: &[Item],
                  decisions: &[Item],
                  parent_decisions: &[Item],
                  failures: &[Item]|
     -> String {
        let mut out = format!(
            "# Project notes for {} (kept by ghola from earlier sessions)\n\
             These are what earlier sessions of this project established; the current code and the user's \
             words take precedence. Full notes: the project_notes tool.\n",
            notes.meta.project
        );
        if !sessions.is_empty() {
            out.push_str("\n## Recent sessions\n");
            sessions.iter().for_each(|s| out.push_str(s));
        }
        if !arch.is_empty() || !parent_arch.is_empty() {
            out.push_str("\n## Architecture\n");
            arch.iter().for_each(|i| out.push_str(&bullet(i)));
            if let Some(p) = parent.filter(|_| !parent_arch.is_empty()) {
                out.push_str(&format!("From the parent project {}:\n", p.meta.project));
                parent_arch.iter().for_each(|i| out.push_str(&bullet(i)));
            }
        }
        if !decisions.is_empty() || !parent_decisions.is_empty() {
            out.push_str("\n## Key decisions (newest first)\n");
            decisions.iter().for_each(|i| out.push_str(&bullet(i)));
            if let Some(p) = parent.filter(|_| !parent_decisions.is_empty()) {
                out.push_str(&format!("From the parent project {}:\n", p.meta.project));
                parent_decisions
                    .iter()
                    .for_each(|i| out.push_str(&bullet(i)));
            }
        }
        if !failures.is_empty() {
            out.push_str("\n## Known pitfalls\n");
            failures.iter().for_each(|i| out.push_str(&bullet(i)));
        }
        if !plan.is_empty() {
            out.push_str("\n## Current plan\n");
            plan.iter().for_each(|i| out.push_str(&bullet(i)));
        }
        out
    };
    loop {
        let out = render(
            &sessions,
            &arch,
            &parent_arch,
            &decisions,
            &parent_decisions,
            &failures,
        );
        if out.chars().count() <= max_chars {
            return out;
        }
        // Oldest first, in this order of what matters least.
        if parent_decisions.pop().is_some()
            || decisions.pop().is_some()
            || parent_arch.pop().is_some()
            || arch.pop().is_some()
            || (failures.len() > KEEP_FAILURES && failures.pop().is_some())
            || sessions.pop().is_some()
            || failures.pop().is_some()
        {
            continue;
        }
        // Only the plan is left and it alone is too long: cut at the bound (it is still the plan's head).
        let mut cut: String = out.chars().take(max_chars.saturating_sub(20)).collect();
        cut.push_str("\n[… cut …]\n");
        return cut;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notes::store::Store;

    fn item(c: Category, k: usize, len: usize) -> Item {
        Item {
            id: format!("{}-{k:06}", c.id_prefix()),
            text: format!("{} {k} {}", c.name(), "x".repeat(len)),
            session: None,
            window: None,
            date: Some(format!("2026-{:02}-01", 1 + k % 12)),
        }
    }

    #[test]
    fn bounded_trimming_keeps_the_plan_and_newest_failures() {
        let root = tempfile::tempdir().unwrap();
        let mut n = Store::new(root.path()).open("/p");
        for c in Category::ALL {
            let items = (0..12).map(|k| item(c, k, 300)).collect();
            n.items.insert(c, items);
        }
        let recent = vec![SessionLine {
            session: "abcdef0123".into(),
            date: "2026-11-20".into(),
            title: "fix the parser".into(),
            messages: 12,
        }];
        let full = compile(&n, None, &recent, usize::MAX);
        assert!(full.len() > 9_000);
        let out = compile(&n, None, &recent, HOOK_MAX_CHARS);
        assert!(out.chars().count() <= HOOK_MAX_CHARS);
        for k in 0..12 {
            assert!(out.contains(&format!("plan {k} ")), "plan item {k} kept");
        }
        // The newest failures (December = k 11, November = k 10 …) stay.
        for k in [11, 10, 9, 8, 7] {
            assert!(out.contains(&format!("failures {k} ")), "failure {k} kept");
        }
        // Decisions went first: none is left while architecture (trimmed after them) still may be.
        assert!(!out.contains("decisions 0 "));
        assert!(out.contains("## Current plan"));
        // Newest decision first in the full text.
        let d11 = full.find("decisions 11 ").unwrap();
        let d0 = full.find("decisions 0 ").unwrap();
        assert!(d11 < d0);
    }

    #[test]
    fn nothing_to_say_is_empty() {
        let root = tempfile::tempdir().unwrap();
        let n = Store::new(root.path()).open("/p");
        assert_eq!(compile(&n, None, &[], HOOK_MAX_CHARS), "");
    }
}
