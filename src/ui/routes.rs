//! What each address of `ghola ui` answers. Reading pages are GETs; the four that change something
//! (`/notes/edit`, `/notes/forget`, `/forget`) are POSTs whose form carries the CSRF token, and forgetting asks
//! first (a page that lists what would go, with the button that does it).
//!
//! Work that reads files or the index runs on tokio's blocking threads, so a slow disk never holds the
//! server's other answers.

use super::csrf::{Checked, CsrfField};
use super::html::{self, Filters};
use super::{App, conversation, manage, results, sessions};
use crate::index::forget;
use crate::notes::Store;
use crate::service::{Grouping, SearchRequest};
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Results per search page.
const RESULTS: usize = 20;
/// Sessions a search by session shows (of the hits the service folds).
const GROUPED_SESSIONS: usize = 100;

/// A page's body or why it could not be made (status and message).
type Made = Result<String, (StatusCode, String)>;

/// Runs `make` on a blocking thread and wraps its body in the page (`title`).
async fn page(title: String, make: impl FnOnce() -> Made + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(make).await {
        Ok(Ok(body)) => Html(html::layout(&title, &body)).into_response(),
        Ok(Err((status, e))) => error(status, &e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        Html(html::layout(
            "error",
            &format!("<p class=note>{}</p>", html::escape(message)),
        )),
    )
        .into_response()
}

fn bad(e: impl std::fmt::Display) -> (StatusCode, String) {
    (StatusCode::BAD_REQUEST, e.to_string())
}

/// The answer to a form whose CSRF token is not the pages' (see [`super::csrf`]).
pub(super) fn refused() -> Response {
    error(
        StatusCode::FORBIDDEN,
        "this form is stale or came from elsewhere: reload the page and try again",
    )
}

pub(super) async fn home() -> Response {
    Html(html::layout(
        "search",
        "<p>Search every session ghola keeps: type above.</p>",
    ))
    .into_response()
}

pub(super) async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        html::SCRIPT,
    )
        .into_response()
}

/// `/search?q=…&project=…&since=3d&subagents=0&group=session` (`part=results`: the results alone, for the
/// script that searches as you type).
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct SearchQuery {
    #[serde(default)]
    q: String,
    project: Option<String>,
    /// `90m`, `12h`, `3d`, `2w` or a date, as `ghola search --since`.
    since: Option<String>,
    /// Bounds as `ghola search --after/--before` (a date alone is that local day; or ISO 8601).
    after: Option<String>,
    before: Option<String>,
    subagents: Option<String>,
    group: Option<String>,
    part: Option<String>,
    /// One machine's messages only (the facet shown when the history holds several).
    machine: Option<String>,
    /// `1`: the team hub too.
    team: Option<String>,
    /// One person's history only (with `team`).
    person: Option<String>,
    /// Results (or sessions, by session) to skip: the page.
    offset: Option<usize>,
}

/// Results per page, folded by session.
const SESSIONS_PER_PAGE: usize = 20;

/// `/search?…` with every choice of `q` but the page, for the next page's link.
fn search_link(q: &SearchQuery) -> String {
    let mut link = format!("/search?q={}", html::url_part(&q.q));
    for (name, v) in [
        ("project", &q.project),
        ("since", &q.since),
        ("after", &q.after),
        ("before", &q.before),
        ("subagents", &q.subagents),
        ("group", &q.group),
        ("machine", &q.machine),
        ("team", &q.team),
        ("person", &q.person),
    ] {
        if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
            link.push_str(&format!("&{name}={}", html::url_part(v)));
        }
    }
    link
}

/// The link to the page after this one, when there is one.
fn next_page(link: &str, offset: usize) -> String {
    format!(
        "<p class=next><a href=\"{}&amp;offset={offset}\">next page →</a></p>",
        link.replace('&', "&amp;")
    )
}

pub(super) async fn search(State(app): State<Arc<App>>, Query(q): Query<SearchQuery>) -> Response {
    let query = q.q.trim().to_string();
    let grouped = q.group.as_deref() == Some("session");
    let no_subagents = q.subagents.as_deref() == Some("0");
    let only_results = q.part.as_deref() == Some("results");
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let (project, since, after, before, machine) = (
        text(&q.project),
        text(&q.since),
        text(&q.after),
        text(&q.before),
        text(&q.machine),
    );
    let team = q.team.as_deref() == Some("1");
    let person = text(&q.person);
    // The facets: this history's machines, and with a hub login the team's people and machines (not for the
    // results alone, which the script fetches as you type).
    let (mut machines, hub, people) = {
        let h = app.history.clone();
        let facets = !only_results;
        tokio::task::spawn_blocking(move || {
            let hub = matches!(h.hub_login(), Ok(Some(_)));
            let team = if hub && facets { h.hub_facets() } else { None };
            (h.machines(), hub, team)
        })
        .await
        .unwrap_or_default()
    };
    let people = match people {
        Some((people, theirs)) => {
            for m in theirs {
                if !machines.contains(&m) {
                    machines.push(m);
                }
            }
            people
        }
        None => Vec::new(),
    };
    let offset = q.offset.unwrap_or(0);
    let link = search_link(&q);
    let run = {
        let query = query.clone();
        move || -> Made {
            if query.is_empty() {
                return Ok("<p>Search every session ghola keeps: type above.</p>".into());
            }
            let mut r = SearchRequest::for_person(&query);
            r.offset = if grouped { 0 } else { offset };
            (r.max_results, r.context) = if grouped {
                (GROUPED_SESSIONS, 0)
            } else {
                (RESULTS, 2)
            };
            r.grouping = if grouped {
                Grouping::Session
            } else {
                Grouping::Hit
            };
            (r.project, r.after, r.before, r.since) = (q.project, q.after, q.before, q.since);
            r.include_subagents = !no_subagents;
            r.machines = q
                .machine
                .into_iter()
                .filter(|m| !m.trim().is_empty())
                .collect();
            r.team = team;
            r.people = q
                .person
                .into_iter()
                .filter(|p| team && !p.trim().is_empty())
                .collect();
            let found = app.history.search(&r).map_err(|e| {
                if e.is_user_error() {
                    bad(e)
                } else {
                    tracing::warn!("search failed: {e}");
                    (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
                }
            })?;
            if !grouped {
                let mut body = results::flat(&found.response, &found.terms);
                if found.response.has_more {
                    body.push_str(&next_page(&link, offset + found.response.results.len()));
                }
                return Ok(body);
            }
            let end = (offset + SESSIONS_PER_PAGE).min(found.groups.len());
            let page = found.groups.get(offset.min(end)..end).unwrap_or(&[]);
            let mut body = results::grouped(&found.response, page, &found.terms);
            if end < found.groups.len() {
                body.push_str(&next_page(&link, end));
            }
            Ok(body)
        }
    };
    let made = match tokio::task::spawn_blocking(run).await {
        Ok(m) => m,
        Err(e) => Err((StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
    };
    let (status, body) = match made {
        Ok(body) => (StatusCode::OK, body),
        Err((status, e)) => (status, format!("<p class=note>{}</p>", html::escape(&e))),
    };
    if only_results {
        return (status, Html(html::controls_visible(&body).into_owned())).into_response();
    }
    let filters = Filters {
        query: &query,
        project: &project,
        since: &since,
        after: &after,
        before: &before,
        no_subagents,
        grouped,
        machine: &machine,
        machines: if machines.len() > 1 { &machines } else { &[] },
        hub,
        team,
        person: &person,
        people: &people,
    };
    let title = if query.is_empty() { "search" } else { &query };
    (status, Html(html::layout_with(title, &filters, &body))).into_response()
}

pub(super) async fn projects(State(app): State<Arc<App>>) -> Response {
    page("sessions".into(), move || {
        let l = app.history.listing();
        let this = app.history.config().machine.clone();
        // Transcripts without a message (empty, or a title alone) are counted by `ghola status`, not listed.
        Ok(sessions::page(
            &l.sessions
                .iter()
                .filter(|s| !s.summary.is_empty())
                .collect::<Vec<_>>(),
            &this,
        ))
    })
    .await
}

/// `/session/<id>?at=<uuid>`.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct SessionQuery {
    at: Option<String>,
}

pub(super) async fn session(
    State(app): State<Arc<App>>,
    UrlPath(id): UrlPath<String>,
    Query(q): Query<SessionQuery>,
) -> Response {
    let run = move || -> Result<(String, String), (StatusCode, String)> {
        let not_found = |e: String| (StatusCode::NOT_FOUND, e);
        let files = match app.history.session_files(&id) {
            Ok(f) => f,
            // A teammate's session from the team hub: its redacted text, read there.
            Err(e) => match app.history.hub_session(&id) {
                Ok(Some(h)) => {
                    let title = h.title.clone().unwrap_or_else(|| h.session_id.clone());
                    return Ok((title, conversation::hub_page(&h, q.at.as_deref())));
                }
                _ => return Err(not_found(e.to_string())),
            },
        };
        let s = crate::transcript::load_session(app.history.sources(), &files);
        let title = s.title.clone().unwrap_or_else(|| s.session_id.clone());
        Ok((title, conversation::page(&s, q.at.as_deref(), &app.csrf)))
    };
    match tokio::task::spawn_blocking(run).await {
        Ok(Ok((title, body))) => Html(html::layout(&title, &body)).into_response(),
        Ok(Err((status, e))) => error(status, &e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// `/file?path=…&lines=40-52`: a file's history.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct FileQuery {
    #[serde(default)]
    path: String,
    #[serde(default)]
    lines: String,
}

/// Sessions and changes per session a file's page shows.
const FILE_SESSIONS: usize = 50;
const FILE_CHANGES: usize = 20;

pub(super) async fn file(State(app): State<Arc<App>>, Query(q): Query<FileQuery>) -> Response {
    let title = if q.path.is_empty() {
        "file history".to_string()
    } else {
        format!("history of {}", q.path)
    };
    page(title, move || {
        use crate::index::file_map::query::{self, parse_lines, parse_path_and_lines};
        if q.path.trim().is_empty() {
            return Ok(super::files::page_form());
        }
        let (path, mut lines) = parse_path_and_lines(&q.path).map_err(bad)?;
        if !q.lines.trim().is_empty() {
            lines = Some(parse_lines(&q.lines).map_err(bad)?);
        }
        let fq = query::FileQuery {
            path,
            lines,
            base: None,
            project: None,
            max_sessions: FILE_SESSIONS,
            max_changes: FILE_CHANGES,
        };
        let h = app.history.file_history(&fq).map_err(|e| {
            if e.is_user_error() {
                bad(e)
            } else {
                (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
            }
        })?;
        Ok(super::files::page(&h, &q.path, &q.lines))
    })
    .await
}

/// `/notes` (every project with notes) or `/notes?project=DIR`.
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct NotesQuery {
    project: Option<String>,
}

pub(super) async fn notes(State(app): State<Arc<App>>, Query(q): Query<NotesQuery>) -> Response {
    page("notes".into(), move || {
        let store = Store::new(&app.cfg.notes_dir);
        match q.project.filter(|p| !p.trim().is_empty()) {
            Some(p) => Ok(manage::notes(&store.open(&p), &app.csrf)),
            None => {
                let metas: Vec<_> = store
                    .metas()
                    .into_iter()
                    .map(|m| {
                        let n = store.open(&m.project).items.values().map(Vec::len).sum();
                        (m, n)
                    })
                    .collect();
                Ok(manage::notes_projects(&metas))
            }
        }
    })
    .await
}

/// The fields of the note forms.
#[derive(Debug, serde::Deserialize)]
pub(super) struct NoteForm {
    #[serde(default)]
    csrf: String,
    project: String,
    id: String,
    #[serde(default)]
    text: String,
    confirm: Option<String>,
}

fn notes_address(project: &str, id: &str) -> String {
    format!("/notes?project={}#n-{}", html::url_part(project), id)
}

impl CsrfField for NoteForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

pub(super) async fn notes_edit(
    State(app): State<Arc<App>>,
    Checked(f): Checked<NoteForm>,
) -> Response {
    let run = move || {
        let store = Store::new(&app.cfg.notes_dir);
        crate::notes::edit(&store, &f.project, &f.id, &f.text)
            .map(|_| notes_address(&f.project, &f.id))
    };
    match tokio::task::spawn_blocking(run).await {
        Ok(Ok(to)) => Redirect::to(&to).into_response(),
        Ok(Err(e)) if e.is_user_error() => error(StatusCode::BAD_REQUEST, &e.to_string()),
        Ok(Err(e)) => {
            tracing::warn!("editing a note failed: {e}");
            error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string())
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

pub(super) async fn notes_forget(
    State(app): State<Arc<App>>,
    Checked(f): Checked<NoteForm>,
) -> Response {
    let confirmed = f.confirm.as_deref() == Some("yes");
    let run = move || -> Result<Result<String, String>, (StatusCode, String)> {
        let store = Store::new(&app.cfg.notes_dir);
        let n = store.open(&f.project);
        let Some(item) = n.items.values().flatten().find(|i| i.id == f.id) else {
            return Err(bad(format!(
                "no note {} in the notes of {}",
                f.id, f.project
            )));
        };
        if !confirmed {
            return Ok(Err(manage::confirm_forget_note(
                &f.project, &f.id, &item.text, &app.csrf,
            )));
        }
        crate::notes::forget(&store, &f.project, std::slice::from_ref(&f.id)).map_err(bad)?;
        Ok(Ok(format!("/notes?project={}", html::url_part(&f.project))))
    };
    match tokio::task::spawn_blocking(run).await {
        Ok(Ok(Ok(to))) => Redirect::to(&to).into_response(),
        Ok(Ok(Err(confirm))) => Html(html::layout("forget a note", &confirm)).into_response(),
        Ok(Err((status, e))) => error(status, &e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

pub(super) async fn archive(State(app): State<Arc<App>>) -> Response {
    page("archive".into(), move || {
        let archive = crate::index::archive::Archive::open(&app.history.config().index_dir)
            .map_err(|e| {
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("the archive could not be read: {e}"),
                )
            })?;
        let mut by_session: HashMap<&str, u64> = HashMap::new();
        for f in archive.files() {
            *by_session.entry(f.session_id.as_str()).or_default() +=
                archive.len_of(&f.path).unwrap_or(0);
        }
        let l = app.history.listing();
        let mut projects: BTreeMap<&str, manage::ProjectKeep> = BTreeMap::new();
        for s in l.sessions.iter().map(|l| &l.summary) {
            let p = projects
                .entry(s.project.as_str())
                .or_insert_with(|| manage::ProjectKeep {
                    project: s.project.clone(),
                    ..Default::default()
                });
            p.sessions += 1;
            p.archived_bytes += by_session.get(s.session_id.as_str()).copied().unwrap_or(0);
            if s.archived {
                p.only_here.push((s.session_id.clone(), s.title.clone()));
            }
        }
        let projects: Vec<_> = projects.into_values().collect();
        Ok(manage::archive(&archive.stats(), &projects, &app.csrf))
    })
    .await
}

/// The fields of the forget form: one session, or a whole project.
#[derive(Debug, serde::Deserialize)]
pub(super) struct ForgetForm {
    #[serde(default)]
    csrf: String,
    session: Option<String>,
    project: Option<String>,
    confirm: Option<String>,
}

impl CsrfField for ForgetForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

pub(super) async fn forget(
    State(app): State<Arc<App>>,
    Checked(f): Checked<ForgetForm>,
) -> Response {
    let run = move || -> Made {
        let session = f.session.filter(|s| !s.trim().is_empty());
        let project = f.project.filter(|p| !p.trim().is_empty());
        if session.is_none() && project.is_none() {
            return Err(bad("name a session or a project to forget"));
        }
        let sel = forget::Selection {
            sessions: session.iter().cloned().collect(),
            project: project.clone(),
            before_ms: None,
        };
        let index_dir = &app.history.config().index_dir;
        let chosen = forget::select(index_dir, &sel, false).map_err(bad)?;
        if chosen.is_empty() {
            return Ok("<h1>Nothing to forget</h1><p>No indexed session matches.</p>".into());
        }
        if f.confirm.as_deref() != Some("yes") {
            let hidden = |name: &str, v: &Option<String>| {
                v.as_deref()
                    .map(|v| {
                        format!(
                            "<input type=hidden name={name} value=\"{}\">",
                            html::escape(v)
                        )
                    })
                    .unwrap_or_default()
            };
            let fields = hidden("session", &session) + &hidden("project", &project);
            return Ok(manage::confirm_forget(&chosen, &fields, &app.csrf));
        }
        let done = forget::forget(index_dir, &chosen, false).map_err(|e| {
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("forgetting failed: {e}"),
            )
        })?;
        app.history.invalidate_listing();
        // Shared sessions leave the team hub too (a hub out of reach hears of it at the next push).
        let ids: Vec<String> = chosen.iter().map(|s| s.session_id.clone()).collect();
        if let Err(e) = app.history.forget_on_hub(&ids) {
            tracing::warn!(
                "the team hub could not be told of a forget ({e}); the next push tells it"
            );
        }
        Ok(manage::forgotten(&done))
    };
    page("forget".into(), run).await
}
