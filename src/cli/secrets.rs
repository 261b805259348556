//! `ghola secrets`: what credentials ghola holds (a report that never prints a value), and `ghola secrets
//! redact`, which scrubs ghola's own stored copies of them for good.

use super::history::project_dir;
use super::knobs::Knobs;
use anyhow::{Result, anyhow};
use clap::{Args, Subcommand};
use ghola::index::scrub::{self, ScrubSummary};
use ghola::secrets::Tally;
use ghola::transcript::{self, credentials::Found};
use rayon::prelude::*;
use serde_json::json;
use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// `ghola secrets`.
#[derive(Debug, Args)]
pub struct SecretsArgs {
    #[command(subcommand)]
    pub action: Option<SecretsAction>,
    /// Only sessions started in this directory or below it (default: every project).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What `ghola secrets` can do besides reporting.
#[derive(Debug, Subcommand)]
pub enum SecretsAction {
    /// Scrub ghola's own copies for good: the archive's bytes, the index's rows, lexical postings and vectors
    /// (re-embedded from the redacted text), and the notes. Claude Code's own transcripts are never edited.
    Redact(RedactArgs),
}

/// `ghola secrets redact`.
#[derive(Debug, Args)]
pub struct RedactArgs {
    /// Only these sessions (ids or unique prefixes).
    #[arg(long = "session", value_name = "ID")]
    pub sessions: Vec<String>,
    /// Only the sessions of this project directory (or below it).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Every session (and the notes).
    #[arg(long)]
    pub all: bool,
    /// Say what would be scrubbed; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask (needed when stdin is not a terminal).
    #[arg(long, short)]
    pub yes: bool,
    #[arg(long)]
    pub json: bool,
}

/// `ghola secrets [redact]`.
pub fn secrets_cmd(
    claude_dir: &Path,
    index_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &Knobs,
    args: SecretsArgs,
) -> Result<()> {
    match args.action {
        Some(SecretsAction::Redact(r)) => redact_cmd(claude_dir, index_dir, model_dir, knobs, r),
        None => report_cmd(claude_dir, index_dir, args.project, args.json),
    }
}

/// The report: every credential found in the history ghola reads (Claude Code's transcripts and ghola's
/// archive), newest first, with totals per rule and per project.
fn report_cmd(
    claude_dir: &Path,
    index_dir: &Path,
    project: Option<PathBuf>,
    as_json: bool,
) -> Result<()> {
    let within = project.map(|p| project_dir(Some(p))).transpose()?;
    let sources = ghola::index::archive::sources(index_dir).revealing();
    let found = sources.discover_all(claude_dir);
    let mut findings: Vec<Found> = found
        .sessions
        .par_iter()
        .flat_map_iter(|s| transcript::credentials::find_in_session(&sources, s))
        .filter(|f| {
            within
                .as_deref()
                .is_none_or(|dir| transcript::is_within(&f.project, dir))
        })
        .collect();
    findings.sort_by(|a, b| {
        b.timestamp
            .cmp(&a.timestamp)
            .then_with(|| a.session_id.cmp(&b.session_id))
    });
    let mut by_rule: BTreeMap<&str, u64> = BTreeMap::new();
    let mut by_project: BTreeMap<&str, u64> = BTreeMap::new();
    for f in &findings {
        *by_rule.entry(f.rule).or_default() += 1;
        *by_project.entry(f.project.as_str()).or_default() += 1;
    }
    let sessions: std::collections::HashSet<&str> =
        findings.iter().map(|f| f.session_id.as_str()).collect();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if as_json {
        serde_json::to_writer_pretty(
            &mut out,
            &json!({"findings": findings, "total": findings.len(), "sessions": sessions.len(),
                    "sessions_read": found.sessions.len(),
                    "by_rule": by_rule, "by_project": by_project}),
        )?;
        writeln!(out)?;
        return Ok(());
    }
    if findings.is_empty() {
        writeln!(
            out,
            "No credentials found in {} session(s) of {}.",
            found.sessions.len(),
            claude_dir.display()
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "{} credential(s) in {} session(s). ghola shows each as [REDACTED:<rule>] in search, show, the browser, \
         MCP and duncan's replays.",
        findings.len(),
        sessions.len()
    )?;
    writeln!(out, "\nBy rule:")?;
    for (rule, n) in &by_rule {
        writeln!(out, "  {rule:<28} {n}")?;
    }
    writeln!(out, "\nBy project:")?;
    for (project, n) in &by_project {
        writeln!(out, "  {project}  {n}")?;
    }
    writeln!(out, "\nFindings (newest first):")?;
    for f in &findings {
        writeln!(
            out,
            "  {}  {}  {}  {:<28} {}  ({}{})",
            f.timestamp
                .as_deref()
                .map_or("-", |t| t.get(..16).unwrap_or(t)),
            transcript::short_id(&f.session_id),
            f.message_uuid.as_deref().map_or("-", transcript::short_id),
            f.rule,
            f.preview,
            f.place,
            f.agent_id
                .as_deref()
                .map(|a| format!(", subagent {a}"))
                .unwrap_or_default()
        )?;
    }
    writeln!(
        out,
        "\nThe originals stay in Claude Code's transcripts (under {}) and in ghola's archive ({}); \
         `ghola show SESSION --reveal` shows them on your terminal.",
        claude_dir.join("projects").display(),
        index_dir.join("archive").display()
    )?;
    Ok(())
}

/// `ghola secrets redact`: finds what ghola's copies of the chosen sessions hold, asks, scrubs the archive and
/// drops the sessions whose index rows hold a value, then updates the index (which reads them again, redacted)
/// and scrubs the notes. Logs counts per rule (never values) to `<index>/secrets.log`.
fn redact_cmd(
    claude_dir: &Path,
    index_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &Knobs,
    a: RedactArgs,
) -> Result<()> {
    let scoped =
        usize::from(!a.sessions.is_empty()) + usize::from(a.project.is_some()) + usize::from(a.all);
    if scoped != 1 {
        return Err(anyhow!(
            "say what to scrub: --session ID (one or more), --project DIR or --all"
        ));
    }
    let chosen: Option<HashSet<String>> = if a.all {
        None
    } else {
        let sel = ghola::index::forget::Selection {
            sessions: a.sessions.clone(),
            project: a
                .project
                .clone()
                .map(|p| project_dir(Some(p)))
                .transpose()?,
            before_ms: None,
        };
        Some(
            ghola::index::forget::select(index_dir, &sel, false)?
                .into_iter()
                .map(|s| s.session_id)
                .collect(),
        )
    };
    let plan = scrub::scrub(index_dir, chosen.as_ref(), true)?;
    let notes_root = ghola::config::notes_dir();
    if a.dry_run || plan.sessions == 0 {
        return say_plan(&plan, a.json);
    }
    if !a.yes {
        if !std::io::stdin().is_terminal() {
            return Err(anyhow!(
                "redact overwrites {} credential(s) in ghola's copies of {} session(s) for good; confirm with \
                 --yes (stdin is not a terminal)",
                plan.archive.total().max(plan.index.total()),
                plan.sessions
            ));
        }
        say_plan(&plan, false)?;
        if !super::confirm("Scrub them from ghola's archive and index, for good?")? {
            eprintln!("nothing changed");
            return Ok(());
        }
    }
    let done = scrub::scrub(index_dir, chosen.as_ref(), false)?;
    // The dropped sessions come back from their transcripts (or their scrubbed archived copies), redacted.
    let opts = ghola::index::UpdateOptions {
        wait: true,
        ..knobs.update
    }
    .words_first();
    match super::recall::obtain_model(model_dir, knobs, true) {
        Ok(e) => {
            super::recall::run_update(index_dir, claude_dir, Some(&e), opts, true)?;
            super::recall::run_embedding(index_dir, &e, knobs.update.neighbour, None, true)?;
        }
        Err(err) => {
            tracing::warn!(
                "{err:#}: the scrubbed sessions are searchable by their words until `ghola index`"
            );
            super::recall::run_update(index_dir, claude_dir, None, opts, true)?;
        }
    }
    let notes = if a.all {
        ghola::notes::store::redact_all(&notes_root)?
    } else {
        Tally::default()
    };
    let originals = originals_on_disk(claude_dir, &done);
    log(index_dir, &a, &done, &notes)?;
    if a.json {
        let mut v = serde_json::to_value(&done)?;
        v["notes"] = serde_json::to_value(&notes)?;
        v["originals_in_claude_transcripts"] = json!(originals);
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "scrubbed {} credential(s) from {} archived file(s) and {} from the index ({} session(s) read again, {} \
         messages); {} from the notes",
        done.archive.total(),
        done.archive_files,
        done.index.total(),
        done.sessions_to_reindex.len(),
        done.messages_removed,
        notes.total()
    );
    if originals > 0 {
        println!(
            "{originals} of these sessions' transcripts under {} still hold them: those are Claude Code's own files, \
             which ghola never edits (Claude Code deletes them after `cleanupPeriodDays`, 30 days by default).",
            claude_dir.join("projects").display()
        );
    }
    Ok(())
}

/// Prints what a scrub would do (or found nothing to do).
fn say_plan(plan: &ScrubSummary, as_json: bool) -> Result<()> {
    if as_json {
        println!("{}", serde_json::to_string_pretty(plan)?);
        return Ok(());
    }
    if plan.sessions == 0 {
        println!("ghola's copies of these sessions hold no credential: nothing to scrub.");
        return Ok(());
    }
    let mut by_rule = plan.archive.clone();
    for (rule, n) in &plan.index.0 {
        let e = by_rule.0.entry(rule.clone()).or_default();
        *e = (*e).max(*n);
    }
    println!(
        "{} session(s): {} credential(s) in the archive, {} in the index ({} session(s) to read again){}",
        plan.sessions,
        plan.archive.total(),
        plan.index.total(),
        plan.sessions_to_reindex.len(),
        if plan.dry_run {
            " — dry run, nothing changed"
        } else {
            ""
        }
    );
    for (rule, n) in &by_rule.0 {
        println!("  {rule:<28} {n}");
    }
    Ok(())
}

/// Sessions among those scrubbed whose transcripts on disk (Claude Code's) still hold a credential.
fn originals_on_disk(claude_dir: &Path, done: &ScrubSummary) -> usize {
    let found = transcript::Sources::disk().discover_all(claude_dir);
    let scrubbed: HashSet<&str> = done.session_ids.iter().map(String::as_str).collect();
    found
        .sessions
        .par_iter()
        .filter(|s| scrubbed.contains(s.session_id.as_str()))
        .filter(|s| {
            !transcript::credentials::find_in_session(&transcript::Sources::disk(), s).is_empty()
        })
        .count()
}

/// Appends what a scrub did to `<index>/secrets.log`: counts per rule, never values.
fn log(index_dir: &Path, a: &RedactArgs, done: &ScrubSummary, notes: &Tally) -> Result<()> {
    let scope = if a.all {
        "all".to_string()
    } else if let Some(p) = &a.project {
        format!("project {}", p.display())
    } else {
        format!("sessions {}", a.sessions.join(","))
    };
    let line = json!({"at": chrono::Utc::now().to_rfc3339(), "scope": scope, "archive": done.archive,
        "archive_files": done.archive_files, "index": done.index, "notes": notes,
        "sessions_read_again": done.sessions_to_reindex.len(), "messages_removed": done.messages_removed});
    let path = index_dir.join("secrets.log");
    let mut f = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    writeln!(f, "{line}")?;
    Ok(())
}
