//! The hub's schema, versioned, and its access rules: a role per person in [`TEAM_ROLE`](super::TEAM_ROLE),
//! row-level security on every table people write (a person reads their own rows and those shared with them,
//! writes only rows they own), no DDL for people. `ghola hub init` applies it in one transaction, as the
//! database's owner; running it again changes nothing. docs/hub.md explains each policy.

use super::HubError;
use tokio_postgres::Client;

/// The schema this ghola writes and reads. A hub at a newer version is refused ([`HubError::NewerSchema`]).
pub const SCHEMA_VERSION: i32 = 1;

/// The statements of version 1, each idempotent.
const V1: &str = r#"
create extension if not exists vector;
create schema if not exists ghola;
create table if not exists ghola.meta (key text primary key, value text not null);

-- What a message's words are: Chinese, Japanese and Korean, written without spaces between words, as the
-- overlapping pairs of each run of their characters (a lone one as itself), everything else by the English
-- configuration, full-width letters and digits as ASCII — as ghola's own keyword index reads them
-- (index::terms, whose ranges these are, as tests::the_hub_reads_text_as_the_index_does checks; the client
-- analyses a query the same way, hub::search::query_words).
create or replace function ghola.cjk_pairs(t text) returns text
language sql immutable strict parallel safe set search_path = pg_catalog as $$
  select coalesce(string_agg(substr(m[1], i, 2), ' '), '')
  from regexp_matches(t, '[\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002ffff]+', 'g') m,
       generate_series(1, greatest(length(m[1]) - 1, 1)) i
$$;
create or replace function ghola.words_of(t text) returns tsvector
language sql immutable strict parallel safe set search_path = pg_catalog as $$
  -- Text of ASCII alone has neither pairs nor full-width letters: the English configuration alone, without
  -- the regular expressions, which cost most of computing the column (docs/hub.md, "Search").
  select case when octet_length(t) = length(t) then to_tsvector('english', t)
  else to_tsvector('english', translate(regexp_replace(t, '[\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002ffff]+', ' ', 'g'),
                                              '０１２３４５６７８９ＡＢＣＤＥＦＧＨＩＪＫＬＭＮＯＰＱＲＳＴＵＶＷＸＹＺａｂｃｄｅｆｇｈｉｊｋｌｍｎｏｐｑｒｓｔｕｖｗｘｙｚ',
                                              '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'))
         || to_tsvector('simple', ghola.cjk_pairs(t))
  end
$$;
do $$ begin
  if not exists (select from pg_roles where rolname = 'ghola_team') then
    create role ghola_team nologin;
  end if;
end $$;

-- Who is on the team; readable by everyone on it (so that a share can name them), written by the admin alone.
create table if not exists ghola.people (
  person text primary key,
  role name not null unique,
  invited_at timestamptz not null default now()
);

-- A project a person shares: with the whole team (people is null) or the roles listed.
create table if not exists ghola.shares (
  owner name not null default current_user,
  project text not null,
  people name[],
  with_thinking boolean not null default false,
  with_tools boolean not null default false,
  shared_at timestamptz not null default now(),
  primary key (owner, project)
);

create table if not exists ghola.sessions (
  owner name not null default current_user,
  session_id text not null,
  machine text not null,
  project text not null,
  title text,
  first_at timestamptz,
  last_at timestamptz,
  messages integer not null default 0,
  pushed_at timestamptz not null default now(),
  primary key (owner, session_id)
);

create table if not exists ghola.messages (
  owner name not null default current_user,
  id text not null,
  session_id text not null,
  machine text not null,
  project text not null,
  agent_id text,
  seq bigint not null,
  role text not null,
  kind text not null,
  at timestamptz,
  content text not null,
  model text not null,
  embedding halfvec(384),
  words tsvector generated always as (ghola.words_of(content)) stored,
  primary key (owner, id),
  foreign key (owner, session_id) references ghola.sessions (owner, session_id) on delete cascade
);
-- A hub made before the pairs (its words the English configuration's alone) is given them: the column is
-- computed again for every row, once.
do $$ begin
  if not exists (select from pg_attrdef d join pg_attribute a on a.attrelid = d.adrelid and a.attnum = d.adnum
                 where d.adrelid = 'ghola.messages'::regclass and a.attname = 'words'
                   and pg_get_expr(d.adbin, d.adrelid) like '%words_of%') then
    alter table ghola.messages drop column if exists words;
    alter table ghola.messages add column words tsvector generated always as (ghola.words_of(content)) stored;
  end if;
end $$;
create index if not exists messages_embedding on ghola.messages using hnsw (embedding halfvec_cosine_ops);
create index if not exists messages_words on ghola.messages using gin (words);
create index if not exists messages_session on ghola.messages (owner, session_id, at, seq);
create index if not exists messages_project_at on ghola.messages (project, at);

-- Sessions a person forgot: none of their machines pushes them again.
create table if not exists ghola.tombstones (
  owner name not null default current_user,
  session_id text not null,
  at timestamptz not null default now(),
  primary key (owner, session_id)
);

-- Who may read a row: its owner, and the people its project is shared with. The one definition the policies
-- and the word search below use.
-- (No SET clause, so that PostgreSQL inlines it into the policies; every name in it is qualified.)
create or replace function ghola.can_read(reader name, row_owner name, row_project text) returns boolean
language sql stable as $$
  select row_owner = reader or exists (
    select 1 from ghola.shares s
    where s.owner = row_owner and s.project = row_project
      and (s.people is null or reader = any (s.people)))
$$;

-- The word search, as the database's owner with can_read for the person logged in: under row-level security
-- PostgreSQL cannot use the text index (the match operator is not leakproof) and would read every row.
create or replace function ghola.word_search(query tsquery, project_name text, owners name[], only_machines text[],
    not_before timestamptz, before timestamptz, scan integer, top integer)
returns table (owner text, id text, rank real)
language sql stable security definer set search_path = pg_catalog, ghola as $$
  select m.owner::text, m.id, ts_rank_cd(m.words, query)::real from (
    select owner, id, words from ghola.messages
    where words @@ query and ghola.can_read(session_user, owner, project)
      and (project_name is null or regexp_replace(project, '^.*[/\\]', '') = project_name)
      and (cardinality(owners) = 0 or owner = any (owners))
      and (cardinality(only_machines) = 0 or machine = any (only_machines))
      and (not_before is null or at >= not_before) and (before is null or at < before)
    limit scan) m
  order by 3 desc limit top
$$;

revoke all on schema ghola from public;
revoke all on all functions in schema ghola from public;
grant execute on all functions in schema ghola to ghola_team;
grant usage on schema ghola to ghola_team;
revoke all on all tables in schema ghola from public;
grant select on ghola.meta, ghola.people to ghola_team;
grant select, insert, update, delete on ghola.shares, ghola.sessions, ghola.messages, ghola.tombstones
  to ghola_team;

alter table ghola.shares enable row level security;
alter table ghola.sessions enable row level security;
alter table ghola.messages enable row level security;
alter table ghola.tombstones enable row level security;

drop policy if exists read on ghola.shares;
drop policy if exists own on ghola.shares;
create policy read on ghola.shares for select
  using (owner = current_user or people is null or current_user = any (people));
create policy own on ghola.shares for all
  using (owner = current_user) with check (owner = current_user);

drop policy if exists read on ghola.sessions;
drop policy if exists own on ghola.sessions;
create policy read on ghola.sessions for select using (ghola.can_read(current_user, owner, project));
create policy own on ghola.sessions for all
  using (owner = current_user) with check (owner = current_user);

drop policy if exists read on ghola.messages;
drop policy if exists own on ghola.messages;
create policy read on ghola.messages for select using (ghola.can_read(current_user, owner, project));
create policy own on ghola.messages for all
  using (owner = current_user) with check (owner = current_user);

drop policy if exists own on ghola.tombstones;
create policy own on ghola.tombstones for all
  using (owner = current_user) with check (owner = current_user);
"#;

/// The version the hub's schema is at, `None` when it has none.
pub async fn version(client: &Client) -> Result<Option<i32>, HubError> {
    let exists = client
        .query_one("select to_regclass('ghola.meta') is not null", &[])
        .await
        .map_err(|e| HubError::db("reading the schema version", e))?;
    if !exists.get::<_, bool>(0) {
        return Ok(None);
    }
    let row = client
        .query_opt(
            "select value from ghola.meta where key = 'schema_version'",
            &[],
        )
        .await
        .map_err(|e| HubError::db("reading the schema version", e))?;
    Ok(row.and_then(|r| r.get::<_, String>(0).parse().ok()))
}

/// Fails unless the hub's schema is one this ghola reads.
pub async fn check(client: &Client, at: &str) -> Result<(), HubError> {
    match version(client).await? {
        None => Err(HubError::NoSchema { at: at.to_string() }),
        Some(v) if v > SCHEMA_VERSION => Err(HubError::NewerSchema { found: v }),
        Some(_) => Ok(()),
    }
}

/// Creates or completes the schema, in one transaction: the extension, the tables, the team role, the grants
/// and the policies; the database closed to everyone but the team and its owner. Returns the version it was at
/// before (`None`: a new hub).
pub async fn init(client: &mut Client, dbname: &str) -> Result<Option<i32>, HubError> {
    let before = version(client).await?;
    if let Some(v) = before
        && v > SCHEMA_VERSION
    {
        return Err(HubError::NewerSchema { found: v });
    }
    let tx = client
        .transaction()
        .await
        .map_err(|e| HubError::db("starting the schema's transaction", e))?;
    tx.batch_execute(V1)
        .await
        .map_err(|e| HubError::db("creating the schema", e))?;
    let db = quote_ident(dbname);
    tx.batch_execute(&format!(
        "revoke all on database {db} from public; grant connect on database {db} to ghola_team;"
    ))
    .await
    .map_err(|e| HubError::db("closing the database to others", e))?;
    tx.execute(
        "insert into ghola.meta (key, value) values ('schema_version', $1) \
         on conflict (key) do update set value = excluded.value",
        &[&SCHEMA_VERSION.to_string()],
    )
    .await
    .map_err(|e| HubError::db("recording the schema version", e))?;
    tx.commit()
        .await
        .map_err(|e| HubError::db("committing the schema", e))?;
    Ok(before)
}

/// `name` as an SQL identifier, quoted.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `text` as an SQL string literal (for statements that take no parameters, such as `create role`).
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::V1;
    use crate::index::terms::{is_cjk, narrow};

    /// The schema's words (`ghola.words_of`, `ghola.cjk_pairs`) mirror ghola's own index in SQL: both regular
    /// expressions name exactly the characters `is_cjk` names, and the full-width letters and digits `translate`
    /// maps are exactly those `narrow` reads as ASCII, each as `narrow` reads it.
    #[test]
    fn the_hub_reads_text_as_the_index_does() {
        let classes: Vec<&str> = V1
            .match_indices("'[")
            .map(|(at, _)| &V1[at + 1..][..V1[at + 1..].find("]+'").unwrap() + 1])
            .collect();
        assert_eq!(classes.len(), 2, "{classes:?}");
        assert_eq!(classes[0], classes[1]);
        let ranges: Vec<(u32, u32)> = classes[0]
            .trim_matches(['[', ']'])
            .split('\\')
            .filter(|r| !r.is_empty())
            .collect::<Vec<_>>()
            .chunks(2)
            .map(|r| {
                let code = |s: &str| u32::from_str_radix(s[1..].trim_end_matches('-'), 16).unwrap();
                (code(r[0]), code(r[1]))
            })
            .collect();
        for c in (0..0x30000).filter_map(char::from_u32) {
            let in_sql = ranges.iter().any(|&(a, b)| (a..=b).contains(&(c as u32)));
            assert_eq!(in_sql, is_cjk(c), "{c:?} U+{:04X}", c as u32);
        }
        let at = V1.find("translate(").unwrap();
        let quoted: Vec<&str> = V1[at..].split('\'').collect();
        let (wide, ascii) = (quoted[7], quoted[9]);
        assert_eq!(wide.chars().count(), ascii.chars().count());
        for (w, a) in wide.chars().zip(ascii.chars()) {
            assert_eq!(narrow(w), a, "{w}");
        }
        let narrowed = (0..0x30000)
            .filter_map(char::from_u32)
            .filter(|&c| narrow(c) != c)
            .count();
        assert_eq!(narrowed, wide.chars().count());
    }
}
