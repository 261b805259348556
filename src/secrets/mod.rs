//! The one redaction engine: finds credentials in text and replaces each with a typed placeholder
//! (`[REDACTED:aws-access-key-id]`).
//!
//! ghola keeps every transcript byte forever (the archive), where Claude Code deletes its own after 30 days, and
//! shows and sends that text again (search, show, the browser, duncan's replay, note extraction). Everything that
//! shows or sends text passes it through here first: the transcript reader redacts every message it builds (so
//! the index, the listings and the pages never hold a value), and the model-facing paths that read raw entries
//! (duncan's conversation rebuild) redact what they send. It sits at the bottom of the module order, needing
//! nothing, so that every layer (and later other machines and a team hub) uses the same rules.
//!
//! The rules and where they come from: `rules`. What they miss and what they take that is not a secret, measured
//! over `../shared/corpus` and a planted set: docs/secrets.md.

mod rules;

use regex::RegexSet;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use rules::{Check, Rule};

/// The compiled rules and a set of all their patterns, which tells in one pass which rules can match at all (most
/// messages hold no credential and cost that one pass).
struct Engine {
    rules: Vec<Rule>,
    any: RegexSet,
}

static ENGINE: LazyLock<Engine> = LazyLock::new(|| {
    let rules = rules::all();
    let any = RegexSet::new(rules.iter().map(|r| r.re.as_str())).expect("secret rule set");
    Engine { rules, any }
});

/// A credential found in a text: the rule that found it and where its value is (byte offsets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule's id, as in the placeholder (`aws-access-key-id`).
    pub rule: &'static str,
    /// Byte offset of the value's first byte.
    pub start: usize,
    /// Byte offset one past the value's last byte.
    pub end: usize,
}

impl Finding {
    /// The value in the text it was found in.
    pub fn value<'t>(&self, text: &'t str) -> &'t str {
        &text[self.start..self.end]
    }
}

/// Every rule's id, in priority order: what `ghola secrets` totals by and docs/secrets.md lists.
pub fn rule_ids() -> Vec<&'static str> {
    ENGINE.rules.iter().map(|r| r.id).collect()
}

/// The credentials in `text`, in order, none overlapping (where two rules' matches overlap, the earlier rule in
/// [`rule_ids`] wins). A terminal's colour or style code just before a value (`\x1b[1msk-ant-…`, as a tool's
/// output prints it) ends in a letter, where the rules see no word boundary: the text is read a second time with
/// those codes blanked, and what that finds besides is added.
pub fn find(text: &str) -> Vec<Finding> {
    let mut found = find_in(text);
    if let Some(plain) = terminal_codes_blanked(text) {
        add_apart(&mut found, find_in(&plain));
    }
    found
}

/// Adds to `found` (kept in order) each of `more` that overlaps none of it.
fn add_apart(found: &mut Vec<Finding>, more: Vec<Finding>) {
    for f in more {
        if !found.iter().any(|g| g.start < f.end && f.start < g.end) {
            found.push(f);
        }
    }
    found.sort_by_key(|f| f.start);
}

/// `text` with every terminal control sequence that sets colour or style — ESC `[`, digits and `;`, a letter —
/// replaced by spaces, byte for byte (so offsets into it are offsets into `text`), whether ESC is the byte itself
/// or, in a raw JSON line, the escape `\u001b`; `None` when there is none.
fn terminal_codes_blanked(text: &str) -> Option<String> {
    let b = text.as_bytes();
    if !(b.contains(&0x1b) || text.contains("\\u001b") || text.contains("\\u001B")) {
        return None;
    }
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < b.len() {
        let intro = if b[i] == 0x1b {
            1
        } else if b[i..].starts_with(b"\\u001b") || b[i..].starts_with(b"\\u001B") {
            6
        } else {
            0
        };
        if intro > 0 && b.get(i + intro) == Some(&b'[') {
            let mut j = i + intro + 1;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == b';' || b[j] == b'?') {
                j += 1;
            }
            if j < b.len() && b[j].is_ascii_alphabetic() {
                out.get_or_insert_with(|| b.to_vec())[i..=j].fill(b' ');
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    // Only ASCII bytes were replaced by ASCII bytes: still UTF-8.
    out.map(|o| String::from_utf8(o).unwrap_or_default())
}

/// [`find`] of the text as it is.
fn find_in(text: &str) -> Vec<Finding> {
    let hits = ENGINE.any.matches(text);
    if !hits.matched_any() {
        return Vec::new();
    }
    let mut found: Vec<Finding> = Vec::new();
    for i in hits.iter() {
        let rule = &ENGINE.rules[i];
        for caps in rule.re.captures_iter(text) {
            let Some(m) = caps.get(rule.group) else {
                continue;
            };
            let name = || {
                let whole = caps.get(0).expect("a match has group 0");
                &text[whole.start()..m.start()]
            };
            let passes = match rule.check {
                Check::None => true,
                Check::Random => looks_secret(m.as_str(), false),
                Check::Named => looks_secret(m.as_str(), false) && names_a_secret(name()),
                Check::EnvLine => looks_secret(m.as_str(), true) && names_a_secret(name()),
                Check::Prefixed => token_after_prefix(m.as_str()),
                Check::UrlPassword => url_password(m.as_str()),
            };
            if m.is_empty() || !passes {
                continue;
            }
            if is_placeholder(m.as_str()) {
                continue;
            }
            let f = Finding {
                rule: rule.id,
                start: m.start(),
                end: m.end(),
            };
            if !found.iter().any(|g| g.start < f.end && f.start < g.end) {
                found.push(f);
            }
        }
    }
    found.sort_by_key(|f| f.start);
    found
}

/// The placeholder a value of `rule` is replaced with.
pub fn placeholder(rule: &str) -> String {
    format!("[REDACTED:{rule}]")
}

/// Whether `text` holds a placeholder this engine wrote (then it was already redacted there).
fn is_placeholder(value: &str) -> bool {
    value.starts_with("[REDACTED")
}

/// `text` with every credential replaced by its placeholder; borrowed when there was none.
pub fn redact(text: &str) -> Cow<'_, str> {
    redact_counting(text, &mut Tally::default())
}

/// [`redact`], adding what it replaced to `tally`.
pub fn redact_counting<'t>(text: &'t str, tally: &mut Tally) -> Cow<'t, str> {
    let found = find(text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in &found {
        out.push_str(&text[at..f.start]);
        out.push_str(&placeholder(f.rule));
        at = f.end;
        tally.add(f.rule, 1);
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// Redacts `text` in place; returns whether anything was replaced.
pub fn redact_in_place(text: &mut String, tally: &mut Tally) -> bool {
    match redact_counting(text, tally) {
        Cow::Borrowed(_) => false,
        Cow::Owned(s) => {
            *text = s;
            true
        }
    }
}

/// Redacts every string inside a JSON value (object keys are names, not values, and are kept); returns how many
/// credentials were replaced. For text that leaves as JSON (a replay request's messages, a tool's input).
pub fn redact_json(v: &mut serde_json::Value, tally: &mut Tally) -> u64 {
    use serde_json::Value;
    let before = tally.total();
    match v {
        Value::String(s) => {
            redact_in_place(s, tally);
        }
        Value::Array(items) => {
            for i in items {
                redact_json(i, tally);
            }
        }
        Value::Object(map) => {
            for (_, i) in map.iter_mut() {
                redact_json(i, tally);
            }
        }
        _ => {}
    }
    tally.total() - before
}

/// Redacts stored transcript bytes in place, keeping their length: each credential's bytes are overwritten by
/// its placeholder, padded with `*` (or cut to `[REDACTED]`, or all `*`, where the value is shorter), so every
/// offset into the file — resume points, message offsets, archive frames — stays true. Works line by line on the
/// raw JSON text; a value is never overwritten past a `"` that ends its JSON string nor into half an escape, so
/// every line that was valid JSON stays valid. Lines that are not UTF-8 are left as they are. Returns how many
/// credentials were overwritten.
pub fn redact_bytes_in_place(bytes: &mut [u8], tally: &mut Tally) -> u64 {
    let mut n = 0;
    let mut start = 0;
    while start < bytes.len() {
        let end = memchr_newline(&bytes[start..]).map_or(bytes.len(), |i| start + i + 1);
        let line = &mut bytes[start..end];
        if let Ok(text) = std::str::from_utf8(line) {
            let mut found = find(text);
            // A value right after a JSON escape (`"my key:\nghp_…"`, as the line holds a message's line break) has
            // the escape's letter before it, which the rules' word boundaries read as part of a word; the line is
            // read again with each such escape blanked, and what that finds besides is taken too.
            if let Some(blanked) = escapes_blanked(text) {
                add_apart(&mut found, find(&blanked));
            }
            let spans: Vec<(usize, usize, &'static str)> = found
                .into_iter()
                .map(|f| (f.start, json_safe_end(text, f.start, f.end), f.rule))
                .filter(|(s, e, _)| e > s)
                .collect();
            for (s, e, rule) in spans {
                overwrite(&mut line[s..e], rule);
                tally.add(rule, 1);
                n += 1;
            }
        }
        start = end;
    }
    n
}

/// `text` (a raw JSON line) with every one-letter escape that stands for a control character — `\n`, `\t`, `\r`,
/// `\b`, `\f` — replaced by two spaces, every other byte where it was (so offsets into it are offsets into
/// `text`); `None` when there is none. `\\` and `\"` are kept, so `\\n` (a backslash, then "n") stays.
fn escapes_blanked(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'\\' {
            if matches!(b[i + 1], b'n' | b't' | b'r' | b'b' | b'f') {
                let o = out.get_or_insert_with(|| b.to_vec());
                o[i] = b' ';
                o[i + 1] = b' ';
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    // Only ASCII bytes were replaced by ASCII bytes: still UTF-8.
    out.map(|o| String::from_utf8(o).unwrap_or_default())
}

fn memchr_newline(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

/// Where an overwrite of `text[start..end]` must stop so that the raw JSON stays valid: before the first
/// unescaped `"` (the value's string ends there) and never between a backslash and what it escapes.
fn json_safe_end(text: &str, start: usize, end: usize) -> usize {
    let b = text.as_bytes();
    let mut i = start;
    while i < end {
        match b[i] {
            b'"' => return i,
            b'\\' if i + 1 >= end => return i,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    end.min(b.len())
}

/// Overwrites `span` with `rule`'s placeholder padded with `*` to the span's length (shorter forms where it does
/// not fit).
fn overwrite(span: &mut [u8], rule: &str) {
    let full = placeholder(rule);
    let text: &[u8] = if full.len() <= span.len() {
        full.as_bytes()
    } else if b"[REDACTED]".len() <= span.len() {
        b"[REDACTED]"
    } else {
        b""
    };
    span[..text.len()].copy_from_slice(text);
    span[text.len()..].fill(b'*');
}

/// A value shown so that its owner can recognise it and nobody can use it: its first four characters, then a
/// mask (never the length, never the rest).
pub fn preview(value: &str) -> String {
    let head: String = value.chars().take(4).collect();
    format!("{head}…****")
}

/// Counts of replaced or found credentials, per rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tally(pub BTreeMap<String, u64>);

impl Tally {
    /// Adds `n` for `rule`.
    pub fn add(&mut self, rule: &str, n: u64) {
        *self.0.entry(rule.to_string()).or_default() += n;
    }

    /// Adds all of `other`.
    pub fn absorb(&mut self, other: &Tally) {
        for (rule, n) in &other.0 {
            self.add(rule, *n);
        }
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// All rules together.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }
}

/// Whether what follows a known token prefix (`sk-`, `sk-proj-`, `hf_`) is a token: at least 20 characters, at
/// most two `-`/`_` in it (kebab and snake names have more), and not a short run of lowercase letters.
fn token_after_prefix(value: &str) -> bool {
    let body = [
        "sk-proj-",
        "sk-svcacct-",
        "sk-admin-",
        "sk-None-",
        "sk-",
        "hf_",
    ]
    .iter()
    .find_map(|p| value.strip_prefix(p))
    .unwrap_or(value);
    let separators = body.chars().filter(|c| matches!(c, '-' | '_')).count();
    let lowercase_word = body.chars().all(|c| c.is_ascii_lowercase()) && body.len() < 30;
    body.len() >= 20 && separators <= 2 && !lowercase_word
}

/// Whether the password of a URL is one: anything of three characters or more but a placeholder (the
/// documentation's `user:password@`, `:pass@`, `${DB_PASSWORD}`, `<password>`, `***`).
fn url_password(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    const WORDS: [&str; 10] = [
        "password",
        "passwd",
        "pass",
        "pwd",
        "pw",
        "secret",
        "changeme",
        "yourpassword",
        "your_password",
        "mypassword",
    ];
    value.chars().count() >= 3
        && !WORDS.contains(&lower.as_str())
        && !["${", "$(", "{{", "<", "***", "xxx", "…", "...", "[redacted"]
            .iter()
            .any(|p| lower.contains(p))
        && !value.starts_with('$')
}

/// Whether the name part of `name = value` (everything before the value) names a secret itself rather than a
/// count, type, path, id or tokenizer of one.
fn names_a_secret(name_and_sep: &str) -> bool {
    let name = name_and_sep.to_ascii_lowercase();
    const NOT: [&str; 18] = [
        "tokeniz",
        "tokens",
        "token_count",
        "token_type",
        "token_id",
        "tokenid",
        "token_usage",
        "token_limit",
        "token_budget",
        "secret_name",
        "secretname",
        "key_id",
        "_hash",
        "hashed_",
        "_file",
        "_path",
        "secretref",
        "_ref",
    ];
    !NOT.iter().any(|n| name.contains(n))
}

/// Whether a value given to a secret-sounding name (or of a loose shape) is a credential rather than code, a
/// placeholder, a plain word, a number or a path: the check behind the generic rules, where false positives
/// would otherwise be many (`token: string`, `password = request.form`, `max_tokens: 4096`, `${API_KEY}`).
fn looks_secret(value: &str, long_words: bool) -> bool {
    let v = value.trim_end_matches(['.', ':', '!', '?']);
    if v.chars().count() < 6 {
        return false;
    }
    // Credentials are printable ASCII; progress bars, prose in other scripts and box drawing are not.
    if !v.chars().all(|c| c.is_ascii_graphic()) {
        return false;
    }
    let lower = v.to_ascii_lowercase();
    const PLACEHOLDERS: [&str; 10] = [
        "${", "$(", "{{", "%s", "***", "xxxx", "...", "…", "redacted", "<",
    ];
    if PLACEHOLDERS.iter().any(|p| lower.contains(p)) || v.starts_with('$') {
        return false;
    }
    const CODE: [&str; 12] = [
        "self.",
        "this.",
        "os.",
        "env.",
        "process.",
        "config.",
        "settings.",
        "args.",
        "options.",
        "req.",
        "request.",
        "ctx.",
    ];
    if CODE.iter().any(|p| lower.starts_with(p)) || v.contains(['(', '[', '{']) {
        return false;
    }
    if v.contains("://") || v.starts_with(['/', '.', '~']) {
        return false;
    }
    let has_digit = v.chars().any(|c| c.is_ascii_digit());
    // Words, identifiers, kebab and dotted names: `string`, `get_token`, `AuthToken`, `my-secret-name`. On an
    // environment file's secret line, a long run of letters alone is a value (`SESSION_SECRET=kQzvTrwLpXy…`),
    // unless it reads as a placeholder (`your_api_key_here`).
    let lettered = v
        .chars()
        .all(|c| c.is_alphabetic() || matches!(c, '_' | '-' | '.'));
    let long_letters = long_words
        && v.len() >= 12
        && v.chars().all(|c| c.is_ascii_alphabetic())
        && !["your", "here", "example", "changeme", "placeholder"]
            .iter()
            .any(|p| lower.contains(p));
    if !has_digit && lettered && !long_letters {
        return false;
    }
    // Numbers, versions and dates: `4096`, `1.2.3`, `2025-01-01`.
    if v.chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | '_' | ',' | '-' | ':'))
    {
        return false;
    }
    true
}

#[cfg(test)]
mod tests;
