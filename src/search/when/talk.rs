//! Whether a query asks when something happened, and whether a message says when: the turn that answers
//! "When did Ana repaint the fence?" is the one that says "last week" or "in March" (see
//! `prior::Rule::UntimedForWhen`).

use super::words::{DURATION_UNITS, MONTHS, WEEKDAY_ABBREVIATIONS, WEEKDAYS, is_count, year};

/// Whether a query asks when something happened: "When did Ana repaint the fence?", "when was the cache
/// added", "what year did …", "which week …", "how long (ago) …", "how many weeks passed …", and a question
/// that opens with "when" and asks nothing else ("When Jon lost his job?") — not a clause that opens another
/// question ("when the tests disagreed, which one …").
pub fn asks_when(query: &str) -> bool {
    let q = query.to_lowercase();
    let words: Vec<&str> = q
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    const AUX: &[&str] = &[
        "did", "was", "were", "is", "are", "do", "does", "will", "would", "has", "have", "had",
        "can", "could", "should",
    ];
    // Words that make a query ask something other than when.
    const OTHER_QUESTIONS: &[&str] = &[
        "what", "which", "who", "whom", "whose", "where", "why", "how",
    ];
    let opens_with_when =
        words.first() == Some(&"when") && !words[1..].iter().any(|w| OTHER_QUESTIONS.contains(w));
    opens_with_when
        || words.windows(2).any(|w| match (w[0], w[1]) {
            ("when", aux) => AUX.contains(&aux),
            ("what" | "which", "year" | "month" | "week" | "weekend" | "date" | "day") => true,
            ("long", "ago") => true,
            // "How long has Ana been painting?": answered by a duration ("for seven years") or a time ("since 2016").
            ("how", "long") => true,
            _ => false,
        })
        // "How many weeks passed between …": answered the same ways.
        || words
            .windows(3)
            .any(|w| w[0] == "how" && w[1] == "many" && DURATION_UNITS.contains(&w[2]))
}

/// Whether a message's text says when something happened, in the words people use: "yesterday", "two weeks
/// ago", "last summer", "next month", "on Friday", "last Fri", "two weekends later", "in March", "2022" (not
/// "may", which is mostly a verb). In LoCoMo's dialogues 83% of the turns that answer a when-question say so,
/// against 13% of all turns (docs/search.md).
pub fn says_when(text: &[u8]) -> bool {
    // Asked of every candidate of a when-question (up to 2,500): the head only, lowered as ASCII (the words
    // looked for are English), split at every other byte — no decoding, one copy.
    let lower = text[..text.len().min(2 * 1024)].to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|b| !b.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .filter_map(|w| std::str::from_utf8(w).ok())
        .collect();
    words.iter().enumerate().any(|(k, w)| {
        let next = words.get(k + 1).copied().unwrap_or("");
        match *w {
            "yesterday" | "today" | "tonight" | "tomorrow" | "ago" | "recently" | "lately" => true,
            "last" | "next" | "this" | "past" | "coming" => {
                matches!(
                    next,
                    "week"
                        | "weekend"
                        | "month"
                        | "year"
                        | "night"
                        | "morning"
                        | "evening"
                        | "summer"
                        | "winter"
                        | "spring"
                        | "fall"
                        | "autumn"
                ) || WEEKDAYS.contains(&next)
                    || WEEKDAY_ABBREVIATIONS.contains(&next)
            }
            // "on Fri", not "the sun" or "she sat": a short day name only where a day is named.
            "on" => WEEKDAY_ABBREVIATIONS.contains(&next),
            "other" => next == "day" && k > 0 && words[k - 1] == "the",
            w if WEEKDAYS.contains(&w) => true,
            "may" => false,
            w if MONTHS.contains(&w) => true,
            w if is_count(w) && DURATION_UNITS.contains(&next) => true,
            w => year(w).is_some(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_about_when_are_told_from_clauses() {
        for q in [
            "When did Ana repaint the fence?",
            "when was the retry limit raised",
            "What year did they move to Lisbon?",
            "how long ago did we drop Python 2",
            "How long has Ana been painting?",
            "When Ana lost her job at the bakery?",
            "which week did they ship the parser",
            "How many months passed between the two releases?",
        ] {
            assert!(asks_when(q), "{q}");
        }
        for q in [
            "when the build broke, which test failed first?",
            "when the build broke which test failed first",
            "what did we decide about retries",
            "whenever the cache misses",
            "how many tests failed",
        ] {
            assert!(!asks_when(q), "{q}");
        }
    }

    #[test]
    fn a_message_says_when_in_the_words_people_use() {
        for t in [
            "We went hiking yesterday!",
            "I finished it two weeks ago.",
            "last summer we drove to the coast",
            "see you next Friday",
            "It opened in March 2023.",
            "the other day I met her",
            "back in 2019",
            "I've had them for 3 years now",
            "Seven years now, and I love it",
            "it took a few weeks",
            "Last Fri I took the kids to a pottery class",
            "we meet on Tues",
            "a party two weekends later",
        ] {
            assert!(says_when(t.as_bytes()), "{t}");
        }
        for t in [
            "That sounds lovely, enjoy it!",
            "You may want to restart the server.",
            "this function returns 404 after 3 retries",
            "the day after the release",
            "I walk the dog twice a day",
            "one of the days I will",
            "we sat in the sun and talked",
            "the wed dress is ready",
        ] {
            assert!(!says_when(t.as_bytes()), "{t}");
        }
    }
}
