//! The credentials a session's transcripts hold, as written: what `ghola secrets` reports.
//!
//! Reads the raw entries (not the messages, which the reader redacts as it builds them), so that every place a
//! value can sit is seen whole: prose, thinking, a tool call's whole input (a Bash command, a file written), a
//! tool's output, a compaction summary, a session title, in the session's own transcript and its subagents'.
//! Each finding carries a preview (four characters and a mask), never the value.

use super::discover::SessionFiles;
use super::entry::{RawBlock, RawContent, RawEntry};
use super::reader::{EntryAt, stream_entries};
use super::source::Sources;
use crate::secrets;
use serde::Serialize;
use serde_json::Value;

/// One credential found in a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found {
    pub session_id: String,
    /// The entry it was found in (absent for the rare entry without a uuid).
    pub message_uuid: Option<String>,
    /// The subagent whose transcript holds it, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub timestamp: Option<String>,
    /// The directory the session ran in (its first entry's `cwd`, else the project folder's name).
    pub project: String,
    /// The rule that found it (as in its placeholder, `[REDACTED:<rule>]`).
    pub rule: &'static str,
    /// Where in the entry: `text`, `thinking`, `tool_use`, `tool_result`, `summary` (a compaction's) or `title`.
    pub place: &'static str,
    /// The value's first four characters and a mask.
    pub preview: String,
}

/// Every credential in one session's files (its transcript, then its subagents'), in file order.
pub fn find_in_session(src: &Sources, files: &SessionFiles) -> Vec<Found> {
    let mut found = Vec::new();
    let mut project: Option<String> = None;
    let mut push = |e: &RawEntry, agent: Option<&str>, place: &'static str, text: &str| {
        for f in secrets::find(text) {
            found.push((
                e.uuid.clone(),
                agent.map(str::to_string),
                e.timestamp.clone(),
                f.rule,
                place,
                secrets::preview(f.value(text)),
            ));
        }
    };
    let agents = files.main.iter().map(|p| (p.as_path(), None)).chain(
        files
            .subagents
            .iter()
            .map(|s| (s.path.as_path(), Some(s.agent_id.as_str()))),
    );
    for (path, agent) in agents {
        stream_entries(src, path, 0, |EntryAt { entry: e, .. }| {
            if project.is_none() {
                project = e.cwd.clone().filter(|c| !c.is_empty());
            }
            entry_texts(&e, &mut |place, text| push(&e, agent, place, text));
        });
    }
    let project = project.unwrap_or_else(|| {
        files
            .project_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    found
        .into_iter()
        .map(
            |(message_uuid, agent_id, timestamp, rule, place, preview)| Found {
                session_id: files.session_id.clone(),
                message_uuid,
                agent_id,
                timestamp,
                project: project.clone(),
                rule,
                place,
                preview,
            },
        )
        .collect()
}

/// Calls `visit(place, text)` for every piece of text an entry holds.
fn entry_texts(e: &RawEntry, visit: &mut dyn FnMut(&'static str, &str)) {
    for t in [&e.summary, &e.custom_title].into_iter().flatten() {
        visit("title", t);
    }
    let Some(content) = e.message.as_ref().and_then(|m| m.content.as_ref()) else {
        return;
    };
    let prose = if e.is_compact_summary == Some(true) {
        "summary"
    } else {
        "text"
    };
    match content {
        RawContent::Text(t) => visit(prose, t),
        RawContent::Blocks(blocks) => {
            for b in blocks {
                block_texts(b, prose, visit);
            }
        }
        RawContent::Other(_) => {}
    }
}

fn block_texts(b: &RawBlock, prose: &'static str, visit: &mut dyn FnMut(&'static str, &str)) {
    if let Some(t) = &b.text {
        visit(
            if b.kind == "tool_result" {
                "tool_result"
            } else {
                prose
            },
            t,
        );
    }
    if let Some(t) = &b.thinking {
        visit("thinking", t);
    }
    if let Some(input) = &b.input {
        json_strings(input, &mut |s| visit("tool_use", s));
    }
    match &b.content {
        Some(RawContent::Text(t)) => visit("tool_result", t),
        Some(RawContent::Blocks(inner)) => {
            for i in inner {
                if let Some(t) = &i.text {
                    visit("tool_result", t);
                }
            }
        }
        _ => {}
    }
}

/// Every string inside a JSON value.
fn json_strings(v: &Value, visit: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => visit(s),
        Value::Array(items) => items.iter().for_each(|i| json_strings(i, visit)),
        Value::Object(map) => map.values().for_each(|i| json_strings(i, visit)),
        _ => {}
    }
}
