//! The response of a search, identical for `ghola search --json` and the `search_*_history` tools, and its
//! size bound (bodies cut around the query's first telling word; the whole kept under 40,000 characters).

use serde::Serialize;

/// Cut for a hit's own text, centred on the matching part.
pub const BODY_CHARS: usize = 2000;
/// The whole response stays under this many characters (Claude Code swaps anything over 50,000 for a file).
pub const RESPONSE_CHARS: usize = 40_000;

/// Characters kept free for the note [`SearchResponse::bound_by`] adds when it cuts.
const CUT_NOTE_CHARS: usize = 240;

/// The message a result is about.
#[derive(Debug, Clone, Serialize)]
pub struct MatchedMessage {
    pub uuid: String,
    /// The machine it was recorded on (this machine's name, or another machine's whose history is synced).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub machine: String,
    /// Whose history it is: set in team searches (this person's own hits too), empty otherwise.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub person: String,
    /// Where it came from in a team search: "local" (this machine's index) or "hub"; empty otherwise.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub origin: String,
    pub session_id: String,
    pub project: String,
    pub git_branch: Option<String>,
    pub role: String,
    pub kind: String,
    pub timestamp: Option<String>,
    pub window: u32,
    pub is_subagent: bool,
    pub agent_id: Option<String>,
    pub content: String,
}

/// Scores are written with three decimals: more digits say nothing to a reader and cost a few percent of every
/// response.
fn round3<S: serde::Serializer>(x: &f32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((*x as f64 * 1000.0).round() / 1000.0)
}

fn round3_opt<S: serde::Serializer>(x: &Option<f32>, s: S) -> Result<S::Ok, S::Error> {
    match x {
        Some(x) => round3(x, s),
        None => s.serialize_none(),
    }
}

/// Per-evidence scores of a hit.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Scores {
    /// Best cosine similarity of the message's chunks to the query.
    #[serde(serialize_with = "round3")]
    pub semantic: f32,
    /// BM25 score (0 when no query term matched).
    #[serde(serialize_with = "round3")]
    pub lexical: f32,
}

/// A neighbouring message of the same session window.
#[derive(Debug, Clone, Serialize)]
pub struct ContextMessage {
    pub uuid: String,
    pub role: String,
    pub kind: String,
    pub timestamp: Option<String>,
    pub content: String,
    /// A hit of the query itself (several hits close together share one result), shown at full body length.
    pub is_match: bool,
    /// A hit's fused score and its evidence; absent for plain context.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "round3_opt")]
    pub score: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<Scores>,
}

/// One result.
#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    pub matched_message: MatchedMessage,
    #[serde(serialize_with = "round3")]
    pub score: f32,
    pub scores: Scores,
    /// Hits in this result (the best is `matched_message`; all are marked `is_match` in `context`).
    pub matches: usize,
    pub context: Vec<ContextMessage>,
}

/// Index freshness as seen by this search.
#[derive(Debug, Clone, Serialize)]
pub struct IndexInfo {
    pub messages: usize,
    /// Of those, how many have been embedded; the rest are ranked by their words alone until the second pass
    /// reaches them.
    pub embedded_messages: usize,
    pub pending_files: usize,
    pub updated_at: Option<String>,
}

/// The whole response.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResponse {
    pub results: Vec<SearchHit>,
    pub query: String,
    pub total_matches: usize,
    pub offset: usize,
    pub has_more: bool,
    pub excluded_sessions: usize,
    pub index: IndexInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The history holds more than one machine's sessions: the text forms name each hit's machine.
    #[serde(skip)]
    pub several_machines: bool,
    /// The filters left no message to search (a project with no session, dates before the first one): the
    /// note says which, and the text forms do not blame the query's words ([`super::compact::NOTHING_MATCHES`]).
    #[serde(skip)]
    pub nothing_in_scope: bool,
    /// No message could be a hit on the query's meaning alone (`super::script`: a query the model cannot read,
    /// or reads too loosely): an empty answer says only that no message shares a word
    /// ([`SearchResponse::nothing_matches`]).
    #[serde(skip)]
    pub by_words_alone: bool,
}

/// Cuts `text` to about `max` characters around the first of the query's telling words (`terms`, lowercase;
/// [`super::passage::start_of_cut`]), marking cuts with `…`; with no terms, its first `max` characters.
pub fn cut_around(text: &str, terms: &[String], max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let start = super::passage::start_of_cut(text, terms, max);
    let body: String = text.chars().skip(start).take(max).collect();
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(&body);
    if start + max < n {
        out.push('…');
    }
    out
}

/// How a model gets back what a bound cut: the words [`SearchResponse::bound_by`] adds for a model's answer.
pub const MORE_FOR_A_MODEL: &str =
    "get_session_detail with a hit's session and around=<hit> shows its messages whole";

impl SearchResponse {
    /// What an empty answer says when the filters left something to search: that no message shares a word with
    /// the query, and — unless no message could be a hit on meaning alone ([`Self::by_words_alone`]) — that none
    /// is close enough in meaning.
    pub fn nothing_matches(&self) -> &'static str {
        if self.by_words_alone {
            super::compact::NO_WORD_SHARED
        } else {
            super::compact::NOTHING_MATCHES
        }
    }

    /// Adds a note for the reader (notes are joined with "; ").
    pub fn add_note(&mut self, note: impl Into<String>) {
        let note = note.into();
        self.note = Some(match self.note.take() {
            Some(n) => format!("{n}; {note}"),
            None => note,
        });
    }

    fn size(&self) -> usize {
        serde_json::to_string(self).map_or(0, |s| s.chars().count())
    }

    /// Shrinks the response under [`RESPONSE_CHARS`], giving up what helps least first: plain context bodies
    /// (cut down to 120 characters), then plain context messages farthest from the hits of their result, then
    /// hit bodies (down to 200 characters), and last whole results from the end of the page (`has_more` then
    /// says so). Each cut goes from the last result up and stops once the answer fits: the first results are
    /// read first, and keep their bodies longest (docs/search.md, "The last results cut first"). The fields that
    /// identify a hit are never dropped.
    /// `target_chars` lowers the bound (an experiment knob; never above [`RESPONSE_CHARS`]).
    pub fn bound(&mut self, terms: &[String], target_chars: usize, more: &str) {
        self.bound_by(terms, target_chars, &|r: &SearchResponse| r.size(), more);
    }

    /// [`SearchResponse::bound`] with the size measured by `size` (the text form's, for a model: see
    /// [`super::compact`]). Says in the note what it cut: for a model (`more` given, the way to get it back,
    /// such as [`MORE_FOR_A_MODEL`]) with its budget in characters; for a person (`more` empty) in a person's
    /// words, without budgets or tool names.
    pub fn bound_by(
        &mut self,
        terms: &[String],
        target_chars: usize,
        size: &dyn Fn(&SearchResponse) -> usize,
        more: &str,
    ) {
        let limit_chars = target_chars.min(RESPONSE_CHARS);
        if size(self) <= limit_chars {
            return;
        }
        let results_before = self.results.len();
        // Room for the note below, which says what was cut.
        self.shrink(terms, limit_chars.saturating_sub(CUT_NOTE_CHARS), size);
        let dropped = results_before - self.results.len();
        // A model is told its budget and the tool that reads the rest; a person, that the page goes on.
        let said = if more.is_empty() {
            let mut said = "some context was shortened to keep the answer short".to_string();
            if dropped > 0 {
                said.push_str(&format!(
                    "; {dropped} more result{} on the next page",
                    if dropped == 1 { "" } else { "s" }
                ));
            }
            said
        } else {
            let mut said = format!("cut to fit {limit_chars} characters: context shortened");
            if dropped > 0 {
                said.push_str(&format!(
                    ", {dropped} result{} moved to the next page",
                    if dropped == 1 { "" } else { "s" }
                ));
            }
            said.push_str(&format!(" ({more})"));
            said
        };
        self.add_note(said);
    }

    fn shrink(
        &mut self,
        terms: &[String],
        limit_chars: usize,
        size: &dyn Fn(&SearchResponse) -> usize,
    ) {
        for limit in [600, 300, 120] {
            for k in (0..self.results.len()).rev() {
                if size(self) <= limit_chars {
                    return;
                }
                for c in &mut self.results[k].context {
                    if !c.is_match {
                        c.content = cut_around(&c.content, terms, limit);
                    }
                }
            }
        }
        let farthest = self
            .results
            .iter()
            .map(|h| h.context.len())
            .max()
            .unwrap_or(0);
        for ring in (1..=farthest).rev() {
            if size(self) <= limit_chars {
                return;
            }
            for h in &mut self.results {
                let hits: Vec<usize> = (0..h.context.len())
                    .filter(|&i| h.context[i].is_match)
                    .collect();
                let mut i = 0;
                h.context.retain(|c| {
                    let d = hits.iter().map(|&j| j.abs_diff(i)).min().unwrap_or(0);
                    i += 1;
                    c.is_match || d < ring
                });
            }
        }
        for limit in [1000, 500, 200] {
            // The last results first, and no further than needed: the first are read first.
            for k in (0..self.results.len()).rev() {
                if size(self) <= limit_chars {
                    return;
                }
                let h = &mut self.results[k];
                h.matched_message.content = cut_around(&h.matched_message.content, terms, limit);
                for c in &mut h.context {
                    if c.is_match {
                        c.content = cut_around(&c.content, terms, limit);
                    }
                }
            }
        }
        while size(self) > limit_chars && self.results.len() > 1 {
            self.results.pop();
            self.has_more = true;
        }
        // One result of many hits close together: its best hit alone, then shorter.
        if size(self) > limit_chars
            && let Some(h) = self.results.first_mut()
        {
            let best = h.matched_message.uuid.clone();
            h.context.retain(|c| c.uuid == best);
            for limit in [120, 60] {
                if size(self) <= limit_chars {
                    break;
                }
                let h = &mut self.results[0];
                h.matched_message.content = cut_around(&h.matched_message.content, terms, limit);
                for c in &mut h.context {
                    c.content = cut_around(&c.content, terms, limit);
                }
            }
        }
    }
}

#[cfg(test)]
mod bound_tests {
    use super::*;

    fn message(i: usize, is_match: bool, len: usize) -> ContextMessage {
        ContextMessage {
            uuid: format!("00000000-0000-4000-8000-{i:012}"),
            role: "assistant".into(),
            kind: "text".into(),
            timestamp: Some("2025-01-01T00:00:00.000Z".into()),
            content: "word ".repeat(len / 5),
            is_match,
            score: is_match.then_some(0.5),
            scores: is_match.then_some(Scores {
                semantic: 0.5,
                lexical: 1.0,
            }),
        }
    }

    fn hit(r: usize, body: usize, context: Vec<ContextMessage>) -> SearchHit {
        SearchHit {
            matched_message: MatchedMessage {
                machine: String::new(),
                person: String::new(),
                origin: String::new(),
                uuid: format!("hit-{r}"),
                session_id: "s".into(),
                project: "/p".into(),
                git_branch: None,
                role: "assistant".into(),
                kind: "text".into(),
                timestamp: None,
                window: 0,
                is_subagent: false,
                agent_id: None,
                content: "word ".repeat(body / 5),
            },
            score: 1.0,
            scores: Scores {
                semantic: 0.5,
                lexical: 1.0,
            },
            matches: 3,
            context,
        }
    }

    fn response(results: Vec<SearchHit>) -> SearchResponse {
        SearchResponse {
            several_machines: false,
            nothing_in_scope: false,
            by_words_alone: false,
            total_matches: results.len(),
            results,
            query: "word".into(),
            offset: 0,
            has_more: false,
            excluded_sessions: 0,
            index: IndexInfo {
                messages: 300,
                embedded_messages: 300,
                pending_files: 0,
                updated_at: None,
            },
            note: None,
        }
    }

    #[test]
    fn wide_merged_results_stay_under_the_bound_and_keep_every_hit() {
        let results: Vec<SearchHit> = (0..10)
            .map(|r| {
                let context = (0..30)
                    .map(|i| message(r * 100 + i, i % 10 == 5, 1000))
                    .collect();
                hit(r, 2000, context)
            })
            .collect();
        let mut resp = response(results);
        assert!(resp.size() > RESPONSE_CHARS);
        resp.bound(&["word".to_string()], RESPONSE_CHARS, "");
        assert!(resp.size() <= RESPONSE_CHARS, "{}", resp.size());
        for h in &resp.results {
            assert_eq!(h.context.iter().filter(|c| c.is_match).count(), 3);
        }
    }

    #[test]
    fn the_last_results_are_cut_first_and_no_further_than_the_bound_needs() {
        let results: Vec<SearchHit> = (0..10).map(|r| hit(r, 2000, Vec::new())).collect();
        let mut resp = response(results);
        let whole = resp.size();
        // Room for all but 2,500 characters (and the note's): the last three bodies give them up, the first keep
        // theirs.
        let limit = whole - 2_500;
        resp.bound(&["word".to_string()], limit, "");
        assert!(resp.size() <= limit, "{}", resp.size());
        let len = |k: usize| resp.results[k].matched_message.content.chars().count();
        assert_eq!(len(0), 2000);
        assert_eq!(len(6), 2000);
        assert!(len(7) < 2000 && len(9) < 2000, "{} {}", len(7), len(9));
        assert!((0..9).all(|k| len(k) >= len(k + 1)));
        assert_eq!(resp.results.len(), 10);
    }
}
