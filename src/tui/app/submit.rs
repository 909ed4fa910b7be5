//! Sending what the person typed: a prompt (queued during a turn), a `/command`, or a custom
//! command.

use crate::protocol::Op;

use super::{Action, App};

impl App {
    /// Submits `text` as if typed and sent with Enter (the positional prompt of
    /// `brute "prompt"`); a `/command` runs as one.
    pub fn submit_text(&mut self, text: &str) -> Vec<Action> {
        self.composer.set(text);
        self.submit()
    }

    pub(super) fn submit(&mut self) -> Vec<Action> {
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
    pub(super) fn is_custom_command(&self, text: &str) -> bool {
        let name = text.split_whitespace().next().unwrap_or("");
        self.custom_commands.iter().any(|(command, _)| command == name)
    }
}
