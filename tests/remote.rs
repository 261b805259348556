//! Other machines' histories over SSH, against a real OpenSSH server on 127.0.0.1 (Debian's `sshd`, started by
//! each test with a fresh host key and client key): `ghola remote add/sync/list/map/remove`, search and listings by
//! machine, an append found after the next sync with only its new lines read, rsync absent on the remote (plain
//! ssh), a kill -9 mid-sync then a rerun, the server stopped, an unknown host key.

#![cfg(unix)]

mod common;

use common::home::Home;
use common::sshd::Sshd;
use common::transcript::Transcript;
use common::{run_fails, run_json, run_ok};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const DEV_SESSION: &str = "d0000000-0000-4000-8000-000000000001";
const LOCAL_SESSION: &str = "10ca1000-0000-4000-8000-000000000001";

/// The sshd for a test, or `None` (skipped) where it is not installed; CI installs it.
fn sshd(path: Option<&str>) -> Option<Sshd> {
    let s = Sshd::start(path);
    if s.is_none() {
        common::browser::skipped("sshd (openssh-server)");
    }
    s
}

/// This machine ("laptop") with one local session, and `ghola` that reaches `sshd` through `GHOLA_SSH`.
fn laptop(sshd: &Sshd) -> Home {
    let h = Home::new();
    std::fs::create_dir_all(&h.notes).unwrap();
    std::fs::write(h.config(), "machine = \"laptop\"\n").unwrap();
    Transcript::new(LOCAL_SESSION, "/Users/me/src/app")
        .user("the laptop talks about the pelican deploy")
        .assistant("pelican deploy goes through the blue pipeline")
        .write(&h.claude);
    let _ = sshd;
    h
}

fn ghola(h: &Home, sshd: &Sshd) -> Command {
    let mut c = h.ghola();
    c.env("GHOLA_SSH", sshd.ghola_ssh());
    c
}

/// The "dev box": a Claude dir in the server's folder with one session in `/home/me/src/app`.
fn dev_box(sshd: &Sshd) -> std::path::PathBuf {
    let claude = sshd.root().join("devbox-claude");
    Transcript::new(DEV_SESSION, "/home/me/src/app")
        .user("on the dev box we tuned the walrus cache eviction")
        .assistant("walrus cache eviction now uses the clock algorithm")
        .write(&claude);
    claude
}

fn add(h: &Home, sshd: &Sshd, remote_claude: &Path) -> Vec<u8> {
    run_ok(ghola(h, sshd).args([
        "remote",
        "add",
        "devbox",
        "--ssh",
        &sshd.target(),
        "--port",
        &sshd.port.to_string(),
        "--remote-claude-dir",
        remote_claude.to_str().unwrap(),
    ]))
}

fn search(h: &Home, sshd: &Sshd, query: &str, extra: &[&str]) -> Value {
    run_json(
        ghola(h, sshd)
            .args(["search", query, "--global", "--json", "--no-update"])
            .args(extra),
    )
}

fn sessions_of(v: &Value) -> Vec<(String, String)> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["matched_message"]["session_id"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                r["matched_message"]["machine"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

#[test]
fn a_remote_is_synced_searched_by_machine_and_an_append_costs_its_new_lines() {
    let Some(sshd) = sshd(None) else { return };
    let h = laptop(&sshd);
    let remote_claude = dev_box(&sshd);
    let out = String::from_utf8(add(&h, &sshd, &remote_claude)).unwrap();
    assert!(
        out.contains("added devbox") && out.contains("by rsync"),
        "{out}"
    );
    // The copy is the remote's file, byte for byte.
    let copy = h.idx.join("remotes/devbox/projects");
    let rel = Transcript::new(DEV_SESSION, "/home/me/src/app").path(Path::new(""));
    assert_eq!(
        std::fs::read(copy.join(rel.strip_prefix("projects").unwrap())).unwrap(),
        std::fs::read(remote_claude.join(&rel)).unwrap()
    );

    // Found with its machine; this machine's hits carry this machine's name.
    let v = search(&h, &sshd, "walrus cache eviction", &[]);
    assert_eq!(
        sessions_of(&v)[0],
        (DEV_SESSION.into(), "devbox".into()),
        "{v:#}"
    );
    let v = search(&h, &sshd, "pelican deploy", &[]);
    assert_eq!(sessions_of(&v)[0], (LOCAL_SESSION.into(), "laptop".into()));
    // --machine keeps to one machine; an unknown one is named.
    let v = search(&h, &sshd, "walrus cache eviction", &["--machine", "laptop"]);
    assert!(
        sessions_of(&v).iter().all(|(s, _)| s != DEV_SESSION),
        "{v:#}"
    );
    let v = search(&h, &sshd, "walrus cache eviction", &["--machine", "devbox"]);
    assert!(sessions_of(&v).iter().all(|(_, m)| m == "devbox") && !sessions_of(&v).is_empty());
    let err = run_fails(
        ghola(&h, &sshd).args(["search", "walrus", "--global", "--machine", "nas"]),
        "no machine is called \"nas\"",
    );
    let _ = err;
    // The text output names the machine once there are two.
    let text = String::from_utf8(run_ok(ghola(&h, &sshd).args([
        "search",
        "walrus cache",
        "--global",
        "--no-update",
    ])))
    .unwrap();
    assert!(text.contains("on devbox"), "{text}");

    // Listings carry it too.
    let sessions = run_json(ghola(&h, &sshd).args(["sessions", "--json", "--global"]));
    let dev = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == DEV_SESSION)
        .unwrap_or_else(|| panic!("{sessions:#}"));
    assert_eq!(dev["machine"], "devbox");

    // An append on the remote is found after the next sync, and the index reads only the new lines.
    let before = std::fs::metadata(remote_claude.join(&rel)).unwrap().len();
    Transcript::new(DEV_SESSION, "/home/me/src/app")
        .continuing(2)
        .user("later the dev box added a narwhal rate limiter")
        .append(&remote_claude);
    let after = std::fs::metadata(remote_claude.join(&rel)).unwrap().len();
    let synced = run_json(ghola(&h, &sshd).args(["remote", "sync", "--json"]));
    assert_eq!(synced["remotes"][0]["name"], "devbox", "{synced:#}");
    let v = search(&h, &sshd, "narwhal rate limiter", &[]);
    assert_eq!(sessions_of(&v)[0].0, DEV_SESSION);
    let read = synced["index"]["bytes_read"].as_u64().unwrap_or_else(|| panic!("{synced:#}"));
    // (The append path resumes at the last message before the old end, which may have been split.)
    assert!(
        read >= after - before && read < after && synced["index"]["full_update"] == false,
        "the update read {read} bytes of {after} for an append of {}: {synced:#}",
        after - before
    );

    // The list says when it synced.
    let list = run_json(ghola(&h, &sshd).args(["remote", "list", "--json"]));
    assert_eq!(list["this_machine"], "laptop");
    assert_eq!(list["remotes"][0]["status"]["method"], "rsync", "{list:#}");
    assert!(list["remotes"][0]["status"]["last_success"].is_string());
}
