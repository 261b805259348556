//! The file map built again from every session the index reads: for an index made before the map existed, or a
//! map found damaged. Sessions are loaded a batch at a time on every core, their records written into a fresh
//! folder that then replaces the map, which is marked complete.

use super::{FILES_DIR, MapWriter, is_complete, map_dir, mark_complete, title_record};
use crate::index::forget::Forgotten;
use crate::transcript::{self, Message, Session, Sources};
use std::path::Path;
use std::time::Instant;

/// What an update does first for the map: an index without a complete map (made before the map existed, or
/// whose map was found damaged) gets it rebuilt from every session. Returns whether there is no index yet, so
/// that this update builds the map as it reads and marks it complete at its end ([`after_first_update`]).
pub fn before_update(
    index_dir: &Path,
    claude_dir: &Path,
    sources: &Sources,
    forgotten: &Forgotten,
) -> bool {
    if is_complete(index_dir) {
        return false;
    }
    if !index_dir.join(crate::index::snapshot::MANIFEST).exists() {
        return true;
    }
    rebuild(index_dir, claude_dir, sources, forgotten);
    false
}

/// Marks the map complete after the update that built a new index (and the map with it).
pub fn after_first_update(index_dir: &Path) {
    if let Err(e) = mark_complete(index_dir) {
        tracing::warn!("the file map: {e}");
    }
}

/// Rebuilds the map of the index in `index_dir` from the sessions `sources` finds under `claude_dir` (and other
/// machines' copies, and the archive), forgotten ones left out. A failure is logged: the map stays incomplete and
/// the next update tries again.
fn rebuild(index_dir: &Path, claude_dir: &Path, sources: &Sources, forgotten: &Forgotten) {
    use rayon::prelude::*;
    let started = Instant::now();
    let files: Vec<_> = sources
        .discover_all(claude_dir)
        .sessions
        .into_iter()
        .filter(|f| !forgotten.sessions.contains_key(&f.session_id))
        .collect();
    let sessions = files.chunks(64).flat_map(|batch| {
        batch
            .par_iter()
            .map(|f| transcript::load_session(sources, f))
            .collect::<Vec<_>>()
    });
    match write_fresh(index_dir, sessions) {
        Ok(n) => tracing::info!(
            "the file map was built from {n} sessions in {:.1} s",
            started.elapsed().as_secs_f64()
        ),
        Err(e) => {
            tracing::warn!("the file map could not be built ({e}); the next update tries again")
        }
    }
}

/// Writes the records of `sessions` into `files.new/`, puts it in the map's place and marks it complete;
/// returns how many sessions it read.
fn write_fresh(
    index_dir: &Path,
    sessions: impl Iterator<Item = Session>,
) -> std::io::Result<usize> {
    let fresh = index_dir.join(format!("{FILES_DIR}.new"));
    let _ = fs_err::remove_dir_all(&fresh);
    fs_err::create_dir_all(&fresh)?;
    let mut n = 0;
    let mut w = MapWriter::default();
    for s in sessions {
        n += 1;
        add_whole_session(&mut w, &s);
        if w.pending.values().map(Vec::len).sum::<usize>() > 20_000 {
            w.write_into(&fresh)?;
        }
    }
    w.write_into(&fresh)?;
    let dir = map_dir(index_dir);
    if dir.exists() {
        fs_err::remove_dir_all(&dir)?;
    }
    fs_err::rename(&fresh, &dir)?;
    crate::index::format::sync_dir(index_dir)?;
    mark_complete(index_dir)?;
    Ok(n)
}

/// A conversation's messages with their positions.
fn numbered(messages: &[Message]) -> Vec<(u32, &Message)> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| (i as u32, m))
        .collect()
}

/// Queues every record of a session read whole: its title, then each conversation's messages.
fn add_whole_session(w: &mut MapWriter, s: &Session) {
    if let Some(t) = title_record(s) {
        w.add(t);
    }
    w.add_messages(s, None, &numbered(&s.messages));
    for a in &s.subagents {
        w.add_messages(s, Some(&a.agent_id), &numbered(&a.messages));
    }
}
