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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// The most directory entries one walk reads (the default checkpoint budget): past this the
/// tree is listed no further — the `.git` dirs found so far are still protected, and the
/// project's own always is — so a session started in a home directory does not wait seconds
/// for its first command.
pub const MAX_ENTRIES: usize = 500_000;

/// A root's kept list and what waits on it.
#[derive(Default)]
struct Kept {
    /// The list, with the count of [`changed`] calls its walk started after: `None` while a
    /// walk runs.
    walked: Mutex<Option<(u64, Arc<Vec<PathBuf>>)>>,
    ready: Condvar,
    /// Moves on whenever a built-in tool changes a path with a `.git` in it below the root
    /// ([`changed`]): a list walked before is walked again before a command uses it.
    changes: AtomicU64,
}

type Slot = Arc<Kept>;

fn slots() -> &'static Mutex<HashMap<PathBuf, Slot>> {
    static SLOTS: OnceLock<Mutex<HashMap<PathBuf, Slot>>> = OnceLock::new();
    SLOTS.get_or_init(Mutex::default)
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

/// The `.git` entries below `root`, from the kept list (waiting for a walk in progress), or
/// walked now: the first time, or when a built-in tool changed a `.git` since the list's walk.
pub fn below(root: &Path) -> Arc<Vec<PathBuf>> {
    let slot = {
        let mut slots = slots().lock().unwrap_or_else(|e| e.into_inner());
        match slots.get(root) {
            Some(slot) => slot.clone(),
            None => {
                // Walking: a command starting meanwhile in another task waits for this list.
                let slot = Slot::default();
                slots.insert(root.to_path_buf(), slot.clone());
                drop(slots);
                walk_into(&slot, root, None);
                slot
            }
        }
    };
    let mut walked = slot.walked.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        match walked.as_ref() {
            Some((changes, list)) if *changes == slot.changes.load(Ordering::SeqCst) => return list.clone(),
            Some(_) => {
                // Older than a `.git` a built-in tool changed: walked again here, what was known
                // kept as `command_ended` keeps it.
                let known = walked.take().map(|(_, list)| list);
                drop(walked);
                walk_into(&slot, root, known);
                walked = slot.walked.lock().unwrap_or_else(|e| e.into_inner());
            }
            None => walked = slot.ready.wait(walked).unwrap_or_else(|e| e.into_inner()),
        }
    }
}

/// Finds each root's list on a thread of its own, unless it is kept or being found: called when
/// a turn that may run a command sends its request, so the first command does not walk a big
/// tree while the person waits.
pub fn prefetch(roots: &[PathBuf]) {
    for root in roots {
        let slot = {
            let mut slots = slots().lock().unwrap_or_else(|e| e.into_inner());
            if slots.contains_key(root) {
                continue;
            }
            let slot = Slot::default();
            slots.insert(root.clone(), slot.clone());
            slot
        };
        on_thread(slot, root.clone(), None);
    }
}

/// Says a built-in tool is about to change `path` (absolute): a path with a `.git` in it (which
/// the person approved) may make a repository, so the lists of the roots it lies in are walked
/// again before the next command uses them.
pub fn changed(path: &Path) {
    if !path.components().any(|c| c.as_os_str() == ".git") {
        return;
    }
    let slots = slots().lock().unwrap_or_else(|e| e.into_inner());
    for (root, slot) in slots.iter() {
        if path.starts_with(root) {
            slot.changes.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Walks `root` and publishes the list in `slot`, with what was `known` before and is still a
/// `.git` of its own (a directory made unreadable, or a tree grown past the budget, cannot hide
/// it from the next walk).
fn walk_into(slot: &Slot, root: &Path, known: Option<Arc<Vec<PathBuf>>>) {
    let changes = slot.changes.load(Ordering::SeqCst);
    let mut list = find(root);
    for old in known.iter().flat_map(|k| k.iter()) {
        if std::fs::symlink_metadata(old).is_ok_and(|m| !m.file_type().is_symlink()) && !list.contains(old) {
            list.push(old.clone());
        }
    }
    list.sort();
    publish(slot, changes, list);
}

/// [`walk_into`] on a thread of its own (here, when no thread can start: the list is made
/// rather than never).
fn on_thread(slot: Slot, root: PathBuf, known: Option<Arc<Vec<PathBuf>>>) {
    let work = Arc::new(Mutex::new(Some((slot, root, known))));
    let run = work.clone();
    let started = std::thread::Builder::new()
        .name("brute-git-dirs".into())
        .spawn(move || {
            if let Some((slot, root, known)) = run.lock().unwrap_or_else(|e| e.into_inner()).take() {
                walk_into(&slot, &root, known);
            }
        });
    if started.is_err()
        && let Some((slot, root, known)) = work.lock().unwrap_or_else(|e| e.into_inner()).take()
    {
        walk_into(&slot, &root, known);
    }
}

/// Says a confined command in these roots has ended: it may have made or moved a repository,
/// so each root's list is found again (on a thread; [`below`] waits for it).
pub fn command_ended(roots: &[PathBuf]) {
    for root in roots {
        let slot = {
            let slots = slots().lock().unwrap_or_else(|e| e.into_inner());
            match slots.get(root) {
                Some(slot) => slot.clone(),
                None => continue,
            }
        };
        // What was known stays known while it is still a `.git` of its own.
        let known = slot
            .walked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .map(|(_, list)| list);
        on_thread(slot, root.clone(), known);
    }
}

fn publish(slot: &Slot, changes: u64, list: Vec<PathBuf>) {
    *slot.walked.lock().unwrap_or_else(|e| e.into_inner()) = Some((changes, Arc::new(list)));
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
        let mut walked = slot.walked.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some((_, list)) = walked.as_ref() {
                return Some(list.clone());
            }
            walked = slot.ready.wait(walked).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A prefetch walks on a thread of its own and keeps the list for the first command; a
    /// `.git` a built-in tool makes below the root has the next command walk again, and one
    /// made elsewhere does not.
    #[test]
    fn a_prefetched_list_is_walked_again_after_a_tool_changed_a_git_below_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("vendor/lib/.git")).unwrap();
        prefetch(std::slice::from_ref(&root));
        let expected = vec![root.join("vendor/lib/.git")];
        assert_eq!(kept(&root).as_deref(), Some(&expected));
        // Kept: a repository made by the person meanwhile waits for the next command's end.
        std::fs::create_dir_all(root.join("mine/.git")).unwrap();
        changed(&root.join("src/main.rs"));
        changed(&dir.path().join("elsewhere/.git/config"));
        assert_eq!(*below(&root), expected);
        // A tool (approved) writes into a `.git` below the root: the next command walks.
        std::fs::create_dir_all(root.join("new/.git")).unwrap();
        changed(&root.join("new/.git/config"));
        let walked = below(&root);
        assert!(walked.contains(&root.join("new/.git")), "{walked:?}");
        assert!(walked.contains(&root.join("mine/.git")), "{walked:?}");
    }
}
