//! The model client, below both duncan (`replay`) and notes: a past window rebuilt as a conversation for a
//! model ([`conversation`]), and where it is answered — the Anthropic Messages API ([`api`]) or headless Claude
//! Code ([`headless`]). Both receive the same [`Prompt`] and must come back with a validated [`Answer`].

pub mod api;
pub mod conversation;
pub mod headless;

pub use crate::settings::BackendChoice;
use conversation::{ApiMessage, Block, Speaker};
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};

/// The name of the one tool a replay offers.
pub const TOOL_NAME: &str = "duncan_response";

/// Everything a backend needs to ask one window.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub system: String,
    /// The replayed conversation (alternating, starting with a user message).
    pub conversation: Vec<ApiMessage>,
    pub question: String,
    pub model: String,
    /// Where the window came from, for backends that stage it as a session (headless Claude Code).
    pub cwd: Option<String>,
    pub git_branch: Option<String>,
}

impl Prompt {
    /// The conversation followed by the question as the last user message. When the conversation ends
    /// with a user message (an unanswered prompt), a short assistant line keeps the alternation.
    pub fn messages(&self) -> Vec<ApiMessage> {
        let mut messages = self.conversation.clone();
        if messages.last().is_some_and(|m| m.role == Speaker::User) {
            messages.push(ApiMessage {
                role: Speaker::Assistant,
                content: vec![Block::Text {
                    text: "[The session ends here, without a reply.]".into(),
                }],
            });
        }
        messages.push(ApiMessage {
            role: Speaker::User,
            content: vec![Block::Text {
                text: question_text(&self.question, &format!("by calling the {TOOL_NAME} tool")),
            }],
        });
        messages
    }
}

/// The question as the model reads it; `how` says how to answer ("by calling the … tool").
pub fn question_text(question: &str, how: &str) -> String {
    format!(
        "You are being asked about the conversation above, which is a replay of a past session; you cannot \
         act in it or run tools. Answer the question below only from what the conversation above contains. \
         If it does not contain the answer, say so and set hasContext to false — do not guess or use outside \
         knowledge. Answer {how}.\n\nQuestion: {question}"
    )
}

/// The JSON schema of the answer: both the tool's `input_schema` and headless Claude Code's `--json-schema`.
pub fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "hasContext": {
                "type": "boolean",
                "description": "true when the conversation above contains what is needed to answer"
            },
            "answer": {
                "type": "string",
                "description": "the answer, from the conversation only; when hasContext is false, what is missing"
            }
        },
        "required": ["hasContext", "answer"],
        "additionalProperties": false
    })
}

/// Tokens a duncan answer may take.
const MAX_ANSWER_TOKENS: u32 = 2048;

/// One model call whose reply must be a call of one tool with a valid input: duncan's answer, the notes
/// extractor's findings. The Messages API forces the tool (`tool_choice`); headless Claude Code validates the
/// same schema with `--json-schema`.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub system: String,
    /// The one user message (the Messages API) or the prompt (`claude -p`, on stdin).
    pub user: String,
    pub tool: String,
    pub description: String,
    /// The tool's `input_schema`.
    pub schema: Value,
    pub model: String,
    pub max_tokens: u32,
    /// Checks the input beyond the schema; its error text is sent back in a corrective retry.
    pub validate: fn(&Value) -> Result<(), InvalidInput>,
}

/// A validated tool input and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolAnswer {
    pub input: Value,
    pub usage: Usage,
    /// The model that answered (as the provider reports it).
    pub model: String,
    /// Corrective retries needed for a valid input.
    pub corrections: u32,
}

/// Duncan's answer tool for a prompt (the conversation goes separately, as the call's messages).
pub fn answer_call(prompt: &Prompt) -> ToolCall {
    ToolCall {
        system: prompt.system.clone(),
        user: String::new(),
        tool: TOOL_NAME.into(),
        description:
            "Report whether the replayed conversation answers the question, and the answer.".into(),
        schema: answer_schema(),
        model: prompt.model.clone(),
        max_tokens: MAX_ANSWER_TOKENS,
        validate: |v| parse_answer(v).map(|_| ()),
    }
}

/// What is wrong with a model's tool input, said so that the model can fix it: the text is sent back to it in a
/// corrective retry (and names the field at fault).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidInput(pub String);

impl From<String> for InvalidInput {
    fn from(s: String) -> Self {
        InvalidInput(s)
    }
}

impl From<&str> for InvalidInput {
    fn from(s: &str) -> Self {
        InvalidInput(s.to_string())
    }
}

/// Checks a tool input against the schema; the error text is sent back to the model in a corrective retry.
pub fn parse_answer(input: &Value) -> Result<(bool, String), InvalidInput> {
    let obj = input
        .as_object()
        .ok_or_else(|| format!("the input must be an object, got {input}"))?;
    let has = obj
        .get("hasContext")
        .ok_or("the input lacks the required boolean field hasContext")?;
    let has = has
        .as_bool()
        .ok_or_else(|| format!("hasContext must be a boolean, got {has}"))?;
    let answer = obj
        .get("answer")
        .ok_or("the input lacks the required string field answer")?;
    let answer = answer
        .as_str()
        .ok_or_else(|| format!("answer must be a string, got {answer}"))?;
    if has && answer.trim().is_empty() {
        return Err("hasContext is true but answer is empty".into());
    }
    Ok((has, answer.trim().to_string()))
}

/// Token counts reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// Adds another call's usage (retries and corrective turns count too).
    pub fn add(&mut self, o: &Usage) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cache_creation_input_tokens += o.cache_creation_input_tokens;
        self.cache_read_input_tokens += o.cache_read_input_tokens;
    }

    /// Reads the `usage` object of a Messages API response (missing fields are 0).
    pub fn from_json(v: &Value) -> Usage {
        let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        Usage {
            input_tokens: n("input_tokens"),
            output_tokens: n("output_tokens"),
            cache_creation_input_tokens: n("cache_creation_input_tokens"),
            cache_read_input_tokens: n("cache_read_input_tokens"),
        }
    }
}

/// A window's validated answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    pub has_context: bool,
    pub answer: String,
    pub usage: Usage,
    /// The model that answered (as the provider reports it).
    pub model: String,
    /// Corrective retries needed for a valid tool input.
    pub corrections: u32,
}

/// Why a window got no answer.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum BackendError {
    #[error("cancelled")]
    Cancelled,
    #[error("the model gave no valid {TOOL_NAME} answer after {attempts} attempt(s): {last}")]
    InvalidAnswer { attempts: u32, last: String },
    #[error("{0}")]
    Provider(String),
    #[error("{0}")]
    Setup(String),
}

/// A way to get a window answered.
pub trait Backend: Send + Sync {
    /// `api` or `claude-code`, for the output and the query log.
    fn name(&self) -> &'static str;
    /// Asks one window; checks `cancel` between network calls.
    fn ask(&self, prompt: &Prompt, cancel: &AtomicBool) -> Result<Answer, BackendError>;
    /// One self-contained forced-tool call (no replayed conversation), e.g. the notes extractor.
    fn call(&self, call: &ToolCall, cancel: &AtomicBool) -> Result<ToolAnswer, BackendError>;
}

/// Returns `Cancelled` when the flag is set.
pub(crate) fn check_cancel(cancel: &AtomicBool) -> Result<(), BackendError> {
    if cancel.load(Ordering::Relaxed) {
        Err(BackendError::Cancelled)
    } else {
        Ok(())
    }
}

/// Corrective retries after an invalid tool input (so up to three calls per window).
pub const MAX_CORRECTIONS: u32 = 2;

/// Builds the chosen backend from the environment read at the top, with a message that says what to set when it cannot.
pub fn choose(
    choice: BackendChoice,
    claude_dir: &std::path::Path,
    env: &crate::config::Environment,
) -> Result<Box<dyn Backend>, BackendError> {
    let api = || api::MessagesApi::from_environment(env).map(|b| Box::new(b) as Box<dyn Backend>);
    let headless = || {
        headless::HeadlessClaude::from_environment(claude_dir, env)
            .map(|b| Box::new(b) as Box<dyn Backend>)
    };
    match choice {
        BackendChoice::Api => api().ok_or_else(|| {
            BackendError::Setup("the api backend needs ANTHROPIC_API_KEY".into())
        }),
        BackendChoice::ClaudeCode => headless().ok_or_else(|| {
            BackendError::Setup(
                "the claude-code backend needs the `claude` CLI on PATH (or GHOLA_CLAUDE_BIN)".into(),
            )
        }),
        BackendChoice::Auto => api().or_else(headless).ok_or_else(|| {
            BackendError::Setup(
                "duncan needs a model: set ANTHROPIC_API_KEY, or install Claude Code (`claude` on PATH) \
                 and log in"
                    .into(),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_validated() {
        assert_eq!(
            parse_answer(&json!({"hasContext": true, "answer": " yes "})),
            Ok((true, "yes".into()))
        );
        assert_eq!(
            parse_answer(&json!({"hasContext": false, "answer": ""})),
            Ok((false, String::new()))
        );
        for bad in [
            json!("x"),
            json!({"answer": "a"}),
            json!({"hasContext": "true", "answer": "a"}),
            json!({"hasContext": true}),
            json!({"hasContext": true, "answer": 3}),
            json!({"hasContext": true, "answer": "  "}),
        ] {
            assert!(parse_answer(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_question_is_last_and_alternation_holds() {
        let p = Prompt {
            system: "s".into(),
            conversation: vec![ApiMessage {
                role: Speaker::User,
                content: vec![Block::Text { text: "hi".into() }],
            }],
            question: "what?".into(),
            model: "m".into(),
            cwd: None,
            git_branch: None,
        };
        let m = p.messages();
        assert_eq!(m.len(), 3);
        assert_eq!(m[1].role, Speaker::Assistant);
        assert!(
            matches!(&m[2].content[0], Block::Text { text } if text.ends_with("Question: what?"))
        );
        super::conversation::check(&m).unwrap();
    }
}
