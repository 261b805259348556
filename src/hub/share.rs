//! Which projects leave this machine, and for whom. A share is a row of the hub (`ghola.shares`), owned by the
//! person: the database's policies read it to decide who sees that project's rows, and a push sends only
//! projects this person shares. Unsharing deletes what was pushed of the project.

use super::{HubError, role_of};
use serde::Serialize;
use tokio_postgres::Client;

/// One of this person's shares.
#[derive(Debug, Clone, Serialize)]
pub struct Share {
    /// The project's path as this machine records it.
    pub project: String,
    /// The people it is shared with; empty: the whole team.
    pub with: Vec<String>,
    /// Whether the model's thinking leaves with it.
    pub thinking: bool,
    /// Whether tool output leaves with it.
    pub tools: bool,
}

/// What a share asks for beyond the project.
#[derive(Debug, Clone, Default)]
pub struct ShareOptions {
    /// People (names, not roles); empty: the whole team.
    pub with: Vec<String>,
    pub thinking: bool,
    pub tools: bool,
}

/// Shares `project` as `opts` says (a second share of it replaces the first). Every person named must be on
/// the team.
pub async fn share(client: &Client, project: &str, opts: &ShareOptions) -> Result<Share, HubError> {
    let mut roles: Vec<String> = Vec::new();
    for p in &opts.with {
        let p = super::check_person(p)?;
        let known = client
            .query_opt("select role from ghola.people where person = $1", &[&p])
            .await
            .map_err(|e| HubError::db("looking up the people to share with", e))?;
        match known {
            Some(_) => roles.push(role_of(&p)),
            None => {
                return Err(HubError::Invalid {
                    arg: "--with",
                    message: format!(
                        "no one called {p} is on this hub (`ghola hub status` lists the team)"
                    ),
                });
            }
        }
    }
    let people: Option<Vec<String>> = (!roles.is_empty()).then_some(roles);
    client
        .execute(
            "insert into ghola.shares (project, people, with_thinking, with_tools) values ($1, $2, $3, $4) \
             on conflict (owner, project) do update set people = excluded.people, \
             with_thinking = excluded.with_thinking, with_tools = excluded.with_tools, shared_at = now()",
            &[&project, &people, &opts.thinking, &opts.tools],
        )
        .await
        .map_err(|e| HubError::db("recording the share", e))?;
    Ok(Share {
        project: project.to_string(),
        with: opts.with.clone(),
        thinking: opts.thinking,
        tools: opts.tools,
    })
}

/// Stops sharing `project` and deletes what was pushed of it. Returns (whether it was shared, sessions deleted).
pub async fn unshare(client: &mut Client, project: &str) -> Result<(bool, u64), HubError> {
    let tx = client
        .transaction()
        .await
        .map_err(|e| HubError::db("starting the unshare", e))?;
    let was = tx
        .execute(
            "delete from ghola.shares where owner = current_user and project = $1",
            &[&project],
        )
        .await
        .map_err(|e| HubError::db("removing the share", e))?;
    let sessions = tx
        .execute(
            "delete from ghola.sessions where owner = current_user and project = $1",
            &[&project],
        )
        .await
        .map_err(|e| HubError::db("deleting the project's sessions", e))?;
    tx.commit()
        .await
        .map_err(|e| HubError::db("committing the unshare", e))?;
    Ok((was > 0, sessions))
}

/// This person's shares.
pub async fn own(client: &Client) -> Result<Vec<Share>, HubError> {
    let rows = client
        .query(
            "select project, coalesce(people, '{}'::name[])::text[], with_thinking, with_tools \
             from ghola.shares where owner = current_user order by project",
            &[],
        )
        .await
        .map_err(|e| HubError::db("reading the shares", e))?;
    Ok(rows
        .iter()
        .map(|r| Share {
            project: r.get(0),
            with: r
                .get::<_, Vec<String>>(1)
                .iter()
                .map(|x| super::person_of(x))
                .collect(),
            thinking: r.get(2),
            tools: r.get(3),
        })
        .collect())
}
