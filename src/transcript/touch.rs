//! What a tool call did to a file: the file it read, edited, wrote or named in a command, with the change
//! itself cut short and a fingerprint of every line it wrote. This is what `ghola files` answers from: the index
//! keeps these per file, and a line on disk is traced back to the change that wrote it by its fingerprint.
//!
//! Claude Code's file tools always name an absolute path (`file_path`, `notebook_path`); a shell command's paths
//! are whatever the command said, relative to the message's working directory.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a tool call touched a file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TouchKind {
    /// Read (`Read`, `NotebookRead`).
    #[default]
    Read,
    /// Replaced a piece of it (`Edit`, one edit of a `MultiEdit`, `NotebookEdit`).
    Edit,
    /// Wrote it whole (`Write`): "created" when the tool's result says the file was new.
    Write,
    /// Named it in a shell command (`Bash`).
    Ran,
}

impl TouchKind {
    /// The word used on screen and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            TouchKind::Read => "read",
            TouchKind::Edit => "edit",
            TouchKind::Write => "write",
            TouchKind::Ran => "ran",
        }
    }

    /// Whether the touch changed the file (so that it can have written a line).
    pub fn changes(self) -> bool {
        matches!(self, TouchKind::Edit | TouchKind::Write)
    }
}

/// One file touched by one tool call (a `MultiEdit` gives one per edit); what the index's file map keeps of it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Touch {
    pub kind: TouchKind,
    /// The path as the call named it (relative only for shell commands).
    pub path: String,
    /// Which edit of the call this is (0 unless a `MultiEdit`).
    pub index: u16,
    /// The text replaced, cut to [`SNIPPET_CHARS`] (empty for reads, writes and commands).
    pub old: String,
    /// The text written, cut to [`SNIPPET_CHARS`]; for a command, the command.
    pub new: String,
    /// Hashes of the whole replaced and written texts, so that a later change that swaps them back is known as an
    /// undo.
    pub old_hash: u64,
    pub new_hash: u64,
    /// [`line_hash`]es of the written text's telling lines (see [`telling_lines`]), deduplicated, at most
    /// [`MAX_LINES`]: what ties a line on disk to this change.
    pub lines: Vec<u32>,
    /// The same of the replaced text: a later change that removes every line this one wrote undoes it.
    pub old_lines: Vec<u32>,
}

/// How much of a change's old and new text is kept to show.
pub const SNIPPET_CHARS: usize = 240;
/// How many line fingerprints a change keeps (a `Write` of a long file keeps its first ones).
pub const MAX_LINES: usize = 4000;
/// Paths a shell command may name before the rest are ignored.
const MAX_COMMAND_PATHS: usize = 12;

/// The files a tool call touched, from its name and input as written in the transcript.
pub fn touches_of(tool: &str, input: &Value) -> Vec<Touch> {
    let field = |k: &str| input.get(k).and_then(Value::as_str);
    let path = field("file_path").or_else(|| field("notebook_path"));
    match (tool, path) {
        ("Read" | "NotebookRead", Some(p)) => vec![touch(TouchKind::Read, p, 0, "", "")],
        ("Edit", Some(p)) => vec![touch(
            TouchKind::Edit,
            p,
            0,
            field("old_string").unwrap_or(""),
            field("new_string").unwrap_or(""),
        )],
        ("MultiEdit", Some(p)) => input
            .get("edits")
            .and_then(Value::as_array)
            .map(|edits| {
                edits
                    .iter()
                    .enumerate()
                    .map(|(i, e)| {
                        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
                        touch(
                            TouchKind::Edit,
                            p,
                            i.min(u16::MAX as usize) as u16,
                            s("old_string"),
                            s("new_string"),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        ("NotebookEdit", Some(p)) => vec![touch(
            TouchKind::Edit,
            p,
            0,
            "",
            field("new_source").unwrap_or(""),
        )],
        ("Write", Some(p)) => vec![touch(
            TouchKind::Write,
            p,
            0,
            "",
            field("content").unwrap_or(""),
        )],
        ("Bash", _) => field("command")
            .map(|c| {
                paths_in_command(c)
                    .into_iter()
                    .map(|p| Touch {
                        kind: TouchKind::Ran,
                        path: p,
                        new: cut(c),
                        ..Touch::default()
                    })
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
    .into_iter()
    .filter(|t| !t.path.trim().is_empty())
    .collect()
}

fn touch(kind: TouchKind, path: &str, index: u16, old: &str, new: &str) -> Touch {
    Touch {
        kind,
        path: path.trim().to_string(),
        index,
        old: cut(old),
        new: cut(new),
        old_hash: text_hash(old),
        new_hash: text_hash(new),
        lines: fingerprints(new),
        old_lines: fingerprints(old),
    }
}

/// The start of a text, cut at [`SNIPPET_CHARS`] characters (with `…` when cut).
fn cut(s: &str) -> String {
    match s.char_indices().nth(SNIPPET_CHARS) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// A whole text's hash (FNV-1a, stable across builds and machines: it is stored).
pub fn text_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A line's fingerprint: the hash of the line with its surrounding whitespace trimmed (indentation and line
/// endings differ between a tool's text and the file on disk).
pub fn line_hash(line: &str) -> u32 {
    crc32fast::hash(line.trim().as_bytes())
}

/// The lines of a text that say something: at least four characters once trimmed and not only punctuation
/// (`}`, `});`, `*/` say nothing of where they came from).
pub fn telling_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter(|(_, l)| {
        let t = l.trim();
        t.chars().count() >= 4 && t.chars().any(char::is_alphanumeric)
    })
}

/// The deduplicated fingerprints of a text's telling lines, at most [`MAX_LINES`].
pub fn fingerprints(text: &str) -> Vec<u32> {
    let mut seen = std::collections::HashSet::new();
    telling_lines(text)
        .map(|(_, l)| line_hash(l))
        .filter(|h| seen.insert(*h))
        .take(MAX_LINES)
        .collect()
}

/// The words of a shell command that look like files: a path with a `/` or a name with an extension, quotes
/// removed, not a flag, a URL, an assignment or a number.
pub fn paths_in_command(command: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in shell_words(command) {
        let w = w.trim_matches(|c| matches!(c, ',' | ':'));
        if w.len() < 3
            || w.len() > 300
            || w.starts_with('-')
            || w.starts_with('$')
            || w.starts_with('@')
            || w.contains("://")
            || w.contains(['=', '*', '{', '$', '\n'])
        {
            continue;
        }
        let name = w.rsplit(['/', '\\']).next().unwrap_or(w);
        let has_ext = name.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=8).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        });
        let is_path = (w.contains('/') || w.contains('\\'))
            && !name.is_empty()
            && w.chars().any(char::is_alphabetic);
        if (has_ext || is_path) && !out.iter().any(|o| o == w) {
            out.push(w.to_string());
            if out.len() == MAX_COMMAND_PATHS {
                break;
            }
        }
    }
    out
}

/// A command's words as a POSIX shell splits them, roughly: whitespace and `; | & ( ) < >` separate words
/// outside quotes, quotes are removed, a backslash escapes the next character outside single quotes.
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"') | None, '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => quote = Some(c),
            (None, c)
                if c.is_whitespace()
                    || matches!(c, ';' | '|' | '&' | '(' | ')' | '<' | '>' | '`') =>
            {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            (None, c) => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_tools_name_their_file_and_keep_the_change() {
        let t = touches_of(
            "Edit",
            &json!({"file_path": "/p/src/a.rs", "old_string": "let x = 1;", "new_string": "let x = 2;\n}"}),
        );
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].kind, TouchKind::Edit);
        assert_eq!(t[0].path, "/p/src/a.rs");
        assert_eq!(t[0].old, "let x = 1;");
        assert_eq!(
            t[0].lines,
            vec![line_hash("let x = 2;")],
            "a lone brace says nothing"
        );
        let m = touches_of(
            "MultiEdit",
            &json!({"file_path": "/p/b.ts", "edits": [{"old_string": "a", "new_string": "bbbb"},
                {"old_string": "c", "new_string": "dddd"}]}),
        );
        assert_eq!(m.iter().map(|t| t.index).collect::<Vec<_>>(), vec![0, 1]);
        let w = touches_of(
            "Write",
            &json!({"file_path": "/p/c.md", "content": "x".repeat(1000)}),
        );
        assert_eq!(w[0].kind, TouchKind::Write);
        assert!(w[0].new.chars().count() <= SNIPPET_CHARS + 1);
        assert_eq!(
            touches_of("Read", &json!({"file_path": "/p/d.rs"}))[0].kind,
            TouchKind::Read
        );
        assert!(touches_of("Grep", &json!({"pattern": "x", "path": "/p"})).is_empty());
        assert!(touches_of("Edit", &json!({"old_string": "x"})).is_empty());
    }

    #[test]
    fn commands_name_the_files_they_run_on() {
        assert_eq!(
            paths_in_command("cat 'src/my file.rs' && python3 tools/gen.py --out=x.json | head -5"),
            vec!["src/my file.rs", "tools/gen.py"]
        );
        assert!(paths_in_command("cargo test --release -- --nocapture 1.5").is_empty());
        assert_eq!(
            paths_in_command("git diff HEAD~1 -- src/lib.rs https://x.io/a.rs"),
            vec!["src/lib.rs"]
        );
    }
}
