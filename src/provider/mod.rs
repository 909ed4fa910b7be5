//! Providers: adapters from one neutral [`ChatRequest`] to a wire format and back.
//!
//! Nothing outside this module knows a wire format. Each HTTP adapter is split in two:
//! a pure request builder / stream decoder per wire format (`openai`, `anthropic`,
//! `responses`), and one shared HTTP driver (`http`) that sends, retries and feeds the
//! decoder. The `replay` provider plays a script instead of calling a network. What each
//! provider is (name, wire format, base URL, model, key variables, auth) lives in one table,
//! [`spec::SPECS`].

pub mod anthropic;
pub mod http;
pub mod openai;
pub mod replay;
pub mod responses;
pub mod spec;
pub mod sse;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::Usage;

/// A tool as every provider sees it: a name, a description and a JSON Schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// A tool call made by the model. `arguments` is the raw JSON text the model produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One message of the conversation, in neutral form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    User {
        text: String,
    },
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
}

/// Everything a provider needs for one completion.
#[derive(Debug, Clone)]
pub struct ChatRequest<'a> {
    pub model: &'a str,
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    pub max_tokens: u32,
    /// Sampling temperature; `None` leaves the provider's default.
    pub temperature: Option<f32>,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    Refusal,
    Other,
}

/// A streamed piece of the answer, forwarded to the front ends as it arrives.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    Text(String),
    Reasoning(String),
    Retrying {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        reason: String,
    },
    /// Something the person should know about the request, e.g. a parameter the model
    /// refused and that brute adapted.
    Notice(String),
}

/// The assembled result of one model request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop_reason: Option<StopReason>,
    pub usage: Usage,
}

/// Why a model request failed.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("authentication failed ({status}): {message}. Check {hint}")]
    Auth { status: u16, message: String, hint: String },
    #[error("the conversation is too long for the model's context window: {0}")]
    ContextTooLong(String),
    #[error("the provider returned HTTP {status}: {message}")]
    Http { status: u16, message: String },
    #[error("could not reach the provider at {url}: {message}")]
    Connect { url: String, message: String },
    #[error("{url} answered with {what}, not a model API. {hint}")]
    NotAnApi { url: String, what: String, hint: String },
    #[error("nothing answers at {url} (HTTP 404{detail}). {hint}")]
    NotFound { url: String, detail: String, hint: String },
    #[error(
        "the provider does not know the model `{model}` ({message}); choose another with --model or `model` in config.toml"
    )]
    UnknownModel { model: String, message: String },
    #[error("the response stream was cut before it finished: {0}")]
    StreamCut(String),
    #[error("no data from the provider for {0} seconds")]
    IdleTimeout(u64),
    #[error("the provider sent an error: {0}")]
    Remote(String),
    #[error("could not decode the provider's response: {0}")]
    Decode(String),
    #[error("the request was cancelled")]
    Cancelled,
    #[error("replay: {0}")]
    Replay(String),
}

/// Receives deltas while a completion streams.
pub type DeltaSink<'a> = &'a mut (dyn FnMut(Delta) + Send);

/// A model backend. Implementations stream deltas to `on_delta` and return the whole answer.
pub trait Provider: Send + Sync {
    /// A short label for status lines and logs, e.g. `openai`.
    fn name(&self) -> &str;
    /// Runs one completion.
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest<'a>,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, ProviderError>>;
}

/// A decoder for one streamed response of a wire format: fed SSE events, it emits deltas and
/// finally the assembled [`Completion`].
pub trait StreamDecoder: Send {
    /// Handles one SSE event (`event` may be empty when the server sends only `data:`).
    fn on_event(&mut self, event: &str, data: &str, out: &mut dyn FnMut(Delta)) -> Result<(), ProviderError>;
    /// True once the wire format's terminal event was seen.
    fn is_finished(&self) -> bool;
    /// Returns the assembled answer; fails if the stream ended before its terminal event.
    fn finish(self: Box<Self>) -> Result<Completion, ProviderError>;
}

/// Normalizes assembled tool calls: empty arguments become `{}` (a tool with no parameters),
/// and when the model was cut off by its token limit, calls whose arguments are not complete
/// JSON are dropped: a half-received tool call must never run.
pub(crate) fn finalize_calls(completion: &mut Completion) {
    for call in &mut completion.tool_calls {
        if call.arguments.trim().is_empty() {
            call.arguments = "{}".to_owned();
        }
    }
    if completion.stop_reason == Some(StopReason::MaxTokens) {
        completion
            .tool_calls
            .retain(|call| serde_json::from_str::<Value>(&call.arguments).is_ok());
    }
}
