//! Reading git's index file (versions 2 to 4) as a stream: each entry is handed over as it is
//! read, its checksum is verified as the bytes pass, and nothing but a read window is held. A
//! big repository's index is read at every run; decoded whole (its file mapped, then every
//! entry as an object, then the records brute keeps) it held three copies of 200,000 entries
//! at once, beside the last manifest loading on another thread. A split index (the `link`
//! extension) is left to [`gix_index`].

use std::io::{BufRead, Read};

/// One entry as stored.
pub struct Entry<'a> {
    pub path: &'a [u8],
    pub id: gix_hash::ObjectId,
    pub stat: gix_index::entry::Stat,
    /// The mode as stored (`0o100644`, `0o100755`, a link's, a submodule's, a sparse
    /// directory's).
    pub mode: u32,
    pub stage: u8,
    /// Marked assume-valid, skip-worktree or intent-to-add: git does not vouch for the stat
    /// data or the blob.
    pub unvouched: bool,
}

/// How a read ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every entry was handed over and the checksum matched.
    Whole,
    /// A form this reader leaves to `gix_index` (a split index); some entries may have been
    /// handed over already.
    Other,
}

/// An index that cannot be used: cut short, damaged, or not an index.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    #[error("reading git's index: {0}")]
    Io(#[from] std::io::Error),
    #[error("git's index is damaged: {0}")]
    Damaged(&'static str),
}

const ASSUME_VALID: u16 = 0x8000;
const EXTENDED: u16 = 0x4000;
const SKIP_WORKTREE: u16 = 0x4000;
const INTENT_TO_ADD: u16 = 0x2000;
const NAME_MASK: u16 = 0x0fff;
/// An index larger than this is damage (one of 2 million entries takes about 200 MB).
const MAX_INDEX: u64 = 1 << 30;
/// A path longer than this is damage (git's own paths are limited by the system's).
const MAX_PATH: usize = 64 * 1024;

/// Reads the `len` bytes of an index from `file`, handing each entry to `entry` in stored
/// order (git's: by path, then stage).
pub fn read(file: impl std::io::Read, len: u64, mut entry: impl FnMut(Entry<'_>)) -> Result<Outcome, Unreadable> {
    if len > MAX_INDEX {
        return Err(Unreadable::Damaged("larger than any index git writes"));
    }
    let body = len
        .checked_sub(20)
        .ok_or(Unreadable::Damaged("shorter than its checksum"))?;
    let mut source = std::io::BufReader::with_capacity(
        64 * 1024,
        Hashed {
            inner: file,
            hasher: gix_hash::hasher(gix_hash::Kind::Sha1),
            left: body,
        },
    );
    let mut header = [0u8; 12];
    source.read_exact(&mut header)?;
    if &header[..4] != b"DIRC" {
        return Err(Unreadable::Damaged("no index signature"));
    }
    let version = be32(&header[4..8]);
    if !(2..=4).contains(&version) {
        return Err(Unreadable::Damaged("an index version git does not write"));
    }
    let count = be32(&header[8..12]);
    let mut path: Vec<u8> = Vec::with_capacity(256);
    // Version 4 shares each path's start with the path before: a damaged or hostile index
    // could spell paths far longer than itself. Real ones stay well within this.
    let most = len.saturating_mul(16).saturating_add(1 << 20);
    let mut spelled: u64 = 0;
    for _ in 0..count {
        let mut fixed = [0u8; 62];
        source.read_exact(&mut fixed)?;
        let flags = be16(&fixed[60..62]);
        let mut read = 62usize;
        let extended = if flags & EXTENDED != 0 {
            if version < 3 {
                return Err(Unreadable::Damaged("extended flags in a version 2 index"));
            }
            let mut more = [0u8; 2];
            source.read_exact(&mut more)?;
            read += 2;
            be16(&more)
        } else {
            0
        };
        if version == 4 {
            let strip = varint(&mut source)?;
            let keep = path
                .len()
                .checked_sub(usize::try_from(strip).map_err(|_| Unreadable::Damaged("a path prefix out of range"))?)
                .ok_or(Unreadable::Damaged("a path prefix longer than the path before"))?;
            path.truncate(keep);
            read_until_nul(&mut source, &mut path)?;
        } else {
            path.clear();
            let named = usize::from(flags & NAME_MASK);
            if named < usize::from(NAME_MASK) {
                path.resize(named, 0);
                source.read_exact(&mut path)?;
                read += named;
                // 1 to 8 NULs: the entry's length becomes a multiple of 8.
                let pad = 8 - read % 8;
                let mut nuls = [0u8; 8];
                source.read_exact(&mut nuls[..pad])?;
                if nuls[..pad].iter().any(|b| *b != 0) {
                    return Err(Unreadable::Damaged("an entry not padded with NULs"));
                }
            } else {
                read_until_nul(&mut source, &mut path)?;
                read += path.len() + 1;
                let pad = (8 - read % 8) % 8;
                let mut nuls = [0u8; 8];
                source.read_exact(&mut nuls[..pad])?;
                if nuls[..pad].iter().any(|b| *b != 0) {
                    return Err(Unreadable::Damaged("an entry not padded with NULs"));
                }
            }
        }
        spelled = spelled.saturating_add(path.len() as u64);
        if path.len() > MAX_PATH || spelled > most {
            return Err(Unreadable::Damaged("paths longer than git writes"));
        }
        let time = |at: usize| gix_index::entry::stat::Time {
            secs: be32(&fixed[at..at + 4]),
            nsecs: be32(&fixed[at + 4..at + 8]),
        };
        let mut raw = [0u8; 20];
        raw.copy_from_slice(&fixed[40..60]);
        entry(Entry {
            path: &path,
            id: gix_hash::ObjectId::Sha1(raw),
            stat: gix_index::entry::Stat {
                ctime: time(0),
                mtime: time(8),
                dev: be32(&fixed[16..20]),
                ino: be32(&fixed[20..24]),
                uid: be32(&fixed[28..32]),
                gid: be32(&fixed[32..36]),
                size: be32(&fixed[36..40]),
            },
            mode: be32(&fixed[24..28]),
            stage: ((flags >> 12) & 3) as u8,
            unvouched: flags & ASSUME_VALID != 0 || extended & (SKIP_WORKTREE | INTENT_TO_ADD) != 0,
        });
    }
    // Extensions up to the checksum: a split index's entries are partly in another file.
    while source.get_ref().left > 0 || !source.buffer().is_empty() {
        let mut head = [0u8; 8];
        source.read_exact(&mut head)?;
        if &head[..4] == b"link" {
            return Ok(Outcome::Other);
        }
        let size = u64::from(be32(&head[4..8]));
        if size > source.get_ref().left + source.buffer().len() as u64 {
            return Err(Unreadable::Damaged("an extension past the end"));
        }
        std::io::copy(&mut (&mut source).take(size), &mut std::io::sink())?;
    }
    let Hashed { mut inner, hasher, .. } = source.into_inner();
    let mut stored = [0u8; 20];
    inner.read_exact(&mut stored)?;
    if inner.read(&mut [0u8; 1])? != 0 {
        return Err(Unreadable::Damaged("bytes after the checksum"));
    }
    // All zeros: written with `index.skipHash`, as git allows.
    if stored != [0u8; 20] {
        let computed = hasher
            .try_finalize()
            .map_err(|_| Unreadable::Damaged("a hash collision attack"))?;
        if computed.as_bytes() != stored {
            return Err(Unreadable::Damaged("its checksum does not match"));
        }
    }
    Ok(Outcome::Whole)
}

fn be32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn be16(bytes: &[u8]) -> u16 {
    u16::from_be_bytes([bytes[0], bytes[1]])
}

/// git's offset varint (index version 4's path prefix lengths).
fn varint(source: &mut impl std::io::Read) -> Result<u64, Unreadable> {
    let mut byte = [0u8; 1];
    source.read_exact(&mut byte)?;
    let mut value = u64::from(byte[0] & 0x7f);
    while byte[0] & 0x80 != 0 {
        source.read_exact(&mut byte)?;
        value = value
            .checked_add(1)
            .and_then(|v| v.checked_mul(128))
            .ok_or(Unreadable::Damaged("a number out of range"))?
            | u64::from(byte[0] & 0x7f);
    }
    Ok(value)
}

/// Appends bytes up to a NUL (not kept); a path longer than git allows is damage.
fn read_until_nul(source: &mut impl BufRead, path: &mut Vec<u8>) -> Result<(), Unreadable> {
    let start = path.len();
    source.take(MAX_PATH as u64 + 1).read_until(0, path)?;
    if path.pop() != Some(0) {
        return Err(Unreadable::Damaged("a path without an end"));
    }
    if path[start..].contains(&0) {
        return Err(Unreadable::Damaged("a path with a NUL"));
    }
    Ok(())
}

/// Reads through, hashing what passes, up to `left` bytes (the checksum after is not hashed).
struct Hashed<R> {
    inner: R,
    hasher: gix_hash::Hasher,
    left: u64,
}

impl<R: std::io::Read> std::io::Read for Hashed<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let most = usize::try_from(self.left).unwrap_or(usize::MAX).min(buf.len());
        let n = self.inner.read(&mut buf[..most])?;
        self.hasher.update(&buf[..n]);
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// git in `dir`, as the baseline's tests run it; `false` when git is missing (a failure
    /// under CI).
    fn git(dir: &Path, args: &[&str]) -> bool {
        crate::session::git_baseline::tests::git(dir, args).is_some()
    }

    type Seen = (Vec<u8>, gix_hash::ObjectId, gix_index::entry::Stat, u32, u8, bool);

    fn ours(index: &Path) -> Result<(Outcome, Vec<Seen>), Unreadable> {
        let file = std::fs::File::open(index)?;
        let len = file.metadata()?.len();
        let mut seen = Vec::new();
        let outcome = read(file, len, |e| {
            seen.push((e.path.to_vec(), e.id, e.stat, e.mode, e.stage, e.unvouched))
        })?;
        Ok((outcome, seen))
    }

    fn gix(index: &Path) -> Vec<Seen> {
        let file = gix_index::File::at(index, gix_hash::Kind::Sha1, false, Default::default()).unwrap();
        let unvouched = gix_index::entry::Flags::ASSUME_VALID
            | gix_index::entry::Flags::SKIP_WORKTREE
            | gix_index::entry::Flags::INTENT_TO_ADD;
        file.entries()
            .iter()
            .map(|e| {
                let path = e.path(&file).to_vec();
                (
                    path,
                    e.id,
                    e.stat,
                    e.mode.bits(),
                    e.stage_raw() as u8,
                    e.flags.intersects(unvouched),
                )
            })
            .collect()
    }

    /// Every version git writes, with what sets each flag and a name longer than the name
    /// field holds, reads entry for entry as `gix_index` reads it; a split index is left to it.
    #[test]
    fn every_index_version_reads_as_gix_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        if !git(root, &["init", "-q"]) {
            return;
        }
        for i in 0..300 {
            let sub = format!("d{}/e{}", i % 7, i % 3);
            std::fs::create_dir_all(root.join(&sub)).unwrap();
            std::fs::write(root.join(format!("{sub}/f{i:04}.rs")), format!("{i}\n")).unwrap();
        }
        std::fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(root.join("run.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("run.sh", root.join("link")).unwrap();
        std::fs::write(root.join("later.txt"), "later\n").unwrap();
        assert!(git(root, &["add", "."]));
        assert!(git(root, &["commit", "-qm", "one"]));
        std::fs::write(root.join("new.txt"), "new\n").unwrap();
        assert!(git(root, &["add", "-N", "new.txt"])); // intent to add: extended flags, version 3
        assert!(git(root, &["update-index", "--skip-worktree", "later.txt"]));
        assert!(git(root, &["update-index", "--assume-unchanged", "run.sh"]));
        let index = root.join(".git/index");
        for version in ["3", "4", "2"] {
            if version == "2" {
                // Version 2 has no extended flags.
                assert!(git(root, &["rm", "-q", "--cached", "new.txt"]));
                assert!(git(root, &["update-index", "--no-skip-worktree", "later.txt"]));
            }
            assert!(git(root, &["update-index", "--index-version", version]));
            let (outcome, seen) = ours(&index).unwrap();
            assert_eq!(outcome, Outcome::Whole, "version {version}");
            let expected = gix(&index);
            assert!(expected.len() > 300);
            assert_eq!(seen, expected, "version {version}");
            assert!(seen.iter().any(|e| e.5) && seen.iter().any(|e| e.3 == 0o100755));
            assert!(seen.iter().any(|e| e.3 == 0o120000));
        }
        // A name longer than the name field holds (4,095 bytes), which `gix_index` does not
        // read: the entries around it are what they were, and it is what git stored.
        let before = ours(&index).unwrap().1;
        let long = format!("{}/x.txt", vec!["n".repeat(250); 18].join("/"));
        let blob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
        assert!(git(
            root,
            &["update-index", "--add", "--cacheinfo", &format!("100644,{blob},{long}")]
        ));
        for version in ["2", "4"] {
            assert!(git(root, &["update-index", "--index-version", version]));
            let (outcome, mut seen) = ours(&index).unwrap();
            assert_eq!(outcome, Outcome::Whole);
            let at = seen.iter().position(|e| e.0 == long.as_bytes()).unwrap();
            let (_, id, _, mode, stage, _) = seen.remove(at);
            assert_eq!((id.to_string().as_str(), mode, stage), (blob, 0o100644, 0));
            assert_eq!(seen, before, "version {version}");
        }
        assert!(git(root, &["rm", "-q", "--cached", &long]));
        assert!(git(root, &["update-index", "--split-index"]));
        assert_eq!(ours(&index).unwrap().0, Outcome::Other);
        assert!(git(root, &["update-index", "--no-split-index"]));
        // Written without a checksum (`index.skipHash`): read, as git reads it.
        assert!(git(
            root,
            &["-c", "index.skipHash=true", "update-index", "--index-version", "3"]
        ));
        let bytes = std::fs::read(&index).unwrap();
        assert!(bytes.ends_with(&[0; 20]));
        assert_eq!(ours(&index).unwrap().1, gix(&index));
    }

    /// A byte changed, the file cut short or grown: an error, never a panic or a wrong entry.
    #[test]
    fn a_damaged_index_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        if !git(root, &["init", "-q"]) {
            return;
        }
        for i in 0..40 {
            std::fs::write(root.join(format!("f{i}")), format!("{i}")).unwrap();
        }
        assert!(git(root, &["add", "."]));
        let index = root.join(".git/index");
        let good = std::fs::read(&index).unwrap();
        let parse = |bytes: &[u8]| read(bytes, bytes.len() as u64, |_| {});
        assert_eq!(parse(&good).unwrap(), Outcome::Whole);
        for at in (0..good.len()).step_by(7) {
            let mut bad = good.clone();
            bad[at] ^= 0x20;
            assert!(parse(&bad).is_err(), "a byte changed at {at}");
            assert!(parse(&good[..at]).is_err(), "cut at {at}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(read(longer.as_slice(), good.len() as u64, |_| {}).is_err());
        assert!(parse(&longer).is_err());
        // A sparse file of 200 GB: refused by its size, nothing read.
        let huge = std::fs::File::options().write(true).open(&index).unwrap();
        huge.set_len(200 << 30).unwrap();
        let started = std::fs::File::open(&index).unwrap();
        assert!(read(started, 200 << 30, |_| panic!("no entry of a refused index")).is_err());
        assert!(crate::session::git_baseline::GitBaseline::read_index(root).is_none());
    }

    /// Version 4 paths that each keep the whole path before and add a byte: the paths spelled
    /// would grow as the square of the entries. An error once far past the file's own size.
    #[test]
    fn version_4_paths_cannot_grow_past_the_index() {
        let entries = 4000u32;
        let mut bytes = b"DIRC".to_vec();
        bytes.extend_from_slice(&4u32.to_be_bytes());
        bytes.extend_from_slice(&entries.to_be_bytes());
        for _ in 0..entries {
            let mut fixed = [0u8; 62];
            fixed[24..28].copy_from_slice(&0o100644u32.to_be_bytes());
            bytes.extend_from_slice(&fixed);
            bytes.extend_from_slice(&[0, b'x', 0]); // keep all of the path before, add "x"
        }
        bytes.extend_from_slice(&[0; 20]); // no checksum (`index.skipHash`)
        let mut longest = 0;
        let result = read(bytes.as_slice(), bytes.len() as u64, |e| longest = e.path.len());
        assert!(matches!(result, Err(Unreadable::Damaged(_))), "{result:?}");
        assert!(longest < 4000, "{longest}");
    }
}
