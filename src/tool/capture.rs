//! Bounded capture of a process's output stream.
//!
//! A command may print without end (`yes`, a runaway log). Up to [`MEMORY_BYTES`] stay in
//! memory; past that the stream is written to a file in the overflow directory (itself capped
//! at [`FILE_BYTES`], with the cut stated) and only the last [`TAIL_BYTES`] stay in memory for
//! the result. Memory use is bounded whatever the command prints.

use std::io::Write;
use std::path::{Path, PathBuf};

/// What is kept in memory before spilling to a file.
pub const MEMORY_BYTES: usize = 1024 * 1024;
/// What is kept in memory after spilling: the end, for the result.
pub const TAIL_BYTES: usize = 128 * 1024;
/// The most a spill file holds.
pub const FILE_BYTES: u64 = 64 * 1024 * 1024;

fn stamp_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// Where a spilled stream went.
#[derive(Debug)]
struct Spill {
    path: PathBuf,
    file: Option<std::fs::File>,
    written: u64,
}

/// One output stream, bounded.
#[derive(Debug)]
pub struct Capture {
    label: &'static str,
    name: String,
    dir: Option<PathBuf>,
    kept: Vec<u8>,
    total: u64,
    spilled: bool,
    spill: Option<Spill>,
}

impl Capture {
    /// A capture labelled `label` (`stdout`, `stderr`) whose spill file is named after
    /// `call_id` in `dir`.
    pub fn new(label: &'static str, call_id: &str, dir: Option<&Path>) -> Self {
        let safe = super::truncate::file_safe(call_id);
        Self {
            label,
            name: format!("{}-{safe}.{label}.txt", stamp_ms()),
            dir: dir.map(Path::to_path_buf),
            kept: Vec::new(),
            total: 0,
            spilled: false,
            spill: None,
        }
    }

    /// Adds a chunk of output.
    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if !self.spilled && self.kept.len() + bytes.len() > MEMORY_BYTES {
            self.spilled = true;
            self.spill = self.open_spill();
        }
        if self.spilled {
            self.write_spill(bytes);
            self.kept.extend_from_slice(bytes);
            if self.kept.len() > 2 * TAIL_BYTES {
                let cut = self.kept.len() - TAIL_BYTES;
                self.kept.drain(..cut);
            }
        } else {
            self.kept.extend_from_slice(bytes);
        }
    }

    fn open_spill(&self) -> Option<Spill> {
        let dir = self.dir.as_ref()?;
        std::fs::create_dir_all(dir).ok()?;
        let path = dir.join(&self.name);
        let mut file = crate::paths::private_file(&path).ok()?;
        file.write_all(&self.kept).ok()?;
        Some(Spill {
            path,
            file: Some(file),
            written: self.kept.len() as u64,
        })
    }

    fn write_spill(&mut self, bytes: &[u8]) {
        let Some(spill) = self.spill.as_mut() else { return };
        let room = FILE_BYTES.saturating_sub(spill.written);
        let take = bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        if let Some(file) = spill.file.as_mut() {
            if file.write_all(&bytes[..take]).is_err() {
                spill.file = None;
            }
            spill.written += take as u64;
            if spill.written >= FILE_BYTES {
                spill.file = None;
            }
        }
    }

    /// Total bytes the stream produced.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The text kept in memory (all of it, or the end once spilled), lossily decoded. A cut in
    /// the middle of a line starts at the next full line.
    pub fn text(&self) -> String {
        let bytes = if self.spilled {
            match self.kept.iter().position(|b| *b == b'\n') {
                Some(i) if i + 1 < self.kept.len() => &self.kept[i + 1..],
                _ => &self.kept[..],
            }
        } else {
            &self.kept[..]
        };
        String::from_utf8_lossy(bytes).into_owned()
    }

    /// A note for the result when the stream was too long to keep: how long it was, where it
    /// was saved and where that file was cut. `None` when everything is in [`Capture::text`].
    pub fn note(&self) -> Option<String> {
        if !self.spilled {
            return None;
        }
        let mib = |n: u64| n as f64 / (1024.0 * 1024.0);
        let total = mib(self.total);
        Some(match &self.spill {
            Some(spill) if spill.written < self.total => format!(
                "[{}: {total:.1} MiB, too long to keep; only its end is shown. The first {:.0} MiB were saved to {} (cut there: the rest was dropped)]",
                self.label,
                mib(spill.written),
                spill.path.display()
            ),
            Some(spill) => format!(
                "[{}: {total:.1} MiB, too long to keep; only its end is shown. All of it was saved to {}]",
                self.label,
                spill.path.display()
            ),
            None => format!(
                "[{}: {total:.1} MiB, too long to keep; only its end is shown (no overflow directory to save it in)]",
                self.label
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_stays_in_memory() {
        let mut c = Capture::new("stdout", "id", None);
        c.push(b"hello\n");
        assert_eq!(c.text(), "hello\n");
        assert!(c.note().is_none());
    }

    #[test]
    fn big_output_spills_and_keeps_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Capture::new("stderr", "call/1", Some(dir.path()));
        let line = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
        for _ in 0..(3 * MEMORY_BYTES / line.len()) {
            c.push(line);
        }
        c.push(b"last line\n");
        assert!(c.kept.len() <= 2 * TAIL_BYTES);
        assert!(c.text().ends_with("last line\n"));
        assert!(c.text().starts_with("0123"), "starts at a full line");
        let note = c.note().unwrap();
        assert!(note.contains("All of it was saved to"), "{note}");
        let saved = std::fs::read(dir.path().join(&c.name)).unwrap();
        assert!(c.name.ends_with("-call_1.stderr.txt"), "{}", c.name);
        assert_eq!(saved.len() as u64, c.total());
    }
}
