//! What the weighted fusion reads of a query beyond its two scores: its intent (an agent, a time, whether it asks
//! when or how many, the people it names) read from the candidates, what it means scanned for again without the
//! names of a dialogue's parties or the time it names, each candidate's prior, and the candidates written in the
//! time it names that stay under the semantic threshold. `rank` in `mod.rs` gathers the evidence and fuses it;
//! this is the step between.

use super::prior::{self, QueryIntent, Side};
use super::{Rule, SearchParams, scan, semantic_candidates, when};
use crate::index::{ChunkEmbedder, Snapshot};
use rustc_hash::{FxHashMap, FxHashSet};

/// What [`read`] found, for `fusion::Evidence`; empty for the fusions that weigh no priors.
#[derive(Default)]
pub(super) struct Reading {
    /// Each candidate's prior (`prior::prior`).
    pub(super) priors: FxHashMap<u32, f32>,
    /// The side of a dialogue that speaks to the person the query names, if one was found.
    pub(super) other_side: Option<Side>,
    /// Semantic candidates written in the time the query names: candidates down to `timed`, not the threshold
    /// (`super::TIMED_MARGIN`).
    pub(super) in_named_time: FxHashSet<u32>,
    /// The vector the query was scanned with again (without its parties or its time), if it was.
    pub(super) meaning_vec: Option<crate::embed::Vector>,
}

/// Reads the query's intent from the candidates (every lexical match, and the semantic ones the threshold keeps),
/// scans again for what it means without the parties or the time it names — replacing `scan` and
/// `best_semantic` — and returns the candidates' priors and what else `fuse` weighs. `timed` is the threshold of
/// a message written in the named time (`super::timed_threshold`).
#[allow(clippy::too_many_arguments)]
pub(super) fn read(
    snap: &Snapshot,
    p: &SearchParams,
    embedder: Option<&dyn ChunkEmbedder>,
    ok: &[bool],
    lex_sorted: &[(u32, f32)],
    timed: f32,
    scan: &mut Option<scan::SemanticScan>,
    best_semantic: &mut Vec<u32>,
) -> Reading {
    let mut intent = QueryIntent::of(&p.query, chrono::Utc::now());
    // Candidates the threshold alone would keep: what the query's intent is read from.
    let read_candidates = |intent: &mut QueryIntent, semantic: &[u32], best: &[f32]| {
        let candidates = lex_sorted
            .iter()
            .map(|(m, _)| *m)
            .chain(semantic.iter().copied().filter(|m| {
                best.get(*m as usize)
                    .is_some_and(|s| *s >= p.threshold - scan::INT8_ERROR)
            }));
        intent.date_from_the_candidates(snap, candidates.clone());
        intent.read_the_candidates(snap, candidates)
    };
    read_candidates(
        &mut intent,
        best_semantic,
        scan.as_ref().map_or(&[][..], |sc| &sc.best),
    );
    // The query names a party of the conversation or a time: what it means is scanned for again without them
    // (see `QueryIntent::without_parties` and `when::without_named_time`), and the new candidates are read
    // again.
    let on = |r: Rule| !p.without_rules.contains(&r);
    let untimed = on(Rule::TimeUnnamed)
        .then(|| when::without_named_time(&p.query))
        .flatten();
    let meaning = on(Rule::PartiesUnnamed)
        .then(|| intent.without_parties(untimed.as_deref().unwrap_or(&p.query)))
        .flatten()
        .or(untimed)
        .filter(|_| scan.is_some());
    let mut meaning_vec = None;
    if let (Some(e), Some(text)) = (embedder, meaning) {
        match e.embed_chunked(&[&text], 1) {
            Ok(v) if v.first().is_some_and(|c| !c.is_empty()) => {
                let v = v[0][0];
                let precision = super::scan_precision(snap, p, timed);
                *scan = Some(scan::SemanticScan::run(snap, &v, ok, precision));
                meaning_vec = Some(v);
                // Weighted fusion ranks no candidate by its place: the ranks are empty.
                (_, *best_semantic) = semantic_candidates(p, timed, scan.as_ref());
                read_candidates(
                    &mut intent,
                    best_semantic,
                    scan.as_ref().map_or(&[][..], |sc| &sc.best),
                );
            }
            Ok(_) => {}
            // The query's own vector still ranks.
            Err(err) => tracing::warn!("the query as {text:?} could not be embedded: {err}"),
        }
    }
    if p.without_rules.contains(&Rule::SaidByTheOther) {
        intent.other_side = None;
    }
    let priors = lex_sorted
        .iter()
        .map(|(m, _)| *m)
        .chain(best_semantic.iter().copied())
        .map(|m| (m, prior::prior(snap, m as usize, &intent, &p.without_rules)))
        .collect();
    // Every semantic candidate written in the named time, whatever its score: `fuse` decides by the score it reads
    // then (`timed` or above), which for those near `timed` is the exact one (`super::rank` re-scores them first),
    // so that the int8 and f32 scans keep the same candidates.
    let in_named_time = match intent.period {
        Some(period) if timed < p.threshold => best_semantic
            .iter()
            .copied()
            .filter(|m| {
                snap.messages[*m as usize]
                    .timestamp_ms
                    .is_some_and(|t| period.holds(t))
            })
            .collect(),
        _ => FxHashSet::default(),
    };
    Reading {
        priors,
        other_side: intent.other_side,
        in_named_time,
        meaning_vec,
    }
}
