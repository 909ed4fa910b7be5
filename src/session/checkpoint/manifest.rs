//! What a checkpoint records: each path's [`FileState`], the [`Manifest`] of a tree, and the
//! [`Change`]s between two manifests.

use serde::{Deserialize, Serialize};

pub use crate::session::objects::ContentId;

/// One path's recorded state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    /// Object id of the content; empty for a directory. `git:<hex>` names a blob of the
    /// project's git repository (see [`crate::session::git_baseline`]).
    pub id: ContentId,
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
    #[serde(default, skip_serializing_if = "Note::is_empty")]
    pub git: Note,
}

/// A short text most states leave empty ([`FileState::git`]): no room taken when empty, and
/// one pointer's room in every state (a big tree's manifest holds one per file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[allow(clippy::box_collection)] // the box is the point: a thin pointer, where a `String` takes three words
pub struct Note(Option<Box<String>>);

impl Note {
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub fn as_str(&self) -> &str {
        self.0.as_deref().map_or("", String::as_str)
    }
}

impl From<String> for Note {
    fn from(text: String) -> Self {
        Note((!text.is_empty()).then(|| Box::new(text)))
    }
}

impl From<&str> for Note {
    fn from(text: &str) -> Self {
        Note((!text.is_empty()).then(|| Box::new(text.to_owned())))
    }
}

impl Serialize for Note {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Note {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Note::from(String::deserialize(deserializer)?))
    }
}

impl FileState {
    /// The git blob id of the content (hex), when known.
    pub fn git_blob(&self) -> Option<String> {
        match self.id.git() {
            Some(raw) => Some(raw.iter().map(|b| format!("{b:02x}")).collect()),
            None => (!self.git.is_empty()).then(|| self.git.as_str().to_owned()),
        }
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
        let same_blob = || self.git_blob().is_some_and(|a| other.git_blob().as_ref() == Some(&a));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every spelling comes back as it was given; only canonical ids are held as bytes.
    #[test]
    fn a_content_id_is_spelled_as_it_was_given() {
        let stored = "0123456789abcdef".repeat(4);
        let git = format!("git:{}", "fedcba9876543210fedcba9876543210fedcba98");
        for text in [
            "",
            stored.as_str(),
            git.as_str(),
            &stored.to_uppercase(),
            &stored[..63],
            "git:",
            &git[..43],
            "obj7",
            "git:0123456789ABCDEF0123456789abcdef01234567",
        ] {
            let id = ContentId::parse(text);
            assert_eq!(id.to_string(), text);
            assert_eq!(id.with_text(str::to_owned), text);
            assert!(id == *text);
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(serde_json::from_str::<ContentId>(&json).unwrap(), id);
        }
        assert!(matches!(ContentId::parse(&stored), ContentId::Stored(_)));
        assert!(matches!(ContentId::parse(&git), ContentId::Git(_)));
        let raw = ContentId::parse(&git)
            .git()
            .map(|raw| raw.iter().map(|b| format!("{b:02x}")).collect::<String>());
        assert_eq!(raw.as_deref(), Some(&git[4..]));
        assert!(matches!(ContentId::parse(&stored.to_uppercase()), ContentId::Other(_)));
        // Another spelling of a git reference still counts as one (never found in git).
        let odd = ContentId::parse("git:0123456789ABCDEF0123456789abcdef01234567");
        assert!(odd.is_git() && odd.git().is_none());
        assert!(!ContentId::parse(&stored).is_git() && !ContentId::parse("obj7").is_git());
        // No heap string per file: a big tree's manifest holds one state per file.
        assert!(
            std::mem::size_of::<FileState>() <= 80,
            "{}",
            std::mem::size_of::<FileState>()
        );
    }
}
