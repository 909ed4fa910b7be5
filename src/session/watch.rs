//! Watches the project tree (inotify, through `notify`) so a checkpoint re-stats only the
//! directories touched since the last one (O(changes), not O(tree)). One watch per directory
//! the checkpoint walk recorded, added before that directory is listed. Anything that makes
//! the watcher's picture incomplete — a queue overflow, a watcher error, the watch limit
//! (`max_user_watches`) — is remembered, and the next checkpoint walks the whole tree.
//!
//! Events reach the watcher's own thread some time after the change: before the touched paths
//! are taken, a fence (a file written in a private directory watched by the same inotify
//! instance, whose events come in order) makes sure every earlier event has arrived.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use notify::Watcher as _;

/// How long a fence may take before the watcher counts as broken (then a full walk).
const FENCE_WAIT: Duration = Duration::from_secs(5);

/// Fence directories are `brute-fence-<pid>-<random>` in the temp directory.
const FENCE_PREFIX: &str = "brute-fence-";

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

/// The paths touched under a project root since they were last taken.
pub struct TreeWatch {
    watcher: Mutex<notify::INotifyWatcher>,
    shared: Arc<(Mutex<Shared>, Condvar)>,
    fence_dir: tempfile::TempDir,
    fence_seq: Mutex<u64>,
    /// The watch limit was hit once: watching is given up for the session.
    given_up: std::sync::atomic::AtomicBool,
}

impl TreeWatch {
    /// Starts a watcher (no directory watched yet; see [`TreeWatch::watch_dir`]).
    pub fn start() -> Result<Self, Gap> {
        remove_stale_fences(&std::env::temp_dir());
        let fence_dir = tempfile::Builder::new()
            .prefix(&format!("{FENCE_PREFIX}{}-", std::process::id()))
            .tempdir()
            .map_err(|e| Gap::Failed(e.to_string()))?;
        let fences = fence_dir.path().to_path_buf();
        let shared: Arc<(Mutex<Shared>, Condvar)> = Arc::default();
        let for_events = shared.clone();
        let handler = move |event: notify::Result<notify::Event>| {
            let (lock, fenced) = &*for_events;
            let mut shared = lock.lock().unwrap_or_else(|e| e.into_inner());
            match event {
                Ok(event) if event.need_rescan() => {
                    shared.gap.get_or_insert(Gap::Overflow);
                }
                // Opening and reading (the walk's own reads among them) change nothing.
                Ok(event)
                    if matches!(event.kind, notify::EventKind::Access(kind)
                        if kind != notify::event::AccessKind::Close(notify::event::AccessMode::Write)) => {}
                Ok(event) => {
                    for path in event.paths {
                        if let Ok(name) = path.strip_prefix(&fences) {
                            let seq = name.to_str().and_then(|n| n.strip_prefix('f')?.parse::<u64>().ok());
                            if let Some(seq) = seq {
                                shared.fence_seen = shared.fence_seen.max(seq);
                                fenced.notify_all();
                            }
                        } else {
                            shared.touched.insert(path);
                        }
                    }
                }
                Err(error) => {
                    shared.gap.get_or_insert(Gap::Failed(error.to_string()));
                }
            }
        };
        let mut watcher =
            notify::INotifyWatcher::new(handler, notify::Config::default()).map_err(|e| Gap::Failed(e.to_string()))?;
        watcher
            .watch(fence_dir.path(), notify::RecursiveMode::NonRecursive)
            .map_err(|e| Gap::Failed(e.to_string()))?;
        Ok(Self {
            watcher: Mutex::new(watcher),
            shared,
            fence_dir,
            fence_seq: Mutex::new(0),
            given_up: Default::default(),
        })
    }

    /// Watches `dir` (not its subdirectories). A failure leaves a gap; the watch limit
    /// gives watching up for good (every later checkpoint walks).
    pub fn watch_dir(&self, dir: &Path) {
        if self.given_up() {
            return;
        }
        let added = self
            .watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .watch(dir, notify::RecursiveMode::NonRecursive);
        let gap = match added {
            Ok(()) => return,
            Err(error) if matches!(error.kind, notify::ErrorKind::MaxFilesWatch) => {
                self.given_up.store(true, std::sync::atomic::Ordering::Relaxed);
                Gap::Limit
            }
            // Gone meanwhile: its parent's event says so.
            Err(error) if matches!(&error.kind, notify::ErrorKind::PathNotFound) => return,
            Err(error) if matches!(&error.kind, notify::ErrorKind::Io(e) if e.kind() == std::io::ErrorKind::NotFound) =>
            {
                return;
            }
            Err(error) => Gap::Failed(format!("{}: {error}", dir.display())),
        };
        self.lock().gap.get_or_insert(gap);
    }

    /// Whether the watch limit made watching stop for the session.
    pub fn given_up(&self) -> bool {
        self.given_up.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.0.lock().unwrap_or_else(|e| e.into_inner())
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
        let (lock, fenced) = &*self.shared;
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
