//! The executor: runs one assistant message's tool calls concurrently, serializes mutations
//! of the same file in call order, turns every failure (bad arguments, unknown tool, error,
//! panic, interrupt) into a result, truncates, and publishes each result as soon as it is
//! ready. It is the only emitter of [`Event::ToolCallStarted`] and [`Event::ToolResult`], and
//! hands every [`ToolResult`] to its [`ResultSink`] (the session file) the moment it exists,
//! so a crash never loses a finished call.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::mutation::{MutationQueue, queue_key};
use super::{Registry, Snapshots, ToolContext, ToolError, truncate};
use crate::protocol::{Display, Event, EventSink, ToolResult};
use crate::provider::ToolCall;
use crate::tool::state::AgentState;

/// How long an interrupted tool may take to stop by itself before it is abandoned.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

/// The outcome of one tool call: the typed result, the call it answers, and whether the turn
/// must stop.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    pub call: ToolCall,
    pub result: ToolResult,
    /// Set when the tool failed critically: the turn must stop.
    pub critical: Option<String>,
    /// Set when the tool ended the turn ([`super::ToolContext::end_turn`]): its answer.
    pub ends_turn: Option<String>,
}

/// Where finished results go as soon as they exist (the session recorder).
pub type ResultSink = Arc<dyn Fn(&ToolResult) + Send + Sync>;

/// Emits a finished call's result and hands it to the sink: the one place a result is
/// published.
fn publish(events: &EventSink, sink: Option<&ResultSink>, record: &CallRecord) {
    if let Some(sink) = sink {
        sink(&record.result);
    }
    events.emit(Event::ToolResult(record.result.clone()));
}

/// Formats a tool error the way the model sees it.
pub fn error_content(error: &ToolError) -> String {
    format!("Error: {error}")
}

/// Runs tool calls for one agent.
pub struct Executor {
    registry: Arc<Registry>,
    queue: MutationQueue,
    snapshots: Arc<Snapshots>,
    agent: Arc<AgentState>,
    events: EventSink,
    sink: Option<ResultSink>,
}

/// A started call; [`PendingCall::finish`] yields its record.
pub struct PendingCall {
    call: ToolCall,
    /// The result goes to the session file as a tool result (not for a command the person
    /// ran: its output becomes their message).
    recorded: bool,
    started: Instant,
    handle: Option<JoinHandle<CallRecord>>,
    ready: Option<CallRecord>,
}

impl Executor {
    pub fn new(registry: Arc<Registry>, snapshots: Arc<Snapshots>, agent: Arc<AgentState>, events: EventSink) -> Self {
        Self {
            registry,
            queue: MutationQueue::default(),
            snapshots,
            agent,
            events,
            sink: None,
        }
    }

    /// Hands every finished result to `sink` as well (the session file).
    pub fn set_sink(&mut self, sink: ResultSink) {
        self.sink = Some(sink);
    }

    /// How a call is shown: its tool's summary and display kind (generic for unknown tools).
    pub fn view(&self, call: &ToolCall) -> (Value, String, Display) {
        let arguments = call.input_or_text();
        match self.registry.get(&call.name) {
            Some(tool) => {
                let summary = tool.summary(&arguments);
                (arguments, summary, tool.display())
            }
            None => {
                let summary = super::key_argument(&arguments);
                (arguments, summary, Display::Text)
            }
        }
    }

    /// The agent state handed to tools.
    pub fn agent(&self) -> &Arc<AgentState> {
        &self.agent
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Replaces the tools (between turns only: the advertised list must not change within a
    /// turn, see [`crate::mcp::manager`]).
    pub fn set_registry(&mut self, registry: Arc<Registry>) {
        self.registry = registry;
    }

    pub fn snapshots(&self) -> &Arc<Snapshots> {
        &self.snapshots
    }

    /// Announces a call to the front ends.
    pub fn announce(&self, call: &ToolCall) {
        let (arguments, summary, display) = self.view(call);
        self.events.emit(Event::ToolCallStarted {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments,
            summary,
            display,
        });
    }

    /// Publishes a finished call's result (event and session).
    pub fn report(&self, record: &CallRecord) {
        publish(&self.events, self.sink.as_ref(), record);
    }

    /// A result for `call` that never ran (the turn was interrupted first), published.
    pub fn never_ran(&self, call: &ToolCall, error: &ToolError) -> CallRecord {
        self.announce(call);
        let record = failed(call, error, Instant::now(), self.display_of(call));
        self.report(&record);
        record
    }

    fn display_of(&self, call: &ToolCall) -> Display {
        self.registry.get(&call.name).map_or(Display::Text, |t| t.display())
    }

    /// Starts one call. Must be called in the model's call order: that order decides the
    /// queue position of calls on the same file.
    pub fn start(&self, call: &ToolCall, cancel: &CancellationToken) -> PendingCall {
        self.start_call(call, cancel, true, Notes::default())
    }

    /// [`Executor::start`], with a note for the model appended to the call's result before
    /// it is published (the loop's doom-loop note), so the model, the front ends and the
    /// session file all get the same text.
    pub fn start_noted(&self, call: &ToolCall, cancel: &CancellationToken, notes: Notes) -> PendingCall {
        self.start_call(call, cancel, true, notes)
    }

    /// Starts a call the person made (`!command`): run and shown like the model's calls, but
    /// its result is not recorded as a tool result, since no assistant message asked for it
    /// (the caller records the person's message that carries the output).
    pub fn start_for_person(&self, call: &ToolCall, cancel: &CancellationToken) -> PendingCall {
        self.start_call(call, cancel, false, Notes::default())
    }

    fn start_call(&self, call: &ToolCall, cancel: &CancellationToken, recorded: bool, notes: Notes) -> PendingCall {
        let sink = if recorded { self.sink.clone() } else { None };
        self.announce(call);
        let started = Instant::now();
        let display = self.display_of(call);
        let (tool, args) = match self.registry.prepare(call) {
            Ok(prepared) => prepared,
            Err(error) => {
                let mut record = failed(call, &error, started, display);
                append_notes(&mut record, &notes);
                publish(&self.events, sink.as_ref(), &record);
                return PendingCall {
                    call: call.clone(),
                    recorded,
                    started,
                    handle: None,
                    ready: Some(record),
                };
            }
        };
        // The queue place is taken now, in call order; the FileQueue middleware waits on it.
        let ticket = tool
            .mutated_path(&args)
            .map(|p| self.queue.ticket(queue_key(&super::resolve(&self.agent.cwd, &p))));
        let ctx = ToolContext {
            call_id: call.id.clone(),
            root: self.agent.root.clone(),
            cwd: self.agent.cwd.clone(),
            cancel: cancel.clone(),
            events: self.events.clone(),
            op: self.snapshots.next_op(),
            snapshots: self.snapshots.clone(),
            overflow_dir: self.agent.overflow_dir.clone(),
            agent: self.agent.clone(),
            ticket: Arc::new(std::sync::Mutex::new(ticket)),
            beyond_roots: Arc::default(),
            approved_target: Arc::default(),
            ends_turn: Arc::default(),
        };
        let overflow_dir = self.agent.overflow_dir.clone();
        let events = self.events.clone();
        let call_for_task = call.clone();
        let handle = tokio::spawn(async move {
            let outcome = AssertUnwindSafe(tool.call(args, &ctx)).catch_unwind().await;
            let record = match outcome {
                Ok(Ok(mut output)) => {
                    // Keys are redacted before anything is saved (truncation keeps the full
                    // text in tool-output/).
                    if let std::borrow::Cow::Owned(clean) = crate::secrets::redact(&output.content) {
                        output.content = clean;
                    }
                    let content = if output.self_truncated {
                        output.content
                    } else {
                        truncate::truncate(&output.content, output.keep, overflow_dir.as_deref(), &ctx.call_id)
                    };
                    CallRecord {
                        result: ToolResult {
                            call_id: call_for_task.id.clone(),
                            name: call_for_task.name.clone(),
                            content,
                            is_error: false,
                            duration_ms: millis(started),
                            display,
                            images: output.images,
                            failure: output.failure,
                        },
                        call: call_for_task,
                        critical: None,
                        ends_turn: None,
                    }
                }
                Ok(Err(error)) => failed(&call_for_task, &error, started, display),
                Err(panic) => {
                    let message = panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".to_owned());
                    failed(
                        &call_for_task,
                        &ToolError::new("Panic", format!("the tool panicked: {message}")),
                        started,
                        display,
                    )
                }
            };
            // Release the queue place even if no FileQueue layer took it.
            drop(ctx.take_ticket());
            // A key a command printed (`env`, a config file) never reaches the model, the
            // screen or the session file.
            let mut record = record;
            record.ends_turn = ctx.take_end_turn();
            if let std::borrow::Cow::Owned(clean) = crate::secrets::redact(&record.result.content) {
                record.result.content = clean;
            }
            append_notes(&mut record, &notes);
            publish(&events, sink.as_ref(), &record);
            record
        });
        PendingCall {
            call: call.clone(),
            recorded,
            started,
            handle: Some(handle),
            ready: None,
        }
    }
}

/// Notes for the model appended to a call's result before it is published.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notes {
    /// Appended whatever the result (the loop's doom-loop note).
    pub always: Option<String>,
    /// The how-manyth identical failing call this one is if it fails: a failed result then
    /// says plainly what to do instead (in place of `always`).
    pub failing: Option<usize>,
}

/// Appends the notes for the model to a result, as a paragraph of its own.
fn append_notes(record: &mut CallRecord, notes: &Notes) {
    let note = match notes.failing {
        Some(nth) if record.result.failed().is_some() => Some(instead(nth, &record.result)),
        _ => notes.always.clone(),
    };
    if let Some(note) = note {
        crate::hooks::append_paragraph(&mut record.result.content, &note);
    }
}

/// English ordinal of `n` (1st, 2nd, 3rd, 4th, 11th, 21st…).
pub(crate) fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// What a model that made the same failing call `nth` times should do instead, by how the
/// call failed.
fn instead(nth: usize, result: &ToolResult) -> String {
    let kind = result
        .content
        .strip_prefix("Error: ")
        .and_then(|rest| rest.split_once(':'))
        .map_or("", |(kind, _)| kind);
    let what = match (result.failure, kind) {
        (Some(crate::protocol::Failure::Denied), _) => {
            "This call is not allowed here and will be refused every time. Do not make it again: do the task another way, or tell the user what you need and why."
        }
        (Some(crate::protocol::Failure::Exit(_) | crate::protocol::Failure::Signal(_)), _) => {
            "The command fails the same way every time. Read its output above, fix the cause (the code, the input, the flags), or run a different command; if you cannot, tell the user what fails."
        }
        (_, "NotFound") => {
            "The path does not exist. Find the right one first: `read` the parent directory to list it, or `fs_search` with a `glob`; then call again with a path from that list."
        }
        (_, "InvalidArguments") => {
            "The arguments are wrong in the way the error says. Change them to match the tool's parameters (names, types, required fields) before calling again."
        }
        (_, "UnknownTool") => "That tool does not exist. Use one of the tools the error names.",
        _ => {
            "Repeating it will fail again. Change the arguments as the error suggests or use a different tool; if you cannot, stop and tell the user what went wrong."
        }
    };
    format!(
        "Stop: this is the {} time this exact call (`{}` with the same arguments) failed. {what}",
        ordinal(nth),
        result.name
    )
}

fn millis(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn failed(call: &ToolCall, error: &ToolError, started: Instant, display: Display) -> CallRecord {
    let message = crate::secrets::redact(&error_content(error)).into_owned();
    CallRecord {
        call: call.clone(),
        critical: error.critical.then(|| message.clone()),
        ends_turn: None,
        result: ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: message,
            is_error: true,
            duration_ms: millis(started),
            display,
            images: Vec::new(),
            failure: Some(crate::protocol::Failure::of_kind(&error.kind)),
        },
    }
}

impl PendingCall {
    fn report(&self, executor: &Executor, record: &CallRecord) {
        let sink = if self.recorded { executor.sink.as_ref() } else { None };
        publish(&executor.events, sink, record);
    }

    /// Waits for the call. After `cancel` fires, the tool gets a short grace period to stop
    /// by itself (shell kills its process group and reports the output so far); a tool that
    /// does not is abandoned with an `Interrupted` result.
    pub async fn finish(mut self, cancel: &CancellationToken, executor: &Executor) -> CallRecord {
        if let Some(record) = self.ready.take() {
            return record;
        }
        let Some(mut handle) = self.handle.take() else {
            return failed(
                &self.call,
                &ToolError::new("Internal", "call lost"),
                self.started,
                Display::Text,
            );
        };
        let joined = tokio::select! {
            joined = &mut handle => Some(joined),
            _ = cancel.cancelled() => None,
        };
        let joined = match joined {
            Some(joined) => Some(joined),
            None => tokio::time::timeout(INTERRUPT_GRACE, &mut handle).await.ok(),
        };
        match joined {
            Some(Ok(record)) => record,
            Some(Err(join_error)) => {
                let record = failed(
                    &self.call,
                    &ToolError::new("Panic", format!("the tool task failed: {join_error}")),
                    self.started,
                    executor.display_of(&self.call),
                );
                self.report(executor, &record);
                record
            }
            None => {
                handle.abort();
                let record = failed(
                    &self.call,
                    &ToolError::new("Interrupted", "the user interrupted this call"),
                    self.started,
                    executor.display_of(&self.call),
                );
                self.report(executor, &record);
                record
            }
        }
    }
}
