//! `ghola bench remote`: what a sync costs over a real SSH server — the first copy of a history of N transcript
//! files (MB/s), a sync with nothing new, and one after a single append — by rsync and by plain ssh.

use anyhow::{Context, Result};
use ghola::remote::{self, Remote, sync::SyncOptions};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// Runs the benchmark against `target` (`[user@]host`, reached with `GHOLA_SSH` or `ssh`), with a synthetic
/// history of `files` transcripts written under `work` (the server must see the same folder: a loopback sshd).
pub fn remote_bench(
    target: &str,
    port: Option<u16>,
    files: usize,
    work: &Path,
    ssh: Option<String>,
) -> Result<()> {
    let history = work.join(format!("remote-claude-{files}"));
    if !history.join("projects").is_dir() {
        write_history(&history, files)?;
    }
    let bytes: u64 = walk(&history.join("projects"))?;
    println!(
        "remote sync: {files} transcript files, {:.1} MB, over ssh to {target} (CPU: {})",
        bytes as f64 / 1e6,
        super::bench::cpu_name()
    );
    for plain in [false, true] {
        let idx = tempfile::tempdir_in(work)?;
        let r = Remote {
            name: "bench".into(),
            host: target.into(),
            port,
            identity: None,
            claude_dir: history.display().to_string(),
            map: Vec::new(),
            auto_map: Vec::new(),
            added: String::new(),
        };
        remote::add(idx.path(), "this-machine", r)?;
        let opts = SyncOptions {
            ssh_command: ssh.clone(),
            progress: false,
            local_claude_dir: work.join("no-such-claude"),
            wait: true,
            plain_ssh: plain,
        };
        let t = Instant::now();
        let first = remote::sync::sync(idx.path(), "bench", &opts).context("the first sync")?;
        let first_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let again = remote::sync::sync(idx.path(), "bench", &opts)?;
        let none_s = t.elapsed().as_secs_f64();
        // One appended line in one file.
        let one = history.join("projects/-bench-p0/s00000.jsonl");
        writeln!(
            std::fs::OpenOptions::new().append(true).open(&one)?,
            "{{\"type\":\"user\",\"uuid\":\"u-{}\",\"sessionId\":\"s00000\",\"cwd\":\"/bench/p0\",\"message\":{{\"role\":\"user\",\"content\":\"one more line\"}}}}",
            uuid_like()
        )?;
        let t = Instant::now();
        let append = remote::sync::sync(idx.path(), "bench", &opts)?;
        let append_s = t.elapsed().as_secs_f64();
        println!(
            "  {:5}  first sync {:.2} s ({:.1} MB/s, {} files) · nothing new {:.2} s ({} files) · one append {:.2} s ({} file, {} bytes)",
            first.method.name(),
            first_s,
            first.bytes as f64 / 1e6 / first_s,
            first.files,
            none_s,
            again.files,
            append_s,
            append.files,
            append.bytes
        );
    }
    Ok(())
}

fn uuid_like() -> String {
    format!(
        "{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )
}

/// `files` transcripts of about 4 KB each, in 100 projects.
fn write_history(dir: &Path, files: usize) -> Result<()> {
    for i in 0..files {
        let p = dir.join(format!("projects/-bench-p{}", i % 100));
        std::fs::create_dir_all(&p)?;
        let mut body = String::new();
        for l in 0..10 {
            body.push_str(&format!(
                "{{\"type\":\"user\",\"uuid\":\"u{i}-{l}\",\"sessionId\":\"s{i:05}\",\"cwd\":\"/bench/p{}\",\"timestamp\":\"2026-01-01T00:00:{l:02}Z\",\"message\":{{\"role\":\"user\",\"content\":\"{}\"}}}}\n",
                i % 100,
                "a line of a benchmark transcript about nothing in particular ".repeat(5)
            ));
        }
        std::fs::write(p.join(format!("s{i:05}.jsonl")), body)?;
    }
    Ok(())
}

fn walk(dir: &Path) -> Result<u64> {
    let mut n = 0;
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        n += if e.file_type()?.is_dir() {
            walk(&e.path())?
        } else {
            e.metadata()?.len()
        };
    }
    Ok(n)
}
