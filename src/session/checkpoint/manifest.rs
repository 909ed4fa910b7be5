//! What a checkpoint records: each path's [`FileState`], the [`Manifest`] of a tree, and the
//! [`Change`]s between two manifests.

use serde::{Deserialize, Serialize};

/// One path's recorded state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    /// Object id of the content; empty for a directory. `git:<hex>` names a blob of the
    /// project's git repository (see [`crate::session::git_baseline`]).
    pub id: String,
    pub size: u64,
    pub mode: u32,
    pub mtime_ns: u64,
    /// Status-change time: nothing can set it back, so an edit that restores the old size and
    /// mtime is still seen (0 in manifests written before it was recorded).
    #[serde(default)]
    pub ctime_ns: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dir: bool,
    /// A symbolic link; `id` holds its target (as bytes), never what it points to.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub link: bool,
    /// The content's git blob id, for a file stored in brute's store in a git repository:
    /// the same content referenced as `git:<hex>` (when git's index records it) is the same.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub git: String,
}

impl FileState {
    /// The git blob id of the content, when known.
    pub fn git_blob(&self) -> Option<&str> {
        crate::session::git_baseline::git_hex(&self.id).or((!self.git.is_empty()).then_some(self.git.as_str()))
    }

    /// A regular file recorded with this size, mode and timestamps (what a walk may reuse
    /// without reading it, when nothing else says otherwise).
    pub fn is_file_with(&self, size: u64, mode: u32, mtime_ns: u64, ctime_ns: u64) -> bool {
        !self.dir
            && !self.link
            && self.size == size
            && self.mode == mode
            && self.mtime_ns == mtime_ns
            && self.ctime_ns == ctime_ns
    }

    /// Same content, kind and permissions (timestamps aside; a link's own mode means nothing).
    pub fn same_content(&self, other: &FileState) -> bool {
        let same_blob = || self.git_blob().is_some_and(|a| other.git_blob() == Some(a));
        (self.id == other.id || (!self.dir && !self.link && same_blob()))
            && self.dir == other.dir
            && self.link == other.link
            && (self.link || self.mode & 0o7777 == other.mode & 0o7777)
    }
}

pub use super::map::Manifest;

/// One path that differs between two manifests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub before: Option<FileState>,
    pub after: Option<FileState>,
}

/// The paths whose content differs from `a` to `b`.
pub fn diff(a: &Manifest, b: &Manifest) -> Vec<Change> {
    pairs(a, b)
        .filter_map(|(path, before, after)| {
            let same = match (before, after) {
                (Some(x), Some(y)) => x.same_content(y),
                (None, None) => true,
                _ => false,
            };
            (!same).then(|| Change {
                path: path.to_owned(),
                before: before.cloned(),
                after: after.cloned(),
            })
        })
        .collect()
}

/// Every path of `a` and `b` in order, with its state in each: one pass over both sorted
/// maps, no lookups (a big tree's manifests are compared at every turn).
pub fn pairs<'m>(
    a: &'m Manifest,
    b: &'m Manifest,
) -> impl Iterator<Item = (&'m str, Option<&'m FileState>, Option<&'m FileState>)> {
    let (mut a, mut b) = (a.iter().peekable(), b.iter().peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some((pa, _)), Some((pb, _))) => match pa.cmp(pb) {
            std::cmp::Ordering::Less => a.next().map(|(p, s)| (p, Some(s), None)),
            std::cmp::Ordering::Greater => b.next().map(|(p, s)| (p, None, Some(s))),
            std::cmp::Ordering::Equal => {
                let (p, x) = a.next()?;
                let (_, y) = b.next()?;
                Some((p, Some(x), Some(y)))
            }
        },
        (Some(_), None) => a.next().map(|(p, s)| (p, Some(s), None)),
        (None, Some(_)) => b.next().map(|(p, s)| (p, None, Some(s))),
        (None, None) => None,
    })
}
