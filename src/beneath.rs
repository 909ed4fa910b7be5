//! File work through directory file descriptors, so the path that was checked is the path
//! that is used.
//!
//! A tool checks a path (made absolute, `..` folded, every link resolved) and then acts on it.
//! Acting by path again would resolve it again: a command running beside the tool could swap a
//! directory of it for a link to somewhere outside in between (a `renameat2` exchange needs only
//! write access inside the project), and the write, patch or removal would land there. Here the
//! resolved path is opened from a descriptor of its root with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`: the path was resolved already, so a link that
//! appears in it since is a change, refused rather than followed, and nothing can lead out of the
//! root. The file is then written, renamed and unlinked relative to the descriptor of its
//! verified parent (`openat`, `renameat`, `unlinkat`), so no later swap redirects it either.
//! Where `openat2` is missing (Linux before 5.6, or a filter that refuses it) each component is
//! opened with `O_NOFOLLOW` instead, which refuses the same links.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

/// A directory every operation stays beneath.
pub struct Root {
    fd: OwnedFd,
    path: PathBuf,
}

/// A path that changed into a link (or out of the root) since it was checked.
#[derive(Debug, thiserror::Error)]
#[error("{} changed while brute worked on it (a link appeared in its path); nothing was changed there", .0.display())]
pub struct Changed(PathBuf);

/// The error for a path that changed into a link (or out of the root) since it was checked.
fn changed(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, Changed(path.to_path_buf()))
}

/// Whether `error` says a path changed into a link since it was checked (see [`Changed`]).
pub fn is_changed(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|inner| inner.is::<Changed>())
}

fn is(e: &io::Error, errno: i32) -> bool {
    e.raw_os_error() == Some(errno)
}

impl Root {
    /// Opens the directory `path` (absolute, links already resolved) as a root; a link in it
    /// now (a root swapped for a link since it was resolved) is refused.
    pub fn open(path: &Path) -> io::Result<Self> {
        let fd = rustix::fs::openat2(
            rustix::fs::CWD,
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
        .or_else(|e| {
            if e == rustix::io::Errno::NOSYS || e == rustix::io::Errno::PERM {
                rustix::fs::open(path, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            } else if e == rustix::io::Errno::LOOP {
                Err(rustix::io::Errno::LOOP)
            } else {
                Err(e)
            }
        })
        .map_err(|e| {
            if e == rustix::io::Errno::LOOP {
                changed(path)
            } else {
                e.into()
            }
        })?;
        Ok(Self {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The root's own path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `target` (absolute, under the root) relative to the root; an error when it is not under it.
    pub fn relative(&self, target: &Path) -> io::Result<PathBuf> {
        target.strip_prefix(&self.path).map(Path::to_path_buf).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not under {}", target.display(), self.path.display()),
            )
        })
    }

    fn shown(&self, rel: &Path) -> PathBuf {
        self.path.join(rel)
    }

    /// Opens `rel` beneath the root, following no link on the way (or at the end).
    pub fn open_at(&self, rel: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
        let names = components(rel)?;
        if names.is_empty() {
            return Ok(rustix::fs::openat(&self.fd, ".", flags | OFlags::CLOEXEC, mode)?);
        }
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(&self.fd, rel, flags | OFlags::CLOEXEC, mode, resolve) {
            Ok(fd) => Ok(fd),
            Err(e) if e == rustix::io::Errno::XDEV || e == rustix::io::Errno::LOOP => Err(changed(&self.shown(rel))),
            Err(e)
                if e == rustix::io::Errno::NOSYS
                    || e == rustix::io::Errno::PERM
                    || e == rustix::io::Errno::NAMETOOLONG =>
            {
                self.open_each(&names, flags, mode, rel)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// [`Root::open_at`] one component at a time with `O_NOFOLLOW` (no `openat2`, or a path
    /// longer than the kernel takes at once).
    fn open_each(&self, names: &[OsString], flags: OFlags, mode: Mode, rel: &Path) -> io::Result<OwnedFd> {
        let mut dir = rustix::fs::openat(
            &self.fd,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let last = names.len() - 1;
        for (i, name) in names.iter().enumerate() {
            let step = if i == last {
                flags | OFlags::NOFOLLOW | OFlags::CLOEXEC
            } else {
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
            };
            dir = match rustix::fs::openat(&dir, name.as_os_str(), step, mode) {
                Ok(fd) => fd,
                Err(e) if e == rustix::io::Errno::LOOP || (i < last && e == rustix::io::Errno::NOTDIR) => {
                    return Err(changed(&self.shown(rel)));
                }
                Err(e) => return Err(e.into()),
            };
        }
        Ok(dir)
    }

    /// The directory `rel` beneath the root, made (with its missing parents, mode 0777 less the
    /// umask) when `create`. Returns it and the directories made, outermost first.
    pub fn dir(&self, rel: &Path, create: bool) -> io::Result<(OwnedFd, Vec<PathBuf>)> {
        let flags = OFlags::PATH | OFlags::DIRECTORY;
        match self.open_at(rel, flags, Mode::empty()) {
            Err(e) if create && is(&e, libc::ENOENT) => {}
            other => return other.map(|fd| (fd, Vec::new())),
        }
        let names = components(rel)?;
        let mut made = Vec::new();
        let mut dir = self.open_at(Path::new(""), flags, Mode::empty())?;
        let mut prefix = PathBuf::new();
        for name in &names {
            prefix.push(name);
            dir = match self.open_at(&prefix, flags, Mode::empty()) {
                Ok(fd) => fd,
                Err(e) if is(&e, libc::ENOENT) => {
                    match rustix::fs::mkdirat(&dir, name.as_os_str(), Mode::from_raw_mode(0o777)) {
                        Ok(()) => made.push(self.shown(&prefix)),
                        Err(e) if e == rustix::io::Errno::EXIST => {}
                        Err(e) => return Err(e.into()),
                    }
                    match rustix::fs::openat(
                        &dir,
                        name.as_os_str(),
                        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                        Mode::empty(),
                    ) {
                        Ok(fd) => fd,
                        Err(e) if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR => {
                            return Err(changed(&self.shown(&prefix)));
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
                Err(e) => return Err(e),
            };
        }
        Ok((dir, made))
    }

    /// The parent directory of `rel` (made when `create`) and `rel`'s last name.
    fn parent(&self, rel: &Path, create: bool) -> io::Result<(OwnedFd, OsString, Vec<PathBuf>)> {
        let mut names = components(rel)?;
        let name = names
            .pop()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the root itself cannot be changed"))?;
        let parent: PathBuf = names.iter().collect();
        let (dir, made) = self.dir(&parent, create)?;
        Ok((dir, name, made))
    }

    /// Reads the regular file `rel`, at most `limit` bytes (an error of kind `FileTooLarge`
    /// past it); never blocks on a FIFO, never reads a device.
    pub fn read_bounded(&self, rel: &Path, limit: u64) -> io::Result<Vec<u8>> {
        let fd = self.open_at(rel, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty())?;
        let stat = rustix::fs::fstat(&fd)?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => return Err(io::Error::new(io::ErrorKind::IsADirectory, "it is a directory")),
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("it is {}, not a regular file", kind_name(other)),
                ));
            }
        }
        let flags = rustix::fs::fcntl_getfl(&fd)?;
        rustix::fs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK)?;
        let file = std::fs::File::from(fd);
        let mut bytes = Vec::new();
        file.take(limit + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > limit {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("it is larger than {limit} bytes"),
            ));
        }
        Ok(bytes)
    }

    /// Writes `content` to `rel` atomically: a temporary file in the verified parent, synced,
    /// given the old file's mode (a new file gets 0666 less the umask), renamed over the name.
    /// Missing parents are made; returns the directories made.
    pub fn write(&self, rel: &Path, content: &[u8]) -> io::Result<Vec<PathBuf>> {
        let (dir, name, made) = self.parent(rel, true)?;
        let old_mode = match rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
                FileType::RegularFile => Some(stat.st_mode & 0o7777),
                FileType::Directory => return Err(io::Error::new(io::ErrorKind::IsADirectory, "it is a directory")),
                FileType::Symlink => None,
                other => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("it is {}, not a regular file", kind_name(other)),
                    ));
                }
            },
            Err(e) if e == rustix::io::Errno::NOENT => None,
            Err(e) => return Err(e.into()),
        };
        let (temp, fd) = create_temp(&dir)?;
        let written = (|| {
            let mut file = std::fs::File::from(fd);
            file.write_all(content)?;
            if let Some(mode) = old_mode {
                rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
            }
            file.sync_all()?;
            rustix::fs::renameat(&dir, temp.as_os_str(), &dir, name.as_os_str())?;
            Ok::<(), io::Error>(())
        })();
        if let Err(e) = written {
            let _ = rustix::fs::unlinkat(&dir, temp.as_os_str(), AtFlags::empty());
            return Err(e);
        }
        Ok(made)
    }

    /// Makes `rel` a symbolic link to `target` (its parents made); an existing entry of that
    /// name is replaced only when it is not a directory.
    pub fn symlink(&self, target: &Path, rel: &Path) -> io::Result<()> {
        let (dir, name, _) = self.parent(rel, true)?;
        match rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Directory => {
                rustix::fs::unlinkat(&dir, name.as_os_str(), AtFlags::REMOVEDIR)?;
            }
            Ok(_) => rustix::fs::unlinkat(&dir, name.as_os_str(), AtFlags::empty())?,
            Err(e) if e == rustix::io::Errno::NOENT => {}
            Err(e) => return Err(e.into()),
        }
        Ok(rustix::fs::symlinkat(target, &dir, name.as_os_str())?)
    }

    /// Sets the permission bits of the directory or file `rel` (not through a link).
    pub fn chmod(&self, rel: &Path, mode: u32) -> io::Result<()> {
        let fd = self.open_at(rel, OFlags::PATH, Mode::empty())?;
        // fchmod refuses O_PATH descriptors; the /proc form acts on the same inode.
        let proc = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
        Ok(rustix::fs::chmod(proc.as_str(), Mode::from_raw_mode(mode))?)
    }

    /// The metadata of `rel` itself (a link's own, never its target's), at any depth.
    pub fn lstat(&self, rel: &Path) -> io::Result<std::fs::Metadata> {
        let fd = self.open_at(rel, OFlags::PATH | OFlags::NOFOLLOW, Mode::empty())?;
        std::fs::File::from(fd).metadata()
    }

    /// The target of the symbolic link `rel` (as bytes), at any depth.
    pub fn read_link(&self, rel: &Path) -> io::Result<OsString> {
        let fd = self.open_at(rel, OFlags::PATH | OFlags::NOFOLLOW, Mode::empty())?;
        let target = rustix::fs::readlinkat(&fd, "", Vec::new())?;
        Ok(OsString::from_vec(target.into_bytes()))
    }

    /// The names in the directory `rel`, each with whether it is a directory itself (a link
    /// never counts as one).
    pub fn list(&self, rel: &Path) -> io::Result<Vec<(OsString, bool)>> {
        let fd = self.open_at(
            rel,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW,
            Mode::empty(),
        )?;
        let mut listing = rustix::fs::Dir::read_from(&fd)?;
        let mut names = Vec::new();
        while let Some(entry) = listing.read() {
            let entry = entry?;
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            let kind = entry_kind(&fd, &entry)?;
            names.push((
                OsString::from_vec(name.to_bytes().to_vec()),
                kind == FileType::Directory,
            ));
        }
        Ok(names)
    }

    /// Removes the entry `rel` (a link itself, never its target); a directory only when empty,
    /// unless `recursive`, which removes everything in it first, at any depth.
    pub fn remove(&self, rel: &Path, recursive: bool) -> io::Result<()> {
        let (dir, name, _) = self.parent(rel, false)?;
        let stat = rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
            return Ok(rustix::fs::unlinkat(&dir, name.as_os_str(), AtFlags::empty())?);
        }
        if recursive {
            let inner = rustix::fs::openat(
                &dir,
                name.as_os_str(),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| {
                if e == rustix::io::Errno::LOOP {
                    changed(&self.shown(rel))
                } else {
                    e.into()
                }
            })?;
            empty_tree(inner)?;
        }
        Ok(rustix::fs::unlinkat(&dir, name.as_os_str(), AtFlags::REMOVEDIR)?)
    }
}

/// Removes everything inside the directory `dir`, deepest first, without following links and
/// without a path (so any depth works); directories are held open one per level.
fn empty_tree(dir: OwnedFd) -> io::Result<()> {
    let mut stack = vec![dir];
    while let Some(top) = stack.last() {
        let mut listing = rustix::fs::Dir::read_from(top)?;
        let mut descended = None;
        while let Some(entry) = listing.read() {
            let entry = entry?;
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            let kind = entry_kind(top, &entry)?;
            if kind != FileType::Directory {
                rustix::fs::unlinkat(top, name, AtFlags::empty())?;
                continue;
            }
            match rustix::fs::unlinkat(top, name, AtFlags::REMOVEDIR) {
                Ok(()) => continue,
                Err(e) if e == rustix::io::Errno::NOTEMPTY || e == rustix::io::Errno::EXIST => {}
                Err(e) => return Err(e.into()),
            }
            let child = rustix::fs::openat(
                top,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            descended = Some(child);
            break;
        }
        match descended {
            // Empty the child; this directory is read again afterwards, and the emptied child
            // is removed on that pass.
            Some(child) => stack.push(child),
            None => {
                stack.pop();
            }
        }
    }
    Ok(())
}

/// The kind of a listed entry of `dir` (never following a link), asked of the filesystem
/// where the listing does not say.
fn entry_kind(dir: &OwnedFd, entry: &rustix::fs::DirEntry) -> io::Result<FileType> {
    Ok(match entry.file_type() {
        FileType::Unknown => {
            FileType::from_raw_mode(rustix::fs::statat(dir, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)?.st_mode)
        }
        known => known,
    })
}

/// Creates a new, empty temporary file in `dir` (`O_EXCL`, not following links).
fn create_temp(dir: &OwnedFd) -> io::Result<(OsString, OwnedFd)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    for _ in 0..100 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = OsString::from(format!(".brute-{}-{n}-{nanos:x}.tmp", std::process::id()));
        match rustix::fs::openat(
            dir.as_fd(),
            name.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        ) {
            Ok(fd) => return Ok((name, fd)),
            Err(e) if e == rustix::io::Errno::EXIST => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "cannot make a temporary file",
    ))
}

/// The names of a relative path: `.` dropped; `..`, a root or a NUL byte refused.
fn components(rel: &Path) -> io::Result<Vec<OsString>> {
    let mut names = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(name) => {
                if name.as_bytes().contains(&0) {
                    return Err(io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"));
                }
                names.push(OsString::from_vec(name.as_bytes().to_vec()));
            }
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a plain relative path", rel.display()),
                ));
            }
        }
    }
    Ok(names)
}

fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Symlink => "a symbolic link",
        FileType::Directory => "a directory",
        _ => "a special file",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(real.join("p")).unwrap();
        let root = Root::open(&real.join("p")).unwrap();
        (dir, root)
    }

    #[test]
    fn writes_read_and_removes_beneath_the_root() {
        let (_dir, root) = root();
        let made = root.write(Path::new("a/b/f.txt"), b"hi").unwrap();
        assert_eq!(made, vec![root.path().join("a"), root.path().join("a/b")]);
        assert_eq!(root.read_bounded(Path::new("a/b/f.txt"), 10).unwrap(), b"hi");
        assert_eq!(
            root.read_bounded(Path::new("a/b/f.txt"), 1).unwrap_err().kind(),
            io::ErrorKind::FileTooLarge
        );
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.path().join("a/b/f.txt"), std::fs::Permissions::from_mode(0o751)).unwrap();
        root.write(Path::new("a/b/f.txt"), b"again").unwrap();
        let meta = std::fs::metadata(root.path().join("a/b/f.txt")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o751, "the old mode is kept");
        root.remove(Path::new("a"), true).unwrap();
        assert!(!root.path().join("a").exists());
        assert!(
            root.remove(Path::new(""), true).is_err(),
            "the root itself is never removed"
        );
    }

    #[test]
    fn a_link_in_the_path_is_refused_and_nothing_outside_changes() {
        let (dir, root) = root();
        let outside = dir.path().canonicalize().unwrap().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("f"), b"keep").unwrap();
        std::os::unix::fs::symlink(&outside, root.path().join("out")).unwrap();
        for result in [
            root.write(Path::new("out/f"), b"x").map(|_| ()),
            root.write(Path::new("out/new"), b"x").map(|_| ()),
            root.remove(Path::new("out/f"), false),
            root.read_bounded(Path::new("out/f"), 10).map(|_| ()),
        ] {
            let e = result.unwrap_err();
            assert!(e.to_string().contains("changed while brute worked on it"), "{e}");
        }
        assert_eq!(std::fs::read(outside.join("f")).unwrap(), b"keep");
        assert_eq!(
            std::fs::read_dir(&outside).unwrap().count(),
            1,
            "no temp file was left outside"
        );
        // The link itself can be removed (never its target).
        root.remove(Path::new("out"), true).unwrap();
        assert!(outside.join("f").exists());
        assert!(root.write(Path::new("../x"), b"x").is_err());
    }

    #[test]
    fn a_tree_deeper_than_path_max_is_removed() {
        let (_dir, root) = root();
        // 300 levels of 20-byte names: about 6,300 bytes, past PATH_MAX (4096).
        let name = "d".repeat(20);
        let mut dir = rustix::fs::openat(&root.fd, ".", OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        for _ in 0..300 {
            rustix::fs::mkdirat(&dir, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
            dir = rustix::fs::openat(&dir, name.as_str(), OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        }
        let leaf = rustix::fs::openat(
            &dir,
            "leaf",
            OFlags::WRONLY | OFlags::CREATE,
            Mode::from_raw_mode(0o644),
        )
        .unwrap();
        drop(leaf);
        root.remove(Path::new(&name), true).unwrap();
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }
}
