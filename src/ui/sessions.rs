//! The sessions page: a timeline of every project's sessions (where people would rather look than read),
//! then per project its sessions, newest first, with their time range, size and whether only ghola still
//! keeps them.

use super::conversation::session_href;
use super::html::{escape, minute};
use crate::transcript::catalog::Listed;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Width of the timeline's drawing area, in pixels (the project names sit left of it).
const WIDTH: f64 = 640.0;
const LABEL: f64 = 220.0;
const ROW: f64 = 18.0;

/// The sessions of `sessions`, by project (projects in name order, sessions newest first).
pub fn page(sessions: &[&Listed], this_machine: &str) -> String {
    let several = sessions.iter().any(|l| l.summary.machine.is_some());
    let mut by: BTreeMap<&str, Vec<&Listed>> = BTreeMap::new();
    for l in sessions {
        by.entry(l.summary.project.as_str()).or_default().push(l);
    }
    for list in by.values_mut() {
        list.sort_by_key(|l| std::cmp::Reverse(l.summary.last_timestamp));
    }
    let mut body = String::from("<h1>Sessions</h1>");
    if by.is_empty() {
        body.push_str(
            "<p>No sessions yet: Claude Code has written no transcripts this ghola can read.</p>",
        );
        return body;
    }
    body.push_str(&timeline(&by));
    for (n, (project, list)) in by.iter().enumerate() {
        let _ = write!(
            body,
            "<h2 id=\"p-{n}\">{}</h2><table><tr><th>session</th>{}<th>from</th><th>to</th><th>messages</th>\
             <th></th></tr>",
            escape(project),
            if several { "<th>machine</th>" } else { "" }
        );
        for l in list {
            let s = &l.summary;
            let _ = write!(
                body,
                "<tr><td><a href=\"{}\">{}</a></td>{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                session_href(&s.session_id),
                escape(s.title.as_deref().unwrap_or(&s.session_id)),
                if several {
                    format!(
                        "<td class=machine>{}</td>",
                        escape(s.machine.as_deref().unwrap_or(this_machine))
                    )
                } else {
                    String::new()
                },
                minute(s.first_timestamp),
                minute(s.last_timestamp),
                l.all_messages,
                if s.archived { "only in ghola" } else { "" }
            );
        }
        body.push_str("</table>");
    }
    body
}

/// One row per project on a shared time axis, each session a bar from its first to its last message
/// (hover: its title and dates), the project's name a link to its table.
fn timeline(by: &BTreeMap<&str, Vec<&Listed>>) -> String {
    let times = by
        .values()
        .flatten()
        .flat_map(|l| [l.summary.first_timestamp, l.summary.last_timestamp])
        .flatten();
    let (Some(start), Some(end)) = (times.clone().min(), times.max()) else {
        return String::new();
    };
    let span = (end - start).num_seconds().max(1) as f64;
    let x = |t: DateTime<Utc>| LABEL + WIDTH * (t - start).num_seconds() as f64 / span;
    let height = ROW * by.len() as f64 + 20.0;
    let mut svg = format!(
        "<svg class=timeline role=img aria-label=\"sessions over time, per project\" width=\"{}\" \
         height=\"{height}\" viewBox=\"0 0 {} {height}\" xmlns=\"http://www.w3.org/2000/svg\" \
         font-size=\"11\" font-family=\"system-ui,sans-serif\">",
        LABEL + WIDTH + 10.0,
        LABEL + WIDTH + 10.0
    );
    for (row, (project, list)) in by.iter().enumerate() {
        let y = ROW * row as f64;
        let name = cut_middle(project, 34);
        let _ = write!(
            svg,
            "<a href=\"#p-{row}\"><text x=\"0\" y=\"{}\" fill=\"#333\"><title>{}</title>{}</text></a>\
             <line x1=\"{LABEL}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#ddd\"/>",
            y + 12.0,
            escape(project),
            escape(&name),
            LABEL + WIDTH,
            y + 8.0,
            y + 8.0
        );
        for l in list {
            let s = &l.summary;
            let (Some(a), Some(b)) = (
                s.first_timestamp.or(s.last_timestamp),
                s.last_timestamp.or(s.first_timestamp),
            ) else {
                continue;
            };
            let (x0, x1) = (x(a), x(b));
            let _ = write!(
                svg,
                "<a href=\"{}\"><rect class=day x=\"{x0:.1}\" y=\"{}\" width=\"{:.1}\" height=\"12\" rx=\"2\" \
                 opacity=\"0.75\"><title>{} · {} → {} · {} messages</title></rect></a>",
                session_href(&s.session_id),
                y + 2.0,
                (x1 - x0).max(3.0),
                escape(s.title.as_deref().unwrap_or(&s.session_id)),
                minute(Some(a)),
                minute(Some(b)),
                l.all_messages
            );
        }
    }
    let _ = write!(
        svg,
        "<text x=\"{LABEL}\" y=\"{}\" fill=\"#666\">{}</text><text x=\"{}\" y=\"{}\" fill=\"#666\" \
         text-anchor=\"end\">{}</text></svg>",
        height - 4.0,
        start.format("%Y-%m-%d"),
        LABEL + WIDTH,
        height - 4.0,
        end.format("%Y-%m-%d")
    );
    svg
}

/// `text` in at most `max` characters, cut in the middle (`/home/me/…/app-sample`): projects that share a
/// beginning or an end still look different.
pub fn cut_middle(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max || max < 3 {
        return text.to_string();
    }
    let head = (max - 1) / 2;
    let tail = max - 1 - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

#[cfg(test)]
mod cut_tests {
    use super::cut_middle;

    #[test]
    fn labels_are_cut_in_the_middle() {
        assert_eq!(cut_middle("/short", 34), "/short");
        let a = cut_middle("/Users/dain/workspace/claude-code-log-sample", 20);
        let b = cut_middle("/Users/dain/workspace/claude-code-log", 20);
        assert_eq!(a.chars().count(), 20);
        assert!(
            a.starts_with("/Users/da") && a.ends_with("og-sample"),
            "{a}"
        );
        assert_ne!(a, b);
    }
}
