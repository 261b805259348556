//! Bringing the index up to date with the transcripts, under the index lock. Two paths:
//! - **append** (the common case: transcripts grew, sessions appeared or vanished): reads only the manifest, the
//!   grown files from where the last read stopped, and the hash files of segments whose vectors it reuses — its
//!   cost does not depend on the size of the index;
//! - **full** (a file was rewritten or shrank, the model changed, a file is damaged, the lexical index is out of
//!   step): opens and verifies the whole index and re-reads the changed sessions whole.
//!
//! Either way it publishes every few thousand messages (new files, fsync, rename of a new manifest), so a first
//! index is useful early and a crash loses at most the work since the last publish; then merges small segments.

use super::archive::ArchiveCopy;
use super::changes::{Change, scan};
use super::opening::{append_writer, full_writer, index_is_sound, lock, remove_unreferenced};
use super::records::{FileState, Manifest, Resume};
use super::render::Neighbour;
use super::snapshot::read_manifest;
use super::writer::Writer;
use super::{ChunkEmbedder, IndexError};
use crate::transcript::{self, ReadPlan, Start};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

/// How an update behaves.
#[derive(Debug, Clone, Copy)]
pub struct UpdateOptions {
    /// Wait for another writer to finish (true) or return [`IndexError::Busy`] at once (false).
    pub wait: bool,
    /// Publish after this many new or changed messages.
    pub publish_every: usize,
    /// Merge small segments after publishing (false: only past [`MAX_UNMERGED`] segments, so an update made
    /// just before a query does not keep it waiting; the server and `ghola index` merge).
    pub merge: bool,
    /// Take the full path and checksum every file, whatever the fingerprints say.
    pub verify: bool,
    /// Words first: a publish of at least this many messages goes out keyword-only (stored and in the lexical
    /// index, no vectors) and [`super::embed_pending`] embeds it afterwards. `None`: embed before publishing
    /// (an update without a model always defers).
    pub defer_from: Option<usize>,
    /// How text chunks take in the message before them; a different setting re-embeds the index.
    pub neighbour: Neighbour,
    /// Copy the transcript bytes read into the archive (`[archive] enabled`, `GHOLA_ARCHIVE`).
    pub keep_archive: bool,
    /// Store those bytes with their credentials overwritten (`redact_stored = true`).
    pub redact_stored: bool,
}

/// Publishes of at least this many messages are deferred by [`UpdateOptions::words_first`]: embedding them
/// inline would keep them unsearchable for several seconds (about 60 messages/s per machine); smaller appends,
/// what happens all day, are embedded before they are published, as before.
pub const DEFER_FROM: usize = 200;

/// Transcript bytes to read beyond which an update indexes words with one thread per core.
const BIG_BATCH_BYTES: u64 = 8 << 20;

/// Segments beyond which even an update that defers merging merges (readers open every segment).
pub const MAX_UNMERGED: usize = 48;

/// How many new or changed messages an update publishes after, by default.
pub const PUBLISH_EVERY: usize = 2000;

impl Default for UpdateOptions {
    fn default() -> Self {
        Self {
            wait: true,
            publish_every: PUBLISH_EVERY,
            merge: true,
            verify: false,
            defer_from: None,
            neighbour: Neighbour::default(),
            keep_archive: true,
            redact_stored: false,
        }
    }
}

impl UpdateOptions {
    /// For the update made just before answering a query: waits for another writer, defers merging.
    pub fn before_query(self) -> Self {
        Self {
            wait: true,
            merge: false,
            ..self
        }
    }

    /// Keyword-searchable first: big batches are published without vectors, for [`super::embed_pending`].
    pub fn words_first(self) -> Self {
        Self {
            defer_from: Some(DEFER_FROM),
            ..self
        }
    }
}

/// Progress of an update, for progress bars.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    pub sessions_done: usize,
    pub sessions_total: usize,
    pub messages_indexed: usize,
}

/// What an update did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct UpdateSummary {
    /// Credentials the reader replaced by placeholders in the messages this update read (see
    /// `crate::secrets`): what the first search after it tells the user about, once.
    pub credentials_hidden: u64,
    pub files_seen: usize,
    pub files_read: usize,
    /// Transcript bytes parsed (an append parses only what was appended).
    pub bytes_read: u64,
    pub sessions_updated: usize,
    pub messages_added: usize,
    /// Of those, put in keyword-only segments for the second pass instead of being embedded now.
    pub messages_deferred: usize,
    pub messages_removed: usize,
    pub chunks_embedded: usize,
    pub chunks_reused: usize,
    pub publishes: usize,
    pub merges: usize,
    /// The full path ran: the whole index was opened and verified.
    pub full_update: bool,
    /// The keyword index was rebuilt from the stored text: it was damaged, belonged to another generation, or
    /// its terms were made by another analysis (`index::lexical::ANALYSIS`).
    pub lexical_rebuilt: bool,
    /// An index of an older format was upgraded in place.
    pub upgraded: bool,
    pub set_aside: Vec<String>,
    /// With `verify`: archived files read back and checked.
    pub archive_files_verified: usize,
    /// With `verify`: what is wrong with the archive (it is kept as it is: it may be the only copy).
    pub archive_damage: Option<String>,
    pub seconds: f64,
}

/// Brings the index in `dir` up to date with the transcripts under `claude_dir`.
pub fn update(
    dir: &Path,
    claude_dir: &Path,
    embedder: &dyn ChunkEmbedder,
    opts: UpdateOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<UpdateSummary, IndexError> {
    update_with(dir, claude_dir, Some(embedder), opts, progress)
}

/// The keyword-first pass without a model (it is still downloading or loading): every new message is stored
/// and put in the lexical index, in segments that [`super::embed_pending`] embeds once the model is there.
pub fn update_words_only(
    dir: &Path,
    claude_dir: &Path,
    opts: UpdateOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<UpdateSummary, IndexError> {
    update_with(dir, claude_dir, None, opts, progress)
}

/// [`update`] with an optional model (`None`: everything new is deferred).
pub fn update_with(
    dir: &Path,
    claude_dir: &Path,
    embedder: Option<&dyn ChunkEmbedder>,
    opts: UpdateOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<UpdateSummary, IndexError> {
    let started = Instant::now();
    fs_err::create_dir_all(dir)?;
    let _lock = lock(dir, opts.wait)?;
    let mut summary = UpdateSummary::default();
    let (survey, manifest) = survey(dir, claude_dir, embedder, &opts, &mut summary);
    let (mut w, changed, on_disk, appending) =
        match begin_writing(dir, embedder, &opts, &survey, manifest, summary)? {
            Writing::UpToDate(mut summary) => {
                summary.seconds = started.elapsed().as_secs_f64();
                return Ok(summary);
            }
            Writing::Begun {
                w,
                changed,
                on_disk,
                appending,
            } => (*w, changed, on_disk, appending),
        };
    w.defer_from = opts.defer_from;
    w.neighbour = opts.neighbour;
    tracing::debug!(
        "update: {} path, scanned {:?}",
        if appending { "append" } else { "full" },
        started.elapsed()
    );
    // Sources that vanished: their messages stay, marked as such in the fingerprints.
    let mut marked_deleted = false;
    for f in w.manifest.files.iter_mut() {
        if !on_disk.contains(&f.path) && !f.deleted {
            f.deleted = true;
            marked_deleted = true;
        }
    }
    write_sessions(
        &mut w,
        changed,
        appending,
        &survey.sources,
        embedder,
        &opts,
        progress,
    )?;
    tracing::debug!("update: sessions read {:?}", started.elapsed());
    w.backfill_archive(&survey.found.sessions);
    if w.has_pending() || marked_deleted {
        w.publish(embedder)?;
    }
    tracing::debug!("update: published {:?}", started.elapsed());
    if opts.merge || w.manifest.segments.len() > MAX_UNMERGED {
        w.merge_while_needed()?;
    }
    // Every update, not only one that published: a file a reader still had mapped when its segment was
    // retired cannot be deleted on Windows, and goes at the first update after the reader let go.
    remove_unreferenced(dir, &w.manifest);
    if survey.map_from_scratch {
        super::file_map::after_first_update(dir);
    }
    tracing::debug!("update: done {:?}", started.elapsed());
    w.summary.seconds = started.elapsed().as_secs_f64();
    Ok(w.summary)
}

/// What an update found before writing anything (see [`survey`]).
struct Survey {
    /// Every session's files, here and on synced machines, less forgotten ones (plus archived-only ones when the
    /// full path will run).
    found: transcript::Discovery,
    /// Where transcripts are read from: disk, else the archive.
    sources: transcript::source::Sources,
    /// Files only the archive still has, with their archived size.
    archived_only: HashMap<String, u64>,
    /// The file map is being rebuilt from scratch by this update.
    map_from_scratch: bool,
}

/// The first phase of an update: upgrades an old index, discovers every transcript, reads the manifest when the
/// index is sound (`None`: the full path runs), checks the archive for `--verify`, and leaves forgotten sessions
/// out. One discovery, one manifest read and one soundness check serve the freshness check and the update.
fn survey(
    dir: &Path,
    claude_dir: &Path,
    embedder: Option<&dyn ChunkEmbedder>,
    opts: &UpdateOptions,
    summary: &mut UpdateSummary,
) -> (Survey, Option<Manifest>) {
    match super::migrate::upgrade(dir) {
        Ok(upgraded) => summary.upgraded = upgraded,
        // A damaged old index goes the way of any damaged index: set aside by the full path, rebuilt.
        Err(e) => tracing::warn!("cannot upgrade the index: {e}"),
    }
    let mut found =
        transcript::source::discover_everywhere(claude_dir, &super::machines::list(dir));
    let manifest = read_manifest(dir)
        .ok()
        .flatten()
        .filter(|m| !opts.verify && index_is_sound(dir, m, embedder, opts.neighbour));
    // What only the archive still has, when the full path will run: listed so that an index rebuilt from scratch
    // (after damage) gets those sessions back; `scan` reads only the files the index does not know. The append
    // path never needs it (the index knows every file it ever read), so it does not read the archive's state.
    // Its state is read once for both this and `--verify`.
    let archive = (opts.verify || manifest.is_none()).then(|| super::archive::Archive::open(dir));
    if opts.verify {
        verify_archive(archive.as_ref(), summary);
    }
    // A file gone from disk since discovery, or known only to the archive, is read from the archive.
    let sources = super::archive::sources(dir);
    let archived_only = match (&manifest, &archive) {
        (None, Some(Ok(arc))) => absorb_archived(&mut found, arc),
        _ => HashMap::new(),
    };
    // Sessions the user forgot stay out (see `forget`).
    let forgotten = super::forget::forgotten(dir);
    if !forgotten.sessions.is_empty() {
        found
            .sessions
            .retain(|s| !forgotten.sessions.contains_key(&s.session_id));
    }
    // The file map: rebuilt first for an index older than it (or found damaged); a new one is built as read.
    let map_from_scratch = super::file_map::before_update(dir, claude_dir, &sources, &forgotten);
    let survey = Survey {
        found,
        sources,
        archived_only,
        map_from_scratch,
    };
    (survey, manifest)
}

/// How an update goes on after its [`survey`]: nothing changed, or a writer and the sessions it must read.
enum Writing<'a> {
    /// Nothing changed or vanished: nothing to open (the summary counts the files seen).
    UpToDate(UpdateSummary),
    Begun {
        /// Boxed: a writer is large beside a summary.
        w: Box<Writer<'a>>,
        changed: Vec<super::changes::Changed<'a>>,
        /// Every transcript path on disk.
        on_disk: HashSet<String>,
        /// The append path (else the full path, which rebuilds the index beside the old one).
        appending: bool,
    },
}

/// Chooses the path: the append path needs a sound index and no file that must be re-read whole. The same scan
/// (one `stat` per transcript) is the freshness check.
fn begin_writing<'a>(
    dir: &'a Path,
    embedder: Option<&dyn ChunkEmbedder>,
    opts: &UpdateOptions,
    survey: &'a Survey,
    manifest: Option<Manifest>,
    mut summary: UpdateSummary,
) -> Result<Writing<'a>, IndexError> {
    let sessions = &survey.found.sessions;
    let appendable = manifest.as_ref().and_then(|m| {
        let mut scanned = UpdateSummary::default();
        let (changed, on_disk) = scan(sessions, Some(m), &survey.archived_only, &mut scanned);
        let ok = changed.iter().all(|c| {
            c.changes
                .iter()
                .all(|(_, ch, _)| !matches!(ch, Change::Rewritten))
        });
        ok.then_some((changed, on_disk, scanned.files_seen))
    });
    match (appendable, manifest) {
        (Some((changed, on_disk, files_seen)), Some(m)) => {
            summary.files_seen = files_seen;
            if changed.is_empty()
                && m.files
                    .iter()
                    .all(|f| f.deleted || on_disk.contains(&f.path))
            {
                return Ok(Writing::UpToDate(summary));
            }
            // Bytes to read, from the fingerprints: a big append (a server started after a day's work) gets the
            // lexical writer of a big batch.
            let grown: u64 = changed
                .iter()
                .flat_map(|c| &c.changes)
                .map(|(_, ch, st)| match ch {
                    Change::Grown(r) => st.size.saturating_sub(r.offset),
                    Change::Same => 0,
                    _ => st.size,
                })
                .sum();
            let big = grown > BIG_BATCH_BYTES;
            let w = append_writer(dir, m, summary, big, ArchiveCopy::of(opts))?;
            Ok(Writing::Begun {
                w: Box::new(w),
                changed,
                on_disk,
                appending: true,
            })
        }
        _ => {
            let mut w = full_writer(dir, embedder, opts, summary)?;
            let (changed, on_disk) = scan(
                sessions,
                Some(&w.manifest),
                &survey.archived_only,
                &mut w.summary,
            );
            Ok(Writing::Begun {
                w: Box::new(w),
                changed,
                on_disk,
                appending: false,
            })
        }
    }
}

/// Reads every changed session into the writer, publishing (and merging) every `publish_every` messages so that
/// a long first index is searchable as it goes.
fn write_sessions(
    w: &mut Writer<'_>,
    changed: Vec<super::changes::Changed<'_>>,
    appending: bool,
    sources: &transcript::source::Sources,
    embedder: Option<&dyn ChunkEmbedder>,
    opts: &UpdateOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), IndexError> {
    let total = changed.len();
    let mut indexed = 0;
    for (done, c) in changed.into_iter().enumerate() {
        let p = plan_session(c.files, c.changes, appending);
        let session = transcript::load_session_from(sources, c.files, &p.plan);
        w.summary.credentials_hidden += session.secrets_hidden.total();
        indexed += w.add_session(c.files, &session, &p.resumes, p.states, p.rewritten);
        if w.pending_messages() >= opts.publish_every {
            w.publish(embedder)?;
            if opts.merge || w.manifest.segments.len() > MAX_UNMERGED {
                w.merge_while_needed()?;
            }
        }
        progress(Progress {
            sessions_done: done + 1,
            sessions_total: total,
            messages_indexed: indexed,
        });
    }
    Ok(())
}

/// Checks every archived frame (`--verify`), recording the count or the damage in `summary`.
fn verify_archive(
    archive: Option<&Result<super::archive::Archive, super::format::FormatError>>,
    summary: &mut UpdateSummary,
) {
    let checked = match archive {
        Some(Ok(a)) => a.verify().map_err(|e| e.to_string()),
        Some(Err(e)) => Err(e.to_string()),
        None => Ok(0),
    };
    match checked {
        Ok(n) => summary.archive_files_verified = n,
        Err(e) => {
            tracing::warn!("archive: {e}");
            summary.archive_damage = Some(e);
        }
    }
}

/// Adds to `found` the sessions only the archive still has (their transcripts are gone from disk), so that an
/// index rebuilt from scratch gets them back; returns those files' archived lengths by path.
fn absorb_archived(
    found: &mut transcript::Discovery,
    arc: &super::archive::Archive,
) -> HashMap<String, u64> {
    let mut archived_only = HashMap::new();
    if arc.files().next().is_none() {
        return archived_only;
    }
    let gone = super::archive::sessions_gone_from_disk(arc);
    for p in gone.iter().flat_map(|g| g.all_files()) {
        let key = p.display().to_string();
        if let Some(len) = arc.len_of(&key) {
            archived_only.insert(key, len);
        }
    }
    transcript::source::absorb_gone(found, gone);
    archived_only
}

/// How one changed session is read: where each file resumes (the append path), the fingerprints to record, and
/// whether a file was rewritten.
struct SessionPlan {
    plan: ReadPlan,
    resumes: HashMap<String, Resume>,
    states: Vec<FileState>,
    rewritten: bool,
}

/// The read plan of a session whose files changed as `changes` says. The full path (`appending` false) reads
/// the session whole and diffs against every live message, so it keeps only the fingerprints.
fn plan_session(
    files: &transcript::SessionFiles,
    changes: Vec<(std::path::PathBuf, Change, FileState)>,
    appending: bool,
) -> SessionPlan {
    let mut plan = ReadPlan::default();
    let mut resumes: HashMap<String, Resume> = HashMap::new();
    let mut states = Vec::new();
    let mut rewritten = false;
    for (path, change, state) in changes {
        let key = state.path.clone();
        match change {
            Change::Same => {
                if let Some(r) = &state.resume {
                    plan.project.get_or_insert_with(|| r.project.clone());
                    if files.main.as_ref() == Some(&path) {
                        plan.boundaries = boundaries(r);
                    }
                }
                if appending {
                    plan.starts.insert(path, None);
                } else {
                    states.push(state);
                }
            }
            Change::New => states.push(state),
            Change::Grown(r) => {
                if appending {
                    plan.project = Some(r.project.clone());
                    if files.main.as_ref() == Some(&path) {
                        plan.boundaries = boundaries(&r);
                    }
                    plan.starts.insert(
                        path,
                        Some(Start {
                            offset: r.offset,
                            window: r.window,
                        }),
                    );
                    resumes.insert(key, r);
                }
                states.push(state);
            }
            Change::Rewritten => {
                rewritten = true;
                states.push(state);
            }
        }
    }
    if !appending {
        plan = ReadPlan::default();
        resumes.clear();
    }
    SessionPlan {
        plan,
        resumes,
        states,
        rewritten,
    }
}

/// Compaction times of a resume state.
fn boundaries(r: &Resume) -> Vec<Option<chrono::DateTime<chrono::Utc>>> {
    r.boundaries
        .iter()
        .map(|b| b.and_then(chrono::DateTime::from_timestamp_millis))
        .collect()
}
