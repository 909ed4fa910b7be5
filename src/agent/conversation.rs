//! The conversation actor: the core's one owner of a conversation. A front end starts it and
//! then only sends [`Op`]s and renders [`Event`]s; it never touches the agent.
//!
//! ```text
//! front end ──Op──▶ Conversation ── runs turns ──▶ Agent ──▶ provider, Executor ──▶ tools
//!     ▲                  │ (undo/redo/resume/clear/model, queue, requests)
//!     └─────Event────────┘
//! ```
//!
//! Every op is accepted at any time and has one defined effect:
//!
//! | op | idle | while a turn runs |
//! |---|---|---|
//! | `UserTurn` | starts a turn | queued; runs after the turn (an interrupt gives the queue back) |
//! | `Interrupt` | nothing | stops the turn |
//! | `Respond` | answers a request | answers a request |
//! | `SetModel` | from the next request | from the next request |
//! | `SetSandbox` (a mode, plan included) | from the next tool call (plan's tools and prompt: the next request) | likewise |
//! | `SetEffort` | from the next request | from the next request |
//! | `ListModels` | answered when the provider's list comes | likewise |
//! | `Undo` / `Redo` | asks for confirmation (a request), then moves | refused with a notice |
//! | `Resume` / `Clear` | done | refused with a notice |
//! | `Unqueue` | nothing to take | takes a queued prompt out |
//! | `ListProcesses` / `KillProcess` | answered | answered |
//! | `Shutdown` | ends | stops the turn, then ends; background processes are killed |

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::TurnEnd;
use crate::protocol::requests::Requests;
use crate::protocol::{Event, EventSink, Op, RequestKind, Response, TurnOutcome};
use crate::tool::state::AgentState;

/// Builds the agent of another saved session (for `Resume`); supplied by the wiring
/// ([`crate::app`]) so the core does not depend on configuration.
pub type Resumer = Box<dyn Fn(&str, &Requests) -> Result<super::Agent, String> + Send>;

/// A request the conversation made itself and waits to see answered.
enum Pending {
    /// Confirm an undo (or redo) with these options.
    Move { redo: bool, force: bool, partial: bool },
    /// Copy the tree for checkpoints?
    Checkpoints,
}

/// What a turn task does with the agent it is lent.
enum Work {
    /// A prompt: a model turn.
    Prompt(String),
    /// A `!command` the person typed.
    Command(String),
    /// `/compact`.
    Compact(Option<String>),
}

/// The turn that runs: a task that owns the agent until it hands it back.
struct Running {
    task: JoinHandle<(Box<super::Agent>, Option<TurnEnd>)>,
    cancel: CancellationToken,
}

/// What woke the loop.
enum Wake {
    Op(Option<Op>),
    Finished(Result<(Box<super::Agent>, Option<TurnEnd>), tokio::task::JoinError>),
}

/// The running conversation.
pub struct Conversation {
    /// The agent while no turn runs; a running turn's task holds it.
    agent: Option<super::Agent>,
    /// The agent's shared state, reachable while a turn runs (settings, processes, requests).
    state: Arc<AgentState>,
    ops: UnboundedReceiver<Op>,
    events: EventSink,
    requests: Requests,
    running: Option<Running>,
    /// Prompts sent while a turn runs, oldest first; they run after it.
    queue: Vec<String>,
    /// Answers to the conversation's own requests that came while a turn held the agent.
    unclaimed: Vec<(String, Response)>,
    shutdown: bool,
    pending: HashMap<String, Pending>,
    resumer: Option<Resumer>,
}

/// What a front end holds: where to send ops. Events arrive on the receiver the front end
/// created with the [`EventSink`] it gave the core.
pub struct Handle {
    pub ops: UnboundedSender<Op>,
    pub task: tokio::task::JoinHandle<()>,
}

impl Conversation {
    /// A conversation around `agent`, whose requests go out through `requests`.
    pub fn new(
        agent: super::Agent,
        events: EventSink,
        requests: Requests,
        resumer: Option<Resumer>,
    ) -> (Self, UnboundedSender<Op>) {
        let (tx, ops) = tokio::sync::mpsc::unbounded_channel();
        let conversation = Self {
            state: agent.state().clone(),
            agent: Some(agent),
            ops,
            events,
            requests,
            running: None,
            queue: Vec::new(),
            unclaimed: Vec::new(),
            shutdown: false,
            pending: HashMap::new(),
            resumer,
        };
        (conversation, tx)
    }

    /// Asks the person, before anything else, whether the tree may be copied for turn
    /// checkpoints (`reason` says why that needs asking). Without a person they stay off.
    pub fn ask_checkpoints(&mut self, reason: &str) {
        let kind = RequestKind::Consent {
            title: "Checkpoints".to_owned(),
            message: format!(
                "{reason}. Checkpoints at each turn (for /undo of whole turns, shell changes included) would copy this tree into brute's data directory."
            ),
            yes: "Checkpoint this tree".to_owned(),
            no: "Not now (/undo covers single tool calls)".to_owned(),
        };
        if let Some(id) = self.requests.open(kind) {
            self.pending.insert(id, Pending::Checkpoints);
        }
    }

    /// Starts the actor on the current runtime.
    pub fn spawn(self, ops: UnboundedSender<Op>) -> Handle {
        Handle {
            ops,
            task: tokio::spawn(self.run()),
        }
    }

    /// The one loop that takes every op, idle or not, until `Shutdown` or until every sender
    /// is gone (after the running turn ends).
    pub async fn run(mut self) {
        let mut ops_open = true;
        loop {
            if self.running.is_none() && (self.shutdown || (!ops_open && self.queue.is_empty())) {
                break;
            }
            let wake = {
                let ops = &mut self.ops;
                let running = &mut self.running;
                // A turn that has ended is taken back before the next op: it emitted its
                // `TurnFinished` in its last poll, so a front end that answers that with an op
                // between turns (`/diff`, `/undo`) finds the conversation idle, not refused.
                tokio::select! {
                    biased;
                    joined = async {
                        match running {
                            Some(turn) => (&mut turn.task).await,
                            None => std::future::pending().await,
                        }
                    } => Wake::Finished(joined),
                    op = ops.recv(), if ops_open => Wake::Op(op),
                }
            };
            match wake {
                Wake::Op(Some(op)) => self.take(op),
                Wake::Op(None) => ops_open = false,
                Wake::Finished(joined) => {
                    self.running = None;
                    match joined {
                        Ok((agent, end)) => self.finished(agent, end),
                        Err(error) => {
                            // The agent went with the task: nothing is left to talk to.
                            self.events.emit(Event::Error {
                                message: format!("the turn failed and the conversation ends: {error}"),
                            });
                            return;
                        }
                    }
                }
            }
        }
        // Background processes end with the session; nothing waits for them.
        self.state.background.kill_all();
    }

    /// Takes one op. Every op has one defined effect, whether a turn runs or not (the table in
    /// the module docs).
    fn take(&mut self, op: Op) {
        match op {
            Op::Interrupt => {
                if let Some(turn) = &self.running {
                    turn.cancel.cancel();
                }
            }
            Op::Shutdown => {
                self.shutdown = true;
                if let Some(turn) = &self.running {
                    turn.cancel.cancel();
                }
            }
            Op::Respond { id, response } => {
                if let Some(response) = self.requests.resolve(&id, response) {
                    match self.running {
                        Some(_) => self.unclaimed.push((id, response)),
                        None => self.answered(&id, response),
                    }
                }
            }
            Op::UserTurn { text } => {
                self.queue.push(text);
                match self.running {
                    Some(_) => self.queue_changed(),
                    None => self.start_next(false),
                }
            }
            Op::Unqueue { index } => {
                if index < self.queue.len() {
                    self.queue.remove(index);
                    self.queue_changed();
                }
            }
            Op::SetModel { .. } | Op::SetSandbox { .. } | Op::SetEffort { .. } => {
                self.state.apply_setting(op, &self.events);
            }
            Op::ListModels => {
                let state = self.state.clone();
                let events = self.events.clone();
                tokio::spawn(async move { events.emit(state.list_models().await) });
            }
            Op::ListProcesses | Op::KillProcess { .. } => {
                super::background_op(op, &self.state, &self.events);
            }
            op if self.running.is_some() => self.refuse_while_running(&op),
            Op::RunCommand { command } => self.start(Work::Command(command)),
            Op::Compact { focus } => self.start(Work::Compact(focus)),
            Op::Undo { force, partial } => self.propose_move(false, force, partial),
            Op::Redo { force, partial } => self.propose_move(true, force, partial),
            Op::Resume { id } => self.resume(&id),
            Op::Clear => {
                let agent = self.agent_mut();
                agent.clear();
                let history = agent.history_event();
                self.events.emit(history);
                self.notice("new conversation");
            }
            Op::Diff { session } => self.show_diff(session),
        }
    }

    /// Undo, redo, resume, clear, compact, `/diff` and `!commands` would change what the
    /// running turn works on: they are refused with a notice.
    fn refuse_while_running(&self, op: &Op) {
        let what = match op {
            Op::RunCommand { .. } => "a !command",
            Op::Undo { .. } => "/undo",
            Op::Diff { .. } => "/diff",
            Op::Redo { .. } => "/redo",
            Op::Clear => "/clear",
            Op::Compact { .. } => "/compact",
            _ => "/resume",
        };
        self.notice(format!(
            "{what} is not possible while a turn runs; press Esc to stop the turn first"
        ));
    }

    fn queue_changed(&self) {
        self.events.emit(Event::QueueChanged {
            prompts: self.queue.clone(),
        });
    }

    /// The agent, which is here whenever no turn runs.
    fn agent_mut(&mut self) -> &mut super::Agent {
        match &mut self.agent {
            Some(agent) => agent,
            // `start` takes it only into a task whose end puts it back before any op is read.
            None => unreachable!("the agent is away only while a turn runs"),
        }
    }

    fn agent(&self) -> &super::Agent {
        match &self.agent {
            Some(agent) => agent,
            None => unreachable!("the agent is away only while a turn runs"),
        }
    }

    /// Lends the agent to a task that does `work`; the loop keeps taking ops meanwhile.
    fn start(&mut self, work: Work) {
        let Some(mut agent) = self.agent.take() else {
            return;
        };
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let task = tokio::spawn(async move {
            let end = match work {
                Work::Prompt(prompt) => Some(agent.run_turn_with_cancel(prompt, token).await),
                Work::Command(command) => Some(agent.run_command(command, token).await),
                Work::Compact(focus) => {
                    agent.compact_now(focus).await;
                    None
                }
            };
            (Box::new(agent), end)
        });
        self.running = Some(Running { task, cancel });
    }

    /// Starts the oldest queued prompt. Front ends saw it queued only if it waited behind a
    /// turn (`behind`), so only then are they told it left the queue.
    fn start_next(&mut self, behind: bool) {
        if self.queue.is_empty() {
            return;
        }
        let prompt = self.queue.remove(0);
        if behind {
            self.queue_changed();
        }
        self.start(Work::Prompt(prompt));
    }

    /// A turn ended and handed the agent back: answers that waited for it are applied, then
    /// the queue goes on, or is given back to the front end after an interrupt.
    fn finished(&mut self, agent: Box<super::Agent>, end: Option<TurnEnd>) {
        self.agent = Some(*agent);
        if self.queue.is_empty() {
            // Idle now: no process waits for a command that may be hours away.
            crate::sandbox::spare::discard();
        }
        for (id, response) in std::mem::take(&mut self.unclaimed) {
            self.answered(&id, response);
        }
        if self.shutdown {
            return;
        }
        let interrupted = end.is_some_and(|end| end.outcome == TurnOutcome::Interrupted);
        if interrupted && !self.queue.is_empty() {
            let prompts = std::mem::take(&mut self.queue);
            self.events.emit(Event::QueueReturned { prompts });
            self.events.emit(Event::QueueChanged { prompts: Vec::new() });
        } else {
            self.start_next(true);
        }
    }

    fn notice(&self, message: impl Into<String>) {
        self.events.emit(Event::Notice {
            message: message.into(),
        });
    }

    /// Answers `/diff`: the diff from the checkpoints, or a notice saying why there is none.
    fn show_diff(&mut self, session: bool) {
        match self.agent().with_recorder(|r| r.diff(session)) {
            None => self.notice("/diff needs this session's checkpoints, and this session is not saved"),
            Some(Ok(None)) => self.notice("/diff: no turn has changed anything yet"),
            Some(Ok(Some((title, _, 0)))) => self.notice(format!("/diff: {title} changed no files")),
            Some(Ok(Some((title, diff, files)))) => self.events.emit(Event::Diff { title, diff, files }),
            Some(Err(error)) => self.notice(format!("/diff failed: {error}")),
        }
    }

    /// Shows what an undo (redo) would do and asks to confirm; without a session, takes back
    /// the last tool call's changes at once.
    fn propose_move(&mut self, redo: bool, force: bool, partial: bool) {
        let verb = if redo { "redo" } else { "undo" };
        match self.agent().preview_move(redo, force) {
            None if self.agent().with_recorder(|_| ()).is_some() && !self.agent().undoes_calls() => {
                self.notice(format!("nothing to {verb}"))
            }
            None => self.apply_move(redo, false, force, partial),
            Some(Err(error)) => self.notice(format!("{verb} failed: {error}")),
            Some(Ok(preview)) => {
                let summary = preview.describe(if redo { "redo" } else { "undo" });
                let kind = RequestKind::Undo { redo, summary };
                match self.requests.open(kind) {
                    Some(id) => {
                        self.pending.insert(id, Pending::Move { redo, force, partial });
                    }
                    None => self.apply_move(redo, !redo, force, partial),
                }
            }
        }
    }

    fn apply_move(&mut self, redo: bool, rewind: bool, force: bool, partial: bool) {
        let (message, history_changed) = if redo {
            self.agent_mut().redo(force, partial)
        } else {
            self.agent_mut().undo(rewind, force, partial)
        };
        if history_changed {
            self.events.emit(self.agent().history_event());
        }
        self.notice(message);
    }

    /// An answer to one of the conversation's own requests.
    fn answered(&mut self, id: &str, response: Response) {
        match (self.pending.remove(id), response) {
            (Some(Pending::Move { redo, force, partial }), Response::Undo { rewind_conversation }) => {
                self.apply_move(redo, rewind_conversation, force, partial);
            }
            (Some(Pending::Move { redo, .. }), _) => {
                self.notice(format!("{} cancelled", if redo { "redo" } else { "undo" }));
            }
            (Some(Pending::Checkpoints), Response::Consent { yes }) => {
                self.agent_mut().set_checkpoints(yes);
                self.notice(if yes {
                    "turn checkpoints are on: /undo takes back whole turns".to_owned()
                } else {
                    crate::session::checkpoint::paused_notice("you chose not to copy this tree")
                });
            }
            (Some(Pending::Checkpoints), _) => {
                self.notice(crate::session::checkpoint::paused_notice(
                    "you chose not to copy this tree",
                ));
            }
            (None, _) => {}
        }
    }

    fn resume(&mut self, id: &str) {
        let Some(resumer) = &self.resumer else {
            self.notice("resuming is not available here");
            return;
        };
        match resumer(id, &self.requests) {
            Ok(agent) => {
                // The mode the person chose stays (plan mode with the mode it goes back to).
                let access = self.state.access();
                if let Some(before) = access.plan {
                    agent.state().set_mode(before.into());
                }
                agent.state().set_mode(access.mode());
                self.state = agent.state().clone();
                self.agent = Some(agent);
                self.events.emit(self.agent().history_event());
                self.notice(format!("resumed session {id}"));
            }
            Err(message) => self.events.emit(Event::Error { message }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::permission::Mode;

    fn agent() -> super::super::Agent {
        let provider = Arc::new(crate::provider::replay::ReplayProvider::from_script("").unwrap());
        let state = Arc::new(crate::tool::state::AgentState::new(
            provider,
            "m".into(),
            100,
            std::env::temp_dir(),
        ));
        let (events, _) = EventSink::channel();
        let registry = Arc::new(crate::pipeline::registry());
        let executor = crate::tool::exec::Executor::new(registry, Arc::default(), state.clone(), events.clone());
        let config = super::super::AgentConfig {
            system_prompt: String::new(),
            max_turns: 1,
        };
        super::super::Agent::new(state, executor, config, events)
    }

    /// `/resume` swaps the agent, not the person's choice of mode: plan mode stays, and so
    /// does the mode an approved plan goes back to.
    #[tokio::test]
    async fn a_resumed_session_keeps_plan_mode() {
        let first = agent();
        first.state().set_mode(Mode::ReadOnly);
        let second = agent();
        let resumed = second.state().clone();
        let slot = Mutex::new(Some(second));
        let resumer: Resumer = Box::new(move |_, _| {
            slot.lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .ok_or_else(|| "resumed once".to_owned())
        });
        let (events, _rx) = EventSink::channel();
        let (mut conversation, _ops) = Conversation::new(first, events, Requests::headless(), Some(resumer));
        conversation.take(Op::SetSandbox { mode: Mode::Plan });
        conversation.take(Op::Resume { id: "s".into() });
        let access = resumed.access();
        assert_eq!(
            (access.mode(), access.plan),
            (Mode::Plan, Some(crate::sandbox::Mode::ReadOnly))
        );
    }
}
