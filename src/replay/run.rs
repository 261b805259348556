//! Asking the chosen windows: rebuild, ask with bounded concurrency, re-rank by the answers, log.

use super::route::{Mode, ReplayError, RouteContext, Target, WindowType, route};
use crate::model::conversation::{RebuildOptions, rebuild};
use crate::model::{Backend, BackendError, Prompt, Usage};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

/// The model asked when neither the request nor the window names one.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// A question and how to route it (the parameters of `duncan_query` and `ghola query`).
#[derive(Debug, Clone)]
pub struct QueryRequest {
    pub question: String,
    pub mode: Mode,
    /// Search (or list) every project instead of the current one.
    pub global: bool,
    /// The project to search or list (default: the current one).
    pub project: Option<String>,
    pub session_id: Option<String>,
    pub window: Option<u32>,
    pub git_branch: Option<String>,
    /// Windows to ask (default 5).
    pub limit: usize,
    pub offset: usize,
    /// Samples in `self` mode (default 3).
    pub copies: usize,
    /// Windows asked at once (default 5).
    pub batch_size: usize,
    pub include_subagents: bool,
    /// Overrides each window's own model.
    pub model: Option<String>,
    /// Context budget of a rebuilt window, in estimated tokens.
    pub budget_tokens: usize,
}

/// Windows asked by default, and at most.
pub const LIMIT: usize = 5;
pub const MAX_LIMIT: usize = 50;
/// Samples of mode `self` by default, and at most.
pub const COPIES: usize = 3;
pub const MAX_COPIES: usize = 10;
/// Windows asked at once by default, and at most.
pub const BATCH_SIZE: usize = 5;
pub const MAX_BATCH_SIZE: usize = 20;

impl QueryRequest {
    /// The defaults of `duncan_query`.
    pub fn new(question: &str) -> Self {
        Self {
            question: question.to_string(),
            mode: Mode::Search,
            global: false,
            project: None,
            session_id: None,
            window: None,
            git_branch: None,
            limit: LIMIT,
            offset: 0,
            copies: COPIES,
            batch_size: BATCH_SIZE,
            include_subagents: true,
            model: None,
            budget_tokens: RebuildOptions::default().budget_tokens,
        }
    }

    /// Rejects what cannot be meant.
    pub fn validate(&self) -> Result<(), ReplayError> {
        let bad = |arg: &'static str, message: String| Err(ReplayError::Invalid { arg, message });
        if self.question.trim().is_empty() {
            return bad("question", "question must not be empty".into());
        }
        if self.question.len() > 20_000 {
            return bad("question", "question is longer than 20,000 bytes".into());
        }
        if !(1..=MAX_LIMIT).contains(&self.limit) {
            return bad(
                "limit",
                format!(
                    "limit must be between 1 and {MAX_LIMIT}, got {}",
                    self.limit
                ),
            );
        }
        if !(1..=MAX_BATCH_SIZE).contains(&self.batch_size) {
            return bad(
                "batch_size",
                format!(
                    "batch_size must be between 1 and {MAX_BATCH_SIZE}, got {}",
                    self.batch_size
                ),
            );
        }
        if !(1..=MAX_COPIES).contains(&self.copies) {
            return bad(
                "copies",
                format!(
                    "copies must be between 1 and {MAX_COPIES}, got {}",
                    self.copies
                ),
            );
        }
        if self.budget_tokens < 1000 {
            return bad(
                "budget_tokens",
                "the context budget must be at least 1,000 tokens".into(),
            );
        }
        Ok(())
    }
}

/// One asked window.
#[derive(Debug, Clone, Serialize)]
pub struct WindowResult {
    pub session_id: String,
    pub window: u32,
    /// Windows the session (or subagent file) has.
    pub windows: u32,
    pub window_type: WindowType,
    pub agent_id: Option<String>,
    pub project: String,
    pub git_branch: Option<String>,
    pub first_timestamp: Option<String>,
    pub last_timestamp: Option<String>,
    pub has_context: bool,
    /// `None` when the window failed (see `error`).
    pub answer: Option<String>,
    pub error: Option<String>,
    pub model: String,
    pub tokens: Usage,
    pub latency_ms: u64,
    pub search_rank: Option<usize>,
    pub search_score: Option<f32>,
    /// Messages cut from the head to fit the context budget.
    pub messages_cut: usize,
}

impl WindowResult {
    /// One word for progress lines: `failed`, `has context` or `no context`.
    pub fn status(&self) -> &'static str {
        match (&self.answer, self.has_context) {
            (None, _) => "failed",
            (Some(_), true) => "has context",
            (Some(_), false) => "no context",
        }
    }

    /// The window type's name in the query log.
    pub fn window_type_name(&self) -> &'static str {
        match self.window_type {
            WindowType::Current => "current",
            WindowType::Compacted => "compacted",
            WindowType::Subagent => "subagent",
            WindowType::SelfCopy => "self",
        }
    }
}

/// The closing line of a query.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub windows: usize,
    pub with_context: usize,
    pub failed: usize,
    pub tokens: Usage,
    pub elapsed_ms: u64,
}

/// Everything a query produced.
#[derive(Debug, Clone, Serialize)]
pub struct QueryReport {
    pub batch_id: String,
    pub question: String,
    pub mode: Mode,
    pub backend: String,
    pub results: Vec<WindowResult>,
    pub summary: Summary,
    pub notes: Vec<String>,
    pub cancelled: bool,
}

fn iso(t: Option<chrono::DateTime<chrono::Utc>>) -> Option<String> {
    t.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// Rebuilds and asks one target; `None` when the batch was cancelled before it got an answer.
fn ask_one(
    t: &Target,
    req: &QueryRequest,
    backend: &dyn Backend,
    cancel: &AtomicBool,
) -> Option<WindowResult> {
    let started = Instant::now();
    let mut r = WindowResult {
        session_id: t.session_id.clone(),
        window: t.window.unwrap_or(0),
        windows: 1,
        window_type: if t.self_copy {
            WindowType::SelfCopy
        } else if t.subagent {
            WindowType::Subagent
        } else {
            WindowType::Current
        },
        agent_id: t.agent_id.clone(),
        project: t.project.clone(),
        git_branch: None,
        first_timestamp: None,
        last_timestamp: None,
        has_context: false,
        answer: None,
        error: None,
        model: req.model.clone().unwrap_or_default(),
        tokens: Usage::default(),
        latency_ms: 0,
        search_rank: t.search_rank,
        search_score: t.search_score,
        messages_cut: 0,
    };
    let options = RebuildOptions {
        budget_tokens: req.budget_tokens,
    };
    let conv = match rebuild(&t.source, t.window, &options) {
        Ok(c) => c,
        Err(e) => {
            r.error = Some(e.to_string());
            return Some(r);
        }
    };
    r.window = conv.window;
    r.windows = conv.windows;
    if r.window_type == WindowType::Current && conv.window + 1 < conv.windows {
        r.window_type = WindowType::Compacted;
    }
    r.git_branch = conv.git_branch.clone();
    r.first_timestamp = iso(conv.first);
    r.last_timestamp = iso(conv.last);
    r.messages_cut = conv.trim.messages_cut;
    let model = req
        .model
        .clone()
        .or_else(|| conv.model.clone())
        .unwrap_or_else(|| DEFAULT_MODEL.to_string());
    r.model = model.clone();
    let prompt = Prompt {
        system: system_prompt(&conv, t),
        conversation: conv.messages,
        question: req.question.clone(),
        model,
        cwd: conv.cwd,
        git_branch: conv.git_branch,
    };
    match backend.ask(&prompt, cancel) {
        Ok(a) => {
            r.has_context = a.has_context;
            r.answer = Some(a.answer);
            r.tokens = a.usage;
            r.model = a.model;
        }
        Err(BackendError::Cancelled) => return None,
        Err(e) => r.error = Some(e.to_string()),
    }
    r.latency_ms = started.elapsed().as_millis() as u64;
    Some(r)
}

/// The short system prompt of a replay: what this is, where and when it happened.
fn system_prompt(conv: &super::Conversation, t: &Target) -> String {
    let mut s = format!(
        "This is a replay of a past Claude Code session (session {}{}, window {} of {}), loaded so that a \
         question about it can be answered. It is not a live session: nothing can be run or changed.",
        conv.session_id,
        t.agent_id
            .as_ref()
            .map(|a| format!(", subagent {a}"))
            .unwrap_or_default(),
        conv.window + 1,
        conv.windows
    );
    if let Some(cwd) = &conv.cwd {
        s.push_str(&format!("\nWorking directory: {cwd}"));
    }
    if let Some(b) = &conv.git_branch {
        s.push_str(&format!("\nGit branch: {b}"));
    }
    if let (Some(a), Some(b)) = (conv.first, conv.last) {
        s.push_str(&format!(
            "\nDate: {} to {}",
            a.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            b.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ));
    }
    s.push_str(
        "\nAnswer the final question only from this conversation, through the duncan_response tool.",
    );
    s
}

/// Routes the question, asks every target (at most `batch_size` at once), calls `on_window` as each one
/// finishes (done, total), and returns the windows re-ranked: answers with context first, then by search
/// rank (or routing order), failures last. Every answered window is appended to the query log.
pub fn query(
    req: &QueryRequest,
    ctx: &RouteContext,
    backend: &dyn Backend,
    cancel: &AtomicBool,
    on_window: &mut dyn FnMut(&WindowResult, usize, usize),
) -> Result<QueryReport, ReplayError> {
    req.validate()?;
    let started = Instant::now();
    let batch_id = uuid::Uuid::new_v4().to_string();
    let (targets, notes) = route(req, ctx)?;
    let log_path = super::log::log_path(ctx.claude_dir, ctx.log);
    let total = targets.len();
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, WindowResult)>();
    let mut results: Vec<(usize, WindowResult)> = Vec::with_capacity(total);
    std::thread::scope(|scope| {
        for _ in 0..req.batch_size.min(total) {
            let tx = tx.clone();
            let (next, targets) = (&next, &targets);
            scope.spawn(move || {
                loop {
                    if cancel.load(Ordering::Relaxed) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(t) = targets.get(i) else { break };
                    let Some(r) = ask_one(t, req, backend, cancel) else {
                        continue;
                    };
                    if tx.send((i, r)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, r) in rx {
            super::log::append(
                &log_path,
                &batch_id,
                &req.question,
                req.mode.as_str(),
                ctx.calling_session,
                &r,
            );
            results.push((i, r));
            on_window(
                &results.last().expect("just pushed").1,
                results.len(),
                total,
            );
        }
    });
    results.sort_by_key(|(i, r)| (r.answer.is_none(), !r.has_context, *i));
    let results: Vec<WindowResult> = results.into_iter().map(|(_, r)| r).collect();
    let mut summary = Summary {
        windows: results.len(),
        with_context: results.iter().filter(|r| r.has_context).count(),
        failed: results.iter().filter(|r| r.answer.is_none()).count(),
        elapsed_ms: started.elapsed().as_millis() as u64,
        ..Default::default()
    };
    for r in &results {
        summary.tokens.add(&r.tokens);
    }
    let cancelled = cancel.load(Ordering::Relaxed);
    Ok(QueryReport {
        batch_id,
        question: req.question.clone(),
        mode: req.mode,
        backend: backend.name().to_string(),
        results,
        summary,
        notes,
        cancelled,
    })
}

fn thousands(n: u64) -> String {
    if n >= 10_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}

impl QueryReport {
    /// The readable report: per window a header and its answer (only `hasContext` answers in full, unless
    /// none has one), then the summary line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let any_context = self.results.iter().any(|r| r.has_context);
        for (i, r) in self.results.iter().enumerate() {
            let time = match (&r.first_timestamp, &r.last_timestamp) {
                (Some(a), Some(b)) => format!(" · {a} → {b}"),
                _ => String::new(),
            };
            let status = match (&r.answer, r.has_context) {
                (None, _) => "error",
                (Some(_), true) => "has context",
                (Some(_), false) => "no context",
            };
            out.push_str(&format!(
                "## {}. session {} · window {}/{}{}{} · {}{}{} · {}\n",
                i + 1,
                r.session_id,
                r.window + 1,
                r.windows,
                r.agent_id
                    .as_ref()
                    .map(|a| format!(" · subagent {a}"))
                    .unwrap_or_default(),
                match r.window_type {
                    WindowType::Compacted => " (compacted)",
                    WindowType::SelfCopy => " (self)",
                    _ => "",
                },
                r.project,
                r.git_branch
                    .as_ref()
                    .map(|b| format!(" · branch {b}"))
                    .unwrap_or_default(),
                time,
                status,
            ));
            out.push_str(&format!(
                "tokens: {} in, {} out, {} cache read, {} cache write · {} · {} ms\n",
                thousands(r.tokens.input_tokens),
                thousands(r.tokens.output_tokens),
                thousands(r.tokens.cache_read_input_tokens),
                thousands(r.tokens.cache_creation_input_tokens),
                r.model,
                r.latency_ms
            ));
            match (&r.answer, &r.error) {
                (Some(a), _) if r.has_context || !any_context => out.push_str(&format!("{a}\n")),
                (Some(_), _) => out.push_str("(no answer from this window)\n"),
                (None, Some(e)) => out.push_str(&format!("failed: {e}\n")),
                (None, None) => {}
            }
            out.push('\n');
        }
        for n in &self.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        let s = &self.summary;
        out.push_str(&format!(
            "{} of {} window(s) had context{}; tokens: {} in, {} out, {} cache read, {} cache write; {:.1} s{}\n",
            s.with_context,
            s.windows,
            if s.failed > 0 {
                format!(", {} failed", s.failed)
            } else {
                String::new()
            },
            thousands(s.tokens.input_tokens),
            thousands(s.tokens.output_tokens),
            thousands(s.tokens.cache_read_input_tokens),
            thousands(s.tokens.cache_creation_input_tokens),
            s.elapsed_ms as f64 / 1000.0,
            if self.cancelled { " (cancelled)" } else { "" }
        ));
        out
    }
}
