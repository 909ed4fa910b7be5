//! A content-addressed object store: each blob is stored once under its SHA-256, so unchanged
//! files cost nothing however many checkpoints refer to them.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Objects under `<data dir>/objects/ab/cdef…`.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    dir: PathBuf,
}

/// The hex SHA-256 of `bytes`.
pub fn hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl ObjectStore {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, id: &str) -> PathBuf {
        let (head, tail) = id.split_at(2.min(id.len()));
        self.dir.join(head).join(tail)
    }

    /// Stores `bytes` (if not already there) and returns its id. Written atomically.
    pub fn put(&self, bytes: &[u8]) -> std::io::Result<String> {
        let id = hash(bytes);
        let path = self.path(&id);
        if path.exists() {
            return Ok(id);
        }
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir)?;
        let mut temp = tempfile::NamedTempFile::new_in(dir)?;
        temp.write_all(bytes)?;
        temp.persist(&path).map_err(|e| e.error)?;
        Ok(id)
    }

    /// Reads an object.
    pub fn get(&self, id: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.path(id))
    }

    pub fn contains(&self, id: &str) -> bool {
        self.path(id).exists()
    }

    /// Every stored object id with its size.
    pub fn list(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let Ok(heads) = std::fs::read_dir(&self.dir) else {
            return out;
        };
        for head in heads.flatten() {
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
        out
    }

    /// Removes an object.
    pub fn remove(&self, id: &str) -> std::io::Result<()> {
        std::fs::remove_file(self.path(id))
    }
}
