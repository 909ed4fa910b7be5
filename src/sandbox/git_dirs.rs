//! Every `.git` below the project and the extra roots, nested repositories' included, so the
//! init can make each read-only: a `core.fsmonitor` or a hook planted in `vendor/lib/.git` runs
//! on the person's next `git status` there, outside any sandbox.
//!
//! Finding them walks the tree's directories (names and types from `readdir`, no `stat` of
//! files), which costs milliseconds in a big repository. So each root's list is kept: the first
//! confined command in a root walks it, and when a confined command ends
//! ([`command_ended`]) the list is found again on a thread of its own, while the model reads the
//! output. A command that starts meanwhile waits for that walk, never uses a list from before the
//! last command ran.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// The most directory entries one walk reads (the default checkpoint budget): past this the
/// tree is listed no further — the `.git` dirs found so far are still protected, and the
/// project's own always is — so a session started in a home directory does not wait seconds
/// for its first command.
pub const MAX_ENTRIES: usize = 500_000;

/// A root's list: `None` while a walk runs.
type Slot = Arc<(Mutex<Option<Arc<Vec<PathBuf>>>>, Condvar)>;

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
/// walked now the first time.
pub fn below(root: &Path) -> Arc<Vec<PathBuf>> {
    let slot = {
        let mut slots = slots().lock().unwrap_or_else(|e| e.into_inner());
        match slots.get(root) {
            Some(slot) => slot.clone(),
            None => {
                // Walking: a command starting meanwhile in another task waits for this list.
                let slot: Slot = Arc::new((Mutex::new(None), Condvar::new()));
                slots.insert(root.to_path_buf(), slot.clone());
                drop(slots);
                let list = find(root);
                publish(&slot, list);
                slot
            }
        }
    };
    let (lock, ready) = &*slot;
    let mut list = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(list) = list.as_ref() {
            return list.clone();
        }
        list = ready.wait(list).unwrap_or_else(|e| e.into_inner());
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
        // What was known stays known while it is still a `.git` of its own: a directory made
        // unreadable, or a tree grown past the budget, cannot hide it from the next walk.
        let known = slot.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        let (walked, walker) = (root.clone(), slot.clone());
        let refresh = move || {
            let mut list = find(&walked);
            for old in known.iter().flat_map(|k| k.iter()) {
                if std::fs::symlink_metadata(old).is_ok_and(|m| !m.file_type().is_symlink()) && !list.contains(old) {
                    list.push(old.clone());
                }
            }
            list.sort();
            publish(&walker, list);
        };
        let refresh = std::sync::Arc::new(std::sync::Mutex::new(Some(refresh)));
        let run = refresh.clone();
        let started = std::thread::Builder::new()
            .name("brute-git-dirs".into())
            .spawn(move || {
                if let Some(refresh) = run.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    refresh();
                }
            });
        if started.is_err() {
            // No thread: the list is made here rather than never.
            if let Some(refresh) = refresh.lock().unwrap_or_else(|e| e.into_inner()).take() {
                refresh();
            }
        }
    }
}

fn publish(slot: &Slot, list: Vec<PathBuf>) {
    let (lock, ready) = &**slot;
    *lock.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(list));
    ready.notify_all();
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
}
