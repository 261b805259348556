//! Summaries of sessions and projects: the shapes `ghola sessions`/`ghola projects` print and the MCP
//! listing tools return, built in one place so the two surfaces never disagree.

use super::is_within;
use super::session::{FileStatus, Session};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One subagent run of a session.
#[derive(Debug, Clone, Serialize)]
pub struct SubagentSummary {
    pub agent_id: String,
    pub agent_type: Option<String>,
    pub messages: usize,
}

/// One session, as listed by `ghola sessions --json`.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSummary {
    pub session_id: String,
    pub project: String,
    pub git_branch: Option<String>,
    pub first_timestamp: Option<DateTime<Utc>>,
    pub last_timestamp: Option<DateTime<Utc>>,
    /// Messages of the main conversation, split assistant entries merged.
    pub messages: usize,
    pub windows: u32,
    pub subagents: usize,
    pub title: Option<String>,
    pub skipped_lines: u64,
    pub subagent_sessions: Vec<SubagentSummary>,
    /// Per-file read report (lines, malformed lines, unknown types, …).
    pub files: Vec<FileStatus>,
    /// Claude Code deleted the transcript; it is read from ghola's archive.
    pub archived: bool,
}

impl SessionSummary {
    /// Summarises a loaded session.
    pub fn of(s: &Session) -> Self {
        let (first, last) = s.time_range();
        SessionSummary {
            session_id: s.session_id.clone(),
            project: s.project.clone(),
            git_branch: s.git_branch().map(str::to_owned),
            first_timestamp: first,
            last_timestamp: last,
            messages: s.messages.len(),
            windows: s.windows,
            subagents: s.subagents.len(),
            title: s.title.clone(),
            skipped_lines: s.skipped_lines(),
            subagent_sessions: s
                .subagents
                .iter()
                .map(|a| SubagentSummary {
                    agent_id: a.agent_id.clone(),
                    agent_type: a.agent_type.clone(),
                    messages: a.messages.len(),
                })
                .collect(),
            files: s.files.clone(),
            archived: s.archived,
        }
    }
}

/// One project, as listed by `ghola projects --json`.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectSummary {
    pub project: String,
    pub sessions: usize,
    /// Messages of the main conversations and of subagents.
    pub messages: usize,
    pub last_activity: Option<DateTime<Utc>>,
    pub branches: Vec<String>,
    /// Of its sessions, those read from ghola's archive (Claude Code deleted their transcripts).
    pub archived_sessions: usize,
}

/// Projects with their sessions, most recently active first.
pub fn projects(sessions: &[Session]) -> Vec<ProjectSummary> {
    let mut by: BTreeMap<&str, (ProjectSummary, BTreeSet<String>)> = BTreeMap::new();
    for s in sessions {
        let (p, branches) = by.entry(s.project.as_str()).or_insert_with(|| {
            let summary = ProjectSummary {
                project: s.project.clone(),
                sessions: 0,
                messages: 0,
                last_activity: None,
                branches: Vec::new(),
                archived_sessions: 0,
            };
            (summary, BTreeSet::new())
        });
        p.sessions += 1;
        p.archived_sessions += usize::from(s.archived);
        p.messages += s.all_messages().count();
        p.last_activity = p.last_activity.max(s.time_range().1);
        branches.extend(s.all_messages().filter_map(|m| m.git_branch.clone()));
    }
    let mut out: Vec<ProjectSummary> = by
        .into_values()
        .map(|(mut p, branches)| {
            p.branches = branches.into_iter().collect();
            p
        })
        .collect();
    out.sort_by_key(|p| std::cmp::Reverse(p.last_activity));
    out
}

/// The sessions of a project (its directory or below), or all of them when `project` is `None`.
pub fn sessions_in<'a>(sessions: &'a [Session], project: Option<&str>) -> Vec<&'a Session> {
    sessions
        .iter()
        .filter(|s| project.is_none_or(|p| is_within(&s.project, p)))
        .collect()
}
