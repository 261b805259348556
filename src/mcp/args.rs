//! The MCP tools' arguments, as the model sends them: every field optional but the one a tool cannot do
//! without, integers signed so that a negative one is refused with a message instead of failing to parse.

use crate::replay::run::{BATCH_SIZE, COPIES, LIMIT, MAX_BATCH_SIZE, MAX_COPIES, MAX_LIMIT};
use crate::search::{MAX_CONTEXT, MAX_RESULTS, RELATIVE_FLOOR};
use crate::service::request::{
    MAX_CHARS, MIN_MAX_CHARS, MODEL_CONTEXT, MODEL_MAX_CHARS, MODEL_RESULTS, THRESHOLD,
};
use crate::service::{FILE_SESSIONS, MAX_FILE_SESSIONS};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of the search tools.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// What to look for: words, an error message, a file path, a function name, or a question.
    pub query: String,
    /// Project directory to search (sessions started in it or below). Default: the current project.
    /// Ignored by search_global_history.
    pub project: Option<String>,
    /// Only messages at or after this time (ISO 8601; a date alone is that local day).
    pub after: Option<String>,
    /// Only messages before this time (ISO 8601, exclusive).
    pub before: Option<String>,
    #[schemars(description = format!(
        "Messages of context before and after each hit (default {MODEL_CONTEXT}, at most {MAX_CONTEXT}; read \
         more around a hit with get_session_detail)."
    ))]
    pub context_before_after: Option<i64>,
    #[schemars(description = format!(
        "Minimum semantic similarity (0..1) for a hit that matches no query word (default {THRESHOLD})."
    ))]
    pub threshold: Option<f64>,
    #[schemars(description = format!(
        "Leave out hits scoring under this fraction (0..1) of the best hit's score (default {RELATIVE_FLOOR}; 0 \
         keeps every hit)."
    ))]
    pub relative_floor: Option<f64>,
    #[schemars(description = format!(
        "Number of results (default {MODEL_RESULTS}, at most {MAX_RESULTS}); with group_by=\"session\", of \
         sessions."
    ))]
    pub max_results: Option<i64>,
    /// Results to skip, for paging (default 0).
    pub offset: Option<i64>,
    /// Include subagent conversations (default true).
    pub include_subagents: Option<bool>,
    /// Only messages this recent: an age ("90m", "12h", "3d", "2w") or a date ("2026-11-01").
    pub since: Option<String>,
    /// Only this session: a session id (or unique prefix), searched in whatever project it was recorded unless
    /// `project` is given too, or "current" for the calling session's own earlier windows (what compaction took
    /// away).
    pub session_id: Option<String>,
    /// "session": one entry per session (title, time range, match count, best score, the best snippets) instead
    /// of one per hit ("hit", the default); page with max_results/offset over sessions.
    pub group_by: Option<String>,
    #[schemars(description = format!(
        "The most characters the answer may take (default {MODEL_MAX_CHARS}, about {} tokens; from \
         {MIN_MAX_CHARS} to {MAX_CHARS}); what did not fit is said, with how to get it.",
        MODEL_MAX_CHARS / 4
    ))]
    pub max_chars: Option<i64>,
    /// "text" (default: compact, one header per hit and its lines) or "json" (every field, as `ghola search
    /// --json`).
    pub format: Option<String>,
    /// Only what was recorded on these machines (names as results give them, when the history holds more than
    /// one machine's). Default: every machine.
    pub machines: Option<Vec<String>>,
    /// "local" (default: this machine's history, and the machines it syncs) or "team": the team hub too
    /// (`ghola hub login`), fused; each result then names its `person` and its `origin` ("local" or "hub").
    pub scope: Option<String>,
    /// With scope "team": only these people's history (names as results give them).
    pub people: Option<Vec<String>>,
}

/// A session read's page by default, and at most (get_session_detail).
pub const SESSION_PAGE: usize = 50;
pub const MAX_SESSION_PAGE: usize = 200;
/// Messages each side of `around` by default, and at most.
pub const AROUND: usize = 5;
pub const MAX_AROUND: usize = 100;
/// Sessions a listing returns by default, and at most (duncan_list_sessions).
pub const SESSIONS_PAGE: usize = 20;
pub const MAX_SESSIONS_PAGE: usize = 200;
/// Projects a listing returns by default, and at most (duncan_projects).
pub const PROJECTS_PAGE: usize = 100;
pub const MAX_PROJECTS_PAGE: usize = 500;
/// Notes returned by default, and at most (project_notes).
pub const NOTES_PAGE: usize = 50;
pub const MAX_NOTES_PAGE: usize = 200;

/// Arguments of get_session_detail.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SessionArgs {
    /// Session id (a uuid, or a unique prefix of one), e.g. from a search hit.
    pub session_id: String,
    /// Only this compaction window (0 = before the first compaction).
    pub window: Option<u32>,
    /// Messages to skip (default 0).
    pub offset: Option<i64>,
    #[schemars(description = format!("Messages to return (default {SESSION_PAGE}, at most {MAX_SESSION_PAGE})."))]
    pub limit: Option<i64>,
    /// A message id (or unique prefix), e.g. a search result's `hit` or any transcript entry's uuid of a reply
    /// written in pieces: returns the messages around it in its window (see before/after), as text, the hit
    /// marked with ">".
    pub around: Option<String>,
    #[schemars(description = format!("With around: messages before it (default {AROUND}, at most {MAX_AROUND})."))]
    pub before: Option<i64>,
    #[schemars(description = format!("With around: messages after it (default {AROUND}, at most {MAX_AROUND})."))]
    pub after: Option<i64>,
    /// "json" (default without around: every part of every message) or "text" (default with around).
    pub format: Option<String>,
}

/// Arguments of file_history.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FileArgs {
    /// The file: relative to the current project, or absolute as recorded (any OS). A `:LINE` or
    /// `:FIRST-LAST` suffix works too.
    pub path: String,
    /// Lines of the file as it is now ("40" or "40-52"): the changes that wrote them come first.
    pub lines: Option<String>,
    #[schemars(description = format!("Sessions to return, newest first (default {FILE_SESSIONS}, at most {MAX_FILE_SESSIONS})."))]
    pub limit: Option<i64>,
}

/// Arguments of duncan_list_sessions.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// "project" (default: the current project) or "global".
    pub mode: Option<String>,
    /// Project directory for mode "project".
    pub project: Option<String>,
    #[schemars(description = format!("Sessions to return (default {SESSIONS_PAGE}, at most {MAX_SESSIONS_PAGE})."))]
    pub limit: Option<i64>,
    /// Sessions to skip (default 0).
    pub offset: Option<i64>,
    /// Only sessions active this recently: an age ("90m", "12h", "3d", "2w") or a date ("2026-11-01").
    pub since: Option<String>,
    /// Only sessions recorded on these machines. Default: every machine.
    pub machines: Option<Vec<String>>,
}

/// Arguments of duncan_projects (all optional).
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct PageArgs {
    #[schemars(description = format!("Projects to return (default {PROJECTS_PAGE}, at most {MAX_PROJECTS_PAGE})."))]
    pub limit: Option<i64>,
    /// Projects to skip (default 0).
    pub offset: Option<i64>,
    /// Only projects with sessions recorded on these machines (and only those sessions counted).
    pub machines: Option<Vec<String>>,
}

/// Arguments of project_notes.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NotesArgs {
    /// "architecture", "decisions", "failures" or "plan" (default: all four).
    pub category: Option<String>,
    /// Project directory (default: the current project).
    pub project: Option<String>,
    #[schemars(description = format!("Notes to return (default {NOTES_PAGE}, at most {MAX_NOTES_PAGE})."))]
    pub limit: Option<i64>,
    /// Notes to skip (default 0).
    pub offset: Option<i64>,
}

/// Arguments of duncan_query.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DuncanArgs {
    /// The question for the past sessions, phrased as you would ask a colleague who was there.
    pub question: String,
    /// How sessions are chosen: "search" (default: the windows behind the top search hits for the
    /// question), "session" (session_id, optionally window), "project" / "global" (newest sessions first),
    /// "branch" (sessions of git_branch), "ancestors" (this session's compacted windows), "subagents" (this
    /// session's subagents), "self" (copies of this session's current window).
    pub mode: Option<String>,
    /// "project" (default) or "global": where mode "search" looks.
    pub scope: Option<String>,
    /// Project directory (default: the current project).
    pub project: Option<String>,
    /// Session id or unique prefix, for mode "session" (e.g. from a search hit).
    pub session_id: Option<String>,
    /// Compaction window of that session (default: its latest).
    pub window: Option<i64>,
    /// Git branch for mode "branch" (default: this session's).
    pub git_branch: Option<String>,
    #[schemars(description = format!("Windows to ask (default {LIMIT}, at most {MAX_LIMIT})."))]
    pub limit: Option<i64>,
    /// Windows to skip, for paging (default 0).
    pub offset: Option<i64>,
    #[schemars(description = format!("Samples for mode \"self\" (default {COPIES}, at most {MAX_COPIES})."))]
    pub copies: Option<i64>,
    #[schemars(description = format!("Windows asked at once (default {BATCH_SIZE}, at most {MAX_BATCH_SIZE})."))]
    pub batch_size: Option<i64>,
    /// Include subagent transcripts (default true).
    pub include_subagents: Option<bool>,
    /// Model for every window (default: the model each session used).
    pub model: Option<String>,
}

/// Arguments of open_history_browser.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BrowserArgs {
    /// Also open the address in the user's browser (default true); false: only return it.
    pub open: Option<bool>,
}
