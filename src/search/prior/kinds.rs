//! What kind of message a transcript entry is, as the ask rules read it: a question, an announcement of what
//! comes next, the echo of an edit, a bare tool call, a tool's output, the user's own words and the user's
//! request that the assistant answers with a tool call.

use crate::index::Snapshot;
use crate::index::render::{
    THINKING_END, THINKING_MARK, TOOL_ERROR_MARK, TOOL_MARK, TOOL_RESULT_MARK,
};

/// Openings of a message that announces what it is about to do ("I'll run the suite", "Let me read the
/// README"): in Claude Code's history the words of such a message echo the request, while what was found comes
/// after it (a tool's output, a report, the next explanation).
const ANNOUNCEMENTS: &[&str] = &[
    "i'll ",
    "i will ",
    "let me ",
    "let's ",
    "i'm going to ",
    "i am going to ",
];

/// How many messages after a user's message are looked at for a tool call (see [`is_request`]): the
/// assistant's reply opens with at most a thinking block and a sentence before its first call.
const REQUEST_REPLY_MESSAGES: usize = 3;

/// Whether a message is tool calls and nothing else (`[tool] Bash: pnpm add lucide-react — Install …`): it
/// asks the tool, whose output answers; its words are the query's (the package, the file, the test) without
/// what came of them. A call after words of the assistant's own stays unweighted: those words may be the
/// answer ("All 49 tests pass. Let me close the bead.").
pub fn is_bare_tool_call(text: &[u8]) -> bool {
    text.starts_with(TOOL_MARK.as_bytes())
}

/// Whether a message's text is a question: it ends with `?` (trailing whitespace aside).
pub fn is_question(text: &[u8]) -> bool {
    text.iter()
        .rev()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'?')
}

/// Whether a message opens by announcing an action (see `ANNOUNCEMENTS`): what a reply says, after its
/// thinking (`said_words`), or else its thinking after the `[thinking] ` marker; one interjection ("Now,",
/// "OK.", "Good!", "Perfect!") is skipped.
pub fn announces_action(text: &[u8]) -> bool {
    let text = said_words(text);
    let head = String::from_utf8_lossy(&text[..text.len().min(160)]).to_lowercase();
    let mut t = head
        .strip_prefix(THINKING_MARK)
        .unwrap_or(&head)
        .trim_start();
    if let Some((word, rest)) = t.split_once(' ')
        && word.len() > 1
        && word.ends_with([',', '!', '.'])
        && word[..word.len() - 1].chars().all(|c| c.is_alphabetic())
    {
        t = rest.trim_start();
    }
    let t = t.strip_prefix("now ").unwrap_or(t);
    ANNOUNCEMENTS.iter().any(|a| t.starts_with(a))
}

/// Where the words a reply says begin: a reply written with extended thinking opens with it (`[thinking] The user
/// wants …`, ended by [`THINKING_END`]), and what the model thought is not what it said — the thinking of an
/// answer often plans the next step ("Let me …") while its words give the answer. The text itself when it does not
/// open with thinking, when its thinking has no end (stored before the end was marked) or when no words follow it
/// (a reply of only thinking and calls).
fn said_words(text: &[u8]) -> &[u8] {
    if !text.starts_with(THINKING_MARK.as_bytes()) {
        return text;
    }
    let Some(at) = memchr::memmem::find(text, THINKING_END.as_bytes()) else {
        return text;
    };
    let rest = text[at + THINKING_END.len()..].trim_ascii_start();
    if rest.is_empty() || rest.starts_with(THINKING_MARK.as_bytes()) || opens_with_tool_part(rest) {
        text
    } else {
        rest
    }
}

/// Whether a message is the echo of a file edit ("The file … has been updated. Here's the result of running
/// `cat -n` …", "File created successfully at: …"): the tool repeating what the edit call said, whose meaning is
/// in the call and the explanation around it.
pub fn echoes_an_edit(text: &[u8]) -> bool {
    let head = &text[..text.len().min(400)];
    let Some(rest) = head.strip_prefix(TOOL_RESULT_MARK.as_bytes()) else {
        return false;
    };
    rest.starts_with(b"File created successfully at: ")
        || (rest.starts_with(b"The file ")
            && memchr::memmem::find(rest, b" has been updated").is_some())
}

/// Whether a message is a tool's output (`[tool result] …`, `[tool error] …`).
pub fn is_tool_output(text: &[u8]) -> bool {
    // The marks without their space: an output with no text may be stored trimmed.
    [TOOL_RESULT_MARK, TOOL_ERROR_MARK]
        .iter()
        .any(|m| text.starts_with(m.trim_end().as_bytes()))
}

/// Whether a text opens with a tool's part — a call, an output or an error — rather than with words.
fn opens_with_tool_part(text: &[u8]) -> bool {
    is_bare_tool_call(text) || is_tool_output(text)
}

/// Whether live message `i` is the user's own words: a user's message that is not a tool's output nor a
/// notification Claude Code wrote in the user's name (`<task-notification>`, `<command-name>`).
pub(super) fn is_users_own_words(snap: &Snapshot, i: usize, text: &[u8]) -> bool {
    snap.role(i) == "user"
        && !opens_with_tool_part(text)
        && !text.trim_ascii_start().starts_with(b"<")
}

/// Whether live message `i` is the user's request to the agent: a user's own words (not a tool's output, not a
/// notification Claude Code wrote in the user's name, `<task-notification>` and the like) that the assistant
/// answers with a tool call within [`REQUEST_REPLY_MESSAGES`] messages. Between people (LoCoMo's dialogues, a
/// chat without tools) the user's messages are the evidence itself, and stay unweighted.
pub(super) fn is_request(snap: &Snapshot, i: usize, text: &[u8]) -> bool {
    if !is_users_own_words(snap, i, text) {
        return false;
    }
    let m = &snap.messages[i];
    (i + 1..snap.messages.len())
        .take(REQUEST_REPLY_MESSAGES)
        .take_while(|&n| crate::search::same_window(m, &snap.messages[n]))
        .any(|n| {
            let t = snap.keyword_bytes(n);
            // A line that opens with the mark, found by memmem (a tool's output may run to 50 KB).
            memchr::memmem::find_iter(t, TOOL_MARK.as_bytes())
                .any(|at| at == 0 || t[at - 1] == b'\n')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcements_are_recognised_at_the_opening_only() {
        for t in [
            "I'll have an agent list the files first.\n[tool] Agent: list files",
            "Let me run the full suite:",
            "[thinking] Good! Now let me update the documentation (README and CLAUDE.md)",
            "Now, let me read the README.",
            "OK. I'm going to check the migration.",
            "[thinking] The user asks why the port differs.\n[/thinking]\nLet me read the config.\n[tool] Read: x",
            "[thinking] Let me think.\n[/thinking]\n[tool] Read: config.toml",
        ] {
            assert!(announces_action(t.as_bytes()), "{t}");
        }
        for t in [
            "Fixed. `check()` compared `expires_at` with the server clock. Let me know if it works.",
            "All 72 tests pass. Let me run the full suite to make sure nothing else broke:",
            "Perfect! Now I have all the information needed. Let me create a comprehensive report.",
            "Letters from the users are in the inbox.",
            "[thinking] Let me check the port.\n[/thinking]\nIt listens on 8417, set in `config.toml`.",
            "",
        ] {
            assert!(!announces_action(t.as_bytes()), "{t}");
        }
    }

    #[test]
    fn edit_echoes_are_recognised() {
        assert!(echoes_an_edit(
            b"[tool result] The file /src/shapes.rb has been updated. Here's the result of running `cat -n`"
        ));
        assert!(echoes_an_edit(
            b"[tool result] File created successfully at: /tmp/notes.md"
        ));
        assert!(!echoes_an_edit(
            b"[tool result] 3 suites, 87 examples, 0 failures"
        ));
        assert!(!echoes_an_edit(b"The file /src/a.py has been updated."));
    }

    #[test]
    fn bare_calls_and_tool_outputs_are_recognised() {
        assert!(is_bare_tool_call(
            b"[tool] Bash: npm install left-pad \xe2\x80\x94 Add the helper"
        ));
        assert!(!is_bare_tool_call(
            b"All clear - 12 specs pass. Let me commit.\n[tool] Bash: git commit"
        ));
        assert!(!is_bare_tool_call(b"[tool result] ok"));
        assert!(is_tool_output(b"[tool result] 3 suites, 87 examples"));
        assert!(is_tool_output(b"[tool error] Exit code 1"));
        assert!(!is_tool_output(b"[tool] Bash: rspec"));
        assert!(is_tool_output(b"[tool result]"));
        for part in [
            &b"[tool] Read: x"[..],
            b"[tool result] ok",
            b"[tool error] boom",
        ] {
            assert!(opens_with_tool_part(part));
        }
        assert!(!opens_with_tool_part(b"[toolbox] is the folder I meant"));
        assert!(!is_tool_output(b"The tool result was empty"));
    }
}
