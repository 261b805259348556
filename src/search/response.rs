//! The response of a search, identical for `ghola search --json` and the `search_*_history` tools, and its
//! size bound (bodies cut around the match; the whole kept under 40,000 characters).

use serde::Serialize;

/// Cut for a hit's own text, centred on the matching part.
pub const BODY_CHARS: usize = 2000;
/// The whole response stays under this many characters (Claude Code swaps anything over 50,000 for a file).
pub const RESPONSE_CHARS: usize = 40_000;

/// The message a result is about.
#[derive(Debug, Clone, Serialize)]
pub struct MatchedMessage {
    pub uuid: String,
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

/// Per-evidence scores of a hit.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Scores {
    /// Best cosine similarity of the message's chunks to the query.
    pub semantic: f32,
    /// BM25 score (0 when no query term matched).
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<Scores>,
}

/// One result.
#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    pub matched_message: MatchedMessage,
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
}

/// Cuts `text` to about `max` characters around the first occurrence of any of `terms` (lowercase), marking
/// cuts with `…`.
pub fn cut_around(text: &str, terms: &[String], max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let lower = text.to_lowercase();
    let hit_byte = terms
        .iter()
        .filter(|t| t.len() > 1)
        .filter_map(|t| lower.find(t.as_str()))
        .min()
        .unwrap_or(0);
    // Positions in chars (lowercasing can change byte lengths; map through char counts of the prefix).
    let hit_char = lower
        .get(..hit_byte)
        .map_or(0, |p| p.chars().count())
        .min(n);
    let start = hit_char.saturating_sub(max / 3).min(n - max);
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

impl SearchResponse {
    fn size(&self) -> usize {
        serde_json::to_string(self).map_or(0, |s| s.chars().count())
    }

    /// Shrinks the response under [`RESPONSE_CHARS`]: context bodies first (down to nothing but their ids),
    /// then hit bodies; identifying fields are never dropped.
    pub fn bound(&mut self, terms: &[String]) {
        for limit in [600, 300, 120, 0] {
            if self.size() <= RESPONSE_CHARS {
                return;
            }
            for h in &mut self.results {
                for c in &mut h.context {
                    if !c.is_match {
                        c.content = cut_around(&c.content, terms, limit);
                    }
                }
            }
        }
        for limit in [1000, 500, 200] {
            if self.size() <= RESPONSE_CHARS {
                return;
            }
            for h in &mut self.results {
                h.matched_message.content = cut_around(&h.matched_message.content, terms, limit);
                for c in &mut h.context {
                    if c.is_match {
                        c.content = cut_around(&c.content, terms, limit);
                    }
                }
            }
        }
    }
}
