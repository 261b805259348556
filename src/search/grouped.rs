//! Search results folded by session: which past sessions are about the query at all, before reading any of them.
//! Per session its title, project, time range, how many hits, the best score and the three best snippets cut
//! around the matched words; `get_session_detail` (or a search with `session_id`) then reads the one that matters.

use super::response::{SearchResponse, cut_around};
use serde::Serialize;
use std::fmt::Write;

/// Snippets shown per session.
pub const SNIPPETS: usize = 3;
/// Characters of a snippet, around the matched words.
pub const SNIPPET_CHARS: usize = 240;

/// One hit as a session entry shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Snippet {
    pub uuid: String,
    pub role: String,
    pub timestamp: Option<String>,
    pub window: u32,
    pub text: String,
}

/// A session with hits.
#[derive(Debug, Clone, Serialize)]
pub struct SessionGroup {
    pub session_id: String,
    pub project: String,
    /// The machine it was recorded on, when the history holds more than one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub machine: String,
    /// Whose session it is, in a team search.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub person: String,
    /// "local" or "hub", in a team search.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub origin: String,
    pub git_branch: Option<String>,
    pub title: Option<String>,
    /// The session's first and last message (from its listing when known, else its hits').
    pub first_timestamp: Option<String>,
    pub last_timestamp: Option<String>,
    /// Hits of the query in this session.
    pub matches: usize,
    pub best_score: f32,
    pub snippets: Vec<Snippet>,
}

/// What a caller knows of a session beyond its hits (the listing has it).
#[derive(Debug, Clone, Default)]
pub struct SessionFacts {
    pub title: Option<String>,
    pub first_timestamp: Option<String>,
    pub last_timestamp: Option<String>,
}

/// Folds the results of `resp` by session, best session (by its best hit) first. `terms` are the query's
/// words, for cutting snippets; `facts` gives a session's title and time range when the caller knows them.
pub fn by_session(
    resp: &SearchResponse,
    terms: &[String],
    facts: &dyn Fn(&str) -> Option<SessionFacts>,
) -> Vec<SessionGroup> {
    let mut groups: Vec<SessionGroup> = Vec::new();
    for h in &resp.results {
        let m = &h.matched_message;
        let at = match groups.iter().position(|g| g.session_id == m.session_id) {
            Some(i) => i,
            None => {
                let f = facts(&m.session_id).unwrap_or_default();
                groups.push(SessionGroup {
                    session_id: m.session_id.clone(),
                    project: m.project.clone(),
                    machine: if resp.several_machines {
                        m.machine.clone()
                    } else {
                        String::new()
                    },
                    person: m.person.clone(),
                    origin: m.origin.clone(),
                    git_branch: m.git_branch.clone(),
                    title: f.title,
                    first_timestamp: f.first_timestamp,
                    last_timestamp: f.last_timestamp,
                    matches: 0,
                    best_score: h.score,
                    snippets: Vec::new(),
                });
                groups.len() - 1
            }
        };
        let g = &mut groups[at];
        g.matches += h.matches.max(1);
        g.best_score = g.best_score.max(h.score);
        if g.snippets.len() < SNIPPETS {
            g.snippets.push(Snippet {
                uuid: m.uuid.clone(),
                role: m.role.clone(),
                timestamp: m.timestamp.clone(),
                window: m.window,
                text: cut_around(m.content.trim(), terms, SNIPPET_CHARS).replace('\n', " "),
            });
        }
    }
    // A session known only by its hits spans their times.
    for g in &mut groups {
        let times = || g.snippets.iter().filter_map(|s| s.timestamp.clone());
        if g.first_timestamp.is_none() {
            g.first_timestamp = times().min();
        }
        if g.last_timestamp.is_none() {
            g.last_timestamp = times().max();
        }
    }
    groups
}

fn day(ts: &Option<String>) -> &str {
    match super::compact::day(ts.as_deref()) {
        "" => "?",
        d => d,
    }
}

/// The sessions `offset..offset + limit` of `groups` as text for a model.
pub fn render(query: &str, groups: &[SessionGroup], offset: usize, limit: usize) -> String {
    let mut out = String::new();
    let total = groups.len();
    let page: Vec<&SessionGroup> = groups.iter().skip(offset).take(limit).collect();
    let _ = write!(
        out,
        "{total} session{} with hits for {query:?}",
        if total == 1 { "" } else { "s" }
    );
    super::compact::page_span(&mut out, offset, page.len(), offset + page.len() < total);
    out.push('\n');
    for (i, g) in page.iter().enumerate() {
        let _ = write!(
            out,
            "\n[{}] session {} · {}",
            offset + i + 1,
            super::compact::short(&g.session_id),
            g.project
        );
        if !g.machine.is_empty() {
            let _ = write!(out, " · on {}", g.machine);
        }
        if !g.person.is_empty() {
            let _ = write!(out, " · {}'s", g.person);
        }
        if g.origin == "hub" {
            let _ = write!(out, " · from the team hub");
        }
        if let Some(b) = &g.git_branch {
            let _ = write!(out, " · {b}");
        }
        let (first, last) = (day(&g.first_timestamp), day(&g.last_timestamp));
        if first == last {
            let _ = write!(out, " · {first}");
        } else {
            let _ = write!(out, " · {first} to {last}");
        }
        let _ = writeln!(
            out,
            " · {} hit{} · best {:.2}",
            g.matches,
            if g.matches == 1 { "" } else { "s" },
            g.best_score
        );
        if let Some(t) = &g.title {
            let _ = writeln!(out, "  title: {}", t.trim());
        }
        for s in &g.snippets {
            let _ = writeln!(
                out,
                "  - {} w{} {}: {}",
                super::compact::short(&s.uuid),
                s.window,
                s.role,
                s.text
            );
        }
    }
    if !page.is_empty() {
        out.push_str(
            "\n(a session's hits in full: the same search with session_id=<session>; its messages: \
             get_session_detail)\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::response::{IndexInfo, MatchedMessage, Scores, SearchHit};

    fn hit(session: &str, uuid: &str, score: f32, text: &str, ts: &str) -> SearchHit {
        SearchHit {
            matched_message: MatchedMessage {
                machine: String::new(),
                person: String::new(),
                origin: String::new(),
                uuid: uuid.into(),
                session_id: session.into(),
                project: "/src/app".into(),
                git_branch: None,
                role: "assistant".into(),
                kind: "text".into(),
                timestamp: Some(ts.into()),
                window: 0,
                is_subagent: false,
                agent_id: None,
                content: text.into(),
            },
            score,
            scores: Scores {
                semantic: 0.0,
                lexical: 0.0,
            },
            matches: 1,
            context: Vec::new(),
        }
    }

    #[test]
    fn hits_fold_into_sessions_with_their_best_snippets() {
        let mut results = vec![
            hit(
                "s-one",
                "u1",
                0.9,
                "the cache was the culprit",
                "2026-01-02T10:00:00Z",
            ),
            hit(
                "s-two",
                "u2",
                0.8,
                "the cache again",
                "2026-02-01T10:00:00Z",
            ),
        ];
        for k in 0..4 {
            results.push(hit(
                "s-one",
                &format!("u1{k}"),
                0.5,
                &format!("{} cache {k}", "filler ".repeat(100)),
                "2026-01-03T10:00:00Z",
            ));
        }
        let resp = SearchResponse {
            several_machines: false,
            nothing_in_scope: false,
            by_words_alone: false,
            results,
            query: "cache".into(),
            total_matches: 6,
            offset: 0,
            has_more: false,
            excluded_sessions: 0,
            index: IndexInfo {
                messages: 6,
                embedded_messages: 6,
                pending_files: 0,
                updated_at: None,
            },
            note: None,
        };
        let facts = |id: &str| {
            (id == "s-two").then(|| SessionFacts {
                title: Some("Cache work".into()),
                first_timestamp: Some("2026-01-30T00:00:00Z".into()),
                last_timestamp: Some("2026-02-02T00:00:00Z".into()),
            })
        };
        let groups = by_session(&resp, &["cache".into()], &facts);
        assert_eq!(groups.len(), 2);
        assert_eq!(
            (groups[0].session_id.as_str(), groups[0].matches),
            ("s-one", 5)
        );
        assert_eq!(groups[0].snippets.len(), SNIPPETS);
        assert!(groups[0].snippets[1].text.contains("cache"));
        assert!(groups[0].snippets[1].text.chars().count() <= SNIPPET_CHARS + 2);
        assert_eq!(
            groups[0].first_timestamp.as_deref(),
            Some("2026-01-02T10:00:00Z")
        );
        assert_eq!(groups[1].title.as_deref(), Some("Cache work"));
        let text = render("cache", &groups, 0, 1);
        assert!(text.starts_with("2 sessions with hits for \"cache\" (1-1; more: offset=1)"));
        assert!(text.contains("[1] session s-one · /src/app · 2026-01-02 to 2026-01-03 · 5 hits"));
        assert!(!text.contains("s-two"));
        let second = render("cache", &groups, 1, 5);
        assert!(second.contains("title: Cache work"), "{second}");
    }
}
