//! `ghola ui` from outside: the address on the first line of stdout, 401 without the token, 403 for a foreign
//! Host, loopback only, a search that shows the hit and links to its place in the session, the session read as
//! a conversation with its tool results folded — over HTTP, and rendered by a real headless Chromium; then a
//! person's whole visit driven in that browser through WebDriver (Debian's `chromedriver`): type a query and
//! see the hit appear, open its session at the hit, unfold a tool result, edit and forget a note, forget a
//! session and see it gone.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;

use crate::common;

use common::browser::{
    Ui, appears, attribute, chromium, dump_dom, skipped, start_driver, webdriver, which,
};
use common::{ghola_at, run_json, run_ok};

fn start(claude: &Path, index: &Path) -> Ui {
    start_with(claude, index, None)
}

fn start_with(claude: &Path, index: &Path, notes: Option<&Path>) -> Ui {
    let mut cmd = ghola_at(claude, index);
    if let Some(n) = notes {
        cmd.env("GHOLA_NOTES_DIR", n);
    }
    Ui::start(cmd)
}

/// One HTTP/1.1 GET; returns the status, the headers (lowercased names) and the body.
fn get(addr: SocketAddr, path: &str, host: &str, cookie: Option<&str>) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let cookie = cookie
        .map(|c| format!("Cookie: {c}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\n{cookie}Connection: close\r\n\r\n"
    )
    .unwrap();
    answer(s)
}

/// The status, the headers (lowercased names) and the body of the answer on `s`.
fn answer(mut s: TcpStream) -> (u16, String, String) {
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// One HTTP/1.1 POST of a form; returns the status, the headers (lowercased names) and the body.
fn post(
    addr: SocketAddr,
    path: &str,
    host: &str,
    cookie: Option<&str>,
    origin: Option<&str>,
    form: &str,
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let extra = cookie
        .map(|c| format!("Cookie: {c}\r\n"))
        .unwrap_or_default()
        + &origin
            .map(|o| format!("Origin: {o}\r\n"))
            .unwrap_or_default();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{form}",
        form.len()
    )
    .unwrap();
    answer(s)
}

/// A word of the history to search for (the longest plain word of a session's first user message), and that
/// session's id: the first session listed that has a tool result.
fn a_word(claude: &Path, index: &Path) -> (String, String) {
    let run = |args: &[&str]| -> serde_json::Value { run_json(ghola_at(claude, index).args(args)) };
    let list = run(&["sessions", "--global", "--json"]);
    for s in list["sessions"].as_array().unwrap() {
        let id = s["session_id"].as_str().unwrap().to_string();
        let v = run(&["show", &id, "--json"]);
        let messages = v["messages"].as_array().cloned().unwrap_or_default();
        let parts: Vec<serde_json::Value> = messages
            .iter()
            .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
            .collect();
        if !parts
            .iter()
            .any(|p| p["type"] == "tool_result" || p["kind"] == "tool_result")
        {
            continue;
        }
        let text = messages
            .iter()
            .filter(|m| m["role"] == "user")
            .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
            .find_map(|p| p["text"].as_str().map(str::to_string));
        let word = text.as_deref().and_then(|t| {
            t.split(|c: char| !c.is_ascii_alphabetic())
                .filter(|w| w.len() >= 6)
                .max_by_key(|w| w.len())
                .map(str::to_ascii_lowercase)
        });
        if let Some(word) = word {
            return (word, id);
        }
    }
    panic!(
        "no session with a user message and a tool result in {}",
        claude.display()
    );
}

/// A session with an assistant reply merged from several entries: (session, the message's uuid, its second
/// entry's uuid).
fn a_split_reply(claude: &Path, index: &Path) -> (String, String, String) {
    let run = |args: &[&str]| -> serde_json::Value { run_json(ghola_at(claude, index).args(args)) };
    let list = run(&["sessions", "--global", "--json"]);
    for s in list["sessions"].as_array().unwrap() {
        let id = s["session_id"].as_str().unwrap().to_string();
        let v = run(&["show", &id, "--json"]);
        for m in v["messages"].as_array().cloned().unwrap_or_default() {
            if let Some(second) = m["merged_uuids"].as_array().and_then(|u| u.first()) {
                let first = m["uuid"].as_str().unwrap().to_string();
                return (id, first, second.as_str().unwrap().to_string());
            }
        }
    }
    panic!("no reply written in pieces in {}", claude.display());
}

#[test]
fn the_browser_finds_a_hit_reads_its_session_and_strangers_are_refused() {
    let Some(claude) = common::shared("corpus/cc-2.1.330") else {
        return;
    };
    let index = tempfile::tempdir().unwrap();
    run_ok(ghola_at(&claude, index.path()).args(["index", "--json"]));
    let (word, with_tools) = a_word(&claude, index.path());
    let ui = start(&claude, index.path());
    let loopback = ui.addr.to_string();

    // Without the token: 401; with a foreign Host, even with the token: 403.
    let (status, _, _) = get(ui.addr, "/search?q=x", &loopback, None);
    assert_eq!(status, 401);
    let (status, _, _) = get(
        ui.addr,
        &format!("/?token={}", ui.token),
        &format!("evil.example:{}", ui.addr.port()),
        None,
    );
    assert_eq!(status, 403);
    let (status, _, _) = get(ui.addr, "/?token=0000", &loopback, None);
    assert_eq!(status, 401);

    // The token on 127.0.0.1 sets no cookie there: a way-in page sends the browser on to the server's own host
    // name, whose one-time login sets it; the token leaves the address at once.
    let (status, head, way_in) = get(
        ui.addr,
        &format!("/search?q=a&token={}&x=1", ui.token),
        &loopback,
        None,
    );
    assert_eq!(status, 200, "{way_in}");
    assert!(!head.contains("set-cookie"), "{head}");
    for h in [
        "referrer-policy: no-referrer",
        "x-content-type-options: nosniff",
        "cache-control: no-store",
    ] {
        assert!(head.contains(h), "{h}: {head}");
    }
    assert!(!head.contains("access-control-allow-origin"), "{head}");
    assert!(!way_in.contains(&ui.token), "{way_in}");
    let named = attribute(&way_in, "data-named").unwrap();
    let rest = named.strip_prefix("http://").unwrap();
    let (host, login) = rest.split_at(rest.find('/').unwrap());
    let host = host.to_string();
    assert!(
        host.starts_with("ghola-") && host.ends_with(&format!(".localhost:{}", ui.addr.port())),
        "{named}"
    );
    let (status, head, onward) = get(ui.addr, login, &host, None);
    assert_eq!(status, 200, "{onward}");
    assert!(
        head.contains(&format!("set-cookie: ghola_ui={}", ui.token))
            && head.contains("httponly")
            && head.contains("samesite=strict"),
        "{head}"
    );
    assert!(
        onward.contains("url=/search?q=a&amp;x=1"),
        "goes on to the address without the token: {onward}"
    );
    // The page's other link (for a browser that cannot open *.localhost) went with the one used.
    let here = attribute(&way_in, "data-here")
        .unwrap()
        .replace("&amp;", "&");
    assert_eq!(get(ui.addr, &here, &loopback, None).0, 401);
    assert_eq!(
        get(ui.addr, login, &host, None).0,
        401,
        "a login works once"
    );
    // That fallback, used first, logs in on 127.0.0.1 with a cookie named for this port.
    let (_, _, again) = get(ui.addr, &format!("/?token={}", ui.token), &loopback, None);
    let here = attribute(&again, "data-here")
        .unwrap()
        .replace("&amp;", "&");
    let (status, head, _) = get(ui.addr, &here, &loopback, None);
    assert_eq!(status, 200);
    let port_cookie = format!("ghola_ui_{}={}", ui.addr.port(), ui.token);
    assert!(
        head.contains(&format!("set-cookie: {port_cookie}")),
        "{head}"
    );
    assert_eq!(
        get(ui.addr, "/search?q=a", &loopback, Some(&port_cookie)).0,
        200
    );
    // Each door takes only its own cookie.
    let cookie = format!("ghola_ui={}", ui.token);
    assert_eq!(get(ui.addr, "/search?q=a", &loopback, Some(&cookie)).0, 401);
    assert_eq!(
        get(ui.addr, "/search?q=a", &host, Some(&port_cookie)).0,
        401
    );
    // The token at the named host: the cookie and a page that moves on without it.
    let (status, head, onward) = get(ui.addr, &format!("/?token={}&x=1", ui.token), &host, None);
    assert_eq!(status, 200);
    assert!(head.contains(&format!("set-cookie: {cookie}")), "{head}");
    assert!(onward.contains("url=/?x=1"), "{onward}");

    // A search shows the word highlighted and links to the hit's place in its session.
    let (status, _, body) = get(ui.addr, &format!("/search?q={word}"), &host, Some(&cookie));
    assert_eq!(status, 200, "{body}");
    assert!(
        body.to_ascii_lowercase()
            .contains(&format!("<mark>{word}</mark>")),
        "{word} not marked"
    );
    // Filters as on the command line: a date long past keeps the hit, a malformed one is a clear 400.
    let filtered = |filters: &str| {
        get(
            ui.addr,
            &format!("/search?q={word}&{filters}"),
            &host,
            Some(&cookie),
        )
    };
    let marked = |page: &str| {
        page.to_ascii_lowercase()
            .contains(&format!("<mark>{word}</mark>"))
    };
    let (status, _, since) = filtered("since=2000-01-01");
    assert_eq!(status, 200);
    assert!(marked(&since));
    assert!(
        since.contains("value=\"2000-01-01\""),
        "the form keeps the filter"
    );
    // Bounds as `--after` / `--before`: a window around the hit keeps it, one before the history has none.
    let (_, _, within) = filtered("after=2000-01-01&before=2100-01-01");
    assert!(marked(&within));
    let (_, _, none) = filtered("before=2000-01-01");
    assert!(
        none.contains("No messages to search")
            && none.contains("passes the filters")
            && none.contains("value=\"2000-01-01\""),
        "before the history: nothing to search, it says why, and the form keeps the bound"
    );
    let (status, _, _) = filtered("after=sometime");
    assert_eq!(status, 400);
    let (status, _, bad) = filtered("since=someday");
    assert_eq!(status, 400);
    assert!(
        bad.contains("<p class=note>") && bad.contains("someday"),
        "{bad}"
    );
    let link = body
        .split("href=\"/session/")
        .nth(1)
        .expect("a link to a session");
    let link = &link[..link.find('"').unwrap()];
    let (at, anchor) = link.split_once("#m-").unwrap();
    // `<id>?at=<uuid>`: the page opens at the hit.
    let (session, at) = at.split_once("?at=").unwrap();
    assert_eq!(at, anchor);

    // The session reads as a conversation, the hit's message anchored; tool results are folded.
    let session_page = |id: &str| {
        let (status, _, page) = get(ui.addr, &format!("/session/{id}"), &host, Some(&cookie));
        assert_eq!(status, 200, "session {id}");
        page
    };
    let page = session_page(session);
    assert!(
        page.contains(&format!("id=\"m-{anchor}\"")),
        "the hit's anchor is missing"
    );
    assert!(page.to_ascii_lowercase().contains(&word));
    let page = session_page(&with_tools);
    assert!(
        page.contains("<details class=result><summary>tool result"),
        "no folded tool result"
    );
    // A call unfolds to what it wrote, not only its summary line: the edit that added the leeway (session
    // fec0adcb of cc-2.1.330) shows its new text.
    let page = session_page("fec0adcb-6a09-4536-bb17-4d0550c09c1d");
    let call = page
        .split("<summary>tool call: Edit")
        .nth(1)
        .and_then(|rest| rest.split("</details>").next())
        .expect("an edit call on the page");
    assert!(
        call.contains("CLOCK_SKEW_LEEWAY_SECS = 120"),
        "the edit's new text is not in its unfolded call: {call}"
    );
    let (status, _, _) = get(ui.addr, "/session/nosuchsession", &host, Some(&cookie));
    assert_eq!(status, 404);
    let page = session_page(&format!("{session}?at={anchor}"));
    assert!(
        page.contains(&format!("id=\"m-{anchor}\" class=\"")) && page.contains(" at\">"),
        "the hit's message is not marked"
    );
    // A reply Claude Code wrote in pieces is one message; a link naming its second entry opens at it too.
    let (split, first, second) = a_split_reply(&claude, index.path());
    let page = session_page(&format!("{split}?at={second}"));
    assert!(
        page.contains(&format!("id=\"m-{first}\" class=\"assistant at\"")),
        "the reply whose second entry the link names is not marked"
    );

    // Changes are POSTs with the page's CSRF token, from this origin, with the cookie: each check refuses
    // alone, and nothing is forgotten.
    let form = format!("session={session}&confirm=yes");
    let csrf = page
        .split("name=csrf value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the page's forms carry the CSRF token")
        .to_string();
    assert_eq!(
        post(ui.addr, "/forget", &host, Some(&cookie), None, &form).0,
        403
    );
    let with_csrf = format!("{form}&csrf={csrf}");
    assert_eq!(
        post(ui.addr, "/forget", &host, None, None, &with_csrf).0,
        401
    );
    let evil = Some("http://evil.example");
    assert_eq!(
        post(ui.addr, "/forget", &host, Some(&cookie), evil, &with_csrf).0,
        403
    );
    let (status, _, _) = get(
        ui.addr,
        &format!("/forget?{with_csrf}"),
        &host,
        Some(&cookie),
    );
    assert_eq!(status, 405, "a GET changes nothing");
    let still = session_page(session);
    assert!(
        still.contains(&format!("id=\"m-{anchor}\"")),
        "forgotten anyway"
    );

    // Loopback only: the machine's other address does not answer on that port.
    if let Some(ip) = outward_address() {
        let there = SocketAddr::new(ip, ui.addr.port());
        assert!(
            TcpStream::connect_timeout(&there, std::time::Duration::from_secs(2)).is_err(),
            "ghola ui answered on {there}"
        );
    }

    // A real browser renders the search and the session.
    let Some(chromium) = chromium() else {
        return skipped("chromium (the browser half of this test)");
    };
    let dom = dump_dom(
        &chromium,
        &format!("http://{loopback}/search?q={word}&token={}", ui.token),
    );
    assert!(
        dom.to_ascii_lowercase()
            .contains(&format!("<mark>{word}</mark>")),
        "chromium: {}",
        &dom[..dom.len().min(400)]
    );
    let dom = dump_dom(
        &chromium,
        &format!("http://{loopback}/session/{session}?token={}", ui.token),
    );
    assert!(
        dom.contains(&format!("id=\"m-{anchor}\"")),
        "chromium did not render the session"
    );
    let dom = dump_dom(&chromium, &format!("http://{loopback}/search?q={word}"));
    assert!(
        !dom.contains("<mark>"),
        "chromium without the token saw results"
    );
}

/// This machine's address toward the outside (no packet is sent), if it has one besides loopback.
fn outward_address() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("10.255.255.255:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// Clicks what `css` selects inside `scope`.
async fn click(scope: &fantoccini::elements::Element, css: &str) {
    scope
        .find(fantoccini::Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css}: {e}"))
        .click()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_searches_as_they_type_reads_edits_a_note_and_forgets_a_session() {
    use fantoccini::Locator;
    let Some(claude) = common::shared("corpus/cc-2.1.330") else {
        return;
    };
    let (Some(chromium), Some(chromedriver)) = (chromium(), which("chromedriver")) else {
        return skipped("chromium or chromedriver");
    };
    let index = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    run_ok(ghola_at(&claude, index.path()).args(["index", "--json"]));
    let (word, with_tools) = a_word(&claude, index.path());
    let shown = run_json(ghola_at(&claude, index.path()).args(["show", &with_tools, "--json"]));
    let project = shown["project"].as_str().unwrap().to_string();
    // A note a person wrote, in the store's own layout.
    let store = ghola::notes::Store::new(notes.path());
    let dir = store.project_dir(&project);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(ghola::notes::Category::Decisions.file_name()),
        "- Keep the retry budget in one place\n",
    )
    .unwrap();

    let ui = start_with(&claude, index.path(), Some(notes.path()));
    let driver = start_driver(&chromedriver);
    let profile = tempfile::tempdir().unwrap();
    let c = webdriver(&chromium, &driver, profile.path()).await;

    // The printed address logs in on the server's own host name (the way-in page sends the browser there).
    c.goto(&format!("http://{}/?token={}", ui.addr, ui.token))
        .await
        .unwrap();
    appears(&c, Locator::Css("input[name=q]")).await;
    let here = c.current_url().await.unwrap();
    let named = here.host_str().unwrap_or("").to_string();
    assert!(
        named.starts_with("ghola-") && named.ends_with(".localhost"),
        "logged in at {here}"
    );
    assert_eq!(here.query(), None, "the token left the address: {here}");
    let origin = format!("http://{named}:{}", ui.addr.port());

    // Type a query: the hit appears under the box without a submit, and the address follows.
    let q = c.find(Locator::Css("input[name=q]")).await.unwrap();
    q.send_keys(&word).await.unwrap();
    let mark = appears(&c, Locator::Css("#results .hit mark")).await;
    assert_eq!(mark.text().await.unwrap().to_ascii_lowercase(), word);
    let url = c.current_url().await.unwrap();
    assert!(
        url.path() == "/search" && url.query().unwrap_or("").contains(&format!("q={word}")),
        "the address is the search: {url}"
    );

    // Open the hit's session: the page lands on the hit's message, marked.
    let open = c.find(Locator::Css("#results .hit a.open")).await.unwrap();
    let href = open.attr("href").await.unwrap().unwrap();
    let uuid = href.rsplit("#m-").next().unwrap().to_string();
    open.click().await.unwrap();
    let at = appears(&c, Locator::Css("article.at")).await;
    assert_eq!(
        at.attr("id").await.unwrap().as_deref(),
        Some(&*format!("m-{uuid}"))
    );
    assert!(at.is_displayed().await.unwrap());
    assert!(
        c.current_url()
            .await
            .unwrap()
            .path()
            .starts_with("/session/")
    );

    // Unfold a tool result.
    c.goto(&format!("{origin}/session/{with_tools}"))
        .await
        .unwrap();
    let result = c.find(Locator::Css("details.result")).await.unwrap();
    let pre = result.find(Locator::Css("pre")).await.unwrap();
    assert!(!pre.is_displayed().await.unwrap(), "folded at first");
    click(&result, "summary").await;
    assert!(pre.is_displayed().await.unwrap(), "a click unfolds it");
    assert_eq!(result.prop("open").await.unwrap().as_deref(), Some("true"));

    // Edit the note: the page and the file say the new text, its id kept.
    let notes_page = format!("{origin}/notes?project={}", urlish(&project));
    c.goto(&notes_page).await.unwrap();
    let item = c.find(Locator::Css("div.item")).await.unwrap();
    let id = item.attr("id").await.unwrap().unwrap();
    click(&item, "details.edit summary").await;
    let text = item.find(Locator::Css("textarea")).await.unwrap();
    text.clear().await.unwrap();
    text.send_keys("Keep the retry budget in config.toml")
        .await
        .unwrap();
    click(&item, "details.edit button").await;
    let edited = appears(
        &c,
        Locator::XPath("//div[@class='item']//p[contains(., 'config.toml')]"),
    )
    .await;
    assert!(edited.is_displayed().await.unwrap());
    let file =
        std::fs::read_to_string(dir.join(ghola::notes::Category::Decisions.file_name())).unwrap();
    assert!(
        file.contains("Keep the retry budget in config.toml"),
        "{file}"
    );
    assert!(
        file.contains(id.trim_start_matches("n-")),
        "the id is kept: {file}"
    );

    // Forget it: a confirmation first, then it is gone from the page and the file.
    let item = c.find(Locator::Css("div.item")).await.unwrap();
    click(&item, "form.inline button").await;
    appears(&c, Locator::Id("confirm"))
        .await
        .click()
        .await
        .unwrap();
    appears(&c, Locator::Css("h2#decisions")).await;
    assert!(
        c.find_all(Locator::Css("div.item"))
            .await
            .unwrap()
            .is_empty()
    );
    let file =
        std::fs::read_to_string(dir.join(ghola::notes::Category::Decisions.file_name())).unwrap();
    assert!(!file.contains("retry budget"), "{file}");

    // Forget the session the hit was in: asked first, then gone from the sessions and from search.
    let session = href
        .trim_start_matches("/session/")
        .split(['?', '#'])
        .next()
        .unwrap()
        .to_string();
    c.goto(&format!("{origin}/session/{session}"))
        .await
        .unwrap();
    c.find(Locator::Css("button.danger"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let confirm = appears(&c, Locator::Id("confirm")).await;
    assert!(
        c.source().await.unwrap().contains(&session),
        "the confirmation names it"
    );
    confirm.click().await.unwrap();
    appears(&c, Locator::XPath("//h1[. = 'Forgotten']")).await;
    c.goto(&format!("{origin}/projects")).await.unwrap();
    assert!(
        !c.source().await.unwrap().contains(&session),
        "still listed"
    );
    c.goto(&format!("{origin}/search?q={word}")).await.unwrap();
    assert!(
        !c.source()
            .await
            .unwrap()
            .contains(&format!("/session/{session}")),
        "still found"
    );
    let search = run_json(ghola_at(&claude, index.path()).args(["search", &word, "--json"]));
    assert!(
        !search.to_string().contains(&session),
        "ghola search still finds the forgotten session"
    );
    c.close().await.unwrap();
}

/// `s` made safe for a query value.
fn urlish(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
