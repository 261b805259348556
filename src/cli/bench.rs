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

/// Embeds the reference texts on every dense-layer kernel this CPU runs (and under two batching set-ups on the
/// default one), then, `rounds` times in alternation, times a whole `ghola embed` process per kernel and, given a
/// Python with sentence-transformers, their embedding of the same texts; prints texts/s, tokens/s, the median of
/// each and the ratios, the parity of each kernel's vectors and peak memory.
pub fn embed(
    model_dir: Option<&Path>,
    texts_path: &Path,
    rounds: usize,
    python: Option<&Path>,
) -> Result<()> {
    use ghola::embed::{Embedder, Kernel, kernel};
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
    let rounds = rounds.max(1);
    let start = Instant::now();
    let mut embedder =
        Embedder::from_places(&ghola::config::Environment::read().model_places(model_dir))?;
    let load = start.elapsed().as_secs_f64();
    let default_kernel = embedder.kernel();
    let here: Vec<Kernel> = kernel::ALL.into_iter().filter(|k| k.runs_here()).collect();
    let tokens: usize = embedder
        .embed_chunked(&refs, 1)?
        .iter()
        .map(|t| t.tokens.min(254) + 2)
        .sum();
    println!(
        "command: ghola bench embed --texts {} --rounds {rounds}{}",
        texts_path.display(),
        python.map_or(String::new(), |p| format!(
            " --sentence-transformers {}",
            p.display()
        ))
    );
    println!(
        "cpu: {}   cores: {}   kernels here: {}   default: {default_kernel}",
        cpu_name(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        here.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
    );
    println!(
        "model load: {:.0} ms   texts: {}   tokens (first chunk, with [CLS]/[SEP]): {tokens}",
        load * 1e3,
        texts.len()
    );
    let vectors = in_process(&mut embedder, &here, &refs, tokens, rounds)?;
    let reference = texts_path.with_file_name("minilm-vectors.f32");
    if let Ok(raw) = std::fs::read(&reference) {
        print_parity(&vectors, &raw, &reference.display().to_string());
    }
    drop(embedder);
    // The whole command a user runs (start, load, read, embed, print) on each kernel, alternating with
    // sentence-transformers' embedding, `rounds` times: medians, so that a noisy moment moves no figure.
    let exe = std::env::current_exe()?;
    let mut process_secs: Vec<Vec<f64>> = vec![Vec::new(); here.len()];
    let mut st_secs = Vec::new();
    let mut st_figures = serde_json::Value::Null;
    let mut st_vectors = Vec::new();
    for _ in 0..rounds {
        if let Some(python) = python {
            let (secs, figures, raw) = sentence_transformers(python, model_dir, texts_path)?;
            st_secs.push(secs);
            st_figures = figures;
            st_vectors = raw;
        }
        for (i, k) in here.iter().enumerate() {
            let t = Instant::now();
            let mut cmd = std::process::Command::new(&exe);
            if let Some(dir) = model_dir {
                cmd.arg("--model-dir").arg(dir);
            }
            let status = cmd
                .arg("embed")
                .env("GHOLA_EMBED_KERNEL", k.name())
                .stdin(std::fs::File::open(texts_path)?)
                .stdout(std::process::Stdio::null())
                .status()?;
            if !status.success() {
                bail!("ghola embed failed: {status}");
            }
            process_secs[i].push(t.elapsed().as_secs_f64());
        }
    }
    let st = (!st_secs.is_empty()).then(|| median(&st_secs));
    if let Some(st) = st {
        println!(
            "{:>7.1} texts/s {:>8.0} tokens/s  sentence-transformers {} (PyTorch {}, {} threads), batch 32: \
             embedding {st:.2} s, median of {} (import + load {:.1} s more)",
            texts.len() as f64 / st,
            tokens as f64 / st,
            st_figures["sentence_transformers"].as_str().unwrap_or("?"),
            st_figures["torch"].as_str().unwrap_or("?"),
            st_figures["threads"],
            st_secs.len(),
            st_figures["import_and_load_s"].as_f64().unwrap_or(0.0),
        );
    }
    for (k, secs) in here.iter().zip(&process_secs) {
        let m = median(secs);
        println!(
            "whole `GHOLA_EMBED_KERNEL={k} ghola embed < {}` process: {m:.2} s, median of {} ({:.1} texts/s){}",
            texts_path.display(),
            secs.len(),
            texts.len() as f64 / m,
            st.map_or(String::new(), |st| format!(
                "; sentence-transformers' embedding alone / this: {:.2}x",
                st / m
            ))
        );
    }
    if !st_vectors.is_empty() {
        print_parity(
            &vectors,
            &st_vectors,
            "sentence-transformers' vectors of this run",
        );
    }
    if let Some(peak) = peak_rss_mib() {
        println!("peak RSS: {peak:.1} MiB");
    }
    Ok(())
}

/// The texts in-process on the default kernel one batch at a time, then on every kernel `here` with the default
/// batching (the best of `rounds` each, printed); returns each kernel's vectors, for parity.
fn in_process(
    embedder: &mut ghola::embed::Embedder,
    here: &[ghola::embed::Kernel],
    refs: &[&str],
    tokens: usize,
    rounds: usize,
) -> Result<Vec<(ghola::embed::Kernel, Vec<ghola::embed::Vector>)>> {
    use ghola::embed::{BatchPolicy, Kernel, KernelChoice};
    let one_at_a_time = BatchPolicy {
        max_batch_tokens: usize::MAX,
        max_batch_seqs: 32,
        parallel_batches: false,
    };
    let mut setups: Vec<(Kernel, &str, BatchPolicy)> = vec![(
        embedder.kernel(),
        "batches of 32, one at a time",
        one_at_a_time,
    )];
    setups.extend(
        here.iter()
            .map(|&k| (k, "768-token batches, one per core", BatchPolicy::default())),
    );
    let mut vectors = Vec::new();
    for (k, name, policy) in setups {
        embedder.set_batch_policy(policy);
        let in_effect = embedder.set_kernel(KernelChoice::Named(k))?;
        let mut best = f64::MAX;
        let mut got = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            got = embedder.embed(refs)?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        if !vectors.iter().any(|(n, _)| *n == in_effect) {
            vectors.push((in_effect, got));
        }
        println!(
            "{:>7.1} texts/s {:>8.0} tokens/s  {in_effect}, {name}{}",
            refs.len() as f64 / best,
            tokens as f64 / best,
            if in_effect != k {
                format!(" (asked for {k}: it failed its check)")
            } else {
                String::new()
            }
        );
    }
    Ok(vectors)
}

/// One run of sentence-transformers' side: its embedding seconds, the figures it printed, and its vectors.
fn sentence_transformers(
    python: &Path,
    model_dir: Option<&Path>,
    texts_path: &Path,
) -> Result<(f64, serde_json::Value, Vec<u8>)> {
    let out = tempfile::NamedTempFile::new()?;
    let model = ghola::embed::resolve(&ghola::config::Environment::read().model_places(model_dir))?;
    let model_dir = model
        .weights
        .parent()
        .context("the model weights have no folder")?;
    let run = std::process::Command::new(python)
        .arg("-c")
        .arg(ST_SIDE)
        .arg(model_dir)
        .arg(texts_path)
        .arg("1")
        .arg(out.path())
        .stderr(std::process::Stdio::null())
        .output()
        .with_context(|| format!("running {}", python.display()))?;
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
    let secs = figures["embed_s"].as_f64().context("no embed_s")?;
    Ok((secs, figures, std::fs::read(out.path())?))
}

/// The middle value (the mean of the two middle ones for an even count).
fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The CPU's model name (Linux's /proc/cpuinfo; "unknown" elsewhere), for figures that name their machine.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Prints, for each kernel's vectors, the worst cosine to `raw` (little-endian f32 rows of 384, one per text);
/// nothing when `raw` does not hold one row per text.
fn print_parity(
    vectors: &[(ghola::embed::Kernel, Vec<ghola::embed::Vector>)],
    raw: &[u8],
    against: &str,
) {
    let want: Vec<f32> = raw
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    for (kernel, got) in vectors {
        if want.len() == got.len() * ghola::embed::DIM {
            println!(
                "parity, {kernel}: worst cosine {:.6} to {against}",
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
