//! A segment's message and chunk records in a fixed-width layout (`<id>.rows`), memory-mapped, so that opening
//! a snapshot decodes nothing per message: ranking reads the few fields it needs in place, and a displayed hit
//! reads its own record and uuid. `<id>.meta` (bincode) stays the segment's full description; `.rows` is derived
//! from it when the segment is written. A segment written before `.rows` existed has its records built in memory
//! from `.meta` when opened (the slower path it always had).
//!
//! Payload: a 32-byte header (message count, chunk count, bytes of the string table, bytes of the uuids), the
//! string table (bincode `Vec<String>`), the message records ([`MESSAGE_BYTES`] each), the chunk records
//! ([`CHUNK_BYTES`] each), then every uuid concatenated. Integers are little-endian.

use super::format::{self, FormatError, HEADER_LEN};
use super::records::{ChunkKind, ChunkRecord};
use super::segment::SegmentMeta;
use memmap2::Mmap;

/// Magic of a `<id>.rows` file.
pub(crate) const ROWS_MAGIC: &[u8; 8] = b"GHOLAROW";
/// Bytes of one message record.
pub const MESSAGE_BYTES: usize = 96;
/// Bytes of one chunk record.
pub const CHUNK_BYTES: usize = 24;
const HEAD: usize = 32;
/// An absent optional symbol.
const NONE32: u32 = u32::MAX;

/// One message's record, decoded from its fixed-width bytes (strings are symbols of the segment's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub gid: u64,
    pub text_start: u64,
    pub content_hash: u64,
    pub timestamp_ms: Option<i64>,
    pub session: u32,
    pub agent: Option<u32>,
    pub project: u32,
    pub cwd: Option<u32>,
    pub git_branch: Option<u32>,
    pub role: u32,
    pub model: Option<u32>,
    pub window: u32,
    pub kind: u32,
    pub seq: u32,
    pub source: u32,
    pub text_len: u32,
    pub is_compact_summary: bool,
    uuid_start: u32,
    uuid_len: u32,
}

fn chunk_kind_byte(k: ChunkKind) -> u8 {
    match k {
        ChunkKind::Text => 0,
        ChunkKind::Thinking => 1,
        ChunkKind::ToolUse => 2,
        ChunkKind::ToolResult => 3,
    }
}

fn chunk_kind_of(b: u8) -> Option<ChunkKind> {
    Some(match b {
        0 => ChunkKind::Text,
        1 => ChunkKind::Thinking,
        2 => ChunkKind::ToolUse,
        3 => ChunkKind::ToolResult,
        _ => return None,
    })
}

/// The `.rows` payload of a segment's metadata.
pub fn encode(meta: &SegmentMeta) -> Vec<u8> {
    let strings = format::encode(&meta.strings);
    let uuid_bytes: usize = meta.messages.iter().map(|m| m.uuid.len()).sum();
    let mut out = Vec::with_capacity(
        HEAD + strings.len()
            + meta.messages.len() * MESSAGE_BYTES
            + meta.chunks.len() * CHUNK_BYTES
            + uuid_bytes,
    );
    for n in [
        meta.messages.len(),
        meta.chunks.len(),
        strings.len(),
        uuid_bytes,
    ] {
        out.extend_from_slice(&(n as u64).to_le_bytes());
    }
    out.extend_from_slice(&strings);
    let opt = |s: Option<u32>| s.unwrap_or(NONE32);
    let mut uuid_at = 0u32;
    for m in &meta.messages {
        for x in [m.gid, m.text_start, m.content_hash] {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out.extend_from_slice(&m.timestamp_ms.unwrap_or(i64::MIN).to_le_bytes());
        for x in [
            m.session,
            opt(m.agent),
            m.project,
            opt(m.cwd),
            opt(m.git_branch),
            m.role,
            opt(m.model),
            m.window,
            m.kind,
            m.seq,
            m.source,
            m.text_len,
            uuid_at,
            m.uuid.len() as u32,
            u32::from(m.is_compact_summary),
            0,
        ] {
            out.extend_from_slice(&x.to_le_bytes());
        }
        uuid_at += m.uuid.len() as u32;
    }
    for c in &meta.chunks {
        out.extend_from_slice(&c.message.to_le_bytes());
        out.extend_from_slice(&c.row.to_le_bytes());
        out.extend_from_slice(&c.text_hash.to_le_bytes());
        out.extend_from_slice(&[chunk_kind_byte(c.kind), 0, 0, 0, 0, 0, 0, 0]);
    }
    for m in &meta.messages {
        out.extend_from_slice(m.uuid.as_bytes());
    }
    out
}

enum Bytes {
    /// A mapped `.rows` file (payload after the frame header).
    Mapped(Mmap),
    /// Built from `.meta` for a segment without a `.rows` file.
    Owned(Vec<u8>),
}

/// A segment's records, read in place.
pub struct Rows {
    bytes: Bytes,
    messages: usize,
    chunks: usize,
    /// The segment's string table (decoded: it is small, one entry per distinct session, project, role, …).
    pub strings: Vec<String>,
    messages_at: usize,
    chunks_at: usize,
    uuids_at: usize,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

impl Rows {
    /// Maps and checks `<id>.rows` (per `verify`, like the other mapped files).
    pub fn open(
        path: &std::path::Path,
        verify: super::segment::Verify,
    ) -> Result<Self, FormatError> {
        let map = super::segment::map_framed(path, ROWS_MAGIC, "rows", verify)?;
        Self::parse(Bytes::Mapped(map), &path.display().to_string())
    }

    /// The records of a segment known only by its `.meta` (written before `.rows` existed).
    pub fn from_meta(meta: &SegmentMeta, name: &str) -> Result<Self, FormatError> {
        let rows = Self::parse(Bytes::Owned(encode(meta)), name)?;
        rows.validate(name)?;
        Ok(rows)
    }

    fn payload(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m) => &m[HEADER_LEN..],
            Bytes::Owned(v) => v,
        }
    }

    fn parse(bytes: Bytes, name: &str) -> Result<Self, FormatError> {
        let damaged = || FormatError::Damaged(name.to_string());
        let p: &[u8] = match &bytes {
            Bytes::Mapped(m) => &m[HEADER_LEN..],
            Bytes::Owned(v) => v,
        };
        if p.len() < HEAD {
            return Err(damaged());
        }
        let count = |i: usize| usize::try_from(u64_at(p, i * 8)).map_err(|_| damaged());
        let (messages, chunks, strings_len, uuid_len) =
            (count(0)?, count(1)?, count(2)?, count(3)?);
        let messages_at = HEAD.checked_add(strings_len).ok_or_else(damaged)?;
        let chunks_at = messages
            .checked_mul(MESSAGE_BYTES)
            .and_then(|x| x.checked_add(messages_at))
            .ok_or_else(damaged)?;
        let uuids_at = chunks
            .checked_mul(CHUNK_BYTES)
            .and_then(|x| x.checked_add(chunks_at))
            .ok_or_else(damaged)?;
        if uuids_at.checked_add(uuid_len) != Some(p.len()) {
            return Err(damaged());
        }
        let strings: Vec<String> = format::decode(name, &p[HEAD..messages_at])?;
        Ok(Self {
            bytes,
            messages,
            chunks,
            strings,
            messages_at,
            chunks_at,
            uuids_at,
        })
    }

    /// Checks every record: symbols, uuid ranges and chunks' messages inside the segment. Opening checks only
    /// the layout (readers never index with a record's value unchecked: an out-of-range symbol reads as "",
    /// a bad range as empty); a full verification (`Verify::Always`) calls this.
    pub fn validate(&self, name: &str) -> Result<(), FormatError> {
        let damaged = || FormatError::Damaged(name.to_string());
        let n_strings = self.strings.len() as u32;
        let uuid_len = self.payload().len() - self.uuids_at;
        let sym_ok = |s: u32| s < n_strings;
        let opt_ok = |s: Option<u32>| s.is_none_or(sym_ok);
        for i in 0..self.messages {
            let r = self.row(i);
            if ![r.session, r.project, r.role, r.kind, r.source]
                .into_iter()
                .all(sym_ok)
                || ![r.agent, r.cwd, r.git_branch, r.model]
                    .into_iter()
                    .all(opt_ok)
                || r.uuid_start as usize + r.uuid_len as usize > uuid_len
                || std::str::from_utf8(self.uuid_bytes(i)).is_err()
            {
                return Err(damaged());
            }
        }
        let b = self.payload();
        for c in 0..self.chunks {
            let at = self.chunks_at + c * CHUNK_BYTES;
            if u32_at(b, at) as usize >= self.messages || chunk_kind_of(b[at + 16]).is_none() {
                return Err(damaged());
            }
        }
        Ok(())
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.messages
    }

    /// Whether the segment has no messages.
    pub fn is_empty(&self) -> bool {
        self.messages == 0
    }

    /// Number of chunks.
    pub fn chunk_count(&self) -> usize {
        self.chunks
    }

    /// Message `i`'s record (`i < len()`).
    #[inline]
    pub fn row(&self, i: usize) -> Row {
        let b = self.payload();
        let at = self.messages_at + i * MESSAGE_BYTES;
        let u = |k: usize| u32_at(b, at + 32 + 4 * k);
        let opt = |x: u32| (x != NONE32).then_some(x);
        let ts = u64_at(b, at + 24) as i64;
        Row {
            gid: u64_at(b, at),
            text_start: u64_at(b, at + 8),
            content_hash: u64_at(b, at + 16),
            timestamp_ms: (ts != i64::MIN).then_some(ts),
            session: u(0),
            agent: opt(u(1)),
            project: u(2),
            cwd: opt(u(3)),
            git_branch: opt(u(4)),
            role: u(5),
            model: opt(u(6)),
            window: u(7),
            kind: u(8),
            seq: u(9),
            source: u(10),
            text_len: u(11),
            uuid_start: u(12),
            uuid_len: u(13),
            is_compact_summary: u(14) != 0,
        }
    }

    /// Message `i`'s session symbol alone (a pass over every message reads only this).
    #[inline]
    pub fn session_of(&self, i: usize) -> u32 {
        u32_at(self.payload(), self.messages_at + i * MESSAGE_BYTES + 32)
    }

    /// Message `i`'s uuid as stored (hashing and comparing need no UTF-8 check).
    pub fn uuid_bytes(&self, i: usize) -> &[u8] {
        let r = self.row(i);
        let start = self.uuids_at + r.uuid_start as usize;
        self.payload()
            .get(start..start + r.uuid_len as usize)
            .unwrap_or(&[])
    }

    /// Message `i`'s uuid.
    pub fn uuid(&self, i: usize) -> &str {
        std::str::from_utf8(self.uuid_bytes(i)).unwrap_or("")
    }

    /// Chunk `c`'s record (`c < chunk_count()`).
    #[inline]
    pub fn chunk(&self, c: usize) -> ChunkRecord {
        let b = self.payload();
        let at = self.chunks_at + c * CHUNK_BYTES;
        ChunkRecord {
            message: u32_at(b, at),
            row: u32_at(b, at + 4),
            text_hash: u64_at(b, at + 8),
            kind: chunk_kind_of(b[at + 16]).unwrap_or(ChunkKind::Text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::records::MessageMeta;

    /// Message `i` as the metadata record it was written from.
    fn meta_of(rows: &Rows, i: usize) -> MessageMeta {
        let r = rows.row(i);
        MessageMeta {
            gid: r.gid,
            uuid: rows.uuid(i).to_string(),
            session: r.session,
            agent: r.agent,
            project: r.project,
            cwd: r.cwd,
            git_branch: r.git_branch,
            role: r.role,
            model: r.model,
            timestamp_ms: r.timestamp_ms,
            window: r.window,
            is_compact_summary: r.is_compact_summary,
            kind: r.kind,
            seq: r.seq,
            content_hash: r.content_hash,
            source: r.source,
            text_start: r.text_start,
            text_len: r.text_len,
        }
    }

    fn sample() -> SegmentMeta {
        let m = |i: u32, agent: Option<u32>, ts: Option<i64>| MessageMeta {
            gid: 1000 + i as u64,
            uuid: format!("uuid-{i}-é"),
            session: 0,
            agent,
            project: 1,
            cwd: if i.is_multiple_of(2) { Some(2) } else { None },
            git_branch: None,
            role: 3,
            model: Some(2),
            timestamp_ms: ts,
            window: i / 3,
            is_compact_summary: i == 4,
            kind: 3,
            seq: i * 7,
            content_hash: 0xdead_beef_0000 + i as u64,
            source: 2,
            text_start: i as u64 * 100,
            text_len: 99,
        };
        SegmentMeta {
            strings: ["s", "/p", "/src/x.jsonl", "user"]
                .map(String::from)
                .to_vec(),
            messages: vec![
                m(0, None, Some(1_700_000_000_000)),
                m(1, Some(1), None),
                m(4, None, Some(-5)),
            ],
            chunks: vec![
                ChunkRecord {
                    message: 0,
                    kind: ChunkKind::ToolResult,
                    row: 0,
                    text_hash: 7,
                },
                ChunkRecord {
                    message: 2,
                    kind: ChunkKind::Thinking,
                    row: 1,
                    text_hash: u64::MAX,
                },
            ],
        }
    }

    #[test]
    fn records_read_back_as_written() {
        let meta = sample();
        let rows = Rows::from_meta(&meta, "t").unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows.chunk_count(), 2);
        assert_eq!(rows.strings, meta.strings);
        for (i, m) in meta.messages.iter().enumerate() {
            assert_eq!(&meta_of(&rows, i), m);
            assert_eq!(rows.uuid(i), m.uuid);
        }
        for (c, rec) in meta.chunks.iter().enumerate() {
            assert_eq!(&rows.chunk(c), rec);
        }
    }

    #[test]
    fn out_of_range_symbols_and_lengths_are_damage() {
        let mut meta = sample();
        meta.messages[1].project = 9;
        assert!(Rows::from_meta(&meta, "t").is_err());
        let mut meta = sample();
        meta.chunks[0].message = 3;
        assert!(Rows::from_meta(&meta, "t").is_err());
        let mut bytes = encode(&sample());
        bytes.pop();
        assert!(Rows::parse(Bytes::Owned(bytes), "t").is_err());
        let mut bytes = encode(&sample());
        let at = HEAD + format::encode(&sample().strings).len() + 32;
        bytes[at] = 200; // message 0's session symbol
        let rows = Rows::parse(Bytes::Owned(bytes), "t").unwrap();
        assert!(rows.validate("t").is_err());
        assert_eq!(rows.row(0).session, 200);
    }
}
