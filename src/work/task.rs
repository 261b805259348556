//! One task of the work loop: `claude -p TASK --output-format stream-json --verbose` with the compiled context
//! appended to the system prompt, its event stream read line by line and handed to the caller as it arrives,
//! stopped (the child's whole process group) when the caller's cancel flag is set.

use crate::transcript::message::{one_line, summarize_input};
use serde::Serialize;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What a task needs.
#[derive(Debug, Clone)]
pub struct TaskRequest {
    pub prompt: String,
    /// The project folder: the task runs there.
    pub cwd: PathBuf,
    /// Appended to Claude Code's system prompt (`--append-system-prompt`).
    pub context: String,
    pub model: Option<String>,
    /// A Claude Code session to resume (`/continue`, mode `full`).
    pub resume: Option<String>,
    /// `--permission-mode`.
    pub permission_mode: String,
    /// The `claude` executable.
    pub claude_bin: PathBuf,
}

/// Something worth showing while a task runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Shown {
    /// Claude Code started the session.
    Started { session_id: String },
    /// The assistant's text.
    Text(String),
    /// One tool call, as one line (`Bash: cargo test`).
    Tool(String),
    /// A tool that failed, first line of its error.
    ToolError(String),
}

/// How a task ended, as Claude Code reported it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TaskOutcome {
    pub session_id: Option<String>,
    /// The final answer (`result` of the last event).
    pub result: Option<String>,
    /// Claude Code's verdict (`is_error`), or the process failing.
    pub is_error: bool,
    /// `subtype` of the result event (`success`, `error_max_turns` …).
    pub subtype: Option<String>,
    pub cost_usd: Option<f64>,
    pub duration_ms: Option<u64>,
    pub num_turns: Option<u64>,
    /// The process's exit code (`None` when killed).
    pub exit_code: Option<i32>,
    /// Stopped by the user.
    pub interrupted: bool,
    /// The last lines Claude Code wrote to stderr (for a failure message).
    pub stderr_tail: String,
    /// Every event of the stream, as received.
    pub events: Vec<Value>,
}

/// The lines of one stream-json event worth showing.
pub fn shown(event: &Value) -> Vec<Shown> {
    let mut out = Vec::new();
    match event.get("type").and_then(Value::as_str) {
        Some("system") if event.get("subtype").and_then(Value::as_str) == Some("init") => {
            if let Some(id) = event.get("session_id").and_then(Value::as_str) {
                out.push(Shown::Started {
                    session_id: id.to_string(),
                });
            }
        }
        Some("assistant") => {
            for block in event
                .pointer("/message/content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let t = block.get("text").and_then(Value::as_str).unwrap_or("");
                        if !t.trim().is_empty() {
                            out.push(Shown::Text(t.to_string()));
                        }
                    }
                    Some("tool_use") => {
                        let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
                        let input = block.get("input").cloned().unwrap_or(Value::Null);
                        let summary = summarize_input(&input);
                        out.push(Shown::Tool(if summary.is_empty() {
                            name.to_string()
                        } else {
                            format!("{name}: {}", one_line(&summary, 120))
                        }));
                    }
                    _ => {}
                }
            }
        }
        Some("user") => {
            for block in event
                .pointer("/message/content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if block.get("type").and_then(Value::as_str) == Some("tool_result")
                    && block.get("is_error").and_then(Value::as_bool) == Some(true)
                {
                    let text = match block.get("content") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Array(parts)) => parts
                            .iter()
                            .filter_map(|p| p.get("text").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join(" "),
                        _ => String::new(),
                    };
                    out.push(Shown::ToolError(one_line(&text, 160)));
                }
            }
        }
        _ => {}
    }
    out
}

/// Kills a process group: SIGTERM, then SIGKILL if it is still there after two seconds.
#[cfg(unix)]
fn kill_group(pid: u32) {
    let pgid = -(pid as i32);
    // SAFETY: kill(2) with a process-group id; no memory is shared.
    unsafe {
        libc::kill(pgid, libc::SIGTERM);
    }
    std::thread::sleep(Duration::from_secs(2));
    unsafe {
        libc::kill(pgid, libc::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_pid: u32) {}

/// Runs one task; `on_shown` sees each line worth showing as it arrives. Setting `cancel` stops the task (its
/// whole process group); the outcome is returned either way.
pub fn run(
    req: &TaskRequest,
    on_shown: &mut dyn FnMut(&Shown),
    cancel: &Arc<AtomicBool>,
) -> std::io::Result<TaskOutcome> {
    let mut cmd = Command::new(&req.claude_bin);
    crate::private::with_user_umask(&mut cmd);
    cmd.arg("-p")
        .arg(&req.prompt)
        .args(["--output-format", "stream-json", "--verbose"])
        .args(["--permission-mode", &req.permission_mode]);
    if !req.context.is_empty() {
        cmd.args(["--append-system-prompt", &req.context]);
    }
    if let Some(m) = &req.model {
        cmd.args(["--model", m]);
    }
    if let Some(s) = &req.resume {
        cmd.args(["--resume", s]);
    }
    // The work loop compiles the notes in and extracts after each task itself: the plugin's hooks stay out.
    cmd.env(crate::notes::hooks::HOOKS_OFF_ENV, "1")
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .current_dir(&req.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group: a Ctrl-C at the terminal reaches ghola, which stops the task, not the prompt.
        cmd.process_group(0);
    }
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let err_thread = crate::model::headless::drain(child.stderr.take());
    // A watcher stops the process group when asked; it exits when the task does.
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (done, cancel) = (done.clone(), cancel.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                if cancel.load(Ordering::SeqCst) {
                    kill_group(pid);
                    return true;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            false
        })
    };
    let started = Instant::now();
    let mut outcome = TaskOutcome::default();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(event) = serde_json::from_str::<Value>(line.trim()) else {
                continue;
            };
            for s in shown(&event) {
                if let Shown::Started { session_id } = &s {
                    outcome.session_id = Some(session_id.clone());
                }
                on_shown(&s);
            }
            if event.get("type").and_then(Value::as_str) == Some("result") {
                outcome.result = event
                    .get("result")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                outcome.is_error = event
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                outcome.subtype = event
                    .get("subtype")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                outcome.cost_usd = event.get("total_cost_usd").and_then(Value::as_f64);
                outcome.duration_ms = event.get("duration_ms").and_then(Value::as_u64);
                outcome.num_turns = event.get("num_turns").and_then(Value::as_u64);
                if let Some(id) = event.get("session_id").and_then(Value::as_str) {
                    outcome.session_id = Some(id.to_string());
                }
            }
            outcome.events.push(event);
        }
    }
    let status = child.wait()?;
    done.store(true, Ordering::SeqCst);
    outcome.interrupted = watcher.join().unwrap_or(false);
    outcome.exit_code = status.code();
    if outcome.duration_ms.is_none() {
        outcome.duration_ms = Some(started.elapsed().as_millis() as u64);
    }
    let stderr = err_thread.join().unwrap_or_default();
    outcome.stderr_tail = stderr
        .lines()
        .rev()
        .take(5)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("\n");
    if !status.success() || outcome.interrupted {
        outcome.is_error = true;
    }
    Ok(outcome)
}

/// A task's one-paragraph summary for the next tasks of the sitting: the first paragraph of its final answer.
pub fn summary(outcome: &TaskOutcome) -> String {
    let text = outcome.result.as_deref().unwrap_or("").trim();
    let para = text.split("\n\n").next().unwrap_or("").trim();
    let para = para.split_whitespace().collect::<Vec<_>>().join(" ");
    if para.is_empty() {
        return if outcome.interrupted {
            "(stopped before it finished)".into()
        } else {
            "(no answer)".into()
        };
    }
    one_line(&para, 600)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stream_events_are_shown_as_lines() {
        let init = json!({"type": "system", "subtype": "init", "session_id": "s1"});
        assert_eq!(
            shown(&init),
            [Shown::Started {
                session_id: "s1".into()
            }]
        );
        let a = json!({"type": "assistant", "message": {"content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "name": "Bash", "input": {"command": "cargo test", "description": "Run tests"}}
        ]}});
        let s = shown(&a);
        assert_eq!(s[0], Shown::Text("Let me look.".into()));
        assert!(matches!(&s[1], Shown::Tool(l) if l.starts_with("Bash: cargo test")));
        let u = json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "is_error": true, "content": "error: no such file\nmore"}
        ]}});
        assert!(
            matches!(&shown(&u)[0], Shown::ToolError(l) if l.starts_with("error: no such file"))
        );
        let o = TaskOutcome {
            result: Some("Fixed the parser.\n\nDetails follow.".into()),
            ..TaskOutcome::default()
        };
        assert_eq!(summary(&o), "Fixed the parser.");
    }
}
