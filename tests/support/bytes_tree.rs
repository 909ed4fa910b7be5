//! Trees compared byte for byte at any depth: names are bytes, and everything is read through
//! directory descriptors (no path handed to the kernel is longer than one name), so a tree past
//! PATH_MAX and names that are not UTF-8 compare exactly. Independent of brute's own
//! descriptor code (`brute::beneath`), which it checks.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// What one path holds: its kind, content or link target, and mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Dir { mode: u32 },
    File { bytes: Vec<u8>, mode: u32 },
    Link { target: Vec<u8> },
}

fn open_dir(dir: &OwnedFd, name: &[u8]) -> OwnedFd {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap()
}

/// Every entry under `root` except `.git` directories, by its relative path's bytes.
pub fn read(root: &Path) -> BTreeMap<Vec<u8>, Node> {
    let top = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap();
    let mut out = BTreeMap::new();
    let mut stack = vec![(top, Vec::new())];
    while let Some((dir, prefix)) = stack.pop() {
        let mut listing = rustix::fs::Dir::read_from(&dir).unwrap();
        while let Some(entry) = listing.read() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_bytes().to_vec();
            if name == b"." || name == b".." || name == b".git" {
                continue;
            }
            let stat = rustix::fs::statat(&dir, name.as_slice(), AtFlags::SYMLINK_NOFOLLOW).unwrap();
            let mode = stat.st_mode & 0o7777;
            let mut rel = prefix.clone();
            rel.extend_from_slice(&name);
            let node = match FileType::from_raw_mode(stat.st_mode) {
                FileType::Directory => {
                    let mut child_prefix = rel.clone();
                    child_prefix.push(b'/');
                    stack.push((open_dir(&dir, &name), child_prefix));
                    Node::Dir { mode }
                }
                FileType::Symlink => Node::Link {
                    target: rustix::fs::readlinkat(&dir, name.as_slice(), Vec::new())
                        .unwrap()
                        .into_bytes(),
                },
                _ => {
                    let fd = rustix::fs::openat(
                        &dir,
                        name.as_slice(),
                        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
                        Mode::empty(),
                    )
                    .unwrap();
                    let mut bytes = Vec::new();
                    std::fs::File::from(fd).read_to_end(&mut bytes).unwrap();
                    Node::File { bytes, mode }
                }
            };
            out.insert(rel, node);
        }
    }
    out
}

/// Makes the directories `names` one inside the other under `root` (any depth) and returns
/// the innermost.
pub fn make_dirs(root: &Path, names: &[Vec<u8>]) -> OwnedFd {
    let mut dir = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap();
    for name in names {
        rustix::fs::mkdirat(&dir, name.as_slice(), Mode::from_raw_mode(0o755)).unwrap();
        dir = open_dir(&dir, name);
    }
    dir
}

/// Writes the file `name` in `dir` (mode 0644).
pub fn write_at(dir: &OwnedFd, name: &[u8], bytes: &[u8]) {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
    std::io::Write::write_all(&mut std::fs::File::from(fd), bytes).unwrap();
}

/// The paths of `tree`, shown with bytes that are not UTF-8 escaped (for failure messages).
pub fn shown(tree: &BTreeMap<Vec<u8>, Node>) -> Vec<String> {
    tree.keys().map(|k| k.escape_ascii().to_string()).collect()
}
