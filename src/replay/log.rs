//! The query log: every answered window, one JSON object per line, in `$DUNCAN_LOG` or
//! `<claude dir>/duncan.jsonl` (the file duncan-cc writes, so existing tooling keeps reading it).

use super::run::WindowResult;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One line of the log (field names as duncan-cc writes them).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogLine<'a> {
    pub batch_id: &'a str,
    pub question: &'a str,
    pub answer: &'a str,
    pub has_context: bool,
    pub target_session: &'a str,
    pub window_index: u32,
    pub window_type: &'a str,
    pub source_session: Option<&'a str>,
    pub strategy: &'a str,
    pub model: &'a str,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub latency_ms: u64,
    pub timestamp: String,
}

/// Where the log goes: `chosen` (`$DUNCAN_LOG`, read at the top), else `duncan.jsonl` in the Claude config dir.
pub fn log_path(claude_dir: &Path, chosen: Option<&Path>) -> PathBuf {
    chosen.map_or_else(|| claude_dir.join("duncan.jsonl"), Path::to_path_buf)
}

/// Appends one answered window. Each line is written with a single `write` on an `O_APPEND` file, so
/// concurrent servers never interleave inside a line. Failure is logged, never fatal.
pub fn append(
    path: &Path,
    batch_id: &str,
    question: &str,
    strategy: &str,
    source_session: Option<&str>,
    r: &WindowResult,
) {
    let Some(answer) = &r.answer else { return };
    let line = LogLine {
        batch_id,
        question,
        answer,
        has_context: r.has_context,
        target_session: &r.session_id,
        window_index: r.window,
        window_type: r.window_type_name(),
        source_session,
        strategy,
        model: &r.model,
        input_tokens: r.tokens.input_tokens,
        output_tokens: r.tokens.output_tokens,
        cache_creation_input_tokens: r.tokens.cache_creation_input_tokens,
        cache_read_input_tokens: r.tokens.cache_read_input_tokens,
        latency_ms: r.latency_ms,
        timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    };
    let mut text = match serde_json::to_string(&line) {
        Ok(t) => t,
        Err(_) => return,
    };
    text.push('\n');
    let result = (|| {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        f.write_all(text.as_bytes())
    })();
    if let Err(e) = result {
        tracing::warn!("cannot append to the query log {}: {e}", path.display());
    }
}
