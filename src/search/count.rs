//! Whether a query asks how many (or how much, which version, which port) and whether a message says a number:
//! "how many tests passed after the refactor?" is answered by "49 passed" or "All 49 tests pass", not by "Let me
//! run the suite again" — whose words match the question as well (see `prior::Rule::UncountedForHowMany`).
//!
//! The same reading of the answer's type as a question about when and a message that says when
//! (`super::when`), for quantities: on the coding questions that ask one, every gold message says a number,
//! against three in four of the other hits of their top twenty (docs/search.md, "A question about how many").

/// Whether a query asks for a quantity that one message can state: "how many files changed", "how much code
/// was there", "how often does the sweep run", "how big is the package", "what version got installed", "which
/// port does it fall back to", "what percentage …", "what commit hash did we push" (a hash has digits). Not
/// "how many times …" — a count of events, which each event's own message does not state — nor "how many weeks
/// passed …", which asks when ([`super::when::asks_when`]).
pub fn asks_how_many(query: &str) -> bool {
    let q = query.to_lowercase();
    let words: Vec<&str> = q
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .enumerate()
        .any(|(k, w)| match (w[0], w[1]) {
            ("how", "many") => words
                .get(k + 2)
                .is_some_and(|n| !matches!(*n, "times" | "time") && !super::when::asks_when(&q)),
            ("how", "much" | "often" | "big" | "large" | "small" | "fast" | "slow") => true,
            (
                "what" | "which",
                "version" | "versions" | "port" | "number" | "percentage" | "percent" | "size"
                | "count" | "commit" | "hash" | "sha",
            ) => true,
            _ => false,
        })
}

/// Number words that state a quantity, as a message writes it ("two files changed", "a dozen warnings", "no
/// tests failed" is left out: "no" is mostly something else).
const NUMBER_WORDS: &[&str] = &[
    "zero",
    "none",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
    "hundred",
    "hundreds",
    "thousand",
    "thousands",
    "million",
    "millions",
    "dozen",
    "dozens",
    "once",
    "twice",
    "half",
    "both",
];

/// Whether a message's text says a number: a word with a digit in it (`49`, `v2.1.38`, `3001`, `12%`) or a
/// number word ("two", "dozen", "twice", "none") in its first 4 KB. Loose on purpose: a message that says none is
/// only moved down for a question that asks how many, and a log or a listing nearly always has one.
pub fn says_a_number(text: &[u8]) -> bool {
    let head = &text[..text.len().min(4 * 1024)];
    if head.iter().any(u8::is_ascii_digit) {
        return true;
    }
    let lower = head.to_ascii_lowercase();
    lower
        .split(|b| !b.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .any(|w| std::str::from_utf8(w).is_ok_and(|w| NUMBER_WORDS.contains(&w)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_that_ask_for_a_quantity_are_told_from_others() {
        for q in [
            "how many tests passed after the active session registry task?",
            "How many files did ruff format change?",
            "how much Elixir code was in lib when the project was first explored?",
            "how often does the review session registry sweep out dead sessions?",
            "how big is the claude-code-log package in files and lines?",
            "what version of vite ended up installed?",
            "which port does the hook fall back to when there's no .port file?",
            "what percentage of the suite is covered",
            "what commit hash did we push?",
        ] {
            assert!(asks_how_many(q), "{q}");
        }
        for q in [
            "how many times did the deploy fail?",
            "How many weeks passed between the two releases?",
            "how did we stop the linter from breaking the build?",
            "what did we decide about retries",
            "which file holds the port number",
            "many thanks for the version bump",
            "how to make it faster",
        ] {
            assert!(!asks_how_many(q), "{q}");
        }
    }

    #[test]
    fn messages_that_say_a_number_are_told_from_others() {
        for t in [
            "All 49 tests pass.",
            "Installed lucide-react@0.468.0",
            "Network: http://192.168.1.22:3000",
            "Two files were reformatted, the rest left unchanged.",
            "It runs twice a day.",
            "[tool result] a dozen warnings",
        ] {
            assert!(says_a_number(t.as_bytes()), "{t}");
        }
        for t in [
            "Let me run the test suite again.",
            "I'll check which version got installed:",
            "Everything is formatted now.",
            "someone left the door open",
        ] {
            assert!(!says_a_number(t.as_bytes()), "{t}");
        }
    }
}
