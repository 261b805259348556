//! `ghola search`: its arguments as a person's search request, the index brought up to date first, and the answer
//! printed for a terminal (query words highlighted) or as JSON.

use super::knobs::Knobs;
use super::recall::{obtain_model, run_embedding, run_update};
use anyhow::{Context, Result, anyhow};
use ghola::search::{self, Fusion};
use ghola::service::request::{self, PERSON_CONTEXT, PERSON_RESULTS, THRESHOLD};
use ghola::service::{Format, HistoryService, SearchRequest, SessionChoice, Tuning};
use std::io::IsTerminal;
use std::path::Path;

/// Messages `ghola search` embeds before answering when the first pass left them keyword-only (about half a
/// minute on two cores); a bigger backlog is answered at once, partly by words, and left to `ghola index` or the
/// plugin's server.
pub const SEARCH_EMBEDS_UP_TO: usize = 2_000;

/// A search error in the words of `ghola search`'s flags: the service names its arguments as the MCP tools
/// spell them (`max_results`), a person typed `--limit`.
fn in_flags(message: &str) -> String {
    let mut out = message.to_string();
    for (arg, flag) in [
        ("context_before_after", "--context"),
        ("max_results", "--limit"),
        ("relative_floor", "--relative-floor"),
        ("session_id", "--session"),
        ("threshold", "--threshold"),
        ("since:", "--since:"),
        ("after:", "--after:"),
        ("before:", "--before:"),
        ("offset", "--offset"),
        ("machines", "--machine"),
        ("people", "--person"),
    ] {
        if out.starts_with(arg) || out.contains(&format!(" {arg}")) {
            out = out.replacen(arg, flag, 1);
        }
    }
    out
}

/// Arguments of `ghola search` (the same as the tools').
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// Project directory (sessions started in it or below it); default: the current directory.
    #[arg(long, value_name = "DIR", conflicts_with = "global")]
    pub project: Option<std::path::PathBuf>,
    /// Search every project.
    #[arg(long)]
    pub global: bool,
    /// Inclusive lower bound (2025-01-15 = that local day; 2025-01-15T10:00:00Z exact).
    #[arg(long)]
    pub after: Option<String>,
    /// Exclusive upper bound.
    #[arg(long)]
    pub before: Option<String>,
    /// Only messages this recent: an age (90m, 12h, 3d, 2w) or a date (2026-11-01).
    #[arg(long)]
    pub since: Option<String>,
    /// Only this session (a uuid or unique prefix), in whatever project it was recorded unless --project is given
    /// too.
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    #[arg(long, default_value_t = PERSON_RESULTS)]
    pub limit: usize,
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Messages of context before and after each hit.
    #[arg(long, default_value_t = PERSON_CONTEXT)]
    pub context: usize,
    /// Minimum cosine similarity for a hit with no lexical match.
    #[arg(long, default_value_t = THRESHOLD)]
    pub threshold: f32,
    /// Leave subagent conversations out.
    #[arg(long)]
    pub no_subagents: bool,
    /// Leave out this session's latest window.
    #[arg(long, value_name = "SESSION")]
    pub exclude_session: Option<String>,
    /// Search the index as it is (no update first).
    #[arg(long)]
    pub no_update: bool,
    /// How lexical and semantic evidence are combined.
    #[arg(long, value_enum, default_value_t = Fusion::Weighted)]
    pub fusion: Fusion,
    /// Weight of lexical evidence under `--fusion weighted` (0..1); default 0.6 for a query that names
    /// an identifier or path, 0.4 for one that names someone or something, 0.2 for one that only describes.
    #[arg(long)]
    pub lexical_weight: Option<f32>,
    /// Leave out hits scoring under this fraction of the best hit's score (0, the default, keeps every hit; the
    /// MCP tools' answers use 0.5); both are judged without the share a hit gains from the other hits of its
    /// session.
    #[arg(long, default_value_t = request::PERSON_RELATIVE_FLOOR)]
    pub relative_floor: f32,
    /// Scan the f32 vectors instead of their int8 copy (for comparing the two; results should not differ).
    #[arg(long, hide = true)]
    pub exact_scan: bool,
    /// Read the 4-bit copy of the vectors first from this many chunks on (for comparing the scans; results
    /// should not differ).
    #[arg(long, hide = true, value_name = "CHUNKS")]
    pub prefilter_from: Option<usize>,
    /// Turn a ranking rule off, to measure what it is worth (benchmarks; see docs/search.md).
    #[arg(long, hide = true, value_name = "RULE")]
    pub without_rule: Vec<search::Rule>,
    /// Only what was recorded on this machine (repeatable; `ghola remote list` names them).
    #[arg(long = "machine", value_name = "NAME")]
    pub machines: Vec<String>,
    /// Search the team hub too (`ghola hub login`), fused with this machine's history.
    #[arg(long)]
    pub team: bool,
    /// With --team: only these people's history (repeatable).
    #[arg(long = "person", value_name = "NAME", requires = "team")]
    pub people: Vec<String>,
    #[arg(long)]
    pub json: bool,
}

/// What a search over an empty history says: where ghola looked, and how to point it at the history.
fn no_history_note(claude_dir: &Path, other_machines: usize) -> String {
    format!(
        "no Claude Code history found: ghola looked in {}{} — if Claude Code keeps it elsewhere, point ghola \
         there with --claude-dir DIR or CLAUDE_CONFIG_DIR",
        claude_dir.join("projects").display(),
        if other_machines > 0 {
            format!(" and in the copies of {other_machines} other machine(s)")
        } else {
            String::new()
        }
    )
}

/// `ghola search`: the arguments as a person's [`SearchRequest`], the index brought up to date first (unless
/// `--no-update`), then the history service's answer printed for a terminal (or as JSON).
pub fn search_cmd(
    index_dir: &Path,
    claude_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &Knobs,
    a: SearchArgs,
) -> Result<()> {
    let mut r = SearchRequest::for_person(&a.query);
    r.session = a.session.as_deref().and_then(SessionChoice::parse);
    r.project = if a.global || (r.names_a_session() && a.project.is_none()) {
        None
    } else {
        Some(super::history::project_dir(a.project)?)
    };
    (r.after, r.before, r.since) = (a.after, a.before, a.since);
    r.max_results = a.limit;
    r.offset = a.offset;
    r.context = a.context;
    r.threshold = a.threshold;
    r.relative_floor = a.relative_floor;
    r.include_subagents = !a.no_subagents;
    r.calling_session = a.exclude_session;
    r.machines = a.machines;
    r.team = a.team;
    r.people = a.people;
    r.tuning = Tuning {
        fusion: a.fusion,
        lexical_weight: a.lexical_weight,
        exact_scan: a.exact_scan,
        prefilter_from: a.prefilter_from,
        without_rules: a.without_rule,
    };
    r.format = if a.json { Format::Json } else { Format::Text };
    r.max_chars = knobs
        .response_chars
        .clamp(request::MIN_MAX_CHARS, request::MAX_CHARS);
    // Wrong arguments fail before the model loads.
    r.params(None, chrono::Utc::now())
        .map_err(|e| anyhow!(in_flags(&e.to_string())))?;
    let history = HistoryService::new(knobs.history(claude_dir, index_dir, model_dir));
    // Without --no-update the index is updated first, with the model; without, the snapshot opens on another
    // core while the model loads and embeds the query (a cold process pays the longer of the two, not both).
    let early_open = a.no_update.then(|| {
        history.report_pending_files();
        let h = history.clone();
        std::thread::spawn(move || h.snapshots().get().map(|_| ()))
    });
    // Without the model (offline, download refused), the search still answers, by words.
    match obtain_model(model_dir, knobs, a.json) {
        Ok(e) => history.model().set(e),
        Err(e) if r.tuning.fusion != Fusion::Semantic => {
            eprintln!("ghola: {e:#}\nghola: searching by keywords only");
            history.model().set_unavailable(format!("{e:#}"));
        }
        Err(e) => return Err(e),
    }
    if !a.no_update {
        let s = run_update(
            index_dir,
            claude_dir,
            history.embedder(),
            knobs.update.before_query().words_first(),
            true,
        )
        .context("updating the index (use --no-update to skip)")?;
        if s.credentials_hidden > 0 {
            eprintln!(
                "ghola: {}",
                ghola::service::credentials_note(s.credentials_hidden)
            );
        }
        if let Some(e) = history.embedder() {
            run_embedding(
                index_dir,
                e,
                knobs.update.neighbour,
                Some(SEARCH_EMBEDS_UP_TO),
                a.json,
            )
            .context("embedding the index (use --no-update to skip)")?;
        }
    }
    if let Some(h) = early_open {
        h.join()
            .map_err(|_| anyhow!("opening the index failed"))??;
    }
    let mut resp = history
        .search(&r)
        .map_err(|e| anyhow!(in_flags(&e.to_string())))?
        .response;
    if history.embedder().is_some() && resp.index.embedded_messages < resp.index.messages {
        resp.add_note("`ghola index` embeds the rest");
    }
    // No history at all: say where ghola looked and how to point it elsewhere, rather than "no matches".
    if resp.index.messages == 0 {
        resp.add_note(no_history_note(claude_dir, history.machines().len() - 1));
    }
    if a.json {
        println!("{}", serde_json::to_string(&resp)?);
        return Ok(());
    }
    print_hits(&resp);
    Ok(())
}

/// A search's answer for a terminal: its note on stderr, then each hit's header (its machine once the history
/// holds more than one) and lines, the query's words highlighted when stdout is a terminal.
fn print_hits(resp: &ghola::search::SearchResponse) {
    if let Some(note) = &resp.note {
        eprintln!("ghola: {note}");
    }
    if resp.results.is_empty() {
        println!("no matches for {:?}", resp.query);
        if resp.offset == 0 && !resp.nothing_in_scope {
            println!("{}", resp.nothing_matches());
        }
    }
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let words: Vec<String> = ghola::index::terms::terms(&resp.query)
        .into_iter()
        .map(|t| t.2.to_ascii_lowercase())
        .filter(|w| w.len() >= 2)
        .collect();
    let show = |text: &str| {
        if colour {
            highlight(text, &words)
        } else {
            text.to_string()
        }
    };
    for (n, h) in resp.results.iter().enumerate() {
        let m = &h.matched_message;
        println!(
            "{}. {}  {}  {}{}  window {}{}  score {:.3} (semantic {:.2}, lexical {:.1})",
            resp.offset + n + 1,
            ghola::transcript::short_id(&m.session_id),
            m.timestamp.as_deref().unwrap_or("-"),
            m.project,
            if resp.several_machines {
                format!("  on {}", m.machine)
            } else {
                String::new()
            },
            m.window,
            m.agent_id
                .as_deref()
                .map(|a| format!("  agent {a}"))
                .unwrap_or_default(),
            h.score,
            h.scores.semantic,
            h.scores.lexical
        );
        for c in &h.context {
            let mark = if c.is_match { ">" } else { " " };
            let body: String = c
                .content
                .chars()
                .take(if c.is_match { 600 } else { 160 })
                .collect();
            println!("  {mark} {:<9} {}", c.role, show(&body.replace('\n', " ")));
        }
        println!();
    }
    println!(
        "{} of {} matches (offset {}){}",
        resp.results.len(),
        resp.total_matches,
        resp.offset,
        if resp.has_more {
            format!(
                "; the next page: --offset {}",
                resp.offset + resp.results.len()
            )
        } else {
            String::new()
        }
    );
}

/// Wraps every case-insensitive occurrence of the query's words in bold yellow (ANSI), for a terminal.
pub fn highlight(text: &str, words: &[String]) -> String {
    let lower = text.to_ascii_lowercase();
    let mut marks: Vec<(usize, usize)> = Vec::new();
    for w in words {
        let mut from = 0;
        while let Some(i) = lower[from..].find(w.as_str()) {
            let start = from + i;
            marks.push((start, start + w.len()));
            from = start + w.len();
        }
    }
    marks.sort();
    let mut out = String::with_capacity(text.len() + marks.len() * 12);
    let mut at = 0;
    for (start, end) in marks {
        if start < at || !text.is_char_boundary(start) || !text.is_char_boundary(end) {
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str("\x1b[1;33m");
        out.push_str(&text[start..end]);
        out.push_str("\x1b[0m");
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn highlights_query_words_case_insensitively() {
        let h = super::highlight(
            "Retry the UPLOAD; retry again",
            &["retry".into(), "upload".into()],
        );
        assert_eq!(
            h,
            "\x1b[1;33mRetry\x1b[0m the \x1b[1;33mUPLOAD\x1b[0m; \x1b[1;33mretry\x1b[0m again"
        );
        assert_eq!(
            super::highlight("ÄRGER über retry", &["retry".into()]),
            "ÄRGER über \x1b[1;33mretry\x1b[0m"
        );
    }
}
