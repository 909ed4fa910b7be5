//! The [`Scanner`]: walks a project tree into a [`Manifest`] (whole, or only the directories a
//! file watcher saw touched), within a [`Budget`], and stores it as a checkpoint.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use super::deep::{Deep, DeepTouched, reachable, too_long, walk_deep};
use super::manifest::{FileState, Manifest};
use super::map::Found;
use super::store::{Base, Chain, Changes, load_with_depth, save_changes, save_manifest_after};
use super::walk::{
    Collector, Local, Seen, Stop, Unchanged, WalkCtx, observe_now, observe_path, read_file, read_pending,
};
use crate::session::objects::ObjectStore;

/// A tree with more entries than this is not checkpointed by default (brute started in a
/// home directory or a huge monorepo would otherwise copy it all); see [`Budget`].
pub const DEFAULT_MAX_ENTRIES: usize = 500_000;
/// A walk that takes longer than this turns checkpoints off by default (see [`Budget`]).
pub const DEFAULT_MAX_WALK: Duration = Duration::from_secs(60);

/// Where brute's data directory (the parent of the object store) lies inside `root`, as the
/// walker spells paths under `root`; `None` when it is elsewhere.
fn own_data_dir(root: &Path, objects: &ObjectStore) -> Option<PathBuf> {
    let data = objects.dir().parent()?;
    let data = data.canonicalize().unwrap_or_else(|_| data.to_path_buf());
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let rel = data.strip_prefix(&real_root).ok()?;
    (!rel.as_os_str().is_empty()).then(|| root.join(rel))
}

/// A tree known to have fewer entries is walked on one thread, and gets no file watcher (its
/// walk costs less than the watcher: inotify, a thread, a fence per checkpoint).
pub const SMALL_TREE: usize = 2_000;
/// Files bigger than this are not checkpointed by default (configurable).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// When a scanner starts its file watcher (see [`Scanner::watch_when_big`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrom {
    /// At the first walk: a session of many turns then re-lists only what changed between
    /// them.
    FirstWalk,
    /// When the first command is about to run ([`Scanner::watch_for_commands`]): a one-shot
    /// run whose model runs no command never pays for watching the tree.
    FirstCommand,
}

/// The result of one scan.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Shared with the scanner, which keeps it as the state the next scan starts from (a
    /// manifest of a big tree is megabytes: it is not copied).
    pub manifest: Arc<Manifest>,
    /// Files left out because they exceed the size cap: (path, size).
    pub skipped: Vec<(String, u64)>,
    /// Files read and hashed in this scan (the others were reused by metadata).
    pub hashed: usize,
}

/// Scans a project tree incrementally.
pub struct Scanner {
    root: PathBuf,
    objects: ObjectStore,
    max_file_bytes: u64,
    previous: Arc<Manifest>,
    /// Where `previous` is stored, and where in its chain of deltas (see
    /// [`save_manifest_after`]).
    stored: Option<(String, Chain)>,
    /// The last scan stopped at the [`Budget`]; why. A tree over it stays so for this
    /// scanner: later walks fail at once.
    too_big: Option<String>,
    budget: Budget,
    /// The file watcher, when the session has one (see [`Scanner::watch`]).
    watch: Option<Arc<crate::session::watch::TreeWatch>>,
    /// `previous` is a full walk made while the watcher watched every directory in it: the
    /// next checkpoint may re-list only what it saw touched.
    watched_base: bool,
    /// The files over the size cap in `previous`.
    skipped_known: BTreeMap<String, u64>,
    last_walk: Walked,
    /// `previous` is what a full walk found (not a seed, nor the last manifest with some
    /// directories listed again): it names every directory there is to watch.
    previous_walked_full: bool,
    /// Why checkpoints walked the whole tree though a watcher ran (for notices and tests).
    gaps: Vec<crate::session::watch::Gap>,
    /// `previous` is a checkpoint this scanner stored: every content it names is in the store
    /// and named by the session (kept from pruning), so a file reused by its metadata needs
    /// no store lookup. A seed's or a bare scan's contents are looked up file by file.
    contents_stored: bool,
    /// git's index and attribute rules for the root, read again when the index changes.
    git: Option<std::sync::Arc<crate::session::git_baseline::GitBaseline>>,
    /// The last full walk found directories deeper than a path reaches (see [`walk_deep`]).
    deep_tree: bool,
    /// A stored manifest to seed from, loaded by the first walk (see [`Scanner::remember_later`]).
    seed: Option<String>,
    /// When to start the file watcher, unless the tree is known to be small then (see
    /// [`Scanner::watch_when_big`]); `None` once decided.
    watch_when_big: Option<WatchFrom>,
    /// The changes the last full walk found from the manifest it updated in place (which is
    /// gone), and where that one was stored: what the checkpoint stores (see [`updated`]).
    walk_changes: Option<(Option<(String, Chain)>, Changes)>,
}

impl Scanner {
    pub fn new(root: PathBuf, objects: ObjectStore, max_file_bytes: u64) -> Self {
        Self {
            root,
            objects,
            max_file_bytes,
            previous: Arc::default(),
            stored: None,
            too_big: None,
            budget: Budget::default(),
            watch: None,
            watched_base: false,
            skipped_known: BTreeMap::new(),
            last_walk: Walked::Full,
            previous_walked_full: false,
            gaps: Vec::new(),
            contents_stored: false,
            git: None,
            deep_tree: false,
            seed: None,
            watch_when_big: None,
            walk_changes: None,
        }
    }

    /// [`Scanner::remember`], done by the first walk rather than now: a big tree's manifest
    /// takes milliseconds to load, and the walk runs beside the first model request while
    /// start-up does not. An unreadable one leaves the walk to read every file.
    pub fn remember_later(&mut self, id: String) {
        self.seed = Some(id);
    }

    /// Starts the file watcher (see [`Scanner::watch`]) at `from`, unless the tree is known
    /// to be small then ([`SMALL_TREE`]): its walk costs less than watching it.
    pub fn watch_when_big(&mut self, from: WatchFrom) {
        self.watch_when_big = Some(from);
    }

    /// Loads the seed and starts the watcher that were left for the first walk.
    fn settle(&mut self) {
        if let Some(id) = self.seed.take() {
            let objects = self.objects.clone();
            if let Err(error) = self.remember(&objects, &id) {
                tracing::info!(%error, "the last checkpoint cannot be read: the walk reads every file");
            }
        }
        if self.watch_when_big == Some(WatchFrom::FirstWalk) {
            self.watch_when_big = None;
            self.watch_unless_small();
        }
    }

    fn watch_unless_small(&mut self) {
        if !self.known_small()
            && let Err(gap) = self.watch()
        {
            tracing::info!(%gap, "no file watcher: every checkpoint walks the tree");
        }
    }

    /// A command is about to run: the watcher left for the first command starts (see
    /// [`WatchFrom::FirstCommand`]) and watches every directory of the last full walk, so the
    /// next checkpoint re-lists only what it sees touched (and what the built-in tools wrote
    /// before, which the caller names then). Nothing when the watcher was not left for now.
    pub fn watch_for_commands(&mut self) {
        if self.watch_when_big != Some(WatchFrom::FirstCommand) {
            return;
        }
        self.watch_when_big = None;
        self.settle();
        if self.too_big.is_some() {
            return;
        }
        let started = self.watch.is_none();
        self.watch_unless_small();
        let Some(watch) = self.watch.clone().filter(|_| started) else {
            return;
        };
        // Only a full walk's manifest names every directory there is to watch.
        if !self.previous_walked_full || self.deep_tree {
            return;
        }
        watch.reset();
        watch.watch_dir(&self.root);
        for (rel, _) in self.previous.iter().filter(|(_, state)| state.dir) {
            watch.watch_dir(&crate::session::relpath::under(&self.root, rel));
        }
        self.watched_base = !watch.given_up();
    }

    /// The git baseline for this scan: the one read before while the index is unchanged, else
    /// read now (`None` outside git or where git's state is doubtful).
    fn git_baseline(&mut self) -> Option<std::sync::Arc<crate::session::git_baseline::GitBaseline>> {
        if !self.git.as_ref().is_some_and(|g| g.is_current()) {
            let read = crate::session::git_baseline::GitBaseline::read_index(&self.root);
            self.git = read.map(|read| std::sync::Arc::new(self.finish_baseline(read)));
        }
        self.git.clone()
    }

    /// The baseline from its read index, told what the last manifest checked.
    fn finish_baseline(
        &self,
        read: crate::session::git_baseline::IndexRead,
    ) -> crate::session::git_baseline::GitBaseline {
        // A `git:` id in the last manifest is a blob checked then; its size is the file's.
        // Asked in path order: one pass over the manifest, no lookups.
        let mut previous = self.previous.iter().peekable();
        let known = |rel: &str, id: &[u8; 20]| {
            while previous.next_if(|(path, _)| *path < rel).is_some() {}
            previous
                .peek()
                .filter(|(path, state)| *path == rel && state.id.git() == Some(id))
                .map(|(_, state)| state.size)
        };
        read.finish(known)
    }

    /// What a walk needs first: the seed and the watcher left for it (see [`Scanner::settle`])
    /// and the git baseline. A seed still to load and an index to read are independent: they
    /// are read side by side.
    fn prepare(&mut self) {
        let stale = !self.git.as_ref().is_some_and(|g| g.is_current());
        if self.seed.is_none() || !stale {
            self.settle();
            self.git_baseline();
            return;
        }
        let root = self.root.clone();
        let read = std::thread::scope(|scope| {
            let reader = scope.spawn(|| crate::session::git_baseline::GitBaseline::read_index(&root));
            self.settle();
            reader.join().ok().flatten()
        });
        self.git = read.map(|read| std::sync::Arc::new(self.finish_baseline(read)));
    }

    /// Starts a file watcher: from the next full walk on, checkpoints re-list only the
    /// directories it saw touched. Fails (and every checkpoint keeps walking) where inotify
    /// cannot start.
    pub fn watch(&mut self) -> Result<(), crate::session::watch::Gap> {
        if self.watch.is_none() {
            self.watch = Some(Arc::new(crate::session::watch::TreeWatch::start()?));
            self.watched_base = false;
        }
        Ok(())
    }

    /// The watcher, when one runs (tests inject an overflow through it).
    pub fn watcher(&self) -> Option<Arc<crate::session::watch::TreeWatch>> {
        self.watch.clone()
    }

    /// How the last walk went.
    pub fn last_walk(&self) -> Walked {
        self.last_walk
    }

    /// Why walks fell back to the whole tree though a watcher ran, oldest first.
    pub fn gaps(&self) -> &[crate::session::watch::Gap] {
        &self.gaps
    }

    /// Sets how much a walk may cost before checkpoints are off (see [`Budget`]).
    pub fn set_budget(&mut self, budget: Budget) {
        self.budget = budget;
    }

    /// Whether the last scan stopped because the tree is over the [`Budget`].
    pub fn too_big(&self) -> bool {
        self.too_big.is_some()
    }

    /// Whether an earlier state of the tree is known (see [`Scanner::remember`]).
    pub fn has_known(&self) -> bool {
        self.seed.is_some() || !self.previous.is_empty()
    }

    /// Whether the tree is known to be small (under [`SMALL_TREE`] entries).
    pub fn known_small(&self) -> bool {
        !self.previous.is_empty() && self.previous.len() < SMALL_TREE
    }

    /// Seeds the metadata cache with a stored manifest (e.g. the last of a resumed session);
    /// the next checkpoint is stored as the changes from it.
    pub fn remember(&mut self, objects: &ObjectStore, id: &str) -> std::io::Result<()> {
        let (manifest, chain) = load_with_depth(objects, id, false)?;
        self.previous = manifest;
        // Not walked here: the watcher knows nothing of changes since.
        self.watched_base = false;
        self.previous_walked_full = false;
        self.contents_stored = false;
        self.stored = Some((id.to_owned(), chain));
        Ok(())
    }

    /// Scans the tree and stores the manifest (as the changes from the last one stored, where
    /// that is small); returns its id and the scan.
    pub fn checkpoint(&mut self) -> std::io::Result<(String, Scan)> {
        self.checkpoint_after(&[])
    }

    /// [`Scanner::checkpoint`] after the built-in tools wrote `wrote` (absolute paths in the
    /// tree): where the file watcher's touched paths stand for a walk, these are listed again
    /// too (a watcher started at the first command did not see what they wrote before).
    pub fn checkpoint_after(&mut self, wrote: &[PathBuf]) -> std::io::Result<(String, Scan)> {
        // A failed walk (a full disk) took the watcher's touched paths: the next one walks all.
        let scan = self.walk(wrote).inspect_err(|_| self.watched_base = false)?;
        let saved = match (self.stored.take(), self.walk_changes.take()) {
            (_, Some((Some((base, chain)), changes))) => {
                save_changes(&self.objects, &scan.manifest, &base, chain, changes)
            }
            (_, Some((None, _))) => save_manifest_after(&self.objects, &scan.manifest, None),
            (stored, None) => {
                let after = stored.as_ref().map(|(id, chain)| Base {
                    id,
                    manifest: &self.previous,
                    chain: *chain,
                });
                save_manifest_after(&self.objects, &scan.manifest, after)
            }
        };
        // The walk's manifest is the state from here on, stored or not: a failed save (a
        // full disk) leaves nothing stored to describe it, and the next checkpoint walks all.
        self.previous = scan.manifest.clone();
        self.contents_stored = false;
        let (id, chain) = saved.inspect_err(|_| self.watched_base = false)?;
        self.stored = Some((id.clone(), chain));
        self.contents_stored = true;
        Ok((id, scan))
    }

    /// The checkpoint at the end of a turn during which only brute's built-in tools could
    /// change the tree (no command, hook or MCP tool ran): the turn's start, the last
    /// checkpoint stored, with the directories holding `wrote` (absolute paths in the tree)
    /// listed again instead of the whole tree walked. What the person changed elsewhere
    /// meanwhile is not the turn's: the next turn's start sees it. `None` when the last
    /// checkpoint is not `start`, or a listing cannot stand for the walk (an ignore file was
    /// written, or a path lies past PATH_MAX): then [`Scanner::checkpoint`] walks.
    pub fn checkpoint_written(&mut self, start: &str, wrote: &[PathBuf]) -> std::io::Result<Option<(String, Scan)>> {
        self.settle();
        let Some((id, chain)) = self.stored.clone().filter(|(id, _)| id == start) else {
            return Ok(None);
        };
        if self.too_big.is_some() {
            return Ok(None);
        }
        if wrote.is_empty() {
            self.last_walk = Walked::Touched;
            let scan = Scan {
                manifest: self.previous.clone(),
                skipped: self.skipped_known.iter().map(|(p, s)| (p.clone(), *s)).collect(),
                hashed: 0,
            };
            return Ok(Some((id, scan)));
        }
        self.git_baseline();
        let scan = match self.walk_touched(wrote.iter().cloned().collect()) {
            Err(e) if e.get_ref().is_some_and(|inner| inner.is::<DeepTouched>()) => return Ok(None),
            walked => match walked? {
                Some(scan) => scan,
                None => return Ok(None),
            },
        };
        let base = Base {
            id: &id,
            manifest: &self.previous,
            chain,
        };
        // A failed save (a full disk): the next checkpoint walks the whole tree.
        let (id, chain) = save_manifest_after(&self.objects, &scan.manifest, Some(base))
            .inspect_err(|_| self.watched_base = false)?;
        self.previous = scan.manifest.clone();
        self.stored = Some((id.clone(), chain));
        self.contents_stored = true;
        self.last_walk = Walked::Touched;
        self.previous_walked_full = false;
        Ok(Some((id, scan)))
    }

    pub fn objects(&self) -> &ObjectStore {
        &self.objects
    }

    /// The states of `paths` (relative) now, each observed as a walk would (a path that is
    /// gone, or not checkpointed, is absent), without walking the tree: what an undo compares
    /// the turn's changes with, and what a turn over the budget records of the files its
    /// tools change. Contents read are stored.
    pub fn states_of<'p>(&mut self, paths: impl IntoIterator<Item = &'p str>) -> std::io::Result<Manifest> {
        self.settle();
        self.git_baseline();
        let ctx = self.ctx();
        let own = own_data_dir(&self.root, &self.objects);
        let mut found = Manifest::new();
        let mut links: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
        for rel in paths {
            // What a walk never records: `.git`, and brute's own data directory.
            if rel.is_empty()
                || rel.split('/').any(|part| part == ".git")
                || own
                    .as_ref()
                    .is_some_and(|own| crate::session::relpath::under(&self.root, rel).starts_with(own))
            {
                continue;
            }
            // Under a directory that is a link now, the path is not in the tree (a walk
            // would not enter the link either). Each directory is looked at once.
            let mut dir = rel;
            let mut under_link = false;
            while let Some((parent, _)) = dir.rsplit_once('/') {
                let link = *links.entry(parent.to_owned()).or_insert_with(|| {
                    ctx.deep
                        .lstat(&crate::session::relpath::under(&self.root, parent))
                        .is_some_and(|m| m.file_type().is_symlink())
                });
                under_link |= link;
                dir = parent;
            }
            if under_link {
                continue;
            }
            let path = crate::session::relpath::under(&self.root, rel);
            let Some(meta) = ctx.deep.lstat(&path) else {
                continue;
            };
            let seen = observe_path(&ctx, &path, Some(meta.file_type()), || {
                Some(crate::session::stat::Stat::of(&meta))
            })?;
            let seen = match seen {
                Seen::Read(file) => read_file(&ctx, &file.rel, file.seen)?,
                seen => seen.owned(ctx.previous),
            };
            if let Seen::Entry(rel, state) = seen {
                found.insert(rel, state);
            }
        }
        let WalkCtx { pack, .. } = ctx;
        pack.into_inner().unwrap_or_else(|e| e.into_inner()).finish()?;
        Ok(found)
    }

    /// The git blob the last walk recorded for the file `rel`, if it names one.
    pub fn git_id(&self, rel: &str) -> Option<String> {
        self.previous
            .get(rel)
            .filter(|state| state.id.is_git())
            .map(|state| state.id.to_string())
    }

    /// The git blobs the last walk recorded for files that are no longer as it found them
    /// (changed, replaced or gone): what a command changed, told without a file watcher. Each
    /// such file is looked at once; `None` unless the tree is known to be small
    /// ([`SMALL_TREE`]: a big one's turn end copies them, as it does for a watcher that lost
    /// events).
    pub fn git_ids_changed(&self) -> Option<Vec<String>> {
        if !self.known_small() {
            return None;
        }
        let ids = self
            .previous
            .iter()
            .filter(|(_, state)| state.id.is_git())
            .filter(|(rel, state)| {
                let now = std::fs::symlink_metadata(crate::session::relpath::under(&self.root, rel));
                !now.is_ok_and(|meta| super::walk::unchanged_file(state, &meta))
            })
            .map(|(_, state)| state.id.to_string())
            .collect();
        Some(ids)
    }

    /// The git blobs the last walk recorded at `rel` and, for a directory, under it: what a
    /// change of `rel` would leave only git holding (see [`crate::session::keep`]).
    pub fn git_ids_at(&self, rel: &str) -> Vec<String> {
        if rel.is_empty() {
            return Vec::new();
        }
        let git = |state: &FileState| state.id.is_git();
        let mut ids: Vec<String> = self
            .previous
            .get(rel)
            .filter(|state| git(state))
            .map(|state| state.id.to_string())
            .into_iter()
            .collect();
        if self.previous.get(rel).is_some_and(|state| state.dir) {
            let prefix = format!("{rel}/");
            ids.extend(
                self.previous
                    .iter_from(&prefix)
                    .take_while(|(path, _)| path.starts_with(&prefix))
                    .filter(|(_, state)| git(state))
                    .map(|(_, state)| state.id.to_string()),
            );
        }
        ids
    }

    /// [`Scanner::known_as`], shared (no copy): it stays valid after the next scan.
    pub fn known_shared(&self, id: &str) -> Option<Arc<Manifest>> {
        self.stored
            .as_ref()
            .filter(|(stored, _)| stored == id)
            .map(|_| self.previous.clone())
    }

    /// The last manifest scanned, when it is the one stored as `id` (saves loading it).
    pub fn known_as(&self, id: &str) -> Option<&Manifest> {
        self.stored
            .as_ref()
            .filter(|(stored, _)| stored == id)
            .map(|_| &*self.previous)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Walks the tree and records every file and directory (not stored; see
    /// [`Scanner::checkpoint`]).
    pub fn scan(&mut self) -> std::io::Result<Scan> {
        let scan = self.walk(&[])?;
        self.previous = scan.manifest.clone();
        // What is stored no longer describes `previous`.
        self.stored = None;
        self.contents_stored = false;
        Ok(scan)
    }

    /// The walk itself, on `ignore`'s parallel walker: every entry goes through `walk::observe`
    /// (files whose metadata matches `previous` are not read again), each thread collects its
    /// own entries, and the manifest is built once from them all, sorted.
    fn walk(&mut self, wrote: &[PathBuf]) -> std::io::Result<Scan> {
        let walked = self.walk_once(wrote);
        if walked.is_err() {
            // What is known is older than the tree now: not a base to start watching from.
            self.previous_walked_full = false;
        }
        if walked.is_err() && self.too_big.is_some() {
            // No checkpoint follows for the session: its inotify watches go now.
            self.watch = None;
            self.watched_base = false;
        }
        walked
    }

    /// [`Scanner::walk`]: the watcher's touched paths and `wrote` listed again where the
    /// watcher watched the whole last walk, else the whole tree.
    fn walk_once(&mut self, wrote: &[PathBuf]) -> std::io::Result<Scan> {
        self.walk_changes = None;
        if let Some(reason) = &self.too_big {
            return Err(std::io::Error::other(reason.clone()));
        }
        hold_for_tests();
        // Read (again, when the index changed) before either kind of walk.
        self.prepare();
        if let Some(watch) = self.watch.clone().filter(|_| self.watched_base) {
            match watch.take() {
                Ok(mut touched) => {
                    touched.extend(wrote.iter().cloned());
                    let touched = match self.walk_touched(touched) {
                        Err(e) if e.get_ref().is_some_and(|inner| inner.is::<DeepTouched>()) => None,
                        walked => walked?,
                    };
                    if let Some(scan) = touched {
                        self.last_walk = Walked::Touched;
                        self.previous_walked_full = false;
                        return Ok(scan);
                    }
                    tracing::info!(
                        "an ignore file changed, or a touched directory lies past PATH_MAX: the checkpoint walks the whole tree"
                    );
                }
                Err(gap) => {
                    tracing::info!(%gap, "the checkpoint walks the whole tree");
                    self.gaps.push(gap);
                }
            }
        }
        self.watched_base = false;
        if let Some(watch) = &self.watch {
            watch.reset();
            watch.watch_dir(&self.root);
        }
        let scan = self.walk_full()?;
        self.skipped_known = scan.skipped.iter().cloned().collect();
        // inotify cannot watch past PATH_MAX either: a tree that deep is walked whole.
        self.watched_base = self.watch.as_ref().is_some_and(|w| !w.given_up()) && !self.deep_tree;
        self.last_walk = Walked::Full;
        self.previous_walked_full = true;
        Ok(scan)
    }

    /// A walker over `dir` (the root or a directory in it) with the checkpoint's rules: hidden
    /// files in, ignore files honoured (from parent directories too), never `.git` or brute's
    /// own data directory; each directory it will list is watched first.
    fn builder(&self, dir: &Path) -> ignore::WalkBuilder {
        // brute's own data directory inside the tree (started in $HOME) is never part of a
        // checkpoint: it changes while being read, and undo must never touch it.
        let own = own_data_dir(&self.root, &self.objects);
        let watch = self.watch.clone();
        let mut builder = ignore::WalkBuilder::new(dir);
        builder.hidden(false).require_git(false).filter_entry(move |e| {
            let keep = e.file_name() != ".git" && own.as_deref() != Some(e.path());
            if keep
                && let Some(watch) = &watch
                && e.file_type().is_some_and(|t| t.is_dir())
            {
                watch.watch_dir(e.path());
            }
            keep
        });
        builder
    }

    /// A new [`WalkCtx`] for one walk.
    fn ctx(&self) -> WalkCtx<'_> {
        WalkCtx {
            root: &self.root,
            deep: Deep::new(&self.root),
            own: own_data_dir(&self.root, &self.objects),
            deep_dirs: std::sync::Mutex::new(Vec::new()),
            previous: &self.previous,
            objects: &self.objects,
            pack: std::sync::Mutex::new(self.objects.pack()),
            max_file_bytes: self.max_file_bytes,
            contents_stored: self.contents_stored,
            git: self.git.clone(),
            now: SystemTime::now(),
            hashed: AtomicUsize::new(0),
            entries: AtomicUsize::new(0),
            budget: self.budget,
            started: std::time::Instant::now(),
            stop: std::sync::Mutex::new(None),
            collected: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The checkpoint from the watcher's touched paths: the previous manifest, with every
    /// directory that holds a touched path listed again (its entries through `walk::observe`, a
    /// new subdirectory walked whole, a vanished one dropped with all under it). `None`
    /// when an ignore file changed (what is ignored may have changed anywhere below it), or a
    /// touched directory lies deeper than a path reaches (the whole walk goes there through
    /// descriptors).
    fn walk_touched(&mut self, touched: BTreeSet<PathBuf>) -> std::io::Result<Option<Scan>> {
        let own = own_data_dir(&self.root, &self.objects);
        let mut dirs = BTreeSet::new();
        for path in &touched {
            let Ok(rel) = path.strip_prefix(&self.root) else {
                continue;
            };
            if own.as_ref().is_some_and(|own| path.starts_with(own)) {
                continue;
            }
            if path.file_name().is_some_and(|n| n == ".gitignore" || n == ".ignore") {
                return Ok(None);
            }
            let rel = crate::session::relpath::spell(rel);
            // A path is listed by its directory (the root's own events by the root).
            let dir = rel.rsplit_once('/').map_or("", |(dir, _)| dir);
            dirs.insert(anchor(&self.previous, dir).to_owned());
        }
        let mut manifest = (*self.previous).clone();
        let mut skipped = self.skipped_known.clone();
        let ctx = self.ctx();
        for dir in &dirs {
            let full = if dir.is_empty() {
                self.root.clone()
            } else {
                crate::session::relpath::under(&self.root, dir)
            };
            match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_dir() => {}
                // Past PATH_MAX: only the whole walk reaches it (see `walk_deep`).
                Err(e) if too_long(&e) => return Ok(None),
                _ => continue, // gone: its parent's listing drops it
            }
            let mut found = Manifest::new();
            let mut found_skipped = BTreeMap::new();
            let mut stat = crate::session::stat::DirStat::default();
            for entry in self.builder(&full).max_depth(Some(1)).build() {
                let Some(entry) = reachable(entry)? else { continue };
                if entry.depth() == 0 {
                    continue;
                }
                match observe_now(&ctx, &entry, &mut stat)? {
                    Seen::Entry(rel, state) => {
                        found.insert(rel, state);
                    }
                    Seen::TooLarge(rel, size) => {
                        found_skipped.insert(rel, size);
                    }
                    // observe_now reads what it must, and copies what is unchanged
                    Seen::Nothing | Seen::Read(_) | Seen::Same(_) => {}
                }
            }
            for (path, was_dir) in children(&manifest, dir) {
                let now_dir = found.get(&path).map(|s| s.dir);
                if now_dir.is_none() {
                    manifest.remove(&path);
                }
                if was_dir && now_dir != Some(true) {
                    remove_under(&mut manifest, &path);
                    skipped.retain(|p, _| !p.starts_with(&format!("{path}/")));
                }
            }
            skipped.retain(|p, _| p.rsplit_once('/').map_or("", |(d, _)| d) != dir.as_str());
            skipped.extend(found_skipped);
            for (path, state) in found {
                let new_dir = state.dir && manifest.get(&path).is_none_or(|was| !was.dir);
                manifest.insert(path.clone(), state);
                if new_dir {
                    // A directory made since the last checkpoint: all of it is new.
                    for entry in self.builder(&crate::session::relpath::under(&self.root, &path)).build() {
                        let Some(entry) = reachable(entry)? else { continue };
                        if entry.depth() == 0 {
                            continue;
                        }
                        match observe_now(&ctx, &entry, &mut stat)? {
                            Seen::Entry(rel, state) => {
                                manifest.insert(rel, state);
                            }
                            Seen::TooLarge(rel, size) => {
                                skipped.insert(rel, size);
                            }
                            // observe_now reads what it must, and copies what is unchanged
                            Seen::Nothing | Seen::Read(_) | Seen::Same(_) => {}
                        }
                    }
                }
            }
        }
        let WalkCtx { pack, hashed, .. } = ctx;
        pack.into_inner().unwrap_or_else(|e| e.into_inner()).finish()?;
        if manifest.len() > self.budget.entries {
            let message = format!(
                "{} has more than {} files and directories (checkpoint_max_entries)",
                self.root.display(),
                self.budget.entries
            );
            self.too_big = Some(message.clone());
            return Err(std::io::Error::other(message));
        }
        self.skipped_known = skipped.clone();
        Ok(Some(Scan {
            manifest: Arc::new(manifest),
            skipped: skipped.into_iter().collect(),
            hashed: hashed.into_inner(),
        }))
    }

    /// A walk of the whole tree on the parallel walker (one thread for a tree known to be
    /// small: starting and stopping threads would cost more than they save).
    fn walk_full(&mut self) -> std::io::Result<Scan> {
        let small = self.known_small();
        let threads = if small {
            1
        } else {
            std::thread::available_parallelism().map_or(2, |n| n.get()).min(8)
        };
        let walker = self.builder(&self.root).threads(threads).build_parallel();
        let ctx = self.ctx();
        // First the listing (metadata only, as `rg --files`): a tree over the budget is known
        // before any file is read. Then the files that need it are read, on as many threads.
        walker.visit(&mut Collector { ctx: &ctx });
        let deep = std::mem::take(&mut *ctx.deep_dirs.lock().unwrap_or_else(|e| e.into_inner()));
        let deep_tree = !deep.is_empty();
        for dir in deep {
            if ctx.stopped() {
                break;
            }
            let local = walk_deep(&ctx, &dir);
            ctx.collected.lock().unwrap_or_else(|e| e.into_inner()).push(local);
        }
        if !ctx.stopped() {
            let read = read_pending(&ctx, threads);
            ctx.collected.lock().unwrap_or_else(|e| e.into_inner()).push(read);
        }
        let WalkCtx {
            pack,
            hashed,
            stop,
            collected,
            ..
        } = ctx;
        self.deep_tree = deep_tree;
        match stop.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Stop::Budget(message)) => {
                self.too_big = Some(message.clone());
                return Err(std::io::Error::other(message));
            }
            Some(Stop::Failed(error)) => return Err(error),
            None => {}
        }
        pack.into_inner().unwrap_or_else(|e| e.into_inner()).finish()?;
        let all = Local::gather(collected.into_inner().unwrap_or_else(|e| e.into_inner()));
        let Local {
            entries,
            same,
            mut skipped,
            ..
        } = all;
        skipped.sort_unstable();
        // Nothing stored describes `previous` while it is being updated (not even after a
        // panic here): where it was stored goes with the changes.
        let stored = self.stored.take();
        let previous = std::mem::take(&mut self.previous);
        let (manifest, changes) = updated(previous, same, entries);
        if manifest.len() > SMALL_TREE {
            give_back_freed_memory();
        }
        // Found against nothing, every entry is a change: the manifest is stored whole.
        let stored = stored.filter(|_| changes.is_some());
        self.walk_changes = Some((stored, changes.unwrap_or_default()));
        Ok(Scan {
            manifest: Arc::new(manifest),
            skipped,
            hashed: hashed.into_inner(),
        })
    }
}

/// Returns to the system what a big walk freed: its threads' paths, lists and read buffers
/// sit free in the allocator's arenas, where they would count toward the run's peak memory
/// for the rest of it (glibc's `malloc_trim` gives back every free page, not only the heap's
/// top).
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator brute uses.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The manifest a full walk found: `previous` with the entries it found unchanged (`same`)
/// kept, those it found new or changed (`changed`) set, and every other path gone. Updated in
/// place when nothing else holds `previous` (a big tree's walk then holds one manifest, not
/// two); a walk with no previous manifest sorts `changed` into it in place. No changes
/// (`None`) when `previous` is empty and the manifest is not: all of it is new, and listing
/// it again as changes would hold a second copy of a big tree's first manifest.
fn updated(previous: Arc<Manifest>, mut same: Unchanged, changed: Found) -> (Manifest, Option<Changes>) {
    // Sorted, one state per path: a first walk's list becomes its manifest in place.
    let changed = Manifest::from(changed);
    if same.count == 0 {
        if previous.is_empty() && !changed.is_empty() {
            return (changed, None);
        }
        let changes = Changes::between(&previous, &changed);
        return (changed, Some(changes));
    }
    // Every path the walk saw is reported once, as unchanged (always a path of `previous`)
    // or as found: when these cover every path of `previous`, none is gone, and the unchanged
    // ones need not be matched. (A directory changed while it is listed may have a name
    // listed twice and another not at all; that is a change during the walk, which the next
    // checkpoint sees: no checkpoint is exact about what changes while it is taken.)
    let changed_known = changed.keys().filter(|path| previous.contains_key(path)).count();
    let none_gone = same.count + changed_known == previous.len();
    let mut manifest = Arc::unwrap_or_clone(previous);
    let gone: Vec<String> = if none_gone {
        Vec::new()
    } else {
        same.paths.sort_unstable();
        let mut changed = changed.keys().peekable();
        manifest
            .unseen(&same.at, &same.paths)
            .into_iter()
            .filter(|path| {
                while changed.next_if(|p| *p < path.as_str()).is_some() {}
                changed.peek() != Some(&path.as_str())
            })
            .collect()
    };
    drop(same);
    for path in &gone {
        manifest.remove(path);
    }
    // Only what differs is copied (in path order, `set` appends): a walk that found much
    // changed holds its list and the differences, not a heap string per path besides.
    let mut set = Manifest::new();
    for (path, state) in changed.iter() {
        if manifest.get(path) != Some(state) {
            set.push(path, state.clone());
            manifest.insert(path.to_owned(), state.clone());
        }
    }
    (manifest, Some(Changes { set, del: gone }))
}

/// The directory `dir` (relative, `""` for the root) if the manifest has it as a directory,
/// else its nearest ancestor that it has (a path in a directory made since is listed from
/// the directory the manifest knows).
fn anchor<'a>(manifest: &Manifest, mut dir: &'a str) -> &'a str {
    while !dir.is_empty() && !manifest.get(dir).is_some_and(|s| s.dir) {
        dir = dir.rsplit_once('/').map_or("", |(parent, _)| parent);
    }
    dir
}

/// The entries directly in `dir` (relative, `""` for the root): path and whether a directory.
fn children(manifest: &Manifest, dir: &str) -> Vec<(String, bool)> {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    manifest
        .iter_from(&prefix)
        .take_while(|(path, _)| path.starts_with(&prefix))
        .filter(|(path, _)| !path[prefix.len()..].contains('/'))
        .map(|(path, state)| (path.to_owned(), state.dir))
        .collect()
}

/// Removes everything under directory `dir` (not `dir` itself).
fn remove_under(manifest: &mut Manifest, dir: &str) {
    let prefix = format!("{dir}/");
    let under: Vec<String> = manifest
        .iter_from(&prefix)
        .take_while(|(path, _)| path.starts_with(&prefix))
        .map(|(path, _)| path.to_owned())
        .collect();
    for path in under {
        manifest.remove(&path);
    }
}

/// How the last walk went: over the whole tree, or only the directories the file watcher
/// saw touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Walked {
    #[default]
    Full,
    Touched,
}

/// How much a checkpoint may walk: past either limit, checkpoints of the whole tree are off
/// for the session (a home directory or a huge monorepo would otherwise be copied, or every
/// turn would wait on the walk); turns then record what the built-in tools change (see
/// [`crate::session::keep`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Files and directories, at most.
    pub entries: usize,
    /// Time one walk may take, at most (a slow or enormous tree).
    pub time: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            entries: DEFAULT_MAX_ENTRIES,
            time: DEFAULT_MAX_WALK,
        }
    }
}

impl Drop for Scanner {
    /// A big tree's manifest and git index are hundreds of thousands of allocations, freed
    /// in milliseconds: on a thread of their own, so a `brute -p` run that ends with its
    /// scanner exits without waiting for them (the process ending frees them anyway).
    fn drop(&mut self) {
        if self.previous.len() < SMALL_TREE {
            return;
        }
        let big = (std::mem::take(&mut self.previous), self.git.take());
        let _ = std::thread::Builder::new()
            .name("brute-free".into())
            .spawn(move || drop(big));
    }
}

/// A test seam: with `BRUTE_TEST_HOLD_CHECKPOINT` naming a FIFO, the first walk of the
/// process waits until something writes a line to it (tests hold a checkpoint back to see
/// what runs meanwhile). Not for use outside tests.
fn hold_for_tests() {
    static HELD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let Some(path) = std::env::var_os("BRUTE_TEST_HOLD_CHECKPOINT") else {
        return;
    };
    if HELD.swap(true, Ordering::SeqCst) {
        return;
    }
    if let Ok(file) = std::fs::File::open(&path) {
        let mut line = String::new();
        let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(file), &mut line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(n: u64) -> FileState {
        FileState {
            id: format!("{n:064}").into(),
            size: n,
            mode: 0o644,
            mtime_ns: n,
            ctime_ns: n,
            ..Default::default()
        }
    }

    /// Every mix of kept, changed, made and gone paths gives the manifest and the changes a
    /// walk that built it afresh would, whether the last manifest is updated in place or
    /// shared (then copied).
    #[test]
    fn a_walk_updates_the_last_manifest_as_a_fresh_build_would() {
        let mut rounds_with_gone = [0; 2];
        let mut rounds_against_nothing = 0;
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 33
        };
        for round in 0..200 {
            // Every eighth round walks against nothing, as a first walk does.
            let kept = if round % 8 == 0 { 0 } else { next() % 40 };
            let mut previous: Manifest = (0..kept).map(|i| (format!("p{:03}", i * 2), state(i))).collect();
            // Some rounds' last manifest has entries set and removed since it was sorted (a
            // walk then finds some unchanged ones by path, not by place).
            if round % 3 == 0 {
                for i in 0..next() % 6 {
                    previous.insert(format!("p{:03}", 200 + i * 2), state(i));
                    previous.remove(&format!("p{:03}", i * 4));
                }
            }
            let (mut same, mut changed, mut expected) = (Vec::new(), Vec::new(), Manifest::new());
            // Half the rounds lose no path (the walk then need not match the unchanged ones).
            let kinds = if round % 4 < 2 { 2 } else { 3 };
            for (path, was) in &previous {
                match next() % kinds {
                    0 => {
                        same.push(path.to_owned());
                        expected.insert(path.to_owned(), was.clone());
                    }
                    // Read again: sometimes the very state it had.
                    1 => {
                        let now = if next() % 2 == 0 {
                            was.clone()
                        } else {
                            state(1000 + next() % 5)
                        };
                        changed.push((path.to_owned(), now.clone()));
                        expected.insert(path.to_owned(), now);
                    }
                    _ => {} // gone
                }
            }
            for i in 0..next() % 5 {
                let path = format!("p{:03}", i * 2 + 1);
                changed.push((path.clone(), state(i)));
                expected.insert(path, state(i));
            }
            // Walker threads hand their finds over in no order.
            same.reverse();
            changed.reverse();
            let fresh = Changes::between(&previous, &expected);
            let before = previous.clone();
            let previous = Arc::new(previous);
            let holder = (round % 2 == 0).then(|| previous.clone());
            let mut unchanged = Unchanged::default();
            for path in same {
                let (at, _) = previous.locate(&path).expect("a path of the last manifest");
                unchanged.add(super::super::walk::Kept::of(path, at));
            }
            let mut found = Found::default();
            for (path, state) in changed {
                found.push(&path, state);
            }
            let (manifest, changes) = updated(previous, unchanged, found);
            rounds_with_gone[usize::from(!fresh.del.is_empty())] += 1;
            assert_eq!(manifest, expected, "round {round}");
            let against_nothing = before.is_empty() && !expected.is_empty();
            rounds_against_nothing += usize::from(against_nothing);
            assert_eq!(changes.is_none(), against_nothing, "round {round}");
            match changes {
                Some(changes) => assert_eq!((changes.set, changes.del), (fresh.set, fresh.del), "round {round}"),
                // Only against nothing: every entry is new, and the manifest is stored whole.
                None => assert!(
                    before.is_empty() && !expected.is_empty() && fresh.set == expected,
                    "round {round}"
                ),
            }
            if let Some(holder) = holder {
                assert_eq!(*holder, before, "a shared manifest is left as it was");
            }
        }
        assert!(rounds_with_gone.iter().all(|n| *n > 40), "{rounds_with_gone:?}");
        assert!(rounds_against_nothing >= 20, "{rounds_against_nothing}");
    }
}
