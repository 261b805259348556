//! What of a call's words a message's stored text shows but does not search. A call is stored as its line
//! (`[tool] Edit: /w/auth.py`); what it wrote — an edit's new text, a plan, a to-do list, a message to a teammate —
//! is where "what leeway did we give the token check?" is answered, and a search answer that shows only the line
//! sends the model off to read the session. Put among the searched words those texts cost ranking (a to-do list
//! repeated at every step matches everywhere; docs/search.md, "What a call wrote, tried in the index and not
//! kept"), so they follow the message's text behind [`SHOWN_MARK`]: everything before the first mark is the
//! keyword text ranking reads ([`keyword_part`]), everything after is for the reader ([`shown`]).

use crate::transcript::{Message, Part};
use std::borrow::Cow;

/// Opens each shown-only line of a stored text (ASCII "record separator"): not a character a transcript's text
/// carries, so the keyword text ends exactly where the first one is, and a display removes it.
pub const SHOWN_MARK: char = '\u{1e}';

/// Characters of what each call wrote that its message's stored text shows: as many as the call's vector sees,
/// so an answer shows what found it.
pub const SHOWN_CALL_WORDS: usize = super::render::DEFAULT_CALL_WORDS;

/// At most this many bytes of shown words per message: a reply that made forty edits shows the first few.
const SHOWN_BYTES: usize = 4 * 1024;

/// The shown-only lines of a message: `(NAME wrote:) words…` for each of its calls that wrote something, each
/// opened by [`SHOWN_MARK`] and preceded by a newline, up to [`SHOWN_BYTES`]. Empty for a message without such a
/// call. The words are the reader's (`Part::ToolUse::input`), credentials already replaced.
pub fn call_words(m: &Message) -> String {
    let mut out = String::new();
    for p in &m.parts {
        let Part::ToolUse { name, input, .. } = p else {
            continue;
        };
        let words = input.trim();
        if words.is_empty() {
            continue;
        }
        let mut line = format!("\n{SHOWN_MARK}({name} wrote:) ");
        let head = super::render::head_chars(words, SHOWN_CALL_WORDS);
        if head.len() < words.len() {
            line.push_str(head.trim_end());
            line.push('…');
        } else {
            line.push_str(words);
        }
        if out.len() + line.len() > SHOWN_BYTES {
            break;
        }
        out.push_str(&line);
    }
    out
}

/// The keyword text of a stored text: what ranking, the lexical index and every rule read — the text before
/// the first shown-only line (all of it for a text stored before shown lines existed).
pub fn keyword_part(stored: &[u8]) -> &[u8] {
    match memchr::memchr(SHOWN_MARK as u8, stored) {
        // The mark's line starts after a newline, which belongs to neither part.
        Some(i) => {
            let end = if i > 0 && stored[i - 1] == b'\n' {
                i - 1
            } else {
                i
            };
            &stored[..end]
        }
        None => stored,
    }
}

/// [`keyword_part`] of a `str`.
pub fn keyword_text(stored: &str) -> &str {
    let end = keyword_part(stored.as_bytes()).len();
    &stored[..end]
}

/// A stored text as a reader sees it: the shown-only lines without their marks.
pub fn shown(stored: &str) -> Cow<'_, str> {
    if stored.contains(SHOWN_MARK) {
        Cow::Owned(stored.replace(SHOWN_MARK, ""))
    } else {
        Cow::Borrowed(stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Role;

    fn reply(parts: Vec<Part>) -> Message {
        crate::index::render::tests::message(Role::Assistant, parts)
    }

    fn call(name: &str, summary: &str, input: &str) -> Part {
        Part::ToolUse {
            id: "t".into(),
            name: name.into(),
            summary: summary.into(),
            input: input.into(),
            touches: Vec::new(),
        }
    }

    #[test]
    fn what_calls_wrote_is_shown_cut_and_kept_out_of_the_keyword_text() {
        let long = format!("CLOCK_SKEW_LEEWAY_SECS = 120\n{}", "é".repeat(400));
        let m = reply(vec![
            Part::Text {
                text: "I'll add a leeway.".into(),
            },
            call("Edit", "/w/auth.py", &long),
            call("Bash", "cargo test", ""),
            call("TodoWrite", "3 items", "  write the test  "),
        ]);
        let words = call_words(&m);
        let stored = format!("I'll add a leeway.\n[tool] Edit: /w/auth.py{words}");
        assert_eq!(
            keyword_text(&stored),
            "I'll add a leeway.\n[tool] Edit: /w/auth.py"
        );
        let seen = shown(&stored);
        let lines: Vec<&str> = seen.lines().collect();
        assert_eq!(lines[2], "(Edit wrote:) CLOCK_SKEW_LEEWAY_SECS = 120");
        // Cut at SHOWN_CALL_WORDS characters (among two-byte letters), and said to be cut.
        let edit = &seen[seen.find("(Edit").unwrap()..seen.find("\n(TodoWrite").unwrap()];
        let said = edit.strip_prefix("(Edit wrote:) ").unwrap();
        assert_eq!(said.chars().count(), SHOWN_CALL_WORDS + 1, "{said}");
        assert!(said.ends_with("é…"), "{said}");
        // A call that wrote nothing shows nothing; a short one shows all of it, trimmed.
        assert!(!seen.contains("Bash wrote"));
        assert!(
            seen.ends_with("\n(TodoWrite wrote:) write the test"),
            "{seen}"
        );
        assert!(!seen.contains(SHOWN_MARK));
    }

    #[test]
    fn a_text_without_shown_lines_is_all_keyword_text_and_shown_as_it_is() {
        assert_eq!(keyword_text("plain\ntext"), "plain\ntext");
        assert!(matches!(shown("plain"), Cow::Borrowed("plain")));
        assert_eq!(call_words(&reply(vec![call("Bash", "ls", "")])), "");
        // A mark at the very start (a message of calls alone whose lines were cut away) leaves no keyword text.
        assert_eq!(keyword_part(b"\x1e(Edit wrote:) x"), b"");
    }

    #[test]
    fn many_calls_show_no_more_than_the_bound() {
        let calls = (0..40)
            .map(|i| call("Edit", &format!("/w/{i}.rs"), &"x".repeat(SHOWN_CALL_WORDS)))
            .collect();
        let words = call_words(&reply(calls));
        assert!(words.len() <= SHOWN_BYTES, "{}", words.len());
        assert!(words.matches(SHOWN_MARK).count() >= 10);
    }
}
