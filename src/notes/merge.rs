//! Merge, not append: what an extraction found is folded into the live notes by rules a person can predict.
//!
//! - An item that says again what a live item (or an earlier item of the same batch) says is not added: same
//!   words (case and punctuation aside), or MiniLM cosine at or above [`DUPLICATE_COSINE`].
//! - Items the extractor names in `supersedes` leave the live notes (the log keeps them).
//! - A new plan replaces the old one whole; the same plan again changes nothing.
//! - Each category keeps at most [`Category::cap`] items; the oldest beyond it move to `ARCHIVE.md`.
//!
//! So extracting the same window twice adds nothing.

use super::item::{Category, Item, strip_date};
use super::store::ProjectNotes;
use crate::embed::cosine;
use serde::Serialize;
use std::collections::BTreeMap;

/// Cosine (all-MiniLM-L6-v2, mean-pooled, normalised) at or above which two notes are the same note. Measured
/// on `bench/notes/pairs.json` (paraphrase vs. related-but-different pairs of coding notes; see the README).
pub const DUPLICATE_COSINE: f32 = 0.80;

/// What one extraction found, as the extractor's tool returned it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Findings {
    /// New items per category (the plan is apart).
    pub new: BTreeMap<Category, Vec<String>>,
    /// A replacement plan; `None` (or empty) keeps the current one.
    pub plan: Option<Vec<String>>,
    /// Ids of live items this window shows to be wrong or replaced.
    pub supersedes: Vec<String>,
}

/// Where new items come from.
#[derive(Debug, Clone)]
pub struct Origin {
    pub session: String,
    pub window: u32,
    /// `YYYY-MM-DD` of the window's last message.
    pub date: String,
}

/// Turns texts into vectors for the duplicate check; `None` when no model is at hand (then only the same
/// words count as the same note).
pub trait Similarity {
    fn vectors(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>>;
}

/// No model: duplicates by words only.
pub struct WordsOnly;

impl Similarity for WordsOnly {
    fn vectors(&self, _: &[&str]) -> Option<Vec<Vec<f32>>> {
        None
    }
}

impl Similarity for crate::embed::Embedder {
    fn vectors(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        self.embed(texts)
            .ok()
            .map(|v| v.into_iter().map(|x| x.to_vec()).collect())
    }
}

/// MiniLM from `places` (see [`crate::embed::resolve`]), or — with a warning —
/// words only when it cannot be loaded: extraction goes on either way.
pub fn similarity(places: &crate::embed::ModelPlaces) -> Box<dyn Similarity> {
    match crate::embed::Embedder::from_places(places) {
        Ok(e) => Box::new(e),
        Err(e) => {
            tracing::warn!("no embedding model ({e}): duplicates are found by their words only");
            Box::new(WordsOnly)
        }
    }
}

/// What a merge did, for the log and the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MergeReport {
    pub added: Vec<(Category, Item)>,
    /// (category, the new text, the id of the live item it repeats).
    pub duplicates: Vec<(Category, String, String)>,
    pub superseded: Vec<(Category, Item)>,
    pub archived: Vec<(Category, Item)>,
    /// Ids in `supersedes` that name no live item.
    pub unknown_ids: Vec<String>,
    pub plan_replaced: bool,
}

impl MergeReport {
    /// Whether the live notes changed.
    pub fn changed(&self) -> bool {
        !self.added.is_empty() || !self.superseded.is_empty() || !self.archived.is_empty()
    }
}

/// Words only, lower case: "Don't use X!" and "don't use x" are the same note.
pub fn normalize(s: &str) -> String {
    strip_date(s)
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// One line, trimmed, at most 800 characters: a note is a sentence or two, not a transcript.
fn clean(text: &str) -> String {
    let t = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if t.chars().count() > 800 {
        let mut s: String = t.chars().take(799).collect();
        s.push('…');
        s
    } else {
        t
    }
}

/// Folds `found` into `notes` (see the module doc).
pub fn merge(
    notes: &mut ProjectNotes,
    found: &Findings,
    origin: &Origin,
    sim: &dyn Similarity,
    threshold: f32,
) -> MergeReport {
    let mut report = MergeReport::default();
    // Supersede first: a replaced item must not count as the duplicate of its replacement.
    for id in &found.supersedes {
        let id = id.trim();
        let mut hit = false;
        for (c, items) in notes.items.iter_mut() {
            if let Some(at) = items.iter().position(|i| i.id == id) {
                report.superseded.push((*c, items.remove(at)));
                hit = true;
            }
        }
        if !hit {
            report.unknown_ids.push(id.to_string());
        }
    }
    let origin_key = format!("{}:{}", origin.session, origin.window);
    for c in [
        Category::Architecture,
        Category::Decisions,
        Category::Failures,
    ] {
        let Some(texts) = found.new.get(&c) else {
            continue;
        };
        let texts: Vec<String> = texts
            .iter()
            .map(|t| clean(t))
            .filter(|t| !normalize(t).is_empty())
            .collect();
        if texts.is_empty() {
            continue;
        }
        let live = notes.items.entry(c).or_default();
        // Vectors of the live items and the candidates, in one batch.
        let mut all: Vec<&str> = live.iter().map(Item::bare_text).collect();
        all.extend(texts.iter().map(|t| strip_date(t)));
        let vectors = sim.vectors(&all);
        let live_n = live.len();
        // (normalized words, vector index, id) of everything a candidate must not repeat.
        let mut known: Vec<(String, usize, String)> = live
            .iter()
            .enumerate()
            .map(|(k, i)| (normalize(&i.text), k, i.id.clone()))
            .collect();
        let mut fresh = Vec::new();
        for (k, text) in texts.iter().enumerate() {
            let words = normalize(text);
            let me = live_n + k;
            let dup = known.iter().find(|(w, v, _)| {
                *w == words
                    || vectors
                        .as_ref()
                        .is_some_and(|vs| cosine(&vs[*v], &vs[me]) >= threshold)
            });
            if let Some((_, _, id)) = dup {
                report.duplicates.push((c, text.clone(), id.clone()));
                continue;
            }
            let text = if c == Category::Decisions && strip_date(text) == text.trim_start() {
                format!("[{}] {text}", origin.date)
            } else {
                text.clone()
            };
            let taken = |id: &str| {
                live.iter().any(|i| i.id == id)
                    || fresh.iter().any(|i: &Item| i.id == id)
                    || report.superseded.iter().any(|(_, i)| i.id == id)
            };
            let id = Item::new_id(c, &text, &origin_key, &taken);
            known.push((words, me, id.clone()));
            fresh.push(Item {
                id,
                text,
                session: Some(origin.session.clone()),
                window: Some(origin.window),
                date: Some(origin.date.clone()),
            });
        }
        for i in &fresh {
            report.added.push((c, i.clone()));
        }
        live.extend(fresh);
    }
    if let Some(plan) = &found.plan {
        let plan: Vec<String> = plan
            .iter()
            .map(|t| clean(t))
            .filter(|t| !normalize(t).is_empty())
            .collect();
        let mut words: Vec<String> = Vec::new();
        let plan: Vec<String> = plan
            .into_iter()
            .filter(|t| {
                let w = normalize(t);
                let new = !words.contains(&w);
                words.push(w);
                new
            })
            .collect();
        let current: Vec<String> = notes
            .get(Category::Plan)
            .iter()
            .map(|i| normalize(&i.text))
            .collect();
        let mut unique = words.clone();
        unique.dedup();
        if !plan.is_empty() && current != unique {
            let old = std::mem::take(notes.items.entry(Category::Plan).or_default());
            report
                .superseded
                .extend(old.into_iter().map(|i| (Category::Plan, i)));
            let mut items: Vec<Item> = Vec::new();
            for text in plan {
                let id = Item::new_id(Category::Plan, &text, &origin_key, &|id| {
                    items.iter().any(|i| i.id == id)
                });
                items.push(Item {
                    id,
                    text,
                    session: Some(origin.session.clone()),
                    window: Some(origin.window),
                    date: Some(origin.date.clone()),
                });
            }
            report
                .added
                .extend(items.iter().cloned().map(|i| (Category::Plan, i)));
            notes.items.insert(Category::Plan, items);
            report.plan_replaced = true;
        }
    }
    report.archived = apply_caps(notes);
    report
}

/// Moves the oldest items beyond each category's cap out of the live notes (returned for the archive file).
pub fn apply_caps(notes: &mut ProjectNotes) -> Vec<(Category, Item)> {
    let mut moved = Vec::new();
    for (c, items) in notes.items.iter_mut() {
        let over = items.len().saturating_sub(c.cap());
        if over == 0 {
            continue;
        }
        // Oldest first by date; among equal dates, earlier in the file is older.
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by(|&a, &b| items[a].date.cmp(&items[b].date).then(a.cmp(&b)));
        let mut out: Vec<usize> = order[..over].to_vec();
        out.sort_unstable_by(|a, b| b.cmp(a));
        let mut these: Vec<Item> = out.into_iter().map(|k| items.remove(k)).collect();
        these.reverse();
        moved.extend(these.into_iter().map(|i| (*c, i)));
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notes::store::Store;

    fn origin(s: &str) -> Origin {
        Origin {
            session: s.into(),
            window: 0,
            date: "2026-11-20".into(),
        }
    }

    fn found(c: Category, texts: &[&str]) -> Findings {
        let mut f = Findings::default();
        f.new
            .insert(c, texts.iter().map(|t| t.to_string()).collect());
        f
    }

    /// Vectors from a fixed table: texts that share their first word are "similar".
    struct FirstWord;
    impl Similarity for FirstWord {
        fn vectors(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
            Some(
                texts
                    .iter()
                    .map(|t| {
                        let w = t.split_whitespace().next().unwrap_or("");
                        let h = crate::notes::item::fnv(&w.to_lowercase());
                        (0..8).map(|k| ((h >> (k * 8)) & 0xff) as f32).collect()
                    })
                    .collect(),
            )
        }
    }

    #[test]
    fn duplicates_by_words_and_by_meaning_are_not_added() {
        let root = tempfile::tempdir().unwrap();
        let mut n = Store::new(root.path()).open("/p");
        let f = found(
            Category::Failures,
            &[
                "Don't run cargo test without --release",
                "Tokio runtime panics inside rayon",
            ],
        );
        let r = merge(&mut n, &f, &origin("s1"), &FirstWord, 0.99);
        assert_eq!(r.added.len(), 2);
        // Same words (case, punctuation); a paraphrase with the same "meaning" (first word here); and a
        // repeat inside the batch.
        let f = found(
            Category::Failures,
            &[
                "don't run cargo test without --release!",
                "Tokio blocks when called from rayon threads",
                "Brand new failure",
                "brand new failure.",
            ],
        );
        let r = merge(&mut n, &f, &origin("s2"), &FirstWord, 0.99);
        assert_eq!(r.added.len(), 1, "{r:#?}");
        assert_eq!(r.duplicates.len(), 3);
        assert_eq!(n.get(Category::Failures).len(), 3);
        // Without a model only the same words count.
        let f = found(Category::Failures, &["Tokio again, other words"]);
        let r = merge(&mut n, &f, &origin("s3"), &WordsOnly, 0.99);
        assert_eq!(r.added.len(), 1);
    }

    #[test]
    fn decisions_get_their_date_and_provenance() {
        let root = tempfile::tempdir().unwrap();
        let mut n = Store::new(root.path()).open("/p");
        let f = found(
            Category::Decisions,
            &[
                "Chose bincode over JSON because of speed",
                "[2026-01-01] Kept date",
            ],
        );
        merge(&mut n, &f, &origin("s1"), &WordsOnly, 0.9);
        let d = n.get(Category::Decisions);
        assert_eq!(
            d[0].text,
            "[2026-11-20] Chose bincode over JSON because of speed"
        );
        assert_eq!(d[1].text, "[2026-01-01] Kept date");
        assert_eq!(d[0].session.as_deref(), Some("s1"));
        assert!(d[0].id.starts_with("d-"));
    }

    #[test]
    fn supersede_removes_and_plan_replaces_and_repeats_change_nothing() {
        let root = tempfile::tempdir().unwrap();
        let mut n = Store::new(root.path()).open("/p");
        let mut f = found(Category::Architecture, &["Handlers validate first"]);
        f.plan = Some(vec!["Step one".into(), "Step two".into()]);
        let r = merge(&mut n, &f, &origin("s1"), &WordsOnly, 0.9);
        assert!(r.plan_replaced);
        let old = n.get(Category::Architecture)[0].id.clone();
        // Same findings again: nothing added, the plan untouched (same ids).
        let plan_ids: Vec<String> = n.get(Category::Plan).iter().map(|i| i.id.clone()).collect();
        let r = merge(&mut n, &f, &origin("s1"), &WordsOnly, 0.9);
        assert!(!r.changed(), "{r:#?}");
        assert!(!r.plan_replaced);
        let again: Vec<String> = n.get(Category::Plan).iter().map(|i| i.id.clone()).collect();
        assert_eq!(plan_ids, again);
        // A new plan replaces; a superseded item leaves; an unknown id is reported.
        let mut f = found(Category::Architecture, &["Handlers validate last"]);
        f.plan = Some(vec!["Step three".into()]);
        f.supersedes = vec![old.clone(), "a-nope".into()];
        let r = merge(&mut n, &f, &origin("s2"), &WordsOnly, 0.9);
        assert_eq!(
            r.superseded.len(),
            3,
            "one architecture item and two plan steps"
        );
        assert_eq!(r.unknown_ids, ["a-nope"]);
        let arch: Vec<&str> = n
            .get(Category::Architecture)
            .iter()
            .map(|i| i.text.as_str())
            .collect();
        assert_eq!(arch, ["Handlers validate last"]);
        let plan: Vec<&str> = n
            .get(Category::Plan)
            .iter()
            .map(|i| i.text.as_str())
            .collect();
        assert_eq!(plan, ["Step three"]);
        // An empty plan keeps the current one.
        f.plan = Some(vec![]);
        f.supersedes.clear();
        merge(&mut n, &f, &origin("s3"), &WordsOnly, 0.9);
        assert_eq!(n.get(Category::Plan).len(), 1);
    }

    #[test]
    fn caps_move_the_oldest_to_the_archive() {
        let root = tempfile::tempdir().unwrap();
        let mut n = Store::new(root.path()).open("/p");
        let cap = Category::Failures.cap();
        let texts: Vec<String> = (0..cap + 3)
            .map(|k| format!("failure number {k}"))
            .collect();
        for (k, t) in texts.iter().enumerate() {
            let o = Origin {
                session: format!("s{k}"),
                window: 0,
                date: (chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap()
                    + chrono::Days::new(k as u64))
                .to_string(),
            };
            let r = merge(
                &mut n,
                &found(Category::Failures, &[t]),
                &o,
                &WordsOnly,
                0.9,
            );
            n.archive(&r.archived, "cap").unwrap();
        }
        let live = n.get(Category::Failures);
        assert_eq!(live.len(), cap);
        let archive = std::fs::read_to_string(n.dir.join("ARCHIVE.md")).unwrap();
        // The three oldest are archived.
        for t in [
            "failure number 0 ",
            "failure number 1 ",
            "failure number 2 ",
        ] {
            assert!(archive.contains(t), "{t} in {archive}");
            assert!(!live.iter().any(|i| format!("{} ", i.text) == t));
        }
    }
}
