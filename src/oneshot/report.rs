//! The JSON `brute -p` prints besides the messages or events: the `system`/`init` line that
//! opens `--output-format stream-json` (and `events`) and the `result` object that ends each
//! turn (and is all `json` prints). Both have the shape Claude Code's have, every field its SDK
//! reads included, so tools written for it work; the result also keeps brute's own fields
//! (`outcome`, `tool_calls`, `session`, …) for what reads them.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::protocol::{Event, TurnOutcome, Usage};

/// What a run gathers from its events for the result object.
#[derive(Default)]
pub struct Report {
    calls: Vec<Value>,
    index: HashMap<String, usize>,
    usage: Usage,
    /// The session's cost so far, when the model's price is known.
    cost_usd: Option<f64>,
    errors: Vec<String>,
    notices: Vec<String>,
    text: String,
    /// Model requests made (Claude Code's `num_turns`).
    requests: u64,
    /// Time spent waiting for the model (Claude Code's `duration_api_ms`), and when the
    /// request under way started.
    api_time: Duration,
    request_since: Option<Instant>,
    /// Calls the approval step refused (Claude Code's `permission_denials`).
    denials: Vec<Value>,
    /// The model each request went to, for `modelUsage`.
    model: Option<String>,
    /// A turn started.
    turn: bool,
}

/// Facts about the run that are not in its events.
pub struct RunFacts<'a> {
    pub outcome: TurnOutcome,
    pub session_id: Option<&'a str>,
    pub provider: &'a str,
    pub model: &'a str,
    pub duration_ms: u64,
    /// The model's context window, when known (for `modelUsage`).
    pub context_window: Option<u64>,
}

impl Report {
    /// Takes what the result needs from one top-level event (a sub-agent's events arrive
    /// wrapped in `Nested` and count as its call's, not as the run's).
    pub fn record(&mut self, event: &Event) {
        match event {
            Event::TurnStarted { .. } => self.turn = true,
            Event::RequestStarted { .. } => {
                self.requests += 1;
                self.request_since = Some(Instant::now());
            }
            Event::ModelChanged { model } => self.model = Some(model.clone()),
            Event::ToolCallStarted {
                call_id,
                name,
                arguments,
                ..
            } => {
                self.index.insert(call_id.clone(), self.calls.len());
                self.calls
                    .push(json!({"id": call_id, "name": name, "arguments": arguments}));
            }
            Event::ToolResult(result) => {
                if let Some(call) = self.index.get(&result.call_id).and_then(|i| self.calls.get_mut(*i)) {
                    call["result"] = json!(result.content);
                    call["is_error"] = json!(result.is_error);
                    call["duration_ms"] = json!(result.duration_ms);
                    if result.failure == Some(crate::protocol::Failure::Denied) {
                        self.denials.push(json!({
                            "tool_name": result.name,
                            "tool_use_id": result.call_id,
                            "tool_input": call["arguments"],
                        }));
                    }
                }
            }
            Event::Usage { usage } => {
                self.usage.add(*usage);
                self.answered();
            }
            Event::Cost { total_usd } => self.cost_usd = Some(*total_usd),
            Event::Error { message } => {
                self.answered();
                self.errors.push(message.clone());
            }
            Event::Notice { message } => self.notices.push(message.clone()),
            Event::TurnFinished { text, .. } => self.text = text.clone(),
            _ => {}
        }
    }

    /// Whether a turn started since this report began.
    pub fn has_turn(&self) -> bool {
        self.turn
    }

    /// The model request under way has answered (or failed): its time counts as the API's.
    fn answered(&mut self) {
        if let Some(since) = self.request_since.take() {
            self.api_time += since.elapsed();
        }
    }

    /// The `result` object: Claude Code's fields first, then brute's.
    pub fn result<'a>(&'a self, facts: &RunFacts<'a>) -> ResultLine<'a> {
        let model = self.model.as_deref().unwrap_or(facts.model);
        let model_usage = json!({
            model: {
                "inputTokens": self.usage.input_tokens,
                "outputTokens": self.usage.output_tokens,
                "cacheReadInputTokens": self.usage.cache_read_tokens,
                "cacheCreationInputTokens": self.usage.cache_write_tokens,
                "webSearchRequests": 0,
                "costUSD": self.cost_usd,
                "contextWindow": facts.context_window,
            }
        });
        ResultLine {
            kind: "result",
            subtype: subtype(facts.outcome),
            is_error: facts.outcome != TurnOutcome::Done,
            duration_ms: facts.duration_ms,
            duration_api_ms: u64::try_from(self.api_time.as_millis()).unwrap_or(u64::MAX),
            num_turns: self.requests,
            result: &self.text,
            stop_reason: (facts.outcome == TurnOutcome::Done).then_some("end_turn"),
            session_id: facts.session_id,
            total_cost_usd: self.cost_usd,
            usage: UsageLine::from(&self.usage),
            model_usage,
            permission_denials: &self.denials,
            uuid: uuid(),
            outcome: facts.outcome,
            tool_calls: &self.calls,
            provider: facts.provider,
            model: facts.model,
            session: facts.session_id,
            errors: &self.errors,
            notices: &self.notices,
        }
    }
}

/// The result object, its fields in Claude Code's order (a struct, so they print in that
/// order), then brute's.
#[derive(Debug, Serialize)]
pub struct ResultLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    subtype: &'static str,
    is_error: bool,
    duration_ms: u64,
    /// Time spent waiting for the model.
    duration_api_ms: u64,
    /// Model requests made.
    num_turns: u64,
    result: &'a str,
    /// `end_turn` when the model finished; null otherwise.
    stop_reason: Option<&'static str>,
    /// Null when there is no data directory to save sessions in.
    session_id: Option<&'a str>,
    /// Null when the model's price is unknown (never a guess).
    total_cost_usd: Option<f64>,
    usage: UsageLine,
    /// The same counts per model, in Claude Code's camel case.
    #[serde(rename = "modelUsage")]
    model_usage: Value,
    /// Calls the approval step refused: `tool_name`, `tool_use_id`, `tool_input`.
    permission_denials: &'a [Value],
    /// This line's own id.
    uuid: String,
    outcome: TurnOutcome,
    tool_calls: &'a [Value],
    provider: &'a str,
    model: &'a str,
    /// The same as `session_id`, under the name brute used first.
    session: Option<&'a str>,
    errors: &'a [String],
    notices: &'a [String],
}

/// Token counts under Claude Code's names and brute's own. `input_tokens` counts every input
/// token, the cached ones included (as OpenAI reports it; Anthropic's API reports them apart).
#[derive(Debug, Serialize)]
struct UsageLine {
    input_tokens: u64,
    output_tokens: u64,
    cache_read_input_tokens: u64,
    cache_creation_input_tokens: u64,
    cache_read_tokens: u64,
    cache_write_tokens: u64,
}

impl From<&Usage> for UsageLine {
    fn from(usage: &Usage) -> Self {
        Self {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_input_tokens: usage.cache_read_tokens,
            cache_creation_input_tokens: usage.cache_write_tokens,
            cache_read_tokens: usage.cache_read_tokens,
            cache_write_tokens: usage.cache_write_tokens,
        }
    }
}

/// What the init line tells about a run.
pub struct InitFacts<'a> {
    pub session_id: Option<&'a str>,
    pub model: &'a str,
    pub tools: &'a [String],
    pub cwd: &'a Path,
    pub provider: &'a str,
    pub mode: crate::permission::Mode,
    /// `--yolo` (or `bypassPermissions`).
    pub yolo: bool,
    /// The configured MCP servers' names (they start in the background).
    pub mcp_servers: Vec<String>,
    /// Custom slash commands, as `/name`.
    pub commands: Vec<String>,
    /// Where the API key came from: its variable, `config`, `flag` or `none`.
    pub key_source: String,
}

/// The line that opens `stream-json`: what the run works with, in Claude Code's shape.
#[derive(Debug, Serialize)]
pub struct InitLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    subtype: &'static str,
    cwd: String,
    session_id: Option<&'a str>,
    tools: &'a [String],
    /// `name` and `status` (`pending` at start: servers start in the background).
    mcp_servers: Vec<Value>,
    model: &'a str,
    /// brute's mode in Claude Code's words (`default`, `plan`, `bypassPermissions`).
    #[serde(rename = "permissionMode")]
    permission_mode: &'static str,
    /// Custom commands, without the slash.
    slash_commands: Vec<String>,
    #[serde(rename = "apiKeySource")]
    api_key_source: String,
    output_style: &'static str,
    uuid: String,
    brute_version: &'static str,
    provider: &'a str,
    /// brute's mode: a sandbox mode, or `plan`.
    sandbox: &'a str,
}

/// The init line of a run.
pub fn init<'a>(facts: &'a InitFacts<'a>) -> InitLine<'a> {
    InitLine {
        kind: "system",
        subtype: "init",
        cwd: facts.cwd.display().to_string(),
        session_id: facts.session_id,
        tools: facts.tools,
        mcp_servers: facts
            .mcp_servers
            .iter()
            .map(|name| json!({"name": name, "status": "pending"}))
            .collect(),
        model: facts.model,
        permission_mode: match (facts.mode, facts.yolo) {
            (crate::permission::Mode::Plan, _) => "plan",
            (_, true) => "bypassPermissions",
            _ => "default",
        },
        slash_commands: facts
            .commands
            .iter()
            .map(|c| c.trim_start_matches('/').to_owned())
            .collect(),
        api_key_source: facts.key_source.clone(),
        output_style: "default",
        uuid: uuid(),
        brute_version: env!("CARGO_PKG_VERSION"),
        provider: facts.provider,
        sandbox: facts.mode.as_str(),
    }
}

/// A random (version 4) UUID, as Claude Code gives every line of its stream.
pub fn uuid() -> String {
    let (a, b) = (fastrand::u64(..), fastrand::u64(..));
    let a = (a & !0xf000) | 0x4000;
    let b = (b & !(0b11 << 62)) | (0b10 << 62);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// Claude Code's subtype for an outcome. It has none for an interrupt: that is an error
/// during execution, and brute's `outcome` says `interrupted`.
fn subtype(outcome: TurnOutcome) -> &'static str {
    match outcome {
        TurnOutcome::Done => "success",
        TurnOutcome::MaxTurns => "error_max_turns",
        TurnOutcome::Error | TurnOutcome::Interrupted => "error_during_execution",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(outcome: TurnOutcome) -> RunFacts<'static> {
        RunFacts {
            outcome,
            session_id: Some("s1"),
            provider: "openai",
            model: "m",
            duration_ms: 5,
            context_window: None,
        }
    }

    #[test]
    fn the_result_has_claude_codes_fields_and_brutes() {
        let mut report = Report::default();
        for event in [
            Event::RequestStarted { iteration: 1 },
            Event::Usage {
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 2,
                    cache_read_tokens: 4,
                    cache_write_tokens: 1,
                },
            },
            Event::RequestStarted { iteration: 2 },
            Event::TurnFinished {
                outcome: TurnOutcome::Done,
                text: "done".into(),
            },
        ] {
            report.record(&event);
        }
        let line = serde_json::to_string(&report.result(&facts(TurnOutcome::Done))).unwrap();
        assert!(line.starts_with(r#"{"type":"result","subtype":"success","#), "{line}");
        let result: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(result["type"], "result");
        assert_eq!(result["subtype"], "success");
        assert_eq!(result["is_error"], false);
        assert_eq!(result["result"], "done");
        assert_eq!(result["session_id"], "s1");
        assert_eq!(result["session"], "s1");
        assert_eq!(result["num_turns"], 2);
        assert_eq!(result["usage"]["cache_read_input_tokens"], 4);
        assert_eq!(result["usage"]["cache_creation_input_tokens"], 1);
        assert_eq!(result["outcome"], "done");
        assert!(
            result["total_cost_usd"].is_null(),
            "no cost when the price is unknown, never a guess"
        );
        // What Claude Code's SDK reads.
        for key in [
            "duration_ms",
            "duration_api_ms",
            "num_turns",
            "session_id",
            "uuid",
            "permission_denials",
        ] {
            assert!(result.get(key).is_some(), "{key} in {line}");
        }
        assert_eq!(result["modelUsage"]["m"]["inputTokens"], 10);
        assert_eq!(result["stop_reason"], "end_turn");
    }

    #[test]
    fn every_outcome_but_done_is_an_error() {
        let report = Report::default();
        for (outcome, subtype) in [
            (TurnOutcome::MaxTurns, "error_max_turns"),
            (TurnOutcome::Error, "error_during_execution"),
            (TurnOutcome::Interrupted, "error_during_execution"),
        ] {
            let result = serde_json::to_value(report.result(&facts(outcome))).unwrap();
            assert_eq!(result["subtype"], subtype);
            assert_eq!(result["is_error"], true);
        }
    }
}
