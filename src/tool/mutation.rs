//! File mutations: the per-file queue that serializes calls on one file in call order, the
//! snapshot store that makes every mutation undoable, and atomic writes.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use tokio::sync::oneshot;

/// The identity of a file for queueing: its canonical path (symlinks resolved) when it
/// exists, else its absolute path with `.`/`..` folded and its parent canonicalized.
pub fn queue_key(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    let mut folded = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                folded.pop();
            }
            Component::CurDir => {}
            other => folded.push(other.as_os_str()),
        }
    }
    match (folded.parent(), folded.file_name()) {
        (Some(parent), Some(name)) => parent
            .canonicalize()
            .map(|p| p.join(name))
            .unwrap_or(folded),
        _ => folded,
    }
}

/// A FIFO of tickets per file. Tickets are taken synchronously in call order, so the order
/// of execution on one file is the order the model made the calls, whatever the scheduler does.
#[derive(Default)]
pub struct MutationQueue {
    tails: Mutex<HashMap<PathBuf, oneshot::Receiver<()>>>,
}

/// A place in a file's queue: wait for the previous holder, and hold `_done` while working.
pub struct Ticket {
    previous: Option<oneshot::Receiver<()>>,
    _done: oneshot::Sender<()>,
}

impl Ticket {
    /// Waits until every earlier call on the same file has finished.
    pub async fn wait(&mut self) {
        if let Some(previous) = self.previous.take() {
            // An error only means the previous holder is gone, which is what we wait for.
            let _ = previous.await;
        }
    }
}

impl MutationQueue {
    /// Takes the next ticket for `key`. Must be called in call order.
    pub fn ticket(&self, key: PathBuf) -> Ticket {
        let (done, next) = oneshot::channel();
        let mut tails = self.tails.lock().unwrap_or_else(|e| e.into_inner());
        let previous = tails.insert(key, next);
        Ticket {
            previous,
            _done: done,
        }
    }
}

/// The content a file had before a mutation; `None` when it did not exist.
pub type Snapshot = Option<Vec<u8>>;

/// Per-file stacks of pre-mutation snapshots, newest last.
#[derive(Default)]
pub struct Snapshots {
    stacks: Mutex<HashMap<PathBuf, Vec<Snapshot>>>,
}

impl Snapshots {
    /// Records what `path` holds now, before it is changed.
    pub fn record(&self, path: &Path) -> std::io::Result<()> {
        let before = match std::fs::read(path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let mut stacks = self.stacks.lock().unwrap_or_else(|e| e.into_inner());
        stacks.entry(queue_key(path)).or_default().push(before);
        Ok(())
    }

    /// Takes the newest snapshot of `path`, if any.
    pub fn pop(&self, path: &Path) -> Option<Snapshot> {
        let mut stacks = self.stacks.lock().unwrap_or_else(|e| e.into_inner());
        stacks.get_mut(&queue_key(path))?.pop()
    }

    /// How many snapshots exist for `path`.
    pub fn depth(&self, path: &Path) -> usize {
        let stacks = self.stacks.lock().unwrap_or_else(|e| e.into_inner());
        stacks.get(&queue_key(path)).map_or(0, Vec::len)
    }
}

/// Writes `content` to `path` atomically: a temporary file in the same directory is written,
/// synced, given the old file's permissions, then renamed over the target. Parent directories
/// are created. A symlink is written through (its target is replaced, the link kept).
pub fn write_atomic(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let permissions = std::fs::metadata(&target).ok().map(|m| m.permissions());
    let mut temp = tempfile::Builder::new()
        .prefix(".brute-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    temp.write_all(content)?;
    temp.as_file().sync_all()?;
    if let Some(permissions) = permissions {
        std::fs::set_permissions(temp.path(), permissions)?;
    }
    temp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}
