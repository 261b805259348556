//! A file's history from the map: the sessions that touched it, newest first, each change with the request
//! that led to it, whether a later change undid it, whether it is still in the file, and — asked for lines —
//! whether it wrote them.
//!
//! **Paths.** A path is compared in one form whatever OS wrote it: `\` read as `/`, `.` and `..` resolved, a
//! drive letter lower-cased, and paths with a drive letter compared without case. An absolute path matches what
//! was recorded; a relative one is first the file under the directory it was typed in (`base`), and when no
//! session touched that file, any recorded path that ends with it (another machine's checkout, a checkout that
//! moved), which the answer says.
//!
//! **Lines.** A change keeps fingerprints of the lines it wrote (trimmed, at least four characters with a letter
//! or digit); lines `L1-L2` of the file on disk are fingerprinted the same way (when none of them says
//! anything, the two lines around them are taken), and a change that wrote one of them is "at the lines".

use super::{FileMapError, Record, TouchRecord};
use crate::transcript::touch::{TouchKind, line_hash, telling_lines};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// What is asked.
#[derive(Debug, Clone, Default)]
pub struct FileQuery {
    /// The path as typed: absolute on any OS, or relative to `base`.
    pub path: String,
    /// Lines of the file on disk (1-based, inclusive).
    pub lines: Option<(u32, u32)>,
    /// The directory a relative path is relative to (the current directory, the calling project).
    pub base: Option<PathBuf>,
    /// Only sessions of this project (or below it).
    pub project: Option<String>,
    /// At most this many sessions (the newest).
    pub max_sessions: usize,
    /// At most this many changes per session (the ones at the lines first, then the newest).
    pub max_changes: usize,
}

/// How the asked path was found in the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Matched {
    /// The very file.
    Exact,
    /// Recorded paths ending with the path typed (no session touched the file under `base`).
    Ending,
    Nothing,
}

/// The answer.
#[derive(Debug, Clone, Serialize)]
pub struct FileHistory {
    /// The path looked for (made absolute when it was relative).
    pub path: String,
    pub matched: Matched,
    /// The file read on this machine for lines and "still in the file" (`None`: not found here).
    pub on_disk: Option<String>,
    pub lines: Option<(u32, u32)>,
    pub sessions: Vec<FileSession>,
    /// Sessions beyond `max_sessions`.
    pub more_sessions: usize,
}

/// One session that touched the file.
#[derive(Debug, Clone, Serialize)]
pub struct FileSession {
    pub session_id: String,
    pub title: Option<String>,
    pub project: String,
    pub machine: Option<String>,
    /// Its latest touch of the file (ms since the epoch).
    pub last_ms: Option<i64>,
    /// Whether one of its changes wrote the asked lines.
    pub at_lines: bool,
    pub changes: Vec<FileChange>,
    /// Changes beyond `max_changes`.
    pub more_changes: usize,
}

/// One touch of the file.
#[derive(Debug, Clone, Serialize)]
pub struct FileChange {
    /// `created`, `wrote`, `edited`, `read` or `ran`.
    pub action: &'static str,
    /// The path as the session recorded it.
    pub path: String,
    pub at_ms: Option<i64>,
    /// Set when a subagent made it.
    pub agent_id: Option<String>,
    pub message_uuid: String,
    /// The user's message before it in its conversation.
    pub request: Option<String>,
    /// The text replaced and the text written, cut short (a command: the command in `new`).
    pub old: String,
    pub new: String,
    /// The tool reported an error: nothing changed.
    pub failed: bool,
    /// A later change put the old text back (or removed every line this one wrote).
    pub undone: bool,
    /// Whether what it wrote is in the file on disk now (`None`: no file here, or nothing to look for).
    pub in_file_now: Option<bool>,
    /// It wrote one of the asked lines.
    pub at_lines: bool,
}

impl FileChange {
    /// What a reader should know of the change, in words (the terminal, the model and the browser say the same).
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = Vec::new();
        if self.at_lines {
            flags.push("wrote these lines");
        }
        if self.failed {
            flags.push("failed: nothing changed");
        }
        if self.undone {
            flags.push("undone later");
        }
        if self.in_file_now == Some(false) && !self.undone {
            flags.push("no longer in the file");
        }
        if self.agent_id.is_some() {
            flags.push("by a subagent");
        }
        flags
    }
}

/// Whether `p` is absolute on any OS's terms (`/…`, `\\server\…`, `C:\…`, `C:/…`).
pub fn is_absolute(p: &str) -> bool {
    let b = p.as_bytes();
    p.starts_with('/')
        || p.starts_with("\\\\")
        || (b.len() >= 3
            && b[0].is_ascii_alphabetic()
            && b[1] == b':'
            && matches!(b[2], b'/' | b'\\'))
}

/// A path in the one form paths are compared in (see the module's doc); the flag says it has a drive letter
/// (compared without case).
pub fn normal(p: &str) -> (String, bool) {
    let mut s = p.trim().replace('\\', "/");
    if let Some(rest) = s.strip_prefix("//?/") {
        s = rest.to_string();
    }
    let b = s.as_bytes();
    let drive = b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':';
    let absolute = s.starts_with('/') || drive;
    let mut parts: Vec<&str> = Vec::new();
    for c in s.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if parts
                    .last()
                    .is_some_and(|l| *l != ".." && !l.ends_with(':'))
                {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    let out = if s.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    };
    if drive {
        (out.to_lowercase(), true)
    } else {
        (out, false)
    }
}

fn same_path(a: &(String, bool), b: &(String, bool)) -> bool {
    if a.1 || b.1 {
        a.0.eq_ignore_ascii_case(&b.0)
    } else {
        a.0 == b.0
    }
}

fn ends_with(path: &(String, bool), tail: &str) -> bool {
    let (p, ci) = path;
    let tail = tail.trim_start_matches('/');
    if tail.is_empty() || tail.starts_with("..") {
        return false;
    }
    let (p, tail) = if *ci {
        (p.to_lowercase(), tail.to_lowercase())
    } else {
        (p.clone(), tail.to_string())
    };
    p == tail || p.ends_with(&format!("/{tail}"))
}

/// Splits `PATH:LINE` or `PATH:L1-L2` (a Windows drive's colon is part of the path).
pub fn parse_path_and_lines(arg: &str) -> Result<(String, Option<(u32, u32)>), String> {
    let Some((path, tail)) = arg.rsplit_once(':') else {
        return Ok((arg.to_string(), None));
    };
    if path.is_empty()
        || path.len() == 1
        || !tail.chars().next().is_some_and(|c| c.is_ascii_digit())
    {
        return Ok((arg.to_string(), None));
    }
    Ok((path.to_string(), Some(parse_lines(tail)?)))
}

/// `LINE` or `FIRST-LAST` (1-based, inclusive).
pub fn parse_lines(text: &str) -> Result<(u32, u32), String> {
    let text = text.trim();
    let (a, b) = text.split_once('-').unwrap_or((text, text));
    match (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
        (Ok(a), Ok(b)) if a >= 1 && b >= a => Ok((a, b)),
        _ => Err(format!(
            "`{text}` is not a line or a range of lines (PATH:LINE or PATH:FIRST-LAST, from 1; lines \"40\" or \"40-52\")"
        )),
    }
}

/// The line fingerprints of a file on disk: all of them, and those of lines `range` (widened by two lines each
/// way when none of them says anything).
fn disk_lines(path: &Path, range: Option<(u32, u32)>) -> Option<(HashSet<u32>, HashSet<u32>)> {
    const MAX_FILE: u64 = 16 << 20;
    if std::fs::metadata(path).ok()?.len() > MAX_FILE {
        return None;
    }
    let text = String::from_utf8_lossy(&std::fs::read(path).ok()?).into_owned();
    let all: HashSet<u32> = telling_lines(&text).map(|(_, l)| line_hash(l)).collect();
    let pick = |a: u32, b: u32| -> HashSet<u32> {
        telling_lines(&text)
            .filter(|(i, _)| (a as usize..=b as usize).contains(&(i + 1)))
            .map(|(_, l)| line_hash(l))
            .collect()
    };
    let at = match range {
        None => HashSet::new(),
        Some((a, b)) => {
            let exact = pick(a, b);
            if exact.is_empty() {
                pick(a.saturating_sub(2).max(1), b + 2)
            } else {
                exact
            }
        }
    };
    Some((all, at))
}

/// A file's history (see the module's doc). Reads one path bucket and the session buckets of the sessions
/// found; a damaged bucket marks the map for a rebuild and answers with what could be read.
pub fn file_history(index_dir: &Path, q: &FileQuery) -> Result<FileHistory, FileMapError> {
    let (target, matched, found, mut damaged) = matching_touches(index_dir, q)?;
    let on_disk = Path::new(&target).is_file().then(|| PathBuf::from(&target));
    let disk = on_disk.as_deref().and_then(|p| disk_lines(p, q.lines));
    let sessions: HashSet<&str> = found.iter().map(|t| t.session.as_str()).collect();
    let extra = super::session_records(index_dir, &sessions)?;
    damaged |= extra.damaged;
    if damaged {
        tracing::warn!("the file map has damage; it is rebuilt at the next update");
        super::mark_stale(index_dir);
    }
    let facts = SessionFacts::of(extra.records);
    let undone = undone_changes(&found, &facts);
    let behind = match &disk {
        Some((_, at)) if q.lines.is_some() => lineage(&found, &facts, at),
        _ => HashSet::new(),
    };
    let mut by_session: HashMap<&str, Vec<FileChange>> = HashMap::new();
    for t in &found {
        let change = FileChange {
            undone: undone.contains(&key(t)),
            at_lines: behind.contains(&key(t)),
            ..change_of(t, &facts, disk.as_ref().map(|(all, _)| all))
        };
        by_session.entry(&t.session).or_default().push(change);
    }
    let (sessions, more_sessions) = sessions_of(&found, by_session, &facts, q);
    Ok(FileHistory {
        path: target,
        matched,
        on_disk: on_disk.map(|p| p.display().to_string()),
        lines: q.lines,
        sessions,
        more_sessions,
    })
}

/// The path looked for (absolute when it was relative), how it was found, and the touches of it (one per
/// touch, in time order, within `q.project`): the file's own, else those of the recorded paths that end as it
/// does; and whether the bucket read had damage.
fn matching_touches(
    index_dir: &Path,
    q: &FileQuery,
) -> Result<(String, Matched, Vec<TouchRecord>, bool), FileMapError> {
    let typed = q.path.trim();
    let target = if is_absolute(typed) {
        typed.to_string()
    } else {
        match &q.base {
            Some(b) => super::absolute(typed, &b.display().to_string()),
            None => typed.to_string(),
        }
    };
    let target_n = normal(&target);
    // What the path ends with, when the file itself was not touched: the typed relative path, or an absolute
    // path's part below `base`.
    let tail = if is_absolute(typed) {
        q.base
            .as_ref()
            .map(|b| normal(&b.display().to_string()))
            .and_then(|b| {
                target_n
                    .0
                    .strip_prefix(&format!("{}/", b.0))
                    .map(str::to_string)
            })
    } else {
        Some(normal(typed).0)
    };
    let is_drive = |k: &str| k.as_bytes().get(1) == Some(&b':');
    let want = |k: &str| {
        k == target_n.0
            || tail
                .as_deref()
                .is_some_and(|t| ends_with(&(k.to_string(), is_drive(k)), t))
    };
    let bucket = super::touches_named(index_dir, typed, &want)?;
    let mut touches: Vec<TouchRecord> = latest_touches(bucket.records);
    touches.retain(|t| {
        q.project
            .as_deref()
            .is_none_or(|p| crate::transcript::is_within(&t.project, p))
    });
    let matched = if touches
        .iter()
        .any(|t| same_path(&normal(&t.change.path), &target_n))
    {
        touches.retain(|t| same_path(&normal(&t.change.path), &target_n));
        Matched::Exact
    } else if touches.is_empty() {
        Matched::Nothing
    } else {
        Matched::Ending
    };
    Ok((target, matched, touches, bucket.damaged))
}

/// A touch as the answer shows it (`undone` and `at_lines` are the caller's): its action, request, texts, and
/// whether what it wrote is in the file now (`disk`: the fingerprints of the file's lines, when it is here).
fn change_of(t: &TouchRecord, facts: &SessionFacts, disk: Option<&HashSet<u32>>) -> FileChange {
    let failed = facts.failed(t);
    let writes = t.change.kind.changes() && !failed && !t.change.lines.is_empty();
    let in_file_now = disk.filter(|_| writes).map(|all| {
        let present = t.change.lines.iter().filter(|h| all.contains(h)).count();
        present * 2 >= t.change.lines.len()
    });
    FileChange {
        action: match (t.change.kind, facts.created(t)) {
            (TouchKind::Write, true) => "created",
            (TouchKind::Write, false) => "wrote",
            (TouchKind::Edit, _) => "edited",
            (TouchKind::Read, _) => "read",
            (TouchKind::Ran, _) => "ran",
        },
        path: t.change.path.clone(),
        at_ms: t.at_ms,
        agent_id: t.agent.clone(),
        message_uuid: t.uuid.clone(),
        request: facts.request_before(&t.session, t.agent.as_deref(), t.seq),
        old: redacted(&t.change.old),
        new: redacted(&t.change.new),
        failed,
        undone: false,
        in_file_now,
        at_lines: false,
    }
}

/// The sessions of the changes, ordered (those at the lines first, then the newest) and cut to `q`'s limits;
/// and how many sessions were cut.
fn sessions_of(
    found: &[TouchRecord],
    by_session: HashMap<&str, Vec<FileChange>>,
    facts: &SessionFacts,
    q: &FileQuery,
) -> (Vec<FileSession>, usize) {
    let first_of: HashMap<&str, &TouchRecord> = found
        .iter()
        .rev()
        .map(|t| (t.session.as_str(), t))
        .collect();
    let mut out: Vec<FileSession> = by_session
        .into_iter()
        .map(|(sid, mut changes)| {
            changes.sort_by(|a, b| b.at_lines.cmp(&a.at_lines).then(b.at_ms.cmp(&a.at_ms)));
            let more = changes.len().saturating_sub(q.max_changes.max(1));
            changes.truncate(q.max_changes.max(1));
            let t = first_of[sid];
            FileSession {
                session_id: sid.to_string(),
                title: facts
                    .titles
                    .get(sid)
                    .cloned()
                    .or_else(|| facts.first_ask(sid)),
                project: t.project.clone(),
                machine: t.machine.clone(),
                last_ms: changes.iter().filter_map(|c| c.at_ms).max(),
                at_lines: changes.iter().any(|c| c.at_lines),
                changes,
                more_changes: more,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.at_lines
            .cmp(&a.at_lines)
            .then(b.last_ms.cmp(&a.last_ms))
            .then(a.session_id.cmp(&b.session_id))
    });
    let more = out.len().saturating_sub(q.max_sessions.max(1));
    out.truncate(q.max_sessions.max(1));
    (out, more)
}

fn redacted(s: &str) -> String {
    crate::secrets::redact(s).into_owned()
}

type TouchKey = (String, Option<String>, String, u16);

fn key(t: &TouchRecord) -> TouchKey {
    (
        t.session.clone(),
        t.agent.clone(),
        t.tool_use_id.clone(),
        t.change.index,
    )
}

/// One record per touch (the last written), in time order.
fn latest_touches(records: Vec<Record>) -> Vec<TouchRecord> {
    let mut latest: HashMap<TouchKey, TouchRecord> = HashMap::new();
    for r in records {
        if let Record::Touch(t) = r {
            latest.insert(key(&t), *t);
        }
    }
    let mut v: Vec<TouchRecord> = latest.into_values().collect();
    v.sort_by(|a, b| {
        a.at_ms
            .cmp(&b.at_ms)
            .then(a.session.cmp(&b.session))
            .then(a.seq.cmp(&b.seq))
            .then(a.change.index.cmp(&b.change.index))
    });
    v
}

/// A conversation: its session and, for a subagent's, the agent.
type Conversation = (String, Option<String>);

/// What the session buckets say of the sessions found.
#[derive(Default)]
struct SessionFacts {
    /// Per (session, agent): the asks by position.
    asks: HashMap<Conversation, Vec<(u32, String)>>,
    failed: HashSet<(String, String)>,
    created: HashSet<(String, String)>,
    titles: HashMap<String, String>,
}

impl SessionFacts {
    fn of(records: Vec<Record>) -> Self {
        let mut f = SessionFacts::default();
        for r in records {
            match r {
                Record::Ask {
                    session,
                    agent,
                    seq,
                    text,
                } => f
                    .asks
                    .entry((session, agent))
                    .or_default()
                    .push((seq, text)),
                Record::Outcome {
                    session,
                    tool_use_id,
                    failed,
                    created,
                } => {
                    let k = (session, tool_use_id);
                    if failed {
                        f.failed.insert(k.clone());
                    }
                    if created {
                        f.created.insert(k);
                    }
                }
                Record::Title { session, title } => {
                    f.titles.insert(session, title);
                }
                Record::Touch(_) => {}
            }
        }
        for v in f.asks.values_mut() {
            v.sort_by_key(|(seq, _)| *seq);
        }
        f
    }

    fn created(&self, t: &TouchRecord) -> bool {
        self.created
            .contains(&(t.session.clone(), t.tool_use_id.clone()))
    }

    fn failed(&self, t: &TouchRecord) -> bool {
        self.failed
            .contains(&(t.session.clone(), t.tool_use_id.clone()))
    }

    fn request_before(&self, session: &str, agent: Option<&str>, seq: u32) -> Option<String> {
        let asks = self
            .asks
            .get(&(session.to_string(), agent.map(str::to_string)))?;
        asks.iter()
            .rev()
            .find(|(s, _)| *s < seq)
            .map(|(_, t)| redacted(t))
    }

    fn first_ask(&self, session: &str) -> Option<String> {
        self.asks
            .get(&(session.to_string(), None))
            .and_then(|v| v.first())
            .map(|(_, t)| crate::transcript::message::one_line(&redacted(t), 80))
    }
}

/// The changes behind lines of the file: those that wrote one of them (`at`), then, going back in time, each
/// change that wrote a line a change already found replaced — the versions of the line before the one on disk.
fn lineage(found: &[TouchRecord], facts: &SessionFacts, at: &HashSet<u32>) -> HashSet<TouchKey> {
    let mut out = HashSet::new();
    // What the changes found so far replaced: a change that wrote one of these lines came before them.
    let mut replaced: HashSet<u32> = HashSet::new();
    for t in found.iter().rev() {
        if !t.change.kind.changes() || facts.failed(t) {
            continue;
        }
        if t.change
            .lines
            .iter()
            .any(|h| at.contains(h) || replaced.contains(h))
        {
            out.insert(key(t));
            replaced.extend(t.change.old_lines.iter().copied());
        }
    }
    out
}

/// The changes a later change undid: one that swapped the new text back for the old, or one that took out
/// every line this change added and put back every line it took out (a revert inside a larger edit).
fn undone_changes(found: &[TouchRecord], facts: &SessionFacts) -> HashSet<TouchKey> {
    let ok = |t: &TouchRecord| t.change.kind.changes() && !facts.failed(t);
    let changes: Vec<&TouchRecord> = found.iter().filter(|t| ok(t)).collect();
    let mut out = HashSet::new();
    for (i, c) in changes.iter().enumerate() {
        if c.change.new_hash == c.change.old_hash {
            continue;
        }
        let added: Vec<u32> = c
            .change
            .lines
            .iter()
            .filter(|h| !c.change.old_lines.contains(h))
            .copied()
            .collect();
        let removed: Vec<u32> = c
            .change
            .old_lines
            .iter()
            .filter(|h| !c.change.lines.contains(h))
            .copied()
            .collect();
        let undone = changes[i + 1..].iter().any(|d| {
            let swapped =
                d.change.new_hash == c.change.old_hash && d.change.old_hash == c.change.new_hash;
            let by_lines = !added.is_empty()
                && added
                    .iter()
                    .all(|h| d.change.old_lines.contains(h) && !d.change.lines.contains(h))
                && removed.iter().all(|h| d.change.lines.contains(h));
            swapped || by_lines
        });
        if undone {
            out.insert(key(c));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_every_os_compare_in_one_form() {
        assert_eq!(
            normal(r"C:\Users\Me\proj\.\src\..\src\a.rs"),
            ("c:/users/me/proj/src/a.rs".into(), true)
        );
        assert_eq!(normal("/home/me//p/./a.rs").0, "/home/me/p/a.rs");
        assert_eq!(normal("src/../lib.rs").0, "lib.rs");
        assert!(same_path(&normal(r"C:\P\A.rs"), &normal("c:/p/a.rs")));
        assert!(!same_path(&normal("/p/A.rs"), &normal("/p/a.rs")));
        assert!(ends_with(&normal("/home/x/proj/src/a.rs"), "src/a.rs"));
        assert!(!ends_with(&normal("/home/x/proj/xsrc/a.rs"), "src/a.rs"));
        assert!(is_absolute(r"D:\x") && is_absolute("/x") && !is_absolute("x/y"));
    }

    #[test]
    fn lines_are_parsed_from_the_right() {
        assert_eq!(
            parse_path_and_lines("src/a.rs:12").unwrap(),
            ("src/a.rs".into(), Some((12, 12)))
        );
        assert_eq!(
            parse_path_and_lines(r"C:\p\a.rs:3-9").unwrap(),
            (r"C:\p\a.rs".into(), Some((3, 9)))
        );
        assert_eq!(
            parse_path_and_lines(r"C:\p\a.rs").unwrap(),
            (r"C:\p\a.rs".into(), None)
        );
        assert!(parse_path_and_lines("a.rs:9-3").is_err());
        assert_eq!(parse_lines(" 7 - 9 ").unwrap(), (7, 9));
        assert!(parse_path_and_lines("a.rs:0").is_err());
    }
}
