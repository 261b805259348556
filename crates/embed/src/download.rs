//! Fetches the model's three files from the Hugging Face Hub with the `hf-hub` crate, into the Hugging Face
//! cache (once per machine, shared with every other tool that uses that cache, and outside the plugin folder,
//! which Claude Code replaces on every update), and verifies each against its pinned sha256.
//!
//! `HF_ENDPOINT` (a mirror, or a loopback stand-in in tests), `HF_HUB_CACHE` and `HF_HOME` are honoured (read at
//! the top into [`ModelPlaces`]), as the Python `huggingface_hub` honours them, so a machine configured for one is
//! configured for the other.

use super::EmbedError;
use super::files::{MODEL_ID, ModelFiles, ModelPlaces, WEIGHTS_SHA256};
use std::path::{Path, PathBuf};

/// The files ghola needs from the model repository, each with the sha256 it must have. A file with another hash
/// is refused (and removed from the cache, so the next attempt downloads it again).
pub const PINNED_FILES: [(&str, &str); 3] = [
    (
        "config.json",
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
    (
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    ("model.safetensors", WEIGHTS_SHA256),
];

/// Receives download progress: `start(file, total_bytes)`, then `advance(bytes)` as they arrive, then `finish()`.
/// Implemented by the command line's progress bar and by the server's log lines.
pub trait DownloadProgress: Send {
    fn start(&mut self, file: &str, total: u64);
    fn advance(&mut self, bytes: u64);
    fn finish(&mut self);
}

/// No progress reporting.
impl DownloadProgress for () {
    fn start(&mut self, _: &str, _: u64) {}
    fn advance(&mut self, _: u64) {}
    fn finish(&mut self) {}
}

/// Adapts a [`DownloadProgress`] to hf-hub's progress trait.
struct Adapter<'a>(&'a mut dyn DownloadProgress);

impl hf_hub::api::Progress for Adapter<'_> {
    fn init(&mut self, size: usize, filename: &str) {
        self.0.start(filename, size as u64);
    }
    fn update(&mut self, size: usize) {
        self.0.advance(size as u64);
    }
    fn finish(&mut self) {
        self.0.finish();
    }
}

/// sha256 of a file, hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h)?;
    Ok(format!("{:x}", h.finalize()))
}

/// Downloads whatever of the model's files the Hugging Face cache lacks, verifies every file it downloaded, and
/// returns the files. Files already in the cache are not downloaded again (hf-hub looks there first).
pub fn download(
    places: &ModelPlaces,
    progress: &mut dyn DownloadProgress,
) -> Result<ModelFiles, EmbedError> {
    let cache = places.hub_cache.clone();
    let endpoint = places.endpoint.clone();
    let fail = |file: &str, reason: String| EmbedError::Download {
        file: file.to_string(),
        endpoint: endpoint.clone(),
        reason,
    };
    std::fs::create_dir_all(&cache)
        .map_err(|e| fail("(cache)", format!("{}: {e}", cache.display())))?;
    let cached = hf_hub::Cache::new(cache.clone()).model(MODEL_ID.to_string());
    if let Some((first, _)) = PINNED_FILES
        .iter()
        .find(|(name, _)| cached.get(name).is_none())
    {
        // hf-hub's client sets no timeouts: fail fast on a network that drops packets instead of hanging.
        reachable(&endpoint).map_err(|e| fail(first, e.to_string()))?;
    }
    let api = hf_hub::api::sync::ApiBuilder::from_cache(hf_hub::Cache::new(cache.clone()))
        .with_endpoint(endpoint.clone())
        .with_progress(false)
        .with_retries(2)
        .build()
        .map_err(|e| fail("(client)", e.to_string()))?;
    let repo = api.model(MODEL_ID.to_string());
    let mut paths: Vec<PathBuf> = Vec::new();
    for (name, want) in PINNED_FILES {
        let path = match cached.get(name) {
            Some(p) => p,
            None => {
                tracing::info!("downloading {name} of {MODEL_ID} from {endpoint}");
                repo.download_with_progress(name, Adapter(progress))
                    .map_err(|e| fail(name, e.to_string()))?
            }
        };
        let have = sha256_file(&path).map_err(|e| fail(name, e.to_string()))?;
        if have != want {
            // Remove the pointer and the blob it names, so a later attempt starts clean.
            let blob = std::fs::canonicalize(&path).ok();
            let _ = std::fs::remove_file(&path);
            if let Some(b) = blob {
                let _ = std::fs::remove_file(b);
            }
            return Err(EmbedError::Tampered {
                file: name.to_string(),
                endpoint: endpoint.clone(),
                have,
                want: want.to_string(),
            });
        }
        paths.push(path);
    }
    Ok(ModelFiles {
        config: paths[0].clone(),
        tokenizer: paths[1].clone(),
        weights: paths[2].clone(),
    })
}

/// How long the reachability probe waits for a TCP connection to the Hub.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Why the Hub's host could not be reached.
#[derive(Debug, thiserror::Error)]
enum Unreachable {
    #[error("cannot resolve {authority}: {source}")]
    Resolve {
        authority: String,
        source: std::io::Error,
    },
    #[error("no address for {0}")]
    NoAddress(String),
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
}

/// Whether a TCP connection to the endpoint's host can be opened within [`CONNECT_TIMEOUT`].
fn reachable(endpoint: &str) -> Result<(), Unreachable> {
    use std::net::{TcpStream, ToSocketAddrs};
    let (scheme, rest) = endpoint.split_once("://").unwrap_or(("https", endpoint));
    let authority = rest.split('/').next().unwrap_or(rest);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let default_port = if scheme == "http" { 80 } else { 443 };
    let with_port = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        authority.to_string()
    } else {
        format!("{authority}:{default_port}")
    };
    let addrs: Vec<_> = with_port
        .to_socket_addrs()
        .map_err(|source| Unreachable::Resolve {
            authority: authority.to_string(),
            source,
        })?
        .collect();
    let mut last = Unreachable::NoAddress(authority.to_string());
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(source) => last = Unreachable::Connect { addr, source },
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_endpoint_fails_fast_with_a_reason() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert!(reachable(&format!("http://127.0.0.1:{port}/x")).is_ok());
        drop(l);
        let e = reachable(&format!("http://127.0.0.1:{port}")).unwrap_err();
        assert!(matches!(e, Unreachable::Connect { .. }), "{e}");
        assert!(e.to_string().contains("cannot connect"), "{e}");
        assert!(reachable("https://no-such-host.invalid").is_err());
    }
}
