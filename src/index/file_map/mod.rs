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

mod frames;
pub mod query;
mod rebuild;

use frames::{Bucket, COMPACT_AFTER, append_frame, compact, read_bucket};
pub use rebuild::{after_first_update, before_update};

use crate::transcript::touch::Touch;
use crate::transcript::{Message, Part, Role, Session};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// The map's folder under the index.
pub const FILES_DIR: &str = "files";
const VERSION_FILE: &str = "VERSION";
/// What `VERSION` holds; a different value (an older map) is rebuilt.
const MAP_VERSION: &str = "ghola file map 2\n";
const PATH_BUCKETS: u32 = 256;
const SESSION_BUCKETS: u32 = 64;
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
    /// Something the user asked (a user message with text), cut to `REQUEST_CHARS`.
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
    pub fn add_messages(&mut self, s: &Session, agent: Option<&str>, messages: &[(u32, &Message)]) {
        for (seq, m) in messages {
            for r in records_of(s, agent, *seq, m) {
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
        self.write_into(&dir)
    }

    /// Appends the queued records to the buckets in `dir`, compacting a bucket that gathered
    /// [`frames::COMPACT_AFTER`] frames.
    fn write_into(&mut self, dir: &Path) -> std::io::Result<()> {
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
fn records_of(s: &Session, agent: Option<&str>, seq: u32, m: &Message) -> Vec<Record> {
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
                        s, agent, seq, m, id, t,
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
        machine: s.machine.clone(),
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
        assert_eq!(
            frames::frames(&bytes).0.len(),
            1,
            "compacted into one frame"
        );
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
