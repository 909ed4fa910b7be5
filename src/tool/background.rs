//! Background processes: `shell` with `run_in_background` starts one and returns at once;
//! `shell_output` reads what it printed since the last read, `shell_kill` stops it.
//!
//! A background process is started like a foreground command (the same sandbox policy,
//! approvals, own process group, provider keys removed) and kept by a task of its own, which:
//!
//! - holds a busy span ([`crate::busy`]) from before it starts until it has exited, so what
//!   it writes is never taken for the person's edit, in whichever turn it writes;
//! - keeps its output (stdout and stderr as they arrive) in a [`Capture`]: bounded in memory,
//!   spilled to the overflow directory past that, as a foreground command's;
//! - when it exits, kills what is left of its group (as a finished foreground command's),
//!   refreshes what the sandbox knows of the repositories and tells the session a command
//!   ran ([`super::Snapshots::command_ran`]);
//! - kills the whole group when dropped (the runtime ends) — and [`Background::kill_all`]
//!   runs when the session ends, so brute never waits for one and leaves none behind.
//!
//! One table per session: a sub-agent's processes are its parent's (the `task` tool shares it).

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::capture::Capture;
use super::shell::{Chunk, pump, shell_program};
use super::{Keep, Params, Tool, ToolContext, ToolError, ToolOutput, str_arg};
use crate::protocol::{Display, Event, EventSink, ProcessView};
use crate::sandbox::group::{KILL_GRACE, kill_group, signal_group};

/// How long `shell` with `run_in_background` waits for first output (or an early exit)
/// before it returns.
pub const FIRST_WAIT: Duration = Duration::from_millis(500);
/// The longest `shell_output` may wait for new output.
pub const MAX_WAIT_SECS: u64 = 600;
/// How many background processes may run at once in a session.
pub const MAX_RUNNING: usize = 16;
/// How much of the last line `/ps` shows.
const LAST_LINE_CHARS: usize = 200;
/// How long the pipes may stay open after the shell exited (a process that left the group).
const DRAIN: Duration = Duration::from_secs(2);

/// Why a background process cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackgroundError {
    #[error("no background process `{id}` in this session (known: {known})")]
    Unknown { id: String, known: String },
    #[error("{MAX_RUNNING} background processes run already; stop one with shell_kill first")]
    TooMany,
}

impl From<BackgroundError> for ToolError {
    fn from(error: BackgroundError) -> Self {
        let kind = match error {
            BackgroundError::Unknown { .. } => "NotFound",
            BackgroundError::TooMany => "TooManyProcesses",
        };
        ToolError::new(kind, error.to_string())
    }
}

/// The background processes of one session, oldest first.
#[derive(Default)]
pub struct Background {
    procs: Mutex<Vec<Arc<Proc>>>,
    next: AtomicU64,
    /// Where the running count goes (the session's top-level sink; set once).
    events: OnceLock<EventSink>,
}

impl Drop for Background {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// How a background process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Status(std::process::ExitStatus),
    /// Waiting for it failed; its group was killed.
    Lost,
}

struct State {
    /// What it printed since the last read.
    unread: Capture,
    reads: u64,
    /// The line being printed, and the last complete one (for `/ps`).
    partial: Vec<u8>,
    last_line: String,
    ended: Option<Ended>,
    /// The model was told how it ended (a read after the exit, or a note).
    reported: bool,
    /// Someone asked it to stop (`shell_kill`, `/ps`, the session's end).
    stopped: bool,
}

/// One background process.
pub struct Proc {
    pub id: String,
    pub command: String,
    started: Instant,
    group: u32,
    overflow: Option<std::path::PathBuf>,
    state: Mutex<State>,
    /// Bumped at every change (output, exit), for waiters.
    changed: watch::Sender<u64>,
    kill: CancellationToken,
}

impl Proc {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn push(&self, bytes: &[u8]) {
        let mut state = self.state();
        state.unread.push(bytes);
        state.partial.extend_from_slice(bytes);
        if let Some(end) = state.partial.iter().rposition(|b| *b == b'\n') {
            let complete = &state.partial[..end];
            let start = complete.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let line = String::from_utf8_lossy(&complete[start..]);
            if !line.trim().is_empty() {
                state.last_line = line.chars().take(LAST_LINE_CHARS).collect();
            }
            state.partial.drain(..=end);
        }
        // A line without end is bounded too.
        if state.partial.len() > 4 * LAST_LINE_CHARS {
            let line: String = String::from_utf8_lossy(&state.partial)
                .chars()
                .take(LAST_LINE_CHARS)
                .collect();
            state.last_line = line;
            state.partial.clear();
        }
        drop(state);
        self.bump();
    }

    fn running(&self) -> bool {
        self.state().ended.is_none()
    }

    /// Waits until there is output not read yet or it has ended, at most `wait`.
    async fn wait_news(&self, wait: Duration, cancel: &CancellationToken) {
        let mut changed = self.changed.subscribe();
        let deadline = tokio::time::sleep(wait);
        tokio::pin!(deadline);
        loop {
            {
                let state = self.state();
                if state.unread.total() > 0 || state.ended.is_some() {
                    return;
                }
            }
            tokio::select! {
                gone = changed.changed() => if gone.is_err() { return },
                _ = &mut deadline => return,
                _ = cancel.cancelled() => return,
            }
        }
    }

    /// Waits until it has ended, at most `wait`.
    async fn wait_end(&self, wait: Duration) {
        let mut changed = self.changed.subscribe();
        let deadline = tokio::time::sleep(wait);
        tokio::pin!(deadline);
        while self.running() {
            tokio::select! {
                gone = changed.changed() => if gone.is_err() { return },
                _ = &mut deadline => return,
            }
        }
    }

    /// Asks it to stop: TERM to its group now, KILL after [`KILL_GRACE`] (its keeper does).
    fn stop(&self) {
        self.state().stopped = true;
        self.kill.cancel();
    }

    fn ending(&self, state: &State) -> String {
        use std::os::unix::process::ExitStatusExt;
        match state.ended {
            None => format!("running ({})", age(self.started.elapsed())),
            Some(_) if state.stopped => "stopped".to_owned(),
            Some(Ended::Status(status)) => match (status.code(), status.signal()) {
                (Some(code), _) => format!("exited {code}"),
                (None, Some(signal)) => format!("killed by signal {signal}"),
                (None, None) => "ended".to_owned(),
            },
            Some(Ended::Lost) => "lost (its group was killed)".to_owned(),
        }
    }

    /// What it printed since the last read, and how it stands, as the model sees it.
    fn read(&self) -> String {
        let mut state = self.state();
        state.reads += 1;
        let name = format!("{}-read{}", self.id, state.reads);
        let fresh = Capture::new("output", &name, self.overflow.as_deref());
        let unread = std::mem::replace(&mut state.unread, fresh);
        let mut content = unread.text();
        if unread.total() == 0 {
            content.push_str("(no new output)");
        }
        let mut footer = |line: &str| {
            if !content.ends_with('\n') {
                content.push('\n');
            }
            content.push_str(line);
        };
        if let Some(note) = unread.note() {
            footer(&note);
        }
        let id = &self.id;
        let status = match state.ended {
            None => format!(
                "[{id} is still running ({}); shell_output with id \"{id}\" reads what it prints next (wait: seconds to block for it), shell_kill stops it]",
                age(self.started.elapsed())
            ),
            Some(_) => {
                state.reported = true;
                match self.ending(&state).as_str() {
                    "stopped" => format!("[{id} was stopped (TERM, then KILL, to its whole process group)]"),
                    "exited 0" => format!("[{id} has exited (code 0)]"),
                    other => format!("[{id} has ended: {other}]"),
                }
            }
        };
        footer(&status);
        content
    }

    fn view(&self) -> ProcessView {
        let state = self.state();
        ProcessView {
            id: self.id.clone(),
            command: self.command.clone(),
            age_secs: self.started.elapsed().as_secs(),
            state: match state.ended {
                None => "running".to_owned(),
                Some(_) => self.ending(&state),
            },
            // A key it printed (`env`) never reaches the screen.
            last_line: crate::secrets::redact(&state.last_line).into_owned(),
            running: state.ended.is_none(),
        }
    }
}

/// `3 s`, `4 min 2 s`, `1 h 5 min`.
fn age(elapsed: Duration) -> String {
    let s = elapsed.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

impl Background {
    /// Sends the running count to `events` from now on (the first sink set stays: a
    /// sub-agent sharing the table does not take it over).
    pub fn set_events(&self, events: EventSink) {
        let _ = self.events.set(events);
    }

    fn procs(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Proc>>> {
        self.procs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many run now.
    pub fn running(&self) -> usize {
        self.procs().iter().filter(|p| p.running()).count()
    }

    fn announce(&self) {
        if let Some(events) = self.events.get() {
            events.emit(Event::BackgroundChanged {
                running: self.running(),
            });
        }
    }

    fn get(&self, id: &str) -> Result<Arc<Proc>, BackgroundError> {
        let procs = self.procs();
        procs.iter().find(|p| p.id == id).cloned().ok_or_else(|| {
            let ids: Vec<&str> = procs.iter().map(|p| p.id.as_str()).collect();
            BackgroundError::Unknown {
                id: id.to_owned(),
                known: if ids.is_empty() {
                    "none".to_owned()
                } else {
                    super::registry::brief_list(&ids)
                },
            }
        })
    }

    /// The processes for `/ps`, oldest first.
    pub fn views(&self) -> Vec<ProcessView> {
        self.procs().iter().map(|p| p.view()).collect()
    }

    /// Stops one (TERM, then KILL, its group) without waiting; `Ok(false)` when it had ended.
    pub fn stop(&self, id: &str) -> Result<bool, BackgroundError> {
        let proc = self.get(id)?;
        let running = proc.running();
        if running {
            proc.stop();
        }
        Ok(running)
    }

    /// Kills every running group at once (the session ends: nothing is waited for).
    pub fn kill_all(&self) {
        for proc in self.procs().iter().filter(|p| p.running()) {
            proc.state().stopped = true;
            kill_group(proc.group);
            proc.kill.cancel();
        }
    }

    /// A note for the model's next request on the processes that ended since it last heard
    /// of them; `None` when there are none.
    pub fn exit_notes(&self) -> Option<String> {
        let mut lines = Vec::new();
        for proc in self.procs().iter() {
            let mut state = proc.state();
            if state.ended.is_none() || state.reported {
                continue;
            }
            state.reported = true;
            let first = proc.command.lines().next().unwrap_or_default();
            let command: String = first.chars().take(80).collect();
            let ellipsis = if command.len() < proc.command.len() { "…" } else { "" };
            lines.push(format!(
                "[background process {} (`{command}{ellipsis}`) has ended: {}; shell_output with id \"{}\" returns what it printed since the last read]",
                proc.id,
                proc.ending(&state),
                proc.id
            ));
        }
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    /// Starts `command` in the background under `policy` and returns what it printed within
    /// [`FIRST_WAIT`] (or until it exited), with its id.
    pub async fn start(
        self: &Arc<Self>,
        command: &str,
        cwd: &Path,
        policy: &crate::sandbox::Policy,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        if self.running() >= MAX_RUNNING {
            return Err(BackgroundError::TooMany.into());
        }
        let mut spawn = crate::sandbox::confined_command(policy, shell_program(), ["-c", command])
            .map_err(|e| ToolError::new("SandboxUnavailable", e.to_string()))?;
        spawn
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        for var in crate::secrets::key_vars() {
            spawn.env_remove(var);
        }
        // Open before it starts: what it writes at once is inside the span.
        let busy = ctx.snapshots.spans().open().await;
        let mut child = crate::sandbox::spawn(spawn)
            .await
            .map_err(|e| ToolError::io("cannot start the command", &e))?;
        let group = child.id().unwrap_or(0);
        let (tx, rx) = mpsc::channel(16);
        if let Some(out) = child.stdout.take() {
            tokio::spawn(pump(out, tx.clone(), false));
        }
        if let Some(err) = child.stderr.take() {
            tokio::spawn(pump(err, tx.clone(), true));
        }
        drop(tx);
        let id = format!("bg{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let proc = Arc::new(Proc {
            command: command.to_owned(),
            started: Instant::now(),
            group,
            overflow: ctx.overflow_dir.clone(),
            state: Mutex::new(State {
                unread: Capture::new("output", &format!("{id}-read1"), ctx.overflow_dir.as_deref()),
                reads: 0,
                partial: Vec::new(),
                last_line: String::new(),
                ended: None,
                reported: false,
                stopped: false,
            }),
            changed: watch::channel(0).0,
            kill: CancellationToken::new(),
            id,
        });
        self.procs().push(proc.clone());
        let keeper = Keeper {
            proc: proc.clone(),
            table: Arc::downgrade(self),
            snapshots: ctx.snapshots.clone(),
            _busy: busy,
            _ended: crate::sandbox::CommandEnded::new(policy.clone()),
        };
        tokio::spawn(keeper.keep(child, rx));
        self.announce();
        proc.wait_end(FIRST_WAIT).await;
        let id = proc.id.clone();
        let mut content = format!("Started in the background as {id}.\n");
        content.push_str(&proc.read());
        Ok(ToolOutput {
            content,
            keep: Keep::Tail,
            self_truncated: false,
            images: Vec::new(),
            failure: None,
        })
    }
}

/// What a background process holds while it runs; dropped when it has ended (or when the
/// runtime ends, killing its group).
struct Keeper {
    proc: Arc<Proc>,
    table: Weak<Background>,
    snapshots: Arc<super::Snapshots>,
    _busy: crate::busy::Busy,
    _ended: crate::sandbox::CommandEnded,
}

/// Kills the group when dropped unless disarmed (its leader was reaped and the group killed).
struct GroupGuard(u32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.0 != 0 {
            kill_group(self.0);
        }
    }
}

impl Keeper {
    async fn keep(self, mut child: tokio::process::Child, mut rx: mpsc::Receiver<Chunk>) {
        let proc = &self.proc;
        let mut guard = GroupGuard(proc.group);
        let mut pipes_open = true;
        let mut status: Option<Ended> = None;
        let mut termed = false;
        let grace = tokio::time::sleep(Duration::MAX);
        tokio::pin!(grace);
        let drain = tokio::time::sleep(Duration::MAX);
        tokio::pin!(drain);
        loop {
            tokio::select! {
                chunk = rx.recv(), if pipes_open => match chunk {
                    Some(Chunk::Out(bytes) | Chunk::Err(bytes)) => proc.push(&bytes),
                    None => {
                        pipes_open = false;
                        if status.is_some() { break; }
                    }
                },
                exited = child.wait(), if status.is_none() => {
                    // Background children left in the group would hold the pipes open.
                    kill_group(proc.group);
                    guard.0 = 0;
                    status = Some(exited.map_or(Ended::Lost, Ended::Status));
                    if !pipes_open { break; }
                    drain.as_mut().reset(tokio::time::Instant::now() + DRAIN);
                },
                _ = proc.kill.cancelled(), if !termed && status.is_none() => {
                    termed = true;
                    // TERM first so it can clean up (lock files, temp dirs), KILL after a grace.
                    signal_group(proc.group, libc::SIGTERM);
                    grace.as_mut().reset(tokio::time::Instant::now() + KILL_GRACE);
                },
                _ = &mut grace, if termed && status.is_none() => kill_group(proc.group),
                _ = &mut drain, if status.is_some() => break,
            }
        }
        proc.state().ended = status;
        let Keeper {
            proc,
            table,
            snapshots,
            _busy: busy,
            _ended: ended,
        } = self;
        // The span ends and the repositories are looked at again before anyone hears of it.
        drop((busy, ended));
        proc.bump();
        if let Some(table) = table.upgrade() {
            table.announce();
        }
        // It waits for the file watcher's events and copies files: off the runtime.
        let _ = tokio::task::spawn_blocking(move || snapshots.command_ran()).await;
    }
}

/// The table of `ctx`'s session.
fn table(ctx: &ToolContext) -> &Arc<Background> {
    &ctx.agent.background
}

/// The built-in `shell_output` tool.
pub struct ShellOutputTool;

impl Tool for ShellOutputTool {
    fn name(&self) -> &str {
        "shell_output"
    }

    fn description(&self) -> &str {
        "Read what a background command (shell with run_in_background) printed since the last read, whether it still runs, and how it ended. With wait, blocks up to that many seconds until new output arrives or it exits."
    }

    fn display(&self) -> Display {
        Display::Output
    }

    fn summary(&self, args: &Value) -> String {
        args["id"].as_str().unwrap_or_default().chars().take(80).collect()
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string("id", "The id shell returned (bg1, …)", true)
            .schema(
                "wait",
                serde_json::json!({"type": "integer", "minimum": 0, "maximum": MAX_WAIT_SECS, "description": "Seconds to wait for new output or the exit (default 0: return at once)"}),
                false,
            )
            .build()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let proc = table(ctx).get(str_arg(&args, "id")?)?;
            let wait = Duration::from_secs(args["wait"].as_u64().unwrap_or(0).min(MAX_WAIT_SECS));
            proc.wait_news(wait, &ctx.cancel).await;
            Ok(ToolOutput {
                content: proc.read(),
                keep: Keep::Tail,
                self_truncated: false,
                images: Vec::new(),
                failure: None,
            })
        })
    }
}

/// The built-in `shell_kill` tool.
pub struct ShellKillTool;

impl Tool for ShellKillTool {
    fn name(&self) -> &str {
        "shell_kill"
    }

    fn description(&self) -> &str {
        "Stop a background command (shell with run_in_background): TERM, then KILL after a grace, to its whole process group. Returns what it printed since the last read."
    }

    fn display(&self) -> Display {
        Display::Output
    }

    fn summary(&self, args: &Value) -> String {
        args["id"].as_str().unwrap_or_default().chars().take(80).collect()
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string("id", "The id shell returned (bg1, …)", true)
            .build()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let proc = table(ctx).get(str_arg(&args, "id")?)?;
            let was_running = proc.running();
            if was_running {
                proc.stop();
                // KILL follows TERM after the grace; the pipes may take a moment more.
                proc.wait_end(KILL_GRACE + DRAIN + Duration::from_secs(1)).await;
            }
            let mut content = proc.read();
            if !was_running {
                content.push_str("\n(it had ended already; nothing was stopped)");
            }
            Ok(ToolOutput {
                content,
                keep: Keep::Tail,
                self_truncated: false,
                images: Vec::new(),
                failure: None,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_well() {
        assert_eq!(age(Duration::from_secs(3)), "3 s");
        assert_eq!(age(Duration::from_secs(242)), "4 min 2 s");
        assert_eq!(age(Duration::from_secs(3900)), "1 h 5 min");
    }
}
