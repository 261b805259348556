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
use std::io::{Read, Seek, SeekFrom, Write};
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
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(File::open(pack_path(self.dir, at.pack))?)
            }
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

/// Whether `dir` holds any pack file.
fn has_packs(dir: &Path) -> bool {
    !pack_ids(dir).is_empty()
}

/// The ids of the pack files in `dir`, in order.
fn pack_ids(dir: &Path) -> Vec<u64> {
    let mut ids: Vec<u64> = std::fs::read_dir(dir)
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
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(pack_path(dir, id))
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
    std::fs::rename(&tmp, dir.join(STATE))?;
    sync_dir(dir)
}

/// Whether the archive is kept: on unless `GHOLA_ARCHIVE=0` (or `off`/`false`) or `[archive] enabled = false`
/// in the settings file.
pub fn enabled() -> bool {
    match crate::config::non_empty_env("GHOLA_ARCHIVE") {
        Some(v) => !matches!(
            v.to_ascii_lowercase().as_str(),
            "0" | "off" | "false" | "no"
        ),
        None => crate::settings::load_or_default().archive_enabled,
    }
}

/// Appends frames to the archive; used by the index writer, which holds the index lock.
pub struct ArchiveWriter {
    dir: PathBuf,
    state: State,
    /// The pack being appended to, positioned at its end.
    pack: Option<(u64, File)>,
    dirty: bool,
}

impl ArchiveWriter {
    /// Opens the archive of `index_dir` for appending; bytes past the committed length (a writer killed
    /// mid-append) are cut off. A damaged `STATE` is set aside (`STATE.bad`) and rebuilt from the frames of
    /// the packs, which name their file and offset (see [`recover`]).
    pub fn open(index_dir: &Path) -> std::io::Result<Self> {
        let dir = index_dir.join(ARCHIVE_DIR);
        std::fs::create_dir_all(&dir)?;
        // A rebuilt state is written at the next commit, even if nothing new is recorded.
        let mut rebuilt = false;
        let state = match read_state(&dir) {
            Ok(Some(s)) => s,
            Ok(None) => {
                if has_packs(&dir) {
                    tracing::warn!(
                        "archive state missing in {}; rebuilt from the packs' frames",
                        dir.display()
                    );
                    rebuilt = true;
                }
                recover(&dir)
            }
            Err(e) => {
                tracing::warn!(
                    "archive state unreadable ({e}); kept as STATE.bad, rebuilt from the packs' frames"
                );
                let _ = std::fs::rename(dir.join(STATE), dir.join("STATE.bad"));
                rebuilt = true;
                recover(&dir)
            }
        };
        Ok(Self {
            dir,
            state,
            pack: None,
            dirty: rebuilt,
        })
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
    pub fn record(&mut self, file: &ArchivedFile, start: u64, bytes: &[u8]) -> std::io::Result<()> {
        let have = self.state.files.get(&file.path);
        let (start, bytes, fresh) = match have {
            None if start == 0 => (0, bytes, true),
            None => return Ok(()),
            Some(e) if start == 0 => {
                let n = e.len.min(bytes.len() as u64) as usize;
                if e.len as usize <= bytes.len() && crc32fast::hash(&bytes[..n]) == e.crc {
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
        self.pack = None;
        let before: u64 = self.state.packs.iter().map(|p| p.len).sum();
        self.state
            .files
            .retain(|_, e| !sessions.contains(&e.file.session_id));
        let old_packs: Vec<u64> = self.state.packs.iter().map(|p| p.id).collect();
        let mut packs = Packs::new(&self.dir);
        let mut next = State {
            packs: Vec::new(),
            next_pack: self.state.next_pack,
            files: BTreeMap::new(),
        };
        let mut out: Option<(u64, File, u64)> = None;
        for (path, entry) in std::mem::take(&mut self.state.files) {
            let mut frames = Vec::with_capacity(entry.frames.len());
            for at in &entry.frames {
                let raw = packs.raw(*at)?;
                if out.as_ref().is_none_or(|(_, _, len)| *len >= PACK_BYTES) {
                    if let Some((id, f, len)) = out.take() {
                        f.sync_all()?;
                        next.packs.push(PackState { id, len });
                    }
                    let (id, f) = create_pack(&self.dir, &mut next.next_pack)?;
                    out = Some((id, f, 0));
                }
                let (id, f, len) = out.as_mut().expect("output pack");
                f.write_all(&raw)?;
                frames.push(FrameAt {
                    pack: *id,
                    offset: *len,
                });
                *len += raw.len() as u64;
            }
            next.files.insert(path, FileEntry { frames, ..entry });
        }
        if let Some((id, f, len)) = out.take() {
            f.sync_all()?;
            next.packs.push(PackState { id, len });
        }
        write_state(&self.dir, &next)?;
        self.state = next;
        // Every pack the new state does not name goes, including any a writer left uncommitted: forgetting
        // promises that no pack keeps the forgotten bytes.
        let keep: HashSet<u64> = self.state.packs.iter().map(|p| p.id).collect();
        for id in pack_ids(&self.dir).into_iter().chain(old_packs) {
            if !keep.contains(&id) {
                let _ = std::fs::remove_file(pack_path(&self.dir, id));
            }
        }
        let after: u64 = self.state.packs.iter().map(|p| p.len).sum();
        Ok(before.saturating_sub(after))
    }
}

/// Rebuilds the state from the packs alone: every pack is read frame by frame, in order; each frame continues
/// its file (or starts it again from offset 0), as `record` would have. A damaged frame is stepped over: the
/// scan resumes at the next frame magic after it whose frame checks out, so damage costs only the frames it
/// touched. Used when `STATE` is damaged or missing, so a lost `STATE` loses nothing the packs hold.
fn recover(dir: &Path) -> State {
    let ids = pack_ids(dir);
    let mut state = State {
        next_pack: ids.last().map_or(0, |m| m + 1),
        ..State::default()
    };
    for id in ids {
        let Ok(mut f) = File::open(pack_path(dir, id)) else {
            continue;
        };
        let name = pack_path(dir, id).display().to_string();
        let size = f.metadata().map_or(0, |m| m.len());
        let mut offset = 0u64;
        // Just past the last good frame: what the recovered state counts as committed.
        let mut good_end = 0u64;
        while offset < size {
            let frame = read_raw_frame(&mut f, offset)
                .ok()
                .and_then(|raw| open_frame(&name, &raw).ok().map(|(h, b)| (raw.len(), h, b)));
            let Some((raw_len, h, bytes)) = frame else {
                match next_magic(&mut f, offset + 1, size) {
                    Some(at) => {
                        tracing::warn!("archive: damaged bytes in {name} at {offset}, skipped");
                        offset = at;
                        continue;
                    }
                    None => break,
                }
            };
            let e = state
                .files
                .entry(h.file.path.clone())
                .or_insert_with(|| FileEntry::new(&h.file));
            if h.start == 0 {
                e.restart();
            }
            if h.start == e.len {
                e.extend(&bytes, FrameAt { pack: id, offset });
            }
            offset += raw_len as u64;
            good_end = offset;
        }
        state.packs.push(PackState { id, len: good_end });
    }
    state.files.retain(|_, e| !e.frames.is_empty());
    state
}

/// The offset of the next frame magic in `f` at or after `from` (before `size`), for stepping over damage.
fn next_magic(f: &mut File, from: u64, size: u64) -> Option<u64> {
    let mut at = from;
    let mut buf = vec![0u8; 1 << 16];
    while at < size {
        f.seek(SeekFrom::Start(at)).ok()?;
        let want = ((size - at) as usize).min(buf.len());
        f.read_exact(&mut buf[..want]).ok()?;
        if let Some(i) = memchr::memmem::find(&buf[..want], FRAME_MAGIC) {
            return Some(at + i as u64);
        }
        if want < FRAME_MAGIC.len() {
            return None;
        }
        // Overlap by the magic's length less one, so a magic across two reads is found.
        at += (want - (FRAME_MAGIC.len() - 1)) as u64;
    }
    None
}

/// Reads the whole frame at `offset` (prefix, header and payload) as stored. Its two lengths are read from the
/// file before any checksum can vouch for them, so a frame claiming more bytes than the file still holds past
/// `offset` is refused before anything is allocated for it: damage costs at most the pack's size in memory.
fn read_raw_frame(f: &mut File, offset: u64) -> std::io::Result<Vec<u8>> {
    let bad = |what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("archive frame: {what}"),
        )
    };
    let size = f.metadata()?.len();
    f.seek(SeekFrom::Start(offset))?;
    let mut prefix = [0u8; FRAME_PREFIX];
    f.read_exact(&mut prefix)?;
    if &prefix[..4] != FRAME_MAGIC {
        return Err(bad("bad magic"));
    }
    let hl = u32::from_le_bytes(prefix[4..8].try_into().unwrap()) as u64;
    let pl = u32::from_le_bytes(prefix[8..12].try_into().unwrap()) as u64;
    let room = size.saturating_sub(offset + FRAME_PREFIX as u64);
    if hl + pl > room {
        return Err(bad("lengths past the end of the pack"));
    }
    let mut raw = prefix.to_vec();
    raw.resize(FRAME_PREFIX + (hl + pl) as usize, 0);
    f.read_exact(&mut raw[FRAME_PREFIX..])?;
    Ok(raw)
}

/// Checks a raw frame's crc and returns its header and decompressed bytes.
fn open_frame(name: &str, raw: &[u8]) -> Result<(FrameHeader, Vec<u8>), FormatError> {
    let damaged = || FormatError::Damaged(name.to_string());
    let hl = u32::from_le_bytes(raw[4..8].try_into().unwrap()) as usize;
    let crc = u32::from_le_bytes(raw[12..16].try_into().unwrap());
    if crc32fast::hash(&raw[FRAME_PREFIX..]) != crc {
        return Err(damaged());
    }
    let header: FrameHeader = format::decode(name, &raw[FRAME_PREFIX..FRAME_PREFIX + hl])?;
    let bytes = zstd::bulk::decompress(&raw[FRAME_PREFIX + hl..], header.len as usize)
        .map_err(|_| damaged())?;
    if bytes.len() as u64 != header.len {
        return Err(damaged());
    }
    Ok((header, bytes))
}

/// A read-only view of the committed archive.
pub struct Archive {
    dir: PathBuf,
    state: State,
}

/// What the archive holds, for `ghola status`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ArchiveStats {
    pub files: usize,
    pub sessions: usize,
    /// Bytes of the original files archived.
    pub original_bytes: u64,
    /// Bytes of the packs (compressed).
    pub stored_bytes: u64,
}

impl Archive {
    /// Opens the archive of `index_dir` (empty when there is none).
    pub fn open(index_dir: &Path) -> Result<Self, FormatError> {
        let dir = index_dir.join(ARCHIVE_DIR);
        // Without `STATE`, the packs are read as the next writer will (and nothing is written here): a reader
        // between the loss of `STATE` and the next update still sees every archived session.
        let state = match read_state(&dir)? {
            Some(s) => s,
            None => recover(&dir),
        };
        Ok(Self { state, dir })
    }

    /// Every archived file.
    pub fn files(&self) -> impl Iterator<Item = &ArchivedFile> {
        self.state.files.values().map(|e| &e.file)
    }

    /// Whether `path` is archived.
    pub fn contains(&self, path: &str) -> bool {
        self.state.files.contains_key(path)
    }

    /// Bytes archived of `path`.
    pub fn len_of(&self, path: &str) -> Option<u64> {
        self.state.files.get(path).map(|e| e.len)
    }

    /// The archived bytes of `path` (`None`: not archived), each frame checked.
    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>, FormatError> {
        let Some(e) = self.state.files.get(path) else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(e.len as usize);
        let mut packs = Packs::new(&self.dir);
        for at in &e.frames {
            let name = pack_path(&self.dir, at.pack).display().to_string();
            let raw = packs
                .raw(*at)
                .map_err(|err| FormatError::Io(name.clone(), err))?;
            let (h, bytes) = open_frame(&name, &raw)?;
            if h.file.path != *path || h.start != out.len() as u64 {
                return Err(FormatError::Damaged(name));
            }
            out.extend_from_slice(&bytes);
        }
        if out.len() as u64 != e.len || crc32fast::hash(&out) != e.crc {
            return Err(FormatError::Damaged(format!("archived copy of {path}")));
        }
        Ok(Some(out))
    }

    /// Reads every archived file back and checks it (frame checksums, decompression, lengths, whole-file crc);
    /// returns how many files were checked.
    pub fn verify(&self) -> Result<usize, FormatError> {
        for path in self.state.files.keys() {
            self.read(path)?;
        }
        Ok(self.state.files.len())
    }

    /// Sizes, for `ghola status`.
    pub fn stats(&self) -> ArchiveStats {
        let sessions: HashSet<&str> = self
            .state
            .files
            .values()
            .map(|e| e.file.session_id.as_str())
            .collect();
        ArchiveStats {
            files: self.state.files.len(),
            sessions: sessions.len(),
            original_bytes: self.state.files.values().map(|e| e.len).sum(),
            stored_bytes: self.state.packs.iter().map(|p| p.len).sum(),
        }
    }
}

/// The archive as the transcript readers see it ([`crate::transcript::source`]): `STATE` is read again when it
/// changed, so a long-running server sees what its own updates archived.
struct View {
    index_dir: PathBuf,
    cached: std::sync::Mutex<Option<(Option<std::time::SystemTime>, std::sync::Arc<Archive>)>>,
}

impl View {
    fn archive(&self) -> Option<std::sync::Arc<Archive>> {
        let stamp = std::fs::metadata(self.index_dir.join(ARCHIVE_DIR).join(STATE))
            .and_then(|m| m.modified())
            .ok();
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((s, a)) = cached.as_ref()
            && *s == stamp
        {
            return Some(a.clone());
        }
        match Archive::open(&self.index_dir) {
            Ok(a) => {
                let a = std::sync::Arc::new(a);
                *cached = Some((stamp, a.clone()));
                Some(a)
            }
            Err(e) => {
                tracing::warn!("archive unreadable: {e}");
                None
            }
        }
    }
}

impl crate::transcript::source::ArchiveView for View {
    fn read(&self, path: &Path) -> Option<Vec<u8>> {
        let key = path.display().to_string();
        let a = self.archive()?;
        match a.read(&key) {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!("archived copy of {key} unreadable: {e}");
                None
            }
        }
    }

    fn sessions_gone_from_disk(&self) -> Vec<crate::transcript::SessionFiles> {
        self.archive()
            .map(|a| sessions_gone_from_disk(&a))
            .unwrap_or_default()
    }
}

/// Sessions with archived transcripts that are no longer on disk, each naming only those files (by their
/// original paths); `archived` is set when the session's own transcript is gone.
pub fn sessions_gone_from_disk(a: &Archive) -> Vec<crate::transcript::SessionFiles> {
    use crate::transcript::{SessionFiles, SubagentFile};
    let mut out: BTreeMap<(String, String), SessionFiles> = BTreeMap::new();
    for f in a.files() {
        if matches!(f.role, FileRole::ToolResult) || Path::new(&f.path).exists() {
            continue;
        }
        let s = out
            .entry((f.project_dir.clone(), f.session_id.clone()))
            .or_insert_with(|| SessionFiles {
                session_id: f.session_id.clone(),
                project_dir: PathBuf::from(&f.project_dir),
                main: None,
                subagents: Vec::new(),
                archived: false,
            });
        match &f.role {
            FileRole::Main => {
                s.main = Some(PathBuf::from(&f.path));
                s.archived = true;
            }
            FileRole::Subagent {
                agent_id,
                agent_type,
                layout,
            } => s.subagents.push(SubagentFile {
                agent_id: agent_id.clone(),
                path: PathBuf::from(&f.path),
                agent_type: agent_type.clone(),
                layout: *layout,
            }),
            FileRole::ToolResult => {}
        }
    }
    out.into_values()
        .map(|mut s| {
            s.subagents.sort_by(|a, b| a.path.cmp(&b.path));
            s
        })
        .collect()
}

/// Lets every transcript reader of this process fall back on the archive of `index_dir`.
pub fn install(index_dir: &Path) {
    crate::transcript::source::install(Box::new(View {
        index_dir: index_dir.to_path_buf(),
        cached: std::sync::Mutex::new(None),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, session: &str) -> ArchivedFile {
        ArchivedFile {
            path: path.into(),
            session_id: session.into(),
            project_dir: "/p".into(),
            role: FileRole::Main,
        }
    }

    #[test]
    fn appends_only_new_bytes_and_starts_a_generation_on_rewrite() {
        let tmp = tempfile::tempdir().unwrap();
        let mut w = ArchiveWriter::open(tmp.path()).unwrap();
        let a = file("/p/a.jsonl", "a");
        w.record(&a, 0, b"line one\n").unwrap();
        // The whole file again (a full re-read) adds only its tail; a resumed read past the tail adds the rest.
        w.record(&a, 0, b"line one\nline two\n").unwrap();
        w.record(&a, 9, b"line two\nline three\n").unwrap();
        w.commit().unwrap();
        let r = Archive::open(tmp.path()).unwrap();
        assert_eq!(
            r.read("/p/a.jsonl").unwrap().unwrap(),
            b"line one\nline two\nline three\n"
        );
        assert_eq!(r.state.files["/p/a.jsonl"].frames.len(), 3);
        // A rewritten file (different head) is a new generation.
        let mut w = ArchiveWriter::open(tmp.path()).unwrap();
        w.record(&a, 0, b"other\n").unwrap();
        w.commit().unwrap();
        let r = Archive::open(tmp.path()).unwrap();
        assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"other\n");
        assert_eq!(r.verify().unwrap(), 1);
    }

    #[test]
    fn uncommitted_bytes_are_ignored_never_cut_and_damage_is_detected() {
        let tmp = tempfile::tempdir().unwrap();
        let a = file("/p/a.jsonl", "a");
        let mut w = ArchiveWriter::open(tmp.path()).unwrap();
        w.record(&a, 0, b"kept\n").unwrap();
        w.commit().unwrap();
        // A writer killed before its commit: the frame is in the pack, not in STATE.
        let mut w = ArchiveWriter::open(tmp.path()).unwrap();
        w.record(&a, 5, b"lost\n").unwrap();
        drop(w);
        let r = Archive::open(tmp.path()).unwrap();
        assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"kept\n");
        // The next writer leaves the uncommitted bytes in place and appends to a new pack.
        let pack0 = std::fs::metadata(pack_path(&tmp.path().join(ARCHIVE_DIR), 0))
            .unwrap()
            .len();
        let mut w = ArchiveWriter::open(tmp.path()).unwrap();
        w.record(&a, 5, b"next\n").unwrap();
        w.commit().unwrap();
        let r = Archive::open(tmp.path()).unwrap();
        assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"kept\nnext\n");
        let dir = tmp.path().join(ARCHIVE_DIR);
        assert_eq!(std::fs::metadata(pack_path(&dir, 0)).unwrap().len(), pack0);
        // A flipped byte in a pack is reported, not returned.
        let pack = pack_path(&dir, 1);
        let mut bytes = std::fs::read(&pack).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&pack, bytes).unwrap();
        assert!(r.verify().is_err());
    }

    #[test]
    fn a_damaged_state_is_rebuilt_from_the_packs() {
        let tmp = tempfile::tempdir().unwrap();
        let a = file("/p/a.jsonl", "a");
        let mut w = ArchiveWriter::open(tmp.path()).unwrap();
        w.record(&a, 0, b"one\n").unwrap();
        w.record(&a, 4, b"two\n").unwrap();
        w.record(&file("/p/b.jsonl", "b"), 0, b"bee\n").unwrap();
        w.commit().unwrap();
        let state = tmp.path().join(ARCHIVE_DIR).join(STATE);
        std::fs::write(&state, b"garbage").unwrap();
        assert!(Archive::open(tmp.path()).is_err());
        // The next writer rebuilds it; nothing is lost, and it appends on.
        let mut w = ArchiveWriter::open(tmp.path()).unwrap();
        w.record(&a, 8, b"three\n").unwrap();
        w.commit().unwrap();
        let r = Archive::open(tmp.path()).unwrap();
        assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"one\ntwo\nthree\n");
        assert_eq!(r.read("/p/b.jsonl").unwrap().unwrap(), b"bee\n");
        assert!(tmp.path().join(ARCHIVE_DIR).join("STATE.bad").exists());
    }

    #[test]
    fn a_missing_state_is_rebuilt_from_the_packs_and_no_pack_is_truncated() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(ARCHIVE_DIR);
        let (a, b) = (file("/p/a.jsonl", "a"), file("/p/b.jsonl", "b"));
        let mut w = ArchiveWriter::open(tmp.path()).unwrap();
        w.record(&a, 0, b"only copy\n").unwrap();
        w.record(&b, 0, b"bee\n").unwrap();
        w.commit().unwrap();
        let pack0 = std::fs::read(pack_path(&dir, 0)).unwrap();
        std::fs::remove_file(dir.join(STATE)).unwrap();
        // A reader sees everything before any writer ran.
        let r = Archive::open(tmp.path()).unwrap();
        assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"only copy\n");
        // A writer appends on, and the pack it found is kept byte for byte.
        let mut w = ArchiveWriter::open(tmp.path()).unwrap();
        w.record(&b, 4, b"more\n").unwrap();
        w.commit().unwrap();
        assert!(
            std::fs::read(pack_path(&dir, 0))
                .unwrap()
                .starts_with(&pack0)
        );
        let r = Archive::open(tmp.path()).unwrap();
        assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"only copy\n");
        assert_eq!(r.read("/p/b.jsonl").unwrap().unwrap(), b"bee\nmore\n");
        assert!(dir.join(STATE).exists());
        // A state that does not know a pack (lost and recreated empty) never lets a writer overwrite it.
        std::fs::remove_file(dir.join(STATE)).unwrap();
        let mut next = 0;
        let (id, _) = create_pack(&dir, &mut next).unwrap();
        assert!(id > 0 && next == id + 1);
        assert!(
            std::fs::read(pack_path(&dir, 0))
                .unwrap()
                .starts_with(&pack0)
        );
    }

    #[test]
    fn damaged_frames_cost_only_themselves() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(ARCHIVE_DIR);
        let mut w = ArchiveWriter::open(tmp.path()).unwrap();
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            let f = file(&format!("/p/{name}.jsonl"), name);
            w.record(&f, 0, format!("{name} {i}\n").as_bytes()).unwrap();
        }
        w.commit().unwrap();
        let r = Archive::open(tmp.path()).unwrap();
        let second = r.state.files["/p/b.jsonl"].frames[0].offset as usize;
        // The second frame claims 4 GiB of header and payload: refused before anything is allocated, and the
        // scan steps over it to the third.
        let pack = pack_path(&dir, 0);
        let mut bytes = std::fs::read(&pack).unwrap();
        bytes[second + 4..second + 12].copy_from_slice(&[0xff; 8]);
        std::fs::write(&pack, &bytes).unwrap();
        let mut f = File::open(&pack).unwrap();
        let err = read_raw_frame(&mut f, second as u64).unwrap_err();
        assert!(err.to_string().contains("past the end"), "{err}");
        std::fs::remove_file(dir.join(STATE)).unwrap();
        let r = Archive::open(tmp.path()).unwrap();
        assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"a 0\n");
        assert!(r.read("/p/b.jsonl").unwrap().is_none());
        assert_eq!(r.read("/p/c.jsonl").unwrap().unwrap(), b"c 2\n");
    }

    #[test]
    fn forgetting_rewrites_the_packs_without_the_session() {
        let tmp = tempfile::tempdir().unwrap();
        let mut w = ArchiveWriter::open(tmp.path()).unwrap();
        let secret = "sk-ant-api03-SECRETSECRETSECRET";
        w.record(
            &file("/p/a.jsonl", "a"),
            0,
            format!("{secret}\n").as_bytes(),
        )
        .unwrap();
        w.record(&file("/p/b.jsonl", "b"), 0, b"keep me\n").unwrap();
        w.commit().unwrap();
        let reclaimed = w
            .forget_sessions(&HashSet::from(["a".to_string()]))
            .unwrap();
        assert!(reclaimed > 0);
        let r = Archive::open(tmp.path()).unwrap();
        assert!(r.read("/p/a.jsonl").unwrap().is_none());
        assert_eq!(r.read("/p/b.jsonl").unwrap().unwrap(), b"keep me\n");
        // No pack keeps the forgotten bytes, compressed or not.
        for e in std::fs::read_dir(tmp.path().join(ARCHIVE_DIR))
            .unwrap()
            .flatten()
        {
            let bytes = std::fs::read(e.path()).unwrap();
            assert!(!bytes.windows(6).any(|w| w == b"SECRET"), "{:?}", e.path());
        }
    }
}
