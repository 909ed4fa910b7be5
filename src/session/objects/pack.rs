//! [`PackWriter`]: many new objects written into one pack, made visible by its index only once
//! complete and synced; the pack file's lock tells a live writer from a dead one.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::fault;
use super::store::{Location, ObjectStore, hash};
use crate::session::at_path;

/// Collects new objects into one pack; nothing is visible until [`PackWriter::finish`].
pub struct PackWriter {
    pub(super) store: ObjectStore,
    pub(super) file: Option<(PathBuf, std::io::BufWriter<fault::Faulty>)>,
    pub(super) entries: Vec<(String, u64, u64)>,
    pub(super) seen: HashSet<String>,
    pub(super) offset: u64,
    /// Skip objects the store already has.
    pub(super) dedupe: bool,
}

impl PackWriter {
    /// Adds `bytes` unless the store (or this pack) has them; returns the id.
    pub fn add_bytes(&mut self, bytes: &[u8]) -> std::io::Result<String> {
        let id = hash(bytes);
        if self.seen.contains(&id) || (self.dedupe && self.store.contains_cached(&id)) {
            return Ok(id);
        }
        self.add_named(&id, bytes)?;
        Ok(id)
    }

    /// Adds `bytes` under `id` (the caller vouches for the name: a hash of another kind, such
    /// as a copied `git:` blob).
    pub(super) fn add_named(&mut self, id: &str, bytes: &[u8]) -> std::io::Result<()> {
        let id = id.to_owned();
        if self.file.is_none() {
            let (path, file) = create_pack(&self.store.pack_dir())?;
            let faulty = fault::Faulty(file, self.store.faults.clone());
            self.file = Some((path, std::io::BufWriter::new(faulty)));
        }
        if let Some((path, out)) = &mut self.file {
            out.write_all(bytes).map_err(at_path(path))?;
        }
        self.entries.push((id.clone(), self.offset, bytes.len() as u64));
        self.offset += bytes.len() as u64;
        self.seen.insert(id);
        Ok(())
    }

    /// Makes the pack durable and visible (its index is written last, atomically). On a
    /// failure (a full disk, an I/O error) the pack is removed: nothing of it is visible, and
    /// the space it took is free again.
    pub fn finish(mut self) -> std::io::Result<()> {
        let Some((path, out)) = self.file.take() else {
            return Ok(());
        };
        let entries = std::mem::take(&mut self.entries);
        let written = Self::write_index(&path, out, &entries, &self.store.faults);
        // Unlocked only now, with its index in place (or the pack gone).
        let file = match written {
            Ok(file) => file,
            Err(error) => {
                let _ = std::fs::remove_file(&path);
                return Err(error);
            }
        };
        drop(file);
        // This process knows what it just wrote: no need to read any index again.
        let mut cache = self.store.index.lock().unwrap_or_else(|e| e.into_inner());
        if cache.loaded {
            cache.read.insert(path.with_extension("idx"));
            for (id, offset, len) in entries {
                cache.objects.insert(
                    id,
                    Location {
                        pack: path.clone(),
                        offset,
                        len,
                    },
                );
            }
        }
        Ok(())
    }

    /// Syncs the pack at `path`, then writes its index beside it (synced, then renamed into
    /// place). Returns the pack's file, still locked.
    fn write_index(
        path: &Path,
        out: std::io::BufWriter<fault::Faulty>,
        entries: &[(String, u64, u64)],
        faults: &fault::Budget,
    ) -> std::io::Result<std::fs::File> {
        let file = out.into_inner().map_err(|e| at_path(path)(e.into_error()))?.0;
        file.sync_all().map_err(at_path(path))?;
        let mut index = String::with_capacity(entries.len() * 90);
        for (id, offset, len) in entries {
            index.push_str(&format!("{id} {offset} {len}\n"));
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let idx = path.with_extension("idx");
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(at_path(dir))?;
        faults
            .write_all(temp.as_file_mut(), index.as_bytes())
            .map_err(at_path(&idx))?;
        temp.as_file().sync_all().map_err(at_path(&idx))?;
        temp.persist(&idx).map_err(|e| at_path(&idx)(e.error))?;
        Ok(file)
    }
}

impl Drop for PackWriter {
    /// A pack given up before [`PackWriter::finish`] (an error while adding to it) is
    /// removed, so a failed checkpoint does not keep the disk full.
    fn drop(&mut self) {
        if let Some((path, _)) = self.file.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Takes an exclusive `flock` on `file`, waiting for it (`wait`) or not.
pub(super) fn flock(file: &std::fs::File, wait: bool) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let op = if wait {
        libc::LOCK_EX
    } else {
        libc::LOCK_EX | libc::LOCK_NB
    };
    loop {
        // SAFETY: flock on a descriptor borrowed for the call; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(true);
        }
        let error = std::io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            // A signal arrived while waiting.
            Some(libc::EINTR) => {}
            _ => return Err(error),
        }
    }
}

/// A new pack file in `dir`, locked for as long as it is written: a pack without an index
/// whose lock can be taken was left by a writer that died ([`ObjectStore::discard_partial`]).
/// A discard can unlink the file between its creation and its lock (it holds the lock while
/// it does); the file is then made again under another name.
fn create_pack(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::create_dir_all(dir).map_err(at_path(dir))?;
    let mut attempts = 0;
    loop {
        let name = format!("{}-{:08x}", crate::session::now_ms(), fastrand::u32(..));
        let path = dir.join(format!("{name}.pack"));
        let file =
            std::os::unix::fs::OpenOptionsExt::mode(std::fs::OpenOptions::new().create_new(true).write(true), 0o600)
                .open(&path)
                .map_err(at_path(&path))?;
        flock(&file, true).map_err(at_path(&path))?;
        if file.metadata().map_err(at_path(&path))?.nlink() > 0 {
            return Ok((path, file));
        }
        attempts += 1;
        if attempts >= 8 {
            return Err(std::io::Error::other(format!(
                "{}: every new pack was removed before it could be written",
                dir.display()
            )));
        }
    }
}
