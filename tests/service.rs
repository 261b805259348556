//! The history service in-process, without the model: one search request checked in one place (whose fault a
//! failure is), the answer shaped for its reader, sessions folded with the listing's facts, the listing kept
//! until the watcher sees a change, and the open index followed across updates.

use crate::common;

use common::transcript::Transcript;
use ghola::index::UpdateOptions;
use ghola::service::{
    Format, Grouping, HistoryService, ModelState, SearchRequest, ServiceConfig, ServiceError,
    SessionChoice,
};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn config(claude: &Path, idx: &Path) -> ServiceConfig {
    ServiceConfig {
        claude_dir: claude.to_path_buf(),
        index_dir: idx.to_path_buf(),
        model: ghola::embed::ModelPlaces::only(&claude.join("no-model")),
        memory_limit: u64::MAX,
        embed_kernel: Default::default(),
        update: UpdateOptions::default(),
        poll_seconds: 1,
        machine: "here".into(),
        remote_sync: None,
        ssh_command: None,
        hub_push_every: ghola::service::PUSH_EVERY,
    }
}

/// Indexes what is under `claude` now (keyword-only: no model).
fn index(claude: &Path, idx: &Path) {
    ghola::index::update_with(idx, claude, None, UpdateOptions::default(), &mut |_| {}).unwrap();
}

/// A history of two projects: a retry decision in /w/app, a cache talk in /w/other.
fn history(claude: &Path) {
    Transcript::new("a1111111-0000-0000-0000-000000000000", "/w/app")
        .user("How should the uploader retry on ERR_CONNECTION_RESET?")
        .assistant(
            "Exponential backoff with jitter, five attempts, then surface ERR_CONNECTION_RESET.",
        )
        .write(claude);
    Transcript::new("b2222222-0000-0000-0000-000000000000", "/w/other")
        .starting("2025-04-01T09:00:00Z")
        .user("Size the tile cache for the renderer")
        .assistant("A 64 MB tile cache keeps the retry of failed tiles cheap.")
        .write(claude);
}

fn service(claude: &Path, idx: &Path) -> Arc<HistoryService> {
    let h = HistoryService::new(config(claude, idx));
    h.model().set_unavailable("no model in this test".into());
    h
}

/// The two-project history, not indexed, and a service over it (the folder lives as long as the first value).
fn unindexed() -> (tempfile::TempDir, std::path::PathBuf, Arc<HistoryService>) {
    let tmp = tempfile::tempdir().unwrap();
    let (claude, idx) = (tmp.path().join("claude"), tmp.path().join("idx"));
    history(&claude);
    let h = service(&claude, &idx);
    (tmp, claude, h)
}

/// The two-project history, indexed, and a service over it (the folder lives as long as the first value).
fn indexed() -> (tempfile::TempDir, std::path::PathBuf, Arc<HistoryService>) {
    let (tmp, claude, h) = unindexed();
    index(&claude, &h.config().index_dir);
    (tmp, claude, h)
}

/// One change that makes a request wrong.
type Change = Box<dyn Fn(&mut SearchRequest)>;

#[test]
fn a_wrong_argument_is_the_callers_fault_and_names_the_argument() {
    let (_tmp, _, h) = indexed();
    let cases: Vec<(&str, Change)> = vec![
        ("query", Box::new(|r| r.query = "  ".into())),
        ("since", Box::new(|r| r.since = Some("soon".into()))),
        ("after", Box::new(|r| r.after = Some("2025-13-01".into()))),
        ("max_chars", Box::new(|r| r.max_chars = 10)),
        ("max_results", Box::new(|r| r.max_results = 0)),
        (
            "max_results",
            Box::new(|r| {
                r.grouping = Grouping::Session;
                r.max_results = 1000
            }),
        ),
        ("context_before_after", Box::new(|r| r.context = 99)),
        (
            "session_id",
            Box::new(|r| r.session = Some(SessionChoice::Current)),
        ),
    ];
    for (arg, change) in cases {
        let mut r = SearchRequest::for_model("retry");
        change(&mut r);
        let e = h
            .search(&r)
            .err()
            .unwrap_or_else(|| panic!("{arg}: accepted"));
        assert!(e.is_user_error(), "{arg}: {e}");
        match e {
            ServiceError::Request(ghola::search::SearchError::Invalid { arg: got, .. }) => {
                assert_eq!(got, arg)
            }
            other => panic!("{arg}: {other}"),
        }
    }
    let mut r = SearchRequest::for_model("retry");
    r.session = Some(SessionChoice::Id("zzzz".into()));
    let e = h.search(&r).err().unwrap();
    assert!(
        matches!(e, ServiceError::Session(_)) && e.is_user_error(),
        "{e}"
    );
}

#[test]
fn typed_choices_parse_and_refuse_with_the_argument_named() {
    assert_eq!("json".parse::<Format>().unwrap(), Format::Json);
    assert_eq!("text".parse::<Format>().unwrap(), Format::Text);
    assert_eq!("session".parse::<Grouping>().unwrap(), Grouping::Session);
    assert_eq!("".parse::<Grouping>().unwrap(), Grouping::Hit);
    let refusals = [
        "xml".parse::<Format>().err().map(|e| e.to_string()),
        "project".parse::<Grouping>().err().map(|e| e.to_string()),
    ];
    for (got, want) in refusals.iter().zip(["format must be", "group_by must be"]) {
        assert!(got.as_deref().is_some_and(|e| e.contains(want)), "{got:?}");
    }
    assert_eq!(SessionChoice::parse(" "), None);
    assert_eq!(
        SessionChoice::parse("current"),
        Some(SessionChoice::Current)
    );
}

#[test]
fn a_damaged_index_is_not_the_callers_fault() {
    let tmp = tempfile::tempdir().unwrap();
    let (claude, idx) = (tmp.path().join("claude"), tmp.path().join("idx"));
    history(&claude);
    index(&claude, &idx);
    let manifest = idx.join("manifest.bin");
    let mut bytes = std::fs::read(&manifest).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&manifest, bytes).unwrap();
    let e = service(&claude, &idx)
        .search(&SearchRequest::for_model("retry"))
        .err()
        .expect("a damaged manifest is an error");
    assert!(
        matches!(e, ServiceError::Index { .. }) && !e.is_user_error(),
        "{e}"
    );
    assert!(e.to_string().contains(&idx.display().to_string()), "{e}");
}

#[test]
fn project_scope_dates_and_the_state_of_the_model_are_in_the_answer() {
    let (_tmp, _, h) = indexed();
    let mut r = SearchRequest::for_model("retry");
    r.project = Some("/w/app".into());
    let resp = h.search(&r).unwrap().response;
    assert!(!resp.results.is_empty());
    assert!(
        resp.results
            .iter()
            .all(|h| h.matched_message.project == "/w/app")
    );
    assert!(
        resp.note.as_deref().unwrap_or("").contains(
            "ranking is keyword-only: the embedding model is unavailable (no model in this test)"
        ),
        "{:?}",
        resp.note
    );
    // A blank date is no date; `after` keeps only the April session.
    let mut r = SearchRequest::for_person("retry");
    (r.before, r.after) = (Some(" ".into()), Some("2025-03-15".into()));
    let resp = h.search(&r).unwrap().response;
    assert!(!resp.results.is_empty());
    assert!(
        resp.results
            .iter()
            .all(|h| h.matched_message.project == "/w/other"),
        "{:?}",
        resp.results
    );
    assert!(matches!(h.model().state(), ModelState::Unavailable(_)));
}

#[test]
fn sessions_are_folded_with_their_titles_and_times() {
    let (_tmp, _, h) = indexed();
    let mut r = SearchRequest::for_model("retry");
    r.grouping = Grouping::Session;
    let found = h.search(&r).unwrap();
    assert_eq!(found.groups.len(), 2, "one group per session");
    // The time range is the session's own (from the listing), not only its hits': the April session's hit is
    // its answer at 09:01, its first message is at 09:00.
    let april = found
        .groups
        .iter()
        .find(|g| g.session_id.starts_with("b2222222"))
        .unwrap();
    assert_eq!(april.matches, 1);
    assert_eq!(
        april.first_timestamp.as_deref(),
        Some("2025-04-01T09:00:00+00:00"),
        "{april:?}"
    );
}

#[test]
fn a_cut_answer_says_how_to_read_more_in_its_readers_terms() {
    let tmp = tempfile::tempdir().unwrap();
    let (claude, idx) = (tmp.path().join("claude"), tmp.path().join("idx"));
    let mut t = Transcript::new("c3333333-0000-0000-0000-000000000000", "/w/app");
    for i in 0..60 {
        t = t.user(&format!(
            "retry budget note {i}: {}",
            "the uploader waits and tries again. ".repeat(20)
        ));
    }
    t.write(&claude);
    index(&claude, &idx);
    let h = service(&claude, &idx);
    for (mut r, tool_named) in [
        (SearchRequest::for_model("retry budget"), true),
        (SearchRequest::for_person("retry budget"), false),
    ] {
        r.max_chars = 2_000;
        r.max_results = 40;
        r.relative_floor = 0.0;
        let note = h.search(&r).unwrap().response.note.unwrap_or_default();
        // The model is told its budget and the tool; a person neither.
        assert_eq!(
            note.contains("cut to fit 2000 characters"),
            tool_named,
            "{note}"
        );
        assert_eq!(note.contains("get_session_detail"), tool_named, "{note}");
        assert!(tool_named || note.contains("next page"), "{note}");
    }
}

#[test]
fn the_open_index_follows_updates() {
    let (_tmp, claude, h) = indexed();
    let mut r = SearchRequest::for_person("PELICAN_QUOTA");
    r.project = None;
    assert!(h.search(&r).unwrap().response.results.is_empty());
    let first = h.snapshots().get().unwrap();
    assert!(
        Arc::ptr_eq(&first, &h.snapshots().get().unwrap()),
        "an unchanged index is not reopened"
    );
    Transcript::new("d4444444-0000-0000-0000-000000000000", "/w/app")
        .user("raise PELICAN_QUOTA to 12")
        .write(&claude);
    index(&claude, &h.config().index_dir);
    assert_eq!(h.search(&r).unwrap().response.results.len(), 1);
}

#[test]
fn without_a_watcher_the_listing_is_read_again_on_every_call() {
    let (_tmp, claude, h) = unindexed();
    assert_eq!(h.listing().sessions.len(), 2);
    Transcript::new("e5555555-0000-0000-0000-000000000000", "/w/new")
        .user("hello")
        .write(&claude);
    assert_eq!(h.listing().sessions.len(), 3);
}

#[test]
fn with_a_watcher_the_listing_is_kept_until_a_change_is_seen() {
    let (_tmp, claude, h) = unindexed();
    h.watch_history();
    let first = h.listing();
    assert!(
        Arc::ptr_eq(&first, &h.listing()),
        "no change seen: the same listing, no file read"
    );
    Transcript::new("f6666666-0000-0000-0000-000000000000", "/w/new")
        .user("hello")
        .write(&claude);
    // The watcher's event arrives asynchronously.
    let until = Instant::now() + Duration::from_secs(10);
    while h.listing().sessions.len() != 3 {
        assert!(Instant::now() < until, "the new session never showed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let seen = h.listing();
    h.invalidate_listing();
    assert!(
        !Arc::ptr_eq(&seen, &h.listing()),
        "a forget made here is a change too"
    );
    // The listing knows each session's files: a session is found without a walk of the history.
    let files = h.session_files("f666").unwrap();
    assert_eq!(files.session_id, "f6666666-0000-0000-0000-000000000000");
    // A session written a moment ago is found at once, its watcher event still on its way or not.
    Transcript::new("a7777777-0000-0000-0000-000000000000", "/w/new")
        .user("just now")
        .write(&claude);
    assert!(h.session_files("a7777777").is_ok());
}

#[test]
fn a_persons_list_keeps_the_weak_hits_a_models_answer_leaves_out() {
    let tmp = tempfile::tempdir().unwrap();
    let (claude, idx) = (tmp.path().join("claude"), tmp.path().join("idx"));
    Transcript::new("e5555555-0000-0000-0000-000000000000", "/w/app")
        .user("Why did the QUOKKA_GATEWAY deployment stall?")
        .assistant("The QUOKKA_GATEWAY deployment stalled on its readiness probe: QUOKKA_GATEWAY waits for the queue.")
        .user(&format!(
            "Unrelated: the docs deployment went out. {}",
            "The changelog, the screenshots and the index page were refreshed. ".repeat(8)
        ))
        .write(&claude);
    index(&claude, &idx);
    let h = service(&claude, &idx);
    let texts = |r: &SearchRequest| -> Vec<String> {
        let mut r = r.clone();
        r.project = None;
        r.context = 0;
        let answer = h.search(&r).unwrap().response;
        answer
            .results
            .iter()
            .map(|x| x.matched_message.content.clone())
            .collect()
    };
    let person = texts(&SearchRequest::for_person("QUOKKA_GATEWAY deployment"));
    let model = texts(&SearchRequest::for_model("QUOKKA_GATEWAY deployment"));
    // The weak match (one common query word in a long message) is shown to a person, last, and left out of the
    // answer a model reads; the strong ones lead both, in the same order.
    assert!(
        person.last().is_some_and(|t| t.starts_with("Unrelated")),
        "{person:?}"
    );
    assert!(
        !model.iter().any(|t| t.starts_with("Unrelated")),
        "{model:?}"
    );
    assert_eq!(person[..model.len()], model[..], "{person:?} / {model:?}");
}
