//! The words a date is written in — months, days of the week, days of the month, years, seasons, counts and
//! units of a duration — read alike by `period` (the time a query names) and `talk` (whether a
//! query asks when and a message says when).

/// The months, in order: their names, and (three letters) their usual abbreviations.
pub(super) const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Days of the week, which a message uses to say when ("on Friday", "last Sunday").
pub(super) const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Units of a duration ("for 3 years", "seven months now", "a few weeks"): what answers "how long …".
pub(super) const DURATION_UNITS: &[&str] = &[
    "minute", "minutes", "hour", "hours", "day", "days", "week", "weeks", "month", "months",
    "year", "years", "decade", "decades", "weekend", "weekends",
];

/// Short names of the days of the week ("last Fri", "on Tues"), read only after a word that names a day: alone,
/// "sun", "sat" and "wed" are mostly other words.
pub(super) const WEEKDAY_ABBREVIATIONS: &[&str] = &[
    "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun",
];

/// Whether a word counts the unit after it: a number in digits or in words up to twelve, "few", "couple",
/// "several" ("a" and "an" are left out: "twice a day" says how often, not how long).
pub(super) fn is_count(word: &str) -> bool {
    const WORDS: &[&str] = &[
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve", "few", "couple", "several",
    ];
    WORDS.contains(&word) || (word.len() <= 3 && word.bytes().all(|b| b.is_ascii_digit()))
}

/// A month by its name or its usual three-letter (or `sept`) abbreviation: 1 to 12.
pub(super) fn month(word: &str) -> Option<u32> {
    if let Some(k) = MONTHS.iter().position(|m| *m == word) {
        return Some(k as u32 + 1);
    }
    if word == "sept" {
        return Some(9);
    }
    (word.len() == 3 && word != "may")
        .then(|| MONTHS.iter().position(|m| m.starts_with(word)))
        .flatten()
        .map(|k| k as u32 + 1)
}

/// A day of the month written as a number, with or without its ordinal ending (`9`, `1st`, `23rd`).
pub(super) fn day(word: &str) -> Option<u32> {
    let digits = word
        .strip_suffix("st")
        .or_else(|| word.strip_suffix("nd"))
        .or_else(|| word.strip_suffix("rd"))
        .or_else(|| word.strip_suffix("th"))
        .unwrap_or(word);
    (digits.len() <= 2)
        .then(|| digits.parse::<u32>().ok())
        .flatten()
        .filter(|d| (1..=31).contains(d))
}

/// A four-digit year from 1970 to 2199.
pub(super) fn year(word: &str) -> Option<i32> {
    (word.len() == 4)
        .then(|| word.parse::<i32>().ok())
        .flatten()
        .filter(|y| (1970..2200).contains(y))
}

/// The months of a season in the northern hemisphere, as (first month, months): winter starts in December.
pub(super) fn season(word: &str) -> Option<(u32, u32)> {
    match word {
        "spring" => Some((3, 3)),
        "summer" => Some((6, 3)),
        "autumn" | "fall" => Some((9, 3)),
        "winter" => Some((12, 3)),
        _ => None,
    }
}
