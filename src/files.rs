//! Bounded, non-blocking reads of regular files: what every layer uses to read a file a
//! repository provides (instructions, skills, config, snapshots), which could be a FIFO, a
//! device or endless.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The most bytes a file tool reads from one file for itself (old content for a diff, an
/// undo snapshot). Bigger files are refused by the mutating tools: no model edits them whole.
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// What kind of special file `meta` describes, or `None` for files, directories and links.
pub fn special_kind(meta: &Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else {
        None
    }
}

/// An `io::Error` saying the path is not a regular file (kind `InvalidInput`).
fn not_regular(kind: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("it is {kind}, not a regular file"),
    )
}

/// Opens `path` for reading without ever blocking: non-blocking open (a FIFO without a writer
/// would block forever otherwise), then `fstat` on the descriptor, refusing anything but a
/// regular file. The returned file is blocking again.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if let Some(kind) = special_kind(&meta) {
        return Err(not_regular(kind));
    }
    if meta.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "it is a directory",
        ));
    }
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own; clearing O_NONBLOCK has no memory effects.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(file)
}

/// Reads a regular text file of at most `limit` bytes (lossy UTF-8): for files a repository
/// provides (instructions, skills, config), which could be FIFOs or endless devices.
pub fn read_text(path: &Path, limit: u64) -> std::io::Result<String> {
    let bytes = read_bounded(path, limit)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// Reads at most the first `limit` bytes of a regular text file (lossy UTF-8, never ending in a
/// split character): for repository files that are used in part when long (instructions).
/// Returns the text and whether the file had more.
pub fn read_head(path: &Path, limit: u64) -> std::io::Result<(String, bool)> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    let cut = bytes.len() as u64 > limit;
    bytes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        // Only the last character was split by the cut: drop it.
        Err(e) if e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok((text, cut))
}

/// Reads a whole regular file, refusing special files and anything over `limit` bytes (an
/// `io::Error` of kind `FileTooLarge` saying so). Never reads more than `limit + 1` bytes.
pub fn read_bounded(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let hint = file.metadata().map(|m| m.len()).unwrap_or(0).min(limit);
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("it is larger than {}", human_size(limit)),
        ));
    }
    Ok(bytes)
}

/// A byte limit as a person reads it: whole MiB, else whole KiB, else bytes.
fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1024 * 1024 && b % (1024 * 1024) == 0 => format!("{} MiB", b / (1024 * 1024)),
        b if b >= 1024 && b % 1024 == 0 => format!("{} KiB", b / 1024),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifos_and_devices_are_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates a node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let err = read_bounded(&fifo, 10).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
        let err = read_bounded(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(err.to_string().contains("character device"), "{err}");
        let file = dir.path().join("f");
        std::fs::write(&file, b"0123456789").unwrap();
        assert_eq!(read_bounded(&file, 10).unwrap(), b"0123456789");
        assert_eq!(
            read_bounded(&file, 9).unwrap_err().kind(),
            std::io::ErrorKind::FileTooLarge
        );
    }
}
