//! `ghola ui`: the history in a browser — search as you type, the sessions of every project on a timeline,
//! a session read as a conversation, the notes, the archive — served on loopback from the binary.
//!
//! axum on the tokio runtime the MCP server already uses; pages are whole HTML rendered here, so there is no
//! build step and nothing is fetched from the internet. Searches run on the same index, snapshot and ranking
//! as `ghola search` (by words until the model has loaded in the background, then by words and meaning);
//! sessions are read from the transcripts, or from the archive when Claude Code deleted them; notes are edited
//! and sessions forgotten through the same functions as `ghola notes` and `ghola forget`.
//!
//! - [`guard`] who may ask (loopback, token, Host, CSRF); [`entry`] the way in, to this server's own host
//!   name; `routes` what each address answers;
//! - [`html`] the page around every body; [`markdown`] a message's text as HTML;
//! - [`results`], [`conversation`], [`sessions`], [`manage`] the bodies of the pages.

pub mod conversation;
mod csrf;
pub mod entry;
pub mod files;
pub mod guard;
pub mod html;
pub mod manage;
pub mod markdown;
pub mod results;
mod routes;
pub mod sessions;

use crate::service::HistoryService;
use axum::Router;
use axum::routing::get;
use std::path::PathBuf;
use std::sync::Arc;

/// How to serve the history (what it is comes from the [`HistoryService`]).
#[derive(Debug, Clone)]
pub struct UiConfig {
    /// Where the notes are (`ghola notes`' store).
    pub notes_dir: PathBuf,
    /// The port on 127.0.0.1 (0: a free one).
    pub port: u16,
}

/// What the pages share.
struct App {
    /// The history: its listing, open index and model, shared with the MCP server when it started this one.
    history: Arc<HistoryService>,
    cfg: UiConfig,
    /// The CSRF token every state-changing form carries (made at start, like the guard's token).
    csrf: String,
}

/// Binds 127.0.0.1, calls `ready` with the address to open (token included), then serves `history` until the
/// process ends. The caller has started what the service should do in the background (the model load, the
/// watcher): pages search by words until the model is there, then by words and meaning.
pub async fn serve(
    history: Arc<HistoryService>,
    cfg: UiConfig,
    ready: impl FnOnce(Served),
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", cfg.port)).await?;
    let port = listener.local_addr()?.port();
    let guard = Arc::new(guard::Guard::new(port));
    ready(Served {
        url: format!("http://127.0.0.1:{port}/?token={}", guard.token),
        links: Links(guard.clone()),
    });
    let app = Arc::new(App {
        history,
        cfg,
        csrf: guard::new_token(),
    });
    let router = Router::new()
        .route("/", get(routes::home))
        .route("/app.js", get(routes::script))
        .route("/search", get(routes::search))
        .route("/projects", get(routes::projects))
        .route("/session/{id}", get(routes::session))
        .route("/file", get(routes::file))
        .route("/notes", get(routes::notes))
        .route("/notes/edit", csrf::post(routes::notes_edit))
        .route("/notes/forget", csrf::post(routes::notes_forget))
        .route("/archive", get(routes::archive))
        .route("/forget", csrf::post(routes::forget))
        .with_state(app)
        .layer(axum::middleware::from_fn_with_state(guard, guard::check));
    accept(listener, router).await
}

/// A connection must have sent its request's headers this soon after it opened (or after its last answer).
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// A connection is closed this long after it opened, busy or idle (a page's requests take milliseconds).
pub const CONNECTION_LIFETIME: std::time::Duration = std::time::Duration::from_secs(120);
/// Connections served at once; one more is closed at once.
pub const MAX_CONNECTIONS: usize = 64;

/// Serves `router` on `listener` with the limits `axum::serve` has not: a header-read timeout, a lifetime per
/// connection and a cap on connections, so that half-sent or idle connections (from anyone on this machine,
/// before any token) cannot hold the server's resources.
async fn accept(listener: tokio::net::TcpListener, router: Router) -> std::io::Result<()> {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // Out of file descriptors, say: wait a little rather than spin.
                tracing::warn!("ghola ui: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_LIFETIME, conn).await;
            drop(slot);
        });
    }
}

/// Opens `url` in the user's browser (`open` on macOS, `explorer` on Windows, `xdg-open` elsewhere); the error
/// says which opener failed, for a message that tells the user to open the address by hand.
/// A running browser server, as its starter sees it once the port is bound.
pub struct Served {
    /// The address with the token, for the person who started it (`ghola ui` prints it on their terminal).
    pub url: String,
    /// One-time links into it, for anything that leaves the starter's hands.
    pub links: Links,
}

/// Makes one-time login links of a running server (see `guard::Guard::one_time_code`).
#[derive(Clone)]
pub struct Links(Arc<guard::Guard>);

impl Links {
    /// A new link that logs a browser in once, within a minute.
    pub fn one_time(&self) -> String {
        format!(
            "http://127.0.0.1:{}{}?code={}",
            self.0.port,
            guard::LOGIN_PATH,
            self.0.one_time_code()
        )
    }

    /// Opens a new one-time link in the user's browser without putting it on a command line (which any local
    /// user can read in the process list): the link goes into a file only this user can read (0600, in the
    /// temporary folder), and the opener is handed that file, which sends the browser on — Jupyter's way.
    /// Returns the file's path.
    pub fn open_in_browser(&self) -> Result<PathBuf, String> {
        let link = self.one_time();
        let page = format!(
            "<!doctype html><meta charset=utf-8><meta http-equiv=refresh content=\"0;url={link}\">\
             <title>ghola</title><p><a href=\"{link}\">Open ghola's history browser</a>"
        );
        let file = tempfile::Builder::new()
            .prefix("ghola-open-")
            .suffix(".html")
            .tempfile()
            .and_then(|mut f| {
                use std::io::Write;
                f.write_all(page.as_bytes())?;
                f.keep().map_err(|e| e.error)
            })
            .map_err(|e| format!("could not write the browser's start page: {e}"))?;
        let path = file.1;
        // A path, not a file:// address: every opener takes one, and Windows' paths make no valid file URL as
        // they are.
        open_in_browser(&path.display().to_string())?;
        // The link inside is dead within a minute; the file goes soon after.
        let gone = path.clone();
        std::thread::spawn(move || {
            std::thread::sleep(guard::ONE_TIME_LINK_LIFETIME * 2);
            let _ = std::fs::remove_file(gone);
        });
        Ok(path)
    }
}

/// Hands `url` to the system's opener (`xdg-open`, `open`, `explorer`). Only for addresses that carry no secret:
/// a command line is readable by every local user.
fn open_in_browser(url: &str) -> Result<(), String> {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(|_| ())
        .map_err(|e| format!("could not open a browser ({opener}: {e})"))
}
