//! The JSON `brute -p` prints besides the events: the `system`/`init` line that opens
//! `--output-format stream-json` and the `result` object that ends it (and is all `json`
//! prints). Both have the shape Claude Code's have, so tools written for it work; the result
//! also keeps brute's own fields (`outcome`, `tool_calls`, `session`, …) for what reads them.

use std::collections::HashMap;
use std::path::Path;

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
}

/// Facts about the run that are not in its events.
pub struct RunFacts<'a> {
    pub outcome: TurnOutcome,
    pub session_id: Option<&'a str>,
    pub provider: &'a str,
    pub model: &'a str,
    pub duration_ms: u64,
}

impl Report {
    /// Takes what the result needs from one top-level event (a sub-agent's events arrive
    /// wrapped in `Nested` and count as its call's, not as the run's).
    pub fn record(&mut self, event: &Event) {
        match event {
            Event::RequestStarted { .. } => self.requests += 1,
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
                }
            }
            Event::Usage { usage } => self.usage.add(*usage),
            Event::Cost { total_usd } => self.cost_usd = Some(*total_usd),
            Event::Error { message } => self.errors.push(message.clone()),
            Event::Notice { message } => self.notices.push(message.clone()),
            Event::TurnFinished { text, .. } => self.text = text.clone(),
            _ => {}
        }
    }

    /// The `result` object: Claude Code's fields first, then brute's.
    pub fn result<'a>(&'a self, facts: &RunFacts<'a>) -> ResultLine<'a> {
        ResultLine {
            kind: "result",
            subtype: subtype(facts.outcome),
            is_error: facts.outcome != TurnOutcome::Done,
            result: &self.text,
            session_id: facts.session_id,
            num_turns: self.requests,
            duration_ms: facts.duration_ms,
            usage: UsageLine::from(&self.usage),
            total_cost_usd: self.cost_usd,
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
    result: &'a str,
    session_id: Option<&'a str>,
    /// Model requests made.
    num_turns: u64,
    duration_ms: u64,
    usage: UsageLine,
    /// Only when the model's price is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    total_cost_usd: Option<f64>,
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

/// The line that opens `stream-json`: what the run works with, in Claude Code's shape.
#[derive(Debug, Serialize)]
pub struct InitLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    subtype: &'static str,
    session_id: Option<&'a str>,
    model: &'a str,
    tools: &'a [String],
    cwd: String,
    provider: &'a str,
    /// brute's mode: a sandbox mode, or `plan`.
    sandbox: &'a str,
    /// The same in Claude Code's words (`default`, `plan`, `bypassPermissions`).
    #[serde(rename = "permissionMode")]
    permission_mode: &'static str,
}

/// The init line of a run; `yolo` is `--yolo` (or `bypassPermissions`).
pub fn init<'a>(
    session_id: Option<&'a str>,
    model: &'a str,
    tools: &'a [String],
    cwd: &Path,
    provider: &'a str,
    mode: crate::permission::Mode,
    yolo: bool,
) -> InitLine<'a> {
    InitLine {
        kind: "system",
        subtype: "init",
        session_id,
        model,
        tools,
        cwd: cwd.display().to_string(),
        provider,
        sandbox: mode.as_str(),
        permission_mode: match (mode, yolo) {
            (crate::permission::Mode::Plan, _) => "plan",
            (_, true) => "bypassPermissions",
            _ => "default",
        },
    }
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
            result.get("total_cost_usd").is_none(),
            "no cost when the price is unknown"
        );
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
