//! Keeps what a turn's checkpoint only references before a built-in tool changes it: a file
//! the checkpoint names by its git blob (`git:<id>`) has that blob copied into brute's store
//! the first time a tool is about to write, patch or remove it. Undo of those files then does
//! not depend on git keeping the blob, even when brute is killed before the turn's end (which
//! copies the rest: what shell commands changed).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::checkpoint::Scanner;
use super::objects::ObjectStore;

/// Copies git blobs the last checkpoint names into the store, path by path (see the module).
#[derive(Clone)]
pub struct GitKeeper {
    scanner: Arc<Mutex<Scanner>>,
    objects: ObjectStore,
    /// The project root as tools' paths spell it (canonical), and as given.
    roots: [PathBuf; 2],
}

impl GitKeeper {
    pub(super) fn new(scanner: Arc<Mutex<Scanner>>, objects: ObjectStore, root: &Path) -> Self {
        let real = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        Self {
            scanner,
            objects,
            roots: [real, root.to_path_buf()],
        }
    }

    /// Called before a tool changes `path` (absolute): copies the git blob the last
    /// checkpoint names for it, and for everything under it when it is a directory (a
    /// recursive removal tells each entry too, but a directory replaced by a file would not).
    /// A blob that cannot be copied stays a reference (the turn's end tries again).
    pub fn before_change(&self, path: &Path) {
        let Some(rel) = self.roots.iter().find_map(|root| path.strip_prefix(root).ok()) else {
            return;
        };
        let rel = rel.to_string_lossy();
        let ids = {
            let scanner = self.scanner.lock().unwrap_or_else(|e| e.into_inner());
            scanner.git_ids_at(&rel)
        };
        if ids.is_empty() {
            return;
        }
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        match self.objects.secure_git(&ids) {
            Ok(failed) => {
                for (id, why) in failed {
                    tracing::warn!(%id, %why, "cannot copy a git blob before the file changes");
                }
            }
            Err(error) => tracing::warn!(%error, "cannot copy a git blob before the file changes"),
        }
    }
}
