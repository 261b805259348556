//! An immutable segment: `<id>.meta` (messages and chunk records, bincode) and `<id>.vec` (a raw little-endian
//! f32 matrix, one row per chunk, memory-mapped by readers). Written once, fsynced, never modified.

use super::format::{self, FormatError, HEADER_LEN};
use super::records::{ChunkRecord, StoredMessage};
use crate::embed::DIM;
use memmap2::Mmap;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::path::{Path, PathBuf};

const META_MAGIC: &[u8; 8] = b"GHOLASGM";
const VEC_MAGIC: &[u8; 8] = b"GHOLAVEC";

/// The metadata half of a segment.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SegmentMeta {
    pub messages: Vec<StoredMessage>,
    pub chunks: Vec<ChunkRecord>,
}

/// Paths of a segment's two files.
pub fn paths(dir: &Path, id: u64) -> (PathBuf, PathBuf) {
    let base = dir.join("segments");
    (
        base.join(format!("{id:08}.meta")),
        base.join(format!("{id:08}.vec")),
    )
}

/// Writes both files of a segment (fsynced). Vectors are `rows × DIM` floats.
pub fn write(dir: &Path, id: u64, meta: &SegmentMeta, vectors: &[f32]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("segments"))?;
    let (meta_path, vec_path) = paths(dir, id);
    let mut bytes = Vec::with_capacity(vectors.len() * 4);
    for v in vectors {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    format::write_framed(&vec_path, VEC_MAGIC, &bytes)?;
    format::write_framed(&meta_path, META_MAGIC, &format::encode(meta))?;
    format::sync_dir(&dir.join("segments"))
}

/// A segment opened for reading: metadata decoded, vectors mapped.
pub struct OpenSegment {
    pub meta: SegmentMeta,
    vectors: Mmap,
}

impl OpenSegment {
    /// Opens and verifies a segment (magic, version, length and checksum of both files).
    pub fn open(dir: &Path, id: u64) -> Result<Self, FormatError> {
        let (meta_path, vec_path) = paths(dir, id);
        let meta_name = meta_path.display().to_string();
        let meta: SegmentMeta = format::decode(
            &meta_name,
            &format::read_framed(&meta_path, META_MAGIC, "segment")?,
        )?;
        let vec_name = vec_path.display().to_string();
        let file = File::open(&vec_path).map_err(|e| FormatError::Io(vec_name.clone(), e))?;
        // SAFETY: segment files are immutable once published (written under a new name, never modified); the
        // map is read-only.
        let vectors =
            unsafe { Mmap::map(&file) }.map_err(|e| FormatError::Io(vec_name.clone(), e))?;
        let payload = format::check_framed(&vec_name, &vectors, VEC_MAGIC, "vector")?;
        let rows = meta
            .chunks
            .iter()
            .map(|c| c.row as usize + 1)
            .max()
            .unwrap_or(0);
        if payload.len() % (DIM * 4) != 0 || payload.len() / (DIM * 4) < rows {
            return Err(FormatError::Damaged(vec_name));
        }
        Ok(Self { meta, vectors })
    }

    /// All rows as one slice of floats (`rows × DIM`).
    pub fn vectors(&self) -> &[f32] {
        let bytes = &self.vectors[HEADER_LEN..];
        if cfg!(target_endian = "little") {
            // SAFETY: the map is page-aligned and HEADER_LEN is a multiple of 4, so the payload is aligned for
            // f32; any bit pattern is a valid f32; the length was checked to be a multiple of DIM * 4.
            let (head, floats, _) = unsafe { bytes.align_to::<f32>() };
            if head.is_empty() {
                return floats;
            }
        }
        &[]
    }

    /// One chunk's vector.
    pub fn row(&self, row: u32) -> &[f32] {
        let start = row as usize * DIM;
        &self.vectors()[start..start + DIM]
    }
}
