//! Who is on the team: `ghola hub invite PERSON` makes their role (a login in [`super::TEAM_ROLE`],
//! no other right) with a fresh password and hands out their URL once; `ghola hub revoke PERSON` drops the role,
//! so they cannot log in again, and with `purge` deletes what they pushed. Both run with the admin's credential.

use super::schema::{quote_ident, quote_literal};
use super::{HubError, HubUrl, TEAM_ROLE, check_person, role_of};
use serde::Serialize;

/// An invitation: the person and the URL they log in with (printed once, kept nowhere by ghola).
#[derive(Debug, Serialize)]
pub struct Invitation {
    pub person: String,
    pub url: String,
}

/// A password of 128 random bits, in hex (nothing in it needs escaping in a URL).
fn new_password() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Whether the cluster has the role `role`.
async fn role_exists(tx: &tokio_postgres::Transaction<'_>, role: &str) -> Result<bool, HubError> {
    Ok(tx
        .query_one(
            "select exists (select from pg_roles where rolname = $1)",
            &[&role],
        )
        .await
        .map_err(|e| HubError::db("looking up the role", e))?
        .get::<_, bool>(0))
}

/// Makes `person`'s role, or gives an existing one a new password (a lost URL is replaced, not recovered).
pub async fn invite(admin: &HubUrl, person: &str) -> Result<Invitation, HubError> {
    let person = check_person(person)?;
    let role = role_of(&person);
    let password = new_password();
    let mut client = super::connect(admin).await?;
    super::schema::check(&client, &admin.shown()).await?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| HubError::db("starting the invitation", e))?;
    let exists = role_exists(&tx, &role).await?;
    let (r, p) = (quote_ident(&role), quote_literal(&password));
    let ddl = if exists {
        format!("alter role {r} with login password {p}")
    } else {
        format!("create role {r} with login password {p} in role {TEAM_ROLE}")
    };
    tx.batch_execute(&ddl)
        .await
        .map_err(|e| HubError::db("creating the person's role", e))?;
    tx.execute(
        "insert into ghola.people (person, role) values ($1, $2) on conflict (person) do nothing",
        &[&person, &role],
    )
    .await
    .map_err(|e| HubError::db("recording the person", e))?;
    tx.commit()
        .await
        .map_err(|e| HubError::db("committing the invitation", e))?;
    Ok(Invitation {
        url: admin.for_user(&role, &password),
        person,
    })
}

/// Drops `person`'s role (their sessions end with it); with `purge`, deletes every row they pushed first.
/// Returns the messages deleted.
pub async fn revoke(admin: &HubUrl, person: &str, purge: bool) -> Result<u64, HubError> {
    let person = check_person(person)?;
    let role = role_of(&person);
    let mut client = super::connect(admin).await?;
    super::schema::check(&client, &admin.shown()).await?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| HubError::db("starting the revocation", e))?;
    let known = role_exists(&tx, &role).await?;
    if !known {
        return Err(HubError::Invalid {
            arg: "PERSON",
            message: format!("no one called {person} is on this hub"),
        });
    }
    let mut deleted = 0;
    if purge {
        deleted = tx
            .execute("delete from ghola.messages where owner = $1", &[&role])
            .await
            .map_err(|e| HubError::db("deleting the person's messages", e))?;
        for table in ["sessions", "shares", "tombstones"] {
            tx.execute(
                &format!("delete from ghola.{table} where owner = $1"),
                &[&role],
            )
            .await
            .map_err(|e| HubError::db("deleting the person's rows", e))?;
        }
    }
    tx.execute("delete from ghola.people where role = $1", &[&role])
        .await
        .map_err(|e| HubError::db("removing the person", e))?;
    tx.batch_execute(&format!("drop role {}", quote_ident(&role)))
        .await
        .map_err(|e| HubError::db("dropping the person's role", e))?;
    tx.commit()
        .await
        .map_err(|e| HubError::db("committing the revocation", e))?;
    // Their open connections end too, where the admin may end them (a superuser, or a member of
    // pg_signal_backend); elsewhere they end when they disconnect, and cannot log in again.
    if let Err(e) = client
        .execute(
            "select pg_terminate_backend(pid) from pg_stat_activity where usename = $1",
            &[&role],
        )
        .await
    {
        tracing::warn!(
            "{role}'s open connections could not be ended: {}",
            super::detail(&e)
        );
    }
    Ok(deleted)
}
