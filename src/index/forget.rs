//! `ghola forget`: sessions removed from the index and the archive for good — text, vectors, lexical postings
//! and archived bytes — and kept out of later updates unless the user allows it.
//!
//! Space is reclaimed at once, not at some later merge: the segments that held the sessions are rewritten
//! without them, the lexical index is compacted into one segment (tantivy only marks deletes), and the archive's
//! packs are rewritten without the sessions' frames; the old files are deleted.

use super::archive::ArchiveWriter;
use super::format::{self, FormatError};
use super::opening::{append_writer, lock};
use super::snapshot::Snapshot;
use super::{IndexError, UpdateSummary};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

const FORGOTTEN: &str = "forgotten";
const FORGOTTEN_MAGIC: &[u8; 8] = b"GHOLAFGT";

/// Sessions the user forgot, by id: updates leave their transcripts alone.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Forgotten {
    pub sessions: BTreeMap<String, ForgottenSession>,
}

/// What is remembered of a forgotten session: enough to name it again with `--allow-reindex`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ForgottenSession {
    /// When it was forgotten (ms since the epoch).
    pub at_ms: i64,
    pub project: String,
    pub last_ms: Option<i64>,
}

/// The forgotten sessions of the index in `dir` (none when the file is absent). A damaged file is reported and
/// read as empty: updates then index those transcripts again, which loses nothing.
pub fn forgotten(dir: &Path) -> Forgotten {
    let path = dir.join(FORGOTTEN);
    if !path.exists() {
        return Forgotten::default();
    }
    let read = || -> Result<Forgotten, FormatError> {
        let payload = format::read_framed(&path, FORGOTTEN_MAGIC, "forgotten sessions")?;
        format::decode(&path.display().to_string(), &payload)
    };
    read().unwrap_or_else(|e| {
        tracing::warn!("{e}; forgotten sessions may be indexed again");
        Forgotten::default()
    })
}

fn save_forgotten(dir: &Path, f: &Forgotten) -> std::io::Result<()> {
    let tmp = dir.join(format!("{FORGOTTEN}.tmp"));
    format::write_framed(&tmp, FORGOTTEN_MAGIC, &format::encode(f))?;
    fs_err::rename(&tmp, dir.join(FORGOTTEN))?;
    format::sync_dir(dir)
}

/// A session as `forget` lists it before asking.
#[derive(Debug, Clone, Serialize)]
pub struct SessionInfo {
    pub session_id: String,
    pub project: String,
    pub messages: usize,
    /// Time of its last message (ms since the epoch).
    pub last_ms: Option<i64>,
}

/// Which sessions to forget.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Session ids or unique prefixes.
    pub sessions: Vec<String>,
    /// Every session of this project directory (or below it).
    pub project: Option<String>,
    /// Every session whose last message is before this time (ms since the epoch).
    pub before_ms: Option<i64>,
}

/// The indexed sessions `sel` names (all criteria must hold; an id prefix must name one session); with
/// `forgotten_too`, sessions forgotten earlier as well (to let them be indexed again).
pub fn select(
    dir: &Path,
    sel: &Selection,
    forgotten_too: bool,
) -> Result<Vec<SessionInfo>, IndexError> {
    // Every session, whatever the memory limit for searching.
    let snap = Snapshot::open_with(dir, u64::MAX, false)?;
    let mut by: BTreeMap<&str, SessionInfo> = BTreeMap::new();
    let earlier = forgotten(dir);
    if forgotten_too {
        for (id, f) in &earlier.sessions {
            by.insert(
                id,
                SessionInfo {
                    session_id: id.clone(),
                    project: f.project.clone(),
                    messages: 0,
                    last_ms: f.last_ms,
                },
            );
        }
    }
    for (i, m) in snap.messages.iter().enumerate() {
        let s = by.entry(snap.session_id(i)).or_insert_with(|| SessionInfo {
            session_id: snap.session_id(i).to_string(),
            project: snap.project(i).to_string(),
            messages: 0,
            last_ms: None,
        });
        s.messages += 1;
        s.last_ms = s.last_ms.max(m.timestamp_ms);
    }
    let mut ids: Option<HashSet<String>> = None;
    if !sel.sessions.is_empty() {
        let mut chosen = HashSet::new();
        for want in &sel.sessions {
            let id = crate::transcript::resolve_session_id(want, by.keys().copied())?;
            chosen.insert(id.to_string());
        }
        ids = Some(chosen);
    }
    Ok(by
        .into_values()
        .filter(|s| ids.as_ref().is_none_or(|ids| ids.contains(&s.session_id)))
        .filter(|s| {
            sel.project
                .as_deref()
                .is_none_or(|p| crate::transcript::is_within(&s.project, p))
        })
        .filter(|s| {
            sel.before_ms
                .is_none_or(|b| s.last_ms.is_some_and(|t| t < b))
        })
        .collect())
}

/// What `forget` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ForgetSummary {
    pub sessions: usize,
    pub messages_removed: usize,
    pub segments_rewritten: usize,
    pub archive_bytes_reclaimed: u64,
    /// Whether the sessions are kept out of later updates (false with `--allow-reindex`).
    pub remembered_as_forgotten: bool,
}

/// Forgets `sessions` (ids) under the index lock. Unless `allow_reindex`, they are first recorded as forgotten,
/// so a crash half-way never lets an update bring them back; running it again finishes the job.
pub fn forget(
    dir: &Path,
    chosen: &[SessionInfo],
    allow_reindex: bool,
) -> Result<ForgetSummary, IndexError> {
    let sessions: HashSet<String> = chosen.iter().map(|s| s.session_id.clone()).collect();
    let sessions = &sessions;
    let _lock = lock(dir, true)?;
    let mut out = ForgetSummary {
        sessions: sessions.len(),
        remembered_as_forgotten: !allow_reindex,
        ..Default::default()
    };
    let mut f = forgotten(dir);
    let now = chrono::Utc::now().timestamp_millis();
    if allow_reindex {
        f.sessions.retain(|s, _| !sessions.contains(s));
    } else {
        for s in chosen {
            f.sessions.insert(
                s.session_id.clone(),
                ForgottenSession {
                    at_ms: now,
                    project: s.project.clone(),
                    last_ms: s.last_ms,
                },
            );
        }
    }
    save_forgotten(dir, &f)?;
    (out.messages_removed, out.segments_rewritten) = drop_from_index(dir, sessions)?;
    // The archive.
    let mut a = ArchiveWriter::open(dir)?;
    out.archive_bytes_reclaimed = a.forget_sessions(sessions)?;
    // ghola's copies of other machines' transcripts (the next syncs leave them out).
    for m in super::machines::list(dir) {
        for s in crate::transcript::discover(&m.dir).sessions {
            if sessions.contains(&s.session_id) {
                for f in s.all_files() {
                    fs_err::remove_file(f).or_else(|e| {
                        if e.kind() == std::io::ErrorKind::NotFound {
                            Ok(())
                        } else {
                            Err(e)
                        }
                    })?;
                }
                let folder = s.project_dir.join(&s.session_id);
                if folder.is_dir() {
                    fs_err::remove_dir_all(&folder)?;
                }
            }
        }
    }
    Ok(out)
}

/// Drops `sessions` from the index only — not from the archive, not recorded as forgotten — so the next update
/// reads their files again whole: what a changed path rule of their machine (`ghola remote map`) needs. Returns
/// the messages dropped.
pub fn reread(dir: &Path, sessions: &HashSet<String>) -> Result<usize, IndexError> {
    if sessions.is_empty() {
        return Ok(0);
    }
    let _lock = lock(dir, true)?;
    Ok(drop_from_index(dir, sessions)?.0)
}

/// Removes every message of `sessions` from the index (the caller holds the index lock): their rows killed,
/// their files' fingerprints dropped (so an update reads those files again from the start, unless the sessions
/// are also recorded as forgotten), the segments that held them rewritten without them and the lexical index
/// compacted, so no text, vector or posting of theirs stays on disk. Returns the messages removed and the
/// segments rewritten.
pub(super) fn drop_from_index(
    dir: &Path,
    sessions: &HashSet<String>,
) -> Result<(usize, usize), IndexError> {
    let Some(manifest) = super::snapshot::read_manifest(dir)? else {
        return Ok((0, 0));
    };
    // Every message, whatever the memory limit for searching: none of the sessions' may stay.
    let snap = Snapshot::open_with(dir, u64::MAX, false)?;
    let mut gids = Vec::new();
    let mut segments = HashSet::new();
    for (i, m) in snap.messages.iter().enumerate() {
        if sessions.contains(snap.session_id(i)) {
            gids.push(m.gid);
            segments.insert(snap.segment_id(i));
        }
    }
    // Superseded versions of the same messages live in the manifest's dead list already.
    drop(snap);
    let removed = gids.len();
    // Nothing is read from transcripts: the archive is handled by the caller, on its own.
    let mut w = append_writer(
        dir,
        manifest,
        UpdateSummary::default(),
        false,
        super::archive::ArchiveCopy::Off,
    )?;
    w.kill(gids);
    w.manifest
        .files
        .retain(|st| !sessions.contains(&st.session_id));
    w.publish(None)?;
    // What the file map knew of them (requests, changes) goes too; a re-read brings it back.
    super::file_map::forget_sessions(dir, sessions)?;
    let mut ids: Vec<u64> = segments.into_iter().collect();
    ids.sort();
    w.purge(&ids)?;
    w.lexical.compact(&mut w.lex_writer)?;
    Ok((removed, ids.len()))
}
