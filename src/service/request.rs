//! The one search request every front end makes: what to look for, where, and how the answer is shaped, with
//! its defaults as constants and its validation in one place. The CLI, the MCP tools and the browser only turn
//! their arguments into a [`SearchRequest`]; [`super::HistoryService::search`] checks it and runs it.

use crate::search::{self, Fusion, Rule, SearchError, SearchParams};

/// Hits on a model's first page: a first page of many short hits, each read further on demand
/// (`get_session_detail` around it), brought the evidence after one expansion from .906 to .924 on the LoCoMo dev
/// tuning part at the same median size (held back: .920 → .923; docs/benchmarks.md).
pub const MODEL_RESULTS: usize = 18;
/// Messages of context each side of a hit, for a model. One was chosen on 2026-11-26 for the evidence after an
/// expansion; asked again with the ranking of 2026-12-05, two bring more evidence into the first page on both
/// parts of the LoCoMo dev set (tune .927 → .935, held back .928 → .950) and after the expansion, at a median of
/// 7,300 characters against 5,400 — inside the 10,000 a first answer may cost (docs/benchmarks.md, "Two messages
/// either side, again").
pub const MODEL_CONTEXT: usize = 2;
/// Hits a person at a terminal sees (`ghola search`).
pub const PERSON_RESULTS: usize = 10;
/// Messages of context each side of a hit, for a person at a terminal.
pub const PERSON_CONTEXT: usize = 3;
/// A person's list keeps its weak hits ([`search::RELATIVE_FLOOR`] is the model's): a person reads a ranked list
/// of [`PERSON_RESULTS`] with their scores and stops where they fall off, while a model reads every character of
/// its answer. Hits under half the best score are still the answer often enough to show: with the floor, LoCoMo
/// dev R@5 loses 1.8 points of single-hop and 0.9 of temporal and R@10 2.1 points, the coding set's held-out
/// questions any@10 .886 → .857 (docs/search.md, "A person's list keeps its weak hits"). What answers nothing
/// still shows nothing: a hit needs a query word or [`THRESHOLD`]'s cosine.
pub const PERSON_RELATIVE_FLOOR: f32 = 0.0;
/// Minimum cosine for a hit that matches no query word.
pub const THRESHOLD: f32 = 0.35;
/// A search answer's default size for a model, in characters (about 4,000 tokens): the smallest budget that
/// lost no evidence on the LoCoMo dev set's tuning part, confirmed on its held-back part (docs/benchmarks.md,
/// "Recall in the context window"). Most answers are smaller (median 8,700 characters); it bounds the long ones.
pub const MODEL_MAX_CHARS: usize = 16_000;
/// The smallest budget a caller may set: a header and one hit.
pub const MIN_MAX_CHARS: usize = 1_000;
/// The largest budget: the output bound of every answer.
pub const MAX_CHARS: usize = search::response::RESPONSE_CHARS;
/// Hits a search grouped by session reads before folding them into sessions.
pub const GROUPED_HITS: usize = 100;

/// How an answer is written: compact text (a header per hit and its lines) or every field as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
}

impl std::str::FromStr for Format {
    type Err = SearchError;
    fn from_str(s: &str) -> Result<Self, SearchError> {
        match s {
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            other => Err(SearchError::Invalid {
                arg: "format",
                message: format!("format must be \"text\" or \"json\" (got {other:?})"),
            }),
        }
    }
}

/// What one entry of the answer is: a hit with its context, or a session with its best snippets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grouping {
    #[default]
    Hit,
    Session,
}

impl std::str::FromStr for Grouping {
    type Err = SearchError;
    /// `hit` (or empty: one entry per hit) or `session`.
    fn from_str(s: &str) -> Result<Self, SearchError> {
        match s {
            "" | "hit" => Ok(Grouping::Hit),
            "session" => Ok(Grouping::Session),
            other => Err(SearchError::Invalid {
                arg: "group_by",
                message: format!(
                    "group_by must be \"session\" (or left out for one entry per hit), got {other:?}"
                ),
            }),
        }
    }
}

/// Who reads the answer: a model (it is told which tool reads more) or a person (who is told nothing of tools).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    Model,
    Person,
}

/// Which single session a search is limited to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    /// The caller's own session (its earlier windows: what compaction took away).
    Current,
    /// A session id or a unique prefix of one.
    Id(String),
}

impl SessionChoice {
    /// `current`, an id or a prefix; an empty string is no choice.
    pub fn parse(s: &str) -> Option<SessionChoice> {
        match s.trim() {
            "" => None,
            "current" => Some(SessionChoice::Current),
            id => Some(SessionChoice::Id(id.to_string())),
        }
    }
}

/// Ranking knobs benchmarks turn (hidden from users; the defaults are the tuned ranking).
#[derive(Debug, Clone, Default)]
pub struct Tuning {
    pub fusion: Fusion,
    /// `None`: chosen by the query.
    pub lexical_weight: Option<f32>,
    pub exact_scan: bool,
    /// `None`: [`crate::search::scan::PREFILTER_MIN_CHUNKS`].
    pub prefilter_from: Option<usize>,
    pub without_rules: Vec<Rule>,
}

/// A search as every front end asks it. Dates are the text the caller gave (checked by the service, blank is
/// none); `project: None` searches every project.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub query: String,
    pub project: Option<String>,
    /// Inclusive lower bound: a date (that local day) or an ISO 8601 time.
    pub after: Option<String>,
    /// Exclusive upper bound, read as `after`.
    pub before: Option<String>,
    /// An age (`90m`, `12h`, `3d`, `2w`) or a date: messages since then.
    pub since: Option<String>,
    pub max_results: usize,
    pub offset: usize,
    pub context: usize,
    pub threshold: f32,
    pub relative_floor: f32,
    pub include_subagents: bool,
    /// The calling session: its latest window is left out (its compacted windows stay searchable).
    pub calling_session: Option<String>,
    /// Only this session.
    pub session: Option<SessionChoice>,
    pub grouping: Grouping,
    pub format: Format,
    pub reader: Reader,
    /// The answer's size bound in characters, in the form it is sent in.
    pub max_chars: usize,
    pub tuning: Tuning,
    /// Only messages recorded on these machines (empty: every machine).
    pub machines: Vec<String>,
    /// Search the team hub too (this machine's hub login), fused with this machine's index.
    pub team: bool,
    /// In a team search, only these people's history (empty: everyone's the hub shows this person).
    pub people: Vec<String>,
}

impl SearchRequest {
    /// Whether the search is limited to a session named by its id: then that session is the scope, and a front
    /// end assumes no project around it (the id often comes from a global search's hit in another project);
    /// only a project the caller gave narrows it.
    pub fn names_a_session(&self) -> bool {
        matches!(self.session, Some(SessionChoice::Id(_)))
    }

    /// A model's search (the MCP tools' defaults): [`MODEL_RESULTS`] hits with [`MODEL_CONTEXT`] messages of
    /// context, under [`MODEL_MAX_CHARS`].
    pub fn for_model(query: &str) -> Self {
        Self {
            query: query.to_string(),
            project: None,
            after: None,
            before: None,
            since: None,
            max_results: MODEL_RESULTS,
            offset: 0,
            context: MODEL_CONTEXT,
            threshold: THRESHOLD,
            relative_floor: search::RELATIVE_FLOOR,
            include_subagents: true,
            calling_session: None,
            session: None,
            grouping: Grouping::Hit,
            format: Format::Text,
            reader: Reader::Model,
            max_chars: MODEL_MAX_CHARS,
            tuning: Tuning::default(),
            machines: Vec::new(),
            team: false,
            people: Vec::new(),
        }
    }

    /// A person's search (`ghola search`'s defaults): [`PERSON_RESULTS`] hits with [`PERSON_CONTEXT`] messages
    /// of context, weak hits kept ([`PERSON_RELATIVE_FLOOR`]), bounded only by the output bound.
    pub fn for_person(query: &str) -> Self {
        Self {
            max_results: PERSON_RESULTS,
            context: PERSON_CONTEXT,
            relative_floor: PERSON_RELATIVE_FLOOR,
            max_chars: MAX_CHARS,
            reader: Reader::Person,
            ..Self::for_model(query)
        }
    }

    /// The search parameters of this request, checked (sizes, ranges, dates, the budget); `only_session` is the
    /// full id [`SearchRequest::session`] resolved to, and `now` the time `since` counts back from.
    pub fn params(
        &self,
        only_session: Option<String>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<SearchParams, SearchError> {
        if !(MIN_MAX_CHARS..=MAX_CHARS).contains(&self.max_chars) {
            return Err(SearchError::Invalid {
                arg: "max_chars",
                message: format!(
                    "max_chars must be between {MIN_MAX_CHARS} and {MAX_CHARS} (got {})",
                    self.max_chars
                ),
            });
        }
        fn given(v: &Option<String>) -> Option<&str> {
            v.as_deref().map(str::trim).filter(|s| !s.is_empty())
        }
        let mut p = SearchParams::new(&self.query);
        p.project = self.project.clone().filter(|p| !p.trim().is_empty());
        p.after = given(&self.after)
            .map(|s| search::parse_bound(s, "after"))
            .transpose()?;
        p.before = given(&self.before)
            .map(|s| search::parse_bound(s, "before"))
            .transpose()?;
        if let Some(s) = given(&self.since) {
            p.since(search::parse_since(s, "since", now)?);
        }
        (p.max_results, p.offset) = match self.grouping {
            // Sessions are paged after the hits are folded.
            Grouping::Session => (GROUPED_HITS, 0),
            Grouping::Hit => (self.max_results, self.offset),
        };
        if self.grouping == Grouping::Session
            && !(1..=search::MAX_RESULTS).contains(&self.max_results)
        {
            return Err(SearchError::Invalid {
                arg: "max_results",
                message: format!("max_results must be between 1 and {}", search::MAX_RESULTS),
            });
        }
        p.context = self.context;
        p.threshold = self.threshold;
        p.relative_floor = self.relative_floor;
        p.include_subagents = self.include_subagents;
        p.exclude_session = self.calling_session.clone();
        p.only_session = only_session;
        p.fusion = self.tuning.fusion;
        p.lexical_weight = self.tuning.lexical_weight;
        p.exact_scan = self.tuning.exact_scan;
        if let Some(n) = self.tuning.prefilter_from {
            p.prefilter_from = n;
        }
        p.without_rules = self.tuning.without_rules.clone();
        // The answer is bounded again in the form it is sent in (`HistoryService::search`).
        p.response_chars = MAX_CHARS;
        p.validate()?;
        Ok(p)
    }
}
