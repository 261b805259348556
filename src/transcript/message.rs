//! Messages: what was said in a conversation, built from `user` and `assistant` entries.

use super::clean::clean_text;
use super::entry::{RawBlock, RawContent, RawEntry};
use super::reader::FileReport;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a thinking part's text opens with wherever a message is rendered as text (`[thinking] The user wants …`):
/// what the model thought, which a reader of the hit, a rule and a note each tell from what the reply said.
pub const THINKING_MARK: &str = "[thinking] ";

/// What a tool call's line opens with wherever a message is rendered as stored or shared text (`[tool] Bash:
/// cargo test`): what the model ran, which a rule (a reply of only calls says nothing) and a note (the `→` line)
/// each tell from what it said.
pub const TOOL_MARK: &str = "[tool] ";

/// What a tool's output opens with wherever a message is rendered as text (`[tool result] 3 suites, 0
/// failures`): what a program printed rather than what anyone said, which rules weigh and notes cut apart.
pub const TOOL_RESULT_MARK: &str = "[tool result] ";

/// What a failed tool's output opens with (`[tool error] Exit code 1`): an error, which a note keeps longer
/// than an output and a rule reads as a reason.
pub const TOOL_ERROR_MARK: &str = "[tool error] ";

/// The mark a tool's output opens with: [`TOOL_ERROR_MARK`] when the tool failed, else [`TOOL_RESULT_MARK`]. The
/// one choice `show`, the stored text and the hub's shared text all make.
pub fn tool_output_mark(is_error: bool) -> &'static str {
    if is_error {
        TOOL_ERROR_MARK
    } else {
        TOOL_RESULT_MARK
    }
}

/// Who spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    /// The lowercase name used in JSON and on screen.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One piece of a message, by kind: the index embeds each kind under its own budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Part {
    /// Prose the user typed or the assistant wrote.
    Text { text: String },
    /// The assistant's visible reasoning.
    Thinking { text: String },
    /// A tool call, reduced to its name and a one-line summary of its input.
    ToolUse {
        id: String,
        name: String,
        summary: String,
        /// What the call wrote or asked beyond its summary line (see [`input_words`]): an edit's new text, a
        /// file written whole, a plan, a to-do list, a subagent's whole prompt, a message to a teammate. The
        /// summary of such a call holds only its path or its first words; a reader of the session wants what
        /// changed (`show --json`, the browser's unfolded call). The index keeps the summary: these words in its
        /// keyword document or vector did not help (docs/search.md, "What a call wrote"). Empty when the summary
        /// says it all.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        input: String,
        /// The files the call read, changed or named (see [`super::touch`]); not serialized: the index keeps
        /// them in its file map.
        #[serde(skip)]
        touches: Vec<super::touch::Touch>,
    },
    /// A tool's output as the model saw it (images as `[image]`).
    ToolResult {
        tool_use_id: String,
        text: String,
        is_error: bool,
    },
}

impl Part {
    /// The kind's name, as used in JSON (`text`, `thinking`, `tool_use`, `tool_result`).
    pub fn kind(&self) -> &'static str {
        match self {
            Part::Text { .. } => "text",
            Part::Thinking { .. } => "thinking",
            Part::ToolUse { .. } => "tool_use",
            Part::ToolResult { .. } => "tool_result",
        }
    }

    /// Replaces the credentials in the part's text (a tool call's summary included) with placeholders, adding
    /// them to `tally`.
    pub fn redact(&mut self, tally: &mut crate::secrets::Tally) {
        let text = match self {
            Part::Text { text } | Part::Thinking { text } | Part::ToolResult { text, .. } => text,
            Part::ToolUse {
                summary,
                input,
                touches,
                ..
            } => {
                for t in touches.iter_mut() {
                    crate::secrets::redact_in_place(&mut t.old, tally);
                    crate::secrets::redact_in_place(&mut t.new, tally);
                }
                crate::secrets::redact_in_place(input, tally);
                summary
            }
        };
        crate::secrets::redact_in_place(text, tally);
    }

    /// The part as one readable string.
    pub fn render(&self) -> String {
        match self {
            Part::Text { text } => text.clone(),
            Part::Thinking { text } => format!("{THINKING_MARK}{text}"),
            Part::ToolUse { name, summary, .. } if summary.is_empty() => format!("[{name}]"),
            Part::ToolUse { name, summary, .. } => format!("[{name}] {summary}"),
            Part::ToolResult { text, is_error, .. } => {
                format!("{}{text}", tool_output_mark(*is_error))
            }
        }
    }
}

/// A message of a session: one user entry, or one assistant response (its split entries merged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The uuid of the entry that names the message: for a response Claude Code wrote in pieces, the first piece
    /// that holds text (the line a reader of the transcript calls the reply, rather than its thinking), else the
    /// first entry; for any other message, its one entry.
    pub uuid: String,
    /// The uuids of the other entries of a response Claude Code wrote in pieces, merged into this message, in file
    /// order: an id read from the file or from a tool result's `parentUuid` names the piece, and finds the message
    /// through it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_uuids: Vec<String>,
    /// The uuid of the response's first entry when a later piece names it ([`Message::identity`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_entry: Option<String>,
    pub parent_uuid: Option<String>,
    /// The session this message belongs to (for a subagent: its parent session).
    pub session_id: String,
    /// Set for subagent messages.
    pub agent_id: Option<String>,
    /// The directory the session was started in: the `cwd` of the session's first entry that has one (see
    /// ARCHITECTURE.md, "Invariants").
    pub project: String,
    /// The entry's own working directory (differs from `project` after a `cd` or in a worktree).
    pub cwd: Option<String>,
    pub git_branch: Option<String>,
    pub timestamp: Option<DateTime<Utc>>,
    pub role: Role,
    pub model: Option<String>,
    pub parts: Vec<Part>,
    /// Compaction window of the session this message belongs to (0 before the first compaction).
    pub window: u32,
    /// The summary Claude Code wrote at a compaction: it opens its window and is not something anyone said.
    pub is_compact_summary: bool,
    /// Byte offset of the message's first line in its file.
    pub offset: u64,
}

impl Message {
    /// Whether `prefix` begins the id of this message or of one of the entries merged into it (a caller's way to
    /// name a message: a search hit's id, or any entry's id read from the transcript).
    pub fn is_named_by(&self, prefix: &str) -> bool {
        !prefix.is_empty()
            && (self.uuid.starts_with(prefix)
                || self.merged_uuids.iter().any(|u| u.starts_with(prefix)))
    }

    /// The uuid of the message's first entry: what stays the same while a response is still being written (its
    /// thinking is on disk before its text, which then names it), so the index and the hub know a grown reply
    /// as the one they already hold.
    pub fn identity(&self) -> &str {
        self.first_entry.as_deref().unwrap_or(&self.uuid)
    }

    /// Whether `uuid` is this message's id or the id of one of the entries merged into it: a link into the
    /// browser may name any entry of a reply Claude Code wrote in pieces.
    pub fn is_entry(&self, uuid: &str) -> bool {
        self.uuid == uuid || self.merged_uuids.iter().any(|u| u == uuid)
    }

    /// The whole message as readable text, parts separated by blank lines.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .map(Part::render)
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// The kind of the message for display: `summary`, or the kind of its first part.
    pub fn kind(&self) -> &'static str {
        if self.is_compact_summary {
            "summary"
        } else {
            self.parts.first().map(Part::kind).unwrap_or("text")
        }
    }
}

/// Maximum length of a tool-use summary line.
const SUMMARY_CHARS: usize = 300;

/// The parts of a `user`/`assistant` entry after stripping; `None` for entries nobody said or read
/// (`isMeta`, pure wrappers, empty content).
pub fn parts_of(entry: &RawEntry, report: &mut FileReport) -> Option<Vec<Part>> {
    if entry.is_meta == Some(true) {
        return None;
    }
    let content = entry.message.as_ref()?.content.as_ref()?;
    let mut parts = Vec::new();
    match content {
        RawContent::Text(t) => push_text(&mut parts, t),
        RawContent::Blocks(blocks) => {
            for b in blocks {
                part_of_block(b, &mut parts, report);
            }
        }
        RawContent::Other(_) => {}
    }
    (!parts.is_empty()).then_some(parts)
}

fn push_text(parts: &mut Vec<Part>, raw: &str) {
    let text = clean_text(raw);
    if !text.is_empty() {
        parts.push(Part::Text { text });
    }
}

fn part_of_block(b: &RawBlock, parts: &mut Vec<Part>, report: &mut FileReport) {
    match b.kind.as_str() {
        "text" => push_text(parts, b.text.as_deref().unwrap_or("")),
        "thinking" => {
            let text = b.thinking.as_deref().unwrap_or("").trim();
            if !text.is_empty() {
                parts.push(Part::Thinking {
                    text: text.to_string(),
                });
            }
        }
        "redacted_thinking" => {}
        "image" => parts.push(Part::Text {
            text: "[image]".into(),
        }),
        "document" => parts.push(Part::Text {
            text: "[document]".into(),
        }),
        "tool_use" | "server_tool_use" => {
            let name = b.name.clone().unwrap_or_else(|| "tool".into());
            let summary = b.input.as_ref().map(summarize_input).unwrap_or_default();
            parts.push(Part::ToolUse {
                id: b.id.clone().unwrap_or_default(),
                input: b
                    .input
                    .as_ref()
                    .map(|i| input_words(i, &summary))
                    .unwrap_or_default(),
                summary,
                touches: b
                    .input
                    .as_ref()
                    .map(|i| super::touch::touches_of(&name, i))
                    .unwrap_or_default(),
                name,
            })
        }
        "tool_result" | "web_search_tool_result" => parts.push(Part::ToolResult {
            tool_use_id: b.tool_use_id.clone().unwrap_or_default(),
            text: b
                .content
                .as_ref()
                .map(|c| result_text(c, report))
                .unwrap_or_default(),
            is_error: b.is_error.unwrap_or(false),
        }),
        _ => report.unknown_blocks += 1,
    }
}

/// The text of a tool result: strings and text blocks joined, images as `[image]`.
fn result_text(content: &RawContent, report: &mut FileReport) -> String {
    match content {
        RawContent::Text(t) => clean_text(t),
        RawContent::Blocks(blocks) => {
            let mut pieces = Vec::new();
            for b in blocks {
                match b.kind.as_str() {
                    "text" => {
                        let t = clean_text(b.text.as_deref().unwrap_or(""));
                        if !t.is_empty() {
                            pieces.push(t);
                        }
                    }
                    "image" => pieces.push("[image]".into()),
                    "document" => pieces.push("[document]".into()),
                    "tool_reference" => {
                        pieces.push(format!("[tool: {}]", b.tool_name.as_deref().unwrap_or("?")))
                    }
                    _ => report.unknown_blocks += 1,
                }
            }
            pieces.join("\n")
        }
        RawContent::Other(_) => String::new(),
    }
}

/// One line saying what a tool call did: its most telling input field (command, path, pattern, url, …),
/// then its description when that adds something; credentials in it replaced (see `crate::secrets`).
pub fn summarize_input(input: &Value) -> String {
    const PRIMARY: &[&str] = &[
        "command",
        "file_path",
        "notebook_path",
        "pattern",
        "path",
        "url",
        "query",
        "skill",
        "prompt",
        "description",
    ];
    let Some(obj) = input.as_object() else {
        return String::new();
    };
    let field = |k: &str| obj.get(k).and_then(Value::as_str).map(str::trim);
    let mut line = String::new();
    let mut used = "";
    for k in PRIMARY {
        if let Some(v) = field(k).filter(|v| !v.is_empty()) {
            line.push_str(v);
            used = k;
            break;
        }
    }
    if used == "pattern"
        && let Some(p) = field("path").filter(|v| !v.is_empty())
    {
        line.push_str(" in ");
        line.push_str(p);
    }
    if used != "description"
        && let Some(d) = field("description").filter(|v| !v.is_empty())
    {
        line.push_str(" — ");
        line.push_str(d);
    }
    if line.is_empty() {
        // Unknown tool: its first string field is better than nothing.
        if let Some(v) = obj.values().find_map(Value::as_str) {
            line.push_str(v.trim());
        }
    }
    // Redacted before it is cut, so that a credential cut in half by the cut is still found whole; a summary is
    // therefore redacted even when messages are read as written (`Sources::revealing`).
    one_line(&crate::secrets::redact(&line), SUMMARY_CHARS)
}

/// The most of a call's input kept as its words ([`input_words`]), in bytes: room for a plan or a page of code to
/// be read, while a session of many files written whole (a Write averages 4 KB in the corpus) does not hold each
/// one twice in memory.
pub const INPUT_WORDS_BYTES: usize = 4_000;

/// Fields of a call's input that say how to run it, or restate another field, rather than what it wrote or
/// asked: the text an edit replaced (the file as it was, which an earlier read or edit already holds), a
/// to-do's progress wording, its status and priority, identifiers and modes.
const NOT_WORDS: &[&str] = &[
    "old_string",
    "old_str",
    "activeForm",
    "status",
    "priority",
    "id",
    "subagent_type",
    "isolation",
    "model",
    "mode",
    "tool_use_id",
    "task_id",
    "shell_id",
    "bash_id",
];

/// The words of a call's input that its summary line does not hold: every string the input carries, field by
/// field (nested ones too: a MultiEdit's edits, a to-do list, a question's options), except `NOT_WORDS` and the
/// top-level fields the summary already shows whole. Tool-agnostic on purpose, so an MCP server's call (an
/// issue's title and body, a query) reads like Claude Code's own. Credentials are replaced before the
/// cut at [`INPUT_WORDS_BYTES`], as for the summary.
pub fn input_words(input: &Value, summary: &str) -> String {
    // Gathered up to twice the cut, each string cut where the budget ends (a file written whole may be
    // megabytes), so that the credentials scan reads a bounded text and a credential at the cut is still whole.
    const GATHERED: usize = 2 * INPUT_WORDS_BYTES;
    fn walk(v: &Value, out: &mut String) {
        if out.len() >= GATHERED {
            return;
        }
        match v {
            Value::String(s) => {
                let s = s.trim();
                if !s.is_empty() {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    let room = GATHERED.saturating_sub(out.len());
                    out.push_str(&s[..s.floor_char_boundary(room)]);
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(fields) => fields
                .iter()
                .filter(|(k, _)| !NOT_WORDS.contains(&k.as_str()))
                .for_each(|(_, v)| walk(v, out)),
            _ => {}
        }
    }
    let Some(fields) = input.as_object() else {
        return String::new();
    };
    let mut out = String::new();
    for (k, v) in fields {
        if NOT_WORDS.contains(&k.as_str()) {
            continue;
        }
        if let Value::String(s) = v {
            let line = one_line(s, SUMMARY_CHARS);
            if !line.ends_with('…') && summary.contains(line.as_str()) {
                continue;
            }
        }
        walk(v, &mut out);
    }
    let mut out = crate::secrets::redact(&out).into_owned();
    out.truncate(out.floor_char_boundary(INPUT_WORDS_BYTES));
    out
}

/// Collapses whitespace runs (newlines included) and cuts at `max` characters.
pub fn one_line(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max + 3));
    let mut n = 0;
    for word in s.split_whitespace() {
        if n > 0 {
            out.push(' ');
            n += 1;
        }
        for c in word.chars() {
            if n >= max {
                out.push('…');
                return out;
            }
            out.push(c);
            n += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries_pick_the_telling_field() {
        assert_eq!(
            summarize_input(&json!({"command": "grep -n x\n f.py", "description": "Find x"})),
            "grep -n x f.py — Find x"
        );
        assert_eq!(summarize_input(&json!({"file_path": "/a/b.rs"})), "/a/b.rs");
        assert_eq!(
            summarize_input(&json!({"pattern": "fn main", "path": "src"})),
            "fn main in src"
        );
        assert_eq!(
            summarize_input(&json!({"description": "Explore", "prompt": "look"})),
            "look — Explore"
        );
        assert_eq!(summarize_input(&json!("x")), "");
        assert!(
            summarize_input(&json!({"command": "y".repeat(1000)}))
                .chars()
                .count()
                <= 301
        );
    }

    #[test]
    fn meta_and_wrapper_only_entries_have_no_parts() {
        let mut r = FileReport::default();
        let e: RawEntry = serde_json::from_value(json!({"type":"user","isMeta":true,
            "message":{"role":"user","content":"Caveat"}}))
        .unwrap();
        assert!(parts_of(&e, &mut r).is_none());
        let e: RawEntry = serde_json::from_value(json!({"type":"user",
            "message":{"role":"user","content":"<local-command-stdout>ok</local-command-stdout>"}}))
        .unwrap();
        assert!(parts_of(&e, &mut r).is_none());
    }

    #[test]
    fn tool_results_keep_text_errors_and_images() {
        let mut r = FileReport::default();
        let e: RawEntry =
            serde_json::from_value(json!({"type":"user","message":{"role":"user","content":[
                {"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[
                    {"type":"text","text":"boom"},{"type":"image","source":{}},{"type":"weird"}]},
                {"type":"mystery_block"}
            ]}}))
            .unwrap();
        let parts = parts_of(&e, &mut r).unwrap();
        assert_eq!(
            parts,
            vec![Part::ToolResult {
                tool_use_id: "t1".into(),
                text: "boom\n[image]".into(),
                is_error: true
            }]
        );
        assert_eq!(r.unknown_blocks, 2);
    }

    #[test]
    fn a_calls_input_words_are_what_it_wrote_or_asked() {
        let words = |input: Value| input_words(&input, &summarize_input(&input));
        // An edit: its new text, not the text it replaced, nor the path the summary shows.
        assert_eq!(
            words(
                json!({"file_path": "/w/auth.py", "old_string": "return a > now()",
                "new_string": "LEEWAY_SECS = 120", "replace_all": false})
            ),
            "LEEWAY_SECS = 120"
        );
        // A to-do list: what is to be done, not its progress wording, status or priority.
        assert_eq!(
            words(json!({"todos": [
                {"id": "1", "content": "Set up the parser", "status": "pending", "priority": "high",
                 "activeForm": "Setting up the parser"},
                {"content": "Write the tests", "status": "completed"}]})),
            "Set up the parser\nWrite the tests"
        );
        // A plan (the summary holds its first 300 characters only): whole.
        let plan = format!("# Plan\n{}", "step ".repeat(100));
        assert_eq!(words(json!({"plan": plan})), plan.trim());
        // A teammate's message: the summary shows the first field (fields are read by name), the words the rest.
        assert_eq!(
            words(json!({"to": "alice", "summary": "round 2", "message": "Pull master first."})),
            "round 2\nalice"
        );
        // A command the summary shows whole has nothing more to say; nor has an input that is not an object.
        assert_eq!(
            words(json!({"command": "cargo test", "description": "Run the tests"})),
            ""
        );
        assert_eq!(words(json!("just a string")), "");
        // Credentials are replaced, and a file written whole is cut.
        let secret = words(
            json!({"file_path": "/w/.env", "content": "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}),
        );
        assert!(!secret.contains("wJalrXUtnFEMI"), "{secret}");
        let long = words(json!({"file_path": "/w/big.rs", "content": "é".repeat(5_000)}));
        assert!(
            long.len() <= INPUT_WORDS_BYTES && long.len() > INPUT_WORDS_BYTES - 4,
            "{}",
            long.len()
        );
    }
}
