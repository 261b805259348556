//! The search page's results: hit by hit (each with its neighbours, the matched message marked), or folded
//! by session (`group=session`: title, time range, match count and the best snippets), every hit a link to
//! its place in its session.

use super::html::{escape, highlight, url_part};
use crate::search::SearchResponse;
use crate::search::grouped::SessionGroup;
use std::fmt::Write;

/// Where a hit lives: its session page, opened at the message (folded parts around it unfolded).
pub fn hit_link(session_id: &str, uuid: &str) -> String {
    format!(
        "/session/{}?at={}#m-{}",
        url_part(session_id),
        url_part(uuid),
        escape(uuid)
    )
}

/// ` · <branch>` when there is one.
fn branch(b: Option<&str>) -> String {
    b.map(|b| format!(" · {}", escape(b))).unwrap_or_default()
}

fn summary_line(resp: &SearchResponse, body: &mut String) {
    if let Some(n) = &resp.note {
        let _ = write!(body, "<p class=note>{}</p>", escape(n));
    }
    if resp.results.is_empty() && resp.nothing_in_scope {
        body.push_str("<p>No messages to search.</p>");
    } else if resp.results.is_empty() {
        let _ = write!(
            body,
            "<p>No messages match.</p><p class=meta>{}</p>",
            escape(resp.nothing_matches())
        );
    }
    let _ = write!(
        body,
        "<p class=meta>{} matching message(s); {} indexed, {} with meaning.</p>",
        resp.total_matches, resp.index.messages, resp.index.embedded_messages
    );
}

/// Hit by hit: project, date, branch, a link to the session at the hit, then its lines.
pub fn flat(resp: &SearchResponse, terms: &[String]) -> String {
    let mut body = String::new();
    summary_line(resp, &mut body);
    for h in &resp.results {
        let m = &h.matched_message;
        let date = m
            .timestamp
            .as_deref()
            .map_or("", |t| t.get(..10).unwrap_or(t));
        let _ = write!(
            body,
            "<div class=hit><div class=meta>{}{} · {}{} · <a class=open href=\"{}\">session {}</a> · window {} · \
             score {:.2}</div>",
            escape(&m.project),
            on_machine(resp.several_machines, &m.machine) + &whose(&m.person, &m.origin),
            escape(date),
            branch(m.git_branch.as_deref()),
            hit_link(&m.session_id, &m.uuid),
            escape(m.session_id.get(..8).unwrap_or(&m.session_id)),
            m.window,
            h.score
        );
        for c in &h.context {
            let _ = write!(
                body,
                "<div class=\"msg{}\"><span class=meta>{} · {}</span>\n{}</div>",
                if c.is_match { " match" } else { "" },
                escape(&c.role),
                escape(c.timestamp.as_deref().unwrap_or("")),
                highlight(&c.content, terms)
            );
        }
        body.push_str("</div>");
    }
    body
}

/// Folded by session, best session first.
pub fn grouped(resp: &SearchResponse, groups: &[SessionGroup], terms: &[String]) -> String {
    let mut body = String::new();
    summary_line(resp, &mut body);
    for g in groups {
        let day = |t: &Option<String>| {
            t.as_deref()
                .map(|t| t.get(..16).unwrap_or(t).replace('T', " "))
                .unwrap_or_default()
        };
        let _ = write!(
            body,
            "<div class=hit><div><a class=open href=\"/session/{}\"><strong>{}</strong></a></div>\
             <div class=meta>{}{} · {} → {}{} · {} match(es) · best {:.2}</div>",
            url_part(&g.session_id),
            escape(g.title.as_deref().unwrap_or(&g.session_id)),
            escape(&g.project),
            on_machine(!g.machine.is_empty(), &g.machine) + &whose(&g.person, &g.origin),
            escape(&day(&g.first_timestamp)),
            escape(&day(&g.last_timestamp)),
            branch(g.git_branch.as_deref()),
            g.matches,
            g.best_score
        );
        for s in &g.snippets {
            let _ = write!(
                body,
                "<div class=\"msg match\"><a class=meta href=\"{}\">{} · {}</a>\n{}</div>",
                hit_link(&g.session_id, &s.uuid),
                escape(&s.role),
                escape(&day(&s.timestamp)),
                highlight(&s.text, terms)
            );
        }
        body.push_str("</div>");
    }
    body
}

/// ` · <person>'s · from the team hub` in a team search.
fn whose(person: &str, origin: &str) -> String {
    let mut out = String::new();
    if !person.is_empty() {
        out.push_str(&format!(
            " · <span class=person>{}</span>'s",
            escape(person)
        ));
    }
    if origin == "hub" {
        out.push_str(" · <span class=origin>from the team hub</span>");
    }
    out
}

/// ` · on <machine>` when results name their machine (the history holds more than one).
fn on_machine(shown: bool, machine: &str) -> String {
    if shown && !machine.is_empty() {
        format!(" · on <span class=machine>{}</span>", escape(machine))
    } else {
        String::new()
    }
}
