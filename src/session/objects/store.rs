//! The [`ObjectStore`]: content-addressed objects under `<data dir>/objects/`, loose or in
//! packs, found through the packs' indexes; merging packs, and pruning what no one keeps.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use super::fault;
use super::pack::{PackWriter, flock};
use crate::session::at_path;

/// Where a packed object lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Location {
    pub(super) pack: PathBuf,
    pub(super) offset: u64,
    pub(super) len: u64,
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
pub(super) struct Index {
    pub(super) objects: HashMap<String, Location>,
    pub(super) read: HashSet<PathBuf>,
    pub(super) loaded: bool,
}

/// Objects under `<data dir>/objects/`.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    dir: PathBuf,
    /// Packed objects by id, loaded on first use; a miss reads the indexes added since.
    pub(super) index: Arc<Mutex<Index>>,
    /// Loose objects this process wrote since its last merge.
    loose_written: Arc<AtomicUsize>,
    /// Where `git:` ids not copied into the store are read from: the project's repository.
    git: Option<Arc<crate::session::git_baseline::GitObjects>>,
    /// Writes a test makes fail (see [`fault`]).
    pub(super) faults: fault::Budget,
}

/// The hex SHA-256 of `bytes`.
pub fn hash(bytes: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(bytes);
    hex(hasher)
}

/// The bytes [`Hashing`] gathers before each write to its file.
const WRITTEN_PIECE: usize = 64 << 10;

/// A writer that hashes what passes, and gathers it for the object's temporary file when it
/// has one (see [`ObjectStore::put_written`]).
struct Hashing<'a> {
    file: Option<(&'a mut std::fs::File, &'a fault::Budget)>,
    hasher: Sha256,
    pending: Vec<u8>,
}

impl std::io::Write for Hashing<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.hasher.update(bytes);
        if self.file.is_some() {
            self.pending.extend_from_slice(bytes);
            if self.pending.len() >= WRITTEN_PIECE {
                self.flush()?;
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let Some((file, faults)) = self.file.as_mut() else {
            return Ok(());
        };
        let result = faults.write_all(file, &self.pending);
        self.pending.clear();
        result
    }
}

/// A finished SHA-256 as lowercase hex (an object's id).
fn hex(hasher: Sha256) -> String {
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
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
        self.git = Some(Arc::new(crate::session::git_baseline::GitObjects::new(root)));
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
            let Some(hex) = crate::session::git_baseline::git_hex(id) else {
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

    pub(super) fn pack_dir(&self) -> PathBuf {
        self.dir.join("pack")
    }

    /// The `.idx` files now in the pack directory.
    pub(super) fn index_files(&self) -> Vec<PathBuf> {
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
        self.put_loose(hash(bytes), |file| self.faults.write_all(file, bytes))
    }

    /// [`ObjectStore::put`] for an object `write` makes a piece at a time, so a big one (a big
    /// tree's manifest, tens of megabytes) is never held whole in memory. `write` runs twice:
    /// once for the id (an object already stored is not written again, nor does it need room
    /// on the disk), then into a temporary file beside where the object goes, hashed again so
    /// the stored bytes are exactly the id's. The same bytes get the same id as through `put`.
    pub fn put_written(
        &self,
        write: impl Fn(&mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> std::io::Result<String> {
        let mut hashed = Hashing {
            file: None,
            hasher: Sha256::new(),
            pending: Vec::new(),
        };
        write(&mut hashed)?;
        let id = hex(hashed.hasher);
        self.put_loose(id.clone(), |file| {
            let mut out = Hashing {
                file: Some((file, &self.faults)),
                hasher: Sha256::new(),
                pending: Vec::with_capacity(WRITTEN_PIECE),
            };
            write(&mut out).and_then(|()| std::io::Write::flush(&mut out))?;
            match hex(out.hasher) == id {
                true => Ok(()),
                false => Err(std::io::Error::other("the object came out differently the second time")),
            }
        })
    }

    /// Stores object `id` loose unless it is there: `fill` writes it into a temporary file
    /// beside its place, which is renamed into place only once complete and synced.
    fn put_loose(
        &self,
        id: String,
        fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
    ) -> std::io::Result<String> {
        if self.contains(&id) {
            return Ok(id);
        }
        let path = self.path(&id);
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir).map_err(at_path(dir))?;
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(at_path(dir))?;
        fill(temp.as_file_mut()).map_err(at_path(&path))?;
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

    /// An object stored loose, opened to be read as a stream (a big manifest is decoded as
    /// it is read); `None` when it is not stored loose (it may be packed: see
    /// [`ObjectStore::get`]).
    pub fn open_loose(&self, id: &str) -> std::io::Result<Option<std::fs::File>> {
        let loose = self.path(id);
        match std::fs::File::open(&loose) {
            Ok(file) => Ok(Some(file)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(at_path(&loose)(e)),
        }
    }

    /// Reads an object (its id as text, or a manifest's [`ContentId`]).
    ///
    /// [`ContentId`]: crate::session::checkpoint::ContentId
    pub fn get(&self, id: &(impl std::fmt::Display + ?Sized)) -> std::io::Result<Vec<u8>> {
        self.get_text(&id.to_string())
    }

    fn get_text(&self, id: &str) -> std::io::Result<Vec<u8>> {
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
        let from_git = || match (crate::session::git_baseline::git_hex(id), &self.git) {
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
    pub(super) fn contains_cached(&self, id: &str) -> bool {
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
    pub(super) fn loose_objects(&self) -> Vec<(String, PathBuf, u64)> {
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

    /// Whether the object is here (its id as text, or a manifest's `ContentId`).
    pub fn contains(&self, id: &(impl std::fmt::Display + ?Sized)) -> bool {
        self.contains_text(&id.to_string())
    }

    fn contains_text(&self, id: &str) -> bool {
        self.locate(id).is_some()
            || self.path(id).exists()
            || crate::session::git_baseline::git_hex(id)
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
