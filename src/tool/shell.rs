//! `shell`: runs a command with `bash -c` (or `sh -c`) in its own process group, streams its
//! output, and kills the whole group on timeout or interrupt.

use std::process::Stdio;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;

use super::capture::Capture;
use super::state::Access;
use super::{Keep, Params, Tool, ToolContext, ToolError, ToolOutput, str_arg};
use crate::sandbox::group::{KILL_GRACE, kill_group, signal_group};

/// Default timeout in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;

/// The built-in `shell` tool.
pub struct ShellTool;

impl Tool for ShellTool {
    fn name(&self) -> &str {
        "shell"
    }

    fn rule_subject(&self) -> crate::permission::RuleSubject {
        crate::permission::RuleSubject::Command("command")
    }

    fn description(&self) -> &str {
        "Run a shell command (bash -c) in the working directory; stdin is empty. Returns stdout, then stderr, then the exit code if non-zero. Long output keeps the end. Use for builds, tests, git and other CLIs; use read/fs_search/patch for files. With run_in_background (servers, watchers, long jobs) it returns at once with an id and the first output; read more with shell_output, stop it with shell_kill."
    }

    fn display(&self) -> crate::protocol::Display {
        crate::protocol::Display::Output
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string("command", "The command line to run", true)
            .string("cwd", "Working directory (default: the working directory brute started in)", false)
            .schema("timeout", serde_json::json!({"type": "integer", "minimum": 1, "description": "Seconds before the command is killed (default 300)"}), false)
            .schema("sandbox", serde_json::json!({"type": "string", "enum": ["full"], "description": "Only when the sandbox blocks what the task needs (network, writing outside the project): \"full\" runs without it, after the user approves"}), false)
            .string("justification", "With sandbox=full: why the command needs it, shown to the user", false)
            .schema("run_in_background", serde_json::json!({"type": "boolean", "description": "Start it and return at once with an id (no timeout; it runs until it exits, shell_kill stops it, or the session ends)"}), false)
            .build()
    }

    fn runs_commands(&self) -> bool {
        true
    }

    fn escalation(&self, args: &Value) -> Option<String> {
        (args["sandbox"].as_str() == Some("full")).then(|| {
            args["justification"]
                .as_str()
                .filter(|j| !j.trim().is_empty())
                .unwrap_or("no justification given")
                .to_owned()
        })
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let command = str_arg(&args, "command")?;
            let cwd = ctx.resolve(args["cwd"].as_str().unwrap_or("."));
            if !cwd.is_dir() {
                return Err(ToolError::not_found(format!(
                    "working directory not found: {}",
                    ctx.display(&cwd)
                )));
            }
            let timeout = Duration::from_secs(args["timeout"].as_u64().unwrap_or(DEFAULT_TIMEOUT_SECS));
            // The approval step let an escalated call through only with the person's consent.
            let unconfined = self.escalation(&args).is_some();
            if args["run_in_background"].as_bool() == Some(true) {
                let policy = command_policy(ctx, unconfined);
                return ctx.agent.background.start(command, &cwd, &policy, ctx).await;
            }
            run(command, &cwd, timeout, unconfined, ctx).await
        })
    }
}

pub(crate) fn shell_program() -> &'static str {
    static SHELL: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    SHELL.get_or_init(|| {
        let has_bash = std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join("bash").is_file()));
        if has_bash { "bash" } else { "sh" }
    })
}

#[derive(Debug)]
pub(crate) enum Chunk {
    Out(Vec<u8>),
    Err(Vec<u8>),
}

pub(crate) async fn pump(mut pipe: impl AsyncRead + Unpin, tx: mpsc::Sender<Chunk>, is_err: bool) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let bytes = buf[..n].to_vec();
        let chunk = if is_err { Chunk::Err(bytes) } else { Chunk::Out(bytes) };
        if tx.send(chunk).await.is_err() {
            break;
        }
    }
}

/// How a process run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut,
    Interrupted,
}

/// The outcome of [`run_process`]: each stream bounded in memory (see [`Capture`]).
#[derive(Debug)]
pub struct ProcessRun {
    pub stdout: Capture,
    pub stderr: Capture,
    pub ending: Ending,
}

/// Live output sent to the pane at most this often; what arrives in between is coalesced.
const LIVE_EVERY: Duration = Duration::from_millis(50);
/// Of coalesced live output, only this much of the end is sent.
const LIVE_MAX_BYTES: usize = 64 * 1024;

/// Live output waiting to be sent, bounded.
#[derive(Default)]
struct Live(Vec<u8>);

impl Live {
    fn push(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
        if self.0.len() > 2 * LIVE_MAX_BYTES {
            let cut = self.0.len() - LIVE_MAX_BYTES;
            self.0.drain(..cut);
        }
    }

    fn flush(&mut self, ctx: &ToolContext) {
        if !self.0.is_empty() {
            let text = String::from_utf8_lossy(&self.0);
            ctx.output(crate::secrets::redact(&text));
            self.0.clear();
        }
    }
}

/// Runs `command` with the shell in its own process group (through [`crate::sandbox`], so it
/// dies with brute and cannot see brute), feeding `stdin` (or nothing), streaming output to
/// the call's pane, and killing the whole group on timeout, on interrupt, or when the shell
/// exits (so no background child outlives the call). Output is kept bounded in memory.
pub async fn run_process(
    command: &str,
    cwd: &std::path::Path,
    stdin: Option<Vec<u8>>,
    envs: &[(String, String)],
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<ProcessRun, ToolError> {
    run_process_with(command, cwd, stdin, envs, timeout, &command_policy(ctx, false), ctx).await
}

/// The policy a command of this call runs under: the session's, or none when the call was
/// approved to run unconfined (escalated, or approved because no sandbox is available here).
pub fn command_policy(ctx: &ToolContext, unconfined: bool) -> crate::sandbox::Policy {
    let access = ctx.agent.access();
    let can_confine = access.can_confine();
    policy_under(access, unconfined, can_confine)
}

fn policy_under(access: Access, unconfined: bool, can_confine: bool) -> crate::sandbox::Policy {
    // While planning, a command runs read-only or not at all.
    if (unconfined || !can_confine) && !access.planning() {
        // A full-access policy names no path.
        crate::sandbox::Policy::for_project(crate::sandbox::Mode::FullAccess, std::path::Path::new("/"), &[], &[])
    } else {
        access.policy
    }
}

/// Has a spare init made (see [`crate::sandbox::spare`]) for the next command under `access`,
/// so that its sandbox is ready when the model's answer names one. (Whether commands can be
/// confined here is found out first, on the spawner thread: a command would wait for it too.)
pub fn prepare_spare(access: Access) {
    crate::sandbox::spare::prepare(
        move || {
            let can_confine = access.can_confine();
            Some(policy_under(access, false, can_confine))
        },
        &crate::secrets::key_vars(),
    );
}

/// [`run_process`] under an explicit sandbox policy.
pub async fn run_process_with(
    command: &str,
    cwd: &std::path::Path,
    stdin: Option<Vec<u8>>,
    envs: &[(String, String)],
    timeout: Duration,
    policy: &crate::sandbox::Policy,
    ctx: &ToolContext,
) -> Result<ProcessRun, ToolError> {
    let spawn = crate::sandbox::confined_command(policy, shell_program(), ["-c", command])
        .map_err(|e| ToolError::new("SandboxUnavailable", e.to_string()))?;
    // Also when this future is dropped (an interrupted or abandoned turn).
    let _ended = crate::sandbox::CommandEnded::new(policy.clone());
    run_prepared(spawn, cwd, stdin, envs, timeout, ctx).await
}

/// Runs an already built command (a program and its argv, sandboxed or not, from
/// [`crate::sandbox`]) the way [`run_process`] runs the shell: own process group, bounded
/// capture, live output, and the whole group killed on timeout, interrupt or exit.
pub async fn run_prepared(
    mut spawn: tokio::process::Command,
    cwd: &std::path::Path,
    stdin: Option<Vec<u8>>,
    envs: &[(String, String)],
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<ProcessRun, ToolError> {
    spawn
        .current_dir(cwd)
        .envs(envs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // brute's own provider keys stay out of commands the model runs (and so out of
    // transcripts and session files).
    for var in crate::secrets::key_vars() {
        spawn.env_remove(var);
    }
    let mut child = crate::sandbox::spawn_spared(spawn, stdin.is_none())
        .await
        .map_err(|e| ToolError::io("cannot start the command", &e))?;
    let pid = child.id().unwrap_or(0);
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let _ = pipe.write_all(&input).await;
        });
    }
    // A small channel: a command printing faster than brute keeps up waits on its pipe.
    let (tx, mut rx) = mpsc::channel(16);
    if let Some(out) = child.stdout.take() {
        tokio::spawn(pump(out, tx.clone(), false));
    }
    if let Some(err) = child.stderr.take() {
        tokio::spawn(pump(err, tx.clone(), true));
    }
    drop(tx);
    // Kills the group if this future is dropped (the turn was abandoned).
    let guard = GroupGuard(pid);
    let overflow = ctx.overflow_dir.as_deref();
    let mut stdout = Capture::new("stdout", &ctx.call_id, overflow);
    let mut stderr = Capture::new("stderr", &ctx.call_id, overflow);
    let mut live = Live::default();
    let mut live_tick = tokio::time::interval(LIVE_EVERY);
    live_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut pipes_open = true;
    let mut status = None;
    let ending = loop {
        tokio::select! {
            chunk = rx.recv(), if pipes_open => match chunk {
                Some(Chunk::Out(bytes)) => { live.push(&bytes); stdout.push(&bytes); }
                Some(Chunk::Err(bytes)) => { live.push(&bytes); stderr.push(&bytes); }
                None => {
                    pipes_open = false;
                    if let Some(s) = status { break Ending::Exited(s); }
                }
            },
            _ = live_tick.tick() => live.flush(ctx),
            exited = child.wait(), if status.is_none() => {
                let s = exited.map_err(|e| ToolError::io("waiting for the command", &e))?;
                // Background children left in the group would hold the pipes open forever.
                kill_group(pid);
                status = Some(s);
                if !pipes_open { break Ending::Exited(s); }
            },
            _ = &mut deadline => break Ending::TimedOut,
            _ = ctx.cancel.cancelled() => break Ending::Interrupted,
        }
    };
    if !matches!(ending, Ending::Exited(_)) {
        // TERM first so the command can clean up (lock files, temp dirs), KILL after a grace.
        signal_group(pid, libc::SIGTERM);
        // Whether or not the leader went in time, whatever is left in the group goes now.
        let _ = tokio::time::timeout(KILL_GRACE, child.wait()).await;
        kill_group(pid);
        let _ = child.wait().await;
        // Collect what the pipes still hold: they close once the killed group is gone. A
        // process that left the group could keep them open, so this is bounded.
        let drain = async {
            while let Some(chunk) = rx.recv().await {
                match chunk {
                    Chunk::Out(bytes) => stdout.push(&bytes),
                    Chunk::Err(bytes) => stderr.push(&bytes),
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
    }
    drop(guard);
    live.flush(ctx);
    Ok(ProcessRun { stdout, stderr, ending })
}

/// Runs the command; when the sandbox seems to have blocked it and a person is there, offers
/// to run it again without the sandbox (an approval) and returns that run's result instead.
async fn run(
    command: &str,
    cwd: &std::path::Path,
    timeout: Duration,
    unconfined: bool,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let (first, blocked) = run_once(command, cwd, timeout, unconfined, ctx).await?;
    let access = ctx.agent.access();
    if !blocked || unconfined || !ctx.agent.requests.has_person() || access.yolo || access.planning() {
        return Ok(first);
    }
    let kind = crate::protocol::RequestKind::Consent {
        title: "The sandbox blocked a command".to_owned(),
        message: format!(
            "This command failed in a way that looks like the sandbox stopped it (its own output is in the pane):\n\n  {}\n\nRun it again without the sandbox?",
            crate::sanitize::sanitize(command.lines().next().unwrap_or(command))
        ),
        yes: "run it again without the sandbox".to_owned(),
        no: "keep the result".to_owned(),
    };
    match ctx.ask(kind).await {
        crate::protocol::Response::Consent { yes: true } => {
            let (mut again, _) = run_once(command, cwd, timeout, true, ctx).await?;
            again.content.push_str(
                "\n[ran again without the sandbox, as the user approved after the sandbox blocked the first run]",
            );
            Ok(again)
        }
        _ => Ok(first),
    }
}

/// One run of the command: its result and whether the sandbox seems to have blocked it.
async fn run_once(
    command: &str,
    cwd: &std::path::Path,
    timeout: Duration,
    unconfined: bool,
    ctx: &ToolContext,
) -> Result<(ToolOutput, bool), ToolError> {
    let policy = command_policy(ctx, unconfined);
    let ProcessRun { stdout, stderr, ending } =
        run_process_with(command, cwd, None, &[], timeout, &policy, ctx).await?;
    let blocked = policy.confined() && looks_blocked(&stdout.text(), &stderr.text());
    let failed = matches!(ending, Ending::Exited(status) if !status.success());
    let run = ProcessRun { stdout, stderr, ending };
    let sandboxed =
        |code: i32| (code == i32::from(crate::sandbox::UNAVAILABLE) || blocked).then(|| sandbox_note(&policy));
    let output = describe_run(run, "command", timeout, sandboxed, ctx)?;
    Ok((output, blocked && failed))
}

/// A finished process's result as the model sees it: stdout, then `STDERR:` and stderr, the
/// notes on output cut short (last, where the kept end is), then how it ended. `what` names
/// the process in those notes ("command", "script"); `exit_note` may add a line for a
/// non-zero exit code. A timeout or an interrupt is an error carrying the output so far.
pub(crate) fn describe_run(
    run: ProcessRun,
    what: &str,
    timeout: Duration,
    exit_note: impl Fn(i32) -> Option<String>,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let ProcessRun { stdout, stderr, ending } = run;
    let mut content = stdout.text();
    if stderr.total() > 0 {
        if !content.is_empty() && !content.ends_with('\n') {
            content.push('\n');
        }
        content.push_str("STDERR:\n");
        content.push_str(&stderr.text());
    }
    let mut footer = |line: String| {
        if !content.is_empty() && !content.ends_with('\n') {
            content.push('\n');
        }
        content.push_str(&line);
    };
    for note in [stdout.note(), stderr.note()].into_iter().flatten() {
        footer(note);
    }
    let mut failure = None;
    match ending {
        Ending::Exited(status) => {
            use std::os::unix::process::ExitStatusExt;
            if let Some(code) = status.code().filter(|c| *c != 0) {
                failure = Some(crate::protocol::Failure::Exit(code));
                footer(format!("[exit code: {code}]"));
                if let Some(note) = exit_note(code) {
                    footer(note);
                }
            } else if let Some(signal) = status.signal() {
                failure = Some(crate::protocol::Failure::Signal(signal));
                footer(format!("[killed by signal {signal}]"));
            }
        }
        Ending::TimedOut => {
            footer(format!(
                "[timed out after {} s; the {what} and its process group were killed. Output so far is above.]",
                timeout.as_secs()
            ));
            return Err(ToolError::new("Timeout", bounded(&content, ctx)));
        }
        Ending::Interrupted => {
            footer(format!(
                "[interrupted by the user; the {what} and its process group were killed]"
            ));
            return Err(ToolError::new("Interrupted", bounded(&content, ctx)));
        }
    }
    if content.is_empty() {
        content.push_str("(no output)");
    }
    Ok(ToolOutput {
        content,
        keep: Keep::Tail,
        failure,
        ..ToolOutput::default()
    })
}

/// Whether a failed command's output looks like the sandbox stopped it (a write outside, or
/// the network).
fn looks_blocked(stdout: &str, stderr: &str) -> bool {
    const SIGNS: &[&str] = &[
        "Permission denied",
        "Read-only file system",
        "Operation not permitted",
        "Network is unreachable",
        "Could not resolve host",
        "Temporary failure in name resolution",
        "Name or service not known",
    ];
    SIGNS.iter().any(|s| stderr.contains(s) || stdout.contains(s))
}

/// What the model is told when the sandbox may have blocked a command.
fn sandbox_note(policy: &crate::sandbox::Policy) -> String {
    let what = match policy.mode {
        crate::sandbox::Mode::ReadOnly => "commands may not write files and have no network",
        _ => {
            "commands may write only inside the project (not its .git/ or .brute/), the temp dir and build caches, and have no network"
        }
    };
    format!(
        "[the sandbox ({}) may have blocked this: {what}. If the task needs more, call shell again with sandbox: \"full\" and a justification; the user will be asked to approve it.]",
        policy.mode.as_str()
    )
}

/// Error results skip the universal step, so partial output is bounded here (end kept).
pub(crate) fn bounded(content: &str, ctx: &ToolContext) -> String {
    super::truncate::truncate(content, Keep::Tail, ctx.overflow_dir.as_deref(), &ctx.call_id)
}

struct GroupGuard(u32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}
