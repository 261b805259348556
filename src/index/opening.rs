//! Opening the index for writing: the lock every writer takes, the identity (model, neighbour context) an update
//! stamps on the manifest, whether the published index can be extended without opening it, and the two writers
//! an update starts from — the append path's (the manifest and lexical index only) and the full path's (the whole
//! index opened and verified, set aside if damaged, re-embedded if the model changed). Updates, the background
//! embedding pass, forgetting and scrubbing all begin here.

use super::archive::ArchiveCopy;
use super::lexical::Lexical;
use super::records::{FileState, Manifest};
use super::render::Neighbour;
use super::snapshot::{DAMAGE_SEEN, MANIFEST, Snapshot};
use super::update::{UpdateOptions, UpdateSummary};
use super::writer::{Live, Writer};
use super::{ChunkEmbedder, IndexError};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::Path;

/// Takes the index lock: exclusive, held until the returned file is dropped. The holder then makes the index
/// private ([`crate::private::tighten`]: folders 0700, files 0600), so an install made loose is tightened by its
/// next writer; a failure to is logged, never fatal.
pub(super) fn lock(dir: &Path, wait: bool) -> Result<File, IndexError> {
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("index.lock"))?;
    if wait {
        f.lock()?;
    } else {
        match f.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(IndexError::Busy),
            Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
        }
    }
    if let Err(e) = crate::private::tighten(dir) {
        tracing::warn!("could not make the index private: {e}");
    }
    Ok(f)
}

/// Moves the index files aside (into `damaged-<time>/`) so a rebuild starts clean and nothing is deleted.
fn set_aside(dir: &Path) -> std::io::Result<String> {
    let dest = dir.join(format!("damaged-{}", chrono::Utc::now().timestamp_millis()));
    fs_err::create_dir_all(&dest)?;
    for name in [MANIFEST, "segments", "lexical"] {
        let p = dir.join(name);
        if p.exists() {
            fs_err::rename(&p, dest.join(name))?;
        }
    }
    Ok(dest.display().to_string())
}

/// The model id recorded in the manifest: the neighbour context, a tool output's call and what a call wrote
/// change what a vector means (and the call, what an output's text holds), so a different setting re-embeds like
/// a different model.
fn indexed_model_id(model_id: String, neighbour: Neighbour) -> String {
    let mut id = model_id;
    if neighbour.chars > 0 {
        // The neighbour joins by vector (see `render::NEIGHBOUR_SEP`): "nvec", its length and weight.
        id.push_str(&format!("+nvec{}", neighbour.chars));
        let w = neighbour.weight;
        if w != super::render::DEFAULT_NEIGHBOUR_WEIGHT {
            id.push_str(&format!("x{w}"));
        }
        if neighbour.below != usize::MAX {
            id.push_str(&format!("<{}", neighbour.below));
        }
    }
    if neighbour.call_weight > 0.0 {
        id.push_str(&format!("+call{}", neighbour.call_weight));
    }
    if neighbour.call_words > 0 {
        // What a call wrote joins its line's vector: "in", and how many characters of it.
        id.push_str(&format!("+in{}", neighbour.call_words));
    }
    // Last, and not part of what a vector means (see `vector_identity`): what a stored text shows.
    id.push_str(&format!("{SHOWN_TAG}{}", super::shown::SHOWN_CALL_WORDS));
    id
}

/// Ends a model id with what a message's stored text shows of its calls' words (`index::shown`): a release that
/// changes it re-reads every transcript to store their texts anew, and reuses every vector.
const SHOWN_TAG: &str = "+shown";

/// The part of a recorded model id that says what a vector means: all but [`SHOWN_TAG`] and after. An index
/// whose id differs from the current one only after it keeps its vectors.
fn vector_identity(id: &str) -> &str {
    id.find(SHOWN_TAG).map_or(id, |i| &id[..i])
}

/// The (model id, weights sha256) an update records in the manifest. Without a model (the keyword-first pass
/// while the weights download), the identity already recorded is kept, and a new index is stamped with the
/// pinned model, so that the real model, once loaded, finds an index it can extend.
pub(super) fn indexed_identity(
    embedder: Option<&dyn ChunkEmbedder>,
    neighbour: Neighbour,
    dir: &Path,
    recorded: Option<&Manifest>,
) -> Result<(String, String), IndexError> {
    match (embedder, recorded) {
        (Some(e), _) => Ok((
            indexed_model_id(e.model_id(), neighbour),
            e.weights_sha256(dir)?,
        )),
        (None, Some(m)) if !m.model_id.is_empty() => {
            Ok((m.model_id.clone(), m.weights_sha256.clone()))
        }
        (None, _) => Ok((
            indexed_model_id(crate::embed::MODEL_ID.to_string(), neighbour),
            crate::embed::WEIGHTS_SHA256.to_string(),
        )),
    }
}

/// Whether every segment file predates the manifest. Published files are never modified, and every one is
/// written before the manifest that names it: a newer one was touched since (damage, a stray copy).
fn segments_untouched(dir: &Path) -> bool {
    let Ok(published) = fs_err::metadata(dir.join(MANIFEST)).and_then(|m| m.modified()) else {
        return false;
    };
    let Ok(entries) = fs_err::read_dir(dir.join("segments")) else {
        return false;
    };
    entries.into_iter().all(|e| {
        e.and_then(|e| e.metadata())
            .and_then(|m| m.modified())
            .is_ok_and(|m| m <= published)
    })
}

/// Whether the published index can be extended without opening it: readable manifest, same model, lexical
/// index of the same generation, nothing damaged or touched.
pub(super) fn index_is_sound(
    dir: &Path,
    manifest: &Manifest,
    embedder: Option<&dyn ChunkEmbedder>,
    neighbour: Neighbour,
) -> bool {
    !dir.join(DAMAGE_SEEN).exists()
        && !manifest.segments.is_empty()
        && indexed_identity(embedder, neighbour, dir, Some(manifest))
            .is_ok_and(|(id, w)| id == manifest.model_id && w == manifest.weights_sha256)
        && segments_untouched(dir)
        && Lexical::open(&dir.join("lexical")).is_ok_and(|l| l.is_current(manifest.generation))
}

/// Deletes segment files the manifest does not name: retired by a merge, a swap or a forget but still mapped by
/// a reader when they were (Windows refuses to delete those), or left by a writer killed before it published or
/// deleted. Only the lock holder writes segments, so nothing else is in flight; a file still refused stays for
/// the next update.
pub(super) fn remove_unreferenced(dir: &Path, manifest: &Manifest) {
    let named: HashSet<u64> = manifest.segments.iter().map(|s| s.id).collect();
    let Ok(entries) = fs_err::read_dir(dir.join("segments")) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let id = name
            .to_str()
            .and_then(|n| n.split('.').next())
            .and_then(|n| n.parse::<u64>().ok());
        if id.is_some_and(|id| !named.contains(&id)) {
            let _ = fs_err::remove_file(e.path());
        }
    }
}

/// The append path's writer: the manifest, the lexical index, nothing else opened.
pub(super) fn append_writer(
    dir: &Path,
    manifest: Manifest,
    summary: UpdateSummary,
    big: bool,
    archive: ArchiveCopy,
) -> Result<Writer<'_>, IndexError> {
    let verify = super::segment::Verify::since_publish(dir);
    let lexical = Lexical::open(&dir.join("lexical"))?;
    let lex_writer = lexical.writer(big)?;
    Ok(
        Writer::new(dir, manifest, lexical, lex_writer, None, verify, summary)
            .keeping_archive(archive),
    )
}

/// The full path's writer: the whole index opened and verified (set aside and rebuilt if damaged; re-embedded
/// if the model changed), the lexical index rebuilt if it does not belong to the manifest.
pub(super) fn full_writer<'a>(
    dir: &'a Path,
    embedder: Option<&dyn ChunkEmbedder>,
    opts: &UpdateOptions,
    mut summary: UpdateSummary,
) -> Result<Writer<'a>, IndexError> {
    summary.full_update = true;
    // The writer sees everything, whatever the memory limit for searching.
    let opened = Snapshot::open_with(dir, u64::MAX, true);
    let _ = fs_err::remove_file(dir.join(DAMAGE_SEEN));
    let mut snapshot = match opened {
        Ok(s) => s,
        Err(IndexError::Format(e)) => {
            tracing::warn!(
                "index damaged ({e}); setting it aside and rebuilding from the transcripts"
            );
            summary.set_aside.push(set_aside(dir)?);
            Snapshot::empty(dir)
        }
        Err(e) => return Err(e),
    };
    let recorded = (!snapshot.manifest.segments.is_empty()).then_some(&snapshot.manifest);
    let (model_id, weights) = indexed_identity(embedder, opts.neighbour, dir, recorded)?;
    let mut archived = Vec::new();
    let changed = !snapshot.manifest.segments.is_empty()
        && (snapshot.manifest.model_id != model_id || snapshot.manifest.weights_sha256 != weights);
    let same_vectors = snapshot.manifest.weights_sha256 == weights
        && vector_identity(&snapshot.manifest.model_id) == vector_identity(&model_id);
    if changed && same_vectors {
        tracing::warn!("what a stored text shows changed; re-reading every transcript");
        // Every transcript on disk is read again whole (its fingerprint no longer matches), and its messages'
        // texts are stored anew; their chunks are the same texts, so every vector is reused. A message whose
        // transcript is gone keeps the text it has.
        for f in snapshot.manifest.files.iter_mut().filter(|f| !f.deleted) {
            f.mtime_ns = i128::MIN;
            f.resume = None;
        }
    } else if changed {
        tracing::warn!("the embedding model changed; re-embedding everything");
        // Messages whose transcript is gone exist only here: they are re-embedded from their stored text.
        let mut on_disk: HashMap<&str, bool> = HashMap::new();
        archived = (0..snapshot.messages.len())
            .filter(|&i| {
                !*on_disk
                    .entry(snapshot.source(i))
                    .or_insert_with_key(|p| Path::new(p).is_file())
            })
            .map(|i| snapshot.stored(i))
            .collect();
        let deleted_files: Vec<FileState> = snapshot
            .manifest
            .files
            .iter()
            .filter(|f| f.deleted || !Path::new(&f.path).is_file())
            .map(|f| FileState {
                deleted: true,
                resume: None,
                ..f.clone()
            })
            .collect();
        let (next_segment, next_gid) = (snapshot.manifest.next_segment, snapshot.manifest.next_gid);
        snapshot = Snapshot::empty(dir);
        snapshot.manifest.next_segment = next_segment;
        snapshot.manifest.next_gid = next_gid;
        snapshot.manifest.files = deleted_files;
    }
    let mut manifest = snapshot.manifest.clone();
    manifest.model_id = model_id;
    manifest.weights_sha256 = weights;

    let lex_dir = dir.join("lexical");
    let damage = match Lexical::open(&lex_dir) {
        Ok(l) => l.damage(&lex_dir),
        Err(e) => Some(format!("unreadable ({e})")),
    };
    if let Some(why) = damage {
        tracing::warn!("lexical index damaged: {why}; rebuilding it from the stored text");
        let _ = fs_err::remove_dir_all(&lex_dir);
    }
    let lexical = Lexical::open(&lex_dir)?;
    let mut lex_writer = lexical.writer(true)?;
    if !lexical.is_current(manifest.generation) {
        // Never trust a lexical index that does not belong to this manifest, or whose terms another analysis
        // made: rebuild it from the stored text.
        lexical.clear(&mut lex_writer)?;
        for i in 0..snapshot.messages.len() {
            lexical.add(
                &lex_writer,
                snapshot.messages[i].gid,
                &snapshot.keyword_text(i),
            )?;
        }
        lexical.commit(&mut lex_writer, manifest.generation)?;
        summary.lexical_rebuilt = !snapshot.messages.is_empty() || manifest.generation > 0;
    }
    let mut live = Live::default();
    for i in 0..snapshot.messages.len() {
        let key = super::records::message_key(
            snapshot.session_id(i),
            snapshot.agent_id(i),
            snapshot.uuid(i),
        );
        let gid = snapshot.messages[i].gid;
        live.by_key.insert(key, (gid, snapshot.row(i).content_hash));
        live.by_source
            .entry(snapshot.source(i).to_string())
            .or_default()
            .push((gid, key));
    }
    // Reusing stored vectors goes through the hash and vector files, all checksummed by the open above: only
    // what is touched from now on is checked again.
    let mut w = Writer::new(
        dir,
        manifest,
        lexical,
        lex_writer,
        Some(live),
        super::segment::Verify::since_publish(dir),
        summary,
    )
    .keeping_archive(ArchiveCopy::of(opts));
    for m in archived {
        w.requeue(m);
    }
    Ok(w)
}
