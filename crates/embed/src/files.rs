//! Where the model's files are: a flag, `$GHOLA_MODEL_DIR`, the `models/` folder of a checkout (found from the
//! executable), then the Hugging Face cache, where [`super::download`] puts them when they are nowhere.

use super::EmbedError;
use std::path::{Path, PathBuf};

/// The model ghola embeds with, as the Hugging Face Hub names it.
pub const MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// The folder name under `models/`.
pub const MODEL_DIR_NAME: &str = "all-MiniLM-L6-v2";
/// sha256 of the published `model.safetensors`; the download and `models/fetch` refuse anything else.
pub const WEIGHTS_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";

/// The three files a model directory must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFiles {
    pub config: PathBuf,
    pub tokenizer: PathBuf,
    pub weights: PathBuf,
}

impl ModelFiles {
    /// The files of `dir`, when all three are there.
    pub fn in_dir(dir: &Path) -> Option<Self> {
        let files = Self {
            config: dir.join("config.json"),
            tokenizer: dir.join("tokenizer.json"),
            weights: dir.join("model.safetensors"),
        };
        (files.config.is_file() && files.tokenizer.is_file() && files.weights.is_file())
            .then_some(files)
    }
}

/// Where the model may be and where it may come from: a folder named by the caller (a flag or
/// `GHOLA_MODEL_DIR`), the Hugging Face cache, and whether and from where it may be downloaded. Built at the top
/// from ghola's environment (`ghola::config::Environment::model_places`) and handed down: this crate reads no
/// variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelPlaces {
    /// A folder holding the three files; when named, nothing else is tried and nothing downloaded.
    pub dir: Option<PathBuf>,
    /// The Hugging Face cache (`HF_HUB_CACHE`, `HF_HOME/hub`, `~/.cache/huggingface/hub`).
    pub hub_cache: PathBuf,
    /// No network (`HF_HUB_OFFLINE`).
    pub offline: bool,
    /// Where the Hub is (`HF_ENDPOINT`).
    pub endpoint: String,
}

impl ModelPlaces {
    /// Only `dir` (a test's or a benchmark's model folder): nothing else is tried, nothing downloaded.
    pub fn only(dir: &Path) -> Self {
        Self {
            dir: Some(dir.to_path_buf()),
            hub_cache: dir.join("hub"),
            offline: true,
            endpoint: String::new(),
        }
    }
}

/// Finds the model files, trying in order: the named folder, `models/all-MiniLM-L6-v2` beside the executable or
/// up to four folders above it (`target/release/ghola` in a checkout), and the Hugging Face cache. The error
/// lists every place tried. (Not the folder the binary was compiled in: a release binary must behave the same on
/// every machine.)
pub fn resolve(places: &ModelPlaces) -> Result<ModelFiles, EmbedError> {
    let mut tried = Vec::new();
    if let Some(dir) = &places.dir {
        // An explicit choice is not second-guessed by falling back elsewhere.
        return ModelFiles::in_dir(dir).ok_or(EmbedError::ModelNotFound {
            tried: vec![dir.clone()],
        });
    }
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        let exe = exe.canonicalize().unwrap_or(exe);
        for dir in exe.ancestors().skip(1).take(5) {
            candidates.push(dir.join("models").join(MODEL_DIR_NAME));
        }
    }
    candidates.extend(hf_cache_snapshot(&places.hub_cache));
    for dir in candidates {
        if let Some(files) = ModelFiles::in_dir(&dir) {
            return Ok(files);
        }
        if !tried.contains(&dir) {
            tried.push(dir);
        }
    }
    Err(EmbedError::ModelNotFound { tried })
}

/// The snapshot `refs/main` points at in the Hugging Face cache `hub`, if the model was ever downloaded there.
fn hf_cache_snapshot(hub: &Path) -> Option<PathBuf> {
    let repo = hub.join(format!("models--{}", MODEL_ID.replace('/', "--")));
    let rev = std::fs::read_to_string(repo.join("refs/main")).ok()?;
    let rev = rev.trim();
    // A revision is a hex hash: refuse anything that could walk out of the cache.
    rev.chars()
        .all(|c| c.is_ascii_alphanumeric())
        .then(|| repo.join("snapshots").join(rev))
}

/// [`resolve`], and when the files are nowhere (and no folder was named, and the places are not offline),
/// downloads them into the Hugging Face cache with [`super::download::download`].
pub fn resolve_or_download(
    places: &ModelPlaces,
    progress: &mut dyn super::download::DownloadProgress,
) -> Result<ModelFiles, EmbedError> {
    match resolve(places) {
        Err(EmbedError::ModelNotFound { tried }) if places.dir.is_none() && !places.offline => {
            tracing::debug!("model not found in {tried:?}; downloading");
            super::download::download(places, progress)
        }
        other => other,
    }
}
