//! The conversation's own hook events (the tool events live in [`crate::pipeline::hooks`]):
//!
//! - `session_start` runs once per conversation, before its first prompt is sent (so the same
//!   way in the TUI and `brute -p`), with `source` `startup`, `resume` (a continued session) or
//!   `clear` (after `/clear`);
//! - `user_prompt_submit` runs before a prompt is sent; a block means the prompt is not sent and
//!   the person sees why;
//! - `stop` runs when the model ends its turn; a block continues the turn with the reason given
//!   to the model, at most [`MAX_STOP_CONTINUATIONS`] times per turn;
//! - `pre_compact` runs before compaction (it cannot block it: a conversation over the window
//!   must be made smaller).
//!
//! Plain-text stdout (or `additionalContext`) of `session_start` and `user_prompt_submit` is
//! added to the prompt the model gets, marked as coming from a hook.

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::hooks::{HookEvent, fields};
use crate::protocol::Event;

/// How many times `stop` hooks may continue one turn.
pub const MAX_STOP_CONTINUATIONS: u32 = 3;

/// Context hooks added to a prompt: the event that gave it, and the text.
pub(super) type HookContext = Vec<(HookEvent, String)>;

/// The prompt with hook context added, as the model gets it.
pub(super) fn with_context(prompt: String, contexts: &[(HookEvent, String)]) -> String {
    let mut text = prompt;
    for (event, context) in contexts {
        text.push_str(&format!(
            "\n\n<hook_context event=\"{}\">\n{}\n</hook_context>",
            event.name(),
            context.trim()
        ));
    }
    text
}

impl Agent {
    /// Runs `session_start` (the first time) and `user_prompt_submit` on the prompt as typed:
    /// the context they add to it (see [`with_context`]), or the reason a hook refused it.
    pub(super) async fn prompt_hooks(
        &mut self,
        prompt: &str,
        cancel: &CancellationToken,
    ) -> Result<HookContext, String> {
        let hooks = self.state.hooks.clone();
        if !hooks.has(HookEvent::UserPromptSubmit) && !hooks.has(HookEvent::SessionStart) {
            self.session_source = None;
            return Ok(Vec::new());
        }
        let mut contexts = Vec::new();
        if let Some(source) = self.session_source.take()
            && hooks.has(HookEvent::SessionStart)
        {
            let run = hooks.run(
                HookEvent::SessionStart,
                None,
                &self.state.cwd,
                fields([("source", json!(source))]),
                &self.events,
                Some(cancel),
            );
            let said = run.await;
            if let Some(reason) = said.block {
                self.events.emit(Event::Notice {
                    message: format!("a session_start hook cannot stop the session; it said: {reason}"),
                });
            }
            contexts.extend(said.context.into_iter().map(|c| (HookEvent::SessionStart, c)));
        }
        if hooks.has(HookEvent::UserPromptSubmit) {
            let run = hooks.run(
                HookEvent::UserPromptSubmit,
                None,
                &self.state.cwd,
                fields([("prompt", json!(prompt))]),
                &self.events,
                Some(cancel),
            );
            let said = run.await;
            if let Some(reason) = said.block {
                return Err(reason);
            }
            contexts.extend(said.context.into_iter().map(|c| (HookEvent::UserPromptSubmit, c)));
        }
        Ok(contexts)
    }

    /// Runs the `stop` hooks at the end of a turn: the reason to go on, if one blocks.
    /// `continued` is how many times they already continued this turn (`stop_hook_active`).
    pub(super) async fn stop_hooks(
        &mut self,
        last_text: &str,
        continued: u32,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let hooks = self.state.hooks.clone();
        if !hooks.has(HookEvent::Stop) || cancel.is_cancelled() {
            return None;
        }
        let run = hooks.run(
            HookEvent::Stop,
            None,
            &self.state.cwd,
            fields([
                ("stop_hook_active", json!(continued > 0)),
                ("last_assistant_message", json!(last_text)),
            ]),
            &self.events,
            Some(cancel),
        );
        let reason = run.await.block?;
        if continued >= MAX_STOP_CONTINUATIONS {
            self.events.emit(Event::Notice {
                message: format!(
                    "a stop hook asked to continue again, but it already continued this turn {MAX_STOP_CONTINUATIONS} times; the turn ends here (it said: {reason})"
                ),
            });
            return None;
        }
        self.events.emit(Event::Notice {
            message: format!("a stop hook continues the turn: {reason}"),
        });
        Some(reason)
    }

    /// Runs the `pre_compact` hooks (`trigger` is `manual` or `auto`); they cannot block.
    pub(super) async fn pre_compact_hooks(&self, manual: bool, focus: Option<&str>) {
        let hooks = &self.state.hooks;
        if !hooks.has(HookEvent::PreCompact) {
            return;
        }
        let said = hooks
            .run(
                HookEvent::PreCompact,
                None,
                &self.state.cwd,
                fields([
                    ("trigger", json!(if manual { "manual" } else { "auto" })),
                    ("custom_instructions", json!(focus.unwrap_or_default())),
                ]),
                &self.events,
                None,
            )
            .await;
        if let Some(reason) = said.block {
            self.events.emit(Event::Notice {
                message: format!("a pre_compact hook cannot stop compaction; it said: {reason}"),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_is_marked_after_the_prompt() {
        assert_eq!(with_context("fix it".into(), &[]), "fix it");
        assert_eq!(
            with_context(
                "fix it".into(),
                &[
                    (HookEvent::SessionStart, "branch main\n".into()),
                    (HookEvent::UserPromptSubmit, "ticket 7".into())
                ]
            ),
            "fix it\n\n<hook_context event=\"session_start\">\nbranch main\n</hook_context>\n\n<hook_context event=\"user_prompt_submit\">\nticket 7\n</hook_context>"
        );
    }
}
