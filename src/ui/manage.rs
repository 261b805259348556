//! The pages that show what ghola keeps and let a person change it: the notes of each project (with where
//! each note came from, to edit or forget), the archive (what is kept, its size, to forget a session or a
//! project), and the confirmation every forgetting goes through.
//!
//! Every form here is a POST carrying the CSRF field; nothing is changed by following a link.

use super::conversation::session_href;
use super::html::{bytes, csrf_field, escape, url_part};
use super::markdown;
use crate::index::forget::{ForgetSummary, SessionInfo};
use crate::notes::store::Meta;
use crate::notes::{Category, ProjectNotes};
use std::fmt::Write;

/// Every project with notes, each a link to its notes.
pub fn notes_projects(metas: &[(Meta, usize)]) -> String {
    let mut body = String::from("<h1>Notes</h1>");
    if metas.is_empty() {
        body.push_str(
            "<p>No project has notes yet. ghola distills them from your sessions when extraction is on \
             (<code>ghola notes on</code>), or write them with <code>ghola notes edit</code>.</p>",
        );
        return body;
    }
    body.push_str("<table><tr><th>project</th><th>notes</th><th></th></tr>");
    for (m, n) in metas {
        let _ = write!(
            body,
            "<tr><td><a href=\"/notes?project={}\">{}</a></td><td>{n}</td><td>{}</td></tr>",
            url_part(&m.project),
            escape(&m.project),
            if m.archived { "archived" } else { "" }
        );
    }
    body.push_str("</table>");
    body
}

/// One project's notes by category, each with its provenance, an edit form and a forget button.
pub fn notes(n: &ProjectNotes, csrf: &str) -> String {
    let project = &n.meta.project;
    let mut body = format!(
        "<h1>Notes of {}</h1><p class=meta>{}{}</p>",
        escape(project),
        escape(&n.dir.display().to_string()),
        if n.meta.archived {
            " · archived: kept, neither extracted nor put in front of sessions"
        } else {
            ""
        }
    );
    for c in Category::ALL {
        let items = n.get(c);
        let _ = write!(body, "<h2 id=\"{0}\">{0} ({1})</h2>", c.name(), items.len());
        for i in items {
            let from = match (&i.session, i.window) {
                (Some(s), w) => format!(
                    "learned from <a href=\"{}\">session {}</a>{}",
                    session_href(s),
                    escape(s.get(..8).unwrap_or(s)),
                    w.map(|w| format!(" window {w}")).unwrap_or_default()
                ),
                (None, _) => "written by a person".to_string(),
            };
            let _ = write!(
                body,
                "<div class=item id=\"n-{id}\"><div class=text>{}</div><div class=meta>{} · {from}{}</div>\
                 <details class=edit><summary>edit</summary><form method=post action=\"/notes/edit\">{csrf}\
                 <input type=hidden name=project value=\"{p}\"><input type=hidden name=id value=\"{id}\">\
                 <textarea name=text rows=4>{}</textarea><button>save</button></form></details>\
                 <form class=inline method=post action=\"/notes/forget\">{csrf}<input type=hidden name=project \
                 value=\"{p}\"><input type=hidden name=id value=\"{id}\"><button class=danger>forget…</button>\
                 </form></div>",
                markdown::render(&i.text),
                escape(&i.id),
                i.date
                    .as_deref()
                    .map(|d| format!(" · {}", escape(d)))
                    .unwrap_or_default(),
                escape(&i.text),
                id = escape(&i.id),
                p = escape(project),
                csrf = csrf_field(csrf),
            );
        }
    }
    body
}

/// What the archive page shows of one project.
#[derive(Debug, Default)]
pub struct ProjectKeep {
    pub project: String,
    pub sessions: usize,
    /// Sessions whose transcript Claude Code deleted: ghola's copy is the only one.
    pub only_here: Vec<(String, Option<String>)>,
    /// Bytes of transcript archived for it.
    pub archived_bytes: u64,
}

/// The archive page: totals, then per project what is kept and a button to forget it.
pub fn archive(
    stats: &crate::index::archive::ArchiveStats,
    projects: &[ProjectKeep],
    csrf: &str,
) -> String {
    let only: usize = projects.iter().map(|p| p.only_here.len()).sum();
    let mut body = format!(
        "<h1>Archive and privacy</h1><p>ghola keeps a compressed copy of every transcript it has read, so that \
         sessions Claude Code deletes stay readable: <strong>{} session(s)</strong>, {} of transcripts stored in \
         {}; <strong>{only}</strong> of them only here. Everything stays on this machine; forgetting removes a \
         session from the index and the archive for good.</p>",
        stats.sessions,
        bytes(stats.original_bytes),
        bytes(stats.stored_bytes),
    );
    body.push_str(
        "<table><tr><th>project</th><th>sessions</th><th>only in ghola</th><th>archived</th><th></th></tr>",
    );
    for p in projects {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><form class=inline method=post \
             action=\"/forget\">{}<input type=hidden name=project value=\"{}\"><button class=danger>forget \
             project…</button></form></td></tr>",
            escape(&p.project),
            p.sessions,
            p.only_here.len(),
            bytes(p.archived_bytes),
            csrf_field(csrf),
            escape(&p.project)
        );
    }
    body.push_str("</table>");
    if only > 0 {
        body.push_str("<h2>Sessions only ghola still keeps</h2><ul>");
        for p in projects {
            for (id, title) in &p.only_here {
                let _ = write!(
                    body,
                    "<li><a href=\"{}\">{}</a> <span class=meta>{}</span></li>",
                    session_href(id),
                    escape(title.as_deref().unwrap_or(id)),
                    escape(&p.project)
                );
            }
        }
        body.push_str("</ul>");
    }
    body
}

/// What a forget is about to remove, with the button that does it (`fields`: the hidden fields that name it
/// again).
pub fn confirm_forget(chosen: &[SessionInfo], fields: &str, csrf: &str) -> String {
    let messages: usize = chosen.iter().map(|s| s.messages).sum();
    let mut body = format!(
        "<h1>Forget {} session(s)?</h1><p>{messages} message(s) will be removed from the index and the archive \
         <strong>for good</strong>. A transcript Claude Code still has will not be indexed again.</p><ul>",
        chosen.len()
    );
    for s in chosen {
        let _ = write!(
            body,
            "<li><a href=\"{}\">{}</a> · {} · {} message(s)</li>",
            session_href(&s.session_id),
            escape(&s.session_id),
            escape(&s.project),
            s.messages
        );
    }
    let _ = write!(
        body,
        "</ul><form method=post action=\"/forget\">{}{fields}<input type=hidden name=confirm value=yes>\
         <button class=danger id=confirm>forget for good</button> <a href=\"/archive\">keep them</a></form>",
        csrf_field(csrf)
    );
    body
}

/// What a forget did.
pub fn forgotten(done: &ForgetSummary) -> String {
    format!(
        "<h1>Forgotten</h1><p>{} session(s): {} message(s) removed, {} of archive reclaimed.</p>\
         <p><a href=\"/projects\">sessions</a> · <a href=\"/archive\">archive</a></p>",
        done.sessions,
        done.messages_removed,
        bytes(done.archive_bytes_reclaimed)
    )
}

/// The confirmation before a note is forgotten.
pub fn confirm_forget_note(project: &str, id: &str, text: &str, csrf: &str) -> String {
    format!(
        "<h1>Forget this note?</h1><div class=item><div class=text>{}</div></div>\
         <form method=post action=\"/notes/forget\">{}<input type=hidden name=project value=\"{}\">\
         <input type=hidden name=id value=\"{}\"><input type=hidden name=confirm value=yes>\
         <button class=danger id=confirm>forget it</button> <a href=\"/notes?project={}\">keep it</a></form>",
        markdown::render(text),
        csrf_field(csrf),
        escape(project),
        escape(id),
        url_part(project)
    )
}
