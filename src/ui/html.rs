//! What every page of `ghola ui` is made of: escaping, the page around the body (bar, search form, style
//! sheet, the one script), query words marked, and the CSRF field of the forms that change something.
//!
//! Every page is whole HTML rendered here; nothing is loaded from elsewhere, and every page works with scripts
//! off (the script only makes the search answer as you type).

use std::fmt::Write;

/// Text made safe inside HTML elements and attribute values; bidirectional control characters made visible.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Bidirectional controls reorder what follows them on screen (a "Trojan Source" line reads other
            // than it is): shown as their code point instead.
            c if is_bidi_control(c) => {
                let _ = write!(out, "&lt;U+{:04X}&gt;", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// The characters that reorder the text after them on screen (embeddings, overrides, isolates, marks).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// `html` with every bidirectional control shown as its code point: for markup made elsewhere (Markdown, the
/// highlighter) that [`escape`] did not see.
pub fn controls_visible(html: &str) -> std::borrow::Cow<'_, str> {
    if !html.chars().any(is_bidi_control) {
        return std::borrow::Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len() + 16);
    for c in html.chars() {
        if is_bidi_control(c) {
            let _ = write!(out, "&lt;U+{:04X}&gt;", c as u32);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
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
form.search{display:flex;flex-wrap:wrap;gap:.5em;margin:.5em 0 1em}form.search input[type=search]{flex:1;\
min-width:14em;font-size:1.05em;padding:.35em}label{color:#555;font-size:.9em}\
.hit{background:#fff;border:1px solid #ddd;border-radius:6px;margin:.8em 0;padding:.6em .8em}\
.meta{color:#666;font-size:.85em}.msg{white-space:pre-wrap;margin:.3em 0;padding:.2em .4em;border-left:3px solid #ddd}\
.msg.match{border-left-color:#e8a600;background:#fff8e1}mark{background:#ffe066}\
article{background:#fff;border:1px solid #e3e3e3;border-radius:6px;margin:.6em 0;padding:.5em .8em}\
article:target,article.at{outline:3px solid #e8a600}article.user{border-left:4px solid #4a90d9}\
article.assistant{border-left:4px solid #7b61c9}article.summary{border-left:4px solid #999;background:#f3f3f3}\
.text p{margin:.35em 0}.text pre,details pre{white-space:pre-wrap;max-height:30em;overflow:auto;background:#f6f6f6;\
padding:.4em;border-radius:4px}code{background:#f2f2f2;padding:0 .2em;border-radius:3px}pre code{background:none;\
padding:0}details{margin:.3em 0}summary{cursor:pointer;color:#555}.window{margin:1.4em 0 .4em;font-weight:600;\
color:#555;border-bottom:1px solid #ccc}table{border-collapse:collapse;width:100%}td,th{text-align:left;\
padding:.25em .5em;border-bottom:1px solid #eee;vertical-align:top}.note{color:#8a5a00}\
form.inline{display:inline}button.danger{color:#a00}textarea{width:100%;font:inherit}\
.item{background:#fff;border:1px solid #e3e3e3;border-radius:6px;margin:.5em 0;padding:.5em .8em}\
svg.timeline{display:block;margin:.2em 0 .8em}svg.timeline rect.day{fill:#7b61c9}\
.hl-comment{color:#6a737d}.hl-string{color:#0b6e2e}.hl-keyword,.hl-storage{color:#c0236b}\
.hl-constant{color:#005cc5}.hl-entity{color:#6f42c1}.hl-support{color:#005cc5}.hl-variable{color:#b35900}";

/// The one script: the search answers as you type (`app.js`, served from the binary).
pub const SCRIPT: &str = include_str!("app.js");

/// A whole page: the bar, the search form (empty), the title, the body.
pub fn layout(title: &str, body: &str) -> String {
    layout_with(title, &Filters::default(), body)
}

/// What the search form shows filled in.
#[derive(Debug, Default)]
pub struct Filters<'a> {
    pub query: &'a str,
    pub project: &'a str,
    pub since: &'a str,
    /// Bounds as `ghola search --after/--before`.
    pub after: &'a str,
    pub before: &'a str,
    /// Subagents' messages left out.
    pub no_subagents: bool,
    /// Results folded by session.
    pub grouped: bool,
    /// The machine chosen ("" for every one).
    pub machine: &'a str,
    /// The machines to choose from; empty when the history holds one (no facet then).
    pub machines: &'a [String],
    /// Whether this machine is logged in to a team hub (the "team" choice is shown), and whether it is chosen.
    pub hub: bool,
    pub team: bool,
    /// The person chosen ("" for everyone) and the people of the hub to choose from.
    pub person: &'a str,
    pub people: &'a [String],
}

/// [`layout`] with the search form's filters filled in.
pub fn layout_with(title: &str, f: &Filters, body: &str) -> String {
    let checked = |on: bool| if on { " checked" } else { "" };
    format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport \
         content=\"width=device-width,initial-scale=1\"><title>{} — ghola</title><style>{STYLE}</style>\
         <script src=\"/app.js\" defer></script></head>\
         <body><header><strong>ghola</strong><a href=\"/search\">search</a><a href=\"/projects\">sessions</a>\
         <a href=\"/notes\">notes</a><a href=\"/archive\">archive</a></header>\
         <main><form class=search action=\"/search\" method=get><input type=search name=q value=\"{}\" \
         placeholder=\"search your Claude Code history\" autofocus autocomplete=off><input name=project value=\"{}\" \
         placeholder=\"project folder\" size=16><input name=since value=\"{}\" placeholder=\"since: 3d, 2026-11-01\" \
         size=12><input name=after value=\"{}\" placeholder=\"after: 2026-11-01\" size=10><input name=before \
         value=\"{}\" placeholder=\"before\" size=10><label><input type=checkbox name=group value=session{}> by \
         session</label>\
         <label><input type=checkbox name=subagents value=0{}> no subagents</label>{}<button>search</button></form>\
         <div id=results>{}</div></main></body></html>",
        escape(title),
        escape(f.query),
        escape(f.project),
        escape(f.since),
        escape(f.after),
        escape(f.before),
        checked(f.grouped),
        checked(f.no_subagents),
        machine_facet(f) + &team_facets(f),
        controls_visible(body),
    )
}

/// The machine choice of the search form, when there is more than one machine.
fn machine_facet(f: &Filters) -> String {
    choice("machine", "every machine", f.machines, f.machine)
}

/// A `<select name=NAME>` of `options` with `chosen` selected, its first option (`all`, the empty value) meaning
/// no choice; nothing when there are no options.
fn choice(name: &str, all: &str, options: &[String], chosen: &str) -> String {
    if options.is_empty() {
        return String::new();
    }
    let mut out =
        format!("<select name={name} aria-label={name}><option value=\"\">{all}</option>");
    for o in options {
        let selected = if o == chosen { " selected" } else { "" };
        out.push_str(&format!(
            "<option value=\"{}\"{selected}>{}</option>",
            escape(o),
            escape(o)
        ));
    }
    out.push_str("</select>");
    out
}

/// The team choice and the person choice of the search form, when this machine is logged in to a team hub.
fn team_facets(f: &Filters) -> String {
    if !f.hub {
        return String::new();
    }
    format!(
        "<label><input type=checkbox name=team value=1{}> team</label>{}",
        if f.team { " checked" } else { "" },
        choice("person", "everyone", f.people, f.person)
    )
}

/// The hidden field every state-changing form carries: the server's CSRF token, which a page of another
/// origin cannot read.
pub fn csrf_field(csrf: &str) -> String {
    format!("<input type=hidden name=csrf value=\"{}\">", escape(csrf))
}

/// A time as the pages show it (UTC, to the minute).
pub fn minute(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map(|t| t.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_default()
}

/// A size in bytes as a person reads it.
pub fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KB", n as f64 / (1u64 << 10) as f64),
        n => format!("{n} B"),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn bidirectional_controls_are_shown_as_code_points() {
        let trojan = "if access_level != \u{202E}\u{2066}// user\u{2069}\u{2066}\"admin\"";
        let shown = escape(trojan);
        assert!(!shown.chars().any(is_bidi_control), "{shown}");
        assert!(
            shown.contains("&lt;U+202E&gt;") && shown.contains("&lt;U+2066&gt;"),
            "{shown}"
        );
        assert_eq!(controls_visible("<b>plain</b>"), "<b>plain</b>");
        assert!(
            !controls_visible("<p>a\u{200F}b</p>")
                .chars()
                .any(is_bidi_control)
        );
    }

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
