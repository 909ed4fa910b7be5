//! The sandbox init: what `brute-sandbox-init __brute-sandbox-init/… -- PROGRAM ARGS…` runs
//! (or brute's own binary, given the same arguments; see [`super::exe`]), before anything else
//! in `main` (single-threaded, no runtime, none of brute's secrets in memory: it is a fresh
//! `exec`).
//!
//! ```text
//! brute ──fork/exec──▶ relay (brute's PID namespace; ignores TERM/HUP/INT/QUIT)
//!                        └─fork─▶ init, PID 1 of a new PID + mount namespace, fresh /proc
//!                                   └─fork/exec─▶ PROGRAM (PID 2)
//! ```
//!
//! - The relay waits for the init and ends the way PROGRAM ended (same exit code, or killed by
//!   the same signal), so the caller sees PROGRAM's status.
//! - Started with `--spare` and a policy instead of a program, the init makes that policy's
//!   namespaces, `/proc`, loopback and ptys, then reads PROGRAM, its policy, directory and
//!   environment from stdin ([`super::spare`]) and goes on from there as a fresh init does.
//! - The init dies with the relay (`PR_SET_PDEATHSIG`), and the kernel then kills every process
//!   in the namespace. It forwards TERM/HUP/INT/QUIT to all of them, reaps orphans, and exits
//!   when PROGRAM exits (which ends PROGRAM's background children, as a finished `shell` call
//!   always has).
//! - Without the privileges for namespaces (as root they need none; otherwise a user namespace
//!   maps the caller's own ids), PROGRAM is exec'd directly — but only under `full-access`: a
//!   confined policy that cannot be enforced exits with [`UNAVAILABLE`] and runs nothing.
//! - PROGRAM starts in a session of its own (`setsid`): it has no controlling terminal, so it
//!   cannot open `/dev/tty` and push keystrokes into the person's terminal (or brute's own
//!   dialogs) with `TIOCSTI` — the flaw bubblewrap fixed as CVE-2017-5226.
//! - A confined policy ([`Policy`]) is enforced in the init before PROGRAM starts, and so holds
//!   for everything PROGRAM starts: Landlock lets it write only the policy's trees (and a few
//!   devices; never `mknod` a device), every `.git`, `.brute/` and brute's own dirs are
//!   bind-mounted read-only, new UTS and IPC namespaces keep the host's hostname and SysV IPC out
//!   of reach, without network it lives in a network namespace of its own whose loopback reaches
//!   nothing outside, and then ([`super::harden`]) every capability is dropped (root's too),
//!   `no_new_privs` is set and a seccomp filter refuses `TIOCSTI` and `TIOCLINUX`.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;

use super::INIT_ARG;
use super::policy::Policy;
use super::spare::{Request, Shape};

pub use super::UNAVAILABLE;

/// Runs the init when the process was started as one; returns its exit code. `None` for a
/// normal start.
pub fn dispatch() -> Option<u8> {
    let mut args = std::env::args_os();
    let _self = args.next();
    if args.next().as_deref() != Some(std::ffi::OsStr::new(INIT_ARG)) {
        return None;
    }
    let mut rest: Vec<OsString> = args.collect();
    if rest.first().is_some_and(|a| a == "--parent") && rest.len() >= 2 {
        let parent: Option<libc::pid_t> = rest[1].to_str().and_then(|p| p.parse().ok());
        rest.drain(..2);
        // Die with brute: SIGKILL when the thread that started us ends. If brute is already
        // gone (the parent changed before this line), run nothing.
        // SAFETY: prctl and getppid have no memory effects.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
            if parent.is_none_or(|p| libc::getppid() != p) {
                return Some(UNAVAILABLE);
            }
        }
    }
    if rest.first().is_some_and(|a| a == super::spare::SPARE_ARG) {
        let (shape, _) = Policy::from_args(&rest[1..]);
        return Some(start(&shape, Begin::OnRequest));
    }
    let (policy, program) = Policy::from_args(&rest);
    let Some(program) = to_cstrings(program) else {
        eprintln!("brute sandbox: no program, or an argument holds a NUL byte");
        return Some(127);
    };
    Some(start(&policy, Begin::Now(program)))
}

/// [`super::INIT_BINARY`]'s `main`: the init, or why not (exit 125, nothing runs): it was
/// started by another build of brute, or by hand.
pub fn run_binary() -> u8 {
    if let Some(code) = dispatch() {
        return code;
    }
    let first = std::env::args_os().nth(1);
    let first = first
        .as_deref()
        .map(std::ffi::OsStr::to_string_lossy)
        .unwrap_or_default();
    let binary = super::INIT_BINARY;
    if first.starts_with(super::exe::INIT_ARG_STEM) {
        eprintln!(
            "brute sandbox: {binary} is from another build of brute than the one that started it \
             (it takes {INIT_ARG}, it was given {first}); install both binaries again. The command did not run."
        );
    } else {
        eprintln!("{binary} is brute's sandbox init; brute starts it, one per command.");
    }
    UNAVAILABLE
}

/// When the program is known: at once (a fresh init), or from a [`Request`] on stdin (a spare,
/// see [`super::spare`]).
enum Begin {
    Now(Vec<CString>),
    OnRequest,
}

/// A spare's request, applied: the policy and program it names, with the process's directory,
/// environment and stdin set for the program. `policy` is the spare's, whose shape the
/// request must have. `Err`: the exit code (nothing runs).
fn take_request(shape: &Policy) -> Result<(Policy, Vec<CString>), u8> {
    // SAFETY: fd 0 is the spare's stdin pipe; ManuallyDrop leaves it open.
    let input = std::mem::ManuallyDrop::new(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(0) });
    let request = match Request::read(&*input) {
        Ok(request) => request,
        // Discarded unused, or brute went away: nothing to run, nothing to say.
        Err(super::spare::BadRequest::Ended) => return Err(0),
        Err(error) => {
            eprintln!("brute sandbox: {error}");
            return Err(127);
        }
    };
    let (policy, program) = request.policy();
    if Shape::of(&policy) != Shape::of(shape) {
        eprintln!("brute sandbox: the command's policy does not fit this init; the command did not run");
        return Err(UNAVAILABLE);
    }
    let Some(program) = to_cstrings(program) else {
        eprintln!("brute sandbox: no program, or an argument holds a NUL byte");
        return Err(127);
    };
    if let Err(error) = std::env::set_current_dir(&request.cwd) {
        eprintln!("brute sandbox: cannot enter {}: {error}", request.cwd.display());
        return Err(127);
    }
    // SAFETY: single-threaded (the init runs before anything else in main); the strings are
    // NUL-terminated copies that outlive each call (setenv copies them).
    unsafe {
        libc::clearenv();
        for (key, value) in &request.env {
            if let (Ok(key), Ok(value)) = (CString::new(key.as_bytes()), CString::new(value.as_bytes())) {
                libc::setenv(key.as_ptr(), value.as_ptr(), 1);
            }
        }
    }
    if request.stdin_null && !stdin_from_null() {
        eprintln!(
            "brute sandbox: cannot open /dev/null: {}",
            std::io::Error::last_os_error()
        );
        return Err(127);
    }
    Ok((policy, program))
}

/// Puts `/dev/null` on fd 0.
fn stdin_from_null() -> bool {
    // SAFETY: opening a device and moving it onto fd 0; the temporary fd is closed.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null < 0 {
            return false;
        }
        let moved = null == 0 || libc::dup2(null, 0) == 0;
        if null != 0 {
            libc::close(null);
        }
        moved
    }
}

/// Signals the init passes on to everything in its namespace.
const FORWARDED: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT, libc::SIGQUIT];

/// Makes the namespaces and forks the init (PID 1 of them); this process stays as the relay.
/// `policy`: the command's, or for a spare the one whose shape its namespaces take.
fn start(policy: &Policy, begin: Begin) -> u8 {
    if !enter_namespaces(!policy.network, policy.confined()) {
        // Where no namespace can be made, a spare ends as a fresh init would: a confined
        // command does not run, an unconfined one runs directly.
        let (policy, program) = match begin {
            Begin::Now(program) => (policy.clone(), program),
            Begin::OnRequest => match take_request(policy) {
                Ok(taken) => taken,
                Err(code) => return code,
            },
        };
        if policy.confined() {
            eprintln!("brute sandbox: cannot create namespaces here; the command did not run");
            return UNAVAILABLE;
        }
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
            init(policy, begin, write_end)
        }
        child => {
            // SAFETY: closing our copy of the write end.
            unsafe { libc::close(write_end) };
            // A spare's request pipe is the init's alone: should the init die first, brute's
            // write fails and a fresh init takes the command.
            if matches!(begin, Begin::OnRequest) && !stdin_from_null() {
                return 127;
            }
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

/// New PID and mount namespaces (and a network one, `isolate_network`; UTS and IPC ones when
/// `confined`) for the children of this process: directly as root, else inside a new user
/// namespace that maps our own uid and gid.
fn enter_namespaces(isolate_network: bool, confined: bool) -> bool {
    let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
    if isolate_network {
        flags |= libc::CLONE_NEWNET;
    }
    if confined {
        flags |= libc::CLONE_NEWUTS | libc::CLONE_NEWIPC;
    }
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

/// PID 1 of the new namespace: mounts a fresh `/proc`, isolates what does not depend on the
/// command (loopback, ptys), waits for the request when a spare, enforces the policy, starts
/// the program, reaps, and reports the program's wait status to the relay through `report`.
fn init(policy: &Policy, begin: Begin, report: libc::c_int) -> u8 {
    // SAFETY: plain syscalls with valid arguments; the strings are NUL-terminated literals.
    let private = unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
        let none = std::ptr::null::<libc::c_char>();
        let root = c"/".as_ptr();
        let private = libc::mount(none, root, none, libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()) == 0;
        if private {
            libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            );
        }
        private
    };
    // No mount of a confined command's may reach the host's namespace.
    if policy.confined() && !private {
        eprintln!("brute sandbox: cannot make mounts private; the command did not run");
        return UNAVAILABLE;
    }
    let own_ptys = policy.confined() && isolate(policy);
    let (policy, program) = match begin {
        Begin::Now(program) => (policy.clone(), program),
        Begin::OnRequest => match take_request(policy) {
            Ok(taken) => taken,
            Err(code) => return code,
        },
    };
    if policy.confined()
        && let Err(problem) = confine(&policy, own_ptys)
            .and_then(|()| reenter_working_dir())
            .and_then(|()| super::harden::drop_privileges())
    {
        eprintln!("brute sandbox: {problem}; the command did not run");
        return UNAVAILABLE;
    }
    // SAFETY: installing signal handlers with a plain extern "C" function.
    unsafe {
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
        // A session of its own: no controlling terminal (brute's, or the person's shell's).
        // SAFETY: setsid has no memory effects; the child is not a group leader, so it cannot fail.
        unsafe { libc::setsid() };
        exec(&program);
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

/// Devices every command may write (output sinks, never disks or terminals).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/shm",
    "/dev/random",
    "/dev/urandom",
];

/// What a confined command gets whatever it is: without network, a loopback of its own; a
/// devpts instance of its own. Returns whether the ptys are its own.
fn isolate(policy: &Policy) -> bool {
    if !policy.network {
        loopback_up();
    }
    private_ptys()
}

/// Enforces a confined policy on this process (and so on everything it starts): read-only bind
/// mounts for `.git`/`.brute`, the local services' sockets hidden (without network; looked for
/// now, not when a spare started), then Landlock. Any part that cannot be enforced is an
/// error: a command never runs less confined than its policy says. The mounts are private
/// (checked by the caller).
fn confine(policy: &Policy, own_ptys: bool) -> Result<(), String> {
    for path in policy.read_only.iter().filter(|p| p.exists()) {
        bind_read_only(path).map_err(|e| format!("cannot make {} read-only: {e}", path.display()))?;
    }
    if !policy.network {
        hide_local_services();
    }
    landlock(policy, own_ptys)
}

/// Enters the working directory again by its path, through the mounts just made: a directory
/// entered before them (a command started in `.git`, or in the runtime dir now hidden) would
/// otherwise keep writing below the read-only mount. Where the path no longer leads anywhere,
/// the command does not run.
fn reenter_working_dir() -> Result<(), String> {
    let dir = std::env::current_dir().map_err(|e| format!("cannot tell the working directory: {e}"))?;
    std::env::set_current_dir(&dir).map_err(|e| format!("cannot enter {} again after confining it: {e}", dir.display()))
}

/// A devpts instance of the command's own over `/dev/pts` (and its `ptmx` over `/dev/ptmx`):
/// the person's terminals and brute's own are not in it, so a command can neither read their
/// keystrokes nor write into them. Without it (an old kernel) a command gets no ptys at all.
fn private_ptys() -> bool {
    // SAFETY: valid NUL-terminated strings; a new devpts instance, then a bind of its ptmx.
    unsafe {
        let mounted = libc::mount(
            c"devpts".as_ptr(),
            c"/dev/pts".as_ptr(),
            c"devpts".as_ptr(),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            c"newinstance,ptmxmode=0666,mode=0620".as_ptr().cast(),
        ) == 0;
        mounted
            && libc::mount(
                c"/dev/pts/ptmx".as_ptr(),
                c"/dev/ptmx".as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            ) == 0
    }
}

/// Local services reachable through Unix sockets with a path would let a command leave the
/// sandbox (start a process through systemd or Docker, or a terminal multiplexer). The user's
/// runtime directory and the container daemons' sockets are hidden in the command's mount
/// namespace; sockets elsewhere (e.g. a tmux server's under /tmp) are not (see docs/safety.md).
fn hide_local_services() {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let runtime = format!("/run/user/{uid}");
    for dir in [runtime.as_str(), "/run/dbus", "/run/containerd", "/run/podman"] {
        if std::path::Path::new(dir).is_dir()
            && let Ok(c) = CString::new(dir)
        {
            // SAFETY: valid NUL-terminated strings; an empty read-only tmpfs over the directory.
            unsafe {
                libc::mount(
                    c"tmpfs".as_ptr(),
                    c.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    c"size=4k".as_ptr().cast(),
                );
            }
        }
    }
    for socket in ["/var/run/docker.sock", "/run/docker.sock"] {
        if std::path::Path::new(socket).exists()
            && let Ok(c) = CString::new(socket)
        {
            // SAFETY: valid NUL-terminated strings; /dev/null bound over the socket.
            unsafe {
                libc::mount(
                    c"/dev/null".as_ptr(),
                    c.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                );
            }
        }
    }
}

fn bind_read_only(path: &std::path::Path) -> std::io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let none = std::ptr::null::<libc::c_char>();
    // SAFETY: valid NUL-terminated paths; a bind mount onto itself, then a read-only remount.
    unsafe {
        if libc::mount(
            c.as_ptr(),
            c.as_ptr(),
            none,
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        let flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_REC;
        if libc::mount(none, c.as_ptr(), none, flags, std::ptr::null()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Brings up `lo` in the new network namespace, so a command's own local servers work (its
/// loopback is not the host's: nothing outside is reachable). Best effort.
fn loopback_up() {
    // SAFETY: an ifreq for "lo" on a throwaway datagram socket; ioctls read and write it only.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return;
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut request) == 0 {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(fd, libc::SIOCSIFFLAGS, &request);
        }
        libc::close(fd);
    }
}

/// Devices whose ioctls a command needs (its own pseudo-terminals); `/dev/tty` is not one:
/// without a controlling terminal it cannot be opened, and its ioctls are what `TIOCSTI` abuses.
const IOCTL_DEVICES: &[&str] = &["/dev/ptmx", "/dev/pts"];

/// Landlock: read everywhere (or only the policy's `readable` trees and the base set), write
/// only the policy's trees and the devices above. Making device nodes (`mknod` of a block or
/// character device) is granted nowhere, and where the kernel has the right (ABI 5) device
/// ioctls only on a command's own pseudo-terminals.
fn landlock(policy: &Policy, own_ptys: bool) -> Result<(), String> {
    use landlock::{
        ABI, Access, AccessFs, BitFlags, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, path_beneath_rules,
    };
    let abi = ABI::V5;
    let fail = |e: &dyn std::fmt::Display| format!("cannot set up Landlock: {e}");
    let never: BitFlags<AccessFs> = AccessFs::MakeBlock | AccessFs::MakeChar;
    let write = AccessFs::from_all(abi) & !never & !AccessFs::IoctlDev;
    // The writable roots are opened without following a link: a root a command swapped for a
    // link (a project under /tmp renamed, a link to the home directory in its place) stops the
    // next command instead of granting the link's target.
    let mut roots = Vec::new();
    for root in policy.writable.iter().filter(|p| p.exists()) {
        let fd = rustix::fs::openat2(
            rustix::fs::CWD,
            root.as_path(),
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
            rustix::fs::ResolveFlags::NO_SYMLINKS | rustix::fs::ResolveFlags::NO_MAGICLINKS,
        )
        .map_err(|e| {
            format!(
                "the writable root {} cannot be opened without following a link ({e})",
                root.display()
            )
        })?;
        roots.push(landlock::PathBeneath::new(fd, write));
    }
    let trees: Vec<&std::path::Path> = DEVICES.iter().map(std::path::Path::new).collect();
    let ioctl: Vec<&std::path::Path> = IOCTL_DEVICES
        .iter()
        .map(std::path::Path::new)
        .filter(|p| own_ptys && p.exists())
        .collect();
    // Read everywhere, or (a skill script's policy) only the base set and the granted trees.
    let readable: Vec<&std::path::Path> = match &policy.readable {
        None => vec![std::path::Path::new("/")],
        Some(granted) => super::policy::BASE_READ
            .iter()
            .map(std::path::Path::new)
            .chain(granted.iter().map(|p| p.as_path()))
            .filter(|p| p.exists())
            .collect(),
    };
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| fail(&e))?
        .create()
        .map_err(|e| fail(&e))?
        .add_rules(path_beneath_rules(readable, AccessFs::from_read(abi)))
        .map_err(|e| fail(&e))?
        .add_rules(roots.into_iter().map(Ok::<_, landlock::RulesetError>))
        .map_err(|e| fail(&e))?
        .add_rules(path_beneath_rules(trees, write))
        .map_err(|e| fail(&e))?
        .add_rules(path_beneath_rules(ioctl, write | AccessFs::IoctlDev))
        .map_err(|e| fail(&e))?
        .restrict_self()
        .map_err(|e| fail(&e))?;
    match status.ruleset {
        RulesetStatus::NotEnforced => Err("this kernel does not enforce Landlock".to_owned()),
        RulesetStatus::PartiallyEnforced | RulesetStatus::FullyEnforced => Ok(()),
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
