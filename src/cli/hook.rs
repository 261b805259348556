//! `ghola hook EVENT`: the plugin's hook entry point (Claude Code's hook input on stdin, the hook's answer on
//! stdout).

use anyhow::{Context, Result};
use ghola::notes::Store;
use ghola::notes::hooks::{Event, HookEnv};
use std::io::{Read, Write};
use std::path::Path;

/// Global flags the worker needs to see the same dirs.
pub fn worker_args(claude_dir: &Path, index_dir: &Path, model_dir: Option<&Path>) -> Vec<String> {
    let mut a = vec![
        "--claude-dir".to_string(),
        claude_dir.display().to_string(),
        "--index-dir".to_string(),
        index_dir.display().to_string(),
    ];
    if let Some(m) = model_dir {
        a.extend(["--model-dir".to_string(), m.display().to_string()]);
    }
    a
}

/// `ghola hook EVENT`: reads Claude Code's hook input on stdin, prints what the hook says, never fails loudly
/// (a broken hook must not break the session).
pub fn hook_cmd(
    index_dir: &Path,
    claude_dir: &Path,
    model_dir: Option<&Path>,
    env: &ghola::config::Environment,
    event: &str,
) -> Result<()> {
    let event: Event = event.parse()?;
    let mut input = String::new();
    let _ = std::io::stdin().take(1 << 20).read_to_string(&mut input);
    let input: serde_json::Value = serde_json::from_str(&input).unwrap_or_default();
    let env = HookEnv {
        store: Store::new(&ghola::config::notes_dir()),
        project_dir: env.project_dir.clone(),
        hooks_off: env.hooks_off,
        index_dir: index_dir.to_path_buf(),
        exe: std::env::current_exe().context("cannot find the ghola executable")?,
        worker_args: worker_args(claude_dir, index_dir, model_dir),
    };
    if let Some(text) = ghola::notes::hooks::handle(event, &input, &env) {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.write_all(b"\n")?;
    }
    Ok(())
}
