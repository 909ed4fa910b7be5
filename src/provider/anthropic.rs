//! Anthropic Messages (`POST {base}/v1/messages`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::spec::{ClaudeThinking, model_facts};
use super::{
    ChatRequest, Completion, Delta, Effort, Message, PartialCall, ProviderError, ReasoningItem, ReasoningKind,
    StopReason, StreamDecoder, ToolCall, Usage,
};

/// The API version header value brute speaks.
pub const API_VERSION: &str = "2023-06-01";

/// A call's `input` as Messages requires it: an object (`{}` for arguments that were not one).
fn arguments_object(call: &ToolCall) -> Value {
    match call.input() {
        Ok(v @ Value::Object(_)) => v.clone(),
        _ => json!({}),
    }
}

/// The thinking budget for an effort on models that take one: Claude Code's levels, less
/// what the answer needs beside it (the budget counts against `max_tokens` and must stay
/// under it); `None` when `max_tokens` leaves no room for the API's minimum of 1024.
fn thinking_budget(effort: Effort, max_tokens: u32) -> Option<u32> {
    let wanted: u32 = match effort {
        Effort::Low => 4_000,
        Effort::Medium => 10_000,
        Effort::High => 32_000,
    };
    let budget = wanted.min(max_tokens.saturating_sub(1024));
    (budget >= 1024).then_some(budget)
}

/// A thinking block as the API wants it back.
fn thinking_block(kind: &ReasoningKind) -> Option<Value> {
    match kind {
        ReasoningKind::Thinking { text, signature } => {
            Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
        }
        ReasoningKind::RedactedThinking { data } => Some(json!({"type": "redacted_thinking", "data": data})),
        ReasoningKind::AnthropicHosted { block } => Some(block.clone()),
        ReasoningKind::Encrypted { .. } | ReasoningKind::ResponsesHosted { .. } => None,
    }
}

/// The hosted web search tool as Messages takes it (`web_search_20250305`; the name is fixed).
pub const WEB_SEARCH_TOOL: &str = "web_search_20250305";
/// Most searches the model may run in one request (Claude Code allows 8).
pub const WEB_SEARCH_MAX_USES: u32 = 8;

/// Adds the hosted web search to a request body built by [`request_body`] that offers tools.
pub fn add_web_search(body: &mut Value) {
    if let Some(tools) = body["tools"].as_array_mut() {
        // First, so the cache breakpoint stays on the last tool.
        tools.insert(
            0,
            json!({"type": WEB_SEARCH_TOOL, "name": "web_search", "max_uses": WEB_SEARCH_MAX_USES}),
        );
    }
}

/// Whether a content block is one of a tool Anthropic runs itself.
fn is_hosted_block(kind: &str) -> bool {
    kind == "server_tool_use" || (kind.ends_with("_tool_result") && kind != "tool_result")
}

/// What a hosted block says about a web search: a `server_tool_use` starts one, its
/// `web_search_tool_result` fills in the sources (or the error).
pub(crate) fn search_view(block: &Value, searches: &mut Vec<super::HostedSearch>) {
    match block["type"].as_str().unwrap_or_default() {
        "server_tool_use" if block["name"] == "web_search" => searches.push(super::HostedSearch {
            id: block["id"].as_str().unwrap_or_default().to_owned(),
            query: block["input"]["query"].as_str().unwrap_or_default().to_owned(),
            ..super::HostedSearch::default()
        }),
        "web_search_tool_result" => {
            let id = block["tool_use_id"].as_str().unwrap_or_default();
            let Some(search) = searches.iter_mut().find(|s| s.id == id) else {
                return;
            };
            match &block["content"] {
                Value::Array(results) => {
                    search.sources = results
                        .iter()
                        .filter_map(|r| {
                            let url = r["url"].as_str()?;
                            Some((url.to_owned(), r["title"].as_str().unwrap_or_default().to_owned()))
                        })
                        .collect();
                }
                error => {
                    search.error = Some(error["error_code"].as_str().unwrap_or("unknown error").to_owned());
                }
            }
        }
        _ => {}
    }
}

/// Leaves out the `server_tool_use` blocks of an assistant message that no result block of it
/// answers.
fn drop_unanswered_server_calls(message: &mut Value) {
    let Some(blocks) = message["content"].as_array_mut() else {
        return;
    };
    let answered: Vec<String> = blocks
        .iter()
        .filter(|b| {
            b["type"]
                .as_str()
                .is_some_and(|t| t.ends_with("_tool_result") && t != "tool_result")
        })
        .filter_map(|b| b["tool_use_id"].as_str().map(str::to_owned))
        .collect();
    blocks.retain(|b| {
        b["type"] != "server_tool_use" || b["id"].as_str().is_some_and(|id| answered.iter().any(|a| a == id))
    });
    if blocks.is_empty() {
        blocks.push(json!({"type": "text", "text": "(no content)"}));
    }
}

/// An image as a Messages content block.
fn image_block(image: &super::image::Image) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}})
}

/// Builds the JSON body for a Messages request. Consecutive tool results are merged into one
/// user message of `tool_result` blocks, as the API requires. The turn's thinking blocks go
/// back with their signatures, first in their messages (the API refuses a tool loop with
/// thinking on otherwise).
pub fn request_body(req: &ChatRequest<'_>, stream: bool) -> Value {
    let mut messages: Vec<Value> = Vec::with_capacity(req.messages.len());
    for (index, message) in req.messages.iter().enumerate() {
        match message {
            Message::User { text, images } => {
                let mut blocks: Vec<Value> = images.iter().map(image_block).collect();
                if !text.is_empty() || blocks.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                // After tool results (e.g. an interrupted turn) the next user text joins the
                // same user message: the API wants roles to alternate.
                match messages.last_mut() {
                    Some(last) if last["role"] == "user" => {
                        if let Some(existing) = last["content"].as_array_mut() {
                            existing.extend(blocks);
                        }
                    }
                    _ => messages.push(json!({"role": "user", "content": blocks})),
                }
            }
            Message::Assistant {
                text,
                tool_calls,
                reasoning,
            } => {
                let mut content = Vec::new();
                if !text.is_empty() {
                    content.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    content.push(
                        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments_object(call)}),
                    );
                }
                content = super::interleave(content, &req.replayed_items(index, reasoning), true, thinking_block);
                // The answer after a `pause_turn` goes on the paused one: one assistant turn,
                // as the API itself combines them.
                if let Some(paused) = messages
                    .last_mut()
                    .filter(|last| last["role"] == "assistant")
                    .and_then(|last| last["content"].as_array_mut())
                {
                    paused.extend(content);
                    continue;
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
                images,
                ..
            } => {
                // A result's images go inside it: tool_result content may be text and image
                // blocks.
                let content = match images.is_empty() {
                    true => json!(content),
                    false => {
                        let text = (!content.is_empty()).then(|| json!({"type": "text", "text": content}));
                        Value::Array(text.into_iter().chain(images.iter().map(image_block)).collect())
                    }
                };
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
    // A hosted call the provider had not answered yet (a turn that ended on a pause: the
    // iteration cap, an interrupt, an error) is valid only while its message is the last;
    // anywhere earlier the API refuses the whole request, so it is left out there.
    let last = messages.len().saturating_sub(1);
    for message in messages.iter_mut().take(last).filter(|m| m["role"] == "assistant") {
        drop_unanswered_server_calls(message);
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
    let facts = model_facts(req.model);
    let thinking = match (req.reasoning_effort, facts.claude_thinking) {
        (Some(effort), ClaudeThinking::Budget) => {
            thinking_budget(effort, req.max_tokens).map(|budget| json!({"type": "enabled", "budget_tokens": budget}))
        }
        // Claude 4.6 on: the model decides how much, the effort steers it (4.7 on refuses
        // the budget form).
        (Some(effort), ClaudeThinking::Adaptive) => {
            body["output_config"] = json!({"effort": effort.as_str()});
            Some(json!({"type": "adaptive"}))
        }
        _ => None,
    };
    // Thinking takes no temperature but the default, and the newest models none at all.
    let fixed = thinking.is_some() || facts.fixed_temperature;
    if let Some(thinking) = thinking {
        body["thinking"] = thinking;
    }
    if let Some(temperature) = req.temperature.filter(|t| !fixed || *t == 1.0) {
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
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "pause_turn" => StopReason::PauseTurn,
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
    /// A thinking block (its `at` is in the item), to be sent back in the turn.
    Thinking(ReasoningItem),
    /// A hosted tool's block (its `at` is in the item) and the input streamed into it.
    Hosted(ReasoningItem, String),
    Tool(PartialCall),
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
                // Where the block goes back: brute sends the message's text as one block,
                // then its calls.
                let at = usize::from(self.blocks.values().any(|b| matches!(b, Block::Text)))
                    + self.blocks.values().filter(|b| matches!(b, Block::Tool(_))).count();
                let kind = block["type"].as_str().unwrap_or_default();
                let state = match kind {
                    _ if is_hosted_block(kind) => Block::Hosted(
                        ReasoningItem {
                            at,
                            kind: ReasoningKind::AnthropicHosted { block: block.clone() },
                        },
                        String::new(),
                    ),
                    "text" => Block::Text,
                    "thinking" => Block::Thinking(ReasoningItem {
                        at,
                        kind: ReasoningKind::Thinking {
                            text: block["thinking"].as_str().unwrap_or_default().to_owned(),
                            signature: block["signature"].as_str().unwrap_or_default().to_owned(),
                        },
                    }),
                    "redacted_thinking" => Block::Thinking(ReasoningItem {
                        at,
                        kind: ReasoningKind::RedactedThinking {
                            data: block["data"].as_str().unwrap_or_default().to_owned(),
                        },
                    }),
                    "tool_use" => Block::Tool(PartialCall {
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
                    ("thinking_delta", block) => {
                        let text = delta["thinking"].as_str().unwrap_or_default();
                        if let Some(Block::Thinking(ReasoningItem {
                            kind: ReasoningKind::Thinking { text: kept, .. },
                            ..
                        })) = block
                        {
                            kept.push_str(text);
                        }
                        self.completion.reasoning.push_str(text);
                        out(Delta::Reasoning(text.to_owned()));
                    }
                    (
                        "signature_delta",
                        Some(Block::Thinking(ReasoningItem {
                            kind: ReasoningKind::Thinking { signature, .. },
                            ..
                        })),
                    ) => signature.push_str(delta["signature"].as_str().unwrap_or_default()),
                    ("input_json_delta", Some(Block::Tool(call))) => {
                        call.arguments
                            .push_str(delta["partial_json"].as_str().unwrap_or_default());
                    }
                    ("input_json_delta", Some(Block::Hosted(_, input))) => {
                        input.push_str(delta["partial_json"].as_str().unwrap_or_default());
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
            "error" => return Err(ProviderError::remote(error_text(&value))),
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
        for block in this.blocks.into_values() {
            match block {
                Block::Tool(call) => this.completion.tool_calls.push(call.finish()),
                Block::Thinking(item) if sendable(&item) => this.completion.reasoning_items.push(item),
                Block::Hosted(mut item, input) => {
                    if let ReasoningKind::AnthropicHosted { block } = &mut item.kind
                        && !input.trim().is_empty()
                    {
                        block["input"] = serde_json::from_str(&input).unwrap_or_else(|_| json!({}));
                    }
                    this.completion.reasoning_items.push(item);
                }
                Block::Text | Block::Thinking(_) | Block::Other => {}
            }
        }
        super::finalize_calls(&mut this.completion);
        Ok(this.completion)
    }
}

/// Whether a thinking block can go back: a thinking block needs its signature.
fn sendable(item: &ReasoningItem) -> bool {
    match &item.kind {
        ReasoningKind::Thinking { signature, .. } => !signature.is_empty(),
        ReasoningKind::RedactedThinking { data } => !data.is_empty(),
        ReasoningKind::AnthropicHosted { .. } => true,
        ReasoningKind::Encrypted { .. } | ReasoningKind::ResponsesHosted { .. } => false,
    }
}

/// Decodes a non-streamed Messages response body.
pub fn decode_full(body: &Value) -> Result<Completion, ProviderError> {
    if body["type"] == "error" {
        return Err(ProviderError::remote(error_text(body)));
    }
    let mut completion = Completion {
        stop_reason: body["stop_reason"].as_str().map(stop_reason),
        ..Completion::default()
    };
    read_usage(&body["usage"], &mut completion.usage);
    let (mut texts, mut calls) = (0usize, 0usize);
    for block in body["content"].as_array().into_iter().flatten() {
        let kind = match block["type"].as_str().unwrap_or_default() {
            "text" => {
                completion.text.push_str(block["text"].as_str().unwrap_or_default());
                texts += 1;
                None
            }
            kind if is_hosted_block(kind) => {
                // brute sends the message's text back as one block, then its calls.
                Some(ReasoningKind::AnthropicHosted { block: block.clone() })
            }
            "thinking" => {
                let text = block["thinking"].as_str().unwrap_or_default();
                completion.reasoning.push_str(text);
                Some(ReasoningKind::Thinking {
                    text: text.to_owned(),
                    signature: block["signature"].as_str().unwrap_or_default().to_owned(),
                })
            }
            "redacted_thinking" => Some(ReasoningKind::RedactedThinking {
                data: block["data"].as_str().unwrap_or_default().to_owned(),
            }),
            "tool_use" => {
                completion.tool_calls.push(ToolCall::new(
                    block["id"].as_str().unwrap_or_default(),
                    block["name"].as_str().unwrap_or_default(),
                    block["input"].to_string(),
                ));
                calls += 1;
                None
            }
            _ => None,
        };
        if let Some(kind) = kind {
            // brute sends the message's text back as one block, then its calls.
            let item = ReasoningItem {
                at: usize::from(texts > 0) + calls,
                kind,
            };
            if sendable(&item) {
                completion.reasoning_items.push(item);
            }
        }
    }
    super::finalize_calls(&mut completion);
    Ok(completion)
}
