//! A reader's view of the index: the manifest it opened and everything that manifest names, consistent for
//! as long as the reader keeps it, whatever writers publish meanwhile.

use super::IndexError;
use super::format::{self, FormatError};
use super::lexical::Lexical;
use super::records::{ChunkKind, Manifest, StoredMessage};
use super::segment::OpenSegment;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

pub(crate) const MANIFEST_MAGIC: &[u8; 8] = b"GHOLAMAN";
pub(crate) const MANIFEST: &str = "manifest.bin";
/// Written by a reader that found a damaged file; the next update then verifies and rebuilds.
pub(crate) const DAMAGE_SEEN: &str = "damage-seen";

/// A live chunk: where its vector is and which message it belongs to.
#[derive(Debug, Clone, Copy)]
pub struct LiveChunk {
    /// Index into [`Snapshot::messages`].
    pub message: u32,
    pub kind: ChunkKind,
    pub segment: u32,
    pub row: u32,
    pub text_hash: u64,
}

/// A consistent, read-only view of one published index generation.
pub struct Snapshot {
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// Live messages (superseded and dead ones left out), grouped by session.
    pub messages: Vec<StoredMessage>,
    pub chunks: Vec<LiveChunk>,
    segments: Vec<OpenSegment>,
    by_gid: HashMap<u64, u32>,
    /// Sessions left out of the in-memory search set by the memory limit (oldest first).
    pub excluded_sessions: usize,
    pub lexical: Option<(Lexical, tantivy::IndexReader)>,
}

/// Reads and verifies the manifest of `dir`; `Ok(None)` when there is no index yet.
pub fn read_manifest(dir: &Path) -> Result<Option<Manifest>, FormatError> {
    let path = dir.join(MANIFEST);
    if !path.exists() {
        return Ok(None);
    }
    let payload = format::read_framed(&path, MANIFEST_MAGIC, "manifest")?;
    format::decode(&path.display().to_string(), &payload).map(Some)
}

/// The memory the in-memory search set may use, from `GHOLA_MEMORY_LIMIT_MB` (default: a third of RAM).
pub fn memory_limit_bytes() -> u64 {
    if let Some(mb) =
        crate::config::non_empty_env("GHOLA_MEMORY_LIMIT_MB").and_then(|v| v.parse::<u64>().ok())
    {
        return mb * 1024 * 1024;
    }
    let total_kb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(8 * 1024 * 1024);
    total_kb * 1024 / 3
}

impl Snapshot {
    /// An empty view (no index yet).
    pub fn empty(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            manifest: Manifest {
                generation: 0,
                model_id: String::new(),
                weights_sha256: String::new(),
                segments: Vec::new(),
                files: Vec::new(),
                next_gid: 0,
                next_segment: 0,
                updated_at_ms: 0,
                dead: Vec::new(),
            },
            messages: Vec::new(),
            chunks: Vec::new(),
            segments: Vec::new(),
            by_gid: HashMap::new(),
            excluded_sessions: 0,
            lexical: None,
        }
    }

    /// Opens the published index of `dir`. A damaged or foreign file is an error naming it (the writer sets it
    /// aside and rebuilds); a missing index is an empty snapshot.
    pub fn open(dir: &Path) -> Result<Self, IndexError> {
        Self::open_with_limit(dir, memory_limit_bytes())
    }

    /// [`Snapshot::open`] with an explicit memory limit for the search set.
    pub fn open_with_limit(dir: &Path, limit: u64) -> Result<Self, IndexError> {
        // A writer may merge segments between our reading the manifest and opening them: read again.
        let mut attempt = 0;
        loop {
            match Self::open_once(dir, limit) {
                Err(IndexError::Format(super::format::FormatError::Io(_, e)))
                    if e.kind() == std::io::ErrorKind::NotFound && attempt < 3 =>
                {
                    attempt += 1;
                }
                Err(IndexError::Format(e)) => {
                    // Tell the next writer to take the full, verifying path (see `update::unchanged`).
                    let _ = std::fs::write(dir.join(DAMAGE_SEEN), e.to_string());
                    return Err(IndexError::Format(e));
                }
                other => return other,
            }
        }
    }

    fn open_once(dir: &Path, limit: u64) -> Result<Self, IndexError> {
        let Some(manifest) = read_manifest(dir)? else {
            return Ok(Self::empty(dir));
        };
        let mut segments = Vec::with_capacity(manifest.segments.len());
        for s in &manifest.segments {
            segments.push(OpenSegment::open(dir, s.id)?);
        }
        let mut snap = Self::empty(dir);
        snap.manifest = manifest;
        snap.segments = segments;
        snap.build_live(limit);
        let lexical = Lexical::open(&dir.join("lexical"))
            .ok()
            .filter(|l| l.generation() == Some(snap.manifest.generation))
            .and_then(|l| l.reader().ok().map(|r| (l, r)));
        snap.lexical = lexical;
        Ok(snap)
    }

    /// Picks the live version of every message (later segments supersede earlier ones; dead gids are out) and
    /// applies the memory limit by leaving out the oldest sessions.
    fn build_live(&mut self, limit: u64) {
        let dead: HashSet<u64> = self.manifest.dead.iter().copied().collect();
        // (segment, index) of the live version of each key.
        let mut latest: HashMap<(&str, Option<&str>, &str), (usize, usize)> = HashMap::new();
        for (si, seg) in self.segments.iter().enumerate() {
            for (mi, m) in seg.meta.messages.iter().enumerate() {
                if !dead.contains(&m.gid) {
                    latest.insert(
                        (
                            m.session_id.as_str(),
                            m.agent_id.as_deref(),
                            m.uuid.as_str(),
                        ),
                        (si, mi),
                    );
                }
            }
        }
        let mut picks: Vec<(usize, usize)> = latest.into_values().collect();
        // Memory: per session, its text plus its vectors; newest sessions are kept first.
        let mut per_session: HashMap<&str, (i64, u64)> = HashMap::new();
        let mut chunk_count: HashMap<(usize, usize), u64> = HashMap::new();
        for (si, seg) in self.segments.iter().enumerate() {
            for c in &seg.meta.chunks {
                *chunk_count.entry((si, c.message as usize)).or_default() += 1;
            }
        }
        for &(si, mi) in &picks {
            let m = &self.segments[si].meta.messages[mi];
            let e = per_session
                .entry(m.session_id.as_str())
                .or_insert((i64::MIN, 0));
            e.0 = e.0.max(m.timestamp_ms.unwrap_or(i64::MIN));
            e.1 += (m.content.len() + 256) as u64
                + chunk_count.get(&(si, mi)).copied().unwrap_or(0)
                    * (crate::embed::DIM as u64 * 4 + 16);
        }
        let mut sessions: Vec<(&str, i64, u64)> =
            per_session.iter().map(|(s, (t, b))| (*s, *t, *b)).collect();
        sessions.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let mut used = 0u64;
        let mut excluded: HashSet<String> = HashSet::new();
        for (s, _, bytes) in sessions {
            used += bytes;
            if used > limit {
                excluded.insert(s.to_string());
            }
        }
        self.excluded_sessions = excluded.len();
        picks.retain(|&(si, mi)| {
            !excluded.contains(&self.segments[si].meta.messages[mi].session_id)
        });
        // Group by session, then conversation, then order, so context is a contiguous neighbourhood.
        picks.sort_by(|&(a, b), &(c, d)| {
            let x = &self.segments[a].meta.messages[b];
            let y = &self.segments[c].meta.messages[d];
            (&x.session_id, &x.agent_id, x.seq).cmp(&(&y.session_id, &y.agent_id, y.seq))
        });
        let mut index_of: HashMap<(usize, usize), u32> = HashMap::with_capacity(picks.len());
        for (i, &(si, mi)) in picks.iter().enumerate() {
            index_of.insert((si, mi), i as u32);
            let m = self.segments[si].meta.messages[mi].clone();
            self.by_gid.insert(m.gid, i as u32);
            self.messages.push(m);
        }
        for (si, seg) in self.segments.iter().enumerate() {
            for c in &seg.meta.chunks {
                if let Some(&message) = index_of.get(&(si, c.message as usize)) {
                    self.chunks.push(LiveChunk {
                        message,
                        kind: c.kind,
                        segment: si as u32,
                        row: c.row,
                        text_hash: c.text_hash,
                    });
                }
            }
        }
    }

    /// The vector of a live chunk.
    pub fn vector(&self, c: &LiveChunk) -> &[f32] {
        self.segments[c.segment as usize].row(c.row)
    }

    /// Index into `messages` of a gid, if live.
    pub fn message_by_gid(&self, gid: u64) -> Option<u32> {
        self.by_gid.get(&gid).copied()
    }

    /// Every stored message (all segments, live or not) with its chunks' (kind, text hash, vector), for the
    /// writer: to diff against re-read sessions and reuse vectors of identical text.
    pub(crate) fn all_segments(&self) -> &[OpenSegment] {
        &self.segments
    }

    /// Adds a segment the writer just wrote (its messages are not added to the live set).
    pub(crate) fn push_segment(&mut self, s: OpenSegment) {
        self.segments.push(s);
    }
}
