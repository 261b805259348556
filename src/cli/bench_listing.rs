//! `ghola bench search`'s listing lines: what `ghola projects`, `ghola sessions` and the server's listing tools
//! cost on a synthetic history, cold and warm.

use anyhow::Result;
use std::path::Path;
use std::time::Instant;

/// Runs this ghola on `claude`/`idx` with `args` as a fresh process; returns its wall time in seconds and the
/// peak resident memory it reported (MiB; NaN when it could not say).
pub fn timed_run(claude: &Path, idx: &Path, args: &[&str]) -> Result<(f64, f64)> {
    let t = Instant::now();
    let out = std::process::Command::new(std::env::current_exe()?)
        .args(["--claude-dir", claude.to_str().unwrap_or_default()])
        .args(["--index-dir", idx.to_str().unwrap_or_default()])
        .args(args)
        .env("GHOLA_REPORT_PEAK_RSS", "1")
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rss = String::from_utf8_lossy(&out.stderr)
        .lines()
        .find_map(|l| l.strip_prefix("ghola-peak-rss-mib: ")?.parse::<f64>().ok())
        .unwrap_or(f64::NAN);
    Ok((t.elapsed().as_secs_f64(), rss))
}

/// The listings at `n` messages: cold `ghola projects --json` and `ghola sessions --global --json` processes
/// (the first without the listing cache, as after an upgrade, then with it: what every later call pays), and the
/// refresh a running server does per `duncan_projects` / `duncan_list_sessions` call (the listing kept in memory).
pub fn listing_lines(n: usize, claude: &Path, idx: &Path) -> Result<()> {
    use ghola::transcript::catalog::{CACHE_FILE, Listing};
    let run = |args: &[&str]| timed_run(claude, idx, args);
    let median = |args: &[&str]| -> Result<(f64, f64)> {
        let mut runs = (0..3).map(|_| run(args)).collect::<Result<Vec<_>>>()?;
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok(runs[1])
    };
    let _ = std::fs::remove_file(idx.join(CACHE_FILE));
    let (first, first_rss) = run(&["projects", "--json"])?;
    let (projects, projects_rss) = median(&["projects", "--json"])?;
    let (sessions, sessions_rss) = median(&["sessions", "--global", "--json"])?;
    let sources = ghola::index::archive::sources(idx);
    let mut kept = Some(Listing::refresh(
        &sources,
        claude,
        Some(&idx.join(CACHE_FILE)),
        None,
    ));
    let mut per_call = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let l = Listing::refresh(&sources, claude, Some(&idx.join(CACHE_FILE)), kept.take());
        let _ = (l.projects(), l.sessions_in(None).len());
        per_call.push(t.elapsed().as_secs_f64());
        kept = Some(l);
    }
    per_call.sort_by(f64::total_cmp);
    // `get_session_detail`: discovery, then the one session asked for, read whole.
    let mut detail = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let found = sources.discover_all(claude);
        if let Some(f) = found.sessions.first() {
            let s = ghola::transcript::load_session(&sources, f);
            std::hint::black_box(s.messages.len());
        }
        detail.push(t.elapsed().as_secs_f64());
    }
    detail.sort_by(f64::total_cmp);
    println!(
        "{n:>9} messages: one session's detail (discovery, then its transcript read whole) {:.1} ms (median of 5)",
        detail[2] * 1e3
    );
    let tools = mcp_tool_calls(claude, idx)?;
    println!(
        "{n:>9} messages: inside a real `ghola serve` (stdio round trip, median of 5 after the first pass): \
         duncan_projects {:.1} ms, duncan_list_sessions {:.1} ms, get_session_detail {:.1} ms",
        tools[0] * 1e3,
        tools[1] * 1e3,
        tools[2] * 1e3
    );
    println!(
        "{n:>9} messages: listings: cold `ghola projects --json` {:.0} ms without the listing cache ({:.0} MiB), \
         {:.0} ms with it ({:.0} MiB); cold `ghola sessions --global --json` {:.0} ms ({:.0} MiB); a running \
         server's refresh per listing call {:.1} ms (median of 5)",
        first * 1e3,
        first_rss,
        projects * 1e3,
        projects_rss,
        sessions * 1e3,
        sessions_rss,
        per_call[2] * 1e3
    );
    Ok(())
}

/// The listing tools as a model calls them: a real `ghola serve` on stdio, the handshake, then each tool called
/// until the server's first pass is over, and five more calls timed; returns the median round trip of
/// `duncan_projects`, `duncan_list_sessions` (global) and `get_session_detail` (around nothing, the first page of
/// the newest session), in seconds.
fn mcp_tool_calls(claude: &Path, idx: &Path) -> Result<[f64; 3]> {
    use serde_json::{Value, json};
    use std::io::{BufRead, BufReader, Write};
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .args(["--claude-dir", claude.to_str().unwrap_or_default()])
        .args(["--index-dir", idx.to_str().unwrap_or_default()])
        .arg("serve")
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdin"))?;
    let mut stdout = BufReader::new(
        child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?,
    );
    let mut id = 0u64;
    let mut call = |method: &str, params: Value| -> Result<Value> {
        if method.starts_with("notifications/") {
            // A notification has no id and no answer.
            writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": method}))?;
            stdin.flush()?;
            return Ok(Value::Null);
        }
        id += 1;
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )?;
        stdin.flush()?;
        loop {
            let mut line = String::new();
            anyhow::ensure!(stdout.read_line(&mut line)? > 0, "the server closed stdout");
            let v: Value = serde_json::from_str(&line)?;
            if v.get("id") == Some(&json!(id)) {
                return Ok(v);
            }
        }
    };
    call(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
    )?;
    call("notifications/initialized", Value::Null)?;
    // A search waits for the first pass: after it, the server's listing is warm and watched.
    call(
        "tools/call",
        json!({"name": "search_global_history", "arguments": {"query": "warm up"}}),
    )?;
    let listed = call(
        "tools/call",
        json!({"name": "duncan_list_sessions", "arguments": {"mode": "global", "limit": 1}}),
    )?;
    let text = listed["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("{}");
    let first: Value = serde_json::from_str(text)?;
    let session = first["sessions"][0]["session_id"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let tools = [
        ("duncan_projects", json!({})),
        ("duncan_list_sessions", json!({"mode": "global"})),
        (
            "get_session_detail",
            json!({"session_id": session, "limit": 20}),
        ),
    ];
    let mut out = [0.0; 3];
    for (i, (name, args)) in tools.iter().enumerate() {
        call("tools/call", json!({"name": name, "arguments": args}))?;
        let mut times = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let r = call("tools/call", json!({"name": name, "arguments": args}))?;
            times.push(t.elapsed().as_secs_f64());
            anyhow::ensure!(r["result"]["isError"] != json!(true), "{name}: {r}");
        }
        times.sort_by(f64::total_cmp);
        out[i] = times[2];
    }
    let _ = child.kill();
    let _ = child.wait();
    Ok(out)
}
