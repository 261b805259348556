//! The archive: a compressed copy of every transcript byte the index consumed (session files, subagent files,
//! persisted tool outputs), so a session Claude Code deleted stays readable and replayable.
//!
//! Layout under `<index>/archive/`: pack files `pack-<id>.gha`, each a sequence of frames, and `STATE`, the
//! committed view (framed and checksummed like every index file, replaced atomically). A frame is
//! `GHAF` · header length (u32) · payload length (u32) · crc32 of header and payload (u32) · header (bincode:
//! the file it belongs to, the byte offset it starts at, its length) · payload (zstd). `STATE` names, per pack,
//! the length that is committed, and per archived file its length, the crc32 of its bytes and the frames of its
//! current generation. One writer (the index writer, under the index lock) appends frames past the committed
//! length, fsyncs, then replaces `STATE`, before the manifest that says the bytes were consumed is published: a
//! crash leaves bytes past the committed length, which the next writer cuts off. Readers trust only `STATE`.

use super::format::{self, FormatError, sync_dir};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The archive's folder inside the index folder (left in place when a damaged index is set aside).
pub const ARCHIVE_DIR: &str = "archive";
const STATE: &str = "STATE";
const STATE_MAGIC: &[u8; 8] = b"GHOLAARC";
const FRAME_MAGIC: &[u8; 4] = b"GHAF";
/// Bytes before a frame's header: magic, header length, payload length, crc32.
const FRAME_PREFIX: usize = 16;
/// A pack is closed once it holds this many bytes; the next frame starts a new one.
const PACK_BYTES: u64 = 64 << 20;
/// zstd level: 3 is zstd's default, fast to write and about 8× smaller on transcripts (see the README).
const ZSTD_LEVEL: i32 = 3;

/// What an archived file was to Claude Code: enough to list its session without the original folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileRole {
    /// The session's own transcript.
    Main,
    /// A subagent's transcript.
    Subagent {
        agent_id: String,
        agent_type: Option<String>,
        layout: crate::transcript::SubagentLayout,
    },
    /// An output Claude Code persisted under `<session>/tool-results/`.
    ToolResult,
}

/// An archived file: its original path, its session and role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchivedFile {
    pub path: String,
    pub session_id: String,
    /// The `projects/<escaped-cwd>` folder it was in.
    pub project_dir: String,
    pub role: FileRole,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct FrameHeader {
    file: ArchivedFile,
    start: u64,
    len: u64,
}

/// Where a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct FrameAt {
    pack: u64,
    offset: u64,
}

/// One archived file in `STATE`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FileEntry {
    file: ArchivedFile,
    /// Bytes archived (of the current generation: a rewritten file starts a new one).
    len: u64,
    /// crc32 of those bytes, continued as bytes are added: tells a file that grew from one that was rewritten.
    crc: u32,
    frames: Vec<FrameAt>,
}

impl FileEntry {
    fn new(file: &ArchivedFile) -> Self {
        Self {
            file: file.clone(),
            len: 0,
            crc: 0,
            frames: Vec::new(),
        }
    }

    /// Forgets the current generation (the file starts again from offset 0).
    fn restart(&mut self) {
        (self.len, self.crc) = (0, 0);
        self.frames.clear();
    }

    /// Continues the file with `bytes`, stored in the frame at `at`.
    fn extend(&mut self, bytes: &[u8], at: FrameAt) {
        let mut h = crc32fast::Hasher::new_with_initial_len(self.crc, self.len);
        h.update(bytes);
        self.crc = h.finalize();
        self.len += bytes.len() as u64;
        self.frames.push(at);
    }
}

/// Pack files opened on first use, for reading frames by position.
struct Packs<'d> {
    dir: &'d Path,
    open: BTreeMap<u64, File>,
}

impl<'d> Packs<'d> {
    fn new(dir: &'d Path) -> Self {
        Self {
            dir,
            open: BTreeMap::new(),
        }
    }

    /// The whole frame at `at`, as stored.
    fn raw(&mut self, at: FrameAt) -> std::io::Result<Vec<u8>> {
        let f = match self.open.entry(at.pack) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => v.insert(
                fs_err::File::open(pack_path(self.dir, at.pack)).map(fs_err::File::into_file)?,
            ),
        };
        read_raw_frame(f, at.offset)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct PackState {
    id: u64,
    /// Committed bytes; anything after is a torn write.
    len: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct State {
    packs: Vec<PackState>,
    next_pack: u64,
    files: BTreeMap<String, FileEntry>,
}

fn pack_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("pack-{id:06}.gha"))
}

/// `STATE` as committed; `None` when there is no `STATE` file (a new archive, or one whose `STATE` was lost:
/// the caller rebuilds it from the packs with [`recover`], which is empty when there are no packs).
fn read_state(dir: &Path) -> Result<Option<State>, FormatError> {
    let path = dir.join(STATE);
    if !path.exists() {
        return Ok(None);
    }
    let payload = format::read_framed(&path, STATE_MAGIC, "archive state")?;
    format::decode(&path.display().to_string(), &payload).map(Some)
}

/// The ids of the pack files in `dir`, in order.
fn pack_ids(dir: &Path) -> Vec<u64> {
    let mut ids: Vec<u64> = fs_err::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let n = e.file_name().into_string().ok()?;
                    n.strip_prefix("pack-")?.strip_suffix(".gha")?.parse().ok()
                })
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// Creates a new, empty pack with the first id from `next` that no file has yet (never truncating one that
/// exists: a pack the state does not know of may hold the only copy of something), and moves `next` past it.
fn create_pack(dir: &Path, next: &mut u64) -> std::io::Result<(u64, File)> {
    loop {
        let id = *next;
        *next += 1;
        match fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(pack_path(dir, id))
            .map(fs_err::File::into_file)
        {
            Ok(f) => return Ok((id, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

fn write_state(dir: &Path, s: &State) -> std::io::Result<()> {
    let tmp = dir.join(format!("{STATE}.tmp"));
    format::write_framed(&tmp, STATE_MAGIC, &format::encode(s))?;
    fs_err::rename(&tmp, dir.join(STATE))?;
    sync_dir(dir)
}

/// What an index writer copies into the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveCopy {
    /// Nothing (the archive is off, or the writer reads no transcript).
    Off,
    /// The bytes as Claude Code wrote them.
    AsWritten,
    /// The bytes with their credentials overwritten (`crate::secrets::redact_bytes_in_place`).
    Redacted,
}

impl ArchiveCopy {
    /// The copy the options ask for.
    pub fn of(opts: &crate::index::UpdateOptions) -> Self {
        match (opts.keep_archive, opts.redact_stored) {
            (false, _) => ArchiveCopy::Off,
            (true, false) => ArchiveCopy::AsWritten,
            (true, true) => ArchiveCopy::Redacted,
        }
    }
}

/// Appends frames to the archive; used by the index writer, which holds the index lock.
pub struct ArchiveWriter {
    dir: PathBuf,
    state: State,
    /// The pack being appended to, positioned at its end.
    pack: Option<(u64, File)>,
    dirty: bool,
    /// Redact every byte recorded from now on (`redact_stored`), see [`ArchiveWriter::redacting`].
    redact_new: bool,
}

impl ArchiveWriter {
    /// Opens the archive of `index_dir` for appending; bytes past the committed length (a writer killed
    /// mid-append) are cut off. A damaged `STATE` is set aside (`STATE.bad`) and rebuilt from the frames of
    /// the packs, which name their file and offset (see `recover`).
    pub fn open(index_dir: &Path) -> std::io::Result<Self> {
        let dir = index_dir.join(ARCHIVE_DIR);
        fs_err::create_dir_all(&dir)?;
        // A rebuilt state is written at the next commit, even if nothing new is recorded.
        let mut rebuilt = false;
        let state = match read_state(&dir) {
            Ok(Some(s)) => s,
            Ok(None) => {
                let state = recover(&dir);
                if !state.packs.is_empty() {
                    tracing::warn!(
                        "archive state missing in {}; rebuilt from the packs' frames",
                        dir.display()
                    );
                    rebuilt = true;
                }
                state
            }
            Err(e) => {
                tracing::warn!(
                    "archive state unreadable ({e}); kept as STATE.bad, rebuilt from the packs' frames"
                );
                let _ = fs_err::rename(dir.join(STATE), dir.join("STATE.bad"));
                rebuilt = true;
                recover(&dir)
            }
        };
        Ok(Self {
            dir,
            state,
            pack: None,
            dirty: rebuilt,
            redact_new: false,
        })
    }

    /// Stores the bytes recorded from now on with their credentials overwritten (`redact_stored = true`; see
    /// `crate::secrets::redact_bytes_in_place`, which keeps every offset true). A file whose archived copy was
    /// scrubbed (`ghola secrets redact`) has what is added to it redacted whatever this says.
    pub fn redacting(mut self, on: bool) -> Self {
        self.redact_new = on;
        self
    }

    /// Whether `path` is archived (an empty file is too).
    pub fn has(&self, path: &str) -> bool {
        self.state.files.contains_key(path)
    }

    /// Bytes of `path` archived so far (its current generation).
    pub fn archived_len(&self, path: &str) -> u64 {
        self.state.files.get(path).map_or(0, |f| f.len)
    }

    /// Records that `file` holds `bytes` from offset `start`. What is already archived is not written again:
    /// `start` past the archived length is a gap (the archive was off), so the caller passes the file from 0;
    /// bytes from 0 that begin with what is archived (same length and crc32) add only their tail; other bytes
    /// from 0 start a new generation (the file was rewritten).
    ///
    /// A file whose archived copy is redacted (scrubbed by `ghola secrets redact`, or recorded with
    /// [`ArchiveWriter::redacting`]) is recognised by the crc of its redacted bytes, which keep their length:
    /// its tail is added redacted, and the original is never stored again as a "new generation".
    pub fn record(&mut self, file: &ArchivedFile, start: u64, bytes: &[u8]) -> std::io::Result<()> {
        let have = self.state.files.get(&file.path);
        let mut redact = self.redact_new;
        let (start, bytes, fresh) = match have {
            None if start == 0 => (0, bytes, true),
            None => return Ok(()),
            Some(e) if start == 0 => {
                let n = e.len.min(bytes.len() as u64) as usize;
                let same = e.len as usize <= bytes.len() && crc32fast::hash(&bytes[..n]) == e.crc;
                let same_redacted = !same && e.len as usize <= bytes.len() && {
                    let mut head = bytes[..n].to_vec();
                    crate::secrets::redact_bytes_in_place(&mut head, &mut Default::default()) > 0
                        && (crc32fast::hash(&head) == e.crc
                            || scrubbed_by_older_rules(e, &head, &mut Packs::new(&self.dir)))
                };
                if same || same_redacted {
                    redact |= same_redacted;
                    (e.len, &bytes[n..], false)
                } else {
                    (0, bytes, true)
                }
            }
            Some(e) if start <= e.len => {
                let skip = (e.len - start) as usize;
                if skip >= bytes.len() {
                    return Ok(());
                }
                (e.len, &bytes[skip..], false)
            }
            Some(_) => return Ok(()),
        };
        if bytes.is_empty() && !fresh {
            return Ok(());
        }
        let mut owned;
        let bytes = if redact {
            owned = bytes.to_vec();
            crate::secrets::redact_bytes_in_place(&mut owned, &mut Default::default());
            &owned[..]
        } else {
            bytes
        };
        let at = self.write_frame(file, start, bytes)?;
        let entry = self
            .state
            .files
            .entry(file.path.clone())
            .or_insert_with(|| FileEntry::new(file));
        if fresh {
            entry.restart();
        }
        entry.file = file.clone();
        entry.extend(bytes, at);
        self.dirty = true;
        Ok(())
    }

    fn write_frame(
        &mut self,
        file: &ArchivedFile,
        start: u64,
        bytes: &[u8],
    ) -> std::io::Result<FrameAt> {
        let frame = frame_bytes(file, start, bytes)?;
        let (id, offset) = self.pack_for_append()?;
        let (_, f) = self.pack.as_mut().expect("pack open");
        f.write_all(&frame)?;
        let last = self.state.packs.last_mut().expect("pack in state");
        last.len = offset + frame.len() as u64;
        Ok(FrameAt { pack: id, offset })
    }

    /// The pack to append to and the offset the next frame goes at: the last pack, cut to its committed
    /// length, unless it is full.
    fn pack_for_append(&mut self) -> std::io::Result<(u64, u64)> {
        if let (Some((id, _)), Some(last)) = (&self.pack, self.state.packs.last())
            && *id == last.id
            && last.len < PACK_BYTES
        {
            return Ok((last.id, last.len));
        }
        if self.pack.is_none()
            && let Some(last) = self.state.packs.last()
            && last.len < PACK_BYTES
        {
            // Appended to only when it ends where `STATE` says: bytes past the committed length (a writer killed
            // before its commit, or a `STATE` older than the pack) are left where they are, never cut off, and
            // the frames go to a new pack. They hold nothing `STATE` needs, but may hold what a later recovery
            // does.
            let path = pack_path(&self.dir, last.id);
            if let Ok(mut f) = OpenOptions::new().read(true).write(true).open(&path)
                && f.metadata()?.len() == last.len
            {
                f.seek(SeekFrom::Start(last.len))?;
                self.pack = Some((last.id, f));
                return Ok((last.id, last.len));
            }
        }
        if let Some((_, f)) = self.pack.take() {
            f.sync_all()?;
        }
        let (id, f) = create_pack(&self.dir, &mut self.state.next_pack)?;
        self.state.packs.push(PackState { id, len: 0 });
        self.pack = Some((id, f));
        Ok((id, 0))
    }

    /// Makes everything recorded durable: fsyncs the pack, then replaces `STATE`. Called before the index
    /// publishes the manifest that counts the bytes as consumed.
    pub fn commit(&mut self) -> std::io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        if let Some((_, f)) = &self.pack {
            f.sync_all()?;
        }
        write_state(&self.dir, &self.state)?;
        self.dirty = false;
        Ok(())
    }

    /// Removes every file of `sessions` from the archive for good: the packs are rewritten with only the
    /// frames still in use (copied as they are, not recompressed), `STATE` is switched to them, and the old
    /// packs are deleted. Also drops the frames of earlier generations. Returns the bytes reclaimed.
    pub fn forget_sessions(&mut self, sessions: &HashSet<String>) -> std::io::Result<u64> {
        self.commit()?;
        self.state
            .files
            .retain(|_, e| !sessions.contains(&e.file.session_id));
        self.rewrite(|_, _| Ok(None))
    }

    /// Overwrites the credentials in the archived copies of the files `chosen` accepts (see
    /// `crate::secrets::redact_bytes_in_place`: lengths and offsets are kept), for good: the packs are
    /// rewritten (a scrubbed file as one new frame, the others copied as they are), `STATE` is switched to
    /// them in one rename, and the old packs, which held the values, are deleted. Killed at any point, the
    /// archive is the old one or the new one. Adds what was overwritten to `tally`; returns the files changed.
    pub fn redact_files(
        &mut self,
        chosen: &dyn Fn(&ArchivedFile) -> bool,
        tally: &mut crate::secrets::Tally,
    ) -> std::io::Result<usize> {
        self.commit()?;
        let mut changed = 0;
        self.rewrite(|e, packs| {
            if !chosen(&e.file) {
                return Ok(None);
            }
            let mut bytes = file_bytes(e, packs)?;
            if crate::secrets::redact_bytes_in_place(&mut bytes, tally) == 0 {
                return Ok(None);
            }
            changed += 1;
            Ok(Some(bytes))
        })?;
        Ok(changed)
    }

    /// The credentials the archived copies of the files `chosen` accepts still hold, per rule (nothing is
    /// written): what [`ArchiveWriter::redact_files`] would overwrite.
    pub fn credentials_in(
        &self,
        chosen: &dyn Fn(&ArchivedFile) -> bool,
    ) -> std::io::Result<(crate::secrets::Tally, HashSet<String>)> {
        let mut tally = crate::secrets::Tally::default();
        let mut sessions = HashSet::new();
        let mut packs = Packs::new(&self.dir);
        for e in self.state.files.values().filter(|e| chosen(&e.file)) {
            let mut bytes = file_bytes(e, &mut packs)?;
            if crate::secrets::redact_bytes_in_place(&mut bytes, &mut tally) > 0 {
                sessions.insert(e.file.session_id.clone());
            }
        }
        Ok((tally, sessions))
    }

    /// Rewrites the packs with the current generation of every file: `replace` returns new bytes for a file
    /// (written as one frame from offset 0) or `None` to copy its frames as they are. Then `STATE` is switched
    /// to the new packs and every other pack is deleted (including any a writer left uncommitted: nothing the
    /// old packs held may stay). Returns the bytes reclaimed.
    fn rewrite(
        &mut self,
        mut replace: impl FnMut(&FileEntry, &mut Packs) -> std::io::Result<Option<Vec<u8>>>,
    ) -> std::io::Result<u64> {
        self.pack = None;
        let before: u64 = self.state.packs.iter().map(|p| p.len).sum();
        let old_packs: Vec<u64> = self.state.packs.iter().map(|p| p.id).collect();
        let mut packs = Packs::new(&self.dir);
        let mut next = State {
            packs: Vec::new(),
            next_pack: self.state.next_pack,
            files: BTreeMap::new(),
        };
        let mut out: Option<(u64, File, u64)> = None;
        let mut put = |raw: &[u8], next: &mut State| -> std::io::Result<FrameAt> {
            if out.as_ref().is_none_or(|(_, _, len)| *len >= PACK_BYTES) {
                if let Some((id, f, len)) = out.take() {
                    f.sync_all()?;
                    next.packs.push(PackState { id, len });
                }
                let (id, f) = create_pack(&self.dir, &mut next.next_pack)?;
                out = Some((id, f, 0));
            }
            let (id, f, len) = out.as_mut().expect("output pack");
            f.write_all(raw)?;
            let at = FrameAt {
                pack: *id,
                offset: *len,
            };
            *len += raw.len() as u64;
            Ok(at)
        };
        for (path, entry) in std::mem::take(&mut self.state.files) {
            let entry = match replace(&entry, &mut packs)? {
                Some(bytes) => {
                    let mut e = FileEntry::new(&entry.file);
                    let at = put(&frame_bytes(&entry.file, 0, &bytes)?, &mut next)?;
                    e.extend(&bytes, at);
                    e
                }
                None => {
                    let mut frames = Vec::with_capacity(entry.frames.len());
                    for at in &entry.frames {
                        frames.push(put(&packs.raw(*at)?, &mut next)?);
                    }
                    FileEntry { frames, ..entry }
                }
            };
            next.files.insert(path, entry);
        }
        if let Some((id, f, len)) = out.take() {
            f.sync_all()?;
            next.packs.push(PackState { id, len });
        }
        write_state(&self.dir, &next)?;
        self.state = next;
        let keep: HashSet<u64> = self.state.packs.iter().map(|p| p.id).collect();
        for id in pack_ids(&self.dir).into_iter().chain(old_packs) {
            if !keep.contains(&id) {
                let _ = fs_err::remove_file(pack_path(&self.dir, id));
            }
        }
        let after: u64 = self.state.packs.iter().map(|p| p.len).sum();
        Ok(before.saturating_sub(after))
    }
}

/// A frame as stored: prefix, header (the file, `start`, the length) and the zstd payload of `bytes`.
fn frame_bytes(file: &ArchivedFile, start: u64, bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let header = format::encode(&FrameHeader {
        file: file.clone(),
        start,
        len: bytes.len() as u64,
    });
    let payload = zstd::bulk::compress(bytes, ZSTD_LEVEL)?;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&header);
    crc.update(&payload);
    let mut frame = Vec::with_capacity(FRAME_PREFIX + header.len() + payload.len());
    frame.extend_from_slice(FRAME_MAGIC);
    frame.extend_from_slice(&(header.len() as u32).to_le_bytes());
    frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    frame.extend_from_slice(&crc.finalize().to_le_bytes());
    frame.extend_from_slice(&header);
    frame.extend_from_slice(&payload);
    Ok(frame)
}

/// Whether the archived copy `e` is `head` (a file's first bytes, redacted by today's rules) scrubbed by rules
/// that took less: the rules only ever take more (docs/secrets.md), so today's redaction of the archived copy then
/// comes out as `head`. Without this, a file scrubbed before a rule was widened would read as rewritten, and its
/// original — every value the scrub removed — would be stored again as a new generation. Read only when neither
/// crc matched; a copy that cannot be read counts as not the same.
fn scrubbed_by_older_rules(e: &FileEntry, head: &[u8], packs: &mut Packs) -> bool {
    match file_bytes(e, packs) {
        Ok(mut archived) => {
            archived.len() == head.len()
                && crate::secrets::redact_bytes_in_place(&mut archived, &mut Default::default()) > 0
                && archived == head
        }
        Err(err) => {
            tracing::warn!("reading the archived copy of {} failed: {err}", e.file.path);
            false
        }
    }
}

/// The current generation of an archived file, read back from its frames and checked (frame crcs, offsets,
/// length and the whole file's crc).
fn file_bytes(e: &FileEntry, packs: &mut Packs) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(e.len as usize);
    for at in &e.frames {
        let name = pack_path(packs.dir, at.pack).display().to_string();
        let raw = packs.raw(*at)?;
        let (h, bytes) = frames::open_frame(&name, &raw).map_err(std::io::Error::other)?;
        if h.start != out.len() as u64 {
            return Err(std::io::Error::other(format!("{name}: frame out of place")));
        }
        out.extend_from_slice(&bytes);
    }
    if out.len() as u64 != e.len || crc32fast::hash(&out) != e.crc {
        return Err(std::io::Error::other(format!(
            "archived copy of {} is damaged",
            e.file.path
        )));
    }
    Ok(out)
}

mod frames;
mod view;

use frames::{read_raw_frame, recover};
pub use view::{Archive, ArchiveStats, sessions_gone_from_disk, sources};

#[cfg(test)]
mod tests;
