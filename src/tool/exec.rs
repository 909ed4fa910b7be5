//! The executor: runs one assistant message's tool calls concurrently, serializes mutations
//! of the same file in call order, turns every failure (bad arguments, unknown tool, error,
//! panic, interrupt) into a result, truncates, and announces each result as soon as it is ready.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::mutation::{MutationQueue, queue_key};
use super::{Registry, Snapshots, ToolContext, ToolError, truncate};
use crate::agent::state::AgentState;
use crate::protocol::{Event, EventSink};
use crate::provider::ToolCall;

/// How long an interrupted tool may take to stop by itself before it is abandoned.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

/// The outcome of one tool call, as it goes back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    pub call: ToolCall,
    pub content: String,
    pub is_error: bool,
    /// Set when the tool failed critically: the turn must stop.
    pub critical: Option<String>,
    pub duration: Duration,
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
}

/// A started call; [`PendingCall::finish`] yields its record.
pub struct PendingCall {
    call: ToolCall,
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
        }
    }

    /// The agent state handed to tools.
    pub fn agent(&self) -> &Arc<AgentState> {
        &self.agent
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn snapshots(&self) -> &Arc<Snapshots> {
        &self.snapshots
    }

    /// Announces a call to the front ends.
    pub fn announce(&self, call: &ToolCall) {
        let arguments = serde_json::from_str(&call.arguments).unwrap_or_else(|_| Value::String(call.arguments.clone()));
        self.events.emit(Event::ToolCallStarted {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments,
        });
    }

    /// Emits the result event for a finished call.
    pub fn report(&self, record: &CallRecord) {
        self.events.emit(Event::ToolResult {
            call_id: record.call.id.clone(),
            name: record.call.name.clone(),
            content: record.content.clone(),
            is_error: record.is_error,
            duration_ms: record.duration.as_millis() as u64,
        });
    }

    /// Starts one call. Must be called in the model's call order: that order decides the
    /// queue position of calls on the same file.
    pub fn start(&self, call: &ToolCall, cancel: &CancellationToken) -> PendingCall {
        self.announce(call);
        let started = Instant::now();
        let (tool, args) = match self.registry.prepare(&call.name, &call.arguments) {
            Ok(prepared) => prepared,
            Err(error) => {
                let record = failed(call, &error, started);
                self.report(&record);
                return PendingCall {
                    call: call.clone(),
                    started,
                    handle: None,
                    ready: Some(record),
                };
            }
        };
        // The queue place is taken now, in call order; the FileQueue middleware waits on it.
        let ticket = tool
            .mutated_path(&args)
            .map(|p| self.queue.ticket(queue_key(&super::resolve(&self.agent.root, &p))));
        let ctx = ToolContext {
            call_id: call.id.clone(),
            root: self.agent.root.clone(),
            cancel: cancel.clone(),
            events: self.events.clone(),
            op: self.snapshots.next_op(),
            snapshots: self.snapshots.clone(),
            overflow_dir: self.agent.overflow_dir.clone(),
            agent: self.agent.clone(),
            ticket: Arc::new(std::sync::Mutex::new(ticket)),
        };
        let overflow_dir = self.agent.overflow_dir.clone();
        let events = self.events.clone();
        let call_for_task = call.clone();
        let handle = tokio::spawn(async move {
            let outcome = AssertUnwindSafe(tool.call(args, &ctx)).catch_unwind().await;
            let record = match outcome {
                Ok(Ok(output)) => {
                    let content = if output.self_truncated {
                        output.content
                    } else {
                        truncate::truncate(&output.content, output.keep, overflow_dir.as_deref(), &ctx.call_id)
                    };
                    CallRecord {
                        call: call_for_task,
                        content,
                        is_error: false,
                        critical: None,
                        duration: started.elapsed(),
                    }
                }
                Ok(Err(error)) => failed(&call_for_task, &error, started),
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
                    )
                }
            };
            // Release the queue place even if no FileQueue layer took it.
            drop(ctx.take_ticket());
            // A key a command printed (`env`, a config file) never reaches the model, the
            // screen or the session file.
            let mut record = record;
            if let std::borrow::Cow::Owned(clean) = crate::secrets::redact(&record.content) {
                record.content = clean;
            }
            events.emit(Event::ToolResult {
                call_id: record.call.id.clone(),
                name: record.call.name.clone(),
                content: record.content.clone(),
                is_error: record.is_error,
                duration_ms: record.duration.as_millis() as u64,
            });
            record
        });
        PendingCall {
            call: call.clone(),
            started,
            handle: Some(handle),
            ready: None,
        }
    }
}

fn failed(call: &ToolCall, error: &ToolError, started: Instant) -> CallRecord {
    let message = error_content(error);
    CallRecord {
        call: call.clone(),
        critical: error.critical.then(|| message.clone()),
        content: message,
        is_error: true,
        duration: started.elapsed(),
    }
}

impl PendingCall {
    /// A call that never ran, answered with `error` (e.g. interrupted before it started).
    pub fn answered(call: &ToolCall, error: &ToolError) -> Self {
        let started = Instant::now();
        Self {
            call: call.clone(),
            started,
            handle: None,
            ready: Some(failed(call, error, started)),
        }
    }

    /// Waits for the call. After `cancel` fires, the tool gets a short grace period to stop
    /// by itself (shell kills its process group and reports the output so far); a tool that
    /// does not is abandoned with an `Interrupted` result.
    pub async fn finish(mut self, cancel: &CancellationToken, executor: &Executor) -> CallRecord {
        if let Some(record) = self.ready.take() {
            return record;
        }
        let Some(mut handle) = self.handle.take() else {
            return failed(&self.call, &ToolError::new("Internal", "call lost"), self.started);
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
                );
                executor.report(&record);
                record
            }
            None => {
                handle.abort();
                let record = failed(
                    &self.call,
                    &ToolError::new("Interrupted", "the user interrupted this call"),
                    self.started,
                );
                executor.report(&record);
                record
            }
        }
    }
}
