//! `ghola notes extract`: a project's windows sent with its notes to a model, the findings merged into the notes
//! (or, in a dry run, the prompts shown and nothing sent).

use super::knobs::Knobs;
use anyhow::{Context, Result, bail};
use ghola::notes::Store;
use ghola::notes::extract::{Extractor, Outcome};
use ghola::notes::merge::{Similarity, WordsOnly, similarity};
use std::io::Write;
use std::path::Path;

/// The Claude Code session and the line key of task `n` of the line `name` of `project`.
pub(super) fn task_session(
    store: &Store,
    project: &str,
    n: u32,
    name: Option<String>,
) -> Result<(String, String)> {
    let line = ghola::work::sitting::Line {
        project: project.to_string(),
        name,
    };
    let logs = ghola::work::sitting::task_logs(&line.tasks_dir(store));
    let log = logs
        .iter()
        .find(|(_, l)| l.number == n)
        .map(|(_, l)| l)
        .with_context(|| format!("no task {n} in {}", line.tasks_dir(store).display()))?;
    let s = log
        .session_id
        .clone()
        .with_context(|| format!("task {n} has no Claude Code session"))?;
    Ok((s, line.key()))
}

/// `ghola notes extract`: the project's windows not extracted yet (or one session's), each sent with the notes to
/// the backend (none in a dry run, which shows the prompts), the findings merged; the report printed.
#[allow(clippy::too_many_arguments)]
pub(super) fn extract(
    store: &Store,
    index_dir: &Path,
    claude_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &Knobs,
    project: &str,
    session: Option<String>,
    (dry_run, backend, target): (bool, Option<String>, Option<String>),
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    if let Err(e) = ghola::notes::worker::update_index(index_dir, claude_dir, knobs.update) {
        eprintln!("ghola: index update failed ({e}); extracting from the index as it is");
    }
    let snap = ghola::index::snapshot::Snapshot::open(index_dir)?;
    let sessions: Vec<String> = match session {
        Some(s) => vec![s],
        None => ghola::notes::window::sessions_in(&snap, project),
    };
    let backend: Box<dyn ghola::replay::Backend> = if dry_run {
        Box::new(NoBackend)
    } else {
        let choice = match backend {
            Some(b) => b.parse()?,
            None => knobs.settings.notes_backend,
        };
        ghola::model::choose(choice, claude_dir, &knobs.env).map_err(|e| anyhow::anyhow!("{e}"))?
    };
    let sim: Box<dyn Similarity> = if dry_run {
        Box::new(WordsOnly)
    } else {
        similarity(&knobs.model(model_dir))
    };
    let ex = Extractor {
        dry_run,
        ..Extractor::new(store, backend.as_ref(), sim.as_ref(), &knobs.settings)
    };
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let mut results = Vec::new();
    let mut total_tokens = 0;
    for s in &sessions {
        let windows = ghola::notes::window::windows_of(&snap, s);
        if windows.is_empty() {
            bail!("session {s} is not in the index (see `ghola sessions`)");
        }
        for w in windows {
            let key = target.as_deref().unwrap_or(&w.project);
            let outcome = ex.window(&snap, key, s, w.window, &cancel)?;
            match &outcome {
                Outcome::DryRun { prompts, tokens } => {
                    total_tokens += tokens;
                    if !json {
                        for p in prompts {
                            writeln!(
                                out,
                                "===== {s} window {} (about {tokens} tokens) =====\n{p}",
                                w.window
                            )?;
                        }
                    }
                }
                Outcome::Extracted {
                    added,
                    duplicates,
                    superseded,
                    tokens,
                } => {
                    total_tokens += tokens;
                    if !json {
                        writeln!(
                            out,
                            "{s} window {}: {added} new, {duplicates} duplicate(s), {superseded} superseded, {tokens} tokens",
                            w.window
                        )?;
                    }
                }
                Outcome::NothingNew => {
                    if !json {
                        writeln!(out, "{s} window {}: nothing new to extract", w.window)?;
                    }
                }
                Outcome::BudgetSpent { needed, left } => {
                    if !json {
                        writeln!(
                            out,
                            "{s} window {}: daily token budget spent (needs about {needed}, {left} left); \
                             raise it with `ghola notes on --budget N`",
                            w.window
                        )?;
                    }
                    results.push(
                        serde_json::json!({"session": s, "window": w.window, "result": outcome}),
                    );
                    break;
                }
                Outcome::Failed { error, .. } => {
                    if !json {
                        writeln!(out, "{s} window {}: failed: {error}", w.window)?;
                    }
                }
            }
            results.push(serde_json::json!({"session": s, "window": w.window, "result": outcome}));
        }
    }
    if json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "project": project, "dry_run": dry_run, "tokens": total_tokens, "windows": results
            }))?
        )?;
    } else if dry_run {
        writeln!(
            out,
            "Dry run: nothing sent. About {total_tokens} tokens in all."
        )?;
    }
    Ok(())
}

/// The backend of a dry run: never called.
struct NoBackend;

impl ghola::replay::Backend for NoBackend {
    fn name(&self) -> &'static str {
        "none"
    }
    fn ask(
        &self,
        _: &ghola::model::Prompt,
        _: &std::sync::atomic::AtomicBool,
    ) -> Result<ghola::replay::Answer, ghola::replay::BackendError> {
        Err(ghola::replay::BackendError::Setup("dry run".into()))
    }
    fn call(
        &self,
        _: &ghola::model::ToolCall,
        _: &std::sync::atomic::AtomicBool,
    ) -> Result<ghola::model::ToolAnswer, ghola::replay::BackendError> {
        Err(ghola::replay::BackendError::Setup("dry run".into()))
    }
}
