//! `ghola start [NAME]`: the work loop's prompt. Each line is a task for Claude Code (`claude -p`, streamed),
//! with the notes compiled in before and extracted after; lines starting with `/` are commands.

use super::history::project_dir;
use anyhow::{Context, Result, bail};
use clap::Args;
use ghola::notes::merge::{Similarity, similarity};
use ghola::notes::{Category, Store};
use ghola::settings::{Mode, Settings};
use ghola::work::sitting::{self, Earlier, Line, TaskLog};
use ghola::work::task::{self, Shown, TaskRequest};
use rustyline::error::ReadlineError;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// `ghola start`'s arguments (flags override the settings file).
#[derive(Debug, Args)]
pub struct StartArgs {
    /// A named line of work: its own notes, inheriting the project folder's architecture, decisions and failures.
    pub name: Option<String>,
    /// Project folder (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// fresh (notes only), summary (notes + earlier tasks of this sitting), full (each task resumes the last).
    #[arg(long)]
    pub mode: Option<String>,
    /// The tasks' model (default: Claude Code's).
    #[arg(long)]
    pub model: Option<String>,
    /// Context cap (notes + earlier tasks), in tokens.
    #[arg(long, value_name = "TOKENS")]
    pub context_tokens: Option<usize>,
    /// Passed to `claude --permission-mode` (default acceptEdits).
    #[arg(long)]
    pub permission_mode: Option<String>,
}

const HELP: &str = "\
Type a task and press Enter: Claude Code does it, then ghola extracts notes from it.
  /status              the plan and the recent decisions
  /notes [category]    the notes (architecture, decisions, failures, plan); /notes edit [category] opens $EDITOR
  /history             the tasks of this sitting
  /continue            the next task resumes the last task's Claude Code session
  /compact             fold this sitting's tasks into one summary and start fresh
  /extract [N]         extract notes again from the last task (or task N)
  /mode [M]            show or set the conversation mode: fresh, summary, full
  /help                this
  /done, /quit         leave (Ctrl-D too)
Ctrl-C stops a running task, not the prompt.";

/// The sitting: what the prompt keeps between tasks.
struct Sitting {
    store: Store,
    line: Line,
    settings: Settings,
    /// The base of the index updates made before extracting.
    update: ghola::index::UpdateOptions,
    index_dir: PathBuf,
    claude_dir: PathBuf,
    /// Where the model is (duplicates by meaning).
    model: ghola::embed::ModelPlaces,
    /// The environment read at the top (the backend's key, the `claude` CLI).
    env: ghola::config::Environment,
    claude: PathBuf,
    earlier: Vec<Earlier>,
    /// (log path, log) of this sitting's tasks.
    tasks: Vec<(PathBuf, TaskLog)>,
    continue_next: bool,
    notes_changed: bool,
    backend: Option<Box<dyn ghola::replay::Backend>>,
    sim: Option<Box<dyn Similarity>>,
    interrupt: Arc<AtomicBool>,
}

/// Runs `ghola start`.
pub fn start_cmd(
    index_dir: &Path,
    claude_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &super::knobs::Knobs,
    args: StartArgs,
) -> Result<()> {
    // Strictly here (a malformed file is an error before a sitting starts), with the variables applied.
    let mut settings = super::knobs::Knobs::from(
        ghola::settings::load_from(&knobs.env.settings_file)?,
        &|n| ghola::config::non_empty_env(n),
    )
    .settings;
    if let Some(m) = &args.mode {
        settings.mode = m.parse()?;
    }
    if args.model.is_some() {
        settings.task_model = args.model.clone();
    }
    if let Some(t) = args.context_tokens {
        settings.context_tokens = t.max(1);
    }
    if let Some(p) = &args.permission_mode {
        settings.permission_mode = p.clone();
    }
    let Some(claude) = knobs.env.claude_bin() else {
        bail!(
            "Claude Code is not installed (no `claude` on PATH, GHOLA_CLAUDE_BIN unset): install it with \
             `npm install -g @anthropic-ai/claude-code`, run `claude` once to log in, then `ghola start` again"
        );
    };
    if let Some(n) = &args.name {
        sitting::valid_name(n)?;
    }
    let project = project_dir(args.project.clone())?;
    let store = Store::new(&ghola::config::notes_dir());
    let line = Line {
        project: project.clone(),
        name: args.name.clone(),
    };
    line.prepare(&store)?;
    let interrupt = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupt.clone();
        // Outside a task, the terminal is in raw mode while the prompt reads and Ctrl-C arrives as a key.
        let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    }
    let mut s = Sitting {
        store,
        line,
        settings,
        update: knobs.update,
        index_dir: index_dir.to_path_buf(),
        claude_dir: claude_dir.to_path_buf(),
        model: knobs.model(model_dir),
        env: knobs.env.clone(),
        claude,
        earlier: Vec::new(),
        tasks: Vec::new(),
        continue_next: false,
        notes_changed: false,
        backend: None,
        sim: None,
        interrupt,
    };
    s.greet();
    let mut rl = rustyline::DefaultEditor::new().context("cannot open the prompt")?;
    let history = s
        .store
        .project_dir(&s.line.key())
        .join("prompt-history.txt");
    let _ = rl.load_history(&history);
    let prompt = format!("{}> ", s.line.label());
    loop {
        s.interrupt.store(false, Ordering::SeqCst);
        match rl.readline(&prompt) {
            Ok(input) => {
                let input = input.trim().to_string();
                if input.is_empty() {
                    println!("Type a task, or /help.");
                    continue;
                }
                let _ = rl.add_history_entry(&input);
                if let Some(cmd) = input.strip_prefix('/') {
                    if !s.command(cmd) {
                        break;
                    }
                } else {
                    s.task(&input);
                }
            }
            Err(ReadlineError::Interrupted) => println!("(Ctrl-C: /done leaves)"),
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("ghola: the prompt failed: {e}");
                break;
            }
        }
    }
    if let Some(dir) = history.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = rl.save_history(&history);
    let n = s.tasks.len();
    println!(
        "{n} task{}, {}",
        if n == 1 { "" } else { "s" },
        if s.notes_changed {
            "notes updated"
        } else {
            "notes unchanged"
        }
    );
    Ok(())
}

fn counts_line(store: &Store, key: &str) -> String {
    let n = store.open(key);
    let plan = n.get(Category::Plan).len();
    format!(
        "notes: {} architecture, {} decisions, {} failures, {}",
        n.get(Category::Architecture).len(),
        n.get(Category::Decisions).len(),
        n.get(Category::Failures).len(),
        if plan == 0 {
            "no plan".to_string()
        } else {
            format!("plan ({plan} steps)")
        }
    )
}

impl Sitting {
    fn snapshot(&self, update: bool) -> Option<ghola::index::snapshot::Snapshot> {
        if update
            && let Err(e) =
                ghola::notes::worker::update_index(&self.index_dir, &self.claude_dir, self.update)
        {
            eprintln!("ghola: index update failed ({e})");
        }
        ghola::index::snapshot::Snapshot::open(&self.index_dir).ok()
    }

    fn greet(&self) {
        let snap = self.snapshot(true);
        let sessions = snap.as_ref().map_or(0, |s| {
            ghola::notes::window::sessions_in(s, &self.line.project).len()
        });
        let tasks = sitting::task_logs(&self.line.tasks_dir(&self.store)).len();
        println!(
            "ghola start — {}{} — {sessions} prior session{}, {tasks} task{}; {}",
            self.line.project,
            self.line
                .name
                .as_ref()
                .map(|n| format!(" (line of work '{n}', inheriting the folder's notes)"))
                .unwrap_or_default(),
            if sessions == 1 { "" } else { "s" },
            if tasks == 1 { "" } else { "s" },
            counts_line(&self.store, &self.line.key())
        );
        println!(
            "Mode {}. After each task its conversation is sent to {} ({}) to extract notes, within {} tokens a \
             day — starting this prompt is that request; `ghola notes off` does not apply here. /help for commands.",
            self.settings.mode.name(),
            self.settings.notes_model,
            ghola::notes::worker::backend_description(&self.settings, &self.env),
            self.settings.daily_token_budget
        );
    }

    /// Runs one command; `false` ends the sitting.
    fn command(&mut self, cmd: &str) -> bool {
        let mut words = cmd.split_whitespace();
        let name = words.next().unwrap_or("");
        let rest: Vec<&str> = words.collect();
        match name {
            "done" | "quit" | "exit" => return false,
            "help" | "?" => println!("{HELP}"),
            "status" => self.status(),
            "notes" => self.notes(&rest),
            "history" => self.history(),
            "continue" => match self.earlier.last().and_then(|e| e.session_id.clone()) {
                Some(id) => {
                    self.continue_next = true;
                    println!(
                        "The next task resumes session {}.",
                        ghola::transcript::short_id(&id)
                    );
                }
                None => println!("No earlier task of this sitting to continue."),
            },
            "compact" => {
                if self.earlier.is_empty() {
                    println!("Nothing to compact yet.");
                } else {
                    let folded = self
                        .earlier
                        .iter()
                        .map(|e| format!("{} — {}", e.prompt, e.summary))
                        .collect::<Vec<_>>()
                        .join("; ");
                    let n = self.earlier.len();
                    self.earlier = vec![Earlier {
                        prompt: format!("Earlier in this sitting ({n} tasks)"),
                        summary: ghola::transcript::message::one_line(&folded, 1500),
                        session_id: None,
                    }];
                    self.continue_next = false;
                    println!("Folded {n} task(s) into one summary; the next task starts fresh.");
                }
            }
            "extract" => self.extract_again(rest.first().copied()),
            "mode" => match rest.first() {
                None => println!("Mode {}.", self.settings.mode.name()),
                Some(m) => match m.parse::<Mode>() {
                    Ok(m) => {
                        self.settings.mode = m;
                        println!("Mode {}.", m.name());
                    }
                    Err(e) => println!("{e}"),
                },
            },
            other => println!("Unknown command /{other} — /help lists them."),
        }
        true
    }

    fn status(&self) {
        let n = self.store.open(&self.line.key());
        let plan = n.get(Category::Plan);
        if plan.is_empty() {
            println!("Plan: none yet.");
        } else {
            println!("Plan:");
            plan.iter().for_each(|i| println!("  - {}", i.text));
        }
        let mut decisions = n.get(Category::Decisions).to_vec();
        decisions.sort_by(|a, b| b.date.cmp(&a.date));
        if !decisions.is_empty() {
            println!("Recent decisions:");
            decisions
                .iter()
                .take(5)
                .for_each(|i| println!("  - {}", i.text));
        }
        println!("{}", counts_line(&self.store, &self.line.key()));
    }

    fn notes(&self, rest: &[&str]) {
        let (edit, cat) = match rest {
            ["edit", c @ ..] => (true, c.first().copied()),
            [c, ..] => (false, Some(*c)),
            [] => (false, None),
        };
        let cat = match cat.map(|c| Category::parse(c).ok_or(c)) {
            Some(Err(c)) => {
                println!("Unknown category '{c}': architecture, decisions, failures or plan.");
                return;
            }
            Some(Ok(c)) => Some(c),
            None => None,
        };
        if edit {
            if let Err(e) = super::notes::edit(
                &self.store,
                &self.line.key(),
                cat,
                &ghola::settings::editor(&self.settings, &self.env),
            ) {
                println!("{e:#}");
            }
            return;
        }
        let n = self.store.open(&self.line.key());
        for c in cat.map_or_else(|| Category::ALL.to_vec(), |c| vec![c]) {
            println!("{} ({})", c.name().to_uppercase(), n.get(c).len());
            for i in n.get(c) {
                println!("  {}  {}", i.id, i.text);
            }
        }
    }

    fn history(&self) {
        if self.tasks.is_empty() {
            println!("No task yet in this sitting.");
        }
        for (_, t) in &self.tasks {
            println!(
                "{:03}. {} — {}{}{}\n     {}",
                t.number,
                t.prompt,
                if t.interrupted {
                    "stopped"
                } else if t.is_error {
                    "failed"
                } else {
                    "done"
                },
                t.duration_ms
                    .map(|d| format!(", {:.1} s", d as f64 / 1000.0))
                    .unwrap_or_default(),
                t.cost_usd.map(|c| format!(", ${c:.4}")).unwrap_or_default(),
                t.summary
            );
        }
    }

    fn task(&mut self, prompt: &str) {
        let snap = self.snapshot(false);
        let resume = if self.continue_next || self.settings.mode == Mode::Full {
            self.earlier.last().and_then(|e| e.session_id.clone())
        } else {
            None
        };
        self.continue_next = false;
        let context = sitting::context(
            &self.store,
            &self.line,
            snap.as_ref(),
            &self.earlier,
            self.settings.mode,
            self.settings.context_tokens.saturating_mul(4),
        );
        drop(snap);
        let req = TaskRequest {
            prompt: prompt.to_string(),
            cwd: PathBuf::from(&self.line.project),
            context: context.clone(),
            model: self.settings.task_model.clone(),
            resume: resume.clone(),
            permission_mode: self.settings.permission_mode.clone(),
            claude_bin: self.claude.clone(),
        };
        let started_at = chrono::Utc::now().to_rfc3339();
        self.interrupt.store(false, Ordering::SeqCst);
        let mut out = std::io::stdout();
        let outcome = task::run(
            &req,
            &mut |s| {
                match s {
                    Shown::Started { .. } => {}
                    Shown::Text(t) => {
                        let _ = writeln!(out, "{t}");
                    }
                    Shown::Tool(l) => {
                        let _ = writeln!(out, "  → {l}");
                    }
                    Shown::ToolError(l) => {
                        let _ = writeln!(out, "  ✗ {l}");
                    }
                }
                let _ = out.flush();
            },
            &self.interrupt,
        );
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                println!("Could not run Claude Code ({}): {e}", self.claude.display());
                return;
            }
        };
        let secs = outcome.duration_ms.unwrap_or(0) as f64 / 1000.0;
        if outcome.interrupted {
            println!("─ stopped after {secs:.1} s (Ctrl-C); the prompt is yours.");
        } else if outcome.is_error {
            let why = outcome
                .result
                .clone()
                .filter(|r| !r.trim().is_empty())
                .or_else(|| outcome.subtype.clone())
                .unwrap_or_else(|| outcome.stderr_tail.clone());
            println!("─ the task failed after {secs:.1} s: {why}");
            let lower = why.to_lowercase();
            if lower.contains("login") || lower.contains("api key") || lower.contains("auth") {
                println!(
                    "  Claude Code is not logged in: run `claude` and /login, then try again."
                );
            }
        } else {
            println!(
                "─ done in {secs:.1} s{}{}",
                outcome
                    .cost_usd
                    .map(|c| format!(", ${c:.4}"))
                    .unwrap_or_default(),
                outcome
                    .num_turns
                    .map(|n| format!(", {n} turn{}", if n == 1 { "" } else { "s" }))
                    .unwrap_or_default()
            );
        }
        let mut log = sitting::log_of(
            prompt,
            started_at,
            self.settings.mode,
            resume,
            context.len(),
            &outcome,
        );
        let path = match sitting::write_task_log(&self.line.tasks_dir(&self.store), &mut log) {
            Ok(p) => p,
            Err(e) => {
                println!("Could not write the task log: {e}");
                return;
            }
        };
        self.earlier.push(Earlier {
            prompt: prompt.to_string(),
            summary: log.summary.clone(),
            session_id: log.session_id.clone(),
        });
        self.tasks.push((path, log));
        let k = self.tasks.len() - 1;
        self.extract(k);
    }

    /// Extracts the notes of this sitting's task `k` and records the outcome in its log.
    fn extract(&mut self, k: usize) {
        let Some(session) = self.tasks[k].1.session_id.clone() else {
            println!("notes: nothing to extract (Claude Code reported no session).");
            return;
        };
        self.extract_session(&session, Some(k));
    }

    fn extract_session(&mut self, session: &str, k: Option<usize>) {
        if self.backend.is_none() {
            match ghola::model::choose(self.settings.notes_backend, &self.claude_dir, &self.env) {
                Ok(b) => self.backend = Some(b),
                Err(e) => {
                    println!(
                        "notes: extraction unavailable ({e}); the task is logged — /extract retries."
                    );
                    return;
                }
            }
        }
        if self.sim.is_none() {
            self.sim = Some(similarity(&self.model));
        }
        let Some(snap) = self.snapshot(true) else {
            println!("notes: the index cannot be opened; /extract retries.");
            return;
        };
        let before = sitting::fingerprint(&self.store, &self.line.key());
        let backend = self.backend.as_deref().expect("set above");
        let sim = self.sim.as_deref().expect("set above");
        let ex = ghola::notes::extract::Extractor::new(&self.store, backend, sim, &self.settings);
        let cancel = AtomicBool::new(false);
        let result = sitting::extract_task(&self.line, &snap, session, &ex, &cancel);
        let after = sitting::fingerprint(&self.store, &self.line.key());
        let record = match &result {
            Ok(outcomes) => {
                let failed = outcomes.iter().find_map(|o| match o {
                    ghola::notes::extract::Outcome::Failed { error, .. } => Some(error.clone()),
                    ghola::notes::extract::Outcome::BudgetSpent { needed, left } => Some(format!(
                        "daily token budget spent (needs about {needed}, {left} left)"
                    )),
                    _ => None,
                });
                match failed {
                    Some(e) => println!(
                        "notes: extraction failed: {e}; the task is logged — /extract retries."
                    ),
                    None => println!("notes: {}", sitting::describe_change(&before, &after)),
                }
                serde_json::to_value(outcomes).unwrap_or_default()
            }
            Err(e) => {
                println!("notes: extraction failed: {e}; the task is logged — /extract retries.");
                serde_json::json!({"error": e.to_string()})
            }
        };
        if before != after {
            self.notes_changed = true;
        }
        if let Some(k) = k {
            let (path, log) = &mut self.tasks[k];
            log.extraction = Some(record);
            let _ = sitting::update_task_log(path, log);
        }
    }

    fn extract_again(&mut self, which: Option<&str>) {
        match which {
            None => {
                if self.tasks.is_empty() {
                    println!("No task of this sitting yet; /extract N names a logged task.");
                } else {
                    self.extract(self.tasks.len() - 1);
                }
            }
            Some(n) => {
                let Ok(n) = n.parse::<u32>() else {
                    println!("/extract takes a task number (see /history).");
                    return;
                };
                let logs = sitting::task_logs(&self.line.tasks_dir(&self.store));
                match logs.iter().find(|(_, l)| l.number == n) {
                    Some((_, l)) => match l.session_id.clone() {
                        Some(s) => {
                            let k = self.tasks.iter().position(|(_, t)| t.number == n);
                            self.extract_session(&s, k);
                        }
                        None => println!("Task {n} has no Claude Code session to extract."),
                    },
                    None => println!("No task {n} in this line of work."),
                }
            }
        }
    }
}
