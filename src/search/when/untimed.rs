//! A query without the time it names: what a sentence embedding should see of it. The words of a date pull a
//! query's vector away from what it asks about — "which city did I visit" is closer to "Just landed in Lisbon"
//! than "which city did I visit in March 2025" is — while the time itself is weighed apart, by when a message
//! was written (`prior::Rule::OutsideNamedTime`). Only the named time is left out: "when", "recently" and the
//! like say what the answer is, not when it was said.

use super::words::{MONTHS, day, month, season, year};

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
/// when it names no time, or nothing is left without it. The words kept are joined by single spaces, and a
/// final question mark is kept.
pub fn without_named_time(query: &str) -> Option<String> {
    let words: Vec<&str> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let at = |j: usize| lower.get(j).map_or("", String::as_str);
    let mut timed = vec![false; words.len()];
    for (k, w) in lower.iter().enumerate() {
        // "2024-03-04", "2024-03", "mid-march".
        let named_month = |w: &str| {
            month(w).is_some_and(|_| {
                MONTHS.contains(&w) && w != "may"
                    || day(at(k.wrapping_sub(1))).is_some()
                    || day(at(k + 1)).is_some()
                    || year(at(k + 1)).is_some()
            })
        };
        let dated = w.split('-').next().and_then(year).is_some() && w.contains('-')
            || w.split('-').any(named_month);
        if dated {
            timed[k] = true;
            // The day before or after the month ("9 November", "9th of November", "November 9").
            for j in [k.wrapping_sub(1), k + 1] {
                if day(at(j)).is_some() {
                    timed[j] = true;
                }
            }
            if at(k.wrapping_sub(1)) == "of" && day(at(k.wrapping_sub(2))).is_some() {
                timed[k - 1] = true;
                timed[k - 2] = true;
            }
            continue;
        }
        if season(w).is_some() && year(at(k + 1)).is_some() {
            timed[k] = true;
            continue;
        }
        if matches!(w.as_str(), "today" | "yesterday")
            || matches!((w.as_str(), at(k + 1)), ("this" | "last", "week" | "month"))
        {
            timed[k] = true;
            continue;
        }
        if matches!(w.as_str(), "week" | "month")
            && matches!(at(k.wrapping_sub(1)), "this" | "last")
        {
            timed[k] = true;
        }
    }
    // A year beside a time already read ("November 9, 2022"), or after a word that leads to one ("in 2023").
    for k in 0..words.len() {
        if year(at(k)).is_some()
            && (k.checked_sub(1).is_some_and(|j| timed[j])
                || matches!(
                    at(k.wrapping_sub(1)),
                    "in" | "during" | "throughout" | "since"
                ))
        {
            timed[k] = true;
        }
    }
    if !timed.contains(&true) {
        return None;
    }
    // The words that lead to a named time go with it ("with his colleagues in March 2023").
    for k in (0..words.len()).rev() {
        if !timed[k] && LEADS.contains(&at(k)) && timed.get(k + 1) == Some(&true) {
            timed[k] = true;
        }
    }
    let kept: Vec<&str> = words
        .iter()
        .zip(&timed)
        .filter(|(_, t)| !**t)
        .map(|(w, _)| *w)
        .collect();
    if kept.is_empty() {
        return None;
    }
    let mut out = kept.join(" ");
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
                "What did John attend with his colleagues in March 2023?",
                "What did John attend with his colleagues?",
            ),
            (
                "What game did Nate play at the convention he attended on 9 October, 2022?",
                "What game did Nate play at the convention he attended?",
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
            (
                "what happened between 11 August and 15 August 2023 with the cache",
                "what happened with the cache",
            ),
            (
                "What did Caroline's sister paint in 2023?",
                "What did Caroline's sister paint?",
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
