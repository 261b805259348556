//! `ghola index`, `ghola forget`, `ghola search`: thin adapters over the index and search library calls.

use super::knobs::Knobs;
use anyhow::{Context, Result, anyhow};
use ghola::embed::Embedder;
use ghola::index::render::Neighbour;
use ghola::index::{self, UpdateOptions, UpdateSummary};
use ghola::search::{self, Fusion};
use ghola::service::request::{self, PERSON_CONTEXT, PERSON_RESULTS, THRESHOLD};
use ghola::service::{Format, HistoryService, SearchRequest, SessionChoice, Tuning};
use std::io::IsTerminal;
use std::path::Path;

/// Messages `ghola search` embeds before answering when the first pass left them keyword-only (about half a
/// minute on two cores); a bigger backlog is answered at once, partly by words, and left to `ghola index` or the
/// plugin's server.
pub const SEARCH_EMBEDS_UP_TO: usize = 2_000;

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
            if s.files_read == 0 && s.publishes == 0 {
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
            println!("{}", ghola::search::compact::NOTHING_MATCHES);
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
