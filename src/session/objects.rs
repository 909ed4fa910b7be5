//! A content-addressed object store: each blob is stored once under its SHA-256, so unchanged
//! files cost nothing however many checkpoints refer to them.
//!
//! Single objects are stored loose (`objects/ab/cdef…`). A checkpoint's many new blobs go
//! into one pack (`objects/pack/<name>.pack`, made visible by its `.idx` written last), since
//! creating thousands of small files is what makes a first checkpoint slow.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use super::at_path;

/// Where a packed object lives.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Location {
    pack: PathBuf,
    offset: u64,
    len: u64,
}

/// Objects under `<data dir>/objects/`.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    dir: PathBuf,
    /// Packed objects by id, loaded on first use and refreshed on a miss.
    index: Arc<Mutex<Option<HashMap<String, Location>>>>,
}

/// The hex SHA-256 of `bytes`.
pub fn hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl ObjectStore {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            index: Arc::default(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, id: &str) -> PathBuf {
        let (head, tail) = id.split_at(2.min(id.len()));
        self.dir.join(head).join(tail)
    }

    fn pack_dir(&self) -> PathBuf {
        self.dir.join("pack")
    }

    /// Reads every `.idx` (one `id offset len` line per object).
    fn read_index(&self) -> HashMap<String, Location> {
        let mut index = HashMap::new();
        let Ok(entries) = std::fs::read_dir(self.pack_dir()) else {
            return index;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "idx") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let pack = path.with_extension("pack");
            for line in text.lines() {
                let mut parts = line.split(' ');
                if let (Some(id), Some(Ok(offset)), Some(Ok(len))) =
                    (parts.next(), parts.next().map(str::parse), parts.next().map(str::parse))
                {
                    index.insert(
                        id.to_owned(),
                        Location {
                            pack: pack.clone(),
                            offset,
                            len,
                        },
                    );
                }
            }
        }
        index
    }

    fn locate(&self, id: &str) -> Option<Location> {
        let mut index = self.index.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = index.get_or_insert_with(|| self.read_index()).get(id) {
            return Some(found.clone());
        }
        // Another process (or an earlier writer) may have added a pack since.
        let fresh = self.read_index();
        let found = fresh.get(id).cloned();
        *index = Some(fresh);
        found
    }

    /// Stores `bytes` loose (if not already there) and returns its id. Written atomically.
    pub fn put(&self, bytes: &[u8]) -> std::io::Result<String> {
        let id = hash(bytes);
        if self.contains(&id) {
            return Ok(id);
        }
        let path = self.path(&id);
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir).map_err(at_path(dir))?;
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(at_path(dir))?;
        temp.write_all(bytes).map_err(at_path(temp.path()))?;
        temp.persist(&path).map_err(|e| at_path(&path)(e.error))?;
        Ok(id)
    }

    /// Starts a pack for many new objects.
    pub fn pack(&self) -> PackWriter {
        PackWriter {
            store: self.clone(),
            file: None,
            entries: Vec::new(),
            seen: HashSet::new(),
            offset: 0,
            dedupe: true,
        }
    }

    /// Reads an object.
    pub fn get(&self, id: &str) -> std::io::Result<Vec<u8>> {
        let loose = self.path(id);
        match std::fs::read(&loose) {
            Ok(bytes) => return Ok(bytes),
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(at_path(&loose)(e)),
            Err(_) => {}
        }
        let Some(at) = self.locate(id) else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("object {id} is missing from {}", self.dir.display()),
            ));
        };
        self.read_at(&at)
    }

    /// Whether the store has `id` as far as this process last read the pack indexes (read
    /// once, not again on every miss): for deduplication while packing, where a stale "no"
    /// costs a duplicate copy and a re-read of every index per new file costs seconds.
    fn contains_cached(&self, id: &str) -> bool {
        let mut index = self.index.lock().unwrap_or_else(|e| e.into_inner());
        index.get_or_insert_with(|| self.read_index()).contains_key(id) || self.path(id).exists()
    }

    pub fn contains(&self, id: &str) -> bool {
        self.locate(id).is_some() || self.path(id).exists()
    }

    /// Every stored object id with its size.
    pub fn list(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        if let Ok(heads) = std::fs::read_dir(&self.dir) {
            for head in heads.flatten().filter(|h| h.file_name() != "pack") {
                let Ok(tails) = std::fs::read_dir(head.path()) else {
                    continue;
                };
                for tail in tails
                    .flatten()
                    .filter(|t| !t.file_name().to_string_lossy().starts_with('.'))
                {
                    let size = tail.metadata().map(|m| m.len()).unwrap_or(0);
                    out.push((
                        format!(
                            "{}{}",
                            head.file_name().to_string_lossy(),
                            tail.file_name().to_string_lossy()
                        ),
                        size,
                    ));
                }
            }
        }
        out.extend(self.read_index().into_iter().map(|(id, at)| (id, at.len)));
        out
    }

    /// Keeps only the objects `keep` accepts: loose ones are deleted, packs holding any
    /// unwanted object are rewritten with the rest. Returns (objects removed, bytes freed).
    ///
    /// Anything written less than `grace` ago is left alone: another brute may be between
    /// writing a checkpoint's objects and recording the checkpoint that refers to them.
    pub fn retain(&self, keep: impl Fn(&str) -> bool, grace: Duration) -> std::io::Result<(usize, u64)> {
        let now = SystemTime::now();
        let young = |path: &Path| {
            std::fs::metadata(path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .is_none_or(|age| age < grace)
        };
        let (mut removed, mut freed) = (0, 0);
        if let Ok(heads) = std::fs::read_dir(&self.dir) {
            for head in heads.flatten().filter(|h| h.file_name() != "pack") {
                let Ok(tails) = std::fs::read_dir(head.path()) else {
                    continue;
                };
                for tail in tails.flatten() {
                    let id = format!(
                        "{}{}",
                        head.file_name().to_string_lossy(),
                        tail.file_name().to_string_lossy()
                    );
                    if !keep(&id) && !young(&tail.path()) {
                        freed += tail.metadata().map(|m| m.len()).unwrap_or(0);
                        std::fs::remove_file(tail.path())?;
                        removed += 1;
                    }
                }
            }
        }
        let mut by_pack: HashMap<PathBuf, Vec<(String, Location)>> = HashMap::new();
        for (id, at) in self.read_index() {
            by_pack.entry(at.pack.clone()).or_default().push((id, at));
        }
        for (pack, objects) in by_pack {
            if objects.iter().all(|(id, _)| keep(id)) || young(&pack) {
                continue;
            }
            // The objects are still in the old pack, so this writer must not skip them.
            let mut writer = PackWriter {
                dedupe: false,
                ..self.pack()
            };
            for (id, at) in &objects {
                if keep(id) {
                    writer.add_bytes(&self.read_at(at)?)?;
                } else {
                    removed += 1;
                    freed += at.len;
                }
            }
            writer.finish()?;
            std::fs::remove_file(pack.with_extension("idx"))?;
            std::fs::remove_file(&pack)?;
        }
        // Packs left without an index by a crash are garbage.
        if let Ok(entries) = std::fs::read_dir(self.pack_dir()) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "pack")
                    && !path.with_extension("idx").exists()
                    && !young(&path)
                {
                    std::fs::remove_file(&path)?;
                }
            }
        }
        *self.index.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Ok((removed, freed))
    }

    fn read_at(&self, at: &Location) -> std::io::Result<Vec<u8>> {
        let read = || {
            let mut file = std::fs::File::open(&at.pack)?;
            file.seek(SeekFrom::Start(at.offset))?;
            let mut bytes = vec![0; usize::try_from(at.len).map_err(std::io::Error::other)?];
            file.read_exact(&mut bytes)?;
            Ok(bytes)
        };
        read().map_err(at_path(&at.pack))
    }
}

/// Collects new objects into one pack; nothing is visible until [`PackWriter::finish`].
pub struct PackWriter {
    store: ObjectStore,
    file: Option<(PathBuf, std::io::BufWriter<std::fs::File>)>,
    entries: Vec<(String, u64, u64)>,
    seen: HashSet<String>,
    offset: u64,
    /// Skip objects the store already has.
    dedupe: bool,
}

impl PackWriter {
    /// Adds `bytes` unless the store (or this pack) has them; returns the id.
    pub fn add_bytes(&mut self, bytes: &[u8]) -> std::io::Result<String> {
        let id = hash(bytes);
        if self.seen.contains(&id) || (self.dedupe && self.store.contains_cached(&id)) {
            return Ok(id);
        }
        if self.file.is_none() {
            let dir = self.store.pack_dir();
            std::fs::create_dir_all(&dir).map_err(at_path(&dir))?;
            let name = format!("{}-{:08x}", super::now_ms(), fastrand::u32(..));
            let path = dir.join(format!("{name}.pack"));
            let file = std::os::unix::fs::OpenOptionsExt::mode(
                std::fs::OpenOptions::new().create_new(true).write(true),
                0o600,
            )
            .open(&path)
            .map_err(at_path(&path))?;
            self.file = Some((path, std::io::BufWriter::new(file)));
        }
        if let Some((path, out)) = &mut self.file {
            out.write_all(bytes).map_err(at_path(path))?;
        }
        self.entries.push((id.clone(), self.offset, bytes.len() as u64));
        self.offset += bytes.len() as u64;
        self.seen.insert(id.clone());
        Ok(id)
    }

    /// Makes the pack durable and visible (its index is written last, atomically).
    pub fn finish(mut self) -> std::io::Result<()> {
        let Some((path, out)) = self.file.take() else {
            return Ok(());
        };
        let file = out.into_inner().map_err(|e| at_path(&path)(e.into_error()))?;
        file.sync_all().map_err(at_path(&path))?;
        let mut index = String::with_capacity(self.entries.len() * 90);
        for (id, offset, len) in &self.entries {
            index.push_str(&format!("{id} {offset} {len}\n"));
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let idx = path.with_extension("idx");
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(at_path(dir))?;
        temp.write_all(index.as_bytes()).map_err(at_path(&idx))?;
        temp.as_file().sync_all().map_err(at_path(&idx))?;
        temp.persist(&idx).map_err(|e| at_path(&idx)(e.error))?;
        *self.store.index.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_and_packed_objects_round_trip_and_prune() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::new(dir.path().to_path_buf());
        let loose = store.put(b"loose").unwrap();
        let mut pack = store.pack();
        let a = pack.add_bytes(b"alpha").unwrap();
        let b = pack.add_bytes(b"beta").unwrap();
        assert_eq!(
            pack.add_bytes(b"loose").unwrap(),
            loose,
            "known objects are not packed again"
        );
        assert!(!store.contains(&a), "invisible until finished");
        pack.finish().unwrap();
        assert_eq!(store.get(&a).unwrap(), b"alpha");
        assert_eq!(store.get(&b).unwrap(), b"beta");
        assert_eq!(store.get(&loose).unwrap(), b"loose");
        assert_eq!(store.list().len(), 3);
        let (removed, _) = store
            .retain(|id| id != b && id != loose, Duration::from_secs(3600))
            .unwrap();
        assert_eq!(removed, 0, "nothing young is removed");
        let (removed, _) = store.retain(|id| id != b && id != loose, Duration::ZERO).unwrap();
        assert_eq!(removed, 2);
        assert_eq!(store.get(&a).unwrap(), b"alpha", "the pack was rewritten with the rest");
        assert!(store.get(&b).is_err() && store.get(&loose).is_err());
    }
}
