//! Moving a tree between two checkpointed states ([`apply`], [`preview`]): undo and redo of a
//! turn's changes, where the tree still holds what the move starts from.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::held::Held;
use super::manifest::{Change, FileState, Manifest};
use super::target::Target;
use crate::session::objects::ObjectStore;

/// What happened to one path when moving between states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    pub path: String,
    /// `restored`, `deleted` or `re-created`.
    pub action: &'static str,
    pub added: usize,
    pub removed: usize,
}

/// The outcome of moving a tree between two states.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MoveReport {
    pub moved: Vec<Moved>,
    /// Paths changed since (by someone else): left alone unless forced.
    pub conflicts: Vec<String>,
    /// Paths whose stored content is gone (damaged or pruned store): left alone.
    pub missing: Vec<String>,
    /// Paths another brute turn running at the same time may have changed (see [`Held`]):
    /// left alone.
    pub concurrent: Vec<String>,
    /// Paths the person changed while the turn ran (see [`Held::person`]): kept.
    pub kept: Vec<String>,
    /// Paths taken back that changed while a command of the turn ran (see [`Held::unsure`]).
    pub unsure: Vec<String>,
}

/// A move needs contents the store no longer has. Nothing was changed: a half-applied undo
/// would leave the tree in a state no checkpoint describes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the stored content of {} is missing, so {} cannot be restored; nothing was changed (use --partial, or `/undo partial` in the UI, to restore the other files)",
    paths.join(", "),
    if paths.len() == 1 { "it" } else { "they" }
)]
pub struct MissingContent {
    pub paths: Vec<String>,
}

fn line_counts(old: &[u8], new: &[u8]) -> (usize, usize) {
    let (Ok(old), Ok(new)) = (std::str::from_utf8(old), std::str::from_utf8(new)) else {
        return (0, 0);
    };
    let diff = similar::TextDiff::from_lines(old, new);
    let mut added = 0;
    let mut removed = 0;
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// For each change, moves the path from its `after` state back to its `before` state
/// (`reverse` = undo) or forward (redo), but only where the tree still holds the state the
/// move starts from; other paths are reported as conflicts unless `force`.
///
/// Every content the move needs is checked first: if some is missing, nothing changes and the
/// error is a [`MissingContent`] naming the paths, unless `partial`, which restores the rest
/// and lists those paths in [`MoveReport::missing`].
#[allow(clippy::too_many_arguments)]
pub fn apply(
    root: &Path,
    objects: &ObjectStore,
    changes: &[Change],
    held: &Held,
    current: &Manifest,
    reverse: bool,
    force: bool,
    partial: bool,
) -> std::io::Result<MoveReport> {
    apply_or_preview(root, objects, changes, held, current, reverse, force, partial, false)
}

/// What [`apply`] would do, without changing anything (for the undo dialog; paths whose
/// content is missing are listed, not an error).
pub fn preview(
    root: &Path,
    objects: &ObjectStore,
    changes: &[Change],
    held: &Held,
    current: &Manifest,
    reverse: bool,
    force: bool,
) -> std::io::Result<MoveReport> {
    apply_or_preview(root, objects, changes, held, current, reverse, force, true, true)
}

/// A path no move can make (a damaged record: a NUL byte, `..`, a name longer than a
/// filesystem takes): why, else `None`.
fn unrestorable(rel: &str) -> Option<&'static str> {
    let bytes = crate::session::relpath::bytes(rel);
    if bytes.is_empty() || bytes.starts_with(b"/") {
        return Some("it is not a relative path");
    }
    for name in bytes.split(|b| *b == b'/') {
        if name.contains(&0) {
            return Some("its name holds a NUL byte");
        }
        if name.is_empty() || name == b"." || name == b".." {
            return Some("it is not a plain relative path");
        }
        if name.len() > 255 {
            return Some("a name in it is longer than 255 bytes");
        }
    }
    None
}

/// A move needs a path that cannot be made. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path} cannot be restored ({why}); nothing was changed")]
pub struct Unrestorable {
    pub path: String,
    pub why: &'static str,
}

#[allow(clippy::too_many_arguments)]
fn apply_or_preview(
    root: &Path,
    objects: &ObjectStore,
    changes: &[Change],
    held: &Held,
    current: &Manifest,
    reverse: bool,
    force: bool,
    partial: bool,
    dry_run: bool,
) -> std::io::Result<MoveReport> {
    let tree = Target::open(root)?;
    let mut report = MoveReport::default();
    let mut plan: Vec<(&str, Option<&FileState>)> = Vec::new();
    for change in changes {
        if held.holds(&change.path, force) {
            if Held::has(&held.person, &change.path) {
                report.kept.push(change.path.clone());
            } else {
                report.concurrent.push(change.path.clone());
            }
            continue;
        }
        let (from, to) = if reverse {
            (&change.after, &change.before)
        } else {
            (&change.before, &change.after)
        };
        let now = current.get(&change.path);
        let unchanged = match (from, now) {
            (Some(a), Some(b)) => a.same_content(b),
            (None, None) => true,
            _ => false,
        };
        if !unchanged && !force {
            report.conflicts.push(change.path.clone());
            continue;
        }
        plan.push((change.path.as_str(), to.as_ref()));
    }
    // A path under an entry that is not a directory now and that this move does not make one
    // (a link, which would carry the write out of the tree; a file that is left alone, the
    // person's say) cannot be reached: left alone too, forced or not. Leaving one alone may
    // leave what is under it alone in turn, so until nothing changes.
    // For each directory looked at: `Some(is a link)` when it is there but no directory.
    let mut kinds: BTreeMap<&str, Option<bool>> = BTreeMap::new();
    loop {
        let creating: BTreeSet<&str> = plan
            .iter()
            .filter(|(_, to)| to.is_some_and(|s| s.dir))
            .map(|(p, _)| *p)
            .collect();
        let before = plan.len();
        plan.retain(|(path, to)| {
            let mut dir = *path;
            while let Some((parent, _)) = dir.rsplit_once('/') {
                let not_a_dir = *kinds.entry(parent).or_insert_with(|| {
                    tree.lstat(parent)
                        .filter(|m| !m.is_dir())
                        .map(|m| m.file_type().is_symlink())
                });
                if let Some(link) = not_a_dir
                    && !creating.contains(parent)
                {
                    // Left alone and listed; only what is to go from under a file is not
                    // listed (it cannot be there).
                    if to.is_some() || link {
                        report.conflicts.push((*path).to_owned());
                    }
                    return false;
                }
                dir = parent;
            }
            true
        });
        if plan.len() == before {
            break;
        }
    }
    // A path that cannot be made stops the move before anything changes.
    if let Some((path, why)) = plan
        .iter()
        .find_map(|(path, _)| unrestorable(path).map(|why| (*path, why)))
    {
        return Err(std::io::Error::other(Unrestorable {
            path: tree.shown(path).display().to_string(),
            why,
        }));
    }
    // Check every content needed before anything changes.
    let missing: Vec<String> = plan
        .iter()
        .filter_map(|(path, to)| {
            to.filter(|s| !s.dir && !objects.contains(&s.id.to_string()))
                .map(|_| (*path).to_owned())
        })
        .collect();
    if !missing.is_empty() {
        if !partial {
            return Err(std::io::Error::other(MissingContent { paths: missing }));
        }
        plan.retain(|(path, _)| !missing.iter().any(|m| m == path));
        report.missing = missing;
    }
    // Directories to create first (parents before children), files next, removals last
    // (children before parents).
    let mut creates: Vec<&(&str, Option<&FileState>)> =
        plan.iter().filter(|(_, to)| to.is_some_and(|s| s.dir)).collect();
    creates.sort_by_key(|(p, _)| *p);
    for (path, to) in &creates {
        let existed = tree.is_dir(path);
        if !dry_run {
            tree.make_dir(path)?;
        }
        let action = if existed { "restored the mode of" } else { "re-created" };
        if !existed || to.is_some_and(|s| tree.dir_mode(path) != Some(s.mode & 0o7777)) {
            report.moved.push(Moved {
                path: (*path).to_owned(),
                action,
                added: 0,
                removed: 0,
            });
        }
    }
    for (path, to) in plan.iter().filter(|(_, to)| to.is_some_and(|s| !s.dir)) {
        let Some(state) = to else { continue };
        let now_link = tree.is_link(path);
        // A link's +/- counts would read what it points to: never.
        let old = if now_link { None } else { tree.bytes(path) };
        // A directory that becomes a file again: only when everything in it is to be removed
        // too (anything else — a command's new file, the person's edit — is not ours).
        if tree.is_dir(path) {
            let planned: BTreeSet<&str> = plan
                .iter()
                .filter(|(p, to)| to.is_none() && p.starts_with(&format!("{path}/")))
                .map(|(p, _)| *p)
                .collect();
            if !tree.holds_only(path, &planned) {
                report.conflicts.push((*path).to_owned());
                continue;
            }
        }
        let bytes = objects.get(&state.id.to_string())?;
        // A link that appeared on the way since the check above is refused by the write:
        // the path is left alone, as one under a link is.
        if !dry_run && changed_since(tree.write(path, state, &bytes))? {
            report.conflicts.push((*path).to_owned());
            continue;
        }
        if state.link {
            report.moved.push(Moved {
                path: (*path).to_owned(),
                action: if now_link || old.is_some() {
                    "restored the link"
                } else {
                    "re-created the link"
                },
                added: 0,
                removed: 0,
            });
            continue;
        }
        let (added, removed) = line_counts(old.as_deref().unwrap_or_default(), &bytes);
        let action = if old.is_some() { "restored" } else { "re-created" };
        report.moved.push(Moved {
            path: (*path).to_owned(),
            action,
            added,
            removed,
        });
    }
    let mut removals: Vec<&str> = plan.iter().filter(|(_, to)| to.is_none()).map(|(p, _)| *p).collect();
    removals.sort_by(|a, b| b.cmp(a));
    for path in removals {
        match tree.lstat(path) {
            Some(meta) if meta.is_dir() => {
                // Only an empty directory goes (anything left in it is not ours to delete).
                let gone = if dry_run {
                    tree.empty(path)
                } else {
                    tree.remove(path).is_ok()
                };
                if gone {
                    report.moved.push(Moved {
                        path: path.to_owned(),
                        action: "deleted",
                        added: 0,
                        removed: 0,
                    });
                }
            }
            Some(meta) => {
                // A link is removed as a link; what it points to is never read.
                let old = if meta.file_type().is_symlink() {
                    Vec::new()
                } else {
                    tree.bytes(path).unwrap_or_default()
                };
                if !dry_run && changed_since(tree.remove(path))? {
                    report.conflicts.push(path.to_owned());
                    continue;
                }
                let (_, removed) = line_counts(&old, b"");
                report.moved.push(Moved {
                    path: path.to_owned(),
                    action: "deleted",
                    added: 0,
                    removed,
                });
            }
            None => {}
        }
    }
    // Directory modes last: a read-only directory must not stop its files being restored.
    if !dry_run {
        for (path, to) in &creates {
            let Some(state) = to else {
                continue;
            };
            if tree.dir_mode(path) != Some(state.mode & 0o7777) {
                tree.chmod(path, state.mode)?;
            }
        }
    }
    report.moved.sort_by(|a, b| a.path.cmp(&b.path));
    report.unsure = report
        .moved
        .iter()
        .filter(|m| Held::has(&held.unsure, &m.path))
        .map(|m| m.path.clone())
        .collect();
    Ok(report)
}

/// Whether an operation found a link in its path that was not there when the move was planned
/// (`Ok(true)`: it changed nothing); other errors stay errors.
fn changed_since(result: std::io::Result<()>) -> std::io::Result<bool> {
    match result {
        Ok(()) => Ok(false),
        Err(e) if crate::beneath::is_changed(&e) => Ok(true),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A damaged record naming a path no filesystem takes (a NUL byte, a 300-byte name)
    /// stops the whole move before anything changes, and the error names it.
    #[test]
    fn a_path_that_cannot_be_made_stops_the_move_before_anything_changes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("a.txt"), "now\n").unwrap();
        let objects = ObjectStore::new(dir.path().join("objects"));
        let before = FileState {
            id: objects.put(b"before\n").unwrap().into(),
            size: 7,
            mode: 0o100644,
            ..Default::default()
        };
        for bad in ["bad\0zz/b".to_owned(), "n".repeat(300)] {
            let changes = [
                Change {
                    path: "a.txt".into(),
                    before: Some(before.clone()),
                    after: None,
                },
                Change {
                    path: bad.clone(),
                    before: Some(before.clone()),
                    after: None,
                },
            ];
            let error = apply(
                &root,
                &objects,
                &changes,
                &Held::default(),
                &Manifest::new(),
                true,
                true,
                false,
            )
            .unwrap_err();
            let message = error.to_string();
            assert!(
                message.contains("cannot be restored") && message.contains("nothing was changed"),
                "{message}"
            );
            assert!(!message.contains('\0'), "the path is shown escaped: {message:?}");
            assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "now\n", "{bad:?}");
            assert_eq!(std::fs::read_dir(&root).unwrap().count(), 1);
        }
    }
}
