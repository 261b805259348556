//! What a query says about where its answer is ([`QueryIntent`]): an agent it names, the time it names, whether
//! it asks when or what the user said, the people it names — and, read from the search's candidates, which of
//! them address those people and which side of the conversation speaks to them.

use chrono::{DateTime, Utc};

use super::kinds::{is_bare_tool_call, is_tool_output};
use crate::index::Snapshot;
use crate::search::when::{Period, asks_when, choose_reading, readings};

/// What the query says about where its answer is, read once per search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryIntent {
    /// It names an agent ("what did the agent find", "the subagents' reports"): the answer is in a subagent's
    /// own transcript, not in the main conversation that mentions it.
    pub names_an_agent: bool,
    /// The time it names ("on 9 November, 2022", "in March", "yesterday"): the answer was most likely written
    /// then. A month or day without a year is read in the latest year the candidates speak from
    /// ([`QueryIntent::date_from_the_candidates`]).
    pub period: Option<Period>,
    /// Every reading of the time it names, latest first ([`crate::search::when::readings`]): more than one when it
    /// names a month or day without its year.
    pub period_readings: Vec<Period>,
    /// It asks when something happened: the answer most likely says when.
    pub asks_when: bool,
    /// It asks how many (how much, which version, which port): the answer most likely says a number
    /// ([`crate::search::count`]).
    pub asks_how_many: bool,
    /// It asks which commit: the answer most likely names one by its id ([`crate::search::count::names_a_commit`]),
    /// not only a number.
    pub asks_for_a_commit: bool,
    /// It asks why something went wrong: the answer most likely gives a reason or says what failed
    /// ([`crate::search::reason`]).
    pub asks_why_it_failed: bool,
    /// It asks how something works or why ("how does …", "why …"): the answer is an explanation, not the file
    /// it was read from ([`crate::search::explain`]).
    pub asks_how_or_why: bool,
    /// It asks what the asker said ("what did I tell you about the naming?", "the rule I gave you"): the
    /// answer is the user's own message — the very request or question the ask rules weigh down.
    pub asks_for_the_users_words: bool,
    /// The people (or things) it names: capitalised words after the first ("what does Ana paint"): a message
    /// that addresses one of them ("Thanks, Ana!") is said to them, not by them.
    pub names: Vec<String>,
    /// The candidates of the search that address one of [`Self::names`] (see [`QueryIntent::read_the_candidates`]);
    /// empty when the query names both sides of the conversation.
    pub addressing: rustc_hash::FxHashSet<u32>,
    /// The side of the conversation that speaks to the people the query names (see
    /// [`QueryIntent::read_the_candidates`]): what that side says is not what the named person said or did.
    pub other_side: Option<Side>,
    /// The named people who are parties of the conversation: at least `MIN_ADDRESSING` candidates address
    /// each by name (see [`QueryIntent::read_the_candidates`]). A party's own words never name them, so their
    /// name in the query says nothing of what the answer means (see [`QueryIntent::without_parties`]).
    pub parties: Vec<String>,
}

/// One side of a conversation as the index knows it: a role and a kind of message (the user's words, the
/// assistant's words, a tool's output), as interned ids of the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Side {
    /// The role's snapshot-wide id.
    pub role: u32,
    /// The kind's snapshot-wide id.
    pub kind: u32,
}

impl Side {
    /// The side message `i` is on.
    pub fn of(snap: &Snapshot, i: usize) -> Side {
        let (role, kind) = snap.role_and_kind_ids(i);
        Side { role, kind }
    }
}

/// How many candidates must address the person a query names, all but a fifth of them from one side, before
/// that side is taken for the other party of the conversation (see [`QueryIntent::read_the_candidates`]).
const MIN_ADDRESSING: usize = 3;

impl QueryIntent {
    /// Reads the intent from the query's words; `now` is what "yesterday" and a date without a year are read
    /// against.
    pub fn of(query: &str, now: DateTime<Utc>) -> Self {
        let period_readings = readings(query, now);
        let q = query.to_lowercase();
        let words: Vec<&str> = q
            .split(|c: char| !c.is_alphanumeric() && c != '\'')
            .filter(|w| !w.is_empty())
            .collect();
        Self {
            // "user agent" is a browser's, not a subagent.
            names_an_agent: words.iter().enumerate().any(|(k, w)| {
                let w = w.trim_matches('\'');
                let w = w.strip_suffix("'s").unwrap_or(w);
                matches!(w, "subagent" | "subagents")
                    || (matches!(w, "agent" | "agents") && (k == 0 || words[k - 1] != "user"))
            }),
            // Read against today until the candidates are read.
            period: period_readings.first().copied(),
            period_readings,
            asks_when: asks_when(query),
            asks_how_many: crate::search::count::asks_how_many(query),
            asks_for_a_commit: crate::search::count::asks_for_a_commit(query),
            asks_why_it_failed: crate::search::reason::asks_why_it_failed(query),
            asks_how_or_why: crate::search::explain::asks_how_or_why(query),
            asks_for_the_users_words: asks_for_the_users_words(&words),
            names: names_in(query),
            addressing: Default::default(),
            other_side: None,
            parties: Vec::new(),
        }
    }

    /// Reads a month or day named without a year ("in June") in the latest year at least one candidate was
    /// written in (`candidates`: the search's lexical and semantic candidates), not after today; with one
    /// reading, or when no candidate was written in any, the time stays as read against today. Asked in
    /// November, "in June" is this June in a history that speaks from it, and last year's in one left before.
    pub fn date_from_the_candidates(
        &mut self,
        snap: &Snapshot,
        candidates: impl Iterator<Item = u32> + Clone,
    ) {
        let times = candidates.filter_map(|m| snap.messages[m as usize].timestamp_ms);
        self.period = choose_reading(&self.period_readings, times);
    }

    /// Reads, once per search, which candidates address the people the query names ("Thanks, Ana!") and from
    /// them which side of the conversation speaks *to* those people: in a dialogue each side addresses the other
    /// by name, so when at least `MIN_ADDRESSING` candidates address the named people and four in five of them
    /// are on one side, that side is the other party, and its messages are what was said to the named person,
    /// not by them. No side is learned when the query names no one, when no one is addressed, or when the sides
    /// are mixed (two named people on two sides, a name that is a word). When the query names two or more of
    /// the conversation's parties, no message counts as addressing them: each is said by a named party.
    pub fn read_the_candidates(&mut self, snap: &Snapshot, candidates: impl Iterator<Item = u32>) {
        if self.names.is_empty() {
            return;
        }
        let mut sides: Vec<(Side, usize)> = Vec::new();
        let mut per_name = vec![0usize; self.names.len()];
        let mut seen = rustc_hash::FxHashSet::default();
        self.addressing.clear();
        for m in candidates.filter(|m| seen.insert(*m)) {
            let text = snap.keyword_bytes(m as usize);
            // People address each other in what they write, not in a tool's call or output (a module list, a
            // package table: "{Message, Project, Session}", "TypeScript, Tailwind, and ESLint").
            if is_tool_output(text) || is_bare_tool_call(text) {
                continue;
            }
            let mut addressed = false;
            for (n, name) in self.names.iter().enumerate() {
                if addresses(text, name) {
                    per_name[n] += 1;
                    addressed = true;
                }
            }
            if addressed {
                self.addressing.insert(m);
                let side = Side::of(snap, m as usize);
                match sides.iter_mut().find(|(s, _)| *s == side) {
                    Some((_, n)) => *n += 1,
                    None => sides.push((side, 1)),
                }
            }
        }
        self.parties = (self.names.iter().zip(&per_name))
            .filter(|(_, n)| **n >= MIN_ADDRESSING)
            .map(|(name, _)| name.clone())
            .collect();
        // Both sides named ("What advice does Gina give Jon?"): a message that addresses one of them is said by
        // the other, who is named too, so it is not "said to the named, not by them" — it is often the answer.
        if self.parties.len() >= 2 {
            self.addressing.clear();
        }
        let all: usize = sides.iter().map(|(_, n)| n).sum();
        self.other_side = sides
            .into_iter()
            .max_by_key(|(_, n)| *n)
            .filter(|(_, n)| all >= MIN_ADDRESSING && *n * 5 >= all * 4)
            .map(|(s, _)| s);
    }

    /// `query` without the names of the conversation's parties ([`Self::parties`]; a possessive `'s` goes with
    /// the name), or `None` when it names no party or nothing but them. A sentence embedding of "What does Ana
    /// paint?" is pulled towards every message that says "Ana" — the ones said *to* her — while her own words
    /// ("I painted the lake at dawn") never name her: on LoCoMo dev, MiniLM's cosine alone finds twice the gold
    /// turns in its top ten without the speaker's name (docs/search.md, "A party's name").
    pub fn without_parties(&self, query: &str) -> Option<String> {
        if self.parties.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(query.len());
        let mut rest = query;
        while !rest.is_empty() {
            let word_end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '\''))
                .unwrap_or(rest.len());
            if word_end == 0 {
                let c = rest.chars().next().unwrap_or(' ');
                out.push(c);
                rest = &rest[c.len_utf8()..];
                continue;
            }
            let word = &rest[..word_end];
            if !self.parties.iter().any(|p| p == bare_name(word)) {
                out.push_str(word);
            }
            rest = &rest[word_end..];
        }
        let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
        out.contains(char::is_alphanumeric).then_some(out)
    }
}

/// A word of a query as a name: without a possessive `'s` or quotes ("Ben's" → "Ben"), so that [`names_in`] and
/// [`QueryIntent::without_parties`] read a name alike.
fn bare_name(word: &str) -> &str {
    word.strip_suffix("'s").unwrap_or(word).trim_matches('\'')
}

/// The capitalised words of `query` after its first (a name is capitalised wherever it stands; a question's
/// first word is capitalised anyway), without a possessive `'s`; all-capitals words (constants, acronyms) are
/// not names.
fn names_in(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in query
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .skip(1)
    {
        let w = bare_name(w);
        let mut chars = w.chars();
        let named = chars.next().is_some_and(char::is_uppercase)
            && w.chars().count() > 1
            && chars.all(char::is_lowercase);
        if named && !out.iter().any(|n| n == w) {
            out.push(w.to_string());
        }
    }
    out
}

/// Words after which a name is someone spoken to ("Hey Ana", "Thanks Ana", "Wow, Ana").
const GREETINGS: &[&str] = &[
    "hey",
    "hi",
    "hello",
    "thanks",
    "thank you",
    "yeah",
    "yes",
    "wow",
    "oh",
    "congrats",
    "congratulations",
    "sorry",
    "aww",
    "ah",
    "bye",
    "great",
    "nice",
    "good",
    "same here",
];

/// Whether `text` addresses `name`: the name stands alone between a greeting, a comma or the start of the text,
/// and a comma, `!`, `?`, `.`, `:` or the end ("Hey Ana,", "Thanks, Ana!", "Ana, look at this", "see you, Ana").
fn addresses(text: &[u8], name: &str) -> bool {
    let head = &text[..text.len().min(4 * 1024)];
    let n = name.as_bytes();
    memchr::memmem::find_iter(head, n).any(|at| {
        let before = &head[..at];
        let after = &head[at + n.len()..];
        let ends = match after.first() {
            None => true,
            Some(b',' | b'!' | b'?' | b'.' | b':' | b'\n') => true,
            Some(b' ') => after[1..].first().is_none_or(|c| *c == b'\n'),
            _ => false,
        };
        // Alone: the start of the text or a space before it (not `Services.Tmux`, `x,Ana`).
        if !ends || before.last().is_some_and(|c| !c.is_ascii_whitespace()) {
            return false;
        }
        let lead =
            String::from_utf8_lossy(&before[before.len().saturating_sub(24)..]).to_lowercase();
        let lead = lead.trim_end();
        // The start of the text or of a sentence, or after a comma: "Ana, look", "… great. Ana!", "Thanks, Ana!"
        if lead.is_empty() || lead.ends_with([',', '\n', '.', '!', '?']) {
            return true;
        }
        GREETINGS.iter().any(|g| {
            lead.strip_suffix(g).is_some_and(|rest| {
                rest.is_empty() || rest.ends_with(|c: char| !c.is_alphanumeric())
            })
        })
    })
}

/// What a user says they did with words ("I told you", "did I ask", "have I written"), as (past, base,
/// participle): the past after "I"; any of the three after "did I" / "have I" / "had I".
const SAYING_VERBS: &[(&str, &str, &str)] = &[
    ("told", "tell", "told"),
    ("asked", "ask", "asked"),
    ("said", "say", "said"),
    ("wanted", "want", "wanted"),
    ("mentioned", "mention", "mentioned"),
    ("requested", "request", "requested"),
    ("specified", "specify", "specified"),
    ("suggested", "suggest", "suggested"),
    ("wrote", "write", "written"),
    ("instructed", "instruct", "instructed"),
    ("insisted", "insist", "insisted"),
    ("gave", "give", "given"),
];

/// Whether a query (its lowercased words) asks what the asker said: "what did I tell you …", "I asked for …",
/// "have I mentioned …" — but not "did I break the build" (a deed, not words) nor "they told me" (someone
/// else's words).
fn asks_for_the_users_words(words: &[&str]) -> bool {
    words.windows(2).enumerate().any(|(k, w)| {
        let past = w[0] == "i" && SAYING_VERBS.iter().any(|(p, _, _)| *p == w[1]);
        let asked = matches!(w[0], "did" | "have" | "had")
            && w[1] == "i"
            && words.get(k + 2).is_some_and(|v| {
                SAYING_VERBS
                    .iter()
                    .any(|(p, b, pp)| v == p || v == b || v == pp)
            });
        past || asked
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_people_a_query_names_and_the_messages_that_address_them() {
        assert_eq!(
            names_in("What does Ana paint on Sundays?"),
            ["Ana", "Sundays"]
        );
        assert_eq!(names_in("what did Ben's sister say"), ["Ben"]);
        assert_eq!(
            names_in("MAX_UPLOAD_CHUNK_BYTES in the API"),
            Vec::<String>::new()
        );
        for t in [
            "Hey Ana, how was the trip?",
            "Thanks, Ana!",
            "Wow, Ana, that looks great",
            "Ana, look at this",
            "That sounds lovely. Ana!",
            "see you soon, Ana",
            "Same here Ana.",
        ] {
            assert!(addresses(t.as_bytes(), "Ana"), "{t}");
        }
        for t in [
            "I went hiking with Ana.",
            "Ana's garden is in bloom",
            "Anastasia, hi",
            "I told Ana about it, she laughed",
            "no name here",
            "alias Spotter.Services.Ana\n",
            "thanks,Ana!",
        ] {
            assert!(!addresses(t.as_bytes(), "Ana"), "{t}");
        }
    }

    #[test]
    fn a_query_without_the_parties_it_names() {
        let mut i = QueryIntent::of("What does Ana paint on Sundays?", chrono::Utc::now());
        assert_eq!(i.without_parties("What does Ana paint on Sundays?"), None);
        i.parties = vec!["Ana".into()];
        assert_eq!(
            i.without_parties("What does Ana paint on Sundays?")
                .as_deref(),
            Some("What does paint on Sundays?")
        );
        assert_eq!(
            i.without_parties("Did Ana's sister visit Anatolia with Ana?")
                .as_deref(),
            Some("Did sister visit Anatolia with ?")
        );
        // Nothing would be left to mean anything.
        assert_eq!(i.without_parties("Ana?"), None);
    }

    #[test]
    fn a_query_that_asks_what_the_user_said() {
        let of = |q: &str| QueryIntent::of(q, chrono::Utc::now()).asks_for_the_users_words;
        for q in [
            "what did I tell you not to use for the cache?",
            "Did I ask for tabs or spaces?",
            "the naming rule I gave you",
            "have I mentioned the staging host before",
            "what I said about retries",
        ] {
            assert!(of(q), "{q}");
        }
        for q in [
            "did I break the build?",
            "what did they tell me about the API?",
            "what did we decide about retries",
            "I wonder what the agent said",
            "told to retry",
        ] {
            assert!(!of(q), "{q}");
        }
    }

    #[test]
    fn the_query_names_agents() {
        let of = |q: &str| QueryIntent::of(q, chrono::Utc::now());
        assert!(!of("Why did the nightly export skip Sundays?").names_an_agent);
        let i = of("what did the research agent say about the licence?");
        assert!(i.names_an_agent);
        assert!(of("the subagents' reports").names_an_agent);
        assert!(of("what did the Explore subagent's report say").names_an_agent);
        assert!(!of("agentic workflows and the agency").names_an_agent);
        assert!(!of("which user agent string did the scraper send?").names_an_agent);
        assert!(of("agents: what did they find").names_an_agent);
        assert_eq!(of("MAX_UPLOAD_CHUNK_BYTES"), QueryIntent::default());
    }
}
