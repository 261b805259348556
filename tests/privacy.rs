//! Only you: ghola's folders are private (0700, files 0600) and an install made loose is tightened by its next
//! update (another local user, `nobody`, reads nothing once it is); `ghola status` warns while it is loose; the
//! browser's server cuts off a client that never finishes its request while it serves others; opening the
//! browser puts no secret on a command line; a logged-in browser sends another local server nothing that opens
//! the UI, and two UIs side by side both stay logged in (Chromium through WebDriver).

#![cfg(unix)]

use crate::common;

use common::browser::Ui;
use common::home::Home;
use common::transcript::Transcript;
use common::{run_json, run_ok};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Every folder and file at or below `dir`.
fn tree(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    out.push(dir.to_path_buf());
    if dir.is_dir() {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            tree(&e.path(), out);
        }
    }
}

fn loosen(dir: &Path) {
    let mut all = Vec::new();
    tree(dir, &mut all);
    for p in all {
        chmod(&p, if p.is_dir() { 0o755 } else { 0o644 });
    }
}

/// Whether the user `nobody` can read `file` (as root, through `runuser`); `None` where that cannot be tried.
fn nobody_reads(file: &Path) -> Option<bool> {
    let is_root = unsafe { libc::geteuid() } == 0;
    if !is_root || common::browser::which("runuser").is_none() {
        return None;
    }
    let out = Command::new("runuser")
        .args(["-u", "nobody", "--", "cat"])
        .arg(file)
        .output()
        .unwrap();
    Some(out.status.success())
}

#[test]
fn ghola_keeps_its_folders_private_and_tightens_a_loose_install() {
    let h = Home::new();
    // A home folder others may traverse, as many are.
    chmod(h.root(), 0o755);
    Transcript::new("7a1e0000-0000-4000-8000-000000000001", "/work/private")
        .user("the staging database runs on port 5433")
        .assistant("Noted: port 5433 for staging.")
        .write(&h.claude);
    run_ok(h.ghola().arg("index"));
    run_ok(
        h.ghola()
            .args(["notes", "on", "--project", "/work/private"]),
    );
    let manifest = h.idx.join("manifest.bin");
    let mut all = Vec::new();
    tree(&h.idx, &mut all);
    tree(&h.notes, &mut all);
    for p in &all {
        let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "{} is {mode:o}", p.display());
    }
    let status = run_json(h.ghola().args(["status", "--json"]));
    assert_eq!(
        status["readable_by_others"],
        serde_json::json!([]),
        "{status:#}"
    );
    // An install made loose (an older ghola, a copy, a umask): others can read it, and status says so.
    loosen(&h.idx);
    if let Some(read) = nobody_reads(&manifest) {
        assert!(
            read,
            "the test cannot tell: nobody cannot read a 0644 file under 0755 folders"
        );
    }
    let out = h.ghola().arg("status").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("readable by other users"), "{err}");
    let status = run_json(h.ghola().args(["status", "--json"]));
    assert!(!status["readable_by_others"].as_array().unwrap().is_empty());
    // The next update tightens it.
    run_ok(h.ghola().arg("index"));
    let status = run_json(h.ghola().args(["status", "--json"]));
    assert_eq!(
        status["readable_by_others"],
        serde_json::json!([]),
        "{status:#}"
    );
    if let Some(read) = nobody_reads(&manifest) {
        assert!(!read, "nobody read the index after the update");
    }
    let archived = h.idx.join("archive");
    let mut packs = Vec::new();
    tree(&archived, &mut packs);
    for p in packs.iter().filter(|p| p.is_file()) {
        if let Some(read) = nobody_reads(p) {
            assert!(!read, "nobody read {}", p.display());
        }
    }
}

#[test]
fn a_client_that_never_finishes_its_request_is_cut_off_while_others_are_served() {
    let h = Home::new();
    Transcript::new("7a1e0000-0000-4000-8000-000000000002", "/work/slow")
        .user("a message")
        .write(&h.claude);
    run_ok(h.ghola().arg("index"));
    let ui = Ui::start(h.ghola());
    let login = ui.log_in();
    let host = login.host.clone();
    let mut slow = std::net::TcpStream::connect(ui.addr).unwrap();
    write!(slow, "GET /search?q=a HTTP/1.1\r\nHost: {host}\r\n").unwrap();
    // Others are served meanwhile.
    let mut quick = std::net::TcpStream::connect(ui.addr).unwrap();
    write!(
        quick,
        "GET /search?q=a HTTP/1.1\r\nHost: {host}\r\nCookie: {}\r\nConnection: close\r\n\r\n",
        login.cookie
    )
    .unwrap();
    let mut page = String::new();
    quick.read_to_string(&mut page).unwrap();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    // The half-sent request is cut off a little after the header-read timeout.
    let t = Instant::now();
    slow.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    let waited = t.elapsed();
    assert!(
        waited < Duration::from_secs(15),
        "the connection stayed open {waited:?}"
    );
    assert!(
        !String::from_utf8_lossy(&rest).contains("200 OK"),
        "a half-sent request was answered"
    );
}

#[test]
fn opening_the_browser_puts_no_secret_on_a_command_line_and_its_link_works_once() {
    let h = Home::new();
    Transcript::new("7a1e0000-0000-4000-8000-000000000003", "/work/open")
        .user("a message")
        .write(&h.claude);
    run_ok(h.ghola().arg("index"));
    // A stand-in opener that records its command line, as any local user can read it in /proc.
    let bin = h.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let argv_log = h.root().join("argv.txt");
    let opener = bin.join("xdg-open");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\necho \"$@\" >> {}\n", argv_log.display()),
    )
    .unwrap();
    chmod(&opener, 0o755);
    let mut cmd = h.ghola();
    cmd.env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .args(["ui", "--port", "0", "--open"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    let token = first.trim().split_once("token=").unwrap().1.to_string();
    common::wait_for("the opener to run", Duration::from_secs(10), || {
        argv_log.exists()
    });
    let argv = std::fs::read_to_string(&argv_log).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(!argv.contains(&token) && !argv.contains("code="), "{argv}");
    // It names a page only this user can read, which sends the browser to a one-time link.
    let page = std::path::PathBuf::from(argv.trim().trim_start_matches("file://"));
    let mode = std::fs::metadata(&page).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", page.display());
    if let Some(read) = nobody_reads(&page) {
        assert!(!read, "nobody read the start page");
    }
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("/login?code="), "{html}");

    // The MCP tool opens the browser the same way.
    std::fs::remove_file(&argv_log).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let mut mcp = common::mcp_client::Client::start(&h.claude, &h.idx, &[("PATH", &path)]);
    let (is_error, text) = mcp.call(1, "open_history_browser", serde_json::json!({"open": true}));
    assert!(!is_error, "{text}");
    common::wait_for("the opener to run", Duration::from_secs(10), || {
        argv_log.exists()
    });
    let argv = std::fs::read_to_string(&argv_log).unwrap();
    assert!(!argv.contains("code=") && !argv.contains("token"), "{argv}");
    // Opened, the answer (which lands in the transcript) carries no link at all.
    assert!(
        !text.contains("code=") && !text.contains("token="),
        "{text}"
    );
}

/// A server on another 127.0.0.1 port that keeps every request it is sent.
struct Collector {
    port: u16,
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Collector {
    fn start() -> Collector {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = seen.clone();
        std::thread::spawn(move || {
            for mut s in listener.incoming().flatten() {
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = vec![0u8; 16384];
                let n = s.read(&mut buf).unwrap_or(0);
                kept.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned());
                let body = "<!doctype html><title>dev server</title><p id=here>a dev server";
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Collector { port, seen }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn another_local_server_receives_nothing_the_browser_login_opens_and_two_uis_stay_logged_in()
{
    use common::browser::{appears, chromium, http_get, skipped, start_driver, webdriver, which};
    use fantoccini::Locator;
    let (Some(chromium), Some(chromedriver)) = (chromium(), which("chromedriver")) else {
        return skipped("chromium or chromedriver");
    };
    let h = Home::new();
    Transcript::new("7a1e0000-0000-4000-8000-000000000004", "/work/cookies")
        .user("the cookie jar question")
        .write(&h.claude);
    run_ok(h.ghola().arg("index"));
    let (first, second) = (Ui::start(h.ghola()), Ui::start(h.ghola()));
    let driver = start_driver(&chromedriver);
    let profile = tempfile::tempdir().unwrap();
    let c = webdriver(&chromium, &driver, profile.path()).await;
    let mut origins = Vec::new();
    for ui in [&first, &second] {
        c.goto(&format!("http://{}/?token={}", ui.addr, ui.token))
            .await
            .unwrap();
        appears(&c, Locator::Css("input[name=q]")).await;
        let at = c.current_url().await.unwrap();
        origins.push(format!(
            "http://{}:{}",
            at.host_str().unwrap_or(""),
            at.port().unwrap_or(80)
        ));
    }
    assert_ne!(
        origins[0], origins[1],
        "each server has a host name of its own"
    );

    // The logged-in browser visits a dev server on another loopback port, by every name loopback has.
    let dev = Collector::start();
    for host in ["127.0.0.1", "localhost"] {
        c.goto(&format!("http://{host}:{}/", dev.port))
            .await
            .unwrap();
        appears(&c, Locator::Id("here")).await;
    }
    let seen = dev.seen.lock().unwrap().clone();
    assert!(seen.len() >= 2, "{seen:?}");
    for request in &seen {
        for ui in [&first, &second] {
            assert!(
                !request.contains(&ui.token),
                "the dev server got a token: {request}"
            );
            // Whatever cookie it was sent, no door of the UI takes it.
            for cookie in request.lines().filter_map(|l| {
                l.strip_prefix("Cookie: ")
                    .or_else(|| l.strip_prefix("cookie: "))
            }) {
                let login = ui.log_in();
                for host in [login.host.as_str(), &ui.addr.to_string()] {
                    let answer = http_get(ui.addr, host, "/search?q=cookie", cookie).unwrap();
                    assert!(answer.starts_with("HTTP/1.1 401"), "{cookie} opened {host}");
                }
            }
        }
    }

    // Both UIs are still logged in: the second login did not replace the first one's cookie.
    for origin in &origins {
        c.goto(&format!("{origin}/search?q=cookie")).await.unwrap();
        appears(&c, Locator::Css("#results .hit mark")).await;
    }
    c.close().await.unwrap();
}
