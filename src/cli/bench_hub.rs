//! `ghola bench hub`: the team hub at scale against a real PostgreSQL + pgvector (the admin's URL): the push rate
//! of the database side (the same statements as `ghola hub push`, the vectors made from a pool of real
//! embeddings with noise, since embedding a million texts is the embedding bench's business), team search
//! p50/p95 under row-level security as a person who may read half of the rows, and the hub's bytes per message.

use super::bench_scale::Rng;
use anyhow::{Context, Result};
use ghola::hub::push::{OutMessage, SessionRow, message_id, write_messages};
use ghola::hub::search::{TeamQuery, search};
use ghola::hub::{self, HubError, HubUrl};
use std::path::Path;
use std::time::{Duration, Instant};

/// Messages per synthetic session, and per insert statement.
const PER_SESSION: usize = 200;
const BATCH: usize = 256;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// A unit vector near `base` (a real embedding): the pool's meaning with per-message noise.
fn near(base: &[f32], rng: &mut Rng) -> Vec<f32> {
    let mut v: Vec<f32> = base
        .iter()
        .map(|x| x + ((rng.next() % 2001) as f32 / 1000.0 - 1.0) * 0.03)
        .collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

/// `ghola bench hub --url ADMIN_URL --messages N`.
pub fn hub_bench(
    url: &str,
    messages: usize,
    texts: &Path,
    search_only: bool,
    model_dir: Option<&Path>,
) -> Result<()> {
    println!(
        "command: ghola bench hub --url <admin URL> --messages {messages} --texts {}{}",
        texts.display(),
        if search_only { " --search-only" } else { "" }
    );
    let admin = HubUrl::parse(url)?;
    let long = Duration::from_secs(24 * 3600);
    hub::block(long, async {
        let mut c = hub::connect(&admin).await?;
        hub::schema::init(&mut c, admin.dbname()).await
    })?;
    let a = hub::block(long, hub::people::invite(&admin, "bench_a"))?;
    let b = hub::block(long, hub::people::invite(&admin, "bench_b"))?;
    let (a, b) = (HubUrl::parse(&a.url)?, HubUrl::parse(&b.url)?);
    let embedder = ghola::embed::Embedder::from_places(
        &ghola::config::Environment::read().model_places(model_dir),
    )
    .context("the bench embeds its vector pool and queries with the real model")?;
    let mut rng = Rng(0x5EED_4B1B);
    // Real Claude Code texts (the embedding bench's), so that the words' spread is a real history's.
    let pool_texts: Vec<String> = std::fs::read_to_string(texts)
        .with_context(|| format!("reading {}", texts.display()))?
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(|t| t.chars().take(2000).collect()))
        .collect();
    anyhow::ensure!(!pool_texts.is_empty(), "no texts in {}", texts.display());
    let refs: Vec<&str> = pool_texts.iter().map(String::as_str).collect();
    let pool = embedder.embed(&refs)?;
    if !search_only {
        push_rows(&a, messages, &pool_texts, &pool, &mut rng)?;
    }
    // Team search as bench_b (sees the shared half) and as bench_a (sees everything).
    let queries: Vec<(String, Vec<f32>)> = (0..60)
        .map(|_| {
            // Three to five words in a row from one of the texts: a query that has an answer.
            let words: Vec<&str> = pool_texts[(rng.next() % pool_texts.len() as u64) as usize]
                .split_whitespace()
                .collect();
            let n = (3 + (rng.next() % 3) as usize).min(words.len());
            let start = (rng.next() as usize) % (words.len() - n + 1).max(1);
            let q = words[start..start + n].join(" ");
            let v = embedder.embed(&[q.as_str()]).map(|v| v[0].to_vec());
            v.map(|v| (q, v))
        })
        .collect::<Result<_, _>>()?;
    for (who, url) in [
        ("bench_b (half visible)", &b),
        ("bench_a (all visible)", &a),
    ] {
        let mut times = Vec::new();
        let mut found = 0usize;
        hub::block(long, async {
            let mut c = hub::connect(url).await?;
            for (i, (text, v)) in queries.iter().enumerate() {
                let q = TeamQuery {
                    text: text.clone(),
                    vector: Some(v.clone()),
                    threshold: 0.2,
                    limit: 10,
                    ..TeamQuery::default()
                };
                let t = Instant::now();
                let hits = search(&mut c, &q).await?;
                if i >= 5 {
                    times.push(t.elapsed().as_secs_f64());
                }
                found += hits.len();
            }
            Ok(())
        })?;
        times.sort_by(f64::total_cmp);
        println!(
            "team search as {who}: p50 {:.1} ms, p95 {:.1} ms over {} queries ({:.1} hits each)",
            percentile(&times, 0.5) * 1e3,
            percentile(&times, 0.95) * 1e3,
            times.len(),
            found as f64 / queries.len() as f64
        );
    }
    let sizes = hub::block(long, async {
        let c = hub::connect(&admin).await?;
        let r = c
            .query_one(
                "select pg_total_relation_size('ghola.messages'), pg_relation_size('ghola.messages'), \
                 pg_relation_size('ghola.messages_embedding'), pg_relation_size('ghola.messages_words'), \
                 (select count(*) from ghola.messages)",
                &[],
            )
            .await
            .map_err(|e| HubError::db("measuring the hub", e))?;
        Ok((
            r.get::<_, i64>(0),
            r.get::<_, i64>(1),
            r.get::<_, i64>(2),
            r.get::<_, i64>(3),
            r.get::<_, i64>(4),
        ))
    })?;
    let (total, heap, hnsw, words, rows) = sizes;
    let per = |b: i64| b as f64 / rows.max(1) as f64;
    println!(
        "hub size: {rows} messages, {:.0} MB in all = {:.0} bytes/message (table {:.0}, HNSW {:.0}, text index {:.0})",
        total as f64 / 1e6,
        per(total),
        per(heap),
        per(hnsw),
        per(words)
    );
    Ok(())
}

/// Clears bench_a's earlier rows, shares half of the projects, and pushes `messages` rows as `ghola hub push`
/// writes them, printing the rate.
fn push_rows(
    a: &HubUrl,
    messages: usize,
    pool_texts: &[String],
    pool: &[ghola::embed::Vector],
    rng: &mut Rng,
) -> Result<()> {
    let long = Duration::from_secs(24 * 3600);
    // Half the projects are shared with the team; bench_b's searches must be filtered by the policies.
    hub::block(long, async {
        let c = hub::connect(a).await?;
        c.batch_execute("delete from ghola.sessions where owner = current_user; delete from ghola.shares where owner = current_user")
            .await
            .map_err(|e| HubError::db("clearing an earlier run", e))?;
        let opts = hub::share::ShareOptions::default();
        hub::share::share(&c, "/bench/shared", &opts).await?;
        Ok(())
    })?;
    let sessions = messages.div_ceil(PER_SESSION);
    let started = Instant::now();
    let mut written = 0u64;
    hub::block(long, async {
        let mut c = hub::connect(a).await?;
        for s in 0..sessions {
            let id = format!("{:08x}-0000-4000-8000-{:012x}", s, s);
            let project = if s % 2 == 0 {
                "/bench/shared"
            } else {
                "/bench/private"
            };
            let n = PER_SESSION.min(messages - s * PER_SESSION);
            let mut rows = Vec::with_capacity(n);
            let mut vectors = Vec::with_capacity(n);
            for m in 0..n {
                let k = (rng.next() % pool.len() as u64) as usize;
                rows.push(OutMessage {
                    id: message_id(&id, None, &format!("{id}-{m}")),
                    agent_id: None,
                    seq: m as i64,
                    role: if m % 2 == 0 { "user" } else { "assistant" }.into(),
                    kind: "text".into(),
                    at: chrono::DateTime::from_timestamp(
                        1_735_689_600 + (s * 3600 + m * 30) as i64,
                        0,
                    ),
                    content: pool_texts[k].clone(),
                });
                vectors.push(pgvector::HalfVector::from_f32_slice(&near(&pool[k], rng)));
            }
            let tx = c
                .transaction()
                .await
                .map_err(|e| HubError::db("starting a session", e))?;
            tx.execute(
                "insert into ghola.sessions (session_id, machine, project, messages) values ($1, 'bench', $2, $3)",
                &[&id, &project, &(n as i32)],
            )
            .await
            .map_err(|e| HubError::db("writing a session", e))?;
            let at = SessionRow {
                session_id: &id,
                machine: "bench",
                project,
            };
            let refs: Vec<&OutMessage> = rows.iter().collect();
            for (batch, vs) in refs.chunks(BATCH).zip(vectors.chunks(BATCH)) {
                written += write_messages(&tx, &at, batch, vs).await?;
            }
            tx.commit()
                .await
                .map_err(|e| HubError::db("committing a session", e))?;
            if (s + 1) % (sessions / 10).max(1) == 0 {
                let secs = started.elapsed().as_secs_f64();
                eprintln!(
                    "  {written} messages in {secs:.0} s ({:.0} messages/s)",
                    written as f64 / secs
                );
            }
        }
        Ok(())
    })?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "push (database side, one connection, HNSW and text index kept live): {written} messages in {secs:.1} s = \
         {:.0} messages/s",
        written as f64 / secs
    );
    Ok(())
}
