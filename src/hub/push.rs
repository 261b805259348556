//! What leaves this machine, and how: the sessions of the projects this person shares, as derived rows —
//! metadata, the text redacted by [`crate::secrets`] (the index's text is redacted already; this is the second
//! look), a vector embedded from that redacted text and tagged with the model's identity. Thinking and tool
//! output stay home unless the share says otherwise. Never a transcript.
//!
//! Each session goes in one transaction: its row, then the messages the hub lacks (asked by their stable ids,
//! inserted with `on conflict do nothing`), committed before the watermark moves. A push killed or refused
//! half-way leaves the watermark where it was; the next one asks the hub again and adds no duplicate.

use super::share::Share;
use super::state::{Watermark, load_watermark, save_watermark};
use super::{HubError, model_identity};
use crate::embed::Embedder;
use crate::secrets::Tally;
use crate::transcript::catalog::{Listing, SessionSummary};
use crate::transcript::{Message, Part, Session, THINKING_MARK, TOOL_MARK, tool_output_mark};
use serde::Serialize;
use std::collections::HashSet;
use std::path::Path;
use tokio_postgres::Client;

/// Messages inserted per statement.
const BATCH: usize = 256;

/// One session that would leave (or left), as `push --dry-run` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct OutSession {
    pub session_id: String,
    pub project: String,
    pub machine: String,
    pub title: Option<String>,
    /// Messages of the session the index holds.
    pub messages: u64,
    /// Of those, how many the share lets leave (thinking and tool output left out unless shared with them).
    pub leaving: u64,
}

/// What a push did, or with `dry_run` would do.
#[derive(Debug, Default, Serialize)]
pub struct PushReport {
    pub sessions: Vec<OutSession>,
    /// Messages inserted (with `dry_run`: that would be looked at).
    pub messages: u64,
    /// Credentials replaced by placeholders on the way out, by rule.
    pub redacted: Tally,
    /// Sessions left out because this person forgot them (a tombstone on the hub).
    pub forgotten: u64,
    /// Sessions forgotten here that the hub has now dropped.
    pub removed: u64,
    pub dry_run: bool,
}

/// A message as it leaves: every field redacted already.
#[derive(Debug, Clone)]
pub struct OutMessage {
    /// [`message_id`].
    pub id: String,
    pub agent_id: Option<String>,
    /// Its place in the session (time order).
    pub seq: i64,
    pub role: String,
    pub kind: String,
    pub at: Option<chrono::DateTime<chrono::Utc>>,
    pub content: String,
}

/// Where a session's messages go on the hub.
pub struct SessionRow<'a> {
    pub session_id: &'a str,
    pub machine: &'a str,
    pub project: &'a str,
}

/// Inserts `batch` (with its `vectors`, one each) into the session `at`, in the caller's transaction; a
/// message the hub holds already is left as it is. Returns the messages inserted.
pub async fn write_messages(
    tx: &tokio_postgres::Transaction<'_>,
    at: &SessionRow<'_>,
    batch: &[&OutMessage],
    vectors: &[pgvector::HalfVector],
) -> Result<u64, HubError> {
    let model = model_identity();
    let texts: Vec<&str> = batch.iter().map(|m| m.content.as_str()).collect();
    let ids: Vec<&str> = batch.iter().map(|m| m.id.as_str()).collect();
    let agents: Vec<Option<&str>> = batch.iter().map(|m| m.agent_id.as_deref()).collect();
    let seqs: Vec<i64> = batch.iter().map(|m| m.seq).collect();
    let roles: Vec<&str> = batch.iter().map(|m| m.role.as_str()).collect();
    let kinds: Vec<&str> = batch.iter().map(|m| m.kind.as_str()).collect();
    let ats: Vec<Option<chrono::DateTime<chrono::Utc>>> = batch.iter().map(|m| m.at).collect();
    tx.execute(
        "insert into ghola.messages (id, session_id, machine, project, agent_id, seq, role, kind, \
         at, content, model, embedding) \
         select id, $7, $8, $9, agent, seq, role, kind, at, content, $10, embedding \
         from unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], \
         $6::timestamptz[], $11::text[], $12::halfvec[]) \
         as t(id, agent, seq, role, kind, at, content, embedding) \
         on conflict (owner, id) do nothing",
        &[
            &ids,
            &agents,
            &seqs,
            &roles,
            &kinds,
            &ats,
            &at.session_id,
            &at.machine,
            &at.project,
            &model,
            &texts,
            &vectors,
        ],
    )
    .await
    .map_err(|e| HubError::db("writing messages", e))
}

/// The share that covers `project` (a share of a folder covers the projects below it).
fn share_of<'s>(shares: &'s [Share], project: &str) -> Option<&'s Share> {
    shares
        .iter()
        .filter(|s| crate::transcript::is_within(project, &s.project))
        .max_by_key(|s| s.project.len())
}

/// A message's id on the hub: the same on every machine and every ghola version (a hash of its session, agent
/// and first entry's uuid — [`crate::transcript::Message::identity`], which a reply's later pieces do not change —
/// with SHA-256, whose output no toolchain changes).
pub fn message_id(session: &str, agent: Option<&str>, uuid: &str) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(session.as_bytes());
    h.update([0]);
    h.update(agent.unwrap_or("").as_bytes());
    h.update([0]);
    h.update(uuid.as_bytes());
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What of `m` may leave under `share`, part by part: its text and tool calls always, its thinking and tool
/// output only when shared; `None` when nothing is left. The kind is the message's, as the index names it.
fn outgoing(m: &Message, share: &Share) -> Option<(String, &'static str)> {
    let mut lines = Vec::new();
    let (mut text, mut tool_use, mut result) = (false, false, false);
    for p in &m.parts {
        match p {
            Part::Text { text: t } => {
                text = true;
                lines.push(t.clone());
            }
            Part::Thinking { text: t } if share.thinking => {
                lines.push(format!("{THINKING_MARK}{t}"))
            }
            Part::Thinking { .. } => {}
            Part::ToolUse { name, summary, .. } => {
                tool_use = true;
                lines.push(format!("{TOOL_MARK}{name}: {summary}"));
            }
            Part::ToolResult {
                text: t, is_error, ..
            } if share.tools => {
                result = true;
                lines.push(format!("{}{t}", tool_output_mark(*is_error)));
            }
            Part::ToolResult { .. } => {}
        }
    }
    let mut content = lines.join("\n");
    if content.trim().is_empty() {
        return None;
    }
    crate::index::render::cut_content(&mut content);
    let kind = if m.is_compact_summary {
        "summary"
    } else if text {
        "text"
    } else if result {
        "tool_result"
    } else if tool_use {
        "tool_use"
    } else {
        "thinking"
    };
    Some((content, kind))
}

/// Pushes (or with `dry_run` lists) the sessions of the shared projects that the hub lacks. `machine_of` names
/// the machine a session was recorded on; `embedder` is required unless `dry_run`.
pub async fn push(
    client: &mut Client,
    index_dir: &Path,
    load: &(dyn Fn(&str) -> Option<Session> + Sync),
    listing: &Listing,
    machine_of: &(dyn Fn(&SessionSummary) -> String + Sync),
    embedder: Option<&Embedder>,
    dry_run: bool,
) -> Result<PushReport, HubError> {
    let mut report = PushReport {
        dry_run,
        ..PushReport::default()
    };
    let mut mark = load_watermark(index_dir)?;
    if !dry_run {
        report.removed = drop_forgotten(client, index_dir, &mut mark).await?;
    }
    let shares = super::share::own(client).await?;
    if shares.is_empty() {
        return Ok(report);
    }
    let tombstones: HashSet<String> = client
        .query(
            "select session_id from ghola.tombstones where owner = current_user",
            &[],
        )
        .await
        .map_err(|e| HubError::db("reading the tombstones", e))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let candidates: Vec<(&SessionSummary, &Share)> = listing
        .sessions
        .iter()
        .map(|l| &l.summary)
        .filter_map(|s| share_of(&shares, &s.project).map(|sh| (s, sh)))
        .collect();
    // A session forgotten here before this machine had a hub login has no tombstone, but it is forgotten all
    // the same: it never leaves.
    let forgotten_here = crate::index::forget::forgotten(index_dir).sessions;
    for (s, share) in candidates {
        if tombstones.contains(&s.session_id) || forgotten_here.contains_key(&s.session_id) {
            report.forgotten += 1;
            continue;
        }
        let Some(session) = load(&s.session_id) else {
            continue;
        };
        let mut all: Vec<&Message> = session
            .messages
            .iter()
            .chain(session.subagents.iter().flat_map(|a| a.messages.iter()))
            .collect();
        all.sort_by_key(|m| (m.timestamp, m.agent_id.is_some(), m.offset));
        let total = all.len() as u64;
        if total == 0 || mark.sessions.get(&s.session_id) == Some(&total) {
            continue;
        }
        let out = outgoing_messages(&s.session_id, &all, share, &mut report.redacted);
        let entry = OutSession {
            session_id: s.session_id.clone(),
            project: s.project.clone(),
            machine: machine_of(s),
            title: s
                .title
                .as_deref()
                .map(|t| crate::secrets::redact_counting(t, &mut report.redacted).into_owned()),
            messages: total,
            leaving: out.len() as u64,
        };
        if dry_run {
            report.messages += out.len() as u64;
            report.sessions.push(entry);
            continue;
        }
        let embedder = embedder.ok_or_else(|| HubError::Invalid {
            arg: "push",
            message: "the embedding model is not available here: the hub's vectors are embedded from the \
                      redacted text before they leave"
                .into(),
        })?;
        report.messages += write_session(
            client,
            s,
            &entry.machine,
            entry.title.as_deref(),
            &out,
            embedder,
        )
        .await?;
        mark.sessions.insert(s.session_id.clone(), total);
        save_watermark(index_dir, &mark)?;
        report.sessions.push(entry);
    }
    Ok(report)
}

/// The messages of one session that may leave under `share` (in `all`'s order, which gives their `seq`), each
/// redacted, with what was redacted counted in `tally`.
fn outgoing_messages(
    session_id: &str,
    all: &[&Message],
    share: &Share,
    tally: &mut Tally,
) -> Vec<OutMessage> {
    let mut out = Vec::new();
    for (seq, m) in all.iter().enumerate() {
        let Some((content, kind)) = outgoing(m, share) else {
            continue;
        };
        let content = crate::secrets::redact_counting(&content, tally).into_owned();
        out.push(OutMessage {
            id: message_id(session_id, m.agent_id.as_deref(), m.identity()),
            agent_id: m.agent_id.clone(),
            seq: seq as i64,
            role: m.role.as_str().to_string(),
            kind: kind.to_string(),
            at: m.timestamp,
            content,
        });
    }
    out
}

/// One session's push, in one transaction: its row, then the messages of `out` the hub lacks, embedded here;
/// returns the messages inserted. Nothing of it is on the hub unless it all is.
async fn write_session(
    client: &mut Client,
    s: &SessionSummary,
    machine: &str,
    title: Option<&str>,
    out: &[OutMessage],
    embedder: &Embedder,
) -> Result<u64, HubError> {
    let tx = client
        .transaction()
        .await
        .map_err(|e| HubError::db("starting a session's push", e))?;
    tx.execute(
        "insert into ghola.sessions (session_id, machine, project, title, first_at, last_at, messages) \
         values ($1, $2, $3, $4, $5, $6, 0) \
         on conflict (owner, session_id) do update set machine = excluded.machine, \
         project = excluded.project, title = excluded.title, first_at = excluded.first_at, \
         last_at = excluded.last_at, pushed_at = now()",
        &[
            &s.session_id,
            &machine,
            &s.project,
            &title,
            &s.first_timestamp,
            &s.last_timestamp,
        ],
    )
    .await
    .map_err(|e| HubError::db("writing a session", e))?;
    let have: HashSet<String> = tx
        .query(
            "select id from ghola.messages where owner = current_user and session_id = $1",
            &[&s.session_id],
        )
        .await
        .map_err(|e| HubError::db("reading what the hub holds of a session", e))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut inserted = 0;
    let missing: Vec<&OutMessage> = out.iter().filter(|m| !have.contains(&m.id)).collect();
    for batch in missing.chunks(BATCH) {
        let texts: Vec<&str> = batch.iter().map(|m| m.content.as_str()).collect();
        let vectors: Vec<pgvector::HalfVector> = embedder
            .embed(&texts)?
            .iter()
            .map(|v| pgvector::HalfVector::from_f32_slice(v))
            .collect();
        let at = SessionRow {
            session_id: &s.session_id,
            machine,
            project: &s.project,
        };
        let written = write_messages(&tx, &at, batch, &vectors).await?;
        inserted += written;
    }
    tx.execute(
        "update ghola.sessions set messages = (select count(*) from ghola.messages m \
         where m.owner = current_user and m.session_id = $1) \
         where owner = current_user and session_id = $1",
        &[&s.session_id],
    )
    .await
    .map_err(|e| HubError::db("counting a session's messages", e))?;
    tx.commit()
        .await
        .map_err(|e| HubError::db("committing a session", e))?;
    Ok(inserted)
}

/// Removes from the hub the sessions forgotten here, each leaving a tombstone so that none of this person's
/// machines pushes it back; returns how many the hub held.
async fn drop_forgotten(
    client: &mut Client,
    index_dir: &Path,
    mark: &mut Watermark,
) -> Result<u64, HubError> {
    if mark.forgotten.is_empty() {
        return Ok(0);
    }
    let ids = mark.forgotten.clone();
    let removed = forget(client, &ids).await?;
    mark.forgotten.clear();
    for id in &ids {
        mark.sessions.remove(id);
    }
    save_watermark(index_dir, mark)?;
    Ok(removed)
}

/// Deletes `sessions` of this person from the hub and leaves a tombstone for each, in one transaction. Returns
/// how many the hub held.
pub async fn forget(client: &mut Client, sessions: &[String]) -> Result<u64, HubError> {
    let tx = client
        .transaction()
        .await
        .map_err(|e| HubError::db("starting a forget", e))?;
    let removed = tx
        .execute(
            "delete from ghola.sessions where owner = current_user and session_id = any($1)",
            &[&sessions],
        )
        .await
        .map_err(|e| HubError::db("deleting forgotten sessions", e))?;
    tx.execute(
        "insert into ghola.tombstones (session_id) select unnest($1::text[]) \
         on conflict do nothing",
        &[&sessions],
    )
    .await
    .map_err(|e| HubError::db("writing tombstones", e))?;
    tx.commit()
        .await
        .map_err(|e| HubError::db("committing a forget", e))?;
    Ok(removed)
}

/// Records that `sessions` were forgotten here, for the hub to drop at the next push (or now, by the caller).
pub fn note_forgotten(index_dir: &Path, sessions: &[String]) -> Result<(), HubError> {
    let mut mark = load_watermark(index_dir)?;
    for s in sessions {
        if !mark.forgotten.contains(s) {
            mark.forgotten.push(s.clone());
        }
    }
    save_watermark(index_dir, &mark)
}
