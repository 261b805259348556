//! The team hub under the service: this machine's shared projects pushed from its index, and a search's hub
//! half — asked on a thread of its own while the local half runs, waited for at most [`TEAM_WAIT`], fused by
//! reciprocal rank. The hub down or slow costs the local answer nothing but one note line.

use super::HistoryService;
use crate::hub::search::{HubHit, TeamQuery};
use crate::hub::{self, HubError, HubUrl, Login};
use crate::search::response::{ContextMessage, MatchedMessage, Scores, SearchHit};
use crate::search::{SearchParams, SearchResponse};
use crate::transcript::catalog::SessionSummary;
use std::collections::HashSet;
use std::sync::mpsc;
use std::time::Duration;

/// How long a search waits for the hub's half before answering with this machine's alone.
pub const TEAM_WAIT: Duration = Duration::from_millis(2500);
/// How often the MCP server looks whether the index has something new to push.
pub const PUSH_EVERY: Duration = Duration::from_secs(60);
/// Reciprocal-rank fusion's constant for the two halves.
const RRF_K: f32 = 60.0;

/// The hub half of a search under way.
pub(super) struct TeamSearch {
    rx: mpsc::Receiver<Result<Vec<HubHit>, HubError>>,
    login: Login,
}

impl HistoryService {
    /// This machine's hub login and its parsed URL, if it has one.
    pub fn hub_login(&self) -> Result<Option<(Login, HubUrl)>, HubError> {
        match hub::load_login(&self.cfg.index_dir)? {
            None => Ok(None),
            Some(l) => {
                let url = HubUrl::parse(&l.url)?;
                Ok(Some((l, url)))
            }
        }
    }

    /// Pushes (or with `dry_run` lists) what the shared projects have that the hub lacks, each session read from
    /// its transcript (or archived copy) and embedded with the loaded model; gives up after `limit`.
    pub fn push_to_hub(
        &self,
        dry_run: bool,
        limit: Duration,
    ) -> Result<hub::push::PushReport, HubError> {
        let (login, url) = self.hub_login()?.ok_or(HubError::NotLoggedIn)?;
        let listing = self.listing();
        // Each session read from its transcript (or its archived copy), part by part: what may leave is
        // chosen per part (thinking, tool output), which the index's flattened text cannot tell apart.
        let load = |id: &str| {
            let files = self.session_files(id).ok()?;
            Some(crate::transcript::load_session(self.sources(), &files))
        };
        let machine_of =
            |s: &SessionSummary| s.machine.clone().unwrap_or_else(|| login.machine.clone());
        let embedder = self.embedder();
        let index_dir = self.cfg.index_dir.clone();
        hub::block(limit, async {
            let mut c = hub::connect(&url).await?;
            hub::schema::check(&c, &url.shown()).await?;
            hub::push::push(
                &mut c,
                &index_dir,
                &load,
                &listing,
                &machine_of,
                embedder,
                dry_run,
            )
            .await
        })
    }

    /// Pushes to the team hub in the background, when this machine is logged in to one: a look each
    /// `hub_push_every` ([`PUSH_EVERY`] by default), a push when the index has changed since the last good one and the model is loaded (the
    /// vectors are embedded here). A failure is logged and tried at the next look.
    pub fn keep_hub_pushed(self: &std::sync::Arc<Self>) {
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("ghola-hub-push".into())
            .spawn(move || {
                let mut pushed_at = None;
                loop {
                    std::thread::sleep(me.cfg.hub_push_every);
                    if !matches!(me.hub_login(), Ok(Some(_))) || me.embedder().is_none() {
                        continue;
                    }
                    let Ok(snap) = me.snapshots.get() else {
                        continue;
                    };
                    let generation = snap.manifest.generation;
                    drop(snap);
                    if pushed_at == Some(generation) {
                        continue;
                    }
                    match me.push_to_hub(false, Duration::from_secs(3600)) {
                        Ok(r) => {
                            pushed_at = Some(generation);
                            if r.messages > 0 {
                                tracing::info!("pushed {} message(s) to the team hub", r.messages);
                            }
                        }
                        Err(e) => tracing::warn!("push to the team hub failed: {e}"),
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("could not start the hub push thread: {e}");
        }
    }

    /// The people and machines of the team hub this person may read (the browser's facets); `None` without a
    /// login, or when the hub does not answer within [`TEAM_WAIT`].
    pub fn hub_facets(&self) -> Option<(Vec<String>, Vec<String>)> {
        let (_, url) = self.hub_login().ok()??;
        hub::block(TEAM_WAIT, async move {
            let c = hub::connect(&url).await?;
            hub::search::facets(&c).await
        })
        .map_err(|e| tracing::debug!("the hub's facets: {e}"))
        .ok()
    }

    /// For duncan: when `session_id` is not one of this machine's sessions and the team hub shows one, that
    /// session written as a transcript of its redacted text (`<index>/hub/replay/`, this user's alone), to be
    /// replayed like a local one — never more than what was pushed. Empty otherwise.
    pub fn hub_replay_files(
        &self,
        session_id: Option<&str>,
    ) -> Vec<crate::transcript::SessionFiles> {
        let Some(id) = session_id.map(str::trim).filter(|s| !s.is_empty()) else {
            return Vec::new();
        };
        if self.session_files(id).is_ok() {
            return Vec::new();
        }
        let h = match self.hub_session(id) {
            Ok(Some(h)) => h,
            Ok(None) => return Vec::new(),
            Err(e) => {
                tracing::warn!("the team hub could not be asked for session {id}: {e}");
                return Vec::new();
            }
        };
        let dir = hub::hub_dir(&self.cfg.index_dir).join("replay").join(
            h.project
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect::<String>(),
        );
        // The id names a file here and came from another person's machine: only a plain one does.
        if h.session_id.is_empty()
            || !h
                .session_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            tracing::warn!(
                "the team hub's session id {:?} is not one ghola replays",
                h.session_id
            );
            return Vec::new();
        }
        let path = dir.join(format!("{}.jsonl", h.session_id));
        let mut text = String::new();
        let mut parent = serde_json::Value::Null;
        for m in &h.messages {
            let at = m.at.map(|t| t.to_rfc3339()).unwrap_or_default();
            let line = if m.role == "user" {
                serde_json::json!({"type": "user", "uuid": m.id, "parentUuid": parent, "sessionId": h.session_id,
                    "cwd": h.project, "timestamp": at, "message": {"role": "user", "content": m.content}})
            } else {
                serde_json::json!({"type": "assistant", "uuid": m.id, "parentUuid": parent,
                    "sessionId": h.session_id, "cwd": h.project, "timestamp": at,
                    "message": {"id": format!("hub-{}", m.id), "role": "assistant",
                        "content": [{"type": "text", "text": m.content}]}})
            };
            text.push_str(&line.to_string());
            text.push('\n');
            parent = serde_json::Value::String(m.id.clone());
        }
        let written = std::fs::create_dir_all(&dir)
            .and_then(|_| crate::atomic_file::write_atomic(&path, text.as_bytes()));
        if let Err(e) = written {
            tracing::warn!("{}: {e}", path.display());
            return Vec::new();
        }
        vec![crate::transcript::SessionFiles {
            session_id: h.session_id,
            project_dir: dir,
            main: Some(path),
            subagents: Vec::new(),
            archived: false,
        }]
    }

    /// A session of the team hub (its redacted text), for a session id this machine does not have: `Ok(None)`
    /// without a login or when the hub shows this person no such session.
    pub fn hub_session(&self, id: &str) -> Result<Option<hub::search::HubSession>, HubError> {
        let Some((_, url)) = self.hub_login()? else {
            return Ok(None);
        };
        let id = id.to_string();
        hub::block(TEAM_WAIT * 4, async move {
            let c = hub::connect(&url).await?;
            hub::search::session(&c, &id).await
        })
    }

    /// Removes `sessions` (just forgotten here) from the hub and leaves tombstones, when this machine is logged
    /// in; when the hub cannot be reached they are remembered and dropped at the next push. `Ok(None)`: no
    /// login.
    pub fn forget_on_hub(&self, sessions: &[String]) -> Result<Option<u64>, HubError> {
        forget_on_hub(&self.cfg.index_dir, sessions)
    }

    /// Starts the hub half of `p` on a thread of its own (`None` without a login: the caller notes it).
    pub(super) fn start_team_search(
        &self,
        p: &SearchParams,
        people: &[String],
    ) -> Result<TeamSearch, HubError> {
        let (login, url) = self.hub_login()?.ok_or(HubError::NotLoggedIn)?;
        let q = TeamQuery {
            text: p.query.clone(),
            vector: None,
            project_name: p.project.as_deref().map(|d| {
                d.trim_end_matches(['/', '\\'])
                    .rsplit(['/', '\\'])
                    .next()
                    .unwrap_or(d)
                    .to_string()
            }),
            people: people.to_vec(),
            machines: p.machines.clone(),
            after: p.after,
            before: p.before,
            // A query in a language the model reads too loosely takes only the hub's messages that share a
            // word with it, as here.
            threshold: if crate::search::script::meaning_vouches(p) {
                p.threshold
            } else {
                f32::INFINITY
            },
            limit: p.offset + p.max_results,
        };
        let model = self.model.clone();
        // A query the model cannot read goes to the hub by its words alone, as it is ranked here.
        let meaning = crate::search::script::uses_meaning(p);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut q = q;
            if meaning
                && let Some(e) = model.get()
                && let Ok(v) = e.embed(&[q.text.as_str()])
            {
                q.vector = Some(v[0].to_vec());
            }
            let r = hub::block(TEAM_WAIT * 4, async {
                let mut c = hub::connect(&url).await?;
                hub::search::search(&mut c, &q).await
            });
            let _ = tx.send(r);
        });
        Ok(TeamSearch { rx, login })
    }

    /// Waits for the hub half and fuses it into `resp` (this machine's sessions found on the hub are left out:
    /// they are here already); a hub that failed or is slow leaves `resp` as it was, with a note.
    pub(super) fn finish_team_search(
        &self,
        t: TeamSearch,
        resp: &mut SearchResponse,
        people: &[String],
        limit: usize,
    ) {
        let hits = match t.rx.recv_timeout(TEAM_WAIT) {
            Ok(Ok(h)) => h,
            Ok(Err(e)) => {
                resp.add_note(format!(
                    "the team hub could not be searched ({e}): these are this machine's results only"
                ));
                Vec::new()
            }
            Err(_) => {
                resp.add_note(format!(
                    "the team hub did not answer within {:.1} s: these are this machine's results only",
                    TEAM_WAIT.as_secs_f32()
                ));
                Vec::new()
            }
        };
        let here: HashSet<String> = self
            .listing()
            .sessions
            .iter()
            .map(|l| l.summary.session_id.clone())
            .collect();
        let theirs: Vec<HubHit> = hits
            .into_iter()
            .filter(|h| !here.contains(&h.session_id))
            .skip(resp.offset)
            .collect();
        if !people.is_empty() && !people.contains(&t.login.person) {
            resp.total_matches = 0;
            resp.results.clear();
        }
        fuse(resp, theirs, &t.login, limit);
    }
}

/// See [`HistoryService::forget_on_hub`].
pub fn forget_on_hub(
    index_dir: &std::path::Path,
    sessions: &[String],
) -> Result<Option<u64>, HubError> {
    if sessions.is_empty() {
        return Ok(Some(0));
    }
    let Some(login) = hub::load_login(index_dir)? else {
        return Ok(None);
    };
    hub::push::note_forgotten(index_dir, sessions)?;
    let url = HubUrl::parse(&login.url)?;
    let ids = sessions.to_vec();
    let removed = hub::block(Duration::from_secs(20), async move {
        let mut c = hub::connect(&url).await?;
        hub::push::forget(&mut c, &ids).await
    })?;
    let mut mark = hub::load_watermark(index_dir)?;
    mark.forgotten.retain(|s| !sessions.contains(s));
    for s in sessions {
        mark.sessions.remove(s);
    }
    hub::save_watermark(index_dir, &mark)?;
    Ok(Some(removed))
}

/// The local hits and the hub's, fused by reciprocal rank (a tie goes to the local one), at most `limit`.
fn fuse(resp: &mut SearchResponse, theirs: Vec<HubHit>, me: &Login, limit: usize) {
    for h in &mut resp.results {
        h.matched_message.person = me.person.clone();
        h.matched_message.origin = "local".into();
    }
    if theirs.is_empty() {
        return;
    }
    resp.total_matches += theirs.len();
    resp.several_machines = true;
    let local = std::mem::take(&mut resp.results);
    let mut all: Vec<(f32, usize, SearchHit)> = local
        .into_iter()
        .enumerate()
        .map(|(i, h)| (1.0 / (RRF_K + i as f32 + 1.0), 0, h))
        .chain(
            theirs
                .into_iter()
                .enumerate()
                .map(|(j, h)| (1.0 / (RRF_K + j as f32 + 1.0), 1, hub_hit(h))),
        )
        .collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    resp.has_more |= all.len() > limit;
    resp.results = all.into_iter().take(limit).map(|(_, _, h)| h).collect();
}

/// A hub hit in the response's shape: the hit alone as its context (the session is on the hub:
/// `get_session_detail` reads it there).
fn hub_hit(h: HubHit) -> SearchHit {
    let timestamp = h.at.map(|t| t.to_rfc3339());
    let scores = Scores {
        semantic: h.semantic,
        lexical: h.lexical,
    };
    SearchHit {
        context: vec![ContextMessage {
            uuid: h.id.clone(),
            role: h.role.clone(),
            kind: h.kind.clone(),
            timestamp: timestamp.clone(),
            content: h.content.clone(),
            is_match: true,
            score: Some(h.semantic),
            scores: Some(scores),
        }],
        matched_message: MatchedMessage {
            uuid: h.id,
            machine: h.machine,
            person: h.person,
            origin: "hub".into(),
            session_id: h.session_id,
            project: h.project,
            git_branch: None,
            role: h.role,
            kind: h.kind,
            timestamp,
            window: 0,
            is_subagent: false,
            agent_id: None,
            content: h.content,
        },
        score: h.semantic.max(0.0),
        scores,
        matches: 1,
    }
}
