//! Whether checkpointing a tree needs the person's consent (`/`, the home directory, a large
//! tree that is no repository), and the notice when checkpoints are paused for it.

use std::path::{Path, PathBuf};

/// A tree that is not a repository and holds more than this many entries is not checkpointed
/// without asking: it is more likely a home or downloads folder than a project.
pub const UNASKED_ENTRIES: usize = 20_000;
/// The same for total file bytes.
pub const UNASKED_BYTES: u64 = 1024 * 1024 * 1024;

/// The notice for paused checkpoints (see [`copy_warning`]).
pub fn paused_notice(reason: &str) -> String {
    format!(
        "turn checkpoints are off: {reason}, and a checkpoint would copy that tree into brute's data directory. /undo covers single tool calls only; start brute in a project directory for whole-turn undo"
    )
}

/// Why checkpointing `root` needs the person's consent, if it does: it is `/` or the home
/// directory, or it is not a repository (no `.git` or `.brute`) and is large. The size walk
/// stops at the limits, so it is cheap whatever the tree.
pub fn copy_warning(root: &Path) -> Option<String> {
    let real = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    if real.parent().is_none() {
        return Some("brute was started in `/`".to_owned());
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    if let Some(home) = home
        && (real == home || Some(&real) == home.canonicalize().ok().as_ref())
    {
        return Some("brute was started in your home directory".to_owned());
    }
    if root.join(".git").exists() || root.join(".brute").exists() {
        return None;
    }
    let (mut entries, mut bytes) = (0usize, 0u64);
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walker.flatten() {
        entries += 1;
        bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
        if entries > UNASKED_ENTRIES || bytes > UNASKED_BYTES {
            return Some(format!(
                "{} is not a repository and holds more than {UNASKED_ENTRIES} files or 1 GiB",
                root.display()
            ));
        }
    }
    None
}
