//! What the index stores: messages (with their readable text, so the archive outlives the transcripts),
//! chunks (which message and which kind each embedding came from), source-file fingerprints, the manifest.

use serde::{Deserialize, Serialize};

/// Which part of a message a chunk was cut from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ChunkKind {
    /// What the user or the assistant wrote (and compaction summaries).
    Text,
    Thinking,
    /// One line per tool call: tool name and the summary of its input.
    ToolUse,
    ToolResult,
}

impl ChunkKind {
    /// The name used in responses.
    pub fn as_str(self) -> &'static str {
        match self {
            ChunkKind::Text => "text",
            ChunkKind::Thinking => "thinking",
            ChunkKind::ToolUse => "tool_use",
            ChunkKind::ToolResult => "tool_result",
        }
    }
}

/// One message as the index keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// Stable id across segment merges; the lexical index refers to messages by it.
    pub gid: u64,
    pub uuid: String,
    pub session_id: String,
    /// Set for subagent messages.
    pub agent_id: Option<String>,
    pub project: String,
    pub cwd: Option<String>,
    pub git_branch: Option<String>,
    /// "user" or "assistant".
    pub role: String,
    pub model: Option<String>,
    /// Milliseconds since the Unix epoch, UTC.
    pub timestamp_ms: Option<i64>,
    pub window: u32,
    pub is_compact_summary: bool,
    /// What the message mostly is: "text", "summary" (a compaction summary), "tool_use", "tool_result",
    /// "thinking".
    pub kind: String,
    /// Position within its conversation (main or one subagent), for context windows.
    pub seq: u32,
    /// The message as a person would read it (text, tool lines, results), for display and the lexical index.
    pub content: String,
    /// Hash of everything above that can change, to tell an updated message from an unchanged one.
    pub content_hash: u64,
    /// The transcript file it came from.
    pub source: String,
}

impl StoredMessage {
    /// Identity across updates: the same message re-read from a grown file has the same key.
    pub fn key(&self) -> (String, Option<String>, String) {
        (
            self.session_id.clone(),
            self.agent_id.clone(),
            self.uuid.clone(),
        )
    }
}

/// One embedded chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRecord {
    /// Index of its message within the segment.
    pub message: u32,
    pub kind: ChunkKind,
    /// Row of its vector in the segment's vector file.
    pub row: u32,
    /// Hash of the chunk text: identical text is embedded once and its vector reused.
    pub text_hash: u64,
}

/// A source transcript's fingerprint: unchanged files are not even opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    pub path: String,
    pub session_id: String,
    pub size: u64,
    pub mtime_ns: i128,
    /// Bytes read up to the last complete line.
    pub consumed: u64,
    /// Hash of the first 4 KiB: a different head means the file was rewritten, not appended to.
    pub head_hash: u64,
    /// The file is gone from disk; its messages stay searchable.
    pub deleted: bool,
}

/// A segment as the manifest names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentInfo {
    pub id: u64,
    pub messages: u32,
    pub chunks: u32,
}

/// The root of the index: what is published is exactly what the manifest names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Bumped at every publish; the lexical index's commit payload must equal it to be trusted.
    pub generation: u64,
    pub model_id: String,
    pub weights_sha256: String,
    pub segments: Vec<SegmentInfo>,
    pub files: Vec<FileState>,
    pub next_gid: u64,
    pub next_segment: u64,
    /// Milliseconds since the epoch of the last publish.
    pub updated_at_ms: i64,
    /// gids of messages superseded or removed since their segment was written.
    pub dead: Vec<u64>,
}
