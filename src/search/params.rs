//! Search parameters, shared by `ghola search` and the `search_*_history` tools, with their validation.

use chrono::{DateTime, Local, NaiveDate, NaiveTime, TimeZone, Utc};

/// How lexical and semantic evidence are combined (the default was chosen on the LoCoMo dev set; the others
/// stay for comparison).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    /// Weighted sum of BM25 (scaled by the best BM25 score of the query) and cosine similarity.
    #[default]
    Weighted,
    /// Reciprocal-rank fusion (k = 60) of the two rankings.
    Rrf,
    /// Cosine similarity only.
    Semantic,
    /// BM25 only.
    Lexical,
}

/// Default [`SearchParams::relative_floor`]: a hit under 0.5 of the best hit's score (and without a strong
/// semantic match, see `search::SEMANTIC_KEEP`) is weak evidence that mostly made responses long (LoCoMo dev,
/// default parameters: evidence in the response .914 at a median of 37,883 characters without it, .900 at
/// 24,380 with it at 0.55). Lowered from 0.55 when the addressed-person rule moved many hits down: through the
/// MCP server, LoCoMo dev .895 → .916 at a median of 4,944 → 6,257 characters, the coding set .900 → .920 at
/// 11,796 → 12,070 (docs/search.md).
pub const RELATIVE_FLOOR: f32 = 0.5;

/// Longest query accepted: the response echoes the query, and must stay under the output bound.
pub const MAX_QUERY_CHARS: usize = 2_000;

/// The most messages of context each side of a hit.
pub const MAX_CONTEXT: usize = 20;

/// The most results one search returns (callers page past it with `offset`).
pub const MAX_RESULTS: usize = 100;

/// Everything a search needs.
#[derive(Debug, Clone)]
pub struct SearchParams {
    pub query: String,
    /// Sessions whose project is this directory or inside it; `None` searches every project.
    pub project: Option<String>,
    /// Inclusive lower bound.
    pub after: Option<DateTime<Utc>>,
    /// Exclusive upper bound.
    pub before: Option<DateTime<Utc>>,
    pub max_results: usize,
    pub offset: usize,
    pub context: usize,
    /// Minimum cosine similarity for a hit that has no lexical match at all.
    pub threshold: f32,
    pub include_subagents: bool,
    /// A session whose latest window is left out (its compacted windows stay searchable).
    pub exclude_session: Option<String>,
    /// Only this session (a full id): with `exclude_session` the same, a search of what compaction took away
    /// from the current session.
    pub only_session: Option<String>,
    pub fusion: Fusion,
    /// Weight of lexical evidence in [`Fusion::Weighted`] (the rest is semantic); `None`: chosen by the query
    /// (see [`default_lexical_weight`]).
    pub lexical_weight: Option<f32>,
    /// In [`Fusion::Weighted`], hits scoring under this fraction of the best hit are left out unless their cosine
    /// alone is strong (0 keeps all); both judged by their own evidence, without their session's share
    /// ([`super::SESSION_SHARE`]).
    pub relative_floor: f32,
    /// Scan the f32 vectors rather than their int8 copy (benchmarks compare the two).
    pub exact_scan: bool,
    /// From how many live chunks the scan reads the 4-bit copy first ([`super::scan::PREFILTER_MIN_CHUNKS`];
    /// tests set 0 to compare the two scans on a small history).
    pub prefilter_from: usize,
    /// The response is cut under this many characters (at most [`super::response::RESPONSE_CHARS`], the
    /// default; the CLI reads the experiment variable `GHOLA_RESPONSE_CHARS` into it).
    pub response_chars: usize,
    /// Ranking rules turned off (benchmarks measuring what each is worth; see [`super::Rule`]).
    pub without_rules: Vec<super::Rule>,
    /// Only messages recorded on these machines (by name; this machine is [`SearchParams::this_machine`]);
    /// empty: every machine.
    pub machines: Vec<String>,
    /// What this machine is called: the name its own messages carry (other machines' are their copies' names).
    pub this_machine: String,
}

/// Why a search could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SearchError {
    /// An argument is out of range or malformed; `arg` names it (as the tools and flags spell it).
    #[error("{message}")]
    Invalid { arg: &'static str, message: String },
    /// The query could not be embedded.
    #[error("embedding the query: {0}")]
    Embed(String),
}

impl SearchParams {
    /// Defaults of the tools: 10 results, 3 messages of context, threshold 0.35, subagents included.
    pub fn new(query: &str) -> Self {
        Self {
            query: query.to_string(),
            project: None,
            after: None,
            before: None,
            max_results: 10,
            offset: 0,
            context: 3,
            threshold: 0.35,
            include_subagents: true,
            exclude_session: None,
            only_session: None,
            fusion: Fusion::default(),
            lexical_weight: None,
            relative_floor: RELATIVE_FLOOR,
            exact_scan: false,
            prefilter_from: super::scan::PREFILTER_MIN_CHUNKS,
            response_chars: super::response::RESPONSE_CHARS,
            without_rules: Vec::new(),
            machines: Vec::new(),
            this_machine: String::new(),
        }
    }

    /// Keeps only messages at or after `t` as well: the lower bound becomes the later of the two.
    pub fn since(&mut self, t: DateTime<Utc>) {
        self.after = Some(self.after.map_or(t, |a| a.max(t)));
    }

    /// Checks the combination (bounds in order, sane sizes, a non-empty query).
    pub fn validate(&self) -> Result<(), SearchError> {
        let bad = |arg: &'static str, message: String| Err(SearchError::Invalid { arg, message });
        if self.query.trim().is_empty() {
            return bad("query", "query is empty".into());
        }
        if let Some(w) = self.lexical_weight
            && !(0.0..=1.0).contains(&w)
        {
            return bad(
                "lexical_weight",
                format!("lexical weight must be between 0 and 1 (got {w})"),
            );
        }
        let chars = self.query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return bad(
                "query",
                format!(
                    "query is {chars} characters; the limit is {MAX_QUERY_CHARS}: search for the distinctive \
                     words, an error line or an identifier instead of pasting whole text"
                ),
            );
        }
        if let (Some(a), Some(b)) = (self.after, self.before)
            && a >= b
        {
            return bad(
                "after",
                format!("after ({a}) must be earlier than before ({b})"),
            );
        }
        if self.max_results == 0 || self.max_results > MAX_RESULTS {
            return bad(
                "max_results",
                format!("max_results must be between 1 and {MAX_RESULTS}"),
            );
        }
        if self.context > MAX_CONTEXT {
            return bad(
                "context_before_after",
                format!("context_before_after must be at most {MAX_CONTEXT}"),
            );
        }
        if !(0.0..=1.0).contains(&self.relative_floor) {
            return bad(
                "relative_floor",
                "relative floor must be between 0 and 1".into(),
            );
        }
        if !(0.0..=1.0).contains(&self.threshold) {
            return bad("threshold", "threshold must be between 0 and 1".into());
        }
        Ok(())
    }
}

/// Parses a date bound: `2025-01-15` is that calendar day in the local time zone (its start, for both
/// `after` — inclusive — and `before` — exclusive); `2025-01-15T10:00:00Z` or with an offset is exact; a time
/// without a zone is local.
pub fn parse_bound(s: &str, name: &'static str) -> Result<DateTime<Utc>, SearchError> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    let local = |naive: chrono::NaiveDateTime| {
        Local
            .from_local_datetime(&naive)
            .earliest()
            .map(|t| t.with_timezone(&Utc))
            .ok_or_else(|| SearchError::Invalid {
                arg: name,
                message: format!("{name}: {s:?} does not exist in the local time zone"),
            })
    };
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return local(d.and_time(NaiveTime::MIN));
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, f) {
            return local(t);
        }
    }
    Err(SearchError::Invalid {
        arg: name,
        message: format!(
            "{name}: {s:?} is not an ISO 8601 date (2025-01-15) or time (2025-01-15T10:00:00Z)"
        ),
    })
}

/// Parses a `since` bound: an age back from `now` (`90m`, `12h`, `3d`, `2w`) or a date or time as
/// [`parse_bound`] reads them (`2026-11-01`).
pub fn parse_since(
    s: &str,
    name: &'static str,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, SearchError> {
    let t = s.trim();
    let unit = t.chars().last().unwrap_or(' ');
    let number = t[..t.len() - unit.len_utf8().min(t.len())].trim();
    let minutes = match unit {
        'm' => Some(1),
        'h' => Some(60),
        'd' => Some(24 * 60),
        'w' => Some(7 * 24 * 60),
        _ => None,
    };
    if let (Some(per), Ok(n)) = (minutes, number.parse::<i64>())
        && n >= 0
    {
        return n
            .checked_mul(per)
            .and_then(chrono::Duration::try_minutes)
            .and_then(|d| now.checked_sub_signed(d))
            .ok_or_else(|| SearchError::Invalid {
                arg: name,
                message: format!("{name}: {s:?} reaches before any date"),
            });
    }
    parse_bound(t, name).map_err(|_| SearchError::Invalid {
        arg: name,
        message: format!(
            "{name}: {s:?} is neither an age (90m, 12h, 3d, 2w) nor a date (2026-11-01) or time \
             (2026-11-01T10:00:00Z)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_ages_and_dates() {
        let now = DateTime::parse_from_rfc3339("2026-11-25T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let at = |s: &str| parse_since(s, "since", now).map(|t| t.to_rfc3339());
        assert_eq!(at("3d").unwrap(), "2026-11-22T12:00:00+00:00");
        assert_eq!(at(" 12h ").unwrap(), "2026-11-25T00:00:00+00:00");
        assert_eq!(at("2w").unwrap(), "2026-11-11T12:00:00+00:00");
        assert_eq!(at("90m").unwrap(), "2026-11-25T10:30:00+00:00");
        assert_eq!(
            at("2026-11-01T08:00:00Z").unwrap(),
            "2026-11-01T08:00:00+00:00"
        );
        assert!(at("2026-11-01").is_ok());
        for bad in ["", "d", "-3d", "3 days", "soon", "99999999999999w"] {
            let e = at(bad).unwrap_err();
            assert!(
                matches!(e, SearchError::Invalid { arg: "since", .. }),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn bounds_parse_and_reject() {
        assert_eq!(
            parse_bound("2025-01-15T10:00:00Z", "after")
                .unwrap()
                .to_rfc3339(),
            "2025-01-15T10:00:00+00:00"
        );
        assert_eq!(
            parse_bound("2025-01-15T10:00:00+02:00", "after")
                .unwrap()
                .to_rfc3339(),
            "2025-01-15T08:00:00+00:00"
        );
        assert!(parse_bound("yesterday", "after").is_err());
        assert!(parse_bound("2025-13-01", "after").is_err());
        let mut p = SearchParams::new("x");
        p.after = Some(parse_bound("2025-01-15", "after").unwrap());
        p.before = Some(parse_bound("2025-01-15", "before").unwrap());
        assert!(
            matches!(p.validate(), Err(SearchError::Invalid { arg: "after", .. })),
            "after == before is an error"
        );
    }
}

/// Weight of lexical evidence for a query that names something exact: an identifier, a path, a constant.
pub const IDENTIFIER_WEIGHT: f32 = 0.6;

/// Whether a word looks like code rather than prose: joiners (`_ . / : @ -` inside it, `()`), camelCase, an
/// all-caps constant, or letters mixed with digits.
fn code_like(word: &str) -> bool {
    let inner = word.trim_matches(|c: char| !c.is_alphanumeric());
    let joined = inner.contains(['_', '.', '/', ':', '@', '(', '-']) || word.starts_with('@');
    let chars: Vec<char> = inner.chars().collect();
    let camel = chars
        .windows(2)
        .any(|w| w[0].is_lowercase() && w[1].is_uppercase());
    let letters = chars.iter().filter(|c| c.is_alphabetic()).count();
    let caps = letters >= 3 && chars.iter().all(|c| !c.is_lowercase());
    let mixed = letters > 0 && chars.iter().any(|c| c.is_ascii_digit());
    joined || camel || caps || mixed
}

/// The lexical weight for a query: [`IDENTIFIER_WEIGHT`] when it is a few words of which one looks like code
/// (`fetch_shard_weights`, `src/index/store.rs`, `MAX_UPLOAD_CHUNK_BYTES`), where the exact term is the
/// evidence; [`crate::search::LEXICAL_WEIGHT`] for prose that names someone or something ("when did Priya
/// move to the Lisbon office?"), where the name is evidence too; [`DESCRIPTION_WEIGHT`] for prose that only
/// describes, where meaning matters most. A few keywords with no function word and no question mark ("bd
/// ready", "retry backoff") name what they look for as a name does: someone typing two words types the words
/// they expect to find, so they take [`crate::search::LEXICAL_WEIGHT`] too.
pub fn default_lexical_weight(query: &str) -> f32 {
    let words: Vec<&str> = query.split_whitespace().collect();
    if words.len() <= 3 && words.iter().any(|w| code_like(w)) {
        IDENTIFIER_WEIGHT
    } else if names_someone(query) || is_keywords(&words) {
        crate::search::LEXICAL_WEIGHT
    } else {
        DESCRIPTION_WEIGHT
    }
}

/// Whether a query is a few keywords rather than a sentence: at most [`KEYWORD_QUERY_WORDS`] words, none of
/// them a function word ([`crate::index::lexical::FUNCTION_WORDS`]: "what", "did", "the", …), and no `?`.
fn is_keywords(words: &[&str]) -> bool {
    !words.is_empty()
        && words.len() <= KEYWORD_QUERY_WORDS
        && words.iter().all(|w| {
            let bare = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            !w.contains('?')
                && !bare.is_empty()
                && !crate::index::lexical::FUNCTION_WORDS.contains(&bare.as_str())
        })
}

/// The most words a query of keywords has (see [`is_keywords`]): a search box's two or three words, not a
/// sentence's.
const KEYWORD_QUERY_WORDS: usize = 3;

/// Weight of lexical evidence for a query that describes rather than names ("why were people signed out too
/// soon?"): its words are the asker's, not the history's, so meaning counts for more (0.15–0.25 is a plateau on
/// the coding benchmark; LoCoMo's questions name people, see the README).
pub const DESCRIPTION_WEIGHT: f32 = 0.2;

/// Whether a query names someone or something by a proper name: a capitalised word ("Priya", "Nginx",
/// "Paris") after the first word (which is capitalised by grammar alone), other than "I".
pub fn names_someone(query: &str) -> bool {
    query.split_whitespace().skip(1).any(|w| {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric());
        w != "I"
            && !w.starts_with("I'")
            && w.chars().next().is_some_and(|c| c.is_uppercase())
            && w.chars().count() >= 2
    })
}

#[cfg(test)]
mod weight_tests {
    use super::*;

    #[test]
    fn names_lean_lexical_descriptions_semantic() {
        for q in [
            "When did Priya move to the Lisbon office?",
            "why was the Nginx rewrite rule flagged as dead?",
            "what did Tomasz bake?",
        ] {
            assert!(names_someone(q), "{q}");
            assert_eq!(
                default_lexical_weight(q),
                crate::search::LEXICAL_WEIGHT,
                "{q}"
            );
        }
        for q in [
            "why did uploads stall halfway through on slow networks?",
            "What did I settle on for the cache size?",
            "what does the test for the rate limiter reset check?",
        ] {
            assert!(!names_someone(q), "{q}");
            assert_eq!(default_lexical_weight(q), DESCRIPTION_WEIGHT, "{q}");
        }
    }

    #[test]
    fn identifiers_lean_lexical_and_questions_semantic() {
        for q in [
            "fetch_shard_weights",
            "MAX_UPLOAD_CHUNK_BYTES",
            "src/index/store.rs",
            "parseUserToken",
            "@retry_window_ms",
            "v2.1.38 release",
            "merge_tile_edges nesting",
        ] {
            assert_eq!(default_lexical_weight(q), IDENTIFIER_WEIGHT, "{q}");
        }
        for q in [
            "what did we decide about retries",
            "why did the build fail",
            "retry backoff",
            "how do mutexes differ from semaphores?",
            "why did fetch_shard_weights always return an empty list in the end",
        ] {
            assert!(default_lexical_weight(q) < IDENTIFIER_WEIGHT, "{q}");
        }
    }

    #[test]
    fn a_few_keywords_lean_lexical_like_a_name() {
        for q in ["bd ready", "retry backoff", "flaky upload test"] {
            assert_eq!(
                default_lexical_weight(q),
                crate::search::LEXICAL_WEIGHT,
                "{q}"
            );
        }
        for q in [
            "why retries?",
            "the retry backoff",
            "what broke uploads",
            "uploads stalled on slow networks again",
        ] {
            assert_eq!(default_lexical_weight(q), DESCRIPTION_WEIGHT, "{q}");
        }
    }
}
