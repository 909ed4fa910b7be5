//! The one protocol between the core and its front ends.
//!
//! Front ends send [`Op`]s and render [`Event`]s. Both are plain serde data so that
//! `--output-format stream-json` can print the event stream as JSON lines and a future
//! front end (or a test) can drive the core without linking to any terminal crate.

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod mode;
pub mod requests;
mod servers;

pub use mode::Mode;
pub use servers::{ServerState, ServerStatus};

/// What a front end asks the core to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Start a user turn with this text.
    UserTurn { text: String },
    /// Stop the running turn: the stream and running tools are cancelled and every pending
    /// tool call still gets a result.
    Interrupt,
    /// The person's answer to a [`Event::Request`] (a question, an undo confirmation, …).
    Respond { id: String, response: Response },
    /// Take back the last turn's file changes (and, if the person confirms it in the
    /// [`RequestKind::Undo`] request that follows, the turn itself); files the person changed
    /// since are skipped unless `force`. When stored contents are missing nothing moves,
    /// unless `partial` (then the rest is restored).
    Undo {
        force: bool,
        #[serde(default)]
        partial: bool,
    },
    /// Re-apply what the last undo took back (confirmed through a request like undo).
    Redo {
        force: bool,
        #[serde(default)]
        partial: bool,
    },
    /// Take a queued prompt back out of the queue (the front end puts it in its composer).
    Unqueue { index: usize },
    /// Switch to a saved session of this project.
    Resume { id: String },
    /// Forget the conversation and start a new one.
    Clear,
    /// Use another model from the next request on.
    SetModel { model: String },
    /// List the models to pick from (`/model`'s picker): answered with
    /// [`Event::ModelList`].
    ListModels,
    /// Switch the mode (`read-only`, `workspace-write`, `full-access`, or `plan`) from the
    /// next tool call on.
    SetSandbox { mode: Mode },
    /// Set how hard a reasoning model thinks from the next request on (`None`: the model's
    /// default).
    SetEffort { effort: Option<crate::provider::Effort> },
    /// Compact the conversation now (`/compact [focus]`).
    Compact { focus: Option<String> },
    /// Run a shell command the person typed (`!command` in the UI) as a turn of its own:
    /// through the `shell` tool's sandbox, rules and approvals, shown in a tool pane, its
    /// output added to the conversation as the person's message, and its file changes
    /// checkpointed like any turn's (so `/undo` takes them back).
    RunCommand { command: String },
    /// Show what the last turn changed in the tree (with `session`, every turn not undone),
    /// from the checkpoints: answered with [`Event::Diff`] or a notice.
    Diff {
        #[serde(default)]
        session: bool,
    },
    /// List the session's background processes: answered with [`Event::BackgroundList`].
    ListProcesses,
    /// Stop a background process (TERM, then KILL, its whole group); answered with a notice
    /// and [`Event::BackgroundList`].
    KillProcess { id: String },
    /// End the session.
    Shutdown,
}

/// One background process of the session, for `/ps`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessView {
    /// What `shell_output` and `shell_kill` take (`bg1`, …).
    pub id: String,
    pub command: String,
    /// Seconds since it started.
    pub age_secs: u64,
    /// `running`, `exited 0`, `killed by signal 9`, `stopped`.
    pub state: String,
    /// The last line it printed (cut short), or empty.
    pub last_line: String,
    pub running: bool,
}

/// How a user turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    /// The model answered without asking for more tools.
    Done,
    /// The iteration cap was reached; every tool call still has its result.
    MaxTurns,
    /// The person interrupted the turn.
    Interrupted,
    /// A provider error or a critical tool error ended the turn.
    Error,
}

/// How a front end shows a tool call. Tools describe their own presentation, so front ends
/// never match on tool names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Display {
    /// Plain text (files, searches, pages).
    #[default]
    Text,
    /// A unified diff: `-`/`+` lines coloured.
    Diff,
    /// A command's output: live while it runs, the end matters most.
    Output,
    /// The todo list.
    Todos,
    /// A sub-agent: its own calls show inside the pane.
    Agent,
}

/// What a front end needs to draw a call of a restored conversation.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CallView {
    /// One line saying what the call does (its key argument).
    pub summary: String,
    pub display: Display,
    /// How long it took (0 when unknown).
    pub duration_ms: u64,
    /// How it did not succeed, when it did not (a restored pane is marked as the live one was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

/// How a finished call went, kept for redrawing it later (a resumed session, an undo).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallOutcome {
    pub duration_ms: u64,
    pub failure: Option<Failure>,
}

/// One finished tool call: the one shape the executor emits, the history keeps and the
/// session records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    pub name: String,
    /// What the model gets (truncated, keys redacted).
    pub content: String,
    pub is_error: bool,
    pub duration_ms: u64,
    #[serde(default)]
    pub display: Display,
    /// Images the tool returned (`read` of a picture, an MCP tool's image content): sent
    /// to the model beside `content`, kept in the session file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<crate::provider::image::Image>,
    /// How the call did not succeed, when it did not: what front ends mark it with. The model
    /// reads `content` (an exit code is in there too); `is_error` is what it is told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

/// How a tool call did not succeed. A command that ran but exited non-zero is not an error
/// result for the model (its output is the answer), but the person sees it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// An error result (`Error: <Kind>: …`).
    Error,
    /// A command that exited with this non-zero code.
    Exit(i32),
    /// A command killed by this signal.
    Signal(i32),
    /// The approval step (a rule, the mode, the person) refused the call.
    Denied,
    /// The person cancelled the question.
    Declined,
    /// The turn was interrupted while the call ran.
    Interrupted,
    /// The call ran out of time.
    TimedOut,
}

impl Failure {
    /// The failure of an error result of this `Error: <Kind>` kind.
    pub fn of_kind(kind: &str) -> Self {
        match kind {
            "Denied" => Self::Denied,
            "Interrupted" => Self::Interrupted,
            "Timeout" => Self::TimedOut,
            _ => Self::Error,
        }
    }

    /// The word front ends show for it (`-p`'s stderr line, the pane's header).
    pub fn word(self) -> String {
        match self {
            Self::Error => "error".to_owned(),
            Self::Exit(code) => format!("exit {code}"),
            Self::Signal(signal) => format!("signal {signal}"),
            Self::Denied => "denied".to_owned(),
            Self::Declined => "declined".to_owned(),
            Self::Interrupted => "interrupted".to_owned(),
            Self::TimedOut => "timed out".to_owned(),
        }
    }
}

impl ToolResult {
    /// How the call failed: its own failure, else `Error` for any error result.
    pub fn failed(&self) -> Option<Failure> {
        self.failure.or(self.is_error.then_some(Failure::Error))
    }
}

/// What the core asks the person. Every kind has a documented default, taken when nobody can
/// answer (in `brute -p` every kind but `question` takes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RequestKind {
    /// The `question` tool's questions. Default: nobody is there to answer.
    Question { questions: Vec<Question> },
    /// Confirm an undo (or redo) of a whole turn, showing what it will restore. Default:
    /// cancelled.
    Undo {
        redo: bool,
        /// What will change, one line a path (`restored src/a.rs (+1 -2)`), and what will be
        /// skipped.
        summary: String,
    },
    /// A tool call beyond what the sandbox mode allows (a write outside the project, a command
    /// asking for full access, a rule's `ask`). Default: denied, naming what would allow it.
    Approval {
        tool: String,
        /// What will happen: the command, or the path.
        summary: String,
        /// More of it: the whole command, or the diff of an edit.
        #[serde(default)]
        detail: String,
        /// Why it needs approval.
        reason: String,
        /// The call's id and its arguments as the model gave them (for a program that
        /// answers approvals: Claude Code's `can_use_tool`, ACP's permission request).
        #[serde(default)]
        call_id: String,
        #[serde(default)]
        input: Value,
    },
    /// A yes/no question from brute itself (e.g. copying a big tree for checkpoints).
    /// Default: no.
    Consent {
        title: String,
        message: String,
        yes: String,
        no: String,
    },
    /// The text of a file as an editor has it open, unsaved changes included (asked only of
    /// a front end that [reads buffers](requests::Requests::reads_buffers)). Default: not
    /// open (the file on disk is read).
    ReadBuffer { path: String },
    /// A file for the editor to write, so its buffer holds the change (asked only of a front
    /// end that [writes buffers](requests::Requests::writes_buffers), and only while no
    /// command runs). Default: not written (brute writes it).
    WriteBuffer { path: String, content: String },
    /// A hook the program driving brute registered (Claude Code SDK's hook callbacks), with
    /// its JSON input. Default: nobody answers (a hook error, which never blocks).
    Hook { callback: String, input: Value },
    /// The model's plan, made in plan mode, to run or to keep working on. Default: nobody is
    /// there (the plan is the run's result, and nothing changes).
    Plan {
        plan: String,
        /// The sandbox mode running it goes back to.
        back_to: crate::sandbox::Mode,
    },
}

impl RequestKind {
    /// The answer taken when no person can give one.
    pub fn default_response(&self) -> Response {
        match self {
            RequestKind::Question { .. }
            | RequestKind::Approval { .. }
            | RequestKind::Plan { .. }
            | RequestKind::Hook { .. }
            | RequestKind::ReadBuffer { .. }
            | RequestKind::WriteBuffer { .. } => Response::NoPerson,
            RequestKind::Undo { .. } => Response::Declined,
            RequestKind::Consent { .. } => Response::Consent { yes: false },
        }
    }
}

/// A person's answer to a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "response", rename_all = "snake_case")]
pub enum Response {
    /// Dismissed (Esc, Ctrl-C).
    Declined,
    /// Nobody is there to answer (headless, no terminal).
    NoPerson,
    /// The answers to a [`RequestKind::Question`], one per question.
    Answers { answers: Vec<String> },
    /// Go ahead with an undo/redo; `rewind_conversation` takes the turn out of the
    /// conversation too.
    Undo { rewind_conversation: bool },
    /// A [`RequestKind::Consent`] answer.
    Consent { yes: bool },
    /// An answer to a [`RequestKind::Approval`]; a denial may say why.
    Approval {
        decision: ApprovalDecision,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// An editor's answer to a [`RequestKind::ReadBuffer`]: the text, or `None` when it does
    /// not have the file open.
    Buffer { text: Option<String> },
    /// An editor's answer to a [`RequestKind::WriteBuffer`]: whether it wrote the file.
    Wrote { ok: bool },
    /// A program's answer to a [`RequestKind::Hook`]: what a command hook would have printed.
    HookOutput { output: Value },
    /// An answer to a [`RequestKind::Plan`]; keeping on planning may say what to change.
    Plan {
        decision: PlanDecision,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
}

/// What the person does with a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanDecision {
    /// Run it in the mode the session was in before planning.
    Run,
    /// Run it with edits in the project allowed without asking (`workspace-write`).
    RunAcceptingEdits,
    /// Not yet: the model keeps planning (with the note, if any).
    KeepPlanning,
}

/// How far an approval reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// This call only.
    Once,
    /// Calls like this one for the rest of the session.
    Session,
    /// Calls like this one in this project from now on (saved in the person's data, never in
    /// the project).
    Project,
    Deny,
}

/// Token counts reported by the provider (defined by the provider layer, which knows nothing
/// of the protocol).
pub use crate::provider::Usage;

/// One question of a `question` tool call, as shown to the person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<QuestionOption>,
    #[serde(default)]
    pub multiple: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A choice offered by a [`Question`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A file (or directory) attached to a prompt by `@path`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// As the prompt named it.
    pub path: String,
    /// The file's line count; `None` for a directory.
    pub lines: Option<u64>,
}

/// Everything the core tells its front ends, in the order it happens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A user turn began.
    TurnStarted { prompt: String },
    /// Images attached to the turn that just started, as people see them
    /// (`[image: shot.png, 640×480]`).
    ImagesAttached { images: Vec<String> },
    /// A file or directory the prompt's `@path` attached to the user message (the front ends
    /// show it as a chip, not its text).
    Attached { attachment: Attachment },
    /// A request to the model is about to be sent (one per loop iteration).
    RequestStarted { iteration: u32 },
    /// Streamed assistant text.
    TextDelta { text: String },
    /// Streamed reasoning ("thinking") text.
    ReasoningDelta { text: String },
    /// The provider failed transiently and the request will be retried.
    Retrying {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        reason: String,
    },
    /// The model asked for a tool call; it is about to run.
    ToolCallStarted {
        call_id: String,
        name: String,
        arguments: Value,
        /// One line saying what the call does, from the tool.
        #[serde(default)]
        summary: String,
        #[serde(default)]
        display: Display,
    },
    /// A chunk of live output from a running tool (e.g. shell).
    ToolOutputDelta { call_id: String, chunk: String },
    /// A tool call finished (successfully or not).
    ToolResult(ToolResult),
    /// The core asks the person something; answer with [`Op::Respond`] and the same `id`.
    /// Several may be outstanding: front ends queue them.
    Request {
        id: String,
        #[serde(flatten)]
        kind: RequestKind,
    },
    /// A request is no longer waiting (answered, or its turn was interrupted).
    RequestClosed { id: String },
    /// The prompts waiting for the running turn to end, oldest first.
    QueueChanged { prompts: Vec<String> },
    /// An interrupt gave the queued prompts back: the front end puts them in its composer.
    QueueReturned { prompts: Vec<String> },
    /// The model requests use from now on (also mid-turn, from the next request).
    ModelChanged { model: String },
    /// The models to pick from (the answer to [`Op::ListModels`]): the one in use, those the
    /// configuration names (`model`, `[models."NAME"]`), and the provider's own list in its
    /// order; `error` says why the provider's list could not be read.
    ModelList {
        current: String,
        configured: Vec<String>,
        provider: Vec<String>,
        error: Option<String>,
    },
    /// The mode tool calls run under from now on (a sandbox mode, or plan).
    SandboxChanged { mode: Mode },
    /// The reasoning effort requests use from now on (`None`: the model's default).
    EffortChanged { effort: Option<crate::provider::Effort> },
    /// What the session cost so far, in USD (only when the model's price is known).
    Cost { total_usd: f64 },
    /// How full the context window is: the estimated tokens of the next request, and the
    /// window when known.
    ContextUsage { tokens: u64, window: Option<u64> },
    /// The conversation is being compacted to fit the context window (about `tokens` now).
    CompactionStarted { tokens: u64 },
    /// The conversation was compacted: estimated tokens before and after, how many old tool
    /// outputs were pruned and whether the rest was summarized.
    CompactionFinished {
        tokens_before: u64,
        tokens_after: u64,
        pruned_outputs: usize,
        summarized: bool,
    },
    /// Token usage of one model request.
    Usage { usage: Usage },
    /// Something the person should know that is not an error (e.g. tools dropped by the cap).
    Notice { message: String },
    /// A tool call waits for the turn's checkpoint to be complete (`waiting`), or no longer
    /// does; `first` when it is the session's first (walked since start-up). Front ends show
    /// it in their status line.
    CheckpointWaiting { waiting: bool, first: bool },
    /// What a turn (or the session) changed, as a unified diff (see [`Op::Diff`]).
    Diff { title: String, diff: String, files: usize },
    /// The MCP servers' status changed (one started, failed, or changed its tools); the whole
    /// list, in config order, for `/mcp`.
    McpStatus { servers: Vec<ServerStatus> },
    /// The tools offered to the model changed (between turns: MCP servers came or went).
    ToolsChanged { tools: Vec<String> },
    /// An error that ends the turn.
    Error { message: String },
    /// The user turn ended; `text` is the assistant's final message.
    TurnFinished { outcome: TurnOutcome, text: String },
    /// The conversation was replaced (resume, or undo/redo of a turn with the conversation):
    /// front ends redraw their transcript from it.
    HistoryReplaced {
        messages: Vec<crate::provider::Message>,
        todos: Vec<TodoItem>,
        /// How to draw each tool call, by call id (for the restored panes).
        #[serde(default)]
        calls: std::collections::BTreeMap<String, CallView>,
    },
    /// The session's todo list changed (it is shown to the person).
    TodosUpdated { todos: Vec<TodoItem> },
    /// An event of a sub-agent, shown inside the pane of the call that started it.
    Nested { parent_call_id: String, event: Box<Event> },
    /// How many background processes run now (one started or ended); for the status line.
    BackgroundChanged { running: usize },
    /// The session's background processes, oldest first (the answer to
    /// [`Op::ListProcesses`] and [`Op::KillProcess`]).
    BackgroundList { processes: Vec<ProcessView> },
}

/// The state of a todo item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

/// One entry of the session's todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    pub id: String,
    pub content: String,
    pub status: TodoStatus,
}

/// Where the core sends its [`Event`]s. Cloneable; sending never blocks and never fails
/// loudly (a front end that went away simply stops listening).
#[derive(Debug, Clone)]
pub struct EventSink {
    tx: tokio::sync::mpsc::UnboundedSender<Event>,
    /// Call ids of the sub-agent calls this sink reports for, outermost first.
    parents: Vec<String>,
}

impl EventSink {
    /// Creates a sink and the receiver a front end reads from.
    pub fn channel() -> (Self, tokio::sync::mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (
            Self {
                tx,
                parents: Vec::new(),
            },
            rx,
        )
    }

    /// A sink for a sub-agent started by `parent_call_id`: its events arrive wrapped in
    /// [`Event::Nested`].
    pub fn nested(&self, parent_call_id: &str) -> Self {
        let mut parents = self.parents.clone();
        parents.push(parent_call_id.to_owned());
        Self {
            tx: self.tx.clone(),
            parents,
        }
    }

    /// Sends one event.
    pub fn emit(&self, event: Event) {
        let event = self.parents.iter().rev().fold(event, |event, parent| Event::Nested {
            parent_call_id: parent.clone(),
            event: Box::new(event),
        });
        let _ = self.tx.send(event);
    }
}
