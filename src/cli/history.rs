//! `ghola projects`, `ghola sessions`, `ghola show`: browsing the history without an index.

use anyhow::{Context, Result, bail};
use ghola::transcript::catalog::{self, Listing};
use ghola::transcript::{self, Message, Session, resolve_session_id};
use serde_json::json;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// The history's listing, through the cache in the index folder.
pub(super) fn listing(claude_dir: &Path, index_dir: &Path) -> Listing {
    let listing = Listing::refresh(
        &ghola::index::archive::sources(index_dir),
        claude_dir,
        Some(&index_dir.join(catalog::CACHE_FILE)),
        None,
    );
    report_problems(&listing.discovery);
    listing
}

/// Which machines a listing shows: this machine's name, and the names asked for (empty: every machine).
pub struct MachineScope<'a> {
    pub this: &'a str,
    pub only: &'a [String],
}

impl MachineScope<'_> {
    /// A session's machine's name.
    fn name<'b>(&'b self, m: Option<&'b str>) -> &'b str {
        m.unwrap_or(self.this)
    }

    /// The listing with only the asked machines' sessions; fails on a name no session or remote has.
    fn apply(&self, listing: &mut Listing, index_dir: &Path) -> Result<()> {
        if self.only.is_empty() {
            return Ok(());
        }
        let mut known: Vec<String> = vec![self.this.to_string()];
        known.extend(
            ghola::index::machines::list(index_dir)
                .into_iter()
                .map(|m| m.name),
        );
        known.extend(
            listing
                .sessions
                .iter()
                .filter_map(|l| l.summary.machine.clone()),
        );
        if let Some(bad) = self.only.iter().find(|m| !known.contains(m)) {
            known.sort();
            known.dedup();
            return Err(anyhow::anyhow!(
                "no machine is called {bad:?}: this history holds {}",
                known.join(", ")
            ));
        }
        listing.retain_machines(|m| self.only.iter().any(|o| o == self.name(m)));
        Ok(())
    }
}

pub fn projects(
    claude_dir: &Path,
    index_dir: &Path,
    scope: MachineScope,
    json: bool,
) -> Result<()> {
    let mut all = listing(claude_dir, index_dir);
    scope.apply(&mut all, index_dir)?;
    // Transcripts without a message are counted by `ghola status`, not listed.
    all.drop_empty();
    let list = all.projects();
    let several = all.sessions.iter().any(|l| l.summary.machine.is_some());
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if json {
        let rows: Vec<serde_json::Value> = list
            .iter()
            .map(|p| {
                let mut v = serde_json::to_value(p).unwrap_or_default();
                v["machines"] = json!(
                    p.machines
                        .iter()
                        .map(|m| scope.name(m.as_deref()))
                        .collect::<Vec<_>>()
                );
                v
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &json!({ "projects": rows }))?;
        writeln!(out)?;
        return Ok(());
    }
    if list.is_empty() {
        writeln!(out, "No Claude Code history under {}", claude_dir.display())?;
    }
    for p in list {
        writeln!(
            out,
            "{}  {} sessions, {} messages, last {}{}{}",
            p.project,
            p.sessions,
            p.messages,
            p.last_activity
                .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
                .unwrap_or_else(|| "-".into()),
            if p.branches.is_empty() {
                String::new()
            } else {
                format!(", branches {}", p.branches.join(", "))
            },
            if several {
                let names: Vec<&str> = p
                    .machines
                    .iter()
                    .map(|m| scope.name(m.as_deref()))
                    .collect();
                format!(", on {}", names.join(", "))
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}

/// The project directory a command defaults to: the given one, else the current directory.
pub fn project_dir(project: Option<PathBuf>) -> Result<String> {
    let dir = match project {
        Some(p) => p,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let text = dir.to_string_lossy();
    // A path already absolute in either OS's style is taken as written: histories move between machines, and
    // `absolute` would turn a Windows path into a relative one on Unix, and `/home/me/app` into `Z:\home\me\app`
    // on Windows. It is compared in its normal form (`transcript::is_within`); only a relative path (or the
    // current directory) is made absolute here.
    // A relative path that is not a folder here is a project name as `ghola projects` printed it (a session
    // without a `cwd` is listed under its folder's name): taken as written too.
    let as_written =
        text.starts_with('/') || transcript::project_path::is_windows_path(&text) || !dir.is_dir();
    let dir = if as_written {
        dir
    } else {
        std::path::absolute(&dir).unwrap_or(dir)
    };
    let text = dir.to_string_lossy();
    let trimmed = text.trim_end_matches(['/', '\\']);
    Ok(if trimmed.is_empty() || trimmed.ends_with(':') {
        text.to_string()
    } else {
        trimmed.to_string()
    })
}

pub fn sessions(
    claude_dir: &Path,
    index_dir: &Path,
    project: Option<PathBuf>,
    global: bool,
    since: Option<String>,
    machines: MachineScope,
    json: bool,
) -> Result<()> {
    let scope = if global {
        None
    } else {
        Some(project_dir(project)?)
    };
    let since = since
        .as_deref()
        .map(|s| ghola::search::parse_since(s, "since", chrono::Utc::now()))
        .transpose()?;
    let mut all = listing(claude_dir, index_dir);
    machines.apply(&mut all, index_dir)?;
    all.drop_empty();
    let several = all.sessions.iter().any(|l| l.summary.machine.is_some());
    let mut summaries: Vec<ghola::transcript::catalog::SessionSummary> = all
        .sessions_in(scope.as_deref())
        .into_iter()
        .cloned()
        .collect();
    for s in &mut summaries {
        s.machine = Some(machines.name(s.machine.as_deref()).to_string());
    }
    if let Some(since) = since {
        summaries.retain(|s| s.active_since(since));
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if json {
        serde_json::to_writer_pretty(&mut out, &json!({ "sessions": summaries }))?;
        writeln!(out)?;
        return Ok(());
    }
    if summaries.is_empty() {
        match &scope {
            Some(p) => writeln!(out, "No sessions in {p} (try --global)")?,
            None => writeln!(out, "No sessions under {}", claude_dir.display())?,
        }
    }
    for s in summaries {
        writeln!(
            out,
            "{}  {}  {}{}{}  {}{}{}{}",
            s.session_id,
            s.last_timestamp
                .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
                .unwrap_or_else(|| "-".into()),
            message_count(&s),
            if s.windows > 1 {
                format!(", {} windows", s.windows)
            } else {
                String::new()
            },
            match s.subagents_at_work().count() {
                0 => String::new(),
                1 => ", 1 subagent".to_string(),
                n => format!(", {n} subagents"),
            },
            s.project,
            s.title
                .as_ref()
                .map(|t| format!("  “{t}”"))
                .unwrap_or_default(),
            if s.archived { "  [archived]" } else { "" },
            match (&s.machine, several) {
                (Some(m), true) => format!("  on {m}"),
                _ => String::new(),
            }
        )?;
    }
    Ok(())
}

/// A listed session's size: its main conversation's messages, or, for a subagent's work whose main transcript is
/// gone, the subagents' ("0 messages" would hide what `show` reads) — the work asked for, not the replies of
/// the warm-ups Claude Code starts on its own.
fn message_count(s: &ghola::transcript::catalog::SessionSummary) -> String {
    let of_subagents: usize = s.subagents_at_work().map(|a| a.messages).sum();
    if s.messages == 0 && of_subagents > 0 {
        let plural = if of_subagents == 1 { "" } else { "s" };
        format!("{of_subagents} subagent message{plural}")
    } else {
        format!("{} messages", s.messages)
    }
}

/// How `ghola show` shows a session.
pub struct ShowOptions {
    /// Only this compaction window.
    pub window: Option<u32>,
    /// Subagents' messages too.
    pub subagents: bool,
    /// Credentials as written (to a terminal only).
    pub reveal: bool,
    pub json: bool,
}

pub fn show(claude_dir: &Path, index_dir: &Path, session: &str, opts: ShowOptions) -> Result<()> {
    let ShowOptions {
        window,
        subagents,
        reveal,
        json,
    } = opts;
    if reveal && !std::io::stdout().is_terminal() {
        bail!(
            "--reveal prints credentials as written, so it only writes to a terminal; stdout here is a pipe or a \
             file (or Claude Code's Bash tool). Run it in your own terminal."
        );
    }
    // Transcripts Claude Code deleted are read from the archive.
    let sources = ghola::index::archive::sources(index_dir);
    let sources = if reveal { sources.revealing() } else { sources };
    let found = sources.discover_all(claude_dir);
    let id = resolve_session_id(
        session,
        found.sessions.iter().map(|s| s.session_id.as_str()),
    )?
    .to_string();
    let files = found
        .sessions
        .iter()
        .find(|s| s.session_id == id)
        .expect("resolved ids come from this list");
    let s = transcript::load_session(&sources, files);
    if let Some(w) = window
        && w >= s.windows
    {
        bail!(
            "session {id} has {} window(s) (0..={}); there is no window {w}",
            s.windows,
            s.windows - 1
        );
    }
    let in_window = |m: &&Message| window.is_none_or(|w| m.window == w);
    let mut messages: Vec<&Message> = s.messages.iter().filter(in_window).collect();
    // A subagent's work whose main transcript is gone is what the session holds: shown without being asked.
    let only_subagents = s.only_subagents_work();
    if subagents || only_subagents {
        messages.extend(
            s.subagents
                .iter()
                .flat_map(|a| a.messages.iter())
                .filter(in_window),
        );
        messages.sort_by_key(|m| m.timestamp);
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if json {
        serde_json::to_writer_pretty(
            &mut out,
            &json!({"session_id": s.session_id, "project": s.project, "machine": s.machine, "title": s.title,
                    "windows": s.windows, "archived": s.archived, "messages": messages}),
        )?;
        writeln!(out)?;
        return Ok(());
    }
    let note = (only_subagents && !subagents).then_some(
        "(the session's main conversation is not in its files: its subagents' messages are shown)",
    );
    write_conversation(&mut out, &s, &messages, note)?;
    Ok(())
}

/// A session as `ghola show` prints it: its header and title, `note` (what the reader should know first, if
/// anything), then `messages` by window.
fn write_conversation(
    out: &mut impl Write,
    s: &Session,
    messages: &[&Message],
    note: Option<&str>,
) -> Result<()> {
    writeln!(
        out,
        "Session {}  ({}){}{}",
        s.session_id,
        s.project,
        s.machine
            .as_deref()
            .map(|m| format!("  recorded on {m}"))
            .unwrap_or_default(),
        if s.archived {
            "  [archived: Claude Code deleted the transcript; read from ghola's copy]"
        } else {
            ""
        }
    )?;
    if let Some(t) = &s.title {
        writeln!(out, "“{t}”")?;
    }
    if let Some(note) = note {
        writeln!(out, "{note}")?;
    }
    let mut window = None;
    for m in messages {
        if window != Some(m.window) && m.agent_id.is_none() {
            window = Some(m.window);
            writeln!(out, "\n──── window {} ────", m.window)?;
        }
        let who = if m.is_compact_summary {
            "summary".to_string()
        } else {
            match &m.agent_id {
                Some(a) => format!("{} (subagent {a})", m.role.as_str()),
                None => m.role.as_str().to_string(),
            }
        };
        let when = m
            .timestamp
            .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_default();
        writeln!(out, "\n[{when}] {who}:")?;
        for line in m.text().lines() {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(())
}

fn report_problems(found: &transcript::Discovery) {
    for (path, why) in &found.problems {
        tracing::warn!("could not read {}: {why}", path.display());
    }
}
