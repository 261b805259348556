//! `ghola files PATH[:LINE[-LINE]]`: the sessions behind a file, and the conversation behind a line.

use super::knobs::Knobs;
use super::recall::run_update;
use anyhow::{Context, Result, anyhow};
use ghola::index::file_map::query::{FileQuery, parse_path_and_lines};
use ghola::service::{self, HistoryService};
use std::path::{Path, PathBuf};

/// Arguments of `ghola files`.
#[derive(Debug, clap::Args)]
pub struct FilesArgs {
    /// The file as you would type it (relative to the current directory, or absolute as recorded, on any OS),
    /// optionally with a line or lines: `src/lib.rs:40`, `src/lib.rs:40-52`.
    pub path: String,
    /// Only sessions of this project directory (or below it).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Sessions to list, newest first (1-100).
    #[arg(long, default_value_t = service::FILE_SESSIONS)]
    pub limit: usize,
    /// Changes to list per session.
    #[arg(long, default_value_t = service::FILE_CHANGES)]
    pub changes: usize,
    /// Answer from the index as it is, without reading what Claude Code wrote since.
    #[arg(long)]
    pub no_update: bool,
    #[arg(long)]
    pub json: bool,
}

/// Runs `ghola files`.
pub fn files_cmd(index_dir: &Path, claude_dir: &Path, knobs: &Knobs, a: FilesArgs) -> Result<()> {
    let (path, lines) = parse_path_and_lines(&a.path).map_err(|e| anyhow!(e))?;
    let q = FileQuery {
        path,
        lines,
        base: std::env::current_dir().ok(),
        project: a
            .project
            .map(|p| super::history::project_dir(Some(p)))
            .transpose()?,
        max_sessions: a.limit,
        max_changes: a.changes.max(1),
    };
    if !(1..=service::MAX_FILE_SESSIONS).contains(&q.max_sessions) {
        return Err(anyhow!(
            "--limit must be between 1 and {}",
            service::MAX_FILE_SESSIONS
        ));
    }
    if !a.no_update {
        // Words only: what Claude Code wrote since is in the file map as soon as it is read.
        run_update(
            index_dir,
            claude_dir,
            None,
            knobs.update.before_query().words_first(),
            true,
        )
        .context("updating the index (use --no-update to skip)")?;
    }
    let history = HistoryService::new(knobs.history(claude_dir, index_dir, None));
    let h = history.file_history(&q).map_err(|e| anyhow!(e))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&h)?);
    } else {
        print!("{}", service::file_history_text(&h, usize::MAX, false));
    }
    Ok(())
}
