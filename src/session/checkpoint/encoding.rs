//! The binary form of stored manifests: a big tree's manifest is loaded at the start of every
//! run (the seed of its first walk), and JSON made that the largest fixed cost of a one-shot
//! run in a big repository. Paths share their prefix with the path before them, git blob ids
//! are 20 raw bytes, numbers are LEB128. Every read is bounds-checked: damaged bytes are an
//! error, never a panic. Manifests stored as JSON by earlier versions are still read (see
//! [`super::store`]).

use super::manifest::{ContentId, FileState, Manifest, Note};

/// Marks a whole manifest in this form.
pub(super) const WHOLE: &[u8] = b"brute-manifest-2\n";
/// Marks a manifest stored as the changes from another, in this form.
pub(super) const DELTA: &[u8] = b"brute-manifest-delta-2\n";

const DIR: u8 = 1;
const LINK: u8 = 2;
/// `id` is `git:` and 40 hex digits, stored as 20 bytes.
const ID_GIT: u8 = 4;
/// `git` is 40 hex digits, stored as 20 bytes.
const GIT_RAW: u8 = 8;
/// `git` is some other non-empty text.
const GIT_TEXT: u8 = 16;

/// A delta as stored: the base manifest's id, the chain position, what changed.
pub(super) struct Delta {
    pub(super) base: String,
    pub(super) depth: u32,
    pub(super) entries: Option<u64>,
    pub(super) set: Manifest,
    pub(super) del: Vec<String>,
}

/// `manifest`, whole, in memory (what [`write_whole`] writes).
#[cfg(test)]
pub(super) fn encode_whole(manifest: &Manifest) -> Vec<u8> {
    let mut out = Vec::with_capacity(WHOLE.len() + manifest.len() * 48);
    out.extend_from_slice(WHOLE);
    // Into memory: nothing to write out, nothing to fail.
    let _ = entries(&mut out, manifest, &mut |_| Ok(()));
    out
}

/// `manifest`, whole, written to `to` a piece at a time (a big tree's manifest is tens of
/// megabytes encoded).
pub(super) fn write_whole(to: &mut dyn std::io::Write, manifest: &Manifest) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(PIECE + 4096);
    out.extend_from_slice(WHOLE);
    entries(&mut out, manifest, &mut |out| {
        if out.len() >= PIECE {
            to.write_all(out)?;
            out.clear();
        }
        Ok(())
    })?;
    to.write_all(&out)
}

/// What [`write_whole`] gathers before each write.
const PIECE: usize = 64 << 10;

/// The changes `delta` holds.
pub(super) fn encode_delta(delta: &Delta) -> Vec<u8> {
    let mut out = Vec::with_capacity(DELTA.len() + 64 + delta.set.len() * 48);
    out.extend_from_slice(DELTA);
    text(&mut out, delta.base.as_bytes());
    varint(&mut out, u64::from(delta.depth));
    varint(&mut out, delta.entries.map_or(0, |e| e.saturating_add(1)));
    // Into memory: nothing to write out, nothing to fail.
    let _ = entries(&mut out, &delta.set, &mut |_| Ok(()));
    varint(&mut out, delta.del.len() as u64);
    let mut last: &str = "";
    for path in &delta.del {
        shared_path(&mut out, last, path);
        last = path;
    }
    out
}

/// A whole manifest from its bytes after [`WHOLE`].
pub(super) fn decode_whole(mut bytes: &[u8]) -> Result<Manifest, Damaged> {
    let len = bytes.len() as u64;
    decode_whole_from(&mut bytes, len)
}

/// A whole manifest from the `len` bytes after [`WHOLE`] that `source` reads (a stored
/// object's file: a big tree's manifest is decoded as it is read, never held whole beside the
/// map it makes).
pub(super) fn decode_whole_from(source: &mut dyn std::io::Read, len: u64) -> Result<Manifest, Damaged> {
    let mut reader = Reader::new(source, len);
    let manifest = reader.entries()?;
    reader.end()?;
    Ok(manifest)
}

/// A delta from its bytes after [`DELTA`].
pub(super) fn decode_delta(mut bytes: &[u8]) -> Result<Delta, Damaged> {
    let len = bytes.len() as u64;
    let mut reader = Reader::new(&mut bytes, len);
    let base = reader.string()?;
    let depth = u32::try_from(reader.varint()?).map_err(|_| Damaged("a depth out of range"))?;
    let entries = reader.varint()?.checked_sub(1);
    let set = reader.entries()?;
    let count = reader.count()?;
    let mut del = Vec::with_capacity(count.min(4096));
    for _ in 0..count {
        let path = reader.shared_path(del.last().map_or("", String::as_str))?;
        del.push(path);
    }
    reader.end()?;
    Ok(Delta {
        base,
        depth,
        entries,
        set,
        del,
    })
}

/// Bytes that are not a manifest in this form (cut short, or written by something else).
#[derive(Debug, thiserror::Error)]
#[error("not a readable manifest: {0}")]
pub struct Damaged(&'static str);

/// Encodes the entries into `out`, handing it to `spill` after each (which may write it out
/// and empty it).
fn entries(
    out: &mut Vec<u8>,
    manifest: &Manifest,
    spill: &mut dyn FnMut(&mut Vec<u8>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    varint(out, manifest.len() as u64);
    let mut last: &str = "";
    for (path, state) in manifest {
        shared_path(out, last, path);
        last = path;
        entry(out, state);
        spill(out)?;
    }
    Ok(())
}

fn entry(out: &mut Vec<u8>, state: &FileState) {
    let git_id = state.id.git();
    let git_field = raw_hex(state.git.as_str());
    let mut flags = 0;
    flags |= if state.dir { DIR } else { 0 };
    flags |= if state.link { LINK } else { 0 };
    flags |= if git_id.is_some() { ID_GIT } else { 0 };
    flags |= match (&git_field, state.git.is_empty()) {
        (Some(_), _) => GIT_RAW,
        (None, false) => GIT_TEXT,
        (None, true) => 0,
    };
    out.push(flags);
    match git_id {
        Some(raw) => out.extend_from_slice(raw),
        None => text(out, state.id.to_string().as_bytes()),
    }
    varint(out, state.size);
    varint(out, u64::from(state.mode));
    varint(out, state.mtime_ns);
    varint(out, state.ctime_ns);
    match git_field {
        Some(raw) => out.extend_from_slice(&raw),
        None if !state.git.is_empty() => text(out, state.git.as_str().as_bytes()),
        None => {}
    }
}

/// `path` as the length it shares with `last` and the rest.
fn shared_path(out: &mut Vec<u8>, last: &str, path: &str) {
    let shared = last.bytes().zip(path.bytes()).take_while(|(a, b)| a == b).count();
    // Cut on a character boundary, so each part is text on its own.
    let shared = (0..=shared).rev().find(|n| path.is_char_boundary(*n)).unwrap_or(0);
    varint(out, shared as u64);
    text(out, &path.as_bytes()[shared..]);
}

fn text(out: &mut Vec<u8>, bytes: &[u8]) {
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// 40 lowercase hex digits as 20 bytes (only that form: anything else is kept as text, so it
/// reads back exactly).
fn raw_hex(hex: &str) -> Option<[u8; 20]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 40 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut raw = [0u8; 20];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        raw[i] = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(raw)
}

fn hex(raw: &[u8]) -> String {
    hex_after("", raw)
}

/// `prefix` and `raw` in lowercase hex, in one allocation (a big manifest has one per file).
fn hex_after(prefix: &str, raw: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(prefix.len() + raw.len() * 2);
    out.extend_from_slice(prefix.as_bytes());
    for byte in raw {
        out.push(DIGITS[usize::from(byte >> 4)]);
        out.push(DIGITS[usize::from(byte & 15)]);
    }
    // ASCII digits after text: always UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// How much a [`Reader`] reads at once.
const WINDOW: usize = 64 * 1024;

/// Reads a stored form from its source a window at a time. Every read is bounds-checked
/// against the length the source was said to have: damaged or shortened bytes are an error.
struct Reader<'a> {
    source: &'a mut dyn std::io::Read,
    /// Bytes of the source not read into the window yet.
    unread: u64,
    window: Vec<u8>,
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(source: &'a mut dyn std::io::Read, len: u64) -> Self {
        Reader {
            source,
            unread: len,
            window: Vec::new(),
            at: 0,
        }
    }

    /// Bytes left to decode.
    fn left(&self) -> u64 {
        (self.window.len() - self.at) as u64 + self.unread
    }

    fn take(&mut self, n: usize) -> Result<&[u8], Damaged> {
        if self.window.len() - self.at < n {
            self.fill(n)?;
        }
        let end = self.at.checked_add(n).ok_or(Damaged("cut short"))?;
        let taken = self.window.get(self.at..end).ok_or(Damaged("cut short"))?;
        self.at = end;
        Ok(taken)
    }

    /// Reads on until the window holds `n` bytes from where decoding is.
    fn fill(&mut self, n: usize) -> Result<(), Damaged> {
        if n as u64 > self.left() {
            return Err(Damaged("cut short"));
        }
        self.window.drain(..self.at);
        self.at = 0;
        let want = n.max(WINDOW).saturating_sub(self.window.len()) as u64;
        let more = usize::try_from(want.min(self.unread)).map_err(|_| Damaged("cut short"))?;
        let start = self.window.len();
        self.window.resize(start + more, 0);
        let read = self.window.get_mut(start..).ok_or(Damaged("cut short"))?;
        // A file shortened while it is read is as damaged as one stored short.
        self.source.read_exact(read).map_err(|_| Damaged("cut short"))?;
        self.unread -= more as u64;
        Ok(())
    }

    fn byte(&mut self) -> Result<u8, Damaged> {
        Ok(self.take(1)?[0])
    }

    fn varint(&mut self) -> Result<u64, Damaged> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Damaged("a number too long"))
    }

    /// A count of items, each at least a byte: never more than the bytes left.
    fn count(&mut self) -> Result<usize, Damaged> {
        let n = usize::try_from(self.varint()?).map_err(|_| Damaged("a count out of range"))?;
        (n as u64 <= self.left())
            .then_some(n)
            .ok_or(Damaged("a count past the end"))
    }

    fn string(&mut self) -> Result<String, Damaged> {
        let n = self.count()?;
        let bytes = self.take(n)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| Damaged("text that is not UTF-8"))
    }

    fn shared_path(&mut self, last: &str) -> Result<String, Damaged> {
        let shared = usize::try_from(self.varint()?).map_err(|_| Damaged("a length out of range"))?;
        let prefix = last
            .get(..shared)
            .ok_or(Damaged("a shared length past the path before"))?;
        let n = self.count()?;
        let rest = std::str::from_utf8(self.take(n)?).map_err(|_| Damaged("a path that is not UTF-8"))?;
        let mut path = String::with_capacity(shared + rest.len());
        path.push_str(prefix);
        path.push_str(rest);
        Ok(path)
    }

    fn entries(&mut self) -> Result<Manifest, Damaged> {
        let count = self.count()?;
        // An entry takes at least 8 bytes: a damaged count cannot reserve more than that.
        let room = usize::try_from(self.left() / 8).unwrap_or(usize::MAX);
        // Paths take about 24 bytes each in a source tree; the buffer grows if not.
        let reserve = count.min(room);
        let mut manifest = Manifest::with_capacity(reserve, reserve.saturating_mul(24));
        let mut last = String::new();
        for _ in 0..count {
            let path = self.shared_path(&last)?;
            let flags = self.byte()?;
            let id = if flags & ID_GIT != 0 {
                let mut raw = [0u8; 20];
                raw.copy_from_slice(self.take(20)?);
                ContentId::Git(raw)
            } else {
                ContentId::parse(&self.string()?)
            };
            let size = self.varint()?;
            let mode = u32::try_from(self.varint()?).map_err(|_| Damaged("a mode out of range"))?;
            let mtime_ns = self.varint()?;
            let ctime_ns = self.varint()?;
            let git = if flags & GIT_RAW != 0 {
                hex(self.take(20)?).into()
            } else if flags & GIT_TEXT != 0 {
                self.string()?.into()
            } else {
                Note::default()
            };
            // Stored in order: each entry is appended in place.
            manifest.push(
                &path,
                FileState {
                    id,
                    size,
                    mode,
                    mtime_ns,
                    ctime_ns,
                    dir: flags & DIR != 0,
                    link: flags & LINK != 0,
                    git,
                },
            );
            last = path;
        }
        manifest.shrink_to_fit();
        Ok(manifest)
    }

    fn end(&self) -> Result<(), Damaged> {
        (self.left() == 0).then_some(()).ok_or(Damaged("bytes after the end"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let mut m = Manifest::new();
        m.insert(
            "src/lib.rs".into(),
            FileState {
                id: format!("git:{}", "0123456789abcdef0123456789abcdef01234567").into(),
                size: 1234,
                mode: 0o100644,
                mtime_ns: 1_700_000_000_123_456_789,
                ctime_ns: u64::MAX,
                ..Default::default()
            },
        );
        m.insert(
            "src/lié.rs".into(),
            FileState {
                id: "c0ffee".into(),
                size: 0,
                mode: 0o100755,
                git: "89abcdef0123456789abcdef0123456789abcdef".into(),
                ..Default::default()
            },
        );
        m.insert(
            "src/lié2.rs".into(),
            FileState {
                id: "git:NOT-HEX".into(),
                git: "not a blob id".into(),
                ..Default::default()
            },
        );
        m.insert(
            "src".into(),
            FileState {
                mode: 0o40755,
                dir: true,
                ..Default::default()
            },
        );
        m.insert(
            "zlink".into(),
            FileState {
                id: "abc".into(),
                size: 3,
                mode: 0o777,
                link: true,
                ..Default::default()
            },
        );
        m
    }

    #[test]
    fn manifests_and_deltas_read_back_exactly() {
        let manifest = sample();
        let bytes = encode_whole(&manifest);
        assert!(bytes.starts_with(WHOLE));
        assert_eq!(decode_whole(&bytes[WHOLE.len()..]).unwrap(), manifest);
        assert_eq!(
            decode_whole(&encode_whole(&Manifest::new())[WHOLE.len()..]).unwrap(),
            Manifest::new()
        );
        let delta = Delta {
            base: "base-id".into(),
            depth: 7,
            entries: Some(0),
            set: manifest.clone(),
            del: vec!["gone/a".into(), "gone/b".into(), "été".into()],
        };
        let bytes = encode_delta(&delta);
        let back = decode_delta(&bytes[DELTA.len()..]).unwrap();
        assert_eq!(
            (back.base, back.depth, back.entries, back.set, back.del),
            (delta.base, delta.depth, delta.entries, delta.set, delta.del)
        );
        let none = encode_delta(&Delta {
            base: String::new(),
            depth: 0,
            entries: None,
            set: Manifest::new(),
            del: Vec::new(),
        });
        assert_eq!(decode_delta(&none[DELTA.len()..]).unwrap().entries, None);
    }

    #[test]
    fn a_big_manifest_reads_back_exactly_across_read_windows() {
        // Many windows' worth: paths that share long prefixes are cut at window boundaries;
        // ids of both kinds.
        let count = 50_077;
        let manifest: Manifest = (0..count)
            .map(|i| {
                let state = FileState {
                    id: if i % 3 == 0 {
                        format!("obj{i}")
                    } else {
                        format!("git:{:040x}", i)
                    }
                    .into(),
                    size: i as u64,
                    mode: 0o100644,
                    mtime_ns: i as u64 * 1_000_003,
                    ..Default::default()
                };
                (format!("deep/dir/{:02}/file-{i:07}.rs", i % 7), state)
            })
            .collect();
        let bytes = encode_whole(&manifest);
        let back = decode_whole(&bytes[WHOLE.len()..]).unwrap();
        assert_eq!(back.len(), manifest.len());
        assert!(back == manifest, "the decoded manifest differs");
        // A source shorter than it was said to be (a file cut while it is read) is damaged,
        // wherever it ends; so is one longer.
        let body = &bytes[WHOLE.len()..];
        for cut in [0, 1, WINDOW - 1, WINDOW, WINDOW + 1, body.len() / 2, body.len() - 1] {
            let mut short = &body[..cut];
            assert!(
                decode_whole_from(&mut short, body.len() as u64).is_err(),
                "cut at {cut}"
            );
        }
        let mut whole = body;
        assert!(decode_whole_from(&mut whole, body.len() as u64 - 1).is_err());
        // Entries out of order (a damaged or foreign writer) still make the map the entries
        // name, the later of two equal paths winning.
        let mut out = Vec::new();
        let unordered: Vec<(String, FileState)> = manifest
            .iter()
            .map(|(p, s)| (p.to_owned(), s.clone()))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        varint(&mut out, unordered.len() as u64 + 1);
        let mut last: &str = "";
        for (path, state) in unordered.iter().chain(unordered.first()) {
            shared_path(&mut out, last, path);
            last = path;
            entry(&mut out, state);
        }
        let back = decode_whole(&out).unwrap();
        assert_eq!(back.len(), manifest.len());
        assert!(back == manifest, "the decoded manifest differs");
    }

    #[test]
    fn damaged_bytes_are_an_error_never_a_panic() {
        let bytes = encode_whole(&sample());
        let body = &bytes[WHOLE.len()..];
        for cut in 0..body.len() {
            assert!(decode_whole(&body[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = body.to_vec();
        longer.push(0);
        assert!(decode_whole(&longer).is_err());
        // A count far past the bytes, a shared length past the path before, overlong numbers.
        assert!(decode_whole(&[0xff, 0xff, 0xff, 0x7f]).is_err());
        assert!(decode_whole(&[1, 5, 0]).is_err());
        assert!(decode_whole(&[0xff; 12]).is_err());
        // Every single-byte change reads back as an error or as some manifest, never a panic.
        for i in 0..body.len() {
            let mut changed = body.to_vec();
            changed[i] ^= 0x5a;
            let _ = decode_whole(&changed);
        }
    }
}
