//! Which windows a question goes to: the routing modes of `duncan_query`.

use super::conversation::{Source, window_count};
use super::run::QueryRequest;
use crate::embed::Embedder;
use crate::index::SnapshotCache;
use crate::search::{self, SearchParams};
use crate::transcript::{self, SessionFiles, Sources, is_within, resolve_session_id};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// How targets are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The distinct windows behind the top hits of a hybrid search for the question (the default).
    #[default]
    Search,
    /// One session (`session_id`, optionally `window`).
    Session,
    /// The project's sessions, newest first.
    Project,
    /// Every project's sessions, newest first.
    Global,
    /// Sessions of one git branch.
    Branch,
    /// The calling session's own compacted windows.
    Ancestors,
    /// The calling session's subagent transcripts.
    Subagents,
    /// Samples of the calling session's latest window.
    #[serde(rename = "self")]
    SelfCopies,
}

impl Mode {
    /// Every mode's name, for help texts and error messages.
    pub const NAMES: &'static [&'static str] = &[
        "search",
        "session",
        "project",
        "global",
        "branch",
        "ancestors",
        "subagents",
        "self",
    ];

    /// The name used in arguments and the query log.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Search => "search",
            Mode::Session => "session",
            Mode::Project => "project",
            Mode::Global => "global",
            Mode::Branch => "branch",
            Mode::Ancestors => "ancestors",
            Mode::Subagents => "subagents",
            Mode::SelfCopies => "self",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = crate::config::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mode::NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(s.trim()))
            .map(|i| {
                [
                    Mode::Search,
                    Mode::Session,
                    Mode::Project,
                    Mode::Global,
                    Mode::Branch,
                    Mode::Ancestors,
                    Mode::Subagents,
                    Mode::SelfCopies,
                ][i]
            })
            .ok_or_else(|| crate::config::UnknownName::new("mode", s, Mode::NAMES))
    }
}

/// Why a question could not be routed or asked.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A request argument is missing, out of range or unknown; `arg` names it.
    #[error("{message}")]
    Invalid { arg: &'static str, message: String },
    /// The session asked for cannot be replayed (no transcript yet, only subagents).
    #[error("{0}")]
    Session(String),
    /// The session id matches none or several sessions.
    #[error(transparent)]
    Lookup(#[from] crate::transcript::LookupError),
    /// The search mode needs the index.
    #[error("the index cannot be opened ({0}); run `ghola index`")]
    Index(crate::index::IndexError),
    #[error(transparent)]
    Search(#[from] search::SearchError),
}

/// What kind of window a target is, for the output and the query log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowType {
    /// A session's latest window.
    Current,
    /// A window that a later compaction replaced with a summary.
    Compacted,
    /// A subagent's transcript.
    Subagent,
    /// A copy of the calling session's latest window (`self` mode).
    #[serde(rename = "self")]
    SelfCopy,
}

/// One window to ask.
#[derive(Debug, Clone)]
pub struct Target {
    pub session_id: String,
    /// `None` means the file's latest window.
    pub window: Option<u32>,
    pub agent_id: Option<String>,
    pub source: Source,
    pub project: String,
    pub subagent: bool,
    pub self_copy: bool,
    /// Rank and score of the best search hit in this window (`search` mode).
    pub search_rank: Option<usize>,
    pub search_score: Option<f32>,
}

/// What routing may look at.
pub struct RouteContext<'a> {
    pub claude_dir: &'a Path,
    /// The index `search` mode reads, kept open by the caller between calls.
    pub snapshots: &'a SnapshotCache,
    /// Needed for the semantic half of `search` mode; without it the search is lexical.
    pub embedder: Option<&'a Embedder>,
    /// The calling session (`CLAUDE_CODE_SESSION_ID`).
    pub calling_session: Option<&'a str>,
    /// The current project (`CLAUDE_PROJECT_DIR`, else the cwd).
    pub current_project: Option<&'a str>,
    /// Where the query log goes (`$DUNCAN_LOG`, read at the top); `None`: `duncan.jsonl` in the Claude dir.
    pub log: Option<&'a Path>,
    /// Where transcript bytes come from (the disk, and the archive of the index dir).
    pub sources: &'a Sources,
}

fn source_of(src: &Sources, files: &SessionFiles) -> Option<Source> {
    Some(Source {
        session_id: files.session_id.clone(),
        path: files.main.clone()?,
        tool_results_dir: Some(tool_results_dir(files)),
        sources: src.clone(),
    })
}

fn tool_results_dir(files: &SessionFiles) -> PathBuf {
    files
        .project_dir
        .join(&files.session_id)
        .join("tool-results")
}

fn subagent_source(src: &Sources, files: &SessionFiles, agent_id: &str) -> Option<Source> {
    let sub = files.subagents.iter().find(|s| s.agent_id == agent_id)?;
    Some(Source {
        session_id: files.session_id.clone(),
        path: sub.path.clone(),
        tool_results_dir: Some(tool_results_dir(files)),
        sources: src.clone(),
    })
}

fn target(
    src: &Sources,
    files: &SessionFiles,
    project: &str,
    window: Option<u32>,
) -> Option<Target> {
    Some(Target {
        session_id: files.session_id.clone(),
        window,
        agent_id: None,
        source: source_of(src, files)?,
        project: project.to_string(),
        subagent: false,
        self_copy: false,
        search_rank: None,
        search_score: None,
    })
}

/// Pages of search hits the search mode reads at most, looking for `offset + limit` distinct windows.
const SEARCH_PAGES: usize = 5;

/// Chooses the targets of a question; notes say what was skipped and why.
pub fn route(
    req: &QueryRequest,
    ctx: &RouteContext,
) -> Result<(Vec<Target>, Vec<String>), ReplayError> {
    let found = ctx.sources.discover_all(ctx.claude_dir);
    let by_id: HashMap<&str, &SessionFiles> = found
        .sessions
        .iter()
        .map(|s| (s.session_id.as_str(), s))
        .collect();
    let mut notes = Vec::new();
    let calling = || {
        let id = ctx.calling_session.ok_or_else(|| ReplayError::Invalid {
            arg: "calling_session",
            message: format!(
                "mode '{}' needs the calling session (CLAUDE_CODE_SESSION_ID), which is not set",
                req.mode.as_str()
            ),
        })?;
        by_id.get(id).copied().filter(|f| f.main.is_some()).ok_or_else(|| {
            ReplayError::Session(format!(
                "the calling session {id} has no transcript yet (its first turn is still running)"
            ))
        })
    };
    let page = |v: Vec<Target>| -> Vec<Target> {
        v.into_iter().skip(req.offset).take(req.limit).collect()
    };
    let project_scope = || -> Option<String> {
        if req.global {
            None
        } else {
            req.project
                .clone()
                .or_else(|| ctx.current_project.map(str::to_owned))
        }
    };
    let targets = match req.mode {
        super::Mode::Search => {
            let snap = ctx.snapshots.get().map_err(ReplayError::Index)?;
            let mut p = SearchParams::new(&req.question);
            p.project = project_scope();
            p.context = 0;
            p.include_subagents = req.include_subagents;
            p.exclude_session = ctx.calling_session.map(str::to_owned);
            if ctx.embedder.is_none() {
                p.fusion = search::Fusion::Lexical;
                notes.push("the embedding model is not loaded: the search was lexical only".into());
            }
            // Several hits often share a window: the search is read in pages (at most the search's own limit
            // each) until the windows asked for are found or the hits run out.
            let wanted = req.offset + req.limit;
            p.max_results = search::MAX_RESULTS;
            let mut hits = Vec::new();
            let mut windows = HashSet::new();
            let mut total_messages = 0;
            for _ in 0..SEARCH_PAGES {
                let resp = search::search(&snap, ctx.embedder, &p)?;
                total_messages = resp.index.messages;
                for hit in &resp.results {
                    let m = &hit.matched_message;
                    windows.insert((m.session_id.clone(), m.agent_id.clone(), m.window));
                }
                // A page the response bound cut short continues where it was cut.
                let (more, got) = (resp.has_more, resp.results.len());
                hits.extend(resp.results);
                if !more || got == 0 || windows.len() >= wanted {
                    break;
                }
                p.offset += got;
            }
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for (rank, hit) in hits.iter().enumerate() {
                let m = &hit.matched_message;
                // Inline (1.0.x) subagents live in the main file: their window is the parent's.
                let agent = m.agent_id.clone().filter(|a| !a.starts_with("sidechain-"));
                if !seen.insert((m.session_id.clone(), agent.clone(), m.window)) {
                    continue;
                }
                let Some(files) = by_id.get(m.session_id.as_str()) else {
                    notes.push(format!(
                        "session {} is indexed but its transcript is gone (Claude Code deletes old ones); skipped",
                        m.session_id
                    ));
                    continue;
                };
                let (source, window, subagent) = match &agent {
                    Some(a) => match subagent_source(ctx.sources, files, a) {
                        Some(s) => (s, None, true),
                        None => continue,
                    },
                    None => match source_of(ctx.sources, files) {
                        Some(s) => (s, Some(m.window), false),
                        None => continue,
                    },
                };
                out.push(Target {
                    session_id: m.session_id.clone(),
                    window,
                    agent_id: agent,
                    source,
                    project: m.project.clone(),
                    subagent,
                    self_copy: false,
                    search_rank: Some(rank + 1),
                    search_score: Some(hit.score),
                });
            }
            if out.is_empty() {
                notes.push(format!(
                    "the search found no window for this question ({total_messages} messages indexed)"
                ));
            }
            page(out)
        }
        super::Mode::Session => {
            let asked = req
                .session_id
                .as_deref()
                .ok_or_else(|| ReplayError::Invalid {
                    arg: "session_id",
                    message: "mode 'session' needs session_id".into(),
                })?;
            let id = resolve_session_id(asked, by_id.keys().copied())?;
            let files = by_id[id];
            let latest = latest_window(ctx.sources, files);
            if Some(id) == ctx.calling_session && req.window.is_none_or(|w| w == latest) {
                return Err(ReplayError::Invalid {
                    arg: "window",
                    message: "that is the calling session's current window, which the model already has; \
                              use mode 'self' to sample it or give an earlier window"
                        .into(),
                });
            }
            let project = load_project(ctx.sources, files);
            vec![
                target(ctx.sources, files, &project, req.window).ok_or_else(|| {
                    ReplayError::Session(format!(
                        "session {id} has only subagent transcripts; nothing to replay"
                    ))
                })?,
            ]
        }
        super::Mode::Project | super::Mode::Global | super::Mode::Branch => {
            // From the listing (sessions read again only when their files changed), newest first.
            let listing = transcript::catalog::Listing::of_discovery(
                ctx.sources,
                found.clone(),
                Some(&ctx.snapshots.dir().join(transcript::catalog::CACHE_FILE)),
                None,
            );
            let sessions: Vec<&transcript::catalog::SessionSummary> =
                listing.sessions.iter().map(|l| &l.summary).collect();
            let scope = if req.mode == super::Mode::Global {
                None
            } else {
                project_scope()
            };
            let branch = if req.mode == super::Mode::Branch {
                let b = req.git_branch.clone().or_else(|| {
                    let id = ctx.calling_session?;
                    sessions
                        .iter()
                        .find(|s| s.session_id == id)
                        .and_then(|s| s.git_branch.clone())
                });
                Some(b.ok_or_else(|| ReplayError::Invalid {
                    arg: "git_branch",
                    message: "mode 'branch' needs git_branch (or a calling session whose branch is known)"
                        .into(),
                })?)
            } else {
                None
            };
            let mut out = Vec::new();
            for s in &sessions {
                if Some(s.session_id.as_str()) == ctx.calling_session
                    || scope.as_deref().is_some_and(|p| !is_within(&s.project, p))
                    || branch
                        .as_deref()
                        .is_some_and(|b| s.git_branch.as_deref() != Some(b))
                    || s.messages == 0
                {
                    continue;
                }
                if let Some(files) = by_id.get(s.session_id.as_str())
                    && let Some(t) = target(ctx.sources, files, &s.project, None)
                {
                    out.push(t);
                }
            }
            page(out)
        }
        super::Mode::Ancestors => {
            let files = calling()?;
            let latest = latest_window(ctx.sources, files);
            if latest == 0 {
                notes.push(
                    "the calling session has not been compacted: it has no earlier windows".into(),
                );
            }
            let project = load_project(ctx.sources, files);
            page(
                (0..latest)
                    .rev()
                    .filter_map(|w| target(ctx.sources, files, &project, Some(w)))
                    .collect(),
            )
        }
        super::Mode::Subagents => {
            let files = calling()?;
            let project = load_project(ctx.sources, files);
            let mut subs: Vec<_> = files.subagents.iter().collect();
            subs.sort_by_key(|s| {
                std::cmp::Reverse(std::fs::metadata(&s.path).and_then(|m| m.modified()).ok())
            });
            page(
                subs.iter()
                    .filter_map(|s| {
                        Some(Target {
                            agent_id: Some(s.agent_id.clone()),
                            source: subagent_source(ctx.sources, files, &s.agent_id)?,
                            subagent: true,
                            ..target(ctx.sources, files, &project, None)?
                        })
                    })
                    .collect(),
            )
        }
        super::Mode::SelfCopies => {
            let files = calling()?;
            let project = load_project(ctx.sources, files);
            let t = target(ctx.sources, files, &project, None).ok_or_else(|| {
                ReplayError::Session("the calling session has no transcript".into())
            })?;
            (0..req.copies)
                .map(|_| Target {
                    self_copy: true,
                    ..t.clone()
                })
                .collect()
        }
    };
    // Several hits of one vanished session would say the same thing once each: say it once.
    let mut said = HashSet::new();
    notes.retain(|n| said.insert(n.clone()));
    Ok((targets, notes))
}

/// The last compaction window of a session's main transcript (0 without one or before any compaction).
fn latest_window(src: &Sources, files: &SessionFiles) -> u32 {
    files
        .main
        .as_deref()
        .map_or(1, |p| window_count(src, p))
        .saturating_sub(1)
}

/// The project (start cwd) of a session, from its first entry that records one.
fn load_project(src: &Sources, files: &SessionFiles) -> String {
    transcript::load_session(src, files).project
}
