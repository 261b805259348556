//! Whether a query asks why something went wrong and whether a message gives a reason: "why was the commit
//! rejected?" is answered by "Pre-commit validation failed: code is not formatted" or "it was rejected because
//! …", not by "Now commit and push these changes:" — whose words match the question as well (see
//! `prior::Rule::ReasonlessForFailure`).
//!
//! The same reading of the answer's type as for a question about when (`super::when`) or how many
//! (`super::count`), for what went wrong: on the coding questions that ask why something failed, 26 of 28 gold
//! messages give a reason in these words, against 26% of the other hits of their top twenty (docs/search.md, "A
//! question about why something went wrong"). A "why" about a choice ("why did we force-add the CSS?") is not
//! read: its answer is as often written without a word that says so.

/// Whether a query asks why something went wrong: a "why" ("how come", "what caused") with a word of failure —
/// "not", a negated verb, "fail…", "crash…", "broke…", "error…", "refused", "rejected", "denied", "blocked",
/// "wrong", "missing": "why did the build fail?", "why couldn't git add the migration", "how come the cache
/// wasn't cleared", "what caused the crash". Not "why did we switch to hatchling?", a choice.
pub fn asks_why_it_failed(query: &str) -> bool {
    // "couldn’t" as "couldn't".
    let q = query.to_lowercase().replace('\u{2019}', "'");
    let words: Vec<&str> = q
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    let why = words.contains(&"why")
        || words
            .windows(2)
            .any(|w| matches!((w[0], w[1]), ("how", "come") | ("what", "caused")));
    let failure = |w: &str| {
        w == "not"
            || w.ends_with("n't")
            || w.starts_with("fail")
            || w.starts_with("crash")
            || w.starts_with("broke")
            || w.starts_with("error")
            || matches!(
                w,
                "refused" | "rejected" | "denied" | "blocked" | "wrong" | "missing"
            )
    };
    why && words.iter().any(|w| failure(w))
}

/// Words that give a cause, or tell what went wrong — the two ways an answer to "why" is written: "because",
/// "due to", "the reason", "which means"; "failed", "error", "refused", a negated verb ("doesn't", "couldn't",
/// "wasn't"). ("not found" and the like are read by [`gives_a_reason`] itself: "not" before a word.)
const REASON_WORDS: &[&str] = &[
    "because",
    "since",
    "due",
    "caused",
    "causes",
    "cause",
    "causing",
    "reason",
    "reasons",
    "means",
    "therefore",
    "hence",
    "otherwise",
    "issue",
    "problem",
    "error",
    "errors",
    "fail",
    "fails",
    "failed",
    "failing",
    "failure",
    "cannot",
    "can't",
    "couldn't",
    "doesn't",
    "didn't",
    "wasn't",
    "isn't",
    "won't",
    "aren't",
    "weren't",
    "missing",
    "blocked",
    "rejected",
    "refused",
    "denied",
    "instead",
    "without",
    "fatal",
    "broken",
    "broke",
];

/// Whether a message's text gives a reason or says what went wrong in its first 4 KB: a word such as
/// "because", "due", "failed", "error", "refused", a negated verb (the list above), or "not" before a word ("is
/// not set", "was not found").
pub fn gives_a_reason(text: &[u8]) -> bool {
    let head = &text[..text.len().min(4 * 1024)];
    let lower = head.to_ascii_lowercase();
    let mut words = lower
        .split(|b| !(b.is_ascii_alphabetic() || *b == b'\''))
        .filter(|w| !w.is_empty())
        .peekable();
    while let Some(w) = words.next() {
        let w = std::str::from_utf8(w).unwrap_or("").trim_matches('\'');
        // A curly apostrophe splits a negated verb in two: "couldn’t" reads "couldn", "t".
        let negated = words.peek().is_some_and(|n| *n == b"t")
            && matches!(
                w,
                "couldn" | "doesn" | "didn" | "wasn" | "isn" | "won" | "aren" | "weren" | "can"
            );
        if negated || REASON_WORDS.contains(&w) || (w == "not" && words.peek().is_some()) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_that_ask_why_are_told_from_others() {
        for q in [
            "why was the commit for the tail adapter rejected?",
            "Why couldn't git add the upsert migration from _build?",
            "how come the cache wasn't cleared after the bump",
            "what caused the crash on the first run?",
            "why did the deploy fail twice?",
            "why is the stylesheet missing from the page",
            "why couldn\u{2019}t the explorer print the tree?",
        ] {
            assert!(asks_why_it_failed(q), "{q}");
        }
        for q in [
            "why did we switch the build backend to hatchling?",
            "how many tests failed?",
            "what did we decide about retries",
            "whyever not", // one word, not "why"
            "how did we come to use hatchling",
        ] {
            assert!(!asks_why_it_failed(q), "{q}");
        }
    }

    #[test]
    fn messages_that_give_a_reason_are_told_from_others() {
        for t in [
            "It was rejected because the code is not formatted.",
            "[tool error] Exit code 128\nfatal: pathspec '_build/x' did not match any files",
            "Pre-commit validation failed: run mix format",
            "The alias looks unused due to the rescue clause.",
            "The environment couldn\u{2019}t persist between bash calls.",
            "The mock doesn't update the renderable.",
        ] {
            assert!(gives_a_reason(t.as_bytes()), "{t}");
        }
        for t in [
            "Now commit and push these changes:",
            "Let me look at the migration.",
            "[tool result] [main acf21f1] Fix relative links\n 3 files changed",
            "Done. The stylesheet is linked now.",
        ] {
            assert!(!gives_a_reason(t.as_bytes()), "{t}");
        }
    }
}
