//! A sitting of the work loop: the line of work (a project folder, or a named line inside it with its own notes
//! that inherit the folder's), its task logs (`tasks/NNN-<slug>.json` in the line's notes folder), the context
//! each task starts with, and the extraction after each task with a report of what changed.

use super::task::{TaskOutcome, summary};
use crate::index::snapshot::Snapshot;
use crate::notes::context::compile_for;
use crate::notes::extract::{Extractor, Outcome};
use crate::notes::store::{NotesError, to_json, write_atomic, write_lock};
use crate::notes::{Category, Store};
use crate::settings::Mode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a step of the work loop failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    /// The notes store (its lock, its files) or an extraction.
    #[error(transparent)]
    Notes(#[from] NotesError),
    /// A task log could not be created.
    #[error("task log {}: {source}", path.display())]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The session is not in the index yet (extraction waits for the next update).
    #[error("session {0} is not in the index yet")]
    NotIndexed(String),
}

/// Which notes a sitting reads and writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The project folder (where tasks run).
    pub project: String,
    /// A named line of work, or `None` for the folder's own notes.
    pub name: Option<String>,
}

impl Line {
    /// The notes' key: the folder, or `<folder>#<name>`.
    pub fn key(&self) -> String {
        match &self.name {
            Some(n) => format!("{}#{n}", self.project),
            None => self.project.clone(),
        }
    }

    /// What the prompt shows: the name, or the folder's last component.
    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| {
            Path::new(&self.project)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| self.project.clone())
        })
    }

    /// Makes sure a named line's notes exist and inherit the folder's (its parent).
    pub fn prepare(&self, store: &Store) -> Result<(), WorkError> {
        let Some(name) = &self.name else {
            return Ok(());
        };
        let _lock = write_lock(&store.root)?;
        let mut n = store.open(&self.key());
        if n.meta.parent.as_deref() != Some(self.project.as_str()) || n.meta.display_name != *name {
            n.meta.parent = Some(self.project.clone());
            n.meta.display_name = name.clone();
            n.save_meta()?;
        }
        Ok(())
    }

    /// Where its task logs are.
    pub fn tasks_dir(&self, store: &Store) -> PathBuf {
        store.project_dir(&self.key()).join("tasks")
    }
}

/// A name that cannot name a line of work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{0}' cannot name a line of work: use letters, digits, '-', '_' or '.', at most 60 characters"
)]
pub struct BadName(pub String);

/// A name fit for a line of work (it becomes part of a folder name).
pub fn valid_name(name: &str) -> Result<&str, BadName> {
    let ok = !name.is_empty()
        && name.len() <= 60
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_' || c == '.');
    if ok {
        Ok(name)
    } else {
        Err(BadName(name.to_string()))
    }
}

/// One task as its log keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskLog {
    pub number: u32,
    pub prompt: String,
    pub started_at: String,
    pub finished_at: String,
    pub mode: String,
    /// The Claude Code session it ran in (as Claude Code reported it).
    pub session_id: Option<String>,
    /// The session it resumed, if any.
    pub resumed: Option<String>,
    pub result: Option<String>,
    pub summary: String,
    pub is_error: bool,
    pub interrupted: bool,
    pub exit_code: Option<i32>,
    pub cost_usd: Option<f64>,
    pub duration_ms: Option<u64>,
    pub context_chars: usize,
    /// The extraction's outcome (absent until it ran; a failure can be retried).
    #[serde(default)]
    pub extraction: Option<Value>,
    pub events: Vec<Value>,
}

/// Lowercase words of the prompt, joined by `-` (at most 40 characters).
pub fn slug(prompt: &str) -> String {
    let mut s = String::new();
    for w in prompt
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if s.len() + w.len() + 1 > 40 {
            break;
        }
        if !s.is_empty() {
            s.push('-');
        }
        s.push_str(&w.to_lowercase());
    }
    if s.is_empty() { "task".into() } else { s }
}

/// Every task log of a line, by number (unreadable files are skipped).
pub fn task_logs(dir: &Path) -> Vec<(PathBuf, TaskLog)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, TaskLog)> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| {
            let log = serde_json::from_slice::<TaskLog>(&std::fs::read(&p).ok()?).ok()?;
            Some((p, log))
        })
        .collect();
    out.sort_by_key(|(_, l)| l.number);
    out
}

/// The next free task number (two sittings on one line each take their own).
fn next_number(dir: &Path) -> u32 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 1;
    };
    rd.flatten()
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .split('-')
                .next()?
                .parse::<u32>()
                .ok()
        })
        .max()
        .unwrap_or(0)
        + 1
}

/// Writes a task's log (a new number, claimed by creating the file exclusively), returns its path.
pub fn write_task_log(dir: &Path, log: &mut TaskLog) -> Result<PathBuf, WorkError> {
    std::fs::create_dir_all(dir).map_err(crate::notes::store::io(dir))?;
    loop {
        log.number = next_number(dir);
        let path = dir.join(format!("{:03}-{}.json", log.number, slug(&log.prompt)));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(claimed) => {
                // The empty file only claims the number; it is closed before being replaced, as Windows
                // refuses to rename over a file that is still open.
                drop(claimed);
                write_atomic(&path, &to_json(&path, log, true)?)?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(WorkError::Log { path, source }),
        }
    }
}

/// Rewrites an existing task log (after its extraction).
pub fn update_task_log(path: &Path, log: &TaskLog) -> Result<(), WorkError> {
    Ok(write_atomic(path, &to_json(path, log, true)?)?)
}

/// An earlier task as the next ones see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Earlier {
    pub prompt: String,
    pub summary: String,
    pub session_id: Option<String>,
}

/// The context a task starts with: the notes (the folder's as parent of a named line) and, in `summary` mode,
/// the earlier tasks of the sitting, all within `max_chars` (the tasks take at most a third; the oldest go
/// first).
pub fn context(
    store: &Store,
    line: &Line,
    snap: Option<&Snapshot>,
    earlier: &[Earlier],
    mode: Mode,
    max_chars: usize,
) -> String {
    let mut tasks = String::new();
    if mode == Mode::Summary && !earlier.is_empty() {
        let mut lines: Vec<String> = earlier
            .iter()
            .enumerate()
            .map(|(k, e)| format!("{}. {} — {}\n", k + 1, e.prompt, e.summary))
            .collect();
        let head = "## Earlier tasks of this sitting\n";
        while !lines.is_empty()
            && head.len() + lines.iter().map(String::len).sum::<usize>() > max_chars / 3
        {
            lines.remove(0);
        }
        if !lines.is_empty() {
            tasks = format!("{head}{}", lines.concat());
        }
    }
    let room = max_chars.saturating_sub(tasks.len() + 2);
    let compiled = compile_for(
        store,
        &store.open(&line.key()),
        &line.project,
        snap,
        None,
        room,
    );
    match (compiled.is_empty(), tasks.is_empty()) {
        (true, _) => tasks,
        (false, true) => compiled,
        (false, false) => format!("{compiled}\n{tasks}"),
    }
}

/// Counts and ids per category, to tell what an extraction changed.
pub fn fingerprint(store: &Store, key: &str) -> BTreeMap<Category, Vec<String>> {
    let n = store.open(key);
    Category::ALL
        .into_iter()
        .map(|c| (c, n.get(c).iter().map(|i| i.id.clone()).collect()))
        .collect()
}

/// "architecture: added 2 items; decisions: 1; failures: no updates; plan: updated".
pub fn describe_change(
    before: &BTreeMap<Category, Vec<String>>,
    after: &BTreeMap<Category, Vec<String>>,
) -> String {
    let empty = Vec::new();
    Category::ALL
        .into_iter()
        .map(|c| {
            let b = before.get(&c).unwrap_or(&empty);
            let a = after.get(&c).unwrap_or(&empty);
            let added = a.iter().filter(|id| !b.contains(id)).count();
            let removed = b.iter().filter(|id| !a.contains(id)).count();
            let what = if c == Category::Plan {
                if a != b {
                    "updated".to_string()
                } else {
                    "no updates".to_string()
                }
            } else if added == 0 && removed == 0 {
                "no updates".to_string()
            } else if removed == 0 {
                format!("added {added} item{}", if added == 1 { "" } else { "s" })
            } else {
                format!("added {added}, superseded {removed}")
            };
            format!("{}: {what}", c.name())
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Extracts the notes of one task's session into the line's notes; returns the outcomes per window.
pub fn extract_task(
    line: &Line,
    snap: &Snapshot,
    session: &str,
    ex: &Extractor,
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<Vec<Outcome>, WorkError> {
    let windows = crate::notes::window::windows_of(snap, session);
    if windows.is_empty() {
        return Err(WorkError::NotIndexed(session.to_string()));
    }
    let mut out = Vec::new();
    for w in windows {
        out.push(ex.window(snap, &line.key(), session, w.window, cancel)?);
    }
    Ok(out)
}

/// The log of a finished task.
pub fn log_of(
    prompt: &str,
    started_at: String,
    mode: Mode,
    resumed: Option<String>,
    context_chars: usize,
    outcome: &TaskOutcome,
) -> TaskLog {
    TaskLog {
        number: 0,
        prompt: prompt.to_string(),
        started_at,
        finished_at: chrono::Utc::now().to_rfc3339(),
        mode: mode.name().into(),
        session_id: outcome.session_id.clone(),
        resumed,
        result: outcome.result.clone(),
        summary: summary(outcome),
        is_error: outcome.is_error,
        interrupted: outcome.interrupted,
        exit_code: outcome.exit_code,
        cost_usd: outcome.cost_usd,
        duration_ms: outcome.duration_ms,
        context_chars,
        extraction: None,
        events: outcome.events.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_numbers_and_change_reports() {
        assert_eq!(
            slug("Fix the parser's bug, please!"),
            "fix-the-parser-s-bug-please"
        );
        assert_eq!(slug("!!!"), "task");
        let dir = tempfile::tempdir().unwrap();
        let mut log = log_of(
            "first task",
            "t".into(),
            Mode::Summary,
            None,
            0,
            &TaskOutcome::default(),
        );
        let p1 = write_task_log(dir.path(), &mut log).unwrap();
        let p2 = write_task_log(dir.path(), &mut log).unwrap();
        assert!(p1.ends_with("001-first-task.json"));
        assert!(p2.ends_with("002-first-task.json"));
        assert_eq!(task_logs(dir.path()).len(), 2);
        let before: BTreeMap<Category, Vec<String>> = [
            (Category::Architecture, vec!["a-1".to_string()]),
            (Category::Plan, vec!["p-1".to_string()]),
        ]
        .into();
        let after: BTreeMap<Category, Vec<String>> = [
            (
                Category::Architecture,
                vec!["a-1".into(), "a-2".into(), "a-3".into()],
            ),
            (Category::Decisions, vec!["d-1".into()]),
            (Category::Plan, vec!["p-2".into()]),
        ]
        .into();
        assert_eq!(
            describe_change(&before, &after),
            "architecture: added 2 items; decisions: added 1 item; failures: no updates; plan: updated"
        );
        assert!(valid_name("api-v2").is_ok());
        assert!(valid_name("../x").is_err());
    }
}
