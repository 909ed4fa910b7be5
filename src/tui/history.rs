//! The prompt history of one project, kept across sessions (as Codex's history file) so Up and
//! Ctrl-R find what was typed yesterday. One JSON string per line, oldest first, in brute's data
//! directory; bounded, written atomically (a temporary file renamed over it) and private (0600),
//! since prompts can hold anything.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Entries kept, newest last.
pub const MAX_ENTRIES: usize = 1000;
/// Entries longer than this are not kept (a huge prompt is not worth recalling).
pub const MAX_ENTRY_BYTES: usize = 64 * 1024;

/// The history file of one project.
#[derive(Debug, Clone)]
pub struct HistoryFile {
    path: PathBuf,
}

impl HistoryFile {
    /// The history of the project at `root`, under `data_dir`.
    pub fn new(data_dir: &Path, root: &Path) -> Self {
        let key = crate::session::project_key(root);
        Self {
            path: data_dir.join("history").join(format!("{key}.jsonl")),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entries, oldest first; a missing or damaged file gives what can be read.
    pub fn load(&self) -> Vec<String> {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return Vec::new();
        };
        text.lines()
            .filter_map(|line| serde_json::from_str::<String>(line).ok())
            .collect()
    }

    /// Adds a prompt (merged with what other sessions added meanwhile) and rewrites the file.
    pub fn append(&self, entry: &str) -> std::io::Result<()> {
        if entry.trim().is_empty() || entry.len() > MAX_ENTRY_BYTES {
            return Ok(());
        }
        let mut entries = self.load();
        if entries.last().map(String::as_str) == Some(entry) {
            return Ok(());
        }
        entries.push(entry.to_owned());
        let start = entries.len().saturating_sub(MAX_ENTRIES);
        self.write(&entries[start..])
    }

    fn write(&self, entries: &[String]) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        // tempfile creates the file 0600; the rename keeps that mode.
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        for entry in entries {
            let line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
            writeln!(file, "{line}")?;
        }
        file.as_file().sync_all()?;
        file.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn kept_bounded_private_and_shared_between_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        let one = HistoryFile::new(dir.path(), &root);
        let two = HistoryFile::new(dir.path(), &root);
        assert!(one.load().is_empty());
        one.append("first\nwith two lines").unwrap();
        two.append("from another session").unwrap();
        one.append("from another session").unwrap();
        one.append("   ").unwrap();
        one.append(&"x".repeat(MAX_ENTRY_BYTES + 1)).unwrap();
        assert_eq!(one.load(), ["first\nwith two lines", "from another session"]);
        let mode = std::fs::metadata(one.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        for i in 0..MAX_ENTRIES + 5 {
            one.append(&format!("prompt {i}")).unwrap();
        }
        let entries = one.load();
        assert_eq!(entries.len(), MAX_ENTRIES);
        assert_eq!(entries.last().map(String::as_str), Some("prompt 1004"));
        // Another project has its own history.
        assert!(
            HistoryFile::new(dir.path(), &dir.path().join("other"))
                .load()
                .is_empty()
        );
        // A damaged line loses only itself.
        std::fs::write(one.path(), "\"ok\"\nnot json\n\"also ok\"\n").unwrap();
        assert_eq!(one.load(), ["ok", "also ok"]);
    }
}
