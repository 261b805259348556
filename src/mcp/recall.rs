//! The recall tools' bodies: a search shaped for a model's context (compact text under a budget the caller may
//! set, or grouped by session), and a session read around one hit. The tool declarations are in `mod.rs`.

use super::args::{SearchArgs, SessionArgs};
use super::{FIRST_PASS_WAIT, GholaServer, bounded, error_result, non_negative, text_result};
use crate::index::{self, Snapshot};
use crate::search::{self, SearchParams, grouped};
use crate::transcript;
use rmcp::model::CallToolResult;

/// A search answer's default size for a model, in characters (about 4,000 tokens): the smallest budget that lost no
/// evidence on the LoCoMo dev set's tuning part, confirmed on its held-back part (docs/benchmarks.md, "Recall in
/// the context window"). Most answers are smaller (median 8,700 characters); it bounds the long ones.
pub const DEFAULT_MAX_CHARS: usize = 16_000;
/// Messages of context each side of a hit, for a model. With [`DEFAULT_RESULTS`]: a first page of many short
/// hits, each read further on demand (`get_session_detail` around it), brought the evidence after one expansion
/// from .906 to .924 on the LoCoMo dev tuning part at the same median size (held back: .920 → .923); the coding
/// set's evidence after one expansion is the same (docs/benchmarks.md). The CLI keeps 3 for a person at a
/// terminal.
pub const DEFAULT_CONTEXT: usize = 1;
/// Hits on a model's first page (see [`DEFAULT_CONTEXT`]); the CLI shows 10.
pub const DEFAULT_RESULTS: usize = 18;
/// The smallest budget a caller may set: a header and one hit.
const MIN_MAX_CHARS: usize = 1_000;
/// Results a grouped search reads before folding them by session.
const GROUPED_RESULTS: usize = 100;

/// How a search answer is shaped.
struct Shape {
    json: bool,
    by_session: bool,
    max_chars: usize,
    /// Sessions (when grouped) or results per page, and the offset into them.
    limit: usize,
    offset: usize,
}

/// The shape `a` asks for; the page (`limit`, `offset`) is the one `p` was read with.
fn shape(a: &SearchArgs, p: &SearchParams) -> Result<Shape, String> {
    let json = match a.format.as_deref().unwrap_or("text") {
        "text" => false,
        "json" => true,
        other => {
            return Err(format!(
                "format must be \"text\" or \"json\" (got {other:?})"
            ));
        }
    };
    let by_session = match a.group_by.as_deref() {
        None | Some("") | Some("hit") => false,
        Some("session") => true,
        Some(other) => {
            return Err(format!(
                "group_by must be \"session\" (or left out for one entry per hit), got {other:?}"
            ));
        }
    };
    let max_chars = non_negative(a.max_chars, "max_chars", DEFAULT_MAX_CHARS)?;
    if !(MIN_MAX_CHARS..=search::response::RESPONSE_CHARS).contains(&max_chars) {
        return Err(format!(
            "max_chars must be between {MIN_MAX_CHARS} and {} (got {max_chars})",
            search::response::RESPONSE_CHARS
        ));
    }
    Ok(Shape {
        json,
        by_session,
        max_chars,
        limit: p.max_results,
        offset: p.offset,
    })
}

impl GholaServer {
    /// The search parameters of a tool call (`global`: every project).
    fn search_params(&self, a: &SearchArgs, global: bool) -> Result<SearchParams, String> {
        let mut p = SearchParams::new(&a.query);
        p.project = if global {
            None
        } else {
            Some(
                a.project
                    .clone()
                    .unwrap_or_else(|| self.cfg.project.clone()),
            )
        };
        let bound = |v: &Option<String>, name| {
            v.as_deref()
                .map(|s| search::parse_bound(s, name))
                .transpose()
                .map_err(|e| e.to_string())
        };
        p.after = bound(&a.after, "after")?;
        p.before = bound(&a.before, "before")?;
        if let Some(s) = &a.since {
            let since =
                search::parse_since(s, "since", chrono::Utc::now()).map_err(|e| e.to_string())?;
            p.since(since);
        }
        p.context = non_negative(
            a.context_before_after,
            "context_before_after",
            DEFAULT_CONTEXT,
        )?;
        p.max_results = non_negative(a.max_results, "max_results", DEFAULT_RESULTS)?;
        p.offset = non_negative(a.offset, "offset", 0)?;
        if let Some(t) = a.threshold {
            p.threshold = t as f32;
        }
        if let Some(f) = a.relative_floor {
            p.relative_floor = f as f32;
        }
        p.include_subagents = a.include_subagents.unwrap_or(true);
        p.exclude_session = self.cfg.session_id.clone();
        p.only_session = match a.session_id.as_deref() {
            None | Some("") => None,
            Some("current") => Some(self.cfg.session_id.clone().ok_or(
                "session_id \"current\" needs the calling session (CLAUDE_CODE_SESSION_ID), which is not set",
            )?),
            Some(id) => Some(self.with_listing(|l| {
                transcript::resolve_session_id(id, l.sessions.iter().map(|s| s.summary.session_id.as_str()))
                    .map(str::to_owned)
                    .map_err(|e| e.to_string())
            })?),
        };
        // The answer is bounded by the caller's budget below, in the form it is sent in.
        p.response_chars = search::response::RESPONSE_CHARS;
        p.validate().map_err(|e| e.to_string())?;
        Ok(p)
    }

    /// `search_project_history` and `search_global_history`.
    pub(super) async fn run_search(&self, a: SearchArgs, global: bool) -> CallToolResult {
        let (shape, mut p) = match self
            .search_params(&a, global)
            .and_then(|p| Ok((shape(&a, &p)?, p)))
        {
            Ok(x) => x,
            Err(e) => return error_result(e),
        };
        if shape.by_session {
            p.max_results = GROUPED_RESULTS;
            p.offset = 0;
        }
        let me = self.clone();
        let out = tokio::task::spawn_blocking(move || -> Result<String, String> {
            let first_pass_done = me.wait_for_first_pass(FIRST_PASS_WAIT);
            let snap = Snapshot::shared(&me.cfg.index_dir, me.cfg.memory_limit)
                .map_err(|e| e.to_string())?;
            let embedder = me.embedder.get();
            let mut resp = search::search(&snap, embedder, &p).map_err(|e| e.to_string())?;
            resp.index.pending_files = index::pending_files(&snap, &me.cfg.claude_dir);
            for n in me.search_notes(first_pass_done, &resp) {
                resp.add_note(n);
            }
            let terms = search::query_terms(&p.query);
            if shape.by_session {
                // The listing is brought up to date once, for every session among the hits.
                let hit_sessions: std::collections::HashSet<&str> = resp
                    .results
                    .iter()
                    .map(|h| h.matched_message.session_id.as_str())
                    .collect();
                let known: std::collections::HashMap<String, grouped::SessionFacts> = me
                    .with_listing(|l| {
                        l.sessions
                            .iter()
                            .filter(|s| hit_sessions.contains(s.summary.session_id.as_str()))
                            .map(|s| {
                                let facts = grouped::SessionFacts {
                                    title: s.summary.title.clone(),
                                    first_timestamp: s
                                        .summary
                                        .first_timestamp
                                        .map(|t| t.to_rfc3339()),
                                    last_timestamp: s
                                        .summary
                                        .last_timestamp
                                        .map(|t| t.to_rfc3339()),
                                };
                                (s.summary.session_id.clone(), facts)
                            })
                            .collect()
                    });
                let groups = grouped::by_session(&resp, &terms, &|id| known.get(id).cloned());
                return Ok(if shape.json {
                    let v = serde_json::json!({"query": resp.query, "total_sessions": groups.len(),
                        "offset": shape.offset, "sessions": groups.iter().skip(shape.offset)
                            .take(shape.limit).collect::<Vec<_>>(), "note": resp.note});
                    bounded(v, "sessions", shape.offset)
                } else {
                    // The page shortened until it fits the budget (its header then says where to go on).
                    let note = resp
                        .note
                        .as_ref()
                        .map(|n| format!("note: {n}\n"))
                        .unwrap_or_default();
                    let mut limit = shape.limit.max(1);
                    loop {
                        let text =
                            grouped::render(&resp.query, &groups, shape.offset, limit) + &note;
                        if limit == 1 || text.chars().count() <= shape.max_chars {
                            break super::bounded_text(text);
                        }
                        limit -= 1;
                    }
                });
            }
            if shape.json {
                resp.bound(&terms, shape.max_chars);
                serde_json::to_string(&resp).map_err(|e| e.to_string())
            } else {
                resp.bound_by(&terms, shape.max_chars, &search::compact::size);
                Ok(search::compact::render(&resp))
            }
        })
        .await;
        match out {
            Ok(Ok(s)) => text_result(s),
            Ok(Err(e)) => error_result(e),
            Err(e) => error_result(format!("search failed: {e}")),
        }
    }

    /// What a search result should say about the server's own state (first pass, model, pending files).
    fn search_notes(&self, first_pass_done: bool, resp: &search::SearchResponse) -> Vec<String> {
        let mut notes = Vec::new();
        if !first_pass_done {
            notes.push(
                "the first indexing pass is still running: results cover what is indexed so far"
                    .to_string(),
            );
        }
        let model_error = self
            .model_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match (self.embedder.get(), model_error) {
            (None, Some(e)) => notes.push(format!(
                "ranking is keyword-only: the embedding model is unavailable ({e})"
            )),
            (None, None) => notes.push(
                "ranking is keyword-only: the embedding model is still downloading or loading".to_string(),
            ),
            (Some(_), _) if resp.index.embedded_messages < resp.index.messages => notes.push(format!(
                "ranking is partly keyword-only: {} of {} messages are embedded so far (newest first)",
                resp.index.embedded_messages, resp.index.messages
            )),
            _ => {}
        }
        if resp.index.pending_files > 0 {
            notes.push(format!(
                "{} transcript files are still being indexed",
                resp.index.pending_files
            ));
        }
        notes
    }

    /// `get_session_detail`: a page of a session (JSON, every part), or the messages around one (text).
    pub(super) fn session_detail(&self, a: SessionArgs) -> Result<String, String> {
        let offset = non_negative(a.offset, "offset", 0)?;
        let limit = non_negative(a.limit, "limit", 50)?.clamp(1, 200);
        let before = non_negative(a.before, "before", 5)?.min(100);
        let after = non_negative(a.after, "after", 5)?.min(100);
        let text = match a.format.as_deref() {
            None => a.around.is_some(),
            Some("text") => true,
            Some("json") => false,
            Some(other) => {
                return Err(format!(
                    "format must be \"text\" or \"json\" (got {other:?})"
                ));
            }
        };
        let found = self.sources.discover_all(&self.cfg.claude_dir);
        let ids = found.sessions.iter().map(|s| s.session_id.as_str());
        let id = transcript::resolve_session_id(&a.session_id, ids).map_err(|e| e.to_string())?;
        let files = found
            .sessions
            .iter()
            .find(|s| s.session_id == id)
            .ok_or("session vanished")?;
        let s = transcript::load_session(&self.sources, files);
        // With `around`: its window (unless another is asked for), from `before` messages before it.
        let (window, start, count, hit) = match a.around.as_deref() {
            None => (a.window, offset, limit, None),
            Some(around) => {
                let around = around.trim();
                let matching: Vec<&transcript::Message> = s
                    .messages
                    .iter()
                    .filter(|m| !around.is_empty() && m.uuid.starts_with(around))
                    .collect();
                let m = match matching.as_slice() {
                    [m] => *m,
                    [] => return Err(format!("no message {around:?} in session {id}")),
                    _ => {
                        return Err(format!(
                            "{around:?} names several messages of session {id}: give more of the id"
                        ));
                    }
                };
                let w = a.window.unwrap_or(m.window);
                let at = s
                    .messages
                    .iter()
                    .filter(|x| x.window == w)
                    .position(|x| x.uuid == m.uuid)
                    .ok_or(format!("message {around:?} is not in window {w}"))?;
                (
                    Some(w),
                    at.saturating_sub(before),
                    before.min(at) + 1 + after,
                    Some(m.uuid.clone()),
                )
            }
        };
        let msgs: Vec<&transcript::Message> = s
            .messages
            .iter()
            .filter(|m| window.is_none_or(|w| m.window == w))
            .collect();
        if text {
            return Ok(super::bounded_text(render_messages(
                &s,
                &msgs,
                start,
                count,
                hit.as_deref(),
            )));
        }
        let page: Vec<serde_json::Value> = msgs
            .iter()
            .skip(start)
            .take(count)
            .map(|m| {
                serde_json::json!({"uuid": m.uuid, "role": m.role, "timestamp": m.timestamp, "window": m.window,
                    "is_compact_summary": m.is_compact_summary, "parts": m.parts})
            })
            .collect();
        let v = serde_json::json!({"session_id": s.session_id, "project": s.project, "title": s.title,
            "windows": s.windows, "archived": s.archived, "total_messages": msgs.len(), "offset": start,
            "has_more": start + count < msgs.len(), "messages": page});
        Ok(bounded(v, "messages", start))
    }
}

/// Messages `start..start + count` of `msgs` as text: a header, then one line per message (`>` marks `hit`).
fn render_messages(
    s: &transcript::Session,
    msgs: &[&transcript::Message],
    start: usize,
    count: usize,
    hit: Option<&str>,
) -> String {
    use std::fmt::Write;
    let end = (start + count).min(msgs.len());
    let mut out = format!(
        "session {} · {} · {} messages{} · showing {}-{}",
        search::compact::short(&s.session_id),
        s.project,
        msgs.len(),
        s.title
            .as_deref()
            .map(|t| format!(" · {}", t.trim()))
            .unwrap_or_default(),
        (start + 1).min(end),
        end
    );
    if end < msgs.len() {
        let _ = write!(out, "; more: offset={end}");
    }
    out.push('\n');
    for m in msgs.iter().take(end).skip(start) {
        let (content, kind, _) = crate::index::render::render(m);
        let mark = if hit == Some(m.uuid.as_str()) {
            '>'
        } else {
            ' '
        };
        let when = m
            .timestamp
            .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_default();
        let who = search::compact::speaker(m.role.as_str(), kind);
        let _ = writeln!(
            out,
            "{mark} {} {who} [{when}]: {}",
            search::compact::short(&m.uuid),
            content.trim().replace('\n', "\n    ")
        );
    }
    out
}
