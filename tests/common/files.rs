//! Loopback stand-ins for what ghola downloads on a first start, each speaking the real protocol so the real
//! client talks to it:
//! - the Hugging Face Hub's `resolve` endpoint as the `hf-hub` crate uses it: a `Range: bytes=0-0` probe answered
//!   206 with `etag`, `x-repo-commit` and `Content-Range: bytes 0-0/<size>`, then a ranged `GET` for the body;
//! - a GitHub-release-like folder of files for the launcher's `curl`/`wget`.
//!
//! Both record the paths requested, so a test can tell that a second start used no network.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A running loopback file server.
pub struct FileServer {
    pub url: String,
    /// Every path requested, in order.
    pub requests: Arc<Mutex<Vec<String>>>,
    _http: super::Loopback,
}

/// One served file: its bytes.
type Files = Arc<Mutex<HashMap<String, Arc<Vec<u8>>>>>;

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(bytes))
}

impl FileServer {
    /// Serves `files` (URL path → bytes) on an ephemeral loopback port, honouring `Range` requests and adding
    /// the Hub's metadata headers to every file response.
    pub fn start(files: HashMap<String, Vec<u8>>) -> FileServer {
        Self::start_with_delay(files, std::time::Duration::ZERO)
    }

    /// [`FileServer::start`], each response held back by `delay` (to keep concurrent clients in flight together).
    pub fn start_with_delay(
        files: HashMap<String, Vec<u8>>,
        delay: std::time::Duration,
    ) -> FileServer {
        let files: Files = Arc::new(Mutex::new(
            files.into_iter().map(|(k, v)| (k, Arc::new(v))).collect(),
        ));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let http = super::Loopback::start(4, move |rq| {
            let requests = &seen;
            let path = rq.url().split('?').next().unwrap_or_default().to_string();
            requests.lock().unwrap().push(path.clone());
            std::thread::sleep(delay);
            let body = files.lock().unwrap().get(&path).cloned();
            let Some(body) = body else {
                let _ =
                    rq.respond(tiny_http::Response::from_string("not found").with_status_code(404));
                return;
            };
            let size = body.len();
            let range = rq
                .headers()
                .iter()
                .find(|h| h.field.equiv("Range"))
                .and_then(|h| h.value.as_str().strip_prefix("bytes=").map(str::to_string));
            let (start, end, status) = match range.as_deref().and_then(|r| r.split_once('-')) {
                Some((a, b)) => {
                    let a: usize = a.parse().unwrap_or(0).min(size);
                    let b: usize = b.parse().map_or(size.saturating_sub(1), |b: usize| {
                        b.min(size.saturating_sub(1))
                    });
                    (a, b + 1, 206)
                }
                None => (0, size, 200),
            };
            let header = |k: &str, v: &str| {
                tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()).unwrap()
            };
            let mut resp = tiny_http::Response::from_data(body[start..end.max(start)].to_vec())
                .with_status_code(status)
                .with_header(header("etag", &format!("\"{}\"", sha256_hex(&body))))
                .with_header(header(
                    "x-repo-commit",
                    "0123456789abcdef0123456789abcdef01234567",
                ));
            if status == 206 {
                resp = resp.with_header(header(
                    "Content-Range",
                    &format!("bytes {start}-{}/{size}", end.max(start + 1) - 1),
                ));
            }
            let _ = rq.respond(resp);
        });
        FileServer {
            url: http.url.clone(),
            requests,
            _http: http,
        }
    }

    /// Paths requested so far.
    pub fn requested(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// The model files of this checkout (`models/fetch` puts the weights there), as the Hub serves them for
/// `sentence-transformers/all-MiniLM-L6-v2` at revision `main`. `tamper` flips a byte of the weights.
pub fn hub_files(tamper: bool) -> HashMap<String, Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/all-MiniLM-L6-v2");
    ["config.json", "tokenizer.json", "model.safetensors"]
        .into_iter()
        .map(|name| {
            let mut bytes = std::fs::read(dir.join(name)).expect("run models/fetch first");
            if tamper && name == "model.safetensors" {
                let at = bytes.len() / 2;
                bytes[at] ^= 0x55;
            }
            (
                format!("/sentence-transformers/all-MiniLM-L6-v2/resolve/main/{name}"),
                bytes,
            )
        })
        .collect()
}

/// This machine's release target, as the launcher names it.
pub fn host_target() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "aarch64-unknown-linux-gnu",
        _ => "x86_64-unknown-linux-gnu",
    }
}

/// The release artifact of this checkout for this machine, `ghola-<target>.tar.gz` with its `.sha256`, in the
/// layout `dist build` writes (`ghola-<target>/ghola` inside, `<hex> *<name>` in the checksum): packed from the
/// test's own binary, so it is always this checkout's. CI does not run cargo-dist (installing it and its second
/// release build cost a fifth of CI's 90 minutes); `the_release_contract_is_what_cargo_dist_is_told_to_build`
/// keeps `dist-workspace.toml` and the launcher agreeing on names, archives and checksums.
pub fn release_artifact(scratch: &Path) -> (Vec<u8>, String) {
    let name = format!("ghola-{}.tar.gz", host_target());
    let stage = scratch.join("pack");
    let inner: PathBuf = stage.join(format!("ghola-{}", host_target()));
    std::fs::create_dir_all(&inner).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_ghola"), inner.join("ghola")).unwrap();
    let out = scratch.join(&name);
    let ok = std::process::Command::new("tar")
        .args(["-czf", out.to_str().unwrap(), "-C", stage.to_str().unwrap()])
        .arg(format!("ghola-{}", host_target()))
        .status()
        .unwrap()
        .success();
    assert!(ok, "tar failed");
    let bytes = std::fs::read(&out).unwrap();
    let sha = format!("{} *{name}\n", sha256_hex(&bytes));
    (bytes, sha)
}
