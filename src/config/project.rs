//! Where brute works: the project root and the working directory.
//!
//! Started in a subdirectory, brute finds the project root — the nearest ancestor holding `.git`
//! or `.brute` — so the project's instructions, config, trust and sessions are the same
//! whichever subdirectory it runs in (`brute --continue` from `src/` finds the session started
//! at the root). The search never goes above `$HOME` and never takes `$HOME` itself as a root:
//! a dotfiles repository at `~/.git` would otherwise make every untracked directory under home
//! one huge project. With no marker found, the working directory is the root.
//!
//! The whole root is the workspace (what the sandbox lets commands write, what checkpoints
//! cover); the working directory is where shell commands start and what relative paths in tool
//! calls mean.

use std::path::{Path, PathBuf};

/// The files or directories that mark a project root.
pub const MARKERS: &[&str] = &[".git", ".brute"];

/// The project root and the directory brute was started in (always the root or below it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// The project root: instructions, `.brute/config.toml`, trust, sessions, the sandbox's
    /// writable workspace.
    pub root: PathBuf,
    /// The working directory: shell commands start here, relative tool paths resolve here.
    pub cwd: PathBuf,
}

impl Workspace {
    /// One directory as both root and working directory (tests, embedding).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        Self {
            root: dir.clone(),
            cwd: dir,
        }
    }

    /// The workspace of `cwd`: its project root found with [`find_root`] below `$HOME`.
    pub fn discover(cwd: PathBuf) -> Self {
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        Self {
            root: find_root(&cwd, home.as_deref()),
            cwd,
        }
    }
}

/// The nearest ancestor of `cwd` (itself included) holding one of [`MARKERS`], never `home` nor
/// above it; `cwd` itself when there is none.
pub fn find_root(cwd: &Path, home: Option<&Path>) -> PathBuf {
    // `$HOME` may be spelled through a symlink while the working directory is resolved.
    let homes: Vec<PathBuf> = home
        .into_iter()
        .flat_map(|h| [h.to_path_buf(), h.canonicalize().unwrap_or_else(|_| h.to_path_buf())])
        .collect();
    for dir in cwd.ancestors() {
        if homes.iter().any(|h| h == dir) {
            break;
        }
        if MARKERS.iter().any(|m| dir.join(m).symlink_metadata().is_ok()) {
            return dir.to_path_buf();
        }
    }
    cwd.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_marker_wins() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let deep = root.join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        assert_eq!(find_root(&deep, None), root);
        assert_eq!(find_root(&root, None), root);
        // A nested project (`.brute` below the repository) is its own root.
        std::fs::create_dir(root.join("a/.brute")).unwrap();
        assert_eq!(find_root(&deep, None), root.join("a"));
        // A worktree or submodule has a `.git` file.
        let sub = dir.path().join("wt/x");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(dir.path().join("wt/.git"), "gitdir: elsewhere").unwrap();
        assert_eq!(find_root(&sub, None), dir.path().join("wt"));
    }

    #[test]
    fn home_is_never_a_root_nor_searched_above() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let work = home.join("work/sub");
        std::fs::create_dir_all(&work).unwrap();
        // A dotfiles repository in home, and a marker above home.
        std::fs::create_dir(home.join(".git")).unwrap();
        std::fs::create_dir(dir.path().join(".brute")).unwrap();
        assert_eq!(find_root(&work, Some(&home)), work);
        assert_eq!(find_root(&home, Some(&home)), home);
        // Without a home limit the search would have found both.
        assert_eq!(find_root(&work, None), home);
        // Outside home the search goes up to `/`.
        let outside = dir.path().join("elsewhere/deep");
        std::fs::create_dir_all(&outside).unwrap();
        assert_eq!(find_root(&outside, Some(&home)), dir.path());
    }

    #[test]
    fn no_marker_means_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let work = home.join("plain/dir");
        std::fs::create_dir_all(&work).unwrap();
        assert_eq!(find_root(&work, Some(&home)), work);
        assert_eq!(Workspace::at(&work).cwd, work);
    }
}
