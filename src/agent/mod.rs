//! The agent: the turn loop. It asks the model, runs the tools it calls, feeds the results
//! back, and repeats while the model wants tools, up to the iteration cap. It emits the
//! [`Event`] protocol and prints nothing itself.
//!
//! The lifecycle decisions live in [`decide`], a plain function; [`Agent::run_turn`] only
//! carries them out (stream, spawn tools, emit).

pub mod attach;
pub mod attach_text;
pub mod commands;
pub mod compact;
pub mod conversation;
pub mod doom_loop;
mod hook_events;
pub mod instructions;
pub mod prompt;
pub mod question;
pub mod subagent;

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::protocol::{CallView, Event, EventSink, Op, TurnOutcome, Usage};
use crate::provider::{ChatRequest, Delta, Message, ReasoningItem, StopReason, ToolCall};
use crate::tool::ToolError;
use crate::tool::exec::{CallRecord, Executor};
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

/// When the conversation is compacted (see [`compact`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compaction {
    /// The model's context window in tokens; `None` (unknown) compacts only on `/compact` or
    /// when the provider says the request was too long.
    pub window: Option<u64>,
    /// Compact before a request would pass this share of the window.
    pub at: f64,
    /// Bring the conversation down to this share of the window.
    pub to: f64,
    /// The model's prices, when known (for the session's cost).
    pub price: Option<crate::provider::pricing::Price>,
}

impl Compaction {
    /// The defaults for `model`: its window from the built-in table, at 0.8, to 0.5.
    pub fn for_model(model: &str) -> Self {
        Self {
            window: compact::context_window(model),
            at: 0.8,
            to: 0.5,
            price: crate::provider::pricing::builtin(model),
        }
    }
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
    /// Tool call durations by call id, for front ends redrawing a restored history.
    durations: std::collections::BTreeMap<String, u64>,
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

/// A turn's checkpoint being taken on a blocking thread; recorded before the turn's first
/// tool call runs (see [`Agent::settle_checkpoint`]).
struct PendingCheckpoint {
    task: tokio::task::JoinHandle<crate::session::Taken>,
    prompt: String,
    history_len: usize,
}

/// What a custom command changes for its one turn.
#[derive(Debug, Clone, Default)]
struct TurnScope {
    model: Option<String>,
    allowed_tools: Option<Vec<String>>,
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
            durations: Default::default(),
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

    /// Starts the session's first walk of the tree now, in the background (the UI does at
    /// start-up, so the person can type at once and the first turn's checkpoint only
    /// re-stats what the walk read). Without a session, checkpoints off or no runtime:
    /// nothing.
    pub fn warm_checkpoints(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if let Some(Some(warm)) = self.with_recorder(|r| r.warm_up()) {
            self.warm_up = Some(runtime.spawn_blocking(move || warm.warm()));
        }
    }

    /// Starts the turn's checkpoint on a blocking thread: the model request goes out
    /// meanwhile (see [`Agent::settle_checkpoint`]).
    fn start_checkpoint(&mut self, prompt: &str, history_len: usize) {
        let Some(Some(checkpoint)) = self.with_recorder(|r| r.start_turn()) else {
            return;
        };
        let task = match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime.spawn_blocking(move || checkpoint.take()),
            Err(_) => return self.record(|r| r.record_start(checkpoint.take(), prompt, history_len)),
        };
        self.checkpoint = Some(PendingCheckpoint {
            task,
            prompt: prompt.to_owned(),
            history_len,
        });
    }

    /// Waits for the turn's checkpoint and records it. Called before the turn's first tool
    /// call runs (any tool: none says it cannot change files, and the wait is only what is
    /// left of a walk that began with the request), before a compaction (recorded as of the
    /// turn) and its hooks, and before the stop hooks, so its `Checkpoint` record precedes
    /// every tool result, and a failure is said before a tool or hook runs. The
    /// conversation takes ops meanwhile; an interrupt ends the turn after it, never cutting
    /// the walk.
    async fn settle_checkpoint(&mut self) {
        let Some(pending) = self.checkpoint.take() else {
            return;
        };
        let waiting = !pending.task.is_finished();
        let first = self.warm_up.as_ref().is_some_and(|w| !w.is_finished());
        if waiting {
            self.events.emit(Event::CheckpointWaiting { waiting: true, first });
        }
        let taken = pending
            .task
            .await
            .unwrap_or_else(|e| crate::session::Taken::Failed(std::io::Error::other(e)));
        if waiting {
            self.events.emit(Event::CheckpointWaiting { waiting: false, first });
        }
        self.warm_up = None;
        let over = matches!(taken, crate::session::Taken::OverBudget(_));
        match self.with_recorder(|r| r.record_start(taken, &pending.prompt, pending.history_len)) {
            Some(Err(error)) if over => self.events.emit(Event::Notice {
                message: error.to_string(),
            }),
            Some(Err(error)) => {
                tracing::warn!(%error, "session write failed");
                self.events.emit(Event::Notice {
                    message: format!("could not save the session: {error}"),
                });
            }
            _ => {}
        }
    }

    /// Whether `/undo` takes back single tool calls, not turns (no session, or no turn
    /// checkpoints in it: the person said no to copying the tree).
    pub fn undoes_calls(&self) -> bool {
        self.per_call_undo()
    }

    fn per_call_undo(&self) -> bool {
        self.with_recorder(|r| !r.checkpoints_on() && r.turns.is_empty())
            .unwrap_or(true)
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

    /// Sets when the conversation is compacted.
    pub fn with_compaction(mut self, compaction: Compaction) -> Self {
        self.compaction = compaction;
        self
    }

    /// Compacts the conversation now (`/compact [focus]`): old tool outputs are pruned, then
    /// everything before the last turn is summarized by the model (keeping the person's
    /// words, the todo list and the files changed verbatim). A failed summary leaves the
    /// conversation as pruning left it.
    pub async fn compact_now(&mut self, focus: Option<String>) {
        let tools = self.executor.registry().specs_for(self.state.access().planning());
        self.pre_compact_hooks(true, focus.as_deref()).await;
        self.compact(focus.as_deref(), true, &tools).await;
    }

    fn fixed_bytes(&self, tools: &[crate::provider::ToolSpec]) -> usize {
        self.config.system_prompt.len()
            + tools
                .iter()
                .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
                .sum::<usize>()
    }

    /// Brings the conversation under the target (see [`Agent::compact_now`]); `summarize`
    /// forces the summary step even when pruning was enough.
    async fn compact(&mut self, focus: Option<&str>, summarize: bool, tools: &[crate::provider::ToolSpec]) {
        let fixed = self.fixed_bytes(tools);
        let before = self.meter.estimate(&self.history, fixed);
        self.events.emit(Event::CompactionStarted { tokens: before });
        let target = match self.compaction.window {
            Some(window) => (window as f64 * self.compaction.to) as u64,
            None => before / 2,
        };
        let size =
            |history: &[Message]| compact::estimate(fixed + history.iter().map(compact::message_bytes).sum::<usize>());
        let pruned = compact::prune(&mut self.history, 2, target, size);
        let mut summarized = false;
        let keep_from = compact::recent_start(&self.history, 1);
        if (summarize || size(&self.history) > target) && keep_from > 0 {
            match self.summarize(keep_from, focus).await {
                Ok(summary) => {
                    let pinned = compact::Pinned {
                        todos: self.state.todos(),
                        files: compact::changed_files(&self.history),
                        budget_bytes: 16 * 1024,
                    };
                    self.history = compact::rebuild(&self.history, keep_from, &summary, &pinned);
                    summarized = true;
                }
                Err(message) => self.events.emit(Event::Notice {
                    message: format!(
                        "the summary for compaction failed ({message}); old tool outputs were pruned only"
                    ),
                }),
            }
        }
        self.meter.reset();
        let after = size(&self.history);
        let history = self.history.clone();
        self.record(|r| r.compaction(&history));
        self.events.emit(Event::ContextUsage {
            tokens: after,
            window: self.compaction.window,
        });
        self.events.emit(Event::CompactionFinished {
            tokens_before: before,
            tokens_after: after,
            pruned_outputs: pruned.outputs,
            summarized,
        });
    }

    /// Asks the model for a summary of `history[..keep_from]`, within a time and size budget.
    async fn summarize(&self, keep_from: usize, focus: Option<&str>) -> Result<String, String> {
        let mut messages = self.history[..keep_from].to_vec();
        messages.push(Message::user(compact::summary_prompt(focus)));
        let model = self.state.model();
        let request = ChatRequest {
            model: &model,
            system: &self.config.system_prompt,
            messages: &messages,
            tools: &[],
            max_tokens: 4096,
            temperature: None,
            reasoning_effort: None,
        };
        let mut ignore = |_| {};
        let call = self.state.provider.complete(&request, &mut ignore);
        match tokio::time::timeout(std::time::Duration::from_secs(120), call).await {
            Err(_) => Err("it took longer than 120 s".to_owned()),
            Ok(Err(e)) => Err(e.to_string()),
            Ok(Ok(completion)) if completion.text.trim().is_empty() => Err("the model returned no text".to_owned()),
            Ok(Ok(completion)) => Ok(completion.text),
        }
    }

    /// Turns the per-turn checkpoints of the session on or off (see
    /// [`crate::session::Recorder::set_checkpoints`]).
    pub fn set_checkpoints(&mut self, on: bool) {
        self.record(|r| {
            r.set_checkpoints(on);
            Ok(())
        });
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

    /// How to draw each tool call of the history (for [`Event::HistoryReplaced`]).
    pub fn call_views(&self) -> std::collections::BTreeMap<String, CallView> {
        let mut views = std::collections::BTreeMap::new();
        for message in &self.history {
            if let Message::Assistant { tool_calls, .. } = message {
                for call in tool_calls {
                    let (_, summary, display) = self.executor.view(call);
                    let duration_ms = self.durations.get(&call.id).copied().unwrap_or(0);
                    views.insert(
                        call.id.clone(),
                        CallView {
                            summary,
                            display,
                            duration_ms,
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

    /// What an undo (or `redo`) of a whole turn would do now, for the confirmation; `None`
    /// without a session or when there is nothing to move.
    pub fn preview_move(&self, redo: bool, force: bool) -> Option<Result<crate::session::TurnMove, String>> {
        if self.per_call_undo() {
            return None;
        }
        self.with_recorder(|r| r.preview(redo, force))
            .and_then(|result| result.map_err(|e| e.to_string()).transpose())
    }

    /// Undoes the last turn: with a session, every file the turn changed (by any tool,
    /// shell included) and, with `rewind`, the conversation; without one, the last tool call's
    /// file changes. Returns what happened, for the person, and whether the history changed.
    /// With missing stored contents nothing changes unless `partial`.
    pub fn undo(&mut self, rewind: bool, force: bool, partial: bool) -> (String, bool) {
        let recorder = self.recorder.clone().filter(|_| !self.per_call_undo());
        let Some(recorder) = recorder else {
            return (
                describe_restore("undo", self.executor.snapshots().undo_last(), &self.state.root),
                false,
            );
        };
        self.executor.snapshots().clear();
        let moved = recorder
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .undo(&mut self.history, rewind, force, partial);
        match moved {
            Ok(Some(moved)) => (moved.describe("undid"), moved.rewound),
            Ok(None) => ("nothing to undo".to_owned(), false),
            Err(e) => (format!("undo failed: {e}"), false),
        }
    }

    /// Re-applies what the last undo took back (files, and the conversation if it was
    /// rewound). Returns what happened and whether the history changed.
    pub fn redo(&mut self, force: bool, partial: bool) -> (String, bool) {
        let recorder = self.recorder.clone().filter(|_| !self.per_call_undo());
        let Some(recorder) = recorder else {
            return (
                describe_restore("redo", self.executor.snapshots().redo_last(), &self.state.root),
                false,
            );
        };
        self.executor.snapshots().clear();
        let moved = recorder
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .redo(&mut self.history, force, partial);
        match moved {
            Ok(Some(moved)) => (moved.describe("redid"), moved.rewound),
            Ok(None) => ("nothing to redo".to_owned(), false),
            Err(e) => (format!("redo failed: {e}"), false),
        }
    }

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

    /// What this turn's tools did since the marks taken at its start, for its end record.
    fn turn_work(&self, writes_from: u64, busy_from: crate::busy::Mark) -> crate::session::TurnWork {
        let snapshots = self.executor.snapshots();
        crate::session::TurnWork {
            wrote: snapshots.paths_since(writes_from),
            last_writes: snapshots.last_writes_since(writes_from),
            busy: snapshots.spans().since(busy_from),
        }
    }

    /// The state shared with this agent's tools.
    pub fn state(&self) -> &Arc<AgentState> {
        &self.state
    }

    /// Runs one user turn to its end. Nothing but the turn runs here: ops are the
    /// conversation's ([`conversation`]), which runs each turn as a task it owns and stops it
    /// through [`Agent::run_turn_with_cancel`]'s token.
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
            let call = ToolCall {
                id: format!("person-{}", self.executor.snapshots().next_op()),
                name: "shell".to_owned(),
                arguments: serde_json::json!({ "command": command }).to_string(),
            };
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
        loop {
            iteration += 1;
            // Per request: an approved plan leaves plan mode within the turn.
            let planning = self.state.access().planning();
            let mut tools = self.executor.registry().specs_for(planning);
            if let Some(allowed) = &scope.allowed_tools {
                tools.retain(|t| allowed.contains(&t.name));
            }
            self.learn_window().await;
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
                    if compact::is_context_error(&message) && !retried_too_long {
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
            let text = completion.text.clone();
            let calls = completion.tool_calls;
            self.push_message(Message::Assistant {
                text: text.clone(),
                tool_calls: calls.clone(),
                reasoning: completion.reasoning_items,
            });
            let step = decide(calls.len(), iteration, max_turns);
            if step == Step::Finish {
                return end(TurnOutcome::Done, text, None);
            }
            let notes: Vec<crate::tool::exec::Notes> = calls
                .iter()
                .map(|call| crate::tool::exec::Notes {
                    always: self.doom_loop.observe(&call.name, &call.arguments),
                    failing: self.doom_loop.failing_note(&call.name, &call.arguments),
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
                let count = self
                    .doom_loop
                    .finished(&record.call.name, &record.call.arguments, failed);
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
                self.durations.insert(result.call_id.clone(), result.duration_ms);
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
            } else if let Some(error) = self
                .executor
                .registry()
                .get(&call.name)
                .and_then(|tool| crate::tool::plan::refusal(tool.as_ref(), &args_of(call), &self.state.access()))
            {
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

/// How a command the person ran reaches the model: their message, saying so, with the
/// command and its (already truncated) output.
fn person_command_message(command: &str, output: &str) -> String {
    format!("I ran this command myself:\n$ {command}\n{}", output.trim_end())
}

/// A call's arguments as JSON (`null` when they are not JSON: the executor says so).
fn args_of(call: &ToolCall) -> serde_json::Value {
    serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null)
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
