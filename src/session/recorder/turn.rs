//! Recording a turn: its start checkpoint (taken on any thread, [`TurnCheckpoint`]), and its
//! end (the whole tree, or only what the built-in tools changed when the tree is over the
//! budget), with what other turns and the person changed meanwhile.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::session::{Record, Turn, activity, checkpoint, lock, now_ms};

use super::Recorder;

impl Recorder {
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
    pub(super) fn open_turn(
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
    pub(super) fn consolidate(&self) {
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
    /// [`crate::session::whose`]).
    pub fn end_turn(&mut self, work: &crate::session::whose::TurnWork) -> std::io::Result<()> {
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
        let start_has_git = known_start.as_deref().map(crate::session::git_baseline::names_git);
        let (manifest, skipped) = self.snapshot_after(&start_id, work)?;
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
    pub(super) fn end_tools_only(
        &mut self,
        touched: crate::session::keep::Touched,
        running: Option<activity::RunningTurn>,
        work: &crate::session::whose::TurnWork,
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
        if let Err(error) = crate::session::git_baseline::secure_changes(objects, &changes) {
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
    pub(super) fn record_touched(&mut self) -> std::io::Result<()> {
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
    pub(super) fn write_touched(
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
    pub(super) fn tools_only_states(
        &self,
        mut start: checkpoint::Manifest,
        created: &[String],
        mut skipped: std::collections::BTreeSet<String>,
    ) -> std::io::Result<(checkpoint::Manifest, checkpoint::Manifest, Vec<String>)> {
        let paths: std::collections::BTreeSet<String> =
            start.keys().map(str::to_owned).chain(created.iter().cloned()).collect();
        let mut end = self.scanner().states_of(paths.iter().map(String::as_str))?;
        for path in &paths {
            if !end.contains_key(path)
                && std::fs::symlink_metadata(crate::session::relpath::under(self.store.root(), path)).is_ok()
            {
                skipped.insert(path.to_owned());
            }
        }
        start.retain(|path, _| !skipped.contains(path));
        end.retain(|path, _| !skipped.contains(path));
        Ok((start, end, skipped.into_iter().collect()))
    }

    /// Copies the git blobs the changes from `start` to `end` refer to into the store (see
    /// [`crate::session::git_baseline::secure_changes`]); what cannot be copied stays a reference.
    /// `start` is the start manifest when the caller holds it, `start_has_git` whether it
    /// names git blobs when known.
    pub(super) fn secure_git(
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
        if start_has_git == Some(false) && !crate::session::git_baseline::names_git(end) {
            return;
        }
        let Some(start) = start.or_else(|| checkpoint::load_shared(objects, start_id).ok()) else {
            return;
        };
        match crate::session::git_baseline::secure_changes(objects, &checkpoint::diff(&start, end)) {
            Ok(failed) => {
                for (id, why) in failed {
                    tracing::warn!(%id, %why, "cannot copy a git blob the turn's undo needs");
                }
            }
            Err(error) => tracing::warn!(%error, "cannot copy the git blobs the turn's undo needs"),
        }
    }

    /// Adds to `held` what of a turn's `changes` the person made meanwhile (see
    /// [`crate::session::whose`]).
    pub(super) fn judge(
        &self,
        held: &mut checkpoint::Held,
        changes: &[checkpoint::Change],
        work: &crate::session::whose::TurnWork,
    ) {
        let root = self.store.root();
        let real = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let last_writes = work
            .last_writes
            .iter()
            .filter_map(|(path, ctime)| {
                let rel = path.strip_prefix(&real).or_else(|_| path.strip_prefix(root)).ok()?;
                Some((crate::session::relpath::spell(rel), *ctime))
            })
            .collect();
        let (person, unsure) = crate::session::whose::persons(changes, &last_writes, &work.busy);
        if !person.is_empty() {
            tracing::info!(paths = person.len(), "the person changed files while the turn ran");
        }
        held.person = person;
        held.unsure = unsure;
    }

    /// `paths` as the checkpoints spell them: relative to the project root.
    pub(super) fn relative(&self, paths: &[PathBuf]) -> Vec<String> {
        let root = self.store.root();
        let real = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let mut out: Vec<String> = paths
            .iter()
            .filter_map(|p| p.strip_prefix(&real).or_else(|_| p.strip_prefix(root)).ok())
            .map(crate::session::relpath::spell)
            .filter(|p| !p.is_empty())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// What of the last turn's changes (start to `end`) another turn running at the same
    /// time may have made (see [`checkpoint::Held::classify`]).
    pub(super) fn held(
        &self,
        end: &str,
        own: &[String],
        others: &[activity::Overlap],
    ) -> std::io::Result<checkpoint::Held> {
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

/// The notice for a tree over the checkpoint budget: what is off, what still works.
pub fn over_budget_notice(reason: &str) -> String {
    format!(
        "turn checkpoints are off for this session: {reason}. /undo still takes back what the built-in tools change (write, patch, remove), turn by turn, but not what shell commands change; raise checkpoint_max_entries to checkpoint this tree"
    )
}

#[cfg(test)]
mod tests {
    use crate::session::whose::TurnWork;
    use crate::session::{Recorder, SessionStore, checkpoint};

    /// A recorder over a project of a file in `dir/` and one in `other/`.
    fn project() -> (tempfile::TempDir, tempfile::TempDir, Recorder) {
        let data = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join("dir")).unwrap();
        std::fs::write(project.path().join("dir/tool.txt"), "before").unwrap();
        std::fs::create_dir(project.path().join("other")).unwrap();
        std::fs::write(project.path().join("other/mine.txt"), "mine before").unwrap();
        let store = SessionStore::new(data.path(), project.path());
        let recorder = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
        (data, project, recorder)
    }

    /// The changes the last turn recorded, by path.
    fn changed(recorder: &Recorder) -> Vec<String> {
        let turn = recorder.turns.last().unwrap();
        let objects = recorder.store.objects();
        let start = checkpoint::load_manifest(objects, &turn.start).unwrap();
        let end = checkpoint::load_manifest(objects, turn.end.as_ref().unwrap()).unwrap();
        checkpoint::diff(&start, &end).into_iter().map(|c| c.path).collect()
    }

    /// A turn in which only the built-in tools ran ends without walking the tree: what they
    /// wrote (a changed file, a new one in a new directory) is listed again, and a file the
    /// person saved elsewhere meanwhile is not the turn's. A turn in which a command ran walks.
    #[test]
    fn a_turn_of_built_in_tools_only_lists_what_they_wrote() {
        let (_data, project, mut recorder) = project();
        let root = project.path();
        recorder.begin_turn("tools", 0).unwrap();
        std::fs::write(root.join("dir/tool.txt"), "the tool wrote").unwrap();
        std::fs::create_dir_all(root.join("new/deeper")).unwrap();
        std::fs::write(root.join("new/deeper/made.txt"), "made").unwrap();
        std::fs::write(root.join("other/mine.txt"), "the person's save").unwrap();
        let work = TurnWork {
            wrote: vec![root.join("dir/tool.txt"), root.join("new/deeper/made.txt")],
            ..TurnWork::default()
        };
        recorder.end_turn(&work).unwrap();
        assert_eq!(recorder.last_walk(), checkpoint::Walked::Touched);
        assert_eq!(
            changed(&recorder),
            ["dir/tool.txt", "new", "new/deeper", "new/deeper/made.txt"],
            "the tools' writes, and the directories they made; not the person's save"
        );

        // Nothing written: the end is the start, and nothing is walked.
        recorder.begin_turn("answer only", 0).unwrap();
        std::fs::write(root.join("other/mine.txt"), "saved again").unwrap();
        recorder.end_turn(&TurnWork::default()).unwrap();
        assert_eq!(recorder.last_walk(), checkpoint::Walked::Touched);
        let turn = recorder.turns.last().unwrap();
        assert_eq!(turn.end.as_deref(), Some(turn.start.as_str()));

        // A command ran: the whole tree is walked, and the person's save is seen.
        recorder.begin_turn("command", 0).unwrap();
        std::fs::write(root.join("other/mine.txt"), "saved while a command ran").unwrap();
        recorder.end_turn(&TurnWork::all_by_commands()).unwrap();
        assert_eq!(recorder.last_walk(), checkpoint::Walked::Full);
        assert_eq!(changed(&recorder), ["other/mine.txt"]);
    }

    /// What a careless tool call leaves in the written paths stays out of the turn's end: a
    /// file outside the project (written through a link pointing out, or named with `..`) is
    /// not recorded, the link itself is kept as a link, and a FIFO made beside a written file
    /// is listed but never opened or recorded.
    #[test]
    fn written_paths_outside_the_project_and_fifos_stay_out_of_the_turns_end() {
        let (_data, project, mut recorder) = project();
        let root = project.path();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("theirs.txt"), "before").unwrap();
        std::os::unix::fs::symlink(outside.path().join("theirs.txt"), root.join("dir/out")).unwrap();
        recorder.begin_turn("careless", 0).unwrap();
        std::fs::write(root.join("dir/out"), "through the link").unwrap();
        std::fs::write(root.join("dir/tool.txt"), "the tool wrote").unwrap();
        let fifo = root.join("dir/pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let work = TurnWork {
            wrote: vec![
                outside.path().join("theirs.txt"),
                root.join("dir/../../escaped.txt"),
                root.join("dir/tool.txt"),
                fifo.clone(),
            ],
            ..TurnWork::default()
        };
        recorder.end_turn(&work).unwrap();
        assert_eq!(recorder.last_walk(), checkpoint::Walked::Touched);
        assert_eq!(changed(&recorder), ["dir/tool.txt"], "nothing outside, no FIFO");
        let turn = recorder.turns.last().unwrap();
        let end = checkpoint::load_manifest(recorder.store.objects(), turn.end.as_ref().unwrap()).unwrap();
        assert!(end["dir/out"].link, "the link stays a link: {:?}", end["dir/out"]);
        assert!(!end.contains_key("dir/pipe"));
        assert!(
            end.keys().all(|p| !p.contains("..") && !p.contains("theirs")),
            "{end:?}"
        );
    }

    /// A written ignore file may change what is recorded anywhere below it: the turn's end
    /// walks the tree.
    #[test]
    fn a_written_ignore_file_makes_the_turns_end_walk() {
        let (_data, project, mut recorder) = project();
        let root = project.path();
        recorder.begin_turn("ignore", 0).unwrap();
        std::fs::write(root.join(".gitignore"), "dir/\n").unwrap();
        let work = TurnWork {
            wrote: vec![root.join(".gitignore")],
            ..TurnWork::default()
        };
        recorder.end_turn(&work).unwrap();
        assert_eq!(recorder.last_walk(), checkpoint::Walked::Full);
        assert_eq!(changed(&recorder), [".gitignore", "dir", "dir/tool.txt"]);
    }

    /// A new session's first walk starts from the newest made session that checkpointed the
    /// tree, past a newer one that ended before its first turn; with none, from nothing.
    #[test]
    fn a_new_session_seeds_from_the_newest_session_that_checkpointed() {
        let (_data, _project, mut first) = project();
        let store = first.store.clone();
        let fresh =
            |store: &SessionStore| Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
        // Only sessions without a turn: nothing to seed from.
        assert!(!fresh(&store).has_history());
        first.begin_turn("one", 0).unwrap();
        first.end_turn(&TurnWork::default()).unwrap();
        // A newer session that ended before its first turn (made, and written last).
        let mut empty = store.create().unwrap();
        empty
            .append(&crate::session::Record::Message {
                message: crate::provider::Message::user("bye"),
            })
            .unwrap();
        assert!(store.ids().first() == Some(&empty.id));
        assert!(fresh(&store).has_history(), "seeded from the session that checkpointed");
        // Newer "sessions" that are a FIFO and a link pointing out are never opened: the start
        // neither blocks on the FIFO nor reads through the link.
        let dir = store.file_path(first.id());
        let dir = dir.parent().unwrap();
        let fifo = dir.join("9999999999999-ffff.jsonl");
        let fifo_c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo_c.as_ptr(), 0o600) }, 0);
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("s.jsonl"), "not a session of this store\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("s.jsonl"), dir.join("9999999999998-eeee.jsonl")).unwrap();
        assert!(!store.ids_by_creation().iter().any(|id| id.starts_with("99999")));
        // Nor by `--continue` and `--resume`, though they were written last.
        assert!(!store.ids().iter().any(|id| id.starts_with("99999")));
        assert!(store.latest().is_some_and(|id| !id.starts_with("99999")));
        assert!(!store.list().iter().any(|s| s.id.starts_with("99999")));
        assert!(fresh(&store).has_history(), "seeded past the FIFO and the link");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("s.jsonl")).unwrap(),
            "not a session of this store\n"
        );
        // The order is the order they were made in, newest first.
        let ids = store.ids_by_creation();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.reverse();
        assert_eq!(ids, sorted);
        assert!(ids.iter().any(|id| id == first.id()) && ids.len() >= 4);
    }
}
