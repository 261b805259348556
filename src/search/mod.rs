//! Hybrid search over the index: lexical (BM25) and semantic (cosine) evidence fused into one score per
//! message, filters, context windows merged per session window, pagination, a bounded response.

pub mod params;
pub mod response;

pub use params::{Fusion, SearchParams, parse_bound};
pub use response::{SearchHit, SearchResponse};

use crate::embed::Embedder;
use crate::index::{Snapshot, StoredMessage};
use crate::transcript::is_within;
use response::{BODY_CHARS, ContextMessage, IndexInfo, MatchedMessage, Scores, cut_around};
use std::collections::HashMap;

/// Lexical candidates fetched before filtering.
const LEXICAL_CANDIDATES: usize = 2000;
/// Semantic candidates kept per query (the best by cosine).
const SEMANTIC_CANDIDATES: usize = 500;
/// Weight of the lexical score in [`Fusion::Weighted`] (tuned on the dev set; see the README).
pub const LEXICAL_WEIGHT: f32 = 0.4;

fn iso(ms: Option<i64>) -> Option<String> {
    ms.and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// A session window of one conversation: (session id, agent id, window).
type WindowKey<'a> = (&'a str, Option<&'a str>, u32);

/// A ranked message before merging.
#[derive(Debug, Clone, Copy)]
struct Scored {
    message: u32,
    semantic: f32,
    lexical: f32,
    score: f32,
}

/// Messages that pass the filters.
fn eligible(snap: &Snapshot, p: &SearchParams) -> Vec<bool> {
    // The excluded session's latest window.
    let latest_window = p.exclude_session.as_ref().map(|id| {
        snap.messages
            .iter()
            .filter(|m| &m.session_id == id)
            .map(|m| m.window)
            .max()
            .unwrap_or(0)
    });
    let after = p.after.map(|t| t.timestamp_millis());
    let before = p.before.map(|t| t.timestamp_millis());
    snap.messages
        .iter()
        .map(|m| {
            if let Some(project) = &p.project
                && !is_within(&m.project, project)
            {
                return false;
            }
            if !p.include_subagents && m.agent_id.is_some() {
                return false;
            }
            if let (Some(id), Some(w)) = (&p.exclude_session, latest_window)
                && &m.session_id == id
                && m.window == w
            {
                return false;
            }
            let t = m.timestamp_ms;
            if after.is_some_and(|a| t.is_none_or(|t| t < a))
                || before.is_some_and(|b| t.is_none_or(|t| t >= b))
            {
                return false;
            }
            true
        })
        .collect()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Ranks eligible messages for the query; returns them best first.
fn rank(snap: &Snapshot, p: &SearchParams, query_vec: Option<&[f32]>, ok: &[bool]) -> Vec<Scored> {
    let mut semantic: HashMap<u32, f32> = HashMap::new();
    if let Some(q) = query_vec {
        for c in &snap.chunks {
            if ok[c.message as usize] {
                let s = dot(q, snap.vector(c));
                let e = semantic.entry(c.message).or_insert(f32::MIN);
                *e = e.max(s);
            }
        }
    }
    let mut lexical: HashMap<u32, f32> = HashMap::new();
    if let Some((lex, reader)) = &snap.lexical {
        for (gid, score) in lex
            .search(reader, &p.query, LEXICAL_CANDIDATES)
            .unwrap_or_default()
        {
            if let Some(i) = snap.message_by_gid(gid)
                && ok[i as usize]
            {
                lexical.insert(i, score);
            }
        }
    }
    // Candidates: every lexical match, plus the best semantic ones above the threshold.
    let mut sem_sorted: Vec<(u32, f32)> = semantic.iter().map(|(k, v)| (*k, *v)).collect();
    sem_sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
    let sem_rank: HashMap<u32, usize> = sem_sorted
        .iter()
        .enumerate()
        .map(|(r, (m, _))| (*m, r))
        .collect();
    let mut lex_sorted: Vec<(u32, f32)> = lexical.iter().map(|(k, v)| (*k, *v)).collect();
    lex_sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
    let lex_rank: HashMap<u32, usize> = lex_sorted
        .iter()
        .enumerate()
        .map(|(r, (m, _))| (*m, r))
        .collect();
    let max_lex = lex_sorted.first().map_or(1.0, |x| x.1).max(1e-6);
    let mut candidates: Vec<u32> = lexical.keys().copied().collect();
    candidates.extend(
        sem_sorted
            .iter()
            .take(SEMANTIC_CANDIDATES)
            .filter(|(m, s)| *s >= p.threshold && !lexical.contains_key(m))
            .map(|(m, _)| *m),
    );
    let mut out: Vec<Scored> = candidates
        .into_iter()
        .filter_map(|m| {
            let s = semantic.get(&m).copied().unwrap_or(0.0).max(0.0);
            let l = lexical.get(&m).copied().unwrap_or(0.0);
            let score = match p.fusion {
                Fusion::Weighted => p.lexical_weight * (l / max_lex) + (1.0 - p.lexical_weight) * s,
                Fusion::Rrf => {
                    let r =
                        |rank: Option<&usize>| rank.map_or(0.0, |r| 1.0 / (60.0 + *r as f32 + 1.0));
                    r(lex_rank.get(&m)) + r(sem_rank.get(&m))
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
                semantic: s,
                lexical: l,
                score,
            })
        })
        .collect();
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

/// Same conversation (session, agent) and same window.
fn same_window(a: &StoredMessage, b: &StoredMessage) -> bool {
    a.session_id == b.session_id && a.agent_id == b.agent_id && a.window == b.window
}

/// The context range (indices into `snap.messages`) around message `i`: up to `n` neighbours each side within
/// its session window. Relies on the snapshot grouping messages by session, conversation and order.
fn context_range(snap: &Snapshot, i: usize, n: usize) -> (usize, usize) {
    let m = &snap.messages[i];
    let mut lo = i;
    while lo > 0 && i - lo < n && same_window(&snap.messages[lo - 1], m) {
        lo -= 1;
    }
    let mut hi = i;
    while hi + 1 < snap.messages.len() && hi - i < n && same_window(&snap.messages[hi + 1], m) {
        hi += 1;
    }
    (lo, hi)
}

/// Runs a search on a snapshot. `embedder` is optional so a lexical-only search needs no model.
pub fn search(
    snap: &Snapshot,
    embedder: Option<&Embedder>,
    p: &SearchParams,
) -> Result<SearchResponse, String> {
    p.validate()?;
    let query_vec = match (embedder, p.fusion) {
        (_, Fusion::Lexical) | (None, _) => None,
        (Some(e), _) => Some(e.embed(&[&p.query]).map_err(|e| e.to_string())?[0]),
    };
    search_with_vector(snap, query_vec.as_ref(), p)
}

/// [`search`] with the query already embedded (`None`: lexical only), so the ranking can be timed apart from
/// the query embedding.
pub fn search_with_vector(
    snap: &Snapshot,
    query_vec: Option<&crate::embed::Vector>,
    p: &SearchParams,
) -> Result<SearchResponse, String> {
    p.validate()?;
    let ok = eligible(snap, p);
    let ranked = rank(snap, p, query_vec.map(|v| &v[..]), &ok);
    // Merge: a hit whose context overlaps an earlier (better) hit's in the same session window is folded in.
    let mut taken: Vec<(Scored, (usize, usize))> = Vec::new();
    let mut ranges_by_window: HashMap<WindowKey, Vec<(usize, usize)>> = HashMap::new();
    for s in ranked {
        let i = s.message as usize;
        let m = &snap.messages[i];
        let range = context_range(snap, i, p.context);
        let key = (m.session_id.as_str(), m.agent_id.as_deref(), m.window);
        let ranges = ranges_by_window.entry(key).or_default();
        if ranges
            .iter()
            .any(|&(lo, hi)| range.0 <= hi && lo <= range.1)
        {
            continue;
        }
        ranges.push(range);
        taken.push((s, range));
    }
    let total = taken.len();
    let terms: Vec<String> = snap
        .lexical
        .as_ref()
        .map(|(l, _)| l.query_terms(&p.query))
        .unwrap_or_default();
    let raw_terms: Vec<String> = crate::index::terms::terms(&p.query)
        .into_iter()
        .map(|t| t.2)
        .collect();
    let results = taken
        .iter()
        .skip(p.offset)
        .take(p.max_results)
        .map(|(s, (lo, hi))| {
            let i = s.message as usize;
            let m = &snap.messages[i];
            let context = (*lo..=*hi)
                .map(|j| {
                    let c = &snap.messages[j];
                    ContextMessage {
                        uuid: c.uuid.clone(),
                        role: c.role.clone(),
                        kind: c.kind.clone(),
                        timestamp: iso(c.timestamp_ms),
                        content: cut_around(
                            &c.content,
                            &raw_terms,
                            if j == i { BODY_CHARS } else { 1000 },
                        ),
                        is_match: j == i,
                    }
                })
                .collect();
            SearchHit {
                matched_message: MatchedMessage {
                    uuid: m.uuid.clone(),
                    session_id: m.session_id.clone(),
                    project: m.project.clone(),
                    git_branch: m.git_branch.clone(),
                    role: m.role.clone(),
                    kind: m.kind.clone(),
                    timestamp: iso(m.timestamp_ms),
                    window: m.window,
                    is_subagent: m.agent_id.is_some(),
                    agent_id: m.agent_id.clone(),
                    content: cut_around(&m.content, &raw_terms, BODY_CHARS),
                },
                score: s.score,
                scores: Scores {
                    semantic: s.semantic,
                    lexical: s.lexical,
                },
                context,
            }
        })
        .collect();
    let mut resp = SearchResponse {
        results,
        query: p.query.clone(),
        total_matches: total,
        offset: p.offset,
        has_more: p.offset + p.max_results < total,
        excluded_sessions: snap.excluded_sessions,
        index: IndexInfo {
            messages: snap.messages.len(),
            pending_files: 0,
            updated_at: iso(Some(snap.manifest.updated_at_ms).filter(|t| *t > 0)),
        },
        note: None,
    };
    let _ = terms;
    resp.bound(&raw_terms);
    Ok(resp)
}
