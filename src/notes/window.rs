//! A session window as the extractor reads it, taken from the index (so sessions whose transcripts Claude Code
//! deleted still count): what the user and the assistant wrote, whole; each tool call as one line; tool errors
//! kept; long tool output as its head and tail; thinking left out; secrets redacted. A long window is cut
//! into chunks at message boundaries, each extracted in turn, so nothing is dropped for length.

use crate::index::render::{
    CALL_MARK, THINKING_END, THINKING_MARK, TOOL_ERROR_MARK, TOOL_MARK, TOOL_RESULT_MARK,
};
use crate::index::snapshot::{NO_AGENT, Snapshot};

/// Characters of one chunk sent to the extractor (about 20k tokens).
pub const CHUNK_CHARS: usize = 80_000;
/// A tool result longer than this is shown as its head and tail.
const RESULT_CHARS: usize = 1_200;
/// A tool error keeps more: error messages are what failures are made of.
const ERROR_CHARS: usize = 3_000;
/// A compaction summary opening the window (the previous window, already extracted): enough for orientation.
const SUMMARY_CHARS: usize = 2_000;

/// One main-conversation window of a session, as the index holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowInfo {
    pub session: String,
    pub window: u32,
    pub project: String,
    pub messages: usize,
    /// Highest message position (seq) in the window.
    pub last_seq: u32,
    pub last_ms: Option<i64>,
}

/// The sessions of `project` in the index, each once, in index order.
pub fn sessions_in(snap: &Snapshot, project: &str) -> Vec<String> {
    let Some(p) = snap.sym_of(project) else {
        return Vec::new();
    };
    // Rows are grouped by session, so repeats are adjacent.
    let mut v: Vec<u32> = snap
        .messages
        .iter()
        .filter(|r| r.project == p)
        .map(|r| r.session)
        .collect();
    v.dedup();
    v.into_iter().map(|s| snap.sym(s).to_string()).collect()
}

/// The windows of `session`'s main conversation, in order.
pub fn windows_of(snap: &Snapshot, session: &str) -> Vec<WindowInfo> {
    let Some(sym) = snap.sym_of(session) else {
        return Vec::new();
    };
    let mut out: Vec<WindowInfo> = Vec::new();
    for (i, r) in snap.messages.iter().enumerate() {
        if r.session != sym || r.agent != NO_AGENT {
            continue;
        }
        match out.iter_mut().find(|w| w.window == r.window) {
            Some(w) => {
                w.messages += 1;
                w.last_seq = w.last_seq.max(r.seq);
                w.last_ms = w.last_ms.max(r.timestamp_ms);
            }
            None => out.push(WindowInfo {
                session: session.to_string(),
                window: r.window,
                project: snap.project(i).to_string(),
                messages: 1,
                last_seq: r.seq,
                last_ms: r.timestamp_ms,
            }),
        }
    }
    out.sort_by_key(|w| w.window);
    out
}

/// Part of a window ready to send.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chunk {
    pub text: String,
    /// The last message it covers: after a successful extraction, the window is extracted up to here.
    pub last_seq: u32,
    pub messages: usize,
}

/// A window shaped for extraction.
#[derive(Debug, Clone, PartialEq)]
pub struct Shaped {
    pub chunks: Vec<Chunk>,
    /// Secrets replaced.
    pub redacted: usize,
    /// Whether the new messages hold anything a person wrote (a window of tool noise only is not worth a call).
    pub has_user_text: bool,
    pub last_ms: Option<i64>,
}

/// The head and tail of `s` when it is longer than `max` characters.
pub fn head_tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let keep = max / 2;
    let head: String = s.chars().take(keep).collect();
    let tail: String = s.chars().skip(n - keep).collect();
    format!("{head}\n[… {} characters omitted …]\n{tail}", n - 2 * keep)
}

/// One stored message as the extractor reads it.
fn render_message(role: &str, kind: &str, when: Option<i64>, content: &str) -> String {
    let stamp = when
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| format!(" · {}", t.format("%Y-%m-%d %H:%M")))
        .unwrap_or_default();
    // Tool results travel as user messages; the reader should not think the person wrote them.
    let who = if kind == "tool_result" { "tool" } else { role };
    let mut out = format!("[{who}{stamp}]\n");
    if kind == "summary" {
        out.push_str("(summary of the conversation before this window)\n");
        out.push_str(&head_tail(content, SUMMARY_CHARS));
        out.push('\n');
        return out;
    }
    // The stored text joins a message's parts; markers at line starts say where a tool part begins.
    let mut segments: Vec<(&str, String)> = Vec::new();
    for line in content.lines() {
        // What a reply says after its thinking is its own part (text stored before the end was marked keeps the
        // lines after `THINKING_MARK` with the thinking).
        if line == THINKING_END {
            segments.push(("", String::new()));
            continue;
        }
        let marker = [
            THINKING_MARK,
            TOOL_MARK,
            TOOL_RESULT_MARK,
            TOOL_ERROR_MARK,
            CALL_MARK,
        ]
        .into_iter()
        .find(|m| line.starts_with(m));
        match marker {
            Some(m) => segments.push((m, line[m.len()..].to_string())),
            None => match segments.last_mut() {
                Some((_, s)) => {
                    s.push('\n');
                    s.push_str(line);
                }
                None => segments.push(("", line.to_string())),
            },
        }
    }
    for (marker, text) in segments {
        match marker {
            // The call is the `→` line before its output.
            THINKING_MARK | CALL_MARK => continue,
            TOOL_MARK => {
                let line: String = text
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(300)
                    .collect();
                out.push_str(&format!("→ {line}\n"));
            }
            TOOL_RESULT_MARK => {
                out.push_str(&format!("← {}\n", head_tail(text.trim(), RESULT_CHARS)));
            }
            TOOL_ERROR_MARK => {
                out.push_str(&format!(
                    "← ERROR: {}\n",
                    head_tail(text.trim(), ERROR_CHARS)
                ));
            }
            _ if text.trim().is_empty() => continue,
            _ => {
                out.push_str(text.trim_matches('\n').trim_end());
                out.push('\n');
            }
        }
    }
    out
}

/// The main-conversation messages of `session`'s `window` after position `after_seq`, shaped and cut into
/// chunks of at most `chunk_chars`. `None` when there is nothing new.
pub fn shape(
    snap: &Snapshot,
    session: &str,
    window: u32,
    after_seq: Option<u32>,
    chunk_chars: usize,
) -> Option<Shaped> {
    let sym = snap.sym_of(session)?;
    let mut rows: Vec<usize> = (0..snap.messages.len())
        .filter(|&i| {
            let r = &snap.messages[i];
            r.session == sym
                && r.agent == NO_AGENT
                && r.window == window
                && after_seq.is_none_or(|s| r.seq > s)
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    rows.sort_by_key(|&i| snap.messages[i].seq);
    let mut shaped = Shaped {
        chunks: Vec::new(),
        redacted: 0,
        has_user_text: false,
        last_ms: None,
    };
    let mut current = Chunk::default();
    for i in rows {
        let stored = snap.stored(i);
        if stored.role == "user" && stored.kind == "text" {
            shaped.has_user_text = true;
        }
        shaped.last_ms = shaped.last_ms.max(stored.timestamp_ms);
        let text = render_message(
            &stored.role,
            &stored.kind,
            stored.timestamp_ms,
            &crate::index::shown::shown(&stored.content),
        );
        let mut hidden = crate::secrets::Tally::default();
        let text = crate::secrets::redact_counting(&text, &mut hidden).into_owned();
        shaped.redacted += hidden.total() as usize;
        let text = head_tail(&text, chunk_chars.saturating_sub(100).max(1000));
        if current.messages > 0 && current.text.len() + text.len() > chunk_chars {
            shaped.chunks.push(std::mem::take(&mut current));
        }
        current.text.push_str(&text);
        current.text.push('\n');
        current.last_seq = stored.seq;
        current.messages += 1;
    }
    shaped.chunks.push(current);
    Some(shaped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_parts_are_shaped() {
        let long = "x".repeat(5000);
        let content = format!(
            "Let me check.\n[thinking] secret plan\n[tool] Bash: cargo test\n[tool result] {long}\n[tool error] boom\nline two"
        );
        let out = render_message("assistant", "text", None, &content);
        assert!(out.contains("Let me check."));
        assert!(!out.contains("secret plan"));
        assert!(out.contains("→ Bash: cargo test"));
        assert!(out.contains("characters omitted"));
        assert!(out.contains("← ERROR: boom\nline two"));
        assert!(out.len() < 2000);
    }

    #[test]
    fn what_a_reply_says_after_its_thinking_is_kept_and_the_thinking_is_not() {
        let content = "[thinking] the user wants the port\nso check config\n[/thinking]\nIt listens on port 8417.\n\
                       [tool] Read: config.toml";
        let out = render_message("assistant", "text", None, content);
        assert!(out.contains("It listens on port 8417."), "{out}");
        assert!(
            !out.contains("the user wants") && !out.contains("check config"),
            "{out}"
        );
        assert!(out.contains("→ Read: config.toml"), "{out}");
    }
}
