//! The scan an update starts with: every transcript on disk against the manifest's fingerprints (a `stat` each;
//! the head of changed files only), telling the files that are the same, new, grown (resumable) or rewritten.

use super::records::{FileState, Manifest, Resume};
use super::writer::hash64;
use crate::transcript::catalog::mtime_ns;
use crate::transcript::{self, SessionFiles};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};

/// Bytes of a file's head that its fingerprint covers.
const HEAD_BYTES: u64 = 4096;

/// Hash of the first `len` (at most [`HEAD_BYTES`]) bytes of a file.
fn head_hash(path: &Path, len: u64) -> u64 {
    use std::io::Read;
    let mut buf = Vec::with_capacity(HEAD_BYTES as usize);
    let _ = File::open(path).and_then(|f| f.take(len.min(HEAD_BYTES)).read_to_end(&mut buf));
    hash64(&[&buf])
}

/// How a transcript file stands against its fingerprint.
pub(super) enum Change {
    Same,
    New,
    /// Grown with the same head, and resumable from this state.
    Grown(Resume),
    /// Shrunk, rewritten, reappeared, or not resumable: read whole, on the full path.
    Rewritten,
}

/// A session with changed files: its newest mtime (newest sessions are indexed first), its files, each file's
/// change and new fingerprint.
pub(super) struct Changed<'a> {
    pub newest: i128,
    pub files: &'a SessionFiles,
    pub changes: Vec<(PathBuf, Change, FileState)>,
}

/// Compares every transcript on disk with the manifest's fingerprints (a `stat` each; the head of changed files
/// only). Returns the sessions with changes and the paths seen.
pub(super) fn scan<'a>(
    sessions: &'a [SessionFiles],
    manifest: Option<&Manifest>,
    archived_only: &HashMap<String, u64>,
    summary: &mut super::UpdateSummary,
) -> (Vec<Changed<'a>>, HashSet<String>) {
    let by_path: HashMap<&str, &FileState> = manifest
        .map(|m| m.files.iter().map(|f| (f.path.as_str(), f)).collect())
        .unwrap_or_default();
    let mut changed = Vec::new();
    let mut on_disk = HashSet::new();
    for s in sessions {
        let mut changes = Vec::new();
        let mut any = false;
        let mut newest = 0i128;
        for path in s.all_files() {
            summary.files_seen += 1;
            let key = path.display().to_string();
            let (size, mtime) = match fs_err::metadata(path) {
                Ok(meta) => {
                    on_disk.insert(key.clone());
                    (meta.len(), mtime_ns(&meta))
                }
                Err(_) => {
                    // Gone from disk: only a file the index does not know yet (an index rebuilt after damage)
                    // is read back, from the archive, as a deleted source.
                    if let Some(&size) = archived_only.get(&key)
                        && !by_path.contains_key(key.as_str())
                    {
                        any = true;
                        changes.push((
                            path.to_path_buf(),
                            Change::New,
                            FileState {
                                path: key.clone(),
                                session_id: s.session_id.clone(),
                                size,
                                mtime_ns: 0,
                                consumed: 0,
                                head_hash: 0,
                                deleted: true,
                                resume: None,
                            },
                        ));
                    }
                    continue;
                }
            };
            newest = newest.max(mtime);
            let fresh = |head_hash| FileState {
                path: key.clone(),
                session_id: s.session_id.clone(),
                size,
                mtime_ns: mtime,
                consumed: 0,
                head_hash,
                deleted: false,
                resume: None,
            };
            let change = match by_path.get(key.as_str()) {
                Some(old)
                    if old.size == size
                        && old.mtime_ns == mtime
                        && !old.deleted
                        && !tail_became_readable(path, old) =>
                {
                    changes.push((path.to_path_buf(), Change::Same, (*old).clone()));
                    continue;
                }
                None => Change::New,
                Some(old) => {
                    let same_head = old.head_hash == head_hash(path, old.size);
                    match &old.resume {
                        Some(r)
                            if !old.deleted
                                && same_head
                                && size >= old.consumed
                                && r.offset <= old.consumed =>
                        {
                            Change::Grown(r.clone())
                        }
                        _ => Change::Rewritten,
                    }
                }
            };
            any = true;
            changes.push((path.to_path_buf(), change, fresh(head_hash(path, size))));
        }
        if any {
            changed.push(Changed {
                newest,
                files: s,
                changes,
            });
        }
    }
    changed.sort_by_key(|c| std::cmp::Reverse(c.newest));
    (changed, on_disk)
}

/// Whether an unchanged file has a last line without a newline that the reader now consumes (an index made
/// before complete unterminated lines were read left them pending): such a file is read again from its resume
/// point. Only files with pending bytes are opened, and only their tail is read.
fn tail_became_readable(path: &Path, old: &FileState) -> bool {
    let pending = old.size.saturating_sub(old.consumed);
    if pending == 0 || pending > transcript::MAX_LINE_BYTES as u64 {
        return false;
    }
    let read = || -> std::io::Result<Vec<u8>> {
        use std::io::{Read, Seek};
        let mut f = fs_err::File::open(path).map(fs_err::File::into_file)?;
        f.seek(std::io::SeekFrom::Start(old.consumed))?;
        let mut tail = Vec::with_capacity(pending as usize);
        f.take(pending).read_to_end(&mut tail)?;
        Ok(tail)
    };
    read().is_ok_and(|tail| !tail.contains(&b'\n') && transcript::is_complete_line(&tail))
}
