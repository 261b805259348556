//! A typed builder of Claude Code transcripts for tests: messages in order, each with a uuid derived from the
//! session and its position, a timestamp a minute apart, written where Claude Code writes them
//! (`projects/<escaped cwd>/<session>.jsonl`).

use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// One session's transcript, built line by line.
pub struct Transcript {
    session: String,
    cwd: String,
    /// The first message's time; each next one is a minute later.
    start: chrono::DateTime<chrono::Utc>,
    /// The number of the first message (its uuid and time follow from it).
    first: usize,
    lines: Vec<Value>,
}

impl Transcript {
    /// An empty transcript of `session` recorded in `cwd`, starting on 2025-03-01 at 10:00 UTC.
    pub fn new(session: &str, cwd: &str) -> Self {
        Self {
            session: session.to_string(),
            cwd: cwd.to_string(),
            start: "2025-03-01T10:00:00Z".parse().unwrap(),
            first: 0,
            lines: Vec::new(),
        }
    }

    /// The same, its first message at `start` (RFC 3339).
    pub fn starting(mut self, start: &str) -> Self {
        self.start = start.parse().unwrap();
        self
    }

    /// The same, its first message numbered `n` (for lines appended after `n` earlier ones: new uuids, later
    /// times).
    pub fn continuing(mut self, n: usize) -> Self {
        self.first = n;
        self
    }

    fn next(&self) -> (String, String) {
        let i = self.first + self.lines.len();
        let at = self.start + chrono::Duration::minutes(i as i64);
        (format!("{}-{i}", self.session), at.to_rfc3339())
    }

    fn message(mut self, role: &str, content: Value) -> Self {
        let (uuid, ts) = self.next();
        self.lines.push(json!({"type": role, "uuid": uuid, "sessionId": self.session, "cwd": self.cwd,
            "timestamp": ts, "message": {"id": format!("m-{uuid}"), "role": role, "content": content}}));
        self
    }

    /// A user message of plain text.
    pub fn user(self, text: &str) -> Self {
        self.message("user", json!([{"type": "text", "text": text}]))
    }

    /// An assistant message of plain text.
    pub fn assistant(self, text: &str) -> Self {
        self.message("assistant", json!([{"type": "text", "text": text}]))
    }

    /// An assistant message that thinks `thought`, then says `text`.
    pub fn thinking(self, thought: &str, text: &str) -> Self {
        self.message(
            "assistant",
            json!([{"type": "thinking", "thinking": thought, "signature": "x"}, {"type": "text", "text": text}]),
        )
    }

    /// A tool call (an assistant message) and its result (the next user message).
    pub fn tool(self, name: &str, input: Value, result: &str) -> Self {
        self.tool_ending(name, input, result, false)
    }

    /// A tool call whose tool reported an error (`is_error`), and that error.
    pub fn tool_error(self, name: &str, input: Value, error: &str) -> Self {
        self.tool_ending(name, input, error, true)
    }

    fn tool_ending(self, name: &str, input: Value, result: &str, is_error: bool) -> Self {
        let id = format!("toolu-{}-{}", self.session, self.first + self.lines.len());
        self.message(
            "assistant",
            json!([{"type": "tool_use", "id": id, "name": name, "input": input}]),
        )
        .message(
            "user",
            json!([{"type": "tool_result", "tool_use_id": id, "content": result, "is_error": is_error}]),
        )
    }

    /// The summary Claude Code writes after a compaction (a user entry marked `isCompactSummary`).
    pub fn compact_summary(mut self, text: &str) -> Self {
        self = self.message("user", json!(text));
        let last = self.lines.last_mut().unwrap();
        last["isCompactSummary"] = json!(true);
        self
    }

    /// A compaction boundary: what follows is the next window.
    pub fn compaction(mut self) -> Self {
        let (uuid, ts) = self.next();
        self.lines.push(
            json!({"type": "system", "subtype": "compact_boundary", "uuid": uuid,
            "sessionId": self.session, "timestamp": ts}),
        );
        self
    }

    /// Where Claude Code keeps this transcript under `claude` (its config dir).
    pub fn path(&self, claude: &Path) -> PathBuf {
        let folder: String = self
            .cwd
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        claude
            .join("projects")
            .join(folder)
            .join(format!("{}.jsonl", self.session))
    }

    /// Writes this transcript as subagent `agent` of `parent` (Claude Code 2.1's layout:
    /// `<session>/subagents/agent-<id>.jsonl` beside the parent's transcript); returns its path.
    pub fn write_as_subagent(&self, claude: &Path, parent: &str, agent: &str) -> PathBuf {
        let dir = self.path(claude).with_file_name(parent).join("subagents");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("agent-{agent}.jsonl"));
        let body: String = self
            .lines
            .iter()
            .map(|l| {
                let mut l = l.clone();
                l["sessionId"] = json!(parent);
                l["agentId"] = json!(agent);
                l["isSidechain"] = json!(true);
                format!("{l}\n")
            })
            .collect();
        std::fs::write(&path, body).unwrap();
        path
    }

    /// Appends these lines to the transcript under `claude` (as Claude Code does while a session goes on).
    pub fn append(&self, claude: &Path) -> PathBuf {
        use std::io::Write;
        let path = self.path(claude);
        let body: String = self.lines.iter().map(|l| format!("{l}\n")).collect();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(body.as_bytes()).unwrap();
        path
    }

    /// Writes the transcript (one JSON object per line) under `claude`; returns its path.
    pub fn write(&self, claude: &Path) -> PathBuf {
        let path = self.path(claude);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let body: String = self.lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, body).unwrap();
        path
    }
}
