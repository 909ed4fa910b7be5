//! Watches the project tree (inotify) so a checkpoint re-stats only the directories touched
//! since the last one (O(changes), not O(tree)). One watch per directory the checkpoint walk
//! recorded, added before that directory is listed. Anything that makes the watcher's picture
//! incomplete — a queue overflow, a read error, the watch limit (`max_user_watches`) — is
//! remembered, and the next checkpoint walks the whole tree.
//!
//! Watches are added by the walk's own threads, each a plain `inotify_add_watch` call on the
//! shared descriptor: nothing waits on the reader thread, so a flood of events (a command
//! renaming files without end) cannot stall a walk. Events reach the reader thread some time
//! after the change: before the touched paths are taken, a fence (a file written in a private
//! directory watched by the same inotify instance, whose events come in order) makes sure every
//! earlier event has arrived.

use std::collections::{BTreeSet, HashMap};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use std::os::unix::ffi::OsStrExt;

use rustix::fs::inotify::{self, ReadFlags, WatchFlags};

/// How long a fence may take before the watcher counts as broken (then a full walk).
const FENCE_WAIT: Duration = Duration::from_secs(5);

/// Fence directories are `brute-fence-<pid>-<random>` in the temp directory.
const FENCE_PREFIX: &str = "brute-fence-";

/// What a watched directory reports: what changes an entry or the directory itself (opening
/// and reading, the walk's own among them, change nothing).
fn watch_flags() -> WatchFlags {
    WatchFlags::MODIFY
        | WatchFlags::ATTRIB
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::ONLYDIR
        | WatchFlags::DONT_FOLLOW
}

/// Removes the fence directories of brute processes that are gone (a killed brute cannot
/// remove its own): only directories of this user, named for a process that no longer
/// exists, holding nothing but fence files.
fn remove_stale_fences(tmp: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    // SAFETY: getuid has no preconditions.
    let me = unsafe { libc::getuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(FENCE_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
            .filter(|pid| *pid > 0)
        else {
            continue;
        };
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let gone =
            unsafe { libc::kill(pid, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        let path = entry.path();
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if !gone || !ours {
            continue;
        }
        let only_fences = std::fs::read_dir(&path).is_ok_and(|files| {
            files.flatten().all(|f| {
                f.file_name().to_str().is_some_and(|n| n.starts_with('f')) && f.file_type().is_ok_and(|t| t.is_file())
            })
        });
        if only_fences {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// Why the watcher's picture is incomplete since the last full walk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Gap {
    #[error("the file watcher's queue overflowed")]
    Overflow,
    #[error("the file watcher failed: {0}")]
    Failed(String),
    #[error("the inotify watch limit was reached (fs.inotify.max_user_watches)")]
    Limit,
    #[error("the file watcher did not answer")]
    Silent,
}

#[derive(Default)]
struct Shared {
    touched: BTreeSet<PathBuf>,
    /// The touched paths [`TreeWatch::peek`] returned already (until the next take).
    peeked: BTreeSet<PathBuf>,
    gap: Option<Gap>,
    fence_seen: u64,
}

/// What the reader thread and the watching threads share.
struct Inner {
    fd: OwnedFd,
    /// Each watch's directory, by watch descriptor.
    dirs: Mutex<HashMap<i32, PathBuf>>,
    shared: (Mutex<Shared>, Condvar),
    /// Set when the watcher is dropped: the reader thread ends at its next event.
    stop: AtomicBool,
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads events until the watcher is dropped, a batch (one `read`) at a time.
    fn read_events(&self, fence_wd: i32) {
        let mut buffer = vec![std::mem::MaybeUninit::<u8>::uninit(); 64 * 1024];
        let mut reader = inotify::Reader::new(&self.fd, &mut buffer);
        let mut paths = Vec::new();
        let mut fence = 0u64;
        let mut overflow = false;
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(rustix::io::Errno::INTR) => continue,
                Err(error) => {
                    self.lock().gap.get_or_insert(Gap::Failed(error.to_string()));
                    return;
                }
            };
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
            let flags = event.events();
            let name = event
                .file_name()
                .map(|n| std::ffi::OsStr::from_bytes(n.to_bytes()).to_owned());
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                overflow = true;
            } else if event.wd() == fence_wd {
                let seq = name
                    .as_ref()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_prefix('f')?.parse::<u64>().ok());
                fence = fence.max(seq.unwrap_or(0));
            } else {
                let mut dirs = self.dirs.lock().unwrap_or_else(|e| e.into_inner());
                if flags.contains(ReadFlags::IGNORED) {
                    dirs.remove(&event.wd());
                } else if let Some(dir) = dirs.get(&event.wd()) {
                    paths.push(match &name {
                        Some(name) => dir.join(name),
                        None => dir.clone(),
                    });
                }
            }
            if reader.is_buffer_empty() {
                // The batch is read: hand it over under one lock.
                let mut shared = self.lock();
                shared.touched.extend(paths.drain(..));
                if overflow {
                    shared.gap.get_or_insert(Gap::Overflow);
                    overflow = false;
                }
                if fence > shared.fence_seen {
                    shared.fence_seen = fence;
                    self.shared.1.notify_all();
                }
            }
        }
    }
}

/// The paths touched under a project root since they were last taken.
pub struct TreeWatch {
    inner: Arc<Inner>,
    fence_dir: tempfile::TempDir,
    fence_wd: i32,
    fence_seq: Mutex<u64>,
    /// The watch limit was hit once: watching is given up for the session.
    given_up: AtomicBool,
}

impl Drop for TreeWatch {
    fn drop(&mut self) {
        self.inner.stop.store(true, Ordering::Relaxed);
        // Removing the fence's watch queues an event: the reader thread wakes and ends.
        let _ = inotify::remove_watch(&self.inner.fd, self.fence_wd);
    }
}

impl TreeWatch {
    /// Starts a watcher (no directory watched yet; see [`TreeWatch::watch_dir`]).
    pub fn start() -> Result<Self, Gap> {
        remove_stale_fences(&std::env::temp_dir());
        let fence_dir = tempfile::Builder::new()
            .prefix(&format!("{FENCE_PREFIX}{}-", std::process::id()))
            .tempdir()
            .map_err(|e| Gap::Failed(e.to_string()))?;
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC).map_err(|e| Gap::Failed(e.to_string()))?;
        let fence_wd = inotify::add_watch(&fd, fence_dir.path(), WatchFlags::CLOSE_WRITE | WatchFlags::ONLYDIR)
            .map_err(|e| Gap::Failed(format!("{}: {e}", fence_dir.path().display())))?;
        let inner = Arc::new(Inner {
            fd,
            dirs: Mutex::default(),
            shared: Default::default(),
            stop: AtomicBool::new(false),
        });
        let reader = inner.clone();
        std::thread::Builder::new()
            .name("brute-watch".into())
            .spawn(move || reader.read_events(fence_wd))
            .map_err(|e| Gap::Failed(e.to_string()))?;
        Ok(Self {
            inner,
            fence_dir,
            fence_wd,
            fence_seq: Mutex::new(0),
            given_up: AtomicBool::new(false),
        })
    }

    /// Watches `dir` (not its subdirectories). A failure leaves a gap; the watch limit
    /// gives watching up for good (every later checkpoint walks).
    pub fn watch_dir(&self, dir: &Path) {
        if self.given_up() {
            return;
        }
        // Held across the call: an event of the new watch waits for its directory.
        let mut dirs = self.inner.dirs.lock().unwrap_or_else(|e| e.into_inner());
        let gap = match inotify::add_watch(&self.inner.fd, dir, watch_flags()) {
            Ok(wd) => {
                dirs.insert(wd, dir.to_path_buf());
                return;
            }
            Err(rustix::io::Errno::NOSPC) => {
                self.given_up.store(true, Ordering::Relaxed);
                Gap::Limit
            }
            // Gone meanwhile (or no directory now): its parent's event says so.
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => return,
            Err(error) => Gap::Failed(format!("{}: {error}", dir.display())),
        };
        drop(dirs);
        self.lock().gap.get_or_insert(gap);
    }

    /// Whether the watch limit made watching stop for the session.
    pub fn given_up(&self) -> bool {
        self.given_up.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.inner.lock()
    }

    /// Forgets what was touched and any gap: a full walk starts now and sees the tree as it
    /// is. Events still on their way only add paths to re-stat.
    pub fn reset(&self) {
        let mut shared = self.lock();
        shared.touched.clear();
        shared.peeked.clear();
        if shared.gap != Some(Gap::Limit) {
            shared.gap = None;
        }
    }

    /// Every path touched since the last take (after a fence: every change made before
    /// this call is in), or why the watcher cannot say.
    pub fn take(&self) -> Result<BTreeSet<PathBuf>, Gap> {
        self.fence()?;
        let mut shared = self.lock();
        if let Some(gap) = shared.gap.clone() {
            return Err(gap);
        }
        shared.peeked.clear();
        Ok(std::mem::take(&mut shared.touched))
    }

    /// The paths touched since the last take that no peek returned yet (after a fence), the
    /// touched set kept for the next take.
    pub fn peek(&self) -> Result<Vec<PathBuf>, Gap> {
        self.fence()?;
        let mut shared = self.lock();
        let Shared { touched, peeked, .. } = &mut *shared;
        let new: Vec<PathBuf> = touched.difference(peeked).cloned().collect();
        peeked.extend(new.iter().cloned());
        Ok(new)
    }

    /// Waits until the watcher has read every event queued before now.
    fn fence(&self) -> Result<(), Gap> {
        let seq = {
            let mut seq = self.fence_seq.lock().unwrap_or_else(|e| e.into_inner());
            *seq += 1;
            *seq
        };
        let path = self.fence_dir.path().join(format!("f{seq}"));
        std::fs::write(&path, b"").map_err(|e| Gap::Failed(format!("{}: {e}", path.display())))?;
        let (lock, fenced) = &self.inner.shared;
        let shared = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (shared, timeout) = fenced
            .wait_timeout_while(shared, FENCE_WAIT, |s| s.fence_seen < seq && s.gap.is_none())
            .unwrap_or_else(|e| e.into_inner());
        let silent = timeout.timed_out() && shared.fence_seen < seq;
        drop(shared);
        let _ = std::fs::remove_file(&path);
        if silent {
            self.lock().gap.get_or_insert(Gap::Silent);
            return Err(Gap::Silent);
        }
        Ok(())
    }

    /// A test seam: as if the kernel's event queue had overflowed (the events so far are
    /// lost).
    pub fn inject_overflow(&self) {
        let mut shared = self.lock();
        shared.touched.clear();
        shared.gap.get_or_insert(Gap::Overflow);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A killed brute's fence directory goes at the next start; a live process's, and a
    /// directory that holds anything but fence files, stay.
    #[test]
    fn fence_directories_of_processes_that_are_gone_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let make = |name: &str, file: &str| {
            let dir = tmp.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join(file), "").unwrap();
            dir
        };
        let stale = make(&format!("{FENCE_PREFIX}{dead}-abc"), "f1");
        let live = make(&format!("{FENCE_PREFIX}{}-def", std::process::id()), "f2");
        let other = make(&format!("{FENCE_PREFIX}{dead}-ghi"), "notes.txt");
        remove_stale_fences(tmp.path());
        assert!(!stale.exists());
        assert!(live.exists());
        assert!(other.exists());
    }
}
