//! Extraction: one session window (its messages not yet extracted) plus the existing notes go to a model
//! through duncan's backends, which must call one tool, `record_notes`, with the four categories and the ids of
//! live items the window supersedes. The answer is merged into the notes under the write lock (re-reading the
//! files first, so a hand edit made during the call is kept), logged, and the tokens are counted against the
//! daily budget.

use super::item::Category;
use super::merge::{self, Findings, Origin, Similarity};
use super::store::{Meta, NotesError, ProjectNotes, Store, WindowState, today, write_lock};
use super::window::{self, Chunk};
use crate::index::snapshot::Snapshot;
use crate::model::{Backend, BackendError, ToolCall};
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::atomic::AtomicBool;

/// The extractor's one tool.
pub const TOOL: &str = "record_notes";
/// Tokens the extractor's answer may take.
const MAX_TOKENS: u32 = 4096;
/// Most new items per category in one answer.
const MAX_NEW: usize = 20;

/// The instructions: Clancy's four categories, new items only, a full plan or none, facts not orders.
pub const SYSTEM: &str = "You maintain the project notes of one software project: what every new coding session \
on it should know without asking. You read one window of a past Claude Code session and the existing notes, and \
record only what this window teaches that the notes do not already say, by calling record_notes.\n\n\
Categories:\n\
- architecture: patterns, structure and conventions of the codebase (\"Handlers follow extract-validate-execute\", \
\"Tests use the TestDb harness from tests/common/\").\n\
- decisions: choices made, with the reason, rejected alternatives too, written \"Chose X over Y because Z\".\n\
- failures: what did not work, written \"Don't try X — causes Y because Z\"; include the exact error messages \
met and the dead ends walked into.\n\
- plan: where the work stands and what comes next, as a complete replacement of the current plan (a few \
steps). Leave it empty when the window says nothing about the state of the work.\n\n\
Rules: one self-contained sentence per item, specific (file names, commands, error messages, versions); no item \
that repeats an existing note in other words; nothing about the conversation itself (\"the user asked\"); state \
facts, not orders to a future reader. Put in supersedes the ids of existing items this window shows to be wrong \
or replaced. Never copy secrets, keys, tokens or passwords into a note. When nothing new was learned, return \
empty lists and set no_updates to true.";

/// The tool's input schema (also headless Claude Code's `--json-schema`).
pub fn schema() -> Value {
    let list =
        |what: &str| json!({"type": "array", "items": {"type": "string"}, "description": what});
    json!({
        "type": "object",
        "properties": {
            "architecture": list("new architecture notes (patterns, structure, conventions)"),
            "decisions": list("new decisions: \"Chose X over Y because Z\""),
            "failures": list("new failures: \"Don't try X — causes Y because Z\""),
            "plan": list("the complete new plan, replacing the current one; empty to keep it"),
            "supersedes": list("ids of existing notes (like d-3f2a1c) that this window shows to be wrong or replaced"),
            "no_updates": {"type": "boolean", "description": "true when the window teaches nothing new"}
        },
        "required": ["architecture", "decisions", "failures", "plan", "supersedes", "no_updates"],
        "additionalProperties": false
    })
}

/// Checks the tool input: every list a list of strings, at most `MAX_NEW` items each.
pub fn validate(v: &Value) -> Result<(), crate::model::InvalidInput> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("the input must be an object, got {v}"))?;
    for key in [
        "architecture",
        "decisions",
        "failures",
        "plan",
        "supersedes",
    ] {
        let Some(x) = obj.get(key) else {
            return Err(crate::model::InvalidInput(format!(
                "the input lacks the list {key}"
            )));
        };
        let list = x
            .as_array()
            .ok_or_else(|| format!("{key} must be a list of strings, got {x}"))?;
        if let Some(bad) = list.iter().find(|s| !s.is_string()) {
            return Err(crate::model::InvalidInput(format!(
                "{key} must hold strings only, got {bad}"
            )));
        }
        if list.len() > MAX_NEW {
            return Err(crate::model::InvalidInput(format!(
                "{key} has {} items; give at most {MAX_NEW}, the most important",
                list.len()
            )));
        }
    }
    if let Some(x) = obj.get("no_updates")
        && !x.is_boolean()
    {
        return Err(crate::model::InvalidInput(format!(
            "no_updates must be a boolean, got {x}"
        )));
    }
    Ok(())
}

/// The findings of a validated input.
pub fn findings(v: &Value) -> Findings {
    let list = |k: &str| -> Vec<String> {
        v.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut f = Findings::default();
    for c in [
        Category::Architecture,
        Category::Decisions,
        Category::Failures,
    ] {
        f.new.insert(c, list(c.name()));
    }
    f.plan = Some(list("plan"));
    f.supersedes = list("supersedes");
    f
}

/// The user message: the project, the existing notes with their ids, the window.
pub fn prompt(
    notes: &ProjectNotes,
    session: &str,
    window: u32,
    chunk: &Chunk,
    part: (usize, usize),
) -> String {
    let mut out = format!("Project: {}\n\n## Existing notes\n", notes.meta.project);
    for c in Category::ALL {
        out.push_str(&format!("\n### {}\n", c.name()));
        let items = notes.get(c);
        if items.is_empty() {
            out.push_str("(none)\n");
        }
        for i in items {
            out.push_str(&format!("- [{}] {}\n", i.id, i.text.replace('\n', " ")));
        }
    }
    let part = if part.1 > 1 {
        format!(", part {} of {}", part.0 + 1, part.1)
    } else {
        String::new()
    };
    out.push_str(&format!(
        "\n## Session window (session {session}, window {window}{part})\n<window>\n{}</window>\n\n\
         Record what this window teaches that the notes above do not already say, by calling {TOOL}.",
        chunk.text
    ));
    out
}

/// A rough token count (four characters a token), used before sending to respect the budget.
pub fn estimate_tokens(text: &str) -> u64 {
    text.len().div_ceil(4) as u64
}

/// How an extraction of one window ended.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Sent and merged (every chunk).
    Extracted {
        added: usize,
        duplicates: usize,
        superseded: usize,
        tokens: u64,
    },
    /// No new messages, or nothing a person wrote: nothing sent.
    NothingNew,
    /// The daily budget would be exceeded: nothing (more) sent, the window stays due.
    BudgetSpent { needed: u64, left: u64 },
    /// The model call failed; retried later.
    Failed { error: String, next_try_ms: i64 },
    /// `--dry-run`: what would be sent.
    DryRun { prompts: Vec<String>, tokens: u64 },
}

/// What an extraction needs.
pub struct Extractor<'a> {
    pub store: &'a Store,
    pub backend: &'a dyn Backend,
    pub sim: &'a dyn Similarity,
    pub model: String,
    /// Tokens extraction may spend per UTC day, all projects together.
    pub daily_budget: u64,
    pub threshold: f32,
    pub dry_run: bool,
}

impl<'a> Extractor<'a> {
    /// An extractor with the model and budget of `settings` and the measured duplicate threshold.
    pub fn new(
        store: &'a Store,
        backend: &'a dyn Backend,
        sim: &'a dyn Similarity,
        settings: &crate::settings::Settings,
    ) -> Extractor<'a> {
        Extractor {
            store,
            backend,
            sim,
            model: settings.notes_model.clone(),
            daily_budget: settings.daily_token_budget,
            threshold: merge::DUPLICATE_COSINE,
            dry_run: false,
        }
    }
}

/// Back-off after `attempts` failures: 5 minutes doubling, at most 6 hours.
pub fn backoff_ms(attempts: u32) -> i64 {
    let minutes = 5i64.saturating_mul(1i64 << attempts.saturating_sub(1).min(10));
    minutes.min(360) * 60_000
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Re-reads a project's notes under the write lock, lets `f` change them, saves; returns what `f` returned and
/// the notes as saved (for the archive and the log, without reading them again).
fn update<T>(
    store: &Store,
    project: &str,
    f: impl FnOnce(&mut ProjectNotes) -> Result<T, NotesError>,
) -> Result<(T, ProjectNotes), NotesError> {
    let _lock = write_lock(&store.root)?;
    let mut notes = store.open(project);
    let out = f(&mut notes)?;
    notes.save()?;
    Ok((out, notes))
}

/// Changes one window's state (under the write lock); returns the notes as saved.
fn set_state(
    store: &Store,
    project: &str,
    session: &str,
    window: u32,
    f: impl FnOnce(&mut WindowState),
) -> Result<ProjectNotes, NotesError> {
    let _lock = write_lock(&store.root)?;
    let mut notes = store.open(project);
    f(notes.meta.window_mut(session, window));
    notes.save_meta()?;
    Ok(notes)
}

impl Extractor<'_> {
    /// Extracts the not yet extracted messages of one window of `project`.
    pub fn window(
        &self,
        snap: &Snapshot,
        project: &str,
        session: &str,
        window: u32,
        cancel: &AtomicBool,
    ) -> Result<Outcome, NotesError> {
        let state = self
            .store
            .open(project)
            .meta
            .windows
            .get(&Meta::key(session, window))
            .cloned()
            .unwrap_or_default();
        let Some(shaped) = window::shape(
            snap,
            session,
            window,
            state.extracted_seq,
            window::CHUNK_CHARS,
        ) else {
            if !self.dry_run {
                set_state(self.store, project, session, window, |s| {
                    s.due = false;
                    s.next_try_ms = None;
                })?;
            }
            return Ok(Outcome::NothingNew);
        };
        let last_seq = shaped.chunks.last().map(|c| c.last_seq);
        if !shaped.has_user_text {
            if !self.dry_run {
                set_state(self.store, project, session, window, |s| {
                    s.due = false;
                    s.extracted_seq = last_seq.or(s.extracted_seq);
                })?;
            }
            return Ok(Outcome::NothingNew);
        }
        let date = shaped
            .last_ms
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map(|t| t.format("%Y-%m-%d").to_string())
            .unwrap_or_else(today);
        let origin = Origin {
            session: session.to_string(),
            window,
            date,
        };
        let parts = shaped.chunks.len();
        let (mut added, mut duplicates, mut superseded, mut spent) = (0, 0, 0, 0u64);
        let mut prompts = Vec::new();
        for (k, chunk) in shaped.chunks.iter().enumerate() {
            let notes = self.store.open(project);
            let user = prompt(&notes, session, window, chunk, (k, parts));
            let needed = estimate_tokens(SYSTEM) + estimate_tokens(&user) + MAX_TOKENS as u64;
            if self.dry_run {
                spent += needed;
                prompts.push(user);
                continue;
            }
            let state = self.store.state();
            let budget = self.daily_budget;
            let left = budget.saturating_sub(state.spent_on(&today()));
            if needed > left {
                set_state(self.store, project, session, window, |s| {
                    s.due = true;
                    s.last_error = Some(format!(
                        "daily token budget spent ({} of {}); waits for tomorrow or a higher budget",
                        state.spent_on(&today()),
                        budget
                    ));
                })?;
                return Ok(Outcome::BudgetSpent { needed, left });
            }
            let call = ToolCall {
                system: SYSTEM.to_string(),
                user,
                tool: TOOL.into(),
                description:
                    "Record what this session window teaches about the project, in four categories."
                        .into(),
                schema: schema(),
                model: self.model.clone(),
                max_tokens: MAX_TOKENS,
                validate,
            };
            let answer = match self.backend.call(&call, cancel) {
                Ok(a) => a,
                Err(BackendError::Cancelled) => return Err(NotesError::Cancelled),
                Err(e) => return self.failed(project, session, window, e.to_string()),
            };
            let place = Place {
                project,
                session,
                window,
                part: (k, parts),
                redacted: shaped.redacted,
            };
            let (report, tokens) = self.record(&place, chunk, &origin, &answer)?;
            spent += tokens;
            added += report.added.len();
            duplicates += report.duplicates.len();
            superseded += report.superseded.len();
        }
        if self.dry_run {
            return Ok(Outcome::DryRun {
                prompts,
                tokens: spent,
            });
        }
        set_state(self.store, project, session, window, |s| {
            s.due = false;
            s.attempts = 0;
            s.next_try_ms = None;
            s.last_error = None;
            s.extracted_ms = Some(now_ms());
        })?;
        Ok(Outcome::Extracted {
            added,
            duplicates,
            superseded,
            tokens: spent,
        })
    }

    /// A model call that failed: the window is due again after a growing pause, and the failure is logged.
    fn failed(
        &self,
        project: &str,
        session: &str,
        window: u32,
        error: String,
    ) -> Result<Outcome, NotesError> {
        let mut next = 0;
        let notes = set_state(self.store, project, session, window, |s| {
            s.due = true;
            s.attempts += 1;
            next = now_ms() + backoff_ms(s.attempts);
            s.next_try_ms = Some(next);
            s.last_error = Some(error.clone());
        })?;
        notes.log(&json!({
            "at": chrono::Utc::now().to_rfc3339(), "session": session, "window": window,
            "backend": self.backend.name(), "error": error,
        }))?;
        Ok(Outcome::Failed {
            error,
            next_try_ms: next,
        })
    }

    /// Merges the findings of one answer into the notes (under the lock), counts its tokens against the day's
    /// budget, moves the window's extracted mark past `chunk`, and logs what changed. Returns the merge and the
    /// tokens spent.
    fn record(
        &self,
        at: &Place,
        chunk: &Chunk,
        origin: &Origin,
        answer: &crate::model::ToolAnswer,
    ) -> Result<(merge::MergeReport, u64), NotesError> {
        let (project, session, window) = (at.project, at.session, at.window);
        let u = &answer.usage;
        let tokens = u.input_tokens
            + u.output_tokens
            + u.cache_creation_input_tokens
            + u.cache_read_input_tokens;
        let found = findings(&answer.input);
        let (report, notes) = update(self.store, project, |notes| {
            let report = merge::merge(notes, &found, origin, self.sim, self.threshold);
            let day = today();
            let st = notes.meta.window_mut(session, window);
            st.extracted_seq = Some(chunk.last_seq);
            st.tokens += tokens;
            st.added += report.added.len() as u32;
            notes.meta.tokens_total += tokens;
            *notes.meta.tokens_by_day.entry(day.clone()).or_default() += tokens;
            notes.meta.last_extraction_ms = Some(now_ms());
            // The day's spend, for the budget of every project (under the same lock).
            let mut s = self.store.state();
            *s.spent.entry(day).or_default() += tokens;
            while s.spent.len() > 30 {
                let first = s.spent.keys().next().cloned().unwrap_or_default();
                s.spent.remove(&first);
            }
            self.store.save_state(&s)?;
            Ok(report)
        })?;
        notes.archive(&report.archived, "cap")?;
        let items = |v: &[(Category, super::item::Item)]| -> Vec<Value> {
            v.iter()
                .map(|(c, i)| json!({"category": c.name(), "id": i.id, "text": i.text}))
                .collect()
        };
        notes.log(&json!({
                "at": chrono::Utc::now().to_rfc3339(), "session": session, "window": window,
                "part": at.part.0 + 1, "parts": at.part.1, "backend": self.backend.name(),
                "model": answer.model, "tokens": tokens, "redacted": at.redacted,
                "added": items(&report.added), "superseded": items(&report.superseded),
                "archived": items(&report.archived),
                "duplicates": report.duplicates.iter().map(|(c, t, of)| json!({"category": c.name(), "text": t, "of": of})).collect::<Vec<_>>(),
                "unknown_ids": report.unknown_ids,
                "no_updates": answer.input.get("no_updates").and_then(Value::as_bool).unwrap_or(false),
            }))?;
        Ok((report, tokens))
    }
}

/// Where an answer belongs: the project, session and window, which part of the window (index, count), and the
/// secrets its text had redacted.
struct Place<'a> {
    project: &'a str,
    session: &'a str,
    window: u32,
    part: (usize, usize),
    redacted: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_input_is_validated() {
        let ok = json!({"architecture": ["a"], "decisions": [], "failures": [], "plan": [], "supersedes": [], "no_updates": false});
        assert_eq!(validate(&ok), Ok(()));
        let f = findings(&ok);
        assert_eq!(f.new[&Category::Architecture], ["a"]);
        for bad in [
            json!("x"),
            json!({"architecture": "a", "decisions": [], "failures": [], "plan": [], "supersedes": []}),
            json!({"decisions": [], "failures": [], "plan": [], "supersedes": []}),
            json!({"architecture": [1], "decisions": [], "failures": [], "plan": [], "supersedes": []}),
            json!({"architecture": (0..30).map(|k| k.to_string()).collect::<Vec<_>>(), "decisions": [], "failures": [], "plan": [], "supersedes": []}),
        ] {
            assert!(validate(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert_eq!(backoff_ms(1), 5 * 60_000);
        assert_eq!(backoff_ms(2), 10 * 60_000);
        assert_eq!(backoff_ms(30), 360 * 60_000);
    }
}
