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

/// Longest query accepted: the response echoes the query, and must stay under the output bound.
pub const MAX_QUERY_CHARS: usize = 2_000;

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
    pub fusion: Fusion,
    /// Weight of lexical evidence in [`Fusion::Weighted`] (the rest is semantic).
    pub lexical_weight: f32,
}

impl SearchParams {
    /// Defaults of the tools: 10 results, 3 messages of context, threshold 0.2, subagents included.
    pub fn new(query: &str) -> Self {
        Self {
            query: query.to_string(),
            project: None,
            after: None,
            before: None,
            max_results: 10,
            offset: 0,
            context: 3,
            threshold: 0.2,
            include_subagents: true,
            exclude_session: None,
            fusion: Fusion::default(),
            lexical_weight: crate::search::LEXICAL_WEIGHT,
        }
    }

    /// Checks the combination (bounds in order, sane sizes, a non-empty query).
    pub fn validate(&self) -> Result<(), String> {
        if self.query.trim().is_empty() {
            return Err("query is empty".into());
        }
        let chars = self.query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(format!(
                "query is {chars} characters; the limit is {MAX_QUERY_CHARS}: search for the distinctive words, an \
                 error line or an identifier instead of pasting whole text"
            ));
        }
        if let (Some(a), Some(b)) = (self.after, self.before)
            && a >= b
        {
            return Err(format!("after ({a}) must be earlier than before ({b})"));
        }
        if self.max_results == 0 || self.max_results > 100 {
            return Err("max_results must be between 1 and 100".into());
        }
        if self.context > 20 {
            return Err("context_before_after must be at most 20".into());
        }
        if !(0.0..=1.0).contains(&self.threshold) {
            return Err("threshold must be between 0 and 1".into());
        }
        Ok(())
    }
}

/// Parses a date bound: `2025-01-15` is that calendar day in the local time zone (its start, for both
/// `after` — inclusive — and `before` — exclusive); `2025-01-15T10:00:00Z` or with an offset is exact; a time
/// without a zone is local.
pub fn parse_bound(s: &str, name: &str) -> Result<DateTime<Utc>, String> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    let local = |naive: chrono::NaiveDateTime| {
        Local
            .from_local_datetime(&naive)
            .earliest()
            .map(|t| t.with_timezone(&Utc))
            .ok_or_else(|| format!("{name}: {s:?} does not exist in the local time zone"))
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
    Err(format!(
        "{name}: {s:?} is not an ISO 8601 date (2025-01-15) or time (2025-01-15T10:00:00Z)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(p.validate().is_err(), "after == before is an error");
    }
}
