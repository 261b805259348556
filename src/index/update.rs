//! The writer: brings the index up to date with the transcripts, under the index lock, publishing every few
//! thousand messages (write new files, fsync, rename a new manifest into place) so a first index is useful
//! early and a crash loses at most the work since the last publish.

use super::format::{self, sync_dir};
use super::lexical::Lexical;
use super::records::{ChunkKind, ChunkRecord, FileState, Manifest, SegmentInfo, StoredMessage};
use super::segment::{self, SegmentMeta};
use super::snapshot::{MANIFEST, MANIFEST_MAGIC, Snapshot};
use super::{ChunkEmbedder, IndexError};
use crate::embed::DIM;
use crate::transcript::{self, Message, Part, Role, SessionFiles};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::time::{Instant, SystemTime};

/// How many chunks of each kind a message may have embedded. Text is what people search for, so it gets the
/// most; a tool result is represented by its first chunk (a 50 KB log must not cost fifty embeddings; its whole
/// text is still in the lexical index).
pub fn chunk_cap(kind: ChunkKind) -> usize {
    match kind {
        ChunkKind::Text => 4,
        ChunkKind::Thinking => 2,
        ChunkKind::ToolUse | ChunkKind::ToolResult => 1,
    }
}

/// Stored content is cut here (display cuts at 2,000 characters; the rest only feeds the lexical index).
const MAX_CONTENT_BYTES: usize = 32 * 1024;
/// Characters of the previous message's text prepended to a message's text before embedding: a reply ("yes,
/// the second one") means little without what it answers. Chosen on the LoCoMo dev set (see the README).
static NEIGHBOUR_CHARS: std::sync::LazyLock<usize> = std::sync::LazyLock::new(|| {
    crate::config::non_empty_env("GHOLA_NEIGHBOUR_CHARS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
});

/// The last `n` characters of `s`.
fn tail_chars(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
}

/// More segments than this are merged into one.
const MAX_SEGMENTS: usize = 8;

/// How an update behaves.
#[derive(Debug, Clone, Copy)]
pub struct UpdateOptions {
    /// Wait for another writer to finish (true) or return [`IndexError::Busy`] at once (false).
    pub wait: bool,
    /// Publish after this many new or changed messages.
    pub publish_every: usize,
}

impl Default for UpdateOptions {
    fn default() -> Self {
        // `GHOLA_PUBLISH_EVERY` lets tests put publish points close together.
        let publish_every = crate::config::non_empty_env("GHOLA_PUBLISH_EVERY")
            .and_then(|v| v.parse().ok())
            .unwrap_or(2000);
        Self {
            wait: true,
            publish_every,
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
    pub files_seen: usize,
    pub files_read: usize,
    pub bytes_read: u64,
    pub sessions_updated: usize,
    pub messages_added: usize,
    pub messages_removed: usize,
    pub chunks_embedded: usize,
    pub chunks_reused: usize,
    pub publishes: usize,
    pub lexical_rebuilt: bool,
    pub set_aside: Vec<String>,
    pub seconds: f64,
}

fn mtime_ns(m: &std::fs::Metadata) -> i128 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128)
}

fn hash64(parts: &[&[u8]]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for p in parts {
        p.hash(&mut h);
    }
    h.finish()
}

fn head_hash(path: &Path) -> u64 {
    use std::io::Read;
    let mut buf = vec![0u8; 4096];
    let n = File::open(path)
        .and_then(|mut f| f.read(&mut buf))
        .unwrap_or(0);
    hash64(&[&buf[..n]])
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Takes the index lock: exclusive, held until the returned file is dropped.
fn lock(dir: &Path, wait: bool) -> Result<File, IndexError> {
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
    Ok(f)
}

/// Moves the index files aside (into `damaged-<time>/`) so a rebuild starts clean and nothing is deleted.
fn set_aside(dir: &Path) -> std::io::Result<String> {
    let dest = dir.join(format!("damaged-{}", now_ms()));
    std::fs::create_dir_all(&dest)?;
    for name in [MANIFEST, "segments", "lexical"] {
        let p = dir.join(name);
        if p.exists() {
            std::fs::rename(&p, dest.join(name))?;
        }
    }
    Ok(dest.display().to_string())
}

/// Writes the manifest under a temporary name, fsyncs it, renames it into place and fsyncs the directory.
fn publish_manifest(dir: &Path, m: &Manifest) -> std::io::Result<()> {
    let tmp = dir.join(format!("{MANIFEST}.tmp"));
    format::write_framed(&tmp, MANIFEST_MAGIC, &format::encode(m))?;
    std::fs::rename(&tmp, dir.join(MANIFEST))?;
    sync_dir(dir)
}

/// The readable text of a message and the texts to embed, by kind.
fn render(m: &Message) -> (String, &'static str, Vec<(ChunkKind, String)>) {
    let mut content = String::new();
    let mut by_kind: Vec<(ChunkKind, String)> = Vec::new();
    let mut add = |kind: ChunkKind, text: &str| {
        if let Some(e) = by_kind.iter_mut().find(|(k, _)| *k == kind) {
            e.1.push('\n');
            e.1.push_str(text);
        } else {
            by_kind.push((kind, text.to_string()));
        }
    };
    for p in &m.parts {
        let line = match p {
            Part::Text { text } => {
                add(ChunkKind::Text, text);
                text.clone()
            }
            Part::Thinking { text } => {
                add(ChunkKind::Thinking, text);
                format!("[thinking] {text}")
            }
            Part::ToolUse { name, summary, .. } => {
                let l = format!("{name}: {summary}");
                add(ChunkKind::ToolUse, &l);
                format!("[tool] {l}")
            }
            Part::ToolResult { text, is_error, .. } => {
                add(ChunkKind::ToolResult, text);
                format!(
                    "[{}] {text}",
                    if *is_error {
                        "tool error"
                    } else {
                        "tool result"
                    }
                )
            }
        };
        if !content.is_empty() {
            content.push('\n');
        }
        content.push_str(&line);
    }
    by_kind.retain(|(_, t)| !t.trim().is_empty());
    if content.len() > MAX_CONTENT_BYTES {
        let mut cut = MAX_CONTENT_BYTES;
        while !content.is_char_boundary(cut) {
            cut -= 1;
        }
        content.truncate(cut);
    }
    let kind = if m.is_compact_summary {
        "summary"
    } else if by_kind.iter().any(|(k, _)| *k == ChunkKind::Text) {
        "text"
    } else if by_kind.iter().any(|(k, _)| *k == ChunkKind::ToolResult) {
        "tool_result"
    } else if by_kind.iter().any(|(k, _)| *k == ChunkKind::ToolUse) {
        "tool_use"
    } else {
        "thinking"
    };
    (content, kind, by_kind)
}

/// Identity of a message: (session id, agent id, uuid).
type MessageKey = (String, Option<String>, String);

/// A new or changed message waiting to be published, with the texts to embed.
struct Pending {
    msg: StoredMessage,
    chunks: Vec<(ChunkKind, String)>,
}

/// The writer's working state between publishes.
struct Writer<'a> {
    dir: &'a Path,
    manifest: Manifest,
    snapshot: Snapshot,
    lexical: Lexical,
    lex_writer: tantivy::IndexWriter,
    /// key → (gid, content hash) of every live message.
    live: HashMap<MessageKey, (u64, u64)>,
    /// gid → source of every live message (to drop messages a rewritten file no longer has).
    live_by_source: HashMap<String, Vec<(u64, MessageKey)>>,
    /// Text hash → (segment, rows) of vectors already stored, to reuse instead of re-embedding.
    stored: HashMap<u64, (usize, Vec<u32>)>,
    /// Text hash → vectors embedded during this update.
    fresh: HashMap<u64, Vec<crate::embed::Vector>>,
    pending: Vec<Pending>,
    pending_files: Vec<FileState>,
    pending_dead: Vec<u64>,
    summary: UpdateSummary,
}

/// The model id recorded in the manifest: the neighbour context changes what a vector means, so a different
/// setting re-embeds like a different model.
fn indexed_model_id(embedder: &dyn ChunkEmbedder) -> String {
    match *NEIGHBOUR_CHARS {
        0 => embedder.model_id(),
        n => format!("{}+prev{n}", embedder.model_id()),
    }
}

/// The fast path of a freshness check: when the manifest's fingerprints match every transcript on disk (one
/// `stat` each), the model is the same and the lexical index belongs to the manifest, nothing needs opening.
/// Returns the number of files checked, or `None` when the full update must run.
fn unchanged(dir: &Path, claude_dir: &Path, embedder: &dyn ChunkEmbedder) -> Option<usize> {
    if dir.join(super::snapshot::DAMAGE_SEEN).exists() {
        return None;
    }
    let manifest = super::snapshot::read_manifest(dir).ok()??;
    if manifest.segments.is_empty()
        || manifest.model_id != indexed_model_id(embedder)
        || manifest.weights_sha256 != embedder.weights_sha256(dir).ok()?
    {
        return None;
    }
    let by_path: HashMap<&str, &FileState> = manifest
        .files
        .iter()
        .map(|f| (f.path.as_str(), f))
        .collect();
    let mut seen = 0;
    for s in &transcript::discover(claude_dir).sessions {
        for path in s.all_files() {
            seen += 1;
            let meta = std::fs::metadata(path).ok()?;
            let old = by_path.get(path.display().to_string().as_str())?;
            if old.deleted || old.size != meta.len() || old.mtime_ns != mtime_ns(&meta) {
                return None;
            }
        }
    }
    // Published files are never modified, and every one is written before the manifest that names it: a
    // segment newer than the manifest was touched since (damage, a stray copy) and gets the full, verifying path.
    let published = std::fs::metadata(dir.join(super::snapshot::MANIFEST))
        .and_then(|m| m.modified())
        .ok()?;
    for e in std::fs::read_dir(dir.join("segments")).ok()? {
        let modified = e.ok()?.metadata().and_then(|m| m.modified()).ok()?;
        if modified > published {
            return None;
        }
    }
    // A file that vanished must be marked as source-deleted by a full update.
    let live_files = manifest.files.iter().filter(|f| !f.deleted).count();
    if live_files != seen {
        return None;
    }
    let lexical = Lexical::open(&dir.join("lexical")).ok()?;
    (lexical.generation() == Some(manifest.generation)).then_some(seen)
}

/// Brings the index in `dir` up to date with the transcripts under `claude_dir`.
pub fn update(
    dir: &Path,
    claude_dir: &Path,
    embedder: &dyn ChunkEmbedder,
    opts: UpdateOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<UpdateSummary, IndexError> {
    let started = Instant::now();
    std::fs::create_dir_all(dir)?;
    let _lock = lock(dir, opts.wait)?;
    let mut summary = UpdateSummary::default();
    if let Some(files_seen) = unchanged(dir, claude_dir, embedder) {
        summary.files_seen = files_seen;
        summary.seconds = started.elapsed().as_secs_f64();
        return Ok(summary);
    }
    // The writer sees everything, whatever the memory limit for searching.
    let opened = Snapshot::open_with_limit(dir, u64::MAX);
    let _ = std::fs::remove_file(dir.join(super::snapshot::DAMAGE_SEEN));
    let snapshot = match opened {
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
    // The neighbour context changes what a vector means: a different setting re-embeds like a different model.
    let model_id = indexed_model_id(embedder);
    let weights = embedder.weights_sha256(dir)?;
    let mut snapshot = snapshot;
    if !snapshot.manifest.segments.is_empty()
        && (snapshot.manifest.model_id != model_id || snapshot.manifest.weights_sha256 != weights)
    {
        tracing::warn!("the embedding model changed; re-embedding everything");
        let next_segment = snapshot.manifest.next_segment;
        snapshot = Snapshot::empty(dir);
        snapshot.manifest.next_segment = next_segment;
    }
    let mut manifest = snapshot.manifest.clone();
    manifest.model_id = model_id;
    manifest.weights_sha256 = weights;

    let lexical = match Lexical::open(&dir.join("lexical")) {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!("lexical index unreadable ({e}); rebuilding it");
            let _ = std::fs::remove_dir_all(dir.join("lexical"));
            Lexical::open(&dir.join("lexical"))?
        }
    };
    let mut lex_writer = lexical.writer()?;
    if lexical.generation() != Some(manifest.generation) {
        // Never trust a lexical index that does not belong to this manifest: rebuild it from the stored text.
        lexical.clear(&mut lex_writer)?;
        for m in &snapshot.messages {
            lexical.add(&lex_writer, m.gid, &m.content)?;
        }
        lexical.commit(&mut lex_writer, manifest.generation)?;
        summary.lexical_rebuilt = !snapshot.messages.is_empty() || manifest.generation > 0;
    }

    let mut live = HashMap::new();
    let mut live_by_source: HashMap<String, Vec<_>> = HashMap::new();
    for m in &snapshot.messages {
        live.insert(m.key(), (m.gid, m.content_hash));
        live_by_source
            .entry(m.source.clone())
            .or_default()
            .push((m.gid, m.key()));
    }
    let mut stored: HashMap<u64, (usize, Vec<u32>)> = HashMap::new();
    for (si, seg) in snapshot.all_segments().iter().enumerate() {
        for c in &seg.meta.chunks {
            let e = stored.entry(c.text_hash).or_insert((si, Vec::new()));
            if e.0 == si {
                e.1.push(c.row);
            }
        }
    }

    let found = transcript::discover(claude_dir);
    let by_path: HashMap<&str, &FileState> = manifest
        .files
        .iter()
        .map(|f| (f.path.as_str(), f))
        .collect();
    let mut changed: Vec<(i128, &SessionFiles, Vec<FileState>, bool)> = Vec::new();
    let mut on_disk: HashSet<String> = HashSet::new();
    for s in &found.sessions {
        let mut states = Vec::new();
        let mut any_change = false;
        let mut rewritten = false;
        let mut newest = 0i128;
        for path in s.all_files() {
            summary.files_seen += 1;
            let key = path.display().to_string();
            on_disk.insert(key.clone());
            let Ok(meta) = std::fs::metadata(path) else {
                continue;
            };
            let (size, mtime) = (meta.len(), mtime_ns(&meta));
            newest = newest.max(mtime);
            match by_path.get(key.as_str()) {
                Some(old) if old.size == size && old.mtime_ns == mtime && !old.deleted => {
                    states.push((*old).clone())
                }
                old => {
                    any_change = true;
                    let head = head_hash(path);
                    if let Some(old) = old
                        && (size < old.consumed || old.head_hash != head)
                    {
                        rewritten = true;
                    }
                    states.push(FileState {
                        path: key,
                        session_id: s.session_id.clone(),
                        size,
                        mtime_ns: mtime,
                        consumed: 0,
                        head_hash: head,
                        deleted: false,
                    });
                }
            }
        }
        if any_change {
            changed.push((newest, s, states, rewritten));
        }
    }
    // Sources that vanished: their messages stay, marked as such in the fingerprints.
    for f in manifest.files.iter_mut() {
        if !on_disk.contains(&f.path) && !f.deleted {
            f.deleted = true;
        }
    }
    changed.sort_by_key(|c| std::cmp::Reverse(c.0));

    let mut w = Writer {
        dir,
        manifest,
        snapshot,
        lexical,
        lex_writer,
        live,
        live_by_source,
        stored,
        fresh: HashMap::new(),
        pending: Vec::new(),
        pending_files: Vec::new(),
        pending_dead: Vec::new(),
        summary,
    };
    let total = changed.len();
    let mut indexed = 0;
    for (done, (_, files, states, rewritten)) in changed.into_iter().enumerate() {
        let session = transcript::load_session(files);
        w.summary.files_read += session.files.len();
        w.summary.bytes_read += session.files.iter().map(|f| f.consumed).sum::<u64>();
        w.summary.sessions_updated += 1;
        let mut states = states;
        for st in states.iter_mut() {
            if let Some(f) = session
                .files
                .iter()
                .find(|f| f.path.display().to_string() == st.path)
            {
                st.consumed = f.consumed;
            }
        }
        indexed += w.add_session(&session, &states, rewritten);
        w.pending_files.extend(states);
        if w.pending.len() >= opts.publish_every {
            w.publish(embedder)?;
        }
        progress(Progress {
            sessions_done: done + 1,
            sessions_total: total,
            messages_indexed: indexed,
        });
    }
    let files_changed = w
        .manifest
        .files
        .iter()
        .any(|f| f.deleted && !w.snapshot.manifest.files.contains(f));
    if !w.pending.is_empty()
        || !w.pending_files.is_empty()
        || !w.pending_dead.is_empty()
        || files_changed
    {
        w.publish(embedder)?;
    }
    if w.manifest.segments.len() > MAX_SEGMENTS {
        w.merge()?;
    }
    w.summary.seconds = started.elapsed().as_secs_f64();
    Ok(w.summary)
}

impl Writer<'_> {
    /// Queues the new and changed messages of a re-read session; returns how many.
    fn add_session(
        &mut self,
        s: &transcript::Session,
        states: &[FileState],
        rewritten: bool,
    ) -> usize {
        let mut seen = HashSet::new();
        let mut count = 0;
        let streams = std::iter::once((None, &s.messages)).chain(
            s.subagents
                .iter()
                .map(|a| (Some(a.agent_id.clone()), &a.messages)),
        );
        for (agent, messages) in streams {
            let source = match &agent {
                None => s.files.first().map(|f| f.path.display().to_string()),
                Some(id) => s
                    .files
                    .iter()
                    .map(|f| f.path.display().to_string())
                    .find(|p| p.contains(&format!("agent-{id}")))
                    .or_else(|| s.files.first().map(|f| f.path.display().to_string())),
            }
            .unwrap_or_default();
            let mut previous_text = String::new();
            for (seq, m) in messages.iter().enumerate() {
                let (content, kind, mut chunks) = render(m);
                let own_text = chunks
                    .iter()
                    .find(|(k, _)| *k == ChunkKind::Text)
                    .map(|(_, t)| t.clone());
                if *NEIGHBOUR_CHARS > 0 && !previous_text.is_empty() {
                    for (k, t) in chunks.iter_mut() {
                        if *k == ChunkKind::Text {
                            *t = format!("{previous_text}\n{t}");
                        }
                    }
                }
                if let Some(t) = own_text {
                    previous_text = tail_chars(&t, *NEIGHBOUR_CHARS);
                }
                let timestamp_ms = m.timestamp.map(|t| t.timestamp_millis());
                let role = match m.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                };
                let content_hash = hash64(&[
                    content.as_bytes(),
                    &m.window.to_le_bytes(),
                    &(seq as u32).to_le_bytes(),
                    &[m.is_compact_summary as u8],
                    &timestamp_ms.unwrap_or(0).to_le_bytes(),
                    m.git_branch.as_deref().unwrap_or("").as_bytes(),
                    s.project.as_bytes(),
                ]);
                let key = (s.session_id.clone(), agent.clone(), m.uuid.clone());
                seen.insert(key.clone());
                let old = self.live.get(&key).copied();
                if old.is_some_and(|(_, h)| h == content_hash) {
                    continue;
                }
                if let Some((gid, _)) = old {
                    self.pending_dead.push(gid);
                }
                let gid = self.manifest.next_gid;
                self.manifest.next_gid += 1;
                self.live.insert(key, (gid, content_hash));
                let msg = StoredMessage {
                    gid,
                    uuid: m.uuid.clone(),
                    session_id: s.session_id.clone(),
                    agent_id: agent.clone(),
                    project: s.project.clone(),
                    cwd: m.cwd.clone(),
                    git_branch: m.git_branch.clone(),
                    role: role.to_string(),
                    model: m.model.clone(),
                    timestamp_ms,
                    window: m.window,
                    is_compact_summary: m.is_compact_summary,
                    kind: kind.to_string(),
                    seq: seq as u32,
                    content,
                    content_hash,
                    source: source.clone(),
                };
                self.pending.push(Pending { msg, chunks });
                count += 1;
            }
        }
        if rewritten {
            // A rewritten file: messages it no longer has are gone for real.
            for st in states {
                for (gid, key) in self
                    .live_by_source
                    .get(&st.path)
                    .cloned()
                    .unwrap_or_default()
                {
                    if !seen.contains(&key) && self.live.get(&key).is_some_and(|(g, _)| *g == gid) {
                        self.live.remove(&key);
                        self.pending_dead.push(gid);
                        self.summary.messages_removed += 1;
                    }
                }
            }
        }
        count
    }

    /// Vectors already computed for a text hash (stored in a segment or embedded in this update).
    fn known(&self, hash: u64) -> Option<Vec<crate::embed::Vector>> {
        if let Some(v) = self.fresh.get(&hash) {
            return Some(v.clone());
        }
        let (si, rows) = self.stored.get(&hash)?;
        let seg = &self.snapshot.all_segments()[*si];
        Some(
            rows.iter()
                .filter_map(|&r| seg.row(r).try_into().ok())
                .collect(),
        )
    }

    /// Embeds what is pending, writes a segment, updates the lexical index and publishes a new manifest.
    fn publish(&mut self, embedder: &dyn ChunkEmbedder) -> Result<(), IndexError> {
        let pending = std::mem::take(&mut self.pending);
        // Hash every chunk source; embed each distinct unknown one once.
        let mut hashes = Vec::new();
        let mut to_embed: Vec<(u64, ChunkKind, &str)> = Vec::new();
        let mut queued = HashSet::new();
        for p in &pending {
            for (kind, text) in &p.chunks {
                let h = hash64(&[text.as_bytes(), &[*kind as u8]]);
                hashes.push(h);
                let known = self.fresh.contains_key(&h) || self.stored.contains_key(&h);
                if !known && queued.insert(h) {
                    to_embed.push((h, *kind, text.as_str()));
                }
            }
        }
        for kind in [
            ChunkKind::Text,
            ChunkKind::Thinking,
            ChunkKind::ToolUse,
            ChunkKind::ToolResult,
        ] {
            let group: Vec<&(u64, ChunkKind, &str)> =
                to_embed.iter().filter(|(_, k, _)| *k == kind).collect();
            if group.is_empty() {
                continue;
            }
            let texts: Vec<&str> = group.iter().map(|(_, _, t)| *t).collect();
            let vectors = embedder.embed_chunked(&texts, chunk_cap(kind))?;
            for ((h, _, _), v) in group.into_iter().zip(vectors) {
                self.summary.chunks_embedded += v.len();
                self.fresh.insert(*h, v);
            }
        }
        let mut meta = SegmentMeta::default();
        let mut matrix: Vec<f32> = Vec::new();
        let mut hi = 0;
        for (mi, p) in pending.iter().enumerate() {
            for (kind, _) in &p.chunks {
                let h = hashes[hi];
                hi += 1;
                let rows = self.known(h).unwrap_or_default();
                // The first use of a freshly embedded text was counted as embedded; every other use is a reuse.
                if !queued.remove(&h) {
                    self.summary.chunks_reused += rows.len();
                }
                for row in rows {
                    meta.chunks.push(ChunkRecord {
                        message: mi as u32,
                        kind: *kind,
                        row: (matrix.len() / DIM) as u32,
                        text_hash: h,
                    });
                    matrix.extend_from_slice(&row);
                }
            }
            meta.messages.push(p.msg.clone());
        }
        self.summary.messages_added += pending.len();
        let id = self.manifest.next_segment;
        if !pending.is_empty() {
            segment::write(self.dir, id, &meta, &matrix)?;
            // Reuse from now on reads the new segment; the vectors need not stay in memory.
            let opened = segment::OpenSegment::open(self.dir, id)?;
            let si = self.snapshot.all_segments().len();
            for c in &opened.meta.chunks {
                let e = self.stored.entry(c.text_hash).or_insert((si, Vec::new()));
                if e.0 == si {
                    e.1.push(c.row);
                }
            }
            self.snapshot.push_segment(opened);
            self.fresh.clear();
            self.manifest.next_segment += 1;
            self.manifest.segments.push(SegmentInfo {
                id,
                messages: meta.messages.len() as u32,
                chunks: meta.chunks.len() as u32,
            });
        }
        let dead = std::mem::take(&mut self.pending_dead);
        for gid in &dead {
            self.lexical.delete(&self.lex_writer, *gid);
        }
        for p in &pending {
            self.lexical
                .add(&self.lex_writer, p.msg.gid, &p.msg.content)?;
            self.live_by_source
                .entry(p.msg.source.clone())
                .or_default()
                .push((p.msg.gid, p.msg.key()));
        }
        self.manifest.dead.extend(dead);
        for st in std::mem::take(&mut self.pending_files) {
            match self.manifest.files.iter_mut().find(|f| f.path == st.path) {
                Some(f) => *f = st,
                None => self.manifest.files.push(st),
            }
        }
        self.manifest.generation += 1;
        self.manifest.updated_at_ms = now_ms();
        // Lexical first (its payload names the new generation), then the manifest: a crash in between leaves
        // a lexical index that does not match the manifest, which the next writer rebuilds.
        self.lexical
            .commit(&mut self.lex_writer, self.manifest.generation)?;
        publish_manifest(self.dir, &self.manifest)?;
        self.summary.publishes += 1;
        Ok(())
    }

    /// Rewrites all live messages into one segment (vectors copied, nothing re-embedded), publishes, then
    /// deletes the old segment files. Readers holding the old manifest keep their mapped files.
    fn merge(&mut self) -> Result<(), IndexError> {
        let snap = Snapshot::open_with_limit(self.dir, u64::MAX)?;
        let mut meta = SegmentMeta::default();
        let mut matrix = Vec::new();
        let mut chunks_of: HashMap<u32, Vec<&super::snapshot::LiveChunk>> = HashMap::new();
        for c in &snap.chunks {
            chunks_of.entry(c.message).or_default().push(c);
        }
        for (i, m) in snap.messages.iter().enumerate() {
            let mi = meta.messages.len() as u32;
            for c in chunks_of.get(&(i as u32)).into_iter().flatten() {
                meta.chunks.push(ChunkRecord {
                    message: mi,
                    kind: c.kind,
                    row: (matrix.len() / DIM) as u32,
                    text_hash: c.text_hash,
                });
                matrix.extend_from_slice(snap.vector(c));
            }
            meta.messages.push(m.clone());
        }
        let id = self.manifest.next_segment;
        segment::write(self.dir, id, &meta, &matrix)?;
        let old: Vec<u64> = self.manifest.segments.iter().map(|s| s.id).collect();
        self.manifest.next_segment += 1;
        self.manifest.segments = vec![SegmentInfo {
            id,
            messages: meta.messages.len() as u32,
            chunks: meta.chunks.len() as u32,
        }];
        self.manifest.dead.clear();
        self.manifest.generation += 1;
        self.lexical
            .commit(&mut self.lex_writer, self.manifest.generation)?;
        publish_manifest(self.dir, &self.manifest)?;
        for o in old {
            let (a, b) = segment::paths(self.dir, o);
            let _ = std::fs::remove_file(a);
            let _ = std::fs::remove_file(b);
        }
        Ok(())
    }
}
