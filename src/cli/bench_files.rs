//! `ghola bench files`: what `ghola files` costs at N messages. A synthetic history whose assistants read, edit,
//! write and run commands on files (one tool call in five messages, files of ten projects touched with a skewed
//! frequency, as real ones are) is indexed by the real update (words only: the file map does not depend on
//! vectors); then the answer is timed in-process for a hundred files and as a fresh `ghola files` process.

use super::bench_scale::Rng;
use anyhow::{Context, Result};
use ghola::index::file_map::query::{FileQuery, file_history};
use ghola::index::{self, UpdateOptions};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// Messages per synthetic session.
const PER_SESSION: usize = 100;
/// Files per project.
const FILES: u64 = 2_000;
const PROJECTS: usize = 10;

fn file_of(rng: &mut Rng, project: &str) -> String {
    // The smaller of two draws: a few files are touched far more often than the rest.
    let a = rng.next() % FILES;
    let b = rng.next() % FILES;
    let n = a.min(b);
    let name = ["mod.rs", "lib.rs", "main.py", "index.ts", "README.md"][(n % 5) as usize];
    format!("{project}/src/dir{}/{name}", n / 5)
}

fn write_history(dir: &Path, messages: usize) -> Result<()> {
    let mut rng = Rng(0x51ED_2701_0BAD_F00D);
    for s in 0..messages.div_ceil(PER_SESSION) {
        let project = format!("/bench/files-project-{}", s % PROJECTS);
        let folder = dir.join("projects").join(project.replace('/', "-"));
        std::fs::create_dir_all(&folder)?;
        let id = format!("{:08x}-0000-4000-8000-{:012x}", s, s);
        let mut out =
            std::io::BufWriter::new(std::fs::File::create(folder.join(format!("{id}.jsonl")))?);
        let n = PER_SESSION.min(messages - s * PER_SESSION);
        for m in 0..n {
            let ts = format!(
                "2025-{:02}-{:02}T{:02}:{:02}:00Z",
                1 + (s / 28) % 12,
                1 + s % 28,
                (m / 60) % 24,
                m % 60
            );
            let uuid = format!("{id}-{m}");
            let base =
                serde_json::json!({"uuid": uuid, "sessionId": id, "cwd": project, "timestamp": ts});
            let mut v = base.clone();
            // Message pairs: a request or a tool result, then an answer or a tool call.
            let call = m % 10 == 5;
            if m % 2 == 0 {
                v["type"] = "user".into();
                v["message"] = if m % 10 == 6 {
                    serde_json::json!({"role": "user", "content": [{"type": "tool_result",
                        "tool_use_id": format!("t-{uuid}"), "content": "The file has been updated."}]})
                } else {
                    serde_json::json!({"role": "user", "content": rng.sentence(12)})
                };
            } else if call {
                let path = file_of(&mut rng, &project);
                let (name, input) = match rng.next() % 4 {
                    0 => ("Read", serde_json::json!({"file_path": path})),
                    1 => (
                        "Write",
                        serde_json::json!({"file_path": path,
                        "content": (0..30).map(|_| rng.sentence(6)).collect::<Vec<_>>().join("\n")}),
                    ),
                    2 => (
                        "Bash",
                        serde_json::json!({"command": format!("cargo test && cat {path}")}),
                    ),
                    _ => (
                        "Edit",
                        serde_json::json!({"file_path": path,
                        "old_string": rng.sentence(8), "new_string": format!("{}\n{}", rng.sentence(8), rng.sentence(8))}),
                    ),
                };
                v["type"] = "assistant".into();
                v["message"] = serde_json::json!({"id": format!("msg-{uuid}"), "role": "assistant",
                    "content": [{"type": "tool_use", "id": format!("t-{id}-{}", m + 1), "name": name, "input": input}]});
            } else {
                v["type"] = "assistant".into();
                v["message"] = serde_json::json!({"id": format!("msg-{uuid}"), "role": "assistant",
                    "content": [{"type": "text", "text": rng.sentence(20)}]});
            }
            writeln!(out, "{v}")?;
        }
        out.flush()?;
    }
    Ok(())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `ghola bench files --messages N`.
pub fn files_bench(work: &Path, messages: usize) -> Result<()> {
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    println!(
        "command: ghola bench files --messages {messages} --work {}",
        work.display()
    );
    let claude = work.join(format!("files-claude-{messages}"));
    let idx = work.join(format!("files-index-{messages}"));
    if !claude.is_dir() {
        write_history(&claude, messages)?;
    }
    let t = Instant::now();
    let s = index::update_words_only(&idx, &claude, UpdateOptions::default(), &mut |_| {})?;
    if s.messages_added > 0 {
        println!(
            "indexed {} messages words-only in {:.1} s (the file map built with them)",
            s.messages_added,
            t.elapsed().as_secs_f64()
        );
    } else {
        // An index kept from an earlier run: the map is rebuilt from the transcripts when it is missing.
        println!(
            "update of the kept index: {:.1} s (the file map rebuilt from every session when it was missing)",
            t.elapsed().as_secs_f64()
        );
    }
    let map = index::file_map::map_dir(&idx);
    let map_bytes = index::dir_size(&map);
    println!(
        "file map: {:.1} MB ({:.0} bytes per message)",
        map_bytes as f64 / 1e6,
        map_bytes as f64 / messages as f64
    );
    // A hundred files: the most touched one of each project, then files drawn as the history drew them.
    let mut rng = Rng(0x51ED_2701_0BAD_F00D ^ 0xFFFF);
    let mut paths: Vec<String> = (0..PROJECTS)
        .map(|p| format!("/bench/files-project-{p}/src/dir0/mod.rs"))
        .collect();
    while paths.len() < 100 {
        let p = format!("/bench/files-project-{}", rng.next() as usize % PROJECTS);
        paths.push(file_of(&mut rng, &p));
    }
    let mut times = Vec::new();
    let (mut found, mut most) = (0, 0usize);
    for p in &paths {
        let q = FileQuery {
            path: p.clone(),
            lines: None,
            base: None,
            project: None,
            max_sessions: 10,
            max_changes: 8,
        };
        let t = Instant::now();
        let h = file_history(&idx, &q)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        found += usize::from(!h.sessions.is_empty());
        most = most.max(h.sessions.len() + h.more_sessions);
    }
    let hot = times[..PROJECTS].iter().cloned().fold(0.0, f64::max);
    times.sort_by(f64::total_cmp);
    println!(
        "in-process answer over 100 files: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms (the most touched files: \
         {hot:.1} ms at most; {found} of 100 files found; the busiest touched by {most} sessions)",
        percentile(&times, 0.5),
        percentile(&times, 0.95),
        times.last().copied().unwrap_or(0.0)
    );
    for (label, extra) in [
        (
            "with its update (nothing new: one stat per transcript)",
            &[][..],
        ),
        ("--no-update", &["--no-update"][..]),
    ] {
        let mut runs = Vec::new();
        for _ in 0..5 {
            let mut args = vec!["files", paths[0].as_str(), "--json"];
            args.extend_from_slice(extra);
            runs.push(super::bench_listing::timed_run(&claude, &idx, &args)?.0 * 1e3);
        }
        runs.sort_by(f64::total_cmp);
        println!(
            "a fresh `ghola files` process, the busiest file, {label}: median {:.0} ms (of 5: {:.0}–{:.0})",
            runs[2], runs[0], runs[4]
        );
    }
    Ok(())
}
