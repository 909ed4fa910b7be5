//! Keeps what a file was before a built-in tool (`write`, `patch`, `remove`) first changes it
//! in a turn, so the turn's undo does not depend on anything brute did not copy:
//! - a file the turn's checkpoint names by its git blob (`git:<id>`) has that blob copied into
//!   brute's store (undo then survives a rewrite of git's history and `git gc --prune=now`,
//!   even when brute is killed before the turn's end, which copies the rest);
//! - in a tree over the checkpoint budget (no turn checkpoint), the file's state is recorded
//!   as the turn's baseline: the turn is then undone as a whole from these paths alone (see
//!   [`Touched`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::checkpoint::{Manifest, Scanner};
use super::objects::ObjectStore;

/// What the built-in tools changed in a turn without a checkpoint: every path they were about
/// to change (and the missing directories a write would make), and the states of those that
/// existed before the first change.
#[derive(Debug, Default)]
pub struct Touched {
    pub paths: BTreeSet<String>,
    pub start: Manifest,
    /// Paths that exist but are not checkpointed (over `checkpoint_max_file_bytes`, or a
    /// special file): undo leaves them as they are.
    pub skipped: BTreeSet<String>,
    /// A state that could not be recorded: the turn cannot be undone safely.
    pub failed: Option<String>,
    /// Grew since the session file last recorded it.
    pub dirty: bool,
}

impl Touched {
    /// The paths the tools are about to make (they did not exist before).
    pub fn created(&self) -> Vec<String> {
        self.paths
            .iter()
            .filter(|p| !self.start.contains_key(p))
            .cloned()
            .collect()
    }
}

/// Keeps files' earlier states as tools are about to change them (see the module).
#[derive(Clone)]
pub struct ChangeKeeper {
    scanner: Arc<Mutex<Scanner>>,
    objects: ObjectStore,
    /// The project root as tools' paths spell it (canonical), and as given.
    roots: [PathBuf; 2],
    /// The open turn's changes when it has no checkpoint; `None` otherwise.
    touched: Arc<Mutex<Option<Touched>>>,
}

impl ChangeKeeper {
    pub(super) fn new(
        scanner: Arc<Mutex<Scanner>>,
        objects: ObjectStore,
        root: &Path,
        touched: Arc<Mutex<Option<Touched>>>,
    ) -> Self {
        let real = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        Self {
            scanner,
            objects,
            roots: [real, root.to_path_buf()],
            touched,
        }
    }

    /// Called before a tool changes `path` (absolute); paths outside the project are not
    /// kept (the tools' guards decide whether they may change at all).
    pub fn before_change(&self, path: &Path) {
        let Some(rel) = self.roots.iter().find_map(|root| path.strip_prefix(root).ok()) else {
            return;
        };
        let rel = super::relpath::spell(rel);
        if rel.is_empty() {
            return;
        }
        self.keep_git_blobs(&rel);
        self.record_first_state(&rel);
    }

    /// Called before the session's first command (or hook, or MCP server's tool) starts: the
    /// file watcher left for it starts (see [`Scanner::watch_for_commands`]).
    pub fn before_first_command(&self) {
        self.scanner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .watch_for_commands();
    }

    /// Called after a command (or an MCP server's tool) ran: copies the git blobs the last
    /// checkpoint names for the files the file watcher saw touched since (after a fence, so
    /// every change the command made is in). Without a watcher, or when it cannot say, a
    /// small tree's files the last walk named by a blob are looked at again instead; a big
    /// tree's turn end copies them.
    pub fn after_command(&self) {
        let watch = self.scanner.lock().unwrap_or_else(|e| e.into_inner()).watcher();
        let Some(touched) = watch.and_then(|w| w.peek().ok()) else {
            let ids = self.scanner.lock().unwrap_or_else(|e| e.into_inner()).git_ids_changed();
            self.copy_blobs(&ids.unwrap_or_default());
            return;
        };
        let ids: Vec<String> = {
            let scanner = self.scanner.lock().unwrap_or_else(|e| e.into_inner());
            touched
                .iter()
                .filter_map(|path| {
                    let rel = self.roots.iter().find_map(|root| path.strip_prefix(root).ok())?;
                    Some((path, super::relpath::spell(rel)))
                })
                .flat_map(|(path, rel)| {
                    // A directory moved or removed whole may say so in one event: everything
                    // under it goes with it. (One still there keeps its files' own events.)
                    if std::fs::symlink_metadata(path).is_err() {
                        scanner.git_ids_at(&rel)
                    } else {
                        scanner.git_id(&rel).into_iter().collect()
                    }
                })
                .collect()
        };
        self.copy_blobs(&ids);
    }

    /// Copies the git blobs `ids` into the store; one that cannot be copied stays a reference
    /// (the turn's end tries again), and is logged.
    fn copy_blobs(&self, ids: &[String]) {
        if ids.is_empty() {
            return;
        }
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        match self.objects.secure_git(&ids) {
            Ok(failed) => {
                for (id, why) in failed {
                    tracing::warn!(%id, %why, "cannot copy a git blob the turn's undo needs");
                }
            }
            Err(error) => tracing::warn!(%error, "cannot copy the git blobs the turn's undo needs"),
        }
    }

    /// Copies the git blobs the last checkpoint names at `rel`, and under it when it is a
    /// directory (a recursive removal tells each entry too, but a directory replaced by a file
    /// would not). A blob that cannot be copied stays a reference (the turn's end tries again).
    fn keep_git_blobs(&self, rel: &str) {
        let ids = self.scanner.lock().unwrap_or_else(|e| e.into_inner()).git_ids_at(rel);
        self.copy_blobs(&ids);
    }

    /// In a turn without a checkpoint: records `rel` as it is now, the first time a tool is
    /// about to change it, with the directories above it that do not exist yet (a write
    /// makes them; undo removes them again).
    fn record_first_state(&self, rel: &str) {
        let mut touched = self.touched.lock().unwrap_or_else(|e| e.into_inner());
        let Some(touched) = touched.as_mut() else {
            return;
        };
        if touched.paths.contains(rel) {
            return;
        }
        let root = &self.roots[1];
        let mut new = vec![rel.to_owned()];
        let mut parent = rel.rsplit_once('/').map(|(dir, _)| dir);
        while let Some(dir) = parent.filter(|d| !d.is_empty()) {
            if std::fs::symlink_metadata(super::relpath::under(root, dir)).is_ok() {
                break;
            }
            new.push(dir.to_owned());
            parent = dir.rsplit_once('/').map(|(dir, _)| dir);
        }
        new.retain(|p| !touched.paths.contains(p) && !touched.skipped.contains(p));
        let states = self
            .scanner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .states_of(new.iter().map(String::as_str));
        let states = match states {
            Ok(states) => states,
            Err(error) => {
                tracing::warn!(%error, path = rel, "cannot record a file before it changes");
                touched.failed.get_or_insert_with(|| format!("{rel}: {error}"));
                return;
            }
        };
        touched.dirty = true;
        // A clean tracked file is recorded as git's blob: copied now, before it changes.
        let git: Vec<String> = states
            .values()
            .filter(|state| state.id.is_git())
            .map(|state| state.id.to_string())
            .collect();
        self.copy_blobs(&git);
        for path in new {
            match states.get(&path) {
                Some(state) => {
                    touched.start.insert(path.clone(), state.clone());
                    touched.paths.insert(path);
                }
                // There, but not something a checkpoint holds: never recorded as absent
                // (undo would delete it).
                None if std::fs::symlink_metadata(super::relpath::under(root, &path)).is_ok() => {
                    touched.skipped.insert(path);
                }
                None => {
                    touched.paths.insert(path);
                }
            }
        }
    }
}
