//! Moving the tree for undo and redo (and their previews), and the diff of a turn or the
//! whole session.

use std::sync::Arc;

use crate::provider::Message;
use crate::session::{Record, Turn, checkpoint};

use super::{Recorder, TurnMove};

impl Recorder {
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
        let (text, files) = crate::session::diff::render(&objects, &before, &after);
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
    pub(super) fn changes_of(
        &self,
        first: usize,
        last: usize,
    ) -> std::io::Result<(checkpoint::Manifest, checkpoint::Manifest)> {
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

    pub(super) fn undo_index(&self) -> Option<usize> {
        self.turns.iter().rposition(|t| !t.undone)
    }

    pub(super) fn redo_index(&self) -> Option<usize> {
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
    pub(super) fn end_of(&self, index: usize) -> Option<String> {
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
    pub(super) fn span(&self, index: usize) -> std::io::Result<(checkpoint::Manifest, checkpoint::Manifest)> {
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
    pub(super) fn close_turn(&mut self, index: usize) -> std::io::Result<()> {
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
    pub(super) fn move_turn(
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
    pub(super) fn current_of(&self, changes: &[checkpoint::Change]) -> std::io::Result<checkpoint::Manifest> {
        self.scanner().states_of(changes.iter().map(|c| c.path.as_str()))
    }

    /// A turn's manifest; when it is gone, the error says which turn cannot move at all.
    pub(super) fn manifest_of(&self, turn: &Turn, id: &str) -> std::io::Result<checkpoint::Manifest> {
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
            crate::session::uncompact_for_undo(history, &self.full, &self.compacted_in, turn.turn, turn.history_len);
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
    pub(super) fn left_changes(&self, turn: &Turn) -> std::io::Result<Vec<checkpoint::Change>> {
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
    pub(super) fn move_left(&self, index: usize, partial: bool, dry_run: bool) -> std::io::Result<TurnMove> {
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
    pub(super) fn force_left(&mut self, index: usize, partial: bool) -> std::io::Result<TurnMove> {
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
}

/// `end` without the paths a turn over the budget did not make but its start does not hold
/// (a damaged or lost line of its record): such a path is never taken for one the turn
/// created, which undo would delete. Whole-tree turns' manifests are returned as they are.
fn only_made(turn: &Turn, start: &checkpoint::Manifest, mut end: checkpoint::Manifest) -> checkpoint::Manifest {
    if turn.tools_only {
        end.retain(|path, _| start.contains_key(path) || turn.created.iter().any(|c| c == path));
    }
    end
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
