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
pub mod image;
pub mod models;
pub mod openai;
pub mod pricing;
pub mod replay;
pub mod responses;
pub mod spec;
pub mod sse;
pub mod text_calls;
pub mod window;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as every provider sees it: a name, a description and a JSON Schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// A tool call made by the model: its arguments as the model wrote them (sent back to the
/// provider verbatim) and, parsed once when the call is made, what every tool and check
/// reads. Nothing above the providers parses argument text.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "WireCall", into = "WireCall")]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    arguments: String,
    /// `arguments` parsed; `Err` holds the parser's message.
    input: Result<Value, String>,
}

impl ToolCall {
    /// A call with `arguments` as the model wrote them. Empty text means no arguments (`{}`:
    /// a tool without parameters, as providers stream it).
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        let mut arguments = arguments.into();
        if arguments.trim().is_empty() {
            arguments = "{}".to_owned();
        }
        let input = serde_json::from_str(&arguments).map_err(|e| e.to_string());
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
            input,
        }
    }

    /// The arguments' text as the model wrote it.
    pub fn arguments(&self) -> &str {
        &self.arguments
    }

    /// The parsed arguments, or the parser's message when the model wrote no valid JSON.
    pub fn input(&self) -> Result<&Value, &str> {
        self.input.as_ref().map_err(String::as_str)
    }

    /// The arguments for showing and comparing calls: parsed, or the text as a JSON string
    /// when it is not JSON.
    pub fn input_or_text(&self) -> Value {
        match &self.input {
            Ok(value) => value.clone(),
            Err(_) => Value::String(self.arguments.clone()),
        }
    }
}

/// Two calls are the same call when the model wrote the same thing.
impl PartialEq for ToolCall {
    fn eq(&self, other: &Self) -> bool {
        (&self.id, &self.name, &self.arguments) == (&other.id, &other.name, &other.arguments)
    }
}

/// How a call is stored in sessions: its text only (parsed again when read back).
#[derive(Serialize, Deserialize)]
struct WireCall {
    id: String,
    name: String,
    arguments: String,
}

impl From<WireCall> for ToolCall {
    fn from(call: WireCall) -> Self {
        Self::new(call.id, call.name, call.arguments)
    }
}

impl From<ToolCall> for WireCall {
    fn from(call: ToolCall) -> Self {
        Self {
            id: call.id,
            name: call.name,
            arguments: call.arguments,
        }
    }
}

/// A call while its pieces stream in (the decoders'); [`PartialCall::finish`] makes it a
/// [`ToolCall`] once its arguments are all there.
#[derive(Debug, Clone, Default)]
pub(crate) struct PartialCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl PartialCall {
    pub fn finish(self) -> ToolCall {
        ToolCall::new(self.id, self.name, self.arguments)
    }
}

/// How hard a reasoning model thinks; each wire format and model maps it to its own form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Low,
    Medium,
    High,
}

impl Effort {
    /// The levels, as settings and `--effort` spell them.
    pub const NAMES: [&'static str; 3] = ["low", "medium", "high"];

    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "low" => Some(Self::Low),
            "medium" => Some(Self::Medium),
            "high" => Some(Self::High),
            _ => None,
        }
    }

    /// The name OpenAI's `reasoning_effort` / `reasoning.effort` and Anthropic's
    /// `output_config.effort` take.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// Reasoning a provider returned in a form it wants back in the later requests of the same
/// turn: without it the model loses its thread between tool calls, and Anthropic refuses
/// the request when thinking is on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasoningItem {
    /// How many of the message's other parts (text, tool calls) came before it, so
    /// interleaved reasoning goes back where it was.
    pub at: usize,
    pub kind: ReasoningKind,
}

/// The wire-specific payload of a [`ReasoningItem`]; each wire format sends back its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ReasoningKind {
    /// An Anthropic `thinking` block and the signature that lets it be sent back.
    Thinking { text: String, signature: String },
    /// An Anthropic `redacted_thinking` block.
    RedactedThinking { data: String },
    /// An OpenAI Responses reasoning item, encrypted for use with `store: false`.
    Encrypted { summary: Vec<String>, content: String },
    /// A block of a tool Anthropic ran itself (`server_tool_use`, `web_search_tool_result`),
    /// kept verbatim (`encrypted_content` included): it goes back in every later request.
    AnthropicHosted { block: Value },
    /// An OpenAI Responses item of a hosted tool (`web_search_call`), kept verbatim: it goes
    /// back in every later request, without its id (an id names a stored item).
    ResponsesHosted { item: Value },
}

impl ReasoningKind {
    /// A hosted tool's block or item: sent back in every later request and kept in session
    /// files, unlike reasoning, which goes back within its turn only.
    pub fn is_hosted(&self) -> bool {
        matches!(self, Self::AnthropicHosted { .. } | Self::ResponsesHosted { .. })
    }
}

/// A web search the provider ran itself, as front ends show it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostedSearch {
    /// The provider's id of the search (`srvtoolu_...`, `ws_...`).
    pub id: String,
    pub query: String,
    /// The results' pages (url, title); empty while unknown.
    pub sources: Vec<(String, String)>,
    /// The provider's error code, when the search failed.
    pub error: Option<String>,
}

/// The searches among a message's hosted items, a search's result merged into its call.
pub fn hosted_searches(items: &[ReasoningItem]) -> Vec<HostedSearch> {
    let mut searches: Vec<HostedSearch> = Vec::new();
    for item in items {
        match &item.kind {
            ReasoningKind::AnthropicHosted { block } => anthropic::search_view(block, &mut searches),
            ReasoningKind::ResponsesHosted { item } => searches.extend(responses::search_view(item)),
            _ => {}
        }
    }
    searches
}

/// Session files keep only the hosted items of a message's reasoning.
fn no_hosted(items: &[ReasoningItem]) -> bool {
    !items.iter().any(|item| item.kind.is_hosted())
}

fn hosted_only<S: serde::Serializer>(items: &[ReasoningItem], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(items.iter().filter(|item| item.kind.is_hosted()))
}

/// One message of the conversation, in neutral form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    User {
        text: String,
        /// Images the person attached (`-i`, `@shot.png`), kept in the session file.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<image::Image>,
    },
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// Reasoning goes back within the turn only, so it is never saved in session files;
        /// hosted tools' blocks ([`ReasoningKind::is_hosted`]) go back in every later request,
        /// so they are.
        #[serde(default, skip_serializing_if = "no_hosted", serialize_with = "hosted_only")]
        reasoning: Vec<ReasoningItem>,
    },
    Tool {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
        /// Images the tool returned (`read` of a picture, an MCP tool's image content).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<image::Image>,
    },
}

impl Message {
    /// A person's message of text alone.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User {
            text: text.into(),
            images: Vec::new(),
        }
    }

    /// The images this message carries.
    pub fn images(&self) -> &[image::Image] {
        match self {
            Self::User { images, .. } | Self::Tool { images, .. } => images,
            Self::Assistant { .. } => &[],
        }
    }
}

/// Token counts reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Every input token, the cached ones included.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache (part of `input_tokens`; billed
    /// at a fraction): Anthropic `cache_read_input_tokens`, OpenAI `cached_tokens`.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache (part of `input_tokens`): Anthropic
    /// `cache_creation_input_tokens`, OpenAI `cache_write_tokens`.
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Adds another report to this running total.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
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
    /// Reasoning effort; `None` leaves the model's default (thinking off where it is optional).
    pub reasoning_effort: Option<Effort>,
}

impl ChatRequest<'_> {
    /// The items of the assistant message at `index` that go back: all of them where its
    /// reasoning does ([`Self::replays_reasoning`]), else its hosted tools' only.
    pub fn replayed_items(&self, index: usize, items: &[ReasoningItem]) -> Vec<ReasoningItem> {
        let all = self.replays_reasoning(index);
        items
            .iter()
            .filter(|item| all || item.kind.is_hosted())
            .cloned()
            .collect()
    }

    /// Whether the assistant message at `index` goes with its reasoning: it belongs to the
    /// current turn (after the last user message), or its tool results are the last thing
    /// before that message (a turn interrupted after its tools ran: the API still sees an
    /// open tool loop there).
    pub fn replays_reasoning(&self, index: usize) -> bool {
        let turn_start = self
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }))
            .unwrap_or(0);
        index > turn_start
            || index < turn_start
                && self.messages[index + 1..turn_start]
                    .iter()
                    .all(|m| matches!(m, Message::Tool { .. }))
                && matches!(self.messages.get(index + 1), Some(Message::Tool { .. }))
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    /// The provider paused a long turn of its own server tools (Anthropic's `pause_turn`):
    /// the answer so far goes back as is, and the model goes on from there.
    PauseTurn,
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
    /// Reasoning to send back in the turn's later requests.
    pub reasoning_items: Vec<ReasoningItem>,
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

impl ProviderError {
    /// An error the provider sent in a body or a stream event. "Too long for the context
    /// window" is its own kind, whichever wire format said it, so the agent asks the variant
    /// (it compacts and retries) and nothing above the providers reads error text.
    pub fn remote(message: String) -> Self {
        match says_too_long(&message) {
            true => Self::ContextTooLong(message),
            false => Self::Remote(message),
        }
    }
}

/// Whether a provider's error text (a body, or its `code: message`) says the request was too
/// long for the model: the codes and phrases of OpenAI (`context_length_exceeded`), Anthropic
/// (`prompt is too long`), OpenAI-compatible servers (Ollama, vLLM, llama.cpp's "exceeds the
/// available context size") and OpenRouter.
pub(crate) fn says_too_long(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    [
        "context_length",
        "context length",
        "prompt is too long",
        "prompt too long",
        "input is too long",
        "too many tokens",
        "maximum context",
        "context window",
        "context size",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

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
    /// The context window the server reports for `model`, when it reports one (local
    /// servers; see [`window`]). Asked once, in the background.
    fn context_window<'a>(&'a self, _model: &'a str) -> BoxFuture<'a, Option<u64>> {
        Box::pin(async { None })
    }
    /// The models the server offers, in its order (see [`models`]), asked when the person
    /// opens `/model`'s picker; empty when the provider has no list.
    fn list_models<'a>(&'a self) -> BoxFuture<'a, Result<Vec<String>, ProviderError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
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

/// A message's wire parts (its text, then its tool calls) with its reasoning put back where
/// it was: `block` turns an item into this wire's form (`None` skips it). Reasoning with
/// nothing after it is kept only when `trailing` (Responses refuses a reasoning item
/// without the item it led to).
pub(crate) fn interleave(
    parts: Vec<Value>,
    reasoning: &[ReasoningItem],
    trailing: bool,
    block: impl Fn(&ReasoningKind) -> Option<Value>,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(parts.len() + reasoning.len());
    let mut pending = reasoning.iter().peekable();
    for (index, part) in parts.into_iter().enumerate() {
        while let Some(item) = pending.next_if(|item| item.at <= index) {
            out.extend(block(&item.kind));
        }
        out.push(part);
    }
    if trailing {
        out.extend(pending.filter_map(|item| block(&item.kind)));
    }
    out
}

/// When the model was cut off by its token limit, drops the calls whose arguments are not
/// complete JSON: a half-received tool call must never run.
pub(crate) fn finalize_calls(completion: &mut Completion) {
    if completion.stop_reason == Some(StopReason::MaxTokens) {
        completion.tool_calls.retain(|call| call.input().is_ok());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A call is parsed once when made; sessions keep its text only and parse it again when
    /// read back; empty text is a call without arguments.
    #[test]
    fn a_call_is_parsed_once_and_stored_as_its_text() {
        let call = ToolCall::new("c1", "read", r#"{"file_path": "a"}"#);
        assert_eq!(call.input(), Ok(&json!({"file_path": "a"})));
        let stored = serde_json::to_value(&call).unwrap();
        assert_eq!(
            stored,
            json!({"id": "c1", "name": "read", "arguments": r#"{"file_path": "a"}"#})
        );
        let back: ToolCall = serde_json::from_value(stored).unwrap();
        assert_eq!(back, call);
        assert_eq!(back.input(), call.input());

        let broken = ToolCall::new("c2", "read", r#"{"file_path": "#);
        assert!(broken.input().unwrap_err().contains("EOF"), "{:?}", broken.input());
        assert_eq!(broken.input_or_text(), json!(r#"{"file_path": "#));
        let empty = ToolCall::new("c3", "list", " ");
        assert_eq!((empty.arguments(), empty.input()), ("{}", Ok(&json!({}))));
    }

    /// Every wire's way of saying "too long" is the one variant; other remote errors stay
    /// remote. The texts are what each decoder makes of the provider's error object.
    #[test]
    fn too_long_is_a_kind_whichever_wire_said_it() {
        for said in [
            "invalid_request_error: prompt is too long: 210000 tokens > 200000 maximum",
            "context_length_exceeded: Your input exceeds the context window of this model.",
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
            "the request exceeds the available context size, try increasing it",
        ] {
            let error = ProviderError::remote(said.to_owned());
            assert!(
                matches!(&error, ProviderError::ContextTooLong(m) if m == said),
                "{said}: {error:?}"
            );
        }
        for said in [
            "overloaded_error: Overloaded",
            "insufficient_quota: You exceeded your current quota",
        ] {
            assert!(
                matches!(ProviderError::remote(said.to_owned()), ProviderError::Remote(_)),
                "{said}"
            );
        }
    }

    fn assistant(calls: usize) -> Message {
        Message::Assistant {
            text: "t".into(),
            tool_calls: (0..calls)
                .map(|i| ToolCall::new(format!("c{i}"), "read", "{}"))
                .collect(),
            reasoning: Vec::new(),
        }
    }

    fn tool() -> Message {
        Message::Tool {
            call_id: "c0".into(),
            name: "read".into(),
            content: "x".into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    fn user() -> Message {
        Message::user("u")
    }

    #[test]
    fn reasoning_goes_back_within_the_turn_and_to_an_open_tool_loop() {
        let messages = [
            user(),
            assistant(1), // 1: an earlier turn's loop, closed by its answer
            tool(),
            assistant(0), // 3: that turn's answer
            user(),
            assistant(1), // 5: this turn
            tool(),
        ];
        let request = ChatRequest {
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
            max_tokens: 1,
            temperature: None,
            reasoning_effort: None,
        };
        let replayed: Vec<usize> = (0..messages.len())
            .filter(|i| matches!(messages[*i], Message::Assistant { .. }) && request.replays_reasoning(*i))
            .collect();
        assert_eq!(replayed, [5]);
        // Interrupted after its tools ran, then a new prompt: that loop is still open.
        let interrupted = [user(), assistant(1), tool(), user()];
        let request = ChatRequest {
            messages: &interrupted,
            ..request
        };
        assert!(request.replays_reasoning(1));
    }

    #[test]
    fn interleave_puts_reasoning_back_where_it_was() {
        let item = |at: usize, n: &str| ReasoningItem {
            at,
            kind: ReasoningKind::RedactedThinking { data: n.into() },
        };
        let block = |kind: &ReasoningKind| match kind {
            ReasoningKind::RedactedThinking { data } => Some(json!(data)),
            _ => None,
        };
        let parts = vec![json!("text"), json!("call")];
        let reasoning = [item(0, "r0"), item(1, "r1"), item(2, "r2")];
        assert_eq!(
            interleave(parts.clone(), &reasoning, true, block),
            [json!("r0"), json!("text"), json!("r1"), json!("call"), json!("r2")]
        );
        assert_eq!(
            interleave(parts, &reasoning, false, block),
            [json!("r0"), json!("text"), json!("r1"), json!("call")],
            "reasoning that led to nothing is dropped where the API wants a following item"
        );
    }
}
