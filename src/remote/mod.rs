//! Other machines' Claude Code histories, brought here over SSH: `ghola remote add/list/sync/remove/map`.
//!
//! Each remote is a folder of ghola's store (`index::machines`): its record (`remote.json`: how to reach it and
//! its path rules), its sync status (`status.json`) and a copy of its `~/.claude/projects` (`projects/`), which
//! the index reads as it reads this machine's transcripts. A sync only reads on the remote and installs nothing
//! there: rsync where both ends have it (an appended transcript costs its new bytes), else plain `ssh` running
//! `find`, `ls`, `tail` and `cat` ([`fallback`]). Nothing is deleted from the copy when the remote deletes it, as
//! the archive keeps what Claude Code deletes here.
//!
//! - [`ssh`] the ssh command (the system's OpenSSH, `GHOLA_SSH`, `BatchMode`, a connect timeout) and what its
//!   failures mean; [`sync`] one sync (lock, probe, rsync or fallback, status); [`fallback`] the plain-ssh copy;
//!   [`gitmap`] path rules from the projects' git remotes.

pub mod fallback;
pub mod gitmap;
pub mod ssh;
pub mod sync;

use crate::index::machines::{RECORD_FILE, machine_dir, remotes_dir};
use crate::transcript::PathMap;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How to reach a remote and how to read its paths: `remote.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remote {
    /// The machine's name in results (also its folder's name).
    pub name: String,
    /// `[user@]host`, as `ssh` takes it (a `~/.ssh/config` alias will do).
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// A private key file (`ssh -i`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<PathBuf>,
    /// The Claude config dir on the remote (`~/.claude` unless given; `~/` is the remote user's home).
    pub claude_dir: String,
    /// Project path rules (`ghola remote map`).
    #[serde(default)]
    pub map: Vec<PathMap>,
    /// Project path rules found by the projects' git remotes at the last sync ([`gitmap`]); `map` wins over them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auto_map: Vec<PathMap>,
    /// When it was added (RFC 3339).
    pub added: String,
}

/// The remote's Claude config dir when `--claude-dir` is not given.
pub const DEFAULT_CLAUDE_DIR: &str = "~/.claude";

/// What the last syncs of a remote did: `status.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncStatus {
    /// When the last sync started (RFC 3339).
    pub last_attempt: Option<String>,
    /// When a sync last finished without error.
    pub last_success: Option<String>,
    /// Why the last sync failed, when it did.
    pub last_error: Option<String>,
    /// Failures in a row since the last success (the background sync waits longer after each).
    #[serde(default)]
    pub failures: u32,
    /// Files and bytes the last successful sync brought.
    #[serde(default)]
    pub files: usize,
    #[serde(default)]
    pub bytes: u64,
    /// How the last sync copied: `rsync` or `ssh`.
    #[serde(default)]
    pub method: String,
}

/// Why a remote command failed, naming what to fix.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error(
        "{0:?} cannot name a remote: use 1 to 64 letters, digits, '.', '_' or '-' (not starting with '.' or '-')"
    )]
    BadName(String),
    #[error(
        "{0:?} is this machine's own name (`machine` in the settings): give the remote another name"
    )]
    ThisMachine(String),
    #[error("there is already a remote called {0:?} (`ghola remote remove {0}` first)")]
    Exists(String),
    #[error("no remote is called {name:?}{}", if known.is_empty() { " (`ghola remote add` makes one)".to_string() } else { format!(": there are {}", known.join(", ")) })]
    Unknown { name: String, known: Vec<String> },
    #[error("{0}")]
    Invalid(String),
    /// The remote could not be reached or read; the message says what to do.
    #[error("{name}: {message}")]
    Connect { name: String, message: String },
    #[error("{name}: another sync of this remote is running")]
    Busy { name: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl RemoteError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RemoteError + '_ {
        move |source| RemoteError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Every remote with a readable record, by name.
pub fn list(index_dir: &Path) -> Vec<Remote> {
    let Ok(entries) = std::fs::read_dir(remotes_dir(index_dir)) else {
        return Vec::new();
    };
    let mut out: Vec<Remote> = entries
        .flatten()
        .filter_map(|e| read_record(&e.path()).ok())
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn read_record(dir: &Path) -> Result<Remote, RemoteError> {
    let path = dir.join(RECORD_FILE);
    let bytes = std::fs::read(&path).map_err(RemoteError::io(&path))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| RemoteError::Invalid(format!("{}: {e}", path.display())))
}

/// The remote called `name`.
pub fn get(index_dir: &Path, name: &str) -> Result<Remote, RemoteError> {
    read_record(&machine_dir(index_dir, name)).map_err(|_| RemoteError::Unknown {
        name: name.to_string(),
        known: list(index_dir).into_iter().map(|r| r.name).collect(),
    })
}

/// Writes `remote`'s record (atomically, readable by this user alone).
pub fn save(index_dir: &Path, remote: &Remote) -> Result<(), RemoteError> {
    let dir = machine_dir(index_dir, &remote.name);
    std::fs::create_dir_all(&dir).map_err(RemoteError::io(&dir))?;
    let path = dir.join(RECORD_FILE);
    let bytes = serde_json::to_vec_pretty(remote).expect("a record serializes");
    crate::atomic_file::write_atomic(&path, &bytes).map_err(RemoteError::io(&path))
}

/// Adds a remote after checking its name: valid, not this machine's, not taken.
pub fn add(index_dir: &Path, this_machine: &str, remote: Remote) -> Result<Remote, RemoteError> {
    if !crate::config::is_machine_name(&remote.name) {
        return Err(RemoteError::BadName(remote.name));
    }
    if remote.name.eq_ignore_ascii_case(this_machine) {
        return Err(RemoteError::ThisMachine(remote.name));
    }
    if list(index_dir)
        .iter()
        .any(|r| r.name.eq_ignore_ascii_case(&remote.name))
        || machine_dir(index_dir, &remote.name).exists()
    {
        return Err(RemoteError::Exists(remote.name));
    }
    if remote.host.trim().is_empty()
        || remote.host.starts_with('-')
        || remote.host.contains(char::is_whitespace)
    {
        return Err(RemoteError::Invalid(format!(
            "{:?} is not a host ssh can take ([user@]host, or a name from ~/.ssh/config)",
            remote.host
        )));
    }
    if remote.claude_dir.trim().is_empty() || remote.claude_dir.contains(['\n', '\0']) {
        return Err(RemoteError::Invalid("--claude-dir is empty".into()));
    }
    save(index_dir, &remote)?;
    Ok(remote)
}

/// Removes remote `name`: its record, status and copy. What the index holds of it stays (and the archive's
/// copies), unless the caller forgets its sessions too. Returns the session ids its copy held.
pub fn remove(index_dir: &Path, name: &str) -> Result<Vec<String>, RemoteError> {
    get(index_dir, name)?;
    let dir = machine_dir(index_dir, name);
    let sessions = crate::transcript::discover(&dir)
        .sessions
        .into_iter()
        .map(|s| s.session_id)
        .collect();
    // The record goes first: a removal cut short leaves a folder no reader takes for a machine.
    let record = dir.join(RECORD_FILE);
    std::fs::remove_file(&record).map_err(RemoteError::io(&record))?;
    std::fs::remove_dir_all(&dir).map_err(RemoteError::io(&dir))?;
    Ok(sessions)
}

/// Adds (or replaces, for the same `from`) a path rule of remote `name`.
pub fn set_map(index_dir: &Path, name: &str, rule: PathMap) -> Result<Remote, RemoteError> {
    let mut r = get(index_dir, name)?;
    if rule.from.trim().is_empty() || rule.to.trim().is_empty() {
        return Err(RemoteError::Invalid(
            "a path rule needs a remote path and a local path".into(),
        ));
    }
    r.map.retain(|m| m.from != rule.from);
    r.map.push(rule);
    save(index_dir, &r)?;
    Ok(r)
}

/// Has remote `name`'s sessions read again (its path rules changed): dropped from the index (not the archive) and
/// from the listing cache, so the next update reads them with the rules.
pub fn reread(index_dir: &Path, name: &str) -> Result<usize, crate::index::IndexError> {
    let sessions: std::collections::HashSet<String> =
        crate::transcript::discover(&machine_dir(index_dir, name))
            .sessions
            .into_iter()
            .map(|s| s.session_id)
            .collect();
    let _ = std::fs::remove_file(index_dir.join(crate::transcript::catalog::CACHE_FILE));
    crate::index::forget::reread(index_dir, &sessions)
}

/// The sync status of remote `name` (the default when it never synced or the file is unreadable).
pub fn status(index_dir: &Path, name: &str) -> SyncStatus {
    std::fs::read(machine_dir(index_dir, name).join(STATUS_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// The status file in a remote's folder.
pub const STATUS_FILE: &str = "status.json";

fn save_status(index_dir: &Path, name: &str, s: &SyncStatus) {
    let path = machine_dir(index_dir, name).join(STATUS_FILE);
    let bytes = serde_json::to_vec_pretty(s).expect("a status serializes");
    if let Err(e) = crate::atomic_file::write_atomic(&path, &bytes) {
        tracing::warn!("{}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(name: &str) -> Remote {
        Remote {
            name: name.into(),
            host: "me@dev".into(),
            port: None,
            identity: None,
            claude_dir: DEFAULT_CLAUDE_DIR.into(),
            map: Vec::new(),
            auto_map: Vec::new(),
            added: "2026-11-27T00:00:00Z".into(),
        }
    }

    #[test]
    fn names_are_checked_and_records_kept_and_removed() {
        let idx = tempfile::tempdir().unwrap();
        let i = idx.path();
        for bad in ["", "../x", "a b", "-x", ".x", "a/b", &"x".repeat(65)] {
            assert!(
                matches!(add(i, "laptop", remote(bad)), Err(RemoteError::BadName(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(
            add(i, "laptop", remote("Laptop")),
            Err(RemoteError::ThisMachine(_))
        ));
        add(i, "laptop", remote("devbox")).unwrap();
        assert!(matches!(
            add(i, "laptop", remote("devbox")),
            Err(RemoteError::Exists(_))
        ));
        let mut odd = remote("ci");
        odd.host = "-oProxyCommand=x".into();
        assert!(matches!(
            add(i, "laptop", odd),
            Err(RemoteError::Invalid(_))
        ));
        assert_eq!(list(i), vec![remote("devbox")]);
        // The index reads it as a machine.
        assert_eq!(crate::index::machines::list(i)[0].name, "devbox");
        let r = set_map(
            i,
            "devbox",
            PathMap {
                from: "/home/me".into(),
                to: "/Users/me".into(),
            },
        )
        .unwrap();
        assert_eq!(r.map.len(), 1);
        assert_eq!(crate::index::machines::list(i)[0].map, r.map);
        assert!(matches!(get(i, "nope"), Err(RemoteError::Unknown { .. })));
        assert!(remove(i, "devbox").unwrap().is_empty());
        assert!(list(i).is_empty() && !machine_dir(i, "devbox").exists());
    }
}
