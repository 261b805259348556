//! A file's history page (`/file?path=…&lines=…`): the sessions that touched the file, newest first, each
//! change with the request that led to it, linked to the message in its session. Tool calls on the session
//! pages link here.

use super::html::{escape, url_part};
use crate::index::file_map::query::{FileHistory, Matched};
use std::fmt::Write;

/// The address of a file's history page.
pub fn link(path: &str) -> String {
    format!("/file?path={}", url_part(path))
}

fn when(ms: Option<i64>) -> String {
    super::html::minute(ms.and_then(chrono::DateTime::from_timestamp_millis))
}

/// The page without a file yet: the form alone.
pub fn page_form() -> String {
    "<h1>file history</h1><form class=inline action=\"/file\" method=get><input name=path size=60 \
     placeholder=\"/path/to/file.rs\" aria-label=file> lines <input name=lines size=8 placeholder=\"40-52\" \
     aria-label=lines><button>history</button></form>"
        .to_string()
}

/// The page's body: a form to ask for another file or lines, then the answer.
pub fn page(h: &FileHistory, typed: &str, lines: &str) -> String {
    let mut body = format!(
        "<h1>{}</h1><form class=inline action=\"/file\" method=get><input name=path value=\"{}\" size=60 \
         aria-label=file> lines <input name=lines value=\"{}\" size=8 placeholder=\"40-52\" aria-label=lines>\
         <button>history</button></form>",
        escape(&h.path),
        escape(typed),
        escape(lines)
    );
    match h.matched {
        Matched::Nothing => {
            body.push_str("<p class=note>No session read, changed or ran a command on this file.</p>");
            return body;
        }
        Matched::Ending => body.push_str(
            "<p class=note>No session touched this very file; these touched files whose path ends the same \
             way.</p>",
        ),
        Matched::Exact => {}
    }
    if h.lines.is_some() && h.on_disk.is_none() {
        body.push_str("<p class=note>The file is not on this machine: lines cannot be traced.</p>");
    }
    let total = h.sessions.len() + h.more_sessions;
    let _ = write!(
        body,
        "<p class=meta>{total} session(s), newest first{}</p>",
        if h.lines.is_some() {
            "; those that wrote the lines asked for come first"
        } else {
            ""
        }
    );
    for s in &h.sessions {
        let _ = write!(
            body,
            "<section class=file-session><h2><a href=\"/session/{}\">{}</a></h2><p class=meta>{} · {}{} · \
             session {}</p>",
            url_part(&s.session_id),
            escape(s.title.as_deref().unwrap_or("(untitled session)")),
            when(s.last_ms),
            escape(&s.project),
            s.machine
                .as_deref()
                .map(|m| format!(" · recorded on {}", escape(m)))
                .unwrap_or_default(),
            escape(&s.session_id)
        );
        for c in &s.changes {
            let flags = c.flags();
            let _ = write!(
                body,
                "<div class=change><p><a href=\"/session/{}?at={}#m-{}\">{} {}</a>{}</p>",
                url_part(&s.session_id),
                url_part(&c.message_uuid),
                escape(&c.message_uuid),
                c.action,
                when(c.at_ms),
                if flags.is_empty() {
                    String::new()
                } else {
                    format!(" <span class=note>({})</span>", flags.join(", "))
                }
            );
            if let Some(r) = &c.request {
                let _ = write!(body, "<p class=meta>asked: “{}”</p>", escape(r));
            }
            if !c.old.is_empty() {
                let _ = write!(body, "<pre class=old>- {}</pre>", escape(&c.old));
            }
            if !c.new.is_empty() {
                let mark = if c.action == "ran" { "$" } else { "+" };
                let _ = write!(body, "<pre class=new>{mark} {}</pre>", escape(&c.new));
            }
            body.push_str("</div>");
        }
        if s.more_changes > 0 {
            let _ = write!(
                body,
                "<p class=meta>… {} more in this session</p>",
                s.more_changes
            );
        }
        body.push_str("</section>");
    }
    if h.more_sessions > 0 {
        let _ = write!(
            body,
            "<p class=meta>… {} older session(s) not shown</p>",
            h.more_sessions
        );
    }
    body
}
