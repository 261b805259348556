//! Hybrid search over the index: lexical (BM25) and semantic (cosine) evidence fused into one score per
//! message, filters, context windows merged per session window, pagination, a bounded response.

pub mod compact;
pub mod count;
pub mod explain;
mod filters;
mod fusion;
pub mod grouped;
mod meaning;
pub mod params;
pub mod passage;
pub mod prior;
pub mod reason;
pub mod response;
pub mod scan;
pub mod script;
pub mod when;

pub use params::{
    Fusion, MAX_CONTEXT, MAX_RESULTS, RELATIVE_FLOOR, SearchError, SearchParams,
    default_lexical_weight, parse_bound, parse_since,
};
pub use prior::{ASK_PRIOR, QUESTION_PRIOR, QueryIntent, Rule};
pub use response::{SearchHit, SearchResponse};

use crate::embed::Embedder;
use crate::index::shown::shown;
use crate::index::{ChunkEmbedder, MessageRow, Snapshot};
use filters::{eligible, machine_of, out_of_scope};
use fusion::{Evidence, collapse_copies};
use response::{BODY_CHARS, ContextMessage, IndexInfo, MatchedMessage, Scores, cut_around};
use rustc_hash::FxHashMap;
use std::collections::HashMap;

/// Lexical candidates fetched before filtering.
const LEXICAL_CANDIDATES: usize = 2000;
/// Semantic candidates kept per query (the best by cosine).
const SEMANTIC_CANDIDATES: usize = 500;
/// Share of a candidate's score the message after it inherits (chosen on both dev benchmarks; see the README).
pub const NEXT_SHARE: f32 = 0.1;
/// Share of the best other hit of its session that a hit gains: a session that says much about the query is more
/// likely the one that answers it than a session with one stray match (chosen with folds over LoCoMo's
/// conversations and the coding set's histories; see docs/search.md, "The session's other evidence").
pub const SESSION_SHARE: f32 = 0.2;
/// A hit with at least this cosine is kept under [`SearchParams::relative_floor`]: a strong semantic match is
/// evidence of its own (chosen on both dev benchmarks with the floor; see the README).
pub const SEMANTIC_KEEP: f32 = 0.45;
/// Weight of the lexical score in [`Fusion::Weighted`] (tuned on the dev set; see the README).
pub const LEXICAL_WEIGHT: f32 = 0.4;
/// How far under [`SearchParams::threshold`] the cosine of a message written in the time the query names may
/// fall and the message still be a candidate: its time is evidence the query's words cannot show ("where did we travel in July?" is
/// answered by a July message that names a city and no word of the question). Chosen with
/// folds over LoCoMo's conversations, at the smaller of the two noise costs measured (docs/search.md, "A message
/// written in the named time").
pub const TIMED_MARGIN: f32 = 0.15;

fn iso(ms: Option<i64>) -> Option<String> {
    ms.and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
}

/// A session window of one conversation: (session, agent, window) symbols.
type WindowKey = (u32, u32, u32);

/// A ranked message before merging.
#[derive(Debug, Clone, Copy)]
struct Scored {
    message: u32,
    semantic: f32,
    lexical: f32,
    score: f32,
    /// What of `score` came from the other hits of its session ([`SESSION_SHARE`]).
    session_gain: f32,
    /// Position in the ranking (0 = best), after ties are broken.
    rank: u32,
}

/// What the BM25 side found: eligible messages matching the query's words, by score (the map, and the same
/// best first), and what the keyword side tells the reader (see [`KeywordNotes`]).
type LexicalMatches = (FxHashMap<u32, f32>, Vec<(u32, f32)>, KeywordNotes);

/// What the keyword side of a search tells the reader: why the keyword index could not be searched, if it
/// could not, and the query's words read as another because no message contains them (a typo).
#[derive(Debug, Default)]
struct KeywordNotes {
    failure: Option<String>,
    corrections: Vec<crate::index::spelling::Correction>,
}

/// How the best keyword matches write the indexed term `term` (a stem), for a note that shows a word: the
/// first of the best few matches that has a word with that stem.
fn written_as(snap: &Snapshot, lex_sorted: &[(u32, f32)], term: &str) -> Option<String> {
    lex_sorted
        .iter()
        .take(WRITTEN_AS_MATCHES)
        .find_map(|(i, _)| {
            crate::index::lexical::surface_word(&snap.keyword_text(*i as usize), term)
        })
}

/// How many of the best keyword matches [`written_as`] reads for the word a stem was written as: any one that
/// matched on the corrected term has it, and most of the best do.
const WRITTEN_AS_MATCHES: usize = 20;

/// Eligible messages matching the query's words, by BM25 score.
/// `embedder`'s vocabulary tells a typo from a word the history lacks (see [`crate::index::spelling`]).
fn lexical_matches(
    snap: &Snapshot,
    p: &SearchParams,
    ok: &[bool],
    embedder: Option<&dyn ChunkEmbedder>,
) -> LexicalMatches {
    let mut lexical: FxHashMap<u32, f32> = FxHashMap::default();
    let mut lex_sorted: Vec<(u32, f32)> = Vec::new();
    let mut notes = KeywordNotes::default();
    if let Some((lex, reader)) = &snap.lexical {
        // The filters' messages only, so other projects' best matches do not take the candidates' places; no
        // scope when they leave nothing out.
        let scope = (!ok.iter().all(|&k| k)).then(|| {
            crate::index::lexical::Scope::of(
                ok.iter()
                    .enumerate()
                    .filter(|(_, k)| **k)
                    .map(|(i, _)| snap.messages[i].gid),
            )
        });
        let (found, corrections) = lex
            .search(
                reader,
                &p.query,
                LEXICAL_CANDIDATES,
                embedder
                    .map(|e| move |w: &str| e.knows_word(w))
                    .as_ref()
                    .map(|f| f as &dyn Fn(&str) -> bool),
                scope.as_ref(),
            )
            .unwrap_or_else(|e| {
                notes.failure = Some(format!("the keyword index could not be searched ({e})"));
                Default::default()
            });
        notes.corrections = corrections;
        for (gid, score) in found {
            if let Some(i) = snap.message_by_gid(gid)
                && ok[i as usize]
                && lexical.insert(i, score).is_none()
            {
                lex_sorted.push((i, score));
            }
        }
    }
    lex_sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
    for c in &mut notes.corrections {
        c.written = written_as(snap, &lex_sorted, &c.searched);
    }
    (lexical, lex_sorted, notes)
}

/// Hits ranked by the int8 scan whose place this many best ones (and the messages they inherit from) are
/// re-scored exactly from the f32 rows and ranked again.
const RESCORED: usize = 200;

/// Each message's place in `sorted` (best first) when the fusion is by rank, which needs every message's rank;
/// empty for the other fusions.
fn rrf_ranks(p: &SearchParams, sorted: &[(u32, f32)]) -> FxHashMap<u32, usize> {
    if p.fusion != Fusion::Rrf {
        return FxHashMap::default();
    }
    sorted
        .iter()
        .enumerate()
        .map(|(r, (m, _))| (*m, r))
        .collect()
}

/// The best semantic candidates of a scan, without sorting every message: their ranks (rank fusion only) and the
/// messages, best first. Rank fusion ranks them all; the other fusions need only those that can clear `timed`
/// (the threshold, or the lower one of a message written in the time the query names: [`timed_threshold`]) less
/// a margin for the int8 scan's error, at most [`SEMANTIC_CANDIDATES`].
fn semantic_candidates(
    p: &SearchParams,
    timed: f32,
    scan: Option<&scan::SemanticScan>,
) -> (FxHashMap<u32, usize>, Vec<u32>) {
    let floor = candidate_floor(p, timed);
    let mut sem_top: Vec<(u32, f32)> = scan
        .map(|sc| {
            sc.best
                .iter()
                .enumerate()
                .filter(|(_, s)| s.is_finite() && **s >= floor)
                .map(|(m, s)| (m as u32, *s))
                .collect()
        })
        .unwrap_or_default();
    let by_score = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if p.fusion != Fusion::Rrf && sem_top.len() > SEMANTIC_CANDIDATES {
        sem_top.select_nth_unstable_by(SEMANTIC_CANDIDATES, by_score);
        sem_top.truncate(SEMANTIC_CANDIDATES);
    }
    sem_top.sort_by(by_score);
    let ranks = rrf_ranks(p, &sem_top);
    let best = sem_top
        .iter()
        .take(SEMANTIC_CANDIDATES)
        .map(|(m, _)| *m)
        .collect();
    (ranks, best)
}

/// The semantic threshold for a message written in the time the query names ([`TIMED_MARGIN`] under the
/// threshold): the threshold itself when the query names no time, or the fusion or the rules leave time out.
fn timed_threshold(p: &SearchParams) -> f32 {
    if p.fusion != Fusion::Weighted
        || p.without_rules.contains(&Rule::OutsideNamedTime)
        || when::readings(&p.query, chrono::Utc::now()).is_empty()
    {
        return p.threshold;
    }
    (p.threshold - TIMED_MARGIN).max(0.0)
}

/// The lowest semantic score a message may have to be a semantic candidate: `timed` (see [`timed_threshold`])
/// less a margin for the int8 scan's error; none under rank fusion, which ranks every message.
fn candidate_floor(p: &SearchParams, timed: f32) -> f32 {
    if p.fusion == Fusion::Rrf {
        f32::NEG_INFINITY
    } else {
        timed - scan::INT8_ERROR
    }
}

/// Which copy of the vectors the scan reads: the f32 rows when asked; the 4-bit rows first over a large history
/// under the weighted fusion, which reads only the best [`SEMANTIC_CANDIDATES`] above the floor of
/// [`semantic_candidates`] (and the keyword matches, refined apart); the int8 rows otherwise (rank fusion ranks
/// every message).
pub(super) fn scan_precision(snap: &Snapshot, p: &SearchParams, timed: f32) -> scan::Precision {
    if p.exact_scan {
        scan::Precision::Exact
    } else if p.fusion == Fusion::Weighted && snap.chunks.len() >= p.prefilter_from {
        scan::Precision::Prefiltered {
            floor: candidate_floor(p, timed),
            keep: SEMANTIC_CANDIDATES,
        }
    } else {
        scan::Precision::Int8
    }
}

/// Ranks eligible messages for the query; returns them best first, and what the keyword side tells the reader
/// (why it is missing from the ranking, if it is; the words read as typos).
fn rank(
    snap: &Snapshot,
    p: &SearchParams,
    query_vec: Option<&[f32]>,
    embedder: Option<&dyn ChunkEmbedder>,
    ok: &[bool],
) -> (Vec<Scored>, KeywordNotes) {
    // The vector scan and the BM25 search are independent: the search runs on a thread of its own (not rayon's
    // pool, which a background embedding pass may keep busy) while this one scans.
    let timed = timed_threshold(p);
    let precision = scan_precision(snap, p, timed);
    let (mut scan, (lexical, lex_sorted, keyword_notes)) = std::thread::scope(|s| {
        let words = s.spawn(|| lexical_matches(snap, p, ok, embedder));
        let scan = query_vec.map(|q| scan::SemanticScan::run(snap, q, ok, precision));
        let words = words.join().unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            (
                FxHashMap::default(),
                Vec::new(),
                KeywordNotes {
                    failure: Some(format!("the keyword search failed (panic: {why})")),
                    corrections: Vec::new(),
                },
            )
        });
        (scan, words)
    });
    if let Some(why) = &keyword_notes.failure {
        tracing::error!("search for {:?}: {why}", p.query);
        // The next update takes the full path, which checks the lexical index and rebuilds it.
        crate::index::report_damage(&snap.dir, why);
    }
    // A query in a language the model reads too loosely: every hit must share a word with it.
    let raised;
    let (p, timed) = if script::meaning_vouches(p) {
        (p, timed)
    } else {
        raised = SearchParams {
            threshold: f32::INFINITY,
            ..p.clone()
        };
        (&raised, f32::INFINITY)
    };
    let (sem_rank, mut best_semantic) = semantic_candidates(p, timed, scan.as_ref());
    // Every candidate `fuse` scores is a lexical match or one of these semantic ones.
    let reading = if p.fusion == Fusion::Weighted {
        meaning::read(
            snap,
            p,
            embedder,
            ok,
            &lex_sorted,
            timed,
            &mut scan,
            &mut best_semantic,
        )
    } else {
        meaning::Reading::default()
    };
    // Fusion reads the keyword matches whatever their semantic place, and the message after each candidate (it
    // may inherit a share and become a hit of its own): under a prefiltered scan they too are scored in int8
    // (from the vector of the last scan, which `meaning::read` may have redone), so the ranking reads no 4-bit
    // score.
    if let (Some(q), Some(sc)) = (
        reading.meaning_vec.as_ref().map(|v| &v[..]).or(query_vec),
        scan.as_mut(),
    ) {
        let lex = lex_sorted.iter().map(|(m, _)| *m);
        let next = lex
            .clone()
            .chain(best_semantic.iter().copied())
            .map(|m| m + 1)
            .filter(|n| (*n as usize) < snap.messages.len());
        sc.refine(snap, q, lex.chain(next));
        // A message of the named time is a candidate from `timed` on: where the int8 score may fall on either side
        // of it, the exact one decides, as the f32 scan would.
        for &m in &reading.in_named_time {
            if (sc.best[m as usize] - timed).abs() < scan::INT8_ERROR {
                sc.rescore(snap, q, m);
            }
        }
    }
    let lex_rank = rrf_ranks(p, &lex_sorted);
    let ev = Evidence {
        lexical,
        lex_sorted,
        sem_top: best_semantic,
        sem_rank,
        lex_rank,
        priors: reading.priors,
        other_side: reading.other_side,
        in_named_time: reading.in_named_time,
        timed,
    };
    let mut out = ev.fuse(snap, p, ok, scan.as_ref().map_or(&[], |sc| &sc.best));
    // The best hits, and the messages whose score they inherit a share of, are re-scored from the exact vectors
    // and everything is ranked again (the int8 scores of the rest are within a few thousandths).
    let query_vec = reading.meaning_vec.as_ref().map(|v| &v[..]).or(query_vec);
    if let (Some(q), Some(sc)) = (query_vec, scan.as_mut())
        && !p.exact_scan
    {
        for s in out.iter().take(RESCORED) {
            sc.rescore(snap, q, s.message);
            if s.message > 0 {
                sc.rescore(snap, q, s.message - 1);
            }
        }
        out = ev.fuse(snap, p, ok, &sc.best);
    }
    out = collapse_copies(snap, out);
    if p.fusion == Fusion::Weighted && p.relative_floor > 0.0 {
        // Weak hits go: a match scoring under a fraction of the best one, without a strong semantic match of its
        // own, is what made results long without adding evidence (a name that occurs in every message of a
        // conversation, a stray common word).
        // Both judged by their own evidence, without their session's share: a session's share moves hits
        // within the ranking, it does not make a weak hit evidence (it made answers longer without adding any).
        let best = out
            .iter()
            .map(|s| s.score - s.session_gain)
            .fold(0.0, f32::max);
        out.retain(|s| {
            let own = ev.floor_score(snap, s);
            own >= p.relative_floor * best || s.semantic >= SEMANTIC_KEEP
        });
    }
    for (r, s) in out.iter_mut().enumerate() {
        s.rank = r as u32;
    }
    (out, keyword_notes)
}

/// Same conversation (session, agent) and same window.
fn same_window(a: &MessageRow, b: &MessageRow) -> bool {
    a.session == b.session && a.agent == b.agent && a.window == b.window
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

/// Hits of one session window shown together: their context ranges overlapped. `hits[0]` is the best; the
/// context runs from `lo` to `hi` (indices into `snap.messages`).
struct Group {
    hits: Vec<Scored>,
    lo: usize,
    hi: usize,
}

/// The most messages one result's context may span: two hits' worth of context (three made the responses so
/// long that the output bound had to drop context, and evidence with it: measured on LoCoMo dev, evidence in the
/// response .899 with three, .916 with two, .883 with one). A hit whose range would
/// stretch a result further starts a result of its own (its context then overlaps the other's), so that no hit
/// is ever dropped and no result grows without bound.
fn max_span(context: usize) -> usize {
    2 * (2 * context + 1)
}

/// Groups ranked hits into results, best first: a hit whose context range overlaps a result's in the same session
/// window joins it (the union of ranges, within [`max_span`]); results that come to overlap are joined too. Every
/// hit ends in exactly one result, and a result ranks by its best hit.
fn merge_hits(snap: &Snapshot, ranked: Vec<Scored>, context: usize) -> Vec<Group> {
    let mut groups: Vec<Option<Group>> = Vec::new();
    let mut by_window: HashMap<WindowKey, Vec<usize>> = HashMap::new();
    let limit = max_span(context);
    let fits = |lo: usize, hi: usize| hi + 1 - lo <= limit;
    for s in ranked {
        let i = s.message as usize;
        let m = &snap.messages[i];
        let (lo, hi) = context_range(snap, i, context);
        let ids = by_window.entry((m.session, m.agent, m.window)).or_default();
        let joined = ids.iter().copied().find(|&g| {
            let g = groups[g].as_ref().expect("live group");
            lo <= g.hi && g.lo <= hi && fits(lo.min(g.lo), hi.max(g.hi))
        });
        let Some(at) = joined else {
            ids.push(groups.len());
            groups.push(Some(Group {
                hits: vec![s],
                lo,
                hi,
            }));
            continue;
        };
        {
            let g = groups[at].as_mut().expect("live group");
            g.hits.push(s);
            (g.lo, g.hi) = (g.lo.min(lo), g.hi.max(hi));
        }
        // The wider range may now overlap a later (worse) result of the window: fold it in when it fits.
        loop {
            let (glo, ghi) = groups[at]
                .as_ref()
                .map(|g| (g.lo, g.hi))
                .expect("live group");
            let other = ids.iter().copied().find(|&o| {
                o != at
                    && groups[o].as_ref().is_some_and(|g| {
                        g.lo <= ghi && glo <= g.hi && fits(g.lo.min(glo), g.hi.max(ghi))
                    })
            });
            let Some(o) = other else { break };
            let taken = groups[o].take().expect("live group");
            ids.retain(|&x| x != o);
            let g = groups[at].as_mut().expect("live group");
            g.hits.extend(taken.hits);
            (g.lo, g.hi) = (g.lo.min(taken.lo), g.hi.max(taken.hi));
        }
    }
    let mut out: Vec<Group> = groups.into_iter().flatten().collect();
    // A result ranks by its best hit; a folded-in result may have been better than the one it joined.
    for g in &mut out {
        g.hits.sort_by_key(|h| h.rank);
    }
    out.sort_by_key(|g| g.hits[0].rank);
    out
}

/// The query's words as the response bound cuts around them (lowercase).
pub fn query_terms(query: &str) -> Vec<String> {
    crate::index::terms::terms(query)
        .into_iter()
        .map(|t| t.2)
        .collect()
}

/// Runs a search on a snapshot. `embedder` is optional so a lexical-only search needs no model.
pub fn search(
    snap: &Snapshot,
    embedder: Option<&Embedder>,
    p: &SearchParams,
) -> Result<SearchResponse, SearchError> {
    p.validate()?;
    search_with_vector(
        snap,
        query_vector(embedder, p)?.as_ref(),
        embedder.map(|e| e as &dyn ChunkEmbedder),
        p,
    )
}

/// The query's vector, when the search uses one (a model, and its meaning: [`script::uses_meaning`]); apart from
/// [`search`] so that a caller can embed the query while the snapshot opens.
pub fn query_vector(
    embedder: Option<&Embedder>,
    p: &SearchParams,
) -> Result<Option<crate::embed::Vector>, SearchError> {
    match embedder {
        Some(_) if !script::uses_meaning(p) => Ok(None),
        None => Ok(None),
        Some(e) => Ok(Some(
            e.embed(&[&p.query])
                .map_err(|e| SearchError::Embed(e.to_string()))?[0],
        )),
    }
}

/// [`search`] with the query already embedded (`None`: lexical only), so the ranking can be timed apart from
/// the query embedding; `embedder` embeds what the search asks again (the query without the names of a
/// dialogue's parties), `None` when the ranking should use the query's vector alone.
pub fn search_with_vector(
    snap: &Snapshot,
    query_vec: Option<&crate::embed::Vector>,
    embedder: Option<&dyn ChunkEmbedder>,
    p: &SearchParams,
) -> Result<SearchResponse, SearchError> {
    p.validate()?;
    let ok = eligible(snap, p);
    // A query the model cannot read is ranked by its words alone, whoever embedded it.
    let unread = p.fusion == Fusion::Weighted && !script::uses_meaning(p);
    let query_vec = query_vec.filter(|_| !unread);
    let (ranked, keyword_notes) = rank(snap, p, query_vec.map(|v| &v[..]), embedder, &ok);
    let groups = merge_hits(snap, ranked, p.context);
    let total = groups.len();
    let raw_terms = query_terms(&p.query);
    let results = groups
        .iter()
        .skip(p.offset)
        .take(p.max_results)
        .map(|g| {
            let s = g.hits[0];
            let i = s.message as usize;
            let m = snap.stored(i);
            let context = (g.lo..=g.hi)
                .map(|j| {
                    let hit = g.hits.iter().find(|h| h.message as usize == j);
                    let c = if j == i { m.clone() } else { snap.stored(j) };
                    ContextMessage {
                        uuid: c.uuid.clone(),
                        role: c.role.clone(),
                        kind: c.kind.clone(),
                        timestamp: iso(c.timestamp_ms),
                        content: cut_around(
                            &shown(&c.content),
                            &raw_terms,
                            if hit.is_some() { BODY_CHARS } else { 1000 },
                        ),
                        is_match: hit.is_some(),
                        score: hit.map(|h| h.score),
                        scores: hit.map(|h| Scores {
                            semantic: h.semantic,
                            lexical: h.lexical,
                        }),
                    }
                })
                .collect();
            SearchHit {
                matched_message: MatchedMessage {
                    uuid: m.uuid.clone(),
                    person: String::new(),
                    origin: String::new(),
                    machine: machine_of(snap, &m.source, p),
                    session_id: m.session_id.clone(),
                    project: m.project.clone(),
                    git_branch: m.git_branch.clone(),
                    role: m.role.clone(),
                    kind: m.kind.clone(),
                    timestamp: iso(m.timestamp_ms),
                    window: m.window,
                    is_subagent: m.agent_id.is_some(),
                    agent_id: m.agent_id.clone(),
                    content: cut_around(&shown(&m.content), &raw_terms, BODY_CHARS),
                },
                score: s.score,
                scores: Scores {
                    semantic: s.semantic,
                    lexical: s.lexical,
                },
                matches: g.hits.len(),
                context,
            }
        })
        .collect();
    let mut resp = SearchResponse {
        several_machines: false,
        nothing_in_scope: !snap.messages.is_empty() && !ok.contains(&true),
        by_words_alone: query_vec.is_none() || !script::meaning_vouches(p),
        results,
        query: p.query.clone(),
        total_matches: total,
        offset: p.offset,
        has_more: p.offset + p.max_results < total,
        excluded_sessions: snap.excluded_sessions,
        index: IndexInfo {
            messages: snap.messages.len(),
            embedded_messages: snap.messages.len() - snap.messages_waiting,
            pending_files: 0,
            updated_at: iso(Some(snap.manifest.updated_at_ms).filter(|t| *t > 0)),
        },
        note: None,
    };
    if let Some(why) = keyword_notes.failure {
        resp.add_note(format!(
            "{why}: these results come from the semantic ranking alone"
        ));
    }
    for c in keyword_notes.corrections {
        let searched = match &c.written {
            Some(word) => format!("\"{word}\", the indexed word one typo away,"),
            None => format!(
                "the indexed word one typo away (\"{}\", as indexed)",
                c.searched
            ),
        };
        resp.add_note(format!(
            "no message has the word \"{}\": searched for {searched} instead",
            c.typed
        ));
    }
    if resp.nothing_in_scope {
        resp.add_note(out_of_scope(snap, p));
    }
    if unread && embedder.is_some() {
        resp.add_note(script::WORDS_ALONE.to_string());
    } else if query_vec.is_some() && !script::meaning_vouches(p) {
        resp.add_note(script::WORDS_REQUIRED.to_string());
    }
    resp.bound(&raw_terms, p.response_chars, "");
    Ok(resp)
}
