//! The embedding model's life in a long-running process: found or downloaded (a failed download is tried again
//! with growing pauses), loaded on a thread of its own while the history is searched by its words, then shared
//! by every front end of the process.

use crate::embed::{EmbedError, Embedder, KernelChoice, ModelPlaces};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// First pause before a failed model download is tried again; it doubles up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(10);
const RETRY_MAX: Duration = Duration::from_secs(600);

/// Where the model is and what state it is in.
#[derive(Debug, Clone)]
pub enum ModelState {
    /// Loaded: searches rank by meaning too.
    Ready,
    /// Still downloading or loading.
    Loading,
    /// Could not be had (the reason); a failed download is being tried again.
    Unavailable(String),
}

/// The model of one process: empty until loaded, then the same [`Embedder`] for everyone.
#[derive(Default)]
pub struct ModelSlot {
    embedder: OnceLock<Embedder>,
    /// Why the model could not be had so far (download failed, files refused).
    error: Mutex<Option<String>>,
}

impl ModelSlot {
    /// The model, once loaded.
    pub fn get(&self) -> Option<&Embedder> {
        self.embedder.get()
    }

    /// Puts a model loaded by the caller in the slot (the CLI loads it in the foreground, with a progress bar);
    /// a slot already filled keeps its own.
    pub fn set(&self, e: Embedder) {
        let _ = self.embedder.set(e);
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// What a search should say about the model.
    pub fn state(&self) -> ModelState {
        if self.embedder.get().is_some() {
            return ModelState::Ready;
        }
        match self.error.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            Some(e) => ModelState::Unavailable(e),
            None => ModelState::Loading,
        }
    }

    /// Records why the model cannot be had (searches say it, and rank by words).
    pub fn set_unavailable(&self, why: String) {
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    }

    /// Finds (or downloads) and loads the model on its own thread. A failed download is tried again later (the
    /// network may come back, another process may have held the download lock), with growing pauses; refused
    /// files are not fetched again.
    pub fn load_in_background(self: &Arc<Self>, places: ModelPlaces, kernel: KernelChoice) {
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("ghola-model".into())
            .spawn(move || {
                let mut pause = RETRY_FIRST;
                loop {
                    let mut progress = LogProgress::default();
                    let error = match Embedder::obtain(&places, kernel, &mut progress) {
                        Ok(e) => {
                            me.set(e);
                            tracing::info!("embedding model loaded");
                            return;
                        }
                        Err(e) => e,
                    };
                    tracing::error!("{error}");
                    let retry = matches!(error, EmbedError::Download { .. });
                    me.set_unavailable(error.to_string());
                    if !retry {
                        return;
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(RETRY_MAX);
                }
            });
        if let Err(e) = spawned {
            self.set_unavailable(format!("could not start the model's thread: {e}"));
        }
    }
}

/// Logs the model download on stderr, a line per 10%.
#[derive(Default)]
struct LogProgress {
    file: String,
    total: u64,
    done: u64,
    shown: u64,
}

impl crate::embed::download::DownloadProgress for LogProgress {
    fn start(&mut self, file: &str, total: u64) {
        (self.file, self.total, self.done, self.shown) = (file.to_string(), total, 0, 0);
        tracing::info!("downloading {file} ({:.1} MB)", total as f64 / 1e6);
    }
    fn advance(&mut self, bytes: u64) {
        self.done += bytes;
        let tenth = (self.done * 10).checked_div(self.total).unwrap_or(0);
        if tenth > self.shown {
            self.shown = tenth;
            tracing::info!("{}: {}%", self.file, tenth * 10);
        }
    }
    fn finish(&mut self) {}
}
