//! The turn loop: a user turn (or a `!command`) from its prompt to its end. It asks the model,
//! runs the tools it calls, feeds the results back, and repeats while the model wants tools,
//! carrying out what [`super::decide`] says.

use tokio_util::sync::CancellationToken;

use crate::protocol::{Event, EventSink, TurnOutcome};
use crate::provider::{ChatRequest, Delta, Message, ProviderError, ReasoningItem, StopReason, ToolCall};
use crate::tool::ToolError;
use crate::tool::exec::CallRecord;

use super::{PLAN_PROMPT, Step, TurnEnd, attach, attach_text, decide, hook_events};

impl super::Agent {
    /// Ends a turn whose prompt was not sent, saying why (an error event and the turn's end).
    fn refused_prompt(&self, message: String) -> TurnEnd {
        self.events.emit(Event::Error {
            message: message.clone(),
        });
        self.events.emit(Event::TurnFinished {
            outcome: TurnOutcome::Error,
            text: String::new(),
        });
        TurnEnd {
            outcome: TurnOutcome::Error,
            text: String::new(),
            error: Some(message),
        }
    }

    /// Runs one user turn to its end. Nothing but the turn runs here: ops are the
    /// conversation's ([`super::conversation`]), which runs each turn as a task it owns and stops it
    /// through [`super::Agent::run_turn_with_cancel`]'s token.
    pub async fn run_turn(&mut self, prompt: String) -> TurnEnd {
        self.run_turn_with_cancel(prompt, CancellationToken::new()).await
    }

    /// Runs one user turn, stopping when `cancel` fires (an interrupt; a sub-agent gets its
    /// parent call's token).
    pub async fn run_turn_with_cancel(&mut self, prompt: String, cancel: CancellationToken) -> TurnEnd {
        self.refresh_tools(&cancel).await;
        let images = attach::gather(&prompt, &self.state.take_attachments(), &self.state.cwd);
        self.events.emit(Event::TurnStarted { prompt: prompt.clone() });
        if let Ok(images) = &images
            && !images.is_empty()
        {
            self.events.emit(Event::ImagesAttached {
                images: images.iter().map(|image| image.label()).collect(),
            });
        }
        let images = match images {
            Ok(images) => images,
            Err(error) => return self.refused_prompt(format!("the prompt was not sent: {error}")),
        };
        let hook_context = match self.prompt_hooks(&prompt, &cancel).await {
            Ok(context) => context,
            Err(reason) => {
                return self.refused_prompt(format!(
                    "a user_prompt_submit hook refused this prompt, so it was not sent: {reason}"
                ));
            }
        };
        let history_len = self.history.len();
        let writes_from = self.executor.snapshots().mark();
        let busy_from = self.executor.snapshots().spans().mark();
        self.start_checkpoint(&prompt, history_len);
        // A custom command: the model (and the history) gets the expanded text; the front
        // ends showed the line as typed.
        let (text, scope) = match self.commands.as_ref().and_then(|c| c.prepare(&prompt)) {
            Some(prepared) => {
                for message in prepared.notices {
                    self.events.emit(Event::Notice { message });
                }
                let scope = TurnScope {
                    model: prepared.model,
                    allowed_tools: prepared.allowed_tools,
                };
                (prepared.text, scope)
            }
            None => (prompt, TurnScope::default()),
        };
        // `@path` attaches the file to this message; the front ends show a chip for it.
        let (text, attached) = attach_text::expand(&text, &self.state.root, &self.state.cwd);
        for attachment in attached {
            self.events.emit(Event::Attached { attachment });
        }
        // Background processes that ended while the model was idle: it hears of it now.
        let text = match self
            .background_notes
            .then(|| self.state.background.exit_notes())
            .flatten()
        {
            Some(note) => format!("{text}\n\n{note}"),
            None => text,
        };
        self.push_message(Message::User {
            text: hook_events::with_context(text, &hook_context),
            images,
        });
        self.doom_loop.reset();
        let mut end = self.drive(&cancel, &scope).await;
        // Before the stop hooks, which may change files.
        self.settle_checkpoint().await;
        let mut continued = 0;
        while end.outcome == TurnOutcome::Done {
            let Some(reason) = self.stop_hooks(&end.text, continued, &cancel).await else {
                break;
            };
            continued += 1;
            self.push_message(Message::user(format!("[stop hook] {reason}")));
            end = self.drive(&cancel, &scope).await;
        }
        let todos = self.state.todos();
        self.record(|r| r.todos(&todos));
        let work = self.turn_work(writes_from, busy_from);
        self.record(|r| r.end_turn(&work));
        crate::timing::turn_finished();
        self.events.emit(Event::TurnFinished {
            outcome: end.outcome,
            text: end.text.clone(),
        });
        end
    }

    /// Runs a command the person typed (`!command`) as a turn: checkpointed like any turn,
    /// run by the `shell` tool (same sandbox, rules and approvals as the model's commands,
    /// same kind of pane), and its output added to the conversation as the person's message
    /// (no model request is made).
    pub async fn run_command(&mut self, command: String, cancel: CancellationToken) -> TurnEnd {
        let prompt = format!("!{command}");
        self.events.emit(Event::TurnStarted { prompt: prompt.clone() });
        let history_len = self.history.len();
        let writes_from = self.executor.snapshots().mark();
        let busy_from = self.executor.snapshots().spans().mark();
        self.start_checkpoint(&prompt, history_len);
        self.settle_checkpoint().await;
        let end = if self.executor.registry().get("shell").is_none() {
            let message =
                "the shell tool is not offered in this session (see --tools and deny_tools), so !commands cannot run"
                    .to_owned();
            self.events.emit(Event::Error {
                message: message.clone(),
            });
            TurnEnd {
                outcome: TurnOutcome::Error,
                text: String::new(),
                error: Some(message),
            }
        } else {
            let call = ToolCall::new(
                format!("person-{}", self.executor.snapshots().next_op()),
                "shell",
                serde_json::json!({ "command": command }).to_string(),
            );
            let pending = self.executor.start_for_person(&call, &cancel);
            let record = pending.finish(&cancel, &self.executor).await;
            self.push_message(Message::user(person_command_message(&command, &record.result.content)));
            TurnEnd {
                outcome: if cancel.is_cancelled() {
                    TurnOutcome::Interrupted
                } else {
                    TurnOutcome::Done
                },
                text: String::new(),
                error: None,
            }
        };
        let work = self.turn_work(writes_from, busy_from);
        self.record(|r| r.end_turn(&work));
        self.events.emit(Event::TurnFinished {
            outcome: end.outcome,
            text: String::new(),
        });
        end
    }

    async fn drive(&mut self, cancel: &CancellationToken, scope: &TurnScope) -> TurnEnd {
        let end = |outcome, text: String, error: Option<String>| TurnEnd { outcome, text, error };
        let max_turns = self.config.max_turns.max(1);
        let mut iteration = 0;
        let mut retried_too_long = false;
        // The text of answers a `pause_turn` cut, which the turn's last answer continues.
        let mut said = String::new();
        loop {
            iteration += 1;
            // Per request: an approved plan leaves plan mode within the turn.
            let planning = self.state.access().planning();
            let mut tools = self.executor.registry().specs_for(planning);
            if let Some(allowed) = &scope.allowed_tools {
                tools.retain(|t| allowed.contains(&t.name));
            }
            // The window matters once there is history to compact: a conversation's first
            // request does not wait for a local server's answer about it (`/props`,
            // `/api/show`); the usage after the answer reports it.
            if self.history.len() > 1 {
                self.learn_window().await;
            }
            if let Some(window) = self.compaction.window {
                let estimate = self.meter.estimate(&self.history, self.fixed_bytes(&tools));
                if estimate as f64 > window as f64 * self.compaction.at {
                    // Compaction is recorded as of the turn: its checkpoint first (and hooks
                    // may change files).
                    self.settle_checkpoint().await;
                    self.pre_compact_hooks(false, None).await;
                    self.compact(None, false, &tools).await;
                }
            }
            // The sandbox of the turn's first command is made while the model answers. One
            // spare a turn: a later command's start is lost in a round trip of the model, and a
            // spare nobody takes costs a process.
            let registry = self.executor.registry();
            if iteration == 1
                && tools
                    .iter()
                    .any(|t| registry.get(&t.name).is_some_and(|tool| tool.runs_commands()))
            {
                crate::tool::shell::prepare_spare(self.state.access());
            }
            let sent_len = self.history.len();
            self.events.emit(Event::RequestStarted { iteration });
            let events = self.events.clone();
            let mut streamed = String::new();
            let mut on_delta = |delta: Delta| match delta {
                Delta::Text(text) => {
                    streamed.push_str(&text);
                    events.emit(Event::TextDelta { text });
                }
                Delta::Reasoning(text) => events.emit(Event::ReasoningDelta { text }),
                Delta::Notice(message) => events.emit(Event::Notice { message }),
                Delta::Retrying {
                    attempt,
                    max_attempts,
                    delay_ms,
                    reason,
                } => events.emit(Event::Retrying {
                    attempt,
                    max_attempts,
                    delay_ms,
                    reason,
                }),
            };
            let model = scope.model.clone().unwrap_or_else(|| self.state.model());
            // The model is told it is planning, for as long as it is.
            let system = match planning {
                true => std::borrow::Cow::Owned(format!("{}\n\n{PLAN_PROMPT}", self.config.system_prompt.trim_end())),
                false => std::borrow::Cow::Borrowed(self.config.system_prompt.as_str()),
            };
            // A model without vision gets a note in place of each image.
            let messages = match self.state.sees_images(&model) {
                true => std::borrow::Cow::Borrowed(self.history.as_slice()),
                false => crate::provider::image::without_images(&self.history, &model),
            };
            let request = ChatRequest {
                model: &model,
                system: &system,
                messages: &messages,
                tools: &tools,
                max_tokens: self.state.max_tokens,
                temperature: self.state.temperature(),
                reasoning_effort: self.state.effort(),
            };
            let completion = {
                let call = self.state.provider.complete(&request, &mut on_delta);
                let cancellable = async {
                    tokio::select! {
                        result = call => Some(result),
                        _ = cancel.cancelled() => None,
                    }
                };
                cancellable.await
            };
            let completion = match completion {
                None => {
                    if !streamed.is_empty() {
                        self.push_message(Message::Assistant {
                            text: streamed.clone(),
                            tool_calls: Vec::new(),
                            reasoning: Vec::new(),
                        });
                    }
                    return end(TurnOutcome::Interrupted, streamed, None);
                }
                Some(Err(error)) => {
                    let message = error.to_string();
                    // "Too long": compact once and send the request again.
                    if matches!(error, ProviderError::ContextTooLong(_)) && !retried_too_long {
                        retried_too_long = true;
                        self.events.emit(Event::Notice {
                            message: "the request was too long for the model: compacting and retrying".to_owned(),
                        });
                        self.settle_checkpoint().await;
                        self.pre_compact_hooks(false, None).await;
                        self.compact(None, true, &tools).await;
                        iteration -= 1;
                        continue;
                    }
                    self.events.emit(Event::Error {
                        message: message.clone(),
                    });
                    return end(TurnOutcome::Error, String::new(), Some(message));
                }
                Some(Ok(completion)) => completion,
            };
            self.meter.reported(sent_len, completion.usage.input_tokens);
            self.usage.add(completion.usage);
            self.events.emit(Event::Usage {
                usage: completion.usage,
            });
            self.learn_window().await;
            self.events.emit(Event::ContextUsage {
                tokens: completion.usage.input_tokens + completion.usage.output_tokens,
                window: self.compaction.window,
            });
            if let Some(price) = &self.compaction.price {
                self.cost_usd += crate::provider::pricing::cost(&completion.usage, price);
                self.events.emit(Event::Cost {
                    total_usd: self.cost_usd,
                });
            }
            if completion.stop_reason == Some(StopReason::MaxTokens) {
                self.events.emit(Event::Notice {
                    message: "the model hit its output token limit; its answer may be cut short".into(),
                });
            }
            announce_hosted_searches(&self.events, &completion.reasoning_items);
            let paused = completion.stop_reason == Some(StopReason::PauseTurn);
            let text = completion.text.clone();
            let calls = completion.tool_calls;
            self.push_message(Message::Assistant {
                text: text.clone(),
                tool_calls: calls.clone(),
                reasoning: completion.reasoning_items,
            });
            // A paused turn of the provider's own tools goes on from what it said so far,
            // with no word from anyone in between (the iteration cap still counts).
            if paused && calls.is_empty() {
                said.push_str(&text);
                if iteration >= max_turns {
                    self.events.emit(Event::Notice {
                        message: format!("stopped after {max_turns} model requests in this turn (the provider paused its own tools; raise the cap with --max-turns or `max_turns` in config)"),
                    });
                    return end(TurnOutcome::MaxTurns, said, None);
                }
                tracing::info!(iteration, "the provider paused the turn; continuing it");
                continue;
            }
            let step = decide(calls.len(), iteration, max_turns);
            if step != Step::Finish {
                // Only pauses right before the final answer are part of it.
                said.clear();
            }
            if step == Step::Finish {
                said.push_str(&text);
                return end(TurnOutcome::Done, said, None);
            }
            let notes: Vec<crate::tool::exec::Notes> = calls
                .iter()
                .map(|call| crate::tool::exec::Notes {
                    always: self.doom_loop.observe(call),
                    failing: self.doom_loop.failing_note(call),
                })
                .collect();
            for note in notes.iter().filter_map(|n| n.always.as_ref()) {
                self.events.emit(Event::Notice { message: note.clone() });
            }
            self.settle_checkpoint().await;
            let records = self.run_calls(&calls, notes, &tools, cancel).await;
            let critical = records.iter().find_map(|r| r.critical.clone());
            let ends_turn = records.iter().find_map(|r| r.ends_turn.clone());
            let mut stuck = None;
            for record in &records {
                let failed = record.result.failed().is_some();
                let count = self.doom_loop.finished(&record.call, failed);
                if self.failure_limit.is_some_and(|limit| count >= limit) && stuck.is_none() {
                    stuck = Some(format!(
                        "stopped: the model made the same failing call {count} times (`{}` with the same arguments: {})",
                        record.call.name,
                        record.result.content.lines().next().unwrap_or("")
                    ));
                }
            }
            for record in records {
                let result = record.result;
                let outcome = crate::protocol::CallOutcome {
                    duration_ms: result.duration_ms,
                    failure: result.failure,
                };
                self.outcomes.insert(result.call_id.clone(), outcome);
                // The session already has it: the executor recorded it as it finished.
                self.history.push(Message::Tool {
                    call_id: result.call_id,
                    name: result.name,
                    content: result.content,
                    is_error: result.is_error,
                    images: result.images,
                });
            }
            if let Some(message) = critical {
                let message = format!("a critical tool error ended the turn: {message}");
                self.events.emit(Event::Error {
                    message: message.clone(),
                });
                return end(TurnOutcome::Error, text, Some(message));
            }
            if cancel.is_cancelled() {
                return end(TurnOutcome::Interrupted, text, None);
            }
            if let Some(message) = stuck {
                self.events.emit(Event::Error {
                    message: message.clone(),
                });
                return end(TurnOutcome::Error, text, Some(message));
            }
            if let Some(answer) = ends_turn {
                // The answer (a plan nobody could approve) is the turn's last message, shown
                // and kept like one the model wrote.
                if !answer.is_empty() {
                    self.events.emit(Event::TextDelta { text: answer.clone() });
                    self.push_message(Message::Assistant {
                        text: answer.clone(),
                        tool_calls: Vec::new(),
                        reasoning: Vec::new(),
                    });
                }
                return end(TurnOutcome::Done, answer, None);
            }
            if step == Step::RunToolsThenStop {
                self.events.emit(Event::Notice {
                    message: format!(
                        "stopped after {max_turns} model requests in this turn (the iteration cap; raise it with --max-turns or `max_turns` in config)"
                    ),
                });
                return end(TurnOutcome::MaxTurns, text, None);
            }
        }
    }

    /// Runs one message's calls, all started at once in call order (so they run side by side
    /// and calls on one file queue in that order), each with its doom-loop note (appended to
    /// its result). Returns the records in call order. A call of a tool not `offered` in this
    /// turn (a custom command narrowed them) is refused.
    async fn run_calls(
        &self,
        calls: &[ToolCall],
        notes: Vec<crate::tool::exec::Notes>,
        offered: &[crate::provider::ToolSpec],
        cancel: &CancellationToken,
    ) -> Vec<CallRecord> {
        let mut pending = Vec::with_capacity(calls.len());
        for (call, note) in calls.iter().zip(notes) {
            let known = self.executor.registry().get(&call.name).is_some();
            pending.push(if cancel.is_cancelled() {
                Err(self.executor.never_ran(call, &interrupted()))
            } else if let Some(error) = self.executor.registry().get(&call.name).and_then(|tool| {
                crate::tool::plan::refusal(
                    tool.as_ref(),
                    call.input().unwrap_or(&serde_json::Value::Null),
                    &self.state.access(),
                )
            }) {
                Err(self.executor.never_ran(call, &error))
            } else if known && !offered.iter().any(|t| t.name == call.name) {
                let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
                let error = ToolError::new(
                    "UnknownTool",
                    format!(
                        "`{}` is not available in this turn. Available tools: {}",
                        call.name,
                        if names.is_empty() {
                            "none".to_owned()
                        } else {
                            names.join(", ")
                        }
                    ),
                );
                Err(self.executor.never_ran(call, &error))
            } else {
                Ok(self.executor.start_noted(call, cancel, note))
            });
        }
        let mut records = Vec::with_capacity(calls.len());
        for pending in pending {
            let record = match pending {
                Ok(pending) => {
                    let finishing = pending.finish(cancel, &self.executor);
                    finishing.await
                }
                Err(record) => record,
            };
            records.push(record);
        }
        records
    }
}

/// What a custom command changes for its one turn.
#[derive(Debug, Clone, Default)]
struct TurnScope {
    model: Option<String>,
    allowed_tools: Option<Vec<String>>,
}

/// How a command the person ran reaches the model: their message, saying so, with the
/// command and its (already truncated) output.
fn person_command_message(command: &str, output: &str) -> String {
    format!("I ran this command myself:\n$ {command}\n{}", output.trim_end())
}

fn interrupted() -> ToolError {
    ToolError::new("Interrupted", "the user interrupted the turn before this call ran")
}

/// Shows the web searches the provider ran itself as calls with their results, so every front
/// end draws them as it draws a tool call (a pane, a `-p` line, a `tool_calls` entry). They
/// are not the executor's: nothing ran here, no result goes to the model, and the searches
/// stay in the assistant message they came in (sent back as the provider requires).
fn announce_hosted_searches(events: &EventSink, items: &[ReasoningItem]) {
    for search in crate::provider::hosted_searches(items) {
        events.emit(Event::ToolCallStarted {
            call_id: search.id.clone(),
            name: "web_search".to_owned(),
            arguments: serde_json::json!({"query": search.query}),
            summary: search.query.clone(),
            display: crate::protocol::Display::Text,
        });
        let content = match &search.error {
            Some(code) => format!("Error: the provider's web search failed: {code}"),
            None if search.sources.is_empty() => "searched by the provider; no sources listed".to_owned(),
            None => {
                let mut lines = vec![format!("searched by the provider; {} sources:", search.sources.len())];
                lines.extend(search.sources.iter().map(|(url, title)| match title.is_empty() {
                    true => format!("- {url}"),
                    false => format!("- {title} — {url}"),
                }));
                lines.join("\n")
            }
        };
        events.emit(Event::ToolResult(crate::protocol::ToolResult {
            call_id: search.id,
            name: "web_search".to_owned(),
            content,
            is_error: search.error.is_some(),
            duration_ms: 0,
            display: crate::protocol::Display::Text,
            images: Vec::new(),
            failure: None,
        }));
    }
}
