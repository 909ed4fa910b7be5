//! Starting one hook: `bash -c COMMAND` as the person (hooks come only from the person's own
//! config or a trusted project, so they are not confined), started through
//! [`crate::sandbox::command`] so it has its own process group and dies with brute. Its JSON
//! input goes to stdin; stdout and stderr are kept up to [`MAX_OUTPUT`] each. On timeout or
//! interrupt the whole process group is killed and reaped before this returns; when the hook
//! exits, whatever it left running in its group is killed too.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::Hook;
use crate::sandbox::group::kill_group;

/// Bytes of each output stream kept; the rest is read and dropped.
pub const MAX_OUTPUT: usize = 256 * 1024;

/// How a hook run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signaled,
    /// It ran past its timeout and its process group was killed.
    TimedOut(Duration),
    /// The turn was interrupted and its process group was killed.
    Interrupted,
    /// It could not be started.
    NotStarted(String),
}

/// A finished hook: how it ended and what it printed (lossy UTF-8, bounded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub ending: Ending,
    pub stdout: String,
    pub stderr: String,
}

/// Kills the process group if the run is abandoned (the turn's future dropped).
struct GroupGuard(u32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

async fn read_capped(mut pipe: impl AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// Runs `hook` with `input` on stdin in `cwd`; `root` is given to it as `BRUTE_PROJECT_DIR`
/// (and `CLAUDE_PROJECT_DIR`, for hooks written for Claude Code).
pub async fn run(hook: &Hook, input: &Value, cwd: &Path, root: &Path, cancel: Option<&CancellationToken>) -> Finished {
    let not_started = |why: String| Finished {
        ending: Ending::NotStarted(why),
        stdout: String::new(),
        stderr: String::new(),
    };
    let mut command = crate::sandbox::command("bash", ["-c", hook.spec.command.as_str()]);
    command
        .current_dir(cwd)
        .env("BRUTE_PROJECT_DIR", root)
        .env("CLAUDE_PROJECT_DIR", root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for var in crate::secrets::key_vars() {
        command.env_remove(var);
    }
    let mut child = match crate::sandbox::spawn(command).await {
        Ok(child) => child,
        Err(e) => return not_started(e.to_string()),
    };
    let Some(pid) = child.id() else {
        return not_started("it exited before it could be watched".to_owned());
    };
    let guard = GroupGuard(pid);
    if let Some(mut stdin) = child.stdin.take() {
        let bytes = serde_json::to_vec(input).unwrap_or_default();
        // A hook that never reads its input must not block the run: write in the background.
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let stdout = child.stdout.take().map(|p| tokio::spawn(read_capped(p)));
    let stderr = child.stderr.take().map(|p| tokio::spawn(read_capped(p)));
    let timeout = hook.timeout();
    let never = CancellationToken::new();
    let cancel = cancel.unwrap_or(&never);
    let ending = tokio::select! {
        status = child.wait() => match status {
            Ok(status) => match status.code() {
                Some(code) => Ending::Exited(code),
                None => Ending::Signaled,
            },
            Err(e) => Ending::NotStarted(e.to_string()),
        },
        _ = tokio::time::sleep(timeout) => Ending::TimedOut(timeout),
        _ = cancel.cancelled() => Ending::Interrupted,
    };
    // Whatever is left in the group (background children, or the hook itself on timeout)
    // goes now; then the leader is reaped, so nothing of the hook outlives this call.
    kill_group(pid);
    if !matches!(ending, Ending::Exited(_) | Ending::Signaled) {
        let _ = child.wait().await;
    }
    drop(guard);
    // The pipes close once the group is gone; a process that left the group could hold them,
    // so collecting is bounded.
    let collect = |task: Option<tokio::task::JoinHandle<String>>| async move {
        match task {
            Some(task) => tokio::time::timeout(Duration::from_secs(2), task)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default(),
            None => String::new(),
        }
    };
    let (stdout, stderr) = tokio::join!(collect(stdout), collect(stderr));
    Finished { ending, stdout, stderr }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::{HookEvent, HookSpec};

    fn hook(command: &str, timeout: Option<u64>) -> Hook {
        Hook::new(
            HookEvent::Stop,
            HookSpec {
                matcher: None,
                command: command.into(),
                timeout,
            },
        )
        .unwrap()
    }

    #[tokio::test]
    async fn reads_stdin_and_reports_exit_code_and_output() {
        let dir = tempfile::tempdir().unwrap();
        let input = serde_json::json!({"event": "stop", "n": 1});
        let done = run(
            &hook("cat; echo oops >&2; exit 3", None),
            &input,
            dir.path(),
            dir.path(),
            None,
        )
        .await;
        assert_eq!(done.ending, Ending::Exited(3));
        assert_eq!(serde_json::from_str::<Value>(&done.stdout).unwrap(), input);
        assert_eq!(done.stderr.trim(), "oops");
        let done = run(
            &hook("pwd; echo $BRUTE_PROJECT_DIR", None),
            &input,
            dir.path(),
            dir.path(),
            None,
        )
        .await;
        let real = dir.path().canonicalize().unwrap();
        let lines: Vec<&str> = done.stdout.lines().collect();
        assert_eq!(std::path::Path::new(lines[0]).canonicalize().unwrap(), real);
        assert_eq!(lines[1], dir.path().display().to_string());
    }

    #[tokio::test]
    async fn a_timed_out_hook_is_killed_with_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = format!("brute-hook-unit-{}", std::process::id());
        // The background sleep carries a unique marker in its argv so it can be found.
        let command = format!("(exec -a {marker} sleep 30) & wait");
        let done = run(&hook(&command, Some(1)), &Value::Null, dir.path(), dir.path(), None).await;
        assert_eq!(done.ending, Ending::TimedOut(Duration::from_secs(1)));
        assert!(!running(&marker), "the hook's process survived its timeout");
    }

    /// Whether a live process has `marker` as its argv[0].
    pub(crate) fn running(marker: &str) -> bool {
        std::fs::read_dir("/proc").into_iter().flatten().flatten().any(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|cmdline| cmdline.split(|b| *b == 0).next() == Some(marker.as_bytes()))
        })
    }
}
