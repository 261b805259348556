//! Finding every session file and every subagent transcript under a Claude config dir.
//!
//! Scans the `.jsonl` files themselves: `sessions-index.json` is no longer maintained by Claude Code 2.1.3x,
//! and a tool that trusts it misses new sessions. Subagents come in three layouts by era (see
//! [`SubagentLayout`]); all are linked to their parent session here.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// Where a subagent transcript was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubagentLayout {
    /// 1.0.x: `isSidechain: true` entries inside the session file itself.
    Inline,
    /// 2.0.x: `agent-<id>.jsonl` beside the session files; the parent is the `sessionId` inside.
    Sibling,
    /// 2.1.x: `<session>/subagents/**/agent-<id>.jsonl`, with an optional `agent-<id>.meta.json`.
    Nested,
}

/// A subagent transcript file belonging to a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentFile {
    pub agent_id: String,
    pub path: PathBuf,
    /// `agentType` from the `.meta.json` beside it (Explore, Plan, general-purpose, …), when there is one.
    pub agent_type: Option<String>,
    pub layout: SubagentLayout,
}

/// The files of one session: its transcript (absent when only subagent files survive) and its subagents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionFiles {
    /// The session id: the transcript's file name without `.jsonl` (what Claude Code calls the session).
    pub session_id: String,
    /// The `projects/<escaped-cwd>` folder holding it.
    pub project_dir: PathBuf,
    pub main: Option<PathBuf>,
    pub subagents: Vec<SubagentFile>,
    /// Claude Code deleted the session's transcript; it is read from ghola's archive.
    #[serde(default)]
    pub archived: bool,
}

impl SessionFiles {
    /// Every transcript file of the session, main first.
    pub fn all_files(&self) -> impl Iterator<Item = &Path> {
        self.main
            .iter()
            .map(PathBuf::as_path)
            .chain(self.subagents.iter().map(|s| s.path.as_path()))
    }
}

/// The result of a scan: the sessions found, and what could not be read (never fatal).
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub sessions: Vec<SessionFiles>,
    /// Paths that could not be listed or read, with the reason.
    pub problems: Vec<(PathBuf, String)>,
}

/// Scans `<claude_dir>/projects/*/`. A missing `projects` folder means no history yet, not an error.
pub fn discover(claude_dir: &Path) -> Discovery {
    let mut out = Discovery::default();
    let projects = claude_dir.join("projects");
    let entries = match fs::read_dir(&projects) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return out,
        Err(e) => {
            out.problems.push((projects, e.to_string()));
            return out;
        }
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let found = discover_project_dir(&dir);
        out.sessions.extend(found.sessions);
        out.problems.extend(found.problems);
    }
    out
}

/// Scans one project folder (`projects/<escaped-cwd>`, or any folder laid out like one).
pub fn discover_project_dir(dir: &Path) -> Discovery {
    let mut out = Discovery::default();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            out.problems.push((dir.to_path_buf(), e.to_string()));
            return out;
        }
    };
    let mut sessions: BTreeMap<String, SessionFiles> = BTreeMap::new();
    let mut siblings = Vec::new();
    let mut session_dirs = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if is_dir {
            session_dirs.push((name, path));
        } else if let Some(stem) = name.strip_suffix(".jsonl") {
            if let Some(agent) = stem.strip_prefix("agent-") {
                siblings.push((agent.to_string(), path));
            } else {
                session_entry(&mut sessions, stem, dir).main = Some(path);
            }
        }
    }
    for (name, path) in session_dirs {
        let mut files = Vec::new();
        collect_nested(&path.join("subagents"), &mut files, &mut out.problems);
        if files.is_empty() {
            continue;
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        session_entry(&mut sessions, &name, dir)
            .subagents
            .extend(files);
    }
    siblings.sort();
    for (agent_id, path) in siblings {
        let parent = match first_session_id(&path) {
            Ok(Some(id)) => id,
            Ok(None) => format!("agent-{agent_id}"),
            Err(e) => {
                out.problems.push((path, e));
                continue;
            }
        };
        session_entry(&mut sessions, &parent, dir)
            .subagents
            .push(SubagentFile {
                agent_id,
                path,
                agent_type: None,
                layout: SubagentLayout::Sibling,
            });
    }
    out.sessions.extend(sessions.into_values());
    out
}

fn session_entry<'a>(
    sessions: &'a mut BTreeMap<String, SessionFiles>,
    id: &str,
    dir: &Path,
) -> &'a mut SessionFiles {
    sessions
        .entry(id.to_string())
        .or_insert_with(|| SessionFiles {
            session_id: id.to_string(),
            project_dir: dir.to_path_buf(),
            main: None,
            subagents: Vec::new(),
            archived: false,
        })
}

/// Walks `<session>/subagents/**` for `agent-*.jsonl` (nested folders hold workflow and teammate agents).
fn collect_nested(dir: &Path, out: &mut Vec<SubagentFile>, problems: &mut Vec<(PathBuf, String)>) {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            problems.push((dir.to_path_buf(), e.to_string()));
            return;
        }
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            collect_nested(&path, out, problems);
            continue;
        }
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(agent_id) = name
            .strip_suffix(".jsonl")
            .and_then(|s| s.strip_prefix("agent-"))
        else {
            continue;
        };
        let agent_type =
            read_agent_type(&path.with_file_name(format!("agent-{agent_id}.meta.json")));
        out.push(SubagentFile {
            agent_id: agent_id.to_string(),
            path,
            agent_type,
            layout: SubagentLayout::Nested,
        });
    }
}

fn read_agent_type(meta: &Path) -> Option<String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        agent_type: Option<String>,
    }
    let bytes = fs::read(meta).ok()?;
    serde_json::from_slice::<Meta>(&bytes).ok()?.agent_type
}

/// The `sessionId` of the first line that has one (old-layout subagent files name their parent this way).
fn first_session_id(path: &Path) -> Result<Option<String>, String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Head {
        session_id: Option<String>,
    }
    let file = fs::File::open(path).map_err(|e| e.to_string())?;
    let reader = BufReader::new(file);
    for line in reader.split(b'\n').take(50) {
        let Ok(line) = line else { break };
        if let Ok(Head {
            session_id: Some(id),
        }) = serde_json::from_slice::<Head>(&line)
            && !id.is_empty()
        {
            return Ok(Some(id));
        }
    }
    Ok(None)
}
