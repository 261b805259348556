//! Notes: what each project learned — architecture, decisions, failures, plan — distilled from the archive by a
//! model (duncan's backends) and put in front of the next session.
//!
//! - [`item`] one note and its markdown line (provenance in an HTML comment);
//! - [`store`] the per-project folder of markdown files (the truth), metadata, archive and log;
//! - [`merge`] folding what an extraction found into the notes (dedup, supersede, plan replaced, caps);
//! - secrets out of anything sent (`crate::secrets`); [`window`] a session window from the index, as the extractor
//!   reads it; [`extract`] the model call, budget and merge of one window;
//! - [`worker`] the queue and the detached worker; [`hooks`] the plugin's hooks; [`context`] the compiled
//!   context a session starts with.
//!
//! Consent first: nothing is sent until the user turns extraction on ([`set_enabled`]); existing notes are
//! injected either way.

pub mod context;
pub mod extract;
pub mod hooks;
pub mod item;
pub mod merge;
pub mod store;
pub mod window;
pub mod worker;

pub use item::{Category, Item};
pub use store::{NotesError, ProjectNotes, Store};

use serde::Serialize;
use serde_json::json;

/// Turns extraction on or off for one project (`Some`) or as the default of all (`None`).
pub fn set_enabled(store: &Store, project: Option<&str>, on: bool) -> Result<(), NotesError> {
    let _lock = store::write_lock(&store.root)?;
    let now = chrono::Utc::now().timestamp_millis();
    match project {
        Some(p) => {
            let mut n = store.open(p);
            if on && n.meta.enabled != Some(true) {
                n.meta.enabled_since_ms = Some(now);
            }
            n.meta.enabled = Some(on);
            if on {
                n.meta.archived = false;
            }
            n.save_meta()
        }
        None => {
            let mut s = store.state();
            if on && !s.enabled {
                s.enabled_since_ms = Some(now);
            }
            s.enabled = on;
            store.save_state(&s)
        }
    }
}

/// One project's notes at a glance.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectStatus {
    pub project: String,
    pub display_name: String,
    pub enabled: bool,
    pub archived: bool,
    pub parent: Option<String>,
    pub items: std::collections::BTreeMap<&'static str, usize>,
    pub last_extraction: Option<String>,
    /// Windows waiting for the worker (back-off included).
    pub windows_pending: usize,
    /// Windows whose last attempt failed, with the error.
    pub failures: Vec<String>,
    pub windows_extracted: usize,
    pub tokens_today: u64,
    pub tokens_total: u64,
    pub folder: String,
}

/// Status of every project with notes, or of one.
#[derive(Debug, Clone, Serialize)]
pub struct NotesStatus {
    pub notes_dir: String,
    pub enabled_by_default: bool,
    pub daily_token_budget: u64,
    pub tokens_spent_today: u64,
    pub model: String,
    /// The settings file (model, backend, budget).
    pub settings_file: String,
    /// A worker is extracting right now.
    pub worker_running: bool,
    pub queued_sessions: usize,
    pub projects: Vec<ProjectStatus>,
}

fn iso(ms: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_millis(ms).map(|t| t.to_rfc3339())
}

/// The status of one project's notes.
pub fn project_status(store: &Store, project: &str) -> ProjectStatus {
    let n = store.open(project);
    let today = store::today();
    ProjectStatus {
        project: n.meta.project.clone(),
        display_name: n.meta.display_name.clone(),
        enabled: store.enabled(&n.meta),
        archived: n.meta.archived,
        parent: n.meta.parent.clone(),
        items: n.counts(),
        last_extraction: n.meta.last_extraction_ms.and_then(iso),
        windows_pending: n.meta.windows.values().filter(|w| w.due).count(),
        failures: n
            .meta
            .windows
            .values()
            .filter_map(|w| {
                let e = w.last_error.as_ref()?;
                Some(format!(
                    "{}:{} — {e} ({} attempt(s){})",
                    w.session,
                    w.window,
                    w.attempts,
                    w.next_try_ms
                        .and_then(iso)
                        .map(|t| format!(", next try {t}"))
                        .unwrap_or_default()
                ))
            })
            .collect(),
        windows_extracted: n
            .meta
            .windows
            .values()
            .filter(|w| w.extracted_ms.is_some())
            .count(),
        tokens_today: n.meta.tokens_by_day.get(&today).copied().unwrap_or(0),
        tokens_total: n.meta.tokens_total,
        folder: n.dir.display().to_string(),
    }
}

/// The status of the notes of `projects` (all projects with notes when empty), under `settings` (read from
/// `settings_file`).
pub fn status(
    store: &Store,
    projects: &[String],
    settings: &crate::settings::Settings,
    settings_file: &std::path::Path,
) -> NotesStatus {
    let state = store.state();
    let list = if projects.is_empty() {
        store.projects()
    } else {
        projects.to_vec()
    };
    let worker_running = matches!(worker::try_worker_lock(store), Ok(None));
    NotesStatus {
        notes_dir: store.root.display().to_string(),
        enabled_by_default: state.enabled,
        daily_token_budget: settings.daily_token_budget,
        tokens_spent_today: state.spent_on(&store::today()),
        model: settings.notes_model.clone(),
        settings_file: settings_file.display().to_string(),
        worker_running,
        queued_sessions: worker::queued(store).len(),
        projects: list.iter().map(|p| project_status(store, p)).collect(),
    }
}

/// Items of `project` matching `what`: an id exactly, else every item whose text contains it (case aside).
pub fn find(notes: &ProjectNotes, what: &str) -> Vec<(Category, Item)> {
    let what = what.trim();
    let by_id: Vec<(Category, Item)> = Category::ALL
        .into_iter()
        .flat_map(|c| notes.get(c).iter().map(move |i| (c, i.clone())))
        .filter(|(_, i)| i.id == what)
        .collect();
    if !by_id.is_empty() || what.is_empty() {
        return by_id;
    }
    let lower = what.to_lowercase();
    Category::ALL
        .into_iter()
        .flat_map(|c| notes.get(c).iter().map(move |i| (c, i.clone())))
        .filter(|(_, i)| i.text.to_lowercase().contains(&lower))
        .collect()
}

/// Removes items by id (a person's decision: logged as forgotten, not archived).
pub fn forget(
    store: &Store,
    project: &str,
    ids: &[String],
) -> Result<Vec<(Category, Item)>, NotesError> {
    let _lock = store::write_lock(&store.root)?;
    let mut n = store.open(project);
    let mut gone = Vec::new();
    for (c, items) in n.items.iter_mut() {
        items.retain(|i| {
            let hit = ids.contains(&i.id);
            if hit {
                gone.push((*c, i.clone()));
            }
            !hit
        });
    }
    n.save()?;
    n.log(&json!({
        "at": chrono::Utc::now().to_rfc3339(),
        "forgotten": gone.iter().map(|(c, i)| json!({"category": c.name(), "id": i.id, "text": i.text})).collect::<Vec<_>>(),
    }))?;
    Ok(gone)
}

/// Replaces the text of the item `id` (a person's edit: its id and provenance stay, the change is logged).
/// Empty text is refused: forgetting is [`forget`]'s job.
pub fn edit(store: &Store, project: &str, id: &str, text: &str) -> Result<Item, NotesError> {
    let text = text.trim().replace("\r\n", "\n");
    if text.is_empty() {
        return Err(NotesError::EmptyNote);
    }
    let _lock = store::write_lock(&store.root)?;
    let mut n = store.open(project);
    let Some(item) = n.items.values_mut().flatten().find(|i| i.id == id) else {
        return Err(NotesError::NoSuchNote {
            id: id.to_string(),
            project: project.to_string(),
        });
    };
    let before = std::mem::replace(&mut item.text, text);
    let after = item.clone();
    n.save()?;
    n.log(&json!({
        "at": chrono::Utc::now().to_rfc3339(),
        "edited": {"id": id, "before": before, "after": after.text},
    }))?;
    Ok(after)
}

/// Makes `child` inherit `parent`'s architecture, decisions and failures (`None` unlinks).
pub fn link(store: &Store, child: &str, parent: Option<&str>) -> Result<(), NotesError> {
    if parent == Some(child) {
        return Err(NotesError::BadLink("a project cannot be its own parent"));
    }
    if let Some(p) = parent
        && store.open(p).meta.parent.as_deref() == Some(child)
    {
        return Err(NotesError::LinkBothWays {
            parent: p.to_string(),
            child: child.to_string(),
        });
    }
    let _lock = store::write_lock(&store.root)?;
    let mut n = store.open(child);
    n.meta.parent = parent.map(str::to_string);
    n.save_meta()
}

/// Archives a project (keeps its notes, stops extraction and injection) or brings it back.
pub fn set_archived(store: &Store, project: &str, archived: bool) -> Result<(), NotesError> {
    let _lock = store::write_lock(&store.root)?;
    let mut n = store.open(project);
    n.meta.archived = archived;
    n.save_meta()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_replaces_the_text_keeps_the_id_and_refuses_what_it_cannot_do() {
        let root = tempfile::tempdir().unwrap();
        let store = Store::new(root.path());
        let project = "/tmp/some-project";
        let dir = store.project_dir(project);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(Category::Failures.file_name()),
            "- The nightly job timed out\n- Flaky test in the parser\n",
        )
        .unwrap();
        let before = store.open(project);
        let (first, second) = {
            let f = before.get(Category::Failures);
            (f[0].clone(), f[1].clone())
        };

        let edited = edit(
            &store,
            project,
            &first.id,
            "  The nightly job timed out\r\nafter 2 h  ",
        )
        .unwrap();
        assert_eq!(edited.id, first.id);
        let after = store.open(project);
        let f = after.get(Category::Failures);
        assert_eq!(f[0].id, first.id);
        assert_eq!(f[0].text, "The nightly job timed out\nafter 2 h");
        assert_eq!(f[1], second, "the other item is untouched");

        let file = std::fs::read_to_string(dir.join(Category::Failures.file_name())).unwrap();
        assert!(
            edit(&store, project, &first.id, "  \n").is_err(),
            "empty text"
        );
        assert!(
            edit(&store, project, "f-000000", "x").is_err(),
            "unknown id"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join(Category::Failures.file_name())).unwrap(),
            file,
            "a refused edit writes nothing"
        );
    }
}
