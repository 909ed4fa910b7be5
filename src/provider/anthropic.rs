//! Anthropic Messages (`POST {base}/v1/messages`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{ChatRequest, Completion, Delta, Message, ProviderError, StopReason, StreamDecoder, ToolCall};
use crate::protocol::Usage;

/// The API version header value brute speaks.
pub const API_VERSION: &str = "2023-06-01";

fn arguments_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

/// Builds the JSON body for a Messages request. Consecutive tool results are merged into one
/// user message of `tool_result` blocks, as the API requires.
pub fn request_body(req: &ChatRequest<'_>, stream: bool) -> Value {
    let mut messages: Vec<Value> = Vec::with_capacity(req.messages.len());
    for message in req.messages {
        match message {
            Message::User { text } => {
                let block = json!({"type": "text", "text": text});
                // After tool results (e.g. an interrupted turn) the next user text joins the
                // same user message: the API wants roles to alternate.
                match messages.last_mut() {
                    Some(last) if last["role"] == "user" => {
                        if let Some(blocks) = last["content"].as_array_mut() {
                            blocks.push(block);
                        }
                    }
                    _ => messages.push(json!({"role": "user", "content": [block]})),
                }
            }
            Message::Assistant { text, tool_calls } => {
                let mut content = Vec::new();
                if !text.is_empty() {
                    content.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    content.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments_object(&call.arguments)}));
                }
                if content.is_empty() {
                    content.push(json!({"type": "text", "text": "(no content)"}));
                }
                messages.push(json!({"role": "assistant", "content": content}));
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => {
                let mut block = json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
                if *is_error {
                    block["is_error"] = json!(true);
                }
                let merge = messages
                    .last()
                    .is_some_and(|last| last["role"] == "user" && last["content"][0]["type"] == "tool_result");
                match (merge, messages.last_mut()) {
                    (true, Some(last)) => {
                        if let Some(blocks) = last["content"].as_array_mut() {
                            blocks.push(block);
                        }
                    }
                    _ => messages.push(json!({"role": "user", "content": [block]})),
                }
            }
        }
    }
    // Prompt caching: the tools, the system prompt and the conversation so far are the same
    // prefix on every request of a turn, so mark the end of each as a cache breakpoint.
    let cache = json!({"type": "ephemeral"});
    if let Some(block) = messages
        .last_mut()
        .and_then(|m| m["content"].as_array_mut())
        .and_then(|blocks| blocks.last_mut())
    {
        block["cache_control"] = cache.clone();
    }
    let mut body = json!({
        "model": req.model,
        "max_tokens": req.max_tokens,
        "messages": messages,
        "stream": stream,
    });
    if !req.system.is_empty() {
        body["system"] = json!([{"type": "text", "text": req.system, "cache_control": cache}]);
    }
    if let Some(temperature) = req.temperature {
        body["temperature"] = json!(temperature);
    }
    if !req.tools.is_empty() {
        let mut tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = cache;
        }
        body["tools"] = Value::Array(tools);
    }
    body
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" | "stop_sequence" | "pause_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "refusal" => StopReason::Refusal,
        _ => StopReason::Other,
    }
}

/// Reads a usage object (`message_start` has the input, `message_delta` cumulative counts).
/// Anthropic's `input_tokens` leaves the cached tokens out; brute's counts them in.
fn read_usage(value: &Value, usage: &mut Usage) {
    if let Some(n) = value["input_tokens"].as_u64() {
        usage.cache_read_tokens = value["cache_read_input_tokens"].as_u64().unwrap_or(0);
        usage.cache_write_tokens = value["cache_creation_input_tokens"].as_u64().unwrap_or(0);
        usage.input_tokens = n + usage.cache_read_tokens + usage.cache_write_tokens;
    }
    if let Some(n) = value["output_tokens"].as_u64() {
        usage.output_tokens = n;
    }
}

/// Formats an Anthropic error object (`{"type":"error","error":{...}}`).
pub fn error_text(value: &Value) -> String {
    let err = &value["error"];
    match (err["type"].as_str(), err["message"].as_str()) {
        (Some(kind), Some(message)) => format!("{kind}: {message}"),
        _ => value.to_string(),
    }
}

enum Block {
    Text,
    Thinking,
    Tool(ToolCall),
    Other,
}

/// Assembles a streamed Messages response.
#[derive(Default)]
pub struct Decoder {
    completion: Completion,
    blocks: BTreeMap<u64, Block>,
    done: bool,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }
}

impl StreamDecoder for Decoder {
    fn on_event(&mut self, _event: &str, data: &str, out: &mut dyn FnMut(Delta)) -> Result<(), ProviderError> {
        if data.is_empty() {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(|e| ProviderError::Decode(format!("{e}: {data}")))?;
        let index = value["index"].as_u64().unwrap_or(0);
        match value["type"].as_str().unwrap_or_default() {
            "message_start" => read_usage(&value["message"]["usage"], &mut self.completion.usage),
            "content_block_start" => {
                let block = &value["content_block"];
                let state = match block["type"].as_str().unwrap_or_default() {
                    "text" => Block::Text,
                    "thinking" | "redacted_thinking" => Block::Thinking,
                    "tool_use" => Block::Tool(ToolCall {
                        id: block["id"].as_str().unwrap_or_default().to_owned(),
                        name: block["name"].as_str().unwrap_or_default().to_owned(),
                        arguments: String::new(),
                    }),
                    _ => Block::Other,
                };
                self.blocks.insert(index, state);
            }
            "content_block_delta" => {
                let delta = &value["delta"];
                match (delta["type"].as_str().unwrap_or_default(), self.blocks.get_mut(&index)) {
                    ("text_delta", _) => {
                        let text = delta["text"].as_str().unwrap_or_default();
                        self.completion.text.push_str(text);
                        out(Delta::Text(text.to_owned()));
                    }
                    ("thinking_delta", _) => {
                        let text = delta["thinking"].as_str().unwrap_or_default();
                        self.completion.reasoning.push_str(text);
                        out(Delta::Reasoning(text.to_owned()));
                    }
                    ("input_json_delta", Some(Block::Tool(call))) => {
                        call.arguments
                            .push_str(delta["partial_json"].as_str().unwrap_or_default());
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = value["delta"]["stop_reason"].as_str() {
                    self.completion.stop_reason = Some(stop_reason(reason));
                }
                read_usage(&value["usage"], &mut self.completion.usage);
            }
            "message_stop" => self.done = true,
            "error" => return Err(ProviderError::Remote(error_text(&value))),
            _ => {} // ping, content_block_stop and future event types
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn finish(self: Box<Self>) -> Result<Completion, ProviderError> {
        let mut this = *self;
        // message_delta carries the stop reason: after it only message_stop can follow, so a
        // stream that ends there lost nothing.
        if !this.done && this.completion.stop_reason.is_none() {
            return Err(ProviderError::StreamCut("no message_stop received".into()));
        }
        this.completion.tool_calls = this
            .blocks
            .into_values()
            .filter_map(|b| match b {
                Block::Tool(call) => Some(call),
                Block::Text | Block::Thinking | Block::Other => None,
            })
            .collect();
        super::finalize_calls(&mut this.completion);
        Ok(this.completion)
    }
}

/// Decodes a non-streamed Messages response body.
pub fn decode_full(body: &Value) -> Result<Completion, ProviderError> {
    if body["type"] == "error" {
        return Err(ProviderError::Remote(error_text(body)));
    }
    let mut completion = Completion {
        stop_reason: body["stop_reason"].as_str().map(stop_reason),
        ..Completion::default()
    };
    read_usage(&body["usage"], &mut completion.usage);
    for block in body["content"].as_array().into_iter().flatten() {
        match block["type"].as_str().unwrap_or_default() {
            "text" => completion.text.push_str(block["text"].as_str().unwrap_or_default()),
            "thinking" => completion
                .reasoning
                .push_str(block["thinking"].as_str().unwrap_or_default()),
            "tool_use" => completion.tool_calls.push(ToolCall {
                id: block["id"].as_str().unwrap_or_default().to_owned(),
                name: block["name"].as_str().unwrap_or_default().to_owned(),
                arguments: block["input"].to_string(),
            }),
            _ => {}
        }
    }
    super::finalize_calls(&mut completion);
    Ok(completion)
}
