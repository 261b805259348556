//! Noticing that transcripts changed: a `notify` watcher on the Claude dir's `projects/` (debounced), a full check
//! now and then in case an event was lost, and polling where no watcher can be had. Every event also counts in
//! the service's change counter, which tells the listing it is stale.

use std::sync::mpsc;
use std::time::Duration;

/// A file watcher on the Claude dir's `projects/` (recursive) that counts each change in `seen` and signals it;
/// `None` when the platform or the directory does not allow one (then the loop polls).
pub(super) fn watch(
    claude_dir: &std::path::Path,
    seen: std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> Option<(notify::RecommendedWatcher, mpsc::Receiver<()>)> {
    use notify::{RecursiveMode, Watcher};
    let projects = claude_dir.join("projects");
    if let Err(e) = std::fs::create_dir_all(&projects) {
        tracing::warn!(
            "cannot create {} ({e}); polling instead of watching",
            projects.display()
        );
        return None;
    }
    let (tx, rx) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(e) = event
            && !matches!(e.kind, notify::EventKind::Access(_))
        {
            // Counted at once (the listing is stale from now on), signalled for the freshness loop.
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = tx.send(());
        }
    })
    .map_err(|e| tracing::warn!("no file watcher ({e}); polling instead"))
    .ok()?;
    watcher
        .watch(&projects, RecursiveMode::Recursive)
        .map_err(|e| tracing::warn!("cannot watch {} ({e}); polling instead", projects.display()))
        .ok()?;
    Some((watcher, rx))
}

/// How long events are gathered after the first one before indexing (a burst of appended lines is one update).
const DEBOUNCE: Duration = Duration::from_millis(300);
/// With a watcher, a full check still runs this often, in case an event was lost.
pub(super) const SAFETY_POLL: Duration = Duration::from_secs(60);

/// Blocks until the watched tree changed (then debounces), or until the polling interval (or `most`) passes.
pub(super) fn wait_for_change(
    signals: Option<&mpsc::Receiver<()>>,
    poll_seconds: u64,
    most: Duration,
) {
    let Some(rx) = signals else {
        std::thread::sleep(Duration::from_secs(poll_seconds.max(1)).min(most));
        return;
    };
    if rx.recv_timeout(most).is_ok() {
        let until = std::time::Instant::now() + DEBOUNCE;
        while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
            if rx.recv_timeout(left).is_err() {
                break;
            }
        }
        while rx.try_recv().is_ok() {}
    }
}
