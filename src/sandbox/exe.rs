//! Which binary runs the sandbox init. brute's own binary can (`brute __brute-sandbox-init…`,
//! see [`super::init`]), but starting brute's 25 MB again for every command costs about 1 ms
//! and 300 page faults more than starting `brute-sandbox-init`: the same init code, built as a
//! binary of its own (`src/bin/brute-sandbox-init.rs`) without the rest of brute, and installed
//! beside it. brute uses that one when it is there and sound, else itself.
//!
//! - **Copied once, sealed.** When brute first looks for its init (at start, before any
//!   command runs) the file is read into a sealed `memfd` of brute's own, and every init is
//!   exec'd from that copy (`/proc/self/fd/N`). Nothing a command does to the file later, replaced or rewritten
//!   in place, reaches this process's inits: as with `/proc/self/exe`, the init is what brute
//!   started with. (Whoever can change the file before brute starts can as well change `brute`
//!   beside it.)
//! - **Sound:** a regular file, not a link, owned by brute's owner (or root), that no one else
//!   may write. Any other file there is ignored, and brute runs the init itself. So it does
//!   when the start's sandbox check cannot run the copy ([`demote`]).
//! - **From this build only.** The init's first argument names brute's version and the init
//!   protocol ([`INIT_ARG`]); an init from another build refuses it (exit 125, nothing runs)
//!   instead of reading arguments it does not know.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The first argument of an init's command line: it turns a binary into the sandbox init, and
/// says which build of brute asks. The number after the version changes whenever the init's
/// arguments or a spare's request change.
pub const INIT_ARG: &str = concat!("__brute-sandbox-init/", env!("CARGO_PKG_VERSION"), "/1");

/// The first part of [`INIT_ARG`], the same in every build: an init that sees it with another
/// build's ending says so.
pub const INIT_ARG_STEM: &str = "__brute-sandbox-init";

/// The init's own binary, installed beside `brute`.
pub const INIT_BINARY: &str = "brute-sandbox-init";

/// Set (to anything but `0`) to have brute's own binary run the init even when
/// [`INIT_BINARY`] is there (to compare the two, or to rule the small one out).
pub const IN_BRUTE_VAR: &str = "BRUTE_INIT_IN_BRUTE";

/// The binary that runs the init, if there is one (Linux only): a sealed copy of
/// [`INIT_BINARY`] beside brute, else brute itself; for the test harnesses of this crate, the
/// ones beside the test binaries. `None` when the sandbox is disabled ([`super::DISABLE_VAR`]).
pub fn init_exe() -> Option<&'static PathBuf> {
    let inits = inits()?;
    match &inits.sealed {
        Some(sealed) if !DEMOTED.load(Ordering::Relaxed) => Some(sealed),
        _ => inits.own.as_ref(),
    }
}

/// brute's own binary as the init (`/proc/self/exe`, or `brute` beside a test binary), whether
/// or not this process uses the sealed copy.
pub fn own_init() -> Option<&'static PathBuf> {
    inits()?.own.as_ref()
}

/// Stops using the sealed copy for good (it could not run here: an LSM refusing to run a
/// memfd, say); brute's own binary is the init from now on. Whether there was a copy to stop.
pub fn demote() -> bool {
    let had = inits().is_some_and(|i| i.sealed.is_some());
    had && !DEMOTED.swap(true, Ordering::Relaxed)
}

/// The two inits a process can have: the sealed copy, and brute's own binary.
struct Inits {
    sealed: Option<PathBuf>,
    own: Option<PathBuf>,
}

static DEMOTED: AtomicBool = AtomicBool::new(false);

fn inits() -> Option<&'static Inits> {
    static INITS: OnceLock<Option<Inits>> = OnceLock::new();
    INITS
        .get_or_init(|| {
            if cfg!(not(target_os = "linux")) || set(super::DISABLE_VAR) {
                return None;
            }
            let exe = std::env::current_exe().ok()?;
            let name = exe.file_name()?.to_string_lossy().into_owned();
            let dir = exe.parent()?;
            let in_deps = dir.file_name().is_some_and(|d| d == "deps");
            // "brute (deleted)": the binary was replaced on disk while it runs.
            let is_brute = !in_deps && (name == "brute" || name.starts_with("brute "));
            let bin_dir = if in_deps { dir.parent()? } else { dir };
            let brute = if is_brute { exe.clone() } else { bin_dir.join("brute") };
            let sealed = (!set(IN_BRUTE_VAR))
                .then(|| sealed_copy(&bin_dir.join(INIT_BINARY), &brute))
                .flatten();
            // Exec'ing /proc/self/exe works even when the binary was replaced on disk.
            let own = if is_brute {
                Some(PathBuf::from("/proc/self/exe"))
            } else {
                brute.is_file().then_some(brute)
            };
            (sealed.is_some() || own.is_some()).then_some(Inits { sealed, own })
        })
        .as_ref()
}

fn set(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The file the init was copied from, as it was when copied (for [`super::available`]'s
/// remembered probe, whose key names the init's binary).
pub fn init_source() -> Option<&'static std::fs::Metadata> {
    inits()?.sealed.as_ref()?;
    if DEMOTED.load(Ordering::Relaxed) {
        return None;
    }
    SOURCE.get()
}

static SOURCE: OnceLock<std::fs::Metadata> = OnceLock::new();

/// The largest init copied (brute's release build's is about 400 KB; a debug build's 70 MB).
const MAX_INIT_BYTES: u64 = 256 << 20;

/// Copies `init` into a sealed `memfd` when it is sound next to `brute` (see the module doc)
/// and returns the path that execs the copy. The copy's descriptor stays open for the life of
/// the process (close-on-exec: no command inherits it).
fn sealed_copy(init: &Path, brute: &Path) -> Option<PathBuf> {
    use std::os::fd::{FromRawFd, IntoRawFd};
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    let owner = std::fs::metadata(brute).ok()?.uid();
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(init)
        .ok()?;
    let meta = file.metadata().ok()?;
    let mode = meta.permissions().mode();
    let sound = meta.is_file() && (meta.uid() == owner || meta.uid() == 0) && mode & 0o022 == 0 && mode & 0o100 != 0;
    if !sound || meta.len() > MAX_INIT_BYTES {
        tracing::info!(init = %init.display(), "not using this sandbox init: not a file of brute's owner that only its owner may change");
        return None;
    }
    let name = c"brute-sandbox-init";
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: a NUL-terminated name; memfd_create has no memory effects. MFD_EXEC (a kernel
    // that would otherwise make the copy not executable) is unknown before Linux 6.3.
    let fd = unsafe {
        match libc::memfd_create(name.as_ptr(), flags | MFD_EXEC) {
            -1 => libc::memfd_create(name.as_ptr(), flags),
            fd => fd,
        }
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: a descriptor just made and owned by nothing else.
    let mut copy = unsafe { std::fs::File::from_raw_fd(fd) };
    let copied = std::io::copy(&mut std::io::Read::take(&file, meta.len()), &mut copy).ok()?;
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: fcntl and fchmod on our own descriptor.
    let sealed = copied == meta.len()
        && unsafe { libc::fchmod(fd, 0o500) == 0 && libc::fcntl(fd, libc::F_ADD_SEALS, seals) == 0 };
    if !sealed {
        return None;
    }
    let _ = SOURCE.set(meta);
    Some(PathBuf::from(format!("/proc/self/fd/{}", copy.into_raw_fd())))
}

/// `memfd_create`'s flag for an executable copy (Linux 6.3+).
const MFD_EXEC: libc::c_uint = 0x10;

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn exe_file(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, b"\x7fELF").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn only_a_sound_init_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let brute = exe_file(dir.path(), "brute", 0o755);
        let init = exe_file(dir.path(), INIT_BINARY, 0o755);
        let copy = sealed_copy(&init, &brute).expect("a sound init is used");
        // The path execs a sealed copy, whatever happens to the file after.
        std::fs::write(&init, b"changed in place").unwrap();
        std::fs::remove_file(&init).unwrap();
        assert_eq!(std::fs::read(&copy).unwrap(), b"\x7fELF");
        let written = std::fs::OpenOptions::new()
            .write(true)
            .open(&copy)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"x"));
        assert!(written.is_err(), "the copy is sealed");
        // Others may write it, or it cannot be run: not used.
        for mode in [0o775, 0o757, 0o644] {
            let init = exe_file(dir.path(), INIT_BINARY, mode);
            assert!(sealed_copy(&init, &brute).is_none(), "mode {mode:o}");
        }
        // A link there is not followed; a directory or nothing is not an init.
        std::fs::remove_file(dir.path().join(INIT_BINARY)).unwrap();
        std::os::unix::fs::symlink(&brute, dir.path().join(INIT_BINARY)).unwrap();
        assert!(sealed_copy(&dir.path().join(INIT_BINARY), &brute).is_none());
        std::fs::remove_file(dir.path().join(INIT_BINARY)).unwrap();
        std::fs::create_dir(dir.path().join(INIT_BINARY)).unwrap();
        assert!(sealed_copy(&dir.path().join(INIT_BINARY), &brute).is_none());
        assert!(sealed_copy(&dir.path().join("missing"), &brute).is_none());
        // A FIFO put there neither blocks the start nor is used.
        std::fs::remove_dir(dir.path().join(INIT_BINARY)).unwrap();
        let fifo = std::ffi::CString::new(dir.path().join(INIT_BINARY).as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o755) }, 0);
        assert!(sealed_copy(&dir.path().join(INIT_BINARY), &brute).is_none());
        // Past the size cap (a sparse 300 MB file): not copied.
        std::fs::remove_file(dir.path().join(INIT_BINARY)).unwrap();
        let big = exe_file(dir.path(), INIT_BINARY, 0o755);
        std::fs::File::options()
            .write(true)
            .open(&big)
            .unwrap()
            .set_len(300 << 20)
            .unwrap();
        assert!(sealed_copy(&big, &brute).is_none());
    }

    #[test]
    fn the_init_argument_names_this_build() {
        assert!(INIT_ARG.starts_with(INIT_ARG_STEM));
        assert!(INIT_ARG.contains(env!("CARGO_PKG_VERSION")));
    }
}
