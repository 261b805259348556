//! Where things live (the Claude Code config dir, ghola's index and notes dirs) and everything else ghola takes
//! from the environment ([`Environment`]).
//!
//! This module and the binary are the only places that read environment variables: the binary reads them once,
//! at the start, and hands the values down (`tests/module_order.rs::only_the_top_reads_the_environment` fails on a
//! read anywhere else). The precedence rules (flag, then environment, then default) are written down here once.

use std::path::{Path, PathBuf};

/// The Claude Code configuration directory: `--claude-dir`, else `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
///
/// Claude Code itself honours `CLAUDE_CONFIG_DIR`, so ghola must look where Claude Code writes. A relative
/// path is made absolute against the current directory (see `absolute`).
pub fn claude_dir(flag: Option<&Path>) -> PathBuf {
    let chosen = match flag {
        Some(p) => p.to_path_buf(),
        None => non_empty_env("CLAUDE_CONFIG_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| home_dir().join(".claude")),
    };
    absolute(&chosen)
}

/// `path` made absolute against the current directory, without touching the file system (no symlink is
/// resolved): the index names every transcript by its path under the Claude dir, so the same history given
/// once as `../corpus` and once as `/work/corpus` must not read as two (every file indexed again, the first
/// copies marked deleted, the stored data doubled), and a relative index dir must not move with the
/// directory a server happens to be started in. An absolute path is left exactly as given (an index built under
/// it keeps its names), and so is a relative one when the current directory cannot be read.
fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The directory holding ghola's index: `--index-dir`, else `$GHOLA_HOME`, else `$XDG_CACHE_HOME/ghola`,
/// else `~/.cache/ghola`; a relative one made absolute, as the Claude dir is.
pub fn index_dir(flag: Option<&Path>) -> PathBuf {
    let chosen = match flag {
        Some(p) => p.to_path_buf(),
        None => non_empty_env("GHOLA_HOME")
            .map(PathBuf::from)
            .or_else(|| non_empty_env("XDG_CACHE_HOME").map(|p| PathBuf::from(p).join("ghola")))
            .unwrap_or_else(|| home_dir().join(".cache").join("ghola")),
    };
    absolute(&chosen)
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
/// `~/.local/share/ghola/notes`; a relative one made absolute, as the index dir is (hooks, the MCP server and
/// the detached worker each start in another directory, and must all find the same notes).
///
/// Deliberately not under the index dir: the index is a cache that can be rebuilt from transcripts (and is
/// set aside when damaged), notes are the user's own files and cannot be rebuilt.
pub fn notes_dir() -> PathBuf {
    let chosen = non_empty_env("GHOLA_NOTES_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            non_empty_env("XDG_DATA_HOME").map(|p| PathBuf::from(p).join("ghola").join("notes"))
        })
        .unwrap_or_else(|| {
            home_dir()
                .join(".local")
                .join("share")
                .join("ghola")
                .join("notes")
        });
    absolute(&chosen)
}

/// The variable set on every `claude` ghola starts: hooks that see it do nothing.
pub const HOOKS_OFF_ENV: &str = "GHOLA_HOOKS_OFF";

/// Everything ghola takes from the environment besides where its own folders are, read once at the top
/// ([`Environment::read`], by the binary) and handed down as data.
#[derive(Debug, Clone)]
pub struct Environment {
    /// `ANTHROPIC_API_KEY`: the Messages API backend's key.
    pub api_key: Option<String>,
    /// `ANTHROPIC_BASE_URL`: where that API is (default `https://api.anthropic.com`).
    pub api_base_url: Option<String>,
    /// `GHOLA_CLAUDE_BIN`: the Claude Code CLI to run, instead of `claude` on `PATH` (see
    /// [`Environment::claude_bin`]).
    pub claude_bin: Option<PathBuf>,
    /// `PATH`, where `claude` is looked for when `GHOLA_CLAUDE_BIN` does not name it.
    pub path: Option<std::ffi::OsString>,
    /// `CLAUDE_PROJECT_DIR`: the calling project, as Claude Code gives it to hooks and servers.
    pub project_dir: Option<String>,
    /// `CLAUDE_CODE_SESSION_ID`: the calling session.
    pub session_id: Option<String>,
    /// [`HOOKS_OFF_ENV`] is set (to anything): this process runs under a `claude` ghola started.
    pub hooks_off: bool,
    /// `DUNCAN_LOG`: where duncan's query log goes (default: `duncan.jsonl` in the Claude dir).
    pub duncan_log: Option<PathBuf>,
    /// `GHOLA_MODEL_DIR`: a folder holding the model's files.
    pub model_dir: Option<PathBuf>,
    /// `HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub` (the rules of the Python
    /// `huggingface_hub`, which hf-hub follows only in part).
    pub hf_hub_cache: PathBuf,
    /// `HF_HUB_OFFLINE` (anything but `0` or `false`): no network, as for every Hugging Face tool.
    pub hf_offline: bool,
    /// `HF_ENDPOINT`, else `https://huggingface.co`: where the Hub is.
    pub hf_endpoint: String,
    /// `VISUAL`, else `EDITOR`: the editor notes are opened in when the settings name none.
    pub editor: Option<String>,
    /// `GHOLA_CONFIG`, else `$XDG_CONFIG_HOME/ghola/config.toml`, else `~/.config/ghola/config.toml`.
    pub settings_file: PathBuf,
    /// `GHOLA_SSH`: the command `ghola remote` runs instead of `ssh` (as `GIT_SSH_COMMAND` does for git), split at
    /// whitespace.
    pub ssh_command: Option<String>,
    /// `GHOLA_HUB_PUSH_SECONDS`: how often the MCP server looks for something to push to the team hub (default
    /// 60; tests shorten it).
    pub hub_push_seconds: Option<u64>,
}

impl Environment {
    /// Where the model may be, with `flag` (`--model-dir`) before `GHOLA_MODEL_DIR`: the embedding crate reads no
    /// variable, so its places are built here.
    pub fn model_places(&self, flag: Option<&Path>) -> ghola_embed::ModelPlaces {
        ghola_embed::ModelPlaces {
            dir: flag
                .map(Path::to_path_buf)
                .or_else(|| self.model_dir.clone()),
            hub_cache: self.hf_hub_cache.clone(),
            offline: self.hf_offline,
            endpoint: self.hf_endpoint.clone(),
        }
    }

    /// Reads this process's environment.
    pub fn read() -> Self {
        let mut env = Self::from_vars(&non_empty_env);
        env.hooks_off = std::env::var_os(HOOKS_OFF_ENV).is_some();
        env.path = std::env::var_os("PATH");
        env
    }

    /// The Claude Code CLI every `claude` ghola runs (replay, notes extraction, `ghola start`):
    /// `GHOLA_CLAUDE_BIN`, else `claude` in a folder of `PATH`; `None` when neither has it. Looked for when asked,
    /// not at start-up: most commands (a hook, a search) never run `claude`.
    pub fn claude_bin(&self) -> Option<PathBuf> {
        self.claude_bin.clone().or_else(|| {
            std::env::split_paths(self.path.as_ref()?)
                .map(|d| d.join("claude"))
                .find(|p| p.is_file())
        })
    }

    /// The environment `var` gives (an unset or empty variable is `None`); `PATH` is left unset.
    pub fn from_vars(var: &dyn Fn(&str) -> Option<String>) -> Self {
        let home = || {
            var("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("."))
        };
        Self {
            api_key: var("ANTHROPIC_API_KEY"),
            api_base_url: var("ANTHROPIC_BASE_URL"),
            claude_bin: var("GHOLA_CLAUDE_BIN").map(PathBuf::from),
            path: None,
            project_dir: var("CLAUDE_PROJECT_DIR"),
            session_id: var("CLAUDE_CODE_SESSION_ID"),
            hooks_off: var(HOOKS_OFF_ENV).is_some(),
            duncan_log: var("DUNCAN_LOG").map(PathBuf::from),
            model_dir: var("GHOLA_MODEL_DIR").map(PathBuf::from),
            hf_hub_cache: var("HF_HUB_CACHE")
                .map(PathBuf::from)
                .or_else(|| var("HF_HOME").map(|h| PathBuf::from(h).join("hub")))
                .unwrap_or_else(|| home().join(".cache/huggingface/hub")),
            hf_offline: var("HF_HUB_OFFLINE").is_some_and(|v| v != "0" && v != "false"),
            hf_endpoint: var("HF_ENDPOINT")
                .map(|e| e.trim_end_matches('/').to_string())
                .unwrap_or_else(|| "https://huggingface.co".to_string()),
            editor: var("VISUAL").or_else(|| var("EDITOR")),
            ssh_command: var("GHOLA_SSH"),
            hub_push_seconds: var("GHOLA_HUB_PUSH_SECONDS").and_then(|v| v.parse().ok()),
            settings_file: var("GHOLA_CONFIG").map(PathBuf::from).unwrap_or_else(|| {
                var("XDG_CONFIG_HOME")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| home().join(".config"))
                    .join("ghola")
                    .join("config.toml")
            }),
        }
    }
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

/// Whether `name` can name a machine: 1 to 64 letters, digits, `.`, `_` or `-`, not starting with `.` or `-` (it
/// becomes a folder name and a filter value).
pub fn is_machine_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with(['.', '-'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// What this machine is called when the settings do not say: its host name up to the first dot (`laptop`, not
/// `laptop.local`), made a valid machine name; `this-machine` when it has none.
pub fn host_machine_name() -> String {
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    let short: String = host
        .split('.')
        .next()
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    let short = short.trim_start_matches('-').to_string();
    if is_machine_name(&short) {
        short
    } else {
        "this-machine".into()
    }
}
