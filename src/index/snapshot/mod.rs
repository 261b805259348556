//! A reader's view of the index: the manifest it opened and everything that manifest names, consistent for
//! as long as the reader keeps it, whatever writers publish meanwhile.
//!
//! Opening decodes only the compact message records; texts are read from the mapped text files when a hit is
//! displayed, vectors from the mapped vector files when a query is ranked.

use super::IndexError;
use super::format::{self, FormatError};
use super::lexical::Lexical;
use super::records::{ChunkKind, Manifest, StoredMessage};
use super::segment::{OpenSegment, Verify};
use rustc_hash::{FxHashMap, FxHashSet};
use std::borrow::Cow;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

pub(crate) const MANIFEST_MAGIC: &[u8; 8] = b"GHOLAMAN";
pub(crate) const MANIFEST: &str = "manifest.bin";
/// Written by a reader that found a damaged file; the next update then verifies and rebuilds.
pub(crate) const DAMAGE_SEEN: &str = "damage-seen";
/// How many times (20 ms apart) an open waits for the manifest to catch up with a lexical index committed ahead of
/// it (at most a second; a writer killed in between leaves them apart until the next update rebuilds the lexical
/// index).
const LEXICAL_AHEAD_WAITS: u32 = 50;
/// [`MessageRow::agent`] of a main-conversation message.
pub const NO_AGENT: u32 = u32::MAX;

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

/// A live message as ranking and filtering see it: fixed-size, strings as symbols of [`Snapshot::sym`].
#[derive(Debug, Clone, Copy)]
pub struct MessageRow {
    pub gid: u64,
    /// Where its record is: segment (index into the snapshot's segments) and position in it.
    pub segment: u32,
    pub index: u32,
    pub session: u32,
    /// [`NO_AGENT`] for the main conversation.
    pub agent: u32,
    pub project: u32,
    pub window: u32,
    pub seq: u32,
    pub timestamp_ms: Option<i64>,
}

/// Consecutive live messages of one conversation (session and agent) in one project: what a search's filters
/// decide once per conversation, without reading every message's row (at a million messages that read was a
/// tenth of a search).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConversationRun {
    /// Indices into [`Snapshot::messages`]: `start..end`.
    pub start: u32,
    pub end: u32,
    pub session: u32,
    pub agent: u32,
    pub project: u32,
}

/// The runs of `rows`, in order (rows are grouped by session, conversation and order).
fn conversation_runs(rows: &[MessageRow]) -> Vec<ConversationRun> {
    let mut runs: Vec<ConversationRun> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        match runs.last_mut() {
            Some(last)
                if (last.session, last.agent, last.project) == (r.session, r.agent, r.project) =>
            {
                last.end = i as u32 + 1;
            }
            _ => runs.push(ConversationRun {
                start: i as u32,
                end: i as u32 + 1,
                session: r.session,
                agent: r.agent,
                project: r.project,
            }),
        }
    }
    runs
}

/// Live message by gid: a table indexed by gid when gids are dense (they are handed out in order and most stay
/// live), else sorted pairs searched by bisection; built without hashing a million keys on every open.
#[derive(Default)]
enum GidIndex {
    #[default]
    Empty,
    Dense(Vec<u32>),
    Sorted(Vec<(u64, u32)>),
}

impl GidIndex {
    fn new(rows: &[MessageRow], next_gid: u64) -> Self {
        let max = rows.iter().map(|r| r.gid).max().unwrap_or(0).max(next_gid);
        if max <= 4 * rows.len() as u64 + (1 << 20) {
            let mut t = vec![u32::MAX; max as usize + 1];
            for (i, r) in rows.iter().enumerate() {
                t[r.gid as usize] = i as u32;
            }
            GidIndex::Dense(t)
        } else {
            let mut v: Vec<(u64, u32)> = rows
                .iter()
                .enumerate()
                .map(|(i, r)| (r.gid, i as u32))
                .collect();
            v.sort_unstable();
            GidIndex::Sorted(v)
        }
    }

    fn get(&self, gid: u64) -> Option<u32> {
        match self {
            GidIndex::Empty => None,
            GidIndex::Dense(t) => t
                .get(usize::try_from(gid).ok()?)
                .copied()
                .filter(|&i| i != u32::MAX),
            GidIndex::Sorted(v) => v.binary_search_by_key(&gid, |p| p.0).ok().map(|k| v[k].1),
        }
    }
}

/// The manifest's header, which holds its payload's length and checksum: a new generation changes it. `None` when
/// there is no readable manifest.
fn manifest_header(dir: &Path) -> Option<[u8; format::HEADER_LEN]> {
    use std::io::Read;
    let mut h = [0u8; format::HEADER_LEN];
    std::fs::File::open(dir.join(MANIFEST))
        .and_then(|mut f| f.read_exact(&mut h))
        .ok()
        .map(|_| h)
}

/// The published index of one folder, kept open between calls: a long-lived process (the MCP server, `ghola ui`)
/// reopens it only when a writer has published since (the manifest file's header tells), instead of decoding
/// every segment's metadata on every call. An owned value — one per index folder, holding one snapshot at a
/// time, with the memory limit it was made with — so that two callers in one process never share a limit by
/// accident and nothing outlives its owner.
pub struct SnapshotCache {
    dir: PathBuf,
    memory_limit: u64,
    /// The manifest header the snapshot was opened at, and the snapshot.
    held: std::sync::Mutex<Option<([u8; format::HEADER_LEN], std::sync::Arc<Snapshot>)>>,
}

impl SnapshotCache {
    /// A cache of `dir`'s published index whose search set may use `memory_limit` bytes; opens nothing yet.
    pub fn new(dir: &Path, memory_limit: u64) -> Self {
        Self {
            dir: dir.to_path_buf(),
            memory_limit,
            held: std::sync::Mutex::new(None),
        }
    }

    /// The index folder this cache reads.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The index as published now: the held snapshot while the manifest is unchanged, else a reopen that reuses
    /// the held snapshot's segments still published (only new ones are read).
    pub fn get(&self) -> Result<std::sync::Arc<Snapshot>, IndexError> {
        let key = manifest_header(&self.dir);
        let previous = {
            let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            match (&*held, key) {
                (Some((k, snap)), Some(key)) if *k == key => return Ok(snap.clone()),
                (held, _) => held.as_ref().map(|(_, s)| s.clone()),
            }
        };
        let snap = std::sync::Arc::new(match previous {
            Some(p) => p.reopen()?,
            None => Snapshot::open_with(&self.dir, self.memory_limit, false)?,
        });
        if let Some(key) = key {
            *self.held.lock().unwrap_or_else(|e| e.into_inner()) = Some((key, snap.clone()));
        }
        Ok(snap)
    }
}

/// Interns the string tables of `segments` after the symbols already `known` (which keep their numbers): the
/// strings not known yet, in order of first use, and per segment its string-table index → symbol.
fn intern(
    known: &[String],
    segments: &[std::sync::Arc<OpenSegment>],
) -> (Vec<String>, Vec<Vec<u32>>) {
    let mut index: FxHashMap<&str, u32> = known
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i as u32))
        .collect();
    let mut added: Vec<String> = Vec::new();
    let local = segments
        .iter()
        .map(|seg| {
            seg.rows
                .strings
                .iter()
                .map(|s| {
                    *index.entry(s.as_str()).or_insert_with(|| {
                        added.push(s.clone());
                        (known.len() + added.len() - 1) as u32
                    })
                })
                .collect()
        })
        .collect();
    (added, local)
}

/// Each live (not dead) message of segment `si` as a [`MessageRow`] with global symbols (`local`: the segment's
/// string table → global symbol), with what it costs the search set.
fn live_rows_of<'a>(
    seg: &'a OpenSegment,
    si: usize,
    local: &'a [u32],
    dead: &'a FxHashSet<u64>,
) -> impl Iterator<Item = (MessageRow, u64)> + 'a {
    let mut chunks = vec![0u32; seg.rows.len()];
    for c in 0..seg.rows.chunk_count() {
        if let Some(n) = chunks.get_mut(seg.rows.chunk(c).message as usize) {
            *n += 1;
        }
    }
    let sym = move |s: u32| local.get(s as usize).copied().unwrap_or(NO_AGENT);
    chunks
        .into_iter()
        .enumerate()
        .filter_map(move |(mi, n_chunks)| {
            let m = seg.rows.row(mi);
            if dead.contains(&m.gid) {
                return None;
            }
            let row = MessageRow {
                gid: m.gid,
                segment: si as u32,
                index: mi as u32,
                session: sym(m.session),
                agent: m.agent.map_or(NO_AGENT, sym),
                project: sym(m.project),
                window: m.window,
                seq: m.seq,
                timestamp_ms: m.timestamp_ms,
            };
            Some((row, message_bytes(m.text_len, n_chunks as u64)))
        })
}

/// A consistent, read-only view of one published index generation.
pub struct Snapshot {
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// Live messages (superseded and dead ones left out), grouped by session, conversation and order.
    pub messages: Vec<MessageRow>,
    /// Live chunks, in message order.
    pub chunks: Vec<LiveChunk>,
    /// Shared, so that a reopen after a publish reuses the segments that did not change (they never do).
    segments: Vec<std::sync::Arc<OpenSegment>>,
    /// Strings of every segment, interned once: [`MessageRow`] refers to sessions, agents and projects by index.
    syms: Vec<String>,
    /// Per segment, its string-table index → global symbol.
    local_syms: Vec<Vec<u32>>,
    by_gid: GidIndex,
    /// Sessions left out of the in-memory search set by the memory limit (oldest first).
    pub excluded_sessions: usize,
    /// What the live messages cost the search set, by [`message_bytes`] (an upper bound after a reopen).
    live_bytes: u64,
    /// Whether the live view was extended from the previous snapshot's (a reopen after an append) rather than
    /// built from every record.
    pub live_extended: bool,
    /// Per segment, whether it was published keyword-only and awaits embedding.
    waiting: Vec<bool>,
    /// Live messages that await embedding (ranked by their words alone until then).
    pub messages_waiting: usize,
    pub lexical: Option<(Lexical, tantivy::IndexReader)>,
    /// The memory limit this view was opened with, kept for [`Snapshot::reopen`].
    memory_limit: u64,
    /// [`Snapshot::conversations`], found on first use (`messages` never change once the view is built).
    runs: std::sync::OnceLock<Vec<ConversationRun>>,
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

/// The memory the in-memory search set may use unless told otherwise: a third of RAM (the CLI takes
/// `GHOLA_MEMORY_LIMIT_MB` instead when set).
pub fn default_memory_limit() -> u64 {
    let total_kb = fs_err::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(8 * 1024 * 1024);
    total_kb * 1024 / 3
}

/// What one message costs the search set: its record and text, plus its vectors.
pub fn message_bytes(text_len: u32, chunks: u64) -> u64 {
    (text_len as u64 + 128) + chunks * (crate::embed::DIM as u64 * 4 + 24)
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
            syms: Vec::new(),
            local_syms: Vec::new(),
            by_gid: GidIndex::default(),
            excluded_sessions: 0,
            live_bytes: 0,
            live_extended: false,
            waiting: Vec::new(),
            messages_waiting: 0,
            lexical: None,
            memory_limit: default_memory_limit(),
            runs: std::sync::OnceLock::new(),
        }
    }

    /// The live messages as runs of one conversation each, in order: every message in exactly one.
    pub fn conversations(&self) -> &[ConversationRun] {
        self.runs.get_or_init(|| conversation_runs(&self.messages))
    }

    /// Opens the published index of `dir`. A damaged or foreign file is an error naming it (the writer sets it
    /// aside and rebuilds); a missing index is an empty snapshot. The search set may use
    /// [`default_memory_limit`].
    pub fn open(dir: &Path) -> Result<Self, IndexError> {
        Self::open_with(dir, default_memory_limit(), false)
    }

    /// [`Snapshot::open`] with an explicit memory limit for the search set, checksumming every file when
    /// `verify_all` (else see [`Verify`]).
    pub fn open_with(dir: &Path, limit: u64, verify_all: bool) -> Result<Self, IndexError> {
        Self::open_reusing(dir, limit, verify_all, None)
    }

    /// The index as published now, reusing this snapshot's open segments that are still published: after an
    /// append only the new segment is read and decoded (segment files are immutable; they were checked when
    /// first opened).
    pub fn reopen(&self) -> Result<Self, IndexError> {
        Self::open_reusing(&self.dir, self.memory_limit, false, Some(self))
    }

    fn open_reusing(
        dir: &Path,
        limit: u64,
        verify_all: bool,
        reuse: Option<&Snapshot>,
    ) -> Result<Self, IndexError> {
        // A writer may merge segments between our reading the manifest and opening them: read again.
        let mut attempt = 0;
        // A writer commits the lexical index, then the archive, then the manifest: a reader arriving in between
        // sees a lexical index one generation ahead of the manifest, and would search without words (and the
        // server would keep that view until the next publish). The manifest follows within milliseconds.
        let mut lexical_waits = 0;
        loop {
            match Self::open_once(dir, limit, verify_all, reuse) {
                Err(IndexError::Format(FormatError::Io(_, e)))
                    if e.kind() == std::io::ErrorKind::NotFound && attempt < 3 =>
                {
                    attempt += 1;
                }
                Ok(snap)
                    if snap.lexical.is_none()
                        && lexical_waits < LEXICAL_AHEAD_WAITS
                        && Lexical::open(&dir.join("lexical"))
                            .ok()
                            .and_then(|l| l.generation())
                            .is_some_and(|g| g > snap.manifest.generation) =>
                {
                    // Open again once the manifest has changed (or the wait is over), not every 20 ms.
                    let seen = manifest_header(dir);
                    lexical_waits += 1;
                    while lexical_waits < LEXICAL_AHEAD_WAITS && manifest_header(dir) == seen {
                        lexical_waits += 1;
                        std::thread::sleep(std::time::Duration::from_millis(20));
                    }
                }
                Err(IndexError::Format(e)) => {
                    // Tell the next writer to take the full, verifying path (see `update::unchanged`).
                    let _ = fs_err::write(dir.join(DAMAGE_SEEN), e.to_string());
                    return Err(IndexError::Format(e));
                }
                other => return other,
            }
        }
    }

    fn open_once(
        dir: &Path,
        limit: u64,
        verify_all: bool,
        reuse: Option<&Snapshot>,
    ) -> Result<Self, IndexError> {
        let verify = if verify_all {
            Verify::Always
        } else {
            Verify::since_publish(dir)
        };
        let Some(manifest) = read_manifest(dir)? else {
            let mut empty = Self::empty(dir);
            empty.memory_limit = limit;
            return Ok(empty);
        };
        let have: FxHashMap<u64, &std::sync::Arc<OpenSegment>> = reuse
            .map(|r| r.segments.iter().map(|s| (s.id, s)).collect())
            .unwrap_or_default();
        let mut segments = Vec::with_capacity(manifest.segments.len());
        for s in &manifest.segments {
            let seg = match have.get(&s.id) {
                Some(open) if open.still_current(dir) => (*open).clone(),
                _ => std::sync::Arc::new(OpenSegment::open(dir, s.id, verify)?),
            };
            // The manifest says how many records the segment has: a file that disagrees is not this segment's.
            if seg.rows.len() != s.messages as usize || seg.rows.chunk_count() != s.chunks as usize
            {
                return Err(IndexError::Format(FormatError::Damaged(
                    super::segment::paths(dir, s.id).rows.display().to_string(),
                )));
            }
            segments.push(seg);
        }
        let mut snap = Self::empty(dir);
        snap.memory_limit = limit;
        snap.waiting = manifest
            .segments
            .iter()
            .map(|s| super::segment::awaits_embedding(dir, s.id))
            .collect();
        snap.manifest = manifest;
        snap.segments = segments;
        if !reuse.is_some_and(|prev| snap.extend_live(prev, limit)) {
            snap.build_live(limit);
        }
        snap.messages_waiting = snap
            .messages
            .iter()
            .filter(|m| snap.waiting[m.segment as usize])
            .count();
        let lexical = Lexical::open(&dir.join("lexical"))
            .ok()
            .filter(|l| l.generation() == Some(snap.manifest.generation))
            .and_then(|l| l.reader().ok().map(|r| (l, r)));
        snap.lexical = lexical;
        Ok(snap)
    }

    /// Whether live message `i` has been through the embedding pass (it may still have no vectors, when it has
    /// no text to embed).
    pub fn is_embedded(&self, i: usize) -> bool {
        !self
            .waiting
            .get(self.messages[i].segment as usize)
            .copied()
            .unwrap_or(false)
    }

    /// A global symbol's string (sessions, agents, projects of [`MessageRow`]).
    pub fn sym(&self, sym: u32) -> &str {
        self.syms.get(sym as usize).map_or("", String::as_str)
    }

    /// The symbol of a string, if any message uses it.
    pub fn sym_of(&self, s: &str) -> Option<u32> {
        self.syms.iter().position(|x| x == s).map(|i| i as u32)
    }

    /// How many symbols there are (for per-symbol tables, e.g. which projects pass a filter).
    pub fn sym_count(&self) -> usize {
        self.syms.len()
    }

    /// The fixed-width record of live message `i`.
    pub fn row(&self, i: usize) -> super::rows::Row {
        let r = &self.messages[i];
        self.segments[r.segment as usize].rows.row(r.index as usize)
    }

    /// The snapshot-wide id of a symbol of live message `i`'s segment table.
    fn global_sym(&self, i: usize, sym: u32) -> Option<u32> {
        self.local_syms[self.messages[i].segment as usize]
            .get(sym as usize)
            .copied()
    }

    /// A string of live message `i`'s segment table, resolved.
    fn local(&self, i: usize, sym: u32) -> &str {
        self.global_sym(i, sym).map_or("", |g| self.sym(g))
    }

    /// The snapshot-wide ids of live message `i`'s role and kind, to compare messages by side without
    /// resolving strings (equal ids, equal strings).
    pub fn role_and_kind_ids(&self, i: usize) -> (u32, u32) {
        let row = self.row(i);
        let global = |sym: u32| self.global_sym(i, sym).unwrap_or(u32::MAX);
        (global(row.role), global(row.kind))
    }

    /// The role of live message `i` ("user", "assistant", …).
    pub fn role(&self, i: usize) -> &str {
        self.local(i, self.row(i).role)
    }

    /// What live message `i` mostly is ("text", "summary", "tool_use", "tool_result", "thinking").
    pub fn kind(&self, i: usize) -> &str {
        self.local(i, self.row(i).kind)
    }

    /// The uuid of live message `i`.
    pub fn uuid(&self, i: usize) -> &str {
        let r = &self.messages[i];
        self.segments[r.segment as usize]
            .rows
            .uuid(r.index as usize)
    }

    /// The session id of live message `i`.
    pub fn session_id(&self, i: usize) -> &str {
        self.sym(self.messages[i].session)
    }

    /// The agent id of live message `i` (subagent messages only).
    pub fn agent_id(&self, i: usize) -> Option<&str> {
        let a = self.messages[i].agent;
        (a != NO_AGENT).then(|| self.sym(a))
    }

    /// The project of live message `i`.
    pub fn project(&self, i: usize) -> &str {
        self.sym(self.messages[i].project)
    }

    /// The source transcript of live message `i`.
    pub fn source(&self, i: usize) -> &str {
        self.local(i, self.row(i).source)
    }

    /// The readable text of live message `i`.
    pub fn content(&self, i: usize) -> Cow<'_, str> {
        let r = &self.messages[i];
        self.segments[r.segment as usize].content(r.index as usize)
    }

    /// The id of the segment holding live message `i`.
    pub fn segment_id(&self, i: usize) -> u64 {
        self.segments[self.messages[i].segment as usize].id
    }

    /// Live message `i`'s text bytes, as stored: its shown-only lines too (`index::shown`).
    pub fn text_bytes(&self, i: usize) -> &[u8] {
        let r = &self.messages[i];
        self.segments[r.segment as usize].text_bytes(r.index as usize)
    }

    /// Live message `i`'s keyword text: what ranking and its rules read (`index::shown::keyword_part`).
    pub fn keyword_bytes(&self, i: usize) -> &[u8] {
        super::shown::keyword_part(self.text_bytes(i))
    }

    /// [`Snapshot::keyword_bytes`] as text (lossy if the text file was damaged behind our back).
    pub fn keyword_text(&self, i: usize) -> Cow<'_, str> {
        String::from_utf8_lossy(self.keyword_bytes(i))
    }

    /// Live message `i` with every field, for display.
    pub fn stored(&self, i: usize) -> StoredMessage {
        let r = &self.messages[i];
        let mut m = self.segments[r.segment as usize].stored(r.index as usize);
        // Rows written before the reader redacted (or by rules since improved) are redacted as they are read.
        crate::secrets::redact_in_place(&mut m.content, &mut crate::secrets::Tally::default());
        m
    }

    /// The vector of a live chunk.
    pub fn vector(&self, c: &LiveChunk) -> &[f32] {
        self.segments[c.segment as usize].row(c.row)
    }

    /// The int8 row of a live chunk (its scale and bytes), when its segment has the compact copy.
    #[inline(always)]
    pub fn compact_row(&self, c: &LiveChunk) -> Option<(f32, &[i8])> {
        self.segments[c.segment as usize]
            .compact
            .as_ref()
            .map(|v| v.row(c.row))
    }

    /// The 4-bit row of a live chunk (its scale and bytes), when its segment has the 4-bit copy.
    #[inline(always)]
    pub fn nibble_row(&self, c: &LiveChunk) -> Option<(f32, &[u8])> {
        self.segments[c.segment as usize]
            .nibbles
            .as_ref()
            .map(|v| v.row(c.row))
    }

    /// Index into `messages` of a gid, if live.
    pub fn message_by_gid(&self, gid: u64) -> Option<u32> {
        self.by_gid.get(gid)
    }
}

mod live;
