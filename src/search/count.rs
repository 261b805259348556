//! Whether a query asks how many (or how much, which version, which port) and whether a message says a number:
//! "how many tests passed after the refactor?" is answered by "49 passed" or "All 49 tests pass", not by "Let me
//! run the suite again" — whose words match the question as well (see `prior::Rule::UncountedForHowMany`).
//!
//! The same reading of the answer's type as a question about when and a message that says when
//! (`super::when`), for quantities: on the coding questions that ask one, every gold message says a number,
//! against three in four of the other hits of their top twenty (docs/search.md, "A question about how many").

/// Whether a query asks for a quantity that one message can state: "how many files changed", "how much code
/// was there", "how often does the sweep run", "how big is the package", "what version got installed", "which
/// port does it fall back to", "what percentage …", "which commit added it" (a commit's id,
/// [`asks_for_a_commit`]). Not "how many times …" — a count of events, which each event's own message does not
/// state — nor "how many weeks passed …", which asks when ([`super::when::asks_when`]).
pub fn asks_how_many(query: &str) -> bool {
    let q = query.to_lowercase();
    let words = words_of(&q);
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
        || asks_for_a_commit_in(&words)
}

/// The words of a lowercased query, split at every character that is not a letter or a digit.
fn words_of(lowercased: &str) -> Vec<&str> {
    lowercased
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether a query asks which commit: "which commit added tar support?", "what commit hash did we push?", "the
/// commit id of the release". Its answer names the commit by its id ([`names_a_commit`]), which a message that
/// merely says a number ("All 14 files committed and pushed") does not. Not "what commit message did we use".
pub fn asks_for_a_commit(query: &str) -> bool {
    asks_for_a_commit_in(&words_of(&query.to_lowercase()))
}

/// [`asks_for_a_commit`] over the query's lowercased words ([`words_of`]).
fn asks_for_a_commit_in(words: &[&str]) -> bool {
    // "which commit …", "what was the commit that …" — not "… commit message".
    let not_its_message = |k: usize| {
        !words
            .get(k + 1)
            .is_some_and(|n| matches!(*n, "message" | "messages"))
    };
    let asked = |k: usize| k > 0 && matches!(words[k - 1], "what" | "which");
    let hash = words.iter().any(|w| matches!(*w, "hash" | "sha"));
    words.iter().enumerate().any(|(k, w)| match *w {
        "commit" => {
            ((asked(k)
                || (k >= 3
                    && words[k - 1] == "the"
                    && matches!(words[k - 2], "was" | "is" | "s")
                    && asked(k - 2)))
                && not_its_message(k))
                || hash
                || words.get(k + 1).is_some_and(|n| matches!(*n, "id" | "ids"))
        }
        // "which SHA is main at", "what hash did we push" — not "which hash function …".
        "sha" => asked(k),
        "hash" => asked(k) && words.iter().any(|w| GIT_WORDS.contains(w)),
        _ => false,
    })
}

/// Words that make "what hash" a commit's: a hash of something else ("which hash function") is not.
const GIT_WORDS: &[&str] = &[
    "push", "pushed", "git", "merge", "merged", "release", "tag", "tagged", "branch", "main",
    "master",
];

/// Whether a message's text names a commit: a word of 7 to 40 hexadecimal digits with both a digit and a letter
/// in it (`5c1b231`, `a23908c`), as git prints a commit, in its first 4 KB. A word of digits alone is a number
/// far more often than a commit, and one of letters alone a word ("defaced").
pub fn names_a_commit(text: &[u8]) -> bool {
    let head = &text[..text.len().min(4 * 1024)];
    head.split(|b| !b.is_ascii_alphanumeric()).any(|w| {
        (7..=40).contains(&w.len())
            && w.iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            && w.iter().any(u8::is_ascii_digit)
            && w.iter().any(u8::is_ascii_alphabetic)
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
    fn questions_that_ask_which_commit_and_messages_that_name_one() {
        for q in [
            "which commit added tar archive support to deep-manifest?",
            "what commit hash did we push?",
            "the commit id of the 1.0.0 release",
            "What SHA is main at?",
            "what was the commit that added the tar support?",
            "what's the hash of the commit that fixed the cache?",
        ] {
            assert!(asks_for_a_commit(q) && asks_how_many(q), "{q}");
        }
        for q in [
            "what commit message did we use for the fix?",
            "why was the commit for the tail adapter rejected?",
            "how many files went into the commit we pushed?",
            "what did we commit to doing next?",
            "what id did the code quality epic get?",
            "what was the commit message of the fix?",
            "which hash function does the cache use?",
        ] {
            assert!(!asks_for_a_commit(q), "{q}");
        }
        for t in [
            "To github.com:me/app.git    6eea407..5c1b231  main -> main",
            "[spotter-4te a23908c] feat: enable opentelemetry_ash",
            "1. **`70f2781`** - Tar archive support",
        ] {
            assert!(names_a_commit(t.as_bytes()), "{t}");
        }
        for t in [
            "Successfully pushed to GitHub! All 14 files have been committed.",
            "The timestamp 1730000000 and the word defaced",
            "Release 1.0.0 is out",
        ] {
            assert!(!names_a_commit(t.as_bytes()), "{t}");
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
