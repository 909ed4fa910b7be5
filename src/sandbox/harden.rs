//! The last step of confinement, after the init's mounts and Landlock: the confined process
//! keeps no privilege it could use to undo them, and cannot type into a terminal.
//!
//! - **Every capability is dropped** — bounding, ambient, inheritable, permitted and effective —
//!   with securebits that keep a root uid from getting them back at `exec`. Run as root
//!   (containers, CI, VMs), a command is then as powerless as any user: no `mknod` of a block
//!   device, no `sethostname`, no raw I/O, no module loading. Landlock still decides every path.
//! - **`no_new_privs`**: a setuid or file-capability binary gains nothing.
//! - **A seccomp filter refuses `TIOCSTI` and `TIOCLINUX`** (`EPERM`), the two ioctls that push
//!   input into a terminal: a second wall behind the session of its own every command gets. It is
//!   written out as classic BPF here (a dozen instructions) rather than pulling in a filter
//!   compiler; the compat (32-bit) and x32 entry points are covered too, and only the low 32 bits
//!   of the request are compared, as the kernel does. On an architecture it has no numbers for,
//!   confinement fails (commands are then asked about, as where no sandbox exists).
//!
//! Each step that fails is an error: a confined command never runs with privileges left over.

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

// securebits (linux/securebits.h): a uid 0 gets no capabilities at exec or setuid, locked.
const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;

/// Drops every capability, sets `no_new_privs` and installs the terminal filter, in that order
/// (the filter needs `no_new_privs` once `CAP_SYS_ADMIN` is gone).
pub fn drop_privileges() -> Result<(), String> {
    let os = |what: &str| format!("cannot {what}: {}", std::io::Error::last_os_error());
    let bits = SECBIT_NOROOT
        | SECBIT_NOROOT_LOCKED
        | SECBIT_NO_SETUID_FIXUP
        | SECBIT_NO_SETUID_FIXUP_LOCKED
        | SECBIT_KEEP_CAPS_LOCKED
        | SECBIT_NO_CAP_AMBIENT_RAISE
        | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) } != 0 {
        return Err(os("set securebits"));
    }
    // SAFETY: as above; clearing the ambient set needs no privilege.
    if unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) } != 0 {
        return Err(os("clear the ambient capabilities"));
    }
    for cap in 0..=63 {
        // SAFETY: as above. EINVAL past the kernel's last capability ends the loop.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) } != 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) && cap > 0 {
                break;
            }
            return Err(os("drop the bounding capabilities"));
        }
    }
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: a v3 header and two data words, as capset(2) expects.
    if unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut CapHeader, data.as_ptr()) } != 0 {
        return Err(os("drop the capabilities"));
    }
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(os("set no_new_privs"));
    }
    install_terminal_filter()
}

// Classic BPF opcodes (linux/filter.h) and seccomp return values.
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JEQ_K: u16 = 0x15;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
// offsets in struct seccomp_data: nr, arch, then args[] (u64 each, little-endian low word first).
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const OFFSET_ARG1_LOW: u32 = 16 + 8;

// The terminal ioctls (asm-generic/ioctls.h; the same numbers on x86 and arm).
const TIOCSTI: u32 = 0x5412;
const TIOCLINUX: u32 = 0x541C;

/// The native architecture's audit id and `ioctl` number, and its 32-bit compat one's.
#[cfg(target_arch = "x86_64")]
const ARCHES: [(u32, u32); 2] = [(0xC000_003E, 16), (0x4000_0003, 54)];
#[cfg(target_arch = "aarch64")]
const ARCHES: [(u32, u32); 2] = [(0xC000_00B7, 29), (0x4000_0028, 54)];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ARCHES: [(u32, u32); 2] = [(0, libc::SYS_ioctl as u32), (0, libc::SYS_ioctl as u32)];

/// x32's `ioctl` (`__X32_SYSCALL_BIT | 514`), reported under the x86_64 audit arch.
const X32_IOCTL: u32 = 0x4000_0000 + 514;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt: 0, jf: 0, k }
}

fn jump(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: BPF_JEQ_K,
        jt,
        jf,
        k,
    }
}

/// The filter: for either architecture, an `ioctl` whose request is `TIOCSTI` or `TIOCLINUX`
/// fails with `EPERM`; everything else is allowed.
fn terminal_filter() -> Vec<libc::sock_filter> {
    let [(native, native_ioctl), (compat, compat_ioctl)] = ARCHES;
    let deny = SECCOMP_RET_ERRNO | libc::EPERM as u32;
    vec![
        /* 0 */ stmt(BPF_LD_W_ABS, OFFSET_ARCH),
        /* 1 */ jump(native, 0, 4),
        /* 2 */ stmt(BPF_LD_W_ABS, OFFSET_NR),
        /* 3 */ jump(native_ioctl, 6, 0),
        /* 4 */ jump(X32_IOCTL, 5, 0),
        /* 5 */ stmt(BPF_RET_K, SECCOMP_RET_ALLOW),
        /* 6 */ jump(compat, 0, 7),
        /* 7 */ stmt(BPF_LD_W_ABS, OFFSET_NR),
        /* 8 */ jump(compat_ioctl, 1, 0),
        /* 9 */ stmt(BPF_RET_K, SECCOMP_RET_ALLOW),
        /* 10 */ stmt(BPF_LD_W_ABS, OFFSET_ARG1_LOW),
        /* 11 */ jump(TIOCSTI, 1, 0),
        /* 12 */ jump(TIOCLINUX, 0, 1),
        /* 13 */ stmt(BPF_RET_K, deny),
        /* 14 */ stmt(BPF_RET_K, SECCOMP_RET_ALLOW),
    ]
}

fn install_terminal_filter() -> Result<(), String> {
    if ARCHES[0].0 == 0 {
        return Err("no seccomp filter for this architecture in brute yet".to_owned());
    }
    let filter = terminal_filter();
    let program = libc::sock_fprog {
        len: u16::try_from(filter.len()).map_err(|_| "the seccomp filter is too long".to_owned())?,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: a valid sock_fprog whose instructions outlive the call (the kernel copies them).
    let installed = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &program as *const libc::sock_fprog,
            0,
            0,
        )
    };
    if installed != 0 {
        return Err(format!(
            "cannot install the seccomp filter: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the filter over one syscall as the kernel would (the few opcodes it uses).
    fn run(filter: &[libc::sock_filter], arch: u32, nr: u32, arg1: u64) -> u32 {
        let mut pc = 0;
        let mut acc = 0u32;
        loop {
            let op = filter[pc];
            match op.code {
                BPF_LD_W_ABS => {
                    acc = match op.k {
                        OFFSET_NR => nr,
                        OFFSET_ARCH => arch,
                        OFFSET_ARG1_LOW => arg1 as u32,
                        other => panic!("unexpected load at {other}"),
                    };
                    pc += 1;
                }
                BPF_JEQ_K => pc += 1 + usize::from(if acc == op.k { op.jt } else { op.jf }),
                BPF_RET_K => return op.k,
                other => panic!("unexpected opcode {other:#x}"),
            }
        }
    }

    #[test]
    fn the_filter_refuses_exactly_the_terminal_ioctls() {
        let filter = terminal_filter();
        let deny = SECCOMP_RET_ERRNO | libc::EPERM as u32;
        let [(native, ioctl), (compat, compat_ioctl)] = ARCHES;
        assert_eq!(run(&filter, native, ioctl, u64::from(TIOCSTI)), deny);
        assert_eq!(run(&filter, native, ioctl, u64::from(TIOCLINUX)), deny);
        // The kernel reads the request as 32 bits: high bits set do not get past.
        assert_eq!(
            run(&filter, native, ioctl, 0xFFFF_FFFF_0000_0000 | u64::from(TIOCSTI)),
            deny
        );
        assert_eq!(run(&filter, native, X32_IOCTL, u64::from(TIOCSTI)), deny);
        assert_eq!(run(&filter, compat, compat_ioctl, u64::from(TIOCSTI)), deny);
        // Other ioctls and other syscalls pass.
        assert_eq!(run(&filter, native, ioctl, 0x5401), SECCOMP_RET_ALLOW); // TCGETS
        assert_eq!(run(&filter, native, ioctl, 0x5413), SECCOMP_RET_ALLOW); // TIOCGWINSZ
        assert_eq!(run(&filter, native, 1, u64::from(TIOCSTI)), SECCOMP_RET_ALLOW);
        assert_eq!(run(&filter, compat, 4, u64::from(TIOCSTI)), SECCOMP_RET_ALLOW);
    }
}
