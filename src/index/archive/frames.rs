//! Reading frames back as stored, checked, and rebuilding `STATE` from them when it is lost or damaged. Every
//! length read from a pack is bounded by what the pack still holds before anything is allocated for it.

use super::{
    FRAME_MAGIC, FRAME_PREFIX, FileEntry, FrameAt, FrameHeader, PackState, State, pack_ids,
    pack_path,
};
use crate::index::format::{self, FormatError};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Rebuilds the state from the packs alone: every pack is read frame by frame, in order; each frame continues
/// its file (or starts it again from offset 0), as `record` would have. A damaged frame is stepped over: the
/// scan resumes at the next frame magic after it whose frame checks out, so damage costs only the frames it
/// touched. Used when `STATE` is damaged or missing, so a lost `STATE` loses nothing the packs hold.
pub(super) fn recover(dir: &Path) -> State {
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
pub(super) fn read_raw_frame(f: &mut File, offset: u64) -> std::io::Result<Vec<u8>> {
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
pub(super) fn open_frame(name: &str, raw: &[u8]) -> Result<(FrameHeader, Vec<u8>), FormatError> {
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
