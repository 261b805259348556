//! The second pass: embeds the segments the keyword-first pass published without vectors, oldest id first (the
//! first pass goes newest sessions first, so this embeds the newest history first), one segment per publish.
//!
//! The embedding, which takes seconds to minutes, runs without the index lock, on immutable files: the segment's
//! metadata and its `.todo` list. Only the swap — write the replacement segment with vectors, publish a manifest
//! naming it instead of the keyword-only one — takes the lock, so appends and other servers are never held up by
//! it. If the segment is gone by then (a rebuild or a model change replaced everything), the work is dropped.

use super::format::FormatError;
use super::opening::{append_writer, indexed_identity, lock};
use super::records::{ChunkKind, Manifest};
use super::render::Neighbour;
use super::segment::{self, OpenSegment, SegmentBuilder, TodoChunk, Verify};
use super::snapshot::read_manifest;
use super::vectors::{VectorStores, chunk_hash, vectors_for};
use super::writer::stored_kind;
use super::{ChunkEmbedder, IndexError, UpdateSummary};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// What the second pass did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct EmbedSummary {
    /// Keyword-only segments replaced by embedded ones.
    pub segments: usize,
    pub messages: usize,
    pub chunks_embedded: usize,
    pub chunks_reused: usize,
    /// Messages still waiting (in segments not reached, when the pass was limited).
    pub messages_waiting: usize,
    pub seconds: f64,
}

/// Progress of the second pass: messages embedded so far out of those waiting when it began.
#[derive(Debug, Clone, Copy, Default)]
pub struct EmbedProgress {
    pub messages_done: usize,
    pub messages_total: usize,
}

/// Keyword-only segments of a manifest (id, messages), in the order the second pass takes them.
pub fn waiting_segments(dir: &Path, manifest: &Manifest) -> Vec<(u64, u32)> {
    let mut ids: Vec<(u64, u32)> = manifest
        .segments
        .iter()
        .filter(|s| segment::awaits_embedding(dir, s.id))
        .map(|s| (s.id, s.messages))
        .collect();
    ids.sort_by_key(|(id, _)| *id);
    ids
}

/// Messages of the published index that still await embedding.
pub fn messages_waiting(dir: &Path) -> usize {
    match read_manifest(dir) {
        Ok(Some(m)) => waiting_segments(dir, &m)
            .iter()
            .map(|(_, n)| *n as usize)
            .sum(),
        _ => 0,
    }
}

/// Embeds keyword-only segments of the index in `dir`: all of them, or at most `max_segments`. Returns what it
/// did; stops early without error when the index belongs to another model (an update with this embedder
/// re-embeds everything first) or when `stop` says so between segments.
pub fn embed_pending(
    dir: &Path,
    embedder: &dyn ChunkEmbedder,
    neighbour: Neighbour,
    max_segments: Option<usize>,
    stop: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(EmbedProgress),
) -> Result<EmbedSummary, IndexError> {
    let started = std::time::Instant::now();
    let mut summary = EmbedSummary::default();
    let Some(manifest) = read_manifest(dir)? else {
        return Ok(summary);
    };
    let (model_id, weights) = indexed_identity(Some(embedder), neighbour, dir, None)?;
    if manifest.model_id != model_id || manifest.weights_sha256 != weights {
        return Ok(summary);
    }
    let waiting = waiting_segments(dir, &manifest);
    let total: usize = waiting.iter().map(|(_, n)| *n as usize).sum();
    let mut done = 0;
    let mut stores = VectorStores::new(Verify::since_publish(dir));
    for (i, &(id, messages)) in waiting.iter().enumerate() {
        if max_segments.is_some_and(|m| i >= m) || stop() {
            summary.messages_waiting = total - done;
            break;
        }
        match embed_segment(
            dir,
            id,
            embedder,
            neighbour,
            &manifest,
            &mut stores,
            &mut summary,
        ) {
            Ok(()) => {}
            // Gone meanwhile (merged away by a rebuild, or replaced by another server): nothing to do.
            Err(IndexError::Format(FormatError::Io(_, e)) | IndexError::Io(e))
                if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        done += messages as usize;
        progress(EmbedProgress {
            messages_done: done,
            messages_total: total,
        });
    }
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// Embeds one keyword-only segment and publishes its replacement.
fn embed_segment(
    dir: &Path,
    id: u64,
    embedder: &dyn ChunkEmbedder,
    neighbour: Neighbour,
    manifest: &Manifest,
    stores: &mut VectorStores,
    summary: &mut EmbedSummary,
) -> Result<(), IndexError> {
    let seg = OpenSegment::open(dir, id, Verify::since_publish(dir))?;
    let todo = match segment::read_todo(dir, id) {
        Ok(t) => t,
        Err(FormatError::Io(_, e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(IndexError::Io(e));
        }
        // A damaged list is not trusted: each message is embedded from its stored text instead (one chunk of
        // the kind it mostly is), so the pass goes on.
        Err(e) => {
            tracing::warn!("{e}; embedding segment {id} from its stored text");
            (0..seg.rows.len())
                .map(|mi| {
                    let m = seg.stored(mi);
                    TodoChunk {
                        message: mi as u32,
                        kind: stored_kind(&m.kind),
                        text: super::shown::keyword_text(&m.content).to_string(),
                    }
                })
                .collect()
        }
    };
    let dead: HashSet<u64> = manifest.dead.iter().copied().collect();
    // Without the lock: hash, reuse what is stored, embed the rest.
    let wanted: Vec<(&TodoChunk, u64)> = todo
        .iter()
        .filter(|t| {
            (t.message as usize) < seg.rows.len()
                && !dead.contains(&seg.rows.row(t.message as usize).gid)
        })
        .map(|t| (t, chunk_hash(t.kind, &t.text)))
        .collect();
    let mut counts = UpdateSummary::default();
    let chunks = wanted.iter().map(|(t, h)| (*h, t.kind, t.text.as_str()));
    let (vectors, mut queued) = vectors_for(
        dir,
        manifest,
        stores,
        embedder,
        neighbour,
        chunks,
        &mut counts,
    )?;
    let mut builder = SegmentBuilder::default();
    let mut chunks_of: HashMap<u32, Vec<(ChunkKind, u64)>> = HashMap::new();
    for (t, h) in &wanted {
        chunks_of.entry(t.message).or_default().push((t.kind, *h));
    }
    for mi in 0..seg.rows.len() {
        let new = builder.push_message(&seg.stored(mi));
        for (kind, h) in chunks_of.get(&(mi as u32)).into_iter().flatten() {
            let rows = vectors.get(h).map(Vec::as_slice).unwrap_or_default();
            if !queued.remove(h) {
                summary.chunks_reused += rows.len();
            }
            for row in rows {
                builder.push_chunk(new, *kind, *h, row);
            }
        }
    }
    drop(seg);
    // Under the lock: the segment must still be published, then it is swapped for its embedded version.
    let _lock = lock(dir, true)?;
    let Some(current) = read_manifest(dir)? else {
        return Ok(());
    };
    let Some(at) = current.segments.iter().position(|s| s.id == id) else {
        return Ok(());
    };
    if current.model_id != manifest.model_id || current.weights_sha256 != manifest.weights_sha256 {
        return Ok(());
    }
    let mut w = append_writer(
        dir,
        current,
        UpdateSummary::default(),
        false,
        super::archive::ArchiveCopy::Off,
    )?;
    let new_id = w.manifest.next_segment;
    let info = super::records::SegmentInfo {
        id: new_id,
        messages: builder.messages() as u32,
        chunks: builder.chunks() as u32,
    };
    let messages = info.messages as usize;
    builder.write(dir, new_id)?;
    w.manifest.next_segment += 1;
    w.manifest.segments[at] = info;
    w.commit()?;
    segment::remove(dir, id);
    summary.segments += 1;
    summary.messages += messages;
    summary.chunks_embedded += counts.chunks_embedded;
    Ok(())
}
