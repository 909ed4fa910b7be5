//! OpenAI Responses (`POST {base}/responses`), used statelessly (`store: false`): the whole
//! conversation is sent as input items each time, with the turn's reasoning items in their
//! encrypted form (`include: ["reasoning.encrypted_content"]`), as stateless use requires.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{
    ChatRequest, Completion, Delta, Message, PartialCall, ProviderError, ReasoningItem, ReasoningKind, StopReason,
    StreamDecoder, Usage,
};

/// Builds the JSON body for a Responses request.
pub fn request_body(req: &ChatRequest<'_>, stream: bool) -> Value {
    let mut input = Vec::with_capacity(req.messages.len());
    // A tool's images follow the run of outputs they belong to, as one user message (an
    // output is text for every server that speaks Responses).
    let mut tool_images: Vec<Value> = Vec::new();
    let flush = |input: &mut Vec<Value>, parts: &mut Vec<Value>| {
        if !parts.is_empty() {
            input.push(json!({"role": "user", "content": std::mem::take(parts)}));
        }
    };
    for (index, message) in req.messages.iter().enumerate() {
        if !matches!(message, Message::Tool { .. }) {
            flush(&mut input, &mut tool_images);
        }
        match message {
            Message::User { text, images } if images.is_empty() => input.push(json!({"role": "user", "content": text})),
            Message::User { text, images } => {
                let mut parts = Vec::with_capacity(images.len() + 1);
                if !text.is_empty() {
                    parts.push(json!({"type": "input_text", "text": text}));
                }
                parts.extend(images.iter().map(image_part));
                input.push(json!({"role": "user", "content": parts}));
            }
            Message::Assistant {
                text,
                tool_calls,
                reasoning,
            } => {
                let mut parts = Vec::new();
                if !text.is_empty() {
                    parts.push(json!({"role": "assistant", "content": text}));
                }
                for call in tool_calls {
                    parts.push(json!({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments()}));
                }
                parts = super::interleave(parts, &req.replayed_items(index, reasoning), false, reasoning_input);
                input.extend(parts);
            }
            Message::Tool {
                call_id,
                name,
                content,
                images,
                ..
            } => {
                input.push(json!({"type": "function_call_output", "call_id": call_id, "output": content}));
                if !images.is_empty() {
                    let intro = super::openai::tool_images_intro(name, call_id);
                    tool_images.push(json!({"type": "input_text", "text": intro}));
                    tool_images.extend(images.iter().map(image_part));
                }
            }
        }
    }
    flush(&mut input, &mut tool_images);
    let mut body = json!({
        "model": req.model,
        "input": input,
        "stream": stream,
        "store": false,
        "max_output_tokens": req.max_tokens,
    });
    if !req.system.is_empty() {
        body["instructions"] = json!(req.system);
    }
    let facts = super::spec::model_facts(req.model);
    if facts.openai_reasoning {
        // Reasoning items come back encrypted so they can be sent back without `store`; the
        // summary is what the person sees (refused for unverified organizations: adapted).
        body["include"] = json!(["reasoning.encrypted_content"]);
        body["reasoning"] = json!({"summary": "auto"});
    }
    if let Some(effort) = req.reasoning_effort.filter(|_| !facts.openai_plain) {
        body["reasoning"]["effort"] = json!(effort.as_str());
    }
    if let Some(temperature) = req.temperature.filter(|t| !facts.fixed_temperature || *t == 1.0) {
        body["temperature"] = json!(temperature);
    }
    if !req.tools.is_empty() {
        // Without `strict: false` the API makes every function strict, turning optional
        // parameters into required ones.
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": false}))
            .collect();
    }
    body
}

/// An image as a Responses input part (`detail` is required by the API's types).
fn image_part(image: &super::image::Image) -> Value {
    json!({"type": "input_image", "image_url": image.data_url(), "detail": "auto"})
}

/// A reasoning item as stateless input: its summary and encrypted content, no id (an id
/// refers to a stored item, and nothing is stored).
fn reasoning_input(kind: &ReasoningKind) -> Option<Value> {
    match kind {
        ReasoningKind::Encrypted { summary, content } => Some(json!({
            "type": "reasoning",
            "summary": summary.iter().map(|text| json!({"type": "summary_text", "text": text})).collect::<Vec<_>>(),
            "encrypted_content": content,
        })),
        ReasoningKind::ResponsesHosted { item } => {
            let mut item = item.clone();
            if let Some(fields) = item.as_object_mut() {
                fields.remove("id");
            }
            Some(item)
        }
        ReasoningKind::Thinking { .. }
        | ReasoningKind::RedactedThinking { .. }
        | ReasoningKind::AnthropicHosted { .. } => None,
    }
}

/// The include option that has a web search's sources sent along with its call.
pub const WEB_SEARCH_SOURCES: &str = "web_search_call.action.sources";

/// Adds the hosted web search to a request body built by [`request_body`] that offers tools,
/// and asks for the sources it used.
pub fn add_web_search(body: &mut Value) {
    let Some(tools) = body["tools"].as_array_mut() else {
        return;
    };
    tools.insert(0, json!({"type": "web_search"}));
    match body["include"].as_array_mut() {
        Some(include) => include.push(json!(WEB_SEARCH_SOURCES)),
        None => body["include"] = json!([WEB_SEARCH_SOURCES]),
    }
}

/// Whether an output item is one of a tool OpenAI runs itself, to be sent back.
fn is_hosted_item(item: &Value) -> bool {
    item["type"] == "web_search_call"
}

/// What a `web_search_call` item says about its search (a search action's query and
/// sources; opening a page or finding in one shows its URL).
pub(crate) fn search_view(item: &Value) -> Option<super::HostedSearch> {
    if item["type"] != "web_search_call" {
        return None;
    }
    let action = &item["action"];
    let query = match action["type"].as_str().unwrap_or_default() {
        "search" => action["query"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| {
                let queries: Vec<&str> = action["queries"].as_array()?.iter().filter_map(Value::as_str).collect();
                Some(queries.join("; "))
            })
            .unwrap_or_default(),
        "open_page" => format!("open {}", action["url"].as_str().unwrap_or_default()),
        "find" => format!(
            "find `{}` in {}",
            action["pattern"].as_str().unwrap_or_default(),
            action["url"].as_str().unwrap_or_default()
        ),
        _ => String::new(),
    };
    let sources = action["sources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| Some((s["url"].as_str()?.to_owned(), String::new())))
        .collect();
    Some(super::HostedSearch {
        id: item["id"].as_str().unwrap_or_default().to_owned(),
        query,
        sources,
        error: (item["status"] == "failed").then(|| "failed".to_owned()),
    })
}

/// The encrypted reasoning of an output item, when it has any.
fn reasoning_of(item: &Value) -> Option<ReasoningKind> {
    let content = item["encrypted_content"].as_str().filter(|c| !c.is_empty())?;
    let summary = item["summary"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect();
    Some(ReasoningKind::Encrypted {
        summary,
        content: content.to_owned(),
    })
}

/// Places reasoning items (by output index) among the answer's parts as brute rebuilds
/// them: its text first, then its calls.
fn place_reasoning(reasoning: Vec<(u64, ReasoningKind)>, message: Option<u64>, calls: &[u64]) -> Vec<ReasoningItem> {
    reasoning
        .into_iter()
        .map(|(index, kind)| {
            let text_before = usize::from(message.is_some_and(|m| m < index));
            let calls_before = calls.iter().filter(|c| **c < index).count();
            ReasoningItem {
                at: text_before + calls_before,
                kind,
            }
        })
        .collect()
}

fn read_usage(response: &Value) -> Usage {
    let u = &response["usage"];
    let details = &u["input_tokens_details"];
    Usage {
        input_tokens: u["input_tokens"].as_u64().unwrap_or(0),
        output_tokens: u["output_tokens"].as_u64().unwrap_or(0),
        cache_read_tokens: details["cached_tokens"].as_u64().unwrap_or(0),
        cache_write_tokens: details["cache_write_tokens"].as_u64().unwrap_or(0),
    }
}

fn error_text(error: &Value) -> String {
    match (
        error["code"].as_str().or(error["type"].as_str()),
        error["message"].as_str(),
    ) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (None, Some(message)) => message.to_owned(),
        _ => error.to_string(),
    }
}

fn call_from_item(item: &Value) -> PartialCall {
    PartialCall {
        id: item["call_id"].as_str().unwrap_or_default().to_owned(),
        name: item["name"].as_str().unwrap_or_default().to_owned(),
        arguments: item["arguments"].as_str().unwrap_or_default().to_owned(),
    }
}

/// Assembles a streamed Responses answer.
#[derive(Default)]
pub struct Decoder {
    completion: Completion,
    /// Function calls by output index; the item id maps argument deltas to them.
    calls: BTreeMap<u64, PartialCall>,
    item_index: BTreeMap<String, u64>,
    /// Encrypted reasoning items by output index.
    reasoning: Vec<(u64, ReasoningKind)>,
    /// The output index of the first message item.
    message: Option<u64>,
    done: bool,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn finish_response(&mut self, response: &Value, incomplete: bool) {
        self.completion.usage = read_usage(response);
        self.done = true;
        let reason = response["incomplete_details"]["reason"].as_str();
        self.completion.stop_reason = Some(if incomplete {
            match reason {
                Some("content_filter") => StopReason::Refusal,
                _ => StopReason::MaxTokens,
            }
        } else if self.calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        });
    }
}

impl StreamDecoder for Decoder {
    fn on_event(&mut self, _event: &str, data: &str, out: &mut dyn FnMut(Delta)) -> Result<(), ProviderError> {
        if data.is_empty() {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(|e| ProviderError::Decode(format!("{e}: {data}")))?;
        match value["type"].as_str().unwrap_or_default() {
            "response.output_text.delta" | "response.refusal.delta" => {
                let text = value["delta"].as_str().unwrap_or_default();
                self.completion.text.push_str(text);
                out(Delta::Text(text.to_owned()));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let text = value["delta"].as_str().unwrap_or_default();
                self.completion.reasoning.push_str(text);
                out(Delta::Reasoning(text.to_owned()));
            }
            "response.reasoning_summary_part.done" => {
                self.completion.reasoning.push_str("\n\n");
                out(Delta::Reasoning("\n\n".to_owned()));
            }
            "response.output_item.done" if is_hosted_item(&value["item"]) => {
                let index = value["output_index"].as_u64().unwrap_or(u64::MAX);
                self.reasoning.push((
                    index,
                    ReasoningKind::ResponsesHosted {
                        item: value["item"].clone(),
                    },
                ));
            }
            "response.output_item.done" if value["item"]["type"] == "reasoning" => {
                if let Some(kind) = reasoning_of(&value["item"]) {
                    let index = value["output_index"].as_u64().unwrap_or(u64::MAX);
                    self.reasoning.push((index, kind));
                }
            }
            "response.output_item.added" if value["item"]["type"] == "message" => {
                let index = value["output_index"].as_u64().unwrap_or(u64::MAX);
                self.message = Some(self.message.map_or(index, |m| m.min(index)));
            }
            "response.output_item.added" | "response.output_item.done" if value["item"]["type"] == "function_call" => {
                let index = value["output_index"].as_u64().unwrap_or(self.calls.len() as u64);
                let call = call_from_item(&value["item"]);
                if let Some(id) = value["item"]["id"].as_str() {
                    self.item_index.insert(id.to_owned(), index);
                }
                let done = value["type"] == "response.output_item.done";
                let slot = self.calls.entry(index).or_insert_with(|| call.clone());
                if done {
                    *slot = call;
                }
            }
            "response.function_call_arguments.delta" => {
                let index = value["item_id"]
                    .as_str()
                    .and_then(|id| self.item_index.get(id).copied())
                    .or(value["output_index"].as_u64());
                if let Some(call) = index.and_then(|i| self.calls.get_mut(&i)) {
                    call.arguments.push_str(value["delta"].as_str().unwrap_or_default());
                }
            }
            "response.completed" => self.finish_response(&value["response"], false),
            "response.incomplete" => self.finish_response(&value["response"], true),
            "error" => {
                let error = if value["error"].is_object() {
                    &value["error"]
                } else {
                    &value
                };
                return Err(ProviderError::remote(error_text(error)));
            }
            "response.failed" => {
                return Err(ProviderError::remote(error_text(&value["response"]["error"])));
            }
            _ => {} // unknown item and event types are skipped
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn finish(self: Box<Self>) -> Result<Completion, ProviderError> {
        let mut this = *self;
        if !this.done {
            return Err(ProviderError::StreamCut("no response.completed received".into()));
        }
        let call_indices: Vec<u64> = this.calls.keys().copied().collect();
        this.completion.reasoning_items = place_reasoning(this.reasoning, this.message, &call_indices);
        this.completion.tool_calls = this.calls.into_values().map(PartialCall::finish).collect();
        super::finalize_calls(&mut this.completion);
        Ok(this.completion)
    }
}

/// Decodes a non-streamed Responses body.
pub fn decode_full(body: &Value) -> Result<Completion, ProviderError> {
    if body["error"].is_object() {
        return Err(ProviderError::remote(error_text(&body["error"])));
    }
    let mut completion = Completion {
        usage: read_usage(body),
        ..Completion::default()
    };
    let (mut reasoning, mut message, mut calls) = (Vec::new(), None, Vec::new());
    for (index, item) in body["output"].as_array().into_iter().flatten().enumerate() {
        let index = index as u64;
        match item["type"].as_str().unwrap_or_default() {
            "message" => {
                message = message.or(Some(index));
                for part in item["content"].as_array().into_iter().flatten() {
                    if let Some(text) = part["text"].as_str().or(part["refusal"].as_str()) {
                        completion.text.push_str(text);
                    }
                }
            }
            "reasoning" => {
                for part in item["summary"].as_array().into_iter().flatten() {
                    completion.reasoning.push_str(part["text"].as_str().unwrap_or_default());
                }
                reasoning.extend(reasoning_of(item).map(|kind| (index, kind)));
            }
            "function_call" => {
                calls.push(index);
                completion.tool_calls.push(call_from_item(item).finish());
            }
            _ if is_hosted_item(item) => {
                reasoning.push((index, ReasoningKind::ResponsesHosted { item: item.clone() }));
            }
            _ => {}
        }
    }
    completion.reasoning_items = place_reasoning(reasoning, message, &calls);
    completion.stop_reason = Some(if body["status"] == "incomplete" {
        StopReason::MaxTokens
    } else if completion.tool_calls.is_empty() {
        StopReason::EndTurn
    } else {
        StopReason::ToolUse
    });
    super::finalize_calls(&mut completion);
    Ok(completion)
}
