//! `ghola ui`: the history in a browser — search, the sessions of every project, a session read as a
//! conversation — served on loopback from the binary.
//!
//! axum on the tokio runtime the MCP server already uses; pages are rendered here as plain HTML (`pages.rs`), so
//! there is no build step and nothing is fetched from the internet. Searches run on the same index, snapshot
//! and ranking as `ghola search` (by words until the model has loaded in the background, then by words and
//! meaning); sessions are read from the transcripts, or from the archive when Claude Code deleted them.
//! `guard.rs` says who may ask.

pub mod guard;
pub mod pages;

use crate::embed::{Embedder, KernelChoice};
use crate::index::snapshot::Snapshot;
use crate::search::{self, SearchParams};
use crate::transcript::catalog::{self, Listing};
use axum::Router;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// Where the history and the index are, and how to serve them.
#[derive(Debug, Clone)]
pub struct UiConfig {
    pub claude_dir: PathBuf,
    pub index_dir: PathBuf,
    pub model_dir: Option<PathBuf>,
    /// Bytes the in-memory search set may use.
    pub memory_limit: u64,
    /// The embedding kernel to load the model on.
    pub embed_kernel: KernelChoice,
    /// The port on 127.0.0.1 (0: a free one).
    pub port: u16,
}

/// What the pages share.
struct App {
    cfg: UiConfig,
    /// Loaded in the background; searches go by words until it is here.
    embedder: OnceLock<Embedder>,
}

/// Results per search page.
const RESULTS: usize = 20;

/// Binds 127.0.0.1, calls `ready` with the address to open (token included), then serves until the process
/// ends. The model loads on a thread of its own meanwhile.
pub async fn serve(cfg: UiConfig, ready: impl FnOnce(&str)) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", cfg.port)).await?;
    let port = listener.local_addr()?.port();
    let guard = Arc::new(guard::Guard {
        token: guard::new_token(),
        port,
    });
    ready(&format!("http://127.0.0.1:{port}/?token={}", guard.token));
    let app = Arc::new(App {
        cfg,
        embedder: OnceLock::new(),
    });
    {
        let app = app.clone();
        std::thread::spawn(move || {
            match crate::embed::resolve(app.cfg.model_dir.as_deref())
                .and_then(|f| Embedder::load_with(&f, app.cfg.embed_kernel))
            {
                Ok(e) => {
                    let _ = app.embedder.set(e);
                }
                Err(e) => tracing::warn!("searching by words only: {e}"),
            }
        });
    }
    let router = Router::new()
        .route("/", get(home))
        .route("/search", get(search_page))
        .route("/projects", get(projects_page))
        .route("/session/{id}", get(session_page))
        .with_state(app)
        .layer(axum::middleware::from_fn_with_state(guard, guard::check));
    axum::serve(listener, router).await
}

async fn home(State(app): State<Arc<App>>) -> Response {
    search_page(State(app), Query(SearchQuery::default())).await
}

/// `/search?q=…&project=…&since=3d&subagents=0`.
#[derive(Debug, Default, serde::Deserialize)]
struct SearchQuery {
    #[serde(default)]
    q: String,
    project: Option<String>,
    /// `90m`, `12h`, `3d`, `2w` or a date, as `ghola search --since`.
    since: Option<String>,
    subagents: Option<String>,
}

async fn search_page(State(app): State<Arc<App>>, Query(q): Query<SearchQuery>) -> Response {
    let query = q.q.trim().to_string();
    if query.is_empty() {
        return Html(pages::layout(
            "search",
            "",
            "<p>Search every session ghola keeps.</p>",
        ))
        .into_response();
    }
    let (project, since) = (
        q.project.clone().unwrap_or_default(),
        q.since.clone().unwrap_or_default(),
    );
    let filters = pages::Filters {
        query: &query,
        project: &project,
        since: &since,
    };
    let run = {
        let (app, query) = (app.clone(), query.clone());
        move || -> Result<String, String> {
            let mut p = SearchParams::new(&query);
            p.max_results = RESULTS;
            p.context = 2;
            p.project = q.project.filter(|p| !p.trim().is_empty());
            p.include_subagents = q.subagents.as_deref() != Some("0");
            if let Some(s) = q.since.as_deref().filter(|s| !s.trim().is_empty()) {
                p.since(
                    search::parse_since(s, "since", chrono::Utc::now())
                        .map_err(|e| e.to_string())?,
                );
            }
            let snap = Snapshot::shared(&app.cfg.index_dir, app.cfg.memory_limit)
                .map_err(|e| format!("the index could not be opened: {e}. Run `ghola index`."))?;
            let resp = search::search(&snap, app.embedder.get(), &p).map_err(|e| e.to_string())?;
            Ok(pages::search(&resp, &search::query_terms(&query)))
        }
    };
    match tokio::task::spawn_blocking(run).await {
        Ok(Ok(body)) => Html(pages::layout_with(&query, &filters, &body)).into_response(),
        Ok(Err(e)) => page_error(StatusCode::BAD_REQUEST, &query, &e),
        Err(e) => page_error(StatusCode::INTERNAL_SERVER_ERROR, &query, &e.to_string()),
    }
}

async fn projects_page(State(app): State<Arc<App>>) -> Response {
    let list = tokio::task::spawn_blocking(move || listing(&app)).await;
    match list {
        Ok(l) => Html(pages::layout("sessions", "", &pages::projects(&l.sessions))).into_response(),
        Err(e) => page_error(StatusCode::INTERNAL_SERVER_ERROR, "", &e.to_string()),
    }
}

async fn session_page(State(app): State<Arc<App>>, UrlPath(id): UrlPath<String>) -> Response {
    let run = move || -> Result<String, String> {
        let sources = crate::index::archive::sources(&app.cfg.index_dir);
        let found = sources.discover_all(&app.cfg.claude_dir);
        let full = crate::transcript::resolve_session_id(
            &id,
            found.sessions.iter().map(|s| s.session_id.as_str()),
        )
        .map_err(|e| e.to_string())?
        .to_string();
        let files = found
            .sessions
            .iter()
            .find(|s| s.session_id == full)
            .ok_or("the session vanished while it was read")?;
        let s = crate::transcript::load_session(&sources, files);
        Ok(pages::layout(
            s.title.as_deref().unwrap_or(&s.session_id),
            "",
            &pages::session(&s),
        ))
    };
    match tokio::task::spawn_blocking(run).await {
        Ok(Ok(page)) => Html(page).into_response(),
        Ok(Err(e)) => page_error(StatusCode::NOT_FOUND, "", &e),
        Err(e) => page_error(StatusCode::INTERNAL_SERVER_ERROR, "", &e.to_string()),
    }
}

/// The listing, through the cache in the index folder (as `ghola sessions`).
fn listing(app: &App) -> Listing {
    Listing::refresh(
        &crate::index::archive::sources(&app.cfg.index_dir),
        &app.cfg.claude_dir,
        Some(&app.cfg.index_dir.join(catalog::CACHE_FILE)),
        None,
    )
}

fn page_error(status: StatusCode, query: &str, message: &str) -> Response {
    (
        status,
        Html(pages::layout(
            "error",
            query,
            &format!("<p class=note>{}</p>", pages::escape(message)),
        )),
    )
        .into_response()
}
