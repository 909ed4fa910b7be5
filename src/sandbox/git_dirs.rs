//! Every `.git` below the project and the extra roots, nested repositories' included, so the
//! init can make each read-only: a `core.fsmonitor` or a hook planted in `vendor/lib/.git` runs
//! on the person's next `git status` there, outside any sandbox.
//!
//! Finding them walks the tree's directories (names and types from `readdir`, no `stat` of
//! files), which costs milliseconds in a big repository (0.1-0.3 s at 200,000 files). So each
//! root's list is kept: it is first found on a thread of its own when a turn that may run
//! commands sends its request ([`prefetch`]), or else by the first confined command in the root,
//! and when a confined command ends ([`command_ended`]) it is found again on a thread, while the
//! model reads the output. A command that starts meanwhile waits for that walk, never uses a list
//! from before the last command ran, nor from before a built-in tool changed a path with a `.git`
//! in it below the root (approved: [`changed`]); such a change makes the next command walk again.
//!
//! Each root counts those events (its *epoch*); a walk is stamped with the epoch it started in,
//! a command takes only a list of the current epoch, and a walk that ends after a newer one
//! does not replace it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// The most directory entries one walk reads (the default checkpoint budget): past this the
/// tree is listed no further — the `.git` dirs found so far are still protected, and the
/// project's own always is — so a session started in a home directory does not wait seconds
/// for its first command.
pub const MAX_ENTRIES: usize = 500_000;

/// A root's kept list and what waits on it.
struct Kept {
    state: Mutex<State>,
    ready: Condvar,
    /// The root resolved (links, `..`), when the slot was made: [`changed`] matches a path
    /// against both forms.
    real: PathBuf,
}

#[derive(Default)]
struct State {
    /// Moves on when a confined command in the root ends ([`command_ended`]) or a built-in tool
    /// changes a path through a `.git` below it ([`changed`]).
    epoch: u64,
    /// The newest list published, with the epoch its walk started in.
    list: Option<(u64, Arc<Vec<PathBuf>>)>,
    /// The epoch of the walk under way, if one is.
    walking: Option<u64>,
}

type Slot = Arc<Kept>;

fn slots() -> &'static Mutex<HashMap<PathBuf, Slot>> {
    static SLOTS: OnceLock<Mutex<HashMap<PathBuf, Slot>>> = OnceLock::new();
    SLOTS.get_or_init(Mutex::default)
}

/// The slot of `root`, made (with nothing kept) the first time; and whether it was made now.
fn slot_of(root: &Path) -> (Slot, bool) {
    let mut slots = slots().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(slot) = slots.get(root) {
        return (slot.clone(), false);
    }
    let slot = Arc::new(Kept {
        state: Mutex::default(),
        ready: Condvar::new(),
        real: root.canonicalize().unwrap_or_else(|_| root.to_path_buf()),
    });
    slots.insert(root.to_path_buf(), slot.clone());
    (slot, true)
}

/// Every `.git` entry (directory or file) below `root`, `root/.git` included: links are not
/// followed and nothing inside a `.git` is read.
pub fn find(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    let mut entries = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(listing) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in listing.flatten() {
            entries += 1;
            if entries > MAX_ENTRIES {
                tracing::warn!(
                    "{}: more than {MAX_ENTRIES} entries; nested .git dirs beyond are not protected",
                    root.display()
                );
                return found;
            }
            let kind = entry.file_type();
            if entry.file_name() == ".git" {
                // A link named `.git` is not bound (a bind mount would follow it elsewhere).
                if kind.as_ref().is_ok_and(|t| !t.is_symlink()) {
                    found.push(entry.path());
                }
            } else if kind.is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

/// The `.git` entries below `root`: the kept list when it is of the root's current epoch,
/// else the one a walk under way finds (waited for), else walked now.
pub fn below(root: &Path) -> Arc<Vec<PathBuf>> {
    let (slot, _) = slot_of(root);
    let mut state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some((epoch, list)) = &state.list
            && *epoch == state.epoch
        {
            return list.clone();
        }
        if state.walking == Some(state.epoch) {
            state = slot.ready.wait(state).unwrap_or_else(|e| e.into_inner());
            continue;
        }
        let walk = begin(&mut state);
        drop(state);
        walk.run(&slot, root);
        state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
    }
}

/// Finds each root's list on a thread of its own the first time: called when a turn that may
/// run a command sends its request, so the first command does not walk a big tree while the
/// person waits.
pub fn prefetch(roots: &[PathBuf]) {
    for root in roots {
        let (slot, made) = slot_of(root);
        if made {
            let walk = begin(&mut slot.state.lock().unwrap_or_else(|e| e.into_inner()));
            walk.on_thread(slot, root.clone());
        }
    }
}

/// Says a built-in tool is about to change, or has changed, `path` (absolute): a path with a
/// `.git` in it (which the person approved) may make a repository, so the lists of the roots it
/// lies in are found again before the next command uses them.
pub fn changed(path: &Path) {
    if !path.components().any(|c| c.as_os_str() == ".git") {
        return;
    }
    let slots = slots().lock().unwrap_or_else(|e| e.into_inner());
    for (root, slot) in slots.iter() {
        if path.starts_with(root) || path.starts_with(&slot.real) {
            slot.state.lock().unwrap_or_else(|e| e.into_inner()).epoch += 1;
        }
    }
}

/// Says a confined command in these roots has ended: it may have made or moved a repository,
/// so each root's list is found again (on a thread; [`below`] waits for it).
pub fn command_ended(roots: &[PathBuf]) {
    for root in roots {
        let slot = match slots().lock().unwrap_or_else(|e| e.into_inner()).get(root) {
            Some(slot) => slot.clone(),
            None => continue,
        };
        let walk = {
            let mut state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
            state.epoch += 1;
            begin(&mut state)
        };
        walk.on_thread(slot, root.clone());
    }
}

/// A walk of a root, begun in `epoch`, keeping what was `known`.
struct Walk {
    epoch: u64,
    known: Option<Arc<Vec<PathBuf>>>,
}

/// Marks a walk of the current epoch under way.
fn begin(state: &mut State) -> Walk {
    state.walking = Some(state.epoch);
    Walk {
        epoch: state.epoch,
        known: state.list.as_ref().map(|(_, list)| list.clone()),
    }
}

impl Walk {
    /// Walks `root` and publishes the list, with what was known before and is still a `.git`
    /// of its own (a directory made unreadable, or a tree grown past the budget, cannot hide
    /// it from the next walk). A walk that fails to finish (a panic) still ends its turn, so no
    /// command waits for it forever.
    fn run(self, slot: &Slot, root: &Path) {
        let mut unfinished = Unfinished(Some((slot.clone(), self.epoch)));
        let mut list = find(root);
        for old in self.known.iter().flat_map(|k| k.iter()) {
            if std::fs::symlink_metadata(old).is_ok_and(|m| !m.file_type().is_symlink()) && !list.contains(old) {
                list.push(old.clone());
            }
        }
        list.sort();
        unfinished.0 = None;
        publish(slot, self.epoch, list);
    }

    /// [`Walk::run`] on a thread of its own (here, when no thread can start: the list is made
    /// rather than never).
    fn on_thread(self, slot: Slot, root: PathBuf) {
        let work = Arc::new(Mutex::new(Some((self, slot, root))));
        let run = work.clone();
        let started = std::thread::Builder::new()
            .name("brute-git-dirs".into())
            .spawn(move || {
                if let Some((walk, slot, root)) = run.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    walk.run(&slot, &root);
                }
            });
        if started.is_err()
            && let Some((walk, slot, root)) = work.lock().unwrap_or_else(|e| e.into_inner()).take()
        {
            walk.run(&slot, &root);
        }
    }
}

/// Ends a walk that did not publish (it panicked): the next caller walks again.
struct Unfinished(Option<(Slot, u64)>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some((slot, epoch)) = self.0.take() {
            let mut state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.walking == Some(epoch) {
                state.walking = None;
            }
            slot.ready.notify_all();
        }
    }
}

/// Keeps `list` unless a list of a newer walk is kept already.
fn publish(slot: &Slot, epoch: u64, list: Vec<PathBuf>) {
    let mut state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
    if state.list.as_ref().is_none_or(|(kept, _)| *kept <= epoch) {
        state.list = Some((epoch, Arc::new(list)));
    }
    if state.walking == Some(epoch) {
        state.walking = None;
    }
    slot.ready.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_git_dirs_and_files_are_found_and_links_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        for sub in [".git/hooks", "vendor/lib/.git", "a/b/c/.git", "src"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("src/.git"), "gitdir: /elsewhere\n").unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(outside.join(".git")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        let found = find(&root);
        let expected: Vec<PathBuf> = [".git", "a/b/c/.git", "src/.git", "vendor/lib/.git"]
            .iter()
            .map(|p| root.join(p))
            .collect();
        assert_eq!(found, expected);
        // Kept, then found again after a command.
        assert_eq!(*below(&root), expected);
        std::fs::create_dir_all(root.join("new/.git")).unwrap();
        assert_eq!(below(&root).len(), 4, "the kept list is used until a command ends");
        command_ended(std::slice::from_ref(&root));
        assert!(below(&root).contains(&root.join("new/.git")));
    }

    /// The list a prefetch made, waiting for its walk; `None` when none was made.
    fn kept(root: &Path) -> Option<Arc<Vec<PathBuf>>> {
        let slot = slots().lock().unwrap_or_else(|e| e.into_inner()).get(root)?.clone();
        let mut state = slot.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some((_, list)) = state.list.as_ref() {
                return Some(list.clone());
            }
            state = slot.ready.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A prefetch walks on a thread of its own and keeps the list for the first command; a
    /// `.git` a built-in tool makes below the root (named by the root's resolved path too) has
    /// the next command walk again, and one made elsewhere does not.
    #[test]
    fn a_prefetched_list_is_walked_again_after_a_tool_changed_a_git_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("p");
        std::fs::create_dir_all(real.join("vendor/lib/.git")).unwrap();
        // The root as a command names it: through a link.
        let root = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &root).unwrap();
        prefetch(std::slice::from_ref(&root));
        let expected = vec![root.join("vendor/lib/.git")];
        assert_eq!(kept(&root).as_deref(), Some(&expected));
        // Kept: a repository made by the person meanwhile waits for the next command's end.
        std::fs::create_dir_all(real.join("mine/.git")).unwrap();
        changed(&root.join("src/main.rs"));
        changed(&dir.path().join("elsewhere/.git/config"));
        assert_eq!(*below(&root), expected);
        // A tool (approved) writes into a `.git` below the root, named by its real path: the
        // next command walks.
        std::fs::create_dir_all(real.join("new/.git")).unwrap();
        changed(&real.join("new/.git/config"));
        let walked = below(&root);
        assert!(walked.contains(&root.join("new/.git")), "{walked:?}");
        assert!(walked.contains(&root.join("mine/.git")), "{walked:?}");
    }

    /// A walk that began before a command ended is not what the next command gets, even when
    /// it ends after the command's; and a newer list is not replaced by it.
    #[test]
    fn a_list_from_before_a_command_ended_is_never_used() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("a/.git")).unwrap();
        let (slot, _) = slot_of(&root);
        // A walk begins, and a command makes a repository and ends before it publishes.
        let older = begin(&mut slot.state.lock().unwrap());
        std::fs::create_dir_all(root.join("b/.git")).unwrap();
        slot.state.lock().unwrap().epoch += 1;
        publish(&slot, older.epoch, vec![root.join("a/.git")]);
        let both = vec![root.join("a/.git"), root.join("b/.git")];
        assert_eq!(*below(&root), both);
        // The older walk's list arriving late replaces nothing.
        publish(&slot, older.epoch, vec![root.join("a/.git")]);
        assert_eq!(*below(&root), both);
        // A walk that panics ends its turn: the next command walks again instead of waiting.
        slot.state.lock().unwrap().epoch += 1;
        let walk = begin(&mut slot.state.lock().unwrap());
        drop(Unfinished(Some((slot.clone(), walk.epoch))));
        assert_eq!(*below(&root), both);
    }
}
