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
//! - **Every read a tool makes for itself is bounded** ([`crate::files::read_bounded`]), so an undo snapshot
//!   of a huge or endless file fails quickly instead of filling memory.

use std::path::{Component, Path, PathBuf};

use super::ToolError;
use crate::files::special_kind;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifos_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates a node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        assert!(refuse_special(&fifo, "pipe").unwrap_err().message.contains("FIFO"));
    }

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
}
