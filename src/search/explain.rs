//! Whether a query asks how something works or why, and whether a message is a file as the Read tool listed
//! it: "how does the extractor pick the pull request?" is answered by the assistant's explanation ("it runs
//! `gh pr view` for the current branch …"), not by the listing of `main()` it was read from — whose names and
//! words match the question as well (see `prior::Rule::ListingForHowOrWhy`).
//!
//! The same reading of the answer's type as for when (`super::when`), how many (`super::count`) and why
//! something failed (`super::reason`), for an explanation: on the coding questions that ask how or why, none of
//! the 69 gold messages of their top twenty is a file listing, against 12% of the other hits; a question that
//! asks *which* value a file holds ("what minimum torch version is in requirements?") is answered by one, and
//! is not read (docs/search.md, "A question about how or why").

/// The words after "how" that make it ask how something works or came about ("how does …", "how did we …",
/// "how would we …"), not how many, how long or how often.
const AUXILIARIES: &[&str] = &[
    "does", "do", "did", "is", "are", "was", "were", "would", "should", "can", "could", "will",
    "has", "have", "had",
];

/// Whether a query asks how something works or why: it opens with "why", "how come", or "how" and an auxiliary
/// ("how does plan mode keep the model from editing files?", "how did we get the tests to pass?"). Not "how
/// many", "how long", "how often" (a number), nor a "why" inside a sentence ("and the reason why …").
pub fn asks_how_or_why(query: &str) -> bool {
    let q = query.to_lowercase();
    let mut words = q
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '\u{2019}'))
        .filter(|w| !w.is_empty());
    match (words.next(), words.next()) {
        (Some("why"), _) => true,
        (Some("how"), Some(w)) => w == "come" || AUXILIARIES.contains(&w),
        _ => false,
    }
}

/// Whether a message is a file as the Read tool returns it: a tool's output whose first lines are numbered in
/// sequence (`     1→text`; see [`crate::index::render::is_numbered_listing`]), read in its first 4 KB.
pub fn is_file_listing(text: &[u8]) -> bool {
    let Some(rest) = text.strip_prefix(crate::index::render::TOOL_RESULT_MARK.as_bytes()) else {
        return false;
    };
    let head = String::from_utf8_lossy(&rest[..rest.len().min(4 * 1024)]);
    crate::index::render::is_numbered_listing(&head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_that_ask_how_or_why_are_told_from_others() {
        for q in [
            "how does plan mode keep the model from editing files?",
            "How did we get the flaky test to pass",
            "why were all the review comments grouped under one unknown file?",
            "how come the cache was cold",
            "how would we add tar.gz support?",
        ] {
            assert!(asks_how_or_why(q), "{q}");
        }
        for q in [
            "how many words was the write-up?",
            "how long does a minted token stay valid?",
            "how often does the registry sweep?",
            "what minimum torch version is in requirements?",
            "the reason why the build broke",
            "how",
            "",
        ] {
            assert!(!asks_how_or_why(q), "{q}");
        }
    }

    #[test]
    fn file_listings_are_told_from_other_messages() {
        for t in [
            "[tool result]      1→#!/usr/bin/env python3\n     2→\"\"\"Extract feedback\"\"\"\n     3→import json",
            "[tool result] 977→def main():\n   978→    \"\"\"Main entry point.\"\"\"",
            "[tool result] 1\t# webapp\n2\t\n3\tA small web app.",
        ] {
            assert!(is_file_listing(t.as_bytes()), "{t}");
        }
        for t in [
            "[tool result] 454 total",
            "[tool result] 1119 work/research-beads.md",
            "     1→def main():\n     2→    pass",
            "[tool result] 1→a\n5→b",
            "The file has 3 lines.",
        ] {
            assert!(!is_file_listing(t.as_bytes()), "{t}");
        }
    }
}
