//! The pages of `ghola ui`, rendered here as HTML (escaped, no script, one inline style sheet): nothing is
//! loaded from elsewhere, and the page works with scripts off.

use crate::search::SearchResponse;
use crate::transcript::catalog::Listed;
use crate::transcript::{Message, Part, Session};
use std::fmt::Write;

/// Text made safe inside HTML elements and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A value made safe inside a URL's query or path segment.
pub fn url_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `text` escaped, each occurrence of one of `terms` (ASCII case ignored; words under four letters left alone)
/// wrapped in `<mark>`.
pub fn highlight(text: &str, terms: &[String]) -> String {
    let lower = text.to_ascii_lowercase();
    let mut marks: Vec<(usize, usize)> = Vec::new();
    // Short words ("the", "of") would mark half of every line: only words of four letters or more, or
    // identifiers (digits, underscores), are marked.
    let worth = |t: &&String| t.len() >= 4 || t.chars().any(|c| !c.is_alphabetic());
    for t in terms.iter().filter(worth) {
        let t = t.to_ascii_lowercase();
        let mut from = 0;
        while let Some(i) = lower[from..].find(&t) {
            let (a, b) = (from + i, from + i + t.len());
            marks.push((a, b));
            from = b;
        }
    }
    marks.sort();
    let mut out = String::with_capacity(text.len() + marks.len() * 13);
    let mut at = 0;
    for (a, b) in marks {
        if a < at || !text.is_char_boundary(a) || !text.is_char_boundary(b) {
            continue; // overlapping another mark, or inside a character lowercasing could not move
        }
        out.push_str(&escape(&text[at..a]));
        out.push_str("<mark>");
        out.push_str(&escape(&text[a..b]));
        out.push_str("</mark>");
        at = b;
    }
    out.push_str(&escape(&text[at..]));
    out
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}\
header{background:#20232a;color:#fff;padding:.6em 1em;display:flex;gap:1.2em;align-items:center}\
header a{color:#9cdcfe;text-decoration:none}main{max-width:60em;margin:0 auto;padding:1em}\
form.search{display:flex;gap:.5em;margin:.5em 0 1em}form.search input[type=search]{flex:1;font-size:1.05em;padding:.35em}\
.hit{background:#fff;border:1px solid #ddd;border-radius:6px;margin:.8em 0;padding:.6em .8em}\
.meta{color:#666;font-size:.85em}.msg{white-space:pre-wrap;margin:.3em 0;padding:.2em .4em;border-left:3px solid #ddd}\
.msg.match{border-left-color:#e8a600;background:#fff8e1}mark{background:#ffe066}\
article{background:#fff;border:1px solid #e3e3e3;border-radius:6px;margin:.6em 0;padding:.5em .8em}\
article:target{outline:3px solid #e8a600}article.user{border-left:4px solid #4a90d9}\
article.assistant{border-left:4px solid #7b61c9}article.summary{border-left:4px solid #999;background:#f3f3f3}\
.text{white-space:pre-wrap}details{margin:.3em 0}details pre{white-space:pre-wrap;max-height:30em;overflow:auto;\
background:#f6f6f6;padding:.4em}summary{cursor:pointer;color:#555}.window{margin:1.4em 0 .4em;font-weight:600;\
color:#555;border-bottom:1px solid #ccc}table{border-collapse:collapse;width:100%}td,th{text-align:left;\
padding:.25em .5em;border-bottom:1px solid #eee}.note{color:#8a5a00}";

/// A whole page: the bar (search box, projects), the title, the body.
pub fn layout(title: &str, query: &str, body: &str) -> String {
    layout_with(
        title,
        &Filters {
            query,
            project: "",
            since: "",
        },
        body,
    )
}

/// What the search form shows filled in.
pub struct Filters<'a> {
    pub query: &'a str,
    pub project: &'a str,
    pub since: &'a str,
}

/// [`layout`] with the search form's filters filled in.
pub fn layout_with(title: &str, f: &Filters, body: &str) -> String {
    format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport \
         content=\"width=device-width,initial-scale=1\"><title>{} — ghola</title><style>{STYLE}</style></head>\
         <body><header><strong>ghola</strong><a href=\"/search\">search</a><a href=\"/projects\">sessions</a></header>\
         <main><form class=search action=\"/search\" method=get><input type=search name=q value=\"{}\" \
         placeholder=\"search your Claude Code history\" autofocus><input name=project value=\"{}\" \
         placeholder=\"project folder\" size=16><input name=since value=\"{}\" placeholder=\"since: 3d, 2026-11-01\" \
         size=12><button>search</button></form>{body}</main></body></html>",
        escape(title),
        escape(f.query),
        escape(f.project),
        escape(f.since),
    )
}

/// The search page: each hit's project, date and session (a link to its place in the session), and its
/// lines with the matched message marked and the query's words highlighted.
pub fn search(resp: &SearchResponse, terms: &[String]) -> String {
    let mut body = String::new();
    if let Some(n) = &resp.note {
        let _ = write!(body, "<p class=note>{}</p>", escape(n));
    }
    if resp.results.is_empty() {
        body.push_str("<p>No messages match.</p>");
    }
    let _ = write!(
        body,
        "<p class=meta>{} matching message(s); {} indexed, {} with meaning.</p>",
        resp.total_matches, resp.index.messages, resp.index.embedded_messages
    );
    for h in &resp.results {
        let m = &h.matched_message;
        let date = m
            .timestamp
            .as_deref()
            .map_or("", |t| t.get(..10).unwrap_or(t));
        let _ = write!(
            body,
            "<div class=hit><div class=meta>{} · {}{} · <a href=\"/session/{}#m-{}\">session {}</a> · window {} · \
             score {:.2}</div>",
            escape(&m.project),
            escape(date),
            m.git_branch
                .as_deref()
                .map(|b| format!(" · {}", escape(b)))
                .unwrap_or_default(),
            url_part(&m.session_id),
            escape(&m.uuid),
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

/// The sessions, newest first, grouped by project.
pub fn projects(sessions: &[Listed]) -> String {
    let mut body = String::from("<h1>Sessions</h1>");
    let mut by: std::collections::BTreeMap<&str, Vec<&Listed>> = Default::default();
    for l in sessions {
        by.entry(l.summary.project.as_str()).or_default().push(l);
    }
    for (project, list) in by {
        let _ = write!(
            body,
            "<h2>{}</h2><table><tr><th>session</th><th>from</th><th>to</th><th>messages</th><th></th></tr>",
            escape(project)
        );
        for l in list {
            let s = &l.summary;
            let day = |t: Option<chrono::DateTime<chrono::Utc>>| {
                t.map(|t| t.format("%Y-%m-%d %H:%M").to_string())
                    .unwrap_or_default()
            };
            let _ = write!(
                body,
                "<tr><td><a href=\"/session/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                url_part(&s.session_id),
                escape(s.title.as_deref().unwrap_or(&s.session_id)),
                day(s.first_timestamp),
                day(s.last_timestamp),
                l.all_messages,
                if s.archived { "archived" } else { "" }
            );
        }
        body.push_str("</table>");
    }
    body
}

/// One session read as a conversation: compaction windows as sections, tool calls and results and thinking
/// folded, each subagent's conversation folded at the end; every message has an anchor (`#m-<uuid>`).
pub fn session(s: &Session) -> String {
    let mut body = format!(
        "<h1>{}</h1><p class=meta>{} · session {}{} · {} window(s)</p>",
        escape(s.title.as_deref().unwrap_or("(untitled session)")),
        escape(&s.project),
        escape(&s.session_id),
        if s.archived {
            " · archived: Claude Code deleted the transcript; this is ghola's copy"
        } else {
            ""
        },
        s.windows
    );
    if s.windows > 1 {
        body.push_str("<p class=meta>windows:");
        for w in 0..s.windows {
            let _ = write!(body, " <a href=\"#window-{w}\">{w}</a>");
        }
        body.push_str("</p>");
    }
    if s.messages.is_empty() && s.subagents.is_empty() {
        body.push_str(
            "<p>No messages in this session: its file holds only a title or a summary.</p>",
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
        message(&mut body, m);
    }
    for a in &s.subagents {
        let _ = write!(
            body,
            "<details><summary>subagent {} ({} messages)</summary>",
            escape(&a.agent_id),
            a.messages.len()
        );
        for m in &a.messages {
            message(&mut body, m);
        }
        body.push_str("</details>");
    }
    body
}

fn message(body: &mut String, m: &Message) {
    let class = if m.is_compact_summary {
        "summary"
    } else {
        m.role.as_str()
    };
    let _ = write!(
        body,
        "<article id=\"m-{}\" class={class}><div class=meta>{}{}</div>",
        escape(&m.uuid),
        if m.is_compact_summary {
            "summary of the earlier conversation"
        } else {
            m.role.as_str()
        },
        m.timestamp
            .map(|t| t.format(" · %Y-%m-%d %H:%M:%S").to_string())
            .unwrap_or_default()
    );
    for p in &m.parts {
        match p {
            Part::Text { text } => {
                let _ = write!(body, "<div class=text>{}</div>", escape(text));
            }
            Part::Thinking { text } => {
                let _ = write!(
                    body,
                    "<details><summary>thinking</summary><pre>{}</pre></details>",
                    escape(text)
                );
            }
            Part::ToolUse { name, summary, .. } => {
                let _ = write!(
                    body,
                    "<details class=tool><summary>tool call: {} {}</summary><pre>{}</pre></details>",
                    escape(name),
                    escape(&summary.chars().take(120).collect::<String>()),
                    escape(summary)
                );
            }
            Part::ToolResult { text, is_error, .. } => {
                let _ = write!(
                    body,
                    "<details class=result><summary>tool result{} ({} characters)</summary><pre>{}</pre></details>",
                    if *is_error { " (error)" } else { "" },
                    text.chars().count(),
                    escape(text)
                );
            }
        }
    }
    body.push_str("</article>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_highlighting_leave_no_markup_from_the_text() {
        assert_eq!(
            escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
        let h = highlight("Retry <b>retrying</b> RETRY", &["retry".into()]);
        assert_eq!(
            h,
            "<mark>Retry</mark> &lt;b&gt;<mark>retry</mark>ing&lt;/b&gt; <mark>RETRY</mark>"
        );
        // Non-ASCII text around a term keeps its characters.
        assert_eq!(
            highlight("été retry ü", &["retry".into()]),
            "été <mark>retry</mark> ü"
        );
        assert_eq!(url_part("a b/é"), "a%20b%2F%C3%A9");
        assert_eq!(
            highlight("the cat", &["the".into(), "cat".into()]),
            "the cat"
        );
        assert_eq!(
            highlight("see v2 now", &["v2".into()]),
            "see <mark>v2</mark> now"
        );
    }
}
