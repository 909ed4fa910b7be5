//! Tools: the [`Tool`] trait every shape of tool is adapted to, the errors tools return,
//! parameter declaration, and the built-in tools (one file each).

pub mod adapter;
pub mod argv;
pub mod background;
pub mod capture;
pub mod command;
pub mod exec;
pub mod fetch;
pub mod fs_search;
pub mod guard;
pub mod html;
pub mod mutation;
pub mod params;
pub mod patch;
pub mod place;
pub mod plan;
pub mod read;
pub mod registry;
pub mod remove;
pub mod shell;
pub mod skill;
pub mod skill_script;
pub mod skills;
pub mod state;
pub mod todo;
pub mod truncate;
pub mod undo;
pub mod web_search;
pub mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::protocol::{Display, Event, EventSink};
pub use adapter::{FnTool, Middleware, Next, Pipeline, fn_tool};
pub use mutation::Snapshots;
pub use params::Params;
pub use registry::Registry;

use state::AgentState;

/// The names of the built-in tools ([`crate::app::builtin_tools`] registers exactly these;
/// a test keeps the two equal). Config and library tools can never take one of them.
pub const BUILTIN_NAMES: &[&str] = &[
    "read",
    "write",
    "patch",
    "remove",
    "undo",
    "fs_search",
    "shell",
    "shell_output",
    "shell_kill",
    "fetch",
    "todo_write",
    "todo_read",
    "question",
    "skill",
    "task",
    "exit_plan_mode",
];

/// Which end of an over-long output the universal truncation keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Keep {
    /// Keep the start (files, searches).
    #[default]
    Head,
    /// Keep the end (command output: the error is usually last).
    Tail,
}

/// What a tool returns on success.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    pub content: String,
    /// Which end universal truncation keeps.
    pub keep: Keep,
    /// The tool already bounded its own output (and wrote its own continuation hint), so the
    /// universal truncation step leaves it alone.
    pub self_truncated: bool,
    /// Images for the model beside `content` (which then says what they are).
    pub images: Vec<crate::provider::image::Image>,
    /// A result that is not an error for the model but is a failure to the person (a
    /// command's non-zero exit, a declined question).
    pub failure: Option<crate::protocol::Failure>,
}

impl From<String> for ToolOutput {
    fn from(content: String) -> Self {
        Self::text(content)
    }
}

impl From<&str> for ToolOutput {
    fn from(content: &str) -> Self {
        Self::text(content)
    }
}

impl ToolOutput {
    /// Plain text, truncated from the end if too long.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }
}

/// A tool failure, returned to the model as `Error: <kind>: <message>`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind}: {message}{}", if *.retryable { " (retryable)" } else { "" })]
pub struct ToolError {
    /// A short CamelCase category, e.g. `NotFound`, `InvalidArguments`.
    pub kind: String,
    pub message: String,
    /// Trying again may succeed (e.g. a network hiccup).
    pub retryable: bool,
    /// The turn cannot go on: abort it with a visible error instead of telling the model.
    pub critical: bool,
}

impl ToolError {
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
            retryable: false,
            critical: false,
        }
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new("NotFound", message)
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new("InvalidArguments", message)
    }
    /// Wraps an I/O error with what was being done.
    pub fn io(doing: impl std::fmt::Display, error: &std::io::Error) -> Self {
        let kind = match error.kind() {
            std::io::ErrorKind::NotFound => "NotFound",
            std::io::ErrorKind::PermissionDenied => "PermissionDenied",
            std::io::ErrorKind::FileTooLarge => "FileTooLarge",
            std::io::ErrorKind::InvalidInput => "SpecialFile",
            _ => "Io",
        };
        Self::new(kind, format!("{doing}: {error}"))
    }
    /// Marks the error retryable.
    pub fn retryable(mut self) -> Self {
        self.retryable = true;
        self
    }
    /// Marks the error critical: it aborts the turn.
    pub fn critical(mut self) -> Self {
        self.critical = true;
        self
    }
}

/// What a running tool may use: its call id, the project root, cancellation, the event sink
/// for live output, the session's snapshot store, and its agent's shared state.
#[derive(Clone)]
pub struct ToolContext {
    pub call_id: String,
    /// The project root: the workspace the guards protect and the sandbox lets commands write.
    pub root: PathBuf,
    /// The working directory: relative paths resolve against it, commands start in it.
    pub cwd: PathBuf,
    /// Cancelled when the person interrupts the turn.
    pub cancel: CancellationToken,
    pub events: EventSink,
    /// Pre-mutation snapshots, for undo.
    pub snapshots: Arc<Snapshots>,
    /// Where truncated outputs are saved in full.
    pub overflow_dir: Option<PathBuf>,
    /// The agent this call belongs to (todo list, settings, provider for sub-agents).
    pub agent: Arc<AgentState>,
    /// This call's operation id in the snapshot store.
    pub op: u64,
    /// The place in the per-file queue reserved for this call, in call order; the
    /// [`adapter::FileQueue`] middleware waits on it.
    pub(crate) ticket: Arc<std::sync::Mutex<Option<mutation::Ticket>>>,
    /// Set by the approval step when the person (or `--yolo`) approved this call beyond what the
    /// sandbox mode allows: only then may a file tool act outside the writable roots
    /// ([`place`]).
    pub(crate) beyond_roots: Arc<std::sync::atomic::AtomicBool>,
    /// Where the path of a call the person approved led when they approved it.
    pub(crate) approved_target: Arc<std::sync::Mutex<Option<PathBuf>>>,
    /// Set by [`ToolContext::end_turn`]: the turn's answer, with no further model request.
    pub(crate) ends_turn: Arc<std::sync::Mutex<Option<String>>>,
}

impl ToolContext {
    /// A context for running a tool outside an executor (tests, examples, embedding).
    pub fn standalone(agent: Arc<AgentState>, events: EventSink) -> Self {
        let snapshots = Arc::new(Snapshots::default());
        Self {
            call_id: "standalone".to_owned(),
            root: agent.root.clone(),
            cwd: agent.cwd.clone(),
            cancel: CancellationToken::new(),
            events,
            op: snapshots.next_op(),
            snapshots,
            overflow_dir: agent.overflow_dir.clone(),
            agent,
            ticket: Arc::default(),
            beyond_roots: Arc::default(),
            approved_target: Arc::default(),
            ends_turn: Arc::default(),
        }
    }

    /// Ends the turn once this message's calls are done, with `answer` as its final text
    /// (no further model request): a plan nobody can approve is the run's result.
    pub fn end_turn(&self, answer: impl Into<String>) {
        *self.ends_turn.lock().unwrap_or_else(|e| e.into_inner()) = Some(answer.into());
    }

    /// The answer [`ToolContext::end_turn`] left, if any.
    pub(crate) fn take_end_turn(&self) -> Option<String> {
        self.ends_turn.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Whether this call was approved beyond the sandbox mode (see [`ToolContext::beyond_roots`]).
    pub fn approved_beyond_roots(&self) -> bool {
        self.beyond_roots.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Marks this call approved beyond the sandbox mode (the approval step does).
    pub(crate) fn approve_beyond_roots(&self) {
        self.beyond_roots.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Pins the resolved path the person was shown when approving this call ([`place`]
    /// refuses to act if it leads elsewhere by then).
    pub(crate) fn pin_approved_target(&self, target: Option<PathBuf>) {
        *self.approved_target.lock().unwrap_or_else(|e| e.into_inner()) = target;
    }

    /// The path pinned by [`ToolContext::pin_approved_target`].
    pub fn approved_target(&self) -> Option<PathBuf> {
        self.approved_target.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Takes the reserved queue ticket, if any.
    pub(crate) fn take_ticket(&self) -> Option<mutation::Ticket> {
        self.ticket.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Resolves a path argument against the working directory.
    pub fn resolve(&self, path: &str) -> PathBuf {
        resolve(&self.cwd, path)
    }

    /// Streams a chunk of live output to the call's pane.
    pub fn output(&self, chunk: impl Into<String>) {
        self.events.emit(Event::ToolOutputDelta {
            call_id: self.call_id.clone(),
            chunk: chunk.into(),
        });
    }

    /// Asks the person (a question, …) and waits; the kind's default when nobody can answer,
    /// `Declined` when the turn is interrupted first.
    pub async fn ask(&self, kind: crate::protocol::RequestKind) -> crate::protocol::Response {
        self.agent.requests.ask(kind, &self.cancel).await
    }

    /// Shows a path relative to the working directory when it lies inside it (the form the
    /// model can pass back).
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.cwd).unwrap_or(path).display().to_string()
    }
}

/// Resolves `path` against `root` (absolute paths stay as they are; `~/` means home).
pub fn resolve(root: &Path, path: &str) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    let p = Path::new(path);
    if p.is_absolute() { p.to_path_buf() } else { root.join(p) }
}

/// What a tool's calls can change, for plan mode ([`plan`]): it offers and runs only tools
/// that change nothing outside the read-only sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Reads, searches, asks; changes at most the session's own state (the todo list).
    Reads,
    /// Its commands run in the session's sandbox: they change what its mode lets them.
    Sandbox,
    /// Files, or anything else: what a tool that says nothing is taken to do.
    Anything,
}

/// What an external tool (one brute does not implement, e.g. an MCP server's) declares, for
/// the approval step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct External {
    /// It says it changes nothing (MCP `annotations.readOnlyHint`): allowed without asking.
    pub read_only: bool,
    /// A rule covering the tool's whole family (e.g. `mcp__github__*`), for messages.
    pub family: String,
}

/// The neutral shape every tool is adapted to: a name, a description, a JSON Schema for the
/// parameters, and `call`. Built-ins implement it directly; other shapes are adapted to it.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    /// Tells the model when and how to use the tool; it is sent with every request, so keep it
    /// short and exact.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object (see [`Params`]).
    fn parameters(&self) -> Value;
    /// The file this call would change, if any: calls on the same file are serialized in call
    /// order, calls on different files run in parallel.
    fn mutated_path(&self, _args: &Value) -> Option<String> {
        None
    }
    /// One line saying what a call does, for the person (its key argument by default).
    fn summary(&self, args: &Value) -> String {
        key_argument(args)
    }
    /// How front ends show this tool's calls.
    fn display(&self) -> Display {
        Display::Text
    }
    /// Whether the path this tool changes is written through a symlink (write, patch) or the
    /// entry itself is changed (remove deletes a link, not its target): decides what the
    /// snapshot for undo captures.
    fn follows_links(&self) -> bool {
        true
    }
    /// Whether the pipeline snapshots the path a call changes before it runs, so undo can
    /// bring it back; `undo` itself restores snapshots and takes none.
    fn snapshot_before(&self) -> bool {
        true
    }
    /// Whether calls start processes (they run in the sandbox; where none is available each
    /// call needs the person's approval).
    fn runs_commands(&self) -> bool {
        false
    }
    /// Whether calls may change files brute cannot know of (beyond the path they name and the
    /// processes they start): such a call counts as a command's time (see [`crate::busy`]),
    /// so the turn's end looks at the whole tree, not only at what the built-in tools wrote.
    fn changes_unknown_files(&self) -> bool {
        false
    }
    /// What calls can change (see [`Reach`]): a tool that runs commands runs them in the
    /// session's sandbox, any other may change anything unless it says otherwise.
    fn reach(&self) -> Reach {
        match self.runs_commands() {
            true => Reach::Sandbox,
            false => Reach::Anything,
        }
    }
    /// Offered only in plan mode (the tool that hands the plan over).
    fn only_while_planning(&self) -> bool {
        false
    }
    /// The justification when a call asks to run beyond the sandbox (an approval request).
    fn escalation(&self, _args: &Value) -> Option<String> {
        None
    }
    /// What this tool's `tool(pattern)` permission rules match on: which argument, read as a
    /// command line, a path or text. A tool that says nothing gets the rules' guess.
    fn rule_subject(&self) -> crate::permission::RuleSubject {
        crate::permission::RuleSubject::Guess
    }
    /// `Some` for a tool brute does not implement (an MCP server's): the approval step then
    /// decides per tool rather than per argument, from what the tool declares about itself.
    fn external(&self) -> Option<External> {
        None
    }
    /// Whether [`Tool::parameters`] is checked as JSON Schema draft 7. brute's own schemas keep
    /// to keywords that mean the same in draft 7 and 2020-12, and draft 7's meta-schema is
    /// built in less than half of 2020-12's time (0.6 against 1.5 ms, on a run's first tool
    /// call). `false` reads the draft from the schema (`$schema`, else 2020-12): the answer
    /// for any schema brute did not write.
    fn parameters_in_draft_7(&self) -> bool {
        true
    }
    /// Runs the tool. Arguments were already validated against [`Tool::parameters`].
    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// The argument worth showing for a call (a path, a command, a pattern…), first line only,
/// cut at 80 characters: the default [`Tool::summary`].
pub fn key_argument(arguments: &Value) -> String {
    const KEYS: &[&str] = &[
        "file_path",
        "path",
        "command",
        "pattern",
        "glob",
        "url",
        "name",
        "description",
        "task",
    ];
    let value = KEYS
        .iter()
        .find_map(|k| arguments.get(*k).and_then(Value::as_str))
        .unwrap_or("");
    let first_line = value.lines().next().unwrap_or("");
    match first_line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &first_line[..cut]),
        None if first_line.len() < value.len() => format!("{first_line}…"),
        None => first_line.to_owned(),
    }
}

/// Reads a required string argument (validation guarantees presence; this guards anyway).
pub(crate) fn str_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::invalid(format!("missing string argument `{name}`")))
}
