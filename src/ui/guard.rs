//! Who may talk to `ghola ui`: the browser that opened the printed address, and nothing else.
//!
//! The server listens on 127.0.0.1 only. Every request must carry the token made at start — in the address
//! the user opens (`?token=…`), then in a cookie set from it (HttpOnly, SameSite=Strict) — or it gets 401. A
//! `Host` header other than this server's loopback address and port gets 403 before anything else: a web page
//! elsewhere cannot reach the server by pointing a name of its own at 127.0.0.1 (DNS rebinding). No CORS headers
//! are sent, so other origins' scripts cannot read an answer. Reading pages are GETs and change nothing; what
//! changes state is a POST whose `Origin`, when the browser sends one, must be this server's, and whose form
//! must carry the CSRF token of the pages (checked by the handler), which a page of another origin cannot
//! read. The cookie is `SameSite=Strict` besides, so another site's form arrives without it and gets 401.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The name of the cookie that carries the token after the first request.
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

/// What the guard needs to know about this server.
pub struct Guard {
    pub token: String,
    pub port: u16,
    /// One-time login codes not used yet, with when each expires (see [`Guard::one_time_code`]).
    pub codes: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
}

/// How long a one-time login link works.
pub const ONE_TIME_LINK_LIFETIME: std::time::Duration = std::time::Duration::from_secs(60);

/// The path of a one-time login: `/login?code=…`.
pub const LOGIN_PATH: &str = "/login";

impl Guard {
    /// Whether `host` (a `Host` header) names this server: `127.0.0.1:PORT` or `localhost:PORT`.
    pub fn host_ok(&self, host: &str) -> bool {
        let host = host.trim();
        host == format!("127.0.0.1:{}", self.port) || host == format!("localhost:{}", self.port)
    }

    /// Whether `given` is the token.
    /// A new login code: it works once, within [`ONE_TIME_LINK_LIFETIME`]. What is handed to a browser opener
    /// or to the model carries one of these, never the token, so a copy of it (in a process list, a transcript,
    /// the index) is worthless a minute later.
    pub fn one_time_code(&self) -> String {
        let code = new_token();
        let now = std::time::Instant::now();
        let mut codes = self.codes.lock().unwrap_or_else(|e| e.into_inner());
        codes.retain(|_, until| *until > now);
        codes.insert(code.clone(), now + ONE_TIME_LINK_LIFETIME);
        code
    }

    /// Takes `given` if it is a live one-time code (it is then used up).
    fn take_code(&self, given: &str) -> bool {
        let mut codes = self.codes.lock().unwrap_or_else(|e| e.into_inner());
        let found = codes.keys().find(|c| same_secret(given, c)).cloned();
        match found.and_then(|c| codes.remove(&c)) {
            Some(until) => until > std::time::Instant::now(),
            None => false,
        }
    }

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

    /// The token in a `Cookie` header, if any.
    pub fn token_in_cookie(cookie: &str) -> Option<&str> {
        cookie
            .split(';')
            .filter_map(|c| c.trim().split_once('='))
            .find(|(k, _)| *k == COOKIE)
            .map(|(_, v)| v)
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

/// The middleware: 403 for a foreign `Host`, 401 without the token, else the page; a GET with the token in
/// the address gets the cookie and a redirect to the same address without it.
async fn admit(guard: Arc<Guard>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !guard.host_ok(host) {
        return (
            StatusCode::FORBIDDEN,
            "ghola ui answers only at its own loopback address\n",
        )
            .into_response();
    }
    if req.method() != axum::http::Method::GET && req.method() != axum::http::Method::HEAD {
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
    if req.uri().path() == LOGIN_PATH {
        let code = req
            .uri()
            .query()
            .unwrap_or("")
            .split('&')
            .find_map(|p| p.strip_prefix("code="));
        if !code.is_some_and(|c| guard.take_code(c)) {
            return (
                StatusCode::UNAUTHORIZED,
                "this link was used already or has expired: ask for a new one (or open the address `ghola ui` \
                 printed)\n",
            )
                .into_response();
        }
        let mut r = StatusCode::SEE_OTHER.into_response();
        r.headers_mut()
            .insert(header::LOCATION, HeaderValue::from_static("/"));
        if let Ok(v) = HeaderValue::from_str(&format!(
            "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            guard.token
        )) {
            r.headers_mut().append(header::SET_COOKIE, v);
        }
        return r;
    }
    let from_query = Guard::token_in_query(req.uri().query()).is_some_and(|t| guard.token_ok(&t));
    let from_cookie = req
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|c| c.to_str().ok())
        .filter_map(Guard::token_in_cookie)
        .any(|t| guard.token_ok(t));
    if !(from_query || from_cookie) {
        return (
            StatusCode::UNAUTHORIZED,
            "open the address `ghola ui` printed (it carries the token)\n",
        )
            .into_response();
    }
    let is_get = req.method() == axum::http::Method::GET;
    let mut resp = if from_query && is_get {
        // The token leaves the address bar (and the history) at once: the cookie is set and the browser sent on
        // to the same page without it.
        let mut r = StatusCode::SEE_OTHER.into_response();
        if let Ok(to) = HeaderValue::from_str(&without_token(req.uri())) {
            r.headers_mut().insert(header::LOCATION, to);
        }
        r
    } else {
        next.run(req).await
    };
    if from_query
        && let Ok(v) = HeaderValue::from_str(&format!(
            "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            guard.token
        ))
    {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
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
        Guard {
            token: "abc123".into(),
            port: 4321,
            codes: Default::default(),
        }
    }

    #[test]
    fn only_this_servers_loopback_host_passes() {
        let g = guard();
        assert!(g.host_ok("127.0.0.1:4321") && g.host_ok("localhost:4321"));
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
            Guard::token_in_cookie("a=1; ghola_ui=abc123"),
            Some("abc123")
        );
        assert!(g.token_ok("abc123"));
        assert!(!g.token_ok("abc12") && !g.token_ok("abc1234") && !g.token_ok(""));
        assert_ne!(new_token(), new_token());
        assert_eq!(new_token().len(), 64);
    }
}
