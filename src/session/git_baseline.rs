//! git's own blobs as checkpoint baselines: in a git repository, a file that git's index
//! says is clean (its stat data match, as git itself decides) is recorded as a reference to
//! the blob already in `.git` (`git:<hex>`), not copied into brute's store. Restoring such a
//! file reads the blob from the object database, read-only (loose and packed objects, deltas
//! included, through `gix-odb`). brute never writes to `.git` and never runs git.
//!
//! Anything doubtful is read: an entry whose stat data do not match, that is racy (modified
//! at or after the index was written), or whose path a conversion may apply to
//! (`.gitattributes` naming `filter`, `text`, `eol`, `crlf`, `ident` or
//! `working-tree-encoding`, or `core.autocrlf`) is hashed as a git blob; only when that hash
//! is the index's id is it referenced (the file was read, nothing stored), else it is stored
//! as any other file. So is a small file the first time a walk meets its entry (see
//! `VERIFY_BY_READING`); a bigger one is checked by its blob's size instead. Later walks trust
//! the stat data of entries an earlier one checked. Entries that are staged in a conflict, skip-worktree, assume-unchanged,
//! intent-to-add, links, submodules or sparse directories are never referenced, and a missing,
//! unreadable or damaged index, a `core.worktree`, a bare repository or a non-SHA-1 object
//! format turn the baseline off (every file is stored, as outside git).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use gix_object::{Exists, Find, FindHeader};

use super::stat::Stat;

/// The prefix of an id that names a git blob of the project's repository.
pub const PREFIX: &str = super::objects::GIT_PREFIX;

/// The git blob hex an id names, if it is a git reference.
pub fn git_hex(id: &str) -> Option<&str> {
    id.strip_prefix(PREFIX)
}

/// The git blob id (SHA-1 of `blob <len>\0…`) of `bytes`, as hex.
pub fn blob_hex(bytes: &[u8]) -> String {
    gix_object::compute_hash(gix_hash::Kind::Sha1, gix_object::Kind::Blob, bytes)
        .map(|id| id.to_string())
        .unwrap_or_default()
}

/// Where a repository's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Dirs {
    /// This worktree's git directory (the index lives here).
    git_dir: PathBuf,
    /// The directory shared by all worktrees (objects and config live here).
    common: PathBuf,
}

/// The repository whose worktree is `root`: `root/.git` as a directory, or a `.git` file
/// saying `gitdir: …` (worktrees, submodules), with a `commondir` where there is one. A `.git`
/// that is a link, or anything else, is not used.
fn find_dirs(root: &Path) -> Option<Dirs> {
    let dot_git = root.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    let git_dir = if meta.is_dir() {
        dot_git
    } else if meta.is_file() && meta.len() < 4096 {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
        let target = root.join(target);
        target.is_dir().then_some(target)?
    } else {
        return None;
    };
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => git_dir.join(text.trim()),
        Err(_) => git_dir.clone(),
    };
    common.join("objects").is_dir().then_some(Dirs { git_dir, common })
}

/// What brute needs from git's configuration.
#[derive(Debug, Default, PartialEq, Eq)]
struct Config {
    /// `core.autocrlf` is `true` or `input`: any file may be converted.
    autocrlf: bool,
    /// `core.attributesFile`.
    attributes_file: Option<PathBuf>,
    /// Something that makes the index's paths or objects doubtful (`core.worktree`, a bare
    /// repository, another object format, `extensions.worktreeConfig`).
    doubtful: bool,
}

/// The configuration files git reads, system to local; includes are followed (reading more
/// can only make brute more careful).
fn read_config(dirs: &Dirs) -> Config {
    let mut config = Config::default();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    let mut files: Vec<PathBuf> = vec![PathBuf::from("/etc/gitconfig")];
    for var in ["GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL"] {
        files.extend(std::env::var_os(var).map(PathBuf::from));
    }
    files.extend(xdg.as_ref().map(|x| x.join("git/config")));
    files.extend(home.as_ref().map(|h| h.join(".gitconfig")));
    files.push(dirs.common.join("config"));
    files.push(dirs.git_dir.join("config.worktree"));
    let mut seen = Vec::new();
    for file in files {
        read_config_file(&file, &mut config, &mut seen, 0);
    }
    config
}

fn read_config_file(path: &Path, config: &mut Config, seen: &mut Vec<PathBuf>, depth: usize) {
    if depth > 8 || seen.iter().any(|s| s == path) {
        return;
    }
    seen.push(path.to_path_buf());
    // Config files are small; a huge or special one is not read (and changes nothing).
    let Ok(meta) = std::fs::metadata(path) else { return };
    if !meta.is_file() || meta.len() > 1024 * 1024 {
        return;
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let mut section = String::new();
    for line in text.lines() {
        let mut line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let Some((head, tail)) = rest.split_once(']') else {
                continue;
            };
            section = head.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
            line = tail.trim();
        }
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim().to_ascii_lowercase(), unquote(v)),
            None => (line.to_ascii_lowercase(), "true".to_owned()),
        };
        let truthy = |v: &str| matches!(v.to_ascii_lowercase().as_str(), "true" | "yes" | "on" | "1" | "input");
        match (section.as_str(), key.as_str()) {
            ("core", "autocrlf") => config.autocrlf = truthy(&value),
            ("core", "attributesfile") => config.attributes_file = Some(expand_home(&value, path)),
            ("core", "worktree") => config.doubtful = true,
            ("core", "bare") => config.doubtful |= truthy(&value),
            ("extensions", "objectformat") => config.doubtful |= !value.eq_ignore_ascii_case("sha1"),
            ("extensions", "worktreeconfig") => config.doubtful |= truthy(&value),
            ("include" | "includeif", "path") => {
                let include = expand_home(&value, path);
                read_config_file(&include, config, seen, depth + 1);
            }
            _ => {}
        }
    }
}

fn unquote(value: &str) -> String {
    let value = value.split(" #").next().unwrap_or(value).trim();
    value.trim_matches('"').to_owned()
}

/// `~/x` from the home directory, a relative path from the including file's directory.
fn expand_home(value: &str, from: &Path) -> PathBuf {
    if let Some(rest) = value.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    let path = PathBuf::from(value);
    if path.is_absolute() {
        path
    } else {
        from.parent().unwrap_or(Path::new("/")).join(path)
    }
}

/// The attributes that can make a checked-out file differ from its blob.
const CONVERSIONS: [&str; 6] = ["text", "eol", "crlf", "filter", "ident", "working-tree-encoding"];

/// The `.gitattributes` lines that may convert a path: a path any of them matches is hashed
/// before it is referenced. Conservative: a line that sets such an attribute (or a macro
/// defined with one) counts whatever later lines unset; a pattern brute cannot parse matches
/// everything.
#[derive(Default)]
struct Rules {
    /// (directory the file applies to, relative to the root with a trailing `/` or empty; its
    /// converting patterns).
    sets: Vec<(String, ignore::gitignore::Gitignore)>,
    /// A line brute could not read: every path is hashed.
    everything: bool,
}

impl Rules {
    /// Reads every attribute file git consults for the worktree at `root`: the system and
    /// global ones, `info/attributes`, and `.gitattributes` in every directory of `dirs_in_tree`.
    /// `staged` are the index's own `.gitattributes` (directory, text): read too, so a file
    /// deleted or changed on disk since cannot hide a conversion the index's blobs went through.
    fn read(root: &Path, dirs: &Dirs, config: &Config, dirs_in_tree: &[String], staged: Vec<(String, String)>) -> Self {
        let mut files: Vec<(String, PathBuf)> = vec![(String::new(), PathBuf::from("/etc/gitattributes"))];
        let global = config.attributes_file.clone().or_else(|| {
            std::env::var_os("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
                .map(|x| x.join("git/attributes"))
        });
        files.extend(global.map(|g| (String::new(), g)));
        files.push((String::new(), dirs.common.join("info/attributes")));
        for dir in dirs_in_tree {
            files.push((dir.clone(), root.join(dir).join(".gitattributes")));
        }
        let texts: Vec<(String, String)> = files
            .into_iter()
            .filter_map(|(dir, path)| {
                let meta = std::fs::metadata(&path).ok()?;
                // A FIFO or device named .gitattributes is never opened; a huge one is doubtful.
                if !meta.is_file() {
                    return None;
                }
                if meta.len() > 4 * 1024 * 1024 {
                    return Some((dir, "* text".to_owned()));
                }
                std::fs::read(&path)
                    .ok()
                    .map(|b| (dir, String::from_utf8_lossy(&b).into_owned()))
            })
            .chain(staged)
            .collect();
        // Macros that set a conversion (`[attr]lfs filter=lfs`) convert where they are used.
        let mut names: Vec<String> = CONVERSIONS.iter().map(|s| (*s).to_owned()).collect();
        for (_, text) in &texts {
            for line in text.lines() {
                if let Some(rest) = line.trim().strip_prefix("[attr]") {
                    let mut parts = rest.split_whitespace();
                    if let Some(name) = parts.next()
                        && parts.any(|a| sets_one(a, &names))
                    {
                        names.push(name.to_owned());
                    }
                }
            }
        }
        let mut rules = Rules::default();
        for (dir, text) in texts {
            let mut builder = ignore::gitignore::GitignoreBuilder::new(root.join(&dir));
            let mut any = false;
            for line in text.lines() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') || line.starts_with("[attr]") {
                    continue;
                }
                let mut parts = line.split_whitespace();
                let Some(pattern) = parts.next() else { continue };
                if !parts.any(|a| sets_one(a, &names)) {
                    continue;
                }
                any = true;
                // Quoted patterns and negations (forbidden in attributes) are not parsed.
                let pattern = pattern.trim_start_matches('!');
                if pattern.starts_with('"') || builder.add_line(None, pattern).is_err() {
                    rules.everything = true;
                }
            }
            if any {
                match builder.build() {
                    Ok(set) => {
                        let prefix = if dir.is_empty() { dir } else { format!("{dir}/") };
                        rules.sets.push((prefix, set));
                    }
                    Err(_) => rules.everything = true,
                }
            }
        }
        rules
    }

    /// Whether a conversion may apply to `rel` (a file path relative to the root).
    fn converts(&self, root: &Path, rel: &str) -> bool {
        self.everything
            || self.sets.iter().any(|(dir, set)| {
                rel.starts_with(dir.as_str()) && set.matched_path_or_any_parents(root.join(rel), false).is_ignore()
            })
    }
}

/// Whether one attribute token of a line sets (not unsets) one of `names`.
fn sets_one(token: &str, names: &[String]) -> bool {
    if token.starts_with('-') || token.starts_with('!') {
        return false;
    }
    let name = token.split('=').next().unwrap_or(token);
    names.iter().any(|n| n == name)
}

/// Index entries of files up to this size that no earlier walk checked are verified by
/// reading and hashing the file rather than by the blob's size in the object database: in a
/// repository of loose objects, opening and inflating one costs more than reading a small
/// file, and the hash is exact where the size only hints at a conversion.
const VERIFY_BY_READING: u64 = 64 * 1024;

/// One index entry brute may reference.
#[derive(Debug, Clone)]
struct Tracked {
    /// The path: `Entries::paths[start..end]`.
    start: u32,
    end: u32,
    id: gix_hash::ObjectId,
    stat: gix_index::entry::Stat,
    /// A conversion may apply, or the entry is not checked yet (see [`VERIFY_BY_READING`]):
    /// only a hash decides.
    converts: bool,
}

impl Tracked {
    /// Whether `hex` (40 lowercase digits) is this entry's blob.
    fn is(&self, hex: &str) -> bool {
        let mut buf = [0u8; 40];
        self.id.hex_to_buf(&mut buf) == hex
    }
}

/// The usable index entries, sorted by path: one buffer of paths and a record of fixed size
/// each. A big repository's index is read at every run, and a heap object per entry (a path
/// and a hex id) cost it more than the walk kept of the tree.
#[derive(Default)]
struct Entries {
    paths: Vec<u8>,
    list: Vec<Tracked>,
}

impl Entries {
    fn path(&self, tracked: &Tracked) -> &[u8] {
        self.paths
            .get(tracked.start as usize..tracked.end as usize)
            .unwrap_or_default()
    }

    /// Adds an entry; `false` (and nothing added) past what the records can address.
    fn push(&mut self, path: &[u8], id: gix_hash::ObjectId, stat: gix_index::entry::Stat) -> bool {
        let (Ok(start), Ok(end)) = (
            u32::try_from(self.paths.len()),
            u32::try_from(self.paths.len() + path.len()),
        ) else {
            return false;
        };
        self.paths.extend_from_slice(path);
        self.list.push(Tracked {
            start,
            end,
            id,
            stat,
            converts: false,
        });
        true
    }

    /// Sorted by path, as lookups need (git's index is already: then this is one pass).
    fn sort(&mut self) {
        let paths = std::mem::take(&mut self.paths);
        let key = |t: &Tracked| paths.get(t.start as usize..t.end as usize).unwrap_or_default();
        if !self.list.is_sorted_by(|a, b| key(a) < key(b)) {
            self.list.sort_unstable_by(|a, b| key(a).cmp(key(b)));
        }
        self.paths = paths;
    }

    /// `rel` searched among all entries (what [`GitBaseline::entry`] must agree with).
    #[cfg(test)]
    fn get(&self, rel: &str) -> Option<&Tracked> {
        self.get_in(0..self.list.len(), rel)
    }

    /// `rel` among the entries in `range` (sorted, as all are).
    fn get_in(&self, range: std::ops::Range<usize>, rel: &str) -> Option<&Tracked> {
        let list = self.list.get(range)?;
        let found = list.binary_search_by(|t| self.path(t).cmp(rel.as_bytes())).ok()?;
        list.get(found)
    }

    /// Where the entries under `dir` (`""`, or a path ending in `/`) lie: paths that share a
    /// prefix are next to each other in sorted order.
    fn dir_range(&self, dir: &str) -> std::ops::Range<usize> {
        let dir = dir.as_bytes();
        let start = self.list.partition_point(|t| self.path(t) < dir);
        let len = self
            .list
            .get(start..)
            .map_or(0, |rest| rest.partition_point(|t| self.path(t).starts_with(dir)));
        start..start + len
    }
}

/// A thread's last lookup in a baseline: the directory it was in and where that directory's
/// entries lie. A walker looks a directory's files up one after another, so each lookup
/// searches a few dozen entries next to each other instead of the whole index (at 200,000
/// files, the whole index's binary search was a tenth of a walk's time).
struct Near {
    baseline: u64,
    dir: String,
    range: std::ops::Range<usize>,
}

thread_local! {
    static NEAR: std::cell::RefCell<Near> = const {
        std::cell::RefCell::new(Near { baseline: 0, dir: String::new(), range: 0..0 })
    };
}

/// A number per baseline, never reused in a process: a [`Near`] of another one is not used.
static NEXT_BASELINE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// What identifies an index file on disk: when it changes, the baseline is read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IndexKey {
    ino: u64,
    size: u64,
    mtime: i64,
    mtime_nsec: i64,
    ctime: i64,
    ctime_nsec: i64,
}

impl IndexKey {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            ino: meta.ino(),
            size: meta.len(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
        }
    }
}

/// The parsed index and attribute rules of one repository, read once per scan and shared
/// read-only by the scan's threads.
pub struct GitBaseline {
    root: PathBuf,
    entries: Entries,
    /// Which baseline this is (see [`Near`]).
    number: u64,
    /// The index file's own mtime: an entry modified at or after it is racy.
    index_time: (u32, u32),
    key: IndexKey,
    index_path: PathBuf,
}

/// The blob git's index records for a clean file (see [`GitBaseline::clean_blob`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanBlob(gix_hash::ObjectId);

impl CleanBlob {
    /// Its reference as a manifest records it: `git:` and the hex id.
    pub fn reference(&self) -> super::objects::ContentId {
        super::objects::ContentId::Git(raw_of(&self.0))
    }

    /// Whether `id` is its reference.
    pub fn is(&self, id: &super::objects::ContentId) -> bool {
        id.git() == Some(&raw_of(&self.0))
    }
}

/// The decision for a file that was read (see [`GitBaseline::after_read`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadFile {
    /// The content's git blob id (hex).
    pub blob: String,
    /// It is the blob the index records for the path: reference it, nothing to store.
    pub in_index: bool,
}

impl GitBaseline {
    /// The baseline of the repository whose worktree is `root`, or `None` when there is none
    /// or anything about it is doubtful.
    pub fn open(root: &Path) -> Option<Self> {
        Self::open_knowing(root, |_, _| None)
    }

    /// [`GitBaseline::open`], told the blobs an earlier walk already checked: `known(path, id)`
    /// is the size of blob `id` (its 20 bytes) when a manifest recorded it for `path` (a `git:` id is only
    /// recorded after its size was checked or its content hashed). Those are not looked up in
    /// the object database again, so a later run costs O(changes) there, not O(index): a
    /// repository whose objects are loose would otherwise open every one of them.
    pub fn open_knowing(root: &Path, known: impl FnMut(&str, &[u8; 20]) -> Option<u64>) -> Option<Self> {
        Some(Self::read_index(root)?.finish(known))
    }

    /// The first half of [`GitBaseline::open_knowing`]: the index and attribute rules, read
    /// and parsed (what needs no earlier manifest, so it can run while one loads).
    pub fn read_index(root: &Path) -> Option<IndexRead> {
        let dirs = find_dirs(root)?;
        let config = read_config(&dirs);
        if config.doubtful {
            return None;
        }
        let index_path = dirs.git_dir.join("index");
        // Never blocks: a FIFO or device put at the index's path is refused, not waited on.
        let file = crate::files::open_regular(&index_path).ok()?;
        let meta = file.metadata().ok().filter(|m| m.is_file())?;
        let key = IndexKey::of(&meta);
        // Read as a stream; a split index (or one this reader cannot read) by `gix_index`.
        let mut listed = Listed::for_index_of(meta.len());
        let read = super::git_index::read(file, meta.len(), |entry| listed.take(entry));
        let listed = match read {
            Ok(super::git_index::Outcome::Whole) => listed,
            Ok(super::git_index::Outcome::Other) => {
                // `gix_index` opens the index and its shared index by path, blocking: anything
                // there that is not a file (a FIFO would hang the read) means no baseline.
                let shared = std::fs::read_dir(&dirs.git_dir)
                    .ok()?
                    .flatten()
                    .filter(|entry| entry.file_name().as_encoded_bytes().starts_with(b"sharedindex."));
                for path in std::iter::once(index_path.clone()).chain(shared.map(|entry| entry.path())) {
                    if !std::fs::metadata(&path).is_ok_and(|meta| meta.is_file()) {
                        return None;
                    }
                }
                let index = gix_index::File::at(&index_path, gix_hash::Kind::Sha1, false, Default::default()).ok()?;
                let mut listed = Listed::default();
                for entry in index.entries() {
                    listed.take(super::git_index::Entry {
                        path: entry.path(&index),
                        id: entry.id,
                        stat: entry.stat,
                        mode: entry.mode.bits(),
                        stage: entry.stage_raw() as u8,
                        unvouched: entry.flags.intersects(
                            gix_index::entry::Flags::ASSUME_VALID
                                | gix_index::entry::Flags::SKIP_WORKTREE
                                | gix_index::entry::Flags::INTENT_TO_ADD,
                        ),
                    });
                }
                listed
            }
            Err(error) => {
                tracing::info!(%error, "git's index is not used");
                return None;
            }
        };
        let Listed {
            mut candidates,
            mut dirs_in_tree,
            attributes,
            too_many,
            ..
        } = listed;
        if too_many {
            return None;
        }
        let odb = open_odb(&dirs)?;
        let odb = odb.to_handle_arc();
        let index_time = (
            u32::try_from(meta.mtime()).unwrap_or(u32::MAX),
            u32::try_from(meta.mtime_nsec()).unwrap_or(0),
        );
        candidates.sort();
        dirs_in_tree.sort();
        dirs_in_tree.dedup();
        let staged: Vec<(String, String)> = attributes
            .into_iter()
            .filter_map(|(dir, id)| {
                let mut buffer = Vec::new();
                let data = odb.try_find(&id, &mut buffer).ok()??;
                Some((dir, String::from_utf8_lossy(data.data).into_owned()))
            })
            .collect();
        let rules = Rules::read(root, &dirs, &config, &dirs_in_tree, staged);
        Some(IndexRead {
            root: root.to_path_buf(),
            autocrlf: config.autocrlf,
            rules,
            candidates,
            odb,
            index_time,
            key,
            index_path,
        })
    }
}

/// What [`GitBaseline::read_index`] keeps of the index's entries as they are read.
struct Listed {
    candidates: Entries,
    /// Every directory an entry lies in (each may hold a `.gitattributes`), the root first.
    dirs_in_tree: Vec<String>,
    seen_dirs: std::collections::HashSet<String>,
    /// The staged `.gitattributes` files: their directory and blob.
    attributes: Vec<(String, gix_hash::ObjectId)>,
    /// More than the records can address: no baseline.
    too_many: bool,
}

impl Default for Listed {
    fn default() -> Self {
        Self {
            candidates: Entries::default(),
            dirs_in_tree: vec![String::new()],
            seen_dirs: std::collections::HashSet::new(),
            attributes: Vec::new(),
            too_many: false,
        }
    }
}

impl Listed {
    /// Room for what an index of `len` bytes can hold (an entry takes at least 62 bytes; room
    /// reserved and not filled is never touched, so it costs no memory), up to what a real
    /// index of 2 million entries needs: a sparse file's size is no promise.
    fn for_index_of(len: u64) -> Self {
        let len = usize::try_from(len.min(256 << 20)).unwrap_or(0);
        let mut listed = Self::default();
        let _ = listed.candidates.paths.try_reserve(len);
        let _ = listed.candidates.list.try_reserve(len / 62);
        listed
    }

    fn take(&mut self, entry: super::git_index::Entry<'_>) {
        let Ok(path) = std::str::from_utf8(entry.path) else {
            return;
        };
        // Every directory on the way may hold a `.gitattributes`.
        let mut dir = path;
        while let Some((parent, _)) = dir.rsplit_once('/') {
            if self.seen_dirs.contains(parent) {
                break;
            }
            self.seen_dirs.insert(parent.to_owned());
            self.dirs_in_tree.push(parent.to_owned());
            dir = parent;
        }
        match path.rsplit_once('/') {
            Some((dir, ".gitattributes")) => self.attributes.push((dir.to_owned(), entry.id)),
            None if path == ".gitattributes" => self.attributes.push((String::new(), entry.id)),
            _ => {}
        }
        let regular = entry.mode == 0o100644 || entry.mode == 0o100755;
        if !regular || entry.stage != 0 || entry.unvouched || path.split('/').any(|c| c == ".git") {
            return;
        }
        if !self.candidates.push(path.as_bytes(), entry.id, entry.stat) {
            self.too_many = true;
        }
    }
}

/// A repository's index and attribute rules, read (see [`GitBaseline::read_index`]); which
/// entries may be referenced is decided by [`IndexRead::finish`].
pub struct IndexRead {
    root: PathBuf,
    autocrlf: bool,
    rules: Rules,
    candidates: Entries,
    odb: gix_odb::store::Handle<Arc<gix_odb::Store>>,
    index_time: (u32, u32),
    key: IndexKey,
    index_path: PathBuf,
}

impl IndexRead {
    /// The baseline, told the blobs an earlier walk checked (see
    /// [`GitBaseline::open_knowing`]).
    /// `known` is asked in path order (byte order), each path once.
    pub fn finish(self, mut known: impl FnMut(&str, &[u8; 20]) -> Option<u64>) -> GitBaseline {
        let (odb, rules) = (&self.odb, &self.rules);
        let mut entries = self.candidates;
        let Entries { paths, list } = &mut entries;
        list.retain_mut(|tracked| {
            // Paths were checked as UTF-8 when read.
            let Ok(path) = std::str::from_utf8(
                paths
                    .get(tracked.start as usize..tracked.end as usize)
                    .unwrap_or_default(),
            ) else {
                return false;
            };
            // Compared as bytes: spelling 200,000 ids in hex to compare them cost a later run
            // of a big tree more than its manifest lookups.
            let blob_size = match known(path, &raw_of(&tracked.id)) {
                Some(size) => size,
                None => {
                    if u64::from(tracked.stat.size) <= VERIFY_BY_READING {
                        // Read and hashed by the walk instead (see `after_read`): exact, and
                        // cheaper than opening and inflating a loose object. Only the blob's
                        // presence is asked of the database (a partial clone lacks some).
                        tracked.converts = true;
                        return odb.exists(&tracked.id);
                    }
                    // A blob the database lacks (a partial clone, a damaged repository) is stored.
                    let Ok(Some(header)) = odb.try_header(&tracked.id) else {
                        return false;
                    };
                    if header.kind != gix_object::Kind::Blob {
                        return false;
                    }
                    header.size
                }
            };
            // A blob whose size is not the file's when it was indexed went through a
            // conversion (attributes or settings changed since, say): only a hash decides.
            let resized = blob_size as u32 != tracked.stat.size;
            tracked.converts = resized || self.autocrlf || rules.converts(&self.root, path);
            true
        });
        GitBaseline {
            root: self.root,
            entries,
            number: NEXT_BASELINE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            index_time: self.index_time,
            key: self.key,
            index_path: self.index_path,
        }
    }
}

impl GitBaseline {
    /// Whether the index is still the one this baseline read.
    pub fn is_current(&self) -> bool {
        std::fs::metadata(&self.index_path).is_ok_and(|m| IndexKey::of(&m) == self.key)
    }

    /// The project root it belongs to.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Before a file is read: its git reference when git's index says it is clean (stat data
    /// equal, not racy) and no conversion can apply; `None` means read it.
    pub fn clean(&self, rel: &str, meta: &Stat) -> Option<String> {
        self.clean_blob(rel, meta).map(|blob| blob.reference().to_string())
    }

    /// [`GitBaseline::clean`], without spelling the reference (a walk compares it with the
    /// last manifest's first: most files are as they were).
    pub fn clean_blob(&self, rel: &str, meta: &Stat) -> Option<CleanBlob> {
        let tracked = self.entry(rel)?;
        (!tracked.converts && stat_matches(&tracked.stat, meta) && !self.racy(&tracked.stat))
            .then_some(CleanBlob(tracked.id))
    }

    /// Whether the index records blob `id` (a `git:` id) for `rel`: a reference to it stays
    /// valid while the index holds it.
    pub fn tracks(&self, rel: &str, id: &super::objects::ContentId) -> bool {
        id.git()
            .is_some_and(|raw| self.entry(rel).is_some_and(|t| raw_of(&t.id) == *raw))
    }

    /// After a file was read: its git blob id, and whether the index records exactly that
    /// blob for it (a racy, touched or conversion-prone file that is clean after all).
    pub fn after_read(&self, rel: &str, bytes: &[u8]) -> ReadFile {
        let blob = blob_hex(bytes);
        let in_index = self.entry(rel).is_some_and(|t| t.is(&blob));
        ReadFile { blob, in_index }
    }

    /// The index entry for `rel`, searched among its directory's entries (see [`Near`]).
    fn entry(&self, rel: &str) -> Option<&Tracked> {
        let dir = rel.rfind('/').map_or("", |slash| &rel[..=slash]);
        NEAR.with_borrow_mut(|near| {
            if near.baseline != self.number || near.dir != dir {
                near.range = self.entries.dir_range(dir);
                near.dir.clear();
                near.dir.push_str(dir);
                near.baseline = self.number;
            }
            self.entries.get_in(near.range.clone(), rel)
        })
    }

    /// git's racy check: an entry modified at or after the index was written may have been
    /// changed again within the same timestamp.
    fn racy(&self, stat: &gix_index::entry::Stat) -> bool {
        (stat.mtime.secs, stat.mtime.nsecs) >= self.index_time
    }
}

/// The stat data git compares (all of them: brute is stricter than `core.checkStat`).
fn stat_matches(stat: &gix_index::entry::Stat, meta: &Stat) -> bool {
    stat.mtime.secs as i64 == meta.mtime
        && stat.mtime.nsecs as i64 == meta.mtime_nsec
        && stat.ctime.secs as i64 == meta.ctime
        && stat.ctime.nsecs as i64 == meta.ctime_nsec
        && stat.size == meta.size as u32
        && stat.ino == meta.ino as u32
        && stat.dev == meta.dev as u32
        && stat.uid == meta.uid
        && stat.gid == meta.gid
        && meta.is_file()
}

/// The object database of a repository, opened read-only.
fn open_odb(dirs: &Dirs) -> Option<Arc<gix_odb::Store>> {
    let options = gix_odb::store::init::Options {
        current_dir: Some(dirs.common.clone()),
        ..Default::default()
    };
    gix_odb::Store::at_opts(
        dirs.common.join("objects"),
        gix_hash::Kind::Sha1,
        &mut std::iter::empty(),
        options,
    )
    .ok()
    .map(Arc::new)
}

/// A missing git object: the repository's history was rewritten and garbage-collected since
/// the checkpoint referred to it.
#[derive(Debug, thiserror::Error)]
pub enum GitObjectError {
    #[error("git object {hex} is missing from {objects} (pruned by git gc?)")]
    Missing { hex: String, objects: String },
    #[error("{0} has no git repository brute can read")]
    NoRepository(String),
    #[error("git object {hex} in {objects} is damaged: {detail}")]
    Damaged {
        hex: String,
        objects: String,
        detail: String,
    },
}

/// Reads the git blobs a project's checkpoints refer to, from that project's repository
/// (opened on first use, read-only).
pub struct GitObjects {
    root: PathBuf,
    odb: OnceLock<Option<(Arc<gix_odb::Store>, PathBuf)>>,
}

impl std::fmt::Debug for GitObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitObjects")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl GitObjects {
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            odb: OnceLock::new(),
        }
    }

    fn odb(&self) -> Option<&(Arc<gix_odb::Store>, PathBuf)> {
        self.odb
            .get_or_init(|| {
                let dirs = find_dirs(&self.root)?;
                let objects = dirs.common.join("objects");
                open_odb(&dirs).map(|odb| (odb, objects))
            })
            .as_ref()
    }

    /// Whether the repository has blob `hex`.
    pub fn exists(&self, hex: &str) -> bool {
        let Ok(id) = gix_hash::ObjectId::from_hex(hex.as_bytes()) else {
            return false;
        };
        self.odb().is_some_and(|(odb, _)| odb.to_handle_arc().exists(&id))
    }

    /// Blob `hex`'s content, checked against its id.
    pub fn read(&self, hex: &str) -> Result<Vec<u8>, GitObjectError> {
        let (odb, objects) = self
            .odb()
            .ok_or_else(|| GitObjectError::NoRepository(self.root.display().to_string()))?;
        let missing = || GitObjectError::Missing {
            hex: hex.to_owned(),
            objects: objects.display().to_string(),
        };
        let id = gix_hash::ObjectId::from_hex(hex.as_bytes()).map_err(|_| missing())?;
        let mut buffer = Vec::new();
        let found = odb
            .to_handle_arc()
            .try_find(&id, &mut buffer)
            .map_err(|e| GitObjectError::Damaged {
                hex: hex.to_owned(),
                objects: objects.display().to_string(),
                detail: e.to_string(),
            })?;
        let data = found.ok_or_else(missing)?;
        if data.kind != gix_object::Kind::Blob || blob_hex(data.data) != hex {
            return Err(GitObjectError::Damaged {
                hex: hex.to_owned(),
                objects: objects.display().to_string(),
                detail: "not the blob its id names".to_owned(),
            });
        }
        Ok(data.data.to_vec())
    }
}

/// Whether a manifest names any git blob.
pub fn names_git(manifest: &super::checkpoint::Manifest) -> bool {
    manifest.values().any(|s| s.id.is_git())
}

/// The 20 bytes of a SHA-1 object id.
fn raw_of(id: &gix_hash::ObjectId) -> [u8; 20] {
    let mut raw = [0u8; 20];
    raw.copy_from_slice(id.as_bytes());
    raw
}

/// Copies into brute's store the git blobs a turn's changes refer to (the states it started
/// from and ended at), so undo and redo of it do not depend on git keeping them (a rebase and
/// `git gc --prune=now` would not). Returns the ids that could not be copied, with why.
pub fn secure_changes(
    objects: &super::objects::ObjectStore,
    changes: &[super::checkpoint::Change],
) -> std::io::Result<Vec<(String, String)>> {
    let ids: Vec<String> = changes
        .iter()
        .flat_map(|c| [c.before.as_ref(), c.after.as_ref()])
        .flatten()
        .filter(|s| s.id.is_git())
        .map(|s| s.id.to_string())
        .collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    objects.secure_git(&ids)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Runs git in `dir` (no system or global config); `None` when git is missing (a failure
    /// under CI).
    pub(crate) fn git(dir: &Path, args: &[&str]) -> Option<String> {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output();
        let Ok(out) = out else {
            assert!(std::env::var_os("CI").is_none(), "git is needed for this test");
            return None;
        };
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// A baseline of `paths` alone (no repository behind it).
    fn baseline_of(paths: &[String]) -> GitBaseline {
        let mut entries = Entries::default();
        for (i, path) in paths.iter().enumerate() {
            let id = gix_hash::ObjectId::from_bytes_or_panic(&[i as u8; 20]);
            assert!(entries.push(path.as_bytes(), id, gix_index::entry::Stat::default()));
        }
        entries.sort();
        GitBaseline {
            root: PathBuf::new(),
            entries,
            number: NEXT_BASELINE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            index_time: (0, 0),
            key: IndexKey {
                ino: 0,
                size: 0,
                mtime: 0,
                mtime_nsec: 0,
                ctime: 0,
                ctime_nsec: 0,
            },
            index_path: PathBuf::new(),
        }
    }

    /// A lookup among the last directory's entries finds what a search of the whole index
    /// finds, for names that sort around a directory's (`a/b-c`, `a/b.c` and `a/bc` next to
    /// `a/b/`), paths that are absent, lookups that jump between directories and between two
    /// baselines on one thread.
    #[test]
    fn a_lookup_near_the_last_one_finds_what_the_whole_index_finds() {
        let names = ["a", "b", "b-c", "b.c", "bc", "b/", "b/c", "b/c/", "b0", "c", "é", "a/"];
        let mut seed = 11u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        let path = |depth: usize, next: &mut dyn FnMut() -> usize| {
            let mut p = String::new();
            for _ in 0..depth {
                p.push_str(names[next() % names.len()]);
                if !p.ends_with('/') {
                    p.push('/');
                }
            }
            p.push_str(names[next() % names.len()].trim_end_matches('/'));
            p
        };
        for round in 0..100 {
            let mut paths: Vec<String> = (0..next() % 60).map(|_| path(next() % 4, &mut next)).collect();
            paths.sort();
            paths.dedup();
            let half = &paths[paths.len() / 2..];
            let (one, other) = (baseline_of(&paths), baseline_of(half));
            for _ in 0..200 {
                let query = if next() % 2 == 0 && !paths.is_empty() {
                    paths[next() % paths.len()].clone()
                } else {
                    path(next() % 4, &mut next)
                };
                let (base, has) = match next() % 5 {
                    0 => (&other, half),
                    _ => (&one, &paths[..]),
                };
                let near = base.entry(&query).map(|t| t.id);
                assert_eq!(
                    near,
                    base.entries.get(&query).map(|t| t.id),
                    "round {round}: {query:?} in {has:?}"
                );
                assert_eq!(
                    near.is_some(),
                    has.contains(&query),
                    "round {round}: {query:?} in {has:?}"
                );
            }
        }
    }

    fn repo_with(files: &[(&str, &str)]) -> Option<tempfile::TempDir> {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"])?;
        for (path, content) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(&full, content).unwrap();
            // A minute old: not racy by chance (written in the clock tick the index is).
            let past = std::time::SystemTime::now() - Duration::from_secs(60);
            let file = std::fs::File::options().write(true).open(&full).unwrap();
            file.set_modified(past).unwrap();
        }
        git(dir.path(), &["add", "-A"])?;
        Some(dir)
    }

    fn meta(root: &Path, rel: &str) -> Stat {
        Stat::of(&std::fs::symlink_metadata(root.join(rel)).unwrap())
    }

    /// The baseline as a later walk opens it: an earlier one checked every blob (its size is
    /// the file's), so small files are not left to be read and hashed.
    fn checked(root: &Path) -> Option<GitBaseline> {
        GitBaseline::open_knowing(root, |rel, _| std::fs::metadata(root.join(rel)).ok().map(|m| m.len()))
    }

    #[test]
    fn blob_ids_are_gits() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(blob_hex(b"hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
        assert_eq!(git_hex("git:abc"), Some("abc"));
        assert_eq!(git_hex(&"a".repeat(64)), None);
    }

    #[test]
    fn clean_means_stat_equal_and_not_racy_and_a_read_file_is_checked_by_hash() {
        let Some(repo) = repo_with(&[("a.txt", "a\n"), ("b.txt", "b\n")]) else {
            return;
        };
        let root = repo.path();
        // Nothing checked yet: a small file is read and hashed, not trusted by its stat.
        let first = GitBaseline::open(root).unwrap();
        assert_eq!(first.clean("a.txt", &meta(root, "a.txt")), None);
        assert!(first.after_read("a.txt", b"a\n").in_index);
        let base = checked(root).unwrap();
        let id = base.clean("a.txt", &meta(root, "a.txt")).unwrap();
        assert_eq!(id, format!("git:{}", blob_hex(b"a\n")));
        let id = crate::session::objects::ContentId::parse(&id);
        assert!(base.tracks("a.txt", &id) && !base.tracks("b.txt", &id));
        assert_eq!(base.clean("untracked", &meta(root, "a.txt")), None);
        // Touched: the stat data differ, so it is read; the hash says it is still the blob.
        let file = std::fs::File::options().write(true).open(root.join("a.txt")).unwrap();
        file.set_modified(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000))
            .unwrap();
        assert_eq!(base.clean("a.txt", &meta(root, "a.txt")), None);
        assert!(base.after_read("a.txt", b"a\n").in_index);
        assert!(!base.after_read("a.txt", b"A\n").in_index);
        assert_eq!(base.after_read("a.txt", b"A\n").blob, blob_hex(b"A\n"));
        // Racy: an entry modified at or after the index was written is never trusted by stat.
        let mut racy = checked(root).unwrap();
        assert!(racy.clean("b.txt", &meta(root, "b.txt")).is_some());
        let entry = racy.entries.get("b.txt").unwrap().stat;
        racy.index_time = (entry.mtime.secs, entry.mtime.nsecs);
        assert_eq!(racy.clean("b.txt", &meta(root, "b.txt")), None);
        racy.index_time = (entry.mtime.secs, entry.mtime.nsecs + 1);
        assert!(racy.clean("b.txt", &meta(root, "b.txt")).is_some());
    }

    use std::time::Duration;

    #[test]
    fn flagged_entries_are_never_referenced_and_index_formats_are_read() {
        let Some(repo) = repo_with(&[("keep.txt", "k\n"), ("skip.txt", "s\n"), ("assume.txt", "a\n")]) else {
            return;
        };
        let root = repo.path();
        std::fs::write(root.join("intent.txt"), "i\n").unwrap();
        git(root, &["add", "-N", "intent.txt"]);
        git(root, &["update-index", "--skip-worktree", "skip.txt"]);
        git(root, &["update-index", "--assume-unchanged", "assume.txt"]);
        let check = |label: &str| {
            let base = checked(root).unwrap_or_else(|| panic!("{label}: no baseline"));
            assert!(base.clean("keep.txt", &meta(root, "keep.txt")).is_some(), "{label}");
            for path in ["skip.txt", "assume.txt", "intent.txt"] {
                assert!(base.entries.get(path).is_none(), "{label}: {path}");
            }
        };
        check("version 2");
        git(root, &["update-index", "--index-version", "4"]);
        check("version 4");
        git(root, &["update-index", "--split-index"]);
        assert!(
            std::fs::read_dir(root.join(".git"))
                .unwrap()
                .flatten()
                .any(|e| { e.file_name().to_string_lossy().starts_with("sharedindex.") })
        );
        check("split index");
        // A damaged index: no baseline at all (everything is stored).
        let index = root.join(".git/index");
        let bytes = std::fs::read(&index).unwrap();
        std::fs::write(&index, &bytes[..bytes.len() / 2]).unwrap();
        assert!(GitBaseline::open(root).is_none());
        std::fs::remove_file(&index).unwrap();
        assert!(GitBaseline::open(root).is_none(), "no index");
    }

    #[test]
    fn git_dirs_come_from_a_dir_or_a_gitdir_file_never_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        std::fs::create_dir_all(main.join(".git/objects")).unwrap();
        std::fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
        std::fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
        let found = find_dirs(&main).unwrap();
        assert_eq!(found.common, main.join(".git"));
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: ../main/.git/worktrees/wt\n").unwrap();
        let found = find_dirs(&wt).unwrap();
        assert_eq!(found.git_dir, wt.join("../main/.git/worktrees/wt"));
        assert_eq!(found.common, wt.join("../main/.git/worktrees/wt/../.."));
        let linked = dir.path().join("linked");
        std::fs::create_dir_all(&linked).unwrap();
        std::os::unix::fs::symlink(main.join(".git"), linked.join(".git")).unwrap();
        assert_eq!(find_dirs(&linked), None);
        std::fs::write(wt.join(".git"), "not a gitdir line\n").unwrap();
        assert_eq!(find_dirs(&wt), None);
    }

    /// A FIFO, a directory or `/dev/zero` at the index's path (a hostile repository): no
    /// baseline, at once, never a wait or an endless read.
    #[test]
    fn an_index_that_is_not_a_file_gives_no_baseline_and_no_wait() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        if git(root, &["init", "-q"]).is_none() {
            return;
        }
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        git(root, &["add", "a.txt"]);
        assert!(GitBaseline::read_index(root).is_some());
        let index = root.join(".git/index");
        std::fs::remove_file(&index).unwrap();
        let fifo = std::ffi::CString::new(index.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        assert!(GitBaseline::read_index(root).is_none());
        std::fs::remove_file(&index).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &index).unwrap();
        assert!(GitBaseline::read_index(root).is_none());
        std::fs::remove_file(&index).unwrap();
        std::fs::create_dir(&index).unwrap();
        assert!(GitBaseline::read_index(root).is_none());
        // A split index (read by `gix_index`, which opens by path) whose shared part is a FIFO.
        std::fs::remove_dir(&index).unwrap();
        git(root, &["add", "a.txt"]);
        git(root, &["update-index", "--split-index"]);
        assert!(GitBaseline::read_index(root).is_some());
        let shared = std::fs::read_dir(root.join(".git"))
            .unwrap()
            .flatten()
            .find(|e| e.file_name().as_encoded_bytes().starts_with(b"sharedindex."))
            .unwrap()
            .path();
        std::fs::remove_file(&shared).unwrap();
        let fifo = std::ffi::CString::new(shared.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        assert!(GitBaseline::read_index(root).is_none());
    }

    #[test]
    fn config_autocrlf_includes_and_doubtful_settings() {
        let dir = tempfile::tempdir().unwrap();
        let read = |text: &str| {
            let path = dir.path().join("config");
            std::fs::write(&path, text).unwrap();
            let mut config = Config::default();
            read_config_file(&path, &mut config, &mut Vec::new(), 0);
            config
        };
        assert!(read("[core]\n\tautocrlf = true\n").autocrlf);
        assert!(read("[core]\n\tautocrlf = input\n").autocrlf);
        assert!(!read("[core]\n\tautocrlf = false\n").autocrlf);
        assert!(read("[extensions]\n\tobjectFormat = sha256\n").doubtful);
        assert!(read("[core]\n\tworktree = /elsewhere\n").doubtful);
        assert!(read("[core]\n\tbare = true\n").doubtful);
        assert!(!read("[core]\n\tbare = false\n\tfilemode = true\n").doubtful);
        std::fs::write(dir.path().join("more"), "[core]\nautocrlf = true\n").unwrap();
        assert!(read("[include]\n\tpath = more\n").autocrlf, "includes are followed");
        assert!(read("[includeIf \"gitdir:/x/\"]\n\tpath = more\n").autocrlf);
        // An include of itself, or of a FIFO, does not loop or block.
        assert!(!read("[include]\n\tpath = config\n").autocrlf);
        let fifo = dir.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert!(!read("[include]\n\tpath = fifo\n").autocrlf);
        let attributes = read("[core]\n\tattributesFile = ~/attrs\n").attributes_file.unwrap();
        assert!(attributes.ends_with("attrs") && attributes.is_absolute());
    }

    #[test]
    fn attributes_that_convert_mark_their_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::create_dir_all(root.join("sub/deep")).unwrap();
        std::fs::write(
            root.join(".gitattributes"),
            "# comment\n*.bin filter=lfs diff=lfs -text\n*.png binary\n*.md -text\n[attr]media filter=fake\n*.mov media\n/top.crlf eol=crlf\n",
        )
        .unwrap();
        std::fs::write(root.join("sub/.gitattributes"), "*.txt text\n").unwrap();
        let dirs = find_dirs(root).unwrap();
        let rules = Rules::read(
            root,
            &dirs,
            &Config::default(),
            &[String::new(), "sub".into(), "sub/deep".into()],
            Vec::new(),
        );
        assert!(!rules.everything);
        for path in [
            "a.bin",
            "sub/deep/x.bin",
            "clip.mov",
            "top.crlf",
            "sub/a.txt",
            "sub/deep/b.txt",
        ] {
            assert!(rules.converts(root, path), "{path}");
        }
        for path in ["a.png", "readme.md", "a.txt", "sub/top.crlf", "src/main.rs"] {
            assert!(!rules.converts(root, path), "{path}");
        }
        // A pattern brute does not parse (quoted) makes every path doubtful.
        std::fs::write(root.join(".gitattributes"), "\"odd name.bin\" filter=lfs\n").unwrap();
        assert!(Rules::read(root, &dirs, &Config::default(), &[String::new()], Vec::new()).converts(root, "any.rs"));
    }
}
