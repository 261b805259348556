//! A loopback stand-in of the Anthropic Messages API for tests: it records every request and answers from
//! a script, as JSON or (when the request asks for `"stream": true`) as the SSE event stream Claude Code
//! reads. `/v1/messages/count_tokens` is answered with a rough count.

#![allow(dead_code)]

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the stand-in replies to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An assistant message with these content blocks.
    Content(Vec<Value>),
    /// An HTTP error with an API error body.
    Error(u16, String),
    /// Wait, then reply.
    Delayed(Duration, Box<Reply>),
}

impl Reply {
    /// A `tool_use` block of `name` with `input`.
    pub fn tool_use(name: &str, input: Value) -> Reply {
        Reply::Content(vec![json!({
            "type": "tool_use", "id": format!("toolu_standin_{}", fastrand_id()),
            "name": name, "input": input
        })])
    }

    /// A plain text reply.
    pub fn text(t: &str) -> Reply {
        Reply::Content(vec![json!({"type": "text", "text": t})])
    }
}

fn fastrand_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    format!("{:06}", N.fetch_add(1, Ordering::SeqCst))
}

/// The script: given the request body, what to answer.
pub type Script = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// A running stand-in.
pub struct StandIn {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Value>>>,
    /// Requests being answered right now, and the most at once.
    pub in_flight: Arc<Mutex<(usize, usize)>>,
    _http: super::Loopback,
}

impl StandIn {
    /// Starts on an ephemeral loopback port with `workers` request threads.
    pub fn start(workers: usize, script: Script) -> StandIn {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(Mutex::new((0usize, 0usize)));
        let (seen, busy) = (requests.clone(), in_flight.clone());
        let http = super::Loopback::start(workers, move |mut rq| {
            let (requests, in_flight) = (&seen, &busy);
            let mut body = String::new();
            let _ = rq.as_reader().read_to_string(&mut body);
            let url = rq.url().to_string();
            if url.starts_with("/v1/messages/count_tokens") {
                let n = body.len() / 4;
                let _ = rq.respond(json_response(200, &json!({"input_tokens": n})));
                return;
            }
            if !url.starts_with("/v1/messages") {
                let _ = rq.respond(json_response(
                    404,
                    &json!({"type": "error",
                                "error": {"type": "not_found_error", "message": url}}),
                ));
                return;
            }
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            {
                let mut f = in_flight.lock().unwrap();
                f.0 += 1;
                f.1 = f.1.max(f.0);
            }
            requests.lock().unwrap().push(v.clone());
            let mut reply = script(&v);
            while let Reply::Delayed(d, next) = reply {
                std::thread::sleep(d);
                reply = *next;
            }
            in_flight.lock().unwrap().0 -= 1;
            let model = v
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("standin")
                .to_string();
            let stream = v.get("stream").and_then(Value::as_bool) == Some(true);
            let _ = match reply {
                Reply::Error(status, message) => rq.respond(json_response(
                    status,
                    &json!({"type": "error", "error": {"type": "api_error", "message": message}}),
                )),
                Reply::Content(content) if stream => rq.respond(sse_response(&model, &content)),
                Reply::Content(content) => {
                    rq.respond(json_response(200, &message(&model, &content)))
                }
                Reply::Delayed(..) => unreachable!(),
            };
        });
        StandIn {
            url: http.url.clone(),
            requests,
            in_flight,
            _http: http,
        }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

fn stop_reason(content: &[Value]) -> &'static str {
    if content.iter().any(|b| b["type"] == "tool_use") {
        "tool_use"
    } else {
        "end_turn"
    }
}

fn message(model: &str, content: &[Value]) -> Value {
    json!({
        "id": format!("msg_standin_{}", fastrand_id()), "type": "message", "role": "assistant",
        "model": model, "content": content, "stop_reason": stop_reason(content), "stop_sequence": null,
        "usage": {"input_tokens": 1000, "output_tokens": 50,
                  "cache_creation_input_tokens": 200, "cache_read_input_tokens": 800}
    })
}

fn json_response(status: u16, v: &Value) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    tiny_http::Response::from_string(v.to_string())
        .with_status_code(status)
        .with_header(tiny_http::Header::from_bytes("content-type", "application/json").unwrap())
}

/// The Messages API event stream of one message.
fn sse_response(model: &str, content: &[Value]) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let mut events: Vec<(String, Value)> = Vec::new();
    let mut start = message(model, &[]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(1);
    events.push((
        "message_start".into(),
        json!({"type": "message_start", "message": start}),
    ));
    for (i, b) in content.iter().enumerate() {
        match b["type"].as_str() {
            Some("tool_use") => {
                events.push(("content_block_start".into(), json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}})));
                events.push((
                    "content_block_delta".into(),
                    json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": b["input"].to_string()}}),
                ));
            }
            _ => {
                events.push((
                    "content_block_start".into(),
                    json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "text", "text": ""}}),
                ));
                events.push((
                    "content_block_delta".into(),
                    json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "text_delta", "text": b["text"]}}),
                ));
            }
        }
        events.push((
            "content_block_stop".into(),
            json!({"type": "content_block_stop", "index": i}),
        ));
    }
    events.push((
        "message_delta".into(),
        json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason(content), "stop_sequence": null},
        "usage": {"output_tokens": 50}}),
    ));
    events.push(("message_stop".into(), json!({"type": "message_stop"})));
    let body: String = events
        .iter()
        .map(|(e, d)| format!("event: {e}\ndata: {d}\n\n"))
        .collect();
    tiny_http::Response::from_string(body)
        .with_header(tiny_http::Header::from_bytes("content-type", "text/event-stream").unwrap())
}

/// The text of every content block of a request's last user message.
pub fn last_user_text(req: &Value) -> String {
    let Some(m) = req["messages"].as_array().and_then(|m| m.last()) else {
        return String::new();
    };
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().unwrap_or("").to_string(),
                Some("tool_result") => b["content"].to_string(),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Every tool_result block the request carries, as (tool_use_id, text).
pub fn tool_results(req: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in req["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                let text = match &b["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(parts) => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    other => other.to_string(),
                };
                out.push((b["tool_use_id"].as_str().unwrap_or("").to_string(), text));
            }
        }
    }
    out
}
