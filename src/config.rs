//! Where things live: the Claude Code config dir, ghola's index dir, the model dir.
//!
//! Every other module asks this one instead of reading the environment itself, so the precedence rules
//! (flag, then environment, then default) are written down exactly once.

use std::path::{Path, PathBuf};

/// The Claude Code configuration directory: `--claude-dir`, else `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
///
/// Claude Code itself honours `CLAUDE_CONFIG_DIR`, so ghola must look where Claude Code writes.
pub fn claude_dir(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    if let Some(p) = non_empty_env("CLAUDE_CONFIG_DIR") {
        return PathBuf::from(p);
    }
    home_dir().join(".claude")
}

/// The directory holding ghola's index: `--index-dir`, else `$GHOLA_HOME`, else `$XDG_CACHE_HOME/ghola`,
/// else `~/.cache/ghola`.
pub fn index_dir(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    if let Some(p) = non_empty_env("GHOLA_HOME") {
        return PathBuf::from(p);
    }
    if let Some(p) = non_empty_env("XDG_CACHE_HOME") {
        return PathBuf::from(p).join("ghola");
    }
    home_dir().join(".cache").join("ghola")
}

/// The user's home directory (`$HOME`), falling back to the current directory when it is unset so that
/// ghola degrades instead of panicking in odd environments (cron, containers).
pub fn home_dir() -> PathBuf {
    non_empty_env("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// An environment variable, treating an empty value as unset (as shells commonly export `VAR=`).
pub fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Where project notes live: `$GHOLA_NOTES_DIR`, else `$XDG_DATA_HOME/ghola/notes`, else
/// `~/.local/share/ghola/notes`.
///
/// Deliberately not under the index dir: the index is a cache that can be rebuilt from transcripts (and is
/// set aside when damaged), notes are the user's own files and cannot be rebuilt.
pub fn notes_dir() -> PathBuf {
    if let Some(p) = non_empty_env("GHOLA_NOTES_DIR") {
        return PathBuf::from(p);
    }
    if let Some(p) = non_empty_env("XDG_DATA_HOME") {
        return PathBuf::from(p).join("ghola").join("notes");
    }
    home_dir()
        .join(".local")
        .join("share")
        .join("ghola")
        .join("notes")
}

/// A name that is not one of the choices (a mode, a backend, a hook event), from a flag, a setting or a tool
/// argument: says which kind of name it was and what the choices are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} '{given}': use {choices}")]
pub struct UnknownName {
    /// What was being named ("mode", "backend", "hook event").
    pub what: &'static str,
    pub given: String,
    /// The accepted names, for the message.
    pub choices: String,
}

impl UnknownName {
    /// `given` is not a `what`; `choices` lists the accepted names.
    pub fn new(what: &'static str, given: &str, choices: &[&str]) -> Self {
        let choices = match choices {
            [] => String::new(),
            [one] => one.to_string(),
            [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
        };
        UnknownName {
            what,
            given: given.to_string(),
            choices,
        }
    }
}
