//! The plugin's hooks, each answering in milliseconds and handing slow work to the detached worker:
//!
//! - `SessionStart` prints the compiled notes as `additionalContext`, and (extraction on) queues the sessions
//!   of this project that ended without extraction;
//! - `SessionEnd` and `PreCompact` queue the session (extraction on) and start the worker.
//!
//! A hook started by ghola's own `claude` (the environment carries [`HOOKS_OFF_ENV`]) does nothing.

use super::context::{HOOK_MAX_CHARS, compile_for};
use super::store::Store;
use super::worker::{Queued, anything_due, enqueue, safe_session, spawn_worker};
use crate::index::snapshot::{NO_AGENT, Snapshot};
pub use crate::model::headless::HOOKS_OFF_ENV;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A session idle this long without a SessionEnd counts as ended (crashed, killed, closed terminal).
const ENDED_AFTER_MS: i64 = 30 * 60_000;

/// What the hooks need to know.
pub struct HookEnv {
    pub store: Store,
    /// `CLAUDE_PROJECT_DIR`, the project when the hook input names no `cwd`.
    pub project_dir: Option<String>,
    /// The hook runs under a `claude` ghola started ([`HOOKS_OFF_ENV`] set): it does nothing.
    pub hooks_off: bool,
    pub index_dir: PathBuf,
    /// This executable, to start the worker.
    pub exe: PathBuf,
    /// Global flags to pass on to the worker (`--claude-dir`, `--index-dir`, `--model-dir`).
    pub worker_args: Vec<String>,
}

/// The hook events ghola handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    SessionStart,
    SessionEnd,
    PreCompact,
}

impl std::str::FromStr for Event {
    type Err = crate::config::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "session-start" | "SessionStart" => Ok(Event::SessionStart),
            "session-end" | "SessionEnd" => Ok(Event::SessionEnd),
            "pre-compact" | "PreCompact" => Ok(Event::PreCompact),
            other => Err(crate::config::UnknownName::new(
                "hook event",
                other,
                &["session-start", "session-end", "pre-compact"],
            )),
        }
    }
}

/// The project of the hook's session: Claude Code's `cwd` (where the session started, for SessionStart),
/// else `$CLAUDE_PROJECT_DIR`.
fn project_of(input: &Value, env: &HookEnv) -> Option<String> {
    input
        .get("cwd")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| env.project_dir.clone())
        .filter(|p| !p.is_empty())
}

/// Handles one hook call; returns what to print on stdout (Claude Code reads it), if anything.
pub fn handle(event: Event, input: &Value, env: &HookEnv) -> Option<String> {
    if env.hooks_off {
        return None;
    }
    let project = project_of(input, env)?;
    let session = input
        .get("session_id")
        .and_then(Value::as_str)
        .and_then(safe_session)
        .map(str::to_string);
    let now = chrono::Utc::now().timestamp_millis();
    let notes = env.store.open(&project);
    let enabled = env.store.enabled(&notes.meta);
    match event {
        Event::SessionEnd | Event::PreCompact => {
            if !enabled {
                return None;
            }
            let session = session?;
            let q = Queued {
                session,
                cwd: project,
                event: if event == Event::SessionEnd {
                    "session-end"
                } else {
                    "pre-compact"
                }
                .into(),
                at_ms: now,
            };
            if let Err(e) = enqueue(&env.store, &q) {
                tracing::warn!("cannot queue the session for notes: {e}");
                return None;
            }
            if let Err(e) = spawn_worker(&env.store, &env.exe, &env.worker_args) {
                tracing::warn!("cannot start the notes worker: {e}");
            }
            None
        }
        Event::SessionStart => {
            if notes.meta.archived {
                return None;
            }
            let snap = Snapshot::open(&env.index_dir).ok();
            let context = compile_for(
                &env.store,
                &notes,
                &project,
                snap.as_ref(),
                session.as_deref(),
                HOOK_MAX_CHARS,
            );
            if enabled {
                if let Some(snap) = &snap {
                    queue_missed(env, snap, &notes.meta, &project, session.as_deref(), now);
                }
                if anything_due(&env.store, now)
                    && let Err(e) = spawn_worker(&env.store, &env.exe, &env.worker_args)
                {
                    tracing::warn!("cannot start the notes worker: {e}");
                }
            }
            if context.is_empty() {
                return None;
            }
            Some(
                json!({"hookSpecificOutput": {
                    "hookEventName": "SessionStart",
                    "additionalContext": context,
                }})
                .to_string(),
            )
        }
    }
}

/// Queues sessions of `project` that ended (idle for [`ENDED_AFTER_MS`]) after extraction was turned on and
/// still have windows not extracted to their end.
fn queue_missed(
    env: &HookEnv,
    snap: &Snapshot,
    meta: &super::store::Meta,
    project: &str,
    current: Option<&str>,
    now: i64,
) {
    // Only sessions that ended after extraction was turned on: older ones are extracted when asked.
    let since = meta
        .enabled_since_ms
        .or(env.store.state().enabled_since_ms)
        .unwrap_or(now);
    let Some(psym) = snap.sym_of(project) else {
        return;
    };
    // session → (window → last seq), last activity
    let mut sessions: BTreeMap<u32, (BTreeMap<u32, u32>, i64)> = BTreeMap::new();
    for r in &snap.messages {
        if r.project != psym || r.agent != NO_AGENT {
            continue;
        }
        let e = sessions.entry(r.session).or_default();
        let seq = e.0.entry(r.window).or_default();
        *seq = (*seq).max(r.seq);
        e.1 = e.1.max(r.timestamp_ms.unwrap_or(0));
    }
    for (sym, (windows, last)) in sessions {
        let id = snap.sym(sym);
        if Some(id) == current || last < since || now - last < ENDED_AFTER_MS {
            continue;
        }
        let missed = windows.iter().any(|(w, seq)| {
            meta.windows
                .get(&super::store::Meta::key(id, *w))
                .is_none_or(|st| !st.due && st.extracted_seq.is_none_or(|s| s < *seq))
        });
        if missed {
            let _ = enqueue(
                &env.store,
                &Queued {
                    session: id.to_string(),
                    cwd: project.to_string(),
                    event: "session-start".into(),
                    at_ms: now,
                },
            );
        }
    }
}
