//! The extraction worker: one detached process at a time (the `worker.lock`), started by the hooks. It turns
//! queued sessions (`queue/<session>.json`, written by the SessionEnd and PreCompact hooks) into due windows,
//! brings the index up to date (words only: extraction reads text), and extracts every due window whose
//! back-off has passed, until the queue is empty or the daily budget is spent.

use super::extract::{Extractor, Outcome};
use super::merge::{Similarity, similarity};
use super::store::{Meta, NotesError, Store, WindowState, io, lock_file, write_atomic, write_lock};
use super::window::windows_of;
use crate::index::UpdateOptions;
use crate::index::snapshot::Snapshot;
use crate::settings::Settings;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// A session a hook asked to extract.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Queued {
    pub session: String,
    /// The hook's working directory (the worker takes the project from the index).
    #[serde(default)]
    pub cwd: String,
    /// `session-end`, `pre-compact` or `session-start` (a window that ended without extraction).
    pub event: String,
    pub at_ms: i64,
}

/// A session id as a hook may pass it ([`crate::transcript::is_session_name`]).
pub fn safe_session(id: &str) -> Option<&str> {
    crate::transcript::is_session_name(id).then_some(id)
}

/// A file-name form of a session id: the id itself when it is plain ASCII (uuids), else `x-` and its bytes in
/// hex, so that no character a file system refuses or folds ever reaches a file name.
fn file_stem(id: &str) -> String {
    if id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !id.starts_with("x-")
    {
        id.to_string()
    } else {
        let hex: String = id.bytes().map(|b| format!("{b:02x}")).collect();
        format!("x-{hex}")
    }
}

/// Queues a session for the worker (one small file per session and event, written atomically; a repeat
/// overwrites it).
pub fn enqueue(store: &Store, q: &Queued) -> Result<(), NotesError> {
    let Some(id) = safe_session(&q.session) else {
        return Err(NotesError::NotASession(q.session.clone()));
    };
    // One file per session and event: a SessionEnd right after a PreCompact does not hide it.
    let event: String = q
        .event
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let path = store
        .root
        .join("queue")
        .join(format!("{}.{event}.json", file_stem(id)));
    write_atomic(&path, &crate::notes::store::to_json(&path, q, false)?)
}

/// The queued sessions (unreadable entries are removed).
pub fn queued(store: &Store) -> Vec<(PathBuf, Queued)> {
    let Ok(rd) = std::fs::read_dir(store.root.join("queue")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        match std::fs::read(&p)
            .ok()
            .and_then(|b| serde_json::from_slice::<Queued>(&b).ok())
        {
            Some(q) => out.push((p, q)),
            None => {
                let _ = std::fs::remove_file(&p);
            }
        }
    }
    out.sort_by_key(|(_, q)| q.at_ms);
    out
}

/// Whether some window of an enabled project is due now.
pub fn anything_due(store: &Store, now_ms: i64) -> bool {
    if !queued(store).is_empty() {
        return true;
    }
    store
        .metas()
        .iter()
        .any(|m| store.enabled(m) && due_windows(m, now_ms).next().is_some())
}

/// The due windows of a project whose back-off has passed.
pub fn due_windows(meta: &Meta, now_ms: i64) -> impl Iterator<Item = &WindowState> {
    meta.windows
        .values()
        .filter(move |w| w.due && w.next_try_ms.is_none_or(|t| t <= now_ms))
}

/// Holds `worker.lock`: at most one worker runs.
pub struct WorkerLock(#[allow(dead_code)] std::fs::File);

/// Takes the worker lock without waiting; `None` when another worker holds it.
pub fn try_worker_lock(store: &Store) -> Result<Option<WorkerLock>, NotesError> {
    let (f, path) = lock_file(&store.root, "worker.lock")?;
    match f.try_lock() {
        Ok(()) => Ok(Some(WorkerLock(f))),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(io(&path)(e)),
    }
}

/// Where the worker runs.
pub struct WorkerConfig {
    pub store: Store,
    pub index_dir: PathBuf,
    pub claude_dir: PathBuf,
    /// Where the model is (for duplicates by meaning).
    pub model: crate::embed::ModelPlaces,
    /// The environment read at the top (the API key and the `claude` CLI the backend needs).
    pub env: crate::config::Environment,
    /// The settings the caller read (model, backend, daily budget).
    pub settings: Settings,
    /// The base of the index update made before extracting (archive kept or not, publish spacing).
    pub update: UpdateOptions,
}

/// What a worker run did.
#[derive(Debug, Default, Serialize)]
pub struct WorkReport {
    pub extracted: usize,
    pub failed: usize,
    pub nothing_new: usize,
    pub budget_spent: bool,
    pub items_added: usize,
    pub tokens: u64,
}

/// What the settings' backend means here, for a person: where extraction sends a window.
pub fn backend_description(settings: &Settings, env: &crate::config::Environment) -> &'static str {
    use crate::model::BackendChoice;
    match settings.notes_backend {
        BackendChoice::Api => "the Anthropic API (ANTHROPIC_API_KEY)",
        BackendChoice::ClaudeCode => "Claude Code (`claude -p`, your Claude Code login)",
        _ if env.api_key.is_some() => "the Anthropic API (ANTHROPIC_API_KEY)",
        _ => "Claude Code (`claude -p`, your Claude Code login)",
    }
}

/// Brings the index up to date by words only (extraction reads text) and without merging (that is the server's
/// and `ghola index`'s business): what runs before an extraction.
/// `base` carries the caller's settings (archive, publish spacing).
pub fn update_index(
    index_dir: &Path,
    claude_dir: &Path,
    base: UpdateOptions,
) -> Result<crate::index::UpdateSummary, crate::index::IndexError> {
    let opts = UpdateOptions {
        merge: false,
        ..base
    };
    crate::index::update::update_words_only(index_dir, claude_dir, opts, &mut |_| {})
}

/// Turns queued sessions into due windows (of enabled projects). Sessions the index does not hold yet stay
/// queued for a day.
fn absorb_queue(store: &Store, snap: &Snapshot, now_ms: i64) -> Result<(), NotesError> {
    for (path, q) in queued(store) {
        let windows = windows_of(snap, &q.session);
        if windows.is_empty() {
            if now_ms - q.at_ms > 86_400_000 {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        let _lock = write_lock(&store.root)?;
        for w in windows {
            let mut notes = store.open(&w.project);
            if !store.enabled(&notes.meta) {
                continue;
            }
            let st = notes.meta.window_mut(&w.session, w.window);
            if st.extracted_seq.is_none_or(|s| s < w.last_seq) && !st.due {
                st.due = true;
                st.next_try_ms = None;
                st.trigger = Some(q.event.clone());
            }
            notes.save_meta()?;
        }
        let _ = std::fs::remove_file(&path);
    }
    Ok(())
}

/// Runs the worker until nothing is due (or the budget is spent). Returns `None` when another worker runs.
pub fn work(cfg: &WorkerConfig, cancel: &AtomicBool) -> Result<Option<WorkReport>, NotesError> {
    let mut total: Option<WorkReport> = None;
    loop {
        let Some(lock) = try_worker_lock(&cfg.store)? else {
            return Ok(total);
        };
        let r = work_locked(cfg, cancel)?;
        drop(lock);
        let budget_spent = r.budget_spent;
        let t = total.get_or_insert_with(WorkReport::default);
        t.extracted += r.extracted;
        t.failed += r.failed;
        t.nothing_new += r.nothing_new;
        t.items_added += r.items_added;
        t.tokens += r.tokens;
        t.budget_spent |= budget_spent;
        // A hook may have queued a session after our last look, and its worker found the lock taken: look again
        // now that the lock is free (another worker may have taken it: then that one carries on).
        if budget_spent || queued(&cfg.store).is_empty() {
            return Ok(total);
        }
    }
}

fn work_locked(cfg: &WorkerConfig, cancel: &AtomicBool) -> Result<WorkReport, NotesError> {
    let mut report = WorkReport::default();
    let mut backend: Option<Box<dyn crate::model::Backend>> = None;
    let mut sim: Option<Box<dyn Similarity>> = None;
    let mut failed_setup = false;
    // Hooks may queue more while we work: a few rounds pick those up.
    for _round in 0..5 {
        let now = chrono::Utc::now().timestamp_millis();
        if !queued(&cfg.store).is_empty()
            && let Err(e) = update_index(&cfg.index_dir, &cfg.claude_dir, cfg.update)
        {
            tracing::warn!("index update before extraction failed: {e}");
        }
        let snap = Snapshot::open(&cfg.index_dir)?;
        absorb_queue(&cfg.store, &snap, now)?;
        let mut due: Vec<(String, String, u32)> = Vec::new();
        for meta in cfg.store.metas() {
            if cfg.store.enabled(&meta) {
                due.extend(
                    due_windows(&meta, now)
                        .map(|w| (meta.project.clone(), w.session.clone(), w.window)),
                );
            }
        }
        if due.is_empty() || failed_setup {
            break;
        }
        if backend.is_none() {
            match crate::model::choose(cfg.settings.notes_backend, &cfg.claude_dir, &cfg.env) {
                Ok(b) => backend = Some(b),
                Err(why) => {
                    for (p, s, w) in &due {
                        let _l = write_lock(&cfg.store.root)?;
                        let mut n = cfg.store.open(p);
                        if let Some(st) = n.meta.windows.get_mut(&Meta::key(s, *w)) {
                            st.attempts += 1;
                            st.next_try_ms = Some(now + super::extract::backoff_ms(st.attempts));
                            st.last_error = Some(why.to_string());
                        }
                        n.save_meta()?;
                    }
                    report.failed += due.len();
                    failed_setup = true;
                    continue;
                }
            }
        }
        let sim = sim.get_or_insert_with(|| similarity(&cfg.model));
        let ex = Extractor::new(
            &cfg.store,
            backend.as_deref().expect("set above"),
            sim.as_ref(),
            &cfg.settings,
        );
        for (project, session, window) in due {
            match ex.window(&snap, &project, &session, window, cancel)? {
                Outcome::Extracted { added, tokens, .. } => {
                    report.extracted += 1;
                    report.items_added += added;
                    report.tokens += tokens;
                    tracing::info!(
                        "extracted {session}:{window} of {project}: {added} new notes, {tokens} tokens"
                    );
                }
                Outcome::NothingNew => report.nothing_new += 1,
                Outcome::BudgetSpent { .. } => {
                    report.budget_spent = true;
                    tracing::warn!("daily token budget spent: extraction waits");
                    return Ok(report);
                }
                Outcome::Failed { error, .. } => {
                    report.failed += 1;
                    tracing::warn!("extraction of {session}:{window} failed: {error}");
                }
                Outcome::DryRun { .. } => {}
            }
        }
    }
    Ok(report)
}

/// Starts `ghola notes work` detached: its own session, no terminal, stdio away from the hook's pipes (Claude
/// Code kills a SessionEnd hook after about 1.5 s; the worker must outlive it), stderr appended to
/// `worker.log` in the notes dir.
pub fn spawn_worker(store: &Store, exe: &Path, global_args: &[String]) -> std::io::Result<()> {
    use std::process::{Command, Stdio};
    std::fs::create_dir_all(&store.root)?;
    let log_path = store.root.join("worker.log");
    if std::fs::metadata(&log_path).is_ok_and(|m| m.len() > 1 << 20) {
        let _ = std::fs::rename(&log_path, store.root.join("worker.log.old"));
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)?;
    let mut cmd = Command::new(exe);
    cmd.args(global_args)
        .args(["notes", "work"])
        .env("GHOLA_NOTES_DIR", &store.root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log));
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    cmd.spawn().map(|_| ())
}
