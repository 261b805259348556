//! `ghola status`: what the index holds, how fresh it is, this machine's name and the remotes' last syncs, and
//! whether anything ghola keeps is readable by other users.

use super::knobs::Knobs;
use anyhow::Result;
use ghola::index;
use std::path::Path;

/// `ghola status`.
pub fn status_cmd(index_dir: &Path, claude_dir: &Path, knobs: &Knobs, json: bool) -> Result<()> {
    let s = index::status(
        index_dir,
        claude_dir,
        knobs.memory_limit,
        knobs.update.keep_archive,
    )?;
    // What another user of this machine could read (as OpenSSH refuses a readable key, say so).
    let notes_dir = ghola::config::notes_dir();
    let loose: Vec<(std::path::PathBuf, u32)> = [index_dir, notes_dir.as_path()]
        .iter()
        .filter(|d| d.exists())
        .flat_map(|d| ghola::private::loose(d, 5))
        .collect();
    // Other machines: each one's last sync, a failing one in a line of its own.
    let remotes: Vec<(ghola::remote::Remote, ghola::remote::SyncStatus)> =
        ghola::remote::list(index_dir)
            .into_iter()
            .map(|r| {
                let st = ghola::remote::status(index_dir, &r.name);
                (r, st)
            })
            .collect();
    // Transcripts without a message: counted here, not listed by `ghola sessions`/`projects` or the browser.
    let empty = super::history::listing(claude_dir, index_dir)
        .sessions
        .iter()
        .filter(|l| l.summary.is_empty())
        .count();
    // The team hub: who this machine pushes as, and to where (no connection: `ghola hub status` asks the hub).
    let hub = ghola::hub::load_login(index_dir).ok().flatten().map(|l| {
        let at = ghola::hub::HubUrl::parse(&l.url)
            .map(|u| u.shown())
            .unwrap_or_default();
        let pushed = ghola::hub::load_watermark(index_dir)
            .map(|w| w.sessions.len())
            .unwrap_or(0);
        (l.person, at, pushed)
    });
    if json {
        let mut v = serde_json::to_value(&s)?;
        v["machine"] = serde_json::json!(knobs.machine());
        v["empty_transcripts"] = serde_json::json!(empty);
        v["hub"] = match &hub {
            Some((person, at, pushed)) => {
                serde_json::json!({"person": person, "hub": at, "sessions_pushed": pushed})
            }
            None => serde_json::Value::Null,
        };
        v["remotes"] = serde_json::json!(
            remotes
                .iter()
                .map(|(r, st)| serde_json::json!({
                    "name": r.name, "host": r.host, "last_success": st.last_success,
                    "last_error": st.last_error, "failures": st.failures,
                }))
                .collect::<Vec<_>>()
        );
        v["readable_by_others"] = serde_json::json!(
            loose
                .iter()
                .map(|(p, m)| serde_json::json!({"path": p, "mode": format!("{m:o}")}))
                .collect::<Vec<_>>()
        );
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for (p, m) in &loose {
            eprintln!(
                "ghola: WARNING: {} is readable by other users of this machine (mode {m:o}); the next `ghola \
                 index` makes ghola's folders private (0700, files 0600)",
                p.display()
            );
        }
        println!("index: {}", index_dir.display());
        println!("machine: {}", knobs.machine());
        for (r, st) in &remotes {
            match (&st.last_error, &st.last_success) {
                (Some(e), _) => {
                    println!("remote {}: FAILING ({} in a row): {e}", r.name, st.failures)
                }
                (None, Some(t)) => println!("remote {}: synced {t}", r.name),
                (None, None) => println!(
                    "remote {}: never synced (`ghola remote sync {}`)",
                    r.name, r.name
                ),
            }
        }
        if empty > 0 {
            println!(
                "{empty} transcript(s) hold no message (empty, or a title alone): not listed as sessions"
            );
        }
        if let Some((person, at, pushed)) = &hub {
            println!(
                "team hub: {at} as {person}; {pushed} session(s) pushed from here (`ghola hub status` for more)"
            );
        }
        println!(
            "projects {} · sessions {} · messages {} ({} not embedded yet) · chunks {}",
            s.projects, s.sessions, s.messages, s.messages_waiting, s.chunks
        );
        println!(
            "vectors {:.1} MB · index {:.1} MB · model {}",
            s.vectors_bytes as f64 / 1e6,
            s.index_bytes as f64 / 1e6,
            s.model
        );
        println!(
            "updated {} · pending files {} · excluded sessions {} · source-deleted files {}",
            s.updated_at.as_deref().unwrap_or("never"),
            s.pending_files,
            s.excluded_sessions,
            s.source_deleted_files
        );
        println!(
            "archive {}: {} files of {} sessions, {:.1} MB kept in {:.1} MB · sessions only in the archive {}",
            if s.archive_enabled {
                "on"
            } else {
                "off (nothing new is archived)"
            },
            s.archive.files,
            s.archive.sessions,
            s.archive.original_bytes as f64 / 1e6,
            s.archive.stored_bytes as f64 / 1e6,
            s.sessions_only_in_archive
        );
        if s.credentials_hidden > 0 {
            println!(
                "credentials hidden {} (shown as [REDACTED:<rule>]; `ghola secrets` lists them, `ghola secrets \
                 redact --all` scrubs ghola's copies)",
                s.credentials_hidden
            );
        }
    }
    Ok(())
}
