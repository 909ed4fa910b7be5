//! The tree a move changes ([`Target`]), entry by entry through directory descriptors.

use std::collections::BTreeSet;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::manifest::FileState;

/// The tree a move changes, entry by entry through directory descriptors (any depth; a link
/// that appears on the way is refused, never followed).
pub(super) struct Target {
    fds: crate::beneath::Root,
    root: PathBuf,
}

impl Target {
    pub(super) fn open(root: &Path) -> std::io::Result<Self> {
        let real = root.canonicalize().map_err(crate::session::at_path(root))?;
        let fds = crate::beneath::Root::open(&real).map_err(crate::session::at_path(root))?;
        Ok(Self {
            fds,
            root: root.to_path_buf(),
        })
    }

    /// The path `rel` (spelled) as people see it, for errors.
    pub(super) fn shown(&self, rel: &str) -> PathBuf {
        self.root.join(crate::session::relpath::shown(rel))
    }

    pub(super) fn lstat(&self, rel: &str) -> Option<std::fs::Metadata> {
        self.fds.lstat(&crate::session::relpath::path(rel)).ok()
    }

    pub(super) fn is_dir(&self, rel: &str) -> bool {
        self.lstat(rel).is_some_and(|m| m.is_dir())
    }

    pub(super) fn is_link(&self, rel: &str) -> bool {
        self.lstat(rel).is_some_and(|m| m.file_type().is_symlink())
    }

    /// What a path holds now for the +/- counts (regular files only, bounded).
    pub(super) fn bytes(&self, rel: &str) -> Option<Vec<u8>> {
        self.fds
            .read_bounded(&crate::session::relpath::path(rel), crate::files::MAX_FILE_BYTES)
            .ok()
    }

    /// The permission bits of the directory `rel` (not following a link).
    pub(super) fn dir_mode(&self, rel: &str) -> Option<u32> {
        self.lstat(rel)
            .filter(|m| m.is_dir())
            .map(|m| m.permissions().mode() & 0o7777)
    }

    pub(super) fn at<T>(&self, rel: &str, result: std::io::Result<T>) -> std::io::Result<T> {
        result.map_err(|e| {
            if crate::beneath::is_changed(&e) {
                e // names its path already, and is told apart (see `moved_or_conflict`)
            } else {
                std::io::Error::new(e.kind(), format!("{}: {e}", self.shown(rel).display()))
            }
        })
    }

    pub(super) fn make_dir(&self, rel: &str) -> std::io::Result<()> {
        let path = crate::session::relpath::path(rel);
        if self.lstat(rel).is_some_and(|m| !m.is_dir()) {
            self.at(rel, self.fds.remove(&path, false))?;
        }
        self.at(rel, self.fds.dir(&path, true).map(|_| ()))
    }

    pub(super) fn chmod(&self, rel: &str, mode: u32) -> std::io::Result<()> {
        self.at(rel, self.fds.chmod(&crate::session::relpath::path(rel), mode & 0o7777))
    }

    pub(super) fn write(&self, rel: &str, state: &FileState, bytes: &[u8]) -> std::io::Result<()> {
        let path = crate::session::relpath::path(rel);
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

    pub(super) fn remove(&self, rel: &str) -> std::io::Result<()> {
        self.at(rel, self.fds.remove(&crate::session::relpath::path(rel), false))
    }

    /// Whether the directory `rel` holds nothing.
    pub(super) fn empty(&self, rel: &str) -> bool {
        self.fds
            .list(&crate::session::relpath::path(rel))
            .is_ok_and(|names| names.is_empty())
    }

    /// Whether everything under the directory `dir` (not following links) is one of `paths`.
    pub(super) fn holds_only(&self, dir: &str, paths: &BTreeSet<&str>) -> bool {
        let mut stack = vec![dir.to_owned()];
        while let Some(dir) = stack.pop() {
            let Ok(names) = self.fds.list(&crate::session::relpath::path(&dir)) else {
                return false;
            };
            for (name, is_dir) in names {
                let rel = format!("{dir}/{}", crate::session::relpath::spell(Path::new(&name)));
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
