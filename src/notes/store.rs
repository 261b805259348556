//! Where notes live and how they are read and written: per project a folder of four markdown files (the truth),
//! `ARCHIVE.md` (items pushed out by the caps, never lost), `meta.json` (display name, parent, consent,
//! extraction state per session window, tokens) and `log.jsonl` (every extraction: what was added, what was
//! superseded, what was a duplicate). State shared by all projects (the default consent, tokens spent per day)
//! is in the notes dir's `state.json`.
//!
//! Every write is a whole file written beside the target and renamed over it, under a short lock
//! (`notes.lock`), so a crash leaves the old file or the new one, never half of one.

use super::item::{self, Category, Item};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Errors of the notes store.
#[derive(Debug, thiserror::Error)]
pub enum NotesError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file's content could not be encoded (a bug, not the user's doing).
    #[error("{}: {source}", path.display())]
    Encode {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// The index the notes are extracted from could not be opened.
    #[error("cannot open the index: {0}")]
    Index(#[from] crate::index::IndexError),
    /// Not a session id (a path, a control character): the caller's mistake.
    #[error("not a session id: {0:?}")]
    NotASession(String),
    /// A note edited to nothing: the caller's mistake.
    #[error("a note cannot be empty; forget it instead")]
    EmptyNote,
    /// No such note: the caller's mistake.
    #[error("no note {id} in the notes of {project}")]
    NoSuchNote { id: String, project: String },
    /// A link that would make a cycle: the caller's mistake.
    #[error("{0}")]
    BadLink(&'static str),
    /// `parent` already has `child` as its parent.
    #[error("{parent} already has {child} as its parent: links cannot go both ways")]
    LinkBothWays { parent: String, child: String },
    /// The extraction was cancelled.
    #[error("cancelled")]
    Cancelled,
}

impl NotesError {
    /// Whether the caller can fix it by asking differently (an unknown note, a bad link or id), as opposed to a
    /// failure of the notes files, the index or the model call.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            NotesError::NotASession(_)
                | NotesError::EmptyNote
                | NotesError::NoSuchNote { .. }
                | NotesError::BadLink(_)
                | NotesError::LinkBothWays { .. }
        )
    }
}

/// Encodes `value` as the JSON of the file at `path` (`pretty` for files people read).
pub(crate) fn to_json<T: serde::Serialize>(
    path: &Path,
    value: &T,
    pretty: bool,
) -> Result<Vec<u8>, NotesError> {
    let encoded = if pretty {
        serde_json::to_vec_pretty(value)
    } else {
        serde_json::to_vec(value)
    };
    encoded.map_err(|source| NotesError::Encode {
        path: path.to_path_buf(),
        source,
    })
}

/// Wraps an I/O error with the path it concerns.
pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> NotesError + '_ {
    move |source| NotesError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `bytes` to `path` atomically ([`crate::atomic_file::write_atomic`]), naming the path on failure.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), NotesError> {
    crate::atomic_file::write_atomic(path, bytes).map_err(io(path))
}

/// Overwrites the credentials in every notes file under `root` (markdown, logs, metadata), each replaced
/// atomically under the notes' write lock: notes are extracted from redacted windows, but notes written by an
/// older ghola, or typed by hand, may hold one. Returns what was replaced, per rule.
pub fn redact_all(root: &Path) -> Result<crate::secrets::Tally, NotesError> {
    let mut tally = crate::secrets::Tally::default();
    if !root.is_dir() {
        return Ok(tally);
    }
    let _lock = write_lock(root)?;
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).map_err(io(&dir))?.flatten() {
            let path = e.path();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                todo.push(path);
                continue;
            }
            let wanted = path
                .extension()
                .is_some_and(|x| x == "md" || x == "json" || x == "jsonl");
            if !kind.is_file() || !wanted {
                continue;
            }
            let text = std::fs::read_to_string(&path).map_err(io(&path))?;
            if let std::borrow::Cow::Owned(red) = crate::secrets::redact_counting(&text, &mut tally)
            {
                write_atomic(&path, red.as_bytes())?;
            }
        }
    }
    Ok(tally)
}

/// Holds the notes dir's short write lock until dropped.
pub struct WriteLock(#[allow(dead_code)] File);

/// Opens (creating) a lock file in the notes dir; the caller locks it.
pub(crate) fn lock_file(root: &Path, name: &str) -> Result<(File, PathBuf), NotesError> {
    std::fs::create_dir_all(root).map_err(io(root))?;
    // The notes are the user's own: private (0700/0600) whoever wrote them and under whatever umask.
    if let Err(e) = crate::private::tighten(root) {
        tracing::warn!("could not make the notes private: {e}");
    }
    let path = root.join(name);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io(&path))?;
    Ok((f, path))
}

/// Takes the write lock of the notes dir (blocking: holders keep it for one read-modify-write).
pub fn write_lock(root: &Path) -> Result<WriteLock, NotesError> {
    let (f, path) = lock_file(root, "notes.lock")?;
    f.lock().map_err(io(&path))?;
    Ok(WriteLock(f))
}

/// State shared by all projects (written by ghola; the user's settings are in [`crate::settings`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct State {
    /// Extraction for every project without its own choice (off until the user turns it on).
    #[serde(default)]
    pub enabled: bool,
    /// When `enabled` was last turned on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_since_ms: Option<i64>,
    /// Tokens spent per UTC day (`YYYY-MM-DD`), the last 30 days.
    #[serde(default)]
    pub spent: BTreeMap<String, u64>,
}

impl State {
    /// Tokens spent on `day`.
    pub fn spent_on(&self, day: &str) -> u64 {
        self.spent.get(day).copied().unwrap_or(0)
    }
}

/// Extraction state of one session window.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WindowState {
    pub session: String,
    pub window: u32,
    /// The last message (its position in the conversation) already sent for extraction; later messages are
    /// what a re-extraction sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extracted_seq: Option<u32>,
    /// Waiting for the worker.
    #[serde(default)]
    pub due: bool,
    /// What made it due last (`session-end`, `pre-compact`, `session-start`, `extract`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extracted_ms: Option<i64>,
    /// Failed attempts since the last success.
    #[serde(default)]
    pub attempts: u32,
    /// Not before this time (back-off after a failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_try_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default)]
    pub tokens: u64,
    #[serde(default)]
    pub added: u32,
}

/// The metadata of one project's notes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Meta {
    /// The project directory (its identity).
    pub project: String,
    /// How people call it (default: the directory's last component).
    #[serde(default)]
    pub display_name: String,
    /// A project whose architecture, decisions and failures this one inherits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Archived projects keep their notes but get no extraction and no injection.
    #[serde(default)]
    pub archived: bool,
    /// This project's own consent (`None`: the global setting decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// When extraction was turned on: sessions that ended before are extracted only when asked
    /// (`ghola notes extract`), never behind the user's back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_since_ms: Option<i64>,
    /// Per session window (`<session>:<window>`).
    #[serde(default)]
    pub windows: BTreeMap<String, WindowState>,
    #[serde(default)]
    pub tokens_total: u64,
    #[serde(default)]
    pub tokens_by_day: BTreeMap<String, u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_extraction_ms: Option<i64>,
}

impl Meta {
    /// The key of a window in [`Meta::windows`].
    pub fn key(session: &str, window: u32) -> String {
        format!("{session}:{window}")
    }

    /// A window's state, created empty when it has none yet.
    pub fn window_mut(&mut self, session: &str, window: u32) -> &mut WindowState {
        self.windows
            .entry(Self::key(session, window))
            .or_insert_with(|| WindowState {
                session: session.to_string(),
                window,
                ..WindowState::default()
            })
    }
}

/// The notes dir's layout.
#[derive(Debug, Clone)]
pub struct Store {
    pub root: PathBuf,
}

impl Store {
    /// The store at `root` (usually [`crate::config::notes_dir`]).
    pub fn new(root: &Path) -> Store {
        Store {
            root: root.to_path_buf(),
        }
    }

    /// The folder of a project's notes: its escaped path (readable) and a hash of the exact path (the escaping
    /// is lossy, so two projects never share a folder).
    pub fn project_dir(&self, project: &str) -> PathBuf {
        let escaped: String = project
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let tail: String = escaped
            .chars()
            .rev()
            .take(80)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        self.root
            .join("projects")
            .join(format!("{tail}-{:08x}", item::fnv(project) as u32))
    }

    /// The shared state (defaults when absent; a damaged file is set aside with a warning).
    pub fn state(&self) -> State {
        read_json(&self.root.join("state.json")).unwrap_or_default()
    }

    /// Writes the shared state.
    pub fn save_state(&self, s: &State) -> Result<(), NotesError> {
        let path = self.root.join("state.json");
        write_atomic(&path, &to_json(&path, s, true)?)
    }

    /// Every project that has a notes folder, by project path.
    pub fn projects(&self) -> Vec<String> {
        let mut out: Vec<String> = self.metas().into_iter().map(|m| m.project).collect();
        out.sort();
        out
    }

    /// The metadata of every project that has a notes folder (the category files unread: cheap enough for a
    /// hook).
    pub fn metas(&self) -> Vec<Meta> {
        let Ok(rd) = std::fs::read_dir(self.root.join("projects")) else {
            return Vec::new();
        };
        rd.flatten()
            .filter_map(|e| read_json::<Meta>(&e.path().join("meta.json")))
            .filter(|m| !m.project.is_empty())
            .collect()
    }

    /// Opens a project's notes (an empty set when it has none yet).
    pub fn open(&self, project: &str) -> ProjectNotes {
        let dir = self.project_dir(project);
        let meta = read_json::<Meta>(&dir.join("meta.json")).unwrap_or_else(|| Meta {
            project: project.to_string(),
            display_name: Path::new(project)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| project.to_string()),
            ..Meta::default()
        });
        let today = today();
        let mut items = BTreeMap::new();
        let mut repaired = 0;
        for c in Category::ALL {
            let text = std::fs::read_to_string(dir.join(c.file_name())).unwrap_or_default();
            let p = item::parse(c, &text, &today);
            repaired += p.repaired;
            items.insert(c, p.items);
        }
        ProjectNotes {
            dir,
            meta,
            items,
            repaired,
        }
    }

    /// Whether extraction is on for a project: its own choice, else the global setting; never for an
    /// archived project.
    pub fn enabled(&self, meta: &Meta) -> bool {
        !meta.archived && meta.enabled.unwrap_or_else(|| self.state().enabled)
    }
}

/// One project's notes in memory.
#[derive(Debug, Clone)]
pub struct ProjectNotes {
    pub dir: PathBuf,
    pub meta: Meta,
    pub items: BTreeMap<Category, Vec<Item>>,
    /// Items whose provenance was missing or broken when read (they got fresh ids).
    pub repaired: usize,
}

impl ProjectNotes {
    /// The live items of a category.
    pub fn get(&self, c: Category) -> &[Item] {
        self.items.get(&c).map_or(&[], Vec::as_slice)
    }

    /// Items per category, by category name.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        Category::ALL
            .into_iter()
            .map(|c| (c.name(), self.get(c).len()))
            .collect()
    }

    /// Whether any category has an item.
    pub fn is_empty(&self) -> bool {
        self.items.values().all(Vec::is_empty)
    }

    /// Whether an id is used by any live item.
    pub fn has_id(&self, id: &str) -> bool {
        self.items.values().flatten().any(|i| i.id == id)
    }

    /// Writes the four files and the metadata. Only categories that changed on disk are rewritten, so a file a
    /// person deleted stays deleted until there is something new to say in it.
    pub fn save(&self) -> Result<(), NotesError> {
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        for c in Category::ALL {
            let path = self.dir.join(c.file_name());
            let items = self.get(c);
            let on_disk = std::fs::read_to_string(&path).ok();
            let fresh = item::render(c, &self.meta.project, items);
            if on_disk.as_deref() == Some(fresh.as_str()) {
                continue;
            }
            let unchanged = on_disk
                .as_deref()
                .map(|t| item::parse(c, t, &today()).items == items)
                .unwrap_or(items.is_empty());
            if unchanged {
                continue;
            }
            write_atomic(&path, fresh.as_bytes())?;
        }
        self.save_meta()
    }

    /// Writes `meta.json` only.
    pub fn save_meta(&self) -> Result<(), NotesError> {
        let path = self.dir.join("meta.json");
        write_atomic(&path, &to_json(&path, &self.meta, true)?)
    }

    /// Appends items pushed out of the live notes to `ARCHIVE.md` (with their category and why).
    pub fn archive(&self, moved: &[(Category, Item)], why: &str) -> Result<(), NotesError> {
        if moved.is_empty() {
            return Ok(());
        }
        let path = self.dir.join("ARCHIVE.md");
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        let mut text = String::new();
        if f.metadata().map(|m| m.len() == 0).unwrap_or(true) {
            text.push_str(&format!(
                "# Archived notes — {}\n\nItems moved out of the live notes (kept here, never injected).\n\n",
                self.meta.project
            ));
        }
        for (c, i) in moved {
            text.push_str(&format!(
                "- ({}, {why}, {}) {}\n",
                c.name(),
                today(),
                i.to_line().trim_start_matches("- ")
            ));
        }
        f.write_all(text.as_bytes()).map_err(io(&path))?;
        f.sync_all().map_err(io(&path))
    }

    /// Appends one record to `log.jsonl`.
    pub fn log(&self, record: &serde_json::Value) -> Result<(), NotesError> {
        let path = self.dir.join("log.jsonl");
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        let mut line = record.to_string();
        line.push('\n');
        f.write_all(line.as_bytes()).map_err(io(&path))
    }
}

/// Today in UTC, `YYYY-MM-DD`.
pub fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

/// Reads a JSON file; a damaged one is renamed aside (`.bad`) with a warning, and `None` returned.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    let bytes = std::fs::read(path).ok()?;
    match serde_json::from_slice(&bytes) {
        Ok(v) => Some(v),
        Err(e) => {
            let aside = path.with_extension("json.bad");
            tracing::warn!(
                "{} is damaged ({e}); set aside as {} and started afresh",
                path.display(),
                aside.display()
            );
            let _ = std::fs::rename(path, &aside);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_folders_are_distinct_and_readable() {
        let s = Store::new(Path::new("/n"));
        let a = s.project_dir("/home/me/my-app");
        let b = s.project_dir("/home/me/my_app");
        assert_ne!(a, b);
        assert!(a.to_string_lossy().contains("-home-me-my-app-"));
    }

    #[test]
    fn a_deleted_file_stays_deleted_and_damaged_meta_is_set_aside() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::new(root.path());
        let mut n = store.open("/p");
        n.items.get_mut(&Category::Failures).unwrap().push(Item {
            id: "f-000001".into(),
            text: "Don't X".into(),
            session: None,
            window: None,
            date: Some("2026-11-01".into()),
        });
        n.save().unwrap();
        let failures = n.dir.join("FAILURES.md");
        assert!(failures.exists());
        assert!(
            !n.dir.join("PLAN.md").exists(),
            "empty categories write no file"
        );
        std::fs::remove_file(&failures).unwrap();
        let n = store.open("/p");
        assert!(n.get(Category::Failures).is_empty());
        n.save().unwrap();
        assert!(!failures.exists());
        std::fs::write(n.dir.join("meta.json"), b"{not json").unwrap();
        let n = store.open("/p");
        assert_eq!(n.meta.project, "/p");
        assert!(n.dir.join("meta.json.bad").exists());
    }
}
