//! A whole session: its messages (split assistant entries merged), compaction windows, subagents, title,
//! and project, assembled from the files [`discover`](super::discover::discover) found.

use super::discover::{SessionFiles, SubagentFile, SubagentLayout};
use super::entry::RawEntry;
use super::message::{Message, Part, Role, parts_of};
use super::reader::{EntryAt, FileReport, read_entries};
use super::source::Sources;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The messages of one subagent run.
#[derive(Debug, Clone, Serialize)]
pub struct Subagent {
    pub agent_id: String,
    pub agent_type: Option<String>,
    pub layout: SubagentLayout,
    pub messages: Vec<Message>,
}

impl Subagent {
    /// Whether this is one of the warm-up runs Claude Code starts on its own: its request is the single word
    /// "Warmup", or it has none (2.0.55 wrote some warm-ups' reply alone, "I'm ready to help you explore…"; a
    /// subagent file without messages has none either). Not work anyone asked for, so it neither titles nor
    /// lists a session.
    pub fn is_warmup(&self) -> bool {
        first_request(&self.messages).is_none_or(|r| r == "Warmup")
    }
}

/// One file's read report, for `ghola sessions --json`.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct FileStatus {
    pub path: PathBuf,
    /// Where reading started (0 unless resumed).
    #[serde(skip)]
    pub start: u64,
    pub consumed: u64,
    #[serde(flatten)]
    pub report: FileReport,
}

/// A session as a person would think of it.
#[derive(Debug, Clone, Serialize)]
pub struct Session {
    pub session_id: String,
    /// The directory the session was started in.
    pub project: String,
    pub project_dir: PathBuf,
    /// The other machine it was recorded on, when its files are in that machine's synced copy (`None`: this
    /// machine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    pub title: Option<String>,
    /// The main conversation, in file order.
    pub messages: Vec<Message>,
    pub subagents: Vec<Subagent>,
    /// Number of compaction windows (1 + number of compactions).
    pub windows: u32,
    /// When each compaction happened (window k ≥ 1 starts at `boundaries[k-1]`).
    pub boundaries: Vec<Option<DateTime<Utc>>>,
    pub files: Vec<FileStatus>,
    /// Claude Code deleted the transcript; it was read from ghola's archive.
    pub archived: bool,
    /// Credentials replaced by placeholders as the messages were built, per rule (empty when read with
    /// [`Sources::revealing`]).
    #[serde(skip_serializing_if = "crate::secrets::Tally::is_empty")]
    pub secrets_hidden: crate::secrets::Tally,
}

impl Session {
    /// Every message of the session, main conversation then subagents.
    pub fn all_messages(&self) -> impl Iterator<Item = &Message> {
        self.messages
            .iter()
            .chain(self.subagents.iter().flat_map(|s| s.messages.iter()))
    }

    /// Whether the session holds subagents' work and no main conversation (its main transcript is gone, or was
    /// never written): what `ghola show` and the browser then show without being asked.
    pub fn only_subagents_work(&self) -> bool {
        self.messages.is_empty() && self.subagents.iter().any(|a| !a.is_warmup())
    }

    /// Time of the first and last message (subagents included).
    pub fn time_range(&self) -> (Option<DateTime<Utc>>, Option<DateTime<Utc>>) {
        let mut first = None;
        let mut last = None;
        for t in self.all_messages().filter_map(|m| m.timestamp) {
            first = Some(first.map_or(t, |f: DateTime<Utc>| f.min(t)));
            last = Some(last.map_or(t, |l: DateTime<Utc>| l.max(t)));
        }
        (first, last)
    }

    /// The first git branch recorded in the main conversation (else in a subagent).
    pub fn git_branch(&self) -> Option<&str> {
        self.all_messages()
            .find_map(|m| m.git_branch.as_deref().filter(|b| !b.is_empty()))
    }

    /// Lines skipped for being broken, over all the session's files.
    pub fn skipped_lines(&self) -> u64 {
        self.files.iter().map(|f| f.report.skipped_lines()).sum()
    }
}

/// Where a resumed read of a file starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    pub offset: u64,
    /// Compaction windows begun before `offset` (main transcripts).
    pub window: u32,
}

/// How to read a session's files: whole (the default), or each from where an earlier read left off, so that an
/// append costs the appended bytes. Files the plan does not name are read whole.
#[derive(Debug, Clone, Default)]
pub struct ReadPlan {
    /// Per file: `Some(start)` to resume there, `None` to skip the file (it has not changed).
    pub starts: HashMap<PathBuf, Option<Start>>,
    /// The session's project, when an earlier read determined it.
    pub project: Option<String>,
    /// Compactions before the main transcript's start (they place subagent messages in windows).
    pub boundaries: Vec<Option<DateTime<Utc>>>,
}

/// Reads and assembles one session. Never fails: unreadable files show up in `files[].report`.
pub fn load_session(src: &Sources, files: &SessionFiles) -> Session {
    load_session_from(src, files, &ReadPlan::default())
}

/// Reads what `plan` asks of one session's files: a resumed read yields the messages that start at or after each
/// file's start offset, with windows and boundaries continuing from the plan's.
pub fn load_session_from(src: &Sources, files: &SessionFiles, plan: &ReadPlan) -> Session {
    let mut read = read_files(src, files, plan);
    let project = plan.project.clone().unwrap_or_else(|| {
        read.main
            .iter()
            .flat_map(|(e, _)| e.iter())
            .chain(read.subagents.iter().flat_map(|(_, e)| e.iter()))
            .find_map(|e| e.entry.cwd.clone().filter(|c| !c.is_empty()))
            .map(|cwd| src.project_as_here(&files.project_dir, &cwd))
            .unwrap_or_else(|| dir_name(&files.project_dir))
    });
    let ctx = Context {
        session_id: &files.session_id,
        project: &project,
        redact: !src.reveals(),
        hidden: std::cell::RefCell::default(),
    };
    let main_read = read.main.is_some();
    let (entries, window) = read.main.take().unwrap_or_default();
    let mut main = assemble_main(&entries, window, plan.boundaries.clone(), &ctx);
    if main_read {
        read.statuses[0].report.unknown_blocks += main.unknown_blocks;
    }
    let first_sub = usize::from(main_read);
    for (i, (sub, entries)) in read.subagents.iter().enumerate() {
        let (agent, unknown_blocks) = assemble_subagent(sub, entries, &main.boundaries, &ctx);
        read.statuses[first_sub + i].report.unknown_blocks += unknown_blocks;
        main.subagents.push(agent);
    }
    let uuids: std::collections::HashSet<&str> = main
        .messages
        .iter()
        .flat_map(|m| std::iter::once(&m.uuid).chain(&m.merged_uuids))
        .map(String::as_str)
        .collect();
    let title = main
        .title
        .resolve(&uuids)
        .or_else(|| untitled(&main.messages, &main.subagents));
    let (title, secrets_hidden) = ctx.finish(title);
    Session {
        session_id: files.session_id.clone(),
        project,
        project_dir: files.project_dir.clone(),
        machine: src.machine_of(&files.project_dir),
        title,
        messages: main.messages,
        subagents: main.subagents,
        windows: main.window + 1,
        boundaries: main.boundaries,
        files: read.statuses,
        archived: files.archived,
        secrets_hidden,
    }
}

/// What [`read_files`] read of one session: each file's status (main first), the main transcript's entries with
/// the compaction window its read starts in, and each subagent file's entries.
struct SessionRead<'f> {
    statuses: Vec<FileStatus>,
    main: Option<(Vec<EntryAt>, u32)>,
    subagents: Vec<(&'f SubagentFile, Vec<EntryAt>)>,
}

/// The reading phase of [`load_session_from`]: every file the plan does not skip, from its start offset.
fn read_files<'f>(src: &Sources, files: &'f SessionFiles, plan: &ReadPlan) -> SessionRead<'f> {
    let start_of = |p: &Path| -> Option<Start> {
        match plan.starts.get(p) {
            Some(s) => *s,
            None => Some(Start {
                offset: 0,
                window: 0,
            }),
        }
    };
    let mut statuses = Vec::new();
    let mut read_one = |path: &Path, start: Start| {
        let (entries, outcome) = read_entries(src, path, start.offset);
        statuses.push(FileStatus {
            path: path.to_path_buf(),
            start: start.offset,
            consumed: outcome.consumed,
            report: outcome.report,
        });
        entries
    };
    let main = files
        .main
        .as_deref()
        .and_then(|path| start_of(path).map(|start| (read_one(path, start), start.window)));
    let subagents = files
        .subagents
        .iter()
        .filter_map(|sub| start_of(&sub.path).map(|start| (sub, read_one(&sub.path, start))))
        .collect();
    SessionRead {
        statuses,
        main,
        subagents,
    }
}

/// The main conversation as [`assemble_main`] built it: its messages, the inline (1.0.x) subagents found in it,
/// the compaction windows and boundaries it ends with, and its title's sources.
struct MainConversation {
    messages: Vec<Message>,
    subagents: Vec<Subagent>,
    window: u32,
    boundaries: Vec<Option<DateTime<Utc>>>,
    title: Title,
    unknown_blocks: u64,
}

/// Builds the main conversation from its entries: compaction boundaries open windows, titles are collected, and
/// a 1.0.x inline subagent (a chain rooted at a sidechain entry with no sidechain parent) becomes a subagent.
fn assemble_main(
    entries: &[EntryAt],
    mut window: u32,
    mut boundaries: Vec<Option<DateTime<Utc>>>,
    ctx: &Context,
) -> MainConversation {
    let mut sink = FileReport::default();
    let mut main = Builder::default();
    let mut inline: Vec<(String, Builder)> = Vec::new();
    let mut inline_owner: HashMap<String, usize> = HashMap::new();
    let mut title = Title::default();
    for EntryAt { offset, entry } in entries {
        match entry.kind.as_str() {
            "system" if entry.subtype.as_deref() == Some("compact_boundary") => {
                window += 1;
                boundaries.push(parse_time(entry.timestamp.as_deref()));
            }
            "summary" => title.summary(entry),
            "custom-title" => title.custom = entry.custom_title.clone().or(title.custom.take()),
            "user" | "assistant" if entry.is_sidechain == Some(true) => {
                let owner = entry
                    .parent_uuid
                    .as_ref()
                    .and_then(|p| inline_owner.get(p).copied());
                let idx = owner.unwrap_or_else(|| {
                    let root = entry.uuid.clone().unwrap_or_else(|| format!("{offset}"));
                    inline.push((format!("sidechain-{root}"), Builder::default()));
                    inline.len() - 1
                });
                if let Some(u) = &entry.uuid {
                    inline_owner.insert(u.clone(), idx);
                }
                let agent_id = inline[idx].0.clone();
                inline[idx]
                    .1
                    .push(*offset, entry, window, Some(&agent_id), ctx, &mut sink);
            }
            "user" | "assistant" => main.push(*offset, entry, window, None, ctx, &mut sink),
            _ => {}
        }
    }
    let subagents = inline
        .into_iter()
        .map(|(agent_id, b)| Subagent {
            agent_id,
            agent_type: None,
            layout: SubagentLayout::Inline,
            messages: b.messages,
        })
        .collect();
    MainConversation {
        messages: main.messages,
        subagents,
        window,
        boundaries,
        title,
        unknown_blocks: sink.unknown_blocks,
    }
}

/// Builds one subagent file's messages, each placed in the parent's window in effect at its time; returns the
/// unknown content blocks met on the way (for the file's report).
fn assemble_subagent(
    sub: &SubagentFile,
    entries: &[EntryAt],
    boundaries: &[Option<DateTime<Utc>>],
    ctx: &Context,
) -> (Subagent, u64) {
    let mut sink = FileReport::default();
    let mut b = Builder::default();
    for EntryAt { offset, entry } in entries {
        if matches!(entry.kind.as_str(), "user" | "assistant") {
            let w = window_at(boundaries, parse_time(entry.timestamp.as_deref()));
            b.push(*offset, entry, w, Some(&sub.agent_id), ctx, &mut sink);
        }
    }
    let agent = Subagent {
        agent_id: sub.agent_id.clone(),
        agent_type: sub.agent_type.clone(),
        layout: sub.layout,
        messages: b.messages,
    };
    (agent, sink.unknown_blocks)
}

/// Whether `parts` hold text someone wrote (not only thinking or tool calls): the piece of a response that does
/// names it ([`Message::uuid`]).
fn says_something(parts: &[Part]) -> bool {
    parts
        .iter()
        .any(|p| matches!(p, Part::Text { text } if !text.trim().is_empty()))
}

/// The window in effect at time `t`: how many compactions happened at or before it. Used to place
/// subagent messages (which live in their own files) in their parent's windows.
fn window_at(boundaries: &[Option<DateTime<Utc>>], t: Option<DateTime<Utc>>) -> u32 {
    let Some(t) = t else { return 0 };
    boundaries
        .iter()
        .filter(|b| b.is_some_and(|b| b <= t))
        .count() as u32
}

struct Context<'a> {
    session_id: &'a str,
    project: &'a str,
    /// Replace credentials in every part (see `crate::secrets`).
    redact: bool,
    /// What was replaced.
    hidden: std::cell::RefCell<crate::secrets::Tally>,
}

impl Context<'_> {
    /// The session's title, redacted like its messages, and what this session's read hid.
    fn finish(self, mut title: Option<String>) -> (Option<String>, crate::secrets::Tally) {
        let mut hidden = self.hidden.into_inner();
        if let Some(t) = title.as_mut().filter(|_| self.redact) {
            crate::secrets::redact_in_place(t, &mut hidden);
        }
        (title, hidden)
    }
}

/// Builds the messages of one stream, merging assistant entries that share `message.id`.
#[derive(Default)]
struct Builder {
    messages: Vec<Message>,
    by_message_id: HashMap<String, usize>,
}

/// How the id of the subagent that compacts a conversation begins (`agent-acompact-946d2b.jsonl`).
pub const COMPACTION_AGENT: &str = "acompact";

impl Builder {
    fn push(
        &mut self,
        offset: u64,
        entry: &RawEntry,
        window: u32,
        agent_id: Option<&str>,
        ctx: &Context,
        report: &mut FileReport,
    ) {
        let role = match entry.kind.as_str() {
            "assistant" => Role::Assistant,
            _ => Role::User,
        };
        // Claude Code 2.1 runs compaction as a subagent (`agent-acompact-*`): its prompt and the summary it writes
        // are the compaction summary the session then continues from, not anyone's words.
        let is_summary = entry.is_compact_summary == Some(true)
            || agent_id.is_some_and(|a| a.starts_with(COMPACTION_AGENT));
        let Some(mut parts) = parts_of(entry, report) else {
            return;
        };
        if ctx.redact {
            let mut hidden = ctx.hidden.borrow_mut();
            for p in &mut parts {
                p.redact(&mut hidden);
            }
        }
        let msg = entry.message.as_ref();
        let api_id = msg
            .and_then(|m| m.id.clone())
            .filter(|_| role == Role::Assistant);
        if let Some(id) = &api_id
            && let Some(&i) = self.by_message_id.get(id)
        {
            let merged = &mut self.messages[i];
            let names_it = !says_something(&merged.parts) && says_something(&parts);
            merged.parts.append(&mut parts);
            if let Some(u) = &entry.uuid
                && *u != merged.uuid
            {
                if names_it {
                    // The first piece with text names the reply (once: from then on it has text); the pieces
                    // before it stay its entries.
                    let first = std::mem::replace(&mut merged.uuid, u.clone());
                    merged.first_entry = Some(first.clone());
                    merged.merged_uuids.insert(0, first);
                } else {
                    merged.merged_uuids.push(u.clone());
                }
            }
            return;
        }
        let uuid = entry
            .uuid
            .clone()
            .unwrap_or_else(|| format!("{}@{offset}", ctx.session_id));
        if let Some(id) = api_id {
            self.by_message_id.insert(id, self.messages.len());
        }
        self.messages.push(Message {
            uuid,
            merged_uuids: Vec::new(),
            first_entry: None,
            parent_uuid: entry.parent_uuid.clone(),
            session_id: ctx.session_id.to_string(),
            agent_id: agent_id.map(str::to_owned),
            project: ctx.project.to_string(),
            cwd: entry.cwd.clone(),
            git_branch: entry.git_branch.clone().filter(|b| !b.is_empty()),
            timestamp: parse_time(entry.timestamp.as_deref()),
            role,
            model: msg
                .and_then(|m| m.model.clone())
                .filter(|m| m != "<synthetic>"),
            parts,
            window,
            is_compact_summary: is_summary,
            offset,
        });
    }
}

#[derive(Default)]
struct Title {
    custom: Option<String>,
    summaries: Vec<(Option<String>, String)>,
}

impl Title {
    fn summary(&mut self, e: &RawEntry) {
        if let Some(s) = e.summary.as_ref().filter(|s| !s.trim().is_empty()) {
            self.summaries
                .push((e.leaf_uuid.clone(), s.trim().to_string()));
        }
    }

    /// A custom title wins; else a summary whose leaf is in this session; else the first summary.
    fn resolve(self, uuids: &std::collections::HashSet<&str>) -> Option<String> {
        if self.custom.is_some() {
            return self.custom;
        }
        let own = self
            .summaries
            .iter()
            .rev()
            .find(|(leaf, _)| leaf.as_deref().is_some_and(|l| uuids.contains(l)));
        own.or(self.summaries.first()).map(|(_, s)| s.clone())
    }
}

/// The title of a session Claude Code gave none: its first request, as a person would name it (a subagent's when
/// the main conversation has none).
fn untitled(main: &[Message], subagents: &[Subagent]) -> Option<String> {
    first_request(main).or_else(|| {
        subagents
            .iter()
            .filter(|a| !a.is_warmup())
            .find_map(|a| first_request(&a.messages))
    })
}

/// Characters of a first request kept as a session's title.
const TITLE_CHARS: usize = 80;

/// The first line the user wrote in `messages` (not a compaction summary), cut to [`TITLE_CHARS`] at a word.
fn first_request(messages: &[Message]) -> Option<String> {
    let line = messages
        .iter()
        .filter(|m| m.role == Role::User && !m.is_compact_summary)
        .flat_map(|m| m.parts.iter())
        .find_map(|p| match p {
            // What an IDE added is not the request: a message with nothing else names no session.
            Part::Text { text } => super::clean::without_ide_notes(text)
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_string),
            _ => None,
        })?;
    if line.chars().count() <= TITLE_CHARS {
        return Some(line);
    }
    let cut: String = line.chars().take(TITLE_CHARS).collect();
    let at_word = cut
        .rfind(' ')
        .filter(|&i| i > TITLE_CHARS / 2)
        .unwrap_or(cut.len());
    Some(format!("{}…", cut[..at_word].trim_end()))
}

/// Parses an ISO 8601 timestamp into UTC; malformed or missing → `None`.
pub fn parse_time(s: Option<&str>) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn dir_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
