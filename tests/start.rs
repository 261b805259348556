//! `ghola start` with the real Claude Code CLI against the loopback model stand-in, driven through stdin: tasks
//! run and stream, task logs keep the session ids Claude Code reported, the second task starts with the notes
//! extracted from the first and (summary mode) its summary, `/continue` resumes the same session, Ctrl-C stops a
//! task and leaves the prompt usable, `/done` exits 0.
// The work loop is driven through Unix signals (SIGINT to the process group): Unix only.
#![cfg(unix)]

use crate::common;

use common::claude_bin;
use common::standin::{Reply, StandIn};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The stand-in: extraction calls get findings (a decision only from the first task), Claude Code's calls a
/// reply naming the task they saw last.
fn script(req: &Value) -> Reply {
    let messages = req["messages"].to_string();
    if req["tool_choice"]["name"] == "record_notes" {
        let first = messages.contains("TASK-ONE");
        return Reply::tool_use(
            "record_notes",
            json!({
                "architecture": [], "failures": [], "supersedes": [], "plan": [],
                "decisions": if first { json!(["Chose OSPREY over Kafka for the event bus because it is embedded"]) } else { json!([]) },
                "no_updates": !first,
            }),
        );
    }
    if messages.contains("SLOW-TASK") {
        return Reply::Delayed(Duration::from_secs(30), Box::new(Reply::text("too late")));
    }
    // The task mentioned last in the conversation decides the reply.
    let latest = ["TASK-ONE", "TASK-TWO", "TASK-THREE", "TASK-FOUR"]
        .into_iter()
        .filter_map(|t| messages.rfind(t).map(|at| (at, t)))
        .max();
    if let Some((_, t)) = latest {
        return Reply::text(&format!(
            "Finished {t}: the event bus is wired.\n\nMore detail here."
        ));
    }
    Reply::text("ok")
}

struct Env {
    home: tempfile::TempDir,
    project: PathBuf,
    standin: StandIn,
    bin: PathBuf,
}

impl Env {
    fn new() -> Option<Env> {
        let bin = claude_bin()?;
        let home = tempfile::tempdir().unwrap();
        let project = home.path().join("shop");
        std::fs::create_dir_all(&project).unwrap();
        let project = project.canonicalize().unwrap();
        Some(Env {
            home,
            project,
            standin: StandIn::start(4, Arc::new(script)),
            bin,
        })
    }

    fn ghola(&self, args: &[&str]) -> Command {
        let h = self.home.path();
        let mut c = Command::new(env!("CARGO_BIN_EXE_ghola"));
        c.args(args)
            .env("HOME", h)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("GHOLA_HOOKS_OFF")
            .env_remove("GHOLA_NOTES_MODEL")
            .env_remove("GHOLA_NOTES_BACKEND")
            .env("GHOLA_HOME", h.join("index"))
            .env("GHOLA_NOTES_DIR", h.join("notes"))
            .env("GHOLA_CONFIG", h.join("config.toml"))
            .env("GHOLA_CLAUDE_BIN", &self.bin)
            .env("ANTHROPIC_BASE_URL", &self.standin.url)
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .current_dir(&self.project);
        c
    }

    fn tasks(&self) -> Vec<Value> {
        let notes = self.home.path().join("notes/projects");
        let mut out = Vec::new();
        for d in std::fs::read_dir(notes).unwrap().flatten() {
            if let Ok(rd) = std::fs::read_dir(d.path().join("tasks")) {
                let mut files: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
                files.sort();
                for f in files {
                    out.push(serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap());
                }
            }
        }
        out
    }

    /// Requests Claude Code made for a task (not ghola's extraction calls) containing `needle`.
    fn main_requests_with(&self, needle: &str) -> Vec<Value> {
        self.standin
            .requests()
            .into_iter()
            .filter(|r| r["tool_choice"]["name"] != "record_notes" && r["tools"].is_array())
            .filter(|r| r["messages"].to_string().contains(needle))
            .collect()
    }
}

/// A running `ghola start` whose stdout is collected on a thread.
struct Prompt {
    child: Child,
    out: Arc<Mutex<String>>,
}

impl Prompt {
    fn spawn(env: &Env, args: &[&str]) -> Prompt {
        let mut child = env
            .ghola(&[&["start"], args].concat())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = Arc::new(Mutex::new(String::new()));
        let stdout = child.stdout.take().unwrap();
        let sink = out.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        Prompt { child, out }
    }

    fn say(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn wait_for(&self, what: &str) {
        for _ in 0..1200 {
            if self.out.lock().unwrap().contains(what) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("no {what:?} in:\n{}", self.out.lock().unwrap());
    }

    fn finish(mut self) -> String {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let out = self.out.lock().unwrap().clone();
        assert!(status.success(), "exit {status}:\n{out}");
        out
    }
}

fn project_key(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

#[test]
fn a_sitting_runs_tasks_with_notes_summaries_and_continue() {
    let Some(env) = Env::new() else { return };
    let mut p = Prompt::spawn(&env, &[]);
    p.wait_for("0 prior sessions, 0 tasks");
    p.say("");
    p.say("/nonsense");
    p.say("wire the event bus TASK-ONE");
    p.wait_for("Finished TASK-ONE");
    p.wait_for("notes: architecture: no updates; decisions: added 1 item");
    p.say("now the consumer TASK-TWO");
    p.wait_for("Finished TASK-TWO");
    p.wait_for("notes: architecture: no updates; decisions: no updates");
    p.say("/continue");
    p.say("and the retries TASK-THREE");
    p.wait_for("Finished TASK-THREE");
    p.say("/history");
    p.say("/status");
    p.say("/done");
    let out = p.finish();
    assert!(out.contains("Type a task, or /help."), "{out}");
    assert!(out.contains("Unknown command /nonsense"), "{out}");
    assert!(out.contains("─ done in"), "{out}");
    assert!(
        out.contains("Chose OSPREY over Kafka"),
        "/status shows the decision: {out}"
    );
    assert!(out.contains("3 tasks, notes updated"), "{out}");

    // Task logs, with the session ids Claude Code reported (and wrote transcripts for).
    let tasks = env.tasks();
    assert_eq!(tasks.len(), 3, "{tasks:#?}");
    let sid = |k: usize| tasks[k]["session_id"].as_str().unwrap().to_string();
    let escaped = project_key(&env.project).replace(|c: char| !c.is_ascii_alphanumeric(), "-");
    for t in &tasks {
        assert!(!t["events"].as_array().unwrap().is_empty());
        assert_eq!(t["is_error"], false);
        let transcript = env
            .home
            .path()
            .join(".claude/projects")
            .join(&escaped)
            .join(format!("{}.jsonl", t["session_id"].as_str().unwrap()));
        assert!(transcript.exists(), "{}", transcript.display());
    }
    assert!(
        tasks[0]["extraction"].is_array(),
        "{:#}",
        tasks[0]["extraction"]
    );
    assert_eq!(
        tasks[0]["summary"],
        "Finished TASK-ONE: the event bus is wired."
    );
    // /continue: the third task resumed the second's session.
    assert_eq!(tasks[2]["resumed"], sid(1));
    let third = env.main_requests_with("TASK-THREE");
    assert!(
        third
            .iter()
            .any(|r| r["messages"].to_string().contains("TASK-TWO")),
        "the resumed conversation reaches the model"
    );
    // The second task starts with the first one's notes and (summary mode) its summary.
    let second = env.main_requests_with("TASK-TWO");
    let system = second[0]["system"].to_string();
    assert!(system.contains("Chose OSPREY over Kafka"), "{system}");
    assert!(system.contains("Earlier tasks of this sitting"), "{system}");
    assert!(
        system.contains("Finished TASK-ONE: the event bus is wired."),
        "{system}"
    );
    // The tasks ran with ghola's hooks off: no extraction came from a SessionEnd.
    assert_eq!(
        env.standin
            .requests()
            .iter()
            .filter(|r| r["tool_choice"]["name"] == "record_notes")
            .count(),
        3,
        "one extraction per task"
    );

    // `ghola notes extract --task 1`: the task's session again, into the same notes — nothing new by now.
    let v = common::run_json(&mut env.ghola(&["notes", "extract", "--task", "1", "--json"]));
    assert_eq!(v["windows"][0]["session"], sid(0));
    assert_eq!(v["windows"][0]["result"]["outcome"], "nothing_new", "{v:#}");

    // A named line inherits the folder's notes; fresh mode sends no summaries.
    let mut p = Prompt::spawn(&env, &["billing", "--mode", "fresh"]);
    p.wait_for("line of work 'billing'");
    p.say("first billing step TASK-FOUR");
    p.wait_for("Finished TASK-FOUR");
    p.say("/quit");
    let out = p.finish();
    assert!(out.contains("1 task,"), "{out}");
    let fourth = env.main_requests_with("TASK-FOUR");
    let system = fourth[0]["system"].to_string();
    assert!(system.contains("From the parent project"), "{system}");
    assert!(system.contains("Chose OSPREY over Kafka"), "{system}");
    assert!(!system.contains("Earlier tasks of this sitting"));
}

#[test]
fn ctrl_c_stops_the_task_not_the_prompt() {
    let Some(env) = Env::new() else { return };
    let mut p = Prompt::spawn(&env, &[]);
    p.wait_for("prior session");
    p.say("a SLOW-TASK please");
    // Wait until Claude Code's request is in flight, then interrupt ghola as a terminal would.
    for _ in 0..300 {
        if !env.main_requests_with("SLOW-TASK").is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!env.main_requests_with("SLOW-TASK").is_empty());
    let pid = p.child.id() as i32;
    // SAFETY: sending SIGINT to our own child.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    p.wait_for("stopped after");
    p.say("/history");
    p.wait_for("— stopped");
    p.say("/done");
    let out = p.finish();
    assert!(out.contains("1 task,"), "{out}");
    let tasks = env.tasks();
    assert_eq!(tasks[0]["interrupted"], true);
}

#[test]
fn start_without_claude_code_says_how_to_install_it() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ghola"))
        .arg("start")
        .env("HOME", home.path())
        .env("GHOLA_CLAUDE_BIN", "")
        .env("PATH", "/nonexistent")
        .env("GHOLA_CONFIG", home.path().join("config.toml"))
        .env("GHOLA_NOTES_DIR", home.path().join("notes"))
        .current_dir(home.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("npm install -g @anthropic-ai/claude-code"),
        "{err}"
    );
    // A malformed settings file is named.
    std::fs::write(
        home.path().join("config.toml"),
        "[start]\nmode = \"chatty\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ghola"))
        .arg("start")
        .env("HOME", home.path())
        .env("GHOLA_CONFIG", home.path().join("config.toml"))
        .current_dir(home.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("start.mode"));
}
