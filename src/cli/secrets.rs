//! `ghola secrets`: what credentials ghola holds (a report that never prints a value).

use super::history::project_dir;
use anyhow::Result;
use clap::Args;
use ghola::transcript::{self, credentials::Found};
use rayon::prelude::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `ghola secrets`.
#[derive(Debug, Args)]
pub struct SecretsArgs {
    /// Only sessions started in this directory or below it (default: every project).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The report: every credential found in the history ghola reads (Claude Code's transcripts and ghola's
/// archive), newest first, with totals per rule and per project.
pub fn secrets_cmd(claude_dir: &Path, index_dir: &Path, args: SecretsArgs) -> Result<()> {
    let within = args.project.map(|p| project_dir(Some(p))).transpose()?;
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
    if args.json {
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
