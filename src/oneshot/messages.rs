//! `--output-format stream-json`: brute's events rendered as Claude Code's message stream, the
//! shape its SDK (`claude-agent-sdk`) and the scripts written for `claude -p` read.
//!
//! A model response becomes `assistant` messages, one per content block as Claude Code sends
//! them (`thinking`, `text`, `tool_use`), all with the response's message id; a finished call
//! becomes a `user` message with its `tool_result`. A sub-agent's messages carry the id of the
//! `task` call that started it in `parent_tool_use_id`. With `--include-partial-messages` the
//! stream itself comes too, as `stream_event` lines holding Anthropic's stream events.
//!
//! A pure function of the events (plus ids it makes up), so every shape is tested without a
//! process.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::report::uuid;
use crate::protocol::{Event, Usage};

/// The renderer of one run.
pub struct Messages {
    session_id: String,
    model: String,
    partial: bool,
    /// The response under way, per sub-agent (`None`: the conversation's own).
    open: HashMap<Option<String>, Response>,
}

/// What a response built so far.
#[derive(Default)]
struct Response {
    message_id: String,
    /// The block being streamed and its text.
    block: Option<(Block, String)>,
    /// Blocks started so far (the next block's index in stream events).
    blocks: usize,
    usage: Option<Usage>,
    /// `message_start` went out (with partial messages).
    started: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Thinking,
}

impl Messages {
    pub fn new(session_id: Option<&str>, model: &str, partial: bool) -> Self {
        Self {
            session_id: session_id.unwrap_or_default().to_owned(),
            model: model.to_owned(),
            partial,
            open: HashMap::new(),
        }
    }

    /// The lines one event adds to the stream (often none).
    pub fn event(&mut self, event: &Event) -> Vec<Value> {
        let mut out = Vec::new();
        self.render(None, event, &mut out);
        out
    }

    fn render(&mut self, parent: Option<&str>, event: &Event, out: &mut Vec<Value>) {
        let key = parent.map(str::to_owned);
        match event {
            Event::Nested { parent_call_id, event } => self.render(Some(parent_call_id), event, out),
            Event::ModelChanged { model } => self.model.clone_from(model),
            Event::RequestStarted { .. } => {
                self.finish(&key, out);
                let response = Response {
                    message_id: format!("msg_{}", uuid().replace('-', "")),
                    ..Response::default()
                };
                self.open.insert(key.clone(), response);
                self.message_start(&key, out);
            }
            Event::TextDelta { text } => self.delta(&key, Block::Text, text, out),
            Event::ReasoningDelta { text } => self.delta(&key, Block::Thinking, text, out),
            Event::Usage { usage } => {
                if let Some(response) = self.open.get_mut(&key) {
                    response.usage = Some(*usage);
                }
                self.close_block(&key, out);
            }
            Event::ToolCallStarted {
                call_id,
                name,
                arguments,
                ..
            } => {
                self.close_block(&key, out);
                let block = json!({"type": "tool_use", "id": call_id, "name": name, "input": arguments});
                if self.partial && key.is_none() {
                    let index = self.next_index(&key);
                    let mut start = block.clone();
                    start["input"] = json!({});
                    out.push(self.stream_event(
                        &key,
                        json!({"type": "content_block_start", "index": index, "content_block": start}),
                    ));
                    out.push(self.stream_event(
                        &key,
                        json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": arguments.to_string()}}),
                    ));
                    out.push(self.stream_event(&key, json!({"type": "content_block_stop", "index": index})));
                }
                out.push(self.assistant(&key, block));
            }
            Event::ToolResult(result) => {
                self.finish_message(&key, out);
                let content = json!([{
                    "type": "tool_result",
                    "tool_use_id": result.call_id,
                    "content": result.content,
                    "is_error": result.is_error,
                }]);
                out.push(json!({
                    "type": "user",
                    "message": {"role": "user", "content": content},
                    "parent_tool_use_id": parent,
                    "session_id": self.session_id,
                    "uuid": uuid(),
                }));
            }
            Event::Notice { message } if parent.is_none() => out.push(json!({
                "type": "system",
                "subtype": "notice",
                "message": message,
                "session_id": self.session_id,
                "uuid": uuid(),
            })),
            Event::TurnFinished { .. } => self.finish(&key, out),
            _ => {}
        }
    }

    /// Streamed text or thinking: a block of another kind ends first.
    fn delta(&mut self, key: &Option<String>, kind: Block, text: &str, out: &mut Vec<Value>) {
        if !self.open.contains_key(key) {
            // Text outside a request (an answer recovered from a refused stream): a response
            // of its own.
            self.open.insert(
                key.clone(),
                Response {
                    message_id: format!("msg_{}", uuid().replace('-', "")),
                    ..Response::default()
                },
            );
            self.message_start(key, out);
        }
        let same = self
            .open
            .get(key)
            .and_then(|r| r.block.as_ref())
            .is_some_and(|(block, _)| *block == kind);
        if !same {
            self.close_block(key, out);
            let index = self.next_index(key);
            if let Some(response) = self.open.get_mut(key) {
                response.block = Some((kind, String::new()));
            }
            if self.partial && key.is_none() {
                let block = match kind {
                    Block::Text => json!({"type": "text", "text": ""}),
                    Block::Thinking => json!({"type": "thinking", "thinking": "", "signature": ""}),
                };
                out.push(self.stream_event(
                    key,
                    json!({"type": "content_block_start", "index": index, "content_block": block}),
                ));
            }
        }
        if let Some((_, buffer)) = self.open.get_mut(key).and_then(|r| r.block.as_mut()) {
            buffer.push_str(text);
        }
        if self.partial && key.is_none() {
            let index = self.open.get(key).map_or(0, |r| r.blocks.saturating_sub(1));
            let delta = match kind {
                Block::Text => json!({"type": "text_delta", "text": text}),
                Block::Thinking => json!({"type": "thinking_delta", "thinking": text}),
            };
            out.push(self.stream_event(
                key,
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
    }

    /// The index of the block about to start.
    fn next_index(&mut self, key: &Option<String>) -> usize {
        match self.open.get_mut(key) {
            Some(response) => {
                response.blocks += 1;
                response.blocks - 1
            }
            None => 0,
        }
    }

    /// The streamed block (if any) is complete: its `assistant` message goes out.
    fn close_block(&mut self, key: &Option<String>, out: &mut Vec<Value>) {
        let Some((kind, text)) = self.open.get_mut(key).and_then(|r| r.block.take()) else {
            return;
        };
        if self.partial && key.is_none() {
            let index = self.open.get(key).map_or(0, |r| r.blocks.saturating_sub(1));
            out.push(self.stream_event(key, json!({"type": "content_block_stop", "index": index})));
        }
        if text.is_empty() {
            return;
        }
        let block = match kind {
            Block::Text => json!({"type": "text", "text": text}),
            // brute keeps no signature a client could send back; the field is there, empty.
            Block::Thinking => json!({"type": "thinking", "thinking": text, "signature": ""}),
        };
        out.push(self.assistant(key, block));
    }

    /// The response's last stream events (with partial messages); it stays open for its
    /// tool calls' `tool_use` messages until the next request.
    fn finish_message(&mut self, key: &Option<String>, out: &mut Vec<Value>) {
        self.close_block(key, out);
        let Some(response) = self.open.get_mut(key) else { return };
        if !std::mem::take(&mut response.started) {
            return;
        }
        let usage = response.usage.unwrap_or_default();
        let delta = json!({"type": "message_delta", "delta": {"stop_reason": null, "stop_sequence": null},
                           "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}});
        out.push(self.stream_event(key, delta));
        out.push(self.stream_event(key, json!({"type": "message_stop"})));
    }

    /// The response is over.
    fn finish(&mut self, key: &Option<String>, out: &mut Vec<Value>) {
        self.finish_message(key, out);
        self.open.remove(key);
    }

    fn message_start(&mut self, key: &Option<String>, out: &mut Vec<Value>) {
        if !self.partial || key.is_some() {
            return;
        }
        let Some(response) = self.open.get_mut(key) else { return };
        response.started = true;
        let message = json!({
            "type": "message_start",
            "message": {"id": response.message_id, "type": "message", "role": "assistant", "model": self.model,
                        "content": [], "stop_reason": null, "stop_sequence": null,
                        "usage": {"input_tokens": 0, "output_tokens": 0}},
        });
        out.push(self.stream_event(key, message));
    }

    /// An `assistant` message holding one content block of the open response.
    fn assistant(&self, key: &Option<String>, block: Value) -> Value {
        let response = self.open.get(key);
        let usage = response.and_then(|r| r.usage).unwrap_or_default();
        json!({
            "type": "assistant",
            "message": {
                "id": response.map(|r| r.message_id.clone()).unwrap_or_else(|| format!("msg_{}", uuid().replace('-', ""))),
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [block],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "cache_read_input_tokens": usage.cache_read_tokens,
                    "cache_creation_input_tokens": usage.cache_write_tokens,
                },
            },
            "parent_tool_use_id": key,
            "session_id": self.session_id,
            "uuid": uuid(),
        })
    }

    fn stream_event(&self, key: &Option<String>, event: Value) -> Value {
        json!({
            "type": "stream_event",
            "uuid": uuid(),
            "session_id": self.session_id,
            "event": event,
            "parent_tool_use_id": key,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolResult, TurnOutcome};

    fn run(partial: bool, events: &[Event]) -> Vec<Value> {
        let mut messages = Messages::new(Some("s1"), "m1", partial);
        events.iter().flat_map(|e| messages.event(e)).collect()
    }

    fn turn() -> Vec<Event> {
        vec![
            Event::RequestStarted { iteration: 1 },
            Event::ReasoningDelta { text: "hm".into() },
            Event::TextDelta { text: "Let me ".into() },
            Event::TextDelta { text: "look.".into() },
            Event::Usage {
                usage: Usage {
                    input_tokens: 7,
                    output_tokens: 3,
                    ..Usage::default()
                },
            },
            Event::ToolCallStarted {
                call_id: "c1".into(),
                name: "read".into(),
                arguments: json!({"path": "a.txt"}),
                summary: "a.txt".into(),
                display: Default::default(),
            },
            Event::ToolResult(ToolResult {
                call_id: "c1".into(),
                name: "read".into(),
                content: "hello".into(),
                is_error: false,
                duration_ms: 1,
                display: Default::default(),
                images: Vec::new(),
                failure: None,
            }),
            Event::RequestStarted { iteration: 2 },
            Event::TextDelta {
                text: "It says hello.".into(),
            },
            Event::Usage {
                usage: Usage::default(),
            },
            Event::TurnFinished {
                outcome: TurnOutcome::Done,
                text: "It says hello.".into(),
            },
        ]
    }

    #[test]
    fn a_turn_is_claude_codes_assistant_and_user_messages() {
        let lines = run(false, &turn());
        let kinds: Vec<(&str, &str)> = lines
            .iter()
            .map(|l| {
                let block = l["message"]["content"][0]["type"].as_str().unwrap_or("");
                (l["type"].as_str().unwrap(), block)
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("assistant", "thinking"),
                ("assistant", "text"),
                ("assistant", "tool_use"),
                ("user", "tool_result"),
                ("assistant", "text")
            ]
        );
        // One response, one message id; its usage travels with its blocks.
        assert_eq!(lines[0]["message"]["id"], lines[2]["message"]["id"]);
        assert_ne!(lines[0]["message"]["id"], lines[4]["message"]["id"]);
        assert_eq!(lines[1]["message"]["content"][0]["text"], "Let me look.");
        assert_eq!(lines[1]["message"]["usage"]["input_tokens"], 7);
        assert_eq!(lines[1]["message"]["model"], "m1");
        assert_eq!(lines[0]["message"]["content"][0]["signature"], "");
        assert_eq!(lines[2]["message"]["content"][0]["input"]["path"], "a.txt");
        assert_eq!(lines[3]["message"]["content"][0]["tool_use_id"], "c1");
        assert_eq!(lines[3]["message"]["content"][0]["content"], "hello");
        for line in &lines {
            assert_eq!(line["session_id"], "s1");
            assert!(line["parent_tool_use_id"].is_null());
            assert_eq!(line["uuid"].as_str().map(str::len), Some(36));
        }
    }

    #[test]
    fn partial_messages_stream_anthropics_events_in_order() {
        let lines = run(true, &turn());
        let events: Vec<String> = lines
            .iter()
            .filter(|l| l["type"] == "stream_event")
            .map(|l| {
                let e = &l["event"];
                match e["type"].as_str().unwrap() {
                    "content_block_start" => {
                        format!("start{}:{}", e["index"], e["content_block"]["type"].as_str().unwrap())
                    }
                    "content_block_delta" => format!("delta{}", e["index"]),
                    "content_block_stop" => format!("stop{}", e["index"]),
                    other => other.to_owned(),
                }
            })
            .collect();
        assert_eq!(
            events,
            [
                "message_start",
                "start0:thinking",
                "delta0",
                "stop0",
                "start1:text",
                "delta1",
                "delta1",
                "stop1",
                "start2:tool_use",
                "delta2",
                "stop2",
                "message_delta",
                "message_stop",
                "message_start",
                "start0:text",
                "delta0",
                "stop0",
                "message_delta",
                "message_stop"
            ]
        );
        // The whole messages still come, after their blocks' events.
        assert_eq!(lines.iter().filter(|l| l["type"] == "assistant").count(), 4);
    }

    #[test]
    fn a_sub_agents_messages_name_the_call_that_started_it() {
        let nested = |event| Event::Nested {
            parent_call_id: "task1".into(),
            event: Box::new(event),
        };
        let lines = run(
            true,
            &[
                nested(Event::RequestStarted { iteration: 1 }),
                nested(Event::TextDelta { text: "inner".into() }),
                nested(Event::Usage {
                    usage: Usage::default(),
                }),
            ],
        );
        assert_eq!(lines.len(), 1, "no stream events for a sub-agent: {lines:?}");
        assert_eq!(lines[0]["parent_tool_use_id"], "task1");
        assert_eq!(lines[0]["message"]["content"][0]["text"], "inner");
    }
}
