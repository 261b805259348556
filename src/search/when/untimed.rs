//! A query without the time it names: what a sentence embedding should see of it. The words of a date pull a
//! query's vector away from what it asks about — "which city did I visit" is closer to "Just landed in Lisbon"
//! than "which city did I visit in March 2025" is — while the time itself is weighed apart, by when a message
//! was written (`prior::Rule::OutsideNamedTime`). Only the named time is left out: "when", "recently" and the
//! like say what the answer is, not when it was said.

use super::period::{lowered, named_times, words};

/// Words that introduce a named time and go with it ("in March 2023", "on 9 October", "during summer 2022").
const LEADS: &[&str] = &[
    "in",
    "on",
    "during",
    "throughout",
    "since",
    "of",
    "at",
    "around",
    "by",
    "from",
    "until",
    "before",
    "after",
    "between",
    "and",
];

/// `query` without the time it names — dates, months with their days and years, years after "in", seasons
/// with their year, "today", "yesterday", "this/last week/month" — and the words that lead to them; `None`
/// when it names no time, or nothing is left without it. The words kept are joined by single spaces (or the
/// hyphen that joined them), and a final question mark is kept.
pub fn without_named_time(query: &str) -> Option<String> {
    let words = words(query);
    let lower = lowered(&words);
    let times = named_times(&lower, chrono::Utc::now(), 0);
    if times.is_empty() {
        return None;
    }
    let mut timed = vec![false; words.len()];
    for ((first, last), _) in times {
        timed[first..=last].fill(true);
    }
    // The words that lead to a named time go with it ("with the auditors in March 2023").
    for k in (0..words.len()).rev() {
        if !timed[k] && LEADS.contains(&lower[k].as_str()) && timed.get(k + 1) == Some(&true) {
            timed[k] = true;
        }
    }
    // The words kept, joined by a space, or by the hyphen that joined them ("career-wise").
    let offset = |w: &str| w.as_ptr() as usize - query.as_ptr() as usize;
    let mut out = String::with_capacity(query.len());
    let mut last: Option<&str> = None;
    for (w, _) in words.iter().zip(&timed).filter(|(_, t)| !**t) {
        if let Some(prev) = last {
            let hyphened = query.get(offset(prev) + prev.len()..offset(w)) == Some("-");
            out.push(if hyphened { '-' } else { ' ' });
        }
        out.push_str(w);
        last = Some(w);
    }
    if out.is_empty() {
        return None;
    }
    if query.trim_end().ends_with('?') {
        out.push('?');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::without_named_time as w;

    #[test]
    fn the_named_time_and_the_words_leading_to_it_are_left_out() {
        for (q, want) in [
            (
                "What did the team review with the auditors in March 2023?",
                "What did the team review with the auditors?",
            ),
            (
                "Which flag did we add to the migration script on 9 October, 2022?",
                "Which flag did we add to the migration script?",
            ),
            (
                "what did we decide about the cache on November 9th",
                "what did we decide about the cache",
            ),
            (
                "which city did I visit during summer 2022",
                "which city did I visit",
            ),
            (
                "what broke yesterday in the build",
                "what broke in the build",
            ),
            ("what did we ship last week?", "what did we ship?"),
            ("the deploy on 2024-03-04", "the deploy"),
            ("was the re-run green in May 2024?", "was the re-run green?"),
            (
                "what happened between 11 August and 15 August 2023 with the cache",
                "what happened with the cache",
            ),
            (
                "What did Dana's script print in 2023?",
                "What did Dana's script print?",
            ),
        ] {
            assert_eq!(w(q).as_deref(), Some(want), "{q}");
        }
    }

    #[test]
    fn a_query_naming_no_time_is_left_alone() {
        for q in [
            "may I ask about the cache",
            "when did we last touch the parser",
            "port 2024 is taken",
            "what did the mar command do",
            "March 2023",
        ] {
            assert_eq!(w(q), None, "{q}");
        }
    }
}
