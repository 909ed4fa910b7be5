//! The interactive front end's state and its update logic, free of any terminal: events from
//! the core and keys from the person go in; actions (ops for the core, quit, copy) come out.
//! Tests drive it directly and render it on ratatui's `TestBackend`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use std::collections::VecDeque;

use super::clipboard::Clipboard;
use super::commands::COMMANDS;
use super::composer::Composer;
use super::confirm::{Confirm, ConfirmOutcome};
use super::dialog::{Dialog, DialogOutcome};
use super::files::FileIndex;
use super::history::HistoryFile;
use super::picker::{Picker, PickerOutcome, SessionRow};
use super::sanitize::sanitize;
use super::search::HistorySearch;
use super::transcript::{Cached, Entry, NoticeKind, ToolPane, ToolStatus, ViewFlags};
use crate::protocol::{Event, Op, RequestKind, Response, TodoItem, TurnOutcome, Usage};

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
    /// Where `/copy` copies to.
    pub clipboard: Box<dyn Clipboard>,
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

    /// Applies one event from the core.
    pub fn on_event(&mut self, event: Event) {
        self.dirty = true;
        match event {
            Event::TurnStarted { prompt } => {
                self.busy = true;
                let shown = self.shown_prompt(&prompt);
                self.push(Entry::User(shown, Vec::new()));
                self.scroll = 0;
            }
            Event::ImagesAttached { images } => {
                // Under the prompt they came with.
                if let Some(last) = self.entries.last_mut()
                    && let Entry::User(shown, _) = &mut last.entry
                {
                    for label in images {
                        shown.push('\n');
                        shown.push_str(&sanitize(&label));
                    }
                    last.touch();
                }
            }
            Event::Attached { attachment } => {
                if let Some(cached) = self
                    .entries
                    .iter_mut()
                    .rev()
                    .find(|c| matches!(c.entry, Entry::User(..)))
                {
                    if let Entry::User(_, attached) = &mut cached.entry {
                        attached.push(attachment);
                    }
                    cached.touch();
                }
            }
            Event::RequestStarted { .. } => {}
            Event::CheckpointWaiting { waiting, first } => {
                self.checkpoint_wait = waiting.then_some(first);
            }
            Event::TextDelta { text } => self.append_stream(false, &text),
            Event::ReasoningDelta { text } => self.append_stream(true, &text),
            Event::Retrying {
                attempt,
                max_attempts,
                delay_ms,
                reason,
            } => self.notice(
                NoticeKind::Info,
                format!(
                    "retrying ({attempt}/{max_attempts}) in {delay_ms} ms: {}",
                    sanitize(&reason)
                ),
            ),
            Event::ToolCallStarted {
                call_id,
                name,
                summary,
                display,
                ..
            } => {
                self.running_tools += 1;
                let pane = ToolPane::new(&call_id, &name, &summary, display).at(self.tick);
                self.push(Entry::Tool(pane));
            }
            Event::ToolOutputDelta { call_id, chunk } => {
                if let Some((pane, _)) = self.pane_mut(&call_id) {
                    pane.push_live(&chunk);
                }
            }
            Event::ToolResult(result) => {
                self.running_tools = self.running_tools.saturating_sub(1);
                if let Some((pane, _)) = self.pane_mut(&result.call_id) {
                    pane.result = super::sanitize::sanitize_keep_tabs(&result.content);
                    pane.status = ToolStatus::Done {
                        failure: result.failed(),
                        duration_ms: result.duration_ms,
                    };
                }
            }
            Event::Request { id, kind } => self.open_request(id, kind),
            Event::RequestClosed { id } => self.modals.retain(|m| m.id() != id),
            Event::QueueChanged { prompts } => self.queued = prompts,
            Event::QueueReturned { prompts } => {
                let mut text = prompts.join("\n\n");
                if !self.composer.is_empty() {
                    text = format!("{}\n\n{text}", self.composer.text());
                }
                self.composer.set(&text);
                self.notice(
                    NoticeKind::Info,
                    format!(
                        "the interrupt kept {} queued prompt{} from running: back in the composer to send again or drop",
                        prompts.len(),
                        if prompts.len() == 1 { "" } else { "s" }
                    ),
                );
            }
            Event::ContextUsage { tokens, window } => self.context = Some((tokens, window)),
            Event::Cost { total_usd } => self.cost_usd = Some(total_usd),
            Event::CompactionStarted { tokens } => {
                self.notice(
                    NoticeKind::Info,
                    format!("compacting the conversation (about {tokens} tokens)…"),
                );
            }
            Event::CompactionFinished {
                tokens_before,
                tokens_after,
                pruned_outputs,
                summarized,
            } => {
                let how = match (pruned_outputs, summarized) {
                    (0, true) => "the earlier turns were summarized".to_owned(),
                    (n, true) => format!("{n} old tool outputs pruned, the earlier turns summarized"),
                    (n, false) => format!("{n} old tool outputs pruned"),
                };
                self.notice(
                    NoticeKind::Info,
                    format!(
                        "── compacted: about {tokens_before} → {tokens_after} tokens; {how}. Kept: your messages, the todo list, the files changed and the last turn. The model sees the compacted conversation; this transcript keeps everything. ──"
                    ),
                );
            }
            Event::SandboxChanged { mode } => {
                self.session.sandbox = mode;
                let what = match mode {
                    crate::permission::Mode::Plan => "mode",
                    _ => "sandbox",
                };
                self.notice(
                    NoticeKind::Info,
                    format!("{what}: {} ({})", mode.as_str(), mode_help(mode)),
                );
            }
            Event::EffortChanged { effort } => {
                self.session.effort = effort;
                self.notice(
                    NoticeKind::Info,
                    format!("reasoning effort: {} (from the next request)", effort_label(effort)),
                );
            }
            Event::ModelChanged { model } => {
                self.notice(
                    NoticeKind::Info,
                    format!("model: {} (from the next request)", sanitize(&model)),
                );
                self.session.model = model;
            }
            Event::Usage { usage } => self.usage.add(usage),
            Event::Notice { message } => self.notice(NoticeKind::Info, sanitize(&message)),
            Event::Diff { title, diff, files } => self.push(Entry::Diff {
                title: sanitize(&title),
                diff: sanitize(&diff),
                files,
            }),
            Event::McpStatus { servers } => self.mcp = servers,
            Event::BackgroundChanged { running } => self.background = running,
            Event::BackgroundList { processes } => {
                self.notice(NoticeKind::Info, super::commands::ps_report(&processes));
            }
            Event::ToolsChanged { tools } => self.tools = tools,
            Event::Error { message } => self.notice(NoticeKind::Error, format!("error: {}", sanitize(&message))),
            Event::TurnFinished { outcome, text } => {
                self.checkpoint_wait = None;
                if let Some(last) = self.entries.last_mut() {
                    last.close();
                }
                self.busy = false;
                self.running_tools = 0;
                self.last_answer = text;
                self.call_person(super::notify::Reason::TurnFinished);
                match outcome {
                    TurnOutcome::Interrupted => self.notice(NoticeKind::Info, "interrupted"),
                    TurnOutcome::MaxTurns | TurnOutcome::Done | TurnOutcome::Error => {}
                }
            }
            Event::TodosUpdated { todos } => {
                self.todos = todos;
                let rendered = crate::tool::todo::render(&self.todos);
                self.notice(NoticeKind::Info, format!("todo list:\n{}", rendered.trim_end()));
            }
            Event::Nested { parent_call_id, event } => self.on_nested(&parent_call_id, *event),
            Event::HistoryReplaced { messages, todos, calls } => {
                if let Some(id) = self.resuming.take() {
                    self.session.session_id = Some(id);
                }
                self.load_history(&messages, todos, &calls);
            }
        }
    }

    /// Queues the bell or notification for `reason`, if the setting and the focus call for one.
    fn call_person(&mut self, reason: super::notify::Reason) {
        if let Some(sequence) = self.notify.sequence(reason, self.focused) {
            self.notification = Some(sequence);
        }
    }

    /// The terminal gained or lost focus (`?1004` reports).
    pub fn on_focus(&mut self, focused: bool) {
        self.focused = focused;
    }

    /// Opens the dialog for a request (queued behind any already open).
    fn open_request(&mut self, id: String, kind: RequestKind) {
        if matches!(kind, RequestKind::Approval { .. } | RequestKind::Plan { .. }) {
            self.call_person(super::notify::Reason::ApprovalWaiting);
        }
        // The plan stays in the transcript, whatever the person does with it.
        if let RequestKind::Plan { plan, .. } = &kind {
            self.push(Entry::Assistant(sanitize(plan)));
        }
        let modal = match &kind {
            RequestKind::Question { questions } if !questions.is_empty() => Modal::Question {
                id,
                dialog: Dialog::new(questions.clone()),
            },
            RequestKind::Question { .. } => return,
            other => match Confirm::for_request(&id, other) {
                Some(confirm) => Modal::Confirm(confirm),
                None => return,
            },
        };
        self.modals.push_back(modal);
    }

    /// Rebuilds the transcript from a conversation (a resumed session, or after undo).
    pub fn load_history(
        &mut self,
        messages: &[crate::provider::Message],
        todos: Vec<TodoItem>,
        calls: &std::collections::BTreeMap<String, crate::protocol::CallView>,
    ) {
        use crate::provider::Message;
        self.entries.clear();
        self.scroll = 0;
        self.todos = todos;
        for message in messages {
            match message {
                Message::User { text, images } => {
                    let (prompt, attached) = crate::agent::attach_text::split(text);
                    let mut shown = super::paste::shown(&prompt);
                    for image in images {
                        shown.push('\n');
                        shown.push_str(&sanitize(&image.label()));
                    }
                    self.push(Entry::User(shown, attached));
                }
                Message::Assistant { text, tool_calls, .. } => {
                    if !text.is_empty() {
                        self.push(Entry::Assistant(sanitize(text)));
                    }
                    for call in tool_calls {
                        let view = calls.get(&call.id).cloned().unwrap_or_default();
                        self.push(Entry::Tool(ToolPane::new(
                            &call.id,
                            &call.name,
                            &view.summary,
                            view.display,
                        )));
                    }
                }
                Message::Tool {
                    call_id,
                    content,
                    is_error,
                    ..
                } => {
                    if let Some((pane, _)) = self.pane_mut(call_id) {
                        pane.result = super::sanitize::sanitize_keep_tabs(content);
                        pane.status = ToolStatus::Done {
                            failure: is_error.then_some(crate::protocol::Failure::Error),
                            duration_ms: calls.get(call_id).map_or(0, |v| v.duration_ms),
                        };
                    }
                }
            }
        }
        if let Some(Message::Assistant { text, .. }) =
            messages.iter().rev().find(|m| matches!(m, Message::Assistant { .. }))
        {
            self.last_answer = text.clone();
        }
        self.dirty = true;
    }

    fn on_nested(&mut self, parent: &str, event: Event) {
        let tick = self.tick;
        let Some((pane, _)) = self.pane_mut(parent) else { return };
        match event {
            Event::ToolCallStarted {
                call_id,
                name,
                summary,
                display,
                ..
            } => pane
                .children
                .push(ToolPane::new(&call_id, &name, &summary, display).at(tick)),
            Event::ToolResult(result) => {
                if let Some(child) = Self::find_pane(pane.children.iter_mut(), &result.call_id) {
                    child.result = sanitize(&result.content);
                    child.status = ToolStatus::Done {
                        failure: result.failed(),
                        duration_ms: result.duration_ms,
                    };
                }
            }
            Event::Nested { event, .. } => {
                // Deeper sub-agents show as their outermost call.
                if let Event::ToolCallStarted {
                    call_id,
                    name,
                    summary,
                    display,
                    ..
                } = *event
                {
                    pane.children
                        .push(ToolPane::new(&call_id, &name, &summary, display).at(tick));
                }
            }
            _ => {}
        }
    }

    /// Scrolls the transcript; positive is up (back in time).
    pub fn scroll_by(&mut self, lines: isize) {
        self.scroll = self.scroll.saturating_add_signed(lines);
        self.dirty = true;
    }

    /// A bracketed paste.
    pub fn on_paste(&mut self, text: &str) {
        if let Some(Modal::Question { dialog, .. }) = self.modals.front_mut() {
            for c in text.chars().filter(|c| !c.is_control()) {
                dialog.type_char(c);
            }
        } else if !self.modals.is_empty() {
            // A confirmation takes keys, not text.
        } else {
            self.composer.paste(&sanitize(&super::paste::line_breaks(text)));
            self.update_popup();
        }
        self.dirty = true;
    }

    /// Applies one key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Action> {
        self.dirty = true;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        self.ctrl_c_armed = false;
        if !self.modals.is_empty() {
            return self.modal_key(key);
        }
        if self.picker.is_some() {
            return self.picker_key(key);
        }
        if self.search.is_some() && self.search_key(key) {
            return Vec::new();
        }
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match (key.code, ctrl) {
            (KeyCode::Char('l'), true) => return vec![Action::Redraw],
            (KeyCode::Char('o'), true) => {
                self.flags.expand_tools = !self.flags.expand_tools;
                return Vec::new();
            }
            (KeyCode::Char('t'), true) => {
                self.flags.show_reasoning = !self.flags.show_reasoning;
                return Vec::new();
            }
            (KeyCode::Char('r'), true) => {
                self.popup = None;
                let mut search = HistorySearch::new(self.composer.text());
                search.refind(self.composer.history());
                let shown = search.shown(self.composer.history()).to_owned();
                self.composer.set(&shown);
                self.search = Some(search);
                return Vec::new();
            }
            (KeyCode::Char('g'), true) => {
                self.popup = None;
                return vec![Action::Editor(self.composer.text())];
            }
            (KeyCode::PageUp, _) => {
                self.scroll_by(10);
                return Vec::new();
            }
            (KeyCode::PageDown, _) => {
                self.scroll_by(-10);
                return Vec::new();
            }
            (KeyCode::Esc, _) => {
                if self.popup.take().is_some() {
                    return Vec::new();
                }
                if self.busy {
                    return vec![Action::Op(Op::Interrupt)];
                }
                self.scroll = 0;
                return Vec::new();
            }
            // Shift-Tab cycles the modes (plan first from the default); never to full access.
            (KeyCode::BackTab, _) => return self.cycle_sandbox(),
            // Up on an empty composer takes the newest queued prompt back to edit or drop.
            (KeyCode::Up, false) if self.composer.is_empty() && !self.queued.is_empty() => {
                let index = self.queued.len() - 1;
                let text = self.queued.remove(index);
                self.composer.set(&text);
                return vec![Action::Op(Op::Unqueue { index })];
            }
            _ => {}
        }
        if let Some(actions) = self.popup_key(key) {
            return actions;
        }
        let newline = key.modifiers.intersects(KeyModifiers::SHIFT | KeyModifiers::ALT);
        match key.code {
            KeyCode::Enter if newline => self.composer.newline(),
            KeyCode::Enter => return self.submit(),
            KeyCode::Char('j') if ctrl => self.composer.newline(),
            KeyCode::Char('a') if ctrl => self.composer.home_or_up(),
            KeyCode::Char('e') if ctrl => self.composer.end_or_down(),
            KeyCode::Char('w') if ctrl => self.composer.kill_word_back(),
            KeyCode::Char('u') if ctrl => self.composer.kill_to_start(),
            KeyCode::Char('k') if ctrl => self.composer.kill_to_end(),
            KeyCode::Char('y') if ctrl => self.composer.yank(),
            KeyCode::Char('b') if alt => self.composer.word_left(),
            KeyCode::Char('f') if alt => self.composer.word_right(),
            KeyCode::Backspace if alt => self.composer.kill_word_back(),
            KeyCode::Left if ctrl || alt => self.composer.word_left(),
            KeyCode::Right if ctrl || alt => self.composer.word_right(),
            KeyCode::Char(c) if !ctrl && !alt => self.composer.insert_char(c),
            KeyCode::Backspace => self.composer.backspace(),
            KeyCode::Delete => self.composer.delete(),
            KeyCode::Left => self.composer.left(),
            KeyCode::Right => self.composer.right(),
            KeyCode::Home => self.composer.home(),
            KeyCode::End => self.composer.end(),
            KeyCode::Up => self.composer.up(),
            KeyCode::Down => self.composer.down(),
            _ => {}
        }
        self.update_popup();
        Vec::new()
    }

    /// Shift-Tab: read-only → workspace-write → plan → read-only (full access only through
    /// `/permissions full-access`; see [`crate::permission::Mode::next`]).
    fn cycle_sandbox(&mut self) -> Vec<Action> {
        let next = self.session.sandbox.next();
        self.set_sandbox(next)
    }

    /// Asks the core to switch the mode; full access is confirmed in a dialog first.
    pub(super) fn set_sandbox(&mut self, mode: crate::permission::Mode) -> Vec<Action> {
        if mode == crate::permission::Mode::FullAccess {
            let kind = RequestKind::Consent {
                title: "Full access".to_owned(),
                message: format!("Switch to full access? {}.", mode_help(mode)),
                yes: "switch to full access".to_owned(),
                no: "stay".to_owned(),
            };
            if let Some(confirm) = Confirm::for_request(FULL_ACCESS_CONFIRM, &kind) {
                self.modals.push_back(Modal::Confirm(confirm));
            }
            return Vec::new();
        }
        vec![Action::Op(Op::SetSandbox { mode })]
    }

    /// Ctrl-C, as in Codex and Claude Code: declines an open dialog and interrupts the turn;
    /// else clears a non-empty composer; else interrupts a running turn; on an idle, empty
    /// composer, a second press quits.
    fn ctrl_c(&mut self) -> Vec<Action> {
        self.popup = None;
        self.search = None;
        self.picker = None;
        if !self.modals.is_empty() {
            return self.decline_all();
        }
        if !self.composer.is_empty() {
            self.composer.clear();
            self.ctrl_c_armed = false;
            return Vec::new();
        }
        if self.busy {
            self.ctrl_c_armed = false;
            return vec![Action::Op(Op::Interrupt)];
        }
        if self.ctrl_c_armed {
            return vec![Action::Quit];
        }
        self.ctrl_c_armed = true;
        self.notice(NoticeKind::Info, "press Ctrl-C again to quit");
        Vec::new()
    }

    /// Declines every open dialog and interrupts the running turn.
    fn decline_all(&mut self) -> Vec<Action> {
        let mut actions: Vec<Action> = self
            .modals
            .drain(..)
            .map(|modal| {
                Action::Op(Op::Respond {
                    id: modal.id().to_owned(),
                    response: Response::Declined,
                })
            })
            .collect();
        if self.busy {
            actions.push(Action::Op(Op::Interrupt));
        }
        actions
    }

    /// Keys for the dialog in front.
    fn modal_key(&mut self, key: KeyEvent) -> Vec<Action> {
        // An approval, or a text field being typed in, handles Esc itself.
        let approval = matches!(self.modals.front(), Some(Modal::Confirm(c)) if c.approval || c.reason.is_some());
        if key.code == KeyCode::Esc && !approval {
            // Esc declines the dialog, and a question dialog's turn is interrupted with it.
            let Some(modal) = self.modals.pop_front() else {
                return Vec::new();
            };
            if modal.id() == FULL_ACCESS_CONFIRM {
                return Vec::new();
            }
            if matches!(modal, Modal::Question { .. }) {
                self.notice(NoticeKind::Info, "question declined");
            }
            let mut actions = vec![Action::Op(Op::Respond {
                id: modal.id().to_owned(),
                response: Response::Declined,
            })];
            if self.busy {
                actions.push(Action::Op(Op::Interrupt));
            }
            return actions;
        }
        let response = match self.modals.front_mut() {
            Some(Modal::Question { dialog, .. }) => match question_key(dialog, key) {
                DialogOutcome::Open => None,
                DialogOutcome::Answered(answers) => Some(Response::Answers { answers }),
                DialogOutcome::Cancelled => Some(Response::Declined),
            },
            Some(Modal::Confirm(confirm)) => {
                let outcome = match key.code {
                    KeyCode::Up => {
                        confirm.up();
                        ConfirmOutcome::Open
                    }
                    KeyCode::Down => {
                        confirm.down();
                        ConfirmOutcome::Open
                    }
                    KeyCode::Tab => {
                        confirm.next_choice();
                        ConfirmOutcome::Open
                    }
                    KeyCode::BackTab => {
                        confirm.previous_choice();
                        ConfirmOutcome::Open
                    }
                    KeyCode::PageUp => {
                        confirm.page(-1);
                        ConfirmOutcome::Open
                    }
                    KeyCode::PageDown => {
                        confirm.page(1);
                        ConfirmOutcome::Open
                    }
                    KeyCode::Enter => confirm.enter(),
                    KeyCode::Esc => confirm.escape(),
                    KeyCode::Backspace => {
                        confirm.backspace();
                        ConfirmOutcome::Open
                    }
                    KeyCode::Char(c) => confirm.key(c),
                    _ => ConfirmOutcome::Open,
                };
                match outcome {
                    ConfirmOutcome::Open => None,
                    ConfirmOutcome::Done(response) => Some(response),
                }
            }
            None => None,
        };
        let Some(response) = response else {
            return Vec::new();
        };
        let Some(modal) = self.modals.pop_front() else {
            return Vec::new();
        };
        if modal.id() == FULL_ACCESS_CONFIRM {
            // The UI's own confirmation, not a request of the core.
            return match response {
                Response::Consent { yes: true } => vec![Action::Op(Op::SetSandbox {
                    mode: crate::permission::Mode::FullAccess,
                })],
                _ => Vec::new(),
            };
        }
        vec![Action::Op(Op::Respond {
            id: modal.id().to_owned(),
            response,
        })]
    }

    /// Keys for an open completion popup; `None` when the key is not the popup's.
    fn popup_key(&mut self, key: KeyEvent) -> Option<Vec<Action>> {
        let popup = self.popup.as_mut()?;
        match key.code {
            KeyCode::Up => popup.selected = popup.selected.saturating_sub(1),
            KeyCode::Down => popup.selected = (popup.selected + 1).min(popup.items.len().saturating_sub(1)),
            KeyCode::Tab | KeyCode::Enter => {
                let (item, _) = popup.items.get(popup.selected).cloned()?;
                self.popup = None;
                let (_, word) = self.composer.current_word();
                if word.starts_with('@') {
                    self.composer.replace_current_word(&format!("@{item} "));
                } else if key.code == KeyCode::Enter {
                    self.composer.set(&item);
                    return Some(self.submit());
                } else {
                    self.composer.set(&format!("{item} "));
                }
            }
            _ => return None,
        }
        Some(Vec::new())
    }

    fn update_popup(&mut self) {
        let (_, word) = self.composer.current_word();
        let text = self.composer.text();
        let items: Vec<(String, String)> = if text.starts_with('/') && !text.contains(' ') && !text.contains('\n') {
            COMMANDS
                .iter()
                .map(|(name, help)| ((*name).to_owned(), (*help).to_owned()))
                .chain(self.custom_commands.iter().cloned())
                .filter(|(name, _)| name.starts_with(text.as_str()))
                .collect()
        } else if let Some(query) = word.strip_prefix('@') {
            if self.popup.is_none() {
                // Opening: list again if stale, so files written since show up (off this thread).
                self.files.refresh_if_stale();
            }
            self.files.poll();
            self.files
                .matches(query, FILE_MATCHES)
                .into_iter()
                .map(|f| (f, String::new()))
                .collect()
        } else {
            Vec::new()
        };
        self.popup = if items.is_empty() {
            None
        } else {
            Some(Popup { items, selected: 0 })
        };
    }

    /// How the transcript shows a prompt the core started a turn with: as it was in the
    /// composer (paste placeholders kept), else whole unless huge.
    fn shown_prompt(&mut self, prompt: &str) -> String {
        if let Some(i) = self.sent_with_pastes.iter().position(|(sent, _)| sent == prompt)
            && let Some((_, raw)) = self.sent_with_pastes.remove(i)
        {
            return sanitize(&raw);
        }
        super::paste::shown(prompt)
    }

    /// Keeps a sent prompt in the project's history file (for later sessions).
    fn remember(&mut self, raw: &str) {
        if let Some(file) = &self.history_file
            && let Err(e) = file.append(raw)
        {
            tracing::warn!("prompt history {}: {e}", file.path().display());
        }
    }

    /// The text `$EDITOR` left (`None`: the editor failed; the composer stays as it was).
    pub fn edited(&mut self, result: Result<String, String>) {
        match result {
            Ok(text) => {
                let text = text.strip_suffix('\n').unwrap_or(&text);
                self.composer.set(text);
            }
            Err(why) => self.notice(NoticeKind::Error, format!("editor: {why}")),
        }
        self.dirty = true;
    }

    /// Keys while Ctrl-R's search is open; false when the key ends the search and should
    /// then act as usual (arrows, Enter's send is not taken: Enter only accepts).
    fn search_key(&mut self, key: KeyEvent) -> bool {
        let Some(search) = self.search.as_mut() else {
            return false;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let history = self.composer.history().to_vec();
        match key.code {
            KeyCode::Char('r') if ctrl => search.older(&history),
            KeyCode::Char('g') if ctrl => {
                let draft = std::mem::take(&mut search.draft);
                self.search = None;
                self.composer.set(&draft);
                return true;
            }
            KeyCode::Esc => {
                let draft = std::mem::take(&mut search.draft);
                self.search = None;
                self.composer.set(&draft);
                return true;
            }
            KeyCode::Char(c) if !ctrl => {
                search.query.push(c);
                search.refind(&history);
            }
            KeyCode::Backspace => {
                search.query.pop();
                search.refind(&history);
            }
            KeyCode::Enter => {
                self.search = None;
                return true;
            }
            _ => {
                self.search = None;
                return false;
            }
        }
        let shown = search.shown(&history).to_owned();
        self.composer.set(&shown);
        true
    }

    /// The composer's title while a search runs.
    pub fn composer_title(&self) -> Option<String> {
        self.search.as_ref().map(HistorySearch::title)
    }

    /// Opens `/resume`'s picker, with the session list read again.
    pub(super) fn open_picker(&mut self) {
        if let Some(list) = &self.list_sessions {
            self.sessions = list();
        }
        self.popup = None;
        self.picker = Some(Picker::new(self.sessions.clone(), self.session.session_id.clone()));
    }

    /// Asks the core to resume session `id`.
    pub(super) fn resume(&mut self, id: String) -> Vec<Action> {
        self.resuming = Some(id.clone());
        vec![Action::Op(Op::Resume { id })]
    }

    fn picker_key(&mut self, key: KeyEvent) -> Vec<Action> {
        let Some(picker) = self.picker.as_mut() else {
            return Vec::new();
        };
        let outcome = match key.code {
            KeyCode::Esc => PickerOutcome::Cancelled,
            KeyCode::Up => {
                picker.up();
                PickerOutcome::Open
            }
            KeyCode::Down | KeyCode::Tab => {
                picker.down();
                PickerOutcome::Open
            }
            KeyCode::Backspace => {
                picker.backspace();
                PickerOutcome::Open
            }
            KeyCode::Enter => picker.enter(),
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                picker.type_char(c);
                PickerOutcome::Open
            }
            _ => PickerOutcome::Open,
        };
        match outcome {
            PickerOutcome::Open => Vec::new(),
            PickerOutcome::Cancelled => {
                self.picker = None;
                Vec::new()
            }
            PickerOutcome::Resume(id) => {
                self.picker = None;
                if self.session.session_id.as_deref() == Some(id.as_str()) {
                    self.notice(NoticeKind::Info, format!("already in session {id}"));
                    return Vec::new();
                }
                self.resume(id)
            }
        }
    }

    /// Submits `text` as if typed and sent with Enter (the positional prompt of
    /// `brute "prompt"`); a `/command` runs as one.
    pub fn submit_text(&mut self, text: &str) -> Vec<Action> {
        self.composer.set(text);
        self.submit()
    }

    fn submit(&mut self) -> Vec<Action> {
        if self.composer.text().trim().is_empty() {
            return Vec::new();
        }
        let text = self.composer.text();
        // A custom command is a prompt: the core expands it when its turn starts.
        if text.starts_with('/') && !text.contains('\n') && !self.is_custom_command(&text) {
            self.composer.submit();
            self.remember(&text);
            return self.command(text.trim());
        }
        // `!command`: the core runs it with the shell tool as a turn of its own (refused with
        // a notice while a turn runs).
        if let Some(command) = text.strip_prefix('!').map(str::trim).filter(|c| !c.is_empty()) {
            let command = command.to_owned();
            self.composer.submit();
            self.remember(&text);
            self.scroll = 0;
            self.busy = true;
            return vec![Action::Op(Op::RunCommand { command })];
        }
        // While a turn runs the core queues it (shown above the composer); otherwise the turn
        // starts at once and shows the prompt when it does.
        let raw = self.composer.text();
        let message = self.composer.submit();
        self.remember(&raw);
        if raw != message {
            self.sent_with_pastes.push_back((message.clone(), raw));
        }
        self.scroll = 0;
        if self.busy {
            self.queued.push(message.clone());
        }
        // Idle, the core starts the turn at once: Esc already interrupts it.
        self.busy = true;
        vec![Action::Op(Op::UserTurn { text: message })]
    }

    /// Whether `text` invokes a custom command (`/name` or `/name args`).
    fn is_custom_command(&self, text: &str) -> bool {
        let name = text.split_whitespace().next().unwrap_or("");
        self.custom_commands.iter().any(|(command, _)| command == name)
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

/// The id of the UI's own "switch to full access?" confirmation.
const FULL_ACCESS_CONFIRM: &str = "ui:full-access";

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

/// Keys for a question dialog.
fn question_key(dialog: &mut Dialog, key: KeyEvent) -> DialogOutcome {
    match key.code {
        KeyCode::Up => {
            dialog.up();
            DialogOutcome::Open
        }
        KeyCode::Down | KeyCode::Tab => {
            dialog.down();
            DialogOutcome::Open
        }
        KeyCode::Char(' ') => {
            dialog.space();
            DialogOutcome::Open
        }
        KeyCode::Char(c) => {
            dialog.type_char(c);
            DialogOutcome::Open
        }
        KeyCode::Backspace => {
            dialog.backspace();
            DialogOutcome::Open
        }
        KeyCode::Enter => dialog.enter(),
        _ => DialogOutcome::Open,
    }
}
