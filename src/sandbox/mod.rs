//! Every process brute starts for the model (`shell`, command tools) is started here, so that
//! it cannot outlive brute and cannot see brute.
//!
//! A command runs under a small init (`brute __brute-sandbox-init -- PROGRAM ARGS…`, see
//! [`init`]) that puts it into a new PID namespace with its own `/proc`:
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

pub mod init;

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The argument that turns the `brute` binary into the sandbox init.
pub const INIT_ARG: &str = "__brute-sandbox-init";

/// The environment variable that forces commands to run without namespaces.
pub const DISABLE_VAR: &str = "BRUTE_NO_SANDBOX";

/// The brute binary that can act as the init, if there is one: brute itself, or (for the test
/// harnesses of this crate) the `brute` beside the test binaries. `None` when disabled.
pub fn init_exe() -> Option<&'static PathBuf> {
    static EXE: OnceLock<Option<PathBuf>> = OnceLock::new();
    EXE.get_or_init(|| {
        if std::env::var_os(DISABLE_VAR).is_some_and(|v| !v.is_empty() && v != "0") {
            return None;
        }
        let exe = std::env::current_exe().ok()?;
        let name = exe.file_name()?.to_string_lossy().into_owned();
        let dir = exe.parent()?;
        let in_deps = dir.file_name().is_some_and(|d| d == "deps");
        if !in_deps && (name == "brute" || name.starts_with("brute ")) {
            // Exec'ing /proc/self/exe works even when the binary was replaced on disk.
            return Some(PathBuf::from("/proc/self/exe"));
        }
        let sibling = if in_deps {
            dir.parent()?.join("brute")
        } else {
            dir.join("brute")
        };
        sibling.is_file().then_some(sibling)
    })
    .as_ref()
}

/// Whether commands get their own PID namespace (the init is available and not disabled).
pub fn isolated() -> bool {
    init_exe().is_some()
}

/// A command that runs `program args…` under the sandbox init when one is available, else
/// directly; either way it dies with brute. Spawn it with [`spawn`].
pub fn command<I, S>(program: &str, args: I) -> tokio::process::Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = match init_exe() {
        Some(exe) => {
            let mut c = tokio::process::Command::new(exe);
            c.arg(INIT_ARG).arg("--").arg(program);
            c
        }
        None => tokio::process::Command::new(program),
    };
    command.args(args);
    // SAFETY: getpid is async-signal-safe and runs before the fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
    // functions (prctl, getppid); it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // brute died between the fork and the prctl: do not start at all.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    command
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

/// Spawns `command` from the spawner thread (see [`spawner`]).
pub async fn spawn(mut command: tokio::process::Command) -> std::io::Result<tokio::process::Child> {
    let handle = tokio::runtime::Handle::current();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _runtime = handle.enter();
        let _ = tx.send(command.spawn());
    });
    let sent = spawner().lock().unwrap_or_else(|e| e.into_inner()).send(job);
    if sent.is_err() {
        return Err(std::io::Error::other("the spawner thread is gone"));
    }
    rx.await
        .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread dropped the request")))
}
