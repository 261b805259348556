//! `ghola bench …`: throughput figures printed with the command that reproduces them (no timing in tests).

use anyhow::{Result, bail};
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
