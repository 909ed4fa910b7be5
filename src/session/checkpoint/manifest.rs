//! What a checkpoint records: each path's [`FileState`], the [`Manifest`] of a tree, and the
//! [`Change`]s between two manifests.

use serde::{Deserialize, Serialize};

/// A [`FileState`]'s content id, held as the bytes its hex digits spell (a big tree's manifest
/// holds one per file: as text, each was a heap string of 44 or 64 bytes). Spelled, compared
/// and stored exactly as the text it was made from.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub enum ContentId {
    /// No content (a directory): `""`.
    #[default]
    None,
    /// An object in brute's store: 64 lowercase hex digits.
    Stored([u8; 32]),
    /// A blob of the project's git repository: `git:` and 40 lowercase hex digits (see
    /// [`crate::session::git_baseline`]).
    Git([u8; 20]),
    /// Any other text, kept as it was (written by something else).
    Other(Box<String>),
}

impl ContentId {
    /// The id `text` spells.
    pub fn parse(text: &str) -> Self {
        if text.is_empty() {
            return ContentId::None;
        }
        if let Some(raw) = lower_hex::<32>(text) {
            return ContentId::Stored(raw);
        }
        if let Some(raw) = text
            .strip_prefix(crate::session::git_baseline::PREFIX)
            .and_then(lower_hex::<20>)
        {
            return ContentId::Git(raw);
        }
        ContentId::Other(Box::new(text.to_owned()))
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, ContentId::None)
    }

    /// The git blob it names, if it is a git reference.
    pub fn git(&self) -> Option<&[u8; 20]> {
        match self {
            ContentId::Git(raw) => Some(raw),
            _ => None,
        }
    }

    /// Whether it names a git blob: `git:` and anything (an id in another spelling, written by
    /// something else, counts too, as it did when ids were text; only [`ContentId::Git`] can
    /// be found in the repository).
    pub fn is_git(&self) -> bool {
        match self {
            ContentId::Git(_) => true,
            ContentId::Other(text) => text.starts_with(crate::session::git_baseline::PREFIX),
            _ => false,
        }
    }

    /// `f` given the id's text, spelled on the stack (no allocation for a hex id).
    pub fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        use std::io::Write;
        let mut buf = [0u8; 68];
        let mut cursor = std::io::Cursor::new(&mut buf[..]);
        match self {
            ContentId::Other(text) => f(text),
            id if write!(cursor, "{id}").is_ok() => {
                let len = usize::try_from(cursor.position()).unwrap_or(0);
                f(std::str::from_utf8(&buf[..len]).unwrap_or_default())
            }
            id => f(&id.to_string()),
        }
    }

    /// Whether it is the git blob the 40 hex digits `hex` spell.
    pub fn is_git_hex(&self, hex: &str) -> bool {
        self.git().is_some_and(|raw| lower_hex::<20>(hex) == Some(*raw))
    }
}

/// The `N` bytes that `2 * N` lowercase hex digits spell.
fn lower_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let value = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    let mut raw = [0u8; N];
    for (byte, pair) in raw.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = (value(pair[0])? << 4) | value(pair[1])?;
    }
    Some(raw)
}

/// `raw` in lowercase hex, written at once (an id is spelled for every store lookup).
fn write_hex(f: &mut std::fmt::Formatter<'_>, raw: &[u8]) -> std::fmt::Result {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 64];
    for (pair, byte) in out.chunks_exact_mut(2).zip(raw) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 15)];
    }
    // ASCII digits: always UTF-8.
    f.write_str(std::str::from_utf8(&out[..raw.len() * 2]).unwrap_or_default())
}

impl std::fmt::Display for ContentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContentId::None => Ok(()),
            ContentId::Stored(raw) => write_hex(f, raw),
            ContentId::Git(raw) => {
                f.write_str(crate::session::git_baseline::PREFIX)?;
                write_hex(f, raw)
            }
            ContentId::Other(text) => f.write_str(text),
        }
    }
}

impl std::fmt::Debug for ContentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

impl From<&str> for ContentId {
    fn from(text: &str) -> Self {
        ContentId::parse(text)
    }
}

impl From<String> for ContentId {
    fn from(text: String) -> Self {
        ContentId::parse(&text)
    }
}

impl PartialEq<str> for ContentId {
    fn eq(&self, text: &str) -> bool {
        *self == ContentId::parse(text)
    }
}

impl PartialEq<&str> for ContentId {
    fn eq(&self, text: &&str) -> bool {
        *self == ContentId::parse(text)
    }
}

impl PartialEq<String> for ContentId {
    fn eq(&self, text: &String) -> bool {
        *self == ContentId::parse(text)
    }
}

impl Serialize for ContentId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ContentId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Ok(ContentId::parse(&text))
    }
}

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

/// A short text most states leave empty ([`FileState::git`]): no room taken when empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Note(Option<Box<str>>);

impl Note {
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    pub fn as_str(&self) -> &str {
        self.0.as_deref().unwrap_or("")
    }
}

impl From<String> for Note {
    fn from(text: String) -> Self {
        Note((!text.is_empty()).then(|| text.into_boxed_str()))
    }
}

impl From<&str> for Note {
    fn from(text: &str) -> Self {
        Note((!text.is_empty()).then(|| text.into()))
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
        assert!(ContentId::parse(&git).is_git_hex(&git[4..]));
        assert!(matches!(ContentId::parse(&stored.to_uppercase()), ContentId::Other(_)));
        // Another spelling of a git reference still counts as one (never found in git).
        let odd = ContentId::parse("git:0123456789ABCDEF0123456789abcdef01234567");
        assert!(odd.is_git() && odd.git().is_none());
        assert!(!ContentId::parse(&stored).is_git() && !ContentId::parse("obj7").is_git());
        // No heap string per file: a big tree's manifest holds one state per file.
        assert!(
            std::mem::size_of::<FileState>() <= 88,
            "{}",
            std::mem::size_of::<FileState>()
        );
    }
}
