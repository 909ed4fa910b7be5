//! Carrying out compaction on the conversation: when (the [`Compaction`] shares of the
//! window) and the steps [`super::compact`] computes, pruning first, then the model's summary.

use crate::protocol::Event;
use crate::provider::{ChatRequest, Message};

use super::compact;

impl super::Agent {
    /// Sets when the conversation is compacted.
    pub fn with_compaction(mut self, compaction: Compaction) -> Self {
        self.compaction = compaction;
        self
    }

    /// Compacts the conversation now (`/compact [focus]`): old tool outputs are pruned, then
    /// everything before the last turn is summarized by the model (keeping the person's
    /// words, the todo list and the files changed verbatim). A failed summary leaves the
    /// conversation as pruning left it.
    pub async fn compact_now(&mut self, focus: Option<String>) {
        let tools = self.executor.registry().specs_for(self.state.access().planning());
        self.pre_compact_hooks(true, focus.as_deref()).await;
        self.compact(focus.as_deref(), true, &tools).await;
    }

    pub(super) fn fixed_bytes(&self, tools: &[crate::provider::ToolSpec]) -> usize {
        self.config.system_prompt.len()
            + tools
                .iter()
                .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
                .sum::<usize>()
    }

    /// Brings the conversation under the target (see [`super::Agent::compact_now`]); `summarize`
    /// forces the summary step even when pruning was enough.
    pub(super) async fn compact(&mut self, focus: Option<&str>, summarize: bool, tools: &[crate::provider::ToolSpec]) {
        let fixed = self.fixed_bytes(tools);
        let before = self.meter.estimate(&self.history, fixed);
        self.events.emit(Event::CompactionStarted { tokens: before });
        let target = match self.compaction.window {
            Some(window) => (window as f64 * self.compaction.to) as u64,
            None => before / 2,
        };
        let size =
            |history: &[Message]| compact::estimate(fixed + history.iter().map(compact::message_bytes).sum::<usize>());
        let pruned = compact::prune(&mut self.history, 2, target, size);
        let mut summarized = false;
        let keep_from = compact::recent_start(&self.history, 1);
        if (summarize || size(&self.history) > target) && keep_from > 0 {
            match self.summarize(keep_from, focus).await {
                Ok(summary) => {
                    let pinned = compact::Pinned {
                        todos: self.state.todos(),
                        files: compact::changed_files(&self.history, |call| {
                            let tool = self.executor.registry().get(&call.name)?;
                            tool.mutated_path(call.input().ok()?)
                        }),
                        budget_bytes: 16 * 1024,
                    };
                    self.history = compact::rebuild(&self.history, keep_from, &summary, &pinned);
                    summarized = true;
                }
                Err(message) => self.events.emit(Event::Notice {
                    message: format!(
                        "the summary for compaction failed ({message}); old tool outputs were pruned only"
                    ),
                }),
            }
        }
        self.meter.reset();
        let after = size(&self.history);
        let history = self.history.clone();
        self.record(|r| r.compaction(&history));
        self.events.emit(Event::ContextUsage {
            tokens: after,
            window: self.compaction.window,
        });
        self.events.emit(Event::CompactionFinished {
            tokens_before: before,
            tokens_after: after,
            pruned_outputs: pruned.outputs,
            summarized,
        });
    }

    /// Asks the model for a summary of `history[..keep_from]`, within a time and size budget.
    async fn summarize(&self, keep_from: usize, focus: Option<&str>) -> Result<String, String> {
        let mut messages = self.history[..keep_from].to_vec();
        messages.push(Message::user(compact::summary_prompt(focus)));
        let model = self.state.model();
        let request = ChatRequest {
            model: &model,
            system: &self.config.system_prompt,
            messages: &messages,
            tools: &[],
            max_tokens: 4096,
            temperature: None,
            reasoning_effort: None,
        };
        let mut ignore = |_| {};
        let call = self.state.provider.complete(&request, &mut ignore);
        match tokio::time::timeout(std::time::Duration::from_secs(120), call).await {
            Err(_) => Err("it took longer than 120 s".to_owned()),
            Ok(Err(e)) => Err(e.to_string()),
            Ok(Ok(completion)) if completion.text.trim().is_empty() => Err("the model returned no text".to_owned()),
            Ok(Ok(completion)) => Ok(completion.text),
        }
    }
}

/// When the conversation is compacted (see [`compact`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compaction {
    /// The model's context window in tokens; `None` (unknown) compacts only on `/compact` or
    /// when the provider says the request was too long.
    pub window: Option<u64>,
    /// Compact before a request would pass this share of the window.
    pub at: f64,
    /// Bring the conversation down to this share of the window.
    pub to: f64,
    /// The model's prices, when known (for the session's cost).
    pub price: Option<crate::provider::pricing::Price>,
}

impl Compaction {
    /// The defaults for `model`: its window from the built-in table, at 0.8, to 0.5.
    pub fn for_model(model: &str) -> Self {
        Self {
            window: compact::context_window(model),
            at: 0.8,
            to: 0.5,
            price: crate::provider::pricing::builtin(model),
        }
    }
}
