//! Checkpoints of a project tree: a manifest of every file and directory (respecting
//! .gitignore, never entering `.git`), file contents in the [`ObjectStore`]. Scans are
//! incremental: a file whose size, mtime, ctime and mode did not change keeps its recorded
//! hash without being read. Works in any directory, git repository or not, and never touches git.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::objects::ObjectStore;

/// A tree with more entries than this is not checkpointed by default (brute started in a
/// home directory or a huge monorepo would otherwise copy it all); see [`Budget`].
pub const DEFAULT_MAX_ENTRIES: usize = 500_000;
/// A walk that takes longer than this turns checkpoints off by default (see [`Budget`]).
pub const DEFAULT_MAX_WALK: Duration = Duration::from_secs(60);

/// A tree that is not a repository and holds more than this many entries is not checkpointed
/// without asking: it is more likely a home or downloads folder than a project.
pub const UNASKED_ENTRIES: usize = 20_000;
/// The same for total file bytes.
pub const UNASKED_BYTES: u64 = 1024 * 1024 * 1024;

/// Where brute's data directory (the parent of the object store) lies inside `root`, as the
/// walker spells paths under `root`; `None` when it is elsewhere.
fn own_data_dir(root: &Path, objects: &ObjectStore) -> Option<PathBuf> {
    let data = objects.dir().parent()?;
    let data = data.canonicalize().unwrap_or_else(|_| data.to_path_buf());
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let rel = data.strip_prefix(&real_root).ok()?;
    (!rel.as_os_str().is_empty()).then(|| root.join(rel))
}

/// The notice for paused checkpoints (see [`copy_warning`]).
pub fn paused_notice(reason: &str) -> String {
    format!(
        "turn checkpoints are off: {reason}, and a checkpoint would copy that tree into brute's data directory. /undo covers single tool calls only; start brute in a project directory for whole-turn undo"
    )
}

/// Why checkpointing `root` needs the person's consent, if it does: it is `/` or the home
/// directory, or it is not a repository (no `.git` or `.brute`) and is large. The size walk
/// stops at the limits, so it is cheap whatever the tree.
pub fn copy_warning(root: &Path) -> Option<String> {
    let real = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    if real.parent().is_none() {
        return Some("brute was started in `/`".to_owned());
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    if let Some(home) = home
        && (real == home || Some(&real) == home.canonicalize().ok().as_ref())
    {
        return Some("brute was started in your home directory".to_owned());
    }
    if root.join(".git").exists() || root.join(".brute").exists() {
        return None;
    }
    let (mut entries, mut bytes) = (0usize, 0u64);
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walker.flatten() {
        entries += 1;
        bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
        if entries > UNASKED_ENTRIES || bytes > UNASKED_BYTES {
            return Some(format!(
                "{} is not a repository and holds more than {UNASKED_ENTRIES} files or 1 GiB",
                root.display()
            ));
        }
    }
    None
}
/// A tree known to have fewer entries is walked on one thread, and gets no file watcher (its
/// walk costs less than the watcher: inotify, a thread, a fence per checkpoint).
pub const SMALL_TREE: usize = 2_000;
/// Files bigger than this are not checkpointed by default (configurable).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Files modified this recently are re-read even when their metadata matches (an edit within
/// the filesystem's timestamp granularity would otherwise go unseen).
const RACY_WINDOW: Duration = Duration::from_secs(2);

/// One path's recorded state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    /// Object id of the content; empty for a directory. `git:<hex>` names a blob of the
    /// project's git repository (see [`super::git_baseline`]).
    pub id: String,
    pub size: u64,
    pub mode: u32,
    pub mtime_ns: u64,
    /// Status-change time: nothing can set it back, so an edit that restores the old size and
    /// mtime is still seen (0 in manifests written before it was recorded).
    #[serde(default)]
    pub ctime_ns: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dir: bool,
    /// A symbolic link; `id` holds its target (as bytes), never what it points to.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub link: bool,
    /// The content's git blob id, for a file stored in brute's store in a git repository:
    /// the same content referenced as `git:<hex>` (when git's index records it) is the same.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub git: String,
}

impl FileState {
    /// The git blob id of the content, when known.
    pub fn git_blob(&self) -> Option<&str> {
        super::git_baseline::git_hex(&self.id).or((!self.git.is_empty()).then_some(self.git.as_str()))
    }

    /// Same content, kind and permissions (timestamps aside; a link's own mode means nothing).
    pub fn same_content(&self, other: &FileState) -> bool {
        let same_blob = || self.git_blob().is_some_and(|a| other.git_blob() == Some(a));
        (self.id == other.id || (!self.dir && !self.link && same_blob()))
            && self.dir == other.dir
            && self.link == other.link
            && (self.link || self.mode & 0o7777 == other.mode & 0o7777)
    }
}

/// Path (relative, `/`-separated) → state.
pub type Manifest = BTreeMap<String, FileState>;

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
    watch: Option<Arc<super::watch::TreeWatch>>,
    /// `previous` is a full walk made while the watcher watched every directory in it: the
    /// next checkpoint may re-list only what it saw touched.
    watched_base: bool,
    /// The files over the size cap in `previous`.
    skipped_known: BTreeMap<String, u64>,
    last_walk: Walked,
    /// Why checkpoints walked the whole tree though a watcher ran (for notices and tests).
    gaps: Vec<super::watch::Gap>,
    /// `previous` is a checkpoint this scanner stored: every content it names is in the store
    /// and named by the session (kept from pruning), so a file reused by its metadata needs
    /// no store lookup. A seed's or a bare scan's contents are looked up file by file.
    contents_stored: bool,
    /// git's index and attribute rules for the root, read again when the index changes.
    git: Option<std::sync::Arc<super::git_baseline::GitBaseline>>,
    /// The last full walk found directories deeper than a path reaches (see [`walk_deep`]).
    deep_tree: bool,
}

fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|m| m.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64)
}

fn ctime_ns(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    (meta.ctime().max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(meta.ctime_nsec().max(0) as u64)
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
            gaps: Vec::new(),
            contents_stored: false,
            git: None,
            deep_tree: false,
        }
    }

    /// The git baseline for this scan: the one read before while the index is unchanged, else
    /// read now (`None` outside git or where git's state is doubtful).
    fn git_baseline(&mut self) -> Option<std::sync::Arc<super::git_baseline::GitBaseline>> {
        if !self.git.as_ref().is_some_and(|g| g.is_current()) {
            self.git = super::git_baseline::GitBaseline::open(&self.root).map(std::sync::Arc::new);
        }
        self.git.clone()
    }

    /// Starts a file watcher: from the next full walk on, checkpoints re-list only the
    /// directories it saw touched. Fails (and every checkpoint keeps walking) where inotify
    /// cannot start.
    pub fn watch(&mut self) -> Result<(), super::watch::Gap> {
        if self.watch.is_none() {
            self.watch = Some(Arc::new(super::watch::TreeWatch::start()?));
            self.watched_base = false;
        }
        Ok(())
    }

    /// The watcher, when one runs (tests inject an overflow through it).
    pub fn watcher(&self) -> Option<Arc<super::watch::TreeWatch>> {
        self.watch.clone()
    }

    /// How the last walk went.
    pub fn last_walk(&self) -> Walked {
        self.last_walk
    }

    /// Why walks fell back to the whole tree though a watcher ran, oldest first.
    pub fn gaps(&self) -> &[super::watch::Gap] {
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
        !self.previous.is_empty()
    }

    /// Whether the tree is known to be small (under [`SMALL_TREE`] entries).
    pub fn known_small(&self) -> bool {
        !self.previous.is_empty() && self.previous.len() < SMALL_TREE
    }

    /// Seeds the metadata cache with a stored manifest (e.g. the last of a resumed session);
    /// the next checkpoint is stored as the changes from it.
    pub fn remember(&mut self, objects: &ObjectStore, id: &str) -> std::io::Result<()> {
        let (manifest, chain) = load_with_depth(objects, id)?;
        self.previous = manifest;
        // Not walked here: the watcher knows nothing of changes since.
        self.watched_base = false;
        self.contents_stored = false;
        self.stored = Some((id.to_owned(), chain));
        Ok(())
    }

    /// Scans the tree and stores the manifest (as the changes from the last one stored, where
    /// that is small); returns its id and the scan.
    pub fn checkpoint(&mut self) -> std::io::Result<(String, Scan)> {
        // A failed walk (a full disk) took the watcher's touched paths: the next one walks all.
        let scan = self.walk().inspect_err(|_| self.watched_base = false)?;
        let after = self.stored.as_ref().map(|(id, chain)| Base {
            id,
            manifest: &self.previous,
            chain: *chain,
        });
        let (id, chain) =
            save_manifest_after(&self.objects, &scan.manifest, after).inspect_err(|_| self.watched_base = false)?;
        self.previous = scan.manifest.clone();
        self.stored = Some((id.clone(), chain));
        self.contents_stored = true;
        Ok((id, scan))
    }

    pub fn objects(&self) -> &ObjectStore {
        &self.objects
    }

    /// The states of `paths` (relative) now, each observed as a walk would (a path that is
    /// gone, or not checkpointed, is absent), without walking the tree: what an undo compares
    /// the turn's changes with, and what a turn over the budget records of the files its
    /// tools change. Contents read are stored.
    pub fn states_of<'p>(&mut self, paths: impl IntoIterator<Item = &'p str>) -> std::io::Result<Manifest> {
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
                    .is_some_and(|own| super::relpath::under(&self.root, rel).starts_with(own))
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
                        .lstat(&super::relpath::under(&self.root, parent))
                        .is_some_and(|m| m.file_type().is_symlink())
                });
                under_link |= link;
                dir = parent;
            }
            if under_link {
                continue;
            }
            let path = super::relpath::under(&self.root, rel);
            let Some(meta) = ctx.deep.lstat(&path) else {
                continue;
            };
            let seen = observe_path(&ctx, &path, Some(meta.file_type()), || Some(meta.clone()))?;
            let seen = match seen {
                Seen::Read(file) => read_file(&ctx, &file)?,
                seen => seen,
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
            .filter(|state| super::git_baseline::git_hex(&state.id).is_some())
            .map(|state| state.id.clone())
    }

    /// The git blobs the last walk recorded at `rel` and, for a directory, under it: what a
    /// change of `rel` would leave only git holding (see [`super::keep`]).
    pub fn git_ids_at(&self, rel: &str) -> Vec<String> {
        if rel.is_empty() {
            return Vec::new();
        }
        let git = |state: &FileState| super::git_baseline::git_hex(&state.id).is_some();
        let mut ids: Vec<String> = self
            .previous
            .get(rel)
            .filter(|state| git(state))
            .map(|state| state.id.clone())
            .into_iter()
            .collect();
        if self.previous.get(rel).is_some_and(|state| state.dir) {
            let prefix = format!("{rel}/");
            ids.extend(
                self.previous
                    .range::<str, _>((std::ops::Bound::Included(prefix.as_str()), std::ops::Bound::Unbounded))
                    .take_while(|(path, _)| path.starts_with(&prefix))
                    .filter(|(_, state)| git(state))
                    .map(|(_, state)| state.id.clone()),
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
        let scan = self.walk()?;
        self.previous = scan.manifest.clone();
        // What is stored no longer describes `previous`.
        self.stored = None;
        self.contents_stored = false;
        Ok(scan)
    }

    /// The walk itself, on `ignore`'s parallel walker: every entry goes through [`observe`]
    /// (files whose metadata matches `previous` are not read again), each thread collects its
    /// own entries, and the manifest is built once from them all, sorted.
    fn walk(&mut self) -> std::io::Result<Scan> {
        let walked = self.walk_once();
        if walked.is_err() && self.too_big.is_some() {
            // No checkpoint follows for the session: its inotify watches go now.
            self.watch = None;
            self.watched_base = false;
        }
        walked
    }

    fn walk_once(&mut self) -> std::io::Result<Scan> {
        if let Some(reason) = &self.too_big {
            return Err(std::io::Error::other(reason.clone()));
        }
        hold_for_tests();
        // Read (again, when the index changed) before either kind of walk.
        self.git_baseline();
        if let Some(watch) = self.watch.clone().filter(|_| self.watched_base) {
            match watch.take() {
                Ok(touched) => {
                    let touched = match self.walk_touched(touched) {
                        Err(e) if e.get_ref().is_some_and(|inner| inner.is::<DeepTouched>()) => None,
                        walked => walked?,
                    };
                    if let Some(scan) = touched {
                        self.last_walk = Walked::Touched;
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
    /// directory that holds a touched path listed again (its entries through [`observe`], a
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
            let rel = super::relpath::spell(rel);
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
                super::relpath::under(&self.root, dir)
            };
            match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_dir() => {}
                // Past PATH_MAX: only the whole walk reaches it (see `walk_deep`).
                Err(e) if too_long(&e) => return Ok(None),
                _ => continue, // gone: its parent's listing drops it
            }
            let mut found = Manifest::new();
            let mut found_skipped = BTreeMap::new();
            for entry in self.builder(&full).max_depth(Some(1)).build() {
                let Some(entry) = reachable(entry)? else { continue };
                if entry.depth() == 0 {
                    continue;
                }
                match observe_now(&ctx, &entry)? {
                    Seen::Entry(rel, state) => {
                        found.insert(rel, state);
                    }
                    Seen::TooLarge(rel, size) => {
                        found_skipped.insert(rel, size);
                    }
                    // observe_now reads what it must
                    Seen::Nothing | Seen::Read(_) => {}
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
                    for entry in self.builder(&super::relpath::under(&self.root, &path)).build() {
                        let Some(entry) = reachable(entry)? else { continue };
                        if entry.depth() == 0 {
                            continue;
                        }
                        match observe_now(&ctx, &entry)? {
                            Seen::Entry(rel, state) => {
                                manifest.insert(rel, state);
                            }
                            Seen::TooLarge(rel, size) => {
                                skipped.insert(rel, size);
                            }
                            // observe_now reads what it must
                            Seen::Nothing | Seen::Read(_) => {}
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
        let mut entries = Vec::new();
        let mut skipped = Vec::new();
        for local in collected.into_inner().unwrap_or_else(|e| e.into_inner()) {
            entries.extend(local.entries);
            skipped.extend(local.skipped);
        }
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        skipped.sort_unstable();
        Ok(Scan {
            // Sorted input: the map is built in one pass, not by inserting one by one.
            manifest: Arc::new(entries.into_iter().collect()),
            skipped,
            hashed: hashed.into_inner(),
        })
    }
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
        .range::<str, _>((std::ops::Bound::Included(prefix.as_str()), std::ops::Bound::Unbounded))
        .take_while(|(path, _)| path.starts_with(&prefix))
        .filter(|(path, _)| !path[prefix.len()..].contains('/'))
        .map(|(path, state)| (path.clone(), state.dir))
        .collect()
}

/// Removes everything under directory `dir` (not `dir` itself).
fn remove_under(manifest: &mut Manifest, dir: &str) {
    let prefix = format!("{dir}/");
    let under: Vec<String> = manifest
        .range::<str, _>((std::ops::Bound::Included(prefix.as_str()), std::ops::Bound::Unbounded))
        .take_while(|(path, _)| path.starts_with(&prefix))
        .map(|(path, _)| path.clone())
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
/// [`super::keep`]).
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

/// Why a walk stopped early.
enum Stop {
    Budget(String),
    Failed(std::io::Error),
}

/// What one walk shares between its threads.
struct WalkCtx<'a> {
    root: &'a Path,
    /// The tree past the depth a path reaches at once (see [`Deep`]).
    deep: Deep,
    /// brute's own data directory, when it lies in the tree (never recorded).
    own: Option<PathBuf>,
    /// Directories the walker could not list because their path is longer than the kernel
    /// takes (PATH_MAX): walked by descriptors after the listing (see [`walk_deep`]).
    deep_dirs: std::sync::Mutex<Vec<PathBuf>>,
    previous: &'a Manifest,
    objects: &'a ObjectStore,
    pack: std::sync::Mutex<super::objects::PackWriter>,
    max_file_bytes: u64,
    /// See [`Scanner::contents_stored`].
    contents_stored: bool,
    /// git's index for the root, when its blobs can be baselines.
    git: Option<std::sync::Arc<super::git_baseline::GitBaseline>>,
    now: SystemTime,
    hashed: AtomicUsize,
    entries: AtomicUsize,
    budget: Budget,
    started: std::time::Instant,
    stop: std::sync::Mutex<Option<Stop>>,
    collected: std::sync::Mutex<Vec<Local>>,
}

impl WalkCtx<'_> {
    fn stop(&self, why: Stop) {
        let mut stop = self.stop.lock().unwrap_or_else(|e| e.into_inner());
        stop.get_or_insert(why);
    }

    fn stopped(&self) -> bool {
        self.stop.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Counts one entry against the budget; the message when it is spent.
    fn spend(&self) -> Option<String> {
        let n = self.entries.fetch_add(1, Ordering::Relaxed) + 1;
        if n > self.budget.entries {
            return Some(format!(
                "{} has more than {} files and directories (checkpoint_max_entries)",
                self.root.display(),
                self.budget.entries
            ));
        }
        // The clock is read every 1024 entries only.
        if n.is_multiple_of(1024) {
            return self.overtime();
        }
        None
    }

    /// The message when the walk has taken longer than the budget allows.
    fn overtime(&self) -> Option<String> {
        (self.started.elapsed() > self.budget.time).then(|| {
            format!(
                "walking {} took longer than {} s",
                self.root.display(),
                self.budget.time.as_secs()
            )
        })
    }
}

/// Reads the files the listing left to read (see [`Seen::Read`]) on up to `threads` threads
/// (this one for a few), within the walk's time budget.
fn read_pending(ctx: &WalkCtx<'_>, threads: usize) -> Local {
    let pending: Vec<Pending> = {
        let mut collected = ctx.collected.lock().unwrap_or_else(|e| e.into_inner());
        collected
            .iter_mut()
            .flat_map(|l| std::mem::take(&mut l.pending))
            .collect()
    };
    let next = AtomicUsize::new(0);
    let work = || {
        let mut local = Local::default();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(file) = pending.get(i) else {
                break;
            };
            if i.is_multiple_of(256) {
                if let Some(message) = ctx.overtime() {
                    ctx.stop(Stop::Budget(message));
                }
                if ctx.stopped() {
                    break;
                }
            }
            match read_file(ctx, file) {
                Ok(seen) => local.add(seen),
                Err(error) => {
                    ctx.stop(Stop::Failed(error));
                    break;
                }
            }
        }
        local
    };
    let threads = threads.min(pending.len() / 64).max(1);
    if threads == 1 {
        return work();
    }
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut all = work();
        for helper in helpers {
            match helper.join() {
                Ok(local) => {
                    all.entries.extend(local.entries);
                    all.skipped.extend(local.skipped);
                }
                // Its files would be missing from the manifest (as if the turn made them).
                Err(_) => ctx.stop(Stop::Failed(std::io::Error::other(
                    "a checkpoint reader thread panicked",
                ))),
            }
        }
        all
    })
}

/// One walker thread's findings, handed over when the thread is done.
#[derive(Default)]
struct Local {
    entries: Vec<(String, FileState)>,
    skipped: Vec<(String, u64)>,
    /// Files to read once the listing is complete.
    pending: Vec<Pending>,
}

impl Local {
    fn add(&mut self, seen: Seen) {
        match seen {
            Seen::Entry(rel, state) => self.entries.push((rel, state)),
            Seen::TooLarge(rel, size) => self.skipped.push((rel, size)),
            Seen::Read(file) => self.pending.push(file),
            Seen::Nothing => {}
        }
    }
}

struct Collector<'a, 'c> {
    ctx: &'a WalkCtx<'c>,
}

impl<'s, 'c> ignore::ParallelVisitorBuilder<'s> for Collector<'s, 'c> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Visitor {
            ctx: self.ctx,
            local: Local::default(),
        })
    }
}

struct Visitor<'a, 'c> {
    ctx: &'a WalkCtx<'c>,
    local: Local,
}

impl ignore::ParallelVisitor for Visitor<'_, '_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                if let Some(dir) = too_long_to_list(&error) {
                    self.ctx
                        .deep_dirs
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(dir.to_path_buf());
                }
                return ignore::WalkState::Continue;
            }
        };
        if entry.depth() == 0 {
            return ignore::WalkState::Continue;
        }
        if let Some(message) = self.ctx.spend() {
            self.ctx.stop(Stop::Budget(message));
            return ignore::WalkState::Quit;
        }
        match observe(self.ctx, &entry) {
            Ok(seen) => self.local.add(seen),
            Err(error) => {
                self.ctx.stop(Stop::Failed(error));
                return ignore::WalkState::Quit;
            }
        }
        ignore::WalkState::Continue
    }
}

impl Drop for Visitor<'_, '_> {
    fn drop(&mut self) {
        let local = std::mem::take(&mut self.local);
        self.ctx.collected.lock().unwrap_or_else(|e| e.into_inner()).push(local);
    }
}

/// What the walk records for one entry.
enum Seen {
    Entry(String, FileState),
    /// A file over the size cap: (path, size).
    TooLarge(String, u64),
    /// A file whose content must be read (see [`read_file`]).
    Read(Pending),
    /// Not checkpointed (a FIFO, socket or device; vanished or unreadable).
    Nothing,
}

/// A file the listing found changed (or new): read after the listing.
struct Pending {
    rel: String,
    path: PathBuf,
    mode: u32,
    mtime_ns: u64,
    ctime_ns: u64,
}

/// [`observe`], with a file that needs reading read at once (walks of a few directories).
fn observe_now(ctx: &WalkCtx<'_>, entry: &ignore::DirEntry) -> std::io::Result<Seen> {
    match observe(ctx, entry)? {
        Seen::Read(file) => read_file(ctx, &file),
        seen => Ok(seen),
    }
}

/// The one place a walked entry's state is decided: a directory's mode, a link's target, a
/// file's recorded state when its metadata matches the previous scan (no read), else the
/// file to read ([`read_file`]: its content is stored). Only the metadata the walker already has is used before that
/// choice (one `lstat` per entry, as `rg --files` makes).
fn observe(ctx: &WalkCtx<'_>, entry: &ignore::DirEntry) -> std::io::Result<Seen> {
    observe_path(ctx, entry.path(), entry.file_type(), || {
        entry.metadata().ok().or_else(|| ctx.deep.lstat(entry.path()))
    })
}

/// [`observe`] for a path and what is known of it: its kind, and its `lstat` when asked.
fn observe_path(
    ctx: &WalkCtx<'_>,
    path: &Path,
    kind: Option<std::fs::FileType>,
    metadata: impl Fn() -> Option<std::fs::Metadata>,
) -> std::io::Result<Seen> {
    let Ok(rel) = path.strip_prefix(ctx.root) else {
        return Ok(Seen::Nothing);
    };
    let rel = super::relpath::spell(rel);
    let Some(kind) = kind else {
        return Ok(Seen::Nothing);
    };
    if kind.is_dir() {
        let Some(meta) = metadata() else {
            return Ok(Seen::Nothing);
        };
        let state = FileState {
            id: String::new(),
            size: 0,
            mode: meta.permissions().mode(),
            mtime_ns: 0,
            ctime_ns: 0,
            dir: true,
            link: false,
            git: String::new(),
        };
        return Ok(Seen::Entry(rel, state));
    }
    if kind.is_symlink() {
        // The link itself (its target path), never what it points to.
        let Ok(target) = ctx.deep.read_link(path) else {
            return Ok(Seen::Nothing);
        };
        let target = target.into_encoded_bytes();
        let id = super::objects::hash(&target);
        // The same target as last time is stored already (no store lookup, no lock).
        let id = match ctx.previous.get(&rel) {
            Some(known) if known.link && known.id == id => id,
            _ => ctx.pack.lock().unwrap_or_else(|e| e.into_inner()).add_bytes(&target)?,
        };
        let state = FileState {
            id,
            size: target.len() as u64,
            mode: 0o777,
            mtime_ns: 0,
            ctime_ns: 0,
            dir: false,
            link: true,
            git: String::new(),
        };
        return Ok(Seen::Entry(rel, state));
    }
    if !kind.is_file() {
        return Ok(Seen::Nothing); // FIFOs, sockets and devices are not checkpointed
    }
    let Some(meta) = metadata() else {
        return Ok(Seen::Nothing);
    };
    if meta.len() > ctx.max_file_bytes {
        return Ok(Seen::TooLarge(rel, meta.len()));
    }
    let mode = meta.permissions().mode();
    let mtime = mtime_ns(&meta);
    let ctime = ctime_ns(&meta);
    // Clean in git's index: git's own blob is the baseline, nothing is read or copied.
    if let Some(id) = ctx.git.as_ref().and_then(|g| g.clean(&rel, &meta)) {
        let state = FileState {
            id,
            size: meta.len(),
            mode,
            mtime_ns: mtime,
            ctime_ns: ctime,
            ..Default::default()
        };
        return Ok(Seen::Entry(rel, state));
    }
    let recent = meta
        .modified()
        .ok()
        .and_then(|m| ctx.now.duration_since(m).ok())
        .is_none_or(|age| age < RACY_WINDOW);
    if let Some(known) = ctx.previous.get(&rel)
        && !known.dir
        && !known.link
        && known.size == meta.len()
        && known.mtime_ns == mtime
        && known.ctime_ns == ctime
        && known.mode == mode
        && !recent
        // A git blob stays a baseline only while the index records it for the path.
        && (super::git_baseline::git_hex(&known.id).is_none()
            || ctx.git.as_ref().is_some_and(|g| g.tracks(&rel, &known.id)))
        // A seed's content pruned or lost meanwhile is read again, never referenced.
        && (ctx.contents_stored || ctx.objects.contains(&known.id))
    {
        return Ok(Seen::Entry(rel, known.clone()));
    }
    Ok(Seen::Read(Pending {
        rel,
        path: path.to_path_buf(),
        mode,
        mtime_ns: mtime,
        ctime_ns: ctime,
    }))
}

/// Reads a file [`observe`] left to read, and stores its content, or references it as git's
/// blob when it is exactly the index's.
fn read_file(ctx: &WalkCtx<'_>, file: &Pending) -> std::io::Result<Seen> {
    let Pending {
        rel,
        path,
        mode,
        mtime_ns,
        ctime_ns,
    } = file;
    let (rel, mode, mtime, ctime) = (rel.clone(), *mode, *mtime_ns, *ctime_ns);
    let bytes = match ctx.deep.read(path) {
        Ok(bytes) => bytes,
        Err(_) => return Ok(Seen::Nothing), // vanished or unreadable: not part of this checkpoint
    };
    // In a git repository the content's blob id is known too: read anyway (racy, touched,
    // maybe converted), a file whose blob is the index's is referenced, not stored.
    let store = |bytes: &[u8]| ctx.pack.lock().unwrap_or_else(|e| e.into_inner()).add_bytes(bytes);
    let (id, git_blob) = match ctx.git.as_ref().map(|g| g.after_read(&rel, &bytes)) {
        Some(read) if read.in_index => (format!("{}{}", super::git_baseline::PREFIX, read.blob), String::new()),
        Some(read) => (store(&bytes)?, read.blob),
        None => (store(&bytes)?, String::new()),
    };
    ctx.hashed.fetch_add(1, Ordering::Relaxed);
    Ok(Seen::Entry(
        rel,
        FileState {
            id,
            size: bytes.len() as u64,
            mode,
            mtime_ns: mtime,
            ctime_ns: ctime,
            dir: false,
            link: false,
            git: git_blob,
        },
    ))
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

/// Where a stored manifest sits in its chain of deltas: how many deltas deep, and how many
/// path entries those deltas hold together since the last whole manifest (`None` for a
/// delta written before that was recorded: the next manifest is then stored whole).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Chain {
    pub depth: u32,
    pub entries: Option<u64>,
}

impl Chain {
    /// A manifest stored whole.
    pub const WHOLE: Chain = Chain {
        depth: 0,
        entries: Some(0),
    };
}

/// A stored manifest the next one may be stored against.
pub struct Base<'a> {
    pub id: &'a str,
    pub manifest: &'a Manifest,
    pub chain: Chain,
}

/// Marks a manifest stored as the changes from another (a whole one is plain JSON).
const DELTA_MAGIC: &[u8] = b"brute-manifest-delta\n";
/// Deltas on deltas stop here: a load reads at most this many objects.
const MAX_DEPTH: u32 = 512;
/// A chain of deltas ends (the next manifest is stored whole) once its deltas hold this many
/// times the entries of a whole manifest. Whole manifests then cost at most 1/`WHOLE_AFTER`
/// of what the deltas cost, and a load parses at most `WHOLE_AFTER + 1` manifests' worth of
/// entries, whatever the size of the tree and the number of turns.
const WHOLE_AFTER: u64 = 2;

/// A manifest stored as the changes from `base`.
#[derive(Serialize, Deserialize)]
struct Delta {
    base: String,
    depth: u32,
    /// Entries in the chain's deltas up to this one (see [`Chain`]); absent in deltas
    /// written by brute before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    entries: Option<u64>,
    #[serde(default)]
    set: Manifest,
    #[serde(default)]
    del: Vec<String>,
}

impl Delta {
    fn chain(&self) -> Chain {
        Chain {
            depth: self.depth,
            entries: self.entries,
        }
    }
}

/// A stored manifest as read: whole, or the changes from another.
enum Stored {
    Whole(Manifest),
    Delta(Delta),
}

fn read_stored(objects: &ObjectStore, id: &str) -> std::io::Result<Stored> {
    let bytes = objects.get(id)?;
    let invalid = |e: serde_json::Error| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("manifest {id} in {} is damaged: {e}", objects.dir().display()),
        )
    };
    match bytes.strip_prefix(DELTA_MAGIC) {
        Some(json) => serde_json::from_slice(json).map(Stored::Delta).map_err(invalid),
        None => serde_json::from_slice(&bytes).map(Stored::Whole).map_err(invalid),
    }
}

/// Stores `manifest` whole, or, when `after` is given and the changes from it are few, as
/// those changes: each turn then costs disk in proportion to what it changed, not to the size
/// of the tree. A manifest equal to `after`'s is not stored again: its id is returned.
/// Returns the id and where it sits in its chain.
pub fn save_manifest_after(
    objects: &ObjectStore,
    manifest: &Manifest,
    after: Option<Base<'_>>,
) -> std::io::Result<(String, Chain)> {
    if let Some(base) = after {
        let set: Manifest = manifest
            .iter()
            .filter(|(path, state)| base.manifest.get(*path) != Some(*state))
            .map(|(path, state)| (path.clone(), state.clone()))
            .collect();
        let del: Vec<String> = base
            .manifest
            .keys()
            .filter(|p| !manifest.contains_key(*p))
            .cloned()
            .collect();
        if set.is_empty() && del.is_empty() {
            return Ok((base.id.to_owned(), base.chain));
        }
        let changed = (set.len() + del.len()) as u64;
        let entries = base.chain.entries.map(|e| e + changed);
        let whole = manifest.len() as u64;
        if let Some(entries) = entries
            && base.chain.depth < MAX_DEPTH
            && changed <= whole / 4
            && entries <= WHOLE_AFTER * whole
        {
            let delta = Delta {
                base: base.id.to_owned(),
                depth: base.chain.depth + 1,
                entries: Some(entries),
                set,
                del,
            };
            let mut bytes = DELTA_MAGIC.to_vec();
            serde_json::to_writer(&mut bytes, &delta).map_err(std::io::Error::other)?;
            return Ok((objects.put(&bytes)?, delta.chain()));
        }
    }
    Ok((save_manifest(objects, manifest)?, Chain::WHOLE))
}

/// The last manifests loaded, by id (listing or undoing turns in order loads each one's base
/// just before it).
type Loaded = (String, std::sync::Arc<Manifest>, Chain);
static LOADED: std::sync::Mutex<Vec<Loaded>> = std::sync::Mutex::new(Vec::new());
const LOADED_KEPT: usize = 8;

fn cached(id: &str) -> Option<(std::sync::Arc<Manifest>, Chain)> {
    let loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    loaded
        .iter()
        .find(|(known, ..)| known == id)
        .map(|(_, manifest, chain)| (manifest.clone(), *chain))
}

/// Loads manifest `id`: reads its deltas down to a whole manifest (or one loaded lately),
/// then applies them oldest first to one copy. A chain longer than [`MAX_DEPTH`] (a loop in
/// a damaged store) is an error, never a hang.
fn load_with_depth(objects: &ObjectStore, id: &str) -> std::io::Result<(std::sync::Arc<Manifest>, Chain)> {
    if let Some(found) = cached(id) {
        return Ok(found);
    }
    let mut deltas: Vec<Delta> = Vec::new();
    let mut next = id.to_owned();
    let base = loop {
        if let Some((manifest, _)) = cached(&next) {
            break manifest;
        }
        match read_stored(objects, &next)? {
            Stored::Whole(manifest) => break std::sync::Arc::new(manifest),
            Stored::Delta(delta) => {
                if deltas.len() > MAX_DEPTH as usize {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!(
                            "manifest {id} in {} is stored as a chain of more than {MAX_DEPTH} changes (a damaged store)",
                            objects.dir().display()
                        ),
                    ));
                }
                next = delta.base.clone();
                deltas.push(delta);
            }
        }
    };
    let chain = deltas.first().map_or(Chain::WHOLE, Delta::chain);
    let manifest = if deltas.is_empty() {
        base
    } else {
        let mut manifest = (*base).clone();
        for delta in deltas.into_iter().rev() {
            for path in &delta.del {
                manifest.remove(path);
            }
            manifest.extend(delta.set);
        }
        std::sync::Arc::new(manifest)
    };
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if loaded.len() >= LOADED_KEPT {
        loaded.remove(0);
    }
    loaded.push((id.to_owned(), manifest.clone(), chain));
    Ok((manifest, chain))
}

/// The ids a stored manifest needs besides its contents: itself and the manifests its
/// changes are stored against (for pruning). Stops at one that cannot be read.
pub fn manifest_chain(objects: &ObjectStore, id: &str) -> Vec<String> {
    manifest_chain_until(objects, id, |_| false)
}

/// [`manifest_chain`], stopping before the first id `known` accepts (a prune that marked a
/// manifest has marked its whole chain: a session's turns share one chain, and walking it
/// again for each would cost turns × depth reads).
pub fn manifest_chain_until(objects: &ObjectStore, id: &str, known: impl Fn(&str) -> bool) -> Vec<String> {
    let mut chain = Vec::new();
    let mut next = Some(id.to_owned());
    while let Some(id) = next.take() {
        if known(&id) || chain.contains(&id) || chain.len() > MAX_DEPTH as usize {
            break;
        }
        let base = objects
            .get(&id)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Delta>(bytes.strip_prefix(DELTA_MAGIC)?).ok())
            .map(|delta| delta.base);
        chain.push(id);
        next = base;
    }
    chain
}

/// Walks stored manifests one after another, keeping one materialized: moving to a manifest
/// stored as the changes from the one held applies those changes in place and counts the
/// paths they change (as [`diff`] would), without loading or cloning whole manifests. Listing
/// the turns of a long session (`brute undo --list`) is then O(changes), not O(turns × tree).
#[derive(Default)]
pub struct Cursor {
    id: Option<String>,
    manifest: Manifest,
}

impl Cursor {
    /// Moves to manifest `id`; returns how many paths differ in content from the one held
    /// before (from nothing, the first time).
    pub fn move_to(&mut self, objects: &ObjectStore, id: &str) -> std::io::Result<usize> {
        if self.id.as_deref() == Some(id) {
            return Ok(0);
        }
        let bytes = objects.get(id)?;
        let delta = bytes
            .strip_prefix(DELTA_MAGIC)
            .map(|json| serde_json::from_slice::<Delta>(json).map_err(std::io::Error::other))
            .transpose()?;
        match delta {
            Some(delta) if self.id.as_deref() == Some(delta.base.as_str()) => {
                let mut changed = 0;
                for path in &delta.del {
                    changed += usize::from(self.manifest.remove(path).is_some());
                }
                for (path, state) in delta.set {
                    let same = self.manifest.get(&path).is_some_and(|old| old.same_content(&state));
                    changed += usize::from(!same);
                    self.manifest.insert(path, state);
                }
                self.id = Some(id.to_owned());
                Ok(changed)
            }
            _ => {
                let next = load_manifest(objects, id)?;
                let changed = diff(&self.manifest, &next).len();
                self.manifest = next;
                self.id = Some(id.to_owned());
                Ok(changed)
            }
        }
    }
}

/// Stores a manifest as an object; returns its id.
pub fn save_manifest(objects: &ObjectStore, manifest: &Manifest) -> std::io::Result<String> {
    let bytes = serde_json::to_vec(manifest).map_err(std::io::Error::other)?;
    objects.put(&bytes)
}

/// Loads a stored manifest (following the changes it is stored as, if any).
/// [`load_manifest`] without a copy (the cached manifest itself).
pub fn load_shared(objects: &ObjectStore, id: &str) -> std::io::Result<Arc<Manifest>> {
    load_with_depth(objects, id).map(|(manifest, _)| manifest)
}

pub fn load_manifest(objects: &ObjectStore, id: &str) -> std::io::Result<Manifest> {
    load_with_depth(objects, id).map(|(manifest, _)| (*manifest).clone())
}

/// One path that differs between two manifests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub before: Option<FileState>,
    pub after: Option<FileState>,
}

/// The paths whose content differs from `a` to `b`.
pub fn diff(a: &Manifest, b: &Manifest) -> Vec<Change> {
    let paths: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    paths
        .into_iter()
        .filter_map(|path| {
            let (before, after) = (a.get(path), b.get(path));
            let same = match (before, after) {
                (Some(x), Some(y)) => x.same_content(y),
                (None, None) => true,
                _ => false,
            };
            (!same).then(|| Change {
                path: path.clone(),
                before: before.cloned(),
                after: after.cloned(),
            })
        })
        .collect()
}

/// What happened to one path when moving between states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    pub path: String,
    /// `restored`, `deleted` or `re-created`.
    pub action: &'static str,
    pub added: usize,
    pub removed: usize,
}

/// The paths of a turn that undo and redo leave alone because another brute turn ran in the
/// project at the same time (see [`super::activity`]). Both lists are sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// Changed while another turn ran, and not by this turn's own tools: either turn (a
    /// command, say) may have made the change. Moved only when forced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared: Vec<String>,
    /// Written by the other turn's own tools: its work, never moved by this turn's undo.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign: Vec<String>,
    /// Changed by the person while the turn ran (see [`super::whose`]): kept unless forced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub person: Vec<String>,
    /// Changed while one of the turn's commands ran, not by its tools: taken back as the
    /// turn's, and listed (it may have been the person's save at that moment).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsure: Vec<String>,
}

impl Held {
    pub fn is_empty(&self) -> bool {
        self.shared.is_empty() && self.foreign.is_empty() && self.person.is_empty() && self.unsure.is_empty()
    }

    fn has(list: &[String], path: &str) -> bool {
        list.binary_search_by(|p| p.as_str().cmp(path)).is_ok()
    }

    /// Sorts `changes` of a turn that overlapped others: what `own` (paths this turn's tools
    /// wrote; a directory covers what is under it) covers is the turn's; what the other
    /// turns' tools wrote (`theirs`) is theirs; the rest is shared. A path both wrote is
    /// shared.
    pub fn classify(changes: &[Change], own: &[String], theirs: &BTreeSet<String>) -> Self {
        let covered = |path: &str| {
            own.iter()
                .any(|o| path == o || path.strip_prefix(o.as_str()).is_some_and(|rest| rest.starts_with('/')))
        };
        let mut held = Held::default();
        for change in changes {
            let (ours, other) = (covered(&change.path), theirs.contains(&change.path));
            match (ours, other) {
                (true, false) => {}
                (false, true) => held.foreign.push(change.path.clone()),
                _ => held.shared.push(change.path.clone()),
            }
        }
        held
    }

    fn holds(&self, path: &str, force: bool) -> bool {
        let has = |list: &[String]| Self::has(list, path);
        has(&self.foreign) || (!force && (has(&self.shared) || has(&self.person)))
    }
}

/// The outcome of moving a tree between two states.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MoveReport {
    pub moved: Vec<Moved>,
    /// Paths changed since (by someone else): left alone unless forced.
    pub conflicts: Vec<String>,
    /// Paths whose stored content is gone (damaged or pruned store): left alone.
    pub missing: Vec<String>,
    /// Paths another brute turn running at the same time may have changed (see [`Held`]):
    /// left alone.
    pub concurrent: Vec<String>,
    /// Paths the person changed while the turn ran (see [`Held::person`]): kept.
    pub kept: Vec<String>,
    /// Paths taken back that changed while a command of the turn ran (see [`Held::unsure`]).
    pub unsure: Vec<String>,
}

/// A move needs contents the store no longer has. Nothing was changed: a half-applied undo
/// would leave the tree in a state no checkpoint describes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the stored content of {} is missing, so {} cannot be restored; nothing was changed (use --partial, or `/undo partial` in the UI, to restore the other files)",
    paths.join(", "),
    if paths.len() == 1 { "it" } else { "they" }
)]
pub struct MissingContent {
    pub paths: Vec<String>,
}

fn line_counts(old: &[u8], new: &[u8]) -> (usize, usize) {
    let (Ok(old), Ok(new)) = (std::str::from_utf8(old), std::str::from_utf8(new)) else {
        return (0, 0);
    };
    let diff = similar::TextDiff::from_lines(old, new);
    let mut added = 0;
    let mut removed = 0;
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// For each change, moves the path from its `after` state back to its `before` state
/// (`reverse` = undo) or forward (redo), but only where the tree still holds the state the
/// move starts from; other paths are reported as conflicts unless `force`.
///
/// Every content the move needs is checked first: if some is missing, nothing changes and the
/// error is a [`MissingContent`] naming the paths, unless `partial`, which restores the rest
/// and lists those paths in [`MoveReport::missing`].
#[allow(clippy::too_many_arguments)]
pub fn apply(
    root: &Path,
    objects: &ObjectStore,
    changes: &[Change],
    held: &Held,
    current: &Manifest,
    reverse: bool,
    force: bool,
    partial: bool,
) -> std::io::Result<MoveReport> {
    apply_or_preview(root, objects, changes, held, current, reverse, force, partial, false)
}

/// What [`apply`] would do, without changing anything (for the undo dialog; paths whose
/// content is missing are listed, not an error).
pub fn preview(
    root: &Path,
    objects: &ObjectStore,
    changes: &[Change],
    held: &Held,
    current: &Manifest,
    reverse: bool,
    force: bool,
) -> std::io::Result<MoveReport> {
    apply_or_preview(root, objects, changes, held, current, reverse, force, true, true)
}

/// The tree a move changes, entry by entry through directory descriptors (any depth; a link
/// that appears on the way is refused, never followed).
struct Target {
    fds: crate::beneath::Root,
    root: PathBuf,
}

impl Target {
    fn open(root: &Path) -> std::io::Result<Self> {
        let real = root.canonicalize().map_err(super::at_path(root))?;
        let fds = crate::beneath::Root::open(&real).map_err(super::at_path(root))?;
        Ok(Self {
            fds,
            root: root.to_path_buf(),
        })
    }

    /// The path `rel` (spelled) as people see it, for errors.
    fn shown(&self, rel: &str) -> PathBuf {
        self.root.join(super::relpath::shown(rel))
    }

    fn lstat(&self, rel: &str) -> Option<std::fs::Metadata> {
        self.fds.lstat(&super::relpath::path(rel)).ok()
    }

    fn is_dir(&self, rel: &str) -> bool {
        self.lstat(rel).is_some_and(|m| m.is_dir())
    }

    fn is_link(&self, rel: &str) -> bool {
        self.lstat(rel).is_some_and(|m| m.file_type().is_symlink())
    }

    /// What a path holds now for the +/- counts (regular files only, bounded).
    fn bytes(&self, rel: &str) -> Option<Vec<u8>> {
        self.fds
            .read_bounded(&super::relpath::path(rel), crate::files::MAX_FILE_BYTES)
            .ok()
    }

    /// The permission bits of the directory `rel` (not following a link).
    fn dir_mode(&self, rel: &str) -> Option<u32> {
        self.lstat(rel)
            .filter(|m| m.is_dir())
            .map(|m| m.permissions().mode() & 0o7777)
    }

    fn at<T>(&self, rel: &str, result: std::io::Result<T>) -> std::io::Result<T> {
        result.map_err(|e| {
            if crate::beneath::is_changed(&e) {
                e // names its path already, and is told apart (see `moved_or_conflict`)
            } else {
                std::io::Error::new(e.kind(), format!("{}: {e}", self.shown(rel).display()))
            }
        })
    }

    fn make_dir(&self, rel: &str) -> std::io::Result<()> {
        let path = super::relpath::path(rel);
        if self.lstat(rel).is_some_and(|m| !m.is_dir()) {
            self.at(rel, self.fds.remove(&path, false))?;
        }
        self.at(rel, self.fds.dir(&path, true).map(|_| ()))
    }

    fn chmod(&self, rel: &str, mode: u32) -> std::io::Result<()> {
        self.at(rel, self.fds.chmod(&super::relpath::path(rel), mode & 0o7777))
    }

    fn write(&self, rel: &str, state: &FileState, bytes: &[u8]) -> std::io::Result<()> {
        let path = super::relpath::path(rel);
        if self.is_dir(rel) {
            self.at(rel, self.fds.remove(&path, true))?;
        }
        if state.link {
            let target = std::ffi::OsString::from_vec(bytes.to_vec());
            return self.at(rel, self.fds.symlink(Path::new(&target), &path));
        }
        self.at(rel, self.fds.write(&path, bytes).map(|_| ()))?;
        self.chmod(rel, state.mode)
    }

    fn remove(&self, rel: &str) -> std::io::Result<()> {
        self.at(rel, self.fds.remove(&super::relpath::path(rel), false))
    }

    /// Whether the directory `rel` holds nothing.
    fn empty(&self, rel: &str) -> bool {
        self.fds
            .list(&super::relpath::path(rel))
            .is_ok_and(|names| names.is_empty())
    }

    /// Whether everything under the directory `dir` (not following links) is one of `paths`.
    fn holds_only(&self, dir: &str, paths: &BTreeSet<&str>) -> bool {
        let mut stack = vec![dir.to_owned()];
        while let Some(dir) = stack.pop() {
            let Ok(names) = self.fds.list(&super::relpath::path(&dir)) else {
                return false;
            };
            for (name, is_dir) in names {
                let rel = format!("{dir}/{}", super::relpath::spell(Path::new(&name)));
                if !paths.contains(rel.as_str()) {
                    return false;
                }
                if is_dir {
                    stack.push(rel);
                }
            }
        }
        true
    }
}

/// A path no move can make (a damaged record: a NUL byte, `..`, a name longer than a
/// filesystem takes): why, else `None`.
fn unrestorable(rel: &str) -> Option<&'static str> {
    let bytes = super::relpath::bytes(rel);
    if bytes.is_empty() || bytes.starts_with(b"/") {
        return Some("it is not a relative path");
    }
    for name in bytes.split(|b| *b == b'/') {
        if name.contains(&0) {
            return Some("its name holds a NUL byte");
        }
        if name.is_empty() || name == b"." || name == b".." {
            return Some("it is not a plain relative path");
        }
        if name.len() > 255 {
            return Some("a name in it is longer than 255 bytes");
        }
    }
    None
}

/// A move needs a path that cannot be made. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path} cannot be restored ({why}); nothing was changed")]
pub struct Unrestorable {
    pub path: String,
    pub why: &'static str,
}

#[allow(clippy::too_many_arguments)]
fn apply_or_preview(
    root: &Path,
    objects: &ObjectStore,
    changes: &[Change],
    held: &Held,
    current: &Manifest,
    reverse: bool,
    force: bool,
    partial: bool,
    dry_run: bool,
) -> std::io::Result<MoveReport> {
    let tree = Target::open(root)?;
    let mut report = MoveReport::default();
    let mut plan: Vec<(&str, Option<&FileState>)> = Vec::new();
    for change in changes {
        if held.holds(&change.path, force) {
            if Held::has(&held.person, &change.path) {
                report.kept.push(change.path.clone());
            } else {
                report.concurrent.push(change.path.clone());
            }
            continue;
        }
        let (from, to) = if reverse {
            (&change.after, &change.before)
        } else {
            (&change.before, &change.after)
        };
        let now = current.get(&change.path);
        let unchanged = match (from, now) {
            (Some(a), Some(b)) => a.same_content(b),
            (None, None) => true,
            _ => false,
        };
        if !unchanged && !force {
            report.conflicts.push(change.path.clone());
            continue;
        }
        plan.push((change.path.as_str(), to.as_ref()));
    }
    // A path under an entry that is not a directory now and that this move does not make one
    // (a link, which would carry the write out of the tree; a file that is left alone, the
    // person's say) cannot be reached: left alone too, forced or not. Leaving one alone may
    // leave what is under it alone in turn, so until nothing changes.
    // For each directory looked at: `Some(is a link)` when it is there but no directory.
    let mut kinds: BTreeMap<&str, Option<bool>> = BTreeMap::new();
    loop {
        let creating: BTreeSet<&str> = plan
            .iter()
            .filter(|(_, to)| to.is_some_and(|s| s.dir))
            .map(|(p, _)| *p)
            .collect();
        let before = plan.len();
        plan.retain(|(path, to)| {
            let mut dir = *path;
            while let Some((parent, _)) = dir.rsplit_once('/') {
                let not_a_dir = *kinds.entry(parent).or_insert_with(|| {
                    tree.lstat(parent)
                        .filter(|m| !m.is_dir())
                        .map(|m| m.file_type().is_symlink())
                });
                if let Some(link) = not_a_dir
                    && !creating.contains(parent)
                {
                    // Left alone and listed; only what is to go from under a file is not
                    // listed (it cannot be there).
                    if to.is_some() || link {
                        report.conflicts.push((*path).to_owned());
                    }
                    return false;
                }
                dir = parent;
            }
            true
        });
        if plan.len() == before {
            break;
        }
    }
    // A path that cannot be made stops the move before anything changes.
    if let Some((path, why)) = plan
        .iter()
        .find_map(|(path, _)| unrestorable(path).map(|why| (*path, why)))
    {
        return Err(std::io::Error::other(Unrestorable {
            path: tree.shown(path).display().to_string(),
            why,
        }));
    }
    // Check every content needed before anything changes.
    let missing: Vec<String> = plan
        .iter()
        .filter_map(|(path, to)| {
            to.filter(|s| !s.dir && !objects.contains(&s.id))
                .map(|_| (*path).to_owned())
        })
        .collect();
    if !missing.is_empty() {
        if !partial {
            return Err(std::io::Error::other(MissingContent { paths: missing }));
        }
        plan.retain(|(path, _)| !missing.iter().any(|m| m == path));
        report.missing = missing;
    }
    // Directories to create first (parents before children), files next, removals last
    // (children before parents).
    let mut creates: Vec<&(&str, Option<&FileState>)> =
        plan.iter().filter(|(_, to)| to.is_some_and(|s| s.dir)).collect();
    creates.sort_by_key(|(p, _)| *p);
    for (path, to) in &creates {
        let existed = tree.is_dir(path);
        if !dry_run {
            tree.make_dir(path)?;
        }
        let action = if existed { "restored the mode of" } else { "re-created" };
        if !existed || to.is_some_and(|s| tree.dir_mode(path) != Some(s.mode & 0o7777)) {
            report.moved.push(Moved {
                path: (*path).to_owned(),
                action,
                added: 0,
                removed: 0,
            });
        }
    }
    for (path, to) in plan.iter().filter(|(_, to)| to.is_some_and(|s| !s.dir)) {
        let Some(state) = to else { continue };
        let now_link = tree.is_link(path);
        // A link's +/- counts would read what it points to: never.
        let old = if now_link { None } else { tree.bytes(path) };
        // A directory that becomes a file again: only when everything in it is to be removed
        // too (anything else — a command's new file, the person's edit — is not ours).
        if tree.is_dir(path) {
            let planned: BTreeSet<&str> = plan
                .iter()
                .filter(|(p, to)| to.is_none() && p.starts_with(&format!("{path}/")))
                .map(|(p, _)| *p)
                .collect();
            if !tree.holds_only(path, &planned) {
                report.conflicts.push((*path).to_owned());
                continue;
            }
        }
        let bytes = objects.get(&state.id)?;
        // A link that appeared on the way since the check above is refused by the write:
        // the path is left alone, as one under a link is.
        if !dry_run && changed_since(tree.write(path, state, &bytes))? {
            report.conflicts.push((*path).to_owned());
            continue;
        }
        if state.link {
            report.moved.push(Moved {
                path: (*path).to_owned(),
                action: if now_link || old.is_some() {
                    "restored the link"
                } else {
                    "re-created the link"
                },
                added: 0,
                removed: 0,
            });
            continue;
        }
        let (added, removed) = line_counts(old.as_deref().unwrap_or_default(), &bytes);
        let action = if old.is_some() { "restored" } else { "re-created" };
        report.moved.push(Moved {
            path: (*path).to_owned(),
            action,
            added,
            removed,
        });
    }
    let mut removals: Vec<&str> = plan.iter().filter(|(_, to)| to.is_none()).map(|(p, _)| *p).collect();
    removals.sort_by(|a, b| b.cmp(a));
    for path in removals {
        match tree.lstat(path) {
            Some(meta) if meta.is_dir() => {
                // Only an empty directory goes (anything left in it is not ours to delete).
                let gone = if dry_run {
                    tree.empty(path)
                } else {
                    tree.remove(path).is_ok()
                };
                if gone {
                    report.moved.push(Moved {
                        path: path.to_owned(),
                        action: "deleted",
                        added: 0,
                        removed: 0,
                    });
                }
            }
            Some(meta) => {
                // A link is removed as a link; what it points to is never read.
                let old = if meta.file_type().is_symlink() {
                    Vec::new()
                } else {
                    tree.bytes(path).unwrap_or_default()
                };
                if !dry_run && changed_since(tree.remove(path))? {
                    report.conflicts.push(path.to_owned());
                    continue;
                }
                let (_, removed) = line_counts(&old, b"");
                report.moved.push(Moved {
                    path: path.to_owned(),
                    action: "deleted",
                    added: 0,
                    removed,
                });
            }
            None => {}
        }
    }
    // Directory modes last: a read-only directory must not stop its files being restored.
    if !dry_run {
        for (path, to) in &creates {
            let Some(state) = to else {
                continue;
            };
            if tree.dir_mode(path) != Some(state.mode & 0o7777) {
                tree.chmod(path, state.mode)?;
            }
        }
    }
    report.moved.sort_by(|a, b| a.path.cmp(&b.path));
    report.unsure = report
        .moved
        .iter()
        .filter(|m| Held::has(&held.unsure, &m.path))
        .map(|m| m.path.clone())
        .collect();
    Ok(report)
}

/// Whether an operation found a link in its path that was not there when the move was planned
/// (`Ok(true)`: it changed nothing); other errors stay errors.
fn changed_since(result: std::io::Result<()>) -> std::io::Result<bool> {
    match result {
        Ok(()) => Ok(false),
        Err(e) if crate::beneath::is_changed(&e) => Ok(true),
        Err(e) => Err(e),
    }
}

/// The tree by path where the kernel takes the path at once, else through directory
/// descriptors (a path longer than PATH_MAX, 4096 bytes, fails with `ENAMETOOLONG` otherwise:
/// the part of a deep tree below it would be missing from the checkpoint).
struct Deep {
    root: PathBuf,
    fds: std::sync::OnceLock<Option<crate::beneath::Root>>,
}

/// `ENAMETOOLONG`, also as the sequential walker wraps it (walkdir's error inside an
/// `io::Error` of kind `InvalidFilename`, which is what std makes of that errno).
fn too_long(error: &std::io::Error) -> bool {
    error.raw_os_error() == Some(libc::ENAMETOOLONG) || error.kind() == std::io::ErrorKind::InvalidFilename
}

impl Deep {
    fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            fds: std::sync::OnceLock::new(),
        }
    }

    /// The root's descriptor and `path` relative to it.
    fn beneath<'p>(&self, path: &'p Path) -> Option<(&crate::beneath::Root, &'p Path)> {
        let fds = self
            .fds
            .get_or_init(|| {
                let real = self.root.canonicalize().ok()?;
                crate::beneath::Root::open(&real).ok()
            })
            .as_ref()?;
        Some((fds, path.strip_prefix(&self.root).ok()?))
    }

    fn lstat(&self, path: &Path) -> Option<std::fs::Metadata> {
        match std::fs::symlink_metadata(path) {
            Ok(meta) => Some(meta),
            Err(e) if too_long(&e) => {
                let (fds, rel) = self.beneath(path)?;
                fds.lstat(rel).ok()
            }
            Err(_) => None,
        }
    }

    fn read_link(&self, path: &Path) -> std::io::Result<std::ffi::OsString> {
        match std::fs::read_link(path) {
            Ok(target) => Ok(target.into_os_string()),
            Err(e) if too_long(&e) => match self.beneath(path) {
                Some((fds, rel)) => fds.read_link(rel),
                None => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        match std::fs::read(path) {
            Err(e) if too_long(&e) => match self.beneath(path) {
                Some((fds, rel)) => fds.read_bounded(rel, u64::MAX - 1),
                None => Err(e),
            },
            read => read,
        }
    }
}

/// A walker entry of a touched walk: `Some` to observe, `None` to pass over (unreadable or
/// vanished, as the whole walk does), and an error standing for "walk the whole tree" when a
/// directory could not be listed because its path is too long (the whole walk reaches it).
fn reachable(entry: Result<ignore::DirEntry, ignore::Error>) -> std::io::Result<Option<ignore::DirEntry>> {
    match entry {
        Ok(entry) => Ok(Some(entry)),
        Err(error) if too_long_to_list(&error).is_some() => Err(std::io::Error::other(DeepTouched)),
        Err(_) => Ok(None),
    }
}

/// Says that a touched walk met a directory past PATH_MAX (see [`reachable`]).
#[derive(Debug, thiserror::Error)]
#[error("a touched directory lies past PATH_MAX")]
struct DeepTouched;

/// The directory a walker error is about when it could not be listed because its path is
/// longer than the kernel takes.
fn too_long_to_list(error: &ignore::Error) -> Option<&Path> {
    match error {
        ignore::Error::WithPath { path, err } if err.io_error().is_some_and(too_long) => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => too_long_to_list(err),
        _ => None,
    }
}

/// Walks the directory `dir`, which the walker could not list (its path is past PATH_MAX),
/// through descriptors: every entry below it observed as the walker's are. Ignore files are
/// not read this deep: everything there is recorded (a tree this deep is rare, and recording
/// too much only costs space, where missing a file would let undo leave it or lose it).
fn walk_deep(ctx: &WalkCtx<'_>, dir: &Path) -> Local {
    let mut local = Local::default();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Some((fds, rel)) = ctx.deep.beneath(&dir) else {
            continue;
        };
        let Ok(names) = fds.list(rel) else {
            continue;
        };
        for (name, is_dir) in names {
            if name == ".git" {
                continue;
            }
            let path = dir.join(&name);
            if ctx.own.as_deref() == Some(path.as_path()) {
                continue;
            }
            if let Some(message) = ctx.spend() {
                ctx.stop(Stop::Budget(message));
                return local;
            }
            let meta = ctx.deep.lstat(&path);
            let kind = meta.as_ref().map(|m| m.file_type());
            match observe_path(ctx, &path, kind, || meta.clone()) {
                Ok(seen) => local.add(seen),
                Err(error) => {
                    ctx.stop(Stop::Failed(error));
                    return local;
                }
            }
            if is_dir {
                stack.push(path);
            }
        }
    }
    local
}

#[cfg(test)]
mod cursor_tests {
    use super::*;

    fn state(objects: &ObjectStore, content: &str, mtime_ns: u64) -> FileState {
        FileState {
            id: objects.put(content.as_bytes()).unwrap(),
            size: content.len() as u64,
            mode: 0o100644,
            mtime_ns,
            ctime_ns: 0,
            dir: false,
            link: false,
            git: String::new(),
        }
    }

    /// The cursor's counts equal `diff` between consecutive manifests, whether they are stored
    /// as changes (applied in place) or whole (compared), and metadata-only changes count not.
    #[test]
    fn the_cursor_counts_what_diff_counts() {
        let dir = tempfile::tempdir().unwrap();
        let objects = ObjectStore::new(dir.path().join("objects"));
        let mut manifest = Manifest::new();
        for i in 0..40 {
            manifest.insert(format!("f{i}"), state(&objects, &format!("v0 {i}"), 0));
        }
        let mut stored: Vec<(String, Manifest)> = Vec::new();
        let (mut id, mut chain) = save_manifest_after(&objects, &manifest, None).unwrap();
        stored.push((id.clone(), manifest.clone()));
        for step in 1..80u64 {
            let previous = manifest.clone();
            let i = step as usize % 40;
            match step % 4 {
                0 => {
                    manifest.remove(&format!("f{i}"));
                }
                1 => {
                    manifest.insert(format!("f{i}"), state(&objects, &format!("v{step} {i}"), step));
                }
                2 => {
                    // Only the timestamp moves: no change in content.
                    let touched = manifest.get(&format!("f{i}")).cloned();
                    if let Some(mut touched) = touched {
                        touched.mtime_ns = step;
                        manifest.insert(format!("f{i}"), touched);
                    }
                }
                _ => {
                    manifest.insert(format!("new{step}"), state(&objects, "new", step));
                }
            }
            let base = Base {
                id: &id,
                manifest: &previous,
                chain,
            };
            (id, chain) = save_manifest_after(&objects, &manifest, Some(base)).unwrap();
            stored.push((id.clone(), manifest.clone()));
        }
        assert!(chain.depth > 0, "some manifests are stored as changes");
        let mut cursor = Cursor::default();
        assert_eq!(cursor.move_to(&objects, &stored[0].0).unwrap(), 40);
        for pair in stored.windows(2) {
            let expected = diff(&pair[0].1, &pair[1].1).len();
            assert_eq!(cursor.move_to(&objects, &pair[1].0).unwrap(), expected);
        }
        // Jumping back (not stored as changes from the held one) compares whole manifests.
        assert_eq!(
            cursor.move_to(&objects, &stored[3].0).unwrap(),
            diff(&stored[79].1, &stored[3].1).len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A damaged record naming a path no filesystem takes (a NUL byte, a 300-byte name)
    /// stops the whole move before anything changes, and the error names it.
    #[test]
    fn a_path_that_cannot_be_made_stops_the_move_before_anything_changes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("a.txt"), "now\n").unwrap();
        let objects = ObjectStore::new(dir.path().join("objects"));
        let before = FileState {
            id: objects.put(b"before\n").unwrap(),
            size: 7,
            mode: 0o100644,
            ..Default::default()
        };
        for bad in ["bad\0zz/b".to_owned(), "n".repeat(300)] {
            let changes = [
                Change {
                    path: "a.txt".into(),
                    before: Some(before.clone()),
                    after: None,
                },
                Change {
                    path: bad.clone(),
                    before: Some(before.clone()),
                    after: None,
                },
            ];
            let error = apply(
                &root,
                &objects,
                &changes,
                &Held::default(),
                &Manifest::new(),
                true,
                true,
                false,
            )
            .unwrap_err();
            let message = error.to_string();
            assert!(
                message.contains("cannot be restored") && message.contains("nothing was changed"),
                "{message}"
            );
            assert!(!message.contains('\0'), "the path is shown escaped: {message:?}");
            assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "now\n", "{bad:?}");
            assert_eq!(std::fs::read_dir(&root).unwrap().count(), 1);
        }
    }

    fn file(id: &str) -> FileState {
        FileState {
            id: id.to_owned(),
            size: 1,
            mode: 0o644,
            mtime_ns: 1,
            ctime_ns: 1,
            dir: false,
            link: false,
            git: String::new(),
        }
    }

    #[test]
    fn manifests_are_stored_as_small_changes_and_load_whole() {
        let dir = tempfile::tempdir().unwrap();
        let objects = ObjectStore::new(dir.path().to_path_buf());
        let mut m0 = Manifest::new();
        for i in 0..100 {
            m0.insert(format!("f{i:03}"), file(&format!("{i:064}")));
        }
        let (id0, chain0) = save_manifest_after(&objects, &m0, None).unwrap();
        assert_eq!(chain0, Chain::WHOLE);
        let mut m1 = m0.clone();
        m1.insert("f000".into(), file(&"a".repeat(64)));
        m1.remove("f001");
        m1.insert("new".into(), file(&"b".repeat(64)));
        let base = Base {
            id: &id0,
            manifest: &m0,
            chain: chain0,
        };
        let (id1, chain1) = save_manifest_after(&objects, &m1, Some(base)).unwrap();
        assert_eq!(
            chain1,
            Chain {
                depth: 1,
                entries: Some(3)
            }
        );
        let stored = objects.get(&id1).unwrap();
        assert!(
            stored.starts_with(DELTA_MAGIC) && stored.len() < 600,
            "{} bytes",
            stored.len()
        );
        // A fresh process (no cached loads) gets the whole manifest back.
        LOADED.lock().unwrap().clear();
        assert_eq!(load_manifest(&objects, &id1).unwrap(), m1);
        assert_eq!(manifest_chain(&objects, &id1), [id1.clone(), id0.clone()]);
        // Many changes: stored whole.
        let m2: Manifest = (0..100).map(|i| (format!("g{i}"), file(&"c".repeat(64)))).collect();
        let base = Base {
            id: &id1,
            manifest: &m1,
            chain: chain1,
        };
        let (id2, chain2) = save_manifest_after(&objects, &m2, Some(base)).unwrap();
        assert_eq!(
            (chain2, manifest_chain(&objects, &id2)),
            (Chain::WHOLE, vec![id2.clone()])
        );
        // A delta whose base is gone (a damaged store) is an error naming the missing
        // object, never a partial manifest.
        let orphan = Delta {
            base: "f".repeat(64),
            depth: 1,
            entries: Some(0),
            set: Manifest::new(),
            del: Vec::new(),
        };
        let mut bytes = DELTA_MAGIC.to_vec();
        serde_json::to_writer(&mut bytes, &orphan).unwrap();
        let orphan = objects.put(&bytes).unwrap();
        let error = load_manifest(&objects, &orphan).unwrap_err();
        assert!(error.to_string().contains(&"f".repeat(64)), "{error}");
        assert_eq!(manifest_chain(&objects, &orphan), [orphan.clone(), "f".repeat(64)]);
        // Deltas stop at MAX_DEPTH: then a whole one again.
        let base = Base {
            id: &id0,
            manifest: &m0,
            chain: Chain {
                depth: MAX_DEPTH,
                entries: Some(0),
            },
        };
        assert_eq!(save_manifest_after(&objects, &m1, Some(base)).unwrap().1, Chain::WHOLE);
    }

    /// Manifests as brute wrote them before chains counted their entries: a whole one (plain
    /// JSON) and a delta without `entries`, spelled out byte for byte. They load, chain and
    /// walk as before, and the next manifest stored after such a delta is stored whole (the
    /// length of the old chain is unknown), after which chains count again.
    #[test]
    fn manifests_in_the_old_format_still_load_and_the_next_one_is_stored_whole() {
        let dir = tempfile::tempdir().unwrap();
        let objects = ObjectStore::new(dir.path().to_path_buf());
        let (a, b, c) = ("a".repeat(64), "b".repeat(64), "c".repeat(64));
        let whole = format!(
            r#"{{"d":{{"id":"","size":0,"mode":16877,"mtime_ns":0,"ctime_ns":0,"dir":true}},"d/x.txt":{{"id":"{a}","size":1,"mode":33188,"mtime_ns":5,"ctime_ns":6}},"y.txt":{{"id":"{b}","size":2,"mode":33261,"mtime_ns":7}}}}"#
        );
        let whole = objects.put(whole.as_bytes()).unwrap();
        let delta = format!(
            "brute-manifest-delta\n{{\"base\":\"{whole}\",\"depth\":1,\"set\":{{\"d/z\":{{\"id\":\"{c}\",\"size\":3,\"mode\":511,\"mtime_ns\":0,\"ctime_ns\":0,\"link\":true}}}},\"del\":[\"y.txt\"]}}"
        );
        let delta = objects.put(delta.as_bytes()).unwrap();
        LOADED.lock().unwrap().clear();
        let loaded = load_manifest(&objects, &delta).unwrap();
        assert_eq!(loaded.keys().collect::<Vec<_>>(), ["d", "d/x.txt", "d/z"]);
        assert!(loaded["d"].dir && loaded["d/z"].link && loaded["d/z"].id == c);
        assert_eq!((loaded["d/x.txt"].mode, loaded["d/x.txt"].ctime_ns), (33188, 6));
        let old_whole = load_manifest(&objects, &whole).unwrap();
        assert_eq!(old_whole["y.txt"].ctime_ns, 0, "ctime absent in the oldest manifests");
        assert_eq!(manifest_chain(&objects, &delta), [delta.clone(), whole.clone()]);
        let mut cursor = Cursor::default();
        cursor.move_to(&objects, &whole).unwrap();
        assert_eq!(cursor.move_to(&objects, &delta).unwrap(), 2);
        // The next manifest after the old delta: stored whole, then as changes again.
        let (_, chain) = load_with_depth(&objects, &delta).unwrap();
        assert_eq!(
            chain,
            Chain {
                depth: 1,
                entries: None
            }
        );
        let mut next = loaded.clone();
        for i in 0..8 {
            next.insert(format!("new{i}"), file(&"e".repeat(64)));
        }
        let base = Base {
            id: &delta,
            manifest: &loaded,
            chain,
        };
        let (id, chain) = save_manifest_after(&objects, &next, Some(base)).unwrap();
        assert_eq!(chain, Chain::WHOLE);
        assert!(!objects.get(&id).unwrap().starts_with(DELTA_MAGIC));
        let mut after = next.clone();
        after.remove("new0");
        let base = Base {
            id: &id,
            manifest: &next,
            chain,
        };
        let (_, chain) = save_manifest_after(&objects, &after, Some(base)).unwrap();
        assert_eq!(
            chain,
            Chain {
                depth: 1,
                entries: Some(1)
            }
        );
    }

    /// A tree that did not change is not stored again, and a chain ends once its deltas
    /// hold [`WHOLE_AFTER`] manifests' worth of entries: whole manifests then cost a fraction
    /// of the deltas (every 32 turns, they were most of a long session's store), and every
    /// manifest of the chain loads whole in a fresh process.
    #[test]
    fn chains_end_by_the_entries_they_hold_and_unchanged_trees_cost_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let objects = ObjectStore::new(dir.path().to_path_buf());
        let mut manifest: Manifest = (0..100)
            .map(|i| (format!("f{i:03}"), file(&format!("{i:064}"))))
            .collect();
        let (mut id, mut chain) = save_manifest_after(&objects, &manifest, None).unwrap();
        let mut stored = vec![(id.clone(), manifest.clone())];
        let mut wholes = 1;
        for step in 0..1000u64 {
            let previous = manifest.clone();
            manifest.insert(format!("f{:03}", step % 100), file(&format!("e{step:063x}")));
            let base = Base {
                id: &id,
                manifest: &previous,
                chain,
            };
            (id, chain) = save_manifest_after(&objects, &manifest, Some(base)).unwrap();
            wholes += usize::from(chain == Chain::WHOLE);
            // The same tree again (the next turn's start): the same id, nothing written.
            let count = objects.list().len();
            let base = Base {
                id: &id,
                manifest: &manifest,
                chain,
            };
            assert_eq!(
                save_manifest_after(&objects, &manifest, Some(base)).unwrap(),
                (id.clone(), chain)
            );
            assert_eq!(objects.list().len(), count);
            stored.push((id.clone(), manifest.clone()));
        }
        // One change per step, 100 entries a manifest: a whole one every 201 manifests.
        assert_eq!(wholes, 5, "{wholes} whole manifests for 1,001");
        LOADED.lock().unwrap().clear();
        for (id, expected) in stored.iter().rev().step_by(37) {
            assert_eq!(&load_manifest(&objects, id).unwrap(), expected);
        }
    }

    /// A damaged store whose deltas form a loop is an error on load, never a hang or a
    /// stack overflow; the chain stops where it repeats.
    #[test]
    fn a_loop_of_deltas_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let objects = ObjectStore::new(dir.path().to_path_buf());
        // Two deltas naming each other cannot be made by content addressing; one naming
        // itself through a missing middle can: a -> b, and b written as a delta to a.
        let a_bytes = |base: &str| format!("brute-manifest-delta\n{{\"base\":\"{base}\",\"depth\":1}}");
        let mut b = "0".repeat(64);
        // Find the fixed point by writing b after a: b's content names a's id.
        let a = objects.put(a_bytes(&b).as_bytes()).unwrap();
        b = objects.put(a_bytes(&a).as_bytes()).unwrap();
        // Now a names "000…" (missing), b names a: make "000…" exist as a delta naming b.
        let zero = dir.path().join("00").join("0".repeat(62));
        std::fs::create_dir_all(zero.parent().unwrap()).unwrap();
        std::fs::write(&zero, a_bytes(&b)).unwrap();
        LOADED.lock().unwrap().clear();
        let error = load_manifest(&objects, &b).unwrap_err();
        assert!(error.to_string().contains("chain of more than"), "{error}");
        assert_eq!(manifest_chain(&objects, &b), [b.clone(), a.clone(), "0".repeat(64)]);
    }
}
