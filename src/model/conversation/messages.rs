//! The messages of a window's chain as Messages API messages: split assistant entries merged
//! ([`raw_messages`]), every tool call's result found — on the chain, on a side branch, or in a persisted
//! tool-result file ([`Results::resolve`]) — and put at the head of the next message, with strict alternation
//! ([`alternate`]).

use super::{ApiMessage, Block, Parsed, RebuildStats, Source, Speaker};
use crate::transcript::entry::{RawBlock, RawContent, RawEntry};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// A message before alternation: who spoke and its blocks.
pub(super) type RawMessage = (Speaker, Vec<Block>);

/// The window's entries as raw messages, split assistant entries merged by API message id; tool results are
/// left as empty placeholders (re-inserted after their calls by [`alternate`]) and returned by call id.
pub(super) fn raw_messages(
    entries: &[&RawEntry],
    stats: &mut RebuildStats,
) -> (Vec<RawMessage>, HashMap<String, RawBlock>) {
    let mut raw: Vec<RawMessage> = Vec::new();
    let mut by_api_id: HashMap<String, usize> = HashMap::new();
    let mut chain_results: HashMap<String, RawBlock> = HashMap::new();
    for e in entries {
        if e.is_meta == Some(true) {
            continue;
        }
        let Some(msg) = e.message.as_ref() else {
            continue;
        };
        let speaker = if e.kind == "assistant" {
            Speaker::Assistant
        } else {
            Speaker::User
        };
        let mut blocks = Vec::new();
        match msg.content.as_ref() {
            Some(RawContent::Text(t)) if !t.trim().is_empty() => {
                blocks.push(Block::text(t.clone()))
            }
            Some(RawContent::Blocks(bs)) => {
                for b in bs {
                    if b.kind == "tool_result" {
                        if let Some(id) = &b.tool_use_id {
                            chain_results.entry(id.clone()).or_insert_with(|| b.clone());
                        }
                        // Re-inserted after its tool_use by `alternate`.
                        blocks.push(Block::ToolResult {
                            tool_use_id: b.tool_use_id.clone().unwrap_or_default(),
                            content: String::new(),
                            is_error: false,
                        });
                    } else if let Some(block) = convert(b, stats) {
                        blocks.push(block);
                    }
                }
            }
            _ => {}
        }
        if e.is_compact_summary == Some(true)
            && let Some(Block::Text { text }) = blocks.first_mut()
        {
            *text = format!(
                "[Summary of the earlier part of this session, written by Claude Code at a compaction]\n{text}"
            );
        }
        let api_id = msg.id.clone().filter(|_| speaker == Speaker::Assistant);
        if let Some(id) = &api_id
            && let Some(&i) = by_api_id.get(id)
        {
            raw[i].1.extend(blocks);
            continue;
        }
        if let Some(id) = api_id {
            by_api_id.insert(id, raw.len());
        }
        raw.push((speaker, blocks));
    }
    (raw, chain_results)
}

/// Where a tool call's result is found: on the window's chain, else anywhere in the transcript (a side
/// branch), else in a persisted tool-result file.
pub(super) struct Results<'a> {
    pub(super) chain: HashMap<String, RawBlock>,
    pub(super) on_chain: HashSet<&'a str>,
    pub(super) parsed: &'a Parsed,
    pub(super) source: &'a Source,
}

impl Results<'_> {
    /// The result block of call `id`, or a placeholder that says the transcript holds none.
    pub(super) fn resolve(&self, id: &str, stats: &mut RebuildStats) -> Block {
        let found = self.chain.get(id).cloned().or_else(|| {
            self.parsed.results.get(id).map(|(b, at)| {
                if at.as_deref().is_none_or(|u| !self.on_chain.contains(u)) {
                    stats.results_from_side_branches += 1;
                }
                b.clone()
            })
        });
        match found {
            Some(b) => Block::ToolResult {
                tool_use_id: id.to_string(),
                content: result_content(&b, self.source, stats),
                is_error: b.is_error.unwrap_or(false),
            },
            None => {
                stats.results_missing += 1;
                Block::ToolResult {
                    tool_use_id: id.to_string(),
                    content: "[The transcript holds no result for this tool call.]".into(),
                    is_error: false,
                }
            }
        }
    }
}

/// Alternation: tool results are stripped out of user messages and re-inserted right after the assistant
/// message that called them; orphan results (their call is not in this window) become text; what stays empty
/// is dropped, neighbours that then share a role are joined, and a window that opens with the assistant gets
/// a user turn first.
pub(super) fn alternate(
    raw: Vec<RawMessage>,
    results: &Results,
    stats: &mut RebuildStats,
) -> Vec<ApiMessage> {
    let called: HashSet<String> = raw
        .iter()
        .filter(|(s, _)| *s == Speaker::Assistant)
        .flat_map(|(_, bs)| bs.iter())
        .filter_map(|b| match b {
            Block::ToolUse { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect();
    let mut messages: Vec<ApiMessage> = Vec::new();
    for (speaker, blocks) in raw {
        let mut kept = Vec::new();
        for b in blocks {
            match b {
                Block::ToolResult { tool_use_id, .. } if called.contains(&tool_use_id) => {}
                Block::ToolResult { tool_use_id, .. } => {
                    let r = results.resolve(&tool_use_id, stats);
                    if let Block::ToolResult { content, .. } = r {
                        kept.push(Block::text(format!(
                            "[Result of an earlier tool call]\n{content}"
                        )));
                    }
                }
                other => kept.push(other),
            }
        }
        if kept.is_empty() && speaker == Speaker::Assistant {
            continue;
        }
        // An emptied user message (its results re-inserted below) still separates two assistant turns.
        match messages.last_mut() {
            Some(last) if last.role == speaker => last.content.extend(kept),
            _ => messages.push(ApiMessage {
                role: speaker,
                content: kept,
            }),
        }
    }
    let mut i = 0;
    while i < messages.len() {
        if messages[i].role == Speaker::Assistant {
            let ids: Vec<String> = messages[i].tool_use_ids().map(str::to_owned).collect();
            if !ids.is_empty() {
                let answers: Vec<Block> = ids.iter().map(|id| results.resolve(id, stats)).collect();
                stats.tool_pairs += answers.len();
                match messages.get_mut(i + 1) {
                    Some(next) => {
                        next.content.splice(0..0, answers);
                    }
                    None => messages.push(ApiMessage {
                        role: Speaker::User,
                        content: answers,
                    }),
                }
            }
        }
        i += 1;
    }
    // Drop what stayed empty and join the neighbours that then share a role.
    let mut joined: Vec<ApiMessage> = Vec::with_capacity(messages.len());
    for m in messages.into_iter().filter(|m| !m.content.is_empty()) {
        match joined.last_mut() {
            Some(last) if last.role == m.role => last.content.extend(m.content),
            _ => joined.push(m),
        }
    }
    if joined.first().is_some_and(|m| m.role == Speaker::Assistant) {
        joined.insert(
            0,
            ApiMessage {
                role: Speaker::User,
                content: vec![Block::text(
                    "[The replayed window begins with an assistant turn.]",
                )],
            },
        );
    }
    joined
}

/// Converts a non-result block; `None` for blocks a replay leaves out (thinking is the model's private
/// scratch space and its signatures do not carry over).
fn convert(b: &RawBlock, stats: &mut RebuildStats) -> Option<Block> {
    match b.kind.as_str() {
        "text" => b
            .text
            .as_ref()
            .filter(|t| !t.trim().is_empty())
            .map(|t| Block::text(t.clone())),
        "tool_use" => Some(Block::ToolUse {
            id: b.id.clone().unwrap_or_default(),
            name: b.name.clone().unwrap_or_else(|| "tool".into()),
            input: b
                .input
                .clone()
                .filter(Value::is_object)
                .unwrap_or_else(|| Value::Object(Default::default())),
        }),
        "image" => {
            stats.images_dropped += 1;
            Some(Block::text(
                "[An image was attached here; it is not part of the replay.]",
            ))
        }
        "document" => Some(Block::text(
            "[A document was attached here; it is not part of the replay.]",
        )),
        "server_tool_use" => Some(Block::text(format!(
            "[Server tool {} called with {}]",
            b.name.as_deref().unwrap_or("?"),
            b.input.as_ref().map(Value::to_string).unwrap_or_default()
        ))),
        _ => None,
    }
}

/// The text of a tool result, with a persisted output read back from `<session>/tool-results/`.
fn result_content(b: &RawBlock, source: &Source, stats: &mut RebuildStats) -> String {
    let mut text = match b.content.as_ref() {
        Some(RawContent::Text(t)) => t.clone(),
        Some(RawContent::Blocks(bs)) => bs
            .iter()
            .filter_map(|x| match x.kind.as_str() {
                "text" => x.text.clone(),
                "image" => {
                    stats.images_dropped += 1;
                    Some("[An image was returned here; it is not part of the replay.]".into())
                }
                "tool_reference" => {
                    Some(format!("[tool: {}]", x.tool_name.as_deref().unwrap_or("?")))
                }
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    if text.contains("<persisted-output>")
        && let Some(full) = persisted(&text, b.tool_use_id.as_deref(), source)
    {
        stats.persisted_results_resolved += 1;
        text = full;
    }
    text
}

/// Largest persisted output read back whole.
const MAX_PERSISTED_BYTES: u64 = 4 * 1024 * 1024;

fn persisted(marker: &str, tool_use_id: Option<&str>, source: &Source) -> Option<String> {
    let dir = source.tool_results_dir.as_ref()?;
    // The marker names a path on the machine that wrote it; only its file name is trusted, and only inside
    // this session's own tool-results folder.
    let named = marker
        .lines()
        .find_map(|l| l.split("saved to:").nth(1))
        .and_then(|p| Path::new(p.trim()).file_name().map(|n| n.to_owned()));
    let candidates =
        named
            .into_iter()
            .map(|n| dir.join(n))
            .chain(tool_use_id.into_iter().flat_map(|id| {
                ["txt", "json"]
                    .into_iter()
                    .map(move |ext| dir.join(format!("{id}.{ext}")))
            }));
    for path in candidates {
        // From disk, or the archive once Claude Code deleted it.
        let Ok(bytes) = source.sources.read(&path) else {
            continue;
        };
        if bytes.len() as u64 > MAX_PERSISTED_BYTES {
            continue;
        }
        if let Ok(text) = String::from_utf8(bytes) {
            return Some(text);
        }
    }
    None
}
