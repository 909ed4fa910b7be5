//! The boundaries every file tool keeps, whatever the mode and whatever the model sends:
//!
//! - **Nothing that holds the project is destroyed.** `/`, `$HOME`, the project root and every
//!   directory above it can never be the target of a mutating tool. The check runs on the path
//!   made absolute with `~` and `..` folded, and again with symlinks followed, so `..`,
//!   `sub/..`, `~/` and a link pointing at home are all caught.
//! - **Only regular files are opened.** FIFOs, sockets and devices are refused with a clear
//!   error: opening a FIFO blocks forever and `/dev/zero` never ends. Files are opened
//!   non-blocking and checked with `fstat` on the open descriptor, so a path swapped for a FIFO
//!   after a check still cannot hang a read.
//! - **Every read a tool makes for itself is bounded** ([`read_bounded`]), so an undo snapshot
//!   of a huge or endless file fails quickly instead of filling memory.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use super::ToolError;

/// The most bytes a file tool reads from one file for itself (old content for a diff, an
/// undo snapshot). Bigger files are refused by the mutating tools: no model edits them whole.
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// `path` made absolute against `root`, with `.` and `..` folded lexically (`/..` stays `/`).
pub fn normalize(root: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    let mut out = PathBuf::from("/");
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            Component::Normal(part) => out.push(part),
        }
    }
    out
}

/// Where `path` really points: the longest existing prefix with symlinks resolved, then the
/// rest. A path that does not exist yet resolves through its existing parents.
pub fn real_path(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    let mut missing = Vec::new();
    let mut prefix = path.to_path_buf();
    while let (Some(name), Some(parent)) = (prefix.file_name().map(ToOwned::to_owned), prefix.parent()) {
        missing.push(name);
        prefix = parent.to_path_buf();
        if let Ok(real) = prefix.canonicalize() {
            let mut out = real;
            for part in missing.iter().rev() {
                out.push(part);
            }
            return out;
        }
    }
    path.to_path_buf()
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
}

/// Why `candidate` may never be deleted or overwritten, if it is one of the protected places.
fn protected_reason(root: &Path, candidate: &Path) -> Option<&'static str> {
    if candidate.parent().is_none() {
        return Some("it is the filesystem root");
    }
    let roots = [root.to_path_buf(), real_path(root)];
    if roots.iter().any(|r| r == candidate) {
        return Some("it is the project root");
    }
    if roots.iter().any(|r| r.starts_with(candidate)) {
        return Some("it contains the project");
    }
    if let Some(home) = home()
        && (candidate == home || candidate == real_path(&home))
    {
        return Some("it is the home directory");
    }
    None
}

/// Refuses a mutation of `path` when it is, or really points at, `/`, `$HOME`, the project
/// root or a parent of it. `shown` is what the model sent, for the message.
pub fn check_destructive(root: &Path, path: &Path, shown: &str) -> Result<(), ToolError> {
    let lexical = normalize(root, path);
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    // The kernel resolves `link/..` through the link; the lexical form does not. Check both.
    let candidates = [lexical.clone(), real_path(&joined), real_path(&lexical)];
    for candidate in &candidates {
        if let Some(reason) = protected_reason(root, candidate) {
            let shown_real = if candidate == &lexical {
                String::new()
            } else {
                format!(" (it resolves to {})", candidate.display())
            };
            return Err(ToolError::new(
                "Refused",
                format!(
                    "refusing to change `{shown}`{shown_real}: {reason}. brute never deletes or overwrites the project root, its parents, the home directory or `/`"
                ),
            ));
        }
    }
    Ok(())
}

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

/// The error for a special file.
pub fn special_error(shown: &str, kind: &str) -> ToolError {
    ToolError::new(
        "SpecialFile",
        format!("{shown} is {kind}; brute reads and writes regular files and directories only"),
    )
}

/// Refuses `path` when it (or what it links to) is a FIFO, socket or device. A missing path
/// passes (the tool reports that itself).
pub fn refuse_special(path: &Path, shown: &str) -> Result<(), ToolError> {
    for meta in [std::fs::symlink_metadata(path), std::fs::metadata(path)]
        .into_iter()
        .flatten()
    {
        if let Some(kind) = special_kind(&meta) {
            return Err(special_error(shown, kind));
        }
    }
    Ok(())
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
    fn normalize_folds_dots() {
        let root = Path::new("/p/proj");
        assert_eq!(normalize(root, Path::new("..")), PathBuf::from("/p"));
        assert_eq!(normalize(root, Path::new("sub/..")), PathBuf::from("/p/proj"));
        assert_eq!(normalize(root, Path::new("a/./b/../c")), PathBuf::from("/p/proj/a/c"));
        assert_eq!(normalize(root, Path::new("/../../etc")), PathBuf::from("/etc"));
        assert_eq!(normalize(root, Path::new("../../../../..")), PathBuf::from("/"));
    }

    #[test]
    fn protected_places_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        for shown in ["..", "sub/..", ".", "/", "../..", "sub/../.."] {
            let path = root.join(shown);
            assert!(
                check_destructive(&root, &path, shown).is_err(),
                "{shown} must be refused"
            );
        }
        std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
        let err = check_destructive(&root, &root.join("up"), "up").unwrap_err();
        assert!(err.message.contains("resolves to"), "{}", err.message);
        assert!(check_destructive(&root, &root.join("sub"), "sub").is_ok());
        assert!(check_destructive(&root, &root.join("new/file"), "new/file").is_ok());
    }

    #[test]
    fn fifos_and_devices_are_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates a node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let err = read_bounded(&fifo, 10).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
        assert!(refuse_special(&fifo, "pipe").unwrap_err().message.contains("FIFO"));
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
