//! Which messages a search may return: the filters of [`SearchParams`] (project, machines, subagents, one
//! session or all but the caller's latest window, dates) decided once per conversation run
//! ([`Snapshot::conversations`]), and what to tell a reader when they leave nothing.

use super::SearchParams;
use crate::index::{NO_AGENT, Snapshot};
use crate::transcript::is_within;

/// Messages that pass the filters. The filters of a conversation (project, machine, subagent, session) are
/// decided once per conversation run ([`Snapshot::conversations`]); only the time filters and the excluded
/// session's latest window read each message.
pub(super) fn eligible(snap: &Snapshot, p: &SearchParams) -> Vec<bool> {
    // The excluded session's latest window.
    let excluded = p.exclude_session.as_deref().and_then(|id| snap.sym_of(id));
    let latest_window = excluded.map(|sym| {
        snap.conversations()
            .iter()
            .filter(|r| r.session == sym)
            .flat_map(|r| &snap.messages[r.start as usize..r.end as usize])
            .map(|m| m.window)
            .max()
            .unwrap_or(0)
    });
    let after = p.after.map(|t| t.timestamp_millis());
    let before = p.before.map(|t| t.timestamp_millis());
    // Only one session: its symbol (`Some(None)`: a session the index does not hold, so nothing passes).
    let only = p.only_session.as_deref().map(|id| snap.sym_of(id));
    // Whether each project symbol passes the project filter, decided once per project (0: not yet known).
    let mut project_ok = vec![0u8; snap.sym_count()];
    // Whether each session passes the machine filter, decided once per session (a session's files are all on
    // one machine's side).
    let mut machine_ok = vec![0u8; snap.sym_count()];
    let mut ok = vec![false; snap.messages.len()];
    for run in snap.conversations() {
        if let Some(project) = &p.project {
            let known = &mut project_ok[run.project as usize];
            if *known == 0 {
                *known = if is_within(snap.sym(run.project), project) {
                    1
                } else {
                    2
                };
            }
            if *known == 2 {
                continue;
            }
        }
        if !p.machines.is_empty() {
            let known = &mut machine_ok[run.session as usize];
            if *known == 0 {
                let machine = machine_of(snap, snap.source(run.start as usize), p);
                *known = if p.machines.contains(&machine) { 1 } else { 2 };
            }
            if *known == 2 {
                continue;
            }
        }
        if !p.include_subagents && run.agent != NO_AGENT {
            continue;
        }
        if only.is_some_and(|sym| sym != Some(run.session)) {
            continue;
        }
        let range = run.start as usize..run.end as usize;
        let in_excluded = excluded == Some(run.session);
        if !in_excluded && after.is_none() && before.is_none() {
            ok[range].fill(true);
            continue;
        }
        for i in range {
            let m = &snap.messages[i];
            if let (true, Some(w)) = (in_excluded, latest_window)
                && m.window == w
            {
                continue;
            }
            let t = m.timestamp_ms;
            ok[i] = !(after.is_some_and(|a| t.is_none_or(|t| t < a))
                || before.is_some_and(|b| t.is_none_or(|t| t >= b)));
        }
    }
    ok
}

/// Why the filters left nothing to search, for a reader who would otherwise blame the query's words: the
/// project holds no session (the usual case: `ghola search` run in a directory Claude Code never worked in, as
/// the project defaults to the current one), or the other filters exclude every message of it.
pub(super) fn out_of_scope(snap: &Snapshot, p: &SearchParams) -> String {
    if let Some(project) = &p.project {
        let mut projects = rustc_hash::FxHashSet::default();
        let mut inside = false;
        for r in snap.conversations() {
            if projects.insert(r.project) && is_within(snap.sym(r.project), project) {
                inside = true;
                break;
            }
        }
        if !inside {
            return format!(
                "nothing was searched: no session of this history was recorded in {project} or below it; a \
                 search of every project (`--global`, or scope \"global\") looks at the other {} project{}",
                projects.len(),
                if projects.len() == 1 { "" } else { "s" }
            );
        }
    }
    "nothing was searched: no message of this history passes the filters (the project's sessions are all \
     outside the dates, session, machines or subagents asked for)"
        .to_string()
}

/// The machine the transcript `source` was recorded on: another machine's copy's name, or this one's.
pub(super) fn machine_of(snap: &Snapshot, source: &str, p: &SearchParams) -> String {
    crate::index::machines::machine_of_path(&snap.dir, std::path::Path::new(source))
        .unwrap_or_else(|| p.this_machine.clone())
}
