//! `ghola bench index` and `ghola bench search`: the index and the ranking at 100k–1M messages, on a synthetic
//! Claude dir written by [`generate`].
//!
//! Building a million-message index with the real model would take hours on a laptop (embedding throughput has
//! its own bench, `ghola bench embed`), so these benches embed with [`HashEmbedder`]: deterministic unit vectors
//! from a hash of the text. Everything else — reading, diffing, segment files, tantivy, publishing, merging, the
//! cosine scan, fusion and merging of hits — is the real code, and its cost does not depend on what the vectors
//! hold. The query itself is embedded with the real model and timed separately.

use super::bench::peak_rss_mib;
use anyhow::{Context, Result};
use ghola::embed::Vector;
use ghola::index::standin::HashEmbedder;
use ghola::index::{self, ChunkEmbedder, Snapshot, UpdateOptions};
use ghola::search::{self, SearchParams};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Words the generator draws from: prose and code-ish tokens, Zipf-like by position.
const WORDS: &[&str] = &[
    "the",
    "index",
    "search",
    "retry",
    "upload",
    "backoff",
    "session",
    "window",
    "compaction",
    "error",
    "config",
    "parser",
    "token",
    "cache",
    "vector",
    "segment",
    "manifest",
    "lock",
    "writer",
    "reader",
    "test",
    "build",
    "cargo",
    "rust",
    "function",
    "module",
    "struct",
    "trait",
    "async",
    "tokio",
    "server",
    "client",
    "request",
    "response",
    "timeout",
    "database",
    "postgres",
    "migration",
    "schema",
    "query",
    "latency",
    "memory",
    "disk",
    "fsync",
    "rename",
    "checksum",
    "benchmark",
    "deploy",
    "docker",
    "kubernetes",
    "branch",
    "commit",
    "merge",
    "rebase",
    "review",
    "refactor",
    "rename_field",
    "parseUserToken",
    "ERR_CONNECTION_REFUSED",
    "src/main.rs",
    "v2.1.38",
    "because",
    "decided",
    "should",
    "could",
    "would",
    "instead",
    "later",
    "first",
    "then",
    "also",
    "fixed",
    "broken",
    "works",
    "failing",
    "passes",
    "slow",
    "fast",
    "large",
    "small",
    "user",
    "assistant",
];

/// A small deterministic generator (xorshift64*), so runs are comparable without a `rand` dependency.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Skewed towards the front of the list, like word frequencies.
    fn word(&mut self) -> &'static str {
        let a = (self.next() % WORDS.len() as u64) as usize;
        let b = (self.next() % WORDS.len() as u64) as usize;
        WORDS[a.min(b)]
    }
    pub(super) fn sentence(&mut self, words: usize) -> String {
        (0..words)
            .map(|_| self.word())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Messages per synthetic session.
const PER_SESSION: usize = 100;

/// Writes `messages` synthetic messages as Claude Code transcripts under `dir/projects/` (10 projects, sessions
/// of 100 messages); returns the session files.
pub fn generate(dir: &Path, messages: usize) -> Result<Vec<PathBuf>> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let sessions = messages.div_ceil(PER_SESSION);
    let mut files = Vec::with_capacity(sessions);
    for s in 0..sessions {
        let project = format!("/bench/project-{}", s % 10);
        let folder = dir.join("projects").join(project.replace('/', "-"));
        std::fs::create_dir_all(&folder)?;
        let id = format!("{:08x}-0000-4000-8000-{:012x}", s, s);
        let path = folder.join(format!("{id}.jsonl"));
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
        let n = PER_SESSION.min(messages - s * PER_SESSION);
        for m in 0..n {
            writeln!(out, "{}", line(&mut rng, &id, &project, s, m))?;
        }
        out.flush()?;
        files.push(path);
    }
    Ok(files)
}

fn line(rng: &mut Rng, id: &str, project: &str, s: usize, m: usize) -> String {
    let user = m.is_multiple_of(2);
    let words = 8 + (rng.next() % 40) as usize;
    let text = rng.sentence(words);
    let ts = format!(
        "2025-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        1 + (s / 28) % 12,
        1 + s % 28,
        (m / 60) % 24,
        m % 60,
        (s * 7 + m) % 60
    );
    let uuid = format!("{id}-{m}");
    let parent = if m == 0 {
        serde_json::Value::Null
    } else {
        format!("{id}-{}", m - 1).into()
    };
    let v = if user {
        serde_json::json!({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": id, "cwd": project,
            "timestamp": ts, "message": {"role": "user", "content": text}})
    } else {
        serde_json::json!({"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": id, "cwd": project,
            "timestamp": ts, "message": {"id": format!("msg-{uuid}"), "role": "assistant", "model": "bench",
            "content": [{"type": "text", "text": text}]}})
    };
    v.to_string()
}

fn update(idx: &Path, claude: &Path) -> Result<(index::UpdateSummary, f64)> {
    let t = Instant::now();
    let s = index::update(
        idx,
        claude,
        &HashEmbedder,
        UpdateOptions::default(),
        &mut |_| {},
    )?;
    Ok((s, t.elapsed().as_secs_f64()))
}

/// Builds (or reuses) the synthetic tree and its index under `work`.
pub(super) fn prepare(
    work: &Path,
    messages: usize,
) -> Result<(PathBuf, PathBuf, Vec<PathBuf>, Option<f64>)> {
    let claude = work.join(format!("claude-{messages}"));
    let idx = work.join(format!("index-{messages}"));
    let files = if claude.is_dir() {
        let mut f: Vec<PathBuf> = ghola::transcript::discover(&claude)
            .sessions
            .into_iter()
            .filter_map(|s| s.main)
            .collect();
        f.sort();
        f
    } else {
        generate(&claude, messages)?
    };
    let built = if Snapshot::open(&idx).is_ok_and(|s| s.messages.len() >= messages) {
        None
    } else {
        let (s, secs) = update(&idx, &claude)?;
        anyhow::ensure!(
            s.messages_added >= messages,
            "built {} of {messages}",
            s.messages_added
        );
        Some(secs)
    };
    Ok((claude, idx, files, built))
}

/// Appends `n` lines to the file and returns the update's time.
fn append_and_update(
    idx: &Path,
    claude: &Path,
    file: &Path,
    n: usize,
    seed: u64,
) -> Result<(index::UpdateSummary, f64)> {
    let mut rng = Rng(seed);
    let id = file
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let mut f = std::fs::OpenOptions::new().append(true).open(file)?;
    for k in 0..n {
        writeln!(
            f,
            "{}",
            line(
                &mut rng,
                &id,
                "/bench/project-0",
                0,
                100_000 + seed as usize * 100 + k
            )
        )?;
    }
    drop(f);
    update(idx, claude)
}

/// What the two passes of a first index took.
pub struct FirstPass {
    pub messages: usize,
    pub bytes: u64,
    /// Until every message was searchable by its words (the keyword-first pass, published).
    pub keyword_secs: f64,
    /// The embedding pass after it.
    pub embed_secs: f64,
}

/// Builds a fresh index of `claude` in `idx` the way the plugin's server does on first start: the keyword-first
/// pass (everything deferred), then the embedding pass with `embedder`.
pub fn first_pass(claude: &Path, idx: &Path, embedder: &dyn ChunkEmbedder) -> Result<FirstPass> {
    let _ = std::fs::remove_dir_all(idx);
    let opts = UpdateOptions {
        defer_from: Some(1),
        ..UpdateOptions::default()
    };
    let t = Instant::now();
    let s = index::update_with(idx, claude, Some(embedder), opts, &mut |_| {})?;
    let keyword_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let e = index::embed_pending(idx, embedder, opts.neighbour, None, &|| false, &mut |_| {})?;
    let embed_secs = t.elapsed().as_secs_f64();
    anyhow::ensure!(
        e.messages >= s.messages_deferred,
        "embedded {} of {} deferred messages",
        e.messages,
        s.messages_deferred
    );
    Ok(FirstPass {
        messages: s.messages_added,
        bytes: s.bytes_read,
        keyword_secs,
        embed_secs,
    })
}

fn print_first_pass(label: &str, f: &FirstPass, vectors: &str) {
    println!(
        "{label}: keyword-searchable after {:.2} s ({:.0} messages/s, {:.1} MB/s of transcripts); fully embedded \
         after {:.1} s ({vectors})",
        f.keyword_secs,
        f.messages as f64 / f.keyword_secs,
        f.bytes as f64 / 1e6 / f.keyword_secs,
        f.keyword_secs + f.embed_secs
    );
}

/// `ghola bench index --history DIR`: the first index of a real Claude dir, both passes, with the real model
/// (or hash vectors with `--hash-vectors`).
pub fn history_bench(
    claude: &Path,
    work: &Path,
    model_dir: Option<&Path>,
    hash: bool,
) -> Result<()> {
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    println!(
        "command: ghola bench index --history {} --work {}{}",
        claude.display(),
        work.display(),
        if hash { " --hash-vectors" } else { "" }
    );
    let real;
    let (embedder, label): (&dyn ChunkEmbedder, &str) = if hash {
        (&HashEmbedder, "hash vectors")
    } else {
        real = ghola::embed::Embedder::from_places(
            &ghola::config::Environment::read().model_places(model_dir),
        )?;
        (&real, "real model")
    };
    let f = first_pass(claude, &work.join("index-history"), embedder)?;
    print_first_pass(&format!("{} messages", f.messages), &f, label);
    if !hash {
        println!(
            "embedding pass: {:.0} messages/s",
            f.messages as f64 / f.embed_secs
        );
    }
    if let Some(peak) = peak_rss_mib() {
        println!("peak RSS: {peak:.0} MiB");
    }
    Ok(())
}

/// `ghola bench index`: full build, no-change check, and a 10-line append at `messages/10` and `messages`.
pub fn index_bench(work: &Path, messages: usize) -> Result<()> {
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    println!(
        "command: ghola bench index --messages {messages} --work {}",
        work.display()
    );
    println!("vectors: hash vectors (model cost excluded; see `ghola bench embed`)");
    for n in [messages / 10, messages] {
        let (claude, idx, _, _) = prepare(work, n)?;
        let f = first_pass(
            &claude,
            &work.join(format!("index-words-{n}")),
            &HashEmbedder,
        )?;
        print_first_pass(&format!("{n:>9} messages"), &f, "hash vectors");
        let _ = std::fs::remove_dir_all(work.join(format!("index-words-{n}")));
        drop(idx);
    }
    for n in [messages / 10, messages] {
        let (claude, idx, files, built) = prepare(work, n)?;
        let snap = Snapshot::open(&idx)?;
        let bytes = index::dir_size(&idx);
        if let Some(secs) = built {
            println!(
                "{n:>9} messages: full build {secs:.1} s ({:.0} messages/s)",
                n as f64 / secs
            );
        }
        println!(
            "{n:>9} messages: index {:.1} MB on disk, {:.0} bytes/message ({} files)",
            bytes as f64 / 1e6,
            bytes as f64 / snap.messages.len().max(1) as f64,
            files.len()
        );
        drop(snap);
        let mut best = f64::MAX;
        for _ in 0..5 {
            let (s, secs) = update(&idx, &claude)?;
            anyhow::ensure!(s.messages_added == 0, "a no-change run added messages");
            best = best.min(secs);
        }
        println!(
            "{n:>9} messages: no-change check of {} files: {:.1} ms (best of 5)",
            files.len(),
            best * 1e3
        );
        let mut times = Vec::new();
        let mut parsed = 0;
        let mut full = false;
        // Unique per run, so lines appended by an earlier run of the bench are never repeated.
        let run = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() % 1_000_000)
            .unwrap_or(1);
        for round in 0..3 {
            let file = &files[files.len() / 2];
            let (s, secs) = append_and_update(&idx, &claude, file, 10, run * 10 + round + 1)?;
            anyhow::ensure!(
                s.messages_added == 10,
                "the append added {} messages",
                s.messages_added
            );
            parsed = s.bytes_read;
            full |= s.full_update;
            times.push(secs);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{n:>9} messages: append 10 lines to one file: {:.1} ms (median of 3; {:.1} ms beyond the no-change \
             check; {parsed} bytes parsed; {} path)",
            times[1] * 1e3,
            (times[1] - best) * 1e3,
            if full { "full" } else { "append" }
        );
    }
    if let Some(peak) = peak_rss_mib() {
        println!("peak RSS: {peak:.0} MiB");
    }
    Ok(())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `ghola bench search`: ranking latency p50/p95 at `messages/10` and `messages`, query embedding apart, and a
/// cold `ghola search --no-update` process.
pub fn search_bench(work: &Path, messages: usize, model_dir: Option<&Path>) -> Result<()> {
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    println!(
        "command: ghola bench search --messages {messages} --work {}",
        work.display()
    );
    let embedder = ghola::embed::Embedder::from_places(
        &ghola::config::Environment::read().model_places(model_dir),
    )?;
    let mut rng = Rng(42);
    let queries: Vec<String> = (0..40)
        .map(|_| {
            let words = 2 + (rng.next() % 4) as usize;
            rng.sentence(words)
        })
        .collect();
    let mut embed_times = Vec::new();
    let vectors: Vec<Vector> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            let v = embedder.embed(&[q.as_str()]).map(|v| v[0]);
            embed_times.push(t.elapsed().as_secs_f64());
            v
        })
        .collect::<Result<_, _>>()?;
    embed_times.sort_by(f64::total_cmp);
    println!(
        "query embedding (real model): p50 {:.1} ms, p95 {:.1} ms",
        percentile(&embed_times, 0.5) * 1e3,
        percentile(&embed_times, 0.95) * 1e3
    );
    for n in [messages / 10, messages] {
        let (claude, idx, files, _) = prepare(work, n)?;
        let t = Instant::now();
        let snap = Snapshot::open(&idx)?;
        let open = t.elapsed().as_secs_f64();
        for (scope, project) in [
            ("global", None),
            ("one project", Some("/bench/project-3".to_string())),
        ] {
            // The int8 scan (default) and the f32 scan, and how often their first ten hits agree.
            let mut figures = Vec::new();
            let mut firsts: Vec<Vec<String>> = Vec::new();
            let mut same = 0usize;
            for exact in [false, true] {
                let mut times = Vec::new();
                for (k, (q, v)) in queries.iter().zip(&vectors).enumerate() {
                    let mut p = SearchParams::new(q);
                    p.project = project.clone();
                    p.context = 0;
                    p.exact_scan = exact;
                    let t = Instant::now();
                    let r = search::search_with_vector(&snap, Some(v), Some(&embedder), &p)?;
                    times.push(t.elapsed().as_secs_f64());
                    let top: Vec<String> = r
                        .results
                        .iter()
                        .map(|h| h.matched_message.uuid.clone())
                        .collect();
                    if exact {
                        same += usize::from(firsts.get(k) == Some(&top));
                    } else {
                        firsts.push(top);
                    }
                }
                times.sort_by(f64::total_cmp);
                figures.push((percentile(&times, 0.5), percentile(&times, 0.95)));
            }
            // What the default scan reads at this size (see `search::scan_precision`).
            let quantized = if snap.chunks.len() >= search::scan::PREFILTER_MIN_CHUNKS {
                "4-bit then int8 scan"
            } else {
                "int8 scan"
            };
            println!(
                "{n:>9} messages, {scope:<11}: ranking p50 {:.1} ms, p95 {:.1} ms ({quantized}; f32 scan p50 {:.1}, \
                 p95 {:.1} ms; same ten hits for {same}/{} queries; snapshot open {:.0} ms)",
                figures[0].0 * 1e3,
                figures[0].1 * 1e3,
                figures[1].0 * 1e3,
                figures[1].1 * 1e3,
                queries.len(),
                open * 1e3
            );
        }
        // What the server pays after a publish: a 10-line append, then the snapshot reopened reusing the
        // segments it has, against a fresh open of the same generation.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() % 1_000_000)
            .unwrap_or(1);
        append_and_update(&idx, &claude, &files[files.len() / 3], 10, seed * 10 + 7)?;
        let t = Instant::now();
        let again = snap.reopen()?;
        let reopen = t.elapsed().as_secs_f64();
        drop(snap);
        let t = Instant::now();
        let fresh = Snapshot::open(&idx)?;
        let fresh_open = t.elapsed().as_secs_f64();
        anyhow::ensure!(again.messages.len() == fresh.messages.len());
        println!(
            "{n:>9} messages: after a 10-line append, snapshot reopen {:.1} ms (segments kept, the new one read) vs \
             open {:.1} ms",
            reopen * 1e3,
            fresh_open * 1e3
        );
        drop((again, fresh));
        let mut cold = Vec::new();
        let mut cold_rss = 0f64;
        for q in queries.iter().take(5) {
            let (secs, rss) = super::bench_listing::timed_run(
                &claude,
                &idx,
                &["search", q, "--global", "--no-update", "--json"],
            )?;
            cold.push(secs);
            cold_rss = cold_rss.max(rss);
        }
        cold.sort_by(f64::total_cmp);
        println!(
            "{n:>9} messages: cold `ghola search --no-update` process: median {:.0} ms (5 runs; model load \
             included), peak RSS {:.0} MiB",
            cold[2] * 1e3,
            cold_rss
        );
        super::bench_listing::listing_lines(n, &claude, &idx)?;
    }
    if let Some(peak) = peak_rss_mib() {
        println!("peak RSS: {peak:.0} MiB");
    }
    Ok(())
}

/// `ghola bench hook`: the SessionStart hook as Claude Code runs it (a fresh `ghola hook session-start`
/// process, hook input on stdin) on a synthetic index of N/10 and N messages, with full notes (every category
/// at its cap) for the project.
pub fn hook_bench(work: &Path, messages: usize) -> Result<()> {
    use ghola::notes::{Category, Item, Store};
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    println!(
        "command: ghola bench hook --messages {messages} --work {}",
        work.display()
    );
    let project = "/bench/project-3";
    let notes_dir = work.join("notes");
    let _ = std::fs::remove_dir_all(&notes_dir);
    let store = Store::new(&notes_dir);
    let mut notes = store.open(project);
    let mut rng = Rng(7);
    for c in Category::ALL {
        let items = (0..c.cap())
            .map(|k| Item {
                id: format!("{}-{k:06x}", c.id_prefix()),
                text: rng.sentence(24),
                session: Some(format!("session-{k}")),
                window: Some(0),
                date: Some(format!("2026-{:02}-{:02}", 1 + k % 12, 1 + k % 28)),
            })
            .collect();
        notes.items.insert(c, items);
    }
    notes.save()?;
    let exe = std::env::current_exe()?;
    let input =
        serde_json::json!({"session_id": "bench-session", "cwd": project, "source": "startup",
                                   "hook_event_name": "SessionStart"})
        .to_string();
    for n in [messages / 10, messages] {
        let (claude, idx, _, _) = prepare(work, n)?;
        let mut times = Vec::new();
        let mut size = 0;
        for _ in 0..11 {
            let t = Instant::now();
            let mut child = std::process::Command::new(&exe)
                .args(["--claude-dir", claude.to_str().unwrap_or_default()])
                .args(["--index-dir", idx.to_str().unwrap_or_default()])
                .args(["hook", "session-start"])
                .env("GHOLA_NOTES_DIR", &notes_dir)
                .env_remove("GHOLA_HOOKS_OFF")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()?;
            {
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .context("stdin")?
                    .write_all(input.as_bytes())?;
            }
            let out = child.wait_with_output()?;
            times.push(t.elapsed().as_secs_f64());
            anyhow::ensure!(
                out.status.success() && !out.stdout.is_empty(),
                "the hook failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
            size = v["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .map_or(0, |s| s.chars().count());
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{n:>9} messages: `ghola hook session-start` process p50 {:.0} ms, max {:.0} ms (11 runs), context {size} characters",
            percentile(&times, 0.5) * 1e3,
            times[times.len() - 1] * 1e3
        );
    }
    Ok(())
}
