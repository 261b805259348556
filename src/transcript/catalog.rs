//! Summaries of sessions and projects: the shapes `ghola sessions`/`ghola projects` print and the MCP
//! listing tools return, built in one place so the two surfaces never disagree, and the [`Listing`] they come
//! from: a session is parsed once, then listed from a cache until one of its files changes.

use super::discover::{Discovery, SessionFiles};
use super::is_within;
use super::session::{FileStatus, Session};
use super::source::Sources;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// One subagent run of a session.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SubagentSummary {
    pub agent_id: String,
    pub agent_type: Option<String>,
    pub messages: usize,
    /// A warm-up run Claude Code started on its own ([`super::session::Subagent::is_warmup`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warmup: bool,
}

/// One session, as listed by `ghola sessions --json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionSummary {
    pub session_id: String,
    pub project: String,
    pub git_branch: Option<String>,
    pub first_timestamp: Option<DateTime<Utc>>,
    pub last_timestamp: Option<DateTime<Utc>>,
    /// Messages of the main conversation, split assistant entries merged.
    pub messages: usize,
    pub windows: u32,
    pub subagents: usize,
    pub title: Option<String>,
    pub skipped_lines: u64,
    pub subagent_sessions: Vec<SubagentSummary>,
    /// Per-file read report (lines, malformed lines, unknown types, …).
    pub files: Vec<FileStatus>,
    /// Claude Code deleted the transcript; it is read from ghola's archive.
    pub archived: bool,
    /// The other machine it was recorded on (`None`: this machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

impl SessionSummary {
    /// Whether it holds nothing anyone asked for (a transcript of 0 bytes, a title alone, or only the warm-up
    /// subagents Claude Code starts beside an empty one): counted, not listed to people. A subagent's work
    /// whose main transcript is gone is listed: search finds it and `show` reads it.
    pub fn is_empty(&self) -> bool {
        self.messages == 0 && self.subagents_at_work().next().is_none()
    }

    /// Its subagent runs that were asked for: every one but the warm-ups Claude Code starts on its own.
    pub fn subagents_at_work(&self) -> impl Iterator<Item = &SubagentSummary> {
        self.subagent_sessions.iter().filter(|a| !a.warmup)
    }

    /// Whether the session's last message is at or after `t` (`since` on the listings).
    pub fn active_since(&self, t: DateTime<Utc>) -> bool {
        self.last_timestamp.is_some_and(|last| last >= t)
    }

    /// Summarises a loaded session.
    pub fn of(s: &Session) -> Self {
        let (first, last) = s.time_range();
        SessionSummary {
            session_id: s.session_id.clone(),
            project: s.project.clone(),
            git_branch: s.git_branch().map(str::to_owned),
            first_timestamp: first,
            last_timestamp: last,
            messages: s.messages.len(),
            windows: s.windows,
            subagents: s.subagents.len(),
            title: s.title.clone(),
            skipped_lines: s.skipped_lines(),
            subagent_sessions: s
                .subagents
                .iter()
                .map(|a| SubagentSummary {
                    agent_id: a.agent_id.clone(),
                    agent_type: a.agent_type.clone(),
                    messages: a.messages.len(),
                    warmup: a.is_warmup(),
                })
                .collect(),
            files: s.files.clone(),
            archived: s.archived,
            machine: s.machine.clone(),
        }
    }
}

/// One project, as listed by `ghola projects --json`.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectSummary {
    pub project: String,
    pub sessions: usize,
    /// Messages of the main conversations and of subagents.
    pub messages: usize,
    pub last_activity: Option<DateTime<Utc>>,
    pub branches: Vec<String>,
    /// Of its sessions, those read from ghola's archive (Claude Code deleted their transcripts).
    pub archived_sessions: usize,
    /// The machines its sessions were recorded on (`None`: this one), sorted; front ends name them.
    #[serde(skip)]
    pub machines: Vec<Option<String>>,
}

/// What a listing keeps of one session: its summary, what the project listing adds up, and the fingerprint of the
/// files it was read from. A listing reads a session again only when that fingerprint changed, so listing a large
/// history costs a directory walk and a `stat` per file, not a parse of every transcript.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Listed {
    /// The `projects/<escaped-cwd>` folder the session is in (with the id, what identifies it).
    pub project_dir: PathBuf,
    files: Vec<FileStamp>,
    pub summary: SessionSummary,
    /// Messages of the main conversation and of subagents.
    pub all_messages: usize,
    /// Every git branch its messages name, sorted.
    pub branches: Vec<String>,
}

/// A file's size and modification time when it was read; a file read from the archive (gone from disk) is
/// stamped `u64::MAX`, 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct FileStamp {
    path: PathBuf,
    size: u64,
    mtime_ns: i128,
}

/// A file's modification time in nanoseconds since the epoch (0 when the OS cannot say): the listing's stamps
/// and the index's fingerprints both take it from here.
pub fn mtime_ns(m: &std::fs::Metadata) -> i128 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128)
}

fn stamps(files: &SessionFiles) -> Vec<FileStamp> {
    files
        .all_files()
        .map(|p| {
            let (size, mtime_ns) =
                std::fs::metadata(p).map_or((u64::MAX, 0), |m| (m.len(), mtime_ns(&m)));
            FileStamp {
                path: p.to_path_buf(),
                size,
                mtime_ns,
            }
        })
        .collect()
}

impl Listed {
    /// Lists a loaded session, read from files stamped `files`.
    fn of(s: &Session, project_dir: &Path, files: Vec<FileStamp>) -> Self {
        let branches: BTreeSet<String> = s
            .all_messages()
            .filter_map(|m| m.git_branch.clone())
            .collect();
        Listed {
            project_dir: project_dir.to_path_buf(),
            files,
            summary: SessionSummary::of(s),
            all_messages: s.all_messages().count(),
            branches: branches.into_iter().collect(),
        }
    }
}

/// The listing cache's file name, in the index folder (the CLI and the server share it).
pub const CACHE_FILE: &str = "listing.json";

/// A session that recorded no working directory is listed under its folder's escaped name
/// (`-Users-me-src-app`); when another session of the same folder recorded one, that path is the project's real
/// name, and the session is listed under it (the folder is one directory's history); else the folder's name read
/// back into a path that exists on this machine ([`unescape_on_disk`]).
fn name_projects_by_siblings(sessions: &mut [Listed]) {
    let mut real: HashMap<PathBuf, String> = HashMap::new();
    for l in sessions.iter() {
        if !folder_named(l) {
            real.entry(l.project_dir.clone())
                .or_insert_with(|| l.summary.project.clone());
        }
    }
    // No sibling recorded one: the folder's name read back into a path that exists here, if one does.
    let mut on_disk: HashMap<String, Option<String>> = HashMap::new();
    for l in sessions.iter_mut() {
        if !folder_named(l) {
            continue;
        }
        if let Some(p) = real.get(&l.project_dir) {
            l.summary.project = p.clone();
        } else if let Some(p) = on_disk
            .entry(l.summary.project.clone())
            .or_insert_with_key(|name| unescape_on_disk(name))
        {
            l.summary.project = p.clone();
        }
    }
}

/// The directory whose path Claude Code escaped into `name` (`/`, `.`, `_` and spaces all became `-`), found by
/// trying each reading against this machine's folders; `None` when none exists here (another machine's
/// history, a folder since removed) or the name is not an escaped Unix path.
fn unescape_on_disk(name: &str) -> Option<String> {
    let rest = name.strip_prefix('-')?;
    let tokens: Vec<&str> = rest.split('-').collect();
    if tokens.len() > 40 || tokens.iter().all(|t| t.is_empty()) {
        return None;
    }
    let mut tries = 0usize;
    resolve(Path::new("/"), tokens[0], &tokens[1..], &mut tries)
        .map(|p| p.to_string_lossy().into_owned())
}

/// One step of [`unescape_on_disk`]: `dir` exists, `part` is the component being built from the tokens so far
/// (one replaced character between each two), `rest` the tokens left. At most a few hundred directories are looked at.
fn resolve(dir: &Path, part: &str, rest: &[&str], tries: &mut usize) -> Option<PathBuf> {
    *tries += 1;
    if *tries > 500 {
        return None;
    }
    let Some((next, after)) = rest.split_first() else {
        let whole = dir.join(part);
        return (!part.is_empty() && whole.is_dir()).then_some(whole);
    };
    // `part` ends here: it must be a folder, and `next` starts the next component (an empty token: one that
    // starts with a replaced character, such as `.cache`).
    let here = dir.join(part);
    if !part.is_empty()
        && here.is_dir()
        && let Some(p) = resolve(&here, next, after, tries)
    {
        return Some(p);
    }
    // Or the `-` was one of the characters Claude Code replaces, inside one component: only readings that
    // begin the name of something in `dir` are followed.
    let names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    for sep in ["-", ".", "_", " "] {
        let longer = format!("{part}{sep}{next}");
        if names.iter().any(|n| n.starts_with(&longer))
            && let Some(p) = resolve(dir, &longer, after, tries)
        {
            return Some(p);
        }
    }
    None
}

/// Whether a session is listed under its folder's escaped name (it recorded no working directory).
fn folder_named(l: &Listed) -> bool {
    l.project_dir
        .file_name()
        .is_some_and(|n| n.to_string_lossy() == l.summary.project)
}

/// The version of the listing cache's layout (and of what its summaries hold: 2 titles untitled sessions by their
/// first request, 3 without what an IDE added to it, 4 marks warm-up subagents); a cache of another version is
/// read as empty.
const CACHE_VERSION: u32 = 4;

#[derive(Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    sessions: Vec<Listed>,
}

/// Every session under a Claude config dir (archived ones included), newest first, and what discovery could
/// not read. Built by [`Listing::refresh`].
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub sessions: Vec<Listed>,
    pub discovery: Discovery,
}

impl Listing {
    /// Lists the history under `claude_dir`, reusing what `previous` (a listing kept in memory, as the MCP
    /// server does) or else the cache file `cache` holds for every session whose files are unchanged, and
    /// reading the others (in parallel). The cache file, when given, is rewritten (atomically) if anything
    /// changed; a missing, damaged or foreign cache is read as empty: it is only a cache.
    pub fn refresh(
        src: &Sources,
        claude_dir: &Path,
        cache: Option<&Path>,
        previous: Option<Listing>,
    ) -> Listing {
        Self::of_discovery(src, src.discover_all(claude_dir), cache, previous)
    }

    /// [`Listing::refresh`] from a discovery the caller already made (duncan's routing has one).
    pub fn of_discovery(
        src: &Sources,
        found: Discovery,
        cache: Option<&Path>,
        previous: Option<Listing>,
    ) -> Listing {
        use rayon::prelude::*;
        let known = match previous {
            Some(p) => p.sessions,
            None => cache.map(read_cache).unwrap_or_default(),
        };
        let mut old: HashMap<(PathBuf, String), Listed> = known
            .into_iter()
            .map(|l| ((l.project_dir.clone(), l.summary.session_id.clone()), l))
            .collect();
        let mut kept = Vec::with_capacity(found.sessions.len());
        let mut todo = Vec::new();
        for f in &found.sessions {
            let now = stamps(f);
            match old.remove(&(f.project_dir.clone(), f.session_id.clone())) {
                Some(l) if l.files == now && l.summary.archived == f.archived => kept.push(l),
                _ => todo.push((f, now)),
            }
        }
        let changed = !todo.is_empty() || !old.is_empty();
        let fresh: Vec<Listed> = todo
            .into_par_iter()
            .map(|(f, now)| Listed::of(&super::load_session(src, f), &f.project_dir, now))
            .collect();
        kept.extend(fresh);
        kept.sort_by(|a, b| {
            b.summary
                .last_timestamp
                .cmp(&a.summary.last_timestamp)
                .then_with(|| a.summary.session_id.cmp(&b.summary.session_id))
        });
        if changed && let Some(path) = cache {
            write_cache(path, &kept);
        }
        name_projects_by_siblings(&mut kept);
        Listing {
            sessions: kept,
            discovery: found,
        }
    }

    /// Projects with their sessions, most recently active first.
    pub fn projects(&self) -> Vec<ProjectSummary> {
        let mut by: BTreeMap<&str, (ProjectSummary, BTreeSet<&str>)> = BTreeMap::new();
        for l in &self.sessions {
            let s = &l.summary;
            let (p, branches) = by.entry(s.project.as_str()).or_insert_with(|| {
                let summary = ProjectSummary {
                    project: s.project.clone(),
                    sessions: 0,
                    messages: 0,
                    last_activity: None,
                    branches: Vec::new(),
                    archived_sessions: 0,
                    machines: Vec::new(),
                };
                (summary, BTreeSet::new())
            });
            p.sessions += 1;
            p.archived_sessions += usize::from(s.archived);
            p.messages += l.all_messages;
            p.last_activity = p.last_activity.max(s.last_timestamp);
            if !p.machines.contains(&s.machine) {
                p.machines.push(s.machine.clone());
                p.machines.sort();
            }
            branches.extend(l.branches.iter().map(String::as_str));
        }
        let mut out: Vec<ProjectSummary> = by
            .into_values()
            .map(|(mut p, branches)| {
                p.branches = branches.into_iter().map(str::to_owned).collect();
                p
            })
            .collect();
        out.sort_by_key(|p| std::cmp::Reverse(p.last_activity));
        out
    }

    /// Leaves out the sessions without a message (empty and title-only transcripts), which mean nothing to a
    /// person browsing; returns how many.
    pub fn drop_empty(&mut self) -> usize {
        let before = self.sessions.len();
        self.sessions.retain(|l| !l.summary.is_empty());
        before - self.sessions.len()
    }

    /// Keeps the sessions recorded on a machine `keep` accepts (`None`: this machine).
    pub fn retain_machines(&mut self, keep: impl Fn(Option<&str>) -> bool) {
        self.sessions.retain(|l| keep(l.summary.machine.as_deref()));
    }

    /// The sessions of a project (its directory or below), or all of them when `project` is `None`, newest first.
    pub fn sessions_in(&self, project: Option<&str>) -> Vec<&SessionSummary> {
        self.sessions
            .iter()
            .map(|l| &l.summary)
            .filter(|s| project.is_none_or(|p| is_within(&s.project, p)))
            .collect()
    }
}

fn read_cache(path: &Path) -> Vec<Listed> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    match serde_json::from_slice::<CacheFile>(&bytes) {
        Ok(c) if c.version == CACHE_VERSION => c.sessions,
        Ok(_) => Vec::new(),
        Err(e) => {
            tracing::warn!(
                "listing cache {} unreadable ({e}); rebuilding it",
                path.display()
            );
            Vec::new()
        }
    }
}

fn write_cache(path: &Path, sessions: &[Listed]) {
    let file = CacheFile {
        version: CACHE_VERSION,
        sessions: sessions.to_vec(),
    };
    let written = serde_json::to_vec(&file)
        .map_err(std::io::Error::other)
        .and_then(|bytes| crate::atomic_file::write_atomic(path, &bytes));
    if let Err(e) = written {
        // A listing without its cache is only slower next time.
        tracing::warn!("cannot write the listing cache {}: {e}", path.display());
    }
}

/// Unix paths only: Windows folders are escaped from `C:\…` and are not read back.
#[cfg(all(test, unix))]
mod unescape_tests {
    use super::unescape_on_disk;

    #[test]
    fn an_escaped_folder_name_is_read_back_into_the_path_that_exists() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let real = root.join("my-app.v2").join("sub_dir");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::create_dir_all(root.join("my")).unwrap();
        let escaped: String = real
            .to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        assert_eq!(
            unescape_on_disk(&escaped).as_deref(),
            Some(real.to_str().unwrap())
        );
        assert_eq!(unescape_on_disk("-no-such-place-here-at-all"), None);
        assert_eq!(unescape_on_disk("C--Users-me"), None);
    }
}
