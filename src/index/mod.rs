//! The on-disk index: immutable segments (bincode metadata + memory-mapped vectors) and a tantivy lexical index,
//! named by a manifest that is swapped atomically; fingerprints of every source file; one writer at a time
//! under a file lock, any number of readers on consistent snapshots.

pub mod archive;
mod changes;
mod embed_pass;
pub mod file_map;
pub mod forget;
pub mod format;
pub mod function_words;
pub mod int4;
pub mod int8;
pub mod lexical;
pub mod machines;
mod merge;
pub mod migrate;
mod opening;
pub mod records;
pub mod render;
mod resume;
pub mod rows;
pub mod scrub;
pub mod segment;
pub mod shown;
pub mod snapshot;
pub mod spelling;
pub mod standin;
pub mod terms;
pub mod update;
mod vectors;
mod writer;

pub use embed_pass::{EmbedProgress, EmbedSummary, embed_pending, messages_waiting};
pub use records::{ChunkKind, FileState, Manifest, StoredMessage};
pub use snapshot::{ConversationRun, LiveChunk, MessageRow, NO_AGENT, Snapshot, SnapshotCache};
pub use update::{
    DEFER_FROM, Progress, UpdateOptions, UpdateSummary, update, update_with, update_words_only,
};

use crate::embed::{EmbedError, Embedder, Vector};
use serde::Serialize;
use std::path::Path;

/// Why the index could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("another ghola is updating the index; try again, or wait for it (without --no-wait)")]
    Busy,
    #[error(transparent)]
    Format(#[from] format::FormatError),
    #[error("index I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("lexical index: {0}")]
    Lexical(#[from] tantivy::TantivyError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// A session id given to `forget` matches no indexed session, or several.
    #[error(transparent)]
    Lookup(#[from] crate::transcript::LookupError),
}

/// What the index needs from an embedding model: the real one in the product; benchmarks may measure the index
/// machinery with a stand-in (and say so).
pub trait ChunkEmbedder: Sync {
    /// Identifies the model; a different id means everything is re-embedded.
    fn model_id(&self) -> String;
    /// sha256 of the weights (cached in `index_dir` by size and mtime so it is not recomputed every run).
    fn weights_sha256(&self, index_dir: &Path) -> Result<String, IndexError>;
    /// Each text's chunk vectors, at most `max_chunks` per text.
    fn embed_chunked(
        &self,
        texts: &[&str],
        max_chunks: usize,
    ) -> Result<Vec<Vec<Vector>>, IndexError>;
    /// Whether `word` (lowercased) is a word of the model's vocabulary: a query word the history lacks is read
    /// as a typo only when it is not one ([`spelling`]). Without a vocabulary every word counts as known, and
    /// nothing is corrected.
    fn knows_word(&self, _word: &str) -> bool {
        true
    }
}

impl ChunkEmbedder for Embedder {
    fn model_id(&self) -> String {
        crate::embed::MODEL_ID.to_string()
    }

    fn knows_word(&self, word: &str) -> bool {
        Embedder::knows_word(self, word)
    }

    fn weights_sha256(&self, index_dir: &Path) -> Result<String, IndexError> {
        let path = &self.files().weights;
        let meta = fs_err::metadata(path)?;
        let stamp = format!("{} {:?}", meta.len(), meta.modified().ok());
        let cache = index_dir.join("weights.sha256");
        if let Ok(text) = fs_err::read_to_string(&cache)
            && let Some((s, sha)) = text.rsplit_once('\n')
            && s == stamp
        {
            return Ok(sha.to_string());
        }
        let sha = crate::embed::download::sha256_file(path)?;
        let _ = fs_err::write(&cache, format!("{stamp}\n{sha}"));
        Ok(sha)
    }

    fn embed_chunked(
        &self,
        texts: &[&str],
        max_chunks: usize,
    ) -> Result<Vec<Vec<Vector>>, IndexError> {
        Ok(Embedder::embed_chunked(self, texts, max_chunks)?
            .into_iter()
            .map(|t| t.chunks)
            .collect())
    }
}

/// `ghola status`: what is indexed, how fresh, how big.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub projects: usize,
    pub sessions: usize,
    pub messages: usize,
    /// Messages stored and searchable by their words but not embedded yet (the second pass embeds them).
    pub messages_waiting: usize,
    pub chunks: usize,
    pub vectors_bytes: u64,
    pub index_bytes: u64,
    pub model: String,
    pub updated_at: Option<String>,
    /// Transcript files changed since the last update (not yet indexed).
    pub pending_files: usize,
    pub skipped_lines: u64,
    pub excluded_sessions: usize,
    pub source_deleted_files: usize,
    /// Whether new transcript bytes are archived (`GHOLA_ARCHIVE`, `[archive] enabled`).
    pub archive_enabled: bool,
    pub archive: archive::ArchiveStats,
    /// Sessions Claude Code deleted that the archive still has whole: readable and replayable only from it.
    pub sessions_only_in_archive: usize,
    /// Credentials the index's messages show as `[REDACTED:<rule>]` placeholders (`ghola secrets` lists them).
    pub credentials_hidden: u64,
}

/// Records that a reader found the index of `dir` damaged (`what` says where): the next update then takes the
/// full path, which verifies every file and rebuilds what is damaged.
pub fn report_damage(dir: &Path, what: &str) {
    let _ = fs_err::write(dir.join(snapshot::DAMAGE_SEEN), what);
}

/// Bytes of every file under `p` (0 for what cannot be read): index sizes for `status` and the benches.
pub fn dir_size(p: &Path) -> u64 {
    let Ok(rd) = fs_err::read_dir(p) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Transcript files that are new or changed since the snapshot's manifest (a stat per file, nothing opened).
pub fn pending_files(snap: &Snapshot, claude_dir: &Path) -> usize {
    let known: std::collections::HashMap<&str, (u64, i128)> = snap
        .manifest
        .files
        .iter()
        .map(|f| (f.path.as_str(), (f.size, f.mtime_ns)))
        .collect();
    let found =
        crate::transcript::source::discover_everywhere(claude_dir, &machines::list(&snap.dir));
    let forgotten = forget::forgotten(&snap.dir);
    found
        .sessions
        .iter()
        .filter(|s| !forgotten.sessions.contains_key(&s.session_id))
        .flat_map(|s| s.all_files())
        .filter(|p| {
            let Ok(m) = fs_err::metadata(p) else {
                return false;
            };
            let mtime = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::SystemTime::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128);
            known.get(p.display().to_string().as_str()) != Some(&(m.len(), mtime))
        })
        .count()
}

/// Reports on the index of `index_dir` against the transcripts of `claude_dir`, as a search with
/// `memory_limit` would see it; `archive_enabled` is what the caller's settings say (reported as it is).
pub fn status(
    index_dir: &Path,
    claude_dir: &Path,
    memory_limit: u64,
    archive_enabled: bool,
) -> Result<Status, IndexError> {
    let snap = Snapshot::open_with(index_dir, memory_limit, false)?;
    let arc = archive::Archive::open(index_dir)
        .inspect_err(|e| tracing::warn!("archive unreadable: {e}"))
        .ok();
    let sessions: std::collections::HashSet<u32> =
        snap.messages.iter().map(|m| m.session).collect();
    let projects: std::collections::HashSet<u32> =
        snap.messages.iter().map(|m| m.project).collect();
    let vectors_bytes = snap
        .manifest
        .segments
        .iter()
        .map(|s| fs_err::metadata(segment::paths(index_dir, s.id).vectors).map_or(0, |m| m.len()))
        .sum();
    let placeholder = memchr::memmem::Finder::new(b"[REDACTED:");
    let credentials_hidden = (0..snap.messages.len())
        .map(|i| placeholder.find_iter(snap.text_bytes(i)).count() as u64)
        .sum();
    Ok(Status {
        credentials_hidden,
        projects: projects.len(),
        sessions: sessions.len(),
        messages: snap.messages.len(),
        messages_waiting: snap.messages_waiting,
        chunks: snap.chunks.len(),
        vectors_bytes,
        index_bytes: dir_size(index_dir),
        model: snap.manifest.model_id.clone(),
        updated_at: (snap.manifest.updated_at_ms > 0)
            .then(|| {
                chrono::DateTime::from_timestamp_millis(snap.manifest.updated_at_ms)
                    .map(|t| t.to_rfc3339())
            })
            .flatten(),
        pending_files: pending_files(&snap, claude_dir),
        skipped_lines: 0,
        excluded_sessions: snap.excluded_sessions,
        source_deleted_files: snap.manifest.files.iter().filter(|f| f.deleted).count(),
        archive_enabled,
        archive: arc.as_ref().map(|a| a.stats()).unwrap_or_default(),
        sessions_only_in_archive: arc.as_ref().map_or(0, |a| {
            a.files()
                .filter(|f| {
                    matches!(f.role, archive::FileRole::Main) && !Path::new(&f.path).exists()
                })
                .count()
        }),
    })
}
