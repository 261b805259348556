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

/// Finds the model files, trying in order: `flag`, `$GHOLA_MODEL_DIR`, `models/all-MiniLM-L6-v2` beside the
/// executable or up to four folders above it (`target/release/ghola` in a checkout), and the Hugging Face cache
/// (`$HF_HUB_CACHE`, `$HF_HOME/hub`, `~/.cache/huggingface/hub`). The error lists every place tried. (Not the
/// folder the binary was compiled in: a release binary must behave the same on every machine.)
pub fn resolve(flag: Option<&Path>) -> Result<ModelFiles, EmbedError> {
    let mut tried = Vec::new();
    let explicit = flag
        .map(Path::to_path_buf)
        .or_else(|| crate::config::non_empty_env("GHOLA_MODEL_DIR").map(PathBuf::from));
    if let Some(dir) = explicit {
        // An explicit choice is not second-guessed by falling back elsewhere.
        return ModelFiles::in_dir(&dir).ok_or(EmbedError::ModelNotFound { tried: vec![dir] });
    }
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        let exe = exe.canonicalize().unwrap_or(exe);
        for dir in exe.ancestors().skip(1).take(5) {
            candidates.push(dir.join("models").join(MODEL_DIR_NAME));
        }
    }
    candidates.extend(hf_cache_snapshot());
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

/// The Hugging Face cache: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub` (the rules of
/// the Python `huggingface_hub`, which hf-hub follows only in part, so they are applied here for both).
pub fn hf_hub_cache() -> PathBuf {
    crate::config::non_empty_env("HF_HUB_CACHE")
        .map(PathBuf::from)
        .or_else(|| crate::config::non_empty_env("HF_HOME").map(|h| PathBuf::from(h).join("hub")))
        .unwrap_or_else(|| crate::config::home_dir().join(".cache/huggingface/hub"))
}

/// The snapshot `refs/main` points at in the Hugging Face cache, if the model was ever downloaded there.
fn hf_cache_snapshot() -> Option<PathBuf> {
    let hub = hf_hub_cache();
    let repo = hub.join(format!("models--{}", MODEL_ID.replace('/', "--")));
    let rev = std::fs::read_to_string(repo.join("refs/main")).ok()?;
    let rev = rev.trim();
    // A revision is a hex hash: refuse anything that could walk out of the cache.
    rev.chars()
        .all(|c| c.is_ascii_alphanumeric())
        .then(|| repo.join("snapshots").join(rev))
}

/// Whether the user asked for no network use (`HF_HUB_OFFLINE=1`, as for every Hugging Face tool).
pub fn offline() -> bool {
    crate::config::non_empty_env("HF_HUB_OFFLINE").is_some_and(|v| v != "0" && v != "false")
}

/// [`resolve`], and when the files are nowhere (and no folder was named explicitly, and `HF_HUB_OFFLINE` is not
/// set), downloads them into the Hugging Face cache with [`super::download::download`].
pub fn resolve_or_download(
    flag: Option<&Path>,
    progress: &mut dyn super::download::DownloadProgress,
) -> Result<ModelFiles, EmbedError> {
    match resolve(flag) {
        Err(EmbedError::ModelNotFound { tried })
            if flag.is_none()
                && crate::config::non_empty_env("GHOLA_MODEL_DIR").is_none()
                && !offline() =>
        {
            tracing::debug!("model not found in {tried:?}; downloading");
            super::download::download(progress)
        }
        other => other,
    }
}
