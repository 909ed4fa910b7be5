//! OpenAI Chat Completions (`POST {base}/chat/completions`), also spoken by Ollama, vLLM,
//! llama.cpp's server, OpenRouter and LM Studio.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Usage;
use super::{ChatRequest, Completion, Delta, Message, PartialCall, ProviderError, StopReason, StreamDecoder};

/// Builds the JSON body for a Chat Completions request.
pub fn request_body(req: &ChatRequest<'_>, stream: bool) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    // Tool messages carry text only: a tool's images follow the run of tool messages they
    // belong to, as one user message.
    let mut tool_images: Vec<Value> = Vec::new();
    for message in req.messages {
        if !matches!(message, Message::Tool { .. }) {
            flush_tool_images(&mut messages, &mut tool_images);
        }
        messages.push(match message {
            Message::User { text, images } if images.is_empty() => json!({"role": "user", "content": text}),
            Message::User { text, images } => {
                let mut parts = Vec::with_capacity(images.len() + 1);
                if !text.is_empty() {
                    parts.push(json!({"type": "text", "text": text}));
                }
                parts.extend(images.iter().map(image_part));
                json!({"role": "user", "content": parts})
            }
            Message::Assistant { text, tool_calls, .. } => {
                // Null content is only accepted beside tool calls (Ollama refuses it otherwise).
                let content = if text.is_empty() && !tool_calls.is_empty() { Value::Null } else { json!(text) };
                let mut m = json!({"role": "assistant", "content": content});
                if !tool_calls.is_empty() {
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments()}}))
                        .collect();
                }
                m
            }
            Message::Tool {
                call_id,
                name,
                content,
                images,
                ..
            } => {
                if !images.is_empty() {
                    tool_images.push(json!({"type": "text", "text": tool_images_intro(name, call_id)}));
                    tool_images.extend(images.iter().map(image_part));
                }
                json!({"role": "tool", "tool_call_id": call_id, "content": content})
            }
        });
    }
    flush_tool_images(&mut messages, &mut tool_images);
    let facts = super::spec::model_facts(req.model);
    let mut body = json!({
        "model": req.model,
        "messages": messages,
        "stream": stream,
    });
    // Reasoning models refuse `max_tokens`; compatible servers (Ollama, vLLM, llama.cpp)
    // know only `max_tokens`.
    let limit = if facts.openai_reasoning {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[limit] = json!(req.max_tokens);
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    // OpenAI's reasoning models and compatible servers (Ollama, vLLM, OpenRouter) take
    // `reasoning_effort`; OpenAI's other models refuse it.
    if let Some(effort) = req.reasoning_effort.filter(|_| !facts.openai_plain) {
        body["reasoning_effort"] = json!(effort.as_str());
    }
    if let Some(temperature) = req.temperature.filter(|t| !facts.fixed_temperature || *t == 1.0) {
        body["temperature"] = json!(temperature);
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
    }
    body
}

/// An image as a Chat Completions content part (a `data:` URL).
fn image_part(image: &super::image::Image) -> Value {
    json!({"type": "image_url", "image_url": {"url": image.data_url()}})
}

/// The text before a tool's images where the wire cannot put them in the tool's result.
pub(crate) fn tool_images_intro(name: &str, call_id: &str) -> String {
    format!("The images the {name} call {call_id} returned:")
}

/// Sends the images of the tool results just added, as one user message.
fn flush_tool_images(messages: &mut Vec<Value>, parts: &mut Vec<Value>) {
    if !parts.is_empty() {
        messages.push(json!({"role": "user", "content": std::mem::take(parts)}));
    }
}

fn stop_reason(finish: &str) -> StopReason {
    match finish {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        _ => StopReason::Other,
    }
}

fn usage(value: &Value) -> Option<Usage> {
    let u = value.get("usage").filter(|u| u.is_object())?;
    let details = &u["prompt_tokens_details"];
    Some(Usage {
        input_tokens: u["prompt_tokens"].as_u64().unwrap_or(0),
        output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
        cache_read_tokens: details["cached_tokens"].as_u64().unwrap_or(0),
        cache_write_tokens: details["cache_write_tokens"].as_u64().unwrap_or(0),
    })
}

fn error_message(value: &Value) -> Option<String> {
    let err = value.get("error")?;
    Some(
        err.get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| err.to_string()),
    )
}

/// Assembles a streamed Chat Completions response.
#[derive(Default)]
pub struct Decoder {
    completion: Completion,
    calls: BTreeMap<u64, PartialCall>,
    done: bool,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }
}

fn reasoning_of(delta: &Value) -> Option<&str> {
    ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|k| delta.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
}

impl StreamDecoder for Decoder {
    fn on_event(&mut self, event: &str, data: &str, out: &mut dyn FnMut(Delta)) -> Result<(), ProviderError> {
        if event == "done" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| ProviderError::Decode(format!("{e}: {data}")))?;
        if let Some(message) = error_message(&chunk) {
            return Err(ProviderError::remote(message));
        }
        if let Some(u) = usage(&chunk) {
            self.completion.usage = u;
        }
        let Some(choice) = chunk["choices"].get(0) else {
            return Ok(());
        };
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str().filter(|s| !s.is_empty()) {
            self.completion.text.push_str(text);
            out(Delta::Text(text.to_owned()));
        }
        if let Some(text) = delta["refusal"].as_str().filter(|s| !s.is_empty()) {
            self.completion.text.push_str(text);
            out(Delta::Text(text.to_owned()));
        }
        if let Some(text) = reasoning_of(delta) {
            self.completion.reasoning.push_str(text);
            out(Delta::Reasoning(text.to_owned()));
        }
        if let Some(calls) = delta["tool_calls"].as_array() {
            for (position, call) in calls.iter().enumerate() {
                let index = call["index"].as_u64().unwrap_or(position as u64);
                let slot = self.calls.entry(index).or_default();
                if let Some(id) = call["id"].as_str().filter(|s| !s.is_empty()) {
                    slot.id = id.to_owned();
                }
                if let Some(name) = call["function"]["name"].as_str() {
                    slot.name.push_str(name);
                }
                match &call["function"]["arguments"] {
                    Value::String(fragment) => slot.arguments.push_str(fragment),
                    Value::Null => {}
                    other => slot.arguments.push_str(&other.to_string()),
                }
            }
        }
        if let Some(finish) = choice["finish_reason"].as_str() {
            self.completion.stop_reason = Some(stop_reason(finish));
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn finish(self: Box<Self>) -> Result<Completion, ProviderError> {
        let mut this = *self;
        // Some compatible servers omit `[DONE]`; a finish reason is then the end marker.
        if !this.done && this.completion.stop_reason.is_none() {
            return Err(ProviderError::StreamCut(
                "no finish_reason and no [DONE] received".into(),
            ));
        }
        this.completion.tool_calls = this
            .calls
            .into_values()
            .enumerate()
            .map(|(i, mut c)| {
                if c.id.is_empty() {
                    c.id = format!("call_{i}");
                }
                c.finish()
            })
            .collect();
        if this.completion.stop_reason.is_none() {
            this.completion.stop_reason = Some(if this.completion.tool_calls.is_empty() {
                StopReason::EndTurn
            } else {
                StopReason::ToolUse
            });
        }
        super::finalize_calls(&mut this.completion);
        Ok(this.completion)
    }
}

/// Decodes a non-streamed Chat Completions response body.
pub fn decode_full(body: &Value) -> Result<Completion, ProviderError> {
    if let Some(message) = error_message(body) {
        return Err(ProviderError::remote(message));
    }
    let choice = body["choices"]
        .get(0)
        .ok_or_else(|| ProviderError::Decode("response has no choices".into()))?;
    let message = &choice["message"];
    let mut completion = Completion {
        text: message["content"].as_str().unwrap_or_default().to_owned(),
        reasoning: reasoning_of(message).unwrap_or_default().to_owned(),
        usage: usage(body).unwrap_or_default(),
        stop_reason: choice["finish_reason"].as_str().map(stop_reason),
        ..Completion::default()
    };
    if let Some(calls) = message["tool_calls"].as_array() {
        for (i, call) in calls.iter().enumerate() {
            let arguments = match &call["function"]["arguments"] {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            completion.tool_calls.push(super::ToolCall::new(
                call["id"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("call_{i}")),
                call["function"]["name"].as_str().unwrap_or_default(),
                arguments,
            ));
        }
    }
    super::finalize_calls(&mut completion);
    Ok(completion)
}
