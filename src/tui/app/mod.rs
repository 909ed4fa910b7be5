//! The interactive front end's state and its update logic, free of any terminal: events from
//! the core and keys from the person go in; actions (ops for the core, quit, copy) come out.
//! Tests drive it directly and render it on ratatui's `TestBackend`.
//!
//! The state and its small helpers live here; [`events`] applies the core's events, [`keys`]
//! the person's keys and pastes, [`submit`] sends what the person typed.

mod events;
mod keys;
mod submit;

use std::collections::VecDeque;

use super::clipboard::Clipboard;
use super::composer::Composer;
use super::confirm::Confirm;
use super::dialog::Dialog;
use super::files::FileIndex;
use super::history::HistoryFile;
use super::picker::{Picker, SessionRow};
use super::sanitize::sanitize;
use super::search::HistorySearch;
use super::transcript::{Cached, Entry, NoticeKind, ToolPane, ViewFlags};
use crate::protocol::{Op, TodoItem, Usage};

/// What the event loop must do after an update.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Op(Op),
    Quit,
    /// Open `$EDITOR` on this text; its result replaces the composer's ([`App::edited`]).
    Editor(String),
    /// Toggle mouse capture (wheel scrolling vs. the terminal's own selection).
    ToggleMouse,
    /// Clear and redraw the whole screen.
    Redraw,
    /// Read the clipboard's image off the UI thread ([`App::clipboard`]'s reader) and keep it;
    /// the outcome goes to [`App::image_pasted`].
    PasteImage,
}

/// What the status line shows about the session.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionInfo {
    pub provider: String,
    pub model: String,
    pub cwd: String,
    /// The mode tool calls run under, a sandbox mode or plan (shown in the status line).
    pub sandbox: crate::permission::Mode,
    /// Where requests go, and the session's id (for `/status`).
    pub base_url: String,
    pub session_id: Option<String>,
    /// The reasoning effort requests ask for (`None`: the model's default).
    pub effort: Option<crate::provider::Effort>,
}

/// How `/effort` and `/status` name a reasoning effort.
pub(super) fn effort_label(effort: Option<crate::provider::Effort>) -> &'static str {
    effort.map_or("the model's default", crate::provider::Effort::as_str)
}

/// A completion popup over the composer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Popup {
    pub items: Vec<(String, String)>,
    pub selected: usize,
}

/// Rows a popup shows at most; the rest scroll into view with the selection.
pub const POPUP_ROWS: usize = 8;
/// `@` completions offered (the popup scrolls through them).
const FILE_MATCHES: usize = 50;

impl Popup {
    /// The index of the first item shown in `rows` rows, keeping the selection in view.
    pub fn first_shown(&self, rows: usize) -> usize {
        (self.selected + 1).saturating_sub(rows.max(1))
    }
}

/// A dialog answering one request of the core.
#[derive(Debug, Clone, PartialEq)]
pub enum Modal {
    /// The `question` tool's questions.
    Question { id: String, dialog: Dialog },
    /// An undo/redo confirmation or a consent.
    Confirm(Confirm),
}

impl Modal {
    /// The request this dialog answers.
    pub fn id(&self) -> &str {
        match self {
            Modal::Question { id, .. } => id,
            Modal::Confirm(confirm) => &confirm.id,
        }
    }
}

/// The whole interactive state.
pub struct App {
    pub entries: Vec<Cached>,
    pub composer: Composer,
    /// Open requests, oldest first; the first is shown, the rest wait their turn.
    pub modals: VecDeque<Modal>,
    /// Prompts sent while a turn runs, waiting for it (the core's queue, as last reported).
    pub queued: Vec<String>,
    pub popup: Option<Popup>,
    pub session: SessionInfo,
    pub usage: Usage,
    pub busy: bool,
    pub running_tools: usize,
    /// How many background processes run (the core's count, as last reported).
    pub background: usize,
    /// A tool call waits for the turn's checkpoint (`Some(true)`: the session's first).
    pub checkpoint_wait: Option<bool>,
    pub tick: usize,
    /// Lines scrolled up from the bottom; 0 follows the newest output.
    pub scroll: usize,
    /// While scrolled up: the entry count and the last entry's height at the last draw, to
    /// keep the view still as output arrives.
    pub scroll_anchor: Option<(usize, usize)>,
    pub flags: ViewFlags,
    pub files: FileIndex,
    pub tools: Vec<String>,
    /// Custom slash commands as `(/name, description)`; the core expands them.
    pub custom_commands: Vec<(String, String)>,
    /// The MCP servers' status as the core last reported it (for `/mcp`).
    pub mcp: Vec<crate::mcp::ServerStatus>,
    pub todos: Vec<TodoItem>,
    /// Saved sessions of this directory, newest first (for `/resume`).
    pub sessions: Vec<SessionRow>,
    /// Lists the saved sessions again when `/resume` opens its picker.
    pub list_sessions: Option<Box<dyn Fn() -> Vec<SessionRow>>>,
    /// `/resume`'s picker, when open.
    pub picker: Option<Picker>,
    /// Ctrl-R's history search, when open.
    pub search: Option<HistorySearch>,
    /// Where prompts are kept across sessions (`None`: not kept).
    pub history_file: Option<HistoryFile>,
    /// Where `/copy` copies to, and Ctrl-V reads an image from.
    pub clipboard: Box<dyn Clipboard>,
    /// Whether a Ctrl-V is still reading the clipboard.
    pasting: bool,
    /// The id `/resume` asked for, taken as the current session when the history arrives.
    resuming: Option<String>,
    /// Prompts sent with large pastes: (the text sent, what the transcript shows instead).
    sent_with_pastes: VecDeque<(String, String)>,
    /// Whether the terminal reports the mouse (the wheel scrolls the transcript).
    pub mouse_captured: bool,
    ctrl_c_armed: bool,
    pub(super) last_answer: String,
    /// Set when something changed and the screen must be redrawn.
    pub dirty: bool,
    /// What to write to call the person (a bell, OSC 9), taken by the terminal loop.
    pub notification: Option<String>,
    /// How the person is called (the `notify` setting).
    pub notify: super::notify::Notify,
    /// Whether links are drawn as OSC 8 hyperlinks (the `hyperlinks` setting).
    pub hyperlinks: bool,
    /// Whether the terminal supports hyperlinks, still being found out (see
    /// [`App::settle_hyperlinks`]).
    pub hyperlinks_pending: Option<std::thread::JoinHandle<bool>>,
    /// The hyperlinks of the frame last drawn (see [`super::hyperlink`]).
    pub links: Vec<super::hyperlink::Run>,
    /// Whether the terminal has focus (as far as it reports; assumed until it says otherwise).
    pub focused: bool,
    /// The context used by the last request (tokens) and the window, when reported.
    pub context: Option<(u64, Option<u64>)>,
    /// What the session cost so far (USD), when the model's price is known.
    pub cost_usd: Option<f64>,
}

impl App {
    pub fn new(session: SessionInfo, tools: Vec<String>, files: Vec<String>) -> Self {
        Self::with_files(session, tools, FileIndex::new(files))
    }

    /// An app whose `@` completion uses `files` (listed in the background by the UI).
    pub fn with_files(session: SessionInfo, tools: Vec<String>, files: FileIndex) -> Self {
        Self {
            entries: Vec::new(),
            composer: Composer::new(),
            modals: VecDeque::new(),
            queued: Vec::new(),
            popup: None,
            session,
            usage: Usage::default(),
            busy: false,
            running_tools: 0,
            background: 0,
            checkpoint_wait: None,
            tick: 0,
            scroll: 0,
            scroll_anchor: None,
            flags: ViewFlags::default(),
            files,
            tools,
            custom_commands: Vec::new(),
            mcp: Vec::new(),
            todos: Vec::new(),
            sessions: Vec::new(),
            list_sessions: None,
            picker: None,
            search: None,
            history_file: None,
            clipboard: Box::new(super::clipboard::SystemOrOsc52::new(std::io::sink(), false, false)),
            pasting: false,
            resuming: None,
            sent_with_pastes: VecDeque::new(),
            mouse_captured: true,
            ctrl_c_armed: false,
            last_answer: String::new(),
            dirty: true,
            notification: None,
            notify: super::notify::Notify::default(),
            hyperlinks: false,
            hyperlinks_pending: None,
            links: Vec::new(),
            focused: true,
            context: None,
            cost_usd: None,
        }
    }

    fn push(&mut self, entry: Entry) {
        self.push_cached(Cached::new(entry));
    }

    /// Adds an entry; the one before it is complete now (a streamed answer renders in full).
    fn push_cached(&mut self, cached: Cached) {
        if let Some(last) = self.entries.last_mut() {
            last.close();
        }
        self.entries.push(cached);
    }

    /// Takes the answer to whether links are on once it is in (until then they are off).
    pub fn settle_hyperlinks(&mut self) {
        if self.hyperlinks_pending.as_ref().is_some_and(|p| p.is_finished())
            && let Some(pending) = self.hyperlinks_pending.take()
        {
            self.hyperlinks = pending.join().unwrap_or(false);
        }
    }

    /// Adds the welcome header (version, model, directory, sandbox, tips).
    pub fn welcome(&mut self) {
        self.push(Entry::Welcome(super::transcript::Welcome {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            provider: self.session.provider.clone(),
            model: self.session.model.clone(),
            cwd: self.session.cwd.clone(),
            sandbox: self.session.sandbox.as_str().to_owned(),
        }));
        self.dirty = true;
    }

    /// Adds a notice line to the transcript.
    pub fn notice(&mut self, kind: NoticeKind, text: impl Into<String>) {
        self.push(Entry::Notice(kind, text.into()));
        self.dirty = true;
    }

    /// Whether anything animates (the spinner needs ticks).
    pub fn animating(&self) -> bool {
        self.busy || self.entries.iter().any(|e| e.entry.animated())
    }

    /// Advances the spinner.
    pub fn on_tick(&mut self) {
        self.tick = self.tick.wrapping_add(1);
        if self.animating() {
            self.dirty = true;
        }
    }

    fn find_pane<'a>(panes: impl Iterator<Item = &'a mut ToolPane>, call_id: &str) -> Option<&'a mut ToolPane> {
        panes.into_iter().find(|p| p.call_id == call_id)
    }

    fn pane_mut(&mut self, call_id: &str) -> Option<(&mut ToolPane, usize)> {
        let index = self
            .entries
            .iter()
            .rposition(|e| matches!(&e.entry, Entry::Tool(p) if p.call_id == call_id))?;
        self.entries[index].touch();
        match &mut self.entries[index].entry {
            Entry::Tool(pane) => Some((pane, index)),
            _ => None,
        }
    }

    fn append_stream(&mut self, reasoning: bool, text: &str) {
        let text = sanitize(text);
        if let Some(last) = self.entries.last_mut() {
            match (&mut last.entry, reasoning) {
                (Entry::Assistant(existing), false) | (Entry::Reasoning(existing), true) => {
                    existing.push_str(&text);
                    last.touch();
                    return;
                }
                _ => {}
            }
        }
        self.push_cached(if reasoning {
            Cached::new(Entry::Reasoning(text))
        } else {
            Cached::streaming(Entry::Assistant(text))
        });
    }

    /// What the status line says the agent is doing.
    pub fn state_label(&self) -> String {
        if !self.modals.is_empty() {
            "waiting for your answer".to_owned()
        } else if let Some(first) = self.checkpoint_wait {
            if first {
                "waiting for the first checkpoint…".to_owned()
            } else {
                "waiting for the turn's checkpoint…".to_owned()
            }
        } else if self.running_tools > 0 {
            format!(
                "running {} tool{}",
                self.running_tools,
                if self.running_tools == 1 { "" } else { "s" }
            )
        } else if self.busy {
            "thinking".to_owned()
        } else {
            "idle".to_owned()
        }
    }

    /// The conversation as plain text, printed to the terminal on exit.
    pub fn transcript_text(&self) -> String {
        self.entries
            .iter()
            .map(|e| e.entry.plain())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The context meter for the status line: `ctx 42% 84k/200k`, or the tokens alone when the
/// window is unknown.
pub fn context_label(context: Option<(u64, Option<u64>)>) -> Option<String> {
    let (tokens, window) = context?;
    let k = |n: u64| {
        if n >= 1000 {
            format!("{}k", n / 1000)
        } else {
            n.to_string()
        }
    };
    Some(match window {
        Some(window) if window > 0 => format!("ctx {}% {}/{}", tokens * 100 / window, k(tokens), k(window)),
        _ => format!("ctx {}", k(tokens)),
    })
}

/// What a mode lets the model do, in a few words.
pub fn mode_help(mode: crate::permission::Mode) -> &'static str {
    match mode {
        crate::permission::Mode::ReadOnly => {
            "commands may read but not write files, and have no network; edits need your approval"
        }
        crate::permission::Mode::WorkspaceWrite => {
            "commands may write inside the project (not .git/ or .brute/) and have no network; more needs your approval"
        }
        crate::permission::Mode::FullAccess => "commands run unconfined, with the network, as you",
        crate::permission::Mode::Plan => {
            "planning: read-only tools and commands, nothing changes; the model ends with a plan for you to run or send back"
        }
    }
}
