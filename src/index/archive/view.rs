//! The archive as readers see it: the committed view ([`Archive`]), its sizes, and the plug that lets every
//! transcript reader of a process fall back on it ([`install`]).

use super::frames::{open_frame, recover};
use super::{ARCHIVE_DIR, ArchivedFile, FileRole, Packs, STATE, State, pack_path, read_state};
use crate::index::format::FormatError;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// A read-only view of the committed archive.
pub struct Archive {
    dir: PathBuf,
    pub(super) state: State,
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
        let stamp = fs_err::metadata(self.index_dir.join(ARCHIVE_DIR).join(STATE))
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

    fn forgotten_sessions(&self) -> HashSet<String> {
        crate::index::forget::forgotten(&self.index_dir)
            .sessions
            .into_keys()
            .collect()
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

/// Transcript sources that fall back on the archive of `index_dir` for files no longer on disk (its state is
/// read on first need, once).
pub fn sources(index_dir: &Path) -> crate::transcript::source::Sources {
    crate::transcript::source::Sources::with_archive(std::sync::Arc::new(View {
        index_dir: index_dir.to_path_buf(),
        cached: std::sync::Mutex::new(None),
    }))
    .with_machines(std::sync::Arc::new(crate::index::machines::Live::new(
        index_dir,
    )))
}
