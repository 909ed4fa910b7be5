//! The JSON `brute -p` prints besides the events: the `system`/`init` line that opens
//! `--output-format stream-json` and the `result` object that ends it (and is all `json`
//! prints). Both have the shape Claude Code's have, so tools written for it work; the result
//! also keeps brute's own fields (`outcome`, `tool_calls`, `session`, …) for what reads them.

use std::collections::HashMap;
use std::path::Path;

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
    pub fn result(&self, facts: &RunFacts<'_>) -> Value {
        let mut result = json!({
            "type": "result",
            "subtype": subtype(facts.outcome),
            "is_error": facts.outcome != TurnOutcome::Done,
            "result": self.text,
            "session_id": facts.session_id,
            "num_turns": self.requests,
            "duration_ms": facts.duration_ms,
            "usage": usage(&self.usage),
        });
        if let Some(cost) = self.cost_usd {
            result["total_cost_usd"] = json!(cost);
        }
        let brute = json!({
            "outcome": facts.outcome,
            "tool_calls": self.calls,
            "provider": facts.provider,
            "model": facts.model,
            "session": facts.session_id,
            "errors": self.errors,
            "notices": self.notices,
        });
        if let (Some(result), Value::Object(brute)) = (result.as_object_mut(), brute) {
            result.extend(brute);
        }
        result
    }
}

/// The line that opens `stream-json`: what the run works with.
pub fn init(
    session_id: Option<&str>,
    model: &str,
    tools: &[String],
    cwd: &Path,
    provider: &str,
    sandbox: &str,
) -> Value {
    json!({
        "type": "system",
        "subtype": "init",
        "session_id": session_id,
        "model": model,
        "tools": tools,
        "cwd": cwd.display().to_string(),
        "provider": provider,
        "sandbox": sandbox,
    })
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

/// Token counts under Claude Code's names and brute's own. `input_tokens` counts every input
/// token, the cached ones included (as OpenAI reports it; Anthropic's API reports them apart).
fn usage(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    })
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
        let result = report.result(&facts(TurnOutcome::Done));
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
            let result = report.result(&facts(outcome));
            assert_eq!(result["subtype"], subtype);
            assert_eq!(result["is_error"], true);
        }
    }
}
