//! Claude Code's on-disk history: discovery, the streaming reader, entries, messages, sessions and their
//! compaction windows. Knows nothing of embeddings or search.

pub mod catalog;
pub mod clean;
pub mod credentials;
pub mod discover;
pub mod entry;
pub mod lookup;
pub mod machine;
pub mod message;
pub mod project_path;
pub mod reader;
pub mod session;
pub mod source;
pub mod touch;

pub use discover::{
    Discovery, SessionFiles, SubagentFile, SubagentLayout, discover, discover_project_dir,
};
pub use lookup::{LookupError, is_session_name, resolve_session_id, short_id};
pub use machine::{Machine, PathMap};
pub use message::{
    Message, Part, Role, THINKING_MARK, TOOL_ERROR_MARK, TOOL_MARK, TOOL_RESULT_MARK,
    tool_output_mark,
};
pub use project_path::{is_within, normal_form};
pub use reader::{
    EntryAt, FileReport, MAX_LINE_BYTES, ReadOutcome, is_complete_line, read_entries,
    stream_entries, stream_lines,
};
pub use session::{
    FileStatus, ReadPlan, Session, Start, Subagent, load_session, load_session_from, parse_time,
};
pub use source::Sources;

use rayon::prelude::*;
use std::path::Path;

/// Every session under a Claude config dir (archived ones included), loaded in parallel, newest first.
pub fn load_all(src: &Sources, claude_dir: &Path) -> (Vec<Session>, Discovery) {
    let found = src.discover_all(claude_dir);
    let sessions = load_sessions(src, &found.sessions);
    (sessions, found)
}

/// Loads the given sessions in parallel, newest (by last message) first.
pub fn load_sessions(src: &Sources, files: &[SessionFiles]) -> Vec<Session> {
    let mut sessions: Vec<Session> = files.par_iter().map(|f| load_session(src, f)).collect();
    sessions.sort_by(|a, b| {
        b.time_range()
            .1
            .cmp(&a.time_range().1)
            .then_with(|| a.session_id.cmp(&b.session_id))
    });
    sessions
}
