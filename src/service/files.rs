//! A file's history (`ghola files`, the MCP tool `file_history`, the browser's file page): the question checked,
//! the file map asked, and the answer as text for a person or a model — one format, bounded.

use super::{HistoryService, ServiceError};
use crate::index::file_map::query::{self, FileHistory, FileQuery, Matched};
use crate::search::SearchError;

/// Sessions listed by default (the newest).
pub const FILE_SESSIONS: usize = 10;
/// Changes listed per session by default.
pub const FILE_CHANGES: usize = 8;
/// The most either may be asked for.
pub const MAX_FILE_SESSIONS: usize = 100;
/// What the text answer is cut to for a model (characters).
pub const FILE_MODEL_CHARS: usize = 8_000;

impl HistoryService {
    /// The sessions that touched a file (see [`query`]); relative paths are relative to `q.base`.
    pub fn file_history(&self, q: &FileQuery) -> Result<FileHistory, ServiceError> {
        let invalid = |message: String| {
            ServiceError::Request(SearchError::Invalid {
                arg: "path",
                message,
            })
        };
        if q.path.trim().is_empty() {
            return Err(invalid("the path is empty: name a file".into()));
        }
        if q.path.contains('\0') || q.path.len() > 4096 {
            return Err(invalid("that is not a file path".into()));
        }
        if !(1..=MAX_FILE_SESSIONS).contains(&q.max_sessions) {
            return Err(ServiceError::Request(SearchError::Invalid {
                arg: "max_sessions",
                message: format!("at most {MAX_FILE_SESSIONS} sessions, at least 1"),
            }));
        }
        // A server that has not read the history yet reads it first (at once when no freshness loop runs).
        self.wait_for_first_pass(super::FIRST_PASS_WAIT);
        Ok(query::file_history(&self.cfg.index_dir, q)?)
    }
}

fn day_and_time(ms: Option<i64>) -> String {
    ms.and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_else(|| "(no time)".into())
}

fn quoted(s: &str, max: usize) -> String {
    crate::transcript::message::one_line(s, max)
}

/// The answer as text: per session its date, id, machine and title, then each change with the request before
/// it and the change cut short. `for_model` names the tools to go further with; `max_chars` bounds it (whole
/// sessions are dropped from the end, and the text says how many).
pub fn file_history_text(h: &FileHistory, max_chars: usize, for_model: bool) -> String {
    let mut out = String::new();
    let lines = h
        .lines
        .map(|(a, b)| {
            if a == b {
                format!(":{a}")
            } else {
                format!(":{a}-{b}")
            }
        })
        .unwrap_or_default();
    match h.matched {
        Matched::Nothing => {
            out.push_str(&format!(
                "No session read, changed or ran a command on {}{lines}.\n",
                h.path
            ));
            return out;
        }
        Matched::Ending => out.push_str(&format!(
            "No session touched {} itself; these touched files whose path ends the same way.\n",
            h.path
        )),
        Matched::Exact => {}
    }
    let total = h.sessions.len() + h.more_sessions;
    out.push_str(&format!(
        "{}{lines}: {total} session{} (newest first{})\n",
        h.path,
        if total == 1 { "" } else { "s" },
        if h.lines.is_some() {
            ", those that wrote the lines before"
        } else {
            ""
        }
    ));
    if h.lines.is_some() && h.on_disk.is_none() {
        out.push_str("(the file is not on this machine: lines cannot be traced)\n");
    }
    let mut shown = 0;
    for s in &h.sessions {
        let mut block = String::new();
        block.push_str(&format!(
            "\n{}  {}{}  {}\n",
            day_and_time(s.last_ms),
            s.session_id,
            s.machine
                .as_deref()
                .map(|m| format!("  [{m}]"))
                .unwrap_or_default(),
            s.title
                .as_deref()
                .map(|t| format!("\"{}\"", quoted(t, 80)))
                .unwrap_or_default()
        ));
        let mut last_request: Option<&str> = None;
        for c in &s.changes {
            let flags = c.flags();
            block.push_str(&format!(
                "  {:<8}{}{}\n",
                c.action,
                day_and_time(c.at_ms).get(11..).unwrap_or(""),
                if flags.is_empty() {
                    String::new()
                } else {
                    format!("  ({})", flags.join(", "))
                }
            ));
            // A request is said once for the changes that follow it.
            if let Some(r) = c.request.as_deref().filter(|r| last_request != Some(*r)) {
                block.push_str(&format!("    asked: \"{}\"\n", quoted(r, 160)));
            }
            last_request = c.request.as_deref();
            match c.action {
                "edited" => {
                    if !c.old.is_empty() {
                        block.push_str(&format!("    - {}\n", quoted(&c.old, 120)));
                    }
                    block.push_str(&format!("    + {}\n", quoted(&c.new, 120)));
                }
                "created" | "wrote" if !c.new.is_empty() => {
                    block.push_str(&format!("    + {}\n", quoted(&c.new, 120)));
                }
                "ran" => block.push_str(&format!("    $ {}\n", quoted(&c.new, 120))),
                _ => {}
            }
        }
        if s.more_changes > 0 {
            block.push_str(&format!("  … {} more in this session\n", s.more_changes));
        }
        if shown > 0 && out.len() + block.len() > max_chars {
            break;
        }
        out.push_str(&block);
        shown += 1;
    }
    let left = h.sessions.len() - shown + h.more_sessions;
    if left > 0 {
        out.push_str(&format!("\n… {left} older session(s) not shown.\n"));
    }
    if for_model && shown > 0 {
        out.push_str(
            "\nTo ask one of these sessions why, call duncan_query with mode \"session\" and its session_id; \
             get_session_detail reads it.\n",
        );
    }
    out
}
