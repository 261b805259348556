//! Who may talk to `ghola ui`: the browser that opened the printed address, and nothing else.
//!
//! The server listens on 127.0.0.1 only. Every request must carry the token made at start — in the address
//! the user opens (`?token=…`) or a one-time code (`/login?code=…`), then in a cookie set from it (HttpOnly,
//! SameSite=Strict) on this server's own host name `ghola-<random>.localhost:PORT` ([`super::entry`]), which
//! no other local server receives — or it gets 401. A `Host` header other than this server's names and port gets
//! 403 before anything else: a web page elsewhere cannot reach the server by pointing a name of its own at
//! 127.0.0.1 (DNS rebinding). No CORS headers are sent, so other origins' scripts cannot read an answer. Reading
//! pages are GETs and change nothing; what changes state is a POST whose `Origin`, when the browser sends one,
//! must be this server's, and whose form must carry the CSRF token of the pages (checked by the handler), which a
//! page of another origin cannot read. The cookie is `SameSite=Strict` besides, so another site's form arrives
//! without it and gets 401.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The name of the cookie that carries the token on this server's own host name (see [`super::entry`]).
pub const COOKIE: &str = "ghola_ui";

/// A fresh token: 244 random bits (two v4 uuids), as hex.
pub fn new_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Whether `given` is `secret`, compared in constant time: the answer's timing says nothing about the secret
/// (the token here, the CSRF token in the handlers).
pub fn same_secret(given: &str, secret: &str) -> bool {
    let (a, b) = (given.as_bytes(), secret.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Which of this server's names a request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// `ghola-<random>.localhost:PORT`: the only host its login cookie is sent to.
    Named,
    /// `127.0.0.1:PORT` or `localhost:PORT`: where every address ghola hands out points (any browser reaches
    /// it); a login here is sent on to the named host.
    Loopback,
}

/// A one-time login code not used yet.
struct Code {
    until: std::time::Instant,
    /// Where the browser goes once logged in (a path on this server).
    to: String,
    /// The other code of the same way-in page, used up with this one.
    sibling: Option<String>,
}

/// What the guard needs to know about this server.
pub struct Guard {
    pub token: String,
    pub port: u16,
    /// This instance's host name, `ghola-<random>.localhost` (without the port).
    pub name: String,
    /// One-time login codes not used yet (see [`Guard::one_time_code`]).
    codes: std::sync::Mutex<std::collections::HashMap<String, Code>>,
}

/// How long a one-time login link works.
pub const ONE_TIME_LINK_LIFETIME: std::time::Duration = std::time::Duration::from_secs(60);

/// The path of a one-time login: `/login?code=…`.
pub const LOGIN_PATH: &str = "/login";

impl Guard {
    /// A guard for the server on `port`, with a fresh token and host name.
    pub fn new(port: u16) -> Guard {
        Guard::with(new_token(), port)
    }

    /// A guard with a given token (and a fresh host name).
    pub fn with(token: String, port: u16) -> Guard {
        let name = format!(
            "ghola-{}.localhost",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        Guard {
            token,
            port,
            name,
            codes: Default::default(),
        }
    }

    /// `ghola-<random>.localhost:PORT`, as a `Host` header names it.
    pub fn named_host(&self) -> String {
        format!("{}:{}", self.name, self.port)
    }

    /// Which door `host` (a `Host` header) is, if it names this server at all: `127.0.0.1:PORT`,
    /// `localhost:PORT` or the named host with this port. `None` for anything else (DNS rebinding).
    pub fn door(&self, host: &str) -> Option<Door> {
        let host = host.trim();
        if host.eq_ignore_ascii_case(&self.named_host()) {
            Some(Door::Named)
        } else if host == format!("127.0.0.1:{}", self.port)
            || host == format!("localhost:{}", self.port)
        {
            Some(Door::Loopback)
        } else {
            None
        }
    }

    /// Whether `host` (a `Host` header) names this server.
    pub fn host_ok(&self, host: &str) -> bool {
        self.door(host).is_some()
    }

    /// The login cookie's name at `door`: the named host has its own; on 127.0.0.1 (where every local server
    /// would receive it) the name carries the port, so that two servers there do not log each other out.
    pub fn cookie_name(&self, door: Door) -> String {
        match door {
            Door::Named => COOKIE.to_string(),
            Door::Loopback => format!("{COOKIE}_{}", self.port),
        }
    }

    /// A new login code: it works once, within [`ONE_TIME_LINK_LIFETIME`], and leads to `/`. What is handed to
    /// a browser opener or to the model carries one of these, never the token, so a copy of it (in a process
    /// list, a transcript, the index) is worthless a minute later.
    pub fn one_time_code(&self) -> String {
        self.codes_to("/", 1).remove(0)
    }

    /// `n` new login codes leading to `to`; using one uses up all of them.
    fn codes_to(&self, to: &str, n: usize) -> Vec<String> {
        let made: Vec<String> = (0..n).map(|_| new_token()).collect();
        let now = std::time::Instant::now();
        let mut codes = self.codes.lock().unwrap_or_else(|e| e.into_inner());
        codes.retain(|_, c| c.until > now);
        for (i, code) in made.iter().enumerate() {
            let sibling = (n == 2).then(|| made[1 - i].clone());
            codes.insert(
                code.clone(),
                Code {
                    until: now + ONE_TIME_LINK_LIFETIME,
                    to: to.to_string(),
                    sibling,
                },
            );
        }
        made
    }

    /// Takes `given` if it is a live one-time code (it and its sibling are then used up): where it leads.
    fn take_code(&self, given: &str) -> Option<String> {
        let mut codes = self.codes.lock().unwrap_or_else(|e| e.into_inner());
        let found = codes.keys().find(|c| same_secret(given, c)).cloned()?;
        let code = codes.remove(&found)?;
        if let Some(s) = &code.sibling {
            codes.remove(s);
        }
        (code.until > std::time::Instant::now()).then_some(code.to)
    }

    /// Whether `given` is the token.
    pub fn token_ok(&self, given: &str) -> bool {
        same_secret(given, &self.token)
    }

    /// The token in a query string (`token=…`), if any.
    pub fn token_in_query(query: Option<&str>) -> Option<String> {
        // Tokens are hex: no percent-decoding needed, and a value that needed it is not the token.
        query?
            .split('&')
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| *k == "token")
            .map(|(_, v)| v.to_string())
    }

    /// The value of the cookie `name` in a `Cookie` header, if any.
    pub fn cookie_value<'a>(cookie: &'a str, name: &str) -> Option<&'a str> {
        cookie
            .split(';')
            .filter_map(|c| c.trim().split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }

    /// The way-in page for a browser at the loopback door that proved it may enter: two sibling one-time
    /// codes leading to `to`, one for the named host, one for here.
    fn way_in(&self, to: &str) -> Response {
        let codes = self.codes_to(to, 2);
        let origin = format!("http://{}", self.named_host());
        super::entry::page(
            &format!("{origin}{LOGIN_PATH}?code={}", codes[0]),
            &format!("{LOGIN_PATH}?code={}&here=1", codes[1]),
            &format!("{origin}{}", super::entry::PROBE_PATH),
            &origin,
        )
    }

    /// A page that sets the login cookie of `door` and sends the browser on to `to`. Not a redirect: the login
    /// was reached from the loopback door, another site to the browser, and a `SameSite=Strict` cookie is not sent
    /// along a redirect chain that another site started; a page of this host that moves on itself is this site.
    fn logged_in(&self, door: Door, to: &str) -> Response {
        let mut r = super::entry::onward(to);
        if let Ok(v) = HeaderValue::from_str(&format!(
            "{}={}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie_name(door),
            self.token
        )) {
            r.headers_mut().append(header::SET_COOKIE, v);
        }
        r
    }
}

/// Every response, refusals included, says: never send this page's address as a referrer, never guess a content
/// type, never keep a copy (`Referrer-Policy`, `X-Content-Type-Options`, `Cache-Control`); pages also carry the
/// content policy and refuse framing.
pub async fn check(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let mut resp = admit(guard, req, next).await;
    let h = resp.headers_mut();
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// The middleware: 403 for a foreign `Host`, 401 without the token, else the page. A browser that proves
/// itself at the loopback door (the token in the address, or a one-time code) gets the way-in page
/// ([`super::entry`]); at the named door it gets the cookie and a redirect to the same address without the
/// token.
async fn admit(guard: Arc<Guard>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let Some(door) = guard.door(host) else {
        return (
            StatusCode::FORBIDDEN,
            "ghola ui answers only at its own loopback address\n",
        )
            .into_response();
    };
    let is_get = req.method() == axum::http::Method::GET;
    if !is_get && req.method() != axum::http::Method::HEAD {
        // `Origin: null` is what a browser sends from our own pages under `Referrer-Policy: no-referrer` (the
        // Fetch standard hides the origin then); such a change still needs the cookie and the page's CSRF token.
        let origin = req
            .headers()
            .get(header::ORIGIN)
            .and_then(|h| h.to_str().ok())
            .filter(|o| *o != "null");
        if let Some(o) = origin
            && !o
                .strip_prefix("http://")
                .is_some_and(|host| guard.host_ok(host))
        {
            return (
                StatusCode::FORBIDDEN,
                "ghola ui takes changes only from its own pages\n",
            )
                .into_response();
        }
    }
    match req.uri().path() {
        super::entry::SCRIPT_PATH if is_get => return super::entry::script(),
        super::entry::PROBE_PATH if is_get => return super::entry::probe(),
        LOGIN_PATH => {
            let query = req.uri().query().unwrap_or("");
            let code = query.split('&').find_map(|p| p.strip_prefix("code="));
            let Some(to) = code.and_then(|c| guard.take_code(c)) else {
                return (
                    StatusCode::UNAUTHORIZED,
                    "this link was used already or has expired: ask for a new one (or open the address `ghola \
                     ui` printed)\n",
                )
                    .into_response();
            };
            let here = query.split('&').any(|p| p == "here=1");
            return match door {
                Door::Loopback if !here => guard.way_in(&to),
                _ => guard.logged_in(door, &to),
            };
        }
        _ => {}
    }
    let from_query = Guard::token_in_query(req.uri().query()).is_some_and(|t| guard.token_ok(&t));
    let cookie = guard.cookie_name(door);
    let from_cookie = req
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|c| c.to_str().ok())
        .filter_map(|c| Guard::cookie_value(c, &cookie))
        .any(|t| guard.token_ok(t));
    if !(from_query || from_cookie) {
        return (
            StatusCode::UNAUTHORIZED,
            "open the address `ghola ui` printed (it carries the token)\n",
        )
            .into_response();
    }
    let mut resp = match (from_query && is_get, door) {
        // The token leaves the address bar (and the history) at once.
        (true, Door::Loopback) => return guard.way_in(&without_token(req.uri())),
        (true, Door::Named) => guard.logged_in(door, &without_token(req.uri())),
        (false, _) => next.run(req).await,
    };
    resp.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
    );
    resp.headers_mut()
        .insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    resp
}

/// The request's path and query with every `token` parameter left out.
fn without_token(uri: &axum::http::Uri) -> String {
    let kept: Vec<&str> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty() && p.split('=').next() != Some("token"))
        .collect();
    if kept.is_empty() {
        uri.path().to_string()
    } else {
        format!("{}?{}", uri.path(), kept.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::with("abc123".into(), 4321)
    }

    #[test]
    fn only_this_servers_loopback_host_passes() {
        let g = guard();
        assert_eq!(g.door("127.0.0.1:4321"), Some(Door::Loopback));
        assert_eq!(g.door("localhost:4321"), Some(Door::Loopback));
        assert_eq!(g.door(&g.named_host()), Some(Door::Named));
        assert!(g.name.starts_with("ghola-") && g.name.ends_with(".localhost"));
        assert_ne!(g.name, guard().name, "each server has a name of its own");
        assert!(!g.host_ok(&format!("{}:80", g.name)));
        for bad in [
            "evil.example:4321",
            "127.0.0.1:80",
            "127.0.0.1",
            "",
            "localhost.evil.example:4321",
        ] {
            assert!(!g.host_ok(bad), "{bad}");
        }
    }

    #[test]
    fn the_token_is_found_in_the_query_and_the_cookie_and_compared_whole() {
        let g = guard();
        assert_eq!(
            Guard::token_in_query(Some("q=x&token=abc123")).as_deref(),
            Some("abc123")
        );
        assert_eq!(Guard::token_in_query(Some("q=token")), None);
        assert_eq!(
            Guard::cookie_value("a=1; ghola_ui=abc123", COOKIE),
            Some("abc123")
        );
        assert_eq!(g.cookie_name(Door::Loopback), "ghola_ui_4321");
        assert_eq!(
            Guard::cookie_value("ghola_ui=abc123", &g.cookie_name(Door::Loopback)),
            None
        );
        assert!(g.token_ok("abc123"));
        assert!(!g.token_ok("abc12") && !g.token_ok("abc1234") && !g.token_ok(""));
        assert_ne!(new_token(), new_token());
        assert_eq!(new_token().len(), 64);
    }

    #[test]
    fn a_code_works_once_and_uses_up_its_sibling() {
        let g = guard();
        let c = g.one_time_code();
        assert_eq!(g.take_code(&c).as_deref(), Some("/"));
        assert_eq!(g.take_code(&c), None);
        let pair = g.codes_to("/search?q=a", 2);
        assert_eq!(g.take_code(&pair[1]).as_deref(), Some("/search?q=a"));
        assert_eq!(g.take_code(&pair[0]), None, "the sibling went with it");
        assert_eq!(g.take_code("nosuchcode"), None);
    }
}
