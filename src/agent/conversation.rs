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
//! | `Undo` / `Redo` | asks for confirmation (a request), then moves | refused with a notice |
//! | `Resume` / `Clear` | done | refused with a notice |
//! | `Unqueue` | nothing to take | takes a queued prompt out |
//! | `ListProcesses` / `KillProcess` | answered | answered |
//! | `Shutdown` | ends | stops the turn, then ends; background processes are killed |

use std::collections::HashMap;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

use super::Inbox;
use crate::protocol::requests::Requests;
use crate::protocol::{Event, EventSink, Op, RequestKind, Response, TurnOutcome};

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

/// The running conversation.
pub struct Conversation {
    agent: super::Agent,
    ops: UnboundedReceiver<Op>,
    events: EventSink,
    requests: Requests,
    inbox: Inbox,
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
            agent,
            ops,
            events,
            requests,
            inbox: Inbox::default(),
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

    /// Handles ops until `Shutdown` or until every sender is gone.
    pub async fn run(mut self) {
        while let Some(op) = self.ops.recv().await {
            self.handle(op).await;
            if self.inbox.shutdown {
                break;
            }
        }
        // Background processes end with the session; nothing waits for them.
        self.agent.state().background.kill_all();
    }

    async fn handle(&mut self, op: Op) {
        match op {
            Op::UserTurn { text } => {
                self.inbox.queue.push(text);
                self.run_queue().await;
            }
            Op::Interrupt | Op::Unqueue { .. } => {}
            Op::Respond { id, response } => {
                if let Some(response) = self.requests.resolve(&id, response) {
                    self.answered(&id, response);
                }
            }
            Op::Undo { force, partial } => self.propose_move(false, force, partial),
            Op::Redo { force, partial } => self.propose_move(true, force, partial),
            Op::Resume { id } => self.resume(&id),
            Op::Clear => {
                self.agent.clear();
                self.events.emit(self.agent.history_event());
                self.notice("new conversation");
            }
            Op::SetModel { .. } | Op::SetSandbox { .. } | Op::SetEffort { .. } => {
                self.agent.state().apply_setting(op, &self.events);
            }
            Op::ListProcesses | Op::KillProcess { .. } => {
                super::background_op(op, self.agent.state(), &self.events);
            }
            Op::Compact { focus } => self.agent.compact_now(focus).await,
            Op::Diff { session } => self.show_diff(session),
            Op::RunCommand { command } => {
                self.agent
                    .run_command_in(command, &mut self.ops, &mut self.inbox, CancellationToken::new())
                    .await;
                for (id, response) in std::mem::take(&mut self.inbox.unclaimed) {
                    self.answered(&id, response);
                }
                // Prompts typed while it ran wait in the queue like behind any turn.
                self.run_queue().await;
            }
            Op::Shutdown => self.inbox.shutdown = true,
        }
    }

    /// Runs queued prompts one after another. An interrupted turn gives the rest of the queue
    /// back to the front end instead of starting it.
    async fn run_queue(&mut self) {
        let mut queued_behind_a_turn = false;
        while !self.inbox.queue.is_empty() {
            let prompt = self.inbox.queue.remove(0);
            // Front ends saw this prompt queued only if it waited for a turn.
            if queued_behind_a_turn {
                self.events.emit(Event::QueueChanged {
                    prompts: self.inbox.queue.clone(),
                });
            }
            queued_behind_a_turn = true;
            let end = self
                .agent
                .run_turn_in(prompt, &mut self.ops, &mut self.inbox, CancellationToken::new())
                .await;
            for (id, response) in std::mem::take(&mut self.inbox.unclaimed) {
                self.answered(&id, response);
            }
            if self.inbox.shutdown {
                return;
            }
            if end.outcome == TurnOutcome::Interrupted && !self.inbox.queue.is_empty() {
                let prompts = std::mem::take(&mut self.inbox.queue);
                self.events.emit(Event::QueueReturned { prompts });
                self.events.emit(Event::QueueChanged { prompts: Vec::new() });
            }
        }
    }

    fn notice(&self, message: impl Into<String>) {
        self.events.emit(Event::Notice {
            message: message.into(),
        });
    }

    /// Answers `/diff`: the diff from the checkpoints, or a notice saying why there is none.
    fn show_diff(&mut self, session: bool) {
        match self.agent.with_recorder(|r| r.diff(session)) {
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
        match self.agent.preview_move(redo, force) {
            None if self.agent.with_recorder(|_| ()).is_some() && !self.agent.undoes_calls() => {
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
            self.agent.redo(force, partial)
        } else {
            self.agent.undo(rewind, force, partial)
        };
        if history_changed {
            self.events.emit(self.agent.history_event());
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
                self.agent.set_checkpoints(yes);
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
                let access = self.agent.state().access();
                if let Some(before) = access.plan {
                    agent.state().set_mode(before.into());
                }
                agent.state().set_mode(access.mode());
                self.agent = agent;
                self.events.emit(self.agent.history_event());
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
        conversation.handle(Op::SetSandbox { mode: Mode::Plan }).await;
        conversation.handle(Op::Resume { id: "s".into() }).await;
        let access = resumed.access();
        assert_eq!(
            (access.mode(), access.plan),
            (Mode::Plan, Some(crate::sandbox::Mode::ReadOnly))
        );
    }
}
