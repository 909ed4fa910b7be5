//! A turn's checkpoint and taking turns back: the checkpoint is taken beside the turn's first
//! model request and recorded before its first tool call; `/undo` and `/redo` move whole turns
//! through the session (or single calls without one).

use crate::protocol::Event;

impl super::Agent {
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
    /// meanwhile (see [`super::Agent::settle_checkpoint`]).
    pub(super) fn start_checkpoint(&mut self, prompt: &str, history_len: usize) {
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
    pub(super) async fn settle_checkpoint(&mut self) {
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

    pub(super) fn per_call_undo(&self) -> bool {
        self.with_recorder(|r| !r.checkpoints_on() && r.turns.is_empty())
            .unwrap_or(true)
    }

    /// Turns the per-turn checkpoints of the session on or off (see
    /// [`crate::session::Recorder::set_checkpoints`]).
    pub fn set_checkpoints(&mut self, on: bool) {
        self.record(|r| {
            r.set_checkpoints(on);
            Ok(())
        });
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
        self.move_turn(Move::Undo { rewind }, force, partial)
    }

    /// Re-applies what the last undo took back (files, and the conversation if it was
    /// rewound). Returns what happened and whether the history changed.
    pub fn redo(&mut self, force: bool, partial: bool) -> (String, bool) {
        self.move_turn(Move::Redo, force, partial)
    }

    fn move_turn(&mut self, way: Move, force: bool, partial: bool) -> (String, bool) {
        let (verb, done) = match way {
            Move::Undo { .. } => ("undo", "undid"),
            Move::Redo => ("redo", "redid"),
        };
        let recorder = self.recorder.clone().filter(|_| !self.per_call_undo());
        let Some(recorder) = recorder else {
            let snapshots = self.executor.snapshots();
            let restored = match way {
                Move::Undo { .. } => snapshots.undo_last(),
                Move::Redo => snapshots.redo_last(),
            };
            return (describe_restore(verb, restored, &self.state.root), false);
        };
        self.executor.snapshots().clear();
        let mut recorder = recorder.lock().unwrap_or_else(|e| e.into_inner());
        let moved = match way {
            Move::Undo { rewind } => recorder.undo(&mut self.history, rewind, force, partial),
            Move::Redo => recorder.redo(&mut self.history, force, partial),
        };
        match moved {
            Ok(Some(moved)) => (moved.describe(done), moved.rewound),
            Ok(None) => (format!("nothing to {verb}"), false),
            Err(e) => (format!("{verb} failed: {e}"), false),
        }
    }

    /// What this turn's tools did since the marks taken at its start, for its end record.
    pub(super) fn turn_work(&self, writes_from: u64, busy_from: crate::busy::Mark) -> crate::session::TurnWork {
        let snapshots = self.executor.snapshots();
        crate::session::TurnWork {
            wrote: snapshots.paths_since(writes_from),
            last_writes: snapshots.last_writes_since(writes_from),
            busy: snapshots.spans().since(busy_from),
        }
    }
}

/// Which way a turn moves.
#[derive(Clone, Copy)]
enum Move {
    Undo { rewind: bool },
    Redo,
}

/// A turn's checkpoint being taken on a blocking thread; recorded before the turn's first
/// tool call runs (see [`super::Agent::settle_checkpoint`]).
pub(super) struct PendingCheckpoint {
    task: tokio::task::JoinHandle<crate::session::Taken>,
    prompt: String,
    history_len: usize,
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
