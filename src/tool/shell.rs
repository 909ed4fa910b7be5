//! `shell`: runs a command with `bash -c` (or `sh -c`) in its own process group, streams its
//! output, and kills the whole group on timeout or interrupt.

use std::process::Stdio;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::mpsc;

use super::{Keep, Params, Tool, ToolContext, ToolError, ToolOutput, str_arg};

/// Default timeout in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;

/// The built-in `shell` tool.
pub struct ShellTool;

impl Tool for ShellTool {
    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        "Run a shell command (bash -c) in the project root; stdin is empty. Returns stdout, then stderr, then the exit code if non-zero. Long output keeps the end. Use for builds, tests, git and other CLIs; use read/fs_search/patch for files."
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string("command", "The command line to run", true)
            .string("cwd", "Working directory (default: project root)", false)
            .schema("timeout", serde_json::json!({"type": "integer", "minimum": 1, "description": "Seconds before the command is killed (default 300)"}), false)
            .build()
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
            run(command, &cwd, timeout, ctx).await
        })
    }
}

fn shell_program() -> &'static str {
    static SHELL: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    SHELL.get_or_init(|| {
        let has_bash = std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join("bash").is_file()));
        if has_bash { "bash" } else { "sh" }
    })
}

#[derive(Debug)]
enum Chunk {
    Out(Vec<u8>),
    Err(Vec<u8>),
}

async fn pump(mut pipe: impl AsyncRead + Unpin, tx: mpsc::UnboundedSender<Chunk>, is_err: bool) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let bytes = buf[..n].to_vec();
        let chunk = if is_err { Chunk::Err(bytes) } else { Chunk::Out(bytes) };
        if tx.send(chunk).is_err() {
            break;
        }
    }
}

/// Sends SIGKILL to every process in the group led by `pid`.
pub fn kill_group(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: killpg has no memory-safety preconditions; a stale group id only fails.
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
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

/// The outcome of [`run_process`].
#[derive(Debug)]
pub struct ProcessRun {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub ending: Ending,
}

/// Runs `command` with the shell in its own process group, feeding `stdin` (or nothing),
/// streaming output chunks to the call's pane, and killing the whole group on timeout, on
/// interrupt, or when the shell exits (so no background child outlives the call).
pub async fn run_process(
    command: &str,
    cwd: &std::path::Path,
    stdin: Option<Vec<u8>>,
    envs: &[(String, String)],
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<ProcessRun, ToolError> {
    let mut child = Command::new(shell_program())
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .envs(envs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        // brute's own provider keys stay out of commands the model runs (and so out of
        // transcripts and session files).
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("BRUTE_API_KEY")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ToolError::io("cannot start the shell", &e))?;
    let pid = child.id().unwrap_or(0);
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let _ = pipe.write_all(&input).await;
        });
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    if let Some(out) = child.stdout.take() {
        tokio::spawn(pump(out, tx.clone(), false));
    }
    if let Some(err) = child.stderr.take() {
        tokio::spawn(pump(err, tx.clone(), true));
    }
    drop(tx);
    // Kills the group if this future is dropped (the turn was abandoned).
    let guard = GroupGuard(pid);
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut pipes_open = true;
    let mut status = None;
    let ending = loop {
        tokio::select! {
            chunk = rx.recv(), if pipes_open => match chunk {
                Some(Chunk::Out(bytes)) => { ctx.output(String::from_utf8_lossy(&bytes)); stdout.extend_from_slice(&bytes); }
                Some(Chunk::Err(bytes)) => { ctx.output(String::from_utf8_lossy(&bytes)); stderr.extend_from_slice(&bytes); }
                None => {
                    pipes_open = false;
                    if let Some(s) = status { break Ending::Exited(s); }
                }
            },
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
    drop(guard);
    if !matches!(ending, Ending::Exited(_)) {
        kill_group(pid);
        let _ = child.wait().await;
        // Collect what the pipes still hold: they close once the killed group is gone. A
        // process that left the group could keep them open, so this is bounded.
        let drain = async {
            while let Some(chunk) = rx.recv().await {
                match chunk {
                    Chunk::Out(bytes) => stdout.extend_from_slice(&bytes),
                    Chunk::Err(bytes) => stderr.extend_from_slice(&bytes),
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
    }
    Ok(ProcessRun { stdout, stderr, ending })
}

async fn run(
    command: &str,
    cwd: &std::path::Path,
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let ProcessRun { stdout, stderr, ending } = run_process(command, cwd, None, &[], timeout, ctx).await?;
    let mut content = String::from_utf8_lossy(&stdout).into_owned();
    if !stderr.is_empty() {
        if !content.is_empty() && !content.ends_with('\n') {
            content.push('\n');
        }
        content.push_str("STDERR:\n");
        content.push_str(&String::from_utf8_lossy(&stderr));
    }
    let mut footer = |line: String| {
        if !content.is_empty() && !content.ends_with('\n') {
            content.push('\n');
        }
        content.push_str(&line);
    };
    match ending {
        Ending::Exited(status) => {
            use std::os::unix::process::ExitStatusExt;
            if let Some(code) = status.code().filter(|c| *c != 0) {
                footer(format!("[exit code: {code}]"));
            } else if let Some(signal) = status.signal() {
                footer(format!("[killed by signal {signal}]"));
            }
        }
        Ending::TimedOut => {
            footer(format!(
                "[timed out after {} s; the command and its process group were killed. Output so far is above.]",
                timeout.as_secs()
            ));
            return Err(ToolError::new("Timeout", bounded(&content, ctx)));
        }
        Ending::Interrupted => {
            footer("[interrupted by the user; the command and its process group were killed]".to_owned());
            return Err(ToolError::new("Interrupted", bounded(&content, ctx)));
        }
    }
    if content.is_empty() {
        content.push_str("(no output)");
    }
    Ok(ToolOutput {
        content,
        keep: Keep::Tail,
        self_truncated: false,
    })
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
