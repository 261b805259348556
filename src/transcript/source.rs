//! Where transcript bytes come from: the file Claude Code wrote, or — once Claude Code has deleted it — the
//! archived copy the index kept (see `index::archive`). Every reader of transcripts opens files through
//! [`Sources::open`] and finds sessions through [`Sources::discover_all`], so what they print is the same
//! before and after the deletion, apart from [`SessionFiles::archived`].
//!
//! The transcript layer knows nothing of the index: callers hand every reader a [`Sources`] value, made by
//! `index::archive::sources` for an index dir (or [`Sources::disk`]: only files on disk exist). Nothing about it
//! is process-wide: two indexes in one process each read their own archive.

use super::discover::{Discovery, SessionFiles, discover};
use super::machine::Machine;
use std::fs::File;
use std::io::{Cursor, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

/// The archived copies, as the transcript readers see them.
pub trait ArchiveView: Send + Sync {
    /// The archived bytes of the file that was at `path`, if any.
    fn read(&self, path: &Path) -> Option<Vec<u8>>;
    /// Sessions with archived files that are no longer on disk, each naming only those files (by their
    /// original paths), with `archived` set when the session's own transcript is gone.
    fn sessions_gone_from_disk(&self) -> Vec<SessionFiles>;
    /// Sessions the user told ghola to forget: readers leave them out even while Claude Code still has their
    /// transcripts, so that no listing, reading or replay brings them back.
    fn forgotten_sessions(&self) -> std::collections::HashSet<String> {
        std::collections::HashSet::new()
    }
}

/// Where transcript bytes come from: the disk, and, when one is given, an archive for files no longer there.
/// Cheap to clone (the archive is shared).
#[derive(Clone, Default)]
pub struct Sources {
    archive: Option<Arc<dyn ArchiveView>>,
    /// Messages come out as written, credentials and all (`ghola show --reveal`, `ghola secrets`); otherwise
    /// every message is redacted as it is built (see `crate::secrets`).
    reveal: bool,
    /// Other machines' histories kept beside this one's (see [`super::machine`]), as they are now.
    machines: Option<Arc<dyn MachinesView>>,
}

/// The other machines whose copies ghola keeps, read afresh when they change (a remote added or removed while a
/// server runs is seen by its next read).
pub trait MachinesView: Send + Sync {
    /// The machines now.
    fn current(&self) -> Arc<[Machine]>;
    /// The machine whose copy holds `path`, by where it lies (so a removed machine's archived sessions still
    /// name it); `None`: this machine's own history.
    fn machine_of(&self, path: &Path) -> Option<String>;
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources")
            .field("archive", &self.archive.is_some())
            .field("reveal", &self.reveal)
            .field("machines", &self.machines().len())
            .finish()
    }
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

impl Sources {
    /// Files on disk only.
    pub const fn disk() -> Sources {
        Sources {
            archive: None,
            reveal: false,
            machines: None,
        }
    }

    /// The same sources, with other machines' histories read beside this one's.
    pub fn with_machines(mut self, machines: Arc<dyn MachinesView>) -> Sources {
        self.machines = Some(machines);
        self
    }

    /// The other machines whose histories these sources read, as they are now.
    pub fn machines(&self) -> Arc<[Machine]> {
        self.machines
            .as_ref()
            .map_or_else(|| Arc::new([]) as Arc<[Machine]>, |m| m.current())
    }

    /// The name of the other machine whose copy holds `path` (a transcript or a project folder); `None` for this
    /// machine's own history.
    pub fn machine_of(&self, path: &Path) -> Option<String> {
        self.machines.as_ref()?.machine_of(path)
    }

    /// A project path as recorded in a file at `path`, read as this machine names it (see
    /// [`Machine::map_project`]).
    pub fn project_as_here(&self, path: &Path, project: &str) -> String {
        match super::machine::machine_of(&self.machines(), path) {
            Some(m) => m.map_project(project),
            None => project.to_string(),
        }
    }

    /// The same sources, with messages built as written: credentials are not redacted. Only for a person's
    /// own terminal (`ghola show --reveal`) and the report that finds credentials (`ghola secrets`); never for
    /// anything that leaves the machine or reaches a model.
    pub fn revealing(mut self) -> Sources {
        self.reveal = true;
        self
    }

    /// Whether messages are built as written (see [`Sources::revealing`]).
    pub fn reveals(&self) -> bool {
        self.reveal
    }

    /// Files on disk, else their copies in `archive`.
    pub fn with_archive(archive: Arc<dyn ArchiveView>) -> Sources {
        Sources {
            archive: Some(archive),
            reveal: false,
            machines: None,
        }
    }

    /// Opens a transcript file and tells its length: from disk when it is there, else from the archive; the
    /// disk's error when neither has it.
    pub fn open(&self, path: &Path) -> std::io::Result<(Opened, u64)> {
        match fs_err::File::open(path).map(fs_err::File::into_file) {
            Ok(f) => {
                let len = f.metadata()?.len();
                Ok((Opened::Disk(f), len))
            }
            Err(e) => match self.archive.as_ref().and_then(|v| v.read(path)) {
                Some(bytes) => {
                    let len = bytes.len() as u64;
                    Ok((Opened::Archived(Cursor::new(bytes)), len))
                }
                None => Err(e),
            },
        }
    }

    /// A whole file (a persisted tool output), from disk or the archive.
    pub fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let (mut f, len) = self.open(path)?;
        let mut buf = Vec::with_capacity(len as usize);
        f.read_to_end(&mut buf)?;
        Ok(buf)
    }

    /// Every session under a Claude config dir: those on disk, plus what the archive holds of sessions Claude
    /// Code deleted (whole sessions, marked `archived`, and deleted subagent files of sessions still on disk),
    /// less the sessions the user told ghola to forget.
    pub fn discover_all(&self, claude_dir: &Path) -> Discovery {
        let machines = self.machines();
        let mut found = discover_everywhere(claude_dir, &machines);
        let Some(view) = &self.archive else {
            return found;
        };
        let projects: Vec<std::path::PathBuf> = std::iter::once(claude_dir)
            .chain(machines.iter().map(|m| m.dir.as_path()))
            .map(|d| d.join("projects"))
            .collect();
        // Only what was under this Claude config dir or another machine's copy.
        let gone = view
            .sessions_gone_from_disk()
            .into_iter()
            .filter(|g| projects.iter().any(|p| g.project_dir.starts_with(p)))
            .collect();
        absorb_gone(&mut found, gone);
        let forgotten = view.forgotten_sessions();
        if !forgotten.is_empty() {
            found
                .sessions
                .retain(|s| !forgotten.contains(&s.session_id));
        }
        found
    }
}

/// The sessions on disk under `claude_dir` and under each of `machines`' copies (no archive).
pub fn discover_everywhere(claude_dir: &Path, machines: &[Machine]) -> Discovery {
    let mut found = discover(claude_dir);
    for m in machines {
        let there = discover(&m.dir);
        found.sessions.extend(there.sessions);
        found.problems.extend(there.problems);
    }
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
