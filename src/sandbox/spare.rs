//! A spare init: the costly half of a command's sandbox made ahead, while the model answers.
//!
//! Starting a confined command costs a few milliseconds before the program itself runs: brute's
//! binary is started again as the init, and the init makes its namespaces (a network namespace
//! is the dearest), mounts a fresh `/proc`, brings up its loopback and mounts its own ptys. None
//! of that depends on the command. So when a model request leaves with a command tool offered,
//! brute starts one init of the session's *shape* ([`Shape`]: confined or not, network or not)
//! that does all of it and then waits on its stdin. The next command of that shape is sent to
//! it as a [`Request`] (the init's usual arguments, working directory, environment) and
//! everything that does depend on the command happens then, exactly as in a fresh init: the
//! read-only mounts of `.git`, `.brute/` and brute's dirs (the nested `.git` list as of now),
//! Landlock over the writable roots opened now, the dropped privileges and the seccomp filter.
//!
//! - A spare is used once, and only while young ([`MAX_AGE`]): its mount namespace is a copy
//!   of the host's from when it started.
//! - Nothing of the spare's reaches a command that did not go through it: its stdin pipe is the
//!   only channel, and only brute holds the writing end.
//! - When a spare cannot take the request (it died, or its shape is not the command's), the
//!   command starts under a fresh init, as before: a spare only ever saves time.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::policy::Policy;

/// How long a spare may wait for its command. A model that takes longer to answer gets a fresh
/// init (a few ms against its seconds); a spare's view of the host's mounts is never older.
pub const MAX_AGE: Duration = Duration::from_secs(30);

/// The argument (after `--parent PID`) that makes the init a spare.
pub const SPARE_ARG: &str = "--spare";

/// What a spare's namespaces fit: the parts of a policy the init acts on before it knows the
/// command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Confined: UTS and IPC namespaces, private ptys.
    pub confined: bool,
    /// A network namespace with only its own loopback.
    pub isolate_network: bool,
}

impl Shape {
    pub fn of(policy: &Policy) -> Self {
        Self {
            confined: policy.confined(),
            isolate_network: !policy.network,
        }
    }
}

/// A command for a spare: the arguments a fresh init gets after `--parent PID` (the policy,
/// `--`, the program and its arguments), the working directory, the whole environment, and
/// whether the program's stdin is empty (else it reads what follows the request on the pipe).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    pub stdin_null: bool,
}

/// The most a request may take on the pipe (an environment and arguments far past `ARG_MAX`).
const MAX_REQUEST: usize = 64 << 20;
const MAGIC: &[u8] = b"brute-spare-1\0";

/// Why a request could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BadRequest {
    #[error("the pipe ended before a whole request (brute went away)")]
    Ended,
    #[error("the request is not one brute wrote")]
    Malformed,
    #[error("reading the request: {0}")]
    Io(#[from] std::io::Error),
}

impl Request {
    /// The bytes written to the spare's stdin: a length, then the fields.
    pub fn encode(&self) -> Vec<u8> {
        fn field(out: &mut Vec<u8>, bytes: &[u8]) {
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        let mut body = MAGIC.to_vec();
        field(&mut body, self.cwd.as_os_str().as_bytes());
        body.push(u8::from(self.stdin_null));
        body.extend_from_slice(&(self.env.len() as u32).to_le_bytes());
        for (key, value) in &self.env {
            field(&mut body, key.as_bytes());
            field(&mut body, value.as_bytes());
        }
        body.extend_from_slice(&(self.args.len() as u32).to_le_bytes());
        for arg in &self.args {
            field(&mut body, arg.as_bytes());
        }
        let mut out = (body.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&body);
        out
    }

    /// Reads exactly one request from `input` (nothing past it: what follows is the program's
    /// stdin).
    pub fn read(mut input: impl std::io::Read) -> Result<Self, BadRequest> {
        let mut len = [0u8; 4];
        read_all(&mut input, &mut len)?;
        let len = u32::from_le_bytes(len) as usize;
        if len > MAX_REQUEST {
            return Err(BadRequest::Malformed);
        }
        let mut body = vec![0u8; len];
        read_all(&mut input, &mut body)?;
        Self::decode(&body).ok_or(BadRequest::Malformed)
    }

    fn decode(body: &[u8]) -> Option<Self> {
        let mut at = Fields(body.strip_prefix(MAGIC)?);
        let cwd = PathBuf::from(at.field()?);
        let stdin_null = match at.take(1)? {
            [0] => false,
            [1] => true,
            _ => return None,
        };
        let envs = at.count()?;
        let mut env = Vec::with_capacity(envs.min(4096));
        for _ in 0..envs {
            env.push((at.field()?, at.field()?));
        }
        let n = at.count()?;
        let mut args = Vec::with_capacity(n.min(4096));
        for _ in 0..n {
            args.push(at.field()?);
        }
        at.0.is_empty().then_some(Self {
            args,
            cwd,
            env,
            stdin_null,
        })
    }

    /// The request that runs `command` (a fresh init's command, from
    /// [`super::confined_command`]) in a spare: its arguments after `--parent PID`, its
    /// directory (else brute's), and brute's environment with the command's changes.
    pub fn for_command(command: &tokio::process::Command, stdin_null: bool) -> Option<Self> {
        let std = command.as_std();
        let args: Vec<OsString> = std.get_args().map(OsString::from).collect();
        let args = match args.as_slice() {
            [init, parent, _pid, rest @ ..] if init == super::INIT_ARG && parent == "--parent" => rest.to_vec(),
            _ => return None,
        };
        let cwd = match std.get_current_dir() {
            Some(dir) => dir.to_path_buf(),
            None => std::env::current_dir().ok()?,
        };
        let mut env: std::collections::BTreeMap<OsString, OsString> = std::env::vars_os().collect();
        for (key, value) in std.get_envs() {
            match value {
                Some(value) => env.insert(key.to_owned(), value.to_owned()),
                None => env.remove(key),
            };
        }
        Some(Self {
            args,
            cwd,
            env: env.into_iter().collect(),
            stdin_null,
        })
    }

    /// The policy and program the request names.
    pub fn policy(&self) -> (Policy, &[OsString]) {
        Policy::from_args(&self.args)
    }
}

/// What is left of a request's body to decode.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.0.split_at_checked(n)?;
        self.0 = tail;
        Some(head)
    }

    fn count(&mut self) -> Option<usize> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize)
    }

    fn field(&mut self) -> Option<OsString> {
        let n = self.count()?;
        Some(OsString::from_vec(self.take(n)?.to_vec()))
    }
}

/// `read_exact`, with a pipe closed before the first byte told apart.
fn read_all(input: &mut impl std::io::Read, buf: &mut [u8]) -> Result<(), BadRequest> {
    input.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => BadRequest::Ended,
        _ => BadRequest::Io(e),
    })
}

/// A spare init, started and waiting for its command.
pub struct Spare {
    shape: Shape,
    child: tokio::process::Child,
    made: Instant,
}

impl Spare {
    /// Starts a spare for commands of `policy`'s shape, its stdio piped as
    /// [`super::spawn_spared`]'s commands' are, with `scrub` removed from its environment. On
    /// the spawner thread inside a runtime.
    fn start_here(exe: &std::path::Path, policy: &Policy, scrub: &[String]) -> std::io::Result<Self> {
        let mut command = tokio::process::Command::new(exe);
        // SAFETY: getpid cannot fail.
        let parent = unsafe { libc::getpid() };
        command
            .arg(super::INIT_ARG)
            .arg("--parent")
            .arg(parent.to_string())
            .arg(SPARE_ARG)
            .args(policy.to_args())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        for var in scrub {
            command.env_remove(var);
        }
        Ok(Self {
            shape: Shape::of(policy),
            child: command.spawn()?,
            made: Instant::now(),
        })
    }

    /// Starts a spare of `policy`'s shape that the caller holds (the session's own is made by
    /// [`prepare`]).
    pub async fn start(policy: &Policy, scrub: &[&str]) -> std::io::Result<Self> {
        let exe = super::init_exe().ok_or_else(|| std::io::Error::other("no init here"))?;
        let policy = policy.clone();
        let scrub: Vec<String> = scrub.iter().map(|v| (*v).to_owned()).collect();
        super::on_spawner_for(move || Self::start_here(exe, &policy, &scrub)).await?
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The spare's process (its relay), for a caller that talks to it itself.
    pub fn into_child(self) -> tokio::process::Child {
        self.child
    }

    /// Whether the spare can still take a command of `shape`.
    fn fits(&mut self, shape: Shape) -> bool {
        self.shape == shape && self.made.elapsed() < MAX_AGE && matches!(self.child.try_wait(), Ok(None))
    }
}

/// Runs `command` (a fresh init's, from [`super::confined_command`], its stdio piped) in
/// `spare` when it fits the command's shape, else under a fresh init as [`super::spawn`] would.
/// Returns the child and whether the spare took the command.
pub async fn run_in(
    mut spare: Spare,
    command: tokio::process::Command,
    stdin_null: bool,
) -> std::io::Result<(tokio::process::Child, bool)> {
    let request = Request::for_command(&command, stdin_null);
    match request {
        Some(request) if spare.fits(Shape::of(&request.policy().0)) => hand_over(spare.child, command, &request).await,
        _ => Ok((super::spawn(command).await?, false)),
    }
}

/// Sends `request` (`command`'s) to the spare process `child`; should the spare be gone (its
/// pipe closed: it ran nothing), `command` starts under a fresh init instead. Returns the
/// child and whether the spare took it.
pub async fn hand_over(
    mut child: tokio::process::Child,
    command: tokio::process::Command,
    request: &Request,
) -> std::io::Result<(tokio::process::Child, bool)> {
    use tokio::io::AsyncWriteExt;
    let mut stdin = child.stdin.take();
    let sent = match stdin.as_mut() {
        Some(pipe) => pipe.write_all(&request.encode()).await.is_ok(),
        None => false,
    };
    if !sent {
        tracing::debug!("the spare init did not take the command; it starts under a fresh one");
        drop(child);
        return Ok((super::spawn(command).await?, false));
    }
    tracing::debug!("the command starts in a spare init");
    TAKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if !request.stdin_null {
        child.stdin = stdin;
    }
    Ok((child, true))
}

/// The session's spare, if one is ready. Made on the spawner thread, in order, so a command
/// that looks for it there after a [`prepare`] finds it; a command may take a ready one from
/// any thread.
static SPARE: Mutex<Option<Spare>> = Mutex::new(None);

/// How many commands started in a spare.
static TAKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Whether spares are made: on, unless `BRUTE_NO_SPARE_INIT` is set (to compare, or where an
/// idle process per session is unwelcome).
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(DISABLE_VAR).is_none_or(|v| v.is_empty() || v == "0"))
}

/// The environment variable that turns spares off.
pub const DISABLE_VAR: &str = "BRUTE_NO_SPARE_INIT";

/// Makes a spare for the next command unless one of its shape is ready (and has the nested
/// repositories its init will make read-only found: [`super::git_dirs::prefetch`]): `policy`
/// says under which policy that command would run (it may wait, e.g. for the sandbox check;
/// `None`: no spare), `scrub` are the variables kept out of the spare's environment (brute's
/// keys).
/// Returns at once: the work is done on the spawner thread, before any command spawned after
/// this call. Nothing without the init, or outside a tokio runtime.
pub fn prepare(policy: impl FnOnce() -> Option<Policy> + Send + 'static, scrub: &[&str]) {
    let Some(exe) = super::init_exe() else {
        return;
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let scrub: Vec<String> = scrub.iter().map(|v| (*v).to_owned()).collect();
    super::on_spawner(Box::new(move || {
        let _runtime = runtime.enter();
        let Some(policy) = policy() else {
            return;
        };
        // The nested repositories the command's init makes read-only, found beside the spare
        // (on a thread of their own) rather than by the command.
        if policy.confined() {
            super::git_dirs::prefetch(&policy.git_roots);
        }
        if !enabled() {
            return;
        }
        let mut slot = SPARE.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_mut().is_some_and(|spare| spare.fits(Shape::of(&policy))) {
            return;
        }
        // An older spare, or one of another shape, is killed as it drops.
        *slot = None;
        match Spare::start_here(exe, &policy, &scrub) {
            Ok(spare) => *slot = Some(spare),
            Err(error) => tracing::debug!(%error, "no spare init"),
        }
    }));
}

/// Kills the spare, if any (the turn is over: a session idle for hours keeps no process).
pub fn discard() {
    super::on_spawner(Box::new(|| {
        SPARE.lock().unwrap_or_else(|e| e.into_inner()).take();
    }));
}

/// The ready spare for a command of `shape`, taken out of the slot; on the spawner thread.
pub(super) fn take(shape: Shape) -> Option<tokio::process::Child> {
    let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner()).take()?;
    spare.fits(shape).then_some(spare.child)
}

/// How many commands this process started in a spare.
pub fn taken() -> u64 {
    TAKEN.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Request {
        Request {
            args: [
                "--mode",
                "workspace-write",
                "--net",
                "off",
                "--",
                "bash",
                "-c",
                "echo ok",
            ]
            .map(OsString::from)
            .to_vec(),
            cwd: PathBuf::from(OsString::from_vec(b"/tmp/d\xffir".to_vec())),
            env: vec![
                (OsString::from("PATH"), OsString::from("/usr/bin:/bin")),
                (OsString::from("EMPTY"), OsString::new()),
                (
                    OsString::from_vec(b"K\xfe".to_vec()),
                    OsString::from_vec(b"v=\x01".to_vec()),
                ),
            ],
            stdin_null: true,
        }
    }

    /// A request reads back as written, byte for byte (names that are not UTF-8 included),
    /// and nothing after it is consumed: that is the program's stdin.
    #[test]
    fn a_request_reads_back_as_written_and_leaves_what_follows() {
        for stdin_null in [true, false] {
            let sent = Request {
                stdin_null,
                ..request()
            };
            let mut bytes = sent.encode();
            bytes.extend_from_slice(b"the program's input");
            let mut input = std::io::Cursor::new(bytes);
            assert_eq!(Request::read(&mut input).unwrap(), sent);
            let mut rest = String::new();
            std::io::Read::read_to_string(&mut input, &mut rest).unwrap();
            assert_eq!(rest, "the program's input");
        }
    }

    /// Anything but a whole request brute wrote is refused: cut anywhere, a byte changed in
    /// its framing, a length past the cap, an empty pipe.
    #[test]
    fn a_cut_or_foreign_request_is_refused() {
        let bytes = request().encode();
        for cut in 0..bytes.len() {
            assert!(Request::read(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(matches!(Request::read(&[][..]), Err(BadRequest::Ended)));
        let mut foreign = bytes.clone();
        foreign[4] ^= 1;
        assert!(matches!(Request::read(&foreign[..]), Err(BadRequest::Malformed)));
        // A count past what the body holds.
        let mut longer = bytes.clone();
        let len = u32::from_le_bytes(longer[..4].try_into().unwrap()) + 1;
        longer[..4].copy_from_slice(&len.to_le_bytes());
        longer.push(0);
        assert!(matches!(Request::read(&longer[..]), Err(BadRequest::Malformed)));
        let huge = ((MAX_REQUEST + 1) as u32).to_le_bytes();
        assert!(matches!(Request::read(&huge[..]), Err(BadRequest::Malformed)));
    }

    /// A fresh init's command becomes the request a spare runs the same way: the arguments
    /// after `--parent PID`, the directory, and the environment with the command's changes.
    #[test]
    fn a_command_becomes_the_request_for_its_spare() {
        let mut command = tokio::process::Command::new("/proc/self/exe");
        command
            .args([
                super::super::INIT_ARG,
                "--parent",
                "1",
                "--mode",
                "read-only",
                "--",
                "bash",
            ])
            .current_dir("/tmp")
            .env("BRUTE_SPARE_TEST_SET", "yes")
            .env_remove("PATH");
        let request = Request::for_command(&command, false).unwrap();
        assert_eq!(request.args, ["--mode", "read-only", "--", "bash"].map(OsString::from));
        assert_eq!(request.cwd, PathBuf::from("/tmp"));
        assert!(request.env.contains(&("BRUTE_SPARE_TEST_SET".into(), "yes".into())));
        assert!(!request.env.iter().any(|(k, _)| k == "PATH"));
        let (policy, program) = request.policy();
        assert_eq!(policy.mode, super::super::Mode::ReadOnly);
        assert_eq!(program, [OsString::from("bash")]);
        // Not an init's command: no request.
        let plain = tokio::process::Command::new("bash");
        assert!(Request::for_command(&plain, true).is_none());
    }
}
