//! The agent: the turn loop. It asks the model, runs the tools it calls, feeds the results
//! back, and repeats while the model wants tools, up to the iteration cap. It emits the
//! [`Event`] protocol and prints nothing itself.
//!
//! The lifecycle decisions live in [`decide`], a plain function; [`Agent::run_turn`] only
//! carries them out (stream, spawn tools, emit). This file holds the agent and its parts;
//! the turn loop is in `turn`, checkpoints and undo in `undo`, compaction in `compaction`.

pub mod attach;
pub mod attach_text;
pub mod commands;
pub mod compact;
mod compaction;
pub mod conversation;
pub mod doom_loop;
mod hook_events;
pub mod instructions;
pub mod prompt;
pub mod question;
pub mod subagent;
mod turn;
mod undo;

pub use compaction::Compaction;
use undo::PendingCheckpoint;

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::protocol::{CallOutcome, CallView, Event, EventSink, Op, TurnOutcome, Usage};
use crate::provider::Message;
use crate::tool::exec::Executor;
use crate::tool::state::AgentState;

pub use crate::config::DEFAULT_MAX_TURNS;

/// Added to the system prompt while the session is in plan mode.
pub const PLAN_PROMPT: &str = include_str!("../../assets/plan_mode.md");

/// Settings of one agent (the model and provider live in its [`AgentState`]).
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub system_prompt: String,
    /// Model requests allowed per user turn.
    pub max_turns: u32,
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

/// Answers an op about background processes (`/ps`): the same whether a turn runs or not.
pub(crate) fn background_op(op: Op, state: &AgentState, events: &EventSink) {
    let background = &state.background;
    match op {
        Op::ListProcesses => {}
        Op::KillProcess { id } => match background.stop(&id) {
            Ok(true) => events.emit(Event::Notice {
                message: format!(
                    "stopping {id}: TERM to its process group, KILL after {} s",
                    crate::sandbox::group::KILL_GRACE.as_secs()
                ),
            }),
            Ok(false) => events.emit(Event::Notice {
                message: format!("{id} has ended already"),
            }),
            Err(error) => events.emit(Event::Notice {
                message: error.to_string(),
            }),
        },
        _ => return,
    }
    events.emit(Event::BackgroundList {
        processes: background.views(),
    });
}

/// One conversation with a model and its tools.
pub struct Agent {
    compaction: Compaction,
    /// The server's report of its context window, still on its way (see
    /// [`Agent::with_window_probe`]).
    window_probe: Option<tokio::task::JoinHandle<Option<u64>>>,
    meter: compact::Meter,
    /// What the session's requests cost so far (USD), when the price is known.
    cost_usd: f64,
    recorder: Option<Arc<Mutex<crate::session::Recorder>>>,
    /// How each tool call went, by call id, for front ends redrawing a restored history.
    outcomes: std::collections::BTreeMap<String, CallOutcome>,
    state: Arc<AgentState>,
    executor: Executor,
    config: AgentConfig,
    history: Vec<Message>,
    events: EventSink,
    usage: Usage,
    /// The `session_start` hooks' `source` until they ran (see [`hook_events`]).
    session_source: Option<&'static str>,
    /// Notes repeated calls within a turn.
    doom_loop: doom_loop::DoomLoop,
    /// With nobody to interrupt a stuck model: the identical failing call that ends the turn.
    failure_limit: Option<usize>,
    /// Custom slash commands a prompt may invoke (see [`commands`]).
    commands: Option<Arc<commands::Commands>>,
    /// Tools that come and go (MCP servers): picked up at the start of a user turn.
    live_tools: Option<crate::mcp::LiveTools>,
    /// The running turn's checkpoint, taken beside its first model request.
    checkpoint: Option<PendingCheckpoint>,
    /// The session's first walk of the tree (started at start-up in the UI), until done.
    warm_up: Option<tokio::task::JoinHandle<()>>,
    /// Whether a turn's prompt carries the note on background processes that ended (not a
    /// sub-agent's: the notes are its parent's).
    background_notes: bool,
}

impl Agent {
    pub fn new(state: Arc<AgentState>, executor: Executor, config: AgentConfig, events: EventSink) -> Self {
        state.hooks.set_spans(executor.snapshots().spans());
        state.background.set_events(events.clone());
        Self {
            compaction: Compaction::for_model(&state.model()),
            window_probe: None,
            meter: compact::Meter::default(),
            cost_usd: 0.0,
            recorder: None,
            outcomes: Default::default(),
            state,
            executor,
            config,
            history: Vec::new(),
            events,
            usage: Usage::default(),
            session_source: Some("startup"),
            doom_loop: doom_loop::DoomLoop::default(),
            failure_limit: None,
            commands: None,
            live_tools: None,
            checkpoint: None,
            warm_up: None,
            background_notes: true,
        }
    }

    /// Leaves the notes on ended background processes to the parent agent (a sub-agent).
    pub fn without_background_notes(mut self) -> Self {
        self.background_notes = false;
        self
    }

    /// Ends a turn with an error at the `limit`th identical failing call (`brute -p`, where
    /// nobody can interrupt a model that is stuck).
    pub fn with_failure_limit(mut self, limit: usize) -> Self {
        self.failure_limit = Some(limit);
        self
    }

    /// Expands prompts that invoke one of `commands` at the start of their turn.
    pub fn with_commands(mut self, commands: Arc<commands::Commands>) -> Self {
        self.commands = Some(commands);
        self
    }

    /// The custom slash commands as `(/name, description)`, for a front end's list.
    pub fn command_listing(&self) -> Vec<(String, String)> {
        self.commands.as_ref().map(|c| c.listing()).unwrap_or_default()
    }

    /// Adds tools that come and go while the session runs (MCP servers): the registry is
    /// rebuilt at the start of a user turn when they changed, never within one.
    pub fn with_live_tools(mut self, live: crate::mcp::LiveTools) -> Self {
        self.live_tools = Some(live);
        self
    }

    /// Swaps in the current set of live tools before a turn (see [`Agent::with_live_tools`]);
    /// the first turn of `brute -p` waits for the servers to be ready or failed first.
    async fn refresh_tools(&mut self, cancel: &CancellationToken) {
        let Some(mut live) = self.live_tools.take() else {
            return;
        };
        let settle = async {
            tokio::select! {
                _ = live.settle() => {}
                _ = cancel.cancelled() => {}
            }
        };
        settle.await;
        if let Some((registry, notices)) = live.update() {
            self.executor.set_registry(Arc::new(registry));
            self.events.emit(Event::ToolsChanged {
                tools: self.tool_names(),
            });
            for message in notices {
                self.events.emit(Event::Notice { message });
            }
        }
        self.live_tools = Some(live);
    }

    /// Uses the context window the server reports once `probe` (started in the background
    /// at start, so the first request does not wait for it) has it; it replaces the built-in
    /// table's guess. Only for a window the person did not configure.
    pub fn with_window_probe(mut self, probe: tokio::task::JoinHandle<Option<u64>>) -> Self {
        self.window_probe = Some(probe);
        self
    }

    /// Takes the server's reported window before the first request. The probe started with
    /// the process and asks only plain-`http` (local) servers, so it has usually answered
    /// by now; if not, the wait is one local round trip, at most the probe's own timeout.
    async fn learn_window(&mut self) {
        let Some(probe) = self.window_probe.as_mut() else {
            return;
        };
        let reported = probe.await.ok().flatten();
        self.window_probe = None;
        if let Some(window) = reported {
            tracing::info!(window, "the server reports its context window");
            self.compaction.window = Some(window);
        }
    }

    /// Starts the file watcher only when the first command is about to run (a one-shot run:
    /// see [`crate::session::checkpoint::WatchFrom::FirstCommand`]); nothing without a session.
    pub fn watch_tree_from_first_command(&mut self) {
        // With checkpoints off (a tree too personal to copy unasked) there is nothing to watch for.
        let keeper = self.with_recorder(|r| {
            r.watch_tree_when_big(crate::session::checkpoint::WatchFrom::FirstCommand);
            r.checkpoints_on().then(|| r.change_keeper())
        });
        if let Some(Some(keeper)) = keeper {
            let spans = self.executor.snapshots().spans();
            spans.before_first(Box::new(move || keeper.before_first_command()));
        }
    }

    /// Records this agent's session (and continues `history`, e.g. a resumed session's). Each
    /// tool result is written the moment it exists, by the executor.
    pub fn with_session(mut self, recorder: crate::session::Recorder, history: Vec<Message>) -> Self {
        // Before a built-in tool changes a file, what the turn's undo needs of it is kept.
        let keeper = recorder.change_keeper();
        let snapshots = self.executor.snapshots();
        let before = keeper.clone();
        snapshots.set_before_change(Arc::new(move |path| before.before_change(path)));
        snapshots.set_after_command(Arc::new(move || keeper.after_command()));
        let recorder = Arc::new(Mutex::new(recorder));
        let for_results = recorder.clone();
        let events = self.events.clone();
        self.executor.set_sink(Arc::new(move |result| {
            let written = for_results
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .tool_result(result);
            if let Err(error) = written {
                tracing::warn!(%error, "session write failed");
                events.emit(Event::Notice {
                    message: format!("could not save the session: {error}"),
                });
            }
        }));
        self.state
            .hooks
            .set_session_id(recorder.lock().unwrap_or_else(|e| e.into_inner()).id());
        if !history.is_empty() {
            self.session_source = Some("resume");
        }
        self.history = history;
        self.recorder = Some(recorder);
        self
    }

    /// Continues `history` without recording it: a resumed session whose data directory
    /// cannot be written (the conversation goes on, unsaved).
    pub fn with_unsaved_history(mut self, history: Vec<Message>) -> Self {
        if !history.is_empty() {
            self.session_source = Some("resume");
        }
        self.history = history;
        self
    }

    /// Restores how the tool calls went (from a resumed session).
    pub fn with_outcomes(mut self, outcomes: std::collections::BTreeMap<String, CallOutcome>) -> Self {
        self.outcomes = outcomes;
        self
    }

    /// How each tool call went, by call id.
    pub fn outcomes(&self) -> &std::collections::BTreeMap<String, CallOutcome> {
        &self.outcomes
    }

    /// How to draw each tool call of the history (for [`Event::HistoryReplaced`]).
    pub fn call_views(&self) -> std::collections::BTreeMap<String, CallView> {
        let mut views = std::collections::BTreeMap::new();
        for message in &self.history {
            if let Message::Assistant { tool_calls, .. } = message {
                for call in tool_calls {
                    let (_, summary, display) = self.executor.view(call);
                    let outcome = self.outcomes.get(&call.id).copied().unwrap_or_default();
                    views.insert(
                        call.id.clone(),
                        CallView {
                            summary,
                            display,
                            duration_ms: outcome.duration_ms,
                            failure: outcome.failure,
                        },
                    );
                }
            }
        }
        views
    }

    /// The event that redraws a front end's transcript from this conversation.
    pub fn history_event(&self) -> Event {
        Event::HistoryReplaced {
            messages: self.history.clone(),
            todos: self.state.todos(),
            calls: self.call_views(),
        }
    }

    /// The session being recorded, if any.
    pub fn session_id(&self) -> Option<String> {
        self.recorder
            .as_ref()
            .map(|r| r.lock().unwrap_or_else(|e| e.into_inner()).id().to_owned())
    }

    /// Runs `f` on the session recorder, if there is one.
    pub fn with_recorder<T>(&self, f: impl FnOnce(&mut crate::session::Recorder) -> T) -> Option<T> {
        self.recorder
            .as_ref()
            .map(|r| f(&mut r.lock().unwrap_or_else(|e| e.into_inner())))
    }

    /// Runs a session write; a failure is reported, never fatal.
    fn record(&self, write: impl FnOnce(&mut crate::session::Recorder) -> std::io::Result<()>) {
        if let Some(Err(error)) = self.with_recorder(write) {
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
        let planning = self.state.access().planning();
        self.executor
            .registry()
            .specs_for(planning)
            .into_iter()
            .map(|spec| spec.name)
            .collect()
    }

    /// Forgets the conversation (a new one starts with the next turn).
    pub fn clear(&mut self) {
        self.record(|r| r.clear());
        self.history.clear();
        self.usage = Usage::default();
        self.session_source = Some("clear");
    }

    /// The state shared with this agent's tools.
    pub fn state(&self) -> &Arc<AgentState> {
        &self.state
    }
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
