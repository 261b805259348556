//! The index on a history written by the test: increments, rewrites, deletions, two writers, kill -9, damage,
//! model change. Uses the real model (run `models/fetch` first).

mod common;

use common::{run_fails, run_json, run_ok};
use ghola::embed::Embedder;
use ghola::index::{self, ChunkEmbedder, IndexError, Snapshot, UpdateOptions};
use serde_json::{Value, json};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// [`scratch`] with session `id` of `n` lines written and indexed; returns its transcript's path too.
fn indexed_session(
    id: &str,
    n: usize,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let (tmp, claude, idx) = scratch();
    write_session(&claude, id, n);
    update(&idx, &claude);
    let p = session_path(&claude, id);
    (tmp, claude, idx, p)
}

/// A scratch folder with the Claude dir and the index dir to use inside it (neither created).
fn scratch() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let (claude, idx) = (tmp.path().join("claude"), tmp.path().join("idx"));
    (tmp, claude, idx)
}

fn embedder() -> &'static Embedder {
    common::embedder()
}

fn line(session: &str, i: usize, text: &str) -> String {
    let role = if i.is_multiple_of(2) {
        "user"
    } else {
        "assistant"
    };
    let v = json!({"type": role, "uuid": format!("{session}-m{i}"), "sessionId": session, "cwd": "/work/proj",
        "timestamp": format!("2025-03-01T10:{:02}:00Z", i % 60),
        "message": {"id": format!("msg-{session}-{i}"), "role": role, "content": [{"type":"text","text": text}]}});
    format!("{v}\n")
}

fn session_path(claude: &Path, session: &str) -> PathBuf {
    claude.join(format!("projects/-work-proj/{session}.jsonl"))
}

fn write_session(claude: &Path, session: &str, n: usize) {
    let p = session_path(claude, session);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    let body: String = (0..n)
        .map(|i| {
            line(
                session,
                i,
                &format!("message {i} of {session} about topic{}", i % 7),
            )
        })
        .collect();
    fs::write(p, body).unwrap();
}

fn update(idx: &Path, claude: &Path) -> index::UpdateSummary {
    index::update(
        idx,
        claude,
        embedder(),
        UpdateOptions::default(),
        &mut |_| {},
    )
    .unwrap()
}

fn live(idx: &Path) -> Vec<(String, String)> {
    let snap = Snapshot::open(idx).unwrap();
    let mut v: Vec<_> = (0..snap.messages.len())
        .map(|i| (snap.uuid(i).to_string(), snap.content(i).into_owned()))
        .collect();
    v.sort();
    v
}

#[test]
fn appends_rewrites_and_deletions() {
    let (_tmp, claude, idx) = scratch();
    write_session(&claude, "s1", 10);
    write_session(&claude, "s2", 4);
    let s = update(&idx, &claude);
    assert_eq!(s.messages_added, 14);
    // Nothing changed: nothing read.
    let s = update(&idx, &claude);
    assert_eq!((s.files_read, s.messages_added), (0, 0));

    // Append two lines and half of a third: only the two complete ones are indexed.
    let p = session_path(&claude, "s1");
    let mut f = fs::OpenOptions::new().append(true).open(&p).unwrap();
    f.write_all(line("s1", 10, "appended ERR_CONNECTION_REFUSED").as_bytes())
        .unwrap();
    f.write_all(line("s1", 11, "second appended").as_bytes())
        .unwrap();
    let third = line("s1", 12, "third, still being written");
    f.write_all(&third.as_bytes()[..20]).unwrap();
    drop(f);
    let s = update(&idx, &claude);
    assert_eq!(s.messages_added, 2, "{s:?}");
    assert_eq!(s.sessions_updated, 1);
    assert_eq!(live(&idx).len(), 16);
    // The line is finished: it is indexed once.
    let mut f = fs::OpenOptions::new().append(true).open(&p).unwrap();
    f.write_all(&third.as_bytes()[20..]).unwrap();
    drop(f);
    assert_eq!(update(&idx, &claude).messages_added, 1);
    assert_eq!(live(&idx).len(), 17);

    // Rewritten (shorter, different head): re-indexed; messages it no longer has are gone.
    let body: String = (0..3)
        .map(|i| line("s1", i, &format!("rewritten {i}")))
        .collect();
    fs::write(&p, body).unwrap();
    let s = update(&idx, &claude);
    assert_eq!(s.messages_removed, 10, "{s:?}");
    let msgs = live(&idx);
    assert_eq!(msgs.len(), 7);
    assert!(msgs.iter().any(|(_, c)| c == "rewritten 0"));

    // Deleted: its messages stay searchable, the file is marked source-deleted.
    fs::remove_file(session_path(&claude, "s2")).unwrap();
    update(&idx, &claude);
    assert_eq!(live(&idx).len(), 7);
    let st = index::status(&idx, &claude, u64::MAX, true).unwrap();
    assert_eq!(st.source_deleted_files, 1);
    assert_eq!(st.messages, 7);
}

#[test]
fn a_long_message_takes_no_neighbour() {
    let (_tmp, claude, idx) = scratch();
    let p = session_path(&claude, "l1");
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    let long = "a closing summary that says what it is about, at length. ".repeat(12);
    assert!(long.len() >= ghola::index::render::DEFAULT_NEIGHBOUR_BELOW);
    let body: String = (0..6).map(|i| line("l1", i, &long)).collect();
    fs::write(&p, body).unwrap();
    let s = update(&idx, &claude);
    // Six long messages alike and none with its neighbour: one chunk text, embedded once and reused five
    // times (short ones alike make two: the first alone, the rest with a neighbour — see the next test).
    assert_eq!((s.chunks_embedded, s.chunks_reused), (1, 5), "{s:?}");
}

#[test]
fn identical_text_is_embedded_once_and_model_change_reembeds() {
    let (_tmp, claude, idx) = scratch();
    let p = session_path(&claude, "d1");
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    let body: String = (0..6)
        .map(|i| line("d1", i, "the same words every time"))
        .collect();
    fs::write(&p, body).unwrap();
    let s = update(&idx, &claude);
    // The first message alone, the other five with the same previous message as neighbour: two distinct chunk
    // vectors (four reuses), and one embedding — the neighbour is the very text already embedded.
    assert_eq!((s.chunks_embedded, s.chunks_reused), (1, 4), "{s:?}");

    struct Other;
    impl ChunkEmbedder for Other {
        fn model_id(&self) -> String {
            "another/model".into()
        }
        fn weights_sha256(&self, _: &Path) -> Result<String, IndexError> {
            Ok("0".into())
        }
        fn embed_chunked(
            &self,
            t: &[&str],
            m: usize,
        ) -> Result<Vec<Vec<ghola::embed::Vector>>, IndexError> {
            ChunkEmbedder::embed_chunked(embedder(), t, m)
        }
    }
    // A second session whose transcript is then deleted: only the index holds it.
    write_session(&claude, "d2", 2);
    update(&idx, &claude);
    fs::remove_file(session_path(&claude, "d2")).unwrap();
    update(&idx, &claude);
    let s = index::update(&idx, &claude, &Other, UpdateOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(
        s.messages_added, 8,
        "a new model re-embeds everything, the archive from its stored text"
    );
    assert_eq!(live(&idx).len(), 8);
    assert_eq!(
        index::status(&idx, &claude, u64::MAX, true)
            .unwrap()
            .source_deleted_files,
        1
    );
    assert!(
        Snapshot::open(&idx)
            .unwrap()
            .manifest
            .model_id
            .starts_with("another/model")
    );
}

/// An index from before a stored text showed what calls wrote (its model id ends before `+shown`) reads its
/// transcripts again to store their texts anew, and embeds nothing again: its vectors still mean the same.
#[test]
fn an_index_from_before_call_words_were_shown_is_read_again_not_embedded_again() {
    use ghola::index::format::{encode, write_framed};
    let (_tmp, claude, idx) = scratch();
    let p = session_path(&claude, "w1");
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    let edit = json!({"type": "tool_use", "id": "toolu_1", "name": "Edit", "input": {
        "file_path": "/work/proj/limits.py", "old_string": "X = 1", "new_string": "ZANZIBAR_LIMIT = 7"}});
    let body = [
        line("w1", 0, "raise the limit"),
        piece("w1", "w1-m1", "msg-w1-1", edit),
        line("w1", 2, "thanks"),
    ]
    .concat();
    fs::write(&p, body).unwrap();
    update(&idx, &claude);
    let snap = Snapshot::open(&idx).unwrap();
    let i = (0..snap.messages.len())
        .find(|&i| snap.uuid(i) == "w1-m1")
        .unwrap();
    // Stored after the call's line, out of the keyword text.
    assert!(
        snap.content(i).contains("(Edit wrote:) ZANZIBAR_LIMIT = 7"),
        "{}",
        snap.content(i)
    );
    assert_eq!(snap.keyword_text(i), "[tool] Edit: /work/proj/limits.py");
    let mut m = snap.manifest.clone();
    drop(snap);
    let before = m.model_id.split("+shown").next().unwrap().to_string();
    assert_ne!(before, m.model_id);
    m.model_id = before;
    write_framed(&idx.join("manifest.bin"), b"GHOLAMAN", &encode(&m)).unwrap();
    let s = update(&idx, &claude);
    assert!(s.full_update && s.files_read == 1, "{s:?}");
    assert_eq!(s.chunks_embedded, 0, "{s:?}");
    assert!(
        Snapshot::open(&idx)
            .unwrap()
            .manifest
            .model_id
            .ends_with(&format!("+shown{}", ghola::index::shown::SHOWN_CALL_WORDS))
    );
    assert_eq!(live(&idx).len(), 3);
    assert_eq!(update(&idx, &claude).files_read, 0, "read once");
}

fn ghola(claude: &Path, idx: &Path) -> Command {
    common::ghola_at(claude, idx)
}

fn status(claude: &Path, idx: &Path) -> Value {
    run_json(ghola(claude, idx).args(["status", "--json"]))
}

fn many_sessions(claude: &Path, sessions: usize, per: usize) {
    for s in 0..sessions {
        write_session(claude, &format!("sess{s:03}"), per);
    }
}

#[test]
fn two_writers_at_once_index_everything_once() {
    let (_tmp, claude, idx) = scratch();
    many_sessions(&claude, 20, 15);
    let a = ghola(&claude, &idx)
        .arg("index")
        .env("GHOLA_PUBLISH_EVERY", "40")
        .spawn()
        .unwrap();
    let b = ghola(&claude, &idx)
        .arg("index")
        .env("GHOLA_PUBLISH_EVERY", "40")
        .spawn()
        .unwrap();
    assert!(a.wait_with_output().unwrap().status.success());
    assert!(b.wait_with_output().unwrap().status.success());
    let st = status(&claude, &idx);
    assert_eq!(st["messages"], 300);
    assert_eq!(st["pending_files"], 0);
    // --no-wait while a writer holds the lock returns at once with a clear message.
    let lock = fs::File::options()
        .write(true)
        .open(idx.join("index.lock"))
        .unwrap();
    lock.lock().unwrap();
    run_fails(
        ghola(&claude, &idx).args(["index", "--no-wait"]),
        "another ghola is updating",
    );
}

#[test]
fn kill_9_at_any_point_loses_nothing_published() {
    let (_tmp, claude, idx) = scratch();
    many_sessions(&claude, 30, 20);
    for delay_ms in [150u64, 400, 900, 1500] {
        let mut child = ghola(&claude, &idx)
            .arg("index")
            .env("GHOLA_PUBLISH_EVERY", "30")
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        // Whatever was published is consistent and readable.
        let st = status(&claude, &idx);
        assert!(st["messages"].as_u64().unwrap() <= 600);
    }
    run_ok(ghola(&claude, &idx).arg("index"));
    let st = status(&claude, &idx);
    assert_eq!(st["messages"], 600);
    assert_eq!(st["pending_files"], 0);
    let snap = Snapshot::open(&idx).unwrap();
    let mut uuids: Vec<_> = (0..snap.messages.len())
        .map(|i| snap.uuid(i).to_string())
        .collect();
    uuids.sort();
    uuids.dedup();
    assert_eq!(uuids.len(), 600, "every message exactly once");
}

#[test]
fn damaged_files_are_detected_set_aside_and_rebuilt() {
    let (_tmp, claude, idx) = scratch();
    many_sessions(&claude, 3, 5);
    update(&idx, &claude);
    let mut files = vec![idx.join("manifest.bin")];
    for e in fs::read_dir(idx.join("segments")).unwrap() {
        files.push(e.unwrap().path());
    }
    for victim in files {
        for damage in ["flip", "truncate"] {
            let mut bytes = fs::read(&victim).unwrap();
            if damage == "flip" {
                let at = bytes.len() / 2;
                bytes[at] ^= 0xff;
            } else {
                bytes.truncate(bytes.len() / 2);
            }
            fs::write(&victim, bytes).unwrap();
            assert!(
                Snapshot::open(&idx).is_err(),
                "{} {damage} undetected",
                victim.display()
            );
            let s = update(&idx, &claude);
            assert_eq!(s.set_aside.len(), 1, "{s:?}");
            assert_eq!(live(&idx).len(), 15);
            // The rebuilt index has new segment names; find the victim's kind again.
            if !victim.exists() {
                break;
            }
        }
    }
    // A lexical index that does not match the manifest is rebuilt, not trusted.
    fs::remove_dir_all(idx.join("lexical")).unwrap();
    let s = update(&idx, &claude);
    assert!(s.lexical_rebuilt);
    assert!(Snapshot::open(&idx).unwrap().lexical.is_some());
}

fn append(p: &Path, text: &str) {
    let mut f = fs::OpenOptions::new().append(true).open(p).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// A line of assistant reply `id` holding one content block (Claude Code writes one line per block).
fn piece(session: &str, uuid: &str, id: &str, block: Value) -> String {
    let v = json!({"type": "assistant", "uuid": uuid, "sessionId": session, "cwd": "/work/proj",
        "timestamp": "2025-03-01T10:59:30Z",
        "message": {"id": id, "role": "assistant", "content": [block]}});
    format!("{v}\n")
}

/// A line of an assistant reply continuing message `id` with text.
fn continuation(session: &str, uuid: &str, id: &str, text: &str) -> String {
    piece(session, uuid, id, json!({"type": "text", "text": text}))
}

fn content_of(idx: &Path, uuid: &str) -> Vec<String> {
    live(idx)
        .into_iter()
        .filter(|(u, _)| u == uuid)
        .map(|(_, c)| c)
        .collect()
}

#[test]
fn an_append_parses_only_the_appended_bytes_and_never_opens_the_index() {
    let (tmp, claude, idx) = scratch();
    write_session(&claude, "a1", 10);
    write_session(&claude, "a2", 6);
    assert!(update(&idx, &claude).full_update, "a first build is full");
    let p = session_path(&claude, "a1");
    // The last line is an assistant reply: reading resumes at its start, since more of it may follow.
    let last_line = line("a1", 9, "message 9 of a1 about topic2").len() as u64;
    let added = line("a1", 10, "a question appended") + &line("a1", 11, "an answer appended");
    append(&p, &added);
    let s = update(&idx, &claude);
    assert!(!s.full_update, "{s:?}");
    assert_eq!(s.messages_added, 2, "{s:?}");
    assert_eq!(s.bytes_read, last_line + added.len() as u64, "{s:?}");
    assert_eq!(live(&idx).len(), 18);

    // The reply continues on a new line (same API message id): it merges into the message, which supersedes
    // its indexed version; nothing else is re-read.
    let more = continuation("a1", "a1-m11-b", "msg-a1-11", "and a second block");
    append(&p, &more);
    let s = update(&idx, &claude);
    assert!(!s.full_update, "{s:?}");
    assert_eq!(
        (s.messages_added, s.bytes_read),
        (
            1,
            (line("a1", 11, "an answer appended").len() + more.len()) as u64
        ),
        "{s:?}"
    );
    assert_eq!(
        content_of(&idx, "a1-m11"),
        vec!["an answer appended\nand a second block".to_string()]
    );
    assert_eq!(live(&idx).len(), 18);

    // A uuid written twice: the first occurrence is the message, whichever path reads it.
    append(&p, &line("a1", 4, "a later copy under an old uuid"));
    let s = update(&idx, &claude);
    assert!(!s.full_update, "{s:?}");
    assert_eq!(
        content_of(&idx, "a1-m4"),
        vec!["message 4 of a1 about topic4".to_string()]
    );
    assert_eq!(
        (update(&idx, &claude).messages_added, live(&idx).len()),
        (0, 18)
    );

    // A subagent file appears for an existing session: read whole, nothing else.
    let sub = claude.join("projects/-work-proj/a2/subagents/agent-x1.jsonl");
    fs::create_dir_all(sub.parent().unwrap()).unwrap();
    let sub_line = {
        let v = json!({"type": "user", "uuid": "x1-0", "sessionId": "a2", "agentId": "x1", "isSidechain": true,
            "cwd": "/work/proj", "timestamp": "2025-03-01T11:00:00Z",
            "message": {"role": "user", "content": "subagent task text"}});
        format!("{v}\n")
    };
    fs::write(&sub, &sub_line).unwrap();
    let s = update(&idx, &claude);
    assert!(!s.full_update, "{s:?}");
    assert_eq!(
        (s.messages_added, s.bytes_read),
        (1, sub_line.len() as u64),
        "{s:?}"
    );
    assert_eq!(live(&idx).len(), 19);

    // The same history indexed from scratch in one go holds the same messages with the same text.
    let fresh = tmp.path().join("fresh");
    update(&fresh, &claude);
    assert_eq!(live(&fresh), live(&idx));
}

/// The first line of a reply when extended thinking is on: its thinking alone, the text following on the next line.
fn thinking(session: &str, uuid: &str, id: &str, text: &str) -> String {
    piece(
        session,
        uuid,
        id,
        json!({"type": "thinking", "thinking": text}),
    )
}

#[test]
fn a_reply_read_before_its_text_is_named_by_its_text_once_written_and_held_once() {
    let (tmp, claude, idx) = scratch();
    write_session(&claude, "t1", 3);
    let p = session_path(&claude, "t1");
    // Indexed while Claude Code is still writing the reply: only its thinking is on disk.
    append(
        &p,
        &thinking("t1", "t1-think", "msg-t1-3", "the user wants the port"),
    );
    update(&idx, &claude);
    assert_eq!(content_of(&idx, "t1-think").len(), 1);

    // Its text arrives (an append: the read resumes at the reply). The text's line names the reply — the line
    // a reader of the transcript would name — and the thinking-only version is gone, not held beside it.
    append(
        &p,
        &continuation("t1", "t1-text", "msg-t1-3", "It listens on port 8417."),
    );
    let s = update(&idx, &claude);
    assert!(!s.full_update, "{s:?}");
    assert_eq!(
        content_of(&idx, "t1-text"),
        vec![
            "[thinking] the user wants the port\n[/thinking]\nIt listens on port 8417.".to_string()
        ]
    );
    assert!(content_of(&idx, "t1-think").is_empty());
    assert_eq!(live(&idx).len(), 4);

    // The same on the full path (a rewritten file is read whole against the live index).
    let (claude2, idx2) = (tmp.path().join("claude2"), tmp.path().join("idx2"));
    write_session(&claude2, "t2", 3);
    let p2 = session_path(&claude2, "t2");
    append(
        &p2,
        &thinking("t2", "t2-think", "msg-t2-3", "the user wants the port"),
    );
    update(&idx2, &claude2);
    let whole = fs::read_to_string(&p2)
        .unwrap()
        .replace("message 0 of t2", "message zero of t2")
        + &continuation("t2", "t2-text", "msg-t2-3", "It listens on port 8417.");
    fs::write(&p2, whole).unwrap();
    let s = update(&idx2, &claude2);
    assert_eq!(content_of(&idx2, "t2-text").len(), 1, "{s:?}");
    assert!(content_of(&idx2, "t2-think").is_empty());
    assert_eq!(live(&idx2).len(), 4);

    // Read in one go, the history holds the same messages under the same names.
    let fresh = tmp.path().join("fresh");
    update(&fresh, &claude);
    assert_eq!(live(&fresh), live(&idx));
}

#[test]
fn small_segments_are_merged_and_superseded_versions_dropped() {
    let (_tmp, claude, idx, p) = indexed_session("m1", 2);
    let mut merges = 0;
    for i in 2..40 {
        append(&p, &line("m1", i, &format!("appended message number {i}")));
        let s = update(&idx, &claude);
        assert!(!s.full_update && s.messages_added >= 1, "{s:?}");
        merges += s.merges;
    }
    let snap = Snapshot::open(&idx).unwrap();
    assert_eq!(snap.messages.len(), 40);
    assert!(merges >= 5, "{merges} merges");
    // At most MERGE_FACTOR - 1 segments per size class.
    assert!(
        snap.manifest.segments.len() <= 6,
        "{:?}",
        snap.manifest.segments
    );
    // Every file on disk belongs to a named segment.
    let named: Vec<u64> = snap.manifest.segments.iter().map(|s| s.id).collect();
    for e in fs::read_dir(idx.join("segments")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let id: u64 = name.split('.').next().unwrap().parse().unwrap();
        assert!(named.contains(&id), "{name} left behind");
    }
    let mut seqs: Vec<u32> = snap.messages.iter().map(|m| m.seq).collect();
    seqs.sort();
    assert_eq!(seqs, (0..40).collect::<Vec<u32>>());
}

/// A session of `n` messages on `day` (2025-03-`day`).
fn dated_session(claude: &Path, session: &str, n: usize, day: u32) {
    let p = session_path(claude, session);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    let body: String = (0..n)
        .map(|i| {
            let v = json!({"type": "user", "uuid": format!("{session}-{i}"), "sessionId": session,
                "cwd": "/work/proj", "timestamp": format!("2025-03-{day:02}T10:{i:02}:00Z"),
                "message": {"role": "user", "content": format!("{session} says {i} about the weather")}});
            format!("{v}\n")
        })
        .collect();
    fs::write(p, body).unwrap();
}

#[test]
fn the_memory_limit_leaves_out_the_oldest_sessions() {
    let (_tmp, claude, idx) = scratch();
    for (s, day) in [("old", 1), ("middle", 2), ("new", 3)] {
        dated_session(&claude, s, 5, day);
    }
    update(&idx, &claude);
    let all = Snapshot::open_with(&idx, u64::MAX, false).unwrap();
    assert_eq!((all.messages.len(), all.excluded_sessions), (15, 0));
    // Room for two sessions: the oldest is left out and counted.
    let one = index::snapshot::message_bytes(40, 1);
    let two = Snapshot::open_with(&idx, one * 11, false).unwrap();
    assert_eq!(two.excluded_sessions, 1);
    let kept: std::collections::BTreeSet<&str> =
        (0..two.messages.len()).map(|i| two.session_id(i)).collect();
    assert_eq!(kept.into_iter().collect::<Vec<_>>(), vec!["middle", "new"]);
    // Through the environment, as users set it: status reports the excluded sessions.
    let st = run_json(
        ghola(&claude, &idx)
            .args(["status", "--json"])
            .env("GHOLA_MEMORY_LIMIT_MB", "0"),
    );
    assert_eq!(
        (st["excluded_sessions"].as_u64(), st["messages"].as_u64()),
        (Some(3), Some(0))
    );
}

#[test]
fn an_index_of_the_previous_format_is_upgraded_and_keeps_its_archive() {
    use ghola::index::format::{encode, write_framed_version};
    use ghola::index::migrate::v1;
    use ghola::index::records::{ChunkKind, ChunkRecord, SegmentInfo, StoredMessage};
    let (_tmp, claude, idx) = scratch();
    write_session(&claude, "still-here", 4);
    // A format-1 index holding a session whose transcript Claude Code has since deleted.
    let texts = ["we chose zebra stripes for the dashboard", "zebra it is"];
    let vectors = embedder().embed(&texts).unwrap();
    let messages: Vec<StoredMessage> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| StoredMessage {
            gid: i as u64,
            uuid: format!("gone-{i}"),
            session_id: "gone".into(),
            agent_id: None,
            project: "/work/proj".into(),
            cwd: Some("/work/proj".into()),
            git_branch: None,
            role: if i == 0 { "user" } else { "assistant" }.into(),
            model: None,
            timestamp_ms: Some(1_700_000_000_000 + i as i64),
            window: 0,
            is_compact_summary: false,
            kind: "text".into(),
            seq: i as u32,
            content: t.to_string(),
            content_hash: i as u64,
            source: "/deleted/gone.jsonl".into(),
        })
        .collect();
    let meta = v1::SegmentMeta {
        chunks: (0..2)
            .map(|i| ChunkRecord {
                message: i,
                kind: ChunkKind::Text,
                row: i,
                text_hash: 100 + i as u64,
            })
            .collect(),
        messages,
    };
    fs::create_dir_all(idx.join("segments")).unwrap();
    let (meta_path, vec_path) = v1::paths(&idx, 7);
    let floats: Vec<u8> = vectors
        .iter()
        .flatten()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    write_framed_version(&vec_path, b"GHOLAVEC", 1, &floats).unwrap();
    write_framed_version(&meta_path, b"GHOLASGM", 1, &encode(&meta)).unwrap();
    let manifest = v1::Manifest {
        generation: 3,
        model_id: format!(
            "{}+nvec300<600+call0.5+in300+shown300",
            ghola::embed::MODEL_ID
        ),
        weights_sha256: ChunkEmbedder::weights_sha256(embedder(), &idx).unwrap(),
        segments: vec![SegmentInfo {
            id: 7,
            messages: 2,
            chunks: 2,
        }],
        files: vec![v1::FileState {
            path: "/deleted/gone.jsonl".into(),
            session_id: "gone".into(),
            size: 10,
            mtime_ns: 1,
            consumed: 10,
            head_hash: 0,
            deleted: true,
        }],
        next_gid: 2,
        next_segment: 8,
        updated_at_ms: 1,
        dead: vec![],
    };
    write_framed_version(
        &idx.join("manifest.bin"),
        b"GHOLAMAN",
        1,
        &encode(&manifest),
    )
    .unwrap();
    assert!(Snapshot::open(&idx).is_err(), "format 1 is not read as is");

    let s = update(&idx, &claude);
    assert!(s.upgraded && s.set_aside.is_empty(), "{s:?}");
    assert_eq!(
        s.messages_added, 4,
        "only the transcript on disk is read: {s:?}"
    );
    assert!(
        !idx.join("segments/00000007.meta").exists(),
        "old files removed"
    );
    let all = live(&idx);
    assert_eq!(all.len(), 6);
    assert!(all.contains(&("gone-0".to_string(), texts[0].to_string())));
    let snap = Snapshot::open(&idx).unwrap();
    let mut p = ghola::search::SearchParams::new("zebra stripes dashboard");
    p.project = None;
    let r = ghola::search::search(&snap, Some(embedder()), &p).unwrap();
    assert_eq!(r.results[0].matched_message.uuid, "gone-0");
    assert!(r.results[0].scores.semantic > 0.5, "vectors carried over");
}

#[test]
fn an_update_before_a_query_can_defer_merging() {
    let (_tmp, claude, idx, p) = indexed_session("q1", 2);
    let deferred = UpdateOptions {
        merge: false,
        ..UpdateOptions::default()
    };
    for i in 2..10 {
        append(&p, &line("q1", i, &format!("deferred {i}")));
        let s = index::update(&idx, &claude, embedder(), deferred, &mut |_| {}).unwrap();
        assert_eq!((s.messages_added, s.merges), (1, 0), "{s:?}");
    }
    assert_eq!(Snapshot::open(&idx).unwrap().manifest.segments.len(), 9);
    append(&p, &line("q1", 10, "merged now"));
    let s = update(&idx, &claude);
    assert!(s.merges >= 1, "{s:?}");
    let snap = Snapshot::open(&idx).unwrap();
    assert!(
        snap.manifest.segments.len() <= 4,
        "{:?}",
        snap.manifest.segments
    );
    assert_eq!(snap.messages.len(), 11);
}

#[test]
fn a_healthy_index_verifies_without_rebuilding_anything() {
    let (_tmp, claude, idx) = scratch();
    common::transcript::Transcript::new("0e1f0000-0000-4000-8000-000000000001", "/w/healthy")
        .user("deploy the payments service")
        .thinking("Staging first.", "I will deploy to staging.")
        .tool(
            "Bash",
            serde_json::json!({"command": "./deploy.sh"}),
            "deployed",
        )
        .assistant("Deployed.")
        .write(&claude);
    update(&idx, &claude);
    let s = run_json(ghola(&claude, &idx).args(["index", "--verify", "--json"]));
    assert_eq!(s["full_update"], true);
    assert_eq!(s["lexical_rebuilt"], false, "{s}");
    assert_eq!(s["set_aside"], serde_json::json!([]), "{s}");
}

#[test]
fn verify_finds_damage_that_kept_its_mtime() {
    let (_tmp, claude, idx) = scratch();
    many_sessions(&claude, 3, 5);
    update(&idx, &claude);
    let vec = fs::read_dir(idx.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "vec"))
        .unwrap();
    // Bit rot: a flipped byte, the file's mtime as it was (before the manifest's).
    let mtime = fs::metadata(&vec).unwrap().modified().unwrap();
    let mut bytes = fs::read(&vec).unwrap();
    let at = bytes.len() - 7;
    bytes[at] ^= 0x10;
    fs::write(&vec, bytes).unwrap();
    fs::File::options()
        .write(true)
        .open(&vec)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    // Readers check magic, version and length of mapped files, and checksum only touched ones.
    assert!(Snapshot::open(&idx).is_ok());
    let s = run_json(ghola(&claude, &idx).args(["index", "--verify", "--json"]));
    assert_eq!(s["full_update"], true);
    assert_eq!(s["set_aside"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(live(&idx).len(), 15);
}

/// What a snapshot's live view is, field by field and in order (messages with their identity, chunks with their
/// message and vector row), to compare two views of one generation.
fn view(s: &Snapshot) -> (Vec<String>, Vec<String>) {
    let messages = (0..s.messages.len())
        .map(|i| {
            let m = s.messages[i];
            format!(
                "{} {} {} {:?} {} {} {} {:?} {}",
                m.gid,
                s.uuid(i),
                s.session_id(i),
                s.agent_id(i),
                s.project(i),
                m.window,
                m.seq,
                m.timestamp_ms,
                s.segment_id(i)
            )
        })
        .collect();
    let chunks = s
        .chunks
        .iter()
        .map(|c| format!("{} {} {:?} {}", c.message, c.row, c.kind, c.text_hash))
        .collect();
    (messages, chunks)
}

/// A reopen after an append extends the previous live view instead of rebuilding it: after appends, a uuid
/// written twice, new sessions, a rewritten file (dead messages) and merges, it equals a fresh open's view.
#[test]
fn reopen_after_a_publish_equals_a_fresh_open() {
    let (_tmp, claude, idx) = scratch();
    many_sessions(&claude, 3, 5);
    update(&idx, &claude);
    let mut snap = Snapshot::open(&idx).unwrap();
    let mut extended = 0;
    for step in 0..16 {
        match step % 4 {
            0 => append(
                &session_path(&claude, "sess000"),
                &line("sess000", 100 + step, &format!("appended note {step}")),
            ),
            // The uuid of an earlier message again, with other text: the earlier one stays the message.
            1 => append(
                &session_path(&claude, "sess001"),
                &line("sess001", 2, &format!("a repeat of message 2, step {step}")),
            ),
            2 => write_session(&claude, &format!("new{step:02}"), 3),
            _ => write_session(&claude, "sess002", 5 - step / 4),
        }
        update(&idx, &claude);
        let again = snap.reopen().unwrap();
        let fresh = Snapshot::open(&idx).unwrap();
        assert!(!fresh.live_extended);
        assert_eq!(view(&again), view(&fresh), "step {step}");
        extended += usize::from(again.live_extended);
        snap = again;
    }
    assert!(extended >= 4, "the incremental path ran {extended} times");
}

/// A writer commits the lexical index before it publishes the manifest. A reader arriving in between waits for
/// the manifest to catch up instead of searching without words (here the lexical index is put back to the
/// manifest's generation after 200 ms, as a publish would put the manifest forward).
#[test]
fn a_reader_between_the_lexical_commit_and_the_manifest_waits_for_them_to_agree() {
    let (_tmp, claude, idx) = scratch();
    many_sessions(&claude, 2, 4);
    update(&idx, &claude);
    let g = Snapshot::open(&idx).unwrap().manifest.generation;
    let lex = index::lexical::Lexical::open(&idx.join("lexical")).unwrap();
    {
        let mut w = lex.writer(false).unwrap();
        lex.commit(&mut w, g + 1).unwrap();
    }
    let back = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let mut w = lex.writer(false).unwrap();
        lex.commit(&mut w, g).unwrap();
    });
    let snap = Snapshot::open(&idx).unwrap();
    back.join().unwrap();
    assert!(
        snap.lexical.is_some(),
        "the open waited for the two to agree"
    );
}

/// A reader that holds the index open (its segments mapped, as `ghola serve` does) while other processes
/// publish, merge and forget: every writer succeeds, the held view keeps answering from what it mapped, and a
/// reopen sees the new state. Runs on Linux and, through `.ci/windows/run`, under Wine, where a file that is open
/// or mapped cannot always be deleted or renamed over.
#[test]
fn a_held_reader_survives_publishes_merges_and_forgets_by_other_processes() {
    let (_tmp, claude, idx) = scratch();
    many_sessions(&claude, 12, 10);
    run_ok(
        ghola(&claude, &idx)
            .arg("index")
            .env("GHOLA_PUBLISH_EVERY", "20"),
    );
    let held = Snapshot::open(&idx).unwrap();
    let before = held.messages.len();
    assert_eq!(before, 120);
    let texts: Vec<String> = (0..before).map(|i| held.content(i).into_owned()).collect();
    // More sessions, published in small pieces and merged, while the view is held.
    for s in 12..30 {
        write_session(&claude, &format!("sess{s:03}"), 10);
    }
    run_ok(
        ghola(&claude, &idx)
            .arg("index")
            .env("GHOLA_PUBLISH_EVERY", "15"),
    );
    // A session forgotten for good (index, lexical postings, archive) while the view is still held.
    let done = run_json(ghola(&claude, &idx).args(["forget", "sess003", "--yes", "--json"]));
    assert_eq!(done["messages_removed"], 10, "{done}");
    // The held view still reads everything it mapped.
    for (i, t) in texts.iter().enumerate() {
        assert_eq!(held.content(i), t.as_str());
    }
    drop(held);
    // A fresh reader sees the new state; a later update leaves nothing behind and the index stays sound.
    let now = Snapshot::open(&idx).unwrap();
    assert_eq!(now.messages.len(), 290);
    assert!((0..now.messages.len()).all(|i| now.session_id(i) != "sess003"));
    drop(now);
    run_ok(ghola(&claude, &idx).arg("index"));
    // Segments retired while the view held them mapped (Windows refused their deletion then) are gone now that
    // no reader holds them: only the published segments' files remain.
    let published: std::collections::HashSet<u64> = ghola::index::snapshot::read_manifest(&idx)
        .unwrap()
        .unwrap()
        .segments
        .iter()
        .map(|s| s.id)
        .collect();
    for e in fs::read_dir(idx.join("segments")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let id = name.split('.').next().and_then(|n| n.parse::<u64>().ok());
        assert!(
            id.is_some_and(|id| published.contains(&id)),
            "{name} outlived its segment"
        );
    }
    let verified =
        String::from_utf8(run_ok(ghola(&claude, &idx).args(["index", "--verify"]))).unwrap();
    assert!(!verified.to_lowercase().contains("damage"), "{verified}");
    assert_eq!(status(&claude, &idx)["messages"], 290);
}

#[test]
fn the_same_history_by_a_relative_path_is_not_indexed_again() {
    let (tmp, claude, idx) = scratch();
    many_sessions(&claude, 3, 4);
    run_ok(ghola(&claude, &idx).arg("index"));
    let first = status(&claude, &idx);
    assert_eq!(first["messages"], 12);
    // The same folders given relative to the current directory, as `--claude-dir claude --index-dir idx`.
    let again = run_ok(
        ghola(Path::new("claude"), Path::new("idx"))
            .current_dir(tmp.path())
            .arg("index"),
    );
    let st = status(&claude, &idx);
    assert_eq!(st["messages"], 12, "{}", String::from_utf8_lossy(&again));
    assert_eq!(st["archive"]["files"], first["archive"]["files"]);
    assert_eq!(st["vectors_bytes"], first["vectors_bytes"]);
    assert_eq!(st["source_deleted_files"], 0);
    assert_eq!(st["pending_files"], 0);
}
