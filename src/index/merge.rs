//! Size-tiered merging: every append publishes a small segment; once [`MERGE_FACTOR`] segments of one size class
//! pile up they are rewritten as one (vectors copied, nothing re-embedded), dropping dead and superseded
//! messages. Each message is rewritten about log₄(index size) times over its life, and an append never waits
//! for a rewrite of everything.

use super::IndexError;
use super::records::SegmentInfo;
use super::segment::{self, OpenSegment, SegmentBuilder, Verify};
use super::writer::Writer;
use std::collections::{HashMap, HashSet};

/// Segments of one size class merged together once there are this many of them.
pub const MERGE_FACTOR: usize = 4;

/// A segment's size class: ⌊log₄ messages⌋.
fn class(s: &SegmentInfo) -> u32 {
    s.messages.max(1).ilog(MERGE_FACTOR as u32)
}

/// The segments to merge next: all of the smallest class that has [`MERGE_FACTOR`] or more. Segments that still
/// await embedding (`pending`) are left out: the second pass replaces them first.
pub fn next_merge(segments: &[SegmentInfo], pending: &HashSet<u64>) -> Option<Vec<u64>> {
    let mut by_class: HashMap<u32, Vec<u64>> = HashMap::new();
    for s in segments.iter().filter(|s| !pending.contains(&s.id)) {
        by_class.entry(class(s)).or_default().push(s.id);
    }
    let mut classes: Vec<_> = by_class
        .into_iter()
        .filter(|(_, ids)| ids.len() >= MERGE_FACTOR)
        .collect();
    classes.sort_by_key(|(c, _)| *c);
    classes.into_iter().next().map(|(_, ids)| ids)
}

impl Writer<'_> {
    /// Merges while some size class is full.
    pub fn merge_while_needed(&mut self) -> Result<(), IndexError> {
        let pending: HashSet<u64> = self
            .manifest
            .segments
            .iter()
            .filter(|s| segment::awaits_embedding(self.dir, s.id))
            .map(|s| s.id)
            .collect();
        while let Some(ids) = next_merge(&self.manifest.segments, &pending) {
            self.merge(&ids)?;
        }
        Ok(())
    }

    /// Rewrites each of segments `ids` on its own, without its dead messages (`ghola forget`: their text and
    /// vectors leave the disk now, not at the next merge of their size class).
    pub fn purge(&mut self, ids: &[u64]) -> Result<(), IndexError> {
        for &id in ids {
            self.merge(&[id])?;
        }
        Ok(())
    }

    /// Rewrites segments `ids` as one, publishes, then deletes their files. Readers holding an older manifest keep
    /// their mapped files (unlinked files stay readable) or, opening late, read the manifest again.
    fn merge(&mut self, ids: &[u64]) -> Result<(), IndexError> {
        let dead: HashSet<u64> = self.manifest.dead.iter().copied().collect();
        let mut segs = Vec::with_capacity(ids.len());
        for &id in ids {
            segs.push(OpenSegment::open(self.dir, id, Verify::Always)?);
        }
        // Within the merged set, the lowest live gid of each (session, agent, uuid) stays (see
        // `Snapshot::build_live`).
        let mut best: HashMap<(&str, Option<&str>, &str), u64> = HashMap::new();
        for seg in &segs {
            for mi in 0..seg.rows.len() {
                let m = seg.rows.row(mi);
                if dead.contains(&m.gid) {
                    continue;
                }
                let key = (
                    seg.str(m.session),
                    m.agent.map(|a| seg.str(a)),
                    seg.rows.uuid(mi),
                );
                let e = best.entry(key).or_insert(m.gid);
                *e = (*e).min(m.gid);
            }
        }
        let keep: HashSet<u64> = best.into_values().collect();
        let mut gone = HashSet::new();
        let mut superseded = Vec::new();
        // The merged vectors stream to their file, and each segment read is unmapped once copied: the merge
        // holds the metadata and text, not the matrix.
        let id = self.manifest.next_segment;
        let mut builder = SegmentBuilder::streaming(self.dir, id)?;
        for seg in segs {
            let mut chunks_of: Vec<Vec<usize>> = vec![Vec::new(); seg.rows.len()];
            for ci in 0..seg.rows.chunk_count() {
                chunks_of[seg.rows.chunk(ci).message as usize].push(ci);
            }
            for (mi, mine) in chunks_of.iter().enumerate() {
                let m = seg.rows.row(mi);
                gone.insert(m.gid);
                if !keep.contains(&m.gid) {
                    if !dead.contains(&m.gid) {
                        superseded.push(m.gid);
                    }
                    continue;
                }
                let new = builder.push_message(&seg.stored(mi));
                for &ci in mine {
                    let c = seg.rows.chunk(ci);
                    builder.push_chunk(new, c.kind, c.text_hash, seg.row(c.row));
                }
            }
        }
        let info = SegmentInfo {
            id,
            messages: builder.messages() as u32,
            chunks: builder.chunks() as u32,
        };
        builder.write(self.dir, id)?;
        self.manifest.next_segment += 1;
        self.manifest.segments.retain(|s| !ids.contains(&s.id));
        self.manifest.segments.push(info);
        self.manifest.dead.retain(|g| !gone.contains(g));
        for gid in superseded {
            self.lexical.delete(&self.lex_writer, gid);
        }
        self.commit()?;
        self.forget_segments(ids);
        for &old in ids {
            segment::remove(self.dir, old);
        }
        self.summary.merges += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(id: u64, messages: u32) -> SegmentInfo {
        SegmentInfo {
            id,
            messages,
            chunks: messages,
        }
    }

    #[test]
    fn merges_the_smallest_full_class_only() {
        let none = HashSet::new();
        assert_eq!(
            next_merge(&[seg(1, 5000), seg(2, 3), seg(3, 2)], &none),
            None
        );
        let small: Vec<SegmentInfo> = (0..4).map(|i| seg(10 + i, 2)).collect();
        let mut all = vec![seg(1, 5000)];
        all.extend(small);
        assert_eq!(next_merge(&all, &none), Some(vec![10, 11, 12, 13]));
        // A segment awaiting embedding is not merged.
        let pending: HashSet<u64> = [11].into_iter().collect();
        assert_eq!(next_merge(&all, &pending), None);
        // Four big ones and four small ones: the small ones first.
        let mut both: Vec<SegmentInfo> = (0..4).map(|i| seg(i, 5000)).collect();
        both.extend((0..4).map(|i| seg(20 + i, 10)));
        assert_eq!(next_merge(&both, &none), Some(vec![20, 21, 22, 23]));
    }
}
