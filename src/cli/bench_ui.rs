//! `ghola bench ui`: what a person waits for in `ghola ui` on a synthetic history of N/10 and N messages — the
//! server's start, the first search (a server just started: snapshot opened, words only until the model has
//! loaded), later searches, the sessions page, a session page — each a real HTTP request to a real `ghola ui`
//! process.

use super::bench_scale::{Rng, prepare};
use anyhow::{Context, Result, bail};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `ghola ui` process, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    cookie: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(claude: &Path, idx: &Path) -> Result<(Server, f64)> {
    let t = Instant::now();
    let mut child = Command::new(std::env::current_exe()?)
        .args(["--claude-dir", claude.to_str().unwrap_or_default()])
        .args(["--index-dir", idx.to_str().unwrap_or_default()])
        .args(["ui", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("ui stdout")?).read_line(&mut line)?;
    let started = t.elapsed().as_secs_f64();
    let Some((port, token)) = line
        .trim()
        .strip_prefix("http://127.0.0.1:")
        .and_then(|r| r.split_once("/?token="))
    else {
        bail!("ghola ui printed {line:?}");
    };
    let server = Server {
        child,
        addr: format!("127.0.0.1:{port}").parse()?,
        cookie: format!("ghola_ui={token}"),
    };
    Ok((server, started))
}

/// One GET; its wall time in seconds (the whole answer read), failing on a status other than 200.
fn get(s: &Server, path: &str) -> Result<f64> {
    let t = Instant::now();
    let mut c = TcpStream::connect(s.addr)?;
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nConnection: close\r\n\r\n",
        s.addr, s.cookie
    )?;
    let mut raw = Vec::new();
    c.read_to_end(&mut raw)?;
    let secs = t.elapsed().as_secs_f64();
    let head = String::from_utf8_lossy(&raw[..raw.len().min(64)]).into_owned();
    anyhow::ensure!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
    Ok(secs)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn query_path(q: &str) -> String {
    format!("/search?q={}", q.replace(' ', "+"))
}

/// `ghola bench ui --messages N`.
pub fn ui_bench(work: &Path, messages: usize) -> Result<()> {
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    println!(
        "command: ghola bench ui --messages {messages} --work {}",
        work.display()
    );
    let mut rng = Rng(7);
    let queries: Vec<String> = (0..21)
        .map(|_| {
            let words = 2 + (rng.next() % 3) as usize;
            rng.sentence(words)
        })
        .collect();
    for n in [messages / 10, messages] {
        let (claude, idx, files, _) = prepare(work, n)?;
        let (server, started) = start(&claude, &idx)?;
        let first = get(&server, &query_path(&queries[0]))?;
        // Later searches, once the model has had time to load in the background (by meaning as well).
        std::thread::sleep(Duration::from_secs(5));
        let later = median(
            queries[1..]
                .iter()
                .map(|q| get(&server, &format!("{}&part=results", query_path(q))))
                .collect::<Result<_>>()?,
        );
        let grouped = median(
            queries[1..6]
                .iter()
                .map(|q| get(&server, &format!("{}&group=session", query_path(q))))
                .collect::<Result<_>>()?,
        );
        let projects_first = get(&server, "/projects")?;
        let projects = median(
            (0..3)
                .map(|_| get(&server, "/projects"))
                .collect::<Result<_>>()?,
        );
        let id = files
            .first()
            .and_then(|f| f.file_stem())
            .map(|s| s.to_string_lossy().into_owned())
            .context("no session file")?;
        let session = median(
            (0..5)
                .map(|_| get(&server, &format!("/session/{id}")))
                .collect::<Result<_>>()?,
        );
        println!(
            "{n:>9} messages: ghola ui: address printed {:.0} ms after start; first search {:.0} ms (server just \
             started, words only); later searches median {:.0} ms (20, as typed: results only), by session {:.0} \
             ms; sessions page {:.0} ms first, {:.0} ms after; a session page {:.0} ms",
            started * 1e3,
            first * 1e3,
            later * 1e3,
            grouped * 1e3,
            projects_first * 1e3,
            projects * 1e3,
            session * 1e3
        );
    }
    Ok(())
}
