//! A real browser for tests: Debian's `chromium` (headless), found on PATH.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running `ghola ui`, killed when dropped.
pub struct Ui {
    child: Child,
    /// Where it listens (127.0.0.1 and a free port).
    pub addr: SocketAddr,
    /// The token its first line of stdout carried.
    pub token: String,
}

impl Ui {
    /// Starts `cmd` (a `ghola` command, with its directories) as `ghola ui --port 0` and reads its address and
    /// token from the first line of its stdout.
    pub fn start(mut cmd: Command) -> Ui {
        let mut child = cmd
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
}

impl Ui {
    /// Logs in as a browser would from the printed address, by its way-in page and the named host's login.
    pub fn log_in(&self) -> Login {
        log_in(&format!("http://{}/?token={}", self.addr, self.token))
            .expect("the printed address logs in")
    }
}

/// A login to a `ghola ui`: where to send requests and what they carry.
pub struct Login {
    /// 127.0.0.1 and the port: where to connect.
    pub addr: SocketAddr,
    /// The server's own host name with the port (`ghola-….localhost:P`): the `Host` header to send.
    pub host: String,
    /// `ghola_ui=…`: the `Cookie` header to send.
    pub cookie: String,
    /// Where the login sent the browser on to.
    pub to: String,
}

/// One HTTP/1.1 GET of `path` from `addr` with `Host: host` and `Cookie: cookie` (when not empty); the raw answer.
pub fn http_get(addr: SocketAddr, host: &str, path: &str, cookie: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    let cookie = if cookie.is_empty() {
        String::new()
    } else {
        format!("Cookie: {cookie}\r\n")
    };
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\n{cookie}Connection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    Some(String::from_utf8_lossy(&raw).into_owned())
}

/// The value of the attribute `name="…"` in `html`.
pub fn attribute<'a>(html: &'a str, name: &str) -> Option<&'a str> {
    let rest = html.split(&format!("{name}=\"")).nth(1)?;
    rest.split('"').next()
}

/// Follows `link` (an address `ghola ui` or its MCP tool handed out, on 127.0.0.1) as a browser that resolves
/// `*.localhost` does: its way-in page names the server's own host's one-time login, whose answer sets the cookie.
pub fn log_in(link: &str) -> Option<Login> {
    let rest = link.strip_prefix("http://")?;
    let (authority, path) = rest.split_at(rest.find('/')?);
    let addr: SocketAddr = authority.parse().ok()?;
    let way_in = http_get(addr, authority, path, "")?;
    let named = attribute(&way_in, "data-named")?;
    let rest = named.strip_prefix("http://")?;
    let (host, path) = rest.split_at(rest.find('/')?);
    let answer = http_get(addr, host, path, "")?;
    let cookie = answer
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(": ")?;
            k.eq_ignore_ascii_case("set-cookie").then_some(v)
        })?
        .split(';')
        .next()?
        .to_string();
    let to = attribute(&answer, "href")?.replace("&amp;", "&");
    Some(Login {
        addr,
        host: host.to_string(),
        cookie,
        to,
    })
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Says that a browser test is skipped for want of `what` — which fails under `CI=true`, where `.ci/run`
/// installs it.
pub fn skipped(what: &str) {
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "CI=true but no {what}"
    );
    eprintln!("no {what} here: skipped");
}

/// The Chromium on PATH, if any.
pub fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|n| which(n))
}

/// An executable named `name` on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// The DOM headless Chromium renders for `url` (scripts run), as HTML.
pub fn dump_dom(chromium: &Path, url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--dump-dom",
            // Time for the way-in page's script to send the browser on to the server's own host name.
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .stderr(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A running `chromedriver`, killed when dropped.
pub struct Driver {
    child: Child,
    pub port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `chromedriver` (`exe`) on a free port and waits until it listens.
pub fn start_driver(exe: &Path) -> Driver {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(exe)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let d = Driver { child, port };
    let ready = std::time::Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            ready.elapsed() < std::time::Duration::from_secs(20),
            "chromedriver did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    d
}

/// A headless Chromium (`chromium`, with its own profile in `profile`) driven through `driver`.
pub async fn webdriver(chromium: &Path, driver: &Driver, profile: &Path) -> fantoccini::Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": chromium,
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                     format!("--user-data-dir={}", profile.display())],
        }),
    );
    fantoccini::ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a WebDriver session")
}

/// The element `l` finds once the page shows it (20 s at most).
pub async fn appears(
    c: &fantoccini::Client,
    l: fantoccini::Locator<'_>,
) -> fantoccini::elements::Element {
    c.wait()
        .at_most(std::time::Duration::from_secs(20))
        .for_element(l)
        .await
        .unwrap_or_else(|e| panic!("{l:?} never appeared: {e}"))
}
