//! Every process brute starts for the model (`shell`, command tools) is started here, so that
//! it cannot outlive brute and cannot see brute.
//!
//! A command runs under a small init (`brute-sandbox-init __brute-sandbox-init/… -- PROGRAM
//! ARGS…`, or brute's own binary as the init; see [`init`] and [`exe`]) that puts it into a new
//! PID namespace with its own `/proc`:
//!
//! - **Nothing outlives brute.** The init holds `PR_SET_PDEATHSIG = SIGKILL` towards brute's
//!   spawner thread, which lives as long as brute; when brute ends — SIGKILL included — the
//!   init dies, and the kernel kills everything in its namespace, daemons that left the
//!   process group included.
//! - **brute is invisible.** Inside the namespace `/proc` shows only the command's own
//!   processes, so `/proc/<brute>/environ` and `/proc/<brute>/mem` (where the API keys live)
//!   cannot be read, even by root.
//!
//! Where namespaces cannot be made (no privileges, no user namespaces) the command runs
//! directly, still with `PR_SET_PDEATHSIG` and with the keys wiped from brute's environment
//! ([`crate::secrets`]). `BRUTE_NO_SANDBOX=1` forces that path.

// The mechanism is Linux's (namespaces, Landlock, PR_SET_PDEATHSIG); other platforms get
// their own module here. Elsewhere `available()` says no, so confined modes refuse to start
// and `full-access` runs commands directly.
pub mod exe;
pub mod git_dirs;
pub mod group;
#[cfg(target_os = "linux")]
pub mod harden;
#[cfg(target_os = "linux")]
pub mod init;
pub mod policy;
pub mod spare;

/// The exit code of the init when a confined policy cannot be enforced (nothing ran).
pub const UNAVAILABLE: u8 = 125;

/// Runs the sandbox init when this process was started as one (see `init`); `None` for a
/// normal start. Call first thing in `main`.
pub fn dispatch_init() -> Option<u8> {
    #[cfg(target_os = "linux")]
    {
        init::dispatch()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The whole of [`INIT_BINARY`]'s `main`: runs the init, or says why not (exit 125, nothing
/// runs): it was started by another build of brute, or by hand.
pub fn run_init_binary() -> u8 {
    #[cfg(target_os = "linux")]
    {
        init::run_binary()
    }
    #[cfg(not(target_os = "linux"))]
    {
        UNAVAILABLE
    }
}

use std::ffi::OsStr;
use std::sync::OnceLock;

pub use policy::{Mode, Policy};

pub use exe::{IN_BRUTE_VAR, INIT_ARG, INIT_BINARY, init_exe};

/// The environment variable that forces commands to run without namespaces.
pub const DISABLE_VAR: &str = "BRUTE_NO_SANDBOX";

/// Whether commands get their own PID namespace (the init is available and not disabled).
pub fn isolated() -> bool {
    init_exe().is_some()
}

/// A command that runs `program args…` unconfined (`full-access`) under the init when one is
/// available, else directly; either way it dies with brute. Spawn it with [`spawn`].
pub fn command<I, S>(program: &str, args: I) -> tokio::process::Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let full = Policy {
        mode: Mode::FullAccess,
        network: true,
        ..Policy::default()
    };
    confined_command(&full, program, args).unwrap_or_else(|_| tokio::process::Command::new(program))
}

/// Why a confined command cannot be started here.
#[derive(Debug, Clone, thiserror::Error)]
#[error("no sandbox is available here ({0}); commands cannot be confined")]
pub struct Unavailable(pub String);

/// A command that runs `program args…` under `policy`. A confined policy needs the init;
/// without it this is an error, never a silent unconfined run.
pub fn confined_command<I, S>(policy: &Policy, program: &str, args: I) -> Result<tokio::process::Command, Unavailable>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = match init_exe() {
        Some(exe) => {
            let mut c = tokio::process::Command::new(exe);
            // The init ties itself to this process (`PR_SET_PDEATHSIG`) first thing, so no
            // `pre_exec` hook is needed and the spawn can use `posix_spawn` (no copy of brute's
            // page tables, whatever its size).
            // SAFETY: getpid cannot fail.
            let parent = unsafe { libc::getpid() };
            c.arg(INIT_ARG)
                .arg("--parent")
                .arg(parent.to_string())
                .args(policy.to_args());
            // Nested repositories' `.git` are as read-only as the project's own.
            if policy.confined() {
                for root in &policy.git_roots {
                    for git in git_dirs::below(root).iter().filter(|g| !policy.read_only.contains(g)) {
                        c.arg("--ro").arg(git);
                    }
                }
            }
            c.arg("--").arg(program);
            c
        }
        None if policy.confined() => {
            return Err(Unavailable(match std::env::var_os(DISABLE_VAR) {
                Some(_) => format!("{DISABLE_VAR} is set"),
                None => "brute's own binary cannot be found to start the sandbox".to_owned(),
            }));
        }
        None => tokio::process::Command::new(program),
    };
    command.args(args);
    Ok(command)
}

/// Says a confined command under `policy` has ended, so what it may have changed about the
/// repositories below its roots is looked at again before the next one starts.
pub fn command_ended(policy: &Policy) {
    if policy.confined() {
        git_dirs::command_ended(&policy.git_roots);
    }
}

/// Calls [`command_ended`] when dropped: hold one while a confined command runs, so an
/// interrupted or abandoned call refreshes what it may have changed too.
pub struct CommandEnded(Policy);

impl CommandEnded {
    pub fn new(policy: Policy) -> Self {
        Self(policy)
    }
}

impl Drop for CommandEnded {
    fn drop(&mut self) {
        command_ended(&self.0);
    }
}

/// Starts [`available`]'s check on a thread, so the few ms its probe process takes overlap
/// start-up instead of delaying the first request; a later call waits for it, not again.
/// `remember_in`: brute's data directory, where a passed probe is remembered (see
/// [`PROBE_FILE`]). Call it only after keys are gone from the environment (the probe
/// inherits it).
pub fn check_in_background(remember_in: Option<std::path::PathBuf>) {
    if let Some(dir) = remember_in {
        let _ = PROBE_DIR.set(dir);
    }
    let _ = std::thread::Builder::new()
        .name("brute-sandbox-check".into())
        .spawn(|| {
            let _ = available();
        });
}

/// Whether confined commands can run here: brute's binary for the init, Landlock in the
/// kernel, namespaces (root, or user namespaces), and once per process a probe that runs
/// `true` confined.
pub fn available() -> Result<(), Unavailable> {
    if cfg!(not(target_os = "linux")) {
        return Err(Unavailable("this platform has no sandbox in brute yet".to_owned()));
    }
    if init_exe().is_none() {
        return Err(Unavailable(match std::env::var_os(DISABLE_VAR) {
            Some(_) => format!("{DISABLE_VAR} is set"),
            None => "brute's own binary cannot be found to start the sandbox".to_owned(),
        }));
    }
    #[cfg(target_os = "linux")]
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute only reports the ABI.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    #[cfg(not(target_os = "linux"))]
    let abi = 0;
    if abi < 1 {
        return Err(Unavailable("the kernel has no Landlock".to_owned()));
    }
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let user_namespaces = std::fs::read_to_string("/proc/sys/user/max_user_namespaces")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .is_some_and(|n| n > 0);
    if !root && !user_namespaces {
        return Err(Unavailable("user namespaces are disabled".to_owned()));
    }
    probe_once()
}

/// Runs `true` under a workspace-write policy once per process (a few milliseconds): where
/// namespaces are restricted by other means (e.g. AppArmor), the cheap checks pass but the init
/// cannot confine anything. A pass is remembered (see [`PROBE_FILE`]), and so is a sealed copy
/// that could not run where brute's own binary could: later starts go straight to brute's own.
fn probe_once() -> Result<(), Unavailable> {
    static RESULT: OnceLock<Result<(), Unavailable>> = OnceLock::new();
    RESULT
        .get_or_init(|| {
            let Some(exe) = init_exe() else {
                return Err(Unavailable("brute's own binary cannot be found".to_owned()));
            };
            let file = PROBE_DIR.get().map(|d| d.join(PROBE_FILE));
            let known = file.as_deref().and_then(remembered_line);
            let key = probe_key(exe);
            if key
                .as_ref()
                .zip(known.as_ref())
                .is_some_and(|(key, known)| known == key.as_bytes())
            {
                return Ok(());
            }
            // Both keys of a copy that could not run: what the copy was made from, and brute
            // (read only when a pass of this copy is not what was remembered).
            let unrunnable = exe::init_source()
                .and(key.as_ref())
                .zip(own_probe_key())
                .map(|(sealed, own)| format!("unrunnable {sealed}{own}"));
            if known
                .as_ref()
                .zip(unrunnable.as_ref())
                .is_some_and(|(known, line)| known == line.as_bytes())
                && exe::demote()
            {
                return Ok(());
            }
            let mut result = probe(exe);
            // A sealed copy that cannot run here leaves brute's own binary as the init.
            if let Err(why) = &result
                && exe::demote()
            {
                tracing::warn!(%why, "the sandbox init beside brute cannot run here; brute runs it itself");
                let Some(own) = init_exe() else {
                    return result;
                };
                result = probe(own);
                if let (Ok(()), Some(file), Some(line)) = (&result, &file, &unrunnable) {
                    let _ = remember_pass(file, line.as_bytes());
                }
                return result;
            }
            if let (Some(key), Some(file)) = (&key, &file) {
                let _ = match &result {
                    Ok(()) => remember_pass(file, key.as_bytes()),
                    Err(_) => std::fs::remove_file(file),
                };
            }
            result
        })
        .clone()
}

/// Where a passed probe is remembered, in the data directory: the probe costs a one-shot run
/// a few milliseconds before its first request, and its answer holds until the machine
/// restarts, brute's binary changes or a namespace setting does (see [`probe_key`]). Should
/// it go stale all the same, confined commands fail at their init; none runs unconfined.
/// After a sealed copy of the init failed where brute's own binary passed, the line says so
/// (`unrunnable`, then both keys), and later starts skip the copy.
const PROBE_FILE: &str = "sandbox-probe";

/// The line in `file`, when it is a regular file (not followed when a link; a FIFO or a device
/// put there never blocks start-up) of at most a few hundred bytes.
fn remembered_line(file: &std::path::Path) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(file)
        .ok()?;
    if !opened.metadata().ok()?.is_file() {
        return None;
    }
    let mut line = Vec::new();
    opened.take(1024).read_to_end(&mut line).ok()?;
    Some(line)
}

/// Writes `line` to `file` whole or not at all (a private temp file renamed over it; not
/// synced: a lost line only means one more probe).
fn remember_pass(file: &std::path::Path, line: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = file.parent().unwrap_or(std::path::Path::new("."));
    let mut temp = tempfile::Builder::new().prefix(".brute-").tempfile_in(dir)?;
    temp.write_all(line)?;
    temp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

/// The directory [`PROBE_FILE`] is kept in, when the caller named one.
static PROBE_DIR: OnceLock<std::path::PathBuf> = OnceLock::new();

/// What a passed probe of `exe` depends on (see [`key_for`]); for a sealed copy, the file it
/// was made from is the binary.
fn probe_key(exe: &std::path::Path) -> Option<String> {
    match exe::init_source() {
        Some(source) => key_for(source),
        None => key_for(&std::fs::metadata(exe).ok()?),
    }
}

/// [`probe_key`] for brute's own binary as the init, whichever init this process uses now.
fn own_probe_key() -> Option<String> {
    key_for(&std::fs::metadata(exe::own_init()?).ok()?)
}

/// What a passed probe depends on, in one line: this boot of the kernel, the user, the init's
/// binary (device, inode, size, mtime) and the kernel's settings for user namespaces.
fn key_for(binary: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let settings: Vec<String> = [
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    ]
    .iter()
    .map(|knob| std::fs::read_to_string(knob).unwrap_or_default().trim().to_owned())
    .collect();
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    Some(format!(
        "brute-sandbox-probe-1 boot={} uid={uid} exe={}:{}:{}:{}.{} userns={}\n",
        boot.trim(),
        binary.dev(),
        binary.ino(),
        binary.len(),
        binary.mtime(),
        binary.mtime_nsec(),
        settings.join(",")
    ))
}

/// Runs `true` confined by `exe`'s init under a workspace-write policy.
fn probe(exe: &std::path::Path) -> Result<(), Unavailable> {
    let dir = std::env::temp_dir();
    let policy = Policy::for_project(Mode::WorkspaceWrite, &dir, &[], &[]);
    let output = std::process::Command::new(exe)
        .arg(INIT_ARG)
        .args(policy.to_args())
        .args(["--", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| Unavailable(e.to_string()))?;
    if output.status.success() {
        return Ok(());
    }
    let why = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    Err(Unavailable(if why.is_empty() {
        "the sandbox check failed".to_owned()
    } else {
        why
    }))
}

type Job = Box<dyn FnOnce() + Send>;

/// The thread every child is forked from. `PR_SET_PDEATHSIG` fires when the *thread* that
/// forked the child ends, so children must not be forked from tokio's threads, which come and
/// go; this one lives as long as brute.
fn spawner() -> &'static std::sync::Mutex<std::sync::mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<std::sync::Mutex<std::sync::mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let started = std::thread::Builder::new().name("brute-spawner".into()).spawn(move || {
            for job in rx {
                job();
            }
        });
        if let Err(e) = started {
            tracing::error!("cannot start the spawner thread: {e}");
        }
        std::sync::Mutex::new(tx)
    })
}

/// Runs `job` on the spawner thread, after the jobs sent before it. False when the thread is
/// gone.
fn on_spawner(job: Job) -> bool {
    spawner().lock().unwrap_or_else(|e| e.into_inner()).send(job).is_ok()
}

/// Runs `f` on the spawner thread (inside this runtime) and returns what it returns.
async fn on_spawner_for<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> std::io::Result<T> {
    let handle = tokio::runtime::Handle::current();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _runtime = handle.enter();
        let _ = tx.send(f());
    });
    if !on_spawner(job) {
        return Err(std::io::Error::other("the spawner thread is gone"));
    }
    rx.await
        .map_err(|_| std::io::Error::other("the spawner thread dropped the request"))
}

/// Spawns `command` from the spawner thread (see [`spawner`]).
pub async fn spawn(mut command: tokio::process::Command) -> std::io::Result<tokio::process::Child> {
    on_spawner_for(move || command.spawn()).await?
}

/// [`spawn`] for a command whose stdin, stdout and stderr are piped (the `shell` tool's):
/// started in the session's [`spare`] init when one of its shape is ready, else under a fresh
/// init. `stdin_null`: the program reads nothing (the caller then gets no stdin); else what the
/// caller writes to the child's stdin reaches it.
pub async fn spawn_spared(
    mut command: tokio::process::Command,
    stdin_null: bool,
) -> std::io::Result<tokio::process::Child> {
    let request = spare::Request::for_command(&command, stdin_null);
    let Some(request) = request.filter(|_| spare::enabled()) else {
        return spawn(command).await;
    };
    let shape = spare::Shape::of(&request.policy().0);
    // A spare already made is taken here: no new process, so no trip to the spawner thread.
    // Else the spawner takes one whose making is queued there before this, or starts a fresh
    // init.
    if let Some(child) = spare::take(shape) {
        return spare::hand_over(child, command, &request).await.map(|(child, _)| child);
    }
    let started = on_spawner_for(move || match spare::take(shape) {
        Some(child) => Ok((child, Some(command))),
        None => command.spawn().map(|child| (child, None)),
    });
    match started.await?? {
        (child, None) => Ok(child),
        (child, Some(command)) => spare::hand_over(child, command, &request).await.map(|(child, _)| child),
    }
}
