//! The replay provider: plays a script of assistant turns instead of calling a model.
//!
//! Used for the keyless demo, bug reports and tests. A script is JSON Lines; each non-empty
//! line (lines starting with `#` are comments) is one assistant turn:
//!
//! ```json
//! {"text": "Let me look.", "reasoning": "optional", "tool_calls": [{"name": "read", "arguments": {"file_path": "README.md"}}]}
//! {"error": "a provider error to simulate"}
//! ```
//!
//! The turn played is the number of assistant messages already in the conversation, so the
//! script advances once per model request, across user turns.

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use super::Usage;
use super::{ChatRequest, Completion, Delta, DeltaSink, Message, Provider, ProviderError, StopReason, ToolCall};

/// The built-in demo script, played when no `--script` is given.
pub const DEMO_SCRIPT: &str = include_str!("../../assets/demo.jsonl");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    arguments: Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptTurn {
    #[serde(default)]
    text: String,
    #[serde(default)]
    reasoning: String,
    #[serde(default)]
    tool_calls: Vec<ScriptCall>,
    #[serde(default)]
    error: Option<String>,
}

/// Plays a parsed script.
pub struct ReplayProvider {
    turns: Vec<ScriptTurn>,
}

impl ReplayProvider {
    /// Parses a script; errors name the line that is wrong.
    pub fn from_script(script: &str) -> Result<Self, ProviderError> {
        let mut turns = Vec::new();
        for (number, line) in script.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let turn: ScriptTurn =
                serde_json::from_str(line).map_err(|e| ProviderError::Replay(format!("line {}: {e}", number + 1)))?;
            turns.push(turn);
        }
        Ok(Self { turns })
    }
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive(' ')
}

impl Provider for ReplayProvider {
    fn name(&self) -> &str {
        "replay"
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest<'a>,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, ProviderError>> {
        Box::pin(async move {
            let index = request
                .messages
                .iter()
                .filter(|m| matches!(m, Message::Assistant { .. }))
                .count();
            let Some(turn) = self.turns.get(index) else {
                let text = "(The replay script has no more turns.)".to_owned();
                on_delta(Delta::Text(text.clone()));
                return Ok(Completion {
                    text,
                    stop_reason: Some(StopReason::EndTurn),
                    ..Completion::default()
                });
            };
            if let Some(error) = &turn.error {
                return Err(ProviderError::Replay(error.clone()));
            }
            for piece in words(&turn.reasoning) {
                on_delta(Delta::Reasoning(piece.to_owned()));
            }
            for piece in words(&turn.text) {
                on_delta(Delta::Text(piece.to_owned()));
                tokio::task::yield_now().await;
            }
            let tool_calls: Vec<ToolCall> = turn
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, call)| {
                    ToolCall::new(
                        call.id.clone().unwrap_or_else(|| format!("replay_{index}_{i}")),
                        call.name.clone(),
                        match &call.arguments {
                            Value::Null => "{}".to_owned(),
                            Value::String(raw) => raw.clone(),
                            other => other.to_string(),
                        },
                    )
                })
                .collect();
            Ok(Completion {
                reasoning_items: Vec::new(),
                text: turn.text.clone(),
                reasoning: turn.reasoning.clone(),
                stop_reason: Some(if tool_calls.is_empty() {
                    StopReason::EndTurn
                } else {
                    StopReason::ToolUse
                }),
                tool_calls,
                usage: Usage {
                    input_tokens: request.messages.len() as u64,
                    output_tokens: turn.text.split_whitespace().count() as u64,
                    ..Usage::default()
                },
            })
        })
    }
}
