//! Rebuilding the API conversation of one session window, as Claude Code would have sent it.
//!
//! The transcript is a tree (rewinds fork it, compactions cut it), written one content block per entry. The
//! rebuild walks the parent chain back from the window's last entry (through the bookkeeping entries that
//! sit in it), merges the split assistant entries, pairs every `tool_use` with its `tool_result` (taking the
//! result from a side branch when that is where Claude Code wrote it, and from `<session>/tool-results/`
//! when the output was persisted there), and enforces strict user/assistant alternation. When the result is
//! larger than the budget, whole turns are cut from the head and a notice says so.

use crate::transcript::entry::{RawBlock, RawContent, RawEntry};
use crate::transcript::{Sources, parse_time, stream_lines};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// A content block of the Messages API, limited to what a replay sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        is_error: bool,
    },
}

impl Block {
    fn text(text: impl Into<String>) -> Self {
        Block::Text { text: text.into() }
    }

    /// Characters the block carries, for the token estimate.
    fn chars(&self) -> usize {
        match self {
            Block::Text { text } => text.len(),
            Block::ToolUse { name, input, .. } => name.len() + input.to_string().len() + 40,
            Block::ToolResult { content, .. } => content.len() + 40,
        }
    }
}

/// Who sends a message to the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Speaker {
    User,
    Assistant,
}

/// One message of the rebuilt conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiMessage {
    pub role: Speaker,
    pub content: Vec<Block>,
}

impl ApiMessage {
    fn tool_use_ids(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    fn has_tool_result(&self) -> bool {
        self.content
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. }))
    }

    /// Replaces the credentials in every block (text, a tool call's input, a tool's result) with placeholders:
    /// a replay sends the window to a model provider, and nothing leaves the machine unredacted.
    fn redact(&mut self, tally: &mut crate::secrets::Tally) {
        for b in &mut self.content {
            match b {
                Block::Text { text } => {
                    crate::secrets::redact_in_place(text, tally);
                }
                Block::ToolUse { input, .. } => {
                    crate::secrets::redact_json(input, tally);
                }
                Block::ToolResult { content, .. } => {
                    crate::secrets::redact_in_place(content, tally);
                }
            }
        }
    }

    /// Rough token count: about three and a half characters per token for mixed prose and code.
    pub fn estimated_tokens(&self) -> usize {
        self.content.iter().map(Block::chars).sum::<usize>() * 2 / 7 + 4
    }
}

/// What was cut to fit the budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Trim {
    /// Messages dropped from the head.
    pub messages_cut: usize,
    /// Their estimated tokens.
    pub tokens_cut: usize,
    /// Tool results shortened because a single turn was larger than the budget.
    pub results_shortened: usize,
}

/// How the rebuild went, for tests and logs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RebuildStats {
    pub entries_in_chain: usize,
    pub tool_pairs: usize,
    /// Results found off the chain (a side branch) rather than on it.
    pub results_from_side_branches: usize,
    /// Results read back from `<session>/tool-results/`.
    pub persisted_results_resolved: usize,
    /// Tool calls for which the transcript holds no result at all.
    pub results_missing: usize,
    pub images_dropped: usize,
    /// Credentials replaced by placeholders before the window is sent, per rule.
    pub secrets_hidden: crate::secrets::Tally,
}

/// A session window rebuilt as an API conversation.
#[derive(Debug, Clone, Serialize)]
pub struct Conversation {
    pub session_id: String,
    pub window: u32,
    /// Windows the file has (1 + compactions).
    pub windows: u32,
    /// The cwd of the window's entries.
    pub cwd: Option<String>,
    pub git_branch: Option<String>,
    pub first: Option<DateTime<Utc>>,
    pub last: Option<DateTime<Utc>>,
    /// The model the session used in this window (its last assistant message's).
    pub model: Option<String>,
    /// Strictly alternating, starting with a user message.
    pub messages: Vec<ApiMessage>,
    pub trim: Trim,
    pub stats: RebuildStats,
}

impl Conversation {
    /// Estimated tokens of all messages.
    pub fn estimated_tokens(&self) -> usize {
        self.messages.iter().map(ApiMessage::estimated_tokens).sum()
    }
}

/// Why a window could not be rebuilt.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RebuildError {
    #[error("cannot read {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("session {session} has {windows} window(s); window {asked} does not exist")]
    NoSuchWindow {
        session: String,
        windows: u32,
        asked: u32,
    },
    #[error("window {window} of session {session} holds no conversation")]
    Empty { session: String, window: u32 },
}

/// Which transcript to rebuild, and where its persisted tool outputs live.
#[derive(Debug, Clone)]
pub struct Source {
    pub session_id: String,
    pub path: PathBuf,
    /// `<project>/<session>/tool-results`.
    pub tool_results_dir: Option<PathBuf>,
    /// Where the bytes come from: the disk, or the archive once Claude Code deleted the files.
    pub sources: Sources,
}

/// The minimal view of any line: enough to walk the parent chain through bookkeeping entries.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Link {
    #[serde(rename = "type")]
    kind: String,
    uuid: Option<String>,
    parent_uuid: Option<String>,
    subtype: Option<String>,
    is_sidechain: Option<bool>,
}

/// A conversational entry with its window.
struct Conversational {
    entry: RawEntry,
    window: u32,
    sidechain: bool,
}

struct Parsed {
    /// uuid → (parent, window) for every line with a uuid.
    links: HashMap<String, (Option<String>, u32)>,
    conversational: Vec<Conversational>,
    /// Every tool result in the file, by tool_use id (side branches included), with its entry's uuid.
    results: HashMap<String, (RawBlock, Option<String>)>,
    windows: u32,
}

fn parse(source: &Source) -> Result<Parsed, RebuildError> {
    let mut parsed = Parsed {
        links: HashMap::new(),
        conversational: Vec::new(),
        results: HashMap::new(),
        windows: 1,
    };
    let mut window = 0u32;
    let outcome = stream_lines(&source.sources, &source.path, 0, |_, bytes| {
        let Ok(link) = serde_json::from_slice::<Link>(bytes) else {
            return;
        };
        if link.kind == "system" && link.subtype.as_deref() == Some("compact_boundary") {
            window += 1;
        }
        if let Some(u) = &link.uuid {
            parsed
                .links
                .insert(u.clone(), (link.parent_uuid.clone(), window));
        }
        if !matches!(link.kind.as_str(), "user" | "assistant") {
            return;
        }
        let Ok(entry) = serde_json::from_slice::<RawEntry>(bytes) else {
            return;
        };
        if let Some(RawContent::Blocks(blocks)) =
            entry.message.as_ref().and_then(|m| m.content.as_ref())
        {
            for b in blocks.iter().filter(|b| b.kind == "tool_result") {
                if let Some(id) = &b.tool_use_id {
                    parsed
                        .results
                        .entry(id.clone())
                        .or_insert_with(|| (b.clone(), entry.uuid.clone()));
                }
            }
        }
        parsed.conversational.push(Conversational {
            entry,
            window,
            sidechain: link.is_sidechain == Some(true),
        });
    });
    // A session file's sidechain entries are 1.0.x inline subagents, not part of its conversation; a
    // subagent's own file is all sidechain, and then those entries are the conversation.
    if parsed.conversational.iter().any(|c| !c.sidechain) {
        parsed.conversational.retain(|c| !c.sidechain);
    }
    if let Some(e) = outcome.report.io_error {
        return Err(RebuildError::Unreadable {
            path: source.path.display().to_string(),
            reason: e,
        });
    }
    parsed.windows = window + 1;
    Ok(parsed)
}

/// The indices (into `conversational`) of the chain ending at the window's last entry, oldest first.
///
/// A parent that is missing from the file (it happens in old versions) bridges to the entry just before
/// in file order, so a broken link never silently drops the rest of the window.
fn chain(parsed: &Parsed, window: u32) -> Vec<usize> {
    let in_window: Vec<usize> = (0..parsed.conversational.len())
        .filter(|&i| parsed.conversational[i].window == window)
        .collect();
    let Some(&leaf) = in_window.last() else {
        return Vec::new();
    };
    if parsed.conversational[leaf].entry.uuid.is_none() {
        return in_window;
    }
    let index_of: HashMap<&str, usize> = in_window
        .iter()
        .filter_map(|&i| {
            parsed.conversational[i]
                .entry
                .uuid
                .as_deref()
                .map(|u| (u, i))
        })
        .collect();
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut current = leaf;
    'walk: loop {
        out.push(current);
        let mut uuid = parsed.conversational[current].entry.uuid.clone();
        // Climb through non-conversational links until a conversational entry of this window.
        loop {
            let Some(u) = uuid else { break 'walk };
            if !seen.insert(u.clone()) {
                break 'walk;
            }
            let parent = parsed.links.get(&u).and_then(|(p, _)| p.clone());
            let Some(p) = parent else {
                // A root: a compaction boundary, the first prompt, or a `/clear`.
                break 'walk;
            };
            match (index_of.get(p.as_str()), parsed.links.get(&p)) {
                (Some(&i), _) => {
                    if seen.contains(&p) {
                        break 'walk;
                    }
                    current = i;
                    continue 'walk;
                }
                (None, Some((_, w))) if *w == window => uuid = Some(p),
                (None, Some(_)) => break 'walk,
                (None, None) => {
                    // Broken link: bridge to the previous entry of the window in file order.
                    let pos = in_window.iter().position(|&i| i == current).unwrap_or(0);
                    match pos.checked_sub(1).map(|k| in_window[k]) {
                        Some(prev) if !out.contains(&prev) => {
                            current = prev;
                            continue 'walk;
                        }
                        _ => break 'walk,
                    }
                }
            }
        }
    }
    out.reverse();
    out
}

/// Options of a rebuild.
#[derive(Debug, Clone)]
pub struct RebuildOptions {
    /// Estimated tokens the messages may take (the model's context minus the answer and the prompt).
    pub budget_tokens: usize,
}

impl Default for RebuildOptions {
    fn default() -> Self {
        Self {
            budget_tokens: 150_000,
        }
    }
}

/// Rebuilds window `window` (the latest when `None`) of a transcript: the window's chain of entries, its
/// messages (`raw_messages`), their alternation with every tool call answered (`alternate`), then the head
/// trimmed to the budget.
pub fn rebuild(
    source: &Source,
    window: Option<u32>,
    options: &RebuildOptions,
) -> Result<Conversation, RebuildError> {
    let parsed = parse(source)?;
    let window = window.unwrap_or(parsed.windows - 1);
    if window >= parsed.windows {
        return Err(RebuildError::NoSuchWindow {
            session: source.session_id.clone(),
            windows: parsed.windows,
            asked: window,
        });
    }
    let chain = chain(&parsed, window);
    let mut stats = RebuildStats {
        entries_in_chain: chain.len(),
        ..Default::default()
    };
    let entries: Vec<&RawEntry> = chain
        .iter()
        .map(|&i| &parsed.conversational[i].entry)
        .collect();
    let (raw, chain_results) = raw_messages(&entries, &mut stats);
    let results = Results {
        on_chain: entries.iter().filter_map(|e| e.uuid.as_deref()).collect(),
        chain: chain_results,
        parsed: &parsed,
        source,
    };
    let mut messages = alternate(raw, &results, &mut stats);
    for m in &mut messages {
        m.redact(&mut stats.secrets_hidden);
    }
    if messages.is_empty() {
        return Err(RebuildError::Empty {
            session: source.session_id.clone(),
            window,
        });
    }
    let trim = fit(&mut messages, options.budget_tokens);
    let times: Vec<DateTime<Utc>> = entries
        .iter()
        .filter(|e| e.is_meta != Some(true))
        .filter_map(|e| parse_time(e.timestamp.as_deref()))
        .collect();
    let (first, last) = (times.first().copied(), times.last().copied());
    let pick = |f: fn(&RawEntry) -> Option<&String>| {
        entries.iter().rev().find_map(|e| {
            f(e).filter(|s| !s.is_empty() && *s != "<synthetic>")
                .cloned()
        })
    };
    Ok(Conversation {
        session_id: source.session_id.clone(),
        window,
        windows: parsed.windows,
        cwd: pick(|e| e.cwd.as_ref()),
        git_branch: pick(|e| e.git_branch.as_ref()),
        first,
        last,
        model: pick(|e| e.message.as_ref().and_then(|m| m.model.as_ref())),
        messages,
        trim,
        stats,
    })
}

/// The number of windows of a transcript (1 + its compactions), without parsing its conversation.
pub fn window_count(src: &Sources, path: &Path) -> u32 {
    let finder = memchr::memmem::Finder::new(b"compact_boundary");
    let mut n = 1;
    stream_lines(src, path, 0, |_, bytes| {
        if finder.find(bytes).is_some()
            && let Ok(link) = serde_json::from_slice::<Link>(bytes)
            && link.kind == "system"
            && link.subtype.as_deref() == Some("compact_boundary")
        {
            n += 1;
        }
    });
    n
}

mod messages;
mod shape;

use messages::{Results, alternate, raw_messages};
use shape::fit;
pub use shape::{Malformed, check};
