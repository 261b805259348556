//! Fusion: the lexical and semantic evidence of a query made one ranking — the weighted sum or reciprocal-rank
//! fusion of the two, the priors of where an answer is unlikely to be ([`super::prior`]), the share an answer
//! inherits from the message before it, the share a hit gains of its session's other evidence, the floor for weak
//! hits — and copies of one text collapsed to one hit.

use super::prior::Rule;
use super::{Fusion, NEXT_SHARE, SESSION_SHARE, Scored, SearchParams, params, same_window};
use crate::index::Snapshot;
use rustc_hash::FxHashMap;
use std::hash::Hasher;

/// The evidence a query has, gathered once per search: lexical matches and the best semantic candidates.
pub(super) struct Evidence {
    /// BM25 score per matching eligible message.
    pub(super) lexical: FxHashMap<u32, f32>,
    /// The same, best first.
    pub(super) lex_sorted: Vec<(u32, f32)>,
    /// The best semantic candidates (by the scan's first, approximate scores).
    pub(super) sem_top: Vec<u32>,
    /// Rank fusion only: every message's semantic rank.
    pub(super) sem_rank: FxHashMap<u32, usize>,
    /// Rank fusion only: every lexical match's rank.
    pub(super) lex_rank: FxHashMap<u32, usize>,
    /// Weighted fusion only: every candidate's prior (see [`super::prior::prior`]), read once per search though the
    /// ranking is fused twice (before and after the exact re-scoring).
    pub(super) priors: FxHashMap<u32, f32>,
    /// The side of a dialogue that speaks to the person the query names, if one was found
    /// ([`super::prior::QueryIntent::read_the_candidates`]).
    pub(super) other_side: Option<super::prior::Side>,
    /// Semantic candidates written in the time the query names, which is evidence the query's words cannot show:
    /// they stay candidates down to `timed` (see [`super::TIMED_MARGIN`]).
    pub(super) in_named_time: rustc_hash::FxHashSet<u32>,
    /// The semantic threshold of a message in `in_named_time` (`super::timed_threshold`), under `p.threshold`
    /// whenever that set has a message.
    pub(super) timed: f32,
}

impl Evidence {
    /// The score the relative floor judges hit `s` by: its fused score without its session's share (see
    /// [`add_session_evidence`]), and without the factor of being on the other side of a dialogue when its prior
    /// carries that factor — such a message is moved down, not cut, since the answer is often right before or
    /// after it (the question it asks, the reaction to it) and its context window shows that.
    pub(super) fn floor_score(&self, snap: &Snapshot, s: &Scored) -> f32 {
        let own = s.score - s.session_gain;
        let demoted = self.other_side.is_some_and(|side| {
            self.priors.contains_key(&s.message)
                && side == super::prior::Side::of(snap, s.message as usize)
        });
        if demoted {
            own / super::prior::SAID_BY_THE_OTHER
        } else {
            own
        }
    }

    /// Every candidate's fused score given each message's semantic score (`semantic`, `-inf` for none; empty
    /// without a query vector), with the answers' inherited share; best first.
    pub(super) fn fuse(
        &self,
        snap: &Snapshot,
        p: &SearchParams,
        ok: &[bool],
        semantic: &[f32],
    ) -> Vec<Scored> {
        let sem = |m: u32| semantic.get(m as usize).copied().filter(|s| s.is_finite());
        let max_lex = self.lex_sorted.first().map_or(1.0, |x| x.1).max(1e-6);
        // A message not embedded yet (the second pass has not reached it) has no semantic evidence either way: it is
        // given the median semantic score of the lexical matches that have some, so that it ranks by its words among
        // them instead of sinking below every embedded match.
        let imputed = if snap.messages_waiting > 0 && !semantic.is_empty() {
            let mut known: Vec<f32> = self
                .lex_sorted
                .iter()
                .filter_map(|(m, _)| sem(*m))
                .map(|s| s.max(0.0))
                .collect();
            known.sort_by(f32::total_cmp);
            known.get(known.len() / 2).copied().unwrap_or(0.0)
        } else {
            0.0
        };
        // Candidates: every lexical match, plus the best semantic ones above the threshold (above `timed` for one
        // written in the named time).
        let mut candidates: Vec<u32> = self.lex_sorted.iter().map(|(m, _)| *m).collect();
        candidates.extend(self.sem_top.iter().copied().filter(|m| {
            let floor = if self.in_named_time.contains(m) {
                self.timed
            } else {
                p.threshold
            };
            sem(*m).is_some_and(|s| s >= floor) && !self.lexical.contains_key(m)
        }));
        let w = p
            .lexical_weight
            .unwrap_or_else(|| params::default_lexical_weight(&p.query));
        let mut out: Vec<Scored> = candidates
            .into_iter()
            .filter_map(|m| {
                let measured = sem(m).map(|s| s.max(0.0));
                let s = match measured {
                    Some(s) => s,
                    None if !snap.is_embedded(m as usize) => imputed,
                    None => 0.0,
                };
                let l = self.lexical.get(&m).copied().unwrap_or(0.0);
                // A message that asks (or that the query rules out) is rarely the evidence: the answer after it is.
                let prior = self.priors.get(&m).copied().unwrap_or(1.0);
                let score = prior
                    * match p.fusion {
                        Fusion::Weighted => w * (l / max_lex) + (1.0 - w) * s,
                        Fusion::Rrf => {
                            let r = |rank: Option<&usize>| {
                                rank.map_or(0.0, |r| 1.0 / (60.0 + *r as f32 + 1.0))
                            };
                            r(self.lex_rank.get(&m)) + r(self.sem_rank.get(&m))
                        }
                        Fusion::Semantic => {
                            if s < p.threshold {
                                return None;
                            }
                            s
                        }
                        Fusion::Lexical => {
                            if l <= 0.0 {
                                return None;
                            }
                            l
                        }
                    };
                Some(Scored {
                    message: m,
                    semantic: measured.unwrap_or(0.0),
                    lexical: l,
                    score,
                    session_gain: 0.0,
                    rank: 0,
                })
            })
            .collect();
        if p.fusion == Fusion::Weighted {
            // The message after a candidate — its answer, a tool's output, a subagent's report — inherits a share
            // of the candidate's score: questions are often worded like the message that asked, not like the one
            // that answered.
            let mut at: FxHashMap<u32, usize> = out
                .iter()
                .enumerate()
                .map(|(k, s)| (s.message, k))
                .collect();
            let base: Vec<(u32, f32)> = out.iter().map(|s| (s.message, s.score)).collect();
            for (m, sc) in base {
                let n = m as usize + 1;
                if n >= snap.messages.len()
                    || !ok[n]
                    || !same_window(&snap.messages[m as usize], &snap.messages[n])
                {
                    continue;
                }
                let add = NEXT_SHARE * sc;
                match at.get(&(n as u32)) {
                    Some(&k) => out[k].score += add,
                    None => {
                        // Not a candidate of its own: it must still have evidence of its own (no noise hits).
                        let sv = sem(n as u32).unwrap_or(0.0).max(0.0);
                        if sv < p.threshold {
                            continue;
                        }
                        at.insert(n as u32, out.len());
                        out.push(Scored {
                            message: n as u32,
                            semantic: sv,
                            lexical: 0.0,
                            score: (1.0 - w) * sv + add,
                            session_gain: 0.0,
                            rank: 0,
                        });
                    }
                }
            }
        }
        if p.fusion == Fusion::Weighted && !p.without_rules.contains(&Rule::SessionEvidence) {
            add_session_evidence(snap, &mut out);
        }
        out.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| {
                    snap.messages[b.message as usize]
                        .timestamp_ms
                        .cmp(&snap.messages[a.message as usize].timestamp_ms)
                })
                .then_with(|| a.message.cmp(&b.message))
        });
        out
    }
}

/// Each hit gains [`SESSION_SHARE`] of the best score among the *other* hits of its session (subagents included):
/// of two equal matches, the one whose session has more to say about the query goes first, while a hit alone in
/// its session keeps its score. Scores are read before any is raised, so the order of hits does not matter.
fn add_session_evidence(snap: &Snapshot, out: &mut [Scored]) {
    // Per session, its best and second-best score (a tie for best counts as second too).
    let mut top: FxHashMap<u32, (f32, f32)> = FxHashMap::default();
    for s in out.iter() {
        let t = top
            .entry(snap.messages[s.message as usize].session)
            .or_insert((f32::NEG_INFINITY, f32::NEG_INFINITY));
        if s.score > t.0 {
            *t = (s.score, t.0);
        } else if s.score > t.1 {
            t.1 = s.score;
        }
    }
    for s in out.iter_mut() {
        let (best, second) = top[&snap.messages[s.message as usize].session];
        let other = if s.score >= best { second } else { best };
        if other.is_finite() {
            s.session_gain = SESSION_SHARE * other.max(0.0);
            s.score += s.session_gain;
        }
    }
}

/// Copies are recognised by their first this many bytes (a hand-back may carry a trailer the report lacks).
const COPY_PREFIX_BYTES: usize = 1000;
/// Only the best this many hits are compared (reading a text costs a page of the mapped file).
const COPY_CANDIDATES: usize = 200;
/// Texts shorter than this are never collapsed as copies: a short line ("ok", "Continue") said twice is two events.
const COPY_MIN_BYTES: usize = 200;

/// One hit per text said twice: a subagent's report and its hand-back in the parent (`[tool result] ` + the
/// same text), a file read twice. The copies' best score stays at the best copy's place in the ranking; the
/// message shown is the earliest copy, where the text was first said.
pub(super) fn collapse_copies(snap: &Snapshot, ranked: Vec<Scored>) -> Vec<Scored> {
    let mut seen: FxHashMap<u64, usize> = FxHashMap::default();
    let mut out: Vec<Scored> = Vec::with_capacity(ranked.len());
    for (r, s) in ranked.into_iter().enumerate() {
        if r >= COPY_CANDIDATES {
            out.push(s);
            continue;
        }
        let bytes = crate::index::render::without_calls(snap.keyword_bytes(s.message as usize));
        let body = bytes
            .strip_prefix(crate::index::render::TOOL_RESULT_MARK.as_bytes())
            .unwrap_or(bytes)
            .trim_ascii();
        if body.len() < COPY_MIN_BYTES {
            out.push(s);
            continue;
        }
        let mut h = rustc_hash::FxHasher::default();
        h.write(&body[..body.len().min(COPY_PREFIX_BYTES)]);
        let h = h.finish();
        match seen.get(&h) {
            Some(&k) => {
                let kept = &mut out[k];
                let t = |m: u32| snap.messages[m as usize].timestamp_ms.unwrap_or(i64::MAX);
                if t(s.message) < t(kept.message) {
                    kept.message = s.message;
                }
            }
            None => {
                seen.insert(h, out.len());
                out.push(s);
            }
        }
    }
    out
}
