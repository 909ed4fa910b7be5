//! OpenAI Responses (`POST {base}/responses`), used statelessly (`store: false`): the whole
//! conversation is sent as input items each time.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{ChatRequest, Completion, Delta, Message, ProviderError, StopReason, StreamDecoder, ToolCall};
use crate::protocol::Usage;

/// Builds the JSON body for a Responses request.
pub fn request_body(req: &ChatRequest<'_>, stream: bool) -> Value {
    let mut input = Vec::with_capacity(req.messages.len());
    for message in req.messages {
        match message {
            Message::User { text } => input.push(json!({"role": "user", "content": text})),
            Message::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    input.push(json!({"role": "assistant", "content": text}));
                }
                for call in tool_calls {
                    input.push(json!({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments}));
                }
            }
            Message::Tool { call_id, content, .. } => {
                input.push(json!({"type": "function_call_output", "call_id": call_id, "output": content}))
            }
        }
    }
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

fn call_from_item(item: &Value) -> ToolCall {
    ToolCall {
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
    calls: BTreeMap<u64, ToolCall>,
    item_index: BTreeMap<String, u64>,
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
                return Err(ProviderError::Remote(error_text(error)));
            }
            "response.failed" => {
                return Err(ProviderError::Remote(error_text(&value["response"]["error"])));
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
        this.completion.tool_calls = this.calls.into_values().collect();
        super::finalize_calls(&mut this.completion);
        Ok(this.completion)
    }
}

/// Decodes a non-streamed Responses body.
pub fn decode_full(body: &Value) -> Result<Completion, ProviderError> {
    if body["error"].is_object() {
        return Err(ProviderError::Remote(error_text(&body["error"])));
    }
    let mut completion = Completion {
        usage: read_usage(body),
        ..Completion::default()
    };
    for item in body["output"].as_array().into_iter().flatten() {
        match item["type"].as_str().unwrap_or_default() {
            "message" => {
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
            }
            "function_call" => completion.tool_calls.push(call_from_item(item)),
            _ => {}
        }
    }
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
