//! `ghola remote`: other machines' Claude Code histories over SSH — add, list, sync, map, remove.

use super::knobs::Knobs;
use anyhow::{Result, anyhow};
use clap::{Args, Subcommand};
use ghola::remote::{self, Remote, sync::SyncOptions};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// `ghola remote`.
#[derive(Debug, Args)]
pub struct RemoteArgs {
    #[command(subcommand)]
    pub action: RemoteAction,
}

/// What `ghola remote` does.
#[derive(Debug, Subcommand)]
pub enum RemoteAction {
    /// Adds a machine whose history ghola copies over SSH (read only; nothing is installed there), then syncs it.
    Add {
        /// Its name in results (letters, digits, '.', '_', '-').
        name: String,
        /// `[user@]host`, or a host from ~/.ssh/config.
        #[arg(long, value_name = "[USER@]HOST")]
        ssh: String,
        #[arg(long)]
        port: Option<u16>,
        /// A private key file for this machine (else ssh's usual ones, the agent, ~/.ssh/config).
        #[arg(long, value_name = "FILE")]
        identity: Option<PathBuf>,
        /// Its Claude config dir (`~/` is the remote user's home); also spelled `--claude-dir` after `remote add`.
        #[arg(long, value_name = "DIR", default_value = remote::DEFAULT_CLAUDE_DIR)]
        remote_claude_dir: String,
        /// Only record it; sync later.
        #[arg(long)]
        no_sync: bool,
    },
    /// The remotes, with their last sync.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Copies what is new on the remotes (all when none is named), then updates the index.
    Sync {
        names: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Reads a project path of that machine as one of this machine's (the same checkout in two places), so the
    /// project is one project.
    Map {
        name: String,
        /// The folder on the remote (`/home/me/src`).
        remote_path: String,
        /// The same folder here (`/Users/me/src`).
        local_path: String,
    },
    /// Stops syncing a machine and deletes its copy; what was indexed stays searchable unless `--forget`.
    Remove {
        name: String,
        /// Forget its sessions too (index and archive), for good.
        #[arg(long)]
        forget: bool,
        /// Do not ask (needed when stdin is not a terminal).
        #[arg(long, short)]
        yes: bool,
    },
}

/// `ghola remote …`.
pub fn remote_cmd(
    index_dir: &Path,
    claude_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &Knobs,
    args: RemoteArgs,
) -> Result<()> {
    let this = knobs.machine();
    match args.action {
        RemoteAction::Add {
            name,
            ssh,
            port,
            identity,
            remote_claude_dir: remote_dir,
            no_sync,
        } => {
            let identity = identity.map(|i| std::path::absolute(&i).unwrap_or(i));
            let r = remote::add(
                index_dir,
                &this,
                Remote {
                    name,
                    host: ssh,
                    port,
                    identity,
                    claude_dir: remote_dir,
                    map: Vec::new(),
                    auto_map: Vec::new(),
                    added: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                },
            )?;
            println!("added {} ({})", r.name, r.host);
            if no_sync {
                return Ok(());
            }
            sync_and_index(index_dir, claude_dir, model_dir, knobs, std::slice::from_ref(&r.name), false).map_err(|e| {
                e.context(format!(
                    "{} is added, but its first sync failed; fix that and run `ghola remote sync {}`",
                    r.name, r.name
                ))
            })
        }
        RemoteAction::List { json } => list(index_dir, &this, json),
        RemoteAction::Sync { names, json } => {
            let names = if names.is_empty() {
                remote::list(index_dir)
                    .into_iter()
                    .map(|r| r.name)
                    .collect()
            } else {
                for n in &names {
                    remote::get(index_dir, n)?;
                }
                names
            };
            if names.is_empty() {
                return Err(anyhow!(
                    "no remotes yet: `ghola remote add NAME --ssh HOST` adds one"
                ));
            }
            sync_and_index(index_dir, claude_dir, model_dir, knobs, &names, json)
        }
        RemoteAction::Map {
            name,
            remote_path,
            local_path,
        } => {
            let r = remote::set_map(
                index_dir,
                &name,
                ghola::transcript::PathMap {
                    from: remote_path.clone(),
                    to: local_path.clone(),
                },
            )?;
            // Its sessions are read again with the rule (the listing cache and the index hold the old paths).
            remote::reread(index_dir, &r.name)?;
            println!("{name}: {remote_path} reads as {local_path}");
            super::recall::index_cmd(index_dir, claude_dir, model_dir, knobs, false, false, false)
        }
        RemoteAction::Remove { name, forget, yes } => {
            remote::get(index_dir, &name)?;
            if forget && !yes {
                if !std::io::stdin().is_terminal() {
                    return Err(anyhow!(
                        "--forget removes {name}'s sessions for good; confirm with --yes (stdin is not a terminal)"
                    ));
                }
                if !super::confirm(&format!(
                    "Remove {name} and forget its sessions from the index and the archive, for good?"
                ))? {
                    return Ok(());
                }
            }
            let sessions = remote::remove(index_dir, &name)?;
            if forget && !sessions.is_empty() {
                use ghola::index::forget as f;
                let sel = f::Selection {
                    sessions: sessions.clone(),
                    project: None,
                    before_ms: None,
                };
                let chosen = f::select(index_dir, &sel, false).unwrap_or_default();
                let done = f::forget(index_dir, &chosen, false)?;
                let ids: Vec<String> = chosen.iter().map(|s| s.session_id.clone()).collect();
                super::recall::tell_hub_forgotten(index_dir, &ids);
                println!(
                    "removed {name}; forgot {} session(s), {} messages",
                    done.sessions, done.messages_removed
                );
            } else {
                println!(
                    "removed {name}: no longer synced; its {} session(s) stay searchable (`ghola forget` removes them)",
                    sessions.len()
                );
            }
            Ok(())
        }
    }
}

/// Syncs `names` one after another, then updates the index once; fails (after trying every one) when any sync
/// failed.
fn sync_and_index(
    index_dir: &Path,
    claude_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &Knobs,
    names: &[String],
    json: bool,
) -> Result<()> {
    let opts = SyncOptions {
        ssh_command: knobs.env.ssh_command.clone(),
        progress: !json && std::io::stderr().is_terminal(),
        local_claude_dir: claude_dir.to_path_buf(),
        wait: false,
        plain_ssh: false,
    };
    let mut reports = Vec::new();
    let mut failed = Vec::new();
    for n in names {
        match remote::sync::sync(index_dir, n, &opts) {
            Ok(r) => {
                if !json {
                    println!(
                        "{}: {} file(s), {:.1} MB by {} in {:.1}s",
                        r.name,
                        r.files,
                        r.bytes as f64 / 1e6,
                        r.method.name(),
                        r.seconds
                    );
                }
                reports.push(serde_json::to_value(&r)?);
            }
            Err(e) => {
                eprintln!("{e}");
                reports.push(serde_json::json!({"name": n, "error": e.to_string()}));
                failed.push(n.clone());
            }
        }
    }
    // What arrived is indexed even when another remote failed.
    let index = if failed.len() < names.len() {
        update_index(index_dir, claude_dir, model_dir, knobs, json)?
    } else {
        None
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"remotes": reports, "index": index}))?
        );
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(anyhow!(
            "{} of {} remote(s) could not be synced: {}",
            failed.len(),
            names.len(),
            failed.join(", ")
        ))
    }
}

/// Brings the index up to date as `ghola index` does; with `json`, quietly, returning its summary.
fn update_index(
    index_dir: &Path,
    claude_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &Knobs,
    json: bool,
) -> Result<Option<serde_json::Value>> {
    use super::recall::{index_cmd, obtain_model, run_embedding, run_update};
    if !json {
        index_cmd(index_dir, claude_dir, model_dir, knobs, false, false, false)?;
        return Ok(None);
    }
    let opts = ghola::index::UpdateOptions {
        wait: true,
        ..knobs.update
    }
    .words_first();
    let embedder = obtain_model(model_dir, knobs, true).ok();
    let s = run_update(index_dir, claude_dir, embedder.as_ref(), opts, true)?;
    if let Some(e) = &embedder {
        run_embedding(index_dir, e, knobs.update.neighbour, None, true)?;
    }
    Ok(Some(serde_json::to_value(&s)?))
}

/// `ghola remote list`.
fn list(index_dir: &Path, this: &str, json: bool) -> Result<()> {
    let remotes = remote::list(index_dir);
    let rows: Vec<serde_json::Value> = remotes
        .iter()
        .map(|r| {
            let st = remote::status(index_dir, &r.name);
            let sessions = ghola::transcript::discover(&ghola::index::machines::machine_dir(
                index_dir, &r.name,
            ))
            .sessions
            .len();
            serde_json::json!({
                "name": r.name, "host": r.host, "port": r.port, "claude_dir": r.claude_dir,
                "map": r.map, "auto_map": r.auto_map, "sessions": sessions, "status": st,
            })
        })
        .collect();
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"this_machine": this, "remotes": rows})
            )?
        );
        return Ok(());
    }
    if remotes.is_empty() {
        println!(
            "no remotes: `ghola remote add NAME --ssh [USER@]HOST` adds one (this machine is {this})"
        );
        return Ok(());
    }
    for (r, row) in remotes.iter().zip(&rows) {
        let st = remote::status(index_dir, &r.name);
        let state = match (&st.last_error, &st.last_success) {
            (Some(e), _) => format!("FAILED {}: {e}", st.last_attempt.as_deref().unwrap_or("?")),
            (None, Some(t)) => format!("synced {t} by {}", st.method),
            (None, None) => "never synced".into(),
        };
        println!(
            "{}  {}  {} session(s)  {state}",
            r.name, r.host, row["sessions"]
        );
        for m in &r.map {
            println!("    {} → {}", m.from, m.to);
        }
        for m in &r.auto_map {
            println!("    {} → {}  (same git remote)", m.from, m.to);
        }
    }
    Ok(())
}
