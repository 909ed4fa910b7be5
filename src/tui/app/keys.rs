//! The person's keys and pastes: the composer, popups, dialogs, history search, the session
//! picker, and the sandbox-mode switch.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::protocol::{Op, RequestKind, Response};
use crate::tui::commands::COMMANDS;
use crate::tui::confirm::{Confirm, ConfirmOutcome};
use crate::tui::dialog::{Dialog, DialogOutcome};
use crate::tui::picker::{Picker, PickerKind, PickerOutcome};
use crate::tui::sanitize::sanitize;
use crate::tui::search::HistorySearch;
use crate::tui::transcript::NoticeKind;

use super::{Action, App, FILE_MATCHES, Modal, Popup, mode_help};

/// The id of the UI's own "switch to full access?" confirmation.
const FULL_ACCESS_CONFIRM: &str = "ui:full-access";

impl App {
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
        } else if let Some(mention) =
            crate::tui::paste::image_path(text).and_then(|path| path.to_str().and_then(crate::agent::attach::mention))
        {
            // A dropped or pasted image file: attached as a mention the person sees.
            self.composer.insert_str(&format!("{mention} "));
            self.update_popup();
        } else {
            self.composer.paste(&sanitize(&crate::tui::paste::line_breaks(text)));
            self.update_popup();
        }
        self.dirty = true;
    }

    /// Ctrl-V: the clipboard's image is read off the UI thread (its owner may take seconds,
    /// or never answer: the person keeps typing meanwhile), then [`App::image_pasted`].
    fn paste_clipboard_image(&mut self) -> Vec<Action> {
        if self.pasting {
            self.notice(NoticeKind::Info, "still reading the clipboard".to_owned());
            return Vec::new();
        }
        self.pasting = true;
        vec![Action::PasteImage]
    }

    /// What a Ctrl-V read: the image, saved under brute's data directory (commands cannot
    /// write there), goes in the composer as an `@` mention where the cursor is now, attached
    /// when the prompt is sent; else a notice says why there is none. A history search open
    /// meanwhile ends as Esc ends it (the composer shows the draft again, which takes the
    /// mention: in the match shown, Esc would have dropped it).
    pub fn image_pasted(&mut self, saved: Result<String, String>) {
        self.pasting = false;
        self.dirty = true;
        match saved {
            Ok(mention) => {
                if let Some(search) = self.search.take() {
                    self.composer.set(&search.draft);
                }
                self.composer.insert_str(&format!("{mention} "));
                self.update_popup();
            }
            Err(why) => self.notice(NoticeKind::Info, format!("no image pasted: {}", sanitize(&why))),
        }
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
            (KeyCode::Char('v'), true) => return self.paste_clipboard_image(),
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
    pub(super) fn cycle_sandbox(&mut self) -> Vec<Action> {
        let next = self.session.sandbox.next();
        self.set_sandbox(next)
    }

    /// Asks the core to switch the mode; full access is confirmed in a dialog first.
    pub(in crate::tui) fn set_sandbox(&mut self, mode: crate::permission::Mode) -> Vec<Action> {
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
    pub(super) fn ctrl_c(&mut self) -> Vec<Action> {
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
    pub(super) fn decline_all(&mut self) -> Vec<Action> {
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
    pub(super) fn modal_key(&mut self, key: KeyEvent) -> Vec<Action> {
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
    pub(super) fn popup_key(&mut self, key: KeyEvent) -> Option<Vec<Action>> {
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

    pub(super) fn update_popup(&mut self) {
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
    pub(super) fn shown_prompt(&mut self, prompt: &str) -> String {
        if let Some(i) = self.sent_with_pastes.iter().position(|(sent, _)| sent == prompt)
            && let Some((_, raw)) = self.sent_with_pastes.remove(i)
        {
            return sanitize(&raw);
        }
        crate::tui::paste::shown(prompt)
    }

    /// Keeps a sent prompt in the project's history file (for later sessions).
    pub(super) fn remember(&mut self, raw: &str) {
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
    pub(super) fn search_key(&mut self, key: KeyEvent) -> bool {
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
    pub(in crate::tui) fn open_picker(&mut self) {
        if let Some(list) = &self.list_sessions {
            self.sessions = list();
        }
        self.popup = None;
        self.picker = Some(Picker::new(self.sessions.clone(), self.session.session_id.clone()));
    }

    /// Opens `/model`'s picker and asks the core for the models to fill it.
    pub(in crate::tui) fn open_model_picker(&mut self) -> Vec<Action> {
        self.popup = None;
        self.picker = Some(Picker::models(&self.session.model));
        vec![Action::Op(Op::ListModels)]
    }

    /// Asks the core to resume session `id`.
    pub(in crate::tui) fn resume(&mut self, id: String) -> Vec<Action> {
        self.resuming = Some(id.clone());
        vec![Action::Op(Op::Resume { id })]
    }

    pub(super) fn picker_key(&mut self, key: KeyEvent) -> Vec<Action> {
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
        let kind = picker.kind;
        match outcome {
            PickerOutcome::Open => Vec::new(),
            PickerOutcome::Cancelled => {
                self.picker = None;
                Vec::new()
            }
            PickerOutcome::Chosen(model) if kind == PickerKind::Models => {
                self.picker = None;
                if model == self.session.model {
                    self.notice(NoticeKind::Info, format!("already using {}", sanitize(&model)));
                    return Vec::new();
                }
                vec![Action::Op(Op::SetModel { model })]
            }
            PickerOutcome::Chosen(id) => {
                self.picker = None;
                if self.session.session_id.as_deref() == Some(id.as_str()) {
                    self.notice(NoticeKind::Info, format!("already in session {id}"));
                    return Vec::new();
                }
                self.resume(id)
            }
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
