//! Applying the core's events to the [`App`]: streamed text, tool panes, requests to the person,
//! nested sub-agent events, and a resumed session's history.

use crate::protocol::{Event, RequestKind, TodoItem, TurnOutcome};
use crate::tui::confirm::Confirm;
use crate::tui::dialog::Dialog;
use crate::tui::picker::PickerKind;
use crate::tui::sanitize::sanitize;
use crate::tui::transcript::{Entry, NoticeKind, ToolPane, ToolStatus};

use super::{App, Modal, effort_label, mode_help};

impl App {
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
                    pane.result = crate::tui::sanitize::sanitize_keep_tabs(&result.content);
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
            Event::ModelList {
                current,
                configured,
                provider,
                error,
            } => {
                if let Some(picker) = self.picker.as_mut().filter(|p| p.kind == PickerKind::Models) {
                    let clean = |names: Vec<String>| names.iter().map(|n| sanitize(n)).collect::<Vec<_>>();
                    let error = error.map(|e| sanitize(&e));
                    picker.fill_models(
                        &sanitize(&current),
                        &clean(configured),
                        &clean(provider),
                        error.as_deref(),
                    );
                }
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
                self.notice(NoticeKind::Info, crate::tui::commands::ps_report(&processes));
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
                self.call_person(crate::tui::notify::Reason::TurnFinished);
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
    pub(super) fn call_person(&mut self, reason: crate::tui::notify::Reason) {
        if let Some(sequence) = self.notify.sequence(reason, self.focused) {
            self.notification = Some(sequence);
        }
    }

    /// The terminal gained or lost focus (`?1004` reports).
    pub fn on_focus(&mut self, focused: bool) {
        self.focused = focused;
    }

    /// Opens the dialog for a request (queued behind any already open).
    pub(super) fn open_request(&mut self, id: String, kind: RequestKind) {
        if matches!(kind, RequestKind::Approval { .. } | RequestKind::Plan { .. }) {
            self.call_person(crate::tui::notify::Reason::ApprovalWaiting);
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
                    let mut shown = crate::tui::paste::shown(&prompt);
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
                        pane.result = crate::tui::sanitize::sanitize_keep_tabs(content);
                        pane.status = ToolStatus::Done {
                            failure: calls
                                .get(call_id)
                                .and_then(|v| v.failure)
                                .or(is_error.then_some(crate::protocol::Failure::Error)),
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

    pub(super) fn on_nested(&mut self, parent: &str, event: Event) {
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
}
