//! The way in: a browser that arrives at `127.0.0.1:PORT` with a valid token or one-time code is sent on to this
//! server's own host name, `ghola-<random>.localhost:PORT`, and logged in there.
//!
//! Why a name of its own: browsers scope cookies by host, not port, so a cookie set for `127.0.0.1` goes to every
//! server on 127.0.0.1 — a developer's own dev server, or one another local user started to collect it. A cookie
//! set for a random name under `.localhost` (which Chromium, Firefox and Edge resolve to loopback without asking
//! DNS, RFC 6761) goes only to requests for that name, which nothing but this server's pages make; two `ghola ui`s
//! have two names, so neither logs the other out.
//!
//! Safari (WebKit) does not resolve `*.localhost`. So the way in is a small page whose script first loads an
//! image from the named host: when it loads, the browser goes on to the named host's one-time login; when it
//! cannot, to a login on `127.0.0.1` itself, whose cookie carries this server's port in its name
//! (`ghola_ui_<port>`) — as before, other local servers could receive it there (docs/security.md says so).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The script of the way-in page (it reads its links from the page's `data-` attributes).
pub const SCRIPT_PATH: &str = "/enter.js";
/// The image the way-in page loads from the named host to learn whether this browser resolves it.
pub const PROBE_PATH: &str = "/probe.gif";
/// How long the page waits for the probe before it logs in on `127.0.0.1`.
const PROBE_WAIT_MS: u32 = 5000;

/// The way-in page: tries `named` (the named host's one-time login) and falls back to `here` (the loopback
/// one). Both are one-time links made for this page alone; the links are also shown, for a browser without
/// scripts.
pub fn page(named: &str, here: &str, probe: &str, named_origin: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=en><meta charset=utf-8><title>ghola</title>\
         <body data-named=\"{named}\" data-here=\"{here}\" data-probe=\"{probe}\" data-wait=\"{PROBE_WAIT_MS}\">\
         <p>Opening ghola's history browser…</p>\
         <noscript><p><a href=\"{named}\">Continue</a> (or, in a browser that cannot open *.localhost \
         addresses, <a href=\"{here}\">continue here</a>)</p></noscript>\
         <script src=\"{SCRIPT_PATH}\"></script></body></html>"
    );
    let mut r = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response();
    let csp = format!(
        "default-src 'none'; script-src 'self'; img-src {named_origin}; base-uri 'none'; \
         form-action 'none'; frame-ancestors 'none'"
    );
    if let Ok(v) = HeaderValue::from_str(&csp) {
        r.headers_mut().insert(header::CONTENT_SECURITY_POLICY, v);
    }
    r.headers_mut()
        .insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    r
}

/// The page after a login: it moves on to `to` (a path of this server) by itself.
pub fn onward(to: &str) -> Response {
    let to = super::html::escape(to);
    let body = format!(
        "<!doctype html><html lang=en><meta charset=utf-8><meta http-equiv=refresh content=\"0;url={to}\">\
         <title>ghola</title><p><a href=\"{to}\">Continue</a></p></html>"
    );
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// The way-in page's script: the probe decides where the browser goes; a probe that neither loads nor fails
/// within the wait counts as failed.
pub fn script() -> Response {
    const JS: &str = r#"(function () {
  var d = document.body.dataset, done = false;
  function go(to) { if (!done) { done = true; location.replace(to); } }
  var probe = new Image();
  probe.onload = function () { go(d.named); };
  probe.onerror = function () { go(d.here); };
  setTimeout(function () { go(d.here); }, Number(d.wait) || 5000);
  probe.src = d.probe;
})();
"#;
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        JS,
    )
        .into_response()
}

/// The probe: a transparent 1×1 GIF (it holds nothing, so it needs no login).
pub fn probe() -> Response {
    const GIF: &[u8] = &[
        0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00,
        0x00, 0xff, 0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00,
        0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
    ];
    ([(header::CONTENT_TYPE, "image/gif")], GIF).into_response()
}
