//! Keeping a long conversation inside the model's context window.
//!
//! - [`context_window`]: the window of common models (a small built-in table; `context_window`
//!   in config overrides it).
//! - [`Meter`]: the size of the next request, estimated before it is sent as the input tokens
//!   the provider last reported plus about a token per 4 bytes of what was added since.
//! - [`prune`]: the cheap step, no model call: old tool outputs are replaced by a one-line
//!   note, oldest first, until the conversation fits the target. Calls keep their results
//!   (providers reject orphans), the person's messages and the last turns stay verbatim.
//! - [`rebuild`]: the summary step, when pruning is not enough: everything before the last
//!   turns becomes one message that keeps, verbatim, the person's first goal and latest
//!   messages, the todo list and the files changed, plus the model's summary of the rest.

use crate::protocol::TodoItem;
use crate::provider::{Message, ToolCall};

/// The context window of `model`, in tokens, for the common models of each provider (prefix
/// match, most specific first); `None` when unknown (then nothing is compacted automatically
/// unless `context_window` is set).
pub fn context_window(model: &str) -> Option<u64> {
    const TABLE: &[(&str, u64)] = &[
        ("gpt-5", 400_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("o4-mini", 200_000),
        ("o3", 200_000),
        ("o1", 200_000),
        ("claude-sonnet-4", 200_000),
        ("claude-opus-4", 200_000),
        ("claude-haiku-4", 200_000),
        ("claude-3", 200_000),
        ("qwen3", 40_960),
        ("qwen2.5-coder", 32_768),
        ("llama3", 128_000),
        ("deepseek", 128_000),
        ("gemini-2.5", 1_048_576),
    ];
    let model = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    TABLE
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map(|(_, tokens)| *tokens)
}

/// Tokens of text, estimated (about 4 bytes a token).
pub fn estimate(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// The bytes a message adds to a request.
pub fn message_bytes(message: &Message) -> usize {
    match message {
        Message::User { text, images } => text.len() + 16 + images_bytes(images),
        Message::Assistant { text, tool_calls, .. } => {
            text.len()
                + 16
                + tool_calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments().len() + 32)
                    .sum::<usize>()
        }
        Message::Tool {
            content,
            call_id,
            images,
            ..
        } => content.len() + call_id.len() + 32 + images_bytes(images),
    }
}

/// What images add to a request, in the bytes of text that cost as many tokens: about one
/// token per 750 pixels (Anthropic's vision guide; OpenAI's tiles come to a similar count).
fn images_bytes(images: &[crate::provider::image::Image]) -> usize {
    images
        .iter()
        .map(|i| (i.width as usize * i.height as usize / 750 + 85) * 4)
        .sum()
}

/// Estimates the size of the next request: the input tokens the provider last reported for a
/// known history length, plus the bytes added since.
#[derive(Debug, Clone, Default)]
pub struct Meter {
    /// (history length, input tokens) of the last request the provider reported on.
    last: Option<(usize, u64)>,
}

impl Meter {
    /// Records a provider's report: a request of `history_len` messages took `input_tokens`.
    pub fn reported(&mut self, history_len: usize, input_tokens: u64) {
        if input_tokens > 0 {
            self.last = Some((history_len, input_tokens));
        }
    }

    /// Forgets the report (the history was replaced).
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// The estimated tokens of a request with `history` and `fixed_bytes` more (system
    /// prompt, tool definitions).
    pub fn estimate(&self, history: &[Message], fixed_bytes: usize) -> u64 {
        match self.last {
            Some((len, tokens)) if len <= history.len() => {
                tokens + estimate(history[len..].iter().map(message_bytes).sum())
            }
            _ => estimate(fixed_bytes + history.iter().map(message_bytes).sum::<usize>()),
        }
    }
}

/// Where the last `keep_turns` user turns start (an index of a `User` message), so a cut there
/// never separates a call from its result.
pub fn recent_start(history: &[Message], keep_turns: usize) -> usize {
    let users: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::User { .. }))
        .map(|(i, _)| i)
        .collect();
    if keep_turns == 0 {
        return history.len();
    }
    users.len().checked_sub(keep_turns).map_or(0, |first| users[first])
}

/// What pruning did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pruned {
    pub outputs: usize,
    pub bytes: usize,
}

/// Outputs shorter than this are not worth pruning.
const PRUNE_MIN_BYTES: usize = 400;

/// Replaces tool outputs by a note, oldest first, until the estimated size is at most
/// `target` tokens (`size` estimates a history): first those before the last `keep_turns`
/// turns, then, if that is not enough, older ones of the last turns too — never the results
/// of the newest calls, which the model has not seen yet. Pairs stay intact: every call keeps
/// a (shortened) result.
pub fn prune(history: &mut [Message], keep_turns: usize, target: u64, size: impl Fn(&[Message]) -> u64) -> Pruned {
    let mut pruned = prune_before(history, recent_start(history, keep_turns), target, &size);
    if size(history) > target {
        // Results at the very end answer calls the model has not seen answered yet.
        let unseen_from = history
            .iter()
            .rposition(|m| !matches!(m, Message::Tool { .. }))
            .map_or(0, |i| i + 1);
        let newest_calls = if unseen_from < history.len() {
            unseen_from.saturating_sub(1)
        } else {
            history.len()
        };
        let more = prune_before(history, newest_calls, target, &size);
        pruned.outputs += more.outputs;
        pruned.bytes += more.bytes;
    }
    pruned
}

fn prune_before(history: &mut [Message], end: usize, target: u64, size: &impl Fn(&[Message]) -> u64) -> Pruned {
    let mut pruned = Pruned::default();
    let mut current = size(history);
    for message in history.iter_mut().take(end) {
        if current <= target {
            break;
        }
        if let Message::Tool { content, images, .. } = message
            && (content.len() > PRUNE_MIN_BYTES || !images.is_empty())
        {
            let lines = content.lines().count();
            let note =
                format!("[output pruned to fit the context window: {lines} lines; run the tool again if needed]");
            let saved = (content.len() + images_bytes(images)).saturating_sub(note.len());
            *content = note;
            images.clear();
            pruned.outputs += 1;
            pruned.bytes += saved;
            current = current.saturating_sub(estimate(saved));
        }
    }
    pruned
}

/// What a summary keeps verbatim.
#[derive(Debug, Clone, Default)]
pub struct Pinned {
    pub todos: Vec<TodoItem>,
    /// Paths the conversation changed so far.
    pub files: Vec<String>,
    /// The person's own messages kept in full: the first, and the latest that fit.
    pub budget_bytes: usize,
}

/// The person's messages among `messages`: the first and the latest, verbatim, within
/// `budget` bytes; how many were left out.
fn person_messages(messages: &[Message], budget: usize) -> (Vec<String>, usize) {
    let texts: Vec<&str> = messages
        .iter()
        .filter_map(|m| match m {
            Message::User { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let Some((first, rest)) = texts.split_first() else {
        return (Vec::new(), 0);
    };
    let mut kept = vec![(*first).to_owned()];
    let mut used = first.len();
    let mut latest = Vec::new();
    for text in rest.iter().rev() {
        if used + text.len() > budget {
            break;
        }
        used += text.len();
        latest.push((*text).to_owned());
    }
    let left_out = rest.len() - latest.len();
    latest.reverse();
    kept.extend(latest);
    (kept, left_out)
}

/// The compacted conversation: one person message holding the pinned facts and `summary` of
/// `history[..keep_from]`, an acknowledgement, then `history[keep_from..]` verbatim.
pub fn rebuild(history: &[Message], keep_from: usize, summary: &str, pinned: &Pinned) -> Vec<Message> {
    let (older, recent) = history.split_at(keep_from.min(history.len()));
    let (person, left_out) = person_messages(older, pinned.budget_bytes);
    let mut text = String::from(
        "[The conversation so far was compacted to fit the context window. What follows keeps the person's own words; the rest is a summary.]\n\nThe person's messages, verbatim:\n",
    );
    for (i, message) in person.iter().enumerate() {
        text.push_str(&format!("--- message {} ---\n{}\n", i + 1, message.trim_end()));
    }
    if left_out > 0 {
        text.push_str(&format!(
            "({left_out} earlier messages of the person are covered by the summary)\n"
        ));
    }
    if !pinned.todos.is_empty() {
        text.push_str("\nThe todo list:\n");
        text.push_str(&crate::tool::todo::render(&pinned.todos));
    }
    if !pinned.files.is_empty() {
        text.push_str(&format!("\nFiles changed so far: {}\n", pinned.files.join(", ")));
    }
    text.push_str(&format!("\nSummary of the work so far:\n{}\n", summary.trim()));
    let mut out = vec![
        Message::user(text),
        Message::Assistant {
            text: "Understood. I will continue from this summary.".to_owned(),
            tool_calls: Vec::new(),
            reasoning: Vec::new(),
        },
    ];
    out.extend_from_slice(recent);
    out
}

/// The instruction for the summary request.
pub fn summary_prompt(focus: Option<&str>) -> String {
    let mut prompt = String::from(
        "Summarize the conversation above for your own later use, because the earlier part will be replaced by this summary. Keep: the person's goals and rules, decisions made and why, what was done (files, commands, results), what failed, and what remains. Be specific (paths, names, numbers). No preamble.",
    );
    if let Some(focus) = focus.filter(|f| !f.trim().is_empty()) {
        prompt.push_str(&format!(" Pay special attention to: {}.", focus.trim()));
    }
    prompt
}

/// The paths changed by the calls in `history`, in first-change order: `changes` is the
/// path a call changes, as its tool answers ([`crate::tool::Tool::mutated_path`]).
pub fn changed_files(history: &[Message], changes: impl Fn(&ToolCall) -> Option<String>) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for message in history {
        if let Message::Assistant { tool_calls, .. } = message {
            for path in tool_calls.iter().filter_map(&changes) {
                if !files.contains(&path) {
                    files.push(path);
                }
            }
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(i: usize, output: usize) -> Vec<Message> {
        vec![
            Message::user(format!("request {i}")),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall::new(
                    format!("c{i}"),
                    "read",
                    format!(r#"{{"file_path":"f{i}.rs"}}"#),
                )],
                reasoning: Vec::new(),
            },
            Message::Tool {
                call_id: format!("c{i}"),
                name: "read".into(),
                content: "x\n".repeat(output),
                is_error: false,
                images: Vec::new(),
            },
            Message::Assistant {
                text: format!("done {i}"),
                tool_calls: Vec::new(),
                reasoning: Vec::new(),
            },
        ]
    }

    fn bytes(history: &[Message]) -> u64 {
        estimate(history.iter().map(message_bytes).sum())
    }

    #[test]
    fn windows_of_common_models() {
        assert_eq!(context_window("gpt-5.1"), Some(400_000));
        assert_eq!(context_window("anthropic/claude-sonnet-4-5"), Some(200_000));
        assert_eq!(context_window("mystery"), None);
    }

    #[test]
    fn pruning_keeps_pairs_the_last_turns_and_stops_at_the_target() {
        let mut history: Vec<Message> = (0..10).flat_map(|i| turn(i, 2000)).collect();
        let before = bytes(&history);
        let target = before / 2;
        let pruned = prune(&mut history, 2, target, bytes);
        assert!(pruned.outputs > 0 && bytes(&history) <= target, "{pruned:?}");
        assert_eq!(history.len(), 40, "no message removed: every call keeps its result");
        let Message::Tool { content, .. } = &history[38] else {
            panic!()
        };
        assert_eq!(content.len(), 4000, "the last turn is verbatim");
        let Message::Tool { content, .. } = &history[2] else {
            panic!()
        };
        assert!(content.starts_with("[output pruned"), "the oldest output goes first");
    }

    #[test]
    fn rebuild_keeps_the_first_goal_todos_files_and_the_last_turn() {
        let history: Vec<Message> = (0..6).flat_map(|i| turn(i, 10)).collect();
        let keep_from = recent_start(&history, 1);
        let pinned = Pinned {
            todos: vec![TodoItem {
                id: "1".into(),
                content: "ship it".into(),
                status: crate::protocol::TodoStatus::InProgress,
            }],
            files: changed_files(&history, |call| {
                (call.name == "read").then(|| call.input().ok()?["file_path"].as_str().map(str::to_owned))?
            }),
            budget_bytes: 1000,
        };
        let compacted = rebuild(&history, keep_from, "we read files", &pinned);
        let Message::User { text, .. } = &compacted[0] else {
            panic!()
        };
        assert!(text.contains("request 0") && text.contains("ship it") && text.contains("we read files"));
        assert_eq!(&compacted[2..], &history[keep_from..], "the last turn is verbatim");
        assert!(matches!(compacted[2], Message::User { .. }));
    }

    #[test]
    fn meter_adds_what_came_after_the_last_report() {
        let history: Vec<Message> = (0..2).flat_map(|i| turn(i, 10)).collect();
        let mut meter = Meter::default();
        meter.reported(4, 1000);
        assert_eq!(
            meter.estimate(&history, 0),
            1000 + estimate(history[4..].iter().map(message_bytes).sum())
        );
    }
}
