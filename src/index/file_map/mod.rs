//! The file map: which sessions read, changed or named each file, built with the index so that `ghola files`
//! never re-reads a transcript.
//!
//! It lives in `<index>/files/`, beside the segments and apart from them (a file's history is asked by path, the
//! segments are read by message): 256 *path buckets* (`p-XX`, by the hash of the file's lower-cased name) hold
//! the touches, and 64 *session buckets* (`s-XX`, by session id) hold what a touch needs from its session — the
//! user's requests, the tools' outcomes (failed, created), the title. A question reads one path bucket and the
//! session buckets of the sessions it found: a few hundred kilobytes at a million messages.
//!
//! Each bucket is an append-only log of frames (length, CRC32, bincode) after an 8-byte magic. Only the index's
//! writer appends, under the index lock, before it publishes the manifest; a reader takes every whole frame and
//! ignores a torn last one. A record is keyed (a touch by session, agent, tool call and edit; an outcome by tool
//! call; a title by session) and the last written wins, so reading a file again (a crash before the publish, a
//! rewritten transcript, a rebuild) adds nothing twice. `VERSION` says the map is complete: without it (an index
//! built before the map existed, damage, a failed write) the next update rebuilds the map from every transcript
//! and archived copy. `ghola forget` rewrites the buckets without the forgotten sessions.

pub mod query;

use crate::transcript::touch::Touch;
use crate::transcript::{Message, Part, Role, Session};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The map's folder under the index.
pub const FILES_DIR: &str = "files";
const VERSION_FILE: &str = "VERSION";
/// What `VERSION` holds; a different value (an older map) is rebuilt.
const MAP_VERSION: &str = "ghola file map 2\n";
const MAGIC: &[u8; 8] = b"GHOLAFM1";
const PATH_BUCKETS: u32 = 256;
const SESSION_BUCKETS: u32 = 64;
/// A frame longer than this is damage, not data (frames hold one update's records for one bucket).
const MAX_FRAME: usize = 256 << 20;
/// How much of a user's request is kept.
const REQUEST_CHARS: usize = 300;

/// One file touched by one tool call, as the map keeps it: the change, and where and when it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TouchRecord {
    /// What the call did; its `path` absolute as recorded (a command's relative path joined to the message's
    /// directory).
    pub change: Touch,
    pub session: String,
    pub agent: Option<String>,
    /// The message that made the call.
    pub uuid: String,
    pub tool_use_id: String,
    /// Position of the message in its conversation: the request before it is the latest ask with a lower one.
    pub seq: u32,
    pub at_ms: Option<i64>,
    pub project: String,
    /// The machine whose history it is (`None`: this one).
    pub machine: Option<String>,
}

/// A record of the map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Record {
    Touch(Box<TouchRecord>),
    /// Something the user asked (a user message with text), cut to [`REQUEST_CHARS`].
    Ask {
        session: String,
        agent: Option<String>,
        seq: u32,
        text: String,
    },
    /// How a tool call ended: an error (the edit did not happen) or a file created.
    Outcome {
        session: String,
        tool_use_id: String,
        failed: bool,
        created: bool,
    },
    /// The session's title when it was last read whole.
    Title {
        session: String,
        title: String,
    },
}

impl Record {
    fn session(&self) -> &str {
        match self {
            Record::Touch(t) => &t.session,
            Record::Ask { session, .. }
            | Record::Outcome { session, .. }
            | Record::Title { session, .. } => session,
        }
    }

    /// What a reader picks the record by without decoding it: a touch's path in its normal form
    /// ([`query::normal`]), else its session.
    fn key(&self) -> String {
        match self {
            Record::Touch(t) => query::normal(&t.change.path).0,
            other => other.session().to_string(),
        }
    }

    /// The bucket file this record goes to.
    fn bucket(&self) -> String {
        match self {
            Record::Touch(t) => path_bucket(&t.change.path),
            other => session_bucket(other.session()),
        }
    }
}

/// Why the map could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FileMapError {
    #[error("the file map {0}: {1}")]
    Io(String, std::io::Error),
}

fn fnv(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// The lower-cased last component of a path, whatever its separators: what a path bucket is chosen by, so that
/// a path typed on Windows and one recorded on Linux meet in one bucket.
pub fn file_name_key(path: &str) -> String {
    path.trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or("")
        .to_lowercase()
}

fn path_bucket(path: &str) -> String {
    format!(
        "p-{:02x}",
        fnv(file_name_key(path).as_bytes()) % PATH_BUCKETS
    )
}

fn session_bucket(session: &str) -> String {
    format!("s-{:02x}", fnv(session.as_bytes()) % SESSION_BUCKETS)
}

/// The map's folder of the index in `index_dir`.
pub fn map_dir(index_dir: &Path) -> PathBuf {
    index_dir.join(FILES_DIR)
}

/// Whether the map holds every indexed session (it was built whole, or alongside the index from the start).
pub fn is_complete(index_dir: &Path) -> bool {
    std::fs::read_to_string(map_dir(index_dir).join(VERSION_FILE)).is_ok_and(|v| v == MAP_VERSION)
}

/// Marks the map complete (after a rebuild, or after the first full build of an index).
pub fn mark_complete(index_dir: &Path) -> std::io::Result<()> {
    let dir = map_dir(index_dir);
    fs_err::create_dir_all(&dir)?;
    crate::atomic_file::write_atomic(&dir.join(VERSION_FILE), MAP_VERSION.as_bytes())
}

/// Marks the map incomplete: the next update rebuilds it (a damaged bucket was read, or a write failed).
pub fn mark_stale(index_dir: &Path) {
    let _ = std::fs::remove_file(map_dir(index_dir).join(VERSION_FILE));
}

/// Records waiting to be appended, by bucket file.
#[derive(Default)]
pub struct MapWriter {
    pending: BTreeMap<String, Vec<Record>>,
}

impl MapWriter {
    /// Queues a record.
    pub fn add(&mut self, r: Record) {
        self.pending.entry(r.bucket()).or_default().push(r);
    }

    /// Whether anything waits.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Queues what a session's messages say of files: call it with the messages read in this update (for an
    /// append, only the new ones), `agent` naming the conversation, `first_seq` the position of the first.
    pub fn add_messages(
        &mut self,
        s: &Session,
        agent: Option<&str>,
        machine: Option<&str>,
        messages: &[(u32, &Message)],
    ) {
        for (seq, m) in messages {
            for r in records_of(s, agent, machine, *seq, m) {
                self.add(r);
            }
        }
    }

    /// Appends every queued record to its bucket (one frame per bucket), each file synced. Called by the index
    /// writer under its lock, before the manifest that counts the messages is published.
    pub fn flush(&mut self, index_dir: &Path) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let dir = map_dir(index_dir);
        fs_err::create_dir_all(&dir)?;
        for (name, records) in std::mem::take(&mut self.pending) {
            let path = dir.join(name);
            if append_frame(&path, &records)? > COMPACT_AFTER {
                compact(&path)?;
            }
        }
        Ok(())
    }
}

/// The records one message gives: its files, its request, its tools' outcomes.
fn records_of(
    s: &Session,
    agent: Option<&str>,
    machine: Option<&str>,
    seq: u32,
    m: &Message,
) -> Vec<Record> {
    let mut out = Vec::new();
    let agent_owned = agent.map(str::to_string);
    if m.role == Role::User && !m.is_compact_summary {
        // What an IDE added is not what the user asked; a message of nothing else asks nothing.
        let text: Vec<String> = m
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } if text != "[image]" && text != "[document]" => {
                    Some(crate::transcript::clean::without_ide_notes(text))
                }
                _ => None,
            })
            .filter(|t| !t.is_empty())
            .collect();
        if !text.is_empty() {
            out.push(Record::Ask {
                session: s.session_id.clone(),
                agent: agent_owned.clone(),
                seq,
                text: crate::transcript::message::one_line(&text.join(" "), REQUEST_CHARS),
            });
        }
    }
    for p in &m.parts {
        match p {
            Part::ToolUse { id, touches, .. } => {
                for t in touches {
                    out.push(Record::Touch(Box::new(touch_record(
                        s, agent, machine, seq, m, id, t,
                    ))));
                }
            }
            Part::ToolResult {
                tool_use_id,
                text,
                is_error,
            } => {
                let created = text.starts_with("File created successfully");
                if *is_error || created {
                    out.push(Record::Outcome {
                        session: s.session_id.clone(),
                        tool_use_id: tool_use_id.clone(),
                        failed: *is_error,
                        created,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

fn touch_record(
    s: &Session,
    agent: Option<&str>,
    machine: Option<&str>,
    seq: u32,
    m: &Message,
    tool_use_id: &str,
    t: &Touch,
) -> TouchRecord {
    TouchRecord {
        change: Touch {
            path: absolute(&t.path, m.cwd.as_deref().unwrap_or(&s.project)),
            ..t.clone()
        },
        session: s.session_id.clone(),
        agent: agent.map(str::to_string),
        uuid: m.uuid.clone(),
        tool_use_id: tool_use_id.to_string(),
        seq,
        at_ms: m.timestamp.map(|t| t.timestamp_millis()),
        project: s.project.clone(),
        machine: machine.map(str::to_string),
    }
}

/// `path` as an absolute path: as it is when it already is one (on any OS's terms), else joined to `dir` with
/// the separator `dir` uses.
pub fn absolute(path: &str, dir: &str) -> String {
    if query::is_absolute(path) || dir.is_empty() {
        return path.to_string();
    }
    let sep = if dir.contains('\\') && !dir.contains('/') {
        '\\'
    } else {
        '/'
    };
    let rel = path.trim_start_matches("./");
    format!("{}{sep}{rel}", dir.trim_end_matches(['/', '\\']))
}

/// The title record of a session read whole.
pub fn title_record(s: &Session) -> Option<Record> {
    s.title.as_ref().map(|t| Record::Title {
        session: s.session_id.clone(),
        title: t.clone(),
    })
}

/// A frame's payload: per record its key (length, bytes) and the record (length, bincode), so that a reader
/// decodes only the records whose key it wants.
fn encode_entries(records: &[Record]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        let key = r.key();
        let key = &key.as_bytes()[..key.len().min(u16::MAX as usize)];
        let rec = super::format::encode(r);
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
            out.push(super::format::decode::<Record>(name, rec).map_err(|_| ())?);
        }
    }
    Ok(())
}

/// Appends one frame of `records` to a bucket file; returns how many frames it now holds.
fn append_frame(path: &Path, records: &[Record]) -> std::io::Result<usize> {
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
const COMPACT_AFTER: usize = 64;

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
fn compact(path: &Path) -> std::io::Result<()> {
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
fn frames(bytes: &[u8]) -> (Vec<&[u8]>, usize) {
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
fn read_bucket(path: &Path, want: &dyn Fn(&str) -> bool) -> Result<Bucket, FileMapError> {
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

/// The touches of the path bucket of `path` (files named like it, any case) whose path's normal form `want`
/// accepts, in the order written.
pub fn touches_named(
    index_dir: &Path,
    path: &str,
    want: &dyn Fn(&str) -> bool,
) -> Result<Bucket, FileMapError> {
    read_bucket(&map_dir(index_dir).join(path_bucket(path)), want)
}

/// What the session buckets hold of these sessions, in the order written.
pub fn session_records(index_dir: &Path, sessions: &HashSet<&str>) -> Result<Bucket, FileMapError> {
    let names: std::collections::BTreeSet<String> =
        sessions.iter().map(|s| session_bucket(s)).collect();
    let mut all = Bucket {
        records: Vec::new(),
        damaged: false,
    };
    for name in names {
        let b = read_bucket(&map_dir(index_dir).join(name), &|k| sessions.contains(k))?;
        all.damaged |= b.damaged;
        all.records.extend(b.records);
    }
    Ok(all)
}

/// Rewrites every bucket without the records of `sessions` (`ghola forget`; called under the index lock). A
/// bucket that cannot be read is removed and the map marked stale: the rebuild leaves forgotten sessions out.
pub fn forget_sessions(index_dir: &Path, sessions: &HashSet<String>) -> std::io::Result<()> {
    let dir = map_dir(index_dir);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if !(name.starts_with("p-") || name.starts_with("s-")) || name.contains('.') {
            continue;
        }
        let Ok(b) = read_bucket(&path, &|_| true) else {
            fs_err::remove_file(&path)?;
            mark_stale(index_dir);
            continue;
        };
        if b.damaged {
            fs_err::remove_file(&path)?;
            mark_stale(index_dir);
            continue;
        }
        let before = b.records.len();
        let kept: Vec<Record> = b
            .records
            .into_iter()
            .filter(|r| !sessions.contains(r.session()))
            .collect();
        if kept.len() == before {
            continue;
        }
        let tmp = dir.join(format!("{name}.tmp"));
        let _ = std::fs::remove_file(&tmp);
        if !kept.is_empty() {
            append_frame(&tmp, &kept)?;
            fs_err::rename(&tmp, &path)?;
        } else {
            fs_err::remove_file(&path)?;
        }
    }
    super::format::sync_dir(&dir)
}

/// Builds the map again from whole sessions (an index older than the map, or a damaged map): written into a
/// fresh folder that replaces the old one, then marked complete. `machine_of` names a session's machine.
pub fn rebuild(
    index_dir: &Path,
    sessions: impl Iterator<Item = (Session, Option<String>)>,
) -> std::io::Result<usize> {
    let fresh = index_dir.join(format!("{FILES_DIR}.new"));
    let _ = fs_err::remove_dir_all(&fresh);
    fs_err::create_dir_all(&fresh)?;
    let mut n = 0;
    let mut w = MapWriter::default();
    for (s, machine) in sessions {
        n += 1;
        add_whole_session(&mut w, &s, machine.as_deref());
        if w.pending.values().map(Vec::len).sum::<usize>() > 20_000 {
            flush_into(&mut w, &fresh)?;
        }
    }
    flush_into(&mut w, &fresh)?;
    let dir = map_dir(index_dir);
    if dir.exists() {
        fs_err::remove_dir_all(&dir)?;
    }
    fs_err::rename(&fresh, &dir)?;
    super::format::sync_dir(index_dir)?;
    mark_complete(index_dir)?;
    Ok(n)
}

fn flush_into(w: &mut MapWriter, dir: &Path) -> std::io::Result<()> {
    for (name, records) in std::mem::take(&mut w.pending) {
        append_frame(&dir.join(name), &records)?;
    }
    Ok(())
}

/// Queues every record of a session read whole: its title, then each conversation's messages.
pub fn add_whole_session(w: &mut MapWriter, s: &Session, machine: Option<&str>) {
    if let Some(t) = title_record(s) {
        w.add(t);
    }
    let main: Vec<(u32, &Message)> = s
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| (i as u32, m))
        .collect();
    w.add_messages(s, None, machine, &main);
    for a in &s.subagents {
        let msgs: Vec<(u32, &Message)> = a
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| (i as u32, m))
            .collect();
        w.add_messages(s, Some(&a.agent_id), machine, &msgs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(session: &str, seq: u32) -> Record {
        Record::Ask {
            session: session.into(),
            agent: None,
            seq,
            text: format!("ask {seq}"),
        }
    }

    #[test]
    fn a_torn_frame_is_ignored_then_cut_back_and_damage_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = MapWriter::default();
        w.add(ask("s1", 1));
        w.flush(dir.path()).unwrap();
        let file = map_dir(dir.path()).join(session_bucket("s1"));
        let whole = std::fs::read(&file).unwrap();
        // A writer killed mid-frame: the reader takes what is whole, the next writer cuts the rest.
        let mut torn = whole.clone();
        torn.extend_from_slice(&[200, 0, 0, 0, 1, 2, 3, 4, 5]);
        std::fs::write(&file, &torn).unwrap();
        let b = session_records(dir.path(), &HashSet::from(["s1"])).unwrap();
        assert_eq!((b.records.len(), b.damaged), (1, false));
        w.add(ask("s1", 2));
        w.flush(dir.path()).unwrap();
        let b = session_records(dir.path(), &HashSet::from(["s1"])).unwrap();
        assert_eq!(
            (b.records, b.damaged),
            (vec![ask("s1", 1), ask("s1", 2)], false)
        );
        // A flipped byte inside a whole frame is damage.
        let mut bad = std::fs::read(&file).unwrap();
        let n = bad.len();
        bad[n - 2] ^= 0xff;
        std::fs::write(&file, &bad).unwrap();
        let b = session_records(dir.path(), &HashSet::from(["s1"])).unwrap();
        assert_eq!((b.records.len(), b.damaged), (1, true));
    }

    #[test]
    fn a_bucket_of_many_frames_is_compacted_to_the_last_record_of_each_identity() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = MapWriter::default();
        for round in 0..=COMPACT_AFTER {
            // The same ask read again (a transcript re-read), and one new each round.
            w.add(ask("s1", 1));
            w.add(ask("s1", 100 + round as u32));
            w.flush(dir.path()).unwrap();
        }
        let file = map_dir(dir.path()).join(session_bucket("s1"));
        let bytes = std::fs::read(&file).unwrap();
        assert_eq!(frames(&bytes).0.len(), 1, "compacted into one frame");
        let b = session_records(dir.path(), &HashSet::from(["s1"])).unwrap();
        assert_eq!(b.records.len(), COMPACT_AFTER + 2, "each identity once");
        assert!(!b.damaged);
    }

    #[test]
    fn forgetting_rewrites_the_buckets_without_the_session() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = MapWriter::default();
        for s in ["keep", "gone"] {
            w.add(ask(s, 1));
            w.add(Record::Title {
                session: s.into(),
                title: "t".into(),
            });
        }
        w.flush(dir.path()).unwrap();
        forget_sessions(dir.path(), &HashSet::from(["gone".to_string()])).unwrap();
        let b = session_records(dir.path(), &HashSet::from(["keep", "gone"])).unwrap();
        assert!(b.records.iter().all(|r| r.session() == "keep"));
        assert_eq!(b.records.len(), 2);
    }

    #[test]
    fn relative_command_paths_are_joined_to_the_directory() {
        assert_eq!(absolute("src/a.rs", "/p/q/"), "/p/q/src/a.rs");
        assert_eq!(absolute("./a.rs", r"C:\w\p"), r"C:\w\p\a.rs");
        assert_eq!(absolute("/x/a.rs", "/p"), "/x/a.rs");
        assert_eq!(absolute(r"D:\x\a.rs", "/p"), r"D:\x\a.rs");
        assert_eq!(file_name_key(r"C:\W\P\Main.RS"), "main.rs");
    }
}
