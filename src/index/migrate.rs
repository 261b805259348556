//! Upgrades an index written by an older ghola in place, so the archive survives a format change: transcripts
//! Claude Code has since deleted are only in the index, and rebuilding from the transcripts would lose them.
//!
//! Format 1 kept each message's text inside the segment metadata and had no resume states. The upgrade rewrites
//! every segment in the current layout (vectors copied, nothing re-embedded), keeps gids, dead list and
//! generation (so the lexical index stays valid), and leaves resume states empty: a file that grows later is
//! re-read whole once, on the full path. A crash mid-way leaves the old manifest and files in place (the new
//! files are unreferenced and removed later), so the upgrade simply runs again.

use super::IndexError;
use super::format::{self, FormatError};
use super::records::{ChunkRecord, FileState, Manifest, SegmentInfo, StoredMessage};
use super::segment::{META_MAGIC, SegmentBuilder, VEC_MAGIC};
use super::snapshot::{MANIFEST, MANIFEST_MAGIC};
use super::writer::publish_manifest;
use crate::embed::DIM;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Format 1's records, as they were serialised.
pub mod v1 {
    use super::*;

    /// A source file's fingerprint (no resume state yet).
    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct FileState {
        pub path: String,
        pub session_id: String,
        pub size: u64,
        pub mtime_ns: i128,
        pub consumed: u64,
        pub head_hash: u64,
        pub deleted: bool,
    }

    /// The manifest.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct Manifest {
        pub generation: u64,
        pub model_id: String,
        pub weights_sha256: String,
        pub segments: Vec<SegmentInfo>,
        pub files: Vec<FileState>,
        pub next_gid: u64,
        pub next_segment: u64,
        pub updated_at_ms: i64,
        pub dead: Vec<u64>,
    }

    /// A segment's metadata: whole messages, text included.
    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    pub struct SegmentMeta {
        pub messages: Vec<StoredMessage>,
        pub chunks: Vec<ChunkRecord>,
    }

    /// Paths of a format-1 segment.
    pub fn paths(dir: &Path, id: u64) -> (std::path::PathBuf, std::path::PathBuf) {
        let base = dir.join("segments");
        (
            base.join(format!("{id:08}.meta")),
            base.join(format!("{id:08}.vec")),
        )
    }
}

/// Upgrades `dir` if its manifest is format 1; returns whether it did. Damage in the old files is an error (the
/// caller then sets the index aside and rebuilds, as for any damaged index).
pub fn upgrade(dir: &Path) -> Result<bool, IndexError> {
    let path = dir.join(MANIFEST);
    if format::version_of(&path, MANIFEST_MAGIC) != Some(1) {
        return Ok(false);
    }
    let name = path.display().to_string();
    let old: v1::Manifest = format::decode(
        &name,
        &format::read_framed_version(&path, MANIFEST_MAGIC, "manifest", 1)?,
    )?;
    let mut next_segment = old.next_segment;
    let mut segments = Vec::new();
    for s in &old.segments {
        let (meta_path, vec_path) = v1::paths(dir, s.id);
        let meta: v1::SegmentMeta = format::decode(
            &meta_path.display().to_string(),
            &format::read_framed_version(&meta_path, META_MAGIC, "segment", 1)?,
        )?;
        let vectors = format::read_framed_version(&vec_path, VEC_MAGIC, "vector", 1)?;
        let row = |r: u32| -> Result<Vec<f32>, FormatError> {
            let start = r as usize * DIM * 4;
            let bytes = vectors
                .get(start..start + DIM * 4)
                .ok_or_else(|| FormatError::Damaged(vec_path.display().to_string()))?;
            Ok(bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                .collect())
        };
        let mut builder = SegmentBuilder::default();
        let mut index = Vec::with_capacity(meta.messages.len());
        for m in &meta.messages {
            index.push(builder.push_message(m));
        }
        for c in &meta.chunks {
            let mi = *index
                .get(c.message as usize)
                .ok_or_else(|| FormatError::Damaged(meta_path.display().to_string()))?;
            builder.push_chunk(mi, c.kind, c.text_hash, &row(c.row)?);
        }
        let id = next_segment;
        next_segment += 1;
        segments.push(SegmentInfo {
            id,
            messages: builder.messages() as u32,
            chunks: builder.chunks() as u32,
        });
        builder.write(dir, id)?;
    }
    let manifest = Manifest {
        generation: old.generation,
        model_id: old.model_id,
        weights_sha256: old.weights_sha256,
        segments,
        files: old
            .files
            .into_iter()
            .map(|f| FileState {
                path: f.path,
                session_id: f.session_id,
                size: f.size,
                mtime_ns: f.mtime_ns,
                consumed: f.consumed,
                head_hash: f.head_hash,
                deleted: f.deleted,
                resume: None,
            })
            .collect(),
        next_gid: old.next_gid,
        next_segment,
        updated_at_ms: old.updated_at_ms,
        dead: old.dead,
    };
    publish_manifest(dir, &manifest)?;
    for s in &old.segments {
        let (a, b) = v1::paths(dir, s.id);
        let _ = fs_err::remove_file(a);
        let _ = fs_err::remove_file(b);
    }
    tracing::info!(
        "upgraded the index from format 1 ({} segments, {} messages kept)",
        manifest.segments.len(),
        manifest.segments.iter().map(|s| s.messages).sum::<u32>()
    );
    Ok(true)
}
