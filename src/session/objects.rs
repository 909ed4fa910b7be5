//! A content-addressed object store: each blob is stored once under its SHA-256, so unchanged
//! files cost nothing however many checkpoints refer to them.
//!
//! Single objects are stored loose (`objects/ab/cdef…`). A checkpoint's many new blobs go
//! into one pack (`objects/pack/<name>.pack`, made visible by its `.idx` written last), since
//! creating thousands of small files is what makes a first checkpoint slow. Past
//! [`MAX_PACKS`] packs or [`MAX_LOOSE`] loose objects, the smallest packs and the loose
//! objects are merged into one ([`ObjectStore::consolidate`]), so a store that has seen
//! thousands of turns still has a handful of packs of geometrically growing sizes, and a
//! lookup is one hash-map probe (a miss reads only the indexes it has not read yet).
//!
//! A full disk (ENOSPC) or an I/O error (EIO) at any write costs that write only: a file is
//! made visible (renamed into place, or its pack's index written) only once it is complete
//! and synced, a pack that cannot be finished is removed at once, and a pack left without
//! its index by a killed writer is discarded when a session next opens the store
//! ([`ObjectStore::discard_partial`]; the writer's `flock` tells a live writer from a dead
//! one). An index line that is cut, or that points past the end of its pack, is ignored: the
//! object counts as absent and the next checkpoint stores it again.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// More packs than this are merged (see [`ObjectStore::consolidate`]).
pub const MAX_PACKS: usize = 16;
/// This many loose objects are merged into a pack (see [`ObjectStore::consolidate`]): each
/// is a file of its own, a disk block for a few hundred bytes.
pub const MAX_LOOSE: usize = 64;
/// A merge leaves at most this many packs besides the merged one.
const KEPT_PACKS: usize = MAX_PACKS - 4;

/// Packed objects by id, and which `.idx` files they came from.
#[derive(Debug, Default)]
struct Index {
    objects: HashMap<String, Location>,
    read: HashSet<PathBuf>,
    loaded: bool,
}

/// Objects under `<data dir>/objects/`.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    dir: PathBuf,
    /// Packed objects by id, loaded on first use; a miss reads the indexes added since.
    index: Arc<Mutex<Index>>,
    /// Loose objects this process wrote since its last merge.
    loose_written: Arc<AtomicUsize>,
    /// Where `git:` ids not copied into the store are read from: the project's repository.
    git: Option<Arc<super::git_baseline::GitObjects>>,
    /// Writes a test makes fail (see [`fault`]).
    faults: fault::Budget,
}

/// The hex SHA-256 of `bytes`.
pub fn hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `id` is a whole object id: 64 hex digits, or a copied git blob's `git:` and 40.
fn is_id(id: &str) -> bool {
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    hex(id, 64) || id.strip_prefix("git:").is_some_and(|rest| hex(rest, 40))
}

impl ObjectStore {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            index: Arc::default(),
            loose_written: Arc::default(),
            git: None,
            faults: fault::Budget::default(),
        }
    }

    /// A test seam: every write of this store (and its clones) fails with `EIO` once `bytes`
    /// more have been written; `None` lifts it.
    #[cfg(test)]
    pub(crate) fn fail_writes_after(&self, bytes: Option<usize>) {
        self.faults.set(bytes);
    }

    /// The same store, reading the `git:` ids it has no copy of from `root`'s repository.
    pub fn with_git(mut self, root: &Path) -> Self {
        self.git = Some(Arc::new(super::git_baseline::GitObjects::new(root)));
        self
    }

    /// Copies the git blobs `ids` name (ids without the `git:` prefix are ignored) from the
    /// project's repository into the store, under those ids, so a later rewrite and garbage
    /// collection of git's history cannot lose them. Returns the ids that could not be
    /// copied, with why.
    pub fn secure_git(&self, ids: &[&str]) -> std::io::Result<Vec<(String, String)>> {
        let mut failed = Vec::new();
        let mut pack = self.pack();
        for id in ids {
            let Some(hex) = super::git_baseline::git_hex(id) else {
                continue;
            };
            if self.contains_cached(id) || pack.seen.contains(*id) {
                continue;
            }
            match self.git.as_ref().map(|git| git.read(hex)) {
                Some(Ok(bytes)) => pack.add_named(id, &bytes)?,
                Some(Err(error)) => failed.push(((*id).to_owned(), error.to_string())),
                None => failed.push(((*id).to_owned(), "no repository to read it from".to_owned())),
            }
        }
        pack.finish()?;
        Ok(failed)
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

    /// The `.idx` files now in the pack directory.
    fn index_files(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.pack_dir()) else {
            return Vec::new();
        };
        entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "idx"))
            .collect()
    }

    /// Adds the objects of one `.idx` (one `id offset len` line per object) to `index`. A
    /// line that is cut (no newline, a short id) or that points past the end of the pack (a
    /// truncated or missing pack) is left out: counted as present, the object would never be
    /// stored again, and every later checkpoint would name content that cannot be read.
    fn read_index_file(path: &Path, index: &mut Index) {
        index.read.insert(path.to_path_buf());
        let Ok(text) = std::fs::read_to_string(path) else {
            return;
        };
        let pack = path.with_extension("pack");
        let Ok(size) = std::fs::metadata(&pack).map(|m| m.len()) else {
            return;
        };
        for line in text.split_inclusive('\n') {
            let Some(line) = line.strip_suffix('\n') else {
                continue;
            };
            let mut parts = line.split(' ');
            if let (Some(id), Some(Ok(offset)), Some(Ok(len)), None) = (
                parts.next(),
                parts.next().map(str::parse::<u64>),
                parts.next().map(str::parse::<u64>),
                parts.next(),
            ) && is_id(id)
                && offset.checked_add(len).is_some_and(|end| end <= size)
            {
                index.objects.insert(
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

    /// Brings `index` up to date with the pack directory: reads the indexes it has not read,
    /// or all of them again when one it read is gone (merged or pruned since).
    fn refresh(&self, index: &mut Index) {
        let files = self.index_files();
        let current: HashSet<&PathBuf> = files.iter().collect();
        if index.read.iter().any(|read| !current.contains(read)) {
            *index = Index::default();
        }
        for file in &files {
            if !index.read.contains(file) {
                Self::read_index_file(file, index);
            }
        }
        index.loaded = true;
    }

    /// Every packed object, read fresh.
    fn read_index(&self) -> HashMap<String, Location> {
        let mut index = Index::default();
        self.refresh(&mut index);
        index.objects
    }

    fn locate(&self, id: &str) -> Option<Location> {
        let mut index = self.index.lock().unwrap_or_else(|e| e.into_inner());
        if !index.loaded {
            self.refresh(&mut index);
        }
        if let Some(found) = index.objects.get(id) {
            return Some(found.clone());
        }
        // Another process (or an earlier writer) may have added a pack since.
        self.refresh(&mut index);
        index.objects.get(id).cloned()
    }

    /// Forgets the cached index (a pack it points into was merged or pruned away).
    fn forget_index(&self) {
        *self.index.lock().unwrap_or_else(|e| e.into_inner()) = Index::default();
    }

    /// Stores `bytes` loose (if not already there) and returns its id. Written to a temporary
    /// file that is renamed into place only once complete and synced: a full disk or an I/O
    /// error leaves no object, never a cut one under the name of a whole one.
    pub fn put(&self, bytes: &[u8]) -> std::io::Result<String> {
        let id = hash(bytes);
        if self.contains(&id) {
            return Ok(id);
        }
        let path = self.path(&id);
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir).map_err(at_path(dir))?;
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(at_path(dir))?;
        self.faults
            .write_all(temp.as_file_mut(), bytes)
            .map_err(at_path(&path))?;
        temp.as_file().sync_all().map_err(at_path(&path))?;
        temp.persist(&path).map_err(|e| at_path(&path)(e.error))?;
        self.loose_written.fetch_add(1, Ordering::Relaxed);
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
        let missing = || {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("object {id} is missing from {}", self.dir.display()),
            )
        };
        // A git blob not copied here is read from the project's repository.
        let from_git = || match (super::git_baseline::git_hex(id), &self.git) {
            (Some(hex), Some(git)) => git
                .read(hex)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::NotFound, e)),
            _ => Err(missing()),
        };
        let Some(at) = self.locate(id) else {
            return from_git();
        };
        match self.read_at(&at) {
            // The pack was merged into another (or pruned) since this process read its index.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.forget_index();
                match self.locate(id) {
                    Some(at) => self.read_at(&at),
                    None => from_git(),
                }
            }
            other => other,
        }
    }

    /// Whether the store has `id` as far as this process last read the pack indexes (read
    /// once, not again on every miss): for deduplication while packing, where a stale "no"
    /// costs a duplicate copy and a re-read of every index per new file costs seconds.
    fn contains_cached(&self, id: &str) -> bool {
        let mut index = self.index.lock().unwrap_or_else(|e| e.into_inner());
        if !index.loaded {
            self.refresh(&mut index);
        }
        index.objects.contains_key(id) || self.path(id).exists()
    }

    /// Removes the packs a writer left without an index (killed, or its disk failed before
    /// it could clean up): nothing can read them, and on a full disk they keep every later
    /// session from saving anything. A pack still being written is locked by its writer and
    /// kept. Returns how many were removed; a store that cannot be changed (read-only) is
    /// left as it is.
    pub fn discard_partial(&self) -> std::io::Result<usize> {
        let dir = self.pack_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(at_path(&dir)(e)),
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "pack") || path.with_extension("idx").exists() {
                continue;
            }
            let Ok(file) = std::fs::File::open(&path) else {
                continue;
            };
            // Locked: its writer is alive. Once locked here, an index written meanwhile means
            // the writer finished.
            if !flock(&file, false).map_err(at_path(&path))? || path.with_extension("idx").exists() {
                continue;
            }
            match std::fs::remove_file(&path) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(at_path(&path)(e)),
            }
        }
        Ok(removed)
    }

    /// How many packs the store has.
    pub fn pack_count(&self) -> usize {
        self.index_files().len()
    }

    /// Whether [`ObjectStore::consolidate`] has work: more than [`MAX_PACKS`] packs, or
    /// [`MAX_LOOSE`] loose objects written by this process since it last merged (the
    /// manifests of turns whose contents were all known already).
    pub fn needs_consolidation(&self) -> bool {
        self.loose_written.load(Ordering::Relaxed) >= MAX_LOOSE || self.pack_count() > MAX_PACKS
    }

    /// The loose objects: (id, path, size). Temporary files and names that are not ids are
    /// left out.
    fn loose_objects(&self) -> Vec<(String, PathBuf, u64)> {
        let is_hex = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit());
        let mut out = Vec::new();
        let Ok(heads) = std::fs::read_dir(&self.dir) else {
            return out;
        };
        for head in heads.flatten() {
            let head_name = head.file_name().to_string_lossy().into_owned();
            if head_name.len() != 2 || !is_hex(&head_name) {
                continue;
            }
            let Ok(tails) = std::fs::read_dir(head.path()) else {
                continue;
            };
            for tail in tails.flatten() {
                let name = tail.file_name().to_string_lossy().into_owned();
                let is_file = tail.file_type().is_ok_and(|t| t.is_file());
                if name.len() == 62 && is_hex(&name) && is_file {
                    let size = tail.metadata().map_or(0, |m| m.len());
                    out.push((format!("{head_name}{name}"), tail.path(), size));
                }
            }
        }
        out.sort();
        out
    }

    /// Merges the smallest packs, and the loose objects, into one pack when there are more
    /// than [`MAX_PACKS`] packs or [`MAX_LOOSE`] loose objects. The packs merged are the
    /// smallest ones until the merged pack is less than half the next one left (at least all
    /// but [`KEPT_PACKS`]): packs then grow geometrically, so each byte is copied about
    /// log(store) times over a store's life and a merge usually copies only recent turns
    /// (merging all but the biggest copied half the store every 16 turns). The merged pack
    /// is visible before the old packs and loose files go, so a reader always finds each
    /// object; one holding a stale location re-reads the indexes, while this process's
    /// index is updated in place (re-reading every index after each merge cost a turn
    /// O(objects)). The caller holds the store lock, so a prune does not rewrite packs
    /// meanwhile. Returns whether it merged.
    pub fn consolidate(&self) -> std::io::Result<bool> {
        let mut packs: Vec<(u64, PathBuf)> = self
            .index_files()
            .into_iter()
            .map(|idx| {
                let size = std::fs::metadata(idx.with_extension("pack")).map_or(0, |m| m.len());
                (size, idx)
            })
            .collect();
        let loose = self.loose_objects();
        if packs.len() <= MAX_PACKS && loose.len() < MAX_LOOSE {
            self.loose_written.store(0, Ordering::Relaxed);
            return Ok(false);
        }
        packs.sort();
        let mut merged = packs.len().saturating_sub(KEPT_PACKS);
        let mut total: u64 = loose.iter().map(|(.., size)| size).sum::<u64>()
            + packs[..merged].iter().map(|(size, _)| size).sum::<u64>();
        while merged < packs.len() && total.saturating_mul(2) > packs[merged].0 {
            total += packs[merged].0;
            merged += 1;
        }
        let packs = &packs[..merged];
        let mut writer = self.pack();
        writer.dedupe = false;
        for (_, idx) in packs {
            let mut one = Index::default();
            Self::read_index_file(idx, &mut one);
            let mut objects: Vec<Location> = one.objects.into_values().collect();
            objects.sort_by_key(|at| at.offset);
            for at in objects {
                writer.add_bytes(&self.read_at(&at)?)?;
            }
        }
        let mut packed = Vec::new();
        for (id, path, _) in &loose {
            // A loose object that does not hash to its name (a damaged disk) is left alone.
            match std::fs::read(path) {
                Ok(bytes) if hash(&bytes) == *id => {
                    writer.add_bytes(&bytes)?;
                    packed.push(path);
                }
                _ => {}
            }
        }
        writer.finish()?;
        let remove = |path: &Path| match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(at_path(path)(e)),
            _ => Ok(()),
        };
        for (_, idx) in packs {
            remove(idx)?;
            remove(&idx.with_extension("pack"))?;
        }
        for path in packed {
            remove(path)?;
        }
        self.loose_written.store(0, Ordering::Relaxed);
        // The merged objects were added to the cached index with their new place (by
        // `finish`); the merged packs' indexes are gone and must not look stale.
        let mut index = self.index.lock().unwrap_or_else(|e| e.into_inner());
        for (_, idx) in packs {
            index.read.remove(idx);
        }
        Ok(true)
    }

    pub fn contains(&self, id: &str) -> bool {
        self.locate(id).is_some()
            || self.path(id).exists()
            || super::git_baseline::git_hex(id)
                .zip(self.git.as_ref())
                .is_some_and(|(hex, git)| git.exists(hex))
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
            let mut writer = self.pack();
            writer.dedupe = false;
            for (id, at) in &objects {
                if keep(id) {
                    writer.add_bytes(&self.read_at(at)?)?;
                } else {
                    removed += 1;
                    freed += at.len;
                }
            }
            writer.finish()?;
            remove_present(&pack.with_extension("idx"))?;
            remove_present(&pack)?;
        }
        // Packs left without an index by a crash are garbage.
        self.discard_partial()?;
        self.forget_index();
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

/// Removes `path`; one already gone (a discard or a merge got there first) is no error.
fn remove_present(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(at_path(path)(e)),
        _ => Ok(()),
    }
}

/// Collects new objects into one pack; nothing is visible until [`PackWriter::finish`].
pub struct PackWriter {
    store: ObjectStore,
    file: Option<(PathBuf, std::io::BufWriter<fault::Faulty>)>,
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
        self.add_named(&id, bytes)?;
        Ok(id)
    }

    /// Adds `bytes` under `id` (the caller vouches for the name: a hash of another kind, such
    /// as a copied `git:` blob).
    fn add_named(&mut self, id: &str, bytes: &[u8]) -> std::io::Result<()> {
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
fn flock(file: &std::fs::File, wait: bool) -> std::io::Result<bool> {
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
        let name = format!("{}-{:08x}", super::now_ms(), fastrand::u32(..));
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

/// Writes that can be made to fail, for tests of a disk that fails mid-write (EIO, which a
/// tmpfs cannot produce): without `cfg(test)` they are plain writes.
mod fault {
    use std::io::Write;

    /// How many more bytes a store (and every clone of it) may write before each write fails
    /// with `EIO`; unlimited unless a test sets it.
    #[derive(Debug, Clone, Default)]
    pub struct Budget(#[cfg(test)] std::sync::Arc<std::sync::Mutex<Option<usize>>>);

    impl Budget {
        #[cfg(test)]
        pub fn set(&self, bytes: Option<usize>) {
            *self.0.lock().unwrap_or_else(|e| e.into_inner()) = bytes;
        }

        #[cfg(test)]
        fn check(&self, len: usize) -> std::io::Result<()> {
            let mut left = self.0.lock().unwrap_or_else(|e| e.into_inner());
            match *left {
                Some(bytes) if bytes < len => Err(std::io::Error::from_raw_os_error(libc::EIO)),
                Some(bytes) => {
                    *left = Some(bytes - len);
                    Ok(())
                }
                None => Ok(()),
            }
        }

        #[cfg(not(test))]
        fn check(&self, _len: usize) -> std::io::Result<()> {
            Ok(())
        }

        pub fn write_all(&self, file: &mut std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
            self.check(bytes.len())?;
            file.write_all(bytes)
        }
    }

    /// A pack file whose writes count against a [`Budget`].
    pub struct Faulty(pub std::fs::File, pub Budget);

    impl Write for Faulty {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.1.check(bytes.len())?;
            self.0.write(bytes)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            self.0.flush()
        }
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

    /// Past [`MAX_PACKS`], the small packs are merged and a pack much bigger than all of
    /// them together is left alone (merging it each time copied half the store every 16
    /// turns); past [`MAX_LOOSE`], loose objects go into a pack too. Every object stays
    /// readable, in this process (its index updated in place) and in one that read the
    /// indexes before.
    #[test]
    fn many_packs_are_merged_and_every_object_stays_readable() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::new(dir.path().to_path_buf());
        let mut big = store.pack();
        let big_ids: Vec<String> = (0..400)
            .map(|k| {
                big.add_bytes(format!("the first checkpoint, file {k}").as_bytes())
                    .unwrap()
            })
            .collect();
        big.finish().unwrap();
        let big_pack = store.index_files();
        let mut ids = Vec::new();
        for turn in 0..(MAX_PACKS + 3) {
            let mut pack = store.pack();
            for k in 0..3 {
                ids.push(pack.add_bytes(format!("turn {turn} file {k}").as_bytes()).unwrap());
            }
            pack.finish().unwrap();
        }
        // Another process that read the indexes before the merge.
        let other = ObjectStore::new(dir.path().to_path_buf());
        assert!(other.contains(&ids[0]));
        assert_eq!(store.pack_count(), MAX_PACKS + 4);
        assert!(store.needs_consolidation());
        assert!(store.consolidate().unwrap());
        assert_eq!(store.pack_count(), 2, "the big pack and the merged one");
        assert!(big_pack.iter().all(|idx| idx.exists()), "the big pack was not copied");
        assert!(!store.consolidate().unwrap(), "nothing more to merge");
        // Loose objects: merged once there are MAX_LOOSE of them.
        let loose: Vec<String> = (0..MAX_LOOSE)
            .map(|k| store.put(format!("loose {k}").as_bytes()).unwrap())
            .collect();
        assert!(store.needs_consolidation());
        assert!(store.consolidate().unwrap());
        assert!(store.loose_objects().is_empty(), "no loose file is left");
        for (i, id) in ids.iter().enumerate() {
            let expected = format!("turn {} file {}", i / 3, i % 3);
            assert_eq!(store.get(id).unwrap(), expected.as_bytes());
            assert_eq!(other.get(id).unwrap(), expected.as_bytes(), "a stale index re-reads");
        }
        for (k, id) in loose.iter().enumerate() {
            assert_eq!(store.get(id).unwrap(), format!("loose {k}").as_bytes());
            assert_eq!(other.get(id).unwrap(), format!("loose {k}").as_bytes());
        }
        for (k, id) in big_ids.iter().enumerate() {
            assert_eq!(
                store.get(id).unwrap(),
                format!("the first checkpoint, file {k}").as_bytes()
            );
        }
        assert_eq!(store.list().len(), ids.len() + loose.len() + big_ids.len());
    }

    /// The files under the store, temporary ones included (what a failed write could leave).
    fn files(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(files(&path));
            } else {
                out.push(path);
            }
        }
        out.sort();
        out
    }

    /// An I/O error (EIO, through the test seam) at any write of a pack, its index or a loose
    /// object leaves nothing behind, and the store works as before once writes succeed.
    #[test]
    fn a_failed_write_anywhere_leaves_nothing_and_the_store_works_after() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::new(dir.path().to_path_buf());
        let kept = store.put(b"there before").unwrap();
        let before = files(dir.path());
        let contents: Vec<Vec<u8>> = (0..40).map(|k| vec![b'a' + (k % 26) as u8; 1000 + k]).collect();
        let total: usize = contents.iter().map(Vec::len).sum();
        // Budgets up to what the pack and its index take: the failure lands in each write.
        let mut failures = 0;
        for budget in (0..total + 4000).step_by(997) {
            store.fail_writes_after(Some(budget));
            let result = (|| {
                let mut pack = store.pack();
                for bytes in &contents {
                    pack.add_bytes(bytes)?;
                }
                pack.finish()
            })();
            store.fail_writes_after(None);
            let Err(error) = result else {
                break;
            };
            failures += 1;
            assert_eq!(error.raw_os_error(), None, "said with its path: {error}");
            assert!(error.to_string().contains("Input/output error"), "{error}");
            assert_eq!(files(dir.path()), before, "nothing is left at budget {budget}");
            assert!(!store.contains(&hash(&contents[0])));
        }
        assert!(failures > total / 997, "every write was made to fail once ({failures})");
        let before = files(dir.path());
        store.fail_writes_after(Some(10));
        assert!(store.put(b"a loose object too long for the budget").is_err());
        store.fail_writes_after(None);
        assert_eq!(files(dir.path()), before, "no cut loose object, no temporary file");
        let mut pack = store.pack();
        let ids: Vec<String> = contents.iter().map(|b| pack.add_bytes(b).unwrap()).collect();
        pack.finish().unwrap();
        for (id, bytes) in ids.iter().zip(&contents) {
            assert_eq!(&store.get(id).unwrap(), bytes);
        }
        assert_eq!(store.get(&kept).unwrap(), b"there before");
    }

    /// A truncated pack, a missing one and a cut index line make those objects absent, not
    /// present and unreadable: the next pack stores them again and they read back.
    #[test]
    fn truncated_packs_and_cut_indexes_are_ignored_and_stored_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::new(dir.path().to_path_buf());
        let mut pack = store.pack();
        let ids: Vec<String> = ["first", "second", "third"]
            .iter()
            .map(|t| pack.add_bytes(t.as_bytes()).unwrap())
            .collect();
        pack.finish().unwrap();
        let idx = store.index_files().remove(0);
        let packed = idx.with_extension("pack");
        // Cut in the middle of the third object.
        let file = std::fs::OpenOptions::new().write(true).open(&packed).unwrap();
        file.set_len(("first".len() + "second".len() + 2) as u64).unwrap();
        // A cut line naming an object this pack does not hold.
        let other = hash(b"other");
        let mut text = std::fs::read_to_string(&idx).unwrap();
        text.push_str(&format!("{other} 0 3"));
        std::fs::write(&idx, text).unwrap();
        // A process opening the store now.
        let reopened = ObjectStore::new(dir.path().to_path_buf());
        assert_eq!(reopened.get(&ids[0]).unwrap(), b"first");
        assert_eq!(reopened.get(&ids[1]).unwrap(), b"second");
        assert!(!reopened.contains(&ids[2]) && !reopened.contains(&other));
        let mut pack = reopened.pack();
        assert_eq!(pack.add_bytes(b"third").unwrap(), ids[2]);
        pack.finish().unwrap();
        assert_eq!(reopened.get(&ids[2]).unwrap(), b"third", "stored again");
        // An index whose pack is gone names nothing.
        std::fs::remove_file(&packed).unwrap();
        let reopened = ObjectStore::new(dir.path().to_path_buf());
        assert!(!reopened.contains(&ids[0]));
        assert_eq!(reopened.get(&ids[2]).unwrap(), b"third");
    }

    /// A pack without an index is discarded when its writer is gone, and kept while its
    /// writer (holding its lock) is still adding to it.
    #[test]
    fn partial_packs_of_dead_writers_go_and_those_being_written_stay() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::new(dir.path().to_path_buf());
        let mut live = store.pack();
        let id = live.add_bytes(b"being written").unwrap();
        live.file.as_mut().unwrap().1.flush().unwrap();
        let dead = store.pack_dir().join("1-0badf00d.pack");
        std::fs::write(&dead, b"left by a killed brute").unwrap();
        assert_eq!(store.discard_partial().unwrap(), 1);
        assert!(!dead.exists());
        live.finish().unwrap();
        assert_eq!(store.get(&id).unwrap(), b"being written");
        assert_eq!(store.discard_partial().unwrap(), 0, "a finished pack stays");
        // A writer that gives up (an error while adding) takes its pack with it.
        let mut given_up = store.pack();
        given_up.add_bytes(b"never finished").unwrap();
        drop(given_up);
        assert_eq!(store.pack_count(), 1);
        assert_eq!(files(&store.pack_dir()).len(), 2, "one pack and its index");
    }
}
