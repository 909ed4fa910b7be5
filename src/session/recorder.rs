//! The recorder: appends an agent's messages, todo lists and turn checkpoints to its session
//! file as they happen, and moves the tree back and forth for undo and redo.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::{Loaded, Record, SessionFile, SessionStore, Turn, activity, checkpoint, lock, now_ms};
use crate::protocol::TodoItem;
use crate::provider::Message;

/// What an undo or redo did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnMove {
    pub turn: u32,
    pub prompt: String,
    pub report: checkpoint::MoveReport,
    pub skipped: Vec<String>,
    pub rewound: bool,
    /// A forced undo of what the turn's undo had left (see [`Turn::left`]), not a whole turn.
    pub forced_left: bool,
}

impl TurnMove {
    fn of(turn: Turn, report: checkpoint::MoveReport, rewound: bool) -> Self {
        Self {
            turn: turn.turn,
            prompt: turn.prompt,
            report,
            skipped: turn.skipped,
            rewound,
            forced_left: false,
        }
    }

    /// The paths this move left alone that a forced move would take: changed since, the
    /// person's, or maybe another turn's (never what another turn's tools wrote).
    pub fn left(&self, held: &checkpoint::Held) -> Vec<String> {
        let report = &self.report;
        let mut left: Vec<String> = report
            .conflicts
            .iter()
            .chain(&report.kept)
            .chain(report.concurrent.iter().filter(|p| !held.foreign.contains(p)))
            .cloned()
            .collect();
        left.sort();
        left.dedup();
        left
    }

    /// A human summary: what was restored with +/- line counts, what was left alone and why,
    /// and what the next command does. Paths are shown escaped (see [`super::relpath::shown`]):
    /// a name cannot forge a line.
    pub fn describe(&self, verb: &str) -> String {
        let shown = super::relpath::shown;
        // "undo"/"redo" in a preview, "undid"/"redid" after.
        let undo = verb.starts_with("und");
        let first = self.prompt.lines().next().unwrap_or("");
        let mut out = if self.forced_left {
            format!("{verb} what the undo of turn {} (\"{first}\") had left:", self.turn)
        } else {
            format!("{verb} turn {} (\"{first}\"):", self.turn)
        };
        let report = &self.report;
        if report.moved.is_empty() {
            out.push_str(" no file changes");
        }
        for moved in &report.moved {
            out.push_str(&format!(
                "\n  {} {} (+{} -{})",
                moved.action,
                shown(&moved.path),
                moved.added,
                moved.removed
            ));
        }
        let other = if undo {
            "`brute redo` (/redo)"
        } else {
            "`brute undo` (/undo)"
        };
        if !report.unsure.is_empty() {
            const NAMED: usize = 10;
            let mut names: Vec<String> = report.unsure.iter().take(NAMED).map(|p| shown(p)).collect();
            if report.unsure.len() > NAMED {
                names.push(format!("and {} more", report.unsure.len() - NAMED));
            }
            out.push_str(&format!(
                "\n  changed while a command of the turn ran, so taken as the turn's: {}; if one was your own edit, {other} brings it back",
                names.join(", ")
            ));
        }
        for path in &report.conflicts {
            out.push_str(&format!("\n  skipped {}: changed since the agent's turn", shown(path)));
        }
        for path in &report.kept {
            out.push_str(&format!(
                "\n  kept {}: you changed it while the turn ran, after the agent",
                shown(path)
            ));
        }
        for path in &report.concurrent {
            out.push_str(&format!(
                "\n  left alone {}: another brute turn ran in this project at the same time and may have made this change",
                shown(path)
            ));
        }
        for path in &report.missing {
            out.push_str(&format!(
                "\n  not restorable {}: its stored content is missing",
                shown(path)
            ));
        }
        for path in &self.skipped {
            out.push_str(&format!(
                "\n  not restorable {}: over the checkpoint size cap",
                shown(path)
            ));
        }
        if !report.conflicts.is_empty() || !report.kept.is_empty() {
            if undo {
                out.push_str(
                    "\n  `brute undo --force` (/undo force) takes back what was skipped or kept as well, before any older turn",
                );
            } else {
                out.push_str(
                    "\n  to overwrite what was skipped: `brute undo`, then `brute redo --force` (/redo force)",
                );
            }
        }
        if self.rewound {
            out.push_str(if undo {
                "\n  the conversation was rewound to before that turn"
            } else {
                "\n  the conversation is back as it was after that turn"
            });
        }
        if !self.forced_left {
            out.push_str(if undo {
                "\n  `brute redo` (/redo) re-applies the turn"
            } else {
                "\n  `brute undo` (/undo) takes it back again"
            });
        }
        out
    }
}

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
    /// change (see [`super::keep`]).
    over_budget: bool,
    /// What the open turn's tools are about to change when it is such a turn (`None`
    /// otherwise), shared with the [`super::keep::ChangeKeeper`].
    touched: Arc<Mutex<Option<super::keep::Touched>>>,
}

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
            let previous = store.ids().into_iter().find(|id| *id != file.id)?;
            let manifest = last_of(&store.load(&previous).ok()?.turns)?;
            // Without a registration (read-only data dir) nothing here can be pruned either.
            seed = lock::Seed::register(store.data_dir(), &manifest).ok();
            Some(manifest)
        });
        if let Some(id) = known {
            // Unreadable (a damaged store): the next checkpoint reads every file.
            let _ = scanner.remember(store.objects(), &id);
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

    /// Whether the tree is known to be small (see [`checkpoint::SMALL_TREE`]): walking it
    /// costs less than watching it.
    pub fn tree_known_small(&self) -> bool {
        self.scanner().known_small()
    }

    /// Watches the tree so checkpoints re-list only what changed (see
    /// [`checkpoint::Scanner::watch`]); the reason when no watcher can start.
    pub fn watch_tree(&mut self) -> Result<(), super::watch::Gap> {
        self.scanner().watch()
    }

    /// How the last walk went (for tests and benches).
    pub fn last_walk(&self) -> checkpoint::Walked {
        self.scanner().last_walk()
    }

    /// Why checkpoints walked the whole tree though the watcher ran, oldest first.
    pub fn watch_gaps(&self) -> Vec<super::watch::Gap> {
        self.scanner().gaps().to_vec()
    }

    /// A test seam: the file watcher's queue overflows (the next checkpoint walks it all).
    pub fn inject_watch_overflow(&self) {
        if let Some(watch) = self.scanner().watcher() {
            watch.inject_overflow();
        }
    }

    /// The scanner; waits while a turn's checkpoint is being taken with it.
    /// What keeps the files a built-in tool is about to change (see [`super::keep`]).
    pub fn change_keeper(&self) -> super::keep::ChangeKeeper {
        super::keep::ChangeKeeper::new(
            self.scanner.clone(),
            self.store.objects().clone(),
            self.store.root(),
            self.touched.clone(),
        )
    }

    fn scanner(&self) -> std::sync::MutexGuard<'_, checkpoint::Scanner> {
        self.scanner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn snapshot(&mut self) -> std::io::Result<(String, Vec<String>)> {
        let (id, scan) = self.scanner().checkpoint()?;
        self.consolidate();
        Ok((id, scan.skipped.into_iter().map(|(p, _)| p).collect()))
    }

    /// Starts a user turn's checkpoint: registers the turn with the project's other brute
    /// processes and hands back the walk, to be taken on any thread ([`TurnCheckpoint::take`],
    /// concurrently with the model request) and recorded with [`Recorder::record_start`]
    /// before any tool of the turn runs. `None` when checkpoints are off.
    pub fn start_turn(&mut self) -> Option<TurnCheckpoint> {
        if self.checkpoints_off {
            return None;
        }
        // Registered before the checkpoint, so every other turn that could change the tree
        // after it knows of this one.
        self.running = match self.store.activity().start(self.id()) {
            Ok(running) => Some(running),
            Err(error) => {
                tracing::warn!(%error, "cannot register the turn with other brute processes");
                None
            }
        };
        Some(TurnCheckpoint {
            scanner: self.scanner.clone(),
        })
    }

    /// The session's first walk of the tree, to take in the background before the first turn
    /// (see [`TurnCheckpoint::warm`]); `None` when checkpoints are off.
    pub fn warm_up(&self) -> Option<TurnCheckpoint> {
        (!self.checkpoints_off).then(|| TurnCheckpoint {
            scanner: self.scanner.clone(),
        })
    }

    /// Records the checkpoint `taken` at the start of a turn (see [`Recorder::start_turn`]).
    /// A failure is said as "turn N has no checkpoint"; a tree over the budget turns
    /// checkpoints off for the session, with an error that says so once.
    pub fn record_start(&mut self, taken: Taken, prompt: &str, history_len: usize) -> std::io::Result<()> {
        let turn = self.turns.last().map_or(1, |t| t.turn + 1);
        let manifest = match taken {
            Taken::Done(manifest) => manifest,
            Taken::OverBudget(reason) => {
                // The turn records what the built-in tools change instead (see
                // `Record::Touched`); said once (the tree stays too big).
                let empty = checkpoint::save_manifest(self.store.objects(), &checkpoint::Manifest::new())?;
                self.open_turn(turn, empty, prompt, history_len, true)?;
                *self.touched.lock().unwrap_or_else(|e| e.into_inner()) = Some(Default::default());
                if std::mem::replace(&mut self.over_budget, true) {
                    return Ok(());
                }
                return Err(std::io::Error::other(over_budget_notice(&reason)));
            }
            // A full or read-only data dir: said before the turn runs, and tried again next turn.
            Taken::Failed(error) => {
                return Err(std::io::Error::new(
                    error.kind(),
                    format!("turn {turn} has no checkpoint, so /undo cannot take it back: {error}"),
                ));
            }
        };
        self.consolidate();
        self.open_turn(turn, manifest, prompt, history_len, false)
    }

    /// Records turn `turn`'s start (`manifest`) and adds the turn: a whole-tree checkpoint,
    /// or with `tools_only` a turn over the budget (see [`Record::ToolsTurn`]).
    fn open_turn(
        &mut self,
        turn: u32,
        manifest: String,
        prompt: &str,
        history_len: usize,
        tools_only: bool,
    ) -> std::io::Result<()> {
        let at_ms = now_ms();
        let (prompt, start) = (prompt.to_owned(), manifest.clone());
        self.file.append(&if tools_only {
            Record::ToolsTurn {
                turn,
                manifest,
                history_len,
                prompt: prompt.clone(),
                at_ms,
            }
        } else {
            Record::Checkpoint {
                turn,
                manifest,
                history_len,
                prompt: prompt.clone(),
                at_ms,
            }
        })?;
        self.turns.push(Turn {
            turn,
            start,
            history_len,
            prompt,
            at_ms,
            tools_only,
            ..Turn::default()
        });
        Ok(())
    }

    /// Merges the store's packs and loose objects when there are many (see
    /// `ObjectStore::consolidate`), unless another process holds the store lock (a prune):
    /// then the next checkpoint does it.
    fn consolidate(&self) {
        let objects = self.store.objects();
        if !objects.needs_consolidation() {
            return;
        }
        if let Ok(Some(_lock)) = lock::StoreLock::exclusive_now(self.store.data_dir())
            && let Err(error) = objects.consolidate()
        {
            tracing::warn!(%error, "cannot merge the store's packs");
        }
    }

    /// The checkpoint at the start of a user turn, taken here (see [`Recorder::start_turn`]
    /// for one taken beside the model request).
    pub fn begin_turn(&mut self, prompt: &str, history_len: usize) -> std::io::Result<()> {
        match self.start_turn() {
            Some(checkpoint) => {
                let taken = checkpoint.take();
                self.record_start(taken, prompt, history_len)
            }
            None => Ok(()),
        }
    }

    /// The tree as the turn left it. `work.wrote` are the paths this turn's built-in tools
    /// wrote (absolute): exactly this turn's, even when another brute turn ran at the same
    /// time; with the rest of `work`, the person's edits meanwhile are told apart (see
    /// [`super::whose`]).
    pub fn end_turn(&mut self, work: &super::whose::TurnWork) -> std::io::Result<()> {
        let running = self.running.take();
        let touched = self.touched.lock().unwrap_or_else(|e| e.into_inner()).take();
        let own = &work.wrote;
        if let Some(touched) = touched {
            return self.end_tools_only(touched, running, work);
        }
        if self.checkpoints_off || self.turns.last().is_none_or(|t| t.end.is_some()) {
            self.file.sync_later();
            return Ok(());
        }
        // The turn's start as the scanner holds it (shared, not loaded or copied again).
        let start_id = self.turns.last().map(|t| t.start.clone()).unwrap_or_default();
        let known_start = self.scanner().known_shared(&start_id);
        let start_has_git = known_start.as_deref().map(super::git_baseline::names_git);
        let (manifest, skipped) = self.snapshot()?;
        self.secure_git(&start_id, known_start.clone(), start_has_git, &manifest);
        let own = self.relative(own);
        let mut held = match running.map(|r| r.finish(&self.store.activity(), &own)) {
            Some(Ok(others)) if !others.is_empty() => self.held(&manifest, &own, &others)?,
            Some(Err(error)) => {
                tracing::warn!(%error, "cannot finish the turn's registration");
                checkpoint::Held::default()
            }
            _ => checkpoint::Held::default(),
        };
        if start_id != manifest {
            let start = match known_start {
                Some(start) => start,
                None => checkpoint::load_shared(self.store.objects(), &start_id)?,
            };
            let changes = {
                let scanner = self.scanner();
                match scanner.known_as(&manifest) {
                    Some(end) => checkpoint::diff(&start, end),
                    None => checkpoint::diff(&start, &*checkpoint::load_shared(self.store.objects(), &manifest)?),
                }
            };
            self.judge(&mut held, &changes, work);
        }
        let Some(turn) = self.turns.last_mut() else {
            return Ok(());
        };
        turn.end = Some(manifest.clone());
        turn.skipped = skipped.clone();
        turn.held = held.clone();
        self.file.append(&Record::TurnEnd {
            turn: turn.turn,
            manifest,
            skipped,
            held,
            tools_start: None,
        })?;
        self.file.sync_later();
        Ok(())
    }

    /// The end of a turn over the budget: the paths its built-in tools changed, as they were
    /// before the first change and as they are now, become the turn's start and end. What
    /// cannot be told safely is left out and listed: a file now over the size cap stays as it
    /// is; when a state could not be recorded, no file of the turn is (its undo then rewinds
    /// only the conversation), with an error that says so.
    fn end_tools_only(
        &mut self,
        touched: super::keep::Touched,
        running: Option<activity::RunningTurn>,
        work: &super::whose::TurnWork,
    ) -> std::io::Result<()> {
        let index = self.turns.len().saturating_sub(1);
        let own = self.relative(&work.wrote);
        let others = match running.map(|r| r.finish(&self.store.activity(), &own)) {
            Some(Ok(others)) => others,
            Some(Err(error)) => {
                tracing::warn!(%error, "cannot finish the turn's registration");
                Vec::new()
            }
            None => Vec::new(),
        };
        if self.turns.get(index).is_none_or(|t| !t.tools_only || t.end.is_some()) {
            return Ok(());
        }
        let failed = touched.failed.clone();
        // Only what this turn's tools wrote (a failed call made nothing), and the directories
        // above it.
        let mut created = touched.created();
        created.retain(|path| {
            own.iter()
                .any(|own| own == path || own.starts_with(&format!("{path}/")))
        });
        let (start, end, skipped) = match &failed {
            Some(_) => {
                created.clear();
                let listed = touched.paths.iter().chain(&touched.skipped).cloned().collect();
                (checkpoint::Manifest::new(), checkpoint::Manifest::new(), listed)
            }
            None => self.tools_only_states(touched.start, &created, touched.skipped)?,
        };
        created.retain(|path| !skipped.contains(path));
        self.write_touched(index, &start, created)?;
        let changes = checkpoint::diff(&start, &end);
        let objects = self.store.objects();
        if let Err(error) = super::git_baseline::secure_changes(objects, &changes) {
            tracing::warn!(%error, "cannot copy the git blobs the turn's undo needs");
        }
        let end_id = checkpoint::save_manifest(objects, &end)?;
        let mut held = if others.is_empty() {
            checkpoint::Held::default()
        } else {
            let theirs = others.iter().flat_map(|o| o.wrote.iter().cloned()).collect();
            checkpoint::Held::classify(&changes, &own, &theirs)
        };
        self.judge(&mut held, &changes, work);
        let turn = &mut self.turns[index];
        turn.end = Some(end_id.clone());
        turn.skipped = skipped.clone();
        turn.held = held.clone();
        let number = turn.turn;
        let tools_start = Some((turn.start.clone(), turn.created.clone()));
        self.file.append(&Record::TurnEnd {
            turn: number,
            manifest: end_id,
            skipped,
            held,
            tools_start,
        })?;
        self.file.sync_later();
        match failed {
            Some(why) => Err(std::io::Error::other(format!(
                "turn {number}'s file changes cannot be undone: the state of a file before it changed could not be recorded ({why})"
            ))),
            None => Ok(()),
        }
    }

    /// For a turn over the budget: records what its tools were about to change so far, when
    /// that grew since it was last recorded (a brute killed now can still undo it).
    fn record_touched(&mut self) -> std::io::Result<()> {
        let Some(index) = self
            .turns
            .len()
            .checked_sub(1)
            .filter(|i| self.turns[*i].tools_only && self.turns[*i].end.is_none())
        else {
            return Ok(());
        };
        let (start, created) = {
            let mut touched = self.touched.lock().unwrap_or_else(|e| e.into_inner());
            let Some(touched) = touched.as_mut().filter(|t| t.dirty) else {
                return Ok(());
            };
            touched.dirty = false;
            (touched.start.clone(), touched.created())
        };
        self.write_touched(index, &start, created)
    }

    /// Stores `start` and records it, with `created`, as turn `index`'s start.
    fn write_touched(
        &mut self,
        index: usize,
        start: &checkpoint::Manifest,
        created: Vec<String>,
    ) -> std::io::Result<()> {
        let id = checkpoint::save_manifest(self.store.objects(), start)?;
        let Some(turn) = self.turns.get_mut(index) else {
            return Ok(());
        };
        if turn.start == id && turn.created == created {
            return Ok(());
        }
        turn.start = id.clone();
        turn.created = created.clone();
        let number = turn.turn;
        self.file.append(&Record::Touched {
            turn: number,
            start: id,
            created,
        })
    }

    /// A turn over the budget as the tree is now: the states of its paths (`start`'s and
    /// `created`) now, with what exists but cannot be checkpointed (now over the size cap,
    /// under a directory that is a link) taken out of both and listed, so undo never deletes
    /// or overwrites it. Returns the start, the end and the list.
    fn tools_only_states(
        &self,
        mut start: checkpoint::Manifest,
        created: &[String],
        mut skipped: std::collections::BTreeSet<String>,
    ) -> std::io::Result<(checkpoint::Manifest, checkpoint::Manifest, Vec<String>)> {
        let paths: std::collections::BTreeSet<String> = start.keys().cloned().chain(created.iter().cloned()).collect();
        let mut end = self.scanner().states_of(paths.iter().map(String::as_str))?;
        for path in &paths {
            if !end.contains_key(path)
                && std::fs::symlink_metadata(super::relpath::under(self.store.root(), path)).is_ok()
            {
                skipped.insert(path.clone());
            }
        }
        start.retain(|path, _| !skipped.contains(path));
        end.retain(|path, _| !skipped.contains(path));
        Ok((start, end, skipped.into_iter().collect()))
    }

    /// Copies the git blobs the changes from `start` to `end` refer to into the store (see
    /// [`super::git_baseline::secure_changes`]); what cannot be copied stays a reference.
    /// `start` is the start manifest when the caller holds it, `start_has_git` whether it
    /// names git blobs when known.
    fn secure_git(
        &self,
        start_id: &str,
        start: Option<Arc<checkpoint::Manifest>>,
        start_has_git: Option<bool>,
        end_id: &str,
    ) {
        let objects = self.store.objects();
        let loaded_end;
        let scanner = self.scanner();
        let end = match scanner.known_as(end_id) {
            Some(end) => end,
            None => match checkpoint::load_manifest(objects, end_id) {
                Ok(end) => {
                    loaded_end = end;
                    &loaded_end
                }
                Err(_) => return,
            },
        };
        // Outside git (neither state names a git blob) there is nothing to copy.
        if start_has_git == Some(false) && !super::git_baseline::names_git(end) {
            return;
        }
        let Some(start) = start.or_else(|| checkpoint::load_shared(objects, start_id).ok()) else {
            return;
        };
        match super::git_baseline::secure_changes(objects, &checkpoint::diff(&start, end)) {
            Ok(failed) => {
                for (id, why) in failed {
                    tracing::warn!(%id, %why, "cannot copy a git blob the turn's undo needs");
                }
            }
            Err(error) => tracing::warn!(%error, "cannot copy the git blobs the turn's undo needs"),
        }
    }

    /// Adds to `held` what of a turn's `changes` the person made meanwhile (see
    /// [`super::whose`]).
    fn judge(&self, held: &mut checkpoint::Held, changes: &[checkpoint::Change], work: &super::whose::TurnWork) {
        let root = self.store.root();
        let real = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let last_writes = work
            .last_writes
            .iter()
            .filter_map(|(path, ctime)| {
                let rel = path.strip_prefix(&real).or_else(|_| path.strip_prefix(root)).ok()?;
                Some((super::relpath::spell(rel), *ctime))
            })
            .collect();
        let (person, unsure) = super::whose::persons(changes, &last_writes, &work.busy);
        if !person.is_empty() {
            tracing::info!(paths = person.len(), "the person changed files while the turn ran");
        }
        held.person = person;
        held.unsure = unsure;
    }

    /// `paths` as the checkpoints spell them: relative to the project root.
    fn relative(&self, paths: &[PathBuf]) -> Vec<String> {
        let root = self.store.root();
        let real = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let mut out: Vec<String> = paths
            .iter()
            .filter_map(|p| p.strip_prefix(&real).or_else(|_| p.strip_prefix(root)).ok())
            .map(super::relpath::spell)
            .filter(|p| !p.is_empty())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// What of the last turn's changes (start to `end`) another turn running at the same
    /// time may have made (see [`checkpoint::Held::classify`]).
    fn held(&self, end: &str, own: &[String], others: &[activity::Overlap]) -> std::io::Result<checkpoint::Held> {
        let Some(turn) = self.turns.last() else {
            return Ok(checkpoint::Held::default());
        };
        let start = checkpoint::load_manifest(self.store.objects(), &turn.start)?;
        let end = checkpoint::load_manifest(self.store.objects(), end)?;
        let theirs = others.iter().flat_map(|o| o.wrote.iter().cloned()).collect();
        let held = checkpoint::Held::classify(&checkpoint::diff(&start, &end), own, &theirs);
        if !held.is_empty() {
            let who: Vec<String> = others.iter().map(|o| format!("pid {}", o.pid)).collect();
            tracing::info!(
                shared = held.shared.len(),
                foreign = held.foreign.len(),
                "another brute turn ran at the same time ({})",
                who.join(", ")
            );
        }
        Ok(held)
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

    /// What [`Recorder::undo`] (or, with `redo`, [`Recorder::redo`]) would do now, changing
    /// nothing: for the confirmation dialog. `None` when there is nothing to move.
    pub fn preview(&mut self, redo: bool, force: bool) -> std::io::Result<Option<TurnMove>> {
        if !redo
            && force
            && let Some(index) = self.redo_index()
            && !self.turns[index].left.is_empty()
        {
            return self.move_left(index, false, true).map(Some);
        }
        let Some(index) = (if redo { self.redo_index() } else { self.undo_index() }) else {
            return Ok(None);
        };
        let turn = self.turns[index].clone();
        let (start, end) = self.span(index)?;
        let changes = checkpoint::diff(&start, &end);
        let current = self.current_of(&changes)?;
        let report = checkpoint::preview(
            self.store.root(),
            self.store.objects(),
            &changes,
            &turn.held,
            &current,
            !redo,
            force,
        )?;
        let rewound = if redo { !turn.stash.is_empty() } else { true };
        Ok(Some(TurnMove::of(turn, report, rewound)))
    }

    /// The newest turn not undone, finished or not: a turn whose end was never recorded (a
    /// crash, a damaged line) is still undoable from its checkpoint.
    /// What the last turn (or, with `whole_session`, every turn not undone) changed, as a
    /// unified diff from the checkpoints: `(title, diff, changed paths)`; `None` without a
    /// turn to show. An unfinished last turn ends at the tree as it is now.
    pub fn diff(&mut self, whole_session: bool) -> std::io::Result<Option<(String, String, usize)>> {
        let Some(last) = self.undo_index() else {
            return Ok(None);
        };
        let first = if whole_session {
            self.turns.iter().position(|t| !t.undone).unwrap_or(last)
        } else {
            last
        };
        let objects = self.store.objects().clone();
        let (before, after) = if self.turns[first..=last].iter().any(|t| t.tools_only) {
            self.changes_of(first, last)?
        } else {
            let before = checkpoint::load_manifest(&objects, &self.turns[first].start)?;
            (before, self.span(last)?.1)
        };
        let (text, files) = super::diff::render(&objects, &before, &after);
        let title = if first == last {
            format!(
                "turn {} (\"{}\")",
                self.turns[last].turn,
                first_line(&self.turns[last].prompt)
            )
        } else {
            format!(
                "turns {}–{} of this session",
                self.turns[first].turn, self.turns[last].turn
            )
        };
        Ok(Some((title, text, files)))
    }

    /// What turns `first..=last` (not undone) changed, as two manifests of only those paths:
    /// each as the first turn that changed it found it, and as the last one left it. For
    /// turns that hold only some paths (see [`Turn::tools_only`]), whose manifests cannot be
    /// compared with another turn's.
    fn changes_of(&self, first: usize, last: usize) -> std::io::Result<(checkpoint::Manifest, checkpoint::Manifest)> {
        let mut paths: std::collections::BTreeMap<
            String,
            (Option<checkpoint::FileState>, Option<checkpoint::FileState>),
        > = Default::default();
        for index in first..=last {
            let turn = &self.turns[index];
            if turn.undone {
                continue;
            }
            let (start, end) = self.span(index)?;
            for change in checkpoint::diff(&start, &end) {
                let entry = paths.entry(change.path).or_insert_with(|| (change.before, None));
                entry.1 = change.after;
            }
        }
        let mut before = checkpoint::Manifest::new();
        let mut after = checkpoint::Manifest::new();
        for (path, (was, now)) in paths {
            if let Some(was) = was {
                before.insert(path.clone(), was);
            }
            if let Some(now) = now {
                after.insert(path, now);
            }
        }
        Ok((before, after))
    }

    fn undo_index(&self) -> Option<usize> {
        self.turns.iter().rposition(|t| !t.undone)
    }

    fn redo_index(&self) -> Option<usize> {
        let active = self.turns.iter().rposition(|t| !t.undone);
        self.turns
            .iter()
            .enumerate()
            .position(|(i, t)| t.undone && active.is_none_or(|a| i > a))
    }

    /// Where turn `index` ended: its recorded end, else the start of the turn after it when
    /// both are whole-tree checkpoints (a turn over the budget holds only its own paths: its
    /// start says nothing of another turn's); `None` otherwise (the tree as it is now is its
    /// end).
    fn end_of(&self, index: usize) -> Option<String> {
        let turn = self.turns.get(index)?;
        turn.end.clone().or_else(|| {
            self.turns
                .get(index + 1)
                .filter(|next| !turn.tools_only && !next.tools_only)
                .map(|next| next.start.clone())
        })
    }

    /// Turn `index`'s start and end manifests; an unfinished turn ends at the tree as it is
    /// now (for a turn over the budget, its own paths as they are now).
    fn span(&self, index: usize) -> std::io::Result<(checkpoint::Manifest, checkpoint::Manifest)> {
        let turn = &self.turns[index];
        let objects = self.store.objects();
        let start = checkpoint::load_manifest(objects, &turn.start)?;
        if let Some(end) = self.end_of(index) {
            let end = only_made(turn, &start, checkpoint::load_manifest(objects, &end)?);
            return Ok((start, end));
        }
        if turn.tools_only {
            let (start, end, _) = self.tools_only_states(start, &turn.created, Default::default())?;
            let end = only_made(turn, &start, end);
            return Ok((start, end));
        }
        Ok((start, Arc::unwrap_or_clone(self.scanner().scan()?.manifest)))
    }

    /// Records the end of an unfinished turn (the next turn's start, or the tree now), so an
    /// undo of it can be redone.
    fn close_turn(&mut self, index: usize) -> std::io::Result<()> {
        if self.turns[index].end.is_some() {
            return Ok(());
        }
        if self.turns[index].tools_only && self.end_of(index).is_none() {
            // A turn over the budget whose brute was killed: its paths as they are now.
            let turn = self.turns[index].clone();
            let start = checkpoint::load_manifest(self.store.objects(), &turn.start)?;
            let (start, end, skipped) = self.tools_only_states(start, &turn.created, Default::default())?;
            let created = turn.created.iter().filter(|p| !skipped.contains(p)).cloned().collect();
            self.write_touched(index, &start, created)?;
            let end = checkpoint::save_manifest(self.store.objects(), &end)?;
            self.secure_git(&self.turns[index].start.clone(), Some(Arc::new(start)), None, &end);
            let turn = &mut self.turns[index];
            turn.end = Some(end.clone());
            turn.skipped = skipped.clone();
            return self.file.append(&Record::TurnEnd {
                turn: turn.turn,
                manifest: end,
                skipped,
                held: checkpoint::Held::default(),
                tools_start: Some((turn.start.clone(), turn.created.clone())),
            });
        }
        let (manifest, skipped) = match self.end_of(index) {
            Some(end) => (end, Vec::new()),
            None => self.snapshot()?,
        };
        self.secure_git(&self.turns[index].start, None, None, &manifest);
        let turn = &mut self.turns[index];
        turn.end = Some(manifest.clone());
        turn.skipped = skipped.clone();
        self.file.append(&Record::TurnEnd {
            turn: turn.turn,
            manifest,
            skipped,
            held: checkpoint::Held::default(),
            tools_start: None,
        })
    }

    /// Moves the files `turn` changed back to its start (`reverse`) or forward to its end.
    fn move_turn(
        &mut self,
        turn: &Turn,
        reverse: bool,
        force: bool,
        partial: bool,
    ) -> std::io::Result<checkpoint::MoveReport> {
        let end = turn.end.clone().unwrap_or_default();
        let start = self.manifest_of(turn, &turn.start)?;
        let end = only_made(turn, &start, self.manifest_of(turn, &end)?);
        let changes = checkpoint::diff(&start, &end);
        let current = self.current_of(&changes)?;
        checkpoint::apply(
            self.store.root(),
            self.store.objects(),
            &changes,
            &turn.held,
            &current,
            reverse,
            force,
            partial,
        )
    }

    /// The paths `changes` name as they are now: what an undo or redo compares with what
    /// the turn left, observed path by path (its cost follows the changes, not the tree).
    fn current_of(&self, changes: &[checkpoint::Change]) -> std::io::Result<checkpoint::Manifest> {
        self.scanner().states_of(changes.iter().map(|c| c.path.as_str()))
    }

    /// A turn's manifest; when it is gone, the error says which turn cannot move at all.
    fn manifest_of(&self, turn: &Turn, id: &str) -> std::io::Result<checkpoint::Manifest> {
        checkpoint::load_manifest(self.store.objects(), id).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "the checkpoint of turn {} cannot be read from {} ({e}); no file of that turn can be restored, and nothing was changed",
                    turn.turn,
                    self.store.objects().dir().display()
                ),
            )
        })
    }

    /// Undoes the newest turn not yet undone: every file it changed goes back, unless the
    /// person changed it since (then it is skipped, or overwritten with `force`). With
    /// `rewind`, the conversation goes back to before the turn too.
    /// Nothing changes when a needed content is missing, unless `partial` (see
    /// [`checkpoint::apply`]).
    pub fn undo(
        &mut self,
        history: &mut Vec<Message>,
        rewind: bool,
        force: bool,
        partial: bool,
    ) -> std::io::Result<Option<TurnMove>> {
        // Forced after an undo that left paths alone: those first (the turn is undone already).
        if force
            && let Some(index) = self.redo_index()
            && !self.turns[index].left.is_empty()
        {
            return self.force_left(index, partial).map(Some);
        }
        let Some(index) = self.undo_index() else {
            return Ok(None);
        };
        self.close_turn(index)?;
        let turn = self.turns[index].clone();
        let report = self.move_turn(&turn, true, force, partial)?;
        let moved = TurnMove::of(turn.clone(), report, false);
        let left = moved.left(&turn.held);
        // Compacted since this turn began: rewind the full conversation (the turn fitted the
        // window once), not the compacted one.
        if rewind {
            super::uncompact_for_undo(history, &self.full, &self.compacted_in, turn.turn, turn.history_len);
        }
        let rewound = rewind && turn.history_len <= history.len();
        self.file.append(&Record::Undo {
            turn: turn.turn,
            rewound,
            left: left.clone(),
        })?;
        let t = &mut self.turns[index];
        t.undone = true;
        t.left = left;
        if rewound {
            t.stash = history.split_off(turn.history_len);
            self.full = history.clone();
            self.compacted_in.retain(|c| *c < turn.turn);
        }
        self.file.sync()?;
        Ok(Some(TurnMove { rewound, ..moved }))
    }

    /// The changes of `turn` its undo left alone (see [`Turn::left`]).
    fn left_changes(&self, turn: &Turn) -> std::io::Result<Vec<checkpoint::Change>> {
        let end = turn.end.clone().unwrap_or_default();
        let start = self.manifest_of(turn, &turn.start)?;
        let end = only_made(turn, &start, self.manifest_of(turn, &end)?);
        Ok(checkpoint::diff(&start, &end)
            .into_iter()
            .filter(|c| turn.left.binary_search(&c.path).is_ok())
            .collect())
    }

    /// Takes back, forced, what the undo of turn `index` left alone (see [`Turn::left`]), or
    /// with `dry_run` says what that would do.
    fn move_left(&self, index: usize, partial: bool, dry_run: bool) -> std::io::Result<TurnMove> {
        let turn = self.turns[index].clone();
        let changes = self.left_changes(&turn)?;
        let current = self.current_of(&changes)?;
        let (root, objects) = (self.store.root(), self.store.objects());
        let report = if dry_run {
            checkpoint::preview(root, objects, &changes, &turn.held, &current, true, true)?
        } else {
            checkpoint::apply(root, objects, &changes, &turn.held, &current, true, true, partial)?
        };
        let mut moved = TurnMove::of(turn, report, false);
        moved.forced_left = true;
        Ok(moved)
    }

    /// Takes back, forced, what the undo of turn `index` left alone, and records it.
    fn force_left(&mut self, index: usize, partial: bool) -> std::io::Result<TurnMove> {
        let moved = self.move_left(index, partial, false)?;
        let turn = self.turns[index].clone();
        let left = moved.left(&turn.held);
        self.file.append(&Record::Undo {
            turn: turn.turn,
            rewound: false,
            left: left.clone(),
        })?;
        self.turns[index].left = left;
        self.file.sync()?;
        Ok(moved)
    }

    /// Re-applies the turn undone last (only while no newer turn has run since).
    pub fn redo(
        &mut self,
        history: &mut Vec<Message>,
        force: bool,
        partial: bool,
    ) -> std::io::Result<Option<TurnMove>> {
        let Some(index) = self.redo_index() else {
            return Ok(None);
        };
        let turn = self.turns[index].clone();
        let report = self.move_turn(&turn, false, force, partial)?;
        self.file.append(&Record::Redo { turn: turn.turn })?;
        let t = &mut self.turns[index];
        t.undone = false;
        t.left.clear();
        let rewound = !t.stash.is_empty();
        history.append(&mut t.stash);
        if rewound {
            self.full = history.clone();
        }
        self.file.sync()?;
        Ok(Some(TurnMove::of(turn, report, rewound)))
    }

    /// The checkpoints, newest last, with the number of paths each turn changed.
    pub fn checkpoints(&self) -> Vec<(Turn, usize)> {
        checkpoints(&self.store, &self.turns)
    }
}

/// A turn's checkpoint to take on another thread (see [`Recorder::start_turn`]).
pub struct TurnCheckpoint {
    scanner: Arc<Mutex<checkpoint::Scanner>>,
}

/// What taking a turn's checkpoint came to.
#[derive(Debug)]
pub enum Taken {
    /// Stored: the manifest's id.
    Done(String),
    /// The tree is over the checkpoint budget (why).
    OverBudget(String),
    Failed(std::io::Error),
}

impl TurnCheckpoint {
    /// Walks the tree without storing a checkpoint: every file is read and stored once, so
    /// the next checkpoint only re-stats it. A tree over the budget is remembered as such
    /// (the next checkpoint says so at once).
    pub fn warm(&self) {
        let mut scanner = self.scanner.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(error) = scanner.scan() {
            tracing::info!(%error, "the first walk of the tree failed");
        }
    }

    /// Walks the tree and stores the checkpoint. Blocking (a walk of the whole tree): call it
    /// on a blocking thread.
    pub fn take(&self) -> Taken {
        let mut scanner = self.scanner.lock().unwrap_or_else(|e| e.into_inner());
        match scanner.checkpoint() {
            Ok((id, _)) => Taken::Done(id),
            Err(error) if scanner.too_big() => Taken::OverBudget(error.to_string()),
            Err(error) => Taken::Failed(error),
        }
    }
}

/// `end` without the paths a turn over the budget did not make but its start does not hold
/// (a damaged or lost line of its record): such a path is never taken for one the turn
/// created, which undo would delete. Whole-tree turns' manifests are returned as they are.
fn only_made(turn: &Turn, start: &checkpoint::Manifest, mut end: checkpoint::Manifest) -> checkpoint::Manifest {
    if turn.tools_only {
        end.retain(|path, _| start.contains_key(path) || turn.created.contains(path));
    }
    end
}

/// The notice for a tree over the checkpoint budget: what is off, what still works.
pub fn over_budget_notice(reason: &str) -> String {
    format!(
        "turn checkpoints are off for this session: {reason}. /undo still takes back what the built-in tools change (write, patch, remove), turn by turn, but not what shell commands change; raise checkpoint_max_entries to checkpoint this tree"
    )
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// The checkpoints of `turns`, newest last, with the number of paths each turn changed (an
/// unfinished turn counts up to the next turn's start). Reads only: works on a read-only
/// data directory.
pub fn checkpoints(store: &SessionStore, turns: &[Turn]) -> Vec<(Turn, usize)> {
    // Turns are walked in order with one manifest held (see `checkpoint::Cursor`): each
    // manifest is usually stored as the changes from the one before.
    let mut cursor = checkpoint::Cursor::default();
    turns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let end = t.end.as_ref().or_else(|| {
                turns
                    .get(i + 1)
                    .filter(|next| !t.tools_only && !next.tools_only)
                    .map(|next| &next.start)
            });
            let changed = match end {
                Some(end) => cursor
                    .move_to(store.objects(), &t.start)
                    .and_then(|_| cursor.move_to(store.objects(), end))
                    .unwrap_or_else(|_| {
                        // Unreadable: start again from whatever reads next.
                        cursor = checkpoint::Cursor::default();
                        0
                    }),
                None => 0,
            };
            (t.clone(), changed)
        })
        .collect()
}
