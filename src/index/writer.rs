//! The writer's working state between publishes: turns re-read sessions into pending messages, embeds what is
//! new (each distinct text once, reusing stored vectors found through the segments' hash files), writes a
//! segment, updates the lexical index and publishes a manifest.

use super::archive::{ArchiveWriter, ArchivedFile, FileRole};
use super::format::{self, sync_dir};
use super::lexical::Lexical;
use super::records::{ChunkKind, FileState, Manifest, Resume, SegmentInfo, StoredMessage};
use super::render::{Calls, NEIGHBOUR_SEP, Neighbour, render, tail_chars};
use super::resume::{LastMessage, StreamEnd, resume_of};
use super::segment::{SegmentBuilder, TodoChunk, Verify, write_todo};
use super::snapshot::{MANIFEST, MANIFEST_MAGIC};
use super::vectors::{VectorStores, chunk_hash, vectors_for};
use super::{ChunkEmbedder, IndexError, UpdateSummary};
use crate::transcript::{Message, Session, SessionFiles, SubagentLayout};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::Path;

/// Identity of a message: (session id, agent id, uuid), hashed (see [`super::records::message_key`]).
pub(super) type MessageKey = u128;

/// What a full update knows of every live message: to tell changed messages from unchanged ones, and to drop
/// the messages a rewritten file no longer has.
#[derive(Default)]
pub(super) struct Live {
    pub by_key: HashMap<MessageKey, (u64, u64)>,
    pub by_source: HashMap<String, Vec<(u64, MessageKey)>>,
}

/// A new or changed message waiting to be published, with the texts to embed.
struct Pending {
    msg: StoredMessage,
    chunks: Vec<(ChunkKind, String)>,
}

/// The chunk kind to embed a stored message's text as, from what it mostly is (when only its stored text is left
/// to embed from).
pub(super) fn stored_kind(kind: &str) -> ChunkKind {
    match kind {
        "thinking" => ChunkKind::Thinking,
        "tool_use" => ChunkKind::ToolUse,
        "tool_result" => ChunkKind::ToolResult,
        _ => ChunkKind::Text,
    }
}

/// Stable 64-bit hash (std's SipHash with fixed keys) of byte strings.
pub(super) fn hash64(parts: &[&[u8]]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for p in parts {
        p.hash(&mut h);
    }
    h.finish()
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Writes the manifest under a temporary name, fsyncs it, renames it into place and fsyncs the directory.
pub(super) fn publish_manifest(dir: &Path, m: &Manifest) -> std::io::Result<()> {
    let tmp = dir.join(format!("{MANIFEST}.tmp"));
    format::write_framed(&tmp, MANIFEST_MAGIC, &format::encode(m))?;
    fs_err::rename(&tmp, dir.join(MANIFEST))?;
    sync_dir(dir)
}

/// The writer's state.
pub(super) struct Writer<'a> {
    pub dir: &'a Path,
    pub manifest: Manifest,
    pub lexical: Lexical,
    pub lex_writer: super::lexical::LexWriter,
    /// Set on the full path only; the append path never loads the whole index.
    pub live: Option<Live>,
    /// Published segments' hash and vector files, for reusing vectors.
    stores: VectorStores,
    /// Publishes of at least this many messages are keyword-only, embedded by the second pass (`None`: never,
    /// unless there is no model).
    pub defer_from: Option<usize>,
    /// How text chunks take in the message before them (recorded in the manifest's model id).
    pub neighbour: Neighbour,
    pending: Vec<Pending>,
    pending_files: Vec<FileState>,
    pending_dead: Vec<u64>,
    /// The archive of the bytes read (`None`: turned off, or it could not be opened — logged).
    archive: Option<ArchiveWriter>,
    /// What the messages read say of files, appended to the file map before each publish.
    map: super::file_map::MapWriter,
    pub summary: UpdateSummary,
}

impl<'a> Writer<'a> {
    pub fn new(
        dir: &'a Path,
        manifest: Manifest,
        lexical: Lexical,
        lex_writer: super::lexical::LexWriter,
        live: Option<Live>,
        verify: Verify,
        summary: UpdateSummary,
    ) -> Self {
        Self {
            dir,
            manifest,
            lexical,
            lex_writer,
            live,
            stores: VectorStores::new(verify),
            defer_from: None,
            neighbour: Neighbour::default(),
            pending: Vec::new(),
            pending_files: Vec::new(),
            pending_dead: Vec::new(),
            archive: None,
            map: Default::default(),
            summary,
        }
    }

    /// Copies what this writer reads into the archive from now on, as `copy` says (the settings). An archive
    /// that cannot be opened is logged and skipped: the next writer fills the gap.
    pub fn keeping_archive(mut self, copy: super::archive::ArchiveCopy) -> Self {
        use super::archive::ArchiveCopy;
        self.archive = (copy != ArchiveCopy::Off)
            .then(|| {
                ArchiveWriter::open(self.dir)
                    .inspect_err(|e| tracing::warn!("archive not kept this run: {e}"))
                    .ok()
            })
            .flatten()
            .map(|a| a.redacting(copy == ArchiveCopy::Redacted));
        self
    }

    /// Copies the bytes just read of a session's files (and its persisted tool outputs) into the archive. A
    /// failure is logged and loses nothing: the archive then lags behind the index, and the next read of the
    /// file fills the gap from the start.
    fn archive_session(&mut self, files: &SessionFiles, s: &Session) {
        let ranges = s
            .files
            .iter()
            .map(|st| (st.path.as_path(), st.start, st.consumed));
        self.archive_ranges(files, ranges);
    }

    /// Archives what the index consumed of files the archive lacks (an index made before the archive existed,
    /// or while it was off): each file from where its archived copy ends to where the index stopped reading.
    /// Costs a lookup per file when there is nothing to do; commits the archive on its own (the manifest
    /// already counts these bytes).
    pub fn backfill_archive(&mut self, sessions: &[SessionFiles]) {
        let Some(a) = &self.archive else { return };
        let consumed: HashMap<&str, u64> = self
            .manifest
            .files
            .iter()
            .filter(|f| !f.deleted)
            .map(|f| (f.path.as_str(), f.consumed))
            .collect();
        let lagging: Vec<(&SessionFiles, Vec<(std::path::PathBuf, u64)>)> = sessions
            .iter()
            .filter_map(|files| {
                let paths: Vec<(std::path::PathBuf, u64)> = files
                    .all_files()
                    .filter_map(|p| {
                        let key = p.display().to_string();
                        let c = *consumed.get(key.as_str())?;
                        (c > a.archived_len(&key)).then(|| (p.to_path_buf(), c))
                    })
                    .collect();
                (!paths.is_empty()).then_some((files, paths))
            })
            .collect();
        if lagging.is_empty() {
            return;
        }
        for (files, paths) in lagging {
            let ranges = paths.iter().map(|(p, c)| (p.as_path(), 0, *c));
            self.archive_ranges(files, ranges);
        }
        self.commit_archive();
    }

    /// Makes what was archived durable; a failure is logged (the next read of the files fills the gap).
    fn commit_archive(&mut self) {
        if let Some(a) = &mut self.archive
            && let Err(e) = a.commit()
        {
            tracing::warn!("archive: cannot commit: {e}");
        }
    }

    /// Archives the byte ranges `(path, start, end)` just read of a session's files, and its persisted tool
    /// outputs not archived yet.
    fn archive_ranges<'p>(
        &mut self,
        files: &SessionFiles,
        ranges: impl Iterator<Item = (&'p Path, u64, u64)>,
    ) {
        let Some(a) = &mut self.archive else {
            return;
        };
        let project_dir = files.project_dir.display().to_string();
        let role_of = |path: &Path| -> FileRole {
            match files.subagents.iter().find(|f| f.path == path) {
                Some(f) => FileRole::Subagent {
                    agent_id: f.agent_id.clone(),
                    agent_type: f.agent_type.clone(),
                    layout: f.layout,
                },
                None => FileRole::Main,
            }
        };
        let mut todo: Vec<(ArchivedFile, u64, u64)> = Vec::new();
        for (path, start, end) in ranges {
            let key = path.display().to_string();
            let from = if start > a.archived_len(&key) {
                0
            } else {
                start
            };
            // An empty transcript is archived too: it still names a session.
            if end > from || (end == 0 && !a.has(&key)) {
                todo.push((
                    ArchivedFile {
                        path: key,
                        session_id: files.session_id.clone(),
                        project_dir: project_dir.clone(),
                        role: role_of(path),
                    },
                    from,
                    end,
                ));
            }
        }
        // Persisted tool outputs are written once; archived whole when first seen or changed in size.
        let results = files
            .project_dir
            .join(&files.session_id)
            .join("tool-results");
        if let Ok(rd) = fs_err::read_dir(&results) {
            for e in rd.flatten() {
                let path = e.path().display().to_string();
                let Ok(m) = e.metadata() else { continue };
                if m.is_file() && (m.len() != a.archived_len(&path) || !a.has(&path)) {
                    todo.push((
                        ArchivedFile {
                            path,
                            session_id: files.session_id.clone(),
                            project_dir: project_dir.clone(),
                            role: FileRole::ToolResult,
                        },
                        0,
                        m.len(),
                    ));
                }
            }
        }
        for (file, from, to) in todo {
            let read = || -> std::io::Result<Vec<u8>> {
                use std::io::{Read, Seek};
                let mut f = fs_err::File::open(&file.path).map(fs_err::File::into_file)?;
                f.seek(std::io::SeekFrom::Start(from))?;
                let mut buf = Vec::with_capacity((to - from) as usize);
                f.take(to - from).read_to_end(&mut buf)?;
                Ok(buf)
            };
            let done = read().and_then(|bytes| a.record(&file, from, &bytes));
            if let Err(e) = done {
                tracing::warn!("archive: {}: {e}", file.path);
            }
        }
    }

    /// Queues a stored message to be embedded again from its stored text (its transcript is gone, the model
    /// changed): one chunk source of the kind it mostly is.
    pub fn requeue(&mut self, msg: StoredMessage) {
        let text = super::shown::keyword_text(&msg.content).to_string();
        let chunks = vec![(stored_kind(&msg.kind), text)];
        self.pending.push(Pending { msg, chunks });
    }

    /// Removes messages (by gid) at the next publish: from the lexical index, and from their segments at the
    /// next merge of those segments.
    pub fn kill(&mut self, gids: impl IntoIterator<Item = u64>) {
        self.pending_dead.extend(gids);
    }

    /// Messages queued since the last publish.
    pub fn pending_messages(&self) -> usize {
        self.pending.len()
    }

    /// Whether anything awaits publishing.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty() || !self.pending_files.is_empty() || !self.pending_dead.is_empty()
    }

    /// Queues the new and changed messages of a (re-)read session and the fingerprints of the files read, each
    /// with where a later read resumes. `resumes` holds the resume state of files read from a resume point;
    /// `states` the fingerprints of the files read (consumed and resume are filled in here). Returns how many
    /// messages were queued.
    pub fn add_session(
        &mut self,
        files: &SessionFiles,
        s: &Session,
        resumes: &HashMap<String, Resume>,
        mut states: Vec<FileState>,
        rewritten: bool,
    ) -> usize {
        let main_path = files.main.as_ref().map(|p| p.display().to_string());
        let mut seen = HashSet::new();
        let mut count = 0;
        let mut ends: HashMap<String, StreamEnd> = HashMap::new();
        let mut inline = false;
        let streams = std::iter::once((None, &s.messages, main_path.clone())).chain(
            s.subagents.iter().map(|a| {
                let path = match a.layout {
                    SubagentLayout::Inline => {
                        inline = true;
                        main_path.clone()
                    }
                    _ => files
                        .subagents
                        .iter()
                        .find(|f| f.agent_id == a.agent_id)
                        .map(|f| f.path.display().to_string()),
                };
                (Some(a.agent_id.clone()), &a.messages, path)
            }),
        );
        let streams: Vec<_> = streams.collect();
        if main_path.as_ref().is_some_and(|p| !resumes.contains_key(p))
            && let Some(t) = super::file_map::title_record(s)
        {
            // Read whole: the title is the session's own, not an appended slice's.
            self.map.add(t);
        }
        for (agent, messages, path) in streams {
            let source = path.clone().unwrap_or_default();
            let start = resumes.get(&source);
            let end = self.add_stream(s, agent, messages, &source, start, &mut seen, &mut count);
            if path.is_some() {
                ends.insert(source, end);
            }
        }
        if rewritten && let Some(live) = &mut self.live {
            // A rewritten file: messages it no longer has are gone for real.
            for st in &states {
                for (gid, key) in live.by_source.get(&st.path).cloned().unwrap_or_default() {
                    if !seen.contains(&key) && live.by_key.get(&key).is_some_and(|(g, _)| *g == gid)
                    {
                        live.by_key.remove(&key);
                        self.pending_dead.push(gid);
                        self.summary.messages_removed += 1;
                    }
                }
            }
        }
        for st in states.iter_mut() {
            let Some(status) = s
                .files
                .iter()
                .find(|f| f.path.display().to_string() == st.path)
            else {
                continue;
            };
            st.consumed = status.consumed;
            self.summary.files_read += 1;
            self.summary.bytes_read += status.consumed.saturating_sub(status.start);
            let is_main = main_path.as_deref() == Some(st.path.as_str());
            st.resume = if is_main && inline {
                None
            } else {
                Some(resume_of(
                    s,
                    is_main,
                    status.consumed,
                    ends.remove(&st.path),
                    resumes.get(&st.path),
                ))
            };
        }
        self.pending_files.extend(states);
        self.summary.sessions_updated += 1;
        self.archive_session(files, s);
        count
    }

    /// Queues one conversation's messages; returns where it ends.
    #[allow(clippy::too_many_arguments)]
    fn add_stream(
        &mut self,
        s: &Session,
        agent: Option<String>,
        messages: &[Message],
        source: &str,
        start: Option<&Resume>,
        seen: &mut HashSet<MessageKey>,
        count: &mut usize,
    ) -> StreamEnd {
        let first_seq = start.map_or(0, |r| r.seq);
        let mut for_map: Vec<(u32, &Message)> = Vec::new();
        let mut previous_text = start.map(|r| r.prev_text.clone()).unwrap_or_default();
        let mut last = None;
        let mut calls = Calls::default();
        for (i, m) in messages.iter().enumerate() {
            let seq = first_seq + i as u32;
            let prev_before = previous_text.clone();
            let behind = calls.behind(m);
            let behind = if self.neighbour.call_weight > 0.0 {
                behind.as_slice()
            } else {
                &[]
            };
            let (content, kind, mut chunks) = render(m, behind, self.neighbour.call_words);
            let own_text = chunks
                .iter()
                .find(|(k, _)| *k == ChunkKind::Text)
                .map(|(_, t)| t.clone());
            // A long message takes no neighbour (`Neighbour::below`); `usize::MAX` counts nothing.
            let Neighbour { chars, below, .. } = self.neighbour;
            let short = below == usize::MAX
                || own_text
                    .as_deref()
                    .is_none_or(|t| t.chars().take(below).count() < below);
            if chars > 0 && !previous_text.is_empty() && short {
                for (k, t) in chunks.iter_mut() {
                    if *k == ChunkKind::Text {
                        *t = format!("{previous_text}{NEIGHBOUR_SEP}{t}");
                    }
                }
            }
            if let Some(t) = own_text {
                previous_text = tail_chars(&t, chars);
            }
            let timestamp_ms = m.timestamp.map(|t| t.timestamp_millis());
            let content_hash = hash64(&[
                content.as_bytes(),
                &m.window.to_le_bytes(),
                &seq.to_le_bytes(),
                &[m.is_compact_summary as u8],
                &timestamp_ms.unwrap_or(0).to_le_bytes(),
                m.git_branch.as_deref().unwrap_or("").as_bytes(),
                s.project.as_bytes(),
            ]);
            let key = super::records::message_key(&s.session_id, agent.as_deref(), &m.uuid);
            // A uuid written twice in one read (Claude Code does, on some resumes) is one message: the first.
            if !seen.insert(key) {
                continue;
            }
            // A reply read before its text was written is held under its first entry's uuid, which its text
            // has since replaced as its name (`Message::uuid`): the same message, grown.
            let first_key = (m.identity() != m.uuid).then(|| {
                super::records::message_key(&s.session_id, agent.as_deref(), m.identity())
            });
            // Held under another name, it is written again under its own (same text, new name).
            let old = match &mut self.live {
                Some(live) => live
                    .by_key
                    .get(&key)
                    .map(|&(gid, hash)| (gid, hash, false))
                    .or_else(|| {
                        let (gid, hash) = live.by_key.remove(&first_key?)?;
                        Some((gid, hash, true))
                    }),
                None => start
                    .and_then(|r| r.last.as_ref())
                    .filter(|(uuid, _, _)| i == 0 && (*uuid == m.uuid || uuid == m.identity()))
                    .map(|(uuid, gid, hash)| (*gid, *hash, *uuid != m.uuid)),
            };
            let gid = match old {
                Some((gid, h, false)) if h == content_hash => gid,
                old => {
                    if let Some((gid, _, _)) = old {
                        self.pending_dead.push(gid);
                    }
                    let gid = self.manifest.next_gid;
                    self.manifest.next_gid += 1;
                    if let Some(live) = &mut self.live {
                        live.by_key.insert(key, (gid, content_hash));
                    }
                    let msg = StoredMessage {
                        gid,
                        uuid: m.uuid.clone(),
                        session_id: s.session_id.clone(),
                        agent_id: agent.clone(),
                        project: s.project.clone(),
                        cwd: m.cwd.clone(),
                        git_branch: m.git_branch.clone(),
                        role: m.role.as_str().to_string(),
                        model: m.model.clone(),
                        timestamp_ms,
                        window: m.window,
                        is_compact_summary: m.is_compact_summary,
                        kind: kind.to_string(),
                        seq,
                        content,
                        content_hash,
                        source: source.to_string(),
                    };
                    self.pending.push(Pending { msg, chunks });
                    for_map.push((seq, m));
                    *count += 1;
                    gid
                }
            };
            last = Some(LastMessage {
                offset: m.offset,
                role: m.role,
                window: m.window,
                seq,
                uuid: m.uuid.clone(),
                gid,
                hash: content_hash,
                prev_text: prev_before,
            });
        }
        self.map.add_messages(s, agent.as_deref(), &for_map);
        StreamEnd {
            seq: first_seq + messages.len() as u32,
            prev_text: previous_text,
            last,
        }
    }

    /// Forgets the opened files of segments that are gone (merged).
    pub fn forget_segments(&mut self, ids: &[u64]) {
        self.stores.forget(ids);
    }

    /// Whether a publish of `messages` pending messages puts them in a keyword-only segment for the second pass
    /// instead of embedding them now: always without a model, and for big batches when words come first.
    fn defers(&self, embedder: Option<&dyn ChunkEmbedder>, messages: usize) -> bool {
        embedder.is_none() || self.defer_from.is_some_and(|n| messages >= n)
    }

    /// Embeds what is pending (or, see [`Writer::defers`], leaves it for the second pass), writes a segment,
    /// updates the lexical index and publishes a new manifest.
    pub fn publish(&mut self, embedder: Option<&dyn ChunkEmbedder>) -> Result<(), IndexError> {
        self.write_pending(embedder)?;
        self.commit()
    }

    /// [`Writer::publish`] without the commit: the segment is written and the lexical additions staged.
    pub fn write_pending(
        &mut self,
        embedder: Option<&dyn ChunkEmbedder>,
    ) -> Result<(), IndexError> {
        let pending = std::mem::take(&mut self.pending);
        let defer = self.defers(embedder, pending.len());
        let hashes: Vec<u64> = pending
            .iter()
            .filter(|_| !defer)
            .flat_map(|p| p.chunks.iter().map(|(kind, text)| chunk_hash(*kind, text)))
            .collect();
        let (reusable, mut queued) = match embedder.filter(|_| !defer) {
            Some(embedder) => {
                let chunks = pending
                    .iter()
                    .flat_map(|p| &p.chunks)
                    .zip(&hashes)
                    .map(|((kind, text), h)| (*h, *kind, text.as_str()));
                let (stores, manifest) = (&mut self.stores, &self.manifest);
                vectors_for(
                    self.dir,
                    manifest,
                    stores,
                    embedder,
                    self.neighbour,
                    chunks,
                    &mut self.summary,
                )?
            }
            None => Default::default(),
        };
        if defer {
            self.summary.messages_deferred += pending.len();
        }
        let mut todo = Vec::new();
        let mut builder = SegmentBuilder::default();
        let mut hi = 0;
        for p in &pending {
            let mi = builder.push_message(&p.msg);
            if defer {
                todo.extend(p.chunks.iter().map(|(kind, text)| TodoChunk {
                    message: mi,
                    kind: *kind,
                    text: text.clone(),
                }));
                continue;
            }
            for (kind, _) in &p.chunks {
                let h = hashes[hi];
                hi += 1;
                let rows = reusable.get(&h).map(Vec::as_slice).unwrap_or_default();
                // The first use of a freshly embedded text was counted as embedded; every other use is a reuse.
                if !queued.remove(&h) {
                    self.summary.chunks_reused += rows.len();
                }
                for row in rows {
                    builder.push_chunk(mi, *kind, h, row);
                }
            }
        }
        self.summary.messages_added += pending.len();
        tracing::debug!("publish: embedded {} chunk texts", queued.len());
        if !pending.is_empty() {
            let id = self.manifest.next_segment;
            let (messages, chunks) = (builder.messages() as u32, builder.chunks() as u32);
            if defer && !todo.is_empty() {
                write_todo(self.dir, id, &todo)?;
            }
            builder.write(self.dir, id)?;
            self.manifest.next_segment += 1;
            self.manifest.segments.push(SegmentInfo {
                id,
                messages,
                chunks,
            });
        }
        let dead = std::mem::take(&mut self.pending_dead);
        for gid in &dead {
            self.lexical.delete(&self.lex_writer, *gid);
        }
        for p in &pending {
            // What calls wrote is shown, not searched (`super::shown`).
            let words = super::shown::keyword_text(&p.msg.content);
            self.lexical.add(&self.lex_writer, p.msg.gid, words)?;
            if let Some(live) = &mut self.live {
                live.by_source
                    .entry(p.msg.source.clone())
                    .or_default()
                    .push((p.msg.gid, p.msg.key()));
            }
        }
        self.manifest.dead.extend(dead);
        let mut at: HashMap<String, usize> = self
            .manifest
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.clone(), i))
            .collect();
        for st in std::mem::take(&mut self.pending_files) {
            match at.get(&st.path) {
                Some(&i) => self.manifest.files[i] = st,
                None => {
                    at.insert(st.path.clone(), self.manifest.files.len());
                    self.manifest.files.push(st);
                }
            }
        }
        Ok(())
    }

    /// Commits the lexical index and publishes the manifest under the next generation.
    pub fn commit(&mut self) -> Result<(), IndexError> {
        self.manifest.generation += 1;
        self.manifest.updated_at_ms = now_ms();
        // Lexical first (its payload names the new generation), then the manifest: a crash in between leaves
        // a lexical index that does not match the manifest, which the next writer rebuilds.
        let t = std::time::Instant::now();
        self.lexical
            .commit(&mut self.lex_writer, self.manifest.generation)?;
        tracing::debug!("publish: lexical commit {:?}", t.elapsed());
        // The archive and the file map before the manifest that counts their bytes as consumed. A map that
        // cannot be written is rebuilt by the next update; the index goes on.
        self.commit_archive();
        if let Err(e) = self.map.flush(self.dir) {
            tracing::warn!("the file map was not written ({e}); it is rebuilt at the next update");
            super::file_map::mark_stale(self.dir);
        }
        publish_manifest(self.dir, &self.manifest)?;
        tracing::debug!("publish: lexical + manifest {:?}", t.elapsed());
        self.summary.publishes += 1;
        Ok(())
    }
}
