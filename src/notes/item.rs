//! One note and the markdown line that holds it. The files are the truth: a person edits them, so parsing
//! forgives everything (no comment, a broken comment, a pasted duplicate) and rendering writes the provenance
//! back as an HTML comment at the end of the line, where a markdown viewer hides it.

use serde::{Deserialize, Serialize};

/// The four kinds of notes (after Clancy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Patterns, structure, conventions.
    Architecture,
    /// Choices with their reasons, rejected alternatives too.
    Decisions,
    /// What did not work and why: dead ends, errors met.
    Failures,
    /// Where the work stands and what comes next; replaced, never grown.
    Plan,
}

impl Category {
    /// All four, in the order files and sections are shown.
    pub const ALL: [Category; 4] = [
        Category::Architecture,
        Category::Decisions,
        Category::Failures,
        Category::Plan,
    ];

    /// The lower-case name used in the CLI, the tool schema and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Category::Architecture => "architecture",
            Category::Decisions => "decisions",
            Category::Failures => "failures",
            Category::Plan => "plan",
        }
    }

    /// The markdown file holding the category.
    pub fn file_name(self) -> &'static str {
        match self {
            Category::Architecture => "ARCHITECTURE.md",
            Category::Decisions => "DECISIONS.md",
            Category::Failures => "FAILURES.md",
            Category::Plan => "PLAN.md",
        }
    }

    /// The prefix of its item ids (`d-3f2a1c`), so an id says where to look.
    pub fn id_prefix(self) -> char {
        match self {
            Category::Architecture => 'a',
            Category::Decisions => 'd',
            Category::Failures => 'f',
            Category::Plan => 'p',
        }
    }

    /// How many live items the category keeps; the oldest beyond it move to the archive file.
    pub fn cap(self) -> usize {
        match self {
            Category::Architecture => 30,
            Category::Decisions => 40,
            Category::Failures => 40,
            Category::Plan => 15,
        }
    }

    /// Parses a user-given name (`decisions`, `decision`, `DECISIONS.md` …).
    pub fn parse(s: &str) -> Option<Category> {
        let s = s.trim().to_ascii_lowercase();
        let s = s.trim_end_matches(".md");
        Category::ALL
            .into_iter()
            .find(|c| c.name() == s || c.name().trim_end_matches('s') == s)
    }
}

/// One note with its provenance: which session window it was learned from, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// Stable id (`d-3f2a1c`): survives edits of the text, lets `notes forget` and the extractor's
    /// `supersedes` name the item.
    pub id: String,
    /// The note as written in the file (decisions carry their `[YYYY-MM-DD]` prefix).
    pub text: String,
    /// The session it came from; `None` for an item a person wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u32>,
    /// Day it was learned (`YYYY-MM-DD`, the window's last message), or written by hand (the day it was first
    /// seen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

/// The marker that opens a provenance comment.
const MARK: &str = "<!-- ghola";

impl Item {
    /// A new id for `text` in `category`: a short hash of the text and its origin, made unique against
    /// `taken`.
    pub fn new_id(
        category: Category,
        text: &str,
        origin: &str,
        taken: &dyn Fn(&str) -> bool,
    ) -> String {
        let mut salt = 0u64;
        loop {
            let h = fnv(&format!("{origin}\u{0}{text}\u{0}{salt}"));
            let id = format!("{}-{:06x}", category.id_prefix(), h & 0xff_ffff);
            if !taken(&id) {
                return id;
            }
            salt += 1;
        }
    }

    /// The markdown line (continuation lines of a multi-line item indented by two spaces).
    pub fn to_line(&self) -> String {
        let mut comment = format!("{MARK} id={}", self.id);
        if let Some(s) = &self.session {
            comment.push_str(&format!(" session={s}"));
        }
        if let Some(w) = self.window {
            comment.push_str(&format!(" window={w}"));
        }
        if let Some(d) = &self.date {
            comment.push_str(&format!(" date={d}"));
        }
        comment.push_str(" -->");
        let mut lines = self.text.lines();
        let first = lines.next().unwrap_or("");
        let mut out = format!("- {first} {comment}");
        for l in lines {
            out.push_str("\n  ");
            out.push_str(l);
        }
        out
    }

    /// The text without a leading `[YYYY-MM-DD]`, for comparisons.
    pub fn bare_text(&self) -> &str {
        strip_date(&self.text)
    }
}

/// `s` without a leading `[YYYY-MM-DD] `.
pub fn strip_date(s: &str) -> &str {
    let t = s.trim_start();
    if t.len() >= 12
        && t.as_bytes()[0] == b'['
        && t.as_bytes()[11] == b']'
        && t[1..11].bytes().all(|b| b.is_ascii_digit() || b == b'-')
    {
        t[12..].trim_start()
    } else {
        t
    }
}

/// What a category file parses to.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Parsed {
    pub items: Vec<Item>,
    /// Items that had no usable provenance (written or mangled by hand): they got a fresh id.
    pub repaired: usize,
}

/// Parses a category file. Bullet lines (`- ` or `* `) are items; indented lines continue the item above;
/// any other non-empty line that is not a heading or a comment is an item of its own (a person wrote it).
/// A provenance comment that is missing, broken or names an id already used gives the item a new id.
pub fn parse(category: Category, text: &str, today: &str) -> Parsed {
    let mut out = Parsed::default();
    let mut raw: Vec<String> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        let indented = line.starts_with("  ") || line.starts_with('\t');
        if let Some(rest) = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))
            .filter(|_| !indented)
        {
            raw.push(rest.to_string());
        } else if trimmed.starts_with('#') || (trimmed.starts_with("<!--") && !indented) {
            continue;
        } else if indented && let Some(last) = raw.last_mut() {
            last.push('\n');
            last.push_str(trimmed);
        } else {
            raw.push(trimmed.to_string());
        }
    }
    for r in raw {
        let (text, fields) = split_comment(&r);
        if text.is_empty() {
            continue;
        }
        let get = |k: &str| {
            fields
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        let id = get("id")
            .filter(|id| valid_id(category, id) && !out.items.iter().any(|i: &Item| &i.id == id));
        let id = match id {
            Some(id) => id,
            None => {
                out.repaired += 1;
                let items = &out.items;
                Item::new_id(category, &text, "hand", &|c| {
                    items.iter().any(|i| i.id == c)
                })
            }
        };
        let session = get("session").filter(|s| !s.is_empty() && s.len() <= 64);
        out.items.push(Item {
            id,
            text,
            window: if session.is_some() {
                get("window").and_then(|w| w.parse().ok())
            } else {
                None
            },
            session,
            date: get("date")
                .filter(|d| valid_date(d))
                .or_else(|| Some(today.to_string())),
        });
    }
    out
}

fn valid_id(category: Category, id: &str) -> bool {
    let mut chars = id.chars();
    chars.next() == Some(category.id_prefix())
        && chars.next() == Some('-')
        && id.len() <= 24
        && id[2..].chars().all(|c| c.is_ascii_alphanumeric())
        && id.len() > 2
}

fn valid_date(d: &str) -> bool {
    chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok()
}

/// Splits an item's raw text into the note and its provenance fields. Without a well-formed comment the whole
/// text is the note, minus any half comment a person left behind.
fn split_comment(raw: &str) -> (String, Vec<(String, String)>) {
    let Some(at) = raw.rfind(MARK) else {
        return (raw.trim().to_string(), Vec::new());
    };
    let text = format!(
        "{}{}",
        raw[..at].trim_end(),
        // A comment on the first line with continuation lines after it: keep those lines.
        raw[at..].find('\n').map(|nl| &raw[at + nl..]).unwrap_or("")
    );
    let comment = raw[at + MARK.len()..].lines().next().unwrap_or("");
    let Some(end) = comment.find("-->") else {
        return (text.trim().to_string(), Vec::new());
    };
    let fields = comment[..end]
        .split_whitespace()
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect();
    (text.trim().to_string(), fields)
}

/// Renders a category file: a heading, one line on how to edit, the items.
pub fn render(category: Category, project: &str, items: &[Item]) -> String {
    let title = match category {
        Category::Architecture => "Architecture",
        Category::Decisions => "Decisions",
        Category::Failures => "Failures",
        Category::Plan => "Plan",
    };
    let mut out = format!(
        "# {title} — {project}\n\n<!-- ghola notes: one item per \"- \" line. Edit, reorder or delete freely; the \
         comment at the end of a line is where the item came from (keep it to keep its id). -->\n\n"
    );
    for i in items {
        out.push_str(&i.to_line());
        out.push('\n');
    }
    out
}

/// 64-bit FNV-1a: ids and folder names must be stable across builds and platforms (std's hasher is not).
pub fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, text: &str) -> Item {
        Item {
            id: id.into(),
            text: text.into(),
            session: Some("s1".into()),
            window: Some(2),
            date: Some("2026-11-20".into()),
        }
    }

    #[test]
    fn lines_round_trip() {
        let items = vec![
            item(
                "d-00aa11",
                "[2026-11-20] Chose tantivy over sqlite FTS because of segments",
            ),
            item("d-00aa12", "Two lines\nsecond line"),
        ];
        let text = render(Category::Decisions, "/p", &items);
        let back = parse(Category::Decisions, &text, "2026-11-24");
        assert_eq!(back.items, items);
        assert_eq!(back.repaired, 0);
    }

    #[test]
    fn hand_edits_and_broken_comments_are_forgiven() {
        let text = "# Decisions\n\n\
            - kept id, edited text <!-- ghola id=d-000001 session=s9 window=1 date=2026-01-02 -->\n\
            - half a comment <!-- ghola id=d-000002 sess\n\
            - garbage comment <!-- ghola id=x-zz window=oops -->\n\
            * star bullet, no comment\n\
            A paragraph a person typed.\n\
            - pasted twice <!-- ghola id=d-000001 -->\n\
            - <!-- ghola id=d-000003 -->\n";
        let p = parse(Category::Decisions, text, "2026-11-24");
        let texts: Vec<&str> = p.items.iter().map(|i| i.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "kept id, edited text",
                "half a comment",
                "garbage comment",
                "star bullet, no comment",
                "A paragraph a person typed.",
                "pasted twice"
            ]
        );
        assert_eq!(p.items[0].id, "d-000001");
        assert_eq!(p.items[0].session.as_deref(), Some("s9"));
        assert_eq!(p.items[0].window, Some(1));
        assert_eq!(p.items[0].date.as_deref(), Some("2026-01-02"));
        // Every other item got a fresh, unique, valid id and today's date.
        assert_eq!(p.repaired, 5);
        let mut ids: Vec<&str> = p.items.iter().map(|i| i.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 6);
        assert!(p.items[2].id.starts_with("d-"));
        assert_eq!(p.items[4].date.as_deref(), Some("2026-11-24"));
        assert_eq!(p.items[4].session, None);
    }

    #[test]
    fn dates_and_categories_parse() {
        assert_eq!(strip_date("[2026-11-20] Chose X"), "Chose X");
        assert_eq!(strip_date("Chose X"), "Chose X");
        assert_eq!(Category::parse("Decision"), Some(Category::Decisions));
        assert_eq!(Category::parse("PLAN.md"), Some(Category::Plan));
        assert_eq!(Category::parse("nope"), None);
    }
}
