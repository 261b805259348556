//! The file map's bucket files: an 8-byte magic, then frames (length, CRC32, payload) appended one per update;
//! a payload is records each behind its key, so that a reader decodes only the records it wants. Whole frames
//! are read; a torn last one is ignored by readers and cut back by the next writer.

use super::{FileMapError, Record};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;

const MAGIC: &[u8; 8] = b"GHOLAFM1";
/// A frame longer than this is damage, not data (frames hold one update's records for one bucket).
const MAX_FRAME: usize = 256 << 20;

/// A frame's payload: per record its key (length, bytes) and the record (length, bincode), so that a reader
/// decodes only the records whose key it wants.
fn encode_entries(records: &[Record]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        let key = r.key();
        let key = &key.as_bytes()[..key.len().min(u16::MAX as usize)];
        let rec = crate::index::format::encode(r);
        out.extend_from_slice(&(key.len() as u16).to_le_bytes());
        out.extend_from_slice(key);
        out.extend_from_slice(&(rec.len() as u32).to_le_bytes());
        out.extend_from_slice(&rec);
    }
    out
}

/// The records of a payload whose key `want` accepts; `Err` when the payload does not parse.
fn decode_entries(
    name: &str,
    payload: &[u8],
    want: &dyn Fn(&str) -> bool,
    out: &mut Vec<Record>,
) -> Result<(), ()> {
    let mut at = 0;
    let take = |at: &mut usize, n: usize| -> Result<&[u8], ()> {
        let end = at
            .checked_add(n)
            .filter(|e| *e <= payload.len())
            .ok_or(())?;
        let b = &payload[*at..end];
        *at = end;
        Ok(b)
    };
    while at < payload.len() {
        let klen = u16::from_le_bytes(take(&mut at, 2)?.try_into().map_err(|_| ())?) as usize;
        let key = std::str::from_utf8(take(&mut at, klen)?).map_err(|_| ())?;
        let rlen = u32::from_le_bytes(take(&mut at, 4)?.try_into().map_err(|_| ())?) as usize;
        let rec = take(&mut at, rlen)?;
        if want(key) {
            out.push(crate::index::format::decode::<Record>(name, rec).map_err(|_| ())?);
        }
    }
    Ok(())
}

/// Appends one frame of `records` to a bucket file; returns how many frames it now holds.
pub(super) fn append_frame(path: &Path, records: &[Record]) -> std::io::Result<usize> {
    let payload = encode_entries(records);
    // Opened for writing, not appending: cutting a torn tail needs write access on Windows.
    let mut f = fs_err::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)?;
    let (good, held) = good_length(f.file_mut())?;
    let len = f.metadata()?.len();
    if len != good {
        // A torn frame from a writer that was killed, or a foreign start: cut back to what is whole.
        f.file().set_len(good)?;
    }
    {
        use std::io::Seek;
        f.seek(std::io::SeekFrom::Start(good))?;
    }
    let mut bytes = Vec::with_capacity(payload.len() + 16);
    if good == 0 {
        bytes.extend_from_slice(MAGIC);
    }
    bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    bytes.extend_from_slice(&payload);
    f.write_all(&bytes)?;
    f.sync_all()?;
    Ok(held + 1)
}

/// The length of a bucket file's whole frames (0 when it does not start with the magic) and their count.
fn good_length(f: &mut std::fs::File) -> std::io::Result<(u64, usize)> {
    use std::io::Seek;
    f.seek(std::io::SeekFrom::Start(0))?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    let (payloads, good) = frames(&bytes);
    Ok((good as u64, payloads.len()))
}

/// Frames a bucket may gather (one per update that wrote to it) before it is rewritten as one.
pub(super) const COMPACT_AFTER: usize = 64;

/// What makes two records one: a later record of the same identity replaces an earlier one.
fn identity(r: &Record) -> String {
    match r {
        Record::Touch(t) => format!(
            "t\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
            t.session,
            t.agent.as_deref().unwrap_or(""),
            t.tool_use_id,
            t.change.index
        ),
        Record::Ask {
            session,
            agent,
            seq,
            ..
        } => format!(
            "a\u{1f}{session}\u{1f}{}\u{1f}{seq}",
            agent.as_deref().unwrap_or("")
        ),
        Record::Outcome {
            session,
            tool_use_id,
            ..
        } => format!("o\u{1f}{session}\u{1f}{tool_use_id}"),
        Record::Title { session, .. } => format!("n\u{1f}{session}"),
    }
}

/// Rewrites a bucket as one frame holding the last record of each identity (a file read again appends its
/// records again): through a temporary file renamed over it. An unreadable or damaged bucket is left for the
/// readers to report.
pub(super) fn compact(path: &Path) -> std::io::Result<()> {
    let Ok(b) = read_bucket(path, &|_| true) else {
        return Ok(());
    };
    if b.damaged {
        return Ok(());
    }
    let mut last: HashMap<String, usize> = HashMap::new();
    for (i, r) in b.records.iter().enumerate() {
        last.insert(identity(r), i);
    }
    let kept: Vec<Record> = b
        .records
        .into_iter()
        .enumerate()
        .filter(|(i, r)| last.get(&identity(r)) == Some(i))
        .map(|(_, r)| r)
        .collect();
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    append_frame(&tmp, &kept)?;
    fs_err::rename(&tmp, path)
}

/// The payloads of a bucket's whole frames, and the length they cover.
pub(super) fn frames(bytes: &[u8]) -> (Vec<&[u8]>, usize) {
    if !bytes.starts_with(MAGIC) {
        return (Vec::new(), 0);
    }
    let mut at = MAGIC.len();
    let mut out = Vec::new();
    while bytes.len() >= at + 8 {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default()) as usize;
        let crc = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap_or_default());
        let end = at + 8 + len;
        if len > MAX_FRAME || end > bytes.len() || crc32fast::hash(&bytes[at + 8..end]) != crc {
            break;
        }
        out.push(&bytes[at + 8..end]);
        at = end;
    }
    (out, at)
}

/// What a bucket holds, in the order written; `damaged` when something other than a torn last frame could not
/// be read (the caller marks the map stale so that the next update rebuilds it).
pub struct Bucket {
    pub records: Vec<Record>,
    pub damaged: bool,
}

/// Reads the records of a bucket file whose key `want` accepts; a missing file is empty.
pub(super) fn read_bucket(
    path: &Path,
    want: &dyn Fn(&str) -> bool,
) -> Result<Bucket, FileMapError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(FileMapError::Io(path.display().to_string(), e)),
    };
    let (payloads, good) = frames(&bytes);
    // Bytes after the last whole frame: a frame being written right now is short of its length; anything
    // else (a bad checksum with a whole frame's bytes, a foreign start) is damage.
    let mut damaged = !bytes.is_empty() && !bytes.starts_with(MAGIC);
    if good < bytes.len() && good >= MAGIC.len() && bytes.len() >= good + 8 {
        let len = u32::from_le_bytes(bytes[good..good + 4].try_into().unwrap_or_default()) as usize;
        damaged |= len > MAX_FRAME || good + 8 + len <= bytes.len();
    }
    let mut records = Vec::new();
    let name = path.display().to_string();
    for p in payloads {
        damaged |= decode_entries(&name, p, want, &mut records).is_err();
    }
    Ok(Bucket { records, damaged })
}
