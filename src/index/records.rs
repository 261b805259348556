//! What the index stores: messages (with their readable text, so the archive outlives the transcripts),
//! chunks (which message and which kind each embedding came from), source-file fingerprints, the manifest.
//!
//! [`StoredMessage`] is a message as callers see it; on disk a segment keeps the compact [`MessageMeta`] (strings
//! interned in a per-segment table, the text in a separate memory-mapped file) so that opening an index decodes
//! only what ranking and filtering need.

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
    pub fn key(&self) -> u128 {
        message_key(&self.session_id, self.agent_id.as_deref(), &self.uuid)
    }
}

/// A message's identity (session, agent, uuid) as a 128-bit hash: what the writer keeps per live message instead
/// of three strings (a million messages' keys in 16 MB, not hundreds). Two SipHash-1-3 passes with different
/// prefixes; a collision among a million keys has a probability of about 10^-27.
pub fn message_key(session: &str, agent: Option<&str>, uuid: &str) -> u128 {
    use std::hash::{Hash, Hasher};
    let half = |salt: u8| {
        let mut h = std::hash::DefaultHasher::new();
        (salt, session, agent, uuid).hash(&mut h);
        h.finish()
    };
    (u128::from(half(1)) << 64) | u128::from(half(2))
}

/// A message as a segment stores it: strings are indices into the segment's string table, the readable text is
/// a byte range of the segment's text file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageMeta {
    pub gid: u64,
    pub uuid: String,
    pub session: u32,
    pub agent: Option<u32>,
    pub project: u32,
    pub cwd: Option<u32>,
    pub git_branch: Option<u32>,
    pub role: u32,
    pub model: Option<u32>,
    pub timestamp_ms: Option<i64>,
    pub window: u32,
    pub is_compact_summary: bool,
    pub kind: u32,
    pub seq: u32,
    pub content_hash: u64,
    pub source: u32,
    /// Byte offset of the readable text in the segment's text file.
    pub text_start: u64,
    pub text_len: u32,
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
    /// Where reading resumes when the file grows; `None` when it cannot resume (the file is then re-read whole).
    pub resume: Option<Resume>,
}

/// The reader's and the writer's state at the point where a grown file is read again, so an append costs the
/// parsing and embedding of the appended lines, not of the whole file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resume {
    /// Byte offset reading restarts from: the start of the last message when more entries may still merge into
    /// it (an assistant reply split over several lines), else the end of the last complete line.
    pub offset: u64,
    /// Compaction windows begun before `offset` (main transcripts).
    pub window: u32,
    /// Times (ms since the epoch) of the compactions before `offset` (main transcripts), to place subagents.
    pub boundaries: Vec<Option<i64>>,
    /// Position of the first message read from `offset` in its conversation.
    pub seq: u32,
    /// The neighbour context for that message (the tail of the previous message's text).
    pub prev_text: String,
    /// The message that starts at `offset`, if reading restarts inside one: (uuid, gid, content hash). Read
    /// again unchanged it is skipped; grown, it supersedes its old version.
    pub last: Option<(String, u64, u64)>,
    /// The session's project, as first determined.
    pub project: String,
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
