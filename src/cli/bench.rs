//! `ghola bench …`: throughput figures printed with the command that reproduces them (no timing in tests).

use anyhow::{Context, Result, bail};
use ghola::transcript;
use std::path::Path;
use std::time::Instant;

/// Peak resident memory of this process (Linux `VmHWM`), in MiB; `None` elsewhere.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Streams every transcript under the Claude dir on one thread, repeatedly for at least `min_secs`, and prints
/// MB/s per core for the full read (type peek + parse of wanted entries) and for building sessions.
pub fn read(claude_dir: &Path, min_secs: f64) -> Result<()> {
    let found = transcript::discover(claude_dir);
    let files: Vec<_> = found
        .sessions
        .iter()
        .flat_map(|s| s.all_files().map(Path::to_path_buf))
        .collect();
    let bytes: u64 = files
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    if bytes == 0 {
        bail!("no transcripts under {}", claude_dir.display());
    }
    let (mut rounds, mut entries) = (0u64, 0u64);
    let start = Instant::now();
    while rounds == 0 || start.elapsed().as_secs_f64() < min_secs {
        for f in &files {
            transcript::stream_entries(f, 0, |_| entries += 1);
        }
        rounds += 1;
    }
    let stream = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut messages = 0usize;
    for s in &found.sessions {
        messages += transcript::load_session(s).all_messages().count();
    }
    let build = start.elapsed().as_secs_f64();
    let mb = bytes as f64 / 1e6;
    println!(
        "command: ghola bench read --claude-dir {}",
        claude_dir.display()
    );
    println!(
        "files: {}  bytes: {:.1} MB  entries kept per pass: {}",
        files.len(),
        mb,
        entries / rounds
    );
    println!(
        "stream (peek + parse wanted lines), 1 thread: {:.0} MB/s  ({} passes in {:.2}s)",
        mb * rounds as f64 / stream,
        rounds,
        stream
    );
    println!(
        "sessions (stream + messages + windows), 1 thread: {:.0} MB/s  ({messages} messages)",
        mb / build
    );
    if let Some(peak) = peak_rss_mib() {
        println!("peak RSS: {peak:.1} MiB");
    }
    Ok(())
}

/// Embeds the reference texts under several batching set-ups and prints texts/s, tokens/s and peak memory.
pub fn embed(model_dir: Option<&Path>, texts_path: &Path, rounds: usize) -> Result<()> {
    use ghola::embed::{BatchPolicy, Embedder};
    let texts: Vec<String> = std::fs::read_to_string(texts_path)
        .with_context(|| format!("reading {}", texts_path.display()))?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l)?;
            Ok(v["text"].as_str().unwrap_or_default().to_string())
        })
        .collect::<Result<_>>()?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let start = Instant::now();
    let mut embedder = Embedder::from_default_location(model_dir)?;
    let load = start.elapsed().as_secs_f64();
    let tokens: usize = embedder
        .embed_chunked(&refs, 1)?
        .iter()
        .map(|t| t.tokens.min(254) + 2)
        .sum();
    println!(
        "command: ghola bench embed --texts {}",
        texts_path.display()
    );
    println!(
        "model load: {:.0} ms   texts: {}   tokens (first chunk, with [CLS]/[SEP]): {tokens}",
        load * 1e3,
        texts.len()
    );
    let budget = |tokens, parallel| BatchPolicy {
        max_batch_tokens: tokens,
        max_batch_seqs: 64,
        parallel_batches: parallel,
    };
    let setups = [
        (
            "batches of 32 (length-sorted, no token budget), one at a time",
            BatchPolicy {
                max_batch_tokens: usize::MAX,
                max_batch_seqs: 32,
                parallel_batches: false,
            },
        ),
        (
            "length-bucketed, 768-token budget, one batch at a time",
            budget(768, false),
        ),
        (
            "length-bucketed, 4096-token budget, one batch per core",
            budget(4096, true),
        ),
        (
            "length-bucketed, 2048-token budget, one batch per core",
            budget(2048, true),
        ),
        (
            "length-bucketed, 768-token budget, one batch per core [default]",
            BatchPolicy::default(),
        ),
        (
            "length-bucketed, 512-token budget, one batch per core",
            budget(512, true),
        ),
    ];
    println!(
        "matrix products split across {} thread(s) (RAYON_NUM_THREADS; ghola sets 1 unless told otherwise)",
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "all".into())
    );
    for (name, policy) in setups {
        embedder.set_batch_policy(policy);
        let mut best = f64::MAX;
        for _ in 0..rounds.max(1) {
            let t = Instant::now();
            embedder.embed(&refs)?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{:>7.1} texts/s {:>8.0} tokens/s  {}",
            texts.len() as f64 / best,
            tokens as f64 / best,
            name
        );
    }
    if let Some(peak) = peak_rss_mib() {
        println!("peak RSS: {peak:.1} MiB");
    }
    Ok(())
}
