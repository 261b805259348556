//! The time a query names ("on 9 November, 2022", "in January 2024", "2026-03-02", "yesterday"), read as a
//! span of time, so that the ranking can prefer what was said then (see `prior::Rule::OutsideNamedTime`).

use chrono::{DateTime, Datelike, Duration, Local, NaiveDate, TimeZone, Utc};

use super::words::{MONTHS, day, month, season, year};

/// A span of time a query names, in milliseconds since the epoch: `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    pub start_ms: i64,
    pub end_ms: i64,
}

/// How long before a named span a message still counts as written in it: a day, for time zones (a date in a
/// question is the asker's calendar day; a transcript's timestamps are UTC).
const SLACK_BEFORE: Duration = Duration::days(1);

/// How long after a named span a message still counts: what happened on a day is often told in the days after
/// it ("yesterday I…", "last week we…").
const SLACK_AFTER: Duration = Duration::days(8);

impl Period {
    /// Whether a message written at `ms` counts as written in the span (with the slack either side).
    pub fn holds(&self, ms: i64) -> bool {
        let before = SLACK_BEFORE.num_milliseconds();
        let after = SLACK_AFTER.num_milliseconds();
        ms >= self.start_ms.saturating_sub(before) && ms < self.end_ms.saturating_add(after)
    }

    /// The span from the start of local day `from` to the start of local day `to` (exclusive).
    fn days(from: NaiveDate, to: NaiveDate) -> Option<Period> {
        let at = |d: NaiveDate| {
            Local
                .from_local_datetime(&d.and_hms_opt(0, 0, 0)?)
                .earliest()
                .map(|t| t.timestamp_millis())
        };
        Some(Period {
            start_ms: at(from)?,
            end_ms: at(to)?,
        })
    }

    /// Local day `d`.
    fn one_day(d: NaiveDate) -> Option<Period> {
        Period::days(d, d.succ_opt()?)
    }

    /// Day `d` of month `m` of `y`, or the whole month when no day is given.
    fn day_or_month(y: i32, m: u32, d: Option<u32>) -> Option<Period> {
        match d {
            Some(d) => Period::one_day(NaiveDate::from_ymd_opt(y, m, d)?),
            None => months_from(y, m, 1),
        }
    }

    /// The smallest span holding both.
    fn join(self, other: Period) -> Period {
        Period {
            start_ms: self.start_ms.min(other.start_ms),
            end_ms: self.end_ms.max(other.end_ms),
        }
    }
}

/// The first day of the month after `y`-`m`.
fn next_month(y: i32, m: u32) -> Option<NaiveDate> {
    if m == 12 {
        NaiveDate::from_ymd_opt(y + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(y, m + 1, 1)
    }
}

/// The span of `months` months from the first of `y`-`m`.
fn months_from(y: i32, m: u32, months: u32) -> Option<Period> {
    let from = NaiveDate::from_ymd_opt(y, m, 1)?;
    let mut to = from;
    for _ in 0..months {
        to = next_month(to.year(), to.month())?;
    }
    Period::days(from, to)
}

/// The time `query` names, relative to `now` for "today", "yesterday", "last week" and a month or day given
/// without a year (the latest one not after today); `None` when it names none. Several named times give the
/// span holding them all ("between 11 August and 15 August 2023").
pub fn named_period(query: &str, now: DateTime<Utc>) -> Option<Period> {
    named_period_years_back(query, now, 0)
}

/// How many years before the latest one a month or day named without a year is looked for among the
/// candidates ([`readings`]).
pub const YEARS_BACK: i32 = 10;

/// The ways to read the time `query` names, latest first: [`named_period`], then — only when the query names a
/// month or day without a year ("in June", "on 9 November") — the same with that month or day one, two, …
/// [`YEARS_BACK`] years earlier. Empty when the query names no time; one reading when it gives its year or
/// names a time relative to today. "In June" asked in November 2026 means June 2026 when the history speaks
/// from then; when nothing in it was written that June (a project left in the spring, another machine's or an
/// imported history), the June it does speak from is the one meant (see [`choose_reading`]).
pub fn readings(query: &str, now: DateTime<Utc>) -> Vec<Period> {
    let Some(latest) = named_period(query, now) else {
        return Vec::new();
    };
    let mut out = vec![latest];
    for back in 1..=YEARS_BACK {
        match named_period_years_back(query, now, back) {
            Some(p) if p != latest => out.push(p),
            // The same span a year earlier: nothing in the query was read without its year.
            _ => break,
        }
    }
    out
}

/// The reading of a named time ([`readings`], latest first) that holds at least one of `times` (the
/// candidates' timestamps, in milliseconds), or the latest when none does — then every candidate is outside
/// the time named, and the rule changes no order.
pub fn choose_reading(
    readings: &[Period],
    times: impl Iterator<Item = i64> + Clone,
) -> Option<Period> {
    let first = *readings.first()?;
    if readings.len() == 1 {
        return Some(first);
    }
    Some(
        readings
            .iter()
            .copied()
            .find(|p| times.clone().any(|t| p.holds(t)))
            .unwrap_or(first),
    )
}

/// [`named_period`] with a month or day given without a year read `back` years before the latest one not after
/// today.
fn named_period_years_back(query: &str, now: DateTime<Utc>, back: i32) -> Option<Period> {
    named_times(&lowered(&words(query)), now, back)
        .into_iter()
        .map(|(_, p)| p)
        .reduce(Period::join)
}

/// The words of `query` as the time it names is read from them: runs of letters, digits and apostrophes, an ISO
/// date kept whole, other hyphens separating words ("mid-march").
pub(super) fn words(query: &str) -> Vec<&str> {
    query
        .split(|c: char| !c.is_alphanumeric() && c != '-' && c != '\'')
        .flat_map(|w| {
            if iso_date(w).is_some() {
                vec![w]
            } else {
                w.split('-').collect()
            }
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// `words` as [`named_times`] reads them: lower-cased, without a possessive `'s` or quotes ("2023's" is a year).
pub(super) fn lowered(words: &[&str]) -> Vec<String> {
    words
        .iter()
        .map(|w| {
            let w = w.to_lowercase();
            w.strip_suffix("'s")
                .unwrap_or(&w)
                .trim_matches('\'')
                .to_string()
        })
        .collect()
}

/// Each time the [`lowered`] `words` name, with the words it was read from (first and last, inclusive): a month
/// or day given without a year read `back` years before the latest one not after today. What both
/// [`named_period`] (the span holding them all) and `untimed` (the query without them) read.
pub(super) fn named_times(
    words: &[String],
    now: DateTime<Utc>,
    back: i32,
) -> Vec<((usize, usize), Period)> {
    let today = now.with_timezone(&Local).date_naive();
    // A year named anywhere serves a month or day named without one ("between 11 August and 15 August 2023").
    let any_year = words.iter().find_map(|w| year(w));
    // The latest `m`/`d` (day 1 for a month) not after today, for a date given without a year.
    let latest_year = |m: u32, d: u32| {
        let this = today.year();
        let latest = match NaiveDate::from_ymd_opt(this, m, d) {
            Some(date) if date <= today => this,
            _ => this - 1,
        };
        latest - back
    };
    let mut found = Vec::new();
    // "since March", "since 2024-03-04": from then until today.
    let until_today = Period::one_day(today).map(|p| p.end_ms);
    let at = |j: usize| words.get(j).map_or("", String::as_str);
    let opened = |p: Option<Period>, first: usize| {
        p.map(|p| match until_today {
            Some(end) if at(first.wrapping_sub(1)) == "since" => Period {
                end_ms: p.end_ms.max(end),
                ..p
            },
            _ => p,
        })
    };
    let mut add = |first: usize, last: usize, p: Option<Period>| {
        if let Some(p) = p {
            found.push(((first, last), p));
        }
    };
    for (k, w) in words.iter().map(String::as_str).enumerate() {
        if let Some((y, m, d)) = iso_date(w) {
            add(k, k, opened(Period::day_or_month(y, m, d), k));
            continue;
        }
        if let Some(m) = month(w) {
            // "9 November 2022", "November 9, 2022", "9th of November", "November 2022", "November".
            let (before, first) = if at(k.wrapping_sub(1)) == "of" {
                (day(at(k.wrapping_sub(2))), k.wrapping_sub(2))
            } else {
                (day(at(k.wrapping_sub(1))), k.wrapping_sub(1))
            };
            let first = if before.is_some() { first } else { k };
            let after = day(at(k + 1));
            let d = before.or(after);
            let y_next = if after.is_some() {
                year(at(k + 2))
            } else {
                year(at(k + 1))
            };
            // "may" and the abbreviations name the month only beside a day or a year ("may I ask", "mar the
            // surface" do not).
            if (w == "may" || !MONTHS.contains(&w)) && d.is_none() && y_next.is_none() {
                continue;
            }
            let last = k + usize::from(after.is_some()) + usize::from(y_next.is_some());
            let y = y_next
                .or(any_year)
                .unwrap_or_else(|| latest_year(m, d.unwrap_or(1)));
            add(first, last, opened(Period::day_or_month(y, m, d), first));
            continue;
        }
        if let Some((m, n)) = season(w)
            && let Some(y) = year(at(k + 1))
        {
            add(k, k + 1, opened(months_from(y, m, n), k));
            continue;
        }
        if let Some(y) = year(w)
            && matches!(
                at(k.wrapping_sub(1)),
                "in" | "during" | "throughout" | "since"
            )
        {
            add(k, k, opened(months_from(y, 1, 12), k));
            continue;
        }
        let two = matches!(w, "this" | "last");
        add(k, k + usize::from(two), relative(w, at(k + 1), today));
    }
    found
}

/// The span a word (and the next one) names relative to local day `today`: "today", "yesterday", "this/last
/// week", "this/last month".
fn relative(word: &str, next: &str, today: NaiveDate) -> Option<Period> {
    match (word, next) {
        ("today", _) => Period::one_day(today),
        ("yesterday", _) => Period::one_day(today.pred_opt()?),
        ("last", "week") => Period::days(today - Duration::days(7), today),
        ("this", "week") => Period::days(
            today - Duration::days(today.weekday().num_days_from_monday() as i64),
            today.succ_opt()?,
        ),
        ("last", "month") => {
            let first = today.with_day(1)?;
            Period::days(first.pred_opt()?.with_day(1)?, first)
        }
        ("this", "month") => Period::days(today.with_day(1)?, today.succ_opt()?),
        _ => None,
    }
}

/// An ISO 8601 date (`2026-03-02`) or month (`2026-03`): year, month and the day if given.
fn iso_date(word: &str) -> Option<(i32, u32, Option<u32>)> {
    let mut parts = word.split('-');
    let y = year(parts.next()?)?;
    let m = parts.next().filter(|p| p.len() == 2)?.parse::<u32>().ok()?;
    let d = match parts.next() {
        Some(p) if p.len() == 2 => Some(p.parse::<u32>().ok()?),
        Some(_) => return None,
        None => None,
    };
    if parts.next().is_some() || !(1..=12).contains(&m) {
        return None;
    }
    Some((y, m, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-25T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    /// The span as local calendar days: (first day, day after the last).
    fn days(q: &str) -> Option<(String, String)> {
        named_period(q, now()).map(|p| {
            let d = |ms: i64| {
                Local
                    .timestamp_millis_opt(ms)
                    .unwrap()
                    .date_naive()
                    .to_string()
            };
            (d(p.start_ms), d(p.end_ms))
        })
    }

    fn span(a: &str, b: &str) -> Option<(String, String)> {
        Some((a.to_string(), b.to_string()))
    }

    #[test]
    fn dates_in_words_and_numbers() {
        assert_eq!(
            days("which caching layer did we pick on 4 March, 2025?"),
            span("2025-03-04", "2025-03-05")
        );
        assert_eq!(
            days("the outage on March 4th 2025"),
            span("2025-03-04", "2025-03-05")
        );
        assert_eq!(
            days("the 4th of March, 2025 release"),
            span("2025-03-04", "2025-03-05")
        );
        assert_eq!(
            days("what broke in Feb 2024"),
            span("2024-02-01", "2024-03-01")
        );
        assert_eq!(
            days("the migration of 2025-12-31"),
            span("2025-12-31", "2026-01-01")
        );
        assert_eq!(
            days("deploys during 2025-12"),
            span("2025-12-01", "2026-01-01")
        );
        assert_eq!(
            days("what did we ship in 2024?"),
            span("2024-01-01", "2025-01-01")
        );
        assert_eq!(
            days("the retreat in summer 2025"),
            span("2025-06-01", "2025-09-01")
        );
        assert_eq!(
            days("the retro in winter 2025"),
            span("2025-12-01", "2026-03-01")
        );
    }

    #[test]
    fn several_dates_give_the_span_holding_them() {
        assert_eq!(
            days("the incidents between 11 August and 15 August 2025"),
            span("2025-08-11", "2025-08-16")
        );
    }

    #[test]
    fn without_a_year_the_latest_one_not_after_today() {
        // Now is 25 November 2026.
        assert_eq!(
            days("what did we decide in March about retries"),
            span("2026-03-01", "2026-04-01")
        );
        assert_eq!(
            days("the December freeze"),
            span("2025-12-01", "2026-01-01")
        );
        assert_eq!(days("on 30 November"), span("2025-11-30", "2025-12-01"));
    }

    #[test]
    fn a_date_without_a_year_is_read_in_the_latest_year_the_candidates_speak_from() {
        let ms = |d: &str| {
            Period::one_day(NaiveDate::parse_from_str(d, "%Y-%m-%d").unwrap())
                .unwrap()
                .start_ms
        };
        let spans = |q: &str| -> Vec<(String, String)> {
            readings(q, now())
                .iter()
                .map(|p| (p.start_ms, p.end_ms))
                .map(|(a, b)| {
                    let d = |t: i64| {
                        Local
                            .timestamp_millis_opt(t)
                            .unwrap()
                            .date_naive()
                            .to_string()
                    };
                    (d(a), d(b))
                })
                .collect()
        };
        // Now is 25 November 2026: June 2026 first, then each June before it.
        let june = spans("When did Melanie go camping in June?");
        assert_eq!(june.len(), 1 + YEARS_BACK as usize);
        assert_eq!(june[0], span("2026-06-01", "2026-07-01").unwrap());
        assert_eq!(june[3], span("2023-06-01", "2023-07-01").unwrap());
        // A year given, or a time relative to today, has one reading; no time, none.
        assert_eq!(spans("camping in June 2023").len(), 1);
        assert_eq!(spans("the failing test from yesterday").len(), 1);
        assert!(spans("camping with the kids").is_empty());
        // The latest June a candidate was written in is the one meant; with none, the latest June.
        let r = readings("When did Melanie go camping in June?", now());
        let chosen = |times: &[&str]| {
            let t: Vec<i64> = times.iter().map(|d| ms(d)).collect();
            choose_reading(&r, t.iter().copied()).unwrap()
        };
        assert_eq!(chosen(&["2023-06-27", "2022-06-10", "2023-08-01"]), r[3]);
        assert_eq!(chosen(&["2026-06-02", "2023-06-27"]), r[0]);
        assert_eq!(chosen(&["2023-08-01", "2024-01-05"]), r[0]);
        assert_eq!(chosen(&[]), r[0]);
        assert_eq!(choose_reading(&[], std::iter::empty()), None);
    }

    #[test]
    fn since_a_time_runs_until_today() {
        assert_eq!(
            days("what changed since March"),
            span("2026-03-01", "2026-11-26")
        );
        assert_eq!(days("since 2025-06-01"), span("2025-06-01", "2026-11-26"));
        assert_eq!(days("since 4 June 2025"), span("2025-06-04", "2026-11-26"));
        assert_eq!(days("flaky since 2024"), span("2024-01-01", "2026-11-26"));
    }

    #[test]
    fn relative_days() {
        assert_eq!(
            days("what did we do yesterday"),
            span("2026-11-24", "2026-11-25")
        );
        assert_eq!(
            days("today's failing test"),
            span("2026-11-25", "2026-11-26")
        );
        assert_eq!(
            days("last week's refactor"),
            span("2026-11-18", "2026-11-25")
        );
        assert_eq!(days("last month"), span("2026-10-01", "2026-11-01"));
    }

    #[test]
    fn words_that_only_look_like_dates() {
        for q in [
            "may I ask why the build failed",
            "the parser may drop a line",
            "version 2024 of the schema",
            "error 1999 in the importer",
            "mar the surface",
            "the last step of the week",
            "2024-13-01 is not a date",
            "bump to 1.2.3",
        ] {
            assert_eq!(days(q), None, "{q}");
        }
        // A month beside a day or a year is a month, "may" too.
        assert_eq!(days("on 3 May 2025"), span("2025-05-03", "2025-05-04"));
    }

    proptest::proptest! {
        /// Any text, read at any time: no panic, and a span read is not empty.
        #[test]
        fn any_query_reads_without_panic(
            q in "(([0-9]{1,4}|[a-z]{1,9}|may|june|2025-0[1-9]-[0-3][0-9]|31st|of|last|week)[ ,.-]?){0,8}",
            secs in 0i64..8_000_000_000,
        ) {
            let now = DateTime::from_timestamp(secs, 0).unwrap();
            if let Some(p) = named_period(&q, now) {
                proptest::prop_assert!(p.start_ms < p.end_ms, "{q:?}: {p:?}");
            }
        }
    }

    #[test]
    fn the_span_has_slack_after_more_than_before() {
        let p = named_period("on 4 March, 2025", now()).unwrap();
        let day = 86_400_000;
        assert!(p.holds(p.start_ms));
        assert!(p.holds(p.start_ms - day + 1));
        assert!(!p.holds(p.start_ms - 2 * day));
        assert!(p.holds(p.end_ms + 7 * day));
        assert!(!p.holds(p.end_ms + 9 * day));
    }
}
