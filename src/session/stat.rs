//! A file's `lstat` data as a checkpoint walk and git's index compare it ([`Stat`]), and
//! [`DirStat`], which takes it through a descriptor of the directory being listed: a walk
//! stats every file of the tree, and by full path the kernel looked up every directory on the
//! way again for each one (at 200,000 files, a tenth of a walk's time).

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rustix::fd::OwnedFd;

/// What `lstat` says of a path (a link's own data, never its target's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// `st_mode`: the file type and the permission bits, as `Permissions::mode` gives them.
    pub mode: u32,
    pub size: u64,
    pub mtime: i64,
    pub mtime_nsec: i64,
    pub ctime: i64,
    pub ctime_nsec: i64,
    pub ino: u64,
    pub dev: u64,
    pub uid: u32,
    pub gid: u32,
}

impl Stat {
    /// The same data, from what the standard library returned.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        Stat {
            mode: meta.mode(),
            size: meta.size(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
            ino: meta.ino(),
            dev: meta.dev(),
            uid: meta.uid(),
            gid: meta.gid(),
        }
    }

    fn of_raw(st: &rustix::fs::Stat) -> Self {
        // The field types differ between targets; each value fits the type given here.
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        Stat {
            mode: st.st_mode as u32,
            size: st.st_size as u64,
            mtime: st.st_mtime as i64,
            mtime_nsec: st.st_mtime_nsec as i64,
            ctime: st.st_ctime as i64,
            ctime_nsec: st.st_ctime_nsec as i64,
            ino: st.st_ino as u64,
            dev: st.st_dev as u64,
            uid: st.st_uid as u32,
            gid: st.st_gid as u32,
        }
    }

    fn kind(&self) -> u32 {
        self.mode & libc::S_IFMT
    }

    pub fn is_file(&self) -> bool {
        self.kind() == libc::S_IFREG
    }

    pub fn is_dir(&self) -> bool {
        self.kind() == libc::S_IFDIR
    }

    /// The modification time in ns since the epoch; 0 before it (as manifests always
    /// recorded it).
    pub fn mtime_ns(&self) -> u64 {
        match self.mtime {
            ..0 => 0,
            secs => (secs as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(self.mtime_nsec.max(0) as u64),
        }
    }

    /// The status-change time in ns since the epoch, each part clamped at 0 (as manifests
    /// always recorded it).
    pub fn ctime_ns(&self) -> u64 {
        (self.ctime.max(0) as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(self.ctime_nsec.max(0) as u64)
    }

    /// The modification time, before the epoch too (`None` only out of `SystemTime`'s range).
    pub fn modified(&self) -> Option<SystemTime> {
        let nanos = Duration::from_nanos(u64::try_from(self.mtime_nsec).ok()?);
        let whole = Duration::from_secs(self.mtime.unsigned_abs());
        let at = match self.mtime {
            ..0 => SystemTime::UNIX_EPOCH.checked_sub(whole)?,
            _ => SystemTime::UNIX_EPOCH.checked_add(whole)?,
        };
        at.checked_add(nanos)
    }
}

/// Takes `lstat` of paths through a descriptor of their directory, kept while the paths asked
/// are in the same one (a walker lists a directory's entries one after another). One per
/// thread and per walk: a descriptor is never kept past the walk that opened it.
#[derive(Default)]
pub struct DirStat {
    dir: Option<(PathBuf, OwnedFd)>,
}

impl DirStat {
    /// `lstat` of `path`: by its name in its directory's descriptor; by the whole path where
    /// that fails (a directory that cannot be opened, a path longer than the kernel takes, a
    /// directory removed since its descriptor was opened), so every error is the whole
    /// path's. A directory renamed while its entries are asked answers from where it went,
    /// as the listing that named them did (a change during a walk, which the next one sees).
    pub fn lstat(&mut self, path: &Path) -> std::io::Result<Stat> {
        // Split at the last `/` by bytes (a walker's paths are its root joined with names;
        // parsing them into components cost a walk more than this whole lookup).
        let bytes = path.as_os_str().as_bytes();
        let split = bytes.iter().rposition(|b| *b == b'/').filter(|at| *at > 0);
        if let Some(at) = split
            && let (parent, name) = (&bytes[..at], &bytes[at + 1..])
            && !name.is_empty()
            && name != b"."
            && name != b".."
            && let Some(fd) = self.dir_fd(Path::new(std::ffi::OsStr::from_bytes(parent)))
        {
            let name = std::ffi::OsStr::from_bytes(name);
            match rustix::fs::statat(fd, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => return Ok(Stat::of_raw(&st)),
                Err(_) => self.dir = None,
            }
        }
        std::fs::symlink_metadata(path).map(|meta| Stat::of(&meta))
    }

    fn dir_fd(&mut self, parent: &Path) -> Option<&OwnedFd> {
        if self.dir.as_ref().is_none_or(|(open, _)| open != parent) {
            self.dir = None;
            let flags = rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC;
            let fd = rustix::fs::open(parent, flags, rustix::fs::Mode::empty()).ok()?;
            self.dir = Some((parent.to_path_buf(), fd));
        }
        self.dir.as_ref().map(|(_, fd)| fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_by_descriptor_is_the_standard_librarys() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a"), "hello").unwrap();
        std::fs::write(root.join("b"), "").unwrap();
        std::os::unix::fs::symlink("/nowhere", root.join("sub/link")).unwrap();
        // A name that is not UTF-8: paths are bytes.
        let odd = std::ffi::OsStr::from_bytes(b"sub/\xff\xfe");
        std::fs::write(root.join(odd), "odd").unwrap();
        let mut stat = DirStat::default();
        for rel in ["sub/a", "sub/link", "sub", "b", "sub/\u{fffd}", "sub/a"] {
            let path = match rel {
                "sub/\u{fffd}" => root.join(odd),
                _ => root.join(rel),
            };
            let expected = Stat::of(&std::fs::symlink_metadata(&path).unwrap());
            assert_eq!(stat.lstat(&path).unwrap(), expected, "{rel}");
        }
        let link = stat.lstat(&root.join("sub/link")).unwrap();
        assert!(!link.is_file() && !link.is_dir());
        assert!(stat.lstat(&root.join("sub")).unwrap().is_dir());
        let file = stat.lstat(&root.join("sub/a")).unwrap();
        assert!(file.is_file() && file.size == 5);
        assert_eq!(
            file.modified(),
            std::fs::symlink_metadata(root.join("sub/a")).unwrap().modified().ok()
        );
        // Before the epoch: the time std gives, and 0 ns as manifests always recorded it.
        let before = SystemTime::UNIX_EPOCH - Duration::from_millis(1500);
        let old = root.join("sub/old");
        std::fs::File::create(&old).unwrap().set_modified(before).unwrap();
        let meta = std::fs::symlink_metadata(&old).unwrap();
        let by_fd = stat.lstat(&old).unwrap();
        assert_eq!(by_fd.modified(), meta.modified().ok());
        assert_eq!(by_fd.modified(), Some(before));
        assert_eq!(by_fd.mtime_ns(), 0);
        // Gone, or its directory gone: an error, as by path.
        let missing = stat.lstat(&root.join("sub/missing")).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
        std::fs::remove_dir_all(root.join("sub")).unwrap();
        assert!(stat.lstat(&root.join("sub/a")).is_err());
        // A directory made again at the same path: what the path names now answers.
        assert!(stat.lstat(&root.join("sub/x")).is_err());
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a"), "again!").unwrap();
        assert_eq!(stat.lstat(&root.join("sub/a")).unwrap().size, 6);
    }
}
