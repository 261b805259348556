//! The user's settings, in one TOML file they may edit: `$GHOLA_CONFIG`, else `$XDG_CONFIG_HOME/ghola/config.toml`,
//! else `~/.config/ghola/config.toml`. It serves the notes (extraction model, backend, daily budget) and the work
//! loop (task model, context cap, conversation mode, editor, permission mode). Commands that change a setting
//! (`ghola notes on --budget …`) edit the file in place with `toml_edit`, keeping the user's comments and layout.
//!
//! Flags override the file; the file overrides the defaults. A missing file is the defaults; a malformed one is an
//! error naming the file and the line (the hooks log it and go on with the defaults).

use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item, value};

/// The model notes extraction asks unless told otherwise: notes are short and frequent, a fast model suffices.
pub const DEFAULT_NOTES_MODEL: &str = "claude-haiku-4-5";
/// Tokens extraction may spend per UTC day, all projects together (about 20 average session windows).
pub const DEFAULT_DAILY_BUDGET: u64 = 300_000;
/// The work loop's context cap (notes + earlier tasks), in tokens.
pub const DEFAULT_CONTEXT_TOKENS: usize = 12_000;

/// How much of a sitting a work-loop task sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// The notes only.
    Fresh,
    /// The notes and a one-paragraph summary of each earlier task of the sitting.
    #[default]
    Summary,
    /// Every task resumes the previous task's Claude Code session.
    Full,
}

impl std::str::FromStr for Mode {
    type Err = crate::config::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "fresh" => Ok(Mode::Fresh),
            "summary" => Ok(Mode::Summary),
            "full" => Ok(Mode::Full),
            other => Err(crate::config::UnknownName::new(
                "conversation mode",
                other,
                &["fresh", "summary", "full"],
            )),
        }
    }
}

impl Mode {
    /// The name used in the file and the flags.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Fresh => "fresh",
            Mode::Summary => "summary",
            Mode::Full => "full",
        }
    }
}

/// Why the settings file could not be read or written; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not valid TOML: {message}", path.display())]
    Toml { path: PathBuf, message: String },
    #[error("{}: {key} must be {want}", path.display())]
    Invalid {
        path: PathBuf,
        key: &'static str,
        want: String,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Every setting, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `[notes] model`.
    pub notes_model: String,
    /// `[notes] backend`: auto, api or claude-code.
    pub notes_backend: BackendChoice,
    /// `[notes] daily_token_budget`.
    pub daily_token_budget: u64,
    /// `[start] model`: the tasks' model (`None`: Claude Code's own default).
    pub task_model: Option<String>,
    /// `[start] context_tokens`.
    pub context_tokens: usize,
    /// `[start] mode`.
    pub mode: Mode,
    /// `[start] editor` (`None`: `$VISUAL`, `$EDITOR`, then `vi`).
    pub editor: Option<String>,
    /// `[start] permission_mode`, passed to `claude --permission-mode` (default `acceptEdits`: tasks may edit
    /// files; commands still need the user's allow-list).
    pub permission_mode: String,
    /// `[archive] enabled`: keep a compressed copy of every transcript indexed (default true).
    pub archive_enabled: bool,
    /// `[archive] redact_stored` (also read at the top level and under `[secrets]`): store the archive's copies
    /// with their credentials overwritten as they are indexed (default false: the archive keeps the bytes as
    /// written, and every output redacts them).
    pub redact_stored: bool,
    /// `machine`: what this machine is called in results (`None`: its host name).
    pub machine: Option<String>,
    /// `[remote] sync_minutes`: how often the MCP server syncs other machines' histories in the background (0:
    /// never; `ghola remote sync` still does).
    pub remote_sync_minutes: u64,
}

/// How often the MCP server syncs remotes unless `[remote] sync_minutes` says otherwise.
pub const DEFAULT_REMOTE_SYNC_MINUTES: u64 = 10;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            notes_model: DEFAULT_NOTES_MODEL.into(),
            notes_backend: BackendChoice::Auto,
            daily_token_budget: DEFAULT_DAILY_BUDGET,
            task_model: None,
            context_tokens: DEFAULT_CONTEXT_TOKENS,
            mode: Mode::Summary,
            editor: None,
            permission_mode: "acceptEdits".into(),
            archive_enabled: true,
            redact_stored: false,
            machine: None,
            remote_sync_minutes: DEFAULT_REMOTE_SYNC_MINUTES,
        }
    }
}

/// The file's text as a document (empty when absent).
fn document(path: &Path) -> Result<DocumentMut, SettingsError> {
    match std::fs::read_to_string(path) {
        Ok(text) => text
            .parse::<DocumentMut>()
            .map_err(|e| SettingsError::Toml {
                path: path.to_path_buf(),
                message: e.to_string(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DocumentMut::new()),
        Err(source) => Err(SettingsError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Reads the settings file (`Environment::settings_file`), or logs why not and uses the defaults (for hooks
/// and background work).
pub fn load_or_default(path: &Path) -> Settings {
    load_from(path).unwrap_or_else(|e| {
        tracing::warn!("{e}; using the default settings");
        Settings::default()
    })
}

/// Reads a settings file (defaults where it is silent).
pub fn load_from(path: &Path) -> Result<Settings, SettingsError> {
    let doc = document(path)?;
    let mut s = Settings::default();
    let bad = |key: &'static str, want: &str| SettingsError::Invalid {
        path: path.to_path_buf(),
        key,
        want: want.to_string(),
    };
    let get = |table: &str, key: &str| doc.get(table).and_then(|t| t.get(key));
    if let Some(v) = get("notes", "model") {
        s.notes_model = v
            .as_str()
            .ok_or_else(|| bad("notes.model", "a string"))?
            .into();
    }
    if let Some(v) = get("notes", "backend") {
        s.notes_backend = v
            .as_str()
            .and_then(|b| b.parse::<BackendChoice>().ok())
            .ok_or_else(|| bad("notes.backend", "auto, api or claude-code"))?;
    }
    if let Some(v) = get("notes", "daily_token_budget") {
        s.daily_token_budget = v
            .as_integer()
            .filter(|n| *n >= 0)
            .ok_or_else(|| bad("notes.daily_token_budget", "a non-negative integer"))?
            as u64;
    }
    if let Some(v) = get("start", "model") {
        let m = v.as_str().ok_or_else(|| bad("start.model", "a string"))?;
        s.task_model = (!m.trim().is_empty()).then(|| m.trim().to_string());
    }
    if let Some(v) = get("start", "context_tokens") {
        s.context_tokens = v
            .as_integer()
            .filter(|n| *n > 0)
            .ok_or_else(|| bad("start.context_tokens", "a positive integer"))?
            as usize;
    }
    if let Some(v) = get("start", "mode") {
        s.mode = v
            .as_str()
            .and_then(|m| m.parse().ok())
            .ok_or_else(|| bad("start.mode", "fresh, summary or full"))?;
    }
    if let Some(v) = get("start", "editor") {
        let e = v.as_str().ok_or_else(|| bad("start.editor", "a string"))?;
        s.editor = (!e.trim().is_empty()).then(|| e.trim().to_string());
    }
    if let Some(v) = get("start", "permission_mode") {
        s.permission_mode = v
            .as_str()
            .ok_or_else(|| bad("start.permission_mode", "a string"))?
            .into();
    }
    if let Some(v) = get("archive", "enabled") {
        s.archive_enabled = v
            .as_bool()
            .ok_or_else(|| bad("archive.enabled", "true or false"))?;
    }
    if let Some(v) = get("archive", "redact_stored")
        .or_else(|| doc.get("redact_stored"))
        .or_else(|| get("secrets", "redact_stored"))
    {
        s.redact_stored = v
            .as_bool()
            .ok_or_else(|| bad("redact_stored", "true or false"))?;
    }
    if let Some(v) = doc.get("machine") {
        let name = v
            .as_str()
            .filter(|n| crate::config::is_machine_name(n.trim()))
            .ok_or_else(|| bad("machine", "a name of letters, digits, '.', '_' or '-'"))?;
        s.machine = Some(name.trim().to_string());
    }
    if let Some(v) = get("remote", "sync_minutes") {
        s.remote_sync_minutes = v
            .as_integer()
            .filter(|n| *n >= 0)
            .ok_or_else(|| bad("remote.sync_minutes", "a non-negative integer"))?
            as u64;
    }
    Ok(s)
}

/// A value to write.
pub enum Value<'a> {
    Str(&'a str),
    Int(i64),
}

/// Sets `table.key` in the settings file at `path`, keeping everything else as the user wrote it.
pub fn set(path: &Path, table: &str, key: &str, v: Value) -> Result<(), SettingsError> {
    let path = path.to_path_buf();
    let mut doc = document(&path)?;
    if !doc.contains_table(table) {
        doc[table] = Item::Table(toml_edit::Table::new());
    }
    doc[table][key] = match v {
        Value::Str(s) => value(s),
        Value::Int(n) => value(n),
    };
    crate::atomic_file::write_atomic(&path, doc.to_string().as_bytes())
        .map_err(|source| SettingsError::Write { path, source })
}

/// The editor to open notes with: the setting, the environment's (`$VISUAL`, `$EDITOR`), else `vi`.
pub fn editor(s: &Settings, env: &crate::config::Environment) -> String {
    s.editor
        .clone()
        .or_else(|| env.editor.clone())
        .unwrap_or_else(|| "vi".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_read_and_bad_values_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        assert_eq!(load_from(&p).unwrap(), Settings::default());
        std::fs::write(
            &p,
            "# mine\n[notes]\nmodel = \"m1\"\ndaily_token_budget = 5\n[start]\nmode = \"full\"\ncontext_tokens = 100\nmodel = \"\"\n",
        )
        .unwrap();
        let s = load_from(&p).unwrap();
        assert_eq!(s.notes_model, "m1");
        assert_eq!(s.daily_token_budget, 5);
        assert_eq!(s.mode, Mode::Full);
        assert_eq!(s.context_tokens, 100);
        assert_eq!(s.task_model, None);
        std::fs::write(&p, "machine = \"laptop\"\n[remote]\nsync_minutes = 0\n").unwrap();
        let s = load_from(&p).unwrap();
        assert_eq!(s.machine.as_deref(), Some("laptop"));
        assert_eq!(s.remote_sync_minutes, 0);
        std::fs::write(&p, "machine = \"my laptop/2\"\n").unwrap();
        assert!(load_from(&p).unwrap_err().to_string().contains("machine"));
        std::fs::write(&p, "[start]\nmode = \"chatty\"\n").unwrap();
        let e = load_from(&p).unwrap_err();
        assert!(
            matches!(&e, SettingsError::Invalid { key: "start.mode", path, .. } if *path == p),
            "{e}"
        );
        std::fs::write(&p, "[notes]\ndaily_token_budget = \"lots\"\n").unwrap();
        assert!(
            load_from(&p)
                .unwrap_err()
                .to_string()
                .contains("daily_token_budget")
        );
        std::fs::write(&p, "[notes]\nbackend = \"carrier-pigeon\"\n").unwrap();
        assert!(
            load_from(&p)
                .unwrap_err()
                .to_string()
                .contains("auto, api or claude-code")
        );
        std::fs::write(&p, "[notes\n").unwrap();
        assert!(matches!(
            load_from(&p).unwrap_err(),
            SettingsError::Toml { .. }
        ));
    }
}

/// Which model backend answers duncan and notes extraction: a setting (`[notes] backend`, `--backend`), so it
/// lives here, below the backends that act on it (`model::choose`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// The API when `ANTHROPIC_API_KEY` is set, else headless Claude Code.
    #[default]
    Auto,
    Api,
    ClaudeCode,
}

impl BackendChoice {
    /// The name used in the file and the flags.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Api => "api",
            Self::ClaudeCode => "claude-code",
        }
    }
}

impl std::str::FromStr for BackendChoice {
    type Err = crate::config::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "auto" => Ok(Self::Auto),
            "api" => Ok(Self::Api),
            "claude-code" | "claude" | "headless" => Ok(Self::ClaudeCode),
            other => Err(crate::config::UnknownName::new(
                "backend",
                other,
                &["auto", "api", "claude-code"],
            )),
        }
    }
}
