//! A team hub on PostgreSQL + pgvector: what people chose to share, searchable by the team, with access enforced
//! by the database itself (a role per person, row-level security), never by this client.
//!
//! One machine's ghola stays embedded and needs no server; the hub is the shared part, on an engine that already
//! does roles, replication, TLS and backups. Nothing leaves a machine until a project is shared
//! ([`share::share`]); what leaves is derived rows — session and message metadata, the text redacted by
//! [`crate::secrets`], vectors embedded from that redacted text and tagged with the model's identity — never a
//! transcript ([`push`]).
//!
//! - `connect.rs` the URL (TLS verified unless the server is on loopback or `sslmode=disable`), the connection;
//! - [`schema`] the versioned schema and its policies (`ghola hub init`);
//! - [`people`] invitations and revocations (the admin's credential, kept where `init` ran);
//! - [`share`] which projects leave this machine, and for whom;
//! - [`push`] the derived rows, redacted and re-embedded, pushed idempotently from a watermark;
//! - [`search`] the team's rows ranked by pgvector and PostgreSQL's text search;
//! - `state.rs` this machine's hub files (login, admin, watermark), readable by this user alone.

mod connect;
pub mod people;
pub mod push;
pub mod schema;
pub mod search;
pub mod share;
mod state;

pub use connect::{HubUrl, block, connect};
pub use state::{
    Login, Watermark, hub_dir, load_admin, load_login, load_watermark, remove_login, save_admin,
    save_login, save_watermark,
};

use std::path::PathBuf;
use std::time::Duration;

/// The role every person's role is a member of: what the policies and grants name.
pub const TEAM_ROLE: &str = "ghola_team";
/// A person's role is this prefix and their name: roles are the cluster's, so the prefix keeps ghola's apart.
pub const ROLE_PREFIX: &str = "ghola_";
/// How long connecting may take before the hub counts as down.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What failed, named: the hub unreachable, a refusal of the database, a file of this machine, an argument.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// No `ghola hub login` on this machine.
    #[error(
        "this machine has no hub login: run `ghola hub login URL` with the URL your hub's admin gave you"
    )]
    NotLoggedIn,
    /// `invite` / `revoke` away from the machine where `init` ran.
    #[error(
        "inviting and revoking need the hub's admin credential, kept only where `ghola hub init` ran: run it there"
    )]
    NotAdmin,
    /// An argument the caller can fix.
    #[error("{arg}: {message}")]
    Invalid { arg: &'static str, message: String },
    /// The server could not be reached or refused the login.
    #[error("the hub at {at} could not be reached: {detail}")]
    Connect { at: String, detail: String },
    /// A statement failed (a policy refusal is one).
    #[error("the hub refused {what}: {detail}")]
    Db { what: &'static str, detail: String },
    /// The hub's schema is newer than this ghola's.
    #[error(
        "the hub's schema is version {found}, and this ghola understands up to version {}: update ghola",
        schema::SCHEMA_VERSION
    )]
    NewerSchema { found: i32 },
    /// The database has no ghola schema.
    #[error("the hub at {at} has no ghola schema yet: its admin runs `ghola hub init URL` first")]
    NoSchema { at: String },
    /// The hub did not answer in time.
    #[error("the hub did not answer within {0:?}")]
    Timeout(Duration),
    /// One of this machine's hub files.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A hub file of this machine that does not parse.
    #[error("{} is damaged ({detail}); `ghola hub login URL` writes it again", path.display())]
    Damaged { path: PathBuf, detail: String },
    /// The redacted text could not be embedded.
    #[error("embedding for the hub failed: {0}")]
    Embed(#[from] crate::embed::EmbedError),
}

impl HubError {
    /// A statement's failure, with the server's own words (tokio-postgres' `Display` alone says "db error").
    pub fn db(what: &'static str, e: tokio_postgres::Error) -> Self {
        HubError::Db {
            what,
            detail: detail(&e),
        }
    }

    /// Whether the caller can fix it by asking differently.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            HubError::NotLoggedIn
                | HubError::NotAdmin
                | HubError::Invalid { .. }
                | HubError::NewerSchema { .. }
                | HubError::NoSchema { .. }
        )
    }
}

/// What `ghola hub status` shows of the hub, as the logged-in person sees it.
#[derive(Debug, serde::Serialize)]
pub struct HubStatus {
    pub schema_version: i32,
    /// Everyone invited.
    pub people: Vec<String>,
    /// This person's shares.
    pub shares: Vec<share::Share>,
    pub own_sessions: i64,
    pub own_messages: i64,
    /// Messages this person may read (theirs and those shared with them).
    pub visible_messages: i64,
}

/// Reads [`HubStatus`] as `url`'s person.
pub async fn status(url: &HubUrl) -> Result<HubStatus, HubError> {
    let c = connect(url).await?;
    schema::check(&c, &url.shown()).await?;
    let version = schema::version(&c).await?.unwrap_or(0);
    let people = c
        .query("select person from ghola.people order by person", &[])
        .await
        .map_err(|e| HubError::db("reading the team", e))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let shares = share::own(&c).await?;
    let counts = c
        .query_one(
            "select (select count(*) from ghola.sessions where owner = current_user), \
             (select count(*) from ghola.messages where owner = current_user), \
             (select count(*) from ghola.messages)",
            &[],
        )
        .await
        .map_err(|e| HubError::db("counting rows", e))?;
    Ok(HubStatus {
        schema_version: version,
        people,
        shares,
        own_sessions: counts.get(0),
        own_messages: counts.get(1),
        visible_messages: counts.get(2),
    })
}

/// The server's message (and its detail and hint) when there is one, else the error's chain.
pub fn detail(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = db.message().to_string();
        if let Some(d) = db.detail() {
            s.push_str(" (");
            s.push_str(d);
            s.push(')');
        }
        return s;
    }
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// A person's name, checked: it becomes a database role, so lowercase letters, digits and `_`, starting with a
/// letter, at most 40 characters.
pub fn check_person(name: &str) -> Result<String, HubError> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(name.to_string())
    } else {
        Err(HubError::Invalid {
            arg: "PERSON",
            message: format!(
                "{name:?} cannot be a person's name on the hub: lowercase letters, digits and _, starting with a \
                 letter, at most 40 characters"
            ),
        })
    }
}

/// The database role of `person`.
pub fn role_of(person: &str) -> String {
    format!("{ROLE_PREFIX}{person}")
}

/// The person a role stands for (the role itself when it is not one of ghola's).
pub fn person_of(role: &str) -> String {
    role.strip_prefix(ROLE_PREFIX).unwrap_or(role).to_string()
}

/// The embedding space a vector belongs to: the model and its weights. Rows of another space are never compared.
pub fn model_identity() -> String {
    format!(
        "{}@{}",
        crate::embed::MODEL_ID,
        &crate::embed::WEIGHTS_SHA256[..16.min(crate::embed::WEIGHTS_SHA256.len())]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn person_names_are_role_safe() {
        assert!(check_person("alice").is_ok());
        assert!(check_person("bob_2").is_ok());
        for bad in [
            "",
            "Alice",
            "2bob",
            "a-b",
            "a b",
            "x\"; drop",
            &"a".repeat(41),
        ] {
            assert!(check_person(bad).is_err(), "{bad:?}");
        }
        assert_eq!(person_of(&role_of("alice")), "alice");
    }
}
