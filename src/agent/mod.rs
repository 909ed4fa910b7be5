//! The agent: the turn loop. It asks the model, runs the tools it calls, feeds the results
//! back, and repeats while the model wants tools, up to the iteration cap. It emits the
//! [`Event`] protocol and prints nothing itself.
//!
//! The lifecycle decisions live in [`decide`], a plain function; [`Agent::run_turn`] only
//! carries them out (stream, spawn tools, emit).

pub mod prompt;
pub mod question;
pub mod skills;
pub mod state;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::protocol::{Event, EventSink, Op, TurnOutcome, Usage};
use crate::provider::{ChatRequest, Delta, Message, StopReason, ToolCall};
use crate::tool::ToolError;
use crate::tool::exec::{CallRecord, Executor, PendingCall};
use state::AgentState;

/// The default cap on model requests per user turn.
pub const DEFAULT_MAX_TURNS: u32 = 100;

/// Settings of one agent (the model and provider live in its [`AgentState`]).
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub system_prompt: String,
    /// Model requests allowed per user turn.
    pub max_turns: u32,
    /// Whether a person can answer `question` calls.
    pub interactive: bool,
}

/// How a user turn ended, with the final text and the error that ended it, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnd {
    pub outcome: TurnOutcome,
    pub text: String,
    pub error: Option<String>,
}

/// What the loop does after a model response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// No tool calls: the turn is done.
    Finish,
    /// Run the tools, then ask the model again.
    RunToolsThenContinue,
    /// Run the tools (so no call is left without a result), then stop: the cap is reached.
    RunToolsThenStop,
}

/// Decides the next step from the number of tool calls and the iteration (1-based).
pub fn decide(tool_calls: usize, iteration: u32, max_turns: u32) -> Step {
    if tool_calls == 0 {
        Step::Finish
    } else if iteration >= max_turns {
        Step::RunToolsThenStop
    } else {
        Step::RunToolsThenContinue
    }
}

/// Ops that arrive while a turn runs.
#[derive(Default)]
struct Inbox {
    answers: HashMap<String, Option<Vec<String>>>,
    queued_prompts: Vec<String>,
    shutdown: bool,
}

impl Inbox {
    fn take(&mut self, op: Op, cancel: &CancellationToken) {
        match op {
            Op::Interrupt => cancel.cancel(),
            Op::Shutdown => {
                self.shutdown = true;
                cancel.cancel();
            }
            Op::AnswerQuestion { call_id, answers } => {
                self.answers.insert(call_id, answers);
            }
            Op::UserTurn { text } => self.queued_prompts.push(text),
            // Front ends send these only between turns.
            Op::Undo { .. } | Op::Redo { .. } | Op::Clear | Op::SetModel { .. } | Op::Resume { .. } => {}
        }
    }
}

/// Awaits `future` while handling ops (interrupts, answers) as they arrive.
async fn with_ops<F: Future>(
    future: F,
    ops: &mut UnboundedReceiver<Op>,
    inbox: &mut Inbox,
    cancel: &CancellationToken,
) -> F::Output {
    tokio::pin!(future);
    let mut ops_open = true;
    loop {
        tokio::select! {
            output = &mut future => return output,
            op = ops.recv(), if ops_open => match op {
                Some(op) => inbox.take(op, cancel),
                None => ops_open = false,
            },
        }
    }
}

/// One conversation with a model and its tools.
pub struct Agent {
    recorder: Option<crate::session::Recorder>,
    /// Tool call durations by call id, for front ends redrawing a restored history.
    durations: std::collections::BTreeMap<String, u64>,
    state: Arc<AgentState>,
    executor: Executor,
    config: AgentConfig,
    history: Vec<Message>,
    events: EventSink,
    usage: Usage,
}

impl Agent {
    pub fn new(state: Arc<AgentState>, executor: Executor, config: AgentConfig, events: EventSink) -> Self {
        Self {
            recorder: None,
            durations: Default::default(),
            state,
            executor,
            config,
            history: Vec::new(),
            events,
            usage: Usage::default(),
        }
    }

    /// Records this agent's session (and continues `history`, e.g. a resumed session's).
    pub fn with_session(mut self, recorder: crate::session::Recorder, history: Vec<Message>) -> Self {
        self.history = history;
        self.recorder = Some(recorder);
        self
    }

    /// Turns the per-turn checkpoints of the session on or off (see
    /// [`crate::session::Recorder::set_checkpoints`]).
    pub fn set_checkpoints(&mut self, on: bool) {
        if let Some(recorder) = &mut self.recorder {
            recorder.set_checkpoints(on);
        }
    }

    /// Restores tool call durations (from a resumed session).
    pub fn with_durations(mut self, durations: std::collections::BTreeMap<String, u64>) -> Self {
        self.durations = durations;
        self
    }

    /// Tool call durations by call id.
    pub fn durations(&self) -> &std::collections::BTreeMap<String, u64> {
        &self.durations
    }

    /// The session being recorded, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.recorder.as_ref().map(|r| r.id())
    }

    /// The recorder, for listing checkpoints.
    pub fn recorder(&self) -> Option<&crate::session::Recorder> {
        self.recorder.as_ref()
    }

    /// Runs a session write; a failure is reported, never fatal.
    fn record(&mut self, write: impl FnOnce(&mut crate::session::Recorder) -> std::io::Result<()>) {
        if let Some(recorder) = &mut self.recorder
            && let Err(error) = write(recorder)
        {
            tracing::warn!(%error, "session write failed");
            self.events.emit(Event::Notice {
                message: format!("could not save the session: {error}"),
            });
        }
    }

    /// Appends to the history and the session file.
    fn push_message(&mut self, message: Message) {
        self.record(|r| r.message(&message));
        self.history.push(message);
    }

    /// The conversation so far.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// Token usage of the whole session.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The provider's label.
    pub fn provider_name(&self) -> &str {
        self.state.provider.name()
    }

    /// The names of the tools offered to the model.
    pub fn tool_names(&self) -> Vec<String> {
        self.executor
            .registry()
            .names()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// Forgets the conversation (a new one starts with the next turn).
    pub fn clear(&mut self) {
        self.record(|r| r.clear());
        self.history.clear();
        self.usage = Usage::default();
    }

    /// Undoes the last turn: with a session, every file the turn changed (by any tool,
    /// shell included) and, with `rewind`, the conversation; without one, the last tool call's
    /// file changes. Returns what happened, for the person, and whether the history changed.
    pub fn undo(&mut self, rewind: bool, force: bool) -> (String, bool) {
        let Some(recorder) = &mut self.recorder else {
            return (
                describe_restore("undo", self.executor.snapshots().undo_last(), &self.state.root),
                false,
            );
        };
        self.executor.snapshots().clear();
        match recorder.undo(&mut self.history, rewind, force) {
            Ok(Some(moved)) => (moved.describe("undid"), moved.rewound),
            Ok(None) => ("nothing to undo".to_owned(), false),
            Err(e) => (format!("undo failed: {e}"), false),
        }
    }

    /// Re-applies what the last undo took back (files, and the conversation if it was
    /// rewound). Returns what happened and whether the history changed.
    pub fn redo(&mut self, force: bool) -> (String, bool) {
        let Some(recorder) = &mut self.recorder else {
            return (
                describe_restore("redo", self.executor.snapshots().redo_last(), &self.state.root),
                false,
            );
        };
        self.executor.snapshots().clear();
        match recorder.redo(&mut self.history, force) {
            Ok(Some(moved)) => (moved.describe("redid"), moved.rewound),
            Ok(None) => ("nothing to redo".to_owned(), false),
            Err(e) => (format!("redo failed: {e}"), false),
        }
    }

    /// The state shared with this agent's tools.
    pub fn state(&self) -> &Arc<AgentState> {
        &self.state
    }

    /// Runs one user turn to its end. Ops (interrupt, answers) are read from `ops` meanwhile.
    pub async fn run_turn(&mut self, prompt: String, ops: &mut UnboundedReceiver<Op>) -> TurnEnd {
        self.run_turn_with_cancel(prompt, ops, CancellationToken::new()).await
    }

    /// Like [`Agent::run_turn`], also stopping when `cancel` fires (sub-agents use their
    /// parent call's token).
    pub async fn run_turn_with_cancel(
        &mut self,
        prompt: String,
        ops: &mut UnboundedReceiver<Op>,
        cancel: CancellationToken,
    ) -> TurnEnd {
        let mut inbox = Inbox::default();
        self.events.emit(Event::TurnStarted { prompt: prompt.clone() });
        let history_len = self.history.len();
        self.record(|r| r.begin_turn(&prompt, history_len));
        self.push_message(Message::User { text: prompt });
        let end = self.drive(ops, &mut inbox, &cancel).await;
        let todos = self.state.todos();
        self.record(|r| r.todos(&todos));
        self.record(|r| r.end_turn());
        self.events.emit(Event::TurnFinished {
            outcome: end.outcome,
            text: end.text.clone(),
        });
        end
    }

    async fn drive(
        &mut self,
        ops: &mut UnboundedReceiver<Op>,
        inbox: &mut Inbox,
        cancel: &CancellationToken,
    ) -> TurnEnd {
        let end = |outcome, text: String, error: Option<String>| TurnEnd { outcome, text, error };
        let tools = self.executor.registry().specs();
        let max_turns = self.config.max_turns.max(1);
        let mut iteration = 0;
        loop {
            iteration += 1;
            self.events.emit(Event::RequestStarted { iteration });
            let events = self.events.clone();
            let mut streamed = String::new();
            let mut on_delta = |delta: Delta| match delta {
                Delta::Text(text) => {
                    streamed.push_str(&text);
                    events.emit(Event::TextDelta { text });
                }
                Delta::Reasoning(text) => events.emit(Event::ReasoningDelta { text }),
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
            let model = self.state.model();
            let request = ChatRequest {
                model: &model,
                system: &self.config.system_prompt,
                messages: &self.history,
                tools: &tools,
                max_tokens: self.state.max_tokens,
                temperature: self.state.temperature(),
            };
            let completion = {
                let call = self.state.provider.complete(&request, &mut on_delta);
                let cancellable = async {
                    tokio::select! {
                        result = call => Some(result),
                        _ = cancel.cancelled() => None,
                    }
                };
                with_ops(cancellable, ops, inbox, cancel).await
            };
            let completion = match completion {
                None => {
                    if !streamed.is_empty() {
                        self.push_message(Message::Assistant {
                            text: streamed.clone(),
                            tool_calls: Vec::new(),
                        });
                    }
                    return end(TurnOutcome::Interrupted, streamed, None);
                }
                Some(Err(error)) => {
                    let message = error.to_string();
                    self.events.emit(Event::Error {
                        message: message.clone(),
                    });
                    return end(TurnOutcome::Error, String::new(), Some(message));
                }
                Some(Ok(completion)) => completion,
            };
            self.usage.add(completion.usage);
            self.events.emit(Event::Usage {
                usage: completion.usage,
            });
            if completion.stop_reason == Some(StopReason::MaxTokens) {
                self.events.emit(Event::Notice {
                    message: "the model hit its output token limit; its answer may be cut short".into(),
                });
            }
            let text = completion.text.clone();
            let calls = completion.tool_calls;
            self.push_message(Message::Assistant {
                text: text.clone(),
                tool_calls: calls.clone(),
            });
            let step = decide(calls.len(), iteration, max_turns);
            if step == Step::Finish {
                return end(TurnOutcome::Done, text, None);
            }
            let records = self.run_calls(&calls, ops, inbox, cancel).await;
            let critical = records.iter().find_map(|r| r.critical.clone());
            for record in records {
                let duration_ms = record.duration.as_millis() as u64;
                self.durations.insert(record.call.id.clone(), duration_ms);
                let call_id = record.call.id.clone();
                self.record(|r| r.timing(&call_id, duration_ms));
                self.push_message(Message::Tool {
                    call_id: record.call.id,
                    name: record.call.name,
                    content: record.content,
                    is_error: record.is_error,
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

    /// Runs one message's calls: all concurrently except `question`, which goes to the front
    /// end. Returns the records in call order.
    async fn run_calls(
        &self,
        calls: &[ToolCall],
        ops: &mut UnboundedReceiver<Op>,
        inbox: &mut Inbox,
        cancel: &CancellationToken,
    ) -> Vec<CallRecord> {
        let is_question =
            |call: &ToolCall| call.name == "question" && self.executor.registry().get("question").is_some();
        // Start everything first, in call order, so the calls run side by side.
        let pending: Vec<Option<PendingCall>> = calls
            .iter()
            .map(|call| {
                if is_question(call) {
                    None
                } else if cancel.is_cancelled() {
                    Some(self.never_ran(call))
                } else {
                    Some(self.executor.start(call, cancel))
                }
            })
            .collect();
        let mut records = Vec::with_capacity(calls.len());
        for (call, pending) in calls.iter().zip(pending) {
            let record = match pending {
                Some(pending) => with_ops(pending.finish(cancel, &self.executor), ops, inbox, cancel).await,
                None if cancel.is_cancelled() => self.never_ran(call).finish(cancel, &self.executor).await,
                None => self.ask(call, ops, inbox, cancel).await,
            };
            records.push(record);
        }
        records
    }

    /// A call that will not run because the turn was interrupted: announced and answered.
    fn never_ran(&self, call: &ToolCall) -> PendingCall {
        self.executor.announce(call);
        let pending = PendingCall::answered(call, &interrupted());
        self.executor.report(&CallRecord {
            call: call.clone(),
            content: crate::tool::exec::error_content(&interrupted()),
            is_error: true,
            critical: None,
            duration: std::time::Duration::ZERO,
        });
        pending
    }

    /// Hands a `question` call to the front end and waits for the answer (or an interrupt).
    async fn ask(
        &self,
        call: &ToolCall,
        ops: &mut UnboundedReceiver<Op>,
        inbox: &mut Inbox,
        cancel: &CancellationToken,
    ) -> CallRecord {
        let started = std::time::Instant::now();
        self.executor.announce(call);
        let outcome = self
            .executor
            .registry()
            .prepare(&call.name, &call.arguments)
            .and_then(|(_, args)| question::parse(&args));
        let (content, is_error) = match outcome {
            Err(error) => (crate::tool::exec::error_content(&error), true),
            Ok(_) if !self.config.interactive => (question::NO_USER.to_owned(), false),
            Ok(questions) => {
                self.events.emit(Event::QuestionAsked {
                    call_id: call.id.clone(),
                    questions: questions.clone(),
                });
                let waiting = async {
                    loop {
                        if let Some(answer) = inbox.answers.remove(&call.id) {
                            return Some(answer);
                        }
                        if cancel.is_cancelled() {
                            return None;
                        }
                        tokio::select! {
                            op = ops.recv() => match op {
                                Some(op) => inbox.take(op, cancel),
                                None => return None,
                            },
                            _ = cancel.cancelled() => {}
                        }
                    }
                };
                match waiting.await {
                    Some(Some(answers)) => (question::format_answers(&questions, &answers), false),
                    Some(None) => (question::DECLINED.to_owned(), false),
                    None => (crate::tool::exec::error_content(&interrupted()), true),
                }
            }
        };
        let record = CallRecord {
            call: call.clone(),
            content,
            is_error,
            critical: None,
            duration: started.elapsed(),
        };
        self.executor.report(&record);
        record
    }
}

fn describe_restore(
    what: &str,
    result: std::io::Result<Option<Vec<crate::tool::mutation::Restored>>>,
    root: &std::path::Path,
) -> String {
    match result {
        Ok(None) => format!("nothing to {what}"),
        Ok(Some(restored)) => {
            let mut message = format!("{what}:");
            for item in restored {
                let shown = item.path.strip_prefix(root).unwrap_or(&item.path).display().to_string();
                message.push_str(&format!("\n  {shown}: {}", item.action));
            }
            message
        }
        Err(e) => format!("{what} failed: {e}"),
    }
}

fn interrupted() -> ToolError {
    ToolError::new("Interrupted", "the user interrupted the turn before this call ran")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_decisions() {
        assert_eq!(decide(0, 1, 100), Step::Finish);
        assert_eq!(decide(2, 1, 100), Step::RunToolsThenContinue);
        assert_eq!(decide(1, 100, 100), Step::RunToolsThenStop);
        assert_eq!(decide(0, 100, 100), Step::Finish);
    }
}
