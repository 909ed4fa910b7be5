//! The sandbox init: what `brute __brute-sandbox-init -- PROGRAM ARGS…` runs, before anything
//! else in `main` (single-threaded, no runtime, none of brute's secrets in memory: it is a
//! fresh `exec`).
//!
//! ```text
//! brute ──fork/exec──▶ relay (brute's PID namespace; ignores TERM/HUP/INT/QUIT)
//!                        └─fork─▶ init, PID 1 of a new PID + mount namespace, fresh /proc
//!                                   └─fork/exec─▶ PROGRAM (PID 2)
//! ```
//!
//! - The relay waits for the init and ends the way PROGRAM ended (same exit code, or killed by
//!   the same signal), so the caller sees PROGRAM's status.
//! - The init dies with the relay (`PR_SET_PDEATHSIG`), and the kernel then kills every process
//!   in the namespace. It forwards TERM/HUP/INT/QUIT to all of them, reaps orphans, and exits
//!   when PROGRAM exits (which ends PROGRAM's background children, as a finished `shell` call
//!   always has).
//! - Without the privileges for namespaces (as root they need none; otherwise a user namespace
//!   maps the caller's own ids), PROGRAM is exec'd directly.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;

use super::INIT_ARG;

/// Runs the init when the process was started as one; returns its exit code. `None` for a
/// normal start.
pub fn dispatch() -> Option<u8> {
    let mut args = std::env::args_os();
    let _self = args.next();
    if args.next().as_deref() != Some(std::ffi::OsStr::new(INIT_ARG)) {
        return None;
    }
    let mut rest: Vec<OsString> = args.collect();
    if rest.first().is_some_and(|a| a == "--") {
        rest.remove(0);
    }
    Some(run(&rest))
}

/// Signals the init passes on to everything in its namespace.
const FORWARDED: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT, libc::SIGQUIT];

fn run(argv: &[OsString]) -> u8 {
    let Some(program) = to_cstrings(argv) else {
        eprintln!("brute sandbox: no program, or an argument holds a NUL byte");
        return 127;
    };
    if !enter_namespaces() {
        reset_signals();
        exec(&program);
        return 127;
    }
    let mut fds = [0; 2];
    // SAFETY: a two-int array for pipe2.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        eprintln!("brute sandbox: pipe: {}", std::io::Error::last_os_error());
        return 127;
    }
    let (read_end, write_end) = (fds[0], fds[1]);
    // The relay must outlive a group-wide TERM until the init has passed it on.
    for signal in FORWARDED {
        // SAFETY: setting a disposition to SIG_IGN.
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    }
    // SAFETY: this process is single-threaded (the init runs before anything else in main).
    match unsafe { libc::fork() } {
        -1 => {
            eprintln!("brute sandbox: fork: {}", std::io::Error::last_os_error());
            127
        }
        0 => {
            // SAFETY: closing our copy of the read end.
            unsafe { libc::close(read_end) };
            init(&program, write_end)
        }
        child => {
            // SAFETY: closing our copy of the write end.
            unsafe { libc::close(write_end) };
            relay(child, read_end)
        }
    }
}

fn to_cstrings(argv: &[OsString]) -> Option<Vec<CString>> {
    if argv.is_empty() {
        return None;
    }
    argv.iter().map(|a| CString::new(a.as_bytes()).ok()).collect()
}

/// New PID and mount namespaces for the children of this process: directly as root, else
/// inside a new user namespace that maps our own uid and gid.
fn enter_namespaces() -> bool {
    let flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
    // SAFETY: unshare only changes this process's namespaces.
    if unsafe { libc::unshare(flags) } == 0 {
        return true;
    }
    // SAFETY: as above; getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    if unsafe { libc::unshare(flags | libc::CLONE_NEWUSER) } != 0 {
        return false;
    }
    std::fs::write("/proc/self/setgroups", "deny").is_ok()
        && std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")).is_ok()
        && std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")).is_ok()
}

/// Dispositions a new program must start with: brute's runtime ignores SIGPIPE, and the relay
/// ignores the forwarded signals; `exec` keeps ignored signals ignored.
fn reset_signals() {
    for signal in FORWARDED.into_iter().chain([libc::SIGPIPE]) {
        // SAFETY: restoring the default disposition.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
    // SAFETY: an empty set unblocks everything.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

fn exec(program: &[CString]) {
    let mut argv: Vec<*const libc::c_char> = program.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    // SAFETY: argv is a NULL-terminated array of valid C strings that outlive the call.
    unsafe { libc::execvp(argv[0], argv.as_ptr()) };
    eprintln!(
        "brute sandbox: cannot run {}: {}",
        program[0].to_string_lossy(),
        std::io::Error::last_os_error()
    );
}

extern "C" fn forward(signal: libc::c_int) {
    // SAFETY: kill is async-signal-safe; -1 from a namespace's init reaches every other
    // process in the namespace.
    unsafe { libc::kill(-1, signal) };
}

/// PID 1 of the new namespace: mounts a fresh `/proc`, starts the program, reaps, and reports
/// the program's wait status to the relay through `report`.
fn init(program: &[CString], report: libc::c_int) -> u8 {
    // SAFETY: plain syscalls with valid arguments; the strings are NUL-terminated literals.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
        let none = std::ptr::null::<libc::c_char>();
        let root = c"/".as_ptr();
        if libc::mount(none, root, none, libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()) == 0 {
            libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            );
        }
        for signal in FORWARDED {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = forward as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
    // SAFETY: single-threaded; the child only resets signals and execs.
    let main = unsafe { libc::fork() };
    if main == 0 {
        reset_signals();
        exec(program);
        // SAFETY: leaving the child without running the parent's destructors.
        unsafe { libc::_exit(127) };
    }
    if main < 0 {
        return 127;
    }
    loop {
        let mut status = 0;
        // SAFETY: waiting for any child, with a valid status pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == main {
            let bytes = status.to_ne_bytes();
            // SAFETY: writing four bytes from a live buffer.
            unsafe { libc::write(report, bytes.as_ptr().cast(), bytes.len()) };
            return 0;
        }
        if pid < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 127;
        }
    }
}

/// Waits for the init and ends the way the program did.
fn relay(init: libc::pid_t, report: libc::c_int) -> u8 {
    let mut init_status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let pid = unsafe { libc::waitpid(init, &mut init_status, 0) };
        if pid == init || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    let mut bytes = [0u8; 4];
    // SAFETY: reading at most four bytes into a live buffer.
    let n = unsafe { libc::read(report, bytes.as_mut_ptr().cast(), bytes.len()) };
    // Without a report the init itself was killed: pass on how it ended.
    let status = if n == 4 { i32::from_ne_bytes(bytes) } else { init_status };
    if libc::WIFEXITED(status) {
        return u8::try_from(libc::WEXITSTATUS(status)).unwrap_or(1);
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        reset_signals();
        // SAFETY: ending this process with the program's signal, default disposition.
        unsafe { libc::kill(libc::getpid(), signal) };
        return u8::try_from(128 + signal).unwrap_or(1);
    }
    1
}
