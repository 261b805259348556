//! Where a chunk's vector comes from: a stored one, found through the published segments' hash files for a text
//! seen before, or a new one, each distinct text embedded once and a text chunk joined with its neighbour's
//! vector (see `render`). Used by the writer and by the second, embedding pass.

use super::records::{ChunkKind, Manifest};
use super::render::{NEIGHBOUR_SEP, Neighbour, chunk_cap};
use super::segment::{Hashes, Vectors, Verify};
use super::writer::hash64;
use super::{ChunkEmbedder, IndexError, UpdateSummary};
use crate::embed::Vector;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Published segments' hash and vector files, opened on first need, through which a writer finds a stored
/// vector for a text it has seen before (`None`: unreadable, not reused).
pub(super) struct VectorStores {
    open: HashMap<u64, Option<(Hashes, Vectors)>>,
    verify: Verify,
}

impl VectorStores {
    pub fn new(verify: Verify) -> Self {
        Self {
            open: HashMap::new(),
            verify,
        }
    }

    /// Vectors already stored for a text hash in a segment `manifest` names, newest segment first.
    pub fn known(&mut self, dir: &Path, manifest: &Manifest, hash: u64) -> Option<Vec<Vector>> {
        for s in manifest.segments.iter().rev().filter(|s| s.chunks > 0) {
            let id = s.id;
            let verify = self.verify;
            let store = self.open.entry(id).or_insert_with(|| {
                let hashes = Hashes::open(dir, id, verify);
                let vectors = Vectors::open(dir, id, 0, verify);
                match (hashes, vectors) {
                    (Ok(h), Ok(v)) => Some((h, v)),
                    (Err(e), _) | (_, Err(e)) => {
                        tracing::warn!("not reusing vectors of segment {id}: {e}");
                        None
                    }
                }
            });
            if let Some((h, v)) = store
                && let Some((first, n)) = h.lookup(hash)
            {
                let rows: Vec<Vector> = (first..first + n)
                    .filter_map(|r| v.row(r).try_into().ok())
                    .collect();
                if rows.len() == n as usize {
                    return Some(rows);
                }
            }
        }
        None
    }

    /// Forgets the opened files of segments that are gone.
    pub fn forget(&mut self, ids: &[u64]) {
        for id in ids {
            self.open.remove(id);
        }
    }
}

/// Chunk vectors by the hash of their text.
pub(super) type VectorsByHash = HashMap<u64, Vec<Vector>>;

/// The hash a chunk text's vector is stored and reused under.
pub(super) fn chunk_hash(kind: ChunkKind, text: &str) -> u64 {
    hash64(&[text.as_bytes(), &[kind as u8]])
}

/// Vectors for chunk texts given as (hash, kind, text): each distinct hash is looked up once among the vectors
/// `manifest`'s segments store, and the rest embedded once. Returns the vectors by hash and the hashes embedded
/// now (the first use of each counts as embedded, every other use as a reuse). A text chunk's neighbour joins
/// with `neighbour.weight`, a tool output's call with `neighbour.call_weight` (see [`Neighbour`]).
pub(super) fn vectors_for<'t>(
    dir: &Path,
    manifest: &Manifest,
    stores: &mut VectorStores,
    embedder: &dyn ChunkEmbedder,
    neighbour: Neighbour,
    chunks: impl Iterator<Item = (u64, ChunkKind, &'t str)>,
    summary: &mut UpdateSummary,
) -> Result<(VectorsByHash, HashSet<u64>), IndexError> {
    let mut vectors = VectorsByHash::new();
    let mut queued = HashSet::new();
    let mut to_embed: Vec<(u64, ChunkKind, &str)> = Vec::new();
    for (h, kind, text) in chunks {
        if vectors.contains_key(&h) || queued.contains(&h) {
            continue;
        }
        match stores.known(dir, manifest, h) {
            Some(v) => {
                vectors.insert(h, v);
            }
            None => {
                queued.insert(h);
                to_embed.push((h, kind, text));
            }
        }
    }
    embed_grouped(embedder, &to_embed, neighbour, &mut vectors, summary)?;
    Ok((vectors, queued))
}

/// A chunk's neighbour (if any: the previous text in front of a text, the call in front of a tool output) and
/// own text.
fn split_neighbour(t: &str) -> (Option<&str>, &str) {
    match t.split_once(NEIGHBOUR_SEP) {
        Some((n, own)) => (Some(n), own),
        None => (None, t),
    }
}

/// Embeds the texts of `to_embed`, one call per kind (each kind has its own chunk cap), into `vectors`. A
/// chunk carrying a neighbour (`neighbour` [`NEIGHBOUR_SEP`] `own`) gets its own text's vectors, each plus
/// `w` times the neighbour's vector, renormalised — `w` the neighbour weight for a text, the call weight for a
/// tool output; every distinct string is embedded once (a short neighbour is the previous message's own text,
/// usually in the same batch).
fn embed_grouped(
    embedder: &dyn ChunkEmbedder,
    to_embed: &[(u64, ChunkKind, &str)],
    weights: Neighbour,
    vectors: &mut HashMap<u64, Vec<Vector>>,
    summary: &mut UpdateSummary,
) -> Result<(), IndexError> {
    for kind in [
        ChunkKind::Text,
        ChunkKind::Thinking,
        ChunkKind::ToolUse,
        ChunkKind::ToolResult,
    ] {
        let group: Vec<&(u64, ChunkKind, &str)> =
            to_embed.iter().filter(|(_, k, _)| *k == kind).collect();
        let w = if kind == ChunkKind::ToolResult {
            weights.call_weight
        } else {
            weights.weight
        };
        if group.is_empty() {
            continue;
        }
        // Own texts (the kind's chunk cap), then neighbours not among them (one chunk each).
        let mut owns: Vec<&str> = Vec::new();
        let mut own_at: HashMap<&str, usize> = HashMap::new();
        for (_, _, t) in &group {
            let own = split_neighbour(t).1;
            own_at.entry(own).or_insert_with(|| {
                owns.push(own);
                owns.len() - 1
            });
        }
        let own_vectors = embedder.embed_chunked(&owns, chunk_cap(kind))?;
        let mut neighbours: Vec<&str> = Vec::new();
        let mut neighbour_at: HashMap<&str, usize> = HashMap::new();
        for (_, _, t) in &group {
            if let (Some(n), _) = split_neighbour(t)
                && !own_at.contains_key(n)
            {
                neighbour_at.entry(n).or_insert_with(|| {
                    neighbours.push(n);
                    neighbours.len() - 1
                });
            }
        }
        let neighbour_vectors = if neighbours.is_empty() {
            Vec::new()
        } else {
            embedder.embed_chunked(&neighbours, 1)?
        };
        summary.chunks_embedded += own_vectors.iter().map(Vec::len).sum::<usize>()
            + neighbour_vectors.iter().map(Vec::len).sum::<usize>();
        for (h, _, t) in group {
            let (n, own) = split_neighbour(t);
            let mut v = own_vectors[own_at[own]].clone();
            let nv = n.and_then(|n| match own_at.get(n) {
                Some(&i) => own_vectors[i].first(),
                None => neighbour_vectors[neighbour_at[n]].first(),
            });
            if let Some(nv) = nv {
                for chunk in v.iter_mut() {
                    let mut norm = 0f32;
                    for (x, y) in chunk.iter_mut().zip(nv.iter()) {
                        *x += w * y;
                        norm += *x * *x;
                    }
                    let norm = norm.sqrt();
                    if norm > 0.0 {
                        chunk.iter_mut().for_each(|x| *x /= norm);
                    }
                }
            }
            vectors.insert(*h, v);
        }
    }
    Ok(())
}
