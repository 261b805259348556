//! Which windows a question goes to: the routing modes of `duncan_query`.

use super::run::QueryRequest;
use crate::embed::Embedder;
use crate::index::SnapshotCache;
use crate::model::conversation::{Source, window_count};
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
    /// Sessions found elsewhere, as transcripts written for the replay: a team hub's, from their redacted text
    /// (`HistoryService::hub_replay_files`). A session of this machine's with the same id wins.
    pub also: &'a [SessionFiles],
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
    let mut by_id: HashMap<&str, &SessionFiles> = ctx
        .also
        .iter()
        .map(|s| (s.session_id.as_str(), s))
        .collect();
    by_id.extend(found.sessions.iter().map(|s| (s.session_id.as_str(), s)));
    let mut r = Routing {
        req,
        ctx,
        by_id,
        found: &found,
        notes: Vec::new(),
    };
    let targets = match req.mode {
        super::Mode::Search => r.by_search()?,
        super::Mode::Session => r.one_session()?,
        super::Mode::Project | super::Mode::Global | super::Mode::Branch => r.listed()?,
        super::Mode::Ancestors => r.ancestors()?,
        super::Mode::Subagents => r.subagents()?,
        super::Mode::SelfCopies => r.self_copies()?,
    };
    // Several hits of one vanished session would say the same thing once each: say it once.
    let mut notes = r.notes;
    let mut said = HashSet::new();
    notes.retain(|n| said.insert(n.clone()));
    Ok((targets, notes))
}

/// One routing: the request, what it may look at, the sessions found, and the notes said so far.
struct Routing<'a> {
    req: &'a QueryRequest,
    ctx: &'a RouteContext<'a>,
    found: &'a transcript::Discovery,
    by_id: HashMap<&'a str, &'a SessionFiles>,
    notes: Vec<String>,
}

impl<'a> Routing<'a> {
    /// The calling session's files (modes about the caller's own session need it).
    fn calling(&self) -> Result<&'a SessionFiles, ReplayError> {
        let id = self.ctx.calling_session.ok_or_else(|| ReplayError::Invalid {
            arg: "calling_session",
            message: format!(
                "mode '{}' needs the calling session (CLAUDE_CODE_SESSION_ID), which is not set",
                self.req.mode.as_str()
            ),
        })?;
        self.by_id
            .get(id)
            .copied()
            .filter(|f| f.main.is_some())
            .ok_or_else(|| {
                ReplayError::Session(format!(
                    "the calling session {id} has no transcript yet (its first turn is still running)"
                ))
            })
    }

    /// The page of `v` the request asks for.
    fn page(&self, v: Vec<Target>) -> Vec<Target> {
        v.into_iter()
            .skip(self.req.offset)
            .take(self.req.limit)
            .collect()
    }

    /// The project the request is about (`None`: every project).
    fn project_scope(&self) -> Option<String> {
        if self.req.global {
            None
        } else {
            self.req
                .project
                .clone()
                .or_else(|| self.ctx.current_project.map(str::to_owned))
        }
    }

    /// Mode `search`: the windows behind the top hits, best first.
    fn by_search(&mut self) -> Result<Vec<Target>, ReplayError> {
        let (req, ctx) = (self.req, self.ctx);
        let snap = ctx.snapshots.get().map_err(ReplayError::Index)?;
        let mut p = SearchParams::new(&req.question);
        p.project = self.project_scope();
        p.context = 0;
        p.include_subagents = req.include_subagents;
        p.exclude_session = ctx.calling_session.map(str::to_owned);
        if ctx.embedder.is_none() {
            p.fusion = search::Fusion::Lexical;
            self.notes
                .push("the embedding model is not loaded: the search was lexical only".into());
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
        let out = self.windows_of_hits(&hits);
        if out.is_empty() {
            self.notes.push(format!(
                "the search found no window for this question ({total_messages} messages indexed)"
            ));
        }
        Ok(self.page(out))
    }

    /// One target per window among `hits` (in their order), skipping sessions whose transcript is gone.
    fn windows_of_hits(&mut self, hits: &[search::SearchHit]) -> Vec<Target> {
        let src = self.ctx.sources;
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for (rank, hit) in hits.iter().enumerate() {
            let m = &hit.matched_message;
            // Inline (1.0.x) subagents live in the main file: their window is the parent's.
            let agent = m.agent_id.clone().filter(|a| !a.starts_with("sidechain-"));
            if !seen.insert((m.session_id.clone(), agent.clone(), m.window)) {
                continue;
            }
            let Some(files) = self.by_id.get(m.session_id.as_str()) else {
                self.notes.push(format!(
                    "session {} is indexed but its transcript is gone (Claude Code deletes old ones); skipped",
                    m.session_id
                ));
                continue;
            };
            let (source, window, subagent) = match &agent {
                Some(a) => match subagent_source(src, files, a) {
                    Some(s) => (s, None, true),
                    None => continue,
                },
                None => match source_of(src, files) {
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
        out
    }

    /// Mode `session`: one window of one session (never the caller's current one).
    fn one_session(&self) -> Result<Vec<Target>, ReplayError> {
        let (req, ctx) = (self.req, self.ctx);
        let asked = req
            .session_id
            .as_deref()
            .ok_or_else(|| ReplayError::Invalid {
                arg: "session_id",
                message: "mode 'session' needs session_id".into(),
            })?;
        let id = resolve_session_id(asked, self.by_id.keys().copied())?;
        let files = self.by_id[id];
        let latest = latest_window(ctx.sources, files);
        if Some(id) == ctx.calling_session && req.window.is_none_or(|w| w == latest) {
            return Err(ReplayError::Invalid {
                arg: "window",
                message:
                    "that is the calling session's current window, which the model already has; \
                          use mode 'self' to sample it or give an earlier window"
                        .into(),
            });
        }
        let project = load_project(ctx.sources, files);
        Ok(vec![
            target(ctx.sources, files, &project, req.window).ok_or_else(|| {
                ReplayError::Session(format!(
                    "session {id} has only subagent transcripts; nothing to replay"
                ))
            })?,
        ])
    }

    /// Modes `project`, `global` and `branch`: sessions from the listing, newest first.
    fn listed(&self) -> Result<Vec<Target>, ReplayError> {
        let (req, ctx) = (self.req, self.ctx);
        // Sessions are read again only when their files changed.
        let listing = transcript::catalog::Listing::of_discovery(
            ctx.sources,
            self.found.clone(),
            Some(&ctx.snapshots.dir().join(transcript::catalog::CACHE_FILE)),
            None,
        );
        let sessions: Vec<&transcript::catalog::SessionSummary> =
            listing.sessions.iter().map(|l| &l.summary).collect();
        let scope = if req.mode == super::Mode::Global {
            None
        } else {
            self.project_scope()
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
            if let Some(files) = self.by_id.get(s.session_id.as_str())
                && let Some(t) = target(ctx.sources, files, &s.project, None)
            {
                out.push(t);
            }
        }
        Ok(self.page(out))
    }

    /// Mode `ancestors`: the calling session's compacted windows, latest first.
    fn ancestors(&mut self) -> Result<Vec<Target>, ReplayError> {
        let src = self.ctx.sources;
        let files = self.calling()?;
        let latest = latest_window(src, files);
        if latest == 0 {
            self.notes.push(
                "the calling session has not been compacted: it has no earlier windows".into(),
            );
        }
        let project = load_project(src, files);
        Ok(self.page(
            (0..latest)
                .rev()
                .filter_map(|w| target(src, files, &project, Some(w)))
                .collect(),
        ))
    }

    /// Mode `subagents`: the calling session's subagents, most recently written first.
    fn subagents(&self) -> Result<Vec<Target>, ReplayError> {
        let src = self.ctx.sources;
        let files = self.calling()?;
        let project = load_project(src, files);
        let mut subs: Vec<_> = files.subagents.iter().collect();
        subs.sort_by_key(|s| {
            std::cmp::Reverse(std::fs::metadata(&s.path).and_then(|m| m.modified()).ok())
        });
        Ok(self.page(
            subs.iter()
                .filter_map(|s| {
                    Some(Target {
                        agent_id: Some(s.agent_id.clone()),
                        source: subagent_source(src, files, &s.agent_id)?,
                        subagent: true,
                        ..target(src, files, &project, None)?
                    })
                })
                .collect(),
        ))
    }

    /// Mode `self`: copies of the calling session's current window.
    fn self_copies(&self) -> Result<Vec<Target>, ReplayError> {
        let src = self.ctx.sources;
        let files = self.calling()?;
        let project = load_project(src, files);
        let t = target(src, files, &project, None)
            .ok_or_else(|| ReplayError::Session("the calling session has no transcript".into()))?;
        Ok((0..self.req.copies)
            .map(|_| Target {
                self_copy: true,
                ..t.clone()
            })
            .collect())
    }
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
