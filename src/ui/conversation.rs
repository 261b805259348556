//! One session read as a conversation: compaction windows as sections with a jump list, text as markdown,
//! tool calls, tool results and thinking folded, each subagent's conversation folded under its own anchor.
//!
//! Every message has an anchor (`#m-<uuid>`); a search hit opens the page with `?at=<uuid>`, which marks
//! that message and unfolds what holds it (a subagent, a tool result), so the jump lands on something visible.

use super::html::{csrf_field, escape, url_part};
use super::markdown;
use crate::transcript::{Message, Part, Session};
use std::fmt::Write;

/// Links to the history of each file a tool call touched (its path made absolute as the file map keeps it).
fn file_links(body: &mut String, m: &Message, touches: &[crate::transcript::touch::Touch]) {
    let mut seen = Vec::new();
    for t in touches {
        let path =
            crate::index::file_map::absolute(&t.path, m.cwd.as_deref().unwrap_or(&m.project));
        if seen.contains(&path) {
            continue;
        }
        let name = crate::index::file_map::file_name_key(&path);
        let _ = write!(
            body,
            "<a class=file href=\"{}\" title=\"{}\">history of {}</a> ",
            escape(&super::files::link(&path)),
            escape(&path),
            escape(path.rsplit(['/', '\\']).next().unwrap_or(&name))
        );
        seen.push(path);
    }
}

/// The session page's body. `at`: the message to open at; `csrf`: for the forget button.
pub fn page(s: &Session, at: Option<&str>, csrf: &str) -> String {
    let mut body = format!(
        "<h1>{}</h1><p class=meta>{}{} · session {}{} · {} window(s) · {} message(s)</p>",
        escape(s.title.as_deref().unwrap_or("(untitled session)")),
        escape(&s.project),
        s.machine
            .as_deref()
            .map(|m| format!(" · recorded on {}", escape(m)))
            .unwrap_or_default(),
        escape(&s.session_id),
        if s.archived {
            " · archived: Claude Code deleted the transcript; this is ghola's copy"
        } else {
            ""
        },
        s.windows,
        s.messages.len()
    );
    let _ = write!(
        body,
        "<form class=inline method=post action=\"/forget\">{}<input type=hidden name=session value=\"{}\">\
         <button class=danger>forget this session…</button></form>",
        csrf_field(csrf),
        escape(&s.session_id)
    );
    if s.windows > 1 {
        body.push_str("<p class=meta>compaction windows:");
        for w in 0..s.windows {
            let _ = write!(body, " <a href=\"#window-{w}\">{w}</a>");
        }
        body.push_str("</p>");
    }
    if !s.subagents.is_empty() {
        body.push_str("<p class=meta>subagents:");
        for a in &s.subagents {
            let _ = write!(
                body,
                " <a href=\"#agent-{}\">{}{}</a>",
                escape(&a.agent_id),
                escape(a.agent_type.as_deref().unwrap_or("agent")),
                escape(&format!(" {}", a.agent_id.get(..7).unwrap_or(&a.agent_id)))
            );
        }
        body.push_str("</p>");
    }
    if s.messages.is_empty() && s.subagents.is_empty() {
        body.push_str(
            "<p>No messages in this session: its file holds only a title or a summary.</p>",
        );
    }
    // A subagent's work whose main transcript is gone is what the session holds: shown unfolded.
    let only_subagents = s.only_subagents_work();
    if only_subagents {
        body.push_str(
            "<p>The session's main conversation is not in its files: its subagents' work is below.</p>",
        );
    }
    let mut window = None;
    for m in &s.messages {
        if window != Some(m.window) {
            window = Some(m.window);
            let _ = write!(
                body,
                "<div class=window id=\"window-{0}\">window {0}</div>",
                m.window
            );
        }
        message(&mut body, m, at);
    }
    for a in &s.subagents {
        let open = at.is_some_and(|at| a.messages.iter().any(|m| m.is_entry(at)))
            || (only_subagents && !a.is_warmup());
        let _ = write!(
            body,
            "<details class=agent id=\"agent-{}\"{}><summary>subagent {} {} ({} messages)</summary>",
            escape(&a.agent_id),
            if open { " open" } else { "" },
            escape(a.agent_type.as_deref().unwrap_or("")),
            escape(&a.agent_id),
            a.messages.len()
        );
        for m in &a.messages {
            message(&mut body, m, at);
        }
        body.push_str("</details>");
    }
    body
}

/// A link to a session (with its id made safe for the path).
/// A teammate's session from the team hub: its redacted messages as they were pushed (no forget button: it is
/// theirs to forget).
pub fn hub_page(s: &crate::hub::search::HubSession, at: Option<&str>) -> String {
    let mut body = format!(
        "<h1>{}</h1><p class=meta>{} · <span class=person>{}</span>'s · recorded on {} · session {} · \
         <span class=origin>from the team hub</span> (redacted; thinking and tool output only if shared) · \
         {} message(s)</p>",
        escape(s.title.as_deref().unwrap_or("(untitled session)")),
        escape(&s.project),
        escape(&s.person),
        escape(&s.machine),
        escape(&s.session_id),
        s.messages.len()
    );
    for m in &s.messages {
        let is_at = at == Some(m.id.as_str());
        let _ = write!(
            body,
            "<article id=\"m-{}\" class=\"{}{}\"><div class=meta>{}{}</div><div class=text>{}</div></article>",
            escape(&m.id),
            escape(&m.role),
            if is_at { " at" } else { "" },
            escape(&m.role),
            m.at.map(|t| t.format(" · %Y-%m-%d %H:%M:%S").to_string())
                .unwrap_or_default(),
            markdown::render(&m.content)
        );
    }
    body
}

pub fn session_href(id: &str) -> String {
    format!("/session/{}", url_part(id))
}

fn message(body: &mut String, m: &Message, at: Option<&str>) {
    let is_at = at.is_some_and(|at| m.is_entry(at));
    let class = if m.is_compact_summary {
        "summary"
    } else {
        m.role.as_str()
    };
    let _ = write!(
        body,
        "<article id=\"m-{}\" class=\"{class}{}\"><div class=meta>{}{}</div>",
        escape(&m.uuid),
        if is_at { " at" } else { "" },
        if m.is_compact_summary {
            "summary of the earlier conversation"
        } else {
            m.role.as_str()
        },
        m.timestamp
            .map(|t| t.format(" · %Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_default()
    );
    // The message a search hit names opens with its folded parts unfolded.
    let open = if is_at { " open" } else { "" };
    for p in &m.parts {
        match p {
            Part::Text { text } => {
                let _ = write!(body, "<div class=text>{}</div>", markdown::render(text));
            }
            Part::Thinking { text } => {
                let _ = write!(
                    body,
                    "<details class=thinking{open}><summary>thinking</summary><pre>{}</pre></details>",
                    escape(text)
                );
            }
            Part::ToolUse {
                name,
                summary,
                input,
                touches,
                ..
            } => {
                // Unfolded, the call shows what it wrote or asked (an edit's new text, a plan), not only its
                // summary line.
                let full = if input.is_empty() {
                    summary.clone()
                } else {
                    format!("{summary}\n\n{input}")
                };
                let _ = write!(
                    body,
                    "<details class=tool{open}><summary>tool call: {} {}</summary><pre>{}</pre></details>",
                    escape(name),
                    escape(&summary.chars().take(120).collect::<String>()),
                    escape(&full)
                );
                file_links(body, m, touches);
            }
            Part::ToolResult { text, is_error, .. } => {
                let _ = write!(
                    body,
                    "<details class=result{open}><summary>tool result{} ({} characters)</summary><pre>{}</pre>\
                     </details>",
                    if *is_error { " (error)" } else { "" },
                    text.chars().count(),
                    escape(text)
                );
            }
        }
    }
    body.push_str("</article>");
}
