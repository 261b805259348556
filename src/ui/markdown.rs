//! A message's text as the session page shows it: markdown rendered (pulldown-cmark), fenced code highlighted
//! (syntect, with class names the page's style sheet colours), and nothing from the transcript trusted as
//! markup.
//!
//! A transcript is data, not a page: raw HTML in it is shown as text, a link is kept only when it goes to
//! `http(s)://` or `mailto:` (a `javascript:` link becomes its words), and an image becomes a link to it
//! (the page loads nothing from elsewhere). Line breaks are kept as written: people and the model write
//! lines, not paragraphs to reflow.

use super::html::escape;
use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};
use std::sync::OnceLock;
use syntect::html::{ClassStyle, ClassedHTMLGenerator};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

/// Code longer than this is shown plain: highlighting is a regex walk per line, and a long pasted log would
/// hold the page back for nothing.
const HIGHLIGHT_MAX_BYTES: usize = 24_000;

/// `text` (markdown, or plain text that reads the same) as safe HTML.
pub fn render(text: &str) -> String {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut events: Vec<Event> = Vec::new();
    // (language, code) of the fenced block being read.
    let mut code: Option<(String, String)> = None;
    // For each open link or image: whether its start was kept (its end follows suit).
    let mut links: Vec<bool> = Vec::new();
    for ev in Parser::new_ext(text, opts) {
        match ev {
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((lang, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                let (lang, body) = code.take().unwrap_or_default();
                events.push(Event::Html(CowStr::from(code_block(&lang, &body))));
            }
            Event::Text(t) if code.is_some() => {
                if let Some((_, body)) = code.as_mut() {
                    body.push_str(&t);
                }
            }
            Event::Html(t) | Event::InlineHtml(t) => events.push(Event::Text(t)),
            Event::SoftBreak => events.push(Event::HardBreak),
            // An image becomes a link to it: the page loads nothing from elsewhere.
            Event::Start(
                Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }
                | Tag::Image {
                    link_type,
                    dest_url,
                    title,
                    id,
                },
            ) => {
                let keep = safe_url(&dest_url);
                links.push(keep);
                if keep {
                    events.push(Event::Start(Tag::Link {
                        link_type,
                        dest_url,
                        title,
                        id,
                    }));
                }
            }
            Event::End(TagEnd::Link) | Event::End(TagEnd::Image) => {
                if links.pop().unwrap_or(false) {
                    events.push(Event::End(TagEnd::Link));
                }
            }
            other => events.push(other),
        }
    }
    // A fence left open at the end of the text still shows its code.
    if let Some((lang, body)) = code {
        events.push(Event::Html(CowStr::from(code_block(&lang, &body))));
    }
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    pulldown_cmark::html::push_html(&mut out, events.into_iter());
    out
}

/// Whether a link may be followed from the page.
fn safe_url(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|s| lower.starts_with(s))
}

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// A fenced block: highlighted when its language is known (the fence's first word, as GitHub reads it),
/// else shown plain.
pub fn code_block(lang: &str, code: &str) -> String {
    let word = lang
        .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    // Languages the default syntaxes know under another name.
    let word = match word.as_str() {
        "ts" | "tsx" | "typescript" | "jsx" | "mjs" | "cjs" => "js",
        "shell" | "console" | "zsh" | "sh" => "bash",
        "jsonl" | "jsonc" => "json",
        w => w,
    };
    let plain = || format!("<pre><code>{}</code></pre>", escape(code));
    if word.is_empty() || code.len() > HIGHLIGHT_MAX_BYTES {
        return plain();
    }
    let set = syntaxes();
    let Some(syntax) = set.find_syntax_by_token(word) else {
        return plain();
    };
    let mut g = ClassedHTMLGenerator::new_with_class_style(
        syntax,
        set,
        ClassStyle::SpacedPrefixed { prefix: "hl-" },
    );
    for line in LinesWithEndings::from(code) {
        if g.parse_html_for_line_which_includes_newline(line).is_err() {
            return plain();
        }
    }
    format!(
        "<pre class=code data-lang=\"{}\"><code>{}</code></pre>",
        escape(word),
        g.finalize()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_is_rendered_and_nothing_in_it_becomes_markup() {
        let html = render("**bold** and `code`\nnext line\n\n- one\n- two");
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(html.contains("<code>code</code>"), "{html}");
        assert!(html.contains("<br />"), "line breaks kept: {html}");
        assert!(html.contains("<li>one</li>"), "{html}");

        let html = render("<script>alert(1)</script> <img src=x onerror=alert(1)>");
        assert!(
            !html.contains("<script") && !html.contains("<img"),
            "{html}"
        );
        assert!(html.contains("&lt;script&gt;"), "{html}");

        let html =
            render("[ok](https://example.com) [bad](javascript:alert(1)) ![pic](http://x/y.png)");
        assert!(html.contains("href=\"https://example.com\""), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains(">bad<") || html.contains("bad"), "{html}");
        assert!(
            !html.contains("<img") && html.contains("href=\"http://x/y.png\""),
            "an image becomes a link: {html}"
        );
    }

    #[test]
    fn fenced_code_is_highlighted_when_its_language_is_known() {
        let html = render("```rust\nfn main() { let s = \"<hi>\"; }\n```\n");
        assert!(html.contains("data-lang=\"rust\""), "{html}");
        assert!(
            html.contains("hl-keyword") || html.contains("hl-storage"),
            "{html}"
        );
        assert!(
            html.contains("&lt;hi&gt;") && !html.contains("<hi>"),
            "{html}"
        );
        // Unknown language, and an unclosed fence: shown plain, escaped.
        let html = render("```nosuchlang\n<b>x</b>\n```");
        assert!(html.contains("<pre><code>&lt;b&gt;x&lt;/b&gt;"), "{html}");
        let html = render("```python\nprint('open')");
        assert!(html.contains("print") && html.contains("<pre"), "{html}");
        // Too long to highlight: plain.
        let long = format!("```rust\n{}\n```", "let x = 1;\n".repeat(3000));
        assert!(!render(&long).contains("hl-"), "long code stays plain");
    }
}
