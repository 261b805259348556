//! Other machines' histories over SSH, against a real OpenSSH server on 127.0.0.1 (Debian's `sshd`, started by
//! each test with a fresh host key and client key): `ghola remote add/sync/list/map/remove`, search and listings by
//! machine, an append found after the next sync with only its new lines read, rsync absent on the remote (plain
//! ssh), a kill -9 mid-sync then a rerun, the server stopped, an unknown host key.

#![cfg(unix)]

use crate::common;

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

/// `remote add NAME` toward `sshd` with the "remote" Claude dir `remote_claude`.
fn add_args(name: &str, sshd: &Sshd, remote_claude: &Path) -> Vec<String> {
    [
        "remote",
        "add",
        name,
        "--ssh",
        &sshd.target(),
        "--port",
        &sshd.port.to_string(),
        // After `remote add`, `--claude-dir` names the remote's (this machine's is given before `remote`).
        "--claude-dir",
        remote_claude.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn add(h: &Home, sshd: &Sshd, remote_claude: &Path) -> Vec<u8> {
    run_ok(ghola(h, sshd).args(add_args("devbox", sshd, remote_claude)))
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
    let shown = run_json(ghola(&h, &sshd).args(["show", DEV_SESSION, "--json"]));
    assert_eq!(shown["machine"], "devbox");
    let shown = String::from_utf8(run_ok(ghola(&h, &sshd).args(["show", DEV_SESSION]))).unwrap();
    assert!(shown.contains("recorded on devbox"), "{shown}");

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
    let read = synced["index"]["bytes_read"]
        .as_u64()
        .unwrap_or_else(|| panic!("{synced:#}"));
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

/// A folder of the tools a remote shell needs, without rsync: what a remote without rsync has on its PATH.
fn path_without_rsync(root: &Path) -> String {
    let bin = root.join("bin-without-rsync");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in [
        "sh", "find", "wc", "tail", "head", "tr", "cat", "hostname", "uname",
    ] {
        let real = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("no {tool}"));
        let _ = std::os::unix::fs::symlink(real, bin.join(tool));
    }
    bin.display().to_string()
}

#[test]
fn without_rsync_on_the_remote_plain_ssh_copies_appends_and_rewrites() {
    // The server's sessions get a PATH without rsync.
    let scratch = tempfile::tempdir().unwrap();
    let path = path_without_rsync(scratch.path());
    let Some(sshd) = sshd(Some(&path)) else {
        return;
    };
    let h = laptop(&sshd);
    let remote_claude = dev_box(&sshd);
    let out = String::from_utf8(add(&h, &sshd, &remote_claude)).unwrap();
    assert!(out.contains("by ssh"), "{out}");
    let rel = Transcript::new(DEV_SESSION, "/home/me/src/app").path(Path::new(""));
    let copy = h.idx.join("remotes/devbox").join(&rel);
    let remote_file = remote_claude.join(&rel);
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&remote_file).unwrap()
    );
    // A subagent's transcript comes too.
    Transcript::new(DEV_SESSION, "/home/me/src/app")
        .user("the subagent checked the okapi migration")
        .write_as_subagent(&remote_claude, DEV_SESSION, "a1");
    // An append travels as its new bytes and is found.
    Transcript::new(DEV_SESSION, "/home/me/src/app")
        .continuing(2)
        .user("then the dev box added a narwhal rate limiter")
        .append(&remote_claude);
    let synced = run_json(ghola(&h, &sshd).args(["remote", "sync", "devbox", "--json"]));
    assert_eq!(synced["remotes"][0]["method"], "ssh", "{synced:#}");
    assert_eq!(synced["remotes"][0]["files"], 2, "{synced:#}");
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&remote_file).unwrap()
    );
    let v = search(&h, &sshd, "narwhal rate limiter", &[]);
    assert_eq!(sessions_of(&v)[0], (DEV_SESSION.into(), "devbox".into()));
    let v = search(&h, &sshd, "okapi migration", &[]);
    assert_eq!(sessions_of(&v)[0].0, DEV_SESSION, "{v:#}");
    // A transcript rewritten shorter replaces the copy whole; what the index had stays (as for a local one).
    Transcript::new(DEV_SESSION, "/home/me/src/app")
        .user("rewritten: the yak shaving plan")
        .write(&remote_claude);
    run_ok(ghola(&h, &sshd).args(["remote", "sync"]));
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&remote_file).unwrap()
    );
    let v = search(&h, &sshd, "yak shaving plan", &[]);
    assert_eq!(sessions_of(&v)[0].0, DEV_SESSION);
    // Nothing new: nothing copied.
    let synced = run_json(ghola(&h, &sshd).args(["remote", "sync", "--json"]));
    assert_eq!(synced["remotes"][0]["files"], 0, "{synced:#}");
}

#[test]
fn a_stopped_server_or_an_unknown_host_key_fails_clearly_and_local_search_goes_on() {
    let Some(mut sshd) = sshd(None) else { return };
    let h = laptop(&sshd);
    let remote_claude = dev_box(&sshd);
    // A host key ssh does not know: refused without a prompt, with what to do; the remote stays added.
    let started = std::time::Instant::now();
    let mut cmd = h.ghola();
    cmd.env("GHOLA_SSH", sshd.ghola_ssh_unknown_host())
        .args(add_args("devbox", &sshd, &remote_claude));
    run_fails(&mut cmd, "connect once with `ssh");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let list = run_json(ghola(&h, &sshd).args(["remote", "list", "--json"]));
    assert_eq!(list["remotes"][0]["name"], "devbox");
    assert!(
        list["remotes"][0]["status"]["last_error"]
            .as_str()
            .unwrap()
            .contains("host key")
    );
    // With the key trusted it syncs.
    run_ok(ghola(&h, &sshd).args(["remote", "sync", "devbox"]));
    // A remote folder that does not exist is named.
    let mut other = ghola(&h, &sshd);
    other.args(add_args("ci", &sshd, Path::new("/no/such/claude")));
    run_fails(&mut other, "there is no /no/such/claude");
    run_ok(ghola(&h, &sshd).args(["remote", "remove", "ci"]));
    // The server stops: a clear error within seconds; local search and the synced copy still answer.
    sshd.stop();
    let started = std::time::Instant::now();
    run_fails(
        ghola(&h, &sshd).args(["remote", "sync"]),
        "nothing listens for ssh there",
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let v = search(&h, &sshd, "pelican deploy", &[]);
    assert_eq!(sessions_of(&v)[0].0, LOCAL_SESSION);
    let v = search(&h, &sshd, "walrus cache eviction", &[]);
    assert_eq!(sessions_of(&v)[0].0, DEV_SESSION);
    let status = run_json(ghola(&h, &sshd).args(["status", "--json"]));
    assert_eq!(status["machine"], "laptop");
    assert_eq!(status["remotes"][0]["failures"], 1, "{status:#}");
    let text = String::from_utf8(run_ok(ghola(&h, &sshd).arg("status"))).unwrap();
    assert!(text.contains("remote devbox: FAILING"), "{text}");
}

#[test]
fn a_path_rule_makes_one_project_and_forget_and_remove_keep_sessions_out() {
    let Some(sshd) = sshd(None) else { return };
    let h = laptop(&sshd);
    let remote_claude = dev_box(&sshd);
    add(&h, &sshd, &remote_claude);
    // Two spellings of one checkout: after the rule, the laptop's project scope finds the dev box's session.
    let scoped = |h: &Home| {
        run_json(ghola(h, &sshd).args([
            "search",
            "walrus cache eviction",
            "--project",
            "/Users/me/src/app",
            "--json",
            "--no-update",
        ]))
    };
    assert!(
        sessions_of(&scoped(&h))
            .iter()
            .all(|(s, _)| s != DEV_SESSION)
    );
    run_ok(ghola(&h, &sshd).args(["remote", "map", "devbox", "/home/me/src", "/Users/me/src"]));
    assert_eq!(sessions_of(&scoped(&h))[0].0, DEV_SESSION);
    let projects = run_json(ghola(&h, &sshd).args(["projects", "--json"]));
    let app: Vec<&Value> = projects["projects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["project"] == "/Users/me/src/app")
        .collect();
    assert_eq!(app.len(), 1, "{projects:#}");
    assert_eq!(app[0]["sessions"], 2);
    assert_eq!(
        app[0]["machines"],
        serde_json::json!(["laptop", "devbox"]),
        "{projects:#}"
    );
    let only = run_json(ghola(&h, &sshd).args(["projects", "--json", "--machine", "devbox"]));
    assert_eq!(only["projects"][0]["sessions"], 1);

    // Two syncs of one remote at once: the second says so (and changes nothing).
    let lock = std::fs::File::options()
        .write(true)
        .open(h.idx.join("remotes/devbox/sync.lock"))
        .unwrap();
    lock.lock().unwrap();
    run_fails(
        ghola(&h, &sshd).args(["remote", "sync"]),
        "another sync of this remote is running",
    );
    drop(lock);
    // Forgetting a remote session deletes ghola's copy and keeps it out of later syncs.
    run_ok(ghola(&h, &sshd).args(["forget", DEV_SESSION, "--yes"]));
    let rel = Transcript::new(DEV_SESSION, "/home/me/src/app").path(Path::new(""));
    assert!(!h.idx.join("remotes/devbox").join(&rel).exists());
    run_ok(ghola(&h, &sshd).args(["remote", "sync"]));
    assert!(
        !h.idx.join("remotes/devbox").join(&rel).exists(),
        "synced again"
    );
    let v = search(&h, &sshd, "walrus cache eviction", &[]);
    assert!(sessions_of(&v).iter().all(|(s, _)| s != DEV_SESSION));

    // Removing a remote with --forget forgets what it brought.
    const SECOND: &str = "d0000000-0000-4000-8000-000000000002";
    Transcript::new(SECOND, "/home/me/src/web")
        .user("the dev box discussed the ibex queue")
        .write(&remote_claude);
    run_ok(ghola(&h, &sshd).args(["remote", "sync"]));
    assert_eq!(
        sessions_of(&search(&h, &sshd, "ibex queue", &[]))[0].0,
        SECOND
    );
    run_fails(
        ghola(&h, &sshd).args(["remote", "remove", "devbox", "--forget"]),
        "--yes",
    );
    run_ok(ghola(&h, &sshd).args(["remote", "remove", "devbox", "--forget", "--yes"]));
    assert!(sessions_of(&search(&h, &sshd, "ibex queue", &[])).is_empty());
    assert!(!h.idx.join("remotes/devbox").exists());
    // A bad name, this machine's name, and a taken name are refused.
    for (name, why) in [
        ("a b", "cannot name a remote"),
        ("laptop", "this machine's own name"),
    ] {
        run_fails(
            ghola(&h, &sshd).args(["remote", "add", name, "--ssh", "x", "--no-sync"]),
            why,
        );
    }
}

#[test]
fn a_sync_killed_midway_is_finished_by_the_next_with_nothing_lost_or_doubled() {
    let Some(sshd) = sshd(None) else { return };
    let h = laptop(&sshd);
    let remote_claude = sshd.root().join("devbox-claude");
    // 20 MB in 200 messages, sent through a link slowed to about 6 MB/s, so the kill lands mid-copy.
    let filler = "the quick brown fox jumps over the lazy dog ".repeat(2300);
    let mut t = Transcript::new(DEV_SESSION, "/home/me/src/app");
    for i in 0..200 {
        t = t.user(&format!("message marker{i} {filler}"));
    }
    let remote_file = t.write(&remote_claude);
    let slow = sshd.root().join("slow-ssh");
    std::fs::write(
        &slow,
        format!(
            "#!/bin/sh\n{} \"$@\" | python3 -u -c 'import sys,time\nwhile True:\n b=sys.stdin.buffer.read1(65536)\n if not b: break\n sys.stdout.buffer.write(b); sys.stdout.buffer.flush(); time.sleep(0.01)'\n",
            sshd.ghola_ssh()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // Words only (no model): the test is about the copy.
    let words_only = |c: &mut Command| {
        c.env("HF_HUB_OFFLINE", "1")
            .env("HF_HUB_CACHE", sshd.root().join("no-model"))
            .env("GHOLA_SSH", &slow);
    };
    let mut cmd = h.ghola();
    words_only(&mut cmd);
    run_ok(
        cmd.args(add_args("devbox", &sshd, &remote_claude))
            .arg("--no-sync"),
    );
    let mut cmd = h.ghola();
    words_only(&mut cmd);
    let mut child = cmd
        .args(["remote", "sync", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let copy = h.idx.join("remotes/devbox/projects").join(
        remote_file
            .strip_prefix(remote_claude.join("projects"))
            .unwrap(),
    );
    common::wait_for(
        "the copy to start",
        std::time::Duration::from_secs(30),
        || std::fs::metadata(&copy).is_ok_and(|m| m.len() > 0),
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    let partial = std::fs::metadata(&copy).map_or(0, |m| m.len());
    let whole = std::fs::metadata(&remote_file).unwrap().len();
    assert!(
        partial < whole,
        "the kill came after the copy ({partial} of {whole})"
    );
    // The next sync finishes it: the copy is the remote's file, every message indexed once.
    let mut cmd = h.ghola();
    words_only(&mut cmd);
    run_json(cmd.args(["remote", "sync", "--json"]));
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&remote_file).unwrap()
    );
    let sessions =
        run_json(
            h.ghola()
                .args(["sessions", "--json", "--global", "--machine", "devbox"]),
        );
    assert_eq!(sessions["sessions"][0]["messages"], 200, "{sessions:#}");
    let mut cmd = h.ghola();
    words_only(&mut cmd);
    let v = run_json(cmd.args(["search", "marker199", "--global", "--json", "--no-update"]));
    assert_eq!(sessions_of(&v)[0].0, DEV_SESSION);
    // Held once: one hit holds the word (a person's list goes on with messages only like it in meaning).
    let holding = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["matched_message"]["content"]
                .as_str()
                .is_some_and(|c| c.contains("marker199 "))
        })
        .count();
    assert_eq!(holding, 1, "{v:#}");
}

#[test]
fn the_mcp_server_syncs_in_the_background_filters_by_machine_and_says_when_one_is_down() {
    let Some(mut sshd) = sshd(None) else { return };
    let h = laptop(&sshd);
    std::fs::write(
        h.config(),
        "machine = \"laptop\"\n[remote]\nsync_minutes = 1\n",
    )
    .unwrap();
    let remote_claude = dev_box(&sshd);
    run_ok(
        ghola(&h, &sshd)
            .args(add_args("devbox", &sshd, &remote_claude))
            .arg("--no-sync"),
    );
    let (ssh, config, notes) = (sshd.ghola_ssh(), h.config(), h.notes.clone());
    let mut c = common::mcp_client::Client::start(
        &h.claude,
        &h.idx,
        &[
            ("GHOLA_SSH", ssh.as_str()),
            ("GHOLA_CONFIG", config.to_str().unwrap()),
            ("GHOLA_NOTES_DIR", notes.to_str().unwrap()),
            ("CLAUDE_PROJECT_DIR", "/Users/me/src/app"),
        ],
    );
    // The server syncs the never-synced remote on its own, and indexes what it brought.
    let mut id = 10;
    let mut text = String::new();
    common::wait_for(
        "the background sync",
        std::time::Duration::from_secs(60),
        || {
            id += 1;
            let (_, t) = c.call(
                id,
                "search_global_history",
                serde_json::json!({"query": "walrus cache eviction"}),
            );
            text = t;
            text.contains("on devbox")
        },
    );
    assert!(text.contains("/home/me/src/app · on devbox"), "{text}");
    // machines=[…] keeps to the named machines; an unknown name is an error naming the machines there are.
    let (_, t) = c.call(
        50,
        "search_global_history",
        serde_json::json!({"query": "walrus cache eviction", "machines": ["laptop"]}),
    );
    assert!(!t.contains("on devbox"), "{t}");
    let (is_error, t) = c.call(
        51,
        "search_global_history",
        serde_json::json!({"query": "walrus", "machines": ["nas"]}),
    );
    assert!(is_error && t.contains("laptop, devbox"), "{t}");
    let (_, t) = c.call(
        52,
        "search_global_history",
        serde_json::json!({"query": "walrus cache eviction", "format": "json"}),
    );
    let v: Value = serde_json::from_str(&t).unwrap();
    assert_eq!(
        v["results"][0]["matched_message"]["machine"], "devbox",
        "{v:#}"
    );
    let (_, t) = c.call(
        53,
        "duncan_list_sessions",
        serde_json::json!({"mode": "global", "machines": ["devbox"]}),
    );
    let v: Value = serde_json::from_str(&t).unwrap();
    assert_eq!(v["total"], 1, "{v:#}");
    assert_eq!(v["sessions"][0]["machine"], "devbox");
    let (_, t) = c.call(
        56,
        "get_session_detail",
        serde_json::json!({"session_id": DEV_SESSION}),
    );
    let v: Value = serde_json::from_str(&t).unwrap();
    assert_eq!(v["machine"], "devbox", "{v:#}");
    let (_, t) = c.call(54, "duncan_projects", serde_json::json!({}));
    assert!(t.contains("\"devbox\"") && t.contains("\"laptop\""), "{t}");
    // A remote that is down is one line in the answer (its sessions still answer).
    sshd.stop();
    run_fails(ghola(&h, &sshd).args(["remote", "sync"]), "nothing listens");
    let (_, t) = c.call(
        55,
        "search_global_history",
        serde_json::json!({"query": "walrus cache eviction"}),
    );
    assert!(
        t.contains("machine devbox could not be synced") && t.contains("on devbox"),
        "{t}"
    );
}

#[test]
fn the_browser_has_a_machine_facet_and_names_each_sessions_machine() {
    let Some(sshd) = sshd(None) else { return };
    let h = laptop(&sshd);
    let remote_claude = dev_box(&sshd);
    add(&h, &sshd, &remote_claude);
    let ui = common::browser::Ui::start(h.ghola());
    let login = ui.log_in();
    let get = |path: &str| {
        let raw = common::browser::http_get(login.addr, &login.host, path, &login.cookie).unwrap();
        assert!(raw.starts_with("HTTP/1.1 200"), "{path}: {raw}");
        raw
    };
    let page = get("/search?q=walrus+cache+eviction");
    assert!(page.contains("<select name=machine"), "no facet");
    assert!(
        page.contains("<option value=\"devbox\">devbox</option>"),
        "{page}"
    );
    assert!(
        page.contains("on <span class=machine>devbox</span>"),
        "{page}"
    );
    let page = get("/search?q=walrus+cache+eviction&machine=laptop");
    assert!(
        !page.contains("<span class=machine>devbox</span>"),
        "{page}"
    );
    assert!(
        page.contains("<option value=\"laptop\" selected>"),
        "the form keeps the choice"
    );
    let page = get("/projects");
    assert!(
        page.contains("<td class=machine>devbox</td>")
            && page.contains("<td class=machine>laptop</td>"),
        "{page}"
    );
    let page = get(&format!("/session/{DEV_SESSION}"));
    assert!(page.contains("recorded on devbox"), "{page}");
}

#[test]
fn checkouts_of_one_git_repository_are_one_project_without_a_rule() {
    let Some(sshd) = sshd(None) else { return };
    let git = |dir: &Path, url: &str| {
        std::fs::create_dir_all(dir).unwrap();
        for args in [vec!["init", "-q"], vec!["remote", "add", "origin", url]] {
            let ok = Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(&args)
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        }
    };
    let h = Home::new();
    std::fs::create_dir_all(&h.notes).unwrap();
    std::fs::write(h.config(), "machine = \"laptop\"\n").unwrap();
    // The same repository checked out here and "there", written two ways; and one only there.
    let here = h.root().join("Users/me/src/app");
    let there = sshd.root().join("home/me/src/app");
    let elsewhere = sshd.root().join("home/me/src/tool");
    git(&here, "https://github.com/me/app");
    git(&there, "git@github.com:me/app.git");
    git(&elsewhere, "git@github.com:me/tool.git");
    Transcript::new(LOCAL_SESSION, here.to_str().unwrap())
        .user("the laptop talks about the pelican deploy")
        .write(&h.claude);
    let remote_claude = sshd.root().join("devbox-claude");
    Transcript::new(DEV_SESSION, there.to_str().unwrap())
        .user("on the dev box we tuned the walrus cache eviction")
        .write(&remote_claude);
    const TOOL: &str = "d0000000-0000-4000-8000-000000000003";
    Transcript::new(TOOL, elsewhere.to_str().unwrap())
        .user("the tool repository got a walrus logo")
        .write(&remote_claude);
    add(&h, &sshd, &remote_claude);
    let v = run_json(ghola(&h, &sshd).args([
        "search",
        "walrus",
        "--project",
        here.to_str().unwrap(),
        "--json",
        "--no-update",
    ]));
    let found = sessions_of(&v);
    assert!(found.iter().any(|(s, _)| s == DEV_SESSION), "{v:#}");
    assert!(found.iter().all(|(s, _)| s != TOOL), "{v:#}");
    let list = run_json(ghola(&h, &sshd).args(["remote", "list", "--json"]));
    assert_eq!(
        list["remotes"][0]["auto_map"],
        serde_json::json!([{"from": there.to_str().unwrap(), "to": here.to_str().unwrap()}]),
        "{list:#}"
    );
}
