//! Helpers shared by the integration tests.

#![allow(dead_code)]

pub mod browser;
pub mod files;
pub mod home;
pub mod mcp_client;
#[cfg(unix)]
pub mod postgres;
pub mod sshd;
pub mod standin;
pub mod tls_proxy;
pub mod transcript;

use std::path::{Path, PathBuf};
use std::process::Command;

/// `ghola --claude-dir CLAUDE --index-dir IDX`, with none of the environment that would change what it reads.
pub fn ghola_at(claude: &Path, idx: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ghola"));
    c.args([
        "--claude-dir",
        claude.to_str().unwrap(),
        "--index-dir",
        idx.to_str().unwrap(),
    ])
    .env_remove("GHOLA_ARCHIVE")
    .env_remove("CLAUDE_CODE_SESSION_ID");
    c
}

/// `ghola` over a folder of `../shared/corpus` (read in place) with the index `idx`, offline and without a
/// model (the history is searched by words): what the listing and file tests need, fast.
pub fn ghola_over_corpus(name: &str, idx: &Path) -> Command {
    let mut c = ghola_at(&corpus().join(name), idx);
    without_model(&mut c, idx);
    c
}

/// Makes `cmd` run without the embedding model whatever is installed — the model that `models/fetch` put beside
/// a checkout's binary included, which an empty Hugging Face cache alone does not hide — by naming a folder
/// under `scratch` that holds none. The history is then indexed and searched by its words: all that listings,
/// the file map and the browser's pages read, without embedding a corpus folder (a minute for the largest).
pub fn without_model<'c>(cmd: &'c mut Command, scratch: &Path) -> &'c mut Command {
    cmd.envs(no_model_env(scratch))
}

/// The environment [`without_model`] sets, for what takes variables rather than a command (`Client::start`).
pub fn no_model_env(scratch: &Path) -> [(&'static str, String); 3] {
    let none = scratch.join("no-model").display().to_string();
    [
        ("GHOLA_MODEL_DIR", none.clone()),
        ("HF_HUB_OFFLINE", "1".to_string()),
        ("HF_HUB_CACHE", none),
    ]
}

/// Runs `ghola index` on a [`without_model`] command: everything is indexed by its words, and ghola says so
/// and exits non-zero (the index is not complete until the model can be had).
pub fn index_by_words(cmd: &mut Command) {
    let out = cmd.arg("index").output().expect("the command starts");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains("indexed by their words only"),
        "ghola index without the model: {said}"
    );
}

/// Runs a command that must succeed (its stderr in the failure message otherwise) and returns its stdout.
pub fn run_ok(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().expect("the command starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs a command that must fail, saying `why` on stderr; returns its stdout (which must then carry nothing
/// the failure would have printed).
pub fn run_fails(cmd: &mut Command, why: &str) -> Vec<u8> {
    let out = cmd.output().expect("the command starts");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it succeeded: {err}");
    assert!(err.contains(why), "{why:?} not in: {err}");
    out.stdout
}

/// A loopback HTTP server for the stand-ins: `workers` threads, each answering requests with `handle`, on an
/// ephemeral port of 127.0.0.1; stopped (its threads unblocked and joined) when dropped.
pub struct Loopback {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    server: std::sync::Arc<tiny_http::Server>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Loopback {
    /// Starts the server and its workers.
    pub fn start(
        workers: usize,
        handle: impl Fn(tiny_http::Request) + Send + Sync + 'static,
    ) -> Loopback {
        let server = std::sync::Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let port = server.server_addr().to_ip().unwrap().port();
        let handle = std::sync::Arc::new(handle);
        let threads = (0..workers)
            .map(|_| {
                let (server, handle) = (server.clone(), handle.clone());
                std::thread::spawn(move || {
                    while let Ok(rq) = server.recv() {
                        handle(rq);
                    }
                })
            })
            .collect();
        Loopback {
            url: format!("http://127.0.0.1:{port}"),
            server,
            threads,
        }
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        for _ in 0..=self.threads.len() {
            self.server.unblock();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The string field `key` of every object in the array `v[list]` (the ids of a listing, say).
pub fn strings<'v>(v: &'v serde_json::Value, list: &str, key: &str) -> Vec<&'v str> {
    v[list]
        .as_array()
        .unwrap_or_else(|| panic!("no array {list:?} in {v}"))
        .iter()
        .map(|o| {
            o[key]
                .as_str()
                .unwrap_or_else(|| panic!("no {key:?} in {o}"))
        })
        .collect()
}

/// [`run_ok`], its stdout parsed as JSON.
pub fn run_json(cmd: &mut Command) -> serde_json::Value {
    serde_json::from_slice(&run_ok(cmd)).expect("JSON on stdout")
}

/// `../shared/<rel>` beside the checkout, if it is there. `None` outside CI when it is missing (the caller
/// skips); under `CI=true` a missing folder fails the test.
pub fn shared(rel: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .join(rel);
    if dir.exists() {
        return Some(dir);
    }
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "CI=true but {} is missing",
        dir.display()
    );
    None
}

/// The real model, loaded once per test binary from where `ghola` would find it (`models/fetch` puts it there).
pub fn embedder() -> &'static ghola::embed::Embedder {
    static E: std::sync::OnceLock<ghola::embed::Embedder> = std::sync::OnceLock::new();
    E.get_or_init(|| {
        ghola::embed::Embedder::from_places(&ghola::config::Environment::read().model_places(None))
            .expect("run models/fetch")
    })
}

/// Runs `cmd hook EVENT` (a `ghola` command) with `input` on stdin, as Claude Code runs a hook.
pub fn run_hook(mut cmd: Command, event: &str, input: &str) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .args(["hook", event])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Polls `ok` every 100 ms until it holds; fails naming `what` after `limit`.
pub fn wait_for(what: &str, limit: std::time::Duration, mut ok: impl FnMut() -> bool) {
    let until = std::time::Instant::now() + limit;
    while !ok() {
        assert!(
            std::time::Instant::now() < until,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// `../shared/corpus`, the real transcripts the tests read in place (a missing corpus fails the caller).
pub fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus")
}

/// Copies the folder `from` to `to`, recursively (a corpus folder a test may change or delete).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// The Claude Code CLI: `$GHOLA_CLAUDE_BIN`, else the one `.ci/run` installs. `None` outside CI when it is
/// missing (the caller skips); under `CI=true` a missing CLI fails the test.
pub fn claude_bin() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = [
        std::env::var_os("GHOLA_CLAUDE_BIN").map(PathBuf::from),
        Some(root.join(".ci/npm/node_modules/.bin/claude")),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.is_file());
    if found.is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true but the Claude Code CLI is missing"
        );
    }
    found
}
