//! File mutations: the per-file queue that serializes calls on one file in call order, the
//! snapshot store that makes every mutation undoable, and atomic writes.

use std::collections::HashMap;
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
        (Some(parent), Some(name)) => parent.canonicalize().map(|p| p.join(name)).unwrap_or(folded),
        _ => folded,
    }
}

/// The identity of a directory entry itself: its parent canonicalized, its own name kept (a
/// link is not followed).
pub fn entry_key(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => parent
            .canonicalize()
            .map(|p| p.join(name))
            .unwrap_or_else(|_| queue_key(path)),
        _ => queue_key(path),
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
        Ticket { previous, _done: done }
    }
}

/// What a path held before a mutation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Snapshot {
    /// Nothing was there (undo deletes what the mutation created).
    Missing,
    /// A file with these bytes and Unix permission bits.
    File { bytes: Vec<u8>, mode: u32 },
    /// A directory with these permission bits (undo re-creates it).
    Dir { mode: u32 },
    /// A symbolic link to `target` (kept as a link, never followed).
    Symlink { target: PathBuf },
}

impl Snapshot {
    /// Captures what `path` holds now. A symlink is kept as a link (never followed); FIFOs,
    /// sockets and devices are refused, and a file over [`crate::files::MAX_FILE_BYTES`] is an
    /// error rather than an unbounded read.
    pub fn capture(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::PermissionsExt;
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Snapshot::Missing),
            Err(e) => Err(e),
            Ok(meta) if meta.is_dir() => Ok(Snapshot::Dir {
                mode: meta.permissions().mode() & 0o7777,
            }),
            Ok(meta) if meta.file_type().is_symlink() => Ok(Snapshot::Symlink {
                target: std::fs::read_link(path)?,
            }),
            Ok(meta) => {
                if let Some(kind) = crate::files::special_kind(&meta) {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("it is {kind}, not a regular file"),
                    ));
                }
                Ok(Snapshot::File {
                    bytes: crate::files::read_bounded(path, crate::files::MAX_FILE_BYTES)?,
                    mode: meta.permissions().mode() & 0o7777,
                })
            }
        }
    }

    /// Puts `path` back the way this snapshot saw it. The path's parent is resolved once and
    /// everything is done beneath it without following links ([`crate::beneath`]), so a link
    /// swapped into the path meanwhile makes the restore fail instead of writing through it.
    pub fn restore(&self, path: &Path) -> std::io::Result<()> {
        let (root, rel) = at(path)?;
        match self {
            Snapshot::Missing => remove_entry(path),
            Snapshot::Dir { mode } => {
                if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_dir()) {
                    remove_entry(path)?;
                }
                root.dir(&rel, true)?;
                // Writable for now so what belonged inside can be restored; [`Snapshot::finish`]
                // sets the exact mode once the children are back.
                root.chmod(&rel, *mode | 0o700)
            }
            Snapshot::Symlink { target } => {
                if std::fs::read_link(path).is_ok_and(|t| &t == target) {
                    return Ok(());
                }
                root.symlink(target, &rel)
            }
            Snapshot::File { bytes, mode } => {
                // A link now at the path is replaced (renamed over), not written through.
                root.write(&rel, bytes)?;
                root.chmod(&rel, *mode)
            }
        }
    }
}

impl Snapshot {
    /// Completes a restore: a directory gets its exact mode (call after its children).
    pub fn finish(&self, path: &Path) -> std::io::Result<()> {
        match self {
            Snapshot::Dir { mode } => {
                let (root, rel) = at(path)?;
                root.chmod(&rel, *mode)
            }
            _ => Ok(()),
        }
    }
}

/// `path` as a root (`/`) and the path beneath it, its parent's links resolved now: what is
/// then done there follows no link ([`crate::beneath`]).
fn at(path: &Path) -> std::io::Result<(crate::beneath::Root, PathBuf)> {
    let absolute = std::path::absolute(path)?;
    let target = match (absolute.parent(), absolute.file_name()) {
        (Some(parent), Some(name)) => super::guard::real_path(parent).join(name),
        _ => absolute,
    };
    let root = crate::beneath::Root::open(Path::new("/"))?;
    let rel = root.relative(&target)?;
    Ok((root, rel))
}

/// Restores several paths: what must exist is put back parents first, what must not exist is
/// deleted deepest first, then directories get their exact modes deepest first.
fn restore_all(items: &[(PathBuf, Snapshot)]) -> std::io::Result<Vec<bool>> {
    let mut order: Vec<&(PathBuf, Snapshot)> = items.iter().collect();
    order.sort_by(|a, b| a.0.cmp(&b.0));
    let existed = items
        .iter()
        .map(|(path, _)| std::fs::symlink_metadata(path).is_ok())
        .collect();
    for (path, snapshot) in order.iter().filter(|(_, s)| *s != Snapshot::Missing) {
        snapshot.restore(path)?;
    }
    for (path, snapshot) in order.iter().rev() {
        if *snapshot == Snapshot::Missing {
            snapshot.restore(path)?;
        } else {
            snapshot.finish(path)?;
        }
    }
    Ok(existed)
}

/// Removes whatever is at `path` without following a link (a directory must be empty).
fn remove_entry(path: &Path) -> std::io::Result<()> {
    let (root, rel) = at(path)?;
    match root.remove(&rel, false) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

struct Entry {
    op: u64,
    snapshot: Snapshot,
}

/// An undone operation: its id and the state of each path it touched before the undo.
type Undone = (u64, Vec<(PathBuf, Snapshot)>);

/// Per-path stacks of pre-mutation snapshots, newest last. Each snapshot carries the id of
/// the operation (tool call) that took it, so a recursive removal can be undone as a whole.
#[derive(Default)]
pub struct Snapshots {
    stacks: Mutex<HashMap<PathBuf, Vec<Entry>>>,
    /// What undone operations had changed, for redo: (op, path, state before the undo).
    redo: Mutex<Vec<Undone>>,
    next_op: std::sync::atomic::AtomicU64,
    /// Told of every path before a tool changes it (see [`Snapshots::set_before_change`]).
    before_change: Mutex<Option<BeforeChange>>,
    /// Told when a tool that runs commands has finished (see [`Snapshots::command_ran`]).
    after_command: Mutex<Option<AfterCommand>>,
    /// When this session's commands ran (see [`crate::busy`]).
    spans: std::sync::Arc<crate::busy::Spans>,
    /// Each built-in tool change as it ended: (op, path as snapshots key it, the path's
    /// status-change time after it, `None` when the path is gone).
    written: Mutex<Vec<(u64, PathBuf, Option<u64>)>>,
}

/// What is told of a path (as snapshots key it) just before a built-in tool changes it.
pub type BeforeChange = std::sync::Arc<dyn Fn(&Path) + Send + Sync>;

/// What is told when a tool whose file changes brute cannot know (a command, an MCP server's
/// tool) has finished.
pub type AfterCommand = std::sync::Arc<dyn Fn() + Send + Sync>;

/// What an undo did to one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    pub path: PathBuf,
    pub action: &'static str,
}

impl Snapshots {
    /// A fresh operation id (one per tool call).
    pub fn next_op(&self) -> u64 {
        self.next_op.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
    }

    /// The newest operation id handed out: operations after it are [`Snapshots::paths_since`]
    /// this mark.
    pub fn mark(&self) -> u64 {
        self.next_op.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// When this session's commands ran: tools that run commands and hooks open a span each.
    pub fn spans(&self) -> std::sync::Arc<crate::busy::Spans> {
        self.spans.clone()
    }

    /// Records that operation `op` has changed `path` (as [`Snapshots::record_for`] took it):
    /// the status-change time it left, so a later change by someone else is told apart.
    pub fn wrote(&self, path: &Path, op: u64, follows_links: bool) {
        let key = if follows_links {
            queue_key(path)
        } else {
            entry_key(path)
        };
        // Through descriptors where the path is longer than the kernel takes at once.
        let meta = std::fs::symlink_metadata(&key).or_else(|e| match key.strip_prefix("/") {
            Ok(rel) if e.raw_os_error() == Some(libc::ENAMETOOLONG) => {
                crate::beneath::Root::open(Path::new("/")).and_then(|root| root.lstat(rel))
            }
            _ => Err(e),
        });
        let ctime = meta.ok().map(|meta| {
            use std::os::unix::fs::MetadataExt;
            (meta.ctime().max(0) as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec().max(0) as u64)
        });
        self.written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((op, key, ctime));
    }

    /// For each path operations after `mark` changed, the status-change time the last of them
    /// left (`None`: it removed the path).
    pub fn last_writes_since(&self, mark: u64) -> Vec<(PathBuf, Option<u64>)> {
        let written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        let mut last: HashMap<&Path, Option<u64>> = HashMap::new();
        for (_, path, ctime) in written.iter().filter(|(op, ..)| *op > mark) {
            last.insert(path.as_path(), *ctime);
        }
        last.into_iter()
            .map(|(path, ctime)| (path.to_path_buf(), ctime))
            .collect()
    }

    /// The paths operations after `mark` changed (snapshotted first, or put back by the `undo`
    /// tool): a turn's own writes.
    pub fn paths_since(&self, mark: u64) -> Vec<PathBuf> {
        let mut paths: std::collections::BTreeSet<PathBuf> = {
            let stacks = self.stacks.lock().unwrap_or_else(|e| e.into_inner());
            stacks
                .iter()
                .filter(|(_, entries)| entries.iter().any(|e| e.op > mark))
                .map(|(path, _)| path.clone())
                .collect()
        };
        let written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        paths.extend(
            written
                .iter()
                .filter(|(op, ..)| *op > mark)
                .map(|(_, path, _)| path.clone()),
        );
        paths.into_iter().collect()
    }

    /// Records what `path` holds now, before operation `op` changes it.
    ///
    /// Writes go through a symlink to its target, so the target is what is captured, under
    /// the target's own path: an undo restores the file that changed, never turns the target
    /// into a link.
    pub fn record(&self, path: &Path, op: u64) -> std::io::Result<()> {
        let target = queue_key(path);
        self.tell(&target);
        let snapshot = Snapshot::capture(&target)?;
        self.push(target, op, snapshot);
        Ok(())
    }

    /// Records what the entry at `path` itself is (a link stays a link, not followed), keyed
    /// by that path: for removals, which delete the entry and never its target.
    pub fn record_entry(&self, path: &Path, op: u64) -> std::io::Result<()> {
        let key = entry_key(path);
        self.tell(&key);
        let snapshot = Snapshot::capture(path)?;
        self.push(key, op, snapshot);
        Ok(())
    }

    /// Sets what is told of each path before a tool changes it: the session keeps what its
    /// turn checkpoint only references (a git blob) before the file changes.
    pub fn set_before_change(&self, told: BeforeChange) {
        *self.before_change.lock().unwrap_or_else(|e| e.into_inner()) = Some(told);
    }

    /// Sets what is told after a command ran: the session keeps the git blobs of what the
    /// file watcher saw it touch.
    pub fn set_after_command(&self, told: AfterCommand) {
        *self.after_command.lock().unwrap_or_else(|e| e.into_inner()) = Some(told);
    }

    /// Says that a tool whose file changes brute cannot know has finished. Blocking (it may
    /// wait for the file watcher and copy files).
    pub fn command_ran(&self) {
        let told = self.after_command.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(told) = told {
            told();
        }
    }

    fn tell(&self, path: &Path) {
        let told = self.before_change.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(told) = told {
            told(path);
        }
    }

    /// [`Snapshots::record`] or [`Snapshots::record_entry`], as the tool changes paths.
    pub fn record_for(&self, path: &Path, op: u64, follows_links: bool) -> std::io::Result<()> {
        if follows_links {
            self.record(path, op)
        } else {
            self.record_entry(path, op)
        }
    }

    fn push(&self, key: PathBuf, op: u64, snapshot: Snapshot) {
        let mut stacks = self.stacks.lock().unwrap_or_else(|e| e.into_inner());
        stacks.entry(key).or_default().push(Entry { op, snapshot });
        drop(stacks);
        // A new change makes what was undone before impossible to redo cleanly.
        self.redo.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Reverts the newest operation (all paths it changed), remembering it for
    /// [`Snapshots::redo_last`]. `None` when nothing was recorded.
    pub fn undo_last(&self) -> std::io::Result<Option<Vec<Restored>>> {
        let mut stacks = self.stacks.lock().unwrap_or_else(|e| e.into_inner());
        let Some(op) = stacks.values().filter_map(|s| s.last().map(|e| e.op)).max() else {
            return Ok(None);
        };
        let mut paths: Vec<PathBuf> = stacks
            .iter()
            .filter(|(_, s)| s.last().is_some_and(|e| e.op == op))
            .map(|(p, _)| p.clone())
            .collect();
        paths.sort();
        let mut before = Vec::new();
        let mut items = Vec::new();
        for path in paths {
            let Some(entry) = stacks.get_mut(&path).and_then(Vec::pop) else {
                continue;
            };
            before.push((path.clone(), Snapshot::capture(&path)?));
            items.push((path, entry.snapshot));
        }
        let existed = restore_all(&items)?;
        let restored = described(items, existed);
        self.redo.lock().unwrap_or_else(|e| e.into_inner()).push((op, before));
        Ok(Some(restored))
    }

    /// Re-applies the last operation undone by [`Snapshots::undo_last`].
    pub fn redo_last(&self) -> std::io::Result<Option<Vec<Restored>>> {
        let Some((op, states)) = self.redo.lock().unwrap_or_else(|e| e.into_inner()).pop() else {
            return Ok(None);
        };
        let mut stacks = self.stacks.lock().unwrap_or_else(|e| e.into_inner());
        for (path, _) in states.iter().rev() {
            let current = Snapshot::capture(path)?;
            stacks
                .entry(path.clone())
                .or_default()
                .push(Entry { op, snapshot: current });
        }
        let existed = restore_all(&states)?;
        Ok(Some(described(states, existed)))
    }

    /// Forgets all per-call history (after a whole turn was undone or redone, the per-file
    /// stacks no longer describe the files).
    pub fn clear(&self) {
        self.stacks.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.redo.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Forgets the snapshot `op` took of `path` (the operation failed and changed nothing).
    pub fn discard(&self, path: &Path, op: u64) {
        let mut stacks = self.stacks.lock().unwrap_or_else(|e| e.into_inner());
        for key in [queue_key(path), entry_key(path)] {
            if let Some(stack) = stacks.get_mut(&key)
                && stack.last().is_some_and(|e| e.op == op)
            {
                stack.pop();
                return;
            }
        }
    }

    /// How many snapshots exist for `path`.
    pub fn depth(&self, path: &Path) -> usize {
        let stacks = self.stacks.lock().unwrap_or_else(|e| e.into_inner());
        stacks.get(&queue_key(path)).map_or(0, Vec::len)
    }

    /// Reverts the last mutation of `path`. When `path` itself has no history but paths
    /// below it do (a removed directory tree), the newest operation on them is reverted as a
    /// whole. Returns what was restored, or `None` when there is no history.
    pub fn undo(&self, path: &Path) -> std::io::Result<Option<Vec<Restored>>> {
        let key = queue_key(path);
        let mut stacks = self.stacks.lock().unwrap_or_else(|e| e.into_inner());
        let top = |p: &PathBuf| stacks.get(p).and_then(|s| s.last()).map(|e| e.op);
        // The operation to revert: the last one on this path, else the newest below it.
        let op = top(&key).or_else(|| {
            stacks
                .iter()
                .filter(|(p, _)| p.starts_with(&key))
                .filter_map(|(_, s)| s.last().map(|e| e.op))
                .max()
        });
        let Some(op) = op else { return Ok(None) };
        // Everything that operation snapshotted at or below this path, parents first.
        let mut targets: Vec<PathBuf> = stacks
            .iter()
            .filter(|(p, s)| p.starts_with(&key) && s.last().is_some_and(|e| e.op == op))
            .map(|(p, _)| p.clone())
            .collect();
        targets.sort();
        let items: Vec<(PathBuf, Snapshot)> = targets
            .into_iter()
            .filter_map(|target| {
                let entry = stacks.get_mut(&target).and_then(Vec::pop)?;
                Some((target, entry.snapshot))
            })
            .collect();
        let restored = restore_all(&items);
        // What was put back is this operation's change (its snapshot is gone from the stacks):
        // the turn's end lists it again, and undo takes it back. Recorded even when a later
        // path failed, for those put back before it.
        let op = self.next_op();
        for (path, _) in &items {
            self.wrote(path, op, false);
        }
        Ok(Some(described(items, restored?)))
    }
}

fn described(items: Vec<(PathBuf, Snapshot)>, existed: Vec<bool>) -> Vec<Restored> {
    items
        .into_iter()
        .zip(existed)
        .map(|((path, snapshot), existed)| Restored {
            action: action(&snapshot, existed),
            path,
        })
        .collect()
}

fn action(snapshot: &Snapshot, existed: bool) -> &'static str {
    match (snapshot, existed) {
        (Snapshot::Missing, _) => "deleted (it did not exist before)",
        (_, false) => "re-created",
        (_, true) => "restored",
    }
}

/// Writes `content` to `path` atomically: a temporary file in the same directory is written,
/// synced, given the old file's permissions (a new file 0666 less the umask), then renamed
/// over the target. Parent directories are created. A symlink is written through (its target
/// is replaced, the link kept). The path is resolved once, then used through directory
/// descriptors without following links ([`crate::beneath`]).
pub fn write_atomic(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let target = super::guard::real_path(&std::path::absolute(path)?);
    let root = crate::beneath::Root::open(Path::new("/"))?;
    root.write(&root.relative(&target)?, content).map(|_| ())
}
