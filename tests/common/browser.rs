//! A real browser for tests: Debian's `chromium` (headless), found on PATH.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
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
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .stderr(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}
