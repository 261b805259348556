//! The team's rows, ranked where they are: meaning through pgvector's HNSW index over `halfvec` (iterative
//! scans, so that rows the policies hide do not starve the answer), words through PostgreSQL's text search
//! (any of the query's words, ranked by cover density), fused by reciprocal rank as the local ranking's plain
//! floor is. The database's row-level security decides what a person sees; this only asks.

use super::{HubError, person_of};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::HashMap;
use tokio_postgres::Client;

/// Candidates each evidence contributes before fusion.
const CANDIDATES: i64 = 100;
/// Rows matching the query's words that are ranked at most (the rest are not looked at).
const MATCHES_RANKED: i64 = 2000;
/// Reciprocal-rank fusion's constant.
const RRF_K: f32 = 60.0;

/// What the team search asks.
#[derive(Debug, Clone, Default)]
pub struct TeamQuery {
    pub text: String,
    /// The query's embedding (absent: words only).
    pub vector: Option<Vec<f32>>,
    /// Only projects of this folder name (a project's path differs between people's machines; its last
    /// component is what they share).
    pub project_name: Option<String>,
    /// Only these people (names); empty: everyone visible.
    pub people: Vec<String>,
    /// Only these machines; empty: every one.
    pub machines: Vec<String>,
    pub after: Option<DateTime<Utc>>,
    pub before: Option<DateTime<Utc>>,
    /// A hit matching no query word needs at least this cosine similarity.
    pub threshold: f32,
    pub limit: usize,
}

/// One of the team's messages found.
#[derive(Debug, Clone, Serialize)]
pub struct HubHit {
    pub person: String,
    pub machine: String,
    pub session_id: String,
    pub project: String,
    pub title: Option<String>,
    pub id: String,
    pub role: String,
    pub kind: String,
    pub at: Option<DateTime<Utc>>,
    pub content: String,
    pub semantic: f32,
    pub lexical: f32,
    /// The fused score (reciprocal rank).
    pub score: f32,
}

/// A hub row: its owner's role and its id.
type Key = (String, String);
/// A row's fused score, cosine and text-search rank.
type Evidence = (f32, f32, f32);

const FILTERS: &str = "($2::text is null or regexp_replace(project, '^.*[/\\\\]', '') = $2) \
    and (cardinality($3::name[]) = 0 or owner = any ($3)) \
    and (cardinality($4::text[]) = 0 or machine = any ($4)) \
    and ($5::timestamptz is null or at >= $5) and ($6::timestamptz is null or at < $6)";

/// Searches the hub as the logged-in person.
pub async fn search(client: &mut Client, q: &TeamQuery) -> Result<Vec<HubHit>, HubError> {
    let roles: Vec<String> = q.people.iter().map(|p| super::role_of(p)).collect();
    let tx = client
        .transaction()
        .await
        .map_err(|e| HubError::db("starting the team search", e))?;
    tx.batch_execute(
        "set local hnsw.iterative_scan = relaxed_order; set local hnsw.ef_search = 200",
    )
    .await
    .map_err(|e| HubError::db("setting up the vector scan", e))?;
    let mut found: HashMap<Key, Evidence> = HashMap::new();
    let model = super::model_identity();
    if let Some(v) = &q.vector {
        let v = pgvector::HalfVector::from_f32_slice(v);
        let rows = tx
            .query(
                &format!(
                    "select owner::text, id, (1 - (embedding <=> $1))::real from ghola.messages \
                     where model = $7 and {FILTERS} order by embedding <=> $1 limit $8"
                ),
                &[
                    &v,
                    &q.project_name,
                    &roles,
                    &q.machines,
                    &q.after,
                    &q.before,
                    &model,
                    &CANDIDATES,
                ],
            )
            .await
            .map_err(|e| HubError::db("the team's vector search", e))?;
        for (rank, r) in rows.iter().enumerate() {
            let e = found.entry((r.get(0), r.get(1))).or_default();
            e.0 += 1.0 / (RRF_K + rank as f32 + 1.0);
            e.1 = r.get(2);
        }
    }
    // Words: every query word first (selective, through the GIN index); any of them only when that finds too
    // few. Either way at most MATCHES_RANKED matching rows are ranked, so a common word cannot make a search
    // rank the team's whole history. `ghola.word_search` runs as the schema's owner with the policies' own
    // predicate (`ghola.can_read`) for the logged-in person: under row-level security the text index is unusable.
    // The query analysed as `ghola.words_of` analyses a message: its other words by the English configuration,
    // the pairs of its runs of Chinese, Japanese or Korean by the simple one. (A hub whose `ghola hub init`
    // predates the pairs holds none, and finds such a query by its other words alone.)
    let (english, pairs) = query_words(&q.text);
    let both = "(plainto_tsquery('english', $1) && to_tsquery('simple', $9))";
    for query in [
        both.to_string(),
        format!("nullif(replace({both}::text, '&', '|'), '')::tsquery"),
    ] {
        let rows = tx
            .query(
                &format!(
                    "select w.owner, w.id, w.rank from (select {query} as t) q, \
                     ghola.word_search(q.t, $2, $3::name[], $4, $5, $6, $7, $8) w where q.t is not null"
                ),
                &[
                    &english,
                    &q.project_name,
                    &roles,
                    &q.machines,
                    &q.after,
                    &q.before,
                    &(MATCHES_RANKED as i32),
                    &(CANDIDATES as i32),
                    &pairs,
                ],
            )
            .await
            .map_err(|e| HubError::db("the team's word search", e))?;
        let enough = rows.len() >= q.limit.max(1);
        for (rank, r) in rows.iter().enumerate() {
            let e = found.entry((r.get(0), r.get(1))).or_default();
            if e.2 == 0.0 {
                e.0 += 1.0 / (RRF_K + rank as f32 + 1.0);
                e.2 = r.get(2);
            }
        }
        if enough {
            break;
        }
    }
    let mut ranked: Vec<(Key, Evidence)> = found
        .into_iter()
        .filter(|(_, (_, cos, lex))| *lex > 0.0 || *cos >= q.threshold)
        .collect();
    ranked.sort_by(|a, b| b.1.0.total_cmp(&a.1.0).then_with(|| a.0.cmp(&b.0)));
    ranked.truncate(q.limit);
    if ranked.is_empty() {
        return Ok(Vec::new());
    }
    let owners: Vec<&str> = ranked.iter().map(|((o, _), _)| o.as_str()).collect();
    let ids: Vec<&str> = ranked.iter().map(|((_, i), _)| i.as_str()).collect();
    let rows = tx
        .query(
            "select m.owner::text, m.id, m.machine, m.session_id, m.project, s.title, m.role, m.kind, m.at, \
             m.content from ghola.messages m join ghola.sessions s using (owner, session_id) \
             join unnest($1::text[], $2::text[]) as w(owner, id) on m.owner = w.owner::name and m.id = w.id",
            &[&owners, &ids],
        )
        .await
        .map_err(|e| HubError::db("reading the team's hits", e))?;
    let mut by_key: HashMap<Key, tokio_postgres::Row> = rows
        .into_iter()
        .map(|r| ((r.get::<_, String>(0), r.get::<_, String>(1)), r))
        .collect();
    Ok(ranked
        .into_iter()
        .filter_map(|(key, (score, semantic, lexical))| {
            let r = by_key.remove(&key)?;
            Some(HubHit {
                person: person_of(&key.0),
                id: key.1,
                machine: r.get(2),
                session_id: r.get(3),
                project: r.get(4),
                title: r.get(5),
                role: r.get(6),
                kind: r.get(7),
                at: r.get(8),
                content: r.get(9),
                semantic,
                lexical,
                score,
            })
        })
        .collect())
}

/// A session on the hub, as `get_session_detail` and duncan read it: its redacted messages in order.
#[derive(Debug, Clone, Serialize)]
pub struct HubSession {
    pub person: String,
    pub machine: String,
    pub session_id: String,
    pub project: String,
    pub title: Option<String>,
    pub messages: Vec<HubMessage>,
}

/// One message of a hub session.
#[derive(Debug, Clone, Serialize)]
pub struct HubMessage {
    pub id: String,
    pub role: String,
    pub kind: String,
    pub at: Option<DateTime<Utc>>,
    pub content: String,
}

/// The session `id` (or a unique prefix of it) as the person may read it, `None` when the hub shows them none.
pub async fn session(client: &Client, id: &str) -> Result<Option<HubSession>, HubError> {
    let rows = client
        .query(
            "select owner::text, machine, session_id, project, title from ghola.sessions \
             where session_id like $1 || '%' order by session_id limit 2",
            &[&id.replace(['%', '_'], "")],
        )
        .await
        .map_err(|e| HubError::db("looking up a team session", e))?;
    let [r] = rows.as_slice() else {
        return Ok(None);
    };
    let owner: String = r.get(0);
    let session_id: String = r.get(2);
    let messages = client
        .query(
            "select id, role, kind, at, content from ghola.messages where owner = $1::text::name \
             and session_id = $2 order by at nulls first, agent_id nulls first, seq",
            &[&owner, &session_id],
        )
        .await
        .map_err(|e| HubError::db("reading a team session", e))?
        .iter()
        .map(|m| HubMessage {
            id: m.get(0),
            role: m.get(1),
            kind: m.get(2),
            at: m.get(3),
            content: m.get(4),
        })
        .collect();
    Ok(Some(HubSession {
        person: person_of(&owner),
        machine: r.get(1),
        project: r.get(3),
        title: r.get(4),
        session_id,
        messages,
    }))
}

/// The people and machines whose sessions this person may read on the hub: the browser's facets.
pub async fn facets(client: &Client) -> Result<(Vec<String>, Vec<String>), HubError> {
    let rows = client
        .query(
            "select distinct owner::text, machine from ghola.sessions order by 1, 2",
            &[],
        )
        .await
        .map_err(|e| HubError::db("listing the team's people and machines", e))?;
    let mut people: Vec<String> = rows
        .iter()
        .map(|r| person_of(&r.get::<_, String>(0)))
        .collect();
    let mut machines: Vec<String> = rows.iter().map(|r| r.get(1)).collect();
    people.dedup();
    machines.sort();
    machines.dedup();
    Ok((people, machines))
}

/// A query's words as the hub's word index holds a message's (`ghola.words_of` in the schema): the text with its
/// runs of Chinese, Japanese or Korean blanked and its full-width letters and digits as ASCII, for the English
/// configuration (`plainto_tsquery`), and those runs' pairs of characters as a query of the simple one
/// (`to_tsquery`), all of them asked for: the pairs ghola's own query asks for
/// ([`crate::index::lexical::query_terms`], which leaves out pairs of grammar unless the query has no other
/// word), a word of katakana asked for by a piece of it rather than by any one pair
/// ([`crate::index::terms::katakana_words`]): two of its pairs side by side (`'サー' <-> 'ービ' | 'ービ' <->
/// 'ビス'`).
pub fn query_words(text: &str) -> (String, String) {
    use crate::index::lexical::query_terms;
    use crate::index::terms::{is_cjk, katakana_words, narrow};
    let english = without_foreign_function_words(
        &text
            .chars()
            .map(|c| if is_cjk(c) { ' ' } else { narrow(c) })
            .collect::<String>(),
    );
    let mut pairs: Vec<String> = query_terms(text)
        .into_iter()
        .filter(|t| t.chars().all(is_cjk))
        .collect();
    // The pairs are characters of `is_cjk` alone: nothing in them needs quoting in a tsquery.
    let mut parts: Vec<String> = Vec::new();
    for word in katakana_words(text) {
        pairs.retain(|p| !word.contains(p));
        let pieces: Vec<String> = word
            .windows(2)
            .map(|w| format!("'{}' <-> '{}'", w[0], w[1]))
            .collect();
        parts.push(format!("( {} )", pieces.join(" | ")));
    }
    parts.extend(pairs.into_iter().map(|p| format!("'{p}'")));
    (english, parts.join(" & "))
}

/// `text` with the function words of languages other than English blanked, as ghola's own query leaves them
/// out: Russian's и, в, не … ([`crate::index::function_words::is_russian`]), and those of the language of
/// Latin letters the query is written in ([`crate::index::function_words`]: `de`, `la` of a question in
/// Spanish). PostgreSQL's English configuration knows English's alone.
fn without_foreign_function_words(text: &str) -> String {
    use crate::index::{function_words, lexical};
    let latin = function_words::of_the_query_language(text, lexical::FUNCTION_WORDS);
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if (!word.is_ascii() && function_words::is_russian(word))
            || latin.contains(&word.to_lowercase())
        {
            out.extend(word.chars().map(|_| ' '));
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::query_words;

    #[test]
    fn a_query_is_split_as_the_hub_indexes_a_message() {
        assert_eq!(
            query_words("技術スタック in CLAUDE.mdファイル"),
            (
                "       in CLAUDE.md    ".to_string(),
                "( 'スタ' <-> 'タッ' | 'タッ' <-> 'ック' ) & ( 'ファ' <-> 'ァイ' | 'ァイ' <-> 'イル' ) & '技術' & '術ス'"
                    .to_string()
            )
        );
        assert_eq!(query_words("ＡＰＩ３").0, "API3");
        assert_eq!(
            query_words("flaky upload test"),
            ("flaky upload test".to_string(), String::new())
        );
        // Pairs of grammar are left out, unless nothing else is asked.
        assert_eq!(query_words("移行について").1, "'移行'");
        assert_eq!(query_words("について").1, "'につ' & 'つい' & 'いて'");
        assert_eq!(query_words("retry について").1, "");
        // Russian's function words too, which the English configuration keeps.
        assert_eq!(
            query_words("почему не работает кэш").0,
            "почему    работает кэш"
        );
        // And those of a question in Spanish, French or German, which it keeps too.
        assert_eq!(
            query_words("¿por qué falló la migración?").0,
            "¿        falló    migración?"
        );
        assert_eq!(
            query_words("warum ist die Migration fehlgeschlagen").0,
            "              Migration fehlgeschlagen"
        );
    }
}
