//! One history service under every front end: what the CLI, the MCP server and the browser need of the history
//! — the transcript sources, the listing, the open index, the embedding model, freshness — owned in one value,
//! and the one place a search is made ([`HistoryService::search`] on a [`SearchRequest`]). A front end turns its
//! arguments into a request and the answer into its own format; nothing else. Other machines and a team hub
//! plug in here.
//!
//! - [`request`] the request type, its typed choices and its defaults as constants;
//! - `model.rs` the embedding model's life (found or downloaded with retries, loaded in the background, shared);
//! - `watch.rs` the file watcher whose events make the listing stale and wake the freshness loop.

mod files;
mod model;
pub mod request;
mod team;
mod watch;

pub use files::{
    FILE_CHANGES, FILE_MODEL_CHARS, FILE_SESSIONS, MAX_FILE_SESSIONS, file_history_text,
};
pub use model::{ModelSlot, ModelState};
pub use request::{Format, Grouping, Reader, SearchRequest, SessionChoice, Tuning};
pub use team::{PUSH_EVERY, TEAM_WAIT, forget_on_hub};

use crate::embed::{Embedder, KernelChoice};
use crate::index::{self, IndexError, SnapshotCache, UpdateOptions};
use crate::search::{self, SearchError, SearchResponse, grouped};
use crate::transcript::catalog::{self, Listing};
use crate::transcript::{self, LookupError, Sources};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a search that arrives during the first, keyword-only pass waits for it before answering with what
/// is published so far. The pass runs at tens of thousands of messages a second, so this covers histories of
/// several hundred thousand messages.
pub const FIRST_PASS_WAIT: Duration = Duration::from_secs(20);

/// Where the history, the index and the model are, and how the service keeps them.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    pub claude_dir: PathBuf,
    pub index_dir: PathBuf,
    /// Where the model's files are, or may be downloaded from.
    pub model: crate::embed::ModelPlaces,
    /// Bytes the in-memory search set may use.
    pub memory_limit: u64,
    /// The embedding kernel to load the model on.
    pub embed_kernel: KernelChoice,
    /// The base of every update the freshness loop makes (archive kept or not, publish spacing, neighbours).
    pub update: UpdateOptions,
    /// Seconds between freshness checks where no file watcher can be had.
    pub poll_seconds: u64,
    /// What this machine is called in results (`machine` in the settings, else its host name).
    pub machine: String,
    /// How often the freshness loop syncs the remotes (`[remote] sync_minutes`; `None`: never).
    pub remote_sync: Option<Duration>,
    /// `GHOLA_SSH`, for those syncs.
    pub ssh_command: Option<String>,
    /// How often the MCP server looks for something to push to the team hub ([`team::PUSH_EVERY`] by default).
    pub hub_push_every: Duration,
}

/// Why the service could not answer, and whose fault it is: [`ServiceError::is_user_error`] tells a front end
/// to answer "fix this argument" rather than log an internal failure.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// An argument of the request is wrong (`arg` names it), or the query could not be embedded.
    #[error(transparent)]
    Request(#[from] SearchError),
    /// The session the request names is not known (or not unique).
    #[error(transparent)]
    Session(#[from] LookupError),
    /// The index could not be opened (a damaged file is set aside by the next update).
    #[error("the index in {} could not be opened: {source}. Run `ghola index`", dir.display())]
    Index { dir: PathBuf, source: IndexError },
    /// The file map could not be read.
    #[error(transparent)]
    Files(#[from] crate::index::file_map::FileMapError),
}

impl ServiceError {
    /// Whether the caller can fix it by asking differently (a bad argument, an unknown session), as opposed to
    /// a failure of ghola's own files.
    pub fn is_user_error(&self) -> bool {
        match self {
            ServiceError::Request(SearchError::Invalid { .. }) | ServiceError::Session(_) => true,
            ServiceError::Request(SearchError::Embed(_))
            | ServiceError::Index { .. }
            | ServiceError::Files(_) => false,
        }
    }
}

/// A search's answer before a front end formats it.
pub struct SearchOutcome {
    /// The hits, bounded in the form the request asked for.
    pub response: SearchResponse,
    /// The query's words, for cutting snippets and highlighting.
    pub terms: Vec<String>,
    /// With [`Grouping::Session`]: every session among the hits, best first (the caller pages them); else empty.
    pub groups: Vec<grouped::SessionGroup>,
}

/// The listing as last read, the change count it was read at and when.
struct HeldListing {
    listing: Arc<Listing>,
    changes: u64,
    at: Instant,
}

/// The history of this machine as every front end sees it. Shared as an `Arc` between the threads and servers
/// of one process (the MCP server hands its own to the browser it starts).
pub struct HistoryService {
    cfg: ServiceConfig,
    sources: Sources,
    snapshots: SnapshotCache,
    model: Arc<ModelSlot>,
    listing: Mutex<Option<HeldListing>>,
    /// Changes the file watcher saw under `projects/` (and forgets made here): a listing read at another count is
    /// stale.
    changes: Arc<AtomicU64>,
    /// The watcher, kept alive while the service is.
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    /// Whether a watcher runs: without one every listing call reads the history's file stamps again.
    watching: AtomicBool,
    /// Whether searches count the transcripts not indexed yet (the freshness loop runs, or the caller asked).
    report_pending: AtomicBool,
    /// Set when the keyword-first pass over the history has finished (or failed, or none runs).
    first_pass: (Mutex<bool>, Condvar),
    /// Credentials the freshness loop's updates hid in new messages that no search has told of yet: the next
    /// search says so in one note line, once.
    credentials_untold: AtomicU64,
}

/// The one line that tells a user that new messages held credentials, shown redacted: printed to stderr by the
/// CLI's search, and a note of the next MCP search after the update that found them.
pub fn credentials_note(n: u64) -> String {
    format!(
        "{n} credential(s) in newly indexed messages are shown as [REDACTED:<rule>]; `ghola secrets` in a terminal \
         lists them"
    )
}

impl HistoryService {
    /// A service over `cfg`'s history and index; it opens nothing, loads nothing and starts no thread yet.
    pub fn new(cfg: ServiceConfig) -> Arc<Self> {
        Arc::new(Self {
            sources: index::archive::sources(&cfg.index_dir),
            snapshots: SnapshotCache::new(&cfg.index_dir, cfg.memory_limit),
            cfg,
            model: Arc::default(),
            listing: Mutex::new(None),
            changes: Arc::default(),
            watcher: Mutex::new(None),
            watching: AtomicBool::new(false),
            credentials_untold: AtomicU64::new(0),
            report_pending: AtomicBool::new(false),
            first_pass: (Mutex::new(true), Condvar::new()),
        })
    }

    /// Where things are.
    pub fn config(&self) -> &ServiceConfig {
        &self.cfg
    }

    /// Transcripts from disk, else from the archive of the index folder.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// The published index, kept open between calls.
    pub fn snapshots(&self) -> &SnapshotCache {
        &self.snapshots
    }

    /// The embedding model's slot (empty until loaded).
    pub fn model(&self) -> &Arc<ModelSlot> {
        &self.model
    }

    /// The model, once loaded.
    pub fn embedder(&self) -> Option<&Embedder> {
        self.model.get()
    }

    /// Loads the model on a thread of its own (downloading it if need be, retrying a failed download).
    pub fn load_model_in_background(&self) {
        self.model
            .load_in_background(self.cfg.model.clone(), self.cfg.embed_kernel);
    }

    /// Starts the file watcher on the history (once): from then on the listing is read again only after a change.
    /// Where no watcher can be had, every listing call checks the files' stamps instead.
    pub fn watch_history(&self) {
        // Nobody waits on the signals here: dropped, they are not kept.
        drop(self.start_watcher());
    }

    /// [`HistoryService::watch_history`], returning the receiver of its signals (`None` when a watcher already
    /// runs or none can be had).
    fn start_watcher(&self) -> Option<std::sync::mpsc::Receiver<()>> {
        let mut held = self.watcher.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_some() {
            return None;
        }
        let (w, rx) = watch::watch(&self.cfg.claude_dir, self.changes.clone())?;
        *held = Some(w);
        self.watching.store(true, Ordering::SeqCst);
        Some(rx)
    }

    /// Has searches count the transcripts not indexed yet (`index.pending_files`, and a note): for a caller that
    /// searches the index as it is, without updating it first. The freshness loop turns it on.
    pub fn report_pending_files(&self) {
        self.report_pending.store(true, Ordering::SeqCst);
    }

    /// Says that the history changed in a way the watcher cannot see (a session forgotten here).
    pub fn invalidate_listing(&self) {
        self.changes.fetch_add(1, Ordering::SeqCst);
    }

    /// The history's listing: the one held while no change was seen since it was read (and it is younger than
    /// `watch::SAFETY_POLL`, in case an event was lost); else read again, reusing every session whose files
    /// are unchanged (a `stat` per transcript) and keeping the cache file in the index folder for the next
    /// process. Forgotten sessions are not in it.
    pub fn listing(&self) -> Arc<Listing> {
        let mut held = self.listing.lock().unwrap_or_else(|e| e.into_inner());
        // Read before refreshing: a change during the refresh makes the next call refresh again.
        let changes = self.changes.load(Ordering::SeqCst);
        if let Some(h) = held.as_ref()
            && self.watching.load(Ordering::SeqCst)
            && h.changes == changes
            && h.at.elapsed() < watch::SAFETY_POLL
        {
            return h.listing.clone();
        }
        let previous = held.take().map(|h| Arc::unwrap_or_clone(h.listing));
        let fresh = Arc::new(Listing::refresh(
            &self.sources,
            &self.cfg.claude_dir,
            Some(&self.cfg.index_dir.join(catalog::CACHE_FILE)),
            previous,
        ));
        *held = Some(HeldListing {
            listing: fresh.clone(),
            changes,
            at: Instant::now(),
        });
        fresh
    }

    /// The full id of the session `given` names (an id or a unique prefix), from the listing.
    pub fn resolve_session(&self, given: &str) -> Result<String, LookupError> {
        self.with_fresh_retry(|l| {
            transcript::resolve_session_id(
                given,
                l.sessions.iter().map(|s| s.summary.session_id.as_str()),
            )
            .map(str::to_owned)
        })
    }

    /// The files of the session `given` names, from the listing's discovery (no walk of the history).
    pub fn session_files(&self, given: &str) -> Result<transcript::SessionFiles, LookupError> {
        self.with_fresh_retry(|l| {
            let ids = l.discovery.sessions.iter().map(|s| s.session_id.as_str());
            let id = transcript::resolve_session_id(given, ids)?;
            l.discovery
                .sessions
                .iter()
                .find(|s| s.session_id == id)
                .cloned()
                .ok_or_else(|| LookupError::NotFound(given.to_string()))
        })
    }

    /// `f` on the listing; when it does not find what it looks for in a held listing, once more on a fresh one
    /// (a session written a moment ago, whose watcher event is still on its way).
    fn with_fresh_retry<T>(
        &self,
        f: impl Fn(&Listing) -> Result<T, LookupError>,
    ) -> Result<T, LookupError> {
        match f(&self.listing()) {
            Err(LookupError::NotFound(_)) if self.watching.load(Ordering::SeqCst) => {
                self.invalidate_listing();
                f(&self.listing())
            }
            other => other,
        }
    }

    /// Waits at most `limit` for the first indexing pass; returns whether it is done (at once when no freshness
    /// loop runs).
    pub fn wait_for_first_pass(&self, limit: Duration) -> bool {
        let (done, cv) = &self.first_pass;
        let guard = done.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = cv
            .wait_timeout_while(guard, limit, |d| !*d)
            .unwrap_or_else(|e| e.into_inner());
        *guard
    }

    fn first_pass_done(&self, done: bool) {
        let (flag, cv) = &self.first_pass;
        *flag.lock().unwrap_or_else(|e| e.into_inner()) = done;
        cv.notify_all();
    }

    /// Every machine whose history this service reads: this one first, then the others by name.
    pub fn machines(&self) -> Vec<String> {
        std::iter::once(self.cfg.machine.clone())
            .chain(
                index::machines::list(&self.cfg.index_dir)
                    .into_iter()
                    .map(|m| m.name)
                    .filter(|n| *n != self.cfg.machine),
            )
            .collect()
    }

    /// `asked` (machine names a caller gave, blanks ignored), each checked against [`HistoryService::machines`]:
    /// an unknown name is the caller's mistake, named with the machines there are (`arg` as the caller spells
    /// it).
    pub fn known_machines(
        &self,
        asked: &[String],
        arg: &'static str,
    ) -> Result<Vec<String>, SearchError> {
        let asked: Vec<String> = asked
            .iter()
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .collect();
        if asked.is_empty() {
            return Ok(asked);
        }
        let known = self.machines();
        match asked.iter().find(|m| !known.contains(m)) {
            None => Ok(asked),
            Some(unknown) => Err(SearchError::Invalid {
                arg,
                message: format!(
                    "no machine is called {unknown:?}: this history holds {}",
                    known.join(", ")
                ),
            }),
        }
    }

    /// Runs `req`: checks it, resolves its session, searches the published index with the model if loaded,
    /// says what the answer lacks (the first pass still running, the model missing, messages not embedded yet,
    /// transcripts not indexed yet), bounds it in the form it is sent in, and folds it by session if asked.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchOutcome, ServiceError> {
        let only_session = match &req.session {
            None => None,
            Some(SessionChoice::Current) => Some(req.calling_session.clone().ok_or_else(|| {
                SearchError::Invalid {
                    arg: "session_id",
                    message: "session_id \"current\" needs the calling session (CLAUDE_CODE_SESSION_ID), \
                              which is not set"
                        .into(),
                }
            })?),
            Some(SessionChoice::Id(id)) => Some(self.resolve_session(id)?),
        };
        let mut p = req.params(only_session, chrono::Utc::now())?;
        p.this_machine = self.cfg.machine.clone();
        if req.team {
            // The hub's machines are not known here: the names go to both halves as given.
            p.machines = req
                .machines
                .iter()
                .map(|m| m.trim().to_string())
                .filter(|m| !m.is_empty())
                .collect();
        } else {
            p.machines = self.known_machines(&req.machines, "machines")?;
            if !req.people.is_empty() {
                return Err(SearchError::Invalid {
                    arg: "people",
                    message: "people names the team's history: it needs a team search (--team, scope \"team\")"
                        .into(),
                }
                .into());
            }
        }
        let team = req.team.then(|| self.start_team_search(&p, &req.people));
        let first_pass_done = self.wait_for_first_pass(FIRST_PASS_WAIT);
        let snap = self.snapshots.get().map_err(|source| ServiceError::Index {
            dir: self.cfg.index_dir.clone(),
            source,
        })?;
        let mut resp = search::search(&snap, self.embedder(), &p)?;
        resp.several_machines = self.machines().len() > 1;
        match team {
            None => {}
            Some(Ok(t)) => self.finish_team_search(t, &mut resp, &req.people, p.max_results),
            Some(Err(e)) => resp.add_note(format!(
                "the team hub was not searched ({e}): these are this machine's results only"
            )),
        }
        if self.report_pending.load(Ordering::SeqCst) {
            resp.index.pending_files = index::pending_files(&snap, &self.cfg.claude_dir);
        }
        for n in self.state_notes(first_pass_done, &resp) {
            resp.add_note(n);
        }
        let terms = search::query_terms(&p.query);
        if req.grouping == Grouping::Session {
            let groups = self.group(&resp, &terms);
            return Ok(SearchOutcome {
                response: resp,
                terms,
                groups,
            });
        }
        let more = match req.reader {
            Reader::Model => search::response::MORE_FOR_A_MODEL,
            Reader::Person => "",
        };
        match (req.reader, req.format) {
            (Reader::Model, Format::Text) => {
                resp.bound_by(&terms, req.max_chars, &search::compact::size, more)
            }
            _ => resp.bound(&terms, req.max_chars, more),
        }
        Ok(SearchOutcome {
            response: resp,
            terms,
            groups: Vec::new(),
        })
    }

    /// The hits of `resp` folded by session, each with its title and time range from the listing.
    fn group(&self, resp: &SearchResponse, terms: &[String]) -> Vec<grouped::SessionGroup> {
        let hit: std::collections::HashSet<&str> = resp
            .results
            .iter()
            .map(|h| h.matched_message.session_id.as_str())
            .collect();
        let listing = self.listing();
        let known: std::collections::HashMap<&str, grouped::SessionFacts> = listing
            .sessions
            .iter()
            .filter(|l| hit.contains(l.summary.session_id.as_str()))
            .map(|l| {
                let s = &l.summary;
                let facts = grouped::SessionFacts {
                    title: s.title.clone(),
                    first_timestamp: s.first_timestamp.map(|t| t.to_rfc3339()),
                    last_timestamp: s.last_timestamp.map(|t| t.to_rfc3339()),
                };
                (s.session_id.as_str(), facts)
            })
            .collect();
        grouped::by_session(resp, terms, &|id| known.get(id).cloned())
    }

    /// What a search answer should say about this process's state (first pass, model, pending files).
    fn state_notes(&self, first_pass_done: bool, resp: &SearchResponse) -> Vec<String> {
        let mut notes = Vec::new();
        if !first_pass_done {
            notes.push(
                "the first indexing pass is still running: results cover what is indexed so far"
                    .to_string(),
            );
        }
        match self.model.state() {
            ModelState::Unavailable(e) => notes.push(format!(
                "ranking is keyword-only: the embedding model is unavailable ({e})"
            )),
            ModelState::Loading => notes.push(
                "ranking is keyword-only: the embedding model is still downloading or loading".to_string(),
            ),
            ModelState::Ready if resp.index.embedded_messages < resp.index.messages => {
                notes.push(format!(
                    "ranking is partly keyword-only: {} of {} messages are embedded so far (newest first)",
                    resp.index.embedded_messages, resp.index.messages
                ))
            }
            ModelState::Ready => {}
        }
        if resp.index.pending_files > 0 {
            notes.push(format!(
                "{} transcript files are still being indexed",
                resp.index.pending_files
            ));
        }
        let untold = self.credentials_untold.swap(0, Ordering::SeqCst);
        if untold > 0 {
            notes.push(credentials_note(untold));
        }
        notes.extend(self.remote_notes());
        notes
    }

    /// One line per remote whose last sync failed: its sessions are as of its last good sync.
    pub fn remote_notes(&self) -> Vec<String> {
        crate::remote::list(&self.cfg.index_dir)
            .into_iter()
            .filter_map(|r| {
                let st = crate::remote::status(&self.cfg.index_dir, &r.name);
                let e = st.last_error?;
                Some(format!(
                    "machine {} could not be synced ({e}); its sessions are as of {}",
                    r.name,
                    st.last_success
                        .as_deref()
                        .unwrap_or("never (none synced yet)")
                ))
            })
            .collect()
    }

    /// Syncs the remotes that are due (their interval passed, and after failures their growing pause), then
    /// updates the index when one brought something. Never waits on a sync another process runs.
    pub fn sync_remotes_due(&self, every: Duration) {
        let now = chrono::Utc::now();
        let opts = crate::remote::sync::SyncOptions {
            ssh_command: self.cfg.ssh_command.clone(),
            progress: false,
            local_claude_dir: self.cfg.claude_dir.clone(),
            wait: false,
            plain_ssh: false,
        };
        let mut brought = false;
        for r in crate::remote::list(&self.cfg.index_dir) {
            let st = crate::remote::status(&self.cfg.index_dir, &r.name);
            let since_last = st
                .last_attempt
                .as_deref()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .and_then(|t| now.signed_duration_since(t).to_std().ok());
            let due = since_last.is_none_or(|d| d >= every)
                && crate::remote::sync::backoff_over(&st, every, now);
            if !due {
                continue;
            }
            match crate::remote::sync::sync(&self.cfg.index_dir, &r.name, &opts) {
                Ok(rep) => brought |= rep.files > 0,
                Err(crate::remote::RemoteError::Busy { .. }) => {}
                Err(e) => tracing::warn!("{e}"),
            }
        }
        if brought {
            self.invalidate_listing();
            self.update_once(true);
        }
    }

    /// Starts the background sync of the remotes, when the configuration asks for one: a look each minute at
    /// which are due, never in the way of an answer.
    pub fn keep_remotes_fresh(self: &Arc<Self>) {
        let Some(every) = self.cfg.remote_sync else {
            return;
        };
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("ghola-remotes".into())
            .spawn(move || {
                loop {
                    me.sync_remotes_due(every);
                    std::thread::sleep(every.min(Duration::from_secs(60)));
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("could not start the remote sync thread: {e}");
        }
    }

    /// One update with whatever model is loaded (`wait`: for another writer), keyword-first; a failure is
    /// logged (the next round tries again).
    pub fn update_once(&self, wait: bool) {
        let opts = UpdateOptions {
            wait,
            ..self.cfg.update
        }
        .words_first();
        let embedder = self.embedder().map(|e| e as &dyn index::ChunkEmbedder);
        match index::update_with(
            &self.cfg.index_dir,
            &self.cfg.claude_dir,
            embedder,
            opts,
            &mut |_| {},
        ) {
            Ok(s) if s.messages_added > 0 => {
                self.credentials_untold
                    .fetch_add(s.credentials_hidden, Ordering::SeqCst);
                tracing::info!(
                    "indexed {} new messages ({} of them keyword-only for now)",
                    s.messages_added,
                    s.messages_deferred
                )
            }
            Ok(_) | Err(IndexError::Busy) => {}
            Err(e) => tracing::warn!("index update failed: {e}"),
        }
    }

    /// Keeps the index fresh on a thread of its own: the keyword-first pass over everything new (searches wait
    /// for it), then, forever, appends as transcripts change and, between them, one keyword-only segment at a
    /// time through the embedding pass once the model is loaded. Starts the watcher and the model load too.
    pub fn keep_fresh(self: &Arc<Self>) {
        self.report_pending.store(true, Ordering::SeqCst);
        self.first_pass_done(false);
        self.load_model_in_background();
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("ghola-indexer".into())
            .spawn(move || me.freshness_loop());
        if let Err(e) = spawned {
            tracing::error!("could not start the indexer thread: {e}");
            self.first_pass_done(true);
        }
    }

    fn freshness_loop(&self) {
        self.update_once(true);
        self.first_pass_done(true);
        let signals = self.start_watcher();
        // The listing tools answer from memory from now on.
        self.listing();
        loop {
            let mut more = false;
            if let Some(e) = self.embedder() {
                match index::embed_pending(
                    &self.cfg.index_dir,
                    e,
                    self.cfg.update.neighbour,
                    Some(1),
                    &|| false,
                    &mut |_| {},
                ) {
                    Ok(s) => {
                        if s.segments > 0 {
                            tracing::info!("embedded {} messages", s.messages);
                        }
                        more = s.messages_waiting > 0;
                    }
                    Err(e) => tracing::warn!("embedding pass failed: {e}"),
                }
            }
            if !more {
                // Until the model is in memory, look for it often (it is loading) or now and then (its download
                // failed and is retried): its arrival starts the embedding pass.
                let most = match self.model.state() {
                    ModelState::Ready => watch::SAFETY_POLL,
                    ModelState::Loading => Duration::from_millis(500),
                    ModelState::Unavailable(_) => Duration::from_secs(5),
                };
                watch::wait_for_change(signals.as_ref(), self.cfg.poll_seconds, most);
            }
            self.update_once(false);
        }
    }
}
