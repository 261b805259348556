//! `ghola ui` from outside: the address on the first line of stdout, 401 without the token, 403 for a foreign
//! Host, loopback only, a search that shows the hit and links to its place in the session, the session read as
//! a conversation with its tool results folded — over HTTP, and rendered by a real headless Chromium.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

mod common;

use common::{ghola_at, run_json, run_ok};

/// A running `ghola ui`, killed when dropped.
struct Ui {
    child: Child,
    addr: SocketAddr,
    token: String,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(claude: &Path, index: &Path) -> Ui {
    let mut child = ghola_at(claude, index)
        .args(["ui", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim();
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .unwrap_or_else(|| panic!("first line: {url:?}"));
    let (port, token) = rest.split_once("/?token=").unwrap();
    Ui {
        child,
        addr: format!("127.0.0.1:{port}").parse().unwrap(),
        token: token.to_string(),
    }
}

/// One HTTP/1.1 GET; returns the status, the headers (lowercased names) and the body.
fn get(addr: SocketAddr, path: &str, host: &str, cookie: Option<&str>) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let cookie = cookie
        .map(|c| format!("Cookie: {c}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\n{cookie}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// A word of the history to search for (the longest plain word of a session's first user message), and that
/// session's id: the first session listed that has a tool result.
fn a_word(claude: &Path, index: &Path) -> (String, String) {
    let run = |args: &[&str]| -> serde_json::Value { run_json(ghola_at(claude, index).args(args)) };
    let list = run(&["sessions", "--global", "--json"]);
    for s in list["sessions"].as_array().unwrap() {
        let id = s["session_id"].as_str().unwrap().to_string();
        let v = run(&["show", &id, "--json"]);
        let messages = v["messages"].as_array().cloned().unwrap_or_default();
        let parts: Vec<serde_json::Value> = messages
            .iter()
            .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
            .collect();
        if !parts
            .iter()
            .any(|p| p["type"] == "tool_result" || p["kind"] == "tool_result")
        {
            continue;
        }
        let text = messages
            .iter()
            .filter(|m| m["role"] == "user")
            .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
            .find_map(|p| p["text"].as_str().map(str::to_string));
        let word = text.as_deref().and_then(|t| {
            t.split(|c: char| !c.is_ascii_alphabetic())
                .filter(|w| w.len() >= 6)
                .max_by_key(|w| w.len())
                .map(str::to_ascii_lowercase)
        });
        if let Some(word) = word {
            return (word, id);
        }
    }
    panic!(
        "no session with a user message and a tool result in {}",
        claude.display()
    );
}

#[test]
fn the_browser_finds_a_hit_reads_its_session_and_strangers_are_refused() {
    let Some(claude) = common::shared("corpus/cc-2.1.330") else {
        return;
    };
    let index = tempfile::tempdir().unwrap();
    run_ok(ghola_at(&claude, index.path()).args(["index", "--json"]));
    let (word, with_tools) = a_word(&claude, index.path());
    let ui = start(&claude, index.path());
    let host = ui.addr.to_string();

    // Without the token: 401; with a foreign Host, even with the token: 403.
    let (status, _, _) = get(ui.addr, "/search?q=x", &host, None);
    assert_eq!(status, 401);
    let (status, _, _) = get(
        ui.addr,
        &format!("/?token={}", ui.token),
        &format!("evil.example:{}", ui.addr.port()),
        None,
    );
    assert_eq!(status, 403);
    let (status, _, _) = get(ui.addr, "/?token=0000", &host, None);
    assert_eq!(status, 401);

    // The token sets a cookie that then suffices.
    let (status, head, _) = get(ui.addr, &format!("/?token={}", ui.token), &host, None);
    assert_eq!(status, 200);
    assert!(
        head.contains(&format!("set-cookie: ghola_ui={}", ui.token)),
        "{head}"
    );
    assert!(
        head.contains("httponly") && head.contains("samesite=strict"),
        "{head}"
    );
    assert!(!head.contains("access-control-allow-origin"), "{head}");
    let cookie = format!("ghola_ui={}", ui.token);

    // A search shows the word highlighted and links to the hit's place in its session.
    let (status, _, body) = get(ui.addr, &format!("/search?q={word}"), &host, Some(&cookie));
    assert_eq!(status, 200, "{body}");
    assert!(
        body.to_ascii_lowercase()
            .contains(&format!("<mark>{word}</mark>")),
        "{word} not marked"
    );
    // Filters as on the command line: a date long past keeps the hit, a malformed one is a clear 400.
    let (status, _, since) = get(
        ui.addr,
        &format!("/search?q={word}&since=2000-01-01"),
        &host,
        Some(&cookie),
    );
    assert_eq!(status, 200);
    assert!(
        since
            .to_ascii_lowercase()
            .contains(&format!("<mark>{word}</mark>"))
    );
    assert!(
        since.contains("value=\"2000-01-01\""),
        "the form keeps the filter"
    );
    let (status, _, bad) = get(
        ui.addr,
        &format!("/search?q={word}&since=someday"),
        &host,
        Some(&cookie),
    );
    assert_eq!(status, 400);
    assert!(
        bad.contains("<p class=note>") && bad.contains("someday"),
        "{bad}"
    );
    let link = body
        .split("href=\"/session/")
        .nth(1)
        .expect("a link to a session");
    let link = &link[..link.find('"').unwrap()];
    let (session, anchor) = link.split_once("#m-").unwrap();

    // The session reads as a conversation, the hit's message anchored; tool results are folded.
    let (status, _, page) = get(
        ui.addr,
        &format!("/session/{session}"),
        &host,
        Some(&cookie),
    );
    assert_eq!(status, 200);
    assert!(
        page.contains(&format!("id=\"m-{anchor}\"")),
        "the hit's anchor is missing"
    );
    assert!(page.to_ascii_lowercase().contains(&word));
    let (status, _, page) = get(
        ui.addr,
        &format!("/session/{with_tools}"),
        &host,
        Some(&cookie),
    );
    assert_eq!(status, 200);
    assert!(
        page.contains("<details class=result><summary>tool result"),
        "no folded tool result"
    );
    let (status, _, _) = get(ui.addr, "/session/nosuchsession", &host, Some(&cookie));
    assert_eq!(status, 404);

    // Loopback only: the machine's other address does not answer on that port.
    if let Some(ip) = outward_address() {
        let there = SocketAddr::new(ip, ui.addr.port());
        assert!(
            TcpStream::connect_timeout(&there, std::time::Duration::from_secs(2)).is_err(),
            "ghola ui answered on {there}"
        );
    }

    // A real browser renders the search and the session.
    let Some(chromium) = chromium() else {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but no chromium"
        );
        eprintln!("no chromium here: the browser half skipped");
        return;
    };
    let dom = dump_dom(
        &chromium,
        &format!("http://{host}/search?q={word}&token={}", ui.token),
    );
    assert!(
        dom.to_ascii_lowercase()
            .contains(&format!("<mark>{word}</mark>")),
        "chromium: {}",
        &dom[..dom.len().min(400)]
    );
    let dom = dump_dom(
        &chromium,
        &format!("http://{host}/session/{session}?token={}", ui.token),
    );
    assert!(
        dom.contains(&format!("id=\"m-{anchor}\"")),
        "chromium did not render the session"
    );
    let dom = dump_dom(&chromium, &format!("http://{host}/search?q={word}"));
    assert!(
        !dom.contains("<mark>"),
        "chromium without the token saw results"
    );
}

/// This machine's address toward the outside (no packet is sent), if it has one besides loopback.
fn outward_address() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("10.255.255.255:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|n| which(n))
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

fn dump_dom(chromium: &Path, url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .stderr(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}
