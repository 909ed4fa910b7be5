//! One walk's shared state ([`WalkCtx`]) and the one place a walked entry's state is decided
//! ([`observe`]): reused by its metadata, read and stored, or left out.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use super::deep::{Deep, too_long_to_list};
use super::manifest::{ContentId, FileState, Manifest};
use super::map::Found;
use super::scanner::Budget;
use crate::session::objects::ObjectStore;
use crate::session::stat::{DirStat, Stat};

/// Files modified this recently are re-read even when their metadata matches (an edit within
/// the filesystem's timestamp granularity would otherwise go unseen).
const RACY_WINDOW: Duration = Duration::from_secs(2);

/// Whether `meta` is what `known` recorded of a regular file (see
/// [`FileState::is_file_with`]).
pub(super) fn unchanged_file(known: &FileState, meta: &std::fs::Metadata) -> bool {
    let stat = Stat::of(meta);
    known.is_file_with(stat.size, stat.mode, stat.mtime_ns(), stat.ctime_ns())
}

/// Why a walk stopped early.
pub(super) enum Stop {
    Budget(String),
    Failed(std::io::Error),
}

/// What one walk shares between its threads.
pub(super) struct WalkCtx<'a> {
    pub(super) root: &'a Path,
    /// The tree past the depth a path reaches at once (see [`Deep`]).
    pub(super) deep: Deep,
    /// brute's own data directory, when it lies in the tree (never recorded).
    pub(super) own: Option<PathBuf>,
    /// Directories the walker could not list because their path is longer than the kernel
    /// takes (PATH_MAX): walked by descriptors after the listing (see [`walk_deep`](super::deep::walk_deep)).
    pub(super) deep_dirs: std::sync::Mutex<Vec<PathBuf>>,
    pub(super) previous: &'a Manifest,
    pub(super) objects: &'a ObjectStore,
    pub(super) pack: std::sync::Mutex<crate::session::objects::PackWriter>,
    pub(super) max_file_bytes: u64,
    /// See [`Scanner`](super::scanner::Scanner)'s `contents_stored`.
    pub(super) contents_stored: bool,
    /// git's index for the root, when its blobs can be baselines.
    pub(super) git: Option<std::sync::Arc<crate::session::git_baseline::GitBaseline>>,
    pub(super) now: SystemTime,
    pub(super) hashed: AtomicUsize,
    pub(super) entries: AtomicUsize,
    pub(super) budget: Budget,
    pub(super) started: std::time::Instant,
    pub(super) stop: std::sync::Mutex<Option<Stop>>,
    pub(super) collected: std::sync::Mutex<Vec<Local>>,
}

impl WalkCtx<'_> {
    pub(super) fn stop(&self, why: Stop) {
        let mut stop = self.stop.lock().unwrap_or_else(|e| e.into_inner());
        stop.get_or_insert(why);
    }

    pub(super) fn stopped(&self) -> bool {
        self.stop.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Counts one entry against the budget; the message when it is spent.
    pub(super) fn spend(&self) -> Option<String> {
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

/// Files a reader takes from the lists at a time.
const READ_CHUNK: usize = 256;

/// Reads the files the listing left to read (see [`Seen::Read`]) on up to `threads` threads
/// (this one for a few), within the walk's time budget. A big tree's first walk reads every
/// file: the listing's lists are taken chunk by chunk as they are (never copied into one),
/// and the entries gather in one list sized once for all of them, each path copied from one
/// buffer to the other (threads growing lists of their own would hold up to twice as
/// much, and a heap string per path a third more).
pub(super) fn read_pending(ctx: &WalkCtx<'_>, threads: usize) -> Local {
    // Room for the entries the listing found too: they are gathered into this list after
    // (see [`Local::gather`]), and growing a list this big would copy it.
    let (lists, listed, listed_bytes): (Vec<ToRead>, usize, usize) = {
        let mut collected = ctx.collected.lock().unwrap_or_else(|e| e.into_inner());
        let listed = collected.iter().map(|l| l.entries.len()).sum();
        let listed_bytes = collected.iter().map(|l| l.entries.path_bytes()).sum();
        let lists = collected
            .iter_mut()
            .map(|l| std::mem::take(&mut l.pending))
            .filter(|list| !list.files.is_empty())
            .collect();
        (lists, listed, listed_bytes)
    };
    let total: usize = lists.iter().map(|list| list.files.len()).sum();
    let path_bytes: usize = lists.iter().map(|list| list.text.len()).sum();
    let lists = std::sync::Mutex::new(lists);
    let mut gathered = Local::default();
    gathered
        .entries
        .reserve_exact(total + listed, path_bytes + listed_bytes);
    let gathered = std::sync::Mutex::new(gathered);
    let work = || {
        let mut local = Local::default();
        while let Some(chunk) = take_chunk(&lists) {
            if let Some(message) = ctx.overtime() {
                ctx.stop(Stop::Budget(message));
            }
            if ctx.stopped() {
                break;
            }
            for (rel, file) in chunk.iter() {
                match read_file(ctx, rel, file) {
                    Ok(seen) => local.add(seen),
                    Err(error) => {
                        ctx.stop(Stop::Failed(error));
                        break;
                    }
                }
            }
            gathered.lock().unwrap_or_else(|e| e.into_inner()).take_from(&mut local);
        }
    };
    let threads = threads.min(total / 64).max(1);
    if threads == 1 {
        work();
    } else {
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
            work();
            for helper in helpers {
                if helper.join().is_err() {
                    // Its files would be missing from the manifest (as if the turn made them).
                    ctx.stop(Stop::Failed(std::io::Error::other(
                        "a checkpoint reader thread panicked",
                    )));
                }
            }
        });
    }
    gathered.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Up to [`READ_CHUNK`] files from the end of the last list; a list taken whole is dropped,
/// and one taken mostly gives its room back, so what was read stops holding memory.
fn take_chunk(lists: &std::sync::Mutex<Vec<ToRead>>) -> Option<ToRead> {
    let mut lists = lists.lock().unwrap_or_else(|e| e.into_inner());
    let list = lists.last_mut()?;
    let chunk = list.split_off(list.files.len().saturating_sub(READ_CHUNK));
    if list.files.is_empty() {
        lists.pop();
    } else if list.files.len() < list.files.capacity() / 2 {
        list.files.shrink_to_fit();
        list.text.shrink_to_fit();
    }
    Some(chunk)
}

/// Files the listing found changed (or new), read after it: their paths, spelled as the
/// manifest spells them, in one buffer (the file is
/// [`relpath::under`](crate::session::relpath::under) the root). A big tree's first walk
/// lists every file here, and a heap string per path would cost it megabytes.
#[derive(Default)]
pub(super) struct ToRead {
    text: String,
    files: Vec<PendingFile>,
}

/// What the listing saw of a file to read: its path's length in [`ToRead`]'s text, and the
/// metadata its entry records.
#[derive(Clone, Copy)]
pub(super) struct PendingFile {
    len: u32,
    mode: u32,
    mtime_ns: u64,
    ctime_ns: u64,
}

impl ToRead {
    fn push(&mut self, rel: &str, file: PendingFile) {
        // [`observe_path`] gives no file to read whose path a u32 does not measure.
        let Ok(len) = u32::try_from(rel.len()) else { return };
        self.text.push_str(rel);
        self.files.push(PendingFile { len, ..file });
    }

    fn append(&mut self, other: &mut ToRead) {
        self.text.push_str(&other.text);
        self.files.append(&mut other.files);
        other.text.clear();
    }

    /// The files from place `at` on, taken out of this list (whose room is kept).
    fn split_off(&mut self, at: usize) -> ToRead {
        let files = self.files.split_off(at);
        let bytes: usize = files.iter().map(|file| file.len as usize).sum();
        let text = self.text.split_off(self.text.len() - bytes);
        ToRead { text, files }
    }

    /// Each file's path and what the listing saw, in the order listed.
    fn iter(&self) -> impl Iterator<Item = (&str, PendingFile)> {
        self.files.iter().scan(0usize, |start, file| {
            let end = *start + file.len as usize;
            let rel = self.text.get(*start..end);
            debug_assert!(rel.is_some(), "a file to read lies outside its list's text");
            let rel = rel.unwrap_or_default();
            *start = end;
            Some((rel, *file))
        })
    }
}

/// One walker thread's findings, handed over when the thread is done.
#[derive(Default)]
pub(super) struct Local {
    /// Entries new or changed since the previous manifest.
    pub(super) entries: Found,
    /// Entries of the previous manifest found unchanged: only where they are is kept (a big
    /// tree's walk would otherwise hold a second copy of every path it found unchanged).
    pub(super) same: Unchanged,
    pub(super) skipped: Vec<(String, u64)>,
    /// Files to read once the listing is complete.
    pub(super) pending: ToRead,
}

/// The previous manifest's entries a walk found unchanged: a bit per sorted place, and the
/// paths of the entries added to it since (see [`Manifest::locate`]).
#[derive(Default)]
pub(super) struct Unchanged {
    pub(super) at: Vec<u64>,
    pub(super) paths: Vec<String>,
    pub(super) count: usize,
}

impl Unchanged {
    pub(super) fn add(&mut self, kept: Kept) {
        match kept {
            Kept::At(i) => {
                if self.at.len() <= i / 64 {
                    self.at.resize(i / 64 + 1, 0);
                }
                self.at[i / 64] |= 1 << (i % 64);
            }
            Kept::Path(path) => self.paths.push(path),
        }
        self.count += 1;
    }

    pub(super) fn absorb(&mut self, other: Unchanged) {
        if self.at.len() < other.at.len() {
            self.at.resize(other.at.len(), 0);
        }
        for (word, theirs) in self.at.iter_mut().zip(other.at) {
            *word |= theirs;
        }
        self.paths.extend(other.paths);
        self.count += other.count;
    }
}

impl Local {
    /// All of `locals`' findings in one: gathered into the one whose list of entries has the
    /// most room, grown once by what the others add (a first walk's read files are most of
    /// a big tree, and doubling their list's room for a few directories would cost megabytes).
    pub(super) fn gather(locals: Vec<Local>) -> Local {
        let mut locals = locals;
        let Some(biggest) = (0..locals.len()).max_by_key(|i| locals[*i].entries.capacity()) else {
            return Local::default();
        };
        let mut all = locals.swap_remove(biggest);
        let (entries, path_bytes) = locals.iter().fold((0, 0), |(n, bytes), l| {
            (n + l.entries.len(), bytes + l.entries.path_bytes())
        });
        all.entries.reserve_exact(entries, path_bytes);
        for mut local in locals {
            all.take_from(&mut local);
        }
        all
    }

    /// Moves what `other` holds into this one, leaving `other` empty with its room kept.
    fn take_from(&mut self, other: &mut Local) {
        self.entries.append(&mut other.entries);
        self.same.absorb(std::mem::take(&mut other.same));
        self.skipped.append(&mut other.skipped);
        self.pending.append(&mut other.pending);
    }

    pub(super) fn add(&mut self, seen: Seen) {
        match seen {
            Seen::Entry(rel, state) => self.entries.push(&rel, state),
            Seen::Same(kept) => self.same.add(kept),
            Seen::TooLarge(rel, size) => self.skipped.push((rel, size)),
            Seen::Read(file) => self.pending.push(&file.rel, file.seen),
            Seen::Nothing => {}
        }
    }
}

pub(super) struct Collector<'a, 'c> {
    pub(super) ctx: &'a WalkCtx<'c>,
}

impl<'s, 'c> ignore::ParallelVisitorBuilder<'s> for Collector<'s, 'c> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Visitor {
            ctx: self.ctx,
            local: Local::default(),
            stat: DirStat::default(),
        })
    }
}

struct Visitor<'a, 'c> {
    ctx: &'a WalkCtx<'c>,
    local: Local,
    stat: DirStat,
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
        match observe(self.ctx, &entry, &mut self.stat) {
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
pub(super) enum Seen {
    Entry(String, FileState),
    /// The previous manifest's entry for the path, unchanged.
    Same(Kept),
    /// A file over the size cap: (path, size).
    TooLarge(String, u64),
    /// A file whose content must be read (see [`read_file`]).
    Read(Pending),
    /// Not checkpointed (a FIFO, socket or device; vanished or unreadable).
    Nothing,
}

/// Where an unchanged entry is in the previous manifest: its sorted place, or the path of one
/// added since it was sorted.
pub(super) enum Kept {
    At(usize),
    Path(String),
}

impl Kept {
    pub(super) fn of(rel: String, at: Option<usize>) -> Kept {
        match at {
            Some(i) => Kept::At(i),
            None => Kept::Path(rel),
        }
    }
}

/// A file the listing found changed (or new): read after the listing.
pub(super) struct Pending {
    /// The path under the root, spelled as the manifest spells it.
    pub(super) rel: String,
    pub(super) seen: PendingFile,
}

/// [`observe`], with a file that needs reading read at once and an unchanged entry copied
/// (walks of a few directories).
pub(super) fn observe_now(ctx: &WalkCtx<'_>, entry: &ignore::DirEntry, stat: &mut DirStat) -> std::io::Result<Seen> {
    match observe(ctx, entry, stat)? {
        Seen::Read(file) => read_file(ctx, &file.rel, file.seen),
        seen => Ok(seen.owned(ctx.previous)),
    }
}

impl Seen {
    /// [`Seen::Same`] as the [`Seen::Entry`] it stands for, copied from `previous`.
    pub(super) fn owned(self, previous: &Manifest) -> Seen {
        match self {
            Seen::Same(Kept::At(i)) => match previous.at(i) {
                Some((rel, state)) => Seen::Entry(rel.to_owned(), state.clone()),
                None => Seen::Nothing,
            },
            Seen::Same(Kept::Path(rel)) => match previous.get(&rel) {
                Some(state) => Seen::Entry(rel, state.clone()),
                None => Seen::Nothing,
            },
            seen => seen,
        }
    }
}

/// `state` found at `rel`: [`Seen::Same`] when the previous manifest records exactly it.
fn found(ctx: &WalkCtx<'_>, rel: String, state: FileState) -> Seen {
    match ctx.previous.locate(&rel) {
        Some((at, known)) if *known == state => Seen::Same(Kept::of(rel, at)),
        _ => Seen::Entry(rel, state),
    }
}

/// The one place a walked entry's state is decided: a directory's mode, a link's target, a
/// file's recorded state when its metadata matches the previous scan (no read), else the
/// file to read ([`read_file`]: its content is stored). Only the metadata the walker already has is used before that
/// choice (one `lstat` per entry, as `rg --files` makes; by name in the directory listed, see
/// [`DirStat`]).
fn observe(ctx: &WalkCtx<'_>, entry: &ignore::DirEntry, stat: &mut DirStat) -> std::io::Result<Seen> {
    observe_path(ctx, entry.path(), entry.file_type(), || {
        stat.lstat(entry.path())
            .ok()
            .or_else(|| ctx.deep.lstat(entry.path()).map(|meta| Stat::of(&meta)))
    })
}

/// `path` relative to `root`, as bytes: a walker's paths are `root` joined with names, so
/// the bytes after `root/` (compared by bytes first: parsing both into components cost a big
/// walk more than its lookups); any other spelling is compared by components.
fn under_root<'p>(root: &Path, path: &'p Path) -> Option<&'p [u8]> {
    use std::os::unix::ffi::OsStrExt;
    let (root_bytes, bytes) = (root.as_os_str().as_bytes(), path.as_os_str().as_bytes());
    if let Some(rest) = bytes.strip_prefix(root_bytes).and_then(|rest| rest.strip_prefix(b"/"))
        && !rest.is_empty()
        && !rest.starts_with(b"/")
        && !rest.ends_with(b"/")
        && !rest
            .split(|b| *b == b'/')
            .any(|c| c.is_empty() || c == b"." || c == b"..")
    {
        return Some(rest);
    }
    path.strip_prefix(root).ok().map(|rel| rel.as_os_str().as_bytes())
}

/// [`observe`] for a path and what is known of it: its kind, and its `lstat` when asked.
pub(super) fn observe_path(
    ctx: &WalkCtx<'_>,
    path: &Path,
    kind: Option<std::fs::FileType>,
    metadata: impl FnOnce() -> Option<Stat>,
) -> std::io::Result<Seen> {
    let Some(rel) = under_root(ctx.root, path) else {
        return Ok(Seen::Nothing);
    };
    let rel = crate::session::relpath::spell_bytes(rel);
    let Some(kind) = kind else {
        return Ok(Seen::Nothing);
    };
    if kind.is_dir() {
        let Some(meta) = metadata() else {
            return Ok(Seen::Nothing);
        };
        let state = FileState {
            id: ContentId::None,
            size: 0,
            mode: meta.mode,
            mtime_ns: 0,
            ctime_ns: 0,
            dir: true,
            link: false,
            git: Default::default(),
        };
        return Ok(found(ctx, rel, state));
    }
    if kind.is_symlink() {
        // The link itself (its target path), never what it points to.
        let Ok(target) = ctx.deep.read_link(path) else {
            return Ok(Seen::Nothing);
        };
        let target = target.into_encoded_bytes();
        let id = ContentId::parse(&crate::session::objects::hash(&target));
        // The same target as last time is stored already (no store lookup, no lock).
        let id = match ctx.previous.get(&rel) {
            Some(known) if known.link && known.id == id => id,
            _ => ContentId::parse(&ctx.pack.lock().unwrap_or_else(|e| e.into_inner()).add_bytes(&target)?),
        };
        let state = FileState {
            id,
            size: target.len() as u64,
            mode: 0o777,
            mtime_ns: 0,
            ctime_ns: 0,
            dir: false,
            link: true,
            git: Default::default(),
        };
        return Ok(found(ctx, rel, state));
    }
    if !kind.is_file() {
        return Ok(Seen::Nothing); // FIFOs, sockets and devices are not checkpointed
    }
    let Some(meta) = metadata() else {
        return Ok(Seen::Nothing);
    };
    if meta.size > ctx.max_file_bytes {
        return Ok(Seen::TooLarge(rel, meta.size));
    }
    let mode = meta.mode;
    let mtime = meta.mtime_ns();
    let ctime = meta.ctime_ns();
    // Looked up once: both ways of reusing an entry below compare with it.
    let (at, known) = match ctx.previous.locate(&rel) {
        Some((at, known)) => (at, Some(known)),
        None => (None, None),
    };
    let same_file = |known: &FileState| known.is_file_with(meta.size, mode, mtime, ctime);
    // Clean in git's index: git's own blob is the baseline, nothing is read or copied.
    if let Some(blob) = ctx.git.as_ref().and_then(|g| g.clean_blob(&rel, &meta)) {
        if known.is_some_and(|known| same_file(known) && blob.is(&known.id) && known.git.is_empty()) {
            return Ok(Seen::Same(Kept::of(rel, at)));
        }
        let state = FileState {
            id: blob.reference(),
            size: meta.size,
            mode,
            mtime_ns: mtime,
            ctime_ns: ctime,
            ..Default::default()
        };
        return Ok(Seen::Entry(rel, state));
    }
    let recent = meta
        .modified()
        .and_then(|m| ctx.now.duration_since(m).ok())
        .is_none_or(|age| age < RACY_WINDOW);
    if let Some(known) = known
        && same_file(known)
        && !recent
        // A git blob stays a baseline only while the index records it for the path.
        && (!known.id.is_git()
            || ctx.git.as_ref().is_some_and(|g| g.tracks(&rel, &known.id)))
        // A seed's content pruned or lost meanwhile is read again, never referenced.
        && (ctx.contents_stored || known.id.with_text(|id| ctx.objects.contains(id)))
    {
        return Ok(Seen::Same(Kept::of(rel, at)));
    }
    let Ok(len) = u32::try_from(rel.len()) else {
        return Ok(Seen::Nothing); // a path of 4 GiB: not a tree anyone can checkpoint
    };
    Ok(Seen::Read(Pending {
        rel,
        seen: PendingFile {
            len,
            mode,
            mtime_ns: mtime,
            ctime_ns: ctime,
        },
    }))
}

/// Reads a file [`observe`] left to read, and stores its content, or references it as git's
/// blob when it is exactly the index's.
pub(super) fn read_file(ctx: &WalkCtx<'_>, rel: &str, file: PendingFile) -> std::io::Result<Seen> {
    let PendingFile {
        mode,
        mtime_ns: mtime,
        ctime_ns: ctime,
        ..
    } = file;
    let path = crate::session::relpath::under(ctx.root, rel);
    let bytes = match ctx.deep.read(&path) {
        Ok(bytes) => bytes,
        Err(_) => return Ok(Seen::Nothing), // vanished or unreadable: not part of this checkpoint
    };
    // In a git repository the content's blob id is known too: read anyway (racy, touched,
    // maybe converted), a file whose blob is the index's is referenced, not stored.
    let store = |bytes: &[u8]| -> std::io::Result<ContentId> {
        let id = ctx.pack.lock().unwrap_or_else(|e| e.into_inner()).add_bytes(bytes)?;
        Ok(ContentId::parse(&id))
    };
    let (id, git_blob) = match ctx.git.as_ref().map(|g| g.after_read(rel, &bytes)) {
        Some(read) if read.in_index => (
            ContentId::parse(&format!("{}{}", crate::session::git_baseline::PREFIX, read.blob)),
            String::new(),
        ),
        Some(read) => (store(&bytes)?, read.blob),
        None => (store(&bytes)?, String::new()),
    };
    ctx.hashed.fetch_add(1, Ordering::Relaxed);
    Ok(Seen::Entry(
        rel.to_owned(),
        FileState {
            id,
            size: bytes.len() as u64,
            mode,
            mtime_ns: mtime,
            ctime_ns: ctime,
            dir: false,
            link: false,
            git: git_blob.into(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads' findings gather into the list with room for all of them, which does not grow
    /// (a big tree's first walk would copy its biggest list otherwise).
    #[test]
    fn findings_gather_into_the_list_with_room_for_them_all() {
        let state = FileState::default();
        let local = |names: &[&str]| {
            let mut local = Local::default();
            for name in names {
                local.entries.push(name, state.clone());
            }
            local
        };
        let mut reader = Local::default();
        reader.entries.reserve_exact(9, 64);
        for i in 0..4 {
            reader.entries.push(&format!("r{i}"), state.clone());
        }
        let room = reader.entries.capacity();
        let (first, last) = (local(&["a", "b", "c"]), local(&["d", "e"]));
        assert!(first.entries.capacity() < room);
        let all = Local::gather(vec![first, reader, last]);
        assert_eq!(all.entries.len(), 9);
        assert_eq!(all.entries.capacity(), room);
        let manifest = Manifest::from(all.entries);
        assert_eq!(
            manifest.keys().collect::<Vec<_>>(),
            ["a", "b", "c", "d", "e", "r0", "r1", "r2", "r3"]
        );
    }

    /// Files to read, listed by several threads and taken chunk by chunk from the end: every
    /// file comes out once, with its own path and metadata.
    #[test]
    fn files_to_read_are_taken_whole_whichever_way_their_lists_are_cut() {
        let file = |n: u64| PendingFile {
            len: 0,
            mode: 0o100644,
            mtime_ns: n,
            ctime_ns: n + 1,
        };
        let mut lists: Vec<ToRead> = Vec::new();
        let mut expected = Vec::new();
        for list in 0..4u64 {
            let mut part = ToRead::default();
            let mut other = ToRead::default();
            for i in 0..(list * 300 + 7) {
                let rel = format!("d{list}/{}{i}", "\u{e9}".repeat((i % 5) as usize));
                let into = if i % 3 == 0 { &mut other } else { &mut part };
                into.push(&rel, file(list * 10_000 + i));
            }
            // What one thread listed, then another's appended after it.
            for (rel, seen) in part.iter().chain(other.iter()) {
                expected.push((rel.to_owned(), seen.mtime_ns, seen.ctime_ns));
            }
            part.append(&mut other);
            assert!(other.files.is_empty() && other.text.is_empty());
            lists.push(part);
        }
        let lists = std::sync::Mutex::new(lists);
        let mut taken = Vec::new();
        while let Some(chunk) = take_chunk(&lists) {
            assert!(!chunk.files.is_empty() && chunk.files.len() <= READ_CHUNK);
            for (rel, seen) in chunk.iter() {
                assert_eq!(seen.len as usize, rel.len());
                taken.push((rel.to_owned(), seen.mtime_ns, seen.ctime_ns));
            }
        }
        expected.sort();
        taken.sort();
        assert_eq!(taken, expected);
    }

    #[test]
    fn a_path_under_the_root_is_what_comparing_components_finds() {
        use std::os::unix::ffi::OsStrExt;
        let by_components = |root: &str, path: &str| {
            Path::new(path)
                .strip_prefix(root)
                .ok()
                .map(|rel| rel.as_os_str().as_bytes().to_vec())
        };
        for root in ["/work/tree", "/work/tree/", "/", "relative"] {
            for rest in [
                "a",
                "a/b.rs",
                "a/./b",
                "./a",
                "a/../b",
                "a//b",
                "a/",
                "",
                "/a",
                "x\u{e9}/\u{fffd}",
                ".hidden/f",
            ] {
                let trimmed = root.trim_end_matches('/');
                for path in [
                    format!("{trimmed}/{rest}"),
                    format!("{root}{rest}"),
                    format!("{trimmed}x/{rest}"),
                ] {
                    let fast = under_root(Path::new(root), Path::new(&path)).map(<[u8]>::to_vec);
                    assert_eq!(fast, by_components(root, &path), "{root:?} {path:?}");
                }
            }
        }
    }
}
