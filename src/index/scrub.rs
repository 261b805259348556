//! `ghola secrets redact`: ghola's own stored copies scrubbed of credentials for good — the archive's bytes, and
//! the index's rows, lexical postings and vectors of every message that held one.
//!
//! The archive is scrubbed first, in one switch of its `STATE` (see `ArchiveWriter::redact_files`). Then the
//! sessions whose index rows still hold a value are dropped from the index (rows, postings, segments rewritten,
//! fingerprints forgotten) for the next update to read again: the reader redacts every message it builds, so
//! what comes back holds placeholders, and its vectors are embedded from that text. Killed at any point, a
//! rerun finishes the job and no message is lost: until the update, a dropped session's transcript (or its
//! scrubbed archived copy) is still there to read.

use super::IndexError;
use super::archive::{ArchiveWriter, ArchivedFile};
use super::forget::drop_from_index;
use super::opening::lock;
use super::snapshot::Snapshot;
use crate::secrets::Tally;
use serde::Serialize;
use std::collections::HashSet;
use std::path::Path;

/// Which sessions to scrub: `None` for all.
pub type Chosen<'a> = Option<&'a HashSet<String>>;

/// What a scrub found, or did: counts per rule, never values.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ScrubSummary {
    /// Credentials in the archived copies (overwritten, unless a dry run).
    pub archive: Tally,
    /// Archived files changed.
    pub archive_files: usize,
    /// Credentials in the index's rows (rows written before the reader redacted).
    pub index: Tally,
    /// Sessions with a credential in ghola's copies.
    pub sessions: usize,
    /// Their ids.
    pub session_ids: Vec<String>,
    /// Sessions dropped from the index, to be read again (redacted) by the next update.
    pub sessions_to_reindex: Vec<String>,
    /// Their messages removed from the index.
    pub messages_removed: usize,
    pub dry_run: bool,
}

/// Finds (with `dry_run`) or scrubs the credentials in ghola's copies of the `chosen` sessions, under the index
/// lock. After a scrub the caller runs an update, which reads the dropped sessions again.
pub fn scrub(dir: &Path, chosen: Chosen, dry_run: bool) -> Result<ScrubSummary, IndexError> {
    let wanted = |id: &str| chosen.is_none_or(|c| c.contains(id));
    let _lock = lock(dir, true)?;
    let mut out = ScrubSummary {
        dry_run,
        ..Default::default()
    };
    let in_archive = |f: &ArchivedFile| wanted(&f.session_id);
    let mut a = ArchiveWriter::open(dir)?;
    let (found, mut sessions) = a.credentials_in(&in_archive)?;
    out.archive = found;
    if !dry_run && out.archive.total() > 0 {
        out.archive_files = a.redact_files(&in_archive, &mut Tally::default())?;
    }
    drop(a);
    let mut reindex = HashSet::new();
    if super::snapshot::read_manifest(dir)?.is_some() {
        let snap = Snapshot::open_with(dir, u64::MAX, false)?;
        for i in 0..snap.messages.len() {
            let id = snap.session_id(i);
            if !wanted(id) {
                continue;
            }
            let text = String::from_utf8_lossy(snap.text_bytes(i));
            let found = crate::secrets::find(&text);
            if !found.is_empty() {
                for f in &found {
                    out.index.add(f.rule, 1);
                }
                reindex.insert(id.to_string());
            }
        }
    }
    sessions.extend(reindex.iter().cloned());
    out.sessions = sessions.len();
    out.session_ids = sessions.into_iter().collect();
    out.session_ids.sort();
    out.sessions_to_reindex = reindex.iter().cloned().collect();
    out.sessions_to_reindex.sort();
    if !dry_run && !reindex.is_empty() {
        out.messages_removed = drop_from_index(dir, &reindex)?.0;
    }
    Ok(out)
}
