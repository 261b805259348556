//! The Anthropic Messages API backend: one non-streaming `POST /v1/messages` per attempt, the answer tool
//! forced with `tool_choice`, prompt-cache breakpoints on the system prompt and on the last replayed message
//! (the penultimate message of the request, right before the question), so asking the same window again
//! reads the conversation from the cache.

use super::{
    Answer, Backend, BackendError, InvalidInput, MAX_CORRECTIONS, Prompt, ToolAnswer, ToolCall,
    Usage, answer_call, check_cancel, parse_answer,
};
use serde_json::{Value, json};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The API version header ghola speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Retries of a transient failure (429, 5xx, 529 overloaded, network) before the window reports an error.
const MAX_TRANSIENT_RETRIES: u32 = 2;

/// The Messages API, reached with `ANTHROPIC_API_KEY` at `ANTHROPIC_BASE_URL` (default api.anthropic.com).
pub struct MessagesApi {
    base_url: String,
    api_key: String,
    agent: ureq::Agent,
    /// First backoff after a transient failure (doubles each time); `Retry-After` wins when it is shorter
    /// than ten seconds.
    pub backoff: Duration,
}

impl MessagesApi {
    /// A client for `base_url` (no trailing `/v1`).
    pub fn new(base_url: &str, api_key: &str) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(600)))
            .timeout_connect(Some(Duration::from_secs(20)))
            .http_status_as_error(false)
            .build()
            .into();
        Self {
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: api_key.to_string(),
            agent,
            backoff: Duration::from_millis(500),
        }
    }

    /// From the environment: `ANTHROPIC_API_KEY` (required) and `ANTHROPIC_BASE_URL`.
    pub fn from_environment(env: &crate::config::Environment) -> Option<Self> {
        let key = env.api_key.as_deref()?;
        let base = env
            .api_base_url
            .as_deref()
            .unwrap_or("https://api.anthropic.com");
        Some(Self::new(base, key))
    }

    /// The request body of one forced-tool call, with a cache breakpoint on the system prompt.
    fn request_body(call: &ToolCall, messages: &[Value]) -> Value {
        json!({
            "model": call.model,
            "max_tokens": call.max_tokens,
            "system": [{"type": "text", "text": call.system, "cache_control": {"type": "ephemeral"}}],
            "messages": messages,
            "tools": [{"name": call.tool, "description": call.description, "input_schema": call.schema}],
            "tool_choice": {"type": "tool", "name": call.tool},
        })
    }

    /// One HTTP exchange with transient retries; returns the parsed response.
    fn post(&self, body: &Value, cancel: &AtomicBool) -> Result<Value, BackendError> {
        let url = format!("{}/v1/messages", self.base_url);
        let mut attempt = 0;
        loop {
            check_cancel(cancel)?;
            let sent = self
                .agent
                .post(&url)
                .header("x-api-key", &self.api_key)
                .header("anthropic-version", ANTHROPIC_VERSION)
                .header("content-type", "application/json")
                .send(body.to_string());
            let (transient, message, retry_after) = match sent {
                Ok(mut resp) => {
                    let status = resp.status().as_u16();
                    let retry_after = resp
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<f64>().ok())
                        .filter(|s| *s >= 0.0 && *s <= 10.0)
                        .map(Duration::from_secs_f64);
                    let text = resp
                        .body_mut()
                        .with_config()
                        .limit(32 * 1024 * 1024)
                        .read_to_string()
                        .unwrap_or_default();
                    if (200..300).contains(&status) {
                        return serde_json::from_str(&text).map_err(|e| {
                            BackendError::Provider(format!("unreadable response ({e})"))
                        });
                    }
                    let detail = serde_json::from_str::<Value>(&text)
                        .ok()
                        .and_then(|v| v.pointer("/error/message")?.as_str().map(str::to_owned))
                        .unwrap_or_else(|| text.chars().take(300).collect());
                    let transient = status == 429 || status >= 500;
                    (transient, format!("HTTP {status}: {detail}"), retry_after)
                }
                Err(e) => (true, format!("request failed: {e}"), None),
            };
            if !transient || attempt >= MAX_TRANSIENT_RETRIES {
                return Err(BackendError::Provider(message));
            }
            let wait = retry_after.unwrap_or(self.backoff * 2u32.pow(attempt));
            tracing::debug!("transient failure ({message}); retrying in {wait:?}");
            std::thread::sleep(wait);
            attempt += 1;
        }
    }

    /// Sends `messages` with `call`'s tool forced, and asks again (up to [`MAX_CORRECTIONS`] times, the
    /// problem sent back as the tool's error result) until the tool input passes `call.validate`.
    fn exchange(
        &self,
        call: &ToolCall,
        mut messages: Vec<Value>,
        cancel: &AtomicBool,
    ) -> Result<ToolAnswer, BackendError> {
        let mut usage = Usage::default();
        let mut corrections = 0;
        loop {
            let response = self.post(&Self::request_body(call, &messages), cancel)?;
            if let Some(u) = response.get("usage") {
                usage.add(&Usage::from_json(u));
            }
            let content = response
                .get("content")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let used = content.iter().find(|b| {
                b.get("type").and_then(Value::as_str) == Some("tool_use")
                    && b.get("name").and_then(Value::as_str) == Some(call.tool.as_str())
            });
            let input = used.and_then(|c| c.get("input")).cloned();
            let verdict = match &input {
                Some(i) => (call.validate)(i),
                None => Err(InvalidInput(format!(
                    "no {} tool call in the reply",
                    call.tool
                ))),
            };
            match verdict {
                Ok(()) => {
                    return Ok(ToolAnswer {
                        input: input.unwrap_or(Value::Null),
                        usage,
                        model: response
                            .get("model")
                            .and_then(Value::as_str)
                            .unwrap_or(&call.model)
                            .to_string(),
                        corrections,
                    });
                }
                Err(problem) if corrections < MAX_CORRECTIONS => {
                    corrections += 1;
                    tracing::debug!("invalid tool input ({problem}); asking again");
                    let correction = format!(
                        "That was not a valid call: {problem}. Call {} again with input that matches its schema.",
                        call.tool
                    );
                    let reply = match used.and_then(|c| c.get("id")).and_then(Value::as_str) {
                        Some(id) => json!([{"type": "tool_result", "tool_use_id": id,
                                           "is_error": true, "content": correction}]),
                        None => json!([{"type": "text", "text": correction}]),
                    };
                    let assistant = if content.is_empty() {
                        json!([{"type": "text", "text": "(no answer)"}])
                    } else {
                        Value::Array(content)
                    };
                    messages.push(json!({"role": "assistant", "content": assistant}));
                    messages.push(json!({"role": "user", "content": reply}));
                }
                Err(problem) => {
                    return Err(BackendError::InvalidAnswer {
                        attempts: corrections + 1,
                        last: problem.0,
                    });
                }
            }
        }
    }
}

impl Backend for MessagesApi {
    fn name(&self) -> &'static str {
        "api"
    }

    fn ask(&self, prompt: &Prompt, cancel: &AtomicBool) -> Result<Answer, BackendError> {
        let mut messages: Vec<Value> = prompt
            .messages()
            .iter()
            .map(|m| serde_json::to_value(m).unwrap_or(Value::Null))
            .collect();
        // Breakpoint on the last replayed message: everything up to it is the cacheable prefix.
        if messages.len() >= 2 {
            let at = messages.len() - 2;
            if let Some(last) = messages[at]
                .get_mut("content")
                .and_then(Value::as_array_mut)
                .and_then(|c| c.last_mut())
            {
                last["cache_control"] = json!({"type": "ephemeral"});
            }
        }
        let call = answer_call(prompt);
        let got = self.exchange(&call, messages, cancel)?;
        let (has_context, answer) =
            parse_answer(&got.input).map_err(|e| BackendError::Provider(e.0))?;
        Ok(Answer {
            has_context,
            answer,
            usage: got.usage,
            model: got.model,
            corrections: got.corrections,
        })
    }

    fn call(&self, call: &ToolCall, cancel: &AtomicBool) -> Result<ToolAnswer, BackendError> {
        let messages =
            vec![json!({"role": "user", "content": [{"type": "text", "text": call.user}]})];
        self.exchange(call, messages, cancel)
    }
}
