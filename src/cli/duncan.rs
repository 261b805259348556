//! `ghola query`: duncan from the command line, a thin adapter over [`ghola::replay::query`].

use anyhow::Result;
use ghola::model::BackendChoice;
use ghola::replay::route::RouteContext;
use ghola::replay::{Mode, QueryRequest};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Arguments of `ghola query` (the same as the `duncan_query` tool's).
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// The question for the past sessions.
    pub question: String,
    /// How windows are chosen: search, session, project, global, branch, ancestors, subagents, self.
    #[arg(long, default_value = "search")]
    pub mode: Mode,
    /// Search (or list) every project instead of the current one.
    #[arg(long)]
    pub global: bool,
    /// Project directory (default: the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "global")]
    pub project: Option<PathBuf>,
    /// Session uuid or unique prefix (mode session).
    #[arg(long)]
    pub session: Option<String>,
    /// Compaction window of that session (default: its latest).
    #[arg(long)]
    pub window: Option<u32>,
    /// Git branch (mode branch; default: the calling session's).
    #[arg(long)]
    pub git_branch: Option<String>,
    /// Windows to ask.
    #[arg(long, default_value_t = 5)]
    pub limit: usize,
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Samples of the calling session (mode self).
    #[arg(long, default_value_t = 3)]
    pub copies: usize,
    /// Windows asked at once.
    #[arg(long, default_value_t = 5)]
    pub batch_size: usize,
    /// Leave subagent transcripts out.
    #[arg(long)]
    pub no_subagents: bool,
    /// Model for every window (default: each window's own).
    #[arg(long)]
    pub model: Option<String>,
    /// auto (the API when ANTHROPIC_API_KEY is set, else headless Claude Code), api or claude-code.
    #[arg(long, default_value = "auto")]
    pub backend: BackendChoice,
    /// The calling session (default: $CLAUDE_CODE_SESSION_ID): its latest window is never asked, except
    /// in mode self.
    #[arg(long, value_name = "SESSION")]
    pub calling_session: Option<String>,
    /// Use the index as it is (no update first; search mode).
    #[arg(long)]
    pub no_update: bool,
    #[arg(long)]
    pub json: bool,
}

/// `ghola query`.
pub fn query_cmd(
    index_dir: &Path,
    claude_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &super::knobs::Knobs,
    a: QueryArgs,
) -> Result<()> {
    let mut req = QueryRequest::new(&a.question);
    req.mode = a.mode;
    req.global = a.global;
    req.project = if a.global {
        None
    } else {
        Some(super::history::project_dir(a.project)?)
    };
    req.session_id = a.session;
    req.window = a.window;
    req.git_branch = a.git_branch;
    req.limit = a.limit;
    req.offset = a.offset;
    req.copies = a.copies;
    req.batch_size = a.batch_size;
    req.include_subagents = !a.no_subagents;
    req.model = a.model;
    req.validate()?;
    let backend = ghola::model::choose(a.backend, claude_dir, &knobs.env)?;
    let embedder = if req.mode == Mode::Search {
        let e = super::recall::obtain_model(model_dir, knobs, true)?;
        if !a.no_update {
            super::recall::run_update(
                index_dir,
                claude_dir,
                Some(&e),
                knobs.update.before_query(),
                true,
            )?;
        }
        Some(e)
    } else {
        None
    };
    let calling = a.calling_session.or_else(|| knobs.env.session_id.clone());
    // A teammate's session (from a team hub hit): replayed from its redacted text.
    let also = if req.mode == Mode::Session {
        ghola::service::HistoryService::new(knobs.history(claude_dir, index_dir, model_dir))
            .hub_replay_files(req.session_id.as_deref())
    } else {
        Vec::new()
    };
    let sources = ghola::index::archive::sources(index_dir);
    let snapshots = ghola::index::SnapshotCache::new(index_dir, knobs.memory_limit);
    let ctx = RouteContext {
        claude_dir,
        snapshots: &snapshots,
        log: knobs.env.duncan_log.as_deref(),
        embedder: embedder.as_ref(),
        calling_session: calling.as_deref(),
        current_project: req.project.as_deref(),
        sources: &sources,
        also: &also,
    };
    let cancel = AtomicBool::new(false);
    let quiet = a.json;
    let report = ghola::replay::query(
        &req,
        &ctx,
        backend.as_ref(),
        &cancel,
        &mut |r, done, total| {
            if !quiet {
                eprintln!(
                    "[{done}/{total}] {} window {}: {}",
                    ghola::transcript::short_id(&r.session_id),
                    r.window,
                    r.status()
                );
            }
        },
    )?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render());
    }
    Ok(())
}
