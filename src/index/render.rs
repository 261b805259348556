//! What of a message gets stored and embedded: its readable text (for display and the lexical index) and, per
//! kind, the texts to embed, each kind capped.

use super::records::ChunkKind;
use super::shown::SHOWN_MARK;
use crate::transcript::{Message, Part, Role, clean, tool_output_mark};
pub use crate::transcript::{THINKING_MARK, TOOL_ERROR_MARK, TOOL_MARK, TOOL_RESULT_MARK};
use std::collections::HashMap;

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

/// Cuts `content` to what a stored message keeps, `MAX_CONTENT_BYTES`, at a character boundary: the index's
/// rows and the team hub's keep the same.
pub fn cut_content(content: &mut String) {
    cut_to(content, MAX_CONTENT_BYTES);
}

/// Cuts `content` to at most `max` bytes, at a character boundary.
fn cut_to(content: &mut String, max: usize) {
    content.truncate(content.floor_char_boundary(max));
}

/// The longest start of `s` of at most `max` bytes that ends at a character boundary.
fn head(s: &str, max: usize) -> &str {
    &s[..s.floor_char_boundary(max)]
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
    /// (`usize::MAX`: every message): a long message says what it is about, and its neighbour only blurs it.
    pub below: usize,
    /// How much of the vector of the call that produced a tool's output joins the output's vector (0: the
    /// output is indexed alone, without its call's words either; see [`Calls`]).
    pub call_weight: f32,
    /// Characters of what a call wrote (`Part::ToolUse::input`: a plan, a to-do list, an edit's new text, a
    /// message to a teammate) that join the call's line in its vector (0: the line alone). The stored text and
    /// the keyword document keep the line alone: there these words cost ranking (docs/search.md, "What a call
    /// wrote, in its vector").
    pub call_words: usize,
}

impl Default for Neighbour {
    fn default() -> Self {
        Neighbour {
            chars: 300,
            weight: DEFAULT_NEIGHBOUR_WEIGHT,
            below: DEFAULT_NEIGHBOUR_BELOW,
            call_weight: DEFAULT_CALL_WEIGHT,
            call_words: DEFAULT_CALL_WORDS,
        }
    }
}

/// The neighbour weight chosen on the LoCoMo dev set.
pub const DEFAULT_NEIGHBOUR_WEIGHT: f32 = 1.5;

/// Messages whose own text is this long or longer take no neighbour: a task's closing summary or a long
/// explanation is about itself, and 1.5 × the previous message's tail pulled its vector away from it ("13
/// Different Musical Scales…" met "how many kinds of scales…" at cosine 0.33 alone, 0.14 with its neighbour).
/// Chosen with one history held out at a time on the coding set and LoCoMo (docs/search.md, "A long message
/// stands alone"): LoCoMo's turns are nearly all shorter, and keep theirs.
pub const DEFAULT_NEIGHBOUR_BELOW: usize = 600;

/// The weight of a tool output's call, chosen with one corpus folder of the coding set held out at a time
/// (docs/search.md: 0.5 and 1.0 measured, 0.5 chosen on five of six folds).
pub const DEFAULT_CALL_WEIGHT: f32 = 0.5;

/// How much of what a call wrote its vector sees: "what was on the plan?" or "what were the teammates asked to
/// add?" is answered by a call whose line says only `ExitPlanMode: # Plan: …` or `SendMessage: bob`. Chosen with
/// one corpus folder of the coding set held out at a time among 0, 150, 300, 600 and 1,000 (300 on five folds
/// of six; docs/search.md, "What a call wrote, in its vector").
pub const DEFAULT_CALL_WORDS: usize = 300;

/// The line a tool output's stored text ends with, naming the call that produced it (`[call] Bash: ruff format —
/// Format the code`): "33 files left unchanged" alone says nothing a question asks about, and the reader of a hit
/// wants to know what was run.
pub const CALL_MARK: &str = "[call] ";

/// The line that ends a thinking part ([`THINKING_MARK`] opens it): a thinking part runs over many lines, and
/// what the reply then says — the words a reader names it by, which a rule or a note reads — must be told from
/// it. Text stored before this line was written has no end to its thinking, and its readers judge it as before.
pub const THINKING_END: &str = "[/thinking]";

/// The tool calls one conversation made so far (`Name: summary` by tool_use id), so that each tool output is
/// indexed with the call that produced it — in its words and, by vector, in its meaning (measured on the coding
/// set, docs/search.md). A read that resumes after a call's message but before its output (an append between
/// the two, with the output in a later user message than the first) indexes that output alone.
///
/// A command or agent run in the background answers "running in background with ID: b1bg01" (or "agentId:
/// a1agnt"), and what it printed comes later, to a call that names only that id (`BashOutput: bash_1`,
/// `TaskOutput: b1bg01`). Such a call's line is joined by the line of the call that started the work (`BashOutput:
/// bash_1 ← Bash: pnpm dev — Start the dev server`), so "what address did the dev server listen on" finds the
/// output that says it.
#[derive(Debug, Default)]
pub struct Calls {
    /// `Name: summary` of each call, by tool_use id.
    lines: HashMap<String, String>,
    /// The line of the call that started each background task, by the task's id.
    started: HashMap<String, String>,
}

/// What a tool's output says just before the id of work it left running in the background.
const BACKGROUND_ID_MARKS: [&str; 2] = ["running in background with ID: ", "agentId: "];

/// How far into a tool's output the report of background work is looked for: it is the output's first line or
/// second ("Async agent launched successfully.\nagentId: …"), never deep in a file that happens to say
/// `agentId: string`.
const BACKGROUND_REPORT_BYTES: usize = 200;

/// The id of the background work a tool output reports started, if it reports one (a mark at the start of one
/// of its first lines).
fn background_id(output: &str) -> Option<&str> {
    let head = head(output, BACKGROUND_REPORT_BYTES);
    BACKGROUND_ID_MARKS.iter().find_map(|mark| {
        let at =
            head.match_indices(mark).map(|(i, _)| i).find(|&i| {
                i == 0 || head[..i].ends_with('\n') || head[..i].ends_with("Command ")
            })? + mark.len();
        let rest = &output[at..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        (end > 0).then(|| &rest[..end])
    })
}

impl Calls {
    /// Notes the calls `m` makes and returns those whose outputs `m` holds, in order, each once.
    pub fn behind(&mut self, m: &Message) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &m.parts {
            match p {
                Part::ToolUse {
                    id, name, summary, ..
                } => {
                    let line = match self.started.get(summary.trim()) {
                        Some(start) => format!("{name}: {summary} ← {start}"),
                        None => format!("{name}: {summary}"),
                    };
                    self.lines.insert(id.clone(), line);
                }
                Part::ToolResult {
                    tool_use_id, text, ..
                } => {
                    if let Some(call) = self.lines.get(tool_use_id) {
                        if let Some(task) = background_id(text) {
                            self.started.insert(task.to_string(), call.clone());
                        }
                        if !out.contains(call) {
                            out.push(call.clone());
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// `content` without the [`CALL_MARK`] lines a tool output's stored text ends with: the output as the tool wrote
/// it (a subagent's report and its hand-back are the same text).
pub fn without_calls(content: &[u8]) -> &[u8] {
    let mut end = content.len();
    while let Some(i) = memchr::memmem::rfind(&content[..end], b"\n[call] ") {
        if content[i + 1..end].contains(&b'\n') {
            break;
        }
        end = i;
    }
    &content[..end]
}

/// Whether a text is a file as Claude Code's Read tool returns it: its first lines (up to three) all numbered in
/// sequence (`     1→text`, or `     1\ttext` in older versions). Search reads it too: a listing is the raw
/// material of an explanation, not the explanation (`search::explain`).
pub fn is_numbered_listing(text: &str) -> bool {
    let mut first = text.lines().take(3).map(split_line_number);
    match first.next() {
        Some(Some((start, _))) => first
            .enumerate()
            .all(|(i, l)| l.is_some_and(|(n, _)| n == start + 1 + i as u64)),
        _ => false,
    }
}

/// A listing's line as its number and its text, or `None` for a line without a number.
fn split_line_number(line: &str) -> Option<(u64, &str)> {
    let t = line.trim_start_matches(' ');
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let n = t[..digits].parse().ok()?;
    let rest = &t[digits..];
    let body = rest.strip_prefix('→').or_else(|| rest.strip_prefix('\t'))?;
    Some((n, body))
}

/// A file as Claude Code's Read tool returns it (`cat -n` style: `     1→text`, or `     1\ttext` in older
/// versions) without its line numbers: they are a quarter of the word pieces of a code listing and say nothing a
/// question asks about. Other text is returned as it is (a listing is recognised by its first lines all being
/// numbered in sequence).
pub fn without_line_numbers(text: &str) -> std::borrow::Cow<'_, str> {
    if !is_numbered_listing(text) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(split_line_number(line).map_or(line, |(_, body)| body));
        out.push('\n');
    }
    std::borrow::Cow::Owned(out)
}

/// The first `n` characters of `s`.
pub(super) fn head_chars(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(end, _)| &s[..end])
}

/// The last `n` characters of `s`.
pub fn tail_chars(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
}

/// Whether a message's text is stored and searched without what an IDE added to it (`<ide_opened_file>`,
/// `<ide_selection>`, `<ide_diagnostics>`; [`clean::without_ide_notes`]). An editor's extension adds "The user
/// opened the file … in the IDE. This may or may not be related to the current task." to every request, so its
/// words ("file", "opened", "related", "task") would match queries in every request and pull a short request's
/// vector towards the boilerplate. Only a user's message is read so (an assistant may write the tag's name in
/// prose), and only when something the user wrote is left: a request that is all IDE notes keeps them.
fn leaves_out_ide_notes(m: &Message) -> bool {
    m.role == Role::User
        && m.parts
            .iter()
            .any(|p| matches!(p, Part::Text { text } if text.contains("<ide_")))
        && m.parts.iter().any(|p| match p {
            Part::Text { text } => !clean::without_ide_notes(text).is_empty(),
            _ => true,
        })
}

/// The readable text of a message, what it mostly is ("text", "summary", "tool_use", "tool_result",
/// "thinking"), and the texts to embed, by kind. `calls` are the calls behind the message's tool outputs
/// ([`Calls::behind`]; empty: none): their lines end the text, and the output's chunk carries them as its
/// neighbour ([`NEIGHBOUR_SEP`]), joined by vector with [`Neighbour::call_weight`]. A call's text to embed is its
/// line and the first `call_words` characters of what it wrote ([`Neighbour::call_words`]); its readable text,
/// the line alone.
pub fn render(
    m: &Message,
    calls: &[String],
    call_words: usize,
) -> (String, &'static str, Vec<(ChunkKind, String)>) {
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
    let ide_free = leaves_out_ide_notes(m);
    for p in &m.parts {
        let line = match p {
            Part::Text { text } => {
                let text = if ide_free {
                    clean::without_ide_notes(text)
                } else {
                    text.clone()
                };
                if text.is_empty() {
                    continue;
                }
                add(ChunkKind::Text, &text);
                text
            }
            Part::Thinking { text } => {
                add(ChunkKind::Thinking, text);
                format!("{THINKING_MARK}{text}\n{THINKING_END}")
            }
            Part::ToolUse {
                name,
                summary,
                input,
                ..
            } => {
                let l = format!("{name}: {summary}");
                let wrote = head_chars(input, call_words);
                if wrote.is_empty() {
                    add(ChunkKind::ToolUse, &l);
                } else {
                    add(ChunkKind::ToolUse, &format!("{l}\n{wrote}"));
                }
                format!("{TOOL_MARK}{l}")
            }
            Part::ToolResult { text, is_error, .. } => {
                add(ChunkKind::ToolResult, &without_line_numbers(text));
                format!("{}{text}", tool_output_mark(*is_error))
            }
        };
        if !content.is_empty() {
            content.push('\n');
        }
        content.push_str(&line);
    }
    by_kind.retain(|(_, t)| !t.trim().is_empty());
    // What the calls wrote follows the text, shown but not searched (`super::shown`); a mark in the text itself
    // would end its keyword text early, so the text loses it.
    if content.contains(SHOWN_MARK) {
        content = content.replace(SHOWN_MARK, "");
    }
    let shown = super::shown::call_words(m);
    if !calls.is_empty() && by_kind.iter().any(|(k, _)| *k == ChunkKind::ToolResult) {
        for (k, t) in by_kind.iter_mut() {
            if *k == ChunkKind::ToolResult {
                *t = format!("{}{NEIGHBOUR_SEP}{t}", calls.join("\n"));
            }
        }
        let lines: String = calls.iter().map(|c| format!("\n{CALL_MARK}{c}")).collect();
        // The call lines stay whole at the end, however long the output.
        cut_to(
            &mut content,
            MAX_CONTENT_BYTES.saturating_sub(lines.len() + shown.len()),
        );
        content.push_str(&lines);
    }
    cut_to(&mut content, MAX_CONTENT_BYTES.saturating_sub(shown.len()));
    content.push_str(&shown);
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
pub(in crate::index) mod tests {
    use super::*;
    use crate::transcript::Role;

    /// A message of `parts` with nothing else set (`index::shown`'s tests too).
    pub(in crate::index) fn message(role: Role, parts: Vec<Part>) -> Message {
        Message {
            uuid: "u".into(),
            merged_uuids: Vec::new(),
            first_entry: None,
            parent_uuid: None,
            session_id: "s".into(),
            agent_id: None,
            project: "/p".into(),
            cwd: None,
            git_branch: None,
            timestamp: None,
            role,
            model: None,
            parts,
            window: 0,
            is_compact_summary: false,
            offset: 0,
        }
    }

    fn call(id: &str, name: &str, summary: &str) -> Part {
        Part::ToolUse {
            id: id.into(),
            name: name.into(),
            summary: summary.into(),
            input: String::new(),
            touches: Vec::new(),
        }
    }

    fn output(id: &str, text: &str) -> Part {
        Part::ToolResult {
            tool_use_id: id.into(),
            text: text.into(),
            is_error: false,
        }
    }

    #[test]
    fn what_a_call_wrote_joins_its_vector_and_not_its_text() {
        let plan = "# Plan: Read URL params on load, then the share button — ünïcode at the cut";
        let m = message(
            Role::Assistant,
            vec![Part::ToolUse {
                id: "t1".into(),
                name: "ExitPlanMode".into(),
                summary: "# Plan".into(),
                input: plan.into(),
                touches: Vec::new(),
            }],
        );
        let line = "ExitPlanMode: # Plan";
        let (content, kind, chunks) = render(&m, &[], 60);
        assert_eq!(
            (super::super::shown::keyword_text(&content), kind),
            (&*format!("{TOOL_MARK}{line}"), "tool_use")
        );
        // The stored text shows it after the line, where ranking does not read (`super::shown`).
        assert_eq!(
            super::super::shown::shown(&content),
            format!("{TOOL_MARK}{line}\n(ExitPlanMode wrote:) {plan}")
        );
        let head: String = plan.chars().take(60).collect();
        assert_eq!(chunks, [(ChunkKind::ToolUse, format!("{line}\n{head}"))]);
        assert!(
            head.ends_with("ünï"),
            "cut among letters of two bytes: {head}"
        );
        // Shorter than the room: all of it; no room: the line alone.
        let (_, _, chunks) = render(&m, &[], 1_000);
        assert_eq!(chunks, [(ChunkKind::ToolUse, format!("{line}\n{plan}"))]);
        let (_, _, chunks) = render(&m, &[], 0);
        assert_eq!(chunks, [(ChunkKind::ToolUse, line.to_string())]);
        // A call whose summary says it all wrote nothing more.
        let bare = message(Role::Assistant, vec![call("t2", "Bash", "cargo test")]);
        let (_, _, chunks) = render(&bare, &[], 300);
        assert_eq!(
            chunks,
            [(ChunkKind::ToolUse, "Bash: cargo test".to_string())]
        );
    }

    #[test]
    fn a_mark_in_the_text_itself_does_not_end_its_keyword_text() {
        let m = message(
            Role::Assistant,
            vec![
                Part::Text {
                    text: format!("before{SHOWN_MARK} after"),
                },
                Part::ToolUse {
                    id: "t1".into(),
                    name: "Write".into(),
                    summary: "/w/a.txt".into(),
                    input: "hello".into(),
                    touches: Vec::new(),
                },
            ],
        );
        let (content, _, _) = render(&m, &[], 0);
        assert_eq!(
            super::super::shown::keyword_text(&content),
            format!("before after\n{TOOL_MARK}Write: /w/a.txt")
        );
        assert!(content.ends_with("(Write wrote:) hello"), "{content:?}");
    }

    #[test]
    fn a_tool_output_is_rendered_with_the_call_that_produced_it() {
        let mut calls = Calls::default();
        let asked = message(
            Role::Assistant,
            vec![
                call("t1", "Bash", "ruff format — Format the code"),
                call("t2", "Bash", "ruff check --fix — Lint"),
            ],
        );
        assert!(
            calls.behind(&asked).is_empty(),
            "a call is not behind itself"
        );
        let (content, _, chunks) = render(&asked, &calls.behind(&asked), 0);
        assert!(!content.contains(CALL_MARK), "{content}");
        assert!(chunks.iter().all(|(_, t)| !t.contains(NEIGHBOUR_SEP)));

        let answered = message(Role::User, vec![output("t2", "All checks passed!")]);
        let behind = calls.behind(&answered);
        assert_eq!(behind, ["Bash: ruff check --fix — Lint"]);
        let (content, kind, chunks) = render(&answered, &behind, 0);
        assert_eq!(kind, "tool_result");
        assert_eq!(
            content,
            "[tool result] All checks passed!\n[call] Bash: ruff check --fix — Lint"
        );
        assert_eq!(
            chunks,
            [(
                ChunkKind::ToolResult,
                format!("Bash: ruff check --fix — Lint{NEIGHBOUR_SEP}All checks passed!")
            )]
        );
        assert_eq!(
            without_calls(content.as_bytes()),
            b"[tool result] All checks passed!"
        );
        // An output whose call was never seen (a resumed read) is indexed alone.
        let (content, _, chunks) = render(&message(Role::User, vec![output("t9", "ok")]), &[], 0);
        assert_eq!(content, "[tool result] ok");
        assert_eq!(chunks, [(ChunkKind::ToolResult, "ok".to_string())]);
    }

    #[test]
    fn what_background_work_printed_is_indexed_with_the_call_that_started_it() {
        let mut calls = Calls::default();
        let said = |calls: &mut Calls, parts| calls.behind(&message(Role::Assistant, parts));
        let heard = |calls: &mut Calls, parts| calls.behind(&message(Role::User, parts));
        said(
            &mut calls,
            vec![call("t1", "Bash", "pnpm dev — Start the dev server")],
        );
        heard(
            &mut calls,
            vec![output(
                "t1",
                "Command running in background with ID: bash_1",
            )],
        );
        said(
            &mut calls,
            vec![call("t2", "Task", "Survey the call shapes")],
        );
        heard(
            &mut calls,
            vec![output(
                "t2",
                "Async agent launched successfully.\nagentId: a1agnt (internal ID - do not mention to user.)",
            )],
        );
        said(
            &mut calls,
            vec![
                call("t3", "BashOutput", "bash_1"),
                call("t4", "TaskOutput", "a1agnt"),
                call("t5", "BashOutput", "bash_9"),
            ],
        );
        let printed = heard(
            &mut calls,
            vec![
                output("t3", "Network: http://192.168.1.22:3000"),
                output("t4", "<status>in_progress</status>"),
                output("t5", "no such shell"),
            ],
        );
        assert_eq!(
            printed,
            [
                "BashOutput: bash_1 ← Bash: pnpm dev — Start the dev server",
                "TaskOutput: a1agnt ← Task: Survey the call shapes",
                "BashOutput: bash_9",
            ]
        );
        assert_eq!(
            background_id("ID: b0be39e. Output is being written to"),
            None
        );
        assert_eq!(
            background_id("export type Task = { agentId: string }"),
            None,
            "a file that names the field is no report"
        );
        assert_eq!(
            background_id(&format!("x{}\nagentId: a1", "é".repeat(150))),
            None,
            "only the head is read, cut at a character boundary"
        );
        assert_eq!(
            background_id(
                "running in background with ID: b0be39e. Output is being written to: /tmp"
            ),
            Some("b0be39e")
        );
    }

    #[test]
    fn the_call_lines_survive_the_cut_of_a_huge_output() {
        let mut calls = Calls::default();
        calls.behind(&message(
            Role::Assistant,
            vec![call("t1", "Read", "/var/log/huge.log")],
        ));
        let huge = "x".repeat(3 * MAX_CONTENT_BYTES);
        let m = message(Role::User, vec![output("t1", &huge)]);
        let (content, _, _) = render(&m, &calls.behind(&m), 0);
        assert!(content.len() <= MAX_CONTENT_BYTES);
        assert!(
            content.ends_with("\n[call] Read: /var/log/huge.log"),
            "{}",
            &content[content.len() - 60..]
        );
    }

    #[test]
    fn only_trailing_call_lines_are_taken_off() {
        assert_eq!(
            without_calls(b"[tool result] a\n[call] X: y\n[call] Z: w"),
            b"[tool result] a"
        );
        assert_eq!(
            without_calls(b"[tool result] a\n[call] X: y\nmore"),
            b"[tool result] a\n[call] X: y\nmore"
        );
        assert_eq!(without_calls(b"no calls"), b"no calls");
    }

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

    #[test]
    fn a_request_is_stored_and_searched_without_what_an_ide_added() {
        let note = "<ide_opened_file>The user opened the file /w/index.html in the IDE. This may or may not be \
                    related to the current task.</ide_opened_file>";
        let text = |t: &str| Part::Text { text: t.into() };
        let asked = message(
            Role::User,
            vec![text(note), text("why does the recorder fail on file://?")],
        );
        let (content, kind, chunks) = render(&asked, &[], 0);
        assert_eq!(
            (content.as_str(), kind),
            ("why does the recorder fail on file://?", "text")
        );
        assert_eq!(chunks, [(ChunkKind::Text, content.clone())]);
        // In one block with the request, as older extensions wrote it.
        let one = message(
            Role::User,
            vec![text(&format!("{note}\nwhy does it fail?"))],
        );
        assert_eq!(render(&one, &[], 0).0, "why does it fail?");
        // A request that is only what the IDE added keeps it: nothing else would find it.
        let only = message(Role::User, vec![text(note)]);
        assert_eq!(render(&only, &[], 0).0, note);
        // An answer that writes the tag's name is read as written.
        let prose = "Claude Code wraps the open file in <ide_opened_file> and the rest follows.";
        let told = message(Role::Assistant, vec![text(prose)]);
        assert_eq!(render(&told, &[], 0).0, prose);
    }
}
