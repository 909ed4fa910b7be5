//! The recorder: appends an agent's messages, todo lists and turn checkpoints to its session
//! file as they happen, and moves the tree back and forth for undo and redo.
//!
//! [`Recorder`] and what it appends (this file); [`turn`] records a turn's start and end
//! checkpoints, [`undo`] moves the tree for undo and redo, [`turn_move`] says what a move did,
//! [`list`] lists a session's checkpoints.

mod list;
mod turn;
mod turn_move;
mod undo;

pub use list::checkpoints;
pub use turn::{Taken, TurnCheckpoint, over_budget_notice};
pub use turn_move::TurnMove;

use std::sync::{Arc, Mutex};

use crate::protocol::TodoItem;
use crate::provider::Message;
use crate::session::{Loaded, Record, SessionFile, SessionStore, Turn, activity, checkpoint, lock};

/// Records one agent's session: messages, todos and turn checkpoints.
pub struct Recorder {
    pub store: SessionStore,
    pub file: SessionFile,
    /// Shared with a turn's checkpoint while it is taken on another thread (see
    /// [`Recorder::start_turn`]).
    scanner: Arc<Mutex<checkpoint::Scanner>>,
    pub turns: Vec<Turn>,
    todos: Vec<TodoItem>,
    /// Set when the tree cannot be checkpointed (too large): the session is still saved.
    checkpoints_off: bool,
    /// The other session's checkpoint this one seeded from, kept from pruning while it runs.
    _seed: Option<lock::Seed>,
    /// The conversation as recorded, never compacted (undo across a compaction rewinds it).
    full: Vec<Message>,
    /// The turns during which the conversation was compacted.
    compacted_in: Vec<u32>,
    /// The running turn, registered with the project's other brute processes.
    running: Option<activity::RunningTurn>,
    /// The tree is over the checkpoint budget: turns record only what the built-in tools
    /// change (see [`crate::session::keep`]).
    over_budget: bool,
    /// What the open turn's tools are about to change when it is such a turn (`None`
    /// otherwise), shared with the [`crate::session::keep::ChangeKeeper`].
    touched: Arc<Mutex<Option<crate::session::keep::Touched>>>,
}

/// How many of the newest sessions a new one looks through for one that ran a turn, to seed
/// from (the newest may have ended before its first turn).
const SEED_CANDIDATES: usize = 4;

impl Recorder {
    /// A recorder for `file`, continuing `turns` (empty for a new session).
    pub fn new(store: SessionStore, file: SessionFile, loaded: &Loaded, max_file_bytes: u64) -> Self {
        let mut scanner = checkpoint::Scanner::new(store.root().to_path_buf(), store.objects().clone(), max_file_bytes);
        // The newest known state of the tree, from this session or else the previous one of
        // this directory, lets even a new session's first checkpoint skip unchanged files.
        // Seeding from another session is registered under the store lock, so a prune running
        // meanwhile keeps what the seed reaches (see `lock`).
        // (A turn of a tree over the budget holds a few paths only: no picture of the tree.)
        let last_of = |turns: &[Turn]| turns.iter().rev().filter(|t| !t.tools_only).find_map(|t| t.end.clone());
        let mut seed = None;
        let known = last_of(&loaded.turns).or_else(|| {
            let _lock = lock::StoreLock::shared(store.data_dir()).ok();
            // The newest made of the last few sessions that ran a turn (any checkpoint is a
            // valid seed, and a fresher one skips more files); one whose turns checkpointed
            // nothing (a tree over the budget) ends the search.
            let manifest = store
                .ids_by_creation()
                .into_iter()
                .filter(|id| *id != file.id)
                .take(SEED_CANDIDATES)
                .filter_map(|id| store.load(&id).ok())
                .find(|loaded| !loaded.turns.is_empty())
                .and_then(|loaded| last_of(&loaded.turns))?;
            // Without a registration (read-only data dir) nothing here can be pruned either.
            seed = lock::Seed::register(store.data_dir(), &manifest).ok();
            Some(manifest)
        });
        if let Some(id) = known {
            // Loaded by the first walk, beside the first model request.
            scanner.remember_later(id);
        }
        Self {
            _seed: seed,
            store,
            file,
            scanner: Arc::new(Mutex::new(scanner)),
            turns: loaded.turns.clone(),
            todos: loaded.todos.clone(),
            checkpoints_off: false,
            full: loaded.full_history.clone(),
            compacted_in: loaded.compacted_in.clone(),
            running: None,
            over_budget: false,
            touched: Arc::default(),
        }
    }

    pub fn id(&self) -> &str {
        &self.file.id
    }

    /// Turns the per-turn checkpoints off (the tree is too big or too personal to copy
    /// without asking) or back on.
    pub fn set_checkpoints(&mut self, on: bool) {
        self.checkpoints_off = !on;
    }

    /// Whether this session has checkpointed the tree before, or seeds from one that has (the
    /// person already let brute copy it).
    pub fn has_history(&self) -> bool {
        !self.turns.is_empty() || self.scanner().has_known()
    }

    /// Whether turn checkpoints are on (off: too big, or the person said no).
    pub fn checkpoints_on(&self) -> bool {
        !self.checkpoints_off
    }

    /// Sets how much a checkpoint's walk may cost (see [`checkpoint::Budget`]).
    pub fn set_budget(&mut self, budget: checkpoint::Budget) {
        self.scanner().set_budget(budget);
    }

    /// Watches the tree so checkpoints re-list only what changed (see
    /// [`checkpoint::Scanner::watch`]); the reason when no watcher can start.
    pub fn watch_tree(&mut self) -> Result<(), crate::session::watch::Gap> {
        self.scanner().watch()
    }

    /// Watches the tree from `from` on, unless the tree is known to be small then (see
    /// [`checkpoint::Scanner::watch_when_big`]).
    pub fn watch_tree_when_big(&mut self, from: checkpoint::WatchFrom) {
        self.scanner().watch_when_big(from);
    }

    /// Whether a file watcher runs (for tests and benches).
    pub fn watching(&self) -> bool {
        self.scanner().watcher().is_some()
    }

    /// How the last walk went (for tests and benches).
    pub fn last_walk(&self) -> checkpoint::Walked {
        self.scanner().last_walk()
    }

    /// Why checkpoints walked the whole tree though the watcher ran, oldest first.
    pub fn watch_gaps(&self) -> Vec<crate::session::watch::Gap> {
        self.scanner().gaps().to_vec()
    }

    /// A test seam: the file watcher's queue overflows (the next checkpoint walks it all).
    pub fn inject_watch_overflow(&self) {
        if let Some(watch) = self.scanner().watcher() {
            watch.inject_overflow();
        }
    }

    /// The scanner; waits while a turn's checkpoint is being taken with it.
    /// What keeps the files a built-in tool is about to change (see [`crate::session::keep`]).
    pub fn change_keeper(&self) -> crate::session::keep::ChangeKeeper {
        crate::session::keep::ChangeKeeper::new(
            self.scanner.clone(),
            self.store.objects().clone(),
            self.store.root(),
            self.touched.clone(),
        )
    }

    fn scanner(&self) -> std::sync::MutexGuard<'_, checkpoint::Scanner> {
        self.scanner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The checkpoint at the end of the turn that started at `start`: when nothing but the
    /// built-in tools could change the tree (no command, hook or MCP tool ran, see
    /// [`crate::busy`]), only the directories of what they wrote are listed again; otherwise
    /// the tree is walked (or what the file watcher saw).
    fn snapshot_after(
        &mut self,
        start: &str,
        work: &crate::session::whose::TurnWork,
    ) -> std::io::Result<(String, Vec<String>)> {
        let wrote: Vec<std::path::PathBuf> = self
            .relative(&work.wrote)
            .iter()
            .map(|rel| crate::session::relpath::under(self.store.root(), rel))
            .collect();
        let written = match work.busy.is_empty() {
            true => self.scanner().checkpoint_written(start, &wrote)?,
            false => None,
        };
        let (id, scan) = match written {
            Some(taken) => taken,
            None => self.scanner().checkpoint_after(&wrote)?,
        };
        self.consolidate();
        Ok((id, scan.skipped.into_iter().map(|(p, _)| p).collect()))
    }

    /// The checkpoint of the tree as it is now (walked, or what the file watcher saw).
    fn snapshot(&mut self) -> std::io::Result<(String, Vec<String>)> {
        let (id, scan) = self.scanner().checkpoint()?;
        self.consolidate();
        Ok((id, scan.skipped.into_iter().map(|(p, _)| p).collect()))
    }

    /// Records how long a tool call took.
    pub fn timing(&mut self, call_id: &str, duration_ms: u64) -> std::io::Result<()> {
        self.file.append(&Record::Timing {
            call_id: call_id.to_owned(),
            duration_ms,
        })
    }

    /// Records a compacted conversation: `--continue` resumes it (the records before stay in
    /// the file).
    pub fn compaction(&mut self, history: &[Message]) -> std::io::Result<()> {
        self.compacted_in.push(self.turns.last().map_or(0, |t| t.turn));
        self.file.append(&Record::Compaction {
            history: history.to_vec(),
        })
    }

    /// Records a finished tool call the moment it exists (in finishing order; replay puts
    /// results back in call order).
    pub fn tool_result(&mut self, result: &crate::protocol::ToolResult) -> std::io::Result<()> {
        self.full.push(Message::Tool {
            call_id: result.call_id.clone(),
            name: result.name.clone(),
            content: result.content.clone(),
            is_error: result.is_error,
            images: result.images.clone(),
        });
        self.file.append(&Record::ToolResult { result: result.clone() })?;
        self.record_touched()
    }

    pub fn message(&mut self, message: &Message) -> std::io::Result<()> {
        self.full.push(message.clone());
        self.file.append(&Record::Message {
            message: message.clone(),
        })
    }

    /// Records the todo list if it changed.
    pub fn todos(&mut self, todos: &[TodoItem]) -> std::io::Result<()> {
        if self.todos != todos {
            self.todos = todos.to_vec();
            self.file.append(&Record::Todos { todos: todos.to_vec() })?;
        }
        Ok(())
    }

    pub fn clear(&mut self) -> std::io::Result<()> {
        self.full.clear();
        self.compacted_in.clear();
        self.file.append(&Record::Clear)
    }

    /// The checkpoints, newest last, with the number of paths each turn changed.
    pub fn checkpoints(&self) -> Vec<(Turn, usize)> {
        checkpoints(&self.store, &self.turns)
    }
}
