//! `ghola notes …`: the notes store seen from a terminal (`notes_extract.rs` is `ghola notes extract`, the one
//! subcommand that sends a window to a model).

use super::history::project_dir;
use super::knobs::Knobs;
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use ghola::notes::worker::WorkerConfig;
use ghola::notes::{Category, Store, context, item};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// `ghola notes` (alone: `show`).
#[derive(Debug, Args)]
pub struct NotesArgs {
    #[command(subcommand)]
    pub cmd: Option<NotesCmd>,
    /// Project directory (default: the current directory).
    #[arg(long, value_name = "DIR", global = true)]
    pub project: Option<PathBuf>,
    /// Only this category: architecture, decisions, failures or plan.
    #[arg(long, value_name = "C")]
    pub category: Option<String>,
    #[arg(long, global = true)]
    pub json: bool,
}

/// The notes subcommands.
#[derive(Debug, Subcommand)]
pub enum NotesCmd {
    /// The project's notes (the default).
    Show {
        #[arg(long, value_name = "C")]
        category: Option<String>,
    },
    /// Open the notes in $VISUAL / $EDITOR (one category, or all four files).
    Edit { category: Option<String> },
    /// Remove notes by id, or every note whose text contains ITEM (asks first on a terminal).
    Forget {
        item: String,
        /// Do not ask.
        #[arg(long, short)]
        yes: bool,
    },
    /// Extract notes now from this project's session windows not yet extracted (or one session). Sends them to
    /// the model provider, within the daily budget.
    Extract {
        /// Only this session (uuid).
        #[arg(long)]
        session: Option<String>,
        /// Print what would be sent and its token count; send nothing.
        #[arg(long)]
        dry_run: bool,
        /// auto (the API with ANTHROPIC_API_KEY, else `claude -p`), api or claude-code.
        #[arg(long)]
        backend: Option<String>,
        /// The session of this `ghola start` task (its number), into that line of work's notes.
        #[arg(long, value_name = "N", conflicts_with = "session")]
        task: Option<u32>,
        /// With --task: the named line of work (`ghola start NAME`).
        #[arg(long, value_name = "NAME", requires = "task")]
        line: Option<String>,
    },
    /// Per project: extraction on/off, last extraction, windows pending, items, tokens.
    Status,
    /// Every project with notes.
    List,
    /// CHILD inherits PARENT's architecture, decisions and failures (`--unlink` removes the link).
    Link {
        child: PathBuf,
        parent: Option<PathBuf>,
        #[arg(long)]
        unlink: bool,
    },
    /// Keep a project's notes but stop extracting and injecting them (`--undo` brings them back).
    Archive {
        project_dir: PathBuf,
        #[arg(long)]
        undo: bool,
    },
    /// Turn extraction on (this project, or every project with --global).
    On {
        #[arg(long)]
        global: bool,
        /// Tokens extraction may spend per day, all projects together.
        #[arg(long, value_name = "TOKENS")]
        budget: Option<u64>,
        /// The model extraction asks.
        #[arg(long)]
        model: Option<String>,
        /// auto (the API with ANTHROPIC_API_KEY, else `claude -p`), api or claude-code.
        #[arg(long)]
        backend: Option<String>,
    },
    /// Turn extraction off (this project, or the default with --global). Existing notes stay and are still
    /// injected.
    Off {
        #[arg(long)]
        global: bool,
    },
    /// Print (or write) the compiled context a session starts with.
    Context {
        /// Write it to this file (e.g. .claude/context.md, for an `@.claude/context.md` import) instead.
        #[arg(long, value_name = "PATH")]
        write: Option<PathBuf>,
        /// Bound, in tokens (about four characters each).
        #[arg(long, default_value_t = context::DEFAULT_MAX_TOKENS)]
        max_tokens: usize,
    },
    /// The extraction worker (started detached by the hooks).
    #[command(hide = true)]
    Work,
}

fn category(c: Option<&str>) -> Result<Option<Category>> {
    c.map(|c| {
        Category::parse(c).with_context(|| {
            format!("unknown category '{c}': use architecture, decisions, failures or plan")
        })
    })
    .transpose()
}

/// Runs `ghola notes …`.
pub fn notes_cmd(
    index_dir: &Path,
    claude_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &Knobs,
    args: NotesArgs,
) -> Result<()> {
    let store = Store::new(&ghola::config::notes_dir());
    let project = project_dir(args.project.clone())?;
    let json = args.json;
    let mut out = std::io::stdout().lock();
    match args.cmd.unwrap_or(NotesCmd::Show { category: None }) {
        NotesCmd::Show { category: c } => {
            let only = category(c.as_deref().or(args.category.as_deref()))?;
            show(&store, &project, only, json, &mut out)
        }
        NotesCmd::Edit { category: c } => edit(
            &store,
            &project,
            category(c.as_deref())?,
            &ghola::settings::editor(&knobs.settings, &knobs.env),
        ),
        NotesCmd::Forget { item, yes } => forget(&store, &project, &item, yes, &mut out),
        NotesCmd::Extract {
            session,
            dry_run,
            backend,
            task,
            line,
        } => {
            let (session, target) = match task {
                None => (session, None),
                Some(n) => {
                    let (s, key) = super::notes_extract::task_session(&store, &project, n, line)?;
                    (Some(s), Some(key))
                }
            };
            super::notes_extract::extract(
                &store,
                index_dir,
                claude_dir,
                model_dir,
                knobs,
                &project,
                session,
                (dry_run, backend, target),
                json,
                &mut out,
            )
        }
        NotesCmd::Status => {
            let s = ghola::notes::status(
                &store,
                std::slice::from_ref(&project),
                &knobs.settings,
                &knobs.env.settings_file,
            );
            print_status(&s, json, &mut out)
        }
        NotesCmd::List => {
            let s = ghola::notes::status(&store, &[], &knobs.settings, &knobs.env.settings_file);
            print_status(&s, json, &mut out)
        }
        NotesCmd::Link {
            child,
            parent,
            unlink,
        } => link(&store, child, parent, unlink, &mut out),
        NotesCmd::Archive {
            project_dir: p,
            undo,
        } => {
            let p = project_dir(Some(p))?;
            ghola::notes::set_archived(&store, &p, !undo)?;
            writeln!(
                out,
                "{p}: {}",
                if undo {
                    "notes active again"
                } else {
                    "archived (notes kept, neither extracted nor injected)"
                }
            )?;
            Ok(())
        }
        NotesCmd::On {
            global,
            budget,
            model: m,
            backend,
        } => turn_on(
            &store,
            (!global).then_some(project.as_str()),
            (budget, m, backend),
            knobs,
            &mut out,
        ),
        NotesCmd::Off { global } => {
            ghola::notes::set_enabled(&store, (!global).then_some(project.as_str()), false)?;
            writeln!(
                out,
                "Notes extraction is off for {}: nothing is sent. Existing notes stay and are still injected.",
                if global {
                    "every project without its own setting"
                } else {
                    &project
                }
            )?;
            Ok(())
        }
        NotesCmd::Context { write, max_tokens } => {
            compiled_context(&store, index_dir, &project, write, max_tokens, &mut out)
        }
        NotesCmd::Work => {
            let cfg = WorkerConfig {
                store,
                index_dir: index_dir.to_path_buf(),
                claude_dir: claude_dir.to_path_buf(),
                model: knobs.model(model_dir),
                env: knobs.env.clone(),
                settings: knobs.settings.clone(),
                update: knobs.update,
            };
            work(&cfg)
        }
    }
}

/// `ghola notes link CHILD PARENT` (or `--unlink`).
fn link(
    store: &Store,
    child: PathBuf,
    parent: Option<PathBuf>,
    unlink: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let child = project_dir(Some(child))?;
    let parent = match (parent, unlink) {
        (Some(p), false) => Some(project_dir(Some(p))?),
        (None, true) => None,
        (Some(_), true) => bail!("give a parent or --unlink, not both"),
        (None, false) => bail!("give the parent project (or --unlink)"),
    };
    ghola::notes::link(store, &child, parent.as_deref())?;
    match parent {
        Some(p) => writeln!(out, "{child} now inherits the notes of {p}")?,
        None => writeln!(out, "{child} no longer inherits notes")?,
    }
    Ok(())
}

/// `ghola notes on`: extraction on for `project` (every project when `None`), with the settings given
/// (budget, model, backend) written to the settings file; says where windows will be sent.
fn turn_on(
    store: &Store,
    project: Option<&str>,
    (budget, model, backend): (Option<u64>, Option<String>, Option<String>),
    knobs: &Knobs,
    out: &mut dyn Write,
) -> Result<()> {
    if let Some(b) = &backend {
        b.parse::<ghola::model::BackendChoice>()?;
    }
    ghola::notes::set_enabled(store, project, true)?;
    use ghola::settings::Value;
    let file = &knobs.env.settings_file;
    let set = |table: &str, key: &str, v: Value| ghola::settings::set(file, table, key, v);
    if let Some(b) = budget {
        set(
            "notes",
            "daily_token_budget",
            Value::Int(b.min(i64::MAX as u64) as i64),
        )?;
    }
    if let Some(m) = &model {
        set("notes", "model", Value::Str(m))?;
    }
    if let Some(b) = &backend {
        set("notes", "backend", Value::Str(b))?;
    }
    // Read again: the file just changed (the variables still override it).
    let s = Knobs::from(ghola::settings::load_from(file)?, &|n| {
        ghola::config::non_empty_env(n)
    })
    .settings;
    writeln!(
        out,
        "Notes extraction is on for {}. When a session ends, its new messages (secrets redacted) and the \
         existing notes are sent to {} through {}, within {} tokens a day. Sessions that ended before now \
         are extracted only with `ghola notes extract`. Turn off with `ghola notes off{}`.",
        project.unwrap_or("every project"),
        s.notes_model,
        ghola::notes::worker::backend_description(&s, &knobs.env),
        s.daily_token_budget,
        if project.is_none() { " --global" } else { "" }
    )?;
    Ok(())
}

/// `ghola notes context`: the context a session of `project` starts with, printed or written to `write`.
fn compiled_context(
    store: &Store,
    index_dir: &Path,
    project: &str,
    write: Option<PathBuf>,
    max_tokens: usize,
    out: &mut dyn Write,
) -> Result<()> {
    let snap = ghola::index::snapshot::Snapshot::open(index_dir).ok();
    let text = context::compile_for(
        store,
        &store.open(project),
        project,
        snap.as_ref(),
        None,
        max_tokens.saturating_mul(4),
    );
    match write {
        Some(path) => {
            ghola::notes::store::write_atomic(&path, text.as_bytes())?;
            eprintln!(
                "ghola: wrote {} ({} characters)",
                path.display(),
                text.len()
            );
        }
        None => out.write_all(text.as_bytes())?,
    }
    Ok(())
}

/// `ghola notes work`: the detached worker's run (hooks start it).
fn work(cfg: &WorkerConfig) -> Result<()> {
    let cancel = std::sync::atomic::AtomicBool::new(false);
    match ghola::notes::worker::work(cfg, &cancel)? {
        None => eprintln!("ghola: another notes worker is running"),
        Some(r) => eprintln!(
            "ghola: notes worker {}: {}",
            chrono::Utc::now().to_rfc3339(),
            serde_json::to_string(&r)?
        ),
    }
    Ok(())
}

fn show(
    store: &Store,
    project: &str,
    only: Option<Category>,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let n = store.open(project);
    let cats: Vec<Category> = only.map_or_else(|| Category::ALL.to_vec(), |c| vec![c]);
    if json {
        let v = serde_json::json!({
            "project": n.meta.project,
            "folder": n.dir.display().to_string(),
            "categories": cats.iter().map(|c| (c.name().to_string(), serde_json::to_value(n.get(*c)).unwrap_or_default())).collect::<serde_json::Map<_, _>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    if n.is_empty() {
        writeln!(
            out,
            "No notes for {project} yet ({}).{}",
            n.dir.display(),
            if store.enabled(&n.meta) {
                ""
            } else {
                " Extraction is off: `ghola notes on` to start, or write them yourself with `ghola notes edit`."
            }
        )?;
        return Ok(());
    }
    writeln!(out, "Notes for {project} ({})", n.dir.display())?;
    for c in cats {
        let items = n.get(c);
        writeln!(out, "\n{} ({})", c.name().to_uppercase(), items.len())?;
        for i in items {
            writeln!(out, "  {}  {}", i.id, i.text.replace('\n', "\n           "))?;
        }
    }
    Ok(())
}

/// `ghola notes edit`: opens the project's notes files (one category, or all four) in `editor`.
pub fn edit(store: &Store, project: &str, only: Option<Category>, editor: &str) -> Result<()> {
    let n = store.open(project);
    std::fs::create_dir_all(&n.dir)?;
    let cats: Vec<Category> = only.map_or_else(|| Category::ALL.to_vec(), |c| vec![c]);
    let mut files = Vec::new();
    for c in cats {
        let path = n.dir.join(c.file_name());
        if !path.exists() {
            ghola::notes::store::write_atomic(
                &path,
                item::render(c, project, n.get(c)).as_bytes(),
            )?;
        }
        files.push(path);
    }
    if !n.dir.join("meta.json").exists() {
        n.save_meta()?;
    }
    // The editor may carry arguments (`code --wait`): let the shell split them.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$@\""))
        .arg("sh")
        .args(&files)
        .status()
        .with_context(|| format!("cannot run the editor ({editor})"))?;
    if !status.success() {
        bail!("the editor ({editor}) exited with {status}");
    }
    let after = store.open(project);
    if after.repaired > 0 {
        eprintln!(
            "ghola: {} note(s) without a provenance comment got a new id (written back on the next change)",
            after.repaired
        );
    }
    Ok(())
}

fn forget(store: &Store, project: &str, what: &str, yes: bool, out: &mut dyn Write) -> Result<()> {
    let n = store.open(project);
    let found = ghola::notes::find(&n, what);
    if found.is_empty() {
        bail!("no note of {project} has the id or contains '{what}' (see `ghola notes show`)");
    }
    for (c, i) in &found {
        writeln!(out, "  {} ({})  {}", i.id, c.name(), i.text)?;
    }
    if !yes
        && std::io::stdin().is_terminal()
        && !super::confirm(&format!("Forget {} note(s)?", found.len()))?
    {
        writeln!(out, "Nothing forgotten.")?;
        return Ok(());
    }
    let ids: Vec<String> = found.iter().map(|(_, i)| i.id.clone()).collect();
    let gone = ghola::notes::forget(store, project, &ids)?;
    writeln!(
        out,
        "Forgot {} note(s) (recorded in the notes log).",
        gone.len()
    )?;
    Ok(())
}

fn print_status(s: &ghola::notes::NotesStatus, json: bool, out: &mut dyn Write) -> Result<()> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(s)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "notes dir {}; settings {}; extraction {} by default; model {}; {} of {} tokens spent today{}{}",
        s.notes_dir,
        s.settings_file,
        if s.enabled_by_default { "on" } else { "off" },
        s.model,
        s.tokens_spent_today,
        s.daily_token_budget,
        if s.worker_running {
            "; worker running"
        } else {
            ""
        },
        if s.queued_sessions > 0 {
            format!("; {} session(s) queued", s.queued_sessions)
        } else {
            String::new()
        }
    )?;
    if s.projects.is_empty() {
        writeln!(out, "No project has notes yet.")?;
    }
    for p in &s.projects {
        writeln!(
            out,
            "\n{}{}{}\n  extraction {}; last {}; {} window(s) extracted, {} pending\n  items: {}\n  tokens: {} today, {} in all\n  files: {}",
            p.project,
            if p.archived { " (archived)" } else { "" },
            p.parent
                .as_ref()
                .map(|x| format!(" (inherits {x})"))
                .unwrap_or_default(),
            if p.enabled { "on" } else { "off" },
            p.last_extraction.as_deref().unwrap_or("never"),
            p.windows_extracted,
            p.windows_pending,
            p.items
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            p.tokens_today,
            p.tokens_total,
            p.folder
        )?;
        for f in &p.failures {
            writeln!(out, "  failed: {f}")?;
        }
    }
    Ok(())
}
