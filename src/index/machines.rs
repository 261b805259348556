//! Where other machines' histories live in ghola's store, and which there are: `<index>/remotes/<name>/` holds a
//! copy of that machine's `~/.claude/projects` (as `projects/`, kept by `ghola remote sync`) and its record
//! (`remote.json`, written by the `remote` module). The index reads those copies as it reads this machine's
//! transcripts; a message's machine is the copy its transcript lies in.
//!
//! Only the name and the path rules of a record are read here; how to reach the machine is the `remote`
//! module's.

use crate::transcript::{Machine, PathMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The folder of every other machine's copy.
pub fn remotes_dir(index_dir: &Path) -> PathBuf {
    index_dir.join("remotes")
}

/// The folder of machine `name`'s copy (its `projects/` and `remote.json`).
pub fn machine_dir(index_dir: &Path, name: &str) -> PathBuf {
    remotes_dir(index_dir).join(name)
}

/// The record's file in a machine's folder.
pub const RECORD_FILE: &str = "remote.json";

/// What this module reads of a record.
#[derive(serde::Deserialize)]
struct Record {
    name: String,
    #[serde(default)]
    map: Vec<PathMap>,
    #[serde(default)]
    auto_map: Vec<PathMap>,
}

/// The machines with a readable record under `index_dir`, by name. A folder without one (a copy being set up,
/// or a damaged record) is left out and logged.
pub fn list(index_dir: &Path) -> Vec<Machine> {
    let Ok(entries) = std::fs::read_dir(remotes_dir(index_dir)) else {
        return Vec::new();
    };
    let mut out: Vec<Machine> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let dir = e.path();
            let bytes = std::fs::read(dir.join(RECORD_FILE)).ok()?;
            match serde_json::from_slice::<Record>(&bytes) {
                Ok(r) if Some(r.name.as_str()) == dir.file_name().and_then(|n| n.to_str()) => {
                    // The rules found by git remotes first: of two rules of one length, the later (a person's) wins.
                    let mut map = r.auto_map;
                    map.extend(r.map);
                    Some(Machine {
                        name: r.name,
                        dir,
                        map,
                    })
                }
                Ok(_) => None,
                Err(e) => {
                    tracing::warn!("{}: {e}", dir.join(RECORD_FILE).display());
                    None
                }
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The name of the machine whose copy under `index_dir` holds `path`, if any: what the index tells a
/// message's machine by (`None`: this machine's own history).
pub fn machine_of_path(index_dir: &Path, path: &Path) -> Option<String> {
    let rest = path.strip_prefix(remotes_dir(index_dir)).ok()?;
    let name = rest.components().next()?.as_os_str().to_str()?;
    Some(name.to_string())
}

/// The machines under an index dir, read again whenever a record or the set of folders changed (a few `stat`s
/// per look): what readers' `Sources` are handed.
pub struct Live {
    index_dir: PathBuf,
    cached: Mutex<Option<(Stamp, Arc<[Machine]>)>>,
}

/// The modification times [`Live`] compares: the remotes folder's, then each record's.
type Stamp = Vec<Option<SystemTime>>;

impl Live {
    pub fn new(index_dir: &Path) -> Live {
        Live {
            index_dir: index_dir.to_path_buf(),
            cached: Mutex::new(None),
        }
    }

    /// The modification times that say whether the machines changed: the remotes folder's and each record's.
    fn stamp(&self) -> Vec<Option<SystemTime>> {
        let dir = remotes_dir(&self.index_dir);
        let mut stamp = vec![std::fs::metadata(&dir).and_then(|m| m.modified()).ok()];
        if let Ok(entries) = std::fs::read_dir(&dir) {
            let mut records: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path().join(RECORD_FILE))
                .collect();
            records.sort();
            stamp.extend(
                records
                    .iter()
                    .map(|r| std::fs::metadata(r).and_then(|m| m.modified()).ok()),
            );
        }
        stamp
    }
}

impl crate::transcript::source::MachinesView for Live {
    fn current(&self) -> Arc<[Machine]> {
        let stamp = self.stamp();
        let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((s, m)) = cached.as_ref()
            && *s == stamp
        {
            return m.clone();
        }
        let machines: Arc<[Machine]> = list(&self.index_dir).into();
        *cached = Some((stamp, machines.clone()));
        machines
    }

    fn machine_of(&self, path: &Path) -> Option<String> {
        machine_of_path(&self.index_dir, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::source::MachinesView;

    #[test]
    fn machines_are_the_folders_with_a_record_and_are_read_again_when_one_changes() {
        let idx = tempfile::tempdir().unwrap();
        let live = Live::new(idx.path());
        assert!(live.current().is_empty());
        let dev = machine_dir(idx.path(), "devbox");
        std::fs::create_dir_all(dev.join("projects")).unwrap();
        assert!(live.current().is_empty(), "no record yet");
        std::fs::write(dev.join(RECORD_FILE), r#"{"name":"devbox","ssh":"me@dev"}"#).unwrap();
        let now = live.current();
        assert_eq!(now.len(), 1);
        assert_eq!(now[0].name, "devbox");
        assert_eq!(now[0].dir, dev);
        // A damaged record, or one naming another folder, is left out.
        let odd = machine_dir(idx.path(), "odd");
        std::fs::create_dir_all(&odd).unwrap();
        std::fs::write(odd.join(RECORD_FILE), "{not json").unwrap();
        let other = machine_dir(idx.path(), "other");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join(RECORD_FILE), r#"{"name":"devbox"}"#).unwrap();
        assert_eq!(live.current().len(), 1);
        assert_eq!(
            machine_of_path(idx.path(), &dev.join("projects/-w/s.jsonl")).as_deref(),
            Some("devbox")
        );
        assert_eq!(
            machine_of_path(
                idx.path(),
                Path::new("/home/me/.claude/projects/-w/s.jsonl")
            ),
            None
        );
    }
}
