//! Command-line surface: argument parsing (clap) and human or JSON output. Every command is a thin adapter
//! over a library call, the same one the MCP server uses.

#[cfg(feature = "bench")]
pub mod bench;
#[cfg(feature = "bench")]
mod bench_files;
#[cfg(feature = "bench")]
mod bench_hub;
#[cfg(feature = "bench")]
mod bench_listing;
#[cfg(feature = "bench")]
mod bench_remote;
#[cfg(feature = "bench")]
mod bench_scale;
#[cfg(feature = "bench")]
mod bench_ui;
mod duncan;
mod files;
mod history;
mod hook;
mod hub;
mod knobs;
mod notes;
mod notes_extract;
mod recall;
mod remote;
mod search;
mod secrets;
mod start;
mod status;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Total recall for Claude Code: index, search and replay your Claude Code history.
#[derive(Debug, Parser)]
#[command(name = "ghola", version, about)]
pub struct Cli {
    /// Claude Code config dir (default: $CLAUDE_CONFIG_DIR, else ~/.claude).
    #[arg(long, global = true, value_name = "DIR")]
    pub claude_dir: Option<PathBuf>,
    /// Index directory (default: $GHOLA_HOME, else $XDG_CACHE_HOME/ghola, else ~/.cache/ghola).
    #[arg(long, global = true, value_name = "DIR")]
    pub index_dir: Option<PathBuf>,
    /// Folder with the embedding model's files (default: $GHOLA_MODEL_DIR, else models/ of the installation).
    #[arg(long, global = true, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
    /// More logging on stderr (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Every project with its session count, messages, last activity and branches.
    Projects {
        /// Only what was recorded on this machine (repeatable).
        #[arg(long = "machine", value_name = "NAME")]
        machines: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// The sessions of a project (default: the current directory) or of all projects.
    Sessions {
        /// Project directory (sessions started in it or below it).
        #[arg(long, value_name = "DIR", conflicts_with = "global")]
        project: Option<PathBuf>,
        /// All projects.
        #[arg(long)]
        global: bool,
        /// Only sessions active this recently: an age (90m, 12h, 3d, 2w) or a date (2026-11-01).
        #[arg(long)]
        since: Option<String>,
        /// Only what was recorded on this machine (repeatable).
        #[arg(long = "machine", value_name = "NAME")]
        machines: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// One session as a person would read it.
    Show {
        /// Session uuid, or a unique prefix of one.
        session: String,
        /// Only this compaction window (0 = before the first compaction).
        #[arg(long)]
        window: Option<u32>,
        /// Include subagent conversations.
        #[arg(long)]
        subagents: bool,
        /// Show credentials as written instead of `[REDACTED:<rule>]` (only to a terminal: never to a pipe,
        /// a file or Claude Code's Bash tool).
        #[arg(long)]
        reveal: bool,
        #[arg(long)]
        json: bool,
    },
    /// Build or update the index of this machine's Claude Code history.
    Index {
        /// Return at once if another ghola is updating the index (default: wait for it).
        #[arg(long)]
        no_wait: bool,
        /// Open and checksum every index file (readers checksum the large mapped files only when they were
        /// touched since publishing); a damaged index is set aside and rebuilt.
        #[arg(long)]
        verify: bool,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// What is indexed, how fresh, how big.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Remove sessions from the index and the archive for good (text, vectors, lexical postings, archived
    /// bytes); they stay out of later updates unless --allow-reindex.
    Forget(recall::ForgetArgs),
    /// Search past conversations (hybrid lexical + semantic ranking).
    Search(search::SearchArgs),
    /// The sessions that created, edited, read or ran a command on a file, newest first, each change with the
    /// request that led to it; with :LINE, the changes that wrote that line first.
    Files(files::FilesArgs),
    /// The credentials (keys, tokens, passwords) your history holds: per finding its session, rule and a
    /// preview, never the value. ghola shows them redacted everywhere.
    Secrets(secrets::SecretsArgs),
    /// Other machines' Claude Code histories, copied over SSH and searched with this one's.
    Remote(remote::RemoteArgs),
    /// A team hub on PostgreSQL + pgvector: share chosen projects (redacted) and search the team's history.
    Hub(hub::HubArgs),
    /// Ask the past sessions behind the top hits (duncan): each window is replayed to a model that must
    /// answer from it alone. Sends those conversations to the model provider.
    Query(duncan::QueryArgs),
    /// Project notes: what each project learned (architecture, decisions, failures, plan), extracted from past
    /// sessions (off until `ghola notes on`) and put in front of new sessions.
    Notes(notes::NotesArgs),
    /// The work loop: a prompt where each line is a task for Claude Code, with the project's notes compiled
    /// in before and extracted after.
    Start(start::StartArgs),
    /// A Claude Code hook (session-start, session-end, pre-compact): hook input on stdin, hook output on stdout.
    #[command(hide = true)]
    Hook { event: String },
    /// MCP server on stdio (what the Claude Code plugin runs). Logs go to stderr.
    Serve {
        /// Seconds between freshness checks of the Claude dir when no file watcher is available (with one,
        /// changes are picked up as they happen, debounced by 300 ms).
        #[arg(long, default_value_t = knobs::DEFAULT_POLL_SECONDS)]
        poll_seconds: u64,
    },
    /// A local web page to search and read your history: prints its address (with a token) on the first line
    /// of stdout, serves on 127.0.0.1 until stopped (Ctrl-C).
    Ui {
        /// Port on 127.0.0.1 (0: a free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Open the address in the default browser as well.
        #[arg(long)]
        open: bool,
    },
    /// Diagnostic: JSON lines `{"text": …}` on stdin, one JSON array of 384 floats per line on stdout
    /// (the first chunk of each text, as sentence-transformers would embed it).
    Embed,
    /// Print performance figures (throughput, memory) for one part of ghola.
    Bench {
        #[command(subcommand)]
        what: BenchKind,
    },
}

/// What `ghola bench` measures (built with the `bench` feature).
#[derive(Debug, Subcommand)]
#[cfg_attr(not(feature = "bench"), allow(dead_code))]
pub enum BenchKind {
    /// The index on a synthetic history: first index in two passes (time to keyword-searchable, to fully
    /// embedded), full build, no-change check, a 10-line append, bytes/message, at N/10 and N messages (hash
    /// vectors: the model's cost is `bench embed`'s). With `--history DIR`: both passes of a first index of that
    /// Claude dir, with the real model.
    Index {
        #[arg(long, default_value_t = 100_000)]
        messages: usize,
        /// Where the synthetic history and its indexes live (reused across runs).
        #[arg(long, default_value_os_t = std::env::temp_dir().join("ghola-bench"))]
        work: PathBuf,
        /// A real Claude dir (e.g. ../shared/corpus/cc-2.1.330) to index from scratch instead.
        #[arg(long, value_name = "DIR")]
        history: Option<PathBuf>,
        /// With --history: embed with hash vectors instead of the real model.
        #[arg(long, requires = "history")]
        hash_vectors: bool,
    },
    /// Search latency p50/p95 at N/10 and N messages, query embedding apart, and a cold `ghola search`.
    Search {
        #[arg(long, default_value_t = 100_000)]
        messages: usize,
        #[arg(long, default_value_os_t = std::env::temp_dir().join("ghola-bench"))]
        work: PathBuf,
    },
    /// The SessionStart hook's answer time (a fresh process, as Claude Code runs it) at N/10 and N messages,
    /// with every notes category full.
    Hook {
        #[arg(long, default_value_t = 100_000)]
        messages: usize,
        #[arg(long, default_value_os_t = std::env::temp_dir().join("ghola-bench"))]
        work: PathBuf,
    },
    /// What a person waits for in `ghola ui` at N/10 and N messages: start, first and later searches, the
    /// sessions page, a session page (real HTTP to a real `ghola ui` process).
    Ui {
        #[arg(long, default_value_t = 100_000)]
        messages: usize,
        #[arg(long, default_value_os_t = std::env::temp_dir().join("ghola-bench"))]
        work: PathBuf,
    },
    /// A remote's sync over a real SSH server (a loopback sshd that sees `--work`): the first copy of N
    /// transcript files, a sync with nothing new, one after a single append — by rsync and by plain ssh.
    Remote {
        /// `[user@]host` of the server (`GHOLA_SSH` sets the ssh command).
        #[arg(long)]
        ssh: String,
        #[arg(long)]
        port: Option<u16>,
        #[arg(long, default_value_t = 10_000)]
        files: usize,
        #[arg(long, default_value_os_t = std::env::temp_dir().join("ghola-bench"))]
        work: PathBuf,
    },
    /// The team hub against a real PostgreSQL + pgvector (the admin's URL; it invites bench_a and bench_b):
    /// push rate, team search p50/p95 under row-level security, bytes per message.
    Hub {
        /// The database owner's URL of a hub database used for nothing else.
        #[arg(long)]
        url: String,
        #[arg(long, default_value_t = 1_000_000)]
        messages: usize,
        /// Real texts (JSON lines `{"text": …}`) the messages are drawn from.
        #[arg(long, default_value = "../shared/reference/texts.jsonl")]
        texts: PathBuf,
        /// Search the rows an earlier run pushed; push nothing.
        #[arg(long)]
        search_only: bool,
    },
    /// What `ghola files` costs at N messages: the file map built by a words-only update of a synthetic history
    /// with tool calls, the answer in-process (p50/p95 over 100 files) and as a fresh process.
    Files {
        #[arg(long, default_value_t = 1_000_000)]
        messages: usize,
        #[arg(long, default_value_os_t = std::env::temp_dir().join("ghola-bench"))]
        work: PathBuf,
    },
    /// Reader throughput over the transcripts of the Claude dir (MB/s on one core).
    Read {
        /// Repeat the read for at least this many seconds.
        #[arg(long, default_value_t = 3.0)]
        secs: f64,
    },
    /// Embedding throughput (texts/s, tokens/s, peak memory) over JSON lines `{"text": …}`.
    Embed {
        /// Texts to embed (default: ../shared/reference/texts.jsonl).
        #[arg(long, default_value = "../shared/reference/texts.jsonl")]
        texts: PathBuf,
        /// Runs per set-up in this process (the best is printed), and alternating rounds of the whole `ghola embed`
        /// process and sentence-transformers (the median is printed).
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// A Python with sentence-transformers and PyTorch: embeds the same texts in the same run, side by side
        /// (`bench/embed/st_side.py`).
        #[arg(long, value_name = "PYTHON")]
        sentence_transformers: Option<PathBuf>,
    },
}

/// Logs go to stderr (stdout is reserved for output, and for the MCP protocol in `serve`).
pub fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("GHOLA_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colours only for a person at a terminal: Claude Code keeps a server's stderr in its logs as plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .try_init();
}

/// Asks `question` (with ` [y/N] ` after it) on stderr and reads the answer from stdin: true for y or yes.
fn confirm(question: &str) -> std::io::Result<bool> {
    eprint!("{question} [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// `ghola remote add … --claude-dir DIR` names the remote's Claude dir, as the command's documentation says; the
/// global `--claude-dir` (this machine's) is the same flag, so after `remote add` it is read as
/// `--remote-claude-dir`. Before `remote` it stays this machine's.
pub fn remote_claude_dir_spelling(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = args.into_iter().collect();
    let Some(add) = args
        .windows(2)
        .position(|w| w[0] == "remote" && w[1] == "add")
    else {
        return args;
    };
    for a in args.iter_mut().skip(add + 2) {
        if a == "--claude-dir" {
            *a = "--remote-claude-dir".into();
        } else if let Some(v) = a.to_str().and_then(|s| s.strip_prefix("--claude-dir=")) {
            *a = format!("--remote-claude-dir={v}").into();
        }
    }
    args
}

/// Runs one command.
pub fn run(cli: Cli) -> Result<()> {
    // What ghola writes (index, archive, notes, logs) is readable by this user alone.
    ghola::private::restrict_new_files();
    let claude_dir = ghola::config::claude_dir(cli.claude_dir.as_deref());
    let index_dir = ghola::config::index_dir(cli.index_dir.as_deref());
    let knobs = knobs::Knobs::read();
    match cli.command {
        Command::Projects { machines, json } => {
            let this = knobs.machine();
            let scope = history::MachineScope {
                this: &this,
                only: &machines,
            };
            history::projects(&claude_dir, &index_dir, scope, json)
        }
        Command::Sessions {
            project,
            global,
            since,
            machines,
            json,
        } => {
            let this = knobs.machine();
            let scope = history::MachineScope {
                this: &this,
                only: &machines,
            };
            history::sessions(&claude_dir, &index_dir, project, global, since, scope, json)
        }
        Command::Show {
            session,
            window,
            subagents,
            reveal,
            json,
        } => history::show(
            &claude_dir,
            &index_dir,
            &session,
            history::ShowOptions {
                window,
                subagents,
                reveal,
                json,
            },
        ),
        Command::Index {
            no_wait,
            verify,
            json,
        } => recall::index_cmd(
            &index_dir,
            &claude_dir,
            cli.model_dir.as_deref(),
            &knobs,
            no_wait,
            verify,
            json,
        ),
        Command::Status { json } => status::status_cmd(&index_dir, &claude_dir, &knobs, json),
        Command::Forget(args) => recall::forget_cmd(&index_dir, args),
        Command::Secrets(args) => secrets::secrets_cmd(
            &claude_dir,
            &index_dir,
            cli.model_dir.as_deref(),
            &knobs,
            args,
        ),
        Command::Remote(args) => remote::remote_cmd(
            &index_dir,
            &claude_dir,
            cli.model_dir.as_deref(),
            &knobs,
            args,
        ),
        Command::Hub(args) => hub::hub_cmd(
            &index_dir,
            &claude_dir,
            cli.model_dir.as_deref(),
            &knobs,
            args,
        ),
        Command::Files(args) => files::files_cmd(&index_dir, &claude_dir, &knobs, args),
        Command::Search(args) => search::search_cmd(
            &index_dir,
            &claude_dir,
            cli.model_dir.as_deref(),
            &knobs,
            args,
        ),
        Command::Query(args) => duncan::query_cmd(
            &index_dir,
            &claude_dir,
            cli.model_dir.as_deref(),
            &knobs,
            args,
        ),
        Command::Notes(args) => notes::notes_cmd(
            &index_dir,
            &claude_dir,
            cli.model_dir.as_deref(),
            &knobs,
            args,
        ),
        Command::Start(args) => start::start_cmd(
            &index_dir,
            &claude_dir,
            cli.model_dir.as_deref(),
            &knobs,
            args,
        ),
        Command::Hook { event } => hook::hook_cmd(
            &index_dir,
            &claude_dir,
            cli.model_dir.as_deref(),
            &knobs.env,
            &event,
        ),
        Command::Serve { poll_seconds } => {
            let project = knobs
                .env
                .project_dir
                .clone()
                .map(Ok)
                .unwrap_or_else(|| history::project_dir(None))?;
            let history = ghola::service::ServiceConfig {
                poll_seconds,
                ..knobs.history(&claude_dir, &index_dir, cli.model_dir.as_deref())
            };
            ghola::mcp::serve(ghola::mcp::ServeConfig {
                history,
                project,
                session_id: knobs.env.session_id.clone(),
                notes_dir: ghola::config::notes_dir(),
                env: knobs.env.clone(),
            })
        }
        Command::Ui { port, open } => ui(
            knobs.history(&claude_dir, &index_dir, cli.model_dir.as_deref()),
            ghola::ui::UiConfig {
                notes_dir: ghola::config::notes_dir(),
                port,
            },
            open,
        ),
        Command::Embed => embed_stdin(&knobs.model(cli.model_dir.as_deref()), knobs.embed_kernel),
        Command::Bench { what } => run_bench(what, &claude_dir, cli.model_dir.as_deref()),
    }
}

/// `ghola ui`: the address goes to stdout first (and to the browser with `--open`), then the server runs.
/// The model loads (or downloads) in the background meanwhile, and a file watcher keeps the listing fresh.
fn ui(history: ghola::service::ServiceConfig, cfg: ghola::ui::UiConfig, open: bool) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let history = ghola::service::HistoryService::new(history);
    history.load_model_in_background();
    history.watch_history();
    rt.block_on(ghola::ui::serve(history, cfg, |served| {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", served.url);
        let _ = out.flush();
        if open && let Err(e) = served.links.open_in_browser() {
            tracing::warn!("{e}; open the address above");
        }
    }))?;
    Ok(())
}

/// `ghola bench …`, in a build with the `bench` feature (the harnesses are not shipped in release builds).
#[cfg(feature = "bench")]
fn run_bench(
    what: BenchKind,
    claude_dir: &std::path::Path,
    model_dir: Option<&std::path::Path>,
) -> Result<()> {
    match what {
        BenchKind::Read { secs } => bench::read(claude_dir, secs),
        BenchKind::Index {
            history: Some(history),
            work,
            hash_vectors,
            ..
        } => bench_scale::history_bench(&history, &work, model_dir, hash_vectors),
        BenchKind::Index { messages, work, .. } => bench_scale::index_bench(&work, messages),
        BenchKind::Search { messages, work } => {
            bench_scale::search_bench(&work, messages, model_dir)
        }
        BenchKind::Hook { messages, work } => bench_scale::hook_bench(&work, messages),
        BenchKind::Ui { messages, work } => bench_ui::ui_bench(&work, messages),
        BenchKind::Files { messages, work } => bench_files::files_bench(&work, messages),
        BenchKind::Remote {
            ssh,
            port,
            files,
            work,
        } => {
            std::fs::create_dir_all(&work)?;
            bench_remote::remote_bench(
                &ssh,
                port,
                files,
                &work,
                ghola::config::Environment::read().ssh_command,
            )
        }
        BenchKind::Hub {
            url,
            messages,
            texts,
            search_only,
        } => bench_hub::hub_bench(&url, messages, &texts, search_only, model_dir),
        BenchKind::Embed {
            texts,
            rounds,
            sentence_transformers,
        } => bench::embed(model_dir, &texts, rounds, sentence_transformers.as_deref()),
    }
}

/// `ghola bench …` in a build without the benchmarks: says how to get them.
#[cfg(not(feature = "bench"))]
fn run_bench(_: BenchKind, _: &std::path::Path, _: Option<&std::path::Path>) -> Result<()> {
    anyhow::bail!(
        "this ghola was built without its benchmarks (release builds do not ship them): in a checkout, run \
         `cargo run --release --features bench -- bench …`"
    )
}

/// Peak resident memory of this process (Linux `VmHWM`), in MiB; `None` elsewhere.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Texts `ghola embed` embeds at once: enough that the batches of a group keep both cores busy to its end
/// (groups of 256 left a core idle ~20% of the time), few enough that memory stays bounded on long inputs.
const EMBED_GROUP: usize = 2048;

/// `ghola embed`: reads texts in groups of [`EMBED_GROUP`] lines.
fn embed_stdin(
    model: &ghola::embed::ModelPlaces,
    kernel: ghola::embed::KernelChoice,
) -> Result<()> {
    use anyhow::Context;
    use std::io::{BufRead, Write};
    let files = ghola::embed::resolve(model)?;
    let embedder = ghola::embed::Embedder::load_with(&files, kernel)?;
    let stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut texts = Vec::new();
    let flush = |texts: &mut Vec<String>, out: &mut dyn Write| -> Result<()> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        for v in embedder.embed(&refs)? {
            serde_json::to_writer(&mut *out, &v[..])?;
            out.write_all(b"\n")?;
        }
        texts.clear();
        Ok(())
    };
    for (n, line) in stdin.lines().enumerate() {
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(&line).with_context(|| format!("line {}: not JSON", n + 1))?;
        let text = v
            .get("text")
            .and_then(|t| t.as_str())
            .with_context(|| format!("line {}: no \"text\" string", n + 1))?;
        texts.push(text.to_string());
        if texts.len() == EMBED_GROUP {
            flush(&mut texts, &mut out)?;
        }
    }
    flush(&mut texts, &mut out)?;
    out.flush()?;
    Ok(())
}
