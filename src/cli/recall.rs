//! `ghola index` and `ghola forget`, thin adapters over the index library calls, and the model and update steps
//! every command that reads the history first takes (`obtain_model`, `run_update`, `run_embedding`).

use super::knobs::Knobs;
use anyhow::{Result, anyhow};
use ghola::embed::Embedder;
use ghola::index::render::Neighbour;
use ghola::index::{self, UpdateOptions, UpdateSummary};
use ghola::search;
use std::io::IsTerminal;
use std::path::Path;

/// A progress bar on stderr when it is a terminal and output is not quiet.
fn bar(quiet: bool, template: &str) -> Option<indicatif::ProgressBar> {
    (!quiet && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(template)
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    })
}

/// Download progress: a byte bar on a terminal, a line per file otherwise.
struct DownloadBar {
    bar: Option<indicatif::ProgressBar>,
    quiet: bool,
}

impl ghola::embed::download::DownloadProgress for DownloadBar {
    fn start(&mut self, file: &str, total: u64) {
        if let Some(b) = &self.bar {
            b.set_length(total);
            b.set_position(0);
            b.set_message(file.to_string());
        } else if !self.quiet {
            eprintln!(
                "ghola: downloading {file} of the embedding model ({:.1} MB, once)",
                total as f64 / 1e6
            );
        }
    }
    fn advance(&mut self, bytes: u64) {
        if let Some(b) = &self.bar {
            b.inc(bytes);
        }
    }
    fn finish(&mut self) {}
}

/// The embedding model, downloaded into the Hugging Face cache first if it is nowhere on this machine (with a
/// progress bar on a terminal).
pub fn obtain_model(model_dir: Option<&Path>, knobs: &Knobs, quiet: bool) -> Result<Embedder> {
    let mut progress = DownloadBar {
        bar: bar(
            quiet,
            "{spinner} downloading {msg} {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        ),
        quiet,
    };
    let e = Embedder::obtain(&knobs.model(model_dir), knobs.embed_kernel, &mut progress);
    if let Some(b) = progress.bar {
        b.finish_and_clear();
    }
    Ok(e?)
}

/// Embeds what the keyword-first pass left (all of it, or nothing when more than `up_to` messages wait), with a
/// progress bar on a terminal. Returns the messages still waiting.
pub fn run_embedding(
    index_dir: &Path,
    embedder: &Embedder,
    neighbour: Neighbour,
    up_to: Option<usize>,
    quiet: bool,
) -> Result<index::EmbedSummary> {
    let waiting = index::messages_waiting(index_dir);
    if waiting == 0 || up_to.is_some_and(|n| waiting > n) {
        return Ok(index::EmbedSummary {
            messages_waiting: waiting,
            ..Default::default()
        });
    }
    let bar = bar(
        quiet,
        "{spinner} embedding {pos}/{len} messages {wide_bar} {per_sec} eta {eta}",
    );
    let mut last_line = std::time::Instant::now();
    let s = index::embed_pending(index_dir, embedder, neighbour, None, &|| false, &mut |p| {
        if let Some(b) = &bar {
            b.set_length(p.messages_total as u64);
            b.set_position(p.messages_done as u64);
        } else if !quiet && last_line.elapsed().as_secs() >= 5 {
            last_line = std::time::Instant::now();
            eprintln!("embedded {}/{} messages", p.messages_done, p.messages_total);
        }
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(s)
}

/// Updates the index with a progress bar on a terminal (plain lines otherwise), returning the summary. Without
/// a model, everything new is stored keyword-only.
pub fn run_update(
    index_dir: &Path,
    claude_dir: &Path,
    embedder: Option<&Embedder>,
    opts: UpdateOptions,
    quiet: bool,
) -> Result<UpdateSummary> {
    let bar = bar(
        quiet,
        "{spinner} indexing {pos}/{len} sessions {wide_bar} {per_sec} eta {eta} {msg}",
    );
    let mut last_line = std::time::Instant::now();
    let mut progress = |p: index::Progress| {
        if let Some(b) = &bar {
            b.set_length(p.sessions_total as u64);
            b.set_position(p.sessions_done as u64);
            b.set_message(format!("{} messages", p.messages_indexed));
        } else if !quiet
            && (last_line.elapsed().as_secs() >= 5 || p.sessions_done == p.sessions_total)
        {
            last_line = std::time::Instant::now();
            eprintln!(
                "indexed {}/{} sessions ({} messages)",
                p.sessions_done, p.sessions_total, p.messages_indexed
            );
        }
    };
    let embedder = embedder.map(|e| e as &dyn index::ChunkEmbedder);
    let summary = index::update_with(index_dir, claude_dir, embedder, opts, &mut progress)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    for p in &summary.set_aside {
        eprintln!(
            "ghola: the index was damaged; it was set aside in {p} and rebuilt from the transcripts"
        );
    }
    if summary.upgraded {
        eprintln!("ghola: the index was upgraded from an older format (nothing re-embedded)");
    }
    Ok(summary)
}

/// What `ghola index --verify` found in the archive.
fn print_verified(s: &UpdateSummary) {
    match &s.archive_damage {
        None => println!(
            "archive verified: {} files read back and checked",
            s.archive_files_verified
        ),
        Some(d) => println!("archive DAMAGED (kept as it is; it may be the only copy): {d}"),
    }
}

/// `ghola index`.
pub fn index_cmd(
    index_dir: &Path,
    claude_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &Knobs,
    no_wait: bool,
    verify: bool,
    json: bool,
) -> Result<()> {
    let opts = UpdateOptions {
        wait: !no_wait,
        verify,
        ..knobs.update
    }
    .words_first();
    let embedder = match obtain_model(model_dir, knobs, json) {
        Ok(e) => e,
        Err(e) => {
            // The history is still made searchable by its words; the error says what to do about the model.
            let s = run_update(index_dir, claude_dir, None, opts, json)?;
            if verify && !json {
                print_verified(&s);
            }
            let waiting = index::messages_waiting(index_dir);
            if waiting == 0 {
                // Nothing new needed the model: the index is whole, and an offline update is not a failure.
                eprintln!("ghola: every message has its vectors; the model was not needed ({e:#})");
                return Ok(());
            }
            return Err(e.context(format!(
                "{waiting} messages are indexed by their words only; run `ghola index` again once the model can be \
                 had"
            )));
        }
    };
    let s = run_update(index_dir, claude_dir, Some(&embedder), opts, json)?;
    let e = run_embedding(index_dir, &embedder, knobs.update.neighbour, None, json)?;
    if verify && !json {
        print_verified(&s);
    }
    if json {
        let mut v = serde_json::to_value(&s)?;
        v["embedding_pass"] = serde_json::to_value(&e)?;
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "files: {} seen, {} read ({:.1} MB) · sessions updated: {} · messages: {} added, {} removed · chunks: {} embedded, {} reused · {} publishes, {} merges · {} · {:.1}s",
            s.files_seen,
            s.files_read,
            s.bytes_read as f64 / 1e6,
            s.sessions_updated,
            s.messages_added,
            s.messages_removed,
            s.chunks_embedded,
            s.chunks_reused,
            s.publishes,
            s.merges,
            if s.lexical_rebuilt {
                "keyword index rebuilt"
            } else if s.files_read == 0 && s.publishes == 0 {
                "nothing changed"
            } else if s.full_update {
                "full update"
            } else {
                "append path"
            },
            s.seconds
        );
        if e.segments > 0 {
            println!(
                "keyword-searchable after {:.1}s; embedding pass: {} messages, {} chunks embedded, {} reused · {:.1}s",
                s.seconds, e.messages, e.chunks_embedded, e.chunks_reused, e.seconds
            );
        }
    }
    Ok(())
}

/// Arguments of `ghola forget`.
#[derive(Debug, clap::Args)]
pub struct ForgetArgs {
    /// Session ids (or unique prefixes).
    pub sessions: Vec<String>,
    /// Every session of this project directory (or below it).
    #[arg(long, value_name = "DIR")]
    pub project: Option<std::path::PathBuf>,
    /// Every session whose last message is before this date (ISO 8601; a date alone is that local day).
    #[arg(long, value_name = "DATE")]
    pub before: Option<String>,
    /// Let a transcript that still exists be indexed again at the next update (also names sessions forgotten
    /// earlier).
    #[arg(long)]
    pub allow_reindex: bool,
    /// Do not ask (needed when stdin is not a terminal).
    #[arg(long, short)]
    pub yes: bool,
    #[arg(long)]
    pub json: bool,
}

/// `ghola forget`: lists what would go, asks on a terminal, then forgets.
pub fn forget_cmd(index_dir: &Path, a: ForgetArgs) -> Result<()> {
    use ghola::index::forget;
    if a.sessions.is_empty() && a.project.is_none() && a.before.is_none() {
        return Err(anyhow!(
            "name what to forget: session ids, --project DIR and/or --before DATE"
        ));
    }
    let sel = forget::Selection {
        sessions: a.sessions.clone(),
        project: a
            .project
            .map(|p| super::history::project_dir(Some(p)))
            .transpose()?,
        before_ms: a
            .before
            .as_deref()
            .map(|s| search::parse_bound(s, "before").map(|t| t.timestamp_millis()))
            .transpose()?,
    };
    let chosen = forget::select(index_dir, &sel, a.allow_reindex)?;
    if chosen.is_empty() {
        if a.json {
            println!(
                "{}",
                serde_json::to_string(&forget::ForgetSummary::default())?
            );
        } else {
            println!("no indexed session matches; nothing forgotten");
        }
        return Ok(());
    }
    if !a.yes {
        if !std::io::stdin().is_terminal() {
            return Err(anyhow!(
                "forget removes {} session(s) for good; confirm with --yes (stdin is not a terminal)",
                chosen.len()
            ));
        }
        for s in &chosen {
            let when = s
                .last_ms
                .and_then(chrono::DateTime::from_timestamp_millis)
                .map_or("?".to_string(), |t| t.format("%Y-%m-%d %H:%M").to_string());
            eprintln!(
                "  {}  {}  {} messages  last {when}",
                s.session_id, s.project, s.messages
            );
        }
        let messages: usize = chosen.iter().map(|s| s.messages).sum();
        if !super::confirm(&format!(
            "Forget these {} session(s), {messages} messages, from the index and the archive, for good?",
            chosen.len()
        ))? {
            eprintln!("nothing forgotten");
            return Ok(());
        }
    }
    let done = forget::forget(index_dir, &chosen, a.allow_reindex)?;
    let ids: Vec<String> = chosen.iter().map(|s| s.session_id.clone()).collect();
    tell_hub_forgotten(index_dir, &ids);
    if a.json {
        println!("{}", serde_json::to_string(&done)?);
    } else {
        println!(
            "forgot {} session(s): {} messages removed, {} segments rewritten, {:.1} KB of archive reclaimed{}",
            done.sessions,
            done.messages_removed,
            done.segments_rewritten,
            done.archive_bytes_reclaimed as f64 / 1e3,
            if done.remembered_as_forgotten {
                "; their transcripts, if Claude Code still has them, will not be indexed again (--allow-reindex to allow it)"
            } else {
                "; a transcript that still exists will be indexed again at the next update"
            }
        );
    }
    Ok(())
}

/// Forgotten sessions leave the team hub too, when this machine is logged in to one (with a tombstone, so that
/// no other machine of this person pushes them back); a hub out of reach hears of it at the next push.
pub fn tell_hub_forgotten(index_dir: &Path, ids: &[String]) {
    match ghola::service::forget_on_hub(index_dir, ids) {
        Ok(None) | Ok(Some(0)) => {}
        Ok(Some(n)) => eprintln!("ghola: {n} of them were removed from the team hub too"),
        Err(e) => eprintln!(
            "ghola: the team hub could not be told ({e}); the next `ghola hub push` removes them there"
        ),
    }
}
