//! A first run: the history keyword-searchable before it is embedded (two passes that end where a one-pass build
//! ends), and the model's weights fetched by ghola itself from a loopback stand-in of the Hugging Face Hub
//! (the real `hf-hub` client), verified against their pinned sha256, kept in the Hugging Face cache, and refused
//! when tampered with. Uses the real model (`models/fetch` first).

use crate::common;

use common::files::{FileServer, hub_files};
use common::mcp_client::Client;
use common::run_json;
use ghola::embed::Embedder;
use ghola::index::{self, Snapshot, UpdateOptions};
use ghola::search::{self, SearchParams};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn embedder() -> &'static Embedder {
    common::embedder()
}

/// The second pass over the index in `dir` with the real model: `segments` of them at most (`None`: all).
fn embed_pending(dir: &Path, segments: Option<usize>) -> index::EmbedSummary {
    index::embed_pending(
        dir,
        embedder(),
        Default::default(),
        segments,
        &|| false,
        &mut |_| {},
    )
    .unwrap()
}

/// `sessions` sessions of `per` messages each; message 3 of session 1 names a rare word.
fn history(claude: &Path, sessions: usize, per: usize) {
    let dir = claude.join("projects/-work-proj");
    std::fs::create_dir_all(&dir).unwrap();
    for s in 0..sessions {
        let id = format!("0000000{s}-aaaa-4aaa-8aaa-aaaaaaaaaaaa");
        let body: String = (0..per)
            .map(|i| {
                let role = if i % 2 == 0 { "user" } else { "assistant" };
                let text = if s == 1 && i == 3 {
                    "We pinned the QUOKKA-LEDGER migration to run after the nightly backup.".to_string()
                } else {
                    format!("message {i} of session {s}: notes on topic {} and the build", i % 5)
                };
                let v = json!({"type": role, "uuid": format!("{id}-{i}"), "sessionId": id, "cwd": "/work/proj",
                    "timestamp": format!("2025-03-0{}T10:{:02}:00Z", 1 + s % 9, i % 60),
                    "message": {"id": format!("m-{s}-{i}"), "role": role, "content": [{"type": "text", "text": text}]}});
                format!("{v}\n")
            })
            .collect();
        std::fs::write(dir.join(format!("{id}.jsonl")), body).unwrap();
    }
}

/// The response's best hit is the message about the QUOKKA-LEDGER migration.
fn assert_top_hit_is_the_ledger(r: &Value) {
    assert!(
        r["results"][0]["matched_message"]["content"]
            .as_str()
            .unwrap()
            .contains("QUOKKA-LEDGER"),
        "{r:#}"
    );
}

/// (uuid, kind) → vector bits of every live chunk.
fn vectors(idx: &Path) -> HashMap<(String, String), Vec<u32>> {
    let snap = Snapshot::open(idx).unwrap();
    snap.chunks
        .iter()
        .map(|c| {
            (
                (
                    snap.uuid(c.message as usize).to_string(),
                    c.kind.as_str().to_string(),
                ),
                snap.vector(c).iter().map(|x| x.to_bits()).collect(),
            )
        })
        .collect()
}

#[test]
fn words_first_then_embedded_ends_where_a_one_pass_build_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = tmp.path().join("claude");
    history(&claude, 4, 30);
    let (words, direct) = (tmp.path().join("words"), tmp.path().join("direct"));
    // Small publishes, so the first pass writes several keyword-only segments.
    let opts = UpdateOptions {
        publish_every: 25,
        ..UpdateOptions::default()
    };
    let s = index::update_words_only(&words, &claude, opts, &mut |_| {}).unwrap();
    assert_eq!((s.messages_added, s.messages_deferred), (120, 120));
    let snap = Snapshot::open(&words).unwrap();
    assert_eq!(snap.messages.len(), 120);
    assert_eq!(snap.messages_waiting, 120);
    assert!(snap.chunks.is_empty());
    // Searchable by its words already.
    let r = search::search_with_vector(
        &snap,
        None,
        None,
        &SearchParams::new("QUOKKA-LEDGER migration"),
    )
    .unwrap();
    assert!(
        r.results[0]
            .matched_message
            .content
            .contains("QUOKKA-LEDGER"),
        "{r:?}"
    );
    assert_eq!(r.index.embedded_messages, 0);
    drop(snap);
    // A one-message append while nothing is embedded: also deferred (no model), also searchable.
    let f = claude.join("projects/-work-proj/00000000-aaaa-4aaa-8aaa-aaaaaaaaaaaa.jsonl");
    let mut body = std::fs::read_to_string(&f).unwrap();
    body.push_str(&format!("{}\n", json!({"type": "user", "uuid": "late-1", "sessionId": "00000000-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
        "cwd": "/work/proj", "timestamp": "2025-03-01T11:00:00Z", "message": {"role": "user", "content": "a late PLATYPUS question"}})));
    std::fs::write(&f, &body).unwrap();
    let s = index::update_words_only(&words, &claude, opts, &mut |_| {}).unwrap();
    assert_eq!((s.messages_added, s.full_update), (1, false));

    // The second pass, one segment at a time, newest sessions first.
    let first = embed_pending(&words, Some(1));
    assert_eq!(first.segments, 1);
    assert!(first.messages_waiting > 0);
    let snap = Snapshot::open(&words).unwrap();
    assert_eq!(snap.messages_waiting, 121 - first.messages);
    drop(snap);
    let rest = embed_pending(&words, None);
    assert_eq!(rest.messages_waiting, 0);
    assert_eq!(index::messages_waiting(&words), 0);
    // No keyword-only segment or its list left behind.
    let leftovers: Vec<_> = std::fs::read_dir(words.join("segments"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "todo"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // The same history built in one pass has the same vectors for the same chunks.
    index::update(&direct, &claude, embedder(), opts, &mut |_| {}).unwrap();
    let (a, b) = (vectors(&words), vectors(&direct));
    assert_eq!(a.len(), b.len());
    assert!(a == b, "two passes and one pass disagree");
    // And an update afterwards finds nothing to do.
    let s = index::update(&words, &claude, embedder(), opts, &mut |_| {}).unwrap();
    assert_eq!(s.messages_added, 0);
}

#[test]
fn a_search_during_the_second_pass_ranks_unembedded_messages_by_their_words() {
    let tmp = tempfile::tempdir().unwrap();
    let (claude, idx) = (tmp.path().join("claude"), tmp.path().join("idx"));
    history(&claude, 3, 20);
    let opts = UpdateOptions {
        publish_every: 10,
        ..UpdateOptions::default()
    };
    index::update_words_only(&idx, &claude, opts, &mut |_| {}).unwrap();
    // Embed one segment only: the rare word's message (session 1) stays keyword-only.
    embed_pending(&idx, Some(1));
    let r = run_json(common::ghola_at(&claude, &idx).args([
        "search",
        "QUOKKA-LEDGER migration",
        "--global",
        "--no-update",
        "--json",
    ]));
    let (messages, embedded) = (
        r["index"]["messages"].as_u64().unwrap(),
        r["index"]["embedded_messages"].as_u64().unwrap(),
    );
    assert!(embedded > 0 && embedded < messages, "{r:#}");
    assert!(
        r["note"].as_str().unwrap().contains("partly keyword-only"),
        "{r:#}"
    );
    assert_top_hit_is_the_ledger(&r);
}

/// A copy of the binary outside the checkout, so that it does not find the checkout's `models/`.
fn lone_binary(dir: &Path) -> PathBuf {
    let bin = dir.join("bin/ghola");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_ghola"), &bin).unwrap();
    bin
}

fn ghola(bin: &Path, home: &Path, hub: &str) -> Command {
    let mut c = Command::new(bin);
    c.env("HOME", home)
        .env("HF_HOME", home.join("hf"))
        .env("HF_ENDPOINT", hub)
        .env_remove("HF_HUB_CACHE")
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("GHOLA_MODEL_DIR")
        .env("GHOLA_HOME", home.join("index"))
        .env("CLAUDE_CONFIG_DIR", home.join("claude"));
    c
}

#[test]
fn the_model_is_downloaded_from_the_hub_once_verified_and_reused_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    history(&home.join("claude"), 2, 6);
    let bin = lone_binary(home);
    let hub = FileServer::start(hub_files(false));
    let out = run_json(ghola(&bin, home, &hub.url).args(["index", "--json"]));
    assert_eq!(out["messages_added"], 12, "{out:#}");
    assert!(
        out["chunks_embedded"].as_u64().unwrap()
            + out["embedding_pass"]["chunks_embedded"].as_u64().unwrap()
            > 0
    );
    let asked = hub.requested();
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        assert!(
            asked.iter().any(|p| p.ends_with(f)),
            "{f} not requested: {asked:?}"
        );
    }
    // Kept in the Hugging Face cache, where hf-hub and the Python tools look.
    let snapshots = home.join("hf/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots");
    assert!(std::fs::read_dir(&snapshots).unwrap().next().is_some());
    // The Hub gone: the next process finds the weights in the cache and asks nothing.
    drop(hub);
    let r = run_json(ghola(&bin, home, "http://127.0.0.1:9").args([
        "search",
        "QUOKKA-LEDGER migration",
        "--global",
        "--json",
    ]));
    assert!(r.get("note").is_none(), "{r:#}");
    assert!(
        r["results"][0]["scores"]["semantic"].as_f64().unwrap() > 0.2,
        "{r:#}"
    );
}

#[test]
fn tampered_weights_are_refused_and_the_history_stays_searchable_by_words() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    history(&home.join("claude"), 2, 6);
    let bin = lone_binary(home);
    let hub = FileServer::start(hub_files(true));
    let out = ghola(&bin, home, &hub.url)
        .args(["index"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("refused model.safetensors") && err.contains("sha256"),
        "{err}"
    );
    assert!(err.contains("indexed by their words only"), "{err}");
    // Nothing tampered stays in the cache.
    let blobs = home.join("hf/hub/models--sentence-transformers--all-MiniLM-L6-v2/blobs");
    let big: Vec<_> = std::fs::read_dir(&blobs)
        .map(|d| {
            d.flatten()
                .filter(|e| e.metadata().is_ok_and(|m| m.len() > 1_000_000))
                .collect()
        })
        .unwrap_or_default();
    assert!(big.is_empty(), "{big:?}");
    // A search still answers, by words, and says so.
    let out = common::run_ok(ghola(&bin, home, &hub.url).args([
        "search",
        "QUOKKA-LEDGER",
        "--global",
        "--json",
    ]));
    let r: Value = serde_json::from_slice(&out).unwrap();
    assert!(
        r["note"].as_str().unwrap().contains("keyword-only"),
        "{r:#}"
    );
    assert_top_hit_is_the_ledger(&r);
}

#[test]
fn the_server_answers_by_words_while_the_model_downloads_then_by_meaning() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    history(&home.join("claude"), 3, 10);
    let bin = lone_binary(home);
    let hub = FileServer::start(hub_files(false));
    let mut cmd = ghola(&bin, home, &hub.url);
    cmd.args(["serve", "--poll-seconds", "1"])
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .stderr(std::process::Stdio::null());
    let mut c = Client::spawn(cmd);
    // Issued right after start: it waits for the first pass, then answers from it.
    let (err, text) = c.call(
        2,
        "search_global_history",
        json!({"query": "QUOKKA-LEDGER migration", "format": "json"}),
    );
    assert!(!err, "{text}");
    let r: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["index"]["messages"], 30, "{r:#}");
    assert_top_hit_is_the_ledger(&r);
    // Then the model arrives and the second pass embeds everything: the note goes away.
    let started = std::time::Instant::now();
    let mut id = 3;
    loop {
        let (_, text) = c.call(
            id,
            "search_global_history",
            json!({"query": "when does the ledger migration run?", "format": "json"}),
        );
        let r: Value = serde_json::from_str(&text).unwrap();
        if r["index"]["embedded_messages"] == 30 && r.get("note").is_none() {
            assert_top_hit_is_the_ledger(&r);
            break;
        }
        assert!(
            started.elapsed().as_secs() < 120,
            "never fully embedded: {r:#}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
        id += 1;
    }
}

#[test]
fn a_damaged_embedding_list_does_not_stop_the_second_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let (claude, idx) = (tmp.path().join("claude"), tmp.path().join("idx"));
    history(&claude, 2, 10);
    index::update_words_only(&idx, &claude, UpdateOptions::default(), &mut |_| {}).unwrap();
    let todo: Vec<PathBuf> = std::fs::read_dir(idx.join("segments"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "todo"))
        .collect();
    assert_eq!(todo.len(), 1);
    // Flip a byte of the list's payload: its checksum no longer matches.
    let mut bytes = std::fs::read(&todo[0]).unwrap();
    let at = bytes.len() - 3;
    bytes[at] ^= 0xff;
    std::fs::write(&todo[0], bytes).unwrap();
    let s = embed_pending(&idx, None);
    assert_eq!((s.segments, s.messages_waiting), (1, 0));
    let snap = Snapshot::open(&idx).unwrap();
    assert_eq!(snap.messages_waiting, 0);
    // Every message has a vector again (from its stored text).
    let with_vectors: std::collections::HashSet<u32> =
        snap.chunks.iter().map(|c| c.message).collect();
    assert_eq!(with_vectors.len(), snap.messages.len());
}

#[test]
fn an_update_without_the_model_fails_only_while_messages_wait_for_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (claude, idx) = (tmp.path().join("claude"), tmp.path().join("idx"));
    history(&claude, 2, 6);
    // Indexed whole with the model (beside the checkout's binary), then updated offline without it.
    common::run_ok(common::ghola_at(&claude, &idx).arg("index"));
    let offline = || {
        let mut c = common::ghola_at(&claude, &idx);
        common::without_model(&mut c, tmp.path());
        c
    };
    let out = offline().args(["index", "--verify"]).output().unwrap();
    let (said, printed) = (
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout),
    );
    assert!(out.status.success(), "{said}");
    assert!(said.contains("the model was not needed"), "{said}");
    assert!(printed.contains("archive verified"), "{printed}");
    // A new session is indexed by its words, and the command says how many messages wait.
    let dir = claude.join("projects/-work-proj");
    let line = json!({"type": "user", "uuid": "n-1", "sessionId": "0000000n-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
        "cwd": "/work/proj", "timestamp": "2025-04-01T10:00:00Z",
        "message": {"role": "user", "content": "the OKAPI-RELAY timeout"}});
    std::fs::write(
        dir.join("0000000n-aaaa-4aaa-8aaa-aaaaaaaaaaaa.jsonl"),
        format!("{line}\n"),
    )
    .unwrap();
    let out = offline().arg("index").output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("1 messages are indexed by their words only"),
        "{said}"
    );
    let found =
        run_json(offline().args(["search", "OKAPI-RELAY", "--global", "--json", "--no-update"]));
    assert_eq!(
        found["results"][0]["matched_message"]["uuid"], "n-1",
        "{found}"
    );
}
