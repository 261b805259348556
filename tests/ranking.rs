//! The ranking in-process and without the model: an index embedded with the word-hashing stand-in
//! (`index::standin::WordsEmbedder`, whose vectors are near exactly when texts share words), searched with the
//! stand-in's query vector, so that what each fusion, rule and collapse does is known in advance and runs in
//! milliseconds.

use crate::common;

use common::transcript::Transcript;
use ghola::index::standin::WordsEmbedder;
use ghola::index::{Snapshot, UpdateOptions};
use ghola::search::{Fusion, Rule, SearchParams, SearchResponse, search_with_vector};

/// Writes `transcripts` into a fresh Claude dir, indexes them with the stand-in and opens the index (the folder
/// lives as long as the first value).
fn indexed(transcripts: &[Transcript]) -> (tempfile::TempDir, Snapshot) {
    let tmp = tempfile::tempdir().unwrap();
    let (claude, idx) = (tmp.path().join("claude"), tmp.path().join("idx"));
    for t in transcripts {
        t.write(&claude);
    }
    let embedder = &WordsEmbedder;
    ghola::index::update(
        &idx,
        &claude,
        embedder,
        UpdateOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let snap = Snapshot::open(&idx).unwrap();
    (tmp, snap)
}

/// Fails unless the first of `got` contains `needle`.
fn assert_first(got: &[String], needle: &str, why: &str) {
    assert!(
        got.first().is_some_and(|t| t.contains(needle)),
        "{why}: {got:?}"
    );
}

/// `query` over every project with `fusion`, no context, no floor.
fn ask(snap: &Snapshot, query: &str, fusion: Fusion) -> SearchResponse {
    ask_without(snap, query, fusion, &[])
}

/// [`ask`] with ranking rules turned off.
fn ask_without(snap: &Snapshot, query: &str, fusion: Fusion, rules: &[Rule]) -> SearchResponse {
    let mut p = SearchParams::new(query);
    p.context = 0;
    p.fusion = fusion;
    p.relative_floor = 0.0;
    p.without_rules = rules.to_vec();
    search_with_vector(
        snap,
        Some(&WordsEmbedder::vector(query)),
        Some(&WordsEmbedder),
        &p,
    )
    .unwrap()
}

fn texts(r: &SearchResponse) -> Vec<String> {
    r.results
        .iter()
        .map(|h| {
            h.context
                .iter()
                .find(|c| c.is_match)
                .unwrap()
                .content
                .clone()
        })
        .collect()
}

#[test]
fn every_fusion_ranks_the_message_that_has_the_query_first() {
    let (_tmp, snap) =
        indexed(&[
            Transcript::new("a1111111-0000-0000-0000-000000000000", "/w/app")
                .user("Size the tile cache for the renderer.")
                .assistant("The tile cache holds sixty four megabytes of rendered tiles.")
                .user("And the uploader?")
                .assistant(
                    "The uploader retries with exponential backoff and jitter, five attempts.",
                ),
        ]);
    for fusion in [
        Fusion::Weighted,
        Fusion::Rrf,
        Fusion::Semantic,
        Fusion::Lexical,
    ] {
        let got = texts(&ask(&snap, "uploader backoff jitter", fusion));
        assert_first(&got, "exponential backoff", &format!("{fusion:?}"));
        if fusion == Fusion::Lexical {
            assert!(
                got.iter().all(|t| !t.contains("tile cache")),
                "words only: a message without the query's words is no hit: {got:?}"
            );
        }
    }
}

#[test]
fn an_answer_ranks_above_the_question_it_answers() {
    let (_tmp, snap) = indexed(&[Transcript::new(
        "b2222222-0000-0000-0000-000000000000",
        "/w/app",
    )
    .user("How should the uploader retry after a dropped connection?")
    .assistant("The uploader should retry after a dropped connection with exponential backoff.")]);
    let query = "uploader retry dropped connection";
    let on = ask(&snap, query, Fusion::Weighted);
    assert_first(&texts(&on), "exponential backoff", "the answer");
    // The question rule is what lowers the question: turned off, the question scores higher.
    let off = ask_without(&snap, query, Fusion::Weighted, &[Rule::Question]);
    let question = |r: &SearchResponse| {
        r.results
            .iter()
            .find(|h| h.matched_message.uuid.ends_with("-0"))
            .map(|h| h.score)
            .expect("the question is a hit")
    };
    assert!(
        question(&on) < question(&off),
        "with the rule {} against {} without",
        question(&on),
        question(&off)
    );
}

#[test]
fn copies_of_one_text_collapse_to_the_earliest() {
    let report = format!(
        "Migration report: the ledger tables moved to the new schema. {}",
        "Every row was checked against its checksum and the totals agree. ".repeat(5)
    );
    let (_tmp, snap) = indexed(&[
        Transcript::new("c3333333-0000-0000-0000-000000000000", "/w/app").user(&report),
        Transcript::new("d4444444-0000-0000-0000-000000000000", "/w/app")
            .starting("2025-05-01T10:00:00Z")
            .user(&report),
    ]);
    let r = ask(&snap, "ledger migration report checksum", Fusion::Weighted);
    assert_eq!(r.results.len(), 1, "{:?}", texts(&r));
    assert!(
        r.results[0]
            .matched_message
            .session_id
            .starts_with("c3333333"),
        "the earliest copy is shown"
    );
}
