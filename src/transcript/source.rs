//! Where transcript bytes come from: the file Claude Code wrote, or — once Claude Code has deleted it — the
//! archived copy the index kept (see `index::archive`). Every reader of transcripts opens files through
//! [`open`] and finds sessions through [`discover_all`], so what they print is the same before and after the
//! deletion, apart from [`SessionFiles::archived`].
//!
//! The transcript layer knows nothing of the index: the archive is plugged in once per process with
//! [`install`] (the CLI and the MCP server do it at start); without it, only files on disk exist.

use super::discover::{Discovery, SessionFiles, discover};
use std::fs::File;
use std::io::{Cursor, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::OnceLock;

/// The archived copies, as the transcript readers see them.
pub trait ArchiveView: Send + Sync {
    /// The archived bytes of the file that was at `path`, if any.
    fn read(&self, path: &Path) -> Option<Vec<u8>>;
    /// Sessions with archived files that are no longer on disk, each naming only those files (by their
    /// original paths), with `archived` set when the session's own transcript is gone.
    fn sessions_gone_from_disk(&self) -> Vec<SessionFiles>;
}

static VIEW: OnceLock<Box<dyn ArchiveView>> = OnceLock::new();

/// Plugs in the archive for this process (the first call wins).
pub fn install(view: Box<dyn ArchiveView>) {
    let _ = VIEW.set(view);
}

/// An opened transcript: the file, or its archived bytes.
pub enum Opened {
    Disk(File),
    Archived(Cursor<Vec<u8>>),
}

impl Read for Opened {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Opened::Disk(f) => f.read(buf),
            Opened::Archived(c) => c.read(buf),
        }
    }
}

impl Seek for Opened {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        match self {
            Opened::Disk(f) => f.seek(pos),
            Opened::Archived(c) => c.seek(pos),
        }
    }
}

/// Opens a transcript file and tells its length: from disk when it is there, else from the archive; the
/// disk's error when neither has it.
pub fn open(path: &Path) -> std::io::Result<(Opened, u64)> {
    match File::open(path) {
        Ok(f) => {
            let len = f.metadata()?.len();
            Ok((Opened::Disk(f), len))
        }
        Err(e) => match VIEW.get().and_then(|v| v.read(path)) {
            Some(bytes) => {
                let len = bytes.len() as u64;
                Ok((Opened::Archived(Cursor::new(bytes)), len))
            }
            None => Err(e),
        },
    }
}

/// A whole file (a persisted tool output), from disk or the archive.
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    let (mut f, len) = open(path)?;
    let mut buf = Vec::with_capacity(len as usize);
    f.read_to_end(&mut buf)?;
    Ok(buf)
}

/// Every session under a Claude config dir: those on disk, plus what the archive holds of sessions Claude Code
/// deleted (whole sessions, marked `archived`, and deleted subagent files of sessions still on disk).
pub fn discover_all(claude_dir: &Path) -> Discovery {
    let mut found = discover(claude_dir);
    let Some(view) = VIEW.get() else {
        return found;
    };
    let projects = claude_dir.join("projects");
    // Only what was under this Claude config dir.
    let gone = view
        .sessions_gone_from_disk()
        .into_iter()
        .filter(|g| g.project_dir.starts_with(&projects))
        .collect();
    absorb_gone(&mut found, gone);
    found
}

/// Adds sessions gone from disk to a discovery: a session it lacks is added whole; one it has gets the files it
/// lacks (its transcript, marking it `archived`, or a subagent's).
pub fn absorb_gone(found: &mut Discovery, gone: Vec<SessionFiles>) {
    for g in gone {
        match found
            .sessions
            .iter_mut()
            .find(|s| s.session_id == g.session_id && s.project_dir == g.project_dir)
        {
            Some(s) => {
                if s.main.is_none() && g.main.is_some() {
                    s.main = g.main;
                    s.archived = true;
                }
                for a in g.subagents {
                    if !s.subagents.iter().any(|x| x.agent_id == a.agent_id) {
                        s.subagents.push(a);
                    }
                }
            }
            None => found.sessions.push(g),
        }
    }
}
