//! A scratch machine for a test: a Claude Code config dir, an index, a notes dir and a settings file, all in one
//! temporary folder, and `ghola` pointed at them with nothing of the outer environment that would change what it
//! reads or whom it asks.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The scratch machine; its folder goes when it is dropped.
pub struct Home {
    _tmp: tempfile::TempDir,
    /// The Claude Code config dir (`projects/` below it).
    pub claude: PathBuf,
    /// ghola's index.
    pub idx: PathBuf,
    /// The notes dir; the settings file (`config.toml`) is inside it.
    pub notes: PathBuf,
}

impl Home {
    /// An empty machine (nothing created yet).
    pub fn new() -> Home {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        Home {
            _tmp: tmp,
            claude: root.join("claude"),
            idx: root.join("idx"),
            notes: root.join("notes"),
        }
    }

    /// The scratch folder everything is in (for a test's own files beside them).
    pub fn root(&self) -> &std::path::Path {
        self._tmp.path()
    }

    /// The settings file.
    pub fn config(&self) -> PathBuf {
        self.notes.join("config.toml")
    }

    /// `ghola` on this machine, stdin closed, without an API key.
    pub fn ghola(&self) -> Command {
        let mut c = super::ghola_at(&self.claude, &self.idx);
        c.env("GHOLA_NOTES_DIR", &self.notes)
            .env("GHOLA_CONFIG", self.config())
            .env_remove("ANTHROPIC_API_KEY")
            .stdin(Stdio::null());
        c
    }
}
