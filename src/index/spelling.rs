//! A query word that no message contains, read as the indexed word one typo away: "torunament" finds the
//! messages about the tournament, "fesetival" the festival. Without this a mistyped word matches nothing, and a
//! message that shares no other word with the query is left to its meaning alone, which a typo blurs too.
//!
//! The neighbours are found in the term dictionary of each segment with a Levenshtein automaton (the crates
//! tantivy's own fuzzy query is built on), so the cost is a walk of the few dictionary paths one edit from the
//! word, not of the dictionary.

use std::collections::HashMap;
use std::sync::OnceLock;

use levenshtein_automata::{DFA, Distance, LevenshteinAutomatonBuilder, SINK_STATE};
use tantivy::schema::Field;
use tantivy::{Searcher, Term};

/// The shortest term (after stemming, in characters) that is read as a typo: one edit from a shorter word is
/// too often another word ("cash" for "cast", "test" for "text"; a two-character word of Chinese for another).
pub const MIN_TYPO_CHARS: usize = 5;

/// A word of the query read as another (see [`nearest_term`]), to say so to the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Correction {
    /// The word as the query had it, lowercased; no message contains it (nor its stem).
    pub typed: String,
    /// The indexed term searched instead (a stem, as the index holds words).
    pub searched: String,
    /// The word as a matching message writes it ("festival" where the index holds "festiv"), to show the
    /// reader a word rather than a stem; `None` when no message at hand has it (see
    /// [`super::lexical::surface_word`]).
    pub written: Option<String>,
}

/// A Levenshtein DFA as an automaton over the term dictionary (tantivy's term dictionary takes a
/// `tantivy_fst::Automaton`).
struct OneEdit(DFA);

impl tantivy_fst::Automaton for OneEdit {
    type State = u32;

    fn start(&self) -> u32 {
        self.0.initial_state()
    }

    fn is_match(&self, state: &u32) -> bool {
        matches!(self.0.distance(*state), Distance::Exact(_))
    }

    fn can_match(&self, state: &u32) -> bool {
        *state != SINK_STATE
    }

    fn accept(&self, state: &u32, byte: u8) -> u32 {
        self.0.transition(*state, byte)
    }
}

/// The builder of one-edit automata, transpositions counted as one edit ("torunament"); building its tables
/// takes a moment, so once per process.
fn one_edit() -> &'static LevenshteinAutomatonBuilder {
    static BUILDER: OnceLock<LevenshteinAutomatonBuilder> = OnceLock::new();
    BUILDER.get_or_init(|| LevenshteinAutomatonBuilder::new(1, true))
}

/// The indexed term one edit from `term` (an insertion, a deletion, a substitution or two neighbours swapped)
/// that the most messages contain, when no message contains `term` itself; `None` when some message does, when
/// no term is that close, or when `term` is too short ([`MIN_TYPO_CHARS`]) or holds a digit (a version or a
/// number that is not in the history is not a typo of its neighbour: `v2.1.38` is not `v2.1.39`). `word` is the
/// query's word `term` was stemmed from, lowercased: when the stem has no neighbour the word itself is looked
/// for, as the stemmer treats a misspelt word unlike the right one ("torunament" → "toruna", "tournament" →
/// "tournament").
pub fn nearest_term(
    searcher: &Searcher,
    field: Field,
    term: &str,
    word: &str,
) -> tantivy::Result<Option<String>> {
    if term.chars().count() < MIN_TYPO_CHARS || term.bytes().any(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    if searcher.doc_freq(&Term::from_field_text(field, term))? > 0 {
        return Ok(None);
    }
    if let Some(t) = most_common_neighbour(searcher, field, term)? {
        return Ok(Some(t));
    }
    if word != term && word.chars().count() >= MIN_TYPO_CHARS {
        return most_common_neighbour(searcher, field, word);
    }
    Ok(None)
}

/// The indexed term one edit from `term` that the most messages contain; among equals the first in byte order,
/// so the answer does not depend on the order segments were written in.
fn most_common_neighbour(
    searcher: &Searcher,
    field: Field,
    term: &str,
) -> tantivy::Result<Option<String>> {
    let mut found: HashMap<Vec<u8>, u64> = HashMap::new();
    for segment in searcher.segment_readers() {
        let inverted = segment.inverted_index(field)?;
        let mut terms = inverted
            .terms()
            .search(OneEdit(one_edit().build_dfa(term)))
            .into_stream()?;
        while terms.advance() {
            *found.entry(terms.key().to_vec()).or_default() += u64::from(terms.value().doc_freq);
        }
    }
    Ok(found
        .into_iter()
        .filter(|(t, _)| t.as_slice() != term.as_bytes())
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        .and_then(|(t, _)| String::from_utf8(t).ok()))
}

#[cfg(test)]
mod tests {
    use crate::index::lexical::Lexical;

    /// A lexical index of `texts` (gid = position) in a fresh directory.
    fn index(texts: &[&str]) -> (tempfile::TempDir, Lexical) {
        let dir = tempfile::tempdir().unwrap();
        let lex = Lexical::open(dir.path()).unwrap();
        let mut w = lex.writer(false).unwrap();
        for (i, t) in texts.iter().enumerate() {
            lex.add(&w, i as u64, t).unwrap();
        }
        lex.commit(&mut w, 1).unwrap();
        drop(w);
        (dir, lex)
    }

    fn corrected(lex: &Lexical, query: &str, known: &[&str]) -> Vec<(String, String)> {
        let r = lex.reader().unwrap();
        let knows = |w: &str| known.contains(&w);
        let (_, c) = lex.search(&r, query, 10, Some(&knows), None).unwrap();
        c.into_iter().map(|c| (c.typed, c.searched)).collect()
    }

    #[test]
    fn a_word_no_message_has_is_read_as_its_indexed_neighbour() {
        let (_dir, lex) = index(&[
            "Nate won the regional tournament last week",
            "the tournament final was streamed",
            "the festival opened on Friday",
            "the other team forfeited",
            "released v2.1.38 today",
        ]);
        // A swap of neighbours, a letter too many, a letter missing: one edit each.
        assert_eq!(
            corrected(&lex, "which torunament did Nate win", &[]),
            vec![("torunament".into(), "tournament".into())]
        );
        assert_eq!(
            corrected(&lex, "the fesetival", &[]),
            vec![("fesetival".into(), "festiv".into())]
        );
        assert_eq!(
            corrected(&lex, "tournment final", &[]),
            vec![("tournment".into(), "tournament".into())]
        );
        // The typo finds the messages the right word finds.
        let r = lex.reader().unwrap();
        let (found, _) = lex
            .search(&r, "torunament", 10, Some(&|_| false), None)
            .unwrap();
        let mut gids: Vec<u64> = found.iter().map(|(g, _)| *g).collect();
        gids.sort();
        assert_eq!(gids, vec![0, 1]);
    }

    #[test]
    fn words_that_are_not_typos_are_left_alone() {
        let (_dir, lex) = index(&[
            "the other team forfeited",
            "released v2.1.38 today",
            "the cast was long",
        ]);
        // A word of the vocabulary the history lacks is not a typo of its neighbour.
        assert!(corrected(&lex, "what did his mother say", &["mother"]).is_empty());
        // Without a vocabulary nothing is corrected.
        let r = lex.reader().unwrap();
        assert!(
            lex.search(&r, "mother", 10, None, None)
                .unwrap()
                .1
                .is_empty()
        );
        // A number or version the history lacks, a short word, a word the history has.
        assert!(corrected(&lex, "v2.1.39", &[]).is_empty());
        assert!(corrected(&lex, "cash", &[]).is_empty());
        assert!(corrected(&lex, "other", &[]).is_empty());
        // Nothing one edit away; a word of two Chinese characters (six bytes) is too short to be read as another.
        assert!(corrected(&lex, "xylophone", &[]).is_empty());
        let (_dir, lex) = index(&["数据 库存"]);
        assert!(corrected(&lex, "数据 库房", &[]).is_empty());
    }
}
