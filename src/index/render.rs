//! What of a message gets stored and embedded: its readable text (for display and the lexical index) and, per
//! kind, the texts to embed, each kind capped.

use super::records::ChunkKind;
use crate::transcript::{Message, Part};

/// How many chunks of each kind a message may have embedded. Text is what people search for, so it gets the
/// most; a tool result is represented by its first chunk (a 50 KB log must not cost fifty embeddings; its whole
/// text is still in the lexical index).
pub fn chunk_cap(kind: ChunkKind) -> usize {
    match kind {
        ChunkKind::Text => 4,
        ChunkKind::Thinking => 2,
        ChunkKind::ToolUse | ChunkKind::ToolResult => 1,
    }
}

/// Stored content is cut here (display cuts at 2,000 characters; the rest only feeds the lexical index).
const MAX_CONTENT_BYTES: usize = 32 * 1024;

/// Cuts `content` to what a stored message keeps, [`MAX_CONTENT_BYTES`], at a character boundary: the index's
/// rows and the team hub's keep the same.
pub fn cut_content(content: &mut String) {
    if content.len() > MAX_CONTENT_BYTES {
        let mut cut = MAX_CONTENT_BYTES;
        while !content.is_char_boundary(cut) {
            cut -= 1;
        }
        content.truncate(cut);
    }
}

/// Joins the neighbour text and a message's own text in a text chunk. The embedding step splits them again: the
/// chunk's vector is its own text's vector plus [`Neighbour::weight`] times the neighbour text's vector,
/// renormalised — the neighbour's meaning without embedding its words a second time (measured in docs/search.md:
/// better retrieval than prepending the neighbour's text, at half the embedding cost). Storing both in one string
/// keeps the chunk hash, the vector reuse and the `.todo` list exactly as they were.
pub const NEIGHBOUR_SEP: char = '\u{1f}';

/// How a text chunk's vector takes in the message before it: a reply ("yes, the second one") means little without
/// what it answers. Part of what a vector means, so it is recorded in the index's model id (a different setting
/// re-embeds like a different model). The defaults were chosen on the LoCoMo dev set (docs/search.md); the CLI
/// reads the experiment variables `GHOLA_NEIGHBOUR_CHARS`, `_WEIGHT` and `_BELOW` into it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbour {
    /// Characters of the previous message's text (its tail) whose vector joins a message's text vectors (0: off).
    pub chars: usize,
    /// How much of the neighbour's vector a text chunk's vector takes (1.0, 1.5 and 2.0 measured).
    pub weight: f32,
    /// The neighbour goes only in front of a message whose own text is shorter than this many characters
    /// (default: every message): a long message stands alone, and the neighbour only costs embedding time.
    pub below: usize,
}

impl Default for Neighbour {
    fn default() -> Self {
        Neighbour {
            chars: 300,
            weight: DEFAULT_NEIGHBOUR_WEIGHT,
            below: usize::MAX,
        }
    }
}

/// The neighbour weight chosen on the LoCoMo dev set.
pub const DEFAULT_NEIGHBOUR_WEIGHT: f32 = 1.5;

/// A file as Claude Code's Read tool returns it (`cat -n` style: `     1→text`, or `     1\ttext` in older
/// versions) without its line numbers: they are a quarter of the word pieces of a code listing and say nothing a
/// question asks about. Other text is returned as it is (a listing is recognised by its first lines all being
/// numbered in sequence).
pub fn without_line_numbers(text: &str) -> std::borrow::Cow<'_, str> {
    fn split(line: &str) -> Option<(u64, &str)> {
        let t = line.trim_start_matches(' ');
        let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let n = t[..digits].parse().ok()?;
        let rest = &t[digits..];
        let body = rest.strip_prefix('→').or_else(|| rest.strip_prefix('\t'))?;
        Some((n, body))
    }
    let mut first = text.lines().take(3).map(split);
    let in_sequence = match first.next() {
        Some(Some((start, _))) => first
            .enumerate()
            .all(|(i, l)| l.is_some_and(|(n, _)| n == start + 1 + i as u64)),
        _ => false,
    };
    if !in_sequence {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(split(line).map_or(line, |(_, body)| body));
        out.push('\n');
    }
    std::borrow::Cow::Owned(out)
}

/// The last `n` characters of `s`.
pub fn tail_chars(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
}

/// The readable text of a message, what it mostly is ("text", "summary", "tool_use", "tool_result",
/// "thinking"), and the texts to embed, by kind.
pub fn render(m: &Message) -> (String, &'static str, Vec<(ChunkKind, String)>) {
    let mut content = String::new();
    let mut by_kind: Vec<(ChunkKind, String)> = Vec::new();
    let mut add = |kind: ChunkKind, text: &str| {
        if let Some(e) = by_kind.iter_mut().find(|(k, _)| *k == kind) {
            e.1.push('\n');
            e.1.push_str(text);
        } else {
            by_kind.push((kind, text.to_string()));
        }
    };
    for p in &m.parts {
        let line = match p {
            Part::Text { text } => {
                add(ChunkKind::Text, text);
                text.clone()
            }
            Part::Thinking { text } => {
                add(ChunkKind::Thinking, text);
                format!("[thinking] {text}")
            }
            Part::ToolUse { name, summary, .. } => {
                let l = format!("{name}: {summary}");
                add(ChunkKind::ToolUse, &l);
                format!("[tool] {l}")
            }
            Part::ToolResult { text, is_error, .. } => {
                add(ChunkKind::ToolResult, &without_line_numbers(text));
                format!(
                    "[{}] {text}",
                    if *is_error {
                        "tool error"
                    } else {
                        "tool result"
                    }
                )
            }
        };
        if !content.is_empty() {
            content.push('\n');
        }
        content.push_str(&line);
    }
    by_kind.retain(|(_, t)| !t.trim().is_empty());
    cut_content(&mut content);
    let kind = if m.is_compact_summary {
        "summary"
    } else if by_kind.iter().any(|(k, _)| *k == ChunkKind::Text) {
        "text"
    } else if by_kind.iter().any(|(k, _)| *k == ChunkKind::ToolResult) {
        "tool_result"
    } else if by_kind.iter().any(|(k, _)| *k == ChunkKind::ToolUse) {
        "tool_use"
    } else {
        "thinking"
    };
    (content, kind, by_kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_numbers_of_a_listing_are_dropped() {
        assert_eq!(
            without_line_numbers(
                "     1→JSSoundRecorder\n     2→===\n     3→\n     4→Record sounds"
            ),
            "JSSoundRecorder\n===\n\nRecord sounds\n"
        );
        assert_eq!(
            without_line_numbers("  86→  end\n  87→\n  88→  # Private"),
            "  end\n\n  # Private\n"
        );
        assert_eq!(
            without_line_numbers("1\t# webapp\n2\t\n3\tA small web app."),
            "# webapp\n\nA small web app.\n"
        );
        for other in [
            "3 suites, 87 examples, 0 failures",
            "1\tapple\n5\tpear\n9\tplum",
            "2024 was a good year\n2025 too",
            "",
        ] {
            assert_eq!(without_line_numbers(other), other);
        }
    }
}
