//! An immutable segment, seven files written once, fsynced, never modified:
//! - `<id>.meta`: the compact message records and chunk records (bincode), the segment's full description;
//! - `<id>.rows`: the same records in a fixed-width layout, memory-mapped by readers and writers alike (see
//!   [`super::rows`]; a segment written before it existed has them built from `.meta` when opened);
//! - `<id>.txt`: every message's readable text, concatenated (memory-mapped; read only for displayed hits);
//! - `<id>.vec`: a raw little-endian f32 matrix, one row per chunk (memory-mapped; touched only to re-score the
//!   best candidates of a search);
//! - `<id>.q8`: the same rows as int8 with a per-row scale (memory-mapped; what a search scans, see
//!   [`super::int8`]);
//! - `<id>.q4`: the same rows as 4-bit values with a per-row scale (memory-mapped; what a search over a large
//!   history scans first, see [`super::int4`]);
//! - `<id>.hash`: (text hash, first row, rows) records sorted by hash, so a writer finds a stored vector for an
//!   identical text by binary search instead of loading every segment's metadata.
//!
//! A segment published by the keyword-first pass has no vectors yet, and a fifth file, `<id>.todo`: the texts to
//! embed (with their message and kind). The second pass embeds them and publishes a replacement segment with
//! vectors; the `.todo` file goes with the segment it belongs to.

use super::format::{self, FormatError, HEADER_LEN};
use super::int4::{NIBBLE_MAGIC, NibbleVectors};
use super::int8::{COMPACT_MAGIC, CompactVectors, quantize_row};
use super::records::{ChunkKind, ChunkRecord, MessageMeta, StoredMessage};
use super::rows::{ROWS_MAGIC, Rows};
use crate::embed::DIM;
use memmap2::Mmap;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub(crate) const META_MAGIC: &[u8; 8] = b"GHOLASGM";
pub(crate) const VEC_MAGIC: &[u8; 8] = b"GHOLAVEC";
const TEXT_MAGIC: &[u8; 8] = b"GHOLATXT";
const HASH_MAGIC: &[u8; 8] = b"GHOLAHSH";
const TODO_MAGIC: &[u8; 8] = b"GHOLATDO";
/// Bytes of one hash record: text hash (8), first row (4), rows (4).
const HASH_RECORD: usize = 16;

/// The metadata half of a segment.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SegmentMeta {
    /// Interned strings (sessions, projects, roles, kinds, branches, models, sources).
    pub strings: Vec<String>,
    pub messages: Vec<MessageMeta>,
    pub chunks: Vec<ChunkRecord>,
}

/// The files of a segment.
pub struct SegmentPaths {
    pub meta: PathBuf,
    pub vectors: PathBuf,
    /// The int8 copy of the vectors (absent in segments written before it existed).
    pub compact: PathBuf,
    /// The 4-bit copy of the vectors (absent in segments written before it existed).
    pub nibbles: PathBuf,
    /// The fixed-width records (absent in segments written before they existed).
    pub rows: PathBuf,
    pub text: PathBuf,
    pub hashes: PathBuf,
    /// Present only while the segment awaits embedding.
    pub todo: PathBuf,
}

impl SegmentPaths {
    /// All seven, for deleting a merged segment or damaging one in a test.
    pub fn all(&self) -> [&Path; 7] {
        [
            &self.meta,
            &self.rows,
            &self.vectors,
            &self.compact,
            &self.nibbles,
            &self.text,
            &self.hashes,
        ]
    }
}

/// Paths of a segment's files.
pub fn paths(dir: &Path, id: u64) -> SegmentPaths {
    let base = dir.join("segments");
    SegmentPaths {
        meta: base.join(format!("{id:08}.meta")),
        vectors: base.join(format!("{id:08}.vec")),
        compact: base.join(format!("{id:08}.q8")),
        nibbles: base.join(format!("{id:08}.q4")),
        rows: base.join(format!("{id:08}.rows")),
        text: base.join(format!("{id:08}.txt")),
        hashes: base.join(format!("{id:08}.hash")),
        todo: base.join(format!("{id:08}.todo")),
    }
}

/// One text of a keyword-only segment still to be embedded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TodoChunk {
    /// Index of its message within the segment.
    pub message: u32,
    pub kind: ChunkKind,
    pub text: String,
}

/// Whether segment `id` was published keyword-only and awaits embedding (its `.todo` file exists).
pub fn awaits_embedding(dir: &Path, id: u64) -> bool {
    paths(dir, id).todo.exists()
}

/// Writes the texts segment `id` still needs embedded (fsynced; before the segment's metadata is written, so a
/// published keyword-only segment always has its list).
pub fn write_todo(dir: &Path, id: u64, todo: &[TodoChunk]) -> std::io::Result<()> {
    fs_err::create_dir_all(dir.join("segments"))?;
    format::write_framed(&paths(dir, id).todo, TODO_MAGIC, &format::encode(&todo))
}

/// Reads the texts segment `id` still needs embedded (checksummed).
pub fn read_todo(dir: &Path, id: u64) -> Result<Vec<TodoChunk>, FormatError> {
    let p = paths(dir, id).todo;
    let name = p.display().to_string();
    format::decode(&name, &format::read_framed(&p, TODO_MAGIC, "todo")?)
}

/// Deletes every file of segment `id` (after a merge or a replacement was published).
pub fn remove(dir: &Path, id: u64) {
    let p = paths(dir, id);
    for f in p.all().into_iter().chain([p.todo.as_path()]) {
        let _ = fs_err::remove_file(f);
    }
}

/// How much of a memory-mapped file (text, vectors, hashes) to check on open. The metadata and the manifest are
/// always checksummed (they are read whole anyway); checksumming hundreds of megabytes of vectors on every
/// search would cost more than the search, so readers check magic, version and length always, and the checksum
/// when the file was modified at or after the manifest was published — published files are never modified, so
/// a newer one was touched by something else. The writer's full update checks everything.
#[derive(Debug, Clone, Copy)]
pub enum Verify {
    Always,
    /// Checksum files whose mtime is at or after this (the manifest's publish time).
    IfTouchedSince(SystemTime),
}

impl Verify {
    /// The rule for readers and the writer: checksum what was touched since the manifest of `dir` was published
    /// (everything when there is no manifest to date it by). Read the time before the manifest itself: a newer
    /// manifest renamed in between only makes more files count as touched (more checking, never less).
    pub fn since_publish(dir: &Path) -> Self {
        match fs_err::metadata(dir.join(super::snapshot::MANIFEST)).and_then(|m| m.modified()) {
            Ok(t) => Verify::IfTouchedSince(t),
            Err(_) => Verify::Always,
        }
    }

    fn checksum(self, file: &File) -> bool {
        match self {
            Verify::Always => true,
            Verify::IfTouchedSince(t) => file
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .is_none_or(|m| m >= t),
        }
    }
}

/// Maps a framed file and checks it per `verify`; returns the map (payload at `HEADER_LEN..`).
pub(crate) fn map_framed(
    path: &Path,
    magic: &[u8; 8],
    what: &'static str,
    verify: Verify,
) -> Result<Mmap, FormatError> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| FormatError::Io(name.clone(), e))?;
    // SAFETY: what is assumed, exactly: segment files are immutable once published (written under a new name,
    // fsynced, never modified, truncated or rewritten by ghola; deleted only once no published manifest names
    // them, which on Unix leaves open maps intact). The map is read-only, and its length is checked against the
    // header's payload length below, before any access; every later access is bounds-checked against that
    // length. Bytes changed behind our back by another program give wrong answers, never reads out of bounds.
    // The one thing a map cannot survive is another program *truncating* a mapped file: touching a page past
    // the new end raises SIGBUS (Unix) and ends the process. The index itself is unharmed by that (nothing is
    // written through a map), and the next open sees the short file and sets it aside.
    let map = unsafe { Mmap::map(&file) }.map_err(|e| FormatError::Io(name.clone(), e))?;
    if verify.checksum(&file) {
        format::check_framed(&name, &map, magic, what)?;
        // Checksumming read every page: hand them back, so that a verified file costs this process only what it
        // reads later (the pages stay in the page cache). A writer verifying a million messages' vectors before
        // a merge would otherwise hold them all.
        // SAFETY: a read-only shared file mapping: dropped pages are read again from the file on the next access.
        #[cfg(unix)]
        let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
    } else {
        format::check_header(&name, &map, magic, what)?;
    }
    Ok(map)
}

/// Collects a segment's messages, chunks and vectors, interning strings, and writes its files.
#[derive(Default)]
pub struct SegmentBuilder {
    meta: SegmentMeta,
    text: Vec<u8>,
    /// Little-endian f32 rows, as written (no second copy at write time).
    vectors: Vec<u8>,
    /// The same rows quantized to int8 (see [`super::int8`]).
    compact: Vec<u8>,
    /// The same rows quantized to 4 bits (see [`super::int4`]).
    nibbles: Vec<u8>,
    /// Where rows go instead when streaming (a merge): straight to the segment's `.vec`, `.q8` and `.q4` files.
    vector_file: Option<[format::FramedWriter; 3]>,
    rows: u32,
    syms: HashMap<String, u32>,
    spill_error: Option<std::io::Error>,
}

impl SegmentBuilder {
    fn sym(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.syms.get(s) {
            return i;
        }
        let i = self.meta.strings.len() as u32;
        self.meta.strings.push(s.to_string());
        self.syms.insert(s.to_string(), i);
        i
    }

    /// Adds a message; returns its index in the segment (for [`SegmentBuilder::push_chunk`]).
    pub fn push_message(&mut self, m: &StoredMessage) -> u32 {
        let text_start = self.text.len() as u64;
        self.text.extend_from_slice(m.content.as_bytes());
        let meta = MessageMeta {
            gid: m.gid,
            uuid: m.uuid.clone(),
            session: self.sym(&m.session_id),
            agent: m.agent_id.as_deref().map(|a| self.sym(a)),
            project: self.sym(&m.project),
            cwd: m.cwd.as_deref().map(|c| self.sym(c)),
            git_branch: m.git_branch.as_deref().map(|b| self.sym(b)),
            role: self.sym(&m.role),
            model: m.model.as_deref().map(|x| self.sym(x)),
            timestamp_ms: m.timestamp_ms,
            window: m.window,
            is_compact_summary: m.is_compact_summary,
            kind: self.sym(&m.kind),
            seq: m.seq,
            content_hash: m.content_hash,
            source: self.sym(&m.source),
            text_start,
            text_len: m.content.len() as u32,
        };
        self.meta.messages.push(meta);
        (self.meta.messages.len() - 1) as u32
    }

    /// Adds one chunk vector of message `message`.
    pub fn push_chunk(&mut self, message: u32, kind: ChunkKind, text_hash: u64, vector: &[f32]) {
        self.meta.chunks.push(ChunkRecord {
            message,
            kind,
            row: self.rows,
            text_hash,
        });
        self.rows += 1;
        for v in vector {
            self.vectors.extend_from_slice(&v.to_le_bytes());
        }
        quantize_row(vector, &mut self.compact);
        super::int4::quantize_row(vector, &mut self.nibbles);
        if let Some([f, q, n]) = &mut self.vector_file {
            // Streaming: the row goes to the files now (the buffers hold only it); a write error is kept for
            // `write` to report.
            if let Err(e) = f
                .write(&self.vectors)
                .and_then(|_| q.write(&self.compact))
                .and_then(|_| n.write(&self.nibbles))
            {
                self.spill_error.get_or_insert(e);
            }
            self.vectors.clear();
            self.compact.clear();
            self.nibbles.clear();
        }
    }

    /// A builder for segment `id` of `dir` that streams its vector rows to the `.vec` file as they are pushed
    /// (a merge would otherwise hold the whole merged matrix in memory beside the segments it reads).
    pub fn streaming(dir: &Path, id: u64) -> std::io::Result<Self> {
        fs_err::create_dir_all(dir.join("segments"))?;
        let p = paths(dir, id);
        Ok(Self {
            vector_file: Some([
                format::FramedWriter::create(&p.vectors, VEC_MAGIC)?,
                format::FramedWriter::create(&p.compact, COMPACT_MAGIC)?,
                format::FramedWriter::create(&p.nibbles, NIBBLE_MAGIC)?,
            ]),
            ..Self::default()
        })
    }

    /// Messages added so far.
    pub fn messages(&self) -> usize {
        self.meta.messages.len()
    }

    /// Chunks added so far.
    pub fn chunks(&self) -> usize {
        self.meta.chunks.len()
    }

    /// Writes the segment's files (fsynced) under `dir/segments`.
    pub fn write(self, dir: &Path, id: u64) -> std::io::Result<()> {
        fs_err::create_dir_all(dir.join("segments"))?;
        let p = paths(dir, id);
        if let Some(e) = self.spill_error {
            return Err(e);
        }
        match self.vector_file {
            Some(files) => {
                for f in files {
                    f.finish()?;
                }
            }
            None => {
                format::write_framed(&p.vectors, VEC_MAGIC, &self.vectors)?;
                format::write_framed(&p.compact, COMPACT_MAGIC, &self.compact)?;
                format::write_framed(&p.nibbles, NIBBLE_MAGIC, &self.nibbles)?;
            }
        }
        format::write_framed(&p.text, TEXT_MAGIC, &self.text)?;
        format::write_framed(&p.hashes, HASH_MAGIC, &hash_records(&self.meta.chunks))?;
        format::write_framed(&p.rows, ROWS_MAGIC, &super::rows::encode(&self.meta))?;
        format::write_framed(&p.meta, META_MAGIC, &format::encode(&self.meta))?;
        format::sync_dir(&dir.join("segments"))
    }
}

/// The sorted (text hash, first row, rows) records of a segment's chunks: the chunks of one text in one message
/// are consecutive rows.
fn hash_records(chunks: &[ChunkRecord]) -> Vec<u8> {
    let mut runs: Vec<(u64, u32, u32)> = Vec::new();
    let mut prev: Option<(u32, u64)> = None;
    for c in chunks {
        if prev == Some((c.message, c.text_hash))
            && let Some(last) = runs.last_mut()
            && last.1 + last.2 == c.row
        {
            last.2 += 1;
        } else {
            runs.push((c.text_hash, c.row, 1));
        }
        prev = Some((c.message, c.text_hash));
    }
    runs.sort_by_key(|r| r.0);
    runs.dedup_by_key(|r| r.0);
    let mut out = Vec::with_capacity(runs.len() * HASH_RECORD);
    for (h, first, n) in runs {
        out.extend_from_slice(&h.to_le_bytes());
        out.extend_from_slice(&first.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
    }
    out
}

/// A segment's vectors, memory-mapped.
pub struct Vectors(Mmap);

impl Vectors {
    /// Maps and checks `<id>.vec`; `rows` is how many rows the metadata refers to.
    pub fn open(dir: &Path, id: u64, rows: usize, verify: Verify) -> Result<Self, FormatError> {
        let path = paths(dir, id).vectors;
        let map = map_framed(&path, VEC_MAGIC, "vector", verify)?;
        let payload = map.len() - HEADER_LEN;
        if !payload.is_multiple_of(DIM * 4) || payload / (DIM * 4) < rows {
            return Err(FormatError::Damaged(path.display().to_string()));
        }
        Ok(Self(map))
    }

    /// All rows as one slice of floats (`rows × DIM`).
    pub fn all(&self) -> &[f32] {
        let bytes = &self.0[HEADER_LEN..];
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

    /// One row.
    pub fn row(&self, row: u32) -> &[f32] {
        let start = row as usize * DIM;
        self.all().get(start..start + DIM).unwrap_or(&[])
    }
}

/// A segment's hash records, memory-mapped, for the writer's reuse of identical texts' vectors.
pub struct Hashes(Mmap);

impl Hashes {
    /// Maps and checks `<id>.hash`.
    pub fn open(dir: &Path, id: u64, verify: Verify) -> Result<Self, FormatError> {
        let path = paths(dir, id).hashes;
        let map = map_framed(&path, HASH_MAGIC, "hash", verify)?;
        if !(map.len() - HEADER_LEN).is_multiple_of(HASH_RECORD) {
            return Err(FormatError::Damaged(path.display().to_string()));
        }
        Ok(Self(map))
    }

    fn record(&self, i: usize) -> (u64, u32, u32) {
        let r = &self.0[HEADER_LEN + i * HASH_RECORD..HEADER_LEN + (i + 1) * HASH_RECORD];
        (
            u64::from_le_bytes(r[..8].try_into().unwrap()),
            u32::from_le_bytes(r[8..12].try_into().unwrap()),
            u32::from_le_bytes(r[12..16].try_into().unwrap()),
        )
    }

    /// The rows (first, count) holding the vectors of a text with this hash.
    pub fn lookup(&self, hash: u64) -> Option<(u32, u32)> {
        let (mut lo, mut hi) = (0, (self.0.len() - HEADER_LEN) / HASH_RECORD);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let (h, first, n) = self.record(mid);
            match h.cmp(&hash) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some((first, n)),
            }
        }
        None
    }
}

/// A segment opened for reading: records, text and vectors mapped (nothing decoded per message).
pub struct OpenSegment {
    pub id: u64,
    pub rows: Rows,
    pub vectors: Vectors,
    /// The int8 rows a search scans; `None` for a segment written before they existed (scanned in f32).
    pub compact: Option<CompactVectors>,
    /// The 4-bit rows a search over a large history scans first; `None` for a segment written before they
    /// existed (scanned in int8 alone).
    pub nibbles: Option<NibbleVectors>,
    /// Mapped and checked with the rest, so a damaged hash file is found by readers too.
    pub hashes: Hashes,
    text: Mmap,
    /// The metadata file's length and mtime when opened: tells a reopen that this id still names these files
    /// (ids start again at 0 in an index rebuilt after damage).
    stamp: Option<(u64, std::time::SystemTime)>,
}

fn file_stamp(p: &Path) -> Option<(u64, std::time::SystemTime)> {
    let m = fs_err::metadata(p).ok()?;
    Some((m.len(), m.modified().ok()?))
}

impl OpenSegment {
    /// Whether the files of segment `id` in `dir` are still the ones this was opened from.
    pub fn still_current(&self, dir: &Path) -> bool {
        self.stamp.is_some() && file_stamp(&paths(dir, self.id).meta) == self.stamp
    }

    /// Opens a segment: its records are mapped from `.rows` (or built from `.meta`, checksummed and decoded, for a
    /// segment without one); the mapped files are checked per `verify`. Under [`Verify::Always`] every symbol,
    /// every message's text range and every chunk's message and row must also lie inside the segment; otherwise
    /// reads stay in bounds by themselves (an out-of-range value reads as empty), so a reader's open decodes and
    /// walks nothing per message.
    pub fn open(dir: &Path, id: u64, verify: Verify) -> Result<Self, FormatError> {
        let p = paths(dir, id);
        let stamp = file_stamp(&p.meta);
        let meta_name = p.meta.display().to_string();
        let rows = if p.rows.exists() {
            // The metadata is not decoded, but it is checked like the mapped files (header always, checksum when
            // touched since the publish): it is the segment's full description, which writers may need.
            drop(map_framed(&p.meta, META_MAGIC, "segment", verify)?);
            Rows::open(&p.rows, verify)?
        } else {
            let meta: SegmentMeta = format::decode(
                &meta_name,
                &format::read_framed(&p.meta, META_MAGIC, "segment")?,
            )?;
            Rows::from_meta(&meta, &meta_name)?
        };
        if matches!(verify, Verify::Always) {
            rows.validate(&meta_name)?;
        }
        // Every chunk has its own row (see `SegmentBuilder::push_chunk`).
        let vector_rows = rows.chunk_count();
        let vectors = Vectors::open(dir, id, vector_rows, verify)?;
        let compact = if p.compact.exists() {
            let map = map_framed(&p.compact, COMPACT_MAGIC, "compact vector", verify)?;
            Some(CompactVectors::new(
                map,
                vector_rows,
                &p.compact.display().to_string(),
            )?)
        } else {
            None
        };
        let nibbles = if p.nibbles.exists() && compact.is_some() {
            let map = map_framed(&p.nibbles, NIBBLE_MAGIC, "4-bit vector", verify)?;
            Some(NibbleVectors::new(
                map,
                vector_rows,
                &p.nibbles.display().to_string(),
            )?)
        } else {
            None
        };
        let text = map_framed(&p.text, TEXT_MAGIC, "text", verify)?;
        let hashes = Hashes::open(dir, id, verify)?;
        if matches!(verify, Verify::Always) {
            let text_len = (text.len() - HEADER_LEN) as u64;
            let outside = (0..rows.len()).any(|i| {
                let r = rows.row(i);
                r.text_start + r.text_len as u64 > text_len
            }) || (0..rows.chunk_count())
                .any(|c| rows.chunk(c).row as usize >= vector_rows);
            if outside {
                return Err(FormatError::Damaged(meta_name));
            }
        }
        Ok(Self {
            id,
            rows,
            vectors,
            compact,
            nibbles,
            hashes,
            text,
            stamp,
        })
    }

    /// An interned string.
    pub fn str(&self, sym: u32) -> &str {
        self.rows
            .strings
            .get(sym as usize)
            .map_or("", String::as_str)
    }

    /// The readable text of message `mi` (lossy if the text file was damaged behind our back).
    pub fn content(&self, mi: usize) -> Cow<'_, str> {
        String::from_utf8_lossy(self.text_bytes(mi))
    }

    /// The raw bytes of message `mi`'s readable text (for checks that need no decoding).
    pub fn text_bytes(&self, mi: usize) -> &[u8] {
        let r = self.rows.row(mi);
        let start = HEADER_LEN + r.text_start as usize;
        self.text
            .get(start..start + r.text_len as usize)
            .unwrap_or(&[])
    }

    /// Message `mi` as callers see it.
    pub fn stored(&self, mi: usize) -> StoredMessage {
        let m = self.rows.row(mi);
        let opt = |s: Option<u32>| s.map(|s| self.str(s).to_string());
        StoredMessage {
            gid: m.gid,
            uuid: self.rows.uuid(mi).to_string(),
            session_id: self.str(m.session).to_string(),
            agent_id: opt(m.agent),
            project: self.str(m.project).to_string(),
            cwd: opt(m.cwd),
            git_branch: opt(m.git_branch),
            role: self.str(m.role).to_string(),
            model: opt(m.model),
            timestamp_ms: m.timestamp_ms,
            window: m.window,
            is_compact_summary: m.is_compact_summary,
            kind: self.str(m.kind).to_string(),
            seq: m.seq,
            content: self.content(mi).into_owned(),
            content_hash: m.content_hash,
            source: self.str(m.source).to_string(),
        }
    }

    /// One chunk's vector.
    pub fn row(&self, row: u32) -> &[f32] {
        self.vectors.row(row)
    }
}
