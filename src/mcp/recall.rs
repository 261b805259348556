//! The recall tools' bodies: a search shaped for a model's context (compact text under a budget the caller may
//! set, or grouped by session), and a session read around one hit. The tool declarations are in `mod.rs`.

use super::args::{AROUND, MAX_AROUND, MAX_SESSION_PAGE, SESSION_PAGE, SearchArgs, SessionArgs};
use super::{GholaServer, bounded, error_result, non_negative, text_result};
use crate::search;
use crate::service::{Format, Grouping, SearchRequest, SessionChoice};
use crate::transcript;
use rmcp::model::CallToolResult;

/// A typed choice (`format`, `group_by`) as the model spelled it; left out, the default.
fn choice<T>(given: Option<&str>) -> Result<T, String>
where
    T: std::str::FromStr<Err = search::SearchError> + Default,
{
    given
        .map(str::parse::<T>)
        .transpose()
        .map_err(|e| e.to_string())
        .map(Option::unwrap_or_default)
}

impl GholaServer {
    /// The search request of a tool call (`global`: every project): the arguments as given, the calling
    /// project and session filled in. The service checks it.
    fn search_request(&self, a: SearchArgs, global: bool) -> Result<SearchRequest, String> {
        let mut r = SearchRequest::for_model(&a.query);
        r.session = a.session_id.as_deref().and_then(SessionChoice::parse);
        r.project = if global || (r.names_a_session() && a.project.is_none()) {
            None
        } else {
            Some(a.project.unwrap_or_else(|| self.cfg.project.clone()))
        };
        (r.after, r.before, r.since) = (a.after, a.before, a.since);
        r.context = non_negative(a.context_before_after, "context_before_after", r.context)?;
        r.max_results = non_negative(a.max_results, "max_results", r.max_results)?;
        r.offset = non_negative(a.offset, "offset", 0)?;
        r.max_chars = non_negative(a.max_chars, "max_chars", r.max_chars)?;
        if let Some(t) = a.threshold {
            r.threshold = t as f32;
        }
        if let Some(f) = a.relative_floor {
            r.relative_floor = f as f32;
        }
        r.include_subagents = a.include_subagents.unwrap_or(true);
        r.calling_session = self.cfg.session_id.clone();
        r.format = choice(a.format.as_deref())?;
        r.grouping = choice(a.group_by.as_deref())?;
        r.machines = a.machines.unwrap_or_default();
        r.team = match a.scope.as_deref().map(str::trim) {
            None | Some("" | "local") => false,
            Some("team") => true,
            Some(other) => {
                return Err(format!(
                    "scope: {other:?} is not a scope: \"local\" (default) or \"team\""
                ));
            }
        };
        r.people = a.people.unwrap_or_default();
        Ok(r)
    }

    /// `search_project_history` and `search_global_history`: the service's answer as compact text or JSON under
    /// the caller's budget, or its sessions paged.
    pub(super) async fn run_search(&self, a: SearchArgs, global: bool) -> CallToolResult {
        let req = match self.search_request(a, global) {
            Ok(r) => r,
            Err(e) => return error_result(e),
        };
        let history = self.history.clone();
        let out = tokio::task::spawn_blocking(move || -> Result<String, String> {
            let found = history.search(&req).map_err(|e| {
                if !e.is_user_error() {
                    tracing::warn!("search failed: {e}");
                }
                e.to_string()
            })?;
            let resp = found.response;
            Ok(match (req.grouping, req.format) {
                (Grouping::Session, Format::Json) => {
                    let v = serde_json::json!({"query": resp.query, "total_sessions": found.groups.len(),
                        "offset": req.offset, "sessions": found.groups.iter().skip(req.offset)
                            .take(req.max_results).collect::<Vec<_>>(), "note": resp.note});
                    bounded(v, "sessions", req.offset)
                }
                (Grouping::Session, Format::Text) => {
                    // The page shortened until it fits the budget (its header then says where to go on).
                    let note = resp
                        .note
                        .as_ref()
                        .map(|n| format!("note: {n}\n"))
                        .unwrap_or_default();
                    let mut limit = req.max_results.max(1);
                    loop {
                        let text =
                            search::grouped::render(&resp.query, &found.groups, req.offset, limit) + &note;
                        if limit == 1 || text.chars().count() <= req.max_chars {
                            break super::bounded_text(text);
                        }
                        limit -= 1;
                    }
                }
                (Grouping::Hit, Format::Json) => serde_json::to_string(&resp).map_err(|e| e.to_string())?,
                (Grouping::Hit, Format::Text) => search::compact::render(&resp),
            })
        })
        .await;
        match out {
            Ok(Ok(s)) => text_result(s),
            Ok(Err(e)) => error_result(e),
            Err(e) => error_result(format!("search failed: {e}")),
        }
    }

    /// file_history: the path (and lines) checked, the file map asked, the answer as bounded text.
    pub(super) fn file_history_text(&self, a: super::args::FileArgs) -> Result<String, String> {
        use crate::index::file_map::query::{FileQuery, parse_lines, parse_path_and_lines};
        let (path, mut lines) = parse_path_and_lines(&a.path)?;
        if let Some(l) = a.lines.as_deref().filter(|l| !l.trim().is_empty()) {
            lines = Some(parse_lines(l).map_err(|e| format!("lines: {e}"))?);
        }
        let limit = super::non_negative(a.limit, "limit", crate::service::FILE_SESSIONS)?;
        let q = FileQuery {
            path,
            lines,
            base: Some(std::path::PathBuf::from(&self.cfg.project)),
            project: None,
            max_sessions: limit,
            max_changes: crate::service::FILE_CHANGES,
        };
        let h = self.history.file_history(&q).map_err(|e| e.to_string())?;
        Ok(crate::service::file_history_text(
            &h,
            crate::service::FILE_MODEL_CHARS,
            true,
        ))
    }

    /// `get_session_detail`: a page of a session (JSON, every part), or the messages around one (text).
    pub(super) fn session_detail(&self, a: SessionArgs) -> Result<String, String> {
        let offset = non_negative(a.offset, "offset", 0)?;
        let limit = non_negative(a.limit, "limit", SESSION_PAGE)?.clamp(1, MAX_SESSION_PAGE);
        let before = non_negative(a.before, "before", AROUND)?.min(MAX_AROUND);
        let after = non_negative(a.after, "after", AROUND)?.min(MAX_AROUND);
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
        let files = match self.history.session_files(&a.session_id) {
            Ok(f) => f,
            Err(e) => {
                // A session of the team hub: its redacted text, read there.
                return match self.history.hub_session(&a.session_id) {
                    Ok(Some(s)) => hub_session_page(
                        &s,
                        a.around.as_deref(),
                        offset,
                        limit,
                        before,
                        after,
                        text,
                    ),
                    _ => Err(e.to_string()),
                };
            }
        };
        let id = files.session_id.clone();
        let s = transcript::load_session(self.history.sources(), &files);
        // With `around`: its window (unless another is asked for), from `before` messages before it.
        let (window, start, count, hit) = match a.around.as_deref() {
            None => (a.window, offset, limit, None),
            Some(around) => {
                let around = around.trim();
                let matching: Vec<&transcript::Message> = s
                    .messages
                    .iter()
                    .filter(|m| m.is_named_by(around))
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
        let mut v = serde_json::json!({"session_id": s.session_id, "project": s.project, "title": s.title,
            "windows": s.windows, "archived": s.archived, "total_messages": msgs.len(), "offset": start,
            "has_more": start + count < msgs.len(), "messages": page});
        if let Some(m) = &s.machine {
            v["machine"] = serde_json::json!(m);
        }
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
        let (content, kind, _) = crate::index::render::render(m, &[], 0);
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
            // What the calls wrote follows, longer than a stored text shows it (`index::shown`).
            crate::index::shown::keyword_text(&content)
                .trim()
                .replace('\n', "\n    ")
        );
        for (name, input) in m.parts.iter().filter_map(|p| match p {
            transcript::Part::ToolUse { name, input, .. } if !input.trim().is_empty() => {
                Some((name, input))
            }
            _ => None,
        }) {
            let _ = writeln!(
                out,
                "    ({name} wrote:) {}",
                search::response::cut_around(input.trim(), &[], CALL_INPUT_SHOWN)
                    .replace('\n', "\n      ")
            );
        }
    }
    out
}

/// Characters of what one call wrote or asked (an edit's new text, a plan, a to-do list, a question put to the
/// user) that a session read as text shows under the call's line: its summary names only the file or the first
/// words, and what was written is what "what was on the plan?" asks for. Enough for a plan or a screen of an
/// edit; eleven messages around a hit stay a few thousand characters (docs/search.md, "What a call wrote, read").
/// The input words are already free of credentials: the reader redacts every part.
pub const CALL_INPUT_SHOWN: usize = 1_000;

/// A page of a team hub session, as `get_session_detail` answers for a local one: JSON of its messages (from
/// `offset`, `limit` of them), or with `around` the messages about that one as text, it marked with ">".
fn hub_session_page(
    s: &crate::hub::search::HubSession,
    around: Option<&str>,
    offset: usize,
    limit: usize,
    before: usize,
    after: usize,
    text: bool,
) -> Result<String, String> {
    let (start, end, hit) = match around.map(str::trim) {
        None => (
            offset.min(s.messages.len()),
            (offset + limit).min(s.messages.len()),
            None,
        ),
        Some(a) => {
            let at = s
                .messages
                .iter()
                .position(|m| !a.is_empty() && m.id.starts_with(a))
                .ok_or_else(|| format!("no message {a:?} in session {}", s.session_id))?;
            (
                at.saturating_sub(before),
                (at + after + 1).min(s.messages.len()),
                Some(at),
            )
        }
    };
    let page = &s.messages[start..end];
    if !text {
        return serde_json::to_string(&serde_json::json!({
            "session_id": s.session_id,
            "person": s.person,
            "machine": s.machine,
            "project": s.project,
            "title": s.title,
            "origin": "hub",
            "total_messages": s.messages.len(),
            "offset": start,
            "messages": page,
        }))
        .map_err(|e| e.to_string());
    }
    let mut out = format!(
        "session {} · {}'s · on {} · {} · from the team hub (redacted)\n",
        s.session_id, s.person, s.machine, s.project
    );
    for (i, m) in page.iter().enumerate() {
        let mark = if Some(start + i) == hit { ">" } else { " " };
        let when =
            m.at.map(|t| t.format("%Y-%m-%d %H:%M").to_string())
                .unwrap_or_default();
        out.push_str(&format!(
            "{mark} [{}] {when} {} ({}): {}\n",
            m.id, m.role, m.kind, m.content
        ));
    }
    Ok(out)
}
