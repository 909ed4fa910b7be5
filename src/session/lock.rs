//! Coordination between brute processes sharing a data directory: pruning holds the store
//! lock exclusively while it marks and sweeps; a process seeding a new session from another
//! session's checkpoint holds it shared while it registers that checkpoint as a seed, so a
//! prune either runs before (and the seed is simply not found) or sees the seed and keeps it.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use super::at_path;

/// A held `flock` on `<data>/store.lock`, released on drop.
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

fn open(data_dir: &Path) -> std::io::Result<File> {
    std::fs::create_dir_all(data_dir).map_err(at_path(data_dir))?;
    let path = data_dir.join("store.lock");
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(at_path(&path))
}

fn flock(file: &File, op: libc::c_int) -> std::io::Result<()> {
    // SAFETY: flock on a descriptor this function borrows; no memory is involved.
    let rc = unsafe { libc::flock(file.as_raw_fd(), op) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

impl StoreLock {
    /// Waits for the lock, shared (prunes are short and bounded).
    pub fn shared(data_dir: &Path) -> std::io::Result<Self> {
        let file = open(data_dir)?;
        flock(&file, libc::LOCK_SH)?;
        Ok(Self { _file: file })
    }

    /// The lock, exclusive, if no one holds it now.
    pub fn exclusive_now(data_dir: &Path) -> std::io::Result<Option<Self>> {
        let file = open(data_dir)?;
        match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => Ok(Some(Self { _file: file })),
            Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(None),
            Err(e) => Err(at_path(&data_dir.join("store.lock"))(e)),
        }
    }
}

/// A checkpoint a running process may seed from, registered in `<data>/seeds/` until it is
/// dropped: pruning keeps every object it reaches.
#[derive(Debug)]
pub struct Seed {
    path: PathBuf,
}

/// The seeds directory.
pub fn seeds_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("seeds")
}

impl Seed {
    /// Registers `manifest` as seeded by this process (the caller holds the store lock).
    pub fn register(data_dir: &Path, manifest: &str) -> std::io::Result<Self> {
        let dir = seeds_dir(data_dir);
        std::fs::create_dir_all(&dir).map_err(at_path(&dir))?;
        let path = dir.join(format!("{}-{:08x}", std::process::id(), fastrand::u32(..)));
        std::fs::write(&path, manifest).map_err(at_path(&path))?;
        Ok(Self { path })
    }
}

impl Drop for Seed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether process `pid` is running (a seed of a dead process is stale).
pub fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
