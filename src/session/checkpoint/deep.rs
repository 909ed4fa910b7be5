//! The tree past PATH_MAX: paths by descriptors where the kernel refuses them ([`Deep`]), and
//! the walk of directories the walker could not list ([`walk_deep`]).

use std::path::{Path, PathBuf};

use super::walk::{Local, Stop, WalkCtx, observe_path};

/// The tree by path where the kernel takes the path at once, else through directory
/// descriptors (a path longer than PATH_MAX, 4096 bytes, fails with `ENAMETOOLONG` otherwise:
/// the part of a deep tree below it would be missing from the checkpoint).
pub(super) struct Deep {
    root: PathBuf,
    fds: std::sync::OnceLock<Option<crate::beneath::Root>>,
}

/// `ENAMETOOLONG`, also as the sequential walker wraps it (walkdir's error inside an
/// `io::Error` of kind `InvalidFilename`, which is what std makes of that errno).
pub(super) fn too_long(error: &std::io::Error) -> bool {
    error.raw_os_error() == Some(libc::ENAMETOOLONG) || error.kind() == std::io::ErrorKind::InvalidFilename
}

impl Deep {
    pub(super) fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            fds: std::sync::OnceLock::new(),
        }
    }

    /// The root's descriptor and `path` relative to it.
    pub(super) fn beneath<'p>(&self, path: &'p Path) -> Option<(&crate::beneath::Root, &'p Path)> {
        let fds = self
            .fds
            .get_or_init(|| {
                let real = self.root.canonicalize().ok()?;
                crate::beneath::Root::open(&real).ok()
            })
            .as_ref()?;
        Some((fds, path.strip_prefix(&self.root).ok()?))
    }

    pub(super) fn lstat(&self, path: &Path) -> Option<std::fs::Metadata> {
        match std::fs::symlink_metadata(path) {
            Ok(meta) => Some(meta),
            Err(e) if too_long(&e) => {
                let (fds, rel) = self.beneath(path)?;
                fds.lstat(rel).ok()
            }
            Err(_) => None,
        }
    }

    pub(super) fn read_link(&self, path: &Path) -> std::io::Result<std::ffi::OsString> {
        match std::fs::read_link(path) {
            Ok(target) => Ok(target.into_os_string()),
            Err(e) if too_long(&e) => match self.beneath(path) {
                Some((fds, rel)) => fds.read_link(rel),
                None => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    pub(super) fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
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
pub(super) fn reachable(entry: Result<ignore::DirEntry, ignore::Error>) -> std::io::Result<Option<ignore::DirEntry>> {
    match entry {
        Ok(entry) => Ok(Some(entry)),
        Err(error) if too_long_to_list(&error).is_some() => Err(std::io::Error::other(DeepTouched)),
        Err(_) => Ok(None),
    }
}

/// Says that a touched walk met a directory past PATH_MAX (see [`reachable`]).
#[derive(Debug, thiserror::Error)]
#[error("a touched directory lies past PATH_MAX")]
pub(super) struct DeepTouched;

/// The directory a walker error is about when it could not be listed because its path is
/// longer than the kernel takes.
pub(super) fn too_long_to_list(error: &ignore::Error) -> Option<&Path> {
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
pub(super) fn walk_deep(ctx: &WalkCtx<'_>, dir: &Path) -> Local {
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
            match observe_path(ctx, &path, kind, || meta.as_ref().map(crate::session::stat::Stat::of)) {
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
