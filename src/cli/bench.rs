//! `ghola bench …`: throughput figures printed with the command that reproduces them (no timing in tests).

use anyhow::{Context, Result, bail};
use ghola::transcript;
use std::path::Path;
use std::time::Instant;

pub use super::peak_rss_mib;

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
            transcript::stream_entries(&transcript::Sources::disk(), f, 0, |_| entries += 1);
        }
        rounds += 1;
    }
    let stream = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut messages = 0usize;
    for s in &found.sessions {
        messages += transcript::load_session(&transcript::Sources::disk(), s)
            .all_messages()
            .count();
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

/// sentence-transformers' side of `ghola bench embed` (run with the interpreter the user names).
const ST_SIDE: &str = include_str!("../../bench/embed/st_side.py");

/// Embeds the reference texts under several batching set-ups and both precisions, times a whole `ghola embed`
/// process, and, given a Python with sentence-transformers, embeds the same texts there in the same run; prints
/// texts/s, tokens/s, the ratios, the parity of each precision and peak memory.
pub fn embed(
    model_dir: Option<&Path>,
    texts_path: &Path,
    rounds: usize,
    python: Option<&Path>,
) -> Result<()> {
    use ghola::embed::{BatchPolicy, Embedder, Precision};
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
    let default_precision = embedder.precision();
    let tokens: usize = embedder
        .embed_chunked(&refs, 1)?
        .iter()
        .map(|t| t.tokens.min(254) + 2)
        .sum();
    println!(
        "command: ghola bench embed --texts {}{}",
        texts_path.display(),
        python.map_or(String::new(), |p| format!(
            " --sentence-transformers {}",
            p.display()
        ))
    );
    println!(
        "model load: {:.0} ms   texts: {}   tokens (first chunk, with [CLS]/[SEP]): {tokens}   AMX bf16 tiles: {}",
        load * 1e3,
        texts.len(),
        if Precision::Bf16.effective() == Precision::Bf16 {
            "yes"
        } else {
            "no (bf16 rows run in f32)"
        }
    );
    let budget = |tokens, parallel| BatchPolicy {
        max_batch_tokens: tokens,
        max_batch_seqs: 64,
        parallel_batches: parallel,
    };
    let one_at_a_time = BatchPolicy {
        max_batch_tokens: usize::MAX,
        max_batch_seqs: 32,
        parallel_batches: false,
    };
    let setups = [
        (
            "batches of 32, one at a time",
            one_at_a_time,
            Precision::F32,
        ),
        (
            "768-token batches, one per core",
            BatchPolicy::default(),
            Precision::F32,
        ),
        (
            "batches of 32, one at a time",
            one_at_a_time,
            Precision::Bf16,
        ),
        (
            "2048-token batches, one per core",
            budget(2048, true),
            Precision::Bf16,
        ),
        (
            "512-token batches, one per core",
            budget(512, true),
            Precision::Bf16,
        ),
        (
            "768-token batches, one per core",
            BatchPolicy::default(),
            Precision::Bf16,
        ),
    ];
    println!(
        "matrix products split across {} thread(s) (RAYON_NUM_THREADS; ghola sets 1 unless told otherwise)",
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "all".into())
    );
    let mut vectors = std::collections::HashMap::new();
    let mut default_secs = f64::MAX;
    for (name, policy, precision) in setups {
        embedder.set_batch_policy(policy);
        let in_effect = embedder.set_precision(precision);
        let mut best = f64::MAX;
        for _ in 0..rounds.max(1) {
            let t = Instant::now();
            let v = embedder.embed(&refs)?;
            best = best.min(t.elapsed().as_secs_f64());
            vectors.entry(format!("{in_effect:?}")).or_insert(v);
        }
        let is_default = in_effect == default_precision
            && policy.max_batch_tokens == 768
            && policy.parallel_batches;
        if is_default {
            default_secs = default_secs.min(best);
        }
        println!(
            "{:>7.1} texts/s {:>8.0} tokens/s  {in_effect:?}, {name}{}",
            texts.len() as f64 / best,
            tokens as f64 / best,
            if is_default { " [default]" } else { "" }
        );
    }
    embedder.set_batch_policy(BatchPolicy::default());
    embedder.set_precision(default_precision);
    // The whole command a user runs: start, load, read, embed, print.
    let exe = std::env::current_exe()?;
    let mut process_secs = f64::MAX;
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        let mut cmd = std::process::Command::new(&exe);
        if let Some(dir) = model_dir {
            cmd.arg("--model-dir").arg(dir);
        }
        let status = cmd
            .arg("embed")
            .stdin(std::fs::File::open(texts_path)?)
            .stdout(std::process::Stdio::null())
            .status()?;
        if !status.success() {
            bail!("ghola embed failed: {status}");
        }
        process_secs = process_secs.min(t.elapsed().as_secs_f64());
    }
    println!(
        "whole `ghola embed < {}` process: {process_secs:.2} s ({:.1} texts/s)",
        texts_path.display(),
        texts.len() as f64 / process_secs
    );
    let reference = texts_path.with_file_name("minilm-vectors.f32");
    if let Ok(raw) = std::fs::read(&reference) {
        print_parity(&vectors, &raw, &reference.display().to_string());
    }
    if let Some(python) = python {
        let out = tempfile::NamedTempFile::new()?;
        let model = ghola::embed::resolve(model_dir)?;
        let model_dir = model
            .weights
            .parent()
            .context("the model weights have no folder")?;
        let t = Instant::now();
        let run = std::process::Command::new(python)
            .arg("-c")
            .arg(ST_SIDE)
            .arg(model_dir)
            .arg(texts_path)
            .arg(rounds.max(1).to_string())
            .arg(out.path())
            .stderr(std::process::Stdio::null())
            .output()
            .with_context(|| format!("running {}", python.display()))?;
        let whole = t.elapsed().as_secs_f64();
        if !run.status.success() {
            bail!(
                "{} could not run sentence-transformers ({}): install it with `{0} -m pip install torch \
                 sentence-transformers`",
                python.display(),
                run.status
            );
        }
        let figures: serde_json::Value = serde_json::from_slice(&run.stdout)
            .context("sentence-transformers' side printed no figures")?;
        let st_secs = figures["embed_s"].as_f64().context("no embed_s")?;
        let import_secs = figures["import_and_load_s"].as_f64().unwrap_or(0.0);
        let theirs = std::fs::read(out.path())?;
        println!(
            "{:>7.1} texts/s {:>8.0} tokens/s  sentence-transformers {} (PyTorch {}, {} threads), batch 32 \
             (import + load {import_secs:.1} s, whole process {whole:.1} s for {} rounds)",
            texts.len() as f64 / st_secs,
            tokens as f64 / st_secs,
            figures["sentence_transformers"].as_str().unwrap_or("?"),
            figures["torch"].as_str().unwrap_or("?"),
            figures["threads"],
            rounds.max(1)
        );
        println!(
            "ghola vs sentence-transformers, same run: embedding {:.2}x ({default_precision:?} default set-up, \
             {default_secs:.2} s vs {st_secs:.2} s); whole `ghola embed` process vs their embedding alone: {:.2}x \
             ({process_secs:.2} s)",
            st_secs / default_secs,
            st_secs / process_secs
        );
        print_parity(
            &vectors,
            &theirs,
            "sentence-transformers' vectors of this run",
        );
    }
    if let Some(peak) = peak_rss_mib() {
        println!("peak RSS: {peak:.1} MiB");
    }
    Ok(())
}

/// Prints, for each precision's vectors, the worst cosine to `raw` (little-endian f32 rows of 384, one per
/// text); nothing when `raw` does not hold one row per text.
fn print_parity(
    vectors: &std::collections::HashMap<String, Vec<ghola::embed::Vector>>,
    raw: &[u8],
    against: &str,
) {
    let want: Vec<f32> = raw
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    for (name, got) in vectors {
        if want.len() == got.len() * ghola::embed::DIM {
            println!(
                "parity, {name}: worst cosine {:.6} to {against}",
                worst_cosine(got, &want)
            );
        }
    }
}

/// The lowest cosine between row i of `got` and row i of `want` (`want` flat, 384 a row).
fn worst_cosine(got: &[ghola::embed::Vector], want: &[f32]) -> f32 {
    got.iter()
        .zip(want.chunks_exact(ghola::embed::DIM))
        .map(|(a, b)| ghola::embed::cosine(a, b))
        .fold(1.0, f32::min)
}
