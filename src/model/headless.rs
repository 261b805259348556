//! Headless Claude Code: for users who log in to Claude Code rather than hold an API key.
//!
//! The rebuilt window is staged as a temporary session file under the Claude config dir (in the project
//! folder of a scratch working directory), then answered by
//! `claude -p QUESTION --resume ID --no-session-persistence --output-format json --json-schema SCHEMA
//! --tools "" --strict-mcp-config --system-prompt …`: no tools, no MCP servers (so no recursive ghola), no
//! transcript written, and the answer validated by Claude Code against the schema. Claude Code does its own
//! authentication; ghola never reads its credentials. The staged file and the scratch folders are removed
//! afterwards, whatever happens.

use super::conversation::Speaker;
use super::{
    Answer, Backend, BackendError, Prompt, ToolAnswer, ToolCall, Usage, answer_schema,
    check_cancel, parse_answer, question_text,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// The longest a headless answer may take.
const TIMEOUT: Duration = Duration::from_secs(600);

/// `claude -p` as a backend.
pub struct HeadlessClaude {
    /// The `claude` executable.
    pub bin: PathBuf,
    /// The Claude config dir where the window is staged (`CLAUDE_CONFIG_DIR`, else `~/.claude`).
    pub config_dir: PathBuf,
}

impl HeadlessClaude {
    /// The `claude` the environment names ([`crate::config::Environment::claude_bin`]), staging windows in
    /// `config_dir`.
    pub fn from_environment(config_dir: &Path, env: &crate::config::Environment) -> Option<Self> {
        Some(Self {
            bin: env.claude_bin()?,
            config_dir: config_dir.to_path_buf(),
        })
    }
}

/// Claude Code's project folder name for a cwd: every character outside `[A-Za-z0-9]` becomes `-`.
pub fn escape_project(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Removes what it names when dropped.
struct Staged {
    file: PathBuf,
    project_dir: PathBuf,
    _scratch: tempfile::TempDir,
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        let _ = std::fs::remove_dir(&self.project_dir);
    }
}

/// Writes the conversation as a session transcript Claude Code can resume.
fn stage(prompt: &Prompt, config_dir: &Path) -> Result<(Staged, String), BackendError> {
    let setup = |e: std::io::Error| BackendError::Setup(format!("cannot stage the window: {e}"));
    let scratch = tempfile::Builder::new()
        .prefix("ghola-replay-")
        .tempdir()
        .map_err(setup)?;
    let cwd = scratch.path().canonicalize().map_err(setup)?;
    let cwd_str = cwd.display().to_string();
    let project_dir = config_dir.join("projects").join(escape_project(&cwd_str));
    std::fs::create_dir_all(&project_dir).map_err(setup)?;
    let session_id = uuid::Uuid::new_v4().to_string();
    let file = project_dir.join(format!("{session_id}.jsonl"));
    let mut lines = String::new();
    let mut parent: Option<String> = None;
    let now = chrono::Utc::now();
    for (i, m) in prompt.conversation.iter().enumerate() {
        let uuid = uuid::Uuid::new_v4().to_string();
        let timestamp = (now - chrono::Duration::seconds((prompt.conversation.len() - i) as i64))
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let message = match m.role {
            Speaker::User => json!({"role": "user", "content": m.content}),
            Speaker::Assistant => json!({
                "id": format!("msg_ghola_{i}"), "type": "message", "role": "assistant",
                "model": prompt.model, "content": m.content, "stop_reason": "end_turn",
                "stop_sequence": null, "usage": {"input_tokens": 0, "output_tokens": 0}
            }),
        };
        let entry = json!({
            "parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": cwd_str,
            "sessionId": session_id, "version": "2.1.330", "gitBranch": prompt.git_branch.clone().unwrap_or_default(),
            "type": match m.role { Speaker::User => "user", Speaker::Assistant => "assistant" },
            "message": message, "uuid": uuid, "timestamp": timestamp,
        });
        lines.push_str(&entry.to_string());
        lines.push('\n');
        parent = Some(uuid);
    }
    std::fs::write(&file, lines).map_err(setup)?;
    Ok((
        Staged {
            file,
            project_dir,
            _scratch: scratch,
        },
        session_id,
    ))
}

/// Set in the environment of every `claude` ghola starts: ghola's own hooks see it and return at once, so an
/// extraction or a replay never schedules another.
pub use crate::config::HOOKS_OFF_ENV;

impl HeadlessClaude {
    /// Runs `claude -p` with `args` in `cwd`, `input` on stdin, and reads its JSON result: the structured
    /// output (validated by Claude Code against `schema`), usage and model.
    fn run(
        &self,
        args: &[&str],
        input: Option<&str>,
        schema: &Value,
        cwd: &Path,
        model: &str,
        cancel: &AtomicBool,
    ) -> Result<(Value, Usage, String), BackendError> {
        check_cancel(cancel)?;
        let mut child = Command::new(&self.bin)
            .arg("-p")
            .args(args)
            .args(["--no-session-persistence", "--output-format", "json"])
            .args(["--json-schema", &schema.to_string()])
            .args([
                "--tools",
                "",
                "--strict-mcp-config",
                "--disable-slash-commands",
                "--model",
                model,
            ])
            .env("CLAUDE_CONFIG_DIR", &self.config_dir)
            .env(HOOKS_OFF_ENV, "1")
            .env_remove("CLAUDE_CODE_SESSION_ID")
            .current_dir(cwd)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| BackendError::Setup(format!("cannot run {}: {e}", self.bin.display())))?;
        if let (Some(text), Some(mut pipe)) = (input, child.stdin.take()) {
            let text = text.to_string();
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = pipe.write_all(text.as_bytes());
            });
        }
        // Drain the pipes on threads so a chatty child never blocks.
        let out_reader = drain(child.stdout.take());
        let err_reader = drain(child.stderr.take());
        let started = Instant::now();
        let status = loop {
            if let Ok(Some(status)) = child.try_wait() {
                break Some(status);
            }
            if check_cancel(cancel).is_err() || started.elapsed() > TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let stdout = out_reader.join().unwrap_or_default();
        let stderr = err_reader.join().unwrap_or_default();
        let Some(status) = status else {
            check_cancel(cancel)?;
            return Err(BackendError::Provider(format!(
                "claude -p gave no answer within {TIMEOUT:?}"
            )));
        };
        parse_output(&stdout, model).map_err(|e| {
            let tail: String = stderr
                .trim()
                .chars()
                .rev()
                .take(300)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            BackendError::Provider(format!(
                "claude -p ({status}): {e}{}",
                if tail.is_empty() {
                    String::new()
                } else {
                    format!("; stderr: {tail}")
                }
            ))
        })
    }
}

impl Backend for HeadlessClaude {
    fn name(&self) -> &'static str {
        "claude-code"
    }

    fn ask(&self, prompt: &Prompt, cancel: &AtomicBool) -> Result<Answer, BackendError> {
        check_cancel(cancel)?;
        let mut conversation = prompt.clone();
        // A resumed session must not end on a user message: Claude Code would treat it as pending.
        conversation.conversation = prompt.messages();
        conversation.conversation.pop();
        let (staged, session_id) = stage(&conversation, &self.config_dir)?;
        let cwd = staged._scratch.path().to_path_buf();
        let question = question_text(&prompt.question, "in the requested JSON structure");
        let args = [
            question.as_str(),
            "--resume",
            &session_id,
            "--system-prompt",
            &prompt.system,
        ];
        let (value, usage, model) =
            self.run(&args, None, &answer_schema(), &cwd, &prompt.model, cancel)?;
        drop(staged);
        let (has_context, answer) =
            parse_answer(&value).map_err(|e| BackendError::Provider(format!("claude -p: {e}")))?;
        Ok(Answer {
            has_context,
            answer,
            usage,
            model,
            corrections: 0,
        })
    }

    fn call(&self, call: &ToolCall, cancel: &AtomicBool) -> Result<ToolAnswer, BackendError> {
        let scratch = tempfile::Builder::new()
            .prefix("ghola-call-")
            .tempdir()
            .map_err(|e| BackendError::Setup(format!("cannot make a scratch folder: {e}")))?;
        let args = ["--system-prompt", call.system.as_str()];
        let (input, usage, model) = self.run(
            &args,
            Some(&call.user),
            &call.schema,
            scratch.path(),
            &call.model,
            cancel,
        )?;
        (call.validate)(&input).map_err(|e| BackendError::InvalidAnswer {
            attempts: 1,
            last: e.0,
        })?;
        Ok(ToolAnswer {
            input,
            usage,
            model,
            corrections: 0,
        })
    }
}

/// Reads a child's pipe to the end on its own thread.
pub(crate) fn drain<R: std::io::Read + Send + 'static>(
    pipe: Option<R>,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut s);
        }
        s
    })
}

/// Why `claude -p`'s output holds no answer.
#[derive(Debug, thiserror::Error)]
enum OutputError {
    #[error("no JSON result on stdout ({0} bytes)")]
    NoResult(usize),
    /// The result says it is an error: its text, or its subtype.
    #[error("{0}")]
    Reported(String),
    #[error("the result holds no structured output")]
    NoStructuredOutput,
}

/// Reads `claude -p --output-format json`: `structured_output` holds the schema-checked value.
fn parse_output(stdout: &str, model: &str) -> Result<(Value, Usage, String), OutputError> {
    let v: Value = stdout
        .lines()
        .rev()
        .find_map(|l| {
            serde_json::from_str::<Value>(l.trim())
                .ok()
                .filter(Value::is_object)
        })
        .ok_or(OutputError::NoResult(stdout.len()))?;
    if v.get("is_error").and_then(Value::as_bool) == Some(true) {
        let why = v
            .get("result")
            .and_then(Value::as_str)
            .or_else(|| v.get("subtype").and_then(Value::as_str))
            .unwrap_or("error");
        return Err(OutputError::Reported(why.to_string()));
    }
    let structured = v
        .get("structured_output")
        .cloned()
        .or_else(|| {
            v.get("result")
                .and_then(Value::as_str)
                .and_then(|s| serde_json::from_str(s).ok())
        })
        .ok_or(OutputError::NoStructuredOutput)?;
    let usage = v.get("usage").map(Usage::from_json).unwrap_or_default();
    let model = v
        .get("modelUsage")
        .and_then(Value::as_object)
        .and_then(|m| m.keys().next().cloned())
        .unwrap_or_else(|| model.to_string());
    Ok((structured, usage, model))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_names_are_escaped_like_claude_code() {
        assert_eq!(escape_project("/Users/a/my_app.v2"), "-Users-a-my-app-v2");
    }

    #[test]
    fn output_is_parsed_and_errors_are_reported() {
        let ok = r#"{"type":"result","subtype":"success","is_error":false,"result":"","structured_output":{"hasContext":true,"answer":"42"},"usage":{"input_tokens":10,"output_tokens":3}}"#;
        let (v, usage, _) = parse_output(ok, "m").unwrap();
        assert_eq!(parse_answer(&v), Ok((true, "42".into())));
        assert_eq!(usage.input_tokens, 10);
        let err = r#"{"type":"result","subtype":"error_max_turns","is_error":true}"#;
        assert!(parse_output(err, "m").is_err());
        assert!(parse_output("not json", "m").is_err());
    }
}
