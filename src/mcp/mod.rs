//! `ghola serve`: the MCP server on stdio (rmcp). Each tool is a thin adapter over the library call the CLI
//! uses. The server answers at once: the model and the index update load in the background, searches run on the
//! published index meanwhile (lexical-only until the model is loaded), and a background loop keeps the index
//! fresh. Logs go to stderr; stdout is the protocol.

use crate::notes;
use crate::replay::{self, Mode, QueryRequest, route::RouteContext};
use crate::search;
use crate::service::{HistoryService, ServiceConfig};
use crate::transcript::catalog;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ProgressNotificationParam, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

mod args;
mod page;
mod recall;

pub use args::{BrowserArgs, DuncanArgs, ListArgs, NotesArgs, PageArgs, SearchArgs, SessionArgs};

/// Where the server finds things, and who is calling.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The history, the index and the model, as the service keeps them.
    pub history: ServiceConfig,
    /// The calling project: `CLAUDE_PROJECT_DIR`, else the server's cwd.
    pub project: String,
    /// The calling session (`CLAUDE_CODE_SESSION_ID`): its latest window is left out of results.
    pub session_id: Option<String>,
    /// Where the project notes are (the notes tool reads them).
    pub notes_dir: PathBuf,
    /// The environment read at the top (duncan's backend: the API key or the `claude` CLI; its query log).
    pub env: crate::config::Environment,
}

/// Shared state of the server: who calls, and the history service every tool asks.
#[derive(Clone)]
pub struct GholaServer {
    cfg: Arc<ServeConfig>,
    history: Arc<HistoryService>,
    /// The address of the history browser once `open_history_browser` started it (it lives as long as the
    /// server).
    browser: Arc<tokio::sync::Mutex<Option<crate::ui::Links>>>,
}

fn text_result(s: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s)])
}

fn error_result(s: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(s.into())])
}

fn non_negative(v: Option<i64>, name: &str, default: usize) -> Result<usize, String> {
    match v {
        None => Ok(default),
        Some(n) if n < 0 => Err(format!("{name} must not be negative (got {n})")),
        Some(n) => Ok(n as usize),
    }
}

/// The result of a tool body run with `spawn_blocking`: its text, its error as a tool error, or the task's
/// failure.
fn blocking_result(r: Result<Result<String, String>, tokio::task::JoinError>) -> CallToolResult {
    match r {
        Ok(Ok(s)) => text_result(s),
        Ok(Err(e)) => error_result(e),
        Err(e) => error_result(e.to_string()),
    }
}

/// A JSON listing under the MCP output budget: its page of `list` items (from `offset`) is cut short, and says
/// so, where the whole does not fit (the search response bounds itself).
fn bounded(v: serde_json::Value, list: &str, offset: usize) -> String {
    page::fit(v, list, offset, search::response::RESPONSE_CHARS)
}

/// duncan's readable report (text, not JSON) under the MCP output budget, cut at a line.
fn bounded_text(s: String) -> String {
    let limit = search::response::RESPONSE_CHARS - 100;
    if s.chars().count() <= limit {
        return s;
    }
    let cut: String = s.chars().take(limit).collect();
    let at = cut.rfind('\n').unwrap_or(cut.len());
    format!(
        "{}\n… (the rest cut to stay under the output limit; ask for fewer windows with limit/offset)",
        &cut[..at]
    )
}

impl GholaServer {
    /// Validates duncan_query's arguments into a request.
    fn duncan_request(&self, a: DuncanArgs) -> Result<QueryRequest, String> {
        let mut req = QueryRequest::new(&a.question);
        if let Some(m) = &a.mode {
            req.mode = m
                .parse()
                .map_err(|e: crate::config::UnknownName| e.to_string())?;
        }
        req.global = match a.scope.as_deref().unwrap_or("project") {
            "project" => false,
            "global" => true,
            other => {
                return Err(format!(
                    "scope must be \"project\" or \"global\" (got {other:?})"
                ));
            }
        };
        if req.mode == Mode::Global {
            req.global = true;
        }
        req.project = Some(a.project.unwrap_or_else(|| self.cfg.project.clone()));
        req.session_id = a.session_id;
        req.window = a
            .window
            .map(|w| {
                u32::try_from(w)
                    .map_err(|_| format!("window must be a small non-negative number (got {w})"))
            })
            .transpose()?;
        req.git_branch = a.git_branch;
        req.limit = non_negative(a.limit, "limit", req.limit)?;
        req.offset = non_negative(a.offset, "offset", 0)?;
        req.copies = non_negative(a.copies, "copies", req.copies)?;
        req.batch_size = non_negative(a.batch_size, "batch_size", req.batch_size)?;
        req.include_subagents = a.include_subagents.unwrap_or(true);
        req.model = a.model.filter(|m| !m.trim().is_empty());
        req.validate().map_err(|e| e.to_string())?;
        Ok(req)
    }
}

#[tool_router]
impl GholaServer {
    /// Creates the server and starts the background model load and index freshness loop.
    pub fn new(cfg: ServeConfig) -> Self {
        let history = HistoryService::new(cfg.history.clone());
        history.keep_fresh();
        history.keep_remotes_fresh();
        history.keep_hub_pushed();
        Self {
            cfg: Arc::new(cfg),
            history,
            browser: Arc::new(tokio::sync::Mutex::new(None)),
        }
    }

    /// The machines a listing tool was asked for (checked), this machine's name, and whether the history holds
    /// more than one machine (then rows name theirs).
    fn machine_scope(
        &self,
        asked: Option<Vec<String>>,
    ) -> Result<(Vec<String>, String, bool), String> {
        let machines = self
            .history
            .known_machines(&asked.unwrap_or_default(), "machines")
            .map_err(|e| e.to_string())?;
        let several = self.history.machines().len() > 1;
        Ok((machines, self.history.config().machine.clone(), several))
    }

    /// Starts `ui::serve` on this server's runtime with its history service (its model, listing and open index);
    /// returns the address once the port is bound.
    async fn start_browser(&self) -> Result<crate::ui::Links, String> {
        let cfg = crate::ui::UiConfig {
            notes_dir: self.cfg.notes_dir.clone(),
            port: 0,
        };
        let (tx, rx) = tokio::sync::oneshot::channel::<crate::ui::Links>();
        let history = self.history.clone();
        tokio::spawn(async move {
            let served = crate::ui::serve(history, cfg, move |served| {
                let _ = tx.send(served.links);
            })
            .await;
            if let Err(e) = served {
                tracing::warn!("the history browser stopped: {e}");
            }
        });
        match tokio::time::timeout(Duration::from_secs(10), rx).await {
            Ok(Ok(links)) => Ok(links),
            Ok(Err(_)) => Err("it could not bind a port on 127.0.0.1".into()),
            Err(_) => Err("it did not answer within 10 s".into()),
        }
    }

    #[tool(
        description = "Search this project's past Claude Code conversations (all earlier sessions, including \
        parts lost to compaction) for what was said, decided, tried or fixed. Hybrid keyword + semantic ranking; \
        returns compact text: per hit a header (date, project, branch, session and window, score, hit id) and the \
        lines around it, the hit marked with \">\". Read more around a hit with get_session_detail(session_id, \
        around=<hit>). group_by=\"session\" lists the sessions about the query first; since=\"3d\" keeps recent \
        ones; a time named in the query (\"in March 2025\", \"yesterday\") ranks what was said then first; \
        session_id=\"current\" searches what compaction took from this session. Use it when the user \
        refers to earlier work, or before re-deriving something that was probably discussed before."
    )]
    async fn search_project_history(
        &self,
        Parameters(a): Parameters<SearchArgs>,
    ) -> CallToolResult {
        self.run_search(a, false).await
    }

    #[tool(
        description = "Search past Claude Code conversations across ALL projects on this machine (same \
        parameters and results as search_project_history, without the project filter)."
    )]
    async fn search_global_history(&self, Parameters(a): Parameters<SearchArgs>) -> CallToolResult {
        self.run_search(a, true).await
    }

    #[tool(
        description = "Read one past Claude Code session (or one compaction window of it) as a conversation, \
        paged; use it to follow a search hit. session_id is a uuid or a unique prefix from a search result. With \
        around=<hit> (a result's hit id) it returns the messages before and after that hit, as text: more \
        context without searching again."
    )]
    async fn get_session_detail(&self, Parameters(a): Parameters<SessionArgs>) -> CallToolResult {
        let me = self.clone();
        blocking_result(tokio::task::spawn_blocking(move || me.session_detail(a)).await)
    }

    #[tool(
        description = "Ask past Claude Code sessions a question they can answer: each chosen session window \
        (by default the ones behind the top search hits) is replayed to a model that must answer from that \
        conversation alone, and the windows come back with hasContext first. Use it when search snippets are \
        not enough (\"what exactly did we decide about X, and why?\"). It SENDS THE SELECTED PAST \
        CONVERSATIONS TO THE MODEL PROVIDER (the Anthropic API with ANTHROPIC_API_KEY, else the user's Claude \
        Code login) and costs tokens; prefer a search first."
    )]
    async fn duncan_query(
        &self,
        Parameters(a): Parameters<DuncanArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let req = match self.duncan_request(a) {
            Ok(r) => r,
            Err(e) => return error_result(e),
        };
        let backend = match crate::model::choose(
            Default::default(),
            &self.history.config().claude_dir,
            &self.cfg.env,
        ) {
            Ok(b) => b,
            Err(e) => return error_result(e.to_string()),
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, usize, String)>();
        // One progress notification per finished window, when the client asked for progress.
        let forward = ctx.meta.get_progress_token().map(|token| {
            let peer = ctx.peer.clone();
            tokio::spawn(async move {
                while let Some((done, total, message)) = rx.recv().await {
                    let p = ProgressNotificationParam::new(token.clone(), done as f64)
                        .with_total(total as f64)
                        .with_message(message);
                    let _ = peer.notify_progress(p).await;
                }
            })
        });
        let (me, flag) = (self.clone(), cancel.clone());
        let work = tokio::task::spawn_blocking(move || {
            // Mode "search" routes through the index: like a search, it waits for the first pass.
            let h = &me.history;
            h.wait_for_first_pass(crate::service::FIRST_PASS_WAIT);
            // A teammate's session (from a team hub hit): replayed from its redacted text.
            let also = h.hub_replay_files(req.session_id.as_deref());
            let ctx = RouteContext {
                claude_dir: &h.config().claude_dir,
                snapshots: h.snapshots(),
                log: me.cfg.env.duncan_log.as_deref(),
                embedder: h.embedder(),
                calling_session: me.cfg.session_id.as_deref(),
                current_project: Some(&me.cfg.project),
                sources: h.sources(),
                also: &also,
            };
            replay::query(
                &req,
                &ctx,
                backend.as_ref(),
                &flag,
                &mut |r, done, total| {
                    let _ = tx.send((
                        done,
                        total,
                        format!(
                            "session {} window {}: {}",
                            r.session_id,
                            r.window,
                            r.status()
                        ),
                    ));
                },
            )
        });
        tokio::select! {
            r = work => {
                // Every progress notification goes out before the result.
                if let Some(f) = forward {
                    let _ = f.await;
                }
                match r {
                    Ok(Ok(report)) => text_result(bounded_text(report.render())),
                    Ok(Err(e)) => error_result(e.to_string()),
                    Err(e) => error_result(e.to_string()),
                }
            }
            _ = ctx.ct.cancelled() => {
                cancel.store(true, Ordering::SeqCst);
                error_result("cancelled")
            }
        }
    }

    #[tool(
        description = "Why is this code like this? The past Claude Code sessions that created, edited, read or \
        ran a command on a file, newest first: per session its id, date and title, and per change the user's \
        request that led to it and the change itself (old → new, cut short), marked when it failed or was undone \
        later. With lines (\"40\" or \"40-52\" of the file as it is now) the changes that wrote those lines \
        come first. Call it before changing code you did not write in this session; then ask a listed session \
        why with duncan_query (mode \"session\", its session_id). Local; nothing is sent anywhere."
    )]
    async fn file_history(&self, Parameters(a): Parameters<args::FileArgs>) -> CallToolResult {
        let me = self.clone();
        let r = tokio::task::spawn_blocking(move || me.file_history_text(a)).await;
        blocking_result(r)
    }

    #[tool(
        description = "Open ghola's history browser for the user: a local web page (this machine only) where \
        they can search every past Claude Code session as they type, read sessions as conversations, see and \
        edit each project's notes and see or forget what ghola keeps. Call it when the user asks to browse, see \
        or manage their history themselves. By default opens it in their browser; open=false returns a link to \
        give them instead, which works once, within a minute."
    )]
    async fn open_history_browser(&self, Parameters(a): Parameters<BrowserArgs>) -> CallToolResult {
        let mut running = self.browser.lock().await;
        let links = match running.as_ref() {
            Some(links) => links.clone(),
            None => match self.start_browser().await {
                Ok(links) => {
                    *running = Some(links.clone());
                    links
                }
                Err(e) => return error_result(format!("the history browser did not start: {e}")),
            },
        };
        drop(running);
        if a.open.unwrap_or(true) {
            match links.open_in_browser() {
                Ok(_) => text_result(
                    "Opened ghola's history browser in the user's browser (on 127.0.0.1 only, while this Claude \
                     Code session runs). Call this again for a fresh link if they need one."
                        .to_string(),
                ),
                Err(e) => text_result(format!(
                    "{e}. Give the user this link to open within a minute (it works once): {}",
                    links.one_time()
                )),
            }
        } else {
            text_result(format!(
                "ghola's history browser: {}\nThe link works once, within a minute, on this machine only; call this \
                 again for a new one.",
                links.one_time()
            ))
        }
    }

    #[tool(
        description = "Read this project's notes: what earlier sessions established about its architecture \
        (patterns, conventions), decisions (with reasons), failures (dead ends, errors met) and current plan. A \
        session starts with a trimmed summary of them; call this for the full list of a category, each note \
        with its id, date and the session it came from. Local files only; nothing is sent anywhere."
    )]
    async fn project_notes(&self, Parameters(a): Parameters<NotesArgs>) -> CallToolResult {
        let cfg = self.cfg.clone();
        let r = tokio::task::spawn_blocking(move || -> Result<String, String> {
            let offset = non_negative(a.offset, "offset", 0)?;
            let limit =
                non_negative(a.limit, "limit", args::NOTES_PAGE)?.clamp(1, args::MAX_NOTES_PAGE);
            let categories = match a.category.as_deref() {
                None => notes::Category::ALL.to_vec(),
                Some(c) => vec![notes::Category::parse(c).ok_or_else(|| {
                    format!(
                        "category must be architecture, decisions, failures or plan (got {c:?})"
                    )
                })?],
            };
            let project = a.project.unwrap_or_else(|| cfg.project.clone());
            let store = notes::Store::new(&cfg.notes_dir);
            let n = store.open(&project);
            let all: Vec<serde_json::Value> = categories
                .iter()
                .flat_map(|c| {
                    n.get(*c).iter().map(move |i| {
                        serde_json::json!({"category": c.name(), "id": i.id,
                            "text": crate::secrets::redact(&i.text),
                            "date": i.date, "session": i.session, "window": i.window})
                    })
                })
                .collect();
            let total = all.len();
            let page: Vec<_> = all.into_iter().skip(offset).take(limit).collect();
            let v = serde_json::json!({
                "project": project, "notes": page, "total": total, "offset": offset,
                "has_more": offset + limit < total,
                "extraction": if store.enabled(&n.meta) { "on" } else { "off" },
                "parent": n.meta.parent,
                "files": n.dir.display().to_string(),
            });
            Ok(bounded(v, "notes", offset))
        })
        .await;
        blocking_result(r)
    }

    #[tool(
        description = "List every project with past Claude Code sessions on this machine: session count, \
        message count, last activity and git branches."
    )]
    async fn duncan_projects(&self, Parameters(a): Parameters<PageArgs>) -> CallToolResult {
        let me = self.clone();
        let r = tokio::task::spawn_blocking(move || -> Result<String, String> {
            let offset = non_negative(a.offset, "offset", 0)?;
            let limit = non_negative(a.limit, "limit", args::PROJECTS_PAGE)?
                .clamp(1, args::MAX_PROJECTS_PAGE);
            let (machines, this, several) = me.machine_scope(a.machines)?;
            let held = me.history.listing();
            let all = if machines.is_empty() {
                held.projects()
            } else {
                let mut l = (*held).clone();
                l.retain_machines(|m| machines.iter().any(|x| x == m.unwrap_or(&this)));
                l.projects()
            };
            let total = all.len();
            let page: Vec<serde_json::Value> = all
                .into_iter()
                .skip(offset)
                .take(limit)
                .map(|p| {
                    let mut v = serde_json::to_value(&p).unwrap_or_default();
                    if several {
                        v["machines"] = serde_json::json!(
                            p.machines
                                .iter()
                                .map(|m| m.as_deref().unwrap_or(&this))
                                .collect::<Vec<_>>()
                        );
                    }
                    v
                })
                .collect();
            let v = serde_json::json!({"projects": page, "total": total, "offset": offset,
                "has_more": offset + limit < total});
            Ok(bounded(v, "projects", offset))
        })
        .await;
        blocking_result(r)
    }

    #[tool(
        description = "List past Claude Code sessions, newest first, with title, time range, message and \
        window counts: mode \"project\" (default, the current project) or \"global\"; since=\"3d\" (or a date) \
        keeps the sessions active since then; machines=[…] keeps those recorded on the named machines."
    )]
    async fn duncan_list_sessions(&self, Parameters(a): Parameters<ListArgs>) -> CallToolResult {
        let me = self.clone();
        let r = tokio::task::spawn_blocking(move || -> Result<String, String> {
            let offset = non_negative(a.offset, "offset", 0)?;
            let limit = non_negative(a.limit, "limit", args::SESSIONS_PAGE)?
                .clamp(1, args::MAX_SESSIONS_PAGE);
            let project = match a.mode.as_deref().unwrap_or("project") {
                "project" => Some(a.project.unwrap_or_else(|| me.cfg.project.clone())),
                "global" => None,
                other => {
                    return Err(format!(
                        "mode must be \"project\" or \"global\" (got {other:?})"
                    ));
                }
            };
            let since = a
                .since
                .as_deref()
                .map(|s| search::parse_since(s, "since", chrono::Utc::now()))
                .transpose()
                .map_err(|e| e.to_string())?;
            let (machines, this, several) = me.machine_scope(a.machines)?;
            let (page, total) = {
                let l = me.history.listing();
                let mut list = l.sessions_in(project.as_deref());
                if let Some(since) = since {
                    list.retain(|s| s.active_since(since));
                }
                if !machines.is_empty() {
                    list.retain(|s| machines.contains(s.machine.as_ref().unwrap_or(&this)));
                }
                let page: Vec<catalog::SessionSummary> = list
                    .iter()
                    .skip(offset)
                    .take(limit)
                    .map(|s| {
                        let mut s = (*s).clone();
                        // Sessions name their machine once there is more than one.
                        if several && s.machine.is_none() {
                            s.machine = Some(this.clone());
                        }
                        s
                    })
                    .collect();
                (page, list.len())
            };
            let v = serde_json::json!({"sessions": page, "total": total, "offset": offset,
                "has_more": offset + limit < total});
            Ok(bounded(v, "sessions", offset))
        })
        .await;
        blocking_result(r)
    }
}

#[tool_handler]
impl ServerHandler for GholaServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ghola", env!("CARGO_PKG_VERSION")))
            .with_instructions(
            "ghola searches this machine's past Claude Code conversations. Use search_project_history when the \
             user refers to earlier work or after a compaction lost detail; get_session_detail to read a hit's \
             session; duncan_query to ask the sessions behind the hits a question (it sends them to the model \
             provider); project_notes for what earlier sessions established about this project.",
        )
    }
}

/// Runs the server on stdin/stdout until the client goes away.
pub fn serve(cfg: ServeConfig) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let service = GholaServer::new(cfg)
            .serve(rmcp::transport::stdio())
            .await?;
        service.waiting().await?;
        Ok(())
    })
}
