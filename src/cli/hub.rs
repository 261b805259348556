//! `ghola hub`: a team hub on PostgreSQL + pgvector — init, invite, revoke, login, logout, share, unshare, push,
//! status. Nothing leaves this machine until a project is shared; what leaves is redacted (docs/hub.md).

use super::knobs::Knobs;
use anyhow::{Context, Result, anyhow};
use clap::{Args, Subcommand};
use ghola::hub::{self, HubError, HubUrl, Login};
use ghola::service::HistoryService;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long one hub command may take before it gives up (a push is per session, so its limit is long).
const COMMAND_LIMIT: Duration = Duration::from_secs(60);
const PUSH_LIMIT: Duration = Duration::from_secs(6 * 3600);

/// `ghola hub`.
#[derive(Debug, Args)]
pub struct HubArgs {
    #[command(subcommand)]
    pub action: HubAction,
}

/// What `ghola hub` does.
#[derive(Debug, Subcommand)]
pub enum HubAction {
    /// For whoever runs the database: creates the pgvector extension, ghola's schema and its access policies
    /// (run it again after an upgrade: it changes only what is missing). The URL must be the database owner's;
    /// it is kept on this machine alone (mode 600), for `invite` and `revoke`.
    Init { url: String },
    /// Makes a person's database role and prints their connection URL, once (again: a new password).
    Invite {
        person: String,
        #[arg(long)]
        json: bool,
    },
    /// Drops a person's role: they can no longer log in. What they pushed stays unless --purge.
    Revoke {
        person: String,
        /// Delete every row they pushed too.
        #[arg(long)]
        purge: bool,
    },
    /// This machine pushes and searches as the person whose URL this is (stored mode 600, never printed).
    Login {
        url: String,
        /// This machine's name on the hub (default: `machine` in the settings, else the host name).
        #[arg(long)]
        machine: Option<String>,
    },
    /// Forgets this machine's hub login (what was pushed stays on the hub).
    Logout,
    /// Lets a project's sessions leave this machine: with the whole team, or only --with these people.
    Share {
        /// The project's directory (as `ghola projects` lists it; `.` for the current one).
        project: PathBuf,
        /// Only these people (names as invited); repeat or separate with commas.
        #[arg(long, value_delimiter = ',')]
        with: Vec<String>,
        /// The model's thinking leaves too (left out by default).
        #[arg(long)]
        thinking: bool,
        /// Tool output leaves too (left out by default; tool calls always leave).
        #[arg(long)]
        tools: bool,
    },
    /// Stops sharing a project and deletes what was pushed of it from the hub.
    Unshare { project: PathBuf },
    /// Sends what the shared projects have that the hub lacks: redacted, re-embedded.
    Push {
        /// List what would leave and what was redacted; send nothing.
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
    },
    /// The login, the hub, the team, this person's shares and what was pushed.
    Status {
        #[arg(long)]
        json: bool,
    },
}

fn login(index_dir: &Path) -> Result<(Login, HubUrl)> {
    let l = hub::load_login(index_dir)?.ok_or(HubError::NotLoggedIn)?;
    let url = HubUrl::parse(&l.url)?;
    Ok((l, url))
}

/// `ghola hub …`.
pub fn hub_cmd(
    index_dir: &Path,
    claude_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &Knobs,
    args: HubArgs,
) -> Result<()> {
    match args.action {
        HubAction::Init { url } => init(index_dir, &url),
        HubAction::Invite { person, json } => invite(index_dir, &person, json),
        HubAction::Revoke { person, purge } => revoke(index_dir, &person, purge),
        HubAction::Login { url, machine } => log_in(index_dir, knobs, &url, machine),
        HubAction::Logout => log_out(index_dir),
        HubAction::Share {
            project,
            with,
            thinking,
            tools,
        } => share(
            index_dir,
            project,
            hub::share::ShareOptions {
                with,
                thinking,
                tools,
            },
        ),
        HubAction::Unshare { project } => unshare(index_dir, claude_dir, model_dir, knobs, project),
        HubAction::Push { dry_run, json } => {
            push(index_dir, claude_dir, model_dir, knobs, dry_run, json)
        }
        HubAction::Status { json } => status(index_dir, json),
    }
}

/// `ghola hub init URL`: the schema and policies, the admin URL kept here.
fn init(index_dir: &Path, url: &str) -> Result<()> {
    let admin = HubUrl::parse(url)?;
    let before = hub::block(COMMAND_LIMIT, async {
        let mut c = hub::connect(&admin).await?;
        hub::schema::init(&mut c, admin.dbname()).await
    })?;
    hub::save_admin(index_dir, admin.raw())?;
    match before {
        None => println!(
            "the hub at {} is ready (schema version {}). Invite people with `ghola hub invite NAME`.",
            admin.shown(),
            hub::schema::SCHEMA_VERSION
        ),
        Some(v) => println!(
            "the hub at {} was at schema version {v}; it is at version {} now, nothing else changed.",
            admin.shown(),
            hub::schema::SCHEMA_VERSION
        ),
    }
    Ok(())
}

/// `ghola hub invite PERSON`: their role, and their URL printed once.
fn invite(index_dir: &Path, person: &str, json: bool) -> Result<()> {
    let admin = HubUrl::parse(&hub::load_admin(index_dir)?.ok_or(HubError::NotAdmin)?)?;
    let inv = hub::block(COMMAND_LIMIT, hub::people::invite(&admin, person))?;
    if json {
        println!("{}", serde_json::to_string(&inv)?);
    } else {
        println!(
            "{} is invited. Give them this URL (shown once; it holds their password):\n\n  {}\n\n\
             They run `ghola hub login URL` with it.",
            inv.person, inv.url
        );
    }
    Ok(())
}

/// `ghola hub revoke PERSON [--purge]`.
fn revoke(index_dir: &Path, person: &str, purge: bool) -> Result<()> {
    let admin = HubUrl::parse(&hub::load_admin(index_dir)?.ok_or(HubError::NotAdmin)?)?;
    let deleted = hub::block(COMMAND_LIMIT, hub::people::revoke(&admin, person, purge))?;
    if purge {
        println!("{person} is revoked; {deleted} of their messages were deleted from the hub");
    } else {
        println!(
            "{person} is revoked and can no longer log in; what they shared stays (`--purge` deletes it)"
        );
    }
    Ok(())
}

/// `ghola hub login URL`: checks the URL is one of the team's, then keeps it (mode 600).
fn log_in(index_dir: &Path, knobs: &Knobs, url: &str, machine: Option<String>) -> Result<()> {
    let parsed = HubUrl::parse(url)?;
    let machine = machine.unwrap_or_else(|| knobs.machine());
    if !ghola::config::is_machine_name(&machine) {
        return Err(anyhow!(
            "--machine {machine:?}: a machine's name is letters, digits, '.', '_' and '-'"
        ));
    }
    let person = hub::block(COMMAND_LIMIT, async {
        let c = hub::connect(&parsed).await?;
        hub::schema::check(&c, &parsed.shown()).await?;
        let row = c
            .query_one(
                "select current_user::text, pg_has_role(current_user, $1, 'member')",
                &[&hub::TEAM_ROLE],
            )
            .await
            .map_err(|e| HubError::db("reading who this URL logs in as", e))?;
        let (role, member): (String, bool) = (row.get(0), row.get(1));
        if !member {
            return Err(HubError::Invalid {
                arg: "URL",
                message: format!(
                    "{role} is not one of the hub's people (an admin's URL?): log in with the URL \
                     `ghola hub invite` printed"
                ),
            });
        }
        Ok(hub::person_of(&role))
    })?;
    hub::save_login(
        index_dir,
        &Login {
            url: parsed.raw().to_string(),
            person: person.clone(),
            machine: machine.clone(),
        },
    )?;
    println!(
        "logged in to {} as {person}, from machine {machine}. Nothing leaves this machine until you \
         `ghola hub share PROJECT`.",
        parsed.shown()
    );
    Ok(())
}

/// `ghola hub logout`.
fn log_out(index_dir: &Path) -> Result<()> {
    if hub::remove_login(index_dir)? {
        println!("logged out: this machine no longer pushes or searches the hub");
    } else {
        println!("this machine was not logged in to a hub");
    }
    Ok(())
}

/// `ghola hub share PROJECT`: the share recorded on the hub, said in words.
fn share(index_dir: &Path, project: PathBuf, opts: hub::share::ShareOptions) -> Result<()> {
    let (_, url) = login(index_dir)?;
    let project = super::history::project_dir(Some(project))?;
    let share = hub::block(COMMAND_LIMIT, async {
        let c = hub::connect(&url).await?;
        hub::schema::check(&c, &url.shown()).await?;
        hub::share::share(&c, &project, &opts).await
    })?;
    let whom = if share.with.is_empty() {
        "the whole team".to_string()
    } else {
        share.with.join(", ")
    };
    let extra = match (share.thinking, share.tools) {
        (false, false) => "thinking and tool output stay here",
        (true, false) => "with thinking; tool output stays here",
        (false, true) => "with tool output; thinking stays here",
        (true, true) => "with thinking and tool output",
    };
    println!(
        "{} is shared with {whom} ({extra}). `ghola hub push --dry-run` shows what would leave; \
         `ghola hub push` sends it.",
        share.project
    );
    Ok(())
}

/// `ghola hub unshare PROJECT`: the share and the pushed rows gone, the watermark of its sessions void.
fn unshare(
    index_dir: &Path,
    claude_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &Knobs,
    project: PathBuf,
) -> Result<()> {
    let (_, url) = login(index_dir)?;
    let project = super::history::project_dir(Some(project))?;
    let (was, sessions) = hub::block(COMMAND_LIMIT, async {
        let mut c = hub::connect(&url).await?;
        hub::share::unshare(&mut c, &project).await
    })?;
    // The watermark of those sessions is void: a later share pushes them again.
    let mut mark = hub::load_watermark(index_dir)?;
    let listing = HistoryService::new(knobs.history(claude_dir, index_dir, model_dir)).listing();
    for s in listing.sessions_in(Some(&project)) {
        mark.sessions.remove(&s.session_id);
    }
    hub::save_watermark(index_dir, &mark)?;
    if was {
        println!(
            "{project} is no longer shared; {sessions} of its sessions were deleted from the hub"
        );
    } else {
        println!(
            "{project} was not shared; {sessions} session(s) of it were on the hub and are deleted"
        );
    }
    Ok(())
}

fn push(
    index_dir: &Path,
    claude_dir: &Path,
    model_dir: Option<&Path>,
    knobs: &Knobs,
    dry_run: bool,
    json: bool,
) -> Result<()> {
    // No login: say so before loading the model.
    login(index_dir)?;
    let history = HistoryService::new(knobs.history(claude_dir, index_dir, model_dir));
    if !dry_run {
        history
            .model()
            .set(super::recall::obtain_model(model_dir, knobs, json)?);
    }
    super::recall::run_update(
        index_dir,
        claude_dir,
        None,
        knobs.update.before_query().words_first(),
        true,
    )
    .context("updating the index before the push")?;
    history.invalidate_listing();
    let report = history.push_to_hub(dry_run, PUSH_LIMIT)?;
    if json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    if report.removed > 0 {
        println!(
            "{} forgotten session(s) removed from the hub",
            report.removed
        );
    }
    let redacted = if report.redacted.is_empty() {
        "no credential found".to_string()
    } else {
        let kinds: Vec<String> = report
            .redacted
            .0
            .iter()
            .map(|(rule, n)| format!("{n} {rule}"))
            .collect();
        format!(
            "credentials replaced by [REDACTED:<rule>]: {}",
            kinds.join(", ")
        )
    };
    if dry_run {
        if report.sessions.is_empty() {
            println!(
                "nothing would leave: no shared project has anything the hub lacks (`ghola hub status`)"
            );
            return Ok(());
        }
        println!("would leave this machine (redacted, re-embedded):");
        for s in &report.sessions {
            println!(
                "  {}  {}  {}  {} of {} messages  {}",
                &s.session_id[..s.session_id.len().min(8)],
                s.machine,
                s.project,
                s.leaving,
                s.messages,
                s.title.as_deref().unwrap_or("")
            );
        }
        println!("{redacted}");
        return Ok(());
    }
    println!(
        "pushed {} message(s) of {} session(s) to the hub; {redacted}{}",
        report.messages,
        report.sessions.len(),
        if report.forgotten > 0 {
            format!("; {} forgotten session(s) left out", report.forgotten)
        } else {
            String::new()
        }
    );
    Ok(())
}

fn status(index_dir: &Path, json: bool) -> Result<()> {
    let admin = hub::load_admin(index_dir)?;
    let Some(l) = hub::load_login(index_dir)? else {
        if json {
            println!(
                "{}",
                serde_json::json!({"logged_in": false, "admin_here": admin.is_some()})
            );
        } else {
            println!("no hub login on this machine (`ghola hub login URL`); nothing leaves it");
            if admin.is_some() {
                println!("this machine holds the hub's admin credential (`ghola hub invite NAME`)");
            }
        }
        return Ok(());
    };
    let url = HubUrl::parse(&l.url)?;
    let mark = hub::load_watermark(index_dir)?;
    let remote = hub::block(COMMAND_LIMIT, hub::status(&url));
    if json {
        let v = serde_json::json!({
            "logged_in": true,
            "person": l.person,
            "machine": l.machine,
            "hub": url.shown(),
            "admin_here": admin.is_some(),
            "sessions_pushed_from_here": mark.sessions.len(),
            "forgets_pending": mark.forgotten.len(),
            "hub_status": remote.as_ref().ok(),
            "error": remote.as_ref().err().map(|e| e.to_string()),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "hub      {} as {} (machine {})",
        url.shown(),
        l.person,
        l.machine
    );
    match remote {
        Err(e) => println!("reach    {e}"),
        Ok(st) => {
            println!("schema   version {}", st.schema_version);
            println!("team     {}", st.people.join(", "));
            if st.shares.is_empty() {
                println!("shares   none: nothing leaves this machine (`ghola hub share PROJECT`)");
            }
            for s in &st.shares {
                println!(
                    "share    {}  with {}{}{}",
                    s.project,
                    if s.with.is_empty() {
                        "the whole team".to_string()
                    } else {
                        s.with.join(", ")
                    },
                    if s.thinking { ", thinking" } else { "" },
                    if s.tools { ", tool output" } else { "" }
                );
            }
            println!(
                "yours    {} session(s), {} message(s) on the hub; {} visible to you in all",
                st.own_sessions, st.own_messages, st.visible_messages
            );
        }
    }
    println!(
        "here     {} session(s) pushed from this machine{}",
        mark.sessions.len(),
        if mark.forgotten.is_empty() {
            String::new()
        } else {
            format!("; {} forget(s) to tell the hub", mark.forgotten.len())
        }
    );
    Ok(())
}
