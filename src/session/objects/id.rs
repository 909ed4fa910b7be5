//! [`ContentId`]: what an object is called, held as the bytes its hex digits spell.

use serde::{Deserialize, Serialize};

/// How a reference to a blob of the project's git repository begins.
pub const GIT_PREFIX: &str = "git:";

/// A manifest state's content id, held as the bytes its hex digits spell (a big tree's manifest
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
    /// `crate::session::git_baseline`).
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
        if let Some(raw) = text.strip_prefix(GIT_PREFIX).and_then(lower_hex::<20>) {
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
            ContentId::Other(text) => text.starts_with(GIT_PREFIX),
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
                f.write_str(GIT_PREFIX)?;
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
