//! A search response as a model reads it: plain text, a short header per result and then its lines, instead of
//! JSON that repeats `uuid`, `role`, `kind` and `timestamp` keys on every context message. The same evidence in
//! about half the characters (measured in docs/benchmarks.md); `ghola search --json` stays the machine format.
//!
//! ```text
//! 12 results for "why did we drop redis" (1-10; more: offset=10)
//!
//! [1] 2026-11-02 14:05 · /src/shop · main · session 3f2a9c1e window 0 · score 0.81 · hit 8d1e5a2b
//!   user: should we keep redis for the queue?
//! > assistant: No: redis lost jobs on restart twice, so we moved the queue to postgres.
//!   user: ok, do it
//! ```
//!
//! Each result names its session, window and matched message once (`hit` is the message's id prefix), which is
//! all `get_session_detail` needs to show more around it (`around`).

use super::response::{ContextMessage, SearchResponse};
use std::fmt::Write;

/// An id as shown: its first eight characters (`transcript::short_id`), unique in any real history (ids are
/// random uuids) and accepted wherever an id is asked for.
pub fn short(id: &str) -> &str {
    crate::transcript::short_id(id)
}

/// `2026-11-02T14:05:09.123Z` as `2026-11-02 14:05` (the reader needs the day and the hour, not the millisecond);
/// anything else as it is.
fn when(ts: Option<&str>) -> String {
    let Some(t) = ts else {
        return String::new();
    };
    match (t.get(..10), t.get(10..11), t.get(11..16)) {
        (Some(day), Some("T"), Some(hm)) => format!("{day} {hm}"),
        _ => t.to_string(),
    }
}

/// The day of a timestamp (`2026-11-02`), or "" without one.
pub(super) fn day(ts: Option<&str>) -> &str {
    ts.and_then(|t| t.get(..10)).unwrap_or("")
}

/// ` (first-last; more: offset=next)` after a count, for a page of `shown` items from `offset` (nothing when the
/// page is empty); `more` says whether items follow the page.
pub(super) fn page_span(out: &mut String, offset: usize, shown: usize, more: bool) {
    if shown == 0 {
        return;
    }
    let _ = write!(out, " ({}-{}", offset + 1, offset + shown);
    if more {
        let _ = write!(out, "; more: offset={}", offset + shown);
    }
    out.push(')');
}

/// Who said a line: the role, and the kind when it is not plain text (`assistant (tool_use)`).
pub fn speaker(role: &str, kind: &str) -> String {
    if kind.is_empty() || kind == "text" {
        role.to_string()
    } else {
        format!("{role} ({kind})")
    }
}

/// One line of a result: `>` marks a hit; a line from another day than the header's says its day.
fn line(out: &mut String, c: &ContextMessage, header_day: &str) {
    let mark = if c.is_match { '>' } else { ' ' };
    let day = day(c.timestamp.as_deref());
    let dated = if !day.is_empty() && day != header_day {
        format!(" [{}]", when(c.timestamp.as_deref()))
    } else {
        String::new()
    };
    let text = c.content.trim().replace('\n', "\n    ");
    let _ = writeln!(out, "{mark} {}{dated}: {text}", speaker(&c.role, &c.kind));
}

/// What an empty answer says (the terminal, a model and the browser): nothing is returned rather than the least
/// unrelated message (see `docs/search.md`, "No noise").
pub const NOTHING_MATCHES: &str = "Nothing in this history matches: no message shares a word with the query, and \
     none is close enough in meaning to be an answer. Try the words that were likely used, or a wider scope.";

/// [`NOTHING_MATCHES`] for a search in which no message could be a hit on meaning alone (the note says why).
pub const NO_WORD_SHARED: &str = "Nothing in this history matches: no message shares a word with the query. Try the \
     words that were likely used, or a wider scope.";

/// The response as text for a model (see the module doc). Notes and paging come first, so that a reader who
/// stops early still knows what is missing and how to get it.
pub fn render(resp: &SearchResponse) -> String {
    let mut out = String::new();
    let shown = resp.results.len();
    let _ = write!(
        out,
        "{} result{} for {:?}",
        resp.total_matches,
        if resp.total_matches == 1 { "" } else { "s" },
        resp.query
    );
    if shown == 0 {
        out.push_str(" (none shown)");
    }
    page_span(&mut out, resp.offset, shown, resp.has_more);
    out.push('\n');
    if let Some(note) = &resp.note {
        let _ = writeln!(out, "note: {note}");
    }
    if resp.total_matches == 0 && resp.offset == 0 && !resp.nothing_in_scope {
        let _ = writeln!(out, "{}", resp.nothing_matches());
    }
    if resp.excluded_sessions > 0 {
        let _ = writeln!(
            out,
            "note: {} older sessions are outside the memory limit and were not searched",
            resp.excluded_sessions
        );
    }
    for (i, h) in resp.results.iter().enumerate() {
        let m = &h.matched_message;
        let day = day(m.timestamp.as_deref());
        let _ = write!(out, "\n[{}] ", resp.offset + i + 1);
        let stamp = when(m.timestamp.as_deref());
        if !stamp.is_empty() {
            let _ = write!(out, "{stamp} · ");
        }
        let _ = write!(out, "{}", m.project);
        if resp.several_machines && !m.machine.is_empty() {
            let _ = write!(out, " · on {}", m.machine);
        }
        if !m.person.is_empty() {
            let _ = write!(out, " · {}'s", m.person);
        }
        if m.origin == "hub" {
            let _ = write!(out, " · from the team hub");
        }
        if let Some(b) = &m.git_branch {
            let _ = write!(out, " · {b}");
        }
        let _ = write!(
            out,
            " · session {} window {}",
            short(&m.session_id),
            m.window
        );
        if let Some(a) = &m.agent_id {
            let _ = write!(out, " · agent {a}");
        }
        let _ = write!(out, " · score {:.2} · hit {}", h.score, short(&m.uuid));
        if h.matches > 1 {
            let _ = write!(out, " · {} hits", h.matches);
        }
        out.push('\n');
        if h.context.is_empty() {
            let c = ContextMessage {
                uuid: m.uuid.clone(),
                role: m.role.clone(),
                kind: m.kind.clone(),
                timestamp: m.timestamp.clone(),
                content: m.content.clone(),
                is_match: true,
                score: None,
                scores: None,
            };
            line(&mut out, &c, day);
        }
        for c in &h.context {
            line(&mut out, c, day);
        }
    }
    if resp.has_more && shown > 0 {
        let _ = writeln!(
            out,
            "\n(more results: the same call with offset={}; more around a hit: get_session_detail with its \
             session and around=<hit>)",
            resp.offset + shown
        );
    }
    out
}

/// [`render`]'s length in characters, the measure [`SearchResponse::bound_by`] shrinks a text response by.
pub fn size(resp: &SearchResponse) -> usize {
    render(resp).chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::response::{IndexInfo, MatchedMessage, Scores, SearchHit};

    fn msg(uuid: &str, role: &str, text: &str, is_match: bool, ts: &str) -> ContextMessage {
        ContextMessage {
            uuid: uuid.into(),
            role: role.into(),
            kind: "text".into(),
            timestamp: Some(ts.into()),
            content: text.into(),
            is_match,
            score: is_match.then_some(0.9),
            scores: None,
        }
    }

    fn response() -> SearchResponse {
        let hit = SearchHit {
            matched_message: MatchedMessage {
                machine: String::new(),
                person: String::new(),
                origin: String::new(),
                uuid: "8d1e5a2b-0000-4000-8000-000000000001".into(),
                session_id: "3f2a9c1e-0000-4000-8000-000000000002".into(),
                project: "/src/shop".into(),
                git_branch: Some("main".into()),
                role: "assistant".into(),
                kind: "text".into(),
                timestamp: Some("2026-11-02T14:05:09.123Z".into()),
                window: 1,
                is_subagent: false,
                agent_id: None,
                content: "we moved the queue to postgres".into(),
            },
            score: 0.8123,
            scores: Scores {
                semantic: 0.5,
                lexical: 2.0,
            },
            matches: 1,
            context: vec![
                msg(
                    "a1",
                    "user",
                    "should we keep the old broker?",
                    false,
                    "2026-11-02T14:04:00Z",
                ),
                msg(
                    "8d1e5a2b-0000-4000-8000-000000000001",
                    "assistant",
                    "we moved the queue to postgres",
                    true,
                    "2026-11-02T14:05:09.123Z",
                ),
                msg("a3", "user", "ok\nthanks", false, "2026-11-03T09:00:00Z"),
            ],
        };
        SearchResponse {
            several_machines: false,
            nothing_in_scope: false,
            by_words_alone: false,
            results: vec![hit],
            query: "queue broker".into(),
            total_matches: 4,
            offset: 0,
            has_more: true,
            excluded_sessions: 0,
            index: IndexInfo {
                messages: 10,
                embedded_messages: 10,
                pending_files: 0,
                updated_at: None,
            },
            note: Some("the first indexing pass is still running".into()),
        }
    }

    #[test]
    fn a_result_is_a_header_and_its_lines_with_the_hit_marked() {
        let text = render(&response());
        assert_eq!(
            text,
            "4 results for \"queue broker\" (1-1; more: offset=1)\n\
             note: the first indexing pass is still running\n\
             \n\
             [1] 2026-11-02 14:05 · /src/shop · main · session 3f2a9c1e window 1 · score 0.81 · hit 8d1e5a2b\n\
             \x20 user: should we keep the old broker?\n\
             > assistant: we moved the queue to postgres\n\
             \x20 user [2026-11-03 09:00]: ok\n    thanks\n\
             \n\
             (more results: the same call with offset=1; more around a hit: get_session_detail with its session \
             and around=<hit>)\n"
        );
    }

    /// An empty answer blames the query's words, and its meaning only when meaning could have found a hit.
    #[test]
    fn an_empty_answer_says_why_by_what_the_search_could_compare() {
        let mut r = response();
        (r.results, r.total_matches, r.has_more) = (Vec::new(), 0, false);
        assert!(render(&r).contains(NOTHING_MATCHES));
        r.by_words_alone = true;
        let text = render(&r);
        assert!(
            text.contains(NO_WORD_SHARED) && !text.contains("close enough in meaning"),
            "{text}"
        );
    }

    #[test]
    fn text_is_much_smaller_than_json_for_the_same_evidence() {
        let r = response();
        let json = serde_json::to_string(&r).unwrap().chars().count();
        assert!(size(&r) * 3 < json * 2, "{} vs {json}", size(&r));
        for c in &r.results[0].context {
            assert!(render(&r).contains(&c.content.replace('\n', "\n    ")));
        }
    }
}
