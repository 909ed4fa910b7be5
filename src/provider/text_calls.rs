//! Tool calls a model wrote as text, recovered as real calls.
//!
//! Small local models served by OpenAI-compatible servers (llama.cpp, Ollama, LM Studio)
//! often answer `{"name": "read", "arguments": {...}}` as plain text instead of a structured
//! tool call; taken literally, the turn would end with that JSON as the answer. [`TextCalls`]
//! wraps any provider and, when a reply has no structured calls and its text *is, or ends
//! with,* tool calls for advertised tools, turns them into [`ToolCall`]s, so the loop runs
//! them and the history holds structured calls the server accepts in the next request.
//!
//! What counts, at the end of the reply (after prose, if any, which stays the answer text):
//! one or more candidates, each starting on its own line and separated only by whitespace:
//!
//! - a bare JSON object `{"name": ..., "arguments": {...}}` (`parameters` is taken for
//!   `arguments`, and arguments given as a string holding a JSON object are accepted);
//! - a fenced block (```` ```json ```` or a bare ```` ``` ````) holding such objects (or an
//!   array of them);
//! - `<tool_call>…</tool_call>` tags holding them (the Hermes/Qwen template's form).
//!
//! Every object of that trailing run must be a call of an advertised tool, or nothing is
//! recovered from it: text that merely contains JSON (an example in an explanation, a
//! `{"response": "..."}` object, a call of a tool that is not offered) stays text. When an
//! earlier object of the run is not a call, a later line may still start a run of calls
//! (the text then "ends with" them). JSON that does not parse ends a run: only what follows
//! it can be recovered.
//!
//! While the reply streams, text that could be the start of such a trailing run is held back
//! from the deltas ([`Holdback`]) until it clearly is not one, or the message ends; so a
//! recovered call never shows as answer text, and what was held is released otherwise.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::spec::WireFormat;
use super::{
    ChatRequest, Completion, Delta, DeltaSink, Message, Provider, ProviderError, StopReason, ToolCall, ToolSpec,
};

/// The prefix of the ids given to recovered calls (`call_local_0`, `call_local_1`, ...).
pub const ID_PREFIX: &str = "call_local_";

const TAG_OPEN: &str = "<tool_call>";
const TAG_CLOSE: &str = "</tool_call>";
const FENCE: &str = "```";

/// Whether recovery is on when the config does not say: for every server that is not a known
/// provider's own host (a local llama.cpp, vLLM or Ollama, whatever wire format it speaks,
/// Anthropic Messages included), since a hosted provider's models make real tool calls.
pub fn on_by_default(_wire: WireFormat, base_url: &str) -> bool {
    !super::spec::known_provider_host(base_url)
}

/// A provider wrapper that recovers tool calls written as text (see the module docs).
pub struct TextCalls {
    inner: Arc<dyn Provider>,
}

impl TextCalls {
    pub fn new(inner: Arc<dyn Provider>) -> Self {
        Self { inner }
    }
}

impl Provider for TextCalls {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest<'a>,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, ProviderError>> {
        Box::pin(async move {
            let mut hold = Holdback::default();
            let mut filter = |delta: Delta| match delta {
                Delta::Text(text) => {
                    let shown = hold.push(&text);
                    if !shown.is_empty() {
                        on_delta(Delta::Text(shown));
                    }
                }
                other => on_delta(other),
            };
            let mut completion = self.inner.complete(request, &mut filter).await?;
            if completion.tool_calls.is_empty()
                && let Some(found) = recover(&completion.text, request.tools, next_index(request.messages))
            {
                tracing::info!(calls = found.calls.len(), "recovered tool calls written as text");
                completion.text = found.text;
                completion.tool_calls = found.calls;
                completion.stop_reason = Some(StopReason::ToolUse);
            }
            if let Some(rest) = hold.rest(&completion.text) {
                on_delta(Delta::Text(rest));
            }
            Ok(completion)
        })
    }

    fn context_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Option<u64>> {
        self.inner.context_window(model)
    }

    fn list_models<'a>(&'a self) -> BoxFuture<'a, Result<Vec<String>, ProviderError>> {
        self.inner.list_models()
    }
}

/// The index of the next recovered call: one past those already in the conversation, so ids
/// stay unique within it (also after a resume).
fn next_index(messages: &[Message]) -> usize {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { tool_calls, .. } => Some(tool_calls),
            _ => None,
        })
        .flatten()
        .filter(|call| call.id.starts_with(ID_PREFIX))
        .count()
}

/// Calls recovered from a reply's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    /// The text before the calls (trailing whitespace trimmed): what stays the answer.
    pub text: String,
    pub calls: Vec<ToolCall>,
}

/// Recovers the calls `text` ends with, if every candidate of its trailing run names one of
/// `tools`; ids count up from `call_local_{first_index}`.
pub fn recover(text: &str, tools: &[ToolSpec], first_index: usize) -> Option<Recovered> {
    line_starts(text).find_map(|start| {
        let rest = &text[start..];
        if !rest.trim_start().starts_with(['{', '`', '<']) {
            return None;
        }
        let Scan::Complete(values) = scan(rest) else {
            return None;
        };
        let mut calls = Vec::new();
        for (value, raw) in values {
            calls.extend(calls_of(&value, raw, tools)?);
        }
        let calls = calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, arguments))| ToolCall::new(format!("{ID_PREFIX}{}", first_index + i), name, arguments))
            .collect();
        Some(Recovered {
            text: text[..start].trim_end().to_owned(),
            calls,
        })
    })
}

/// Byte offsets where lines start: 0 and after every `\n`.
fn line_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1))
}

/// The (name, raw arguments) pairs one candidate value holds, or `None` when it is not a
/// call (or array of calls) of an advertised tool.
fn calls_of(value: &Value, raw: Option<&str>, tools: &[ToolSpec]) -> Option<Vec<(String, String)>> {
    match value {
        Value::Array(items) if !items.is_empty() => items.iter().map(|item| call_of(item, None, tools)).collect(),
        _ => call_of(value, raw, tools).map(|call| vec![call]),
    }
}

fn call_of(value: &Value, raw: Option<&str>, tools: &[ToolSpec]) -> Option<(String, String)> {
    let object = value.as_object()?;
    let name = object.get("name")?.as_str()?;
    if !tools.iter().any(|tool| tool.name == name) {
        return None;
    }
    let key = ["arguments", "parameters"]
        .into_iter()
        .find(|k| object.contains_key(*k))?;
    let arguments = match &object[key] {
        // The model's own text, where it can be cut out of the reply.
        Value::Object(map) => raw
            .and_then(|raw| raw_member(raw, key))
            .map(str::to_owned)
            .unwrap_or_else(|| Value::Object(map.clone()).to_string()),
        Value::String(inner) if serde_json::from_str::<Value>(inner).is_ok_and(|v| v.is_object()) => inner.clone(),
        _ => return None,
    };
    Some((name.to_owned(), arguments))
}

/// What the text from some point on holds.
#[derive(Debug, PartialEq)]
enum Scan<'a> {
    /// A whole run of candidates, then only whitespace: their values, each with its own
    /// text where it is a bare object.
    Complete(Vec<(Value, Option<&'a str>)>),
    /// Could still become a run as more text arrives.
    Open,
    /// Is not one, whatever follows (so every longer text is not one either: what holds
    /// text back relies on that).
    Not,
}

impl<'a> Scan<'a> {
    /// A run that reached the end of the text: complete if it found values, else still open.
    fn ended(values: Vec<(Value, Option<&'a str>)>) -> Self {
        if values.is_empty() {
            Scan::Open
        } else {
            Scan::Complete(values)
        }
    }
}

/// Scans `text` as a run of candidates (see the module docs).
fn scan(text: &str) -> Scan<'_> {
    let mut values = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Scan::ended(values);
        }
        if let Some(body) = rest.strip_prefix(TAG_OPEN) {
            let Some(end) = body.find(TAG_CLOSE) else {
                let body = match body.rfind('<') {
                    Some(i) if TAG_CLOSE.starts_with(&body[i..]) => &body[..i],
                    _ => body,
                };
                return unclosed(values, json_values(body));
            };
            match json_values(&body[..end]) {
                Scan::Complete(inner) => values.extend(inner),
                _ => return Scan::Not,
            }
            rest = &body[end + TAG_CLOSE.len()..];
        } else if let Some(after) = rest.strip_prefix(FENCE) {
            let Some(newline) = after.find('\n') else {
                let lang = after.trim().to_ascii_lowercase();
                return if "json".starts_with(&lang) {
                    Scan::Open
                } else {
                    Scan::Not
                };
            };
            let lang = after[..newline].trim();
            if !(lang.is_empty() || lang.eq_ignore_ascii_case("json")) {
                return Scan::Not;
            }
            let body = &after[newline + 1..];
            let close = if body.starts_with(FENCE) {
                Some(0)
            } else {
                body.find("\n```").map(|i| i + 1)
            };
            let Some(close) = close else {
                // A closing fence may be arriving on the last line.
                let last = body.rfind('\n').map_or(0, |i| i + 1);
                let body = if FENCE.starts_with(body[last..].trim()) {
                    &body[..last]
                } else {
                    body
                };
                return unclosed(values, json_values(body));
            };
            match json_values(&body[..close]) {
                Scan::Complete(inner) => values.extend(inner),
                _ => return Scan::Not,
            }
            rest = &body[close + FENCE.len()..];
        } else if rest.starts_with('{') {
            match next_value(rest) {
                Next::Value(value, len) => {
                    values.push((value, Some(&rest[..len])));
                    rest = &rest[len..];
                }
                Next::Open => return Scan::Open,
                Next::Not => return Scan::Not,
            }
        } else if TAG_OPEN.starts_with(rest) || FENCE.starts_with(rest) {
            return Scan::Open;
        } else {
            return Scan::Not;
        }
    }
}

/// The run so far, ended by a fence or tags whose closing line has not come: whole when
/// what is inside is (a reply that ends there forgot or lost its closing line).
fn unclosed<'a>(mut values: Vec<(Value, Option<&'a str>)>, inside: Scan<'a>) -> Scan<'a> {
    match inside {
        Scan::Complete(inner) => {
            values.extend(inner);
            Scan::Complete(values)
        }
        other => other,
    }
}

/// Scans the inside of a fence or tags: JSON objects or arrays separated by whitespace.
fn json_values(text: &str) -> Scan<'_> {
    let mut values = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Scan::ended(values);
        }
        if !rest.starts_with(['{', '[']) {
            return Scan::Not;
        }
        match next_value(rest) {
            Next::Value(value, len) => {
                let raw = value.is_object().then(|| &rest[..len]);
                values.push((value, raw));
                rest = &rest[len..];
            }
            Next::Open => return Scan::Open,
            Next::Not => return Scan::Not,
        }
    }
}

enum Next {
    /// A whole value and how many bytes of the text it took.
    Value(Value, usize),
    /// The text ends inside a value.
    Open,
    Not,
}

/// Parses the JSON value `text` starts with.
fn next_value(text: &str) -> Next {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match stream.next() {
        Some(Ok(value)) => Next::Value(value, stream.byte_offset()),
        Some(Err(e)) if e.is_eof() => Next::Open,
        None => Next::Open,
        Some(Err(_)) => Next::Not,
    }
}

/// The text of member `key` of a JSON object's text (which must be valid JSON), so a call
/// keeps the arguments exactly as the model wrote them.
fn raw_member<'a>(object: &'a str, key: &str) -> Option<&'a str> {
    let bytes = object.as_bytes();
    let mut i = skip_space(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_space(bytes, i);
        if bytes.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(bytes, i)?;
        let name: String = serde_json::from_str(object.get(i..key_end)?).ok()?;
        i = skip_space(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_space(bytes, i + 1);
        let end = value_end(bytes, start)?;
        if name == key {
            return object.get(start..end);
        }
        i = skip_space(bytes, end);
        if bytes.get(i) != Some(&b',') {
            return None;
        }
        i += 1;
    }
}

fn skip_space(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// One past the closing quote of the string starting at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// One past the end of the value starting at `start`.
fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    match bytes.get(start)? {
        b'"' => string_end(bytes, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            loop {
                match bytes.get(i)? {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let mut i = start;
            while bytes
                .get(i)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
            {
                i += 1;
            }
            Some(i)
        }
    }
}

/// Holds back streamed text that could be the start of a trailing run of calls.
///
/// The text from the earliest line start that could still begin a run ([`Scan`] is not
/// `Not`) is held; everything before it is released. Because a text that is not a run stays
/// not a run whatever follows, released text can never turn out to be part of a call.
#[derive(Debug, Default)]
pub struct Holdback {
    text: String,
    /// Bytes of `text` released so far.
    released: usize,
    /// The earliest line start not yet ruled out; `None` while the line being written was
    /// ruled out and no next line has started.
    cursor: Option<usize>,
    /// Whether `cursor` was set up (it starts at 0, the first line start).
    started: bool,
}

/// A held region longer than this is re-scanned only when a delta may end a candidate or
/// start a new line (a long object is not re-parsed for every token).
const RESCAN_ALWAYS_BELOW: usize = 256;

impl Holdback {
    /// Takes one text delta; returns the text that can be shown now (possibly empty).
    pub fn push(&mut self, delta: &str) -> String {
        if !self.started {
            self.started = true;
            self.cursor = Some(0);
        }
        let old_len = self.text.len();
        self.text.push_str(delta);
        if self.cursor.is_none()
            && let Some(i) = self.text[old_len..].find('\n')
        {
            self.cursor = Some(old_len + i + 1);
        }
        let telling = delta.contains(['\n', '}', ']', '`', '>']);
        while let Some(start) = self.cursor {
            if !telling && self.text.len() - start > RESCAN_ALWAYS_BELOW {
                break;
            }
            if scan(&self.text[start..]) != Scan::Not {
                break;
            }
            self.cursor = self.text[start..].find('\n').map(|i| start + i + 1);
        }
        let upto = self.cursor.unwrap_or(self.text.len());
        let shown = self.text[self.released..upto].to_owned();
        self.released = upto;
        shown
    }

    /// What is left to show of the message's final text (all of it past what was shown),
    /// once the message ended.
    pub fn rest(&self, final_text: &str) -> Option<String> {
        final_text
            .get(self.released..)
            .filter(|rest| !rest.is_empty())
            .map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools(names: &[&str]) -> Vec<ToolSpec> {
        names
            .iter()
            .map(|n| ToolSpec {
                name: (*n).to_owned(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            })
            .collect()
    }

    /// The text kept and the (id, name, arguments) of each recovered call.
    type Found = (String, Vec<(String, String, String)>);

    fn calls(text: &str) -> Option<Found> {
        recover(text, &tools(&["read", "write", "shell"]), 0).map(|r| {
            (
                r.text,
                r.calls
                    .into_iter()
                    .map(|c| (c.id.clone(), c.name.clone(), c.arguments().to_owned()))
                    .collect(),
            )
        })
    }

    fn one(text: &str, name: &str, args: &str) -> Found {
        (text.to_owned(), vec![("call_local_0".into(), name.into(), args.into())])
    }

    #[test]
    fn a_bare_object_is_a_call_with_the_models_own_arguments_text() {
        let text = r#"{"name": "read", "arguments": {"file_path": "a.txt", "end_line": 1}}"#;
        assert_eq!(
            calls(text),
            Some(one("", "read", r#"{"file_path": "a.txt", "end_line": 1}"#))
        );
        let text = "Let me look.\n\n  {\"name\":\"read\",\"parameters\":{\"file_path\":\"a\"}}\n";
        assert_eq!(calls(text), Some(one("Let me look.", "read", r#"{"file_path":"a"}"#)));
        let text = r#"{"name": "read", "arguments": "{\"file_path\": \"a\"}"}"#;
        assert_eq!(calls(text), Some(one("", "read", r#"{"file_path": "a"}"#)));
    }

    #[test]
    fn fences_and_tags_hold_calls() {
        let pretty = "```json\n{\n  \"name\": \"read\",\n  \"arguments\": {\n    \"file_path\": \"a\"\n  }\n}\n```";
        assert_eq!(calls(pretty), Some(one("", "read", "{\n    \"file_path\": \"a\"\n  }")));
        let bare = "Reading:\n```\n{\"name\": \"read\", \"arguments\": {}}\n```\n";
        assert_eq!(calls(bare), Some(one("Reading:", "read", "{}")));
        // A reply that ends before the closing line still ends with the call.
        let unclosed = "```json\n{\"name\": \"read\", \"arguments\": {}}\n``";
        assert_eq!(calls(unclosed), Some(one("", "read", "{}")));
        let tags = "<tool_call>\n{\"name\": \"shell\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>";
        assert_eq!(calls(tags), Some(one("", "shell", r#"{"command": "ls"}"#)));
        let array = "```json\n[{\"name\": \"read\", \"arguments\": {\"file_path\": \"a\"}}, {\"name\": \"shell\", \"arguments\": {\"command\": \"ls\"}}]\n```";
        let (_, found) = calls(array).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(
            found[1],
            ("call_local_1".into(), "shell".into(), r#"{"command":"ls"}"#.into())
        );
    }

    #[test]
    fn several_calls_on_their_own_lines_are_all_recovered_in_order() {
        let text = "{\"name\": \"read\", \"arguments\": {\"file_path\": \"a\"}}\n<tool_call>{\"name\": \"write\", \"arguments\": {\"file_path\": \"a\", \"content\": \"x\"}}</tool_call>";
        let found = recover(text, &tools(&["read", "write"]), 3).unwrap();
        assert_eq!(found.text, "");
        let ids: Vec<_> = found.calls.iter().map(|c| (c.id.as_str(), c.name.as_str())).collect();
        assert_eq!(ids, [("call_local_3", "read"), ("call_local_4", "write")]);
    }

    #[test]
    fn text_that_merely_contains_json_is_left_alone() {
        for text in [
            // An example in the middle of an explanation.
            "Call it like this:\n{\"name\": \"read\", \"arguments\": {\"file_path\": \"a\"}}\nand it returns the lines.",
            // Not at a line start.
            "The call is {\"name\": \"read\", \"arguments\": {}}",
            // A tool that is not advertised.
            "{\"name\": \"launch\", \"arguments\": {}}",
            // No arguments, or arguments that are no object.
            "{\"name\": \"read\"}",
            "{\"name\": \"read\", \"arguments\": 3}",
            // An answer object after a call: the run is not all calls.
            "{\"name\": \"read\", \"arguments\": {}}\n{\"response\": \"PLUM\"}",
            // A fence of another language.
            "```python\n{\"name\": \"read\", \"arguments\": {}}\n```",
            // Cut off (e.g. by the token limit).
            "{\"name\": \"read\", \"arguments\": {\"file_path\": \"a",
            "",
            "Just an answer.",
        ] {
            assert_eq!(calls(text), None, "{text:?}");
        }
    }

    #[test]
    fn a_run_broken_by_bad_json_recovers_only_what_follows_it() {
        let text = "{\"name\": \"read\", \"arguments\": {}}\n{\"name\": \"write\", \"arguments\": {})}\n{\"name\": \"shell\", \"arguments\": {\"command\": \"ls\"}}";
        let (before, found) = calls(text).unwrap();
        assert!(before.ends_with("{})}"), "{before}");
        assert_eq!(
            found,
            [("call_local_0".into(), "shell".into(), r#"{"command": "ls"}"#.into())]
        );
        // A non-call object on its own line before the calls stays text.
        let text = "{\"example\": 1}\n{\"name\": \"read\", \"arguments\": {}}";
        assert_eq!(calls(text), Some(one("{\"example\": 1}", "read", "{}")));
    }

    #[test]
    fn raw_member_cuts_out_a_value_exactly() {
        let object = r#" { "a" : "x\"}" , "arguments" : {"k": [1, {"b": "}"}]} , "z": true } "#;
        assert_eq!(raw_member(object, "arguments"), Some(r#"{"k": [1, {"b": "}"}]}"#));
        assert_eq!(raw_member(object, "z"), Some("true"));
        assert_eq!(raw_member(object, "missing"), None);
    }

    /// Feeds `text` in pieces of `size` chars; returns what was shown while streaming and
    /// what the message's end showed.
    fn stream(text: &str, size: usize) -> (String, String) {
        let mut hold = Holdback::default();
        let mut shown = String::new();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(size) {
            shown.push_str(&hold.push(&piece.iter().collect::<String>()));
        }
        let final_text = calls(text).map(|(before, _)| before).unwrap_or_else(|| text.to_owned());
        (shown, hold.rest(&final_text).unwrap_or_default())
    }

    #[test]
    fn a_trailing_call_is_never_shown_and_everything_else_is() {
        let cases = [
            "{\"name\": \"read\", \"arguments\": {\"file_path\": \"a\"}}",
            "Let me read it.\n```json\n{\n  \"name\": \"read\",\n  \"arguments\": {}\n}\n```",
            "Sure.\n<tool_call>\n{\"name\": \"shell\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>\n",
            "Call it like this:\n{\"name\": \"read\", \"arguments\": {}}\nand it returns the lines.",
            "{\"name\": \"read\", \"arguments\": {}}\n{\"response\": \"PLUM\"}",
            "{braces} in prose\nand `code` and <b>tags</b>\n```rust\nfn main() {}\n```\nDone.",
        ];
        for text in cases {
            for size in [1, 2, 3, 7, 500] {
                let (streamed, rest) = stream(text, size);
                match calls(text) {
                    Some((before, _)) => {
                        assert!(
                            !streamed.contains("\"name\""),
                            "{text:?} by {size}: showed {streamed:?}"
                        );
                        assert_eq!(format!("{streamed}{rest}").trim_end(), before, "{text:?} by {size}");
                    }
                    None => assert_eq!(format!("{streamed}{rest}"), text, "{text:?} by {size}"),
                }
            }
        }
    }

    #[test]
    fn prose_is_shown_as_it_streams() {
        let mut hold = Holdback::default();
        assert_eq!(hold.push("Hel"), "Hel");
        assert_eq!(hold.push("lo\n"), "lo\n");
        assert_eq!(hold.push("{"), "", "a line starting with a brace is held");
        assert_eq!(hold.push("braces} are"), "{braces} are", "until it is clearly no JSON");
        assert_eq!(hold.push(" fine\n```"), " fine\n");
        assert_eq!(hold.push("python\n"), "```python\n");
    }

    /// Streams fixed text pieces (and structured calls) as one completion.
    struct Pieces(Vec<&'static str>, Vec<ToolCall>);

    impl Provider for Pieces {
        fn name(&self) -> &str {
            "pieces"
        }
        fn complete<'a>(
            &'a self,
            _request: &'a ChatRequest<'a>,
            on_delta: DeltaSink<'a>,
        ) -> BoxFuture<'a, Result<Completion, ProviderError>> {
            Box::pin(async move {
                for piece in &self.0 {
                    on_delta(Delta::Text((*piece).to_owned()));
                }
                Ok(Completion {
                    text: self.0.concat(),
                    tool_calls: self.1.clone(),
                    stop_reason: Some(StopReason::EndTurn),
                    ..Completion::default()
                })
            })
        }
        fn context_window<'a>(&'a self, _model: &'a str) -> BoxFuture<'a, Option<u64>> {
            Box::pin(async { Some(4096) })
        }
    }

    #[tokio::test]
    async fn the_wrapper_passes_the_servers_context_window_on() {
        let wrapped = TextCalls::new(Arc::new(Pieces(Vec::new(), Vec::new())));
        assert_eq!(wrapped.context_window("m").await, Some(4096));
    }

    async fn run(provider: Pieces, history: &[Message]) -> (String, Completion) {
        let tools = tools(&["read"]);
        let request = ChatRequest {
            model: "m",
            system: "",
            messages: history,
            tools: &tools,
            max_tokens: 1,
            temperature: None,
            reasoning_effort: None,
        };
        let mut shown = String::new();
        let mut sink = |d: Delta| {
            if let Delta::Text(t) = d {
                shown.push_str(&t)
            }
        };
        let completion = TextCalls::new(Arc::new(provider))
            .complete(&request, &mut sink)
            .await
            .unwrap();
        (shown, completion)
    }

    #[tokio::test]
    async fn the_wrapper_turns_a_trailing_call_into_a_structured_one() {
        let earlier = Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall::new("call_local_0", "read", "{}")],
            reasoning: Vec::new(),
        };
        let pieces = Pieces(
            vec![
                "I will read it.\n",
                "{\"name\": \"re",
                "ad\", \"arguments\": {\"file_path\": \"a\"}}",
            ],
            Vec::new(),
        );
        let (shown, completion) = run(pieces, &[earlier]).await;
        assert_eq!(shown, "I will read it.\n");
        assert_eq!(completion.text, "I will read it.");
        assert_eq!(completion.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(
            completion.tool_calls,
            [ToolCall::new("call_local_1", "read", r#"{"file_path": "a"}"#)],
            "ids continue after the conversation's recovered calls"
        );
    }

    #[tokio::test]
    async fn the_wrapper_leaves_replies_with_real_calls_and_plain_json_alone() {
        let call = ToolCall::new("c1", "read", "{}");
        let text = "{\"name\": \"read\", \"arguments\": {}}";
        let (shown, completion) = run(Pieces(vec![text], vec![call.clone()]), &[]).await;
        assert_eq!((shown.as_str(), completion.text.as_str()), (text, text));
        assert_eq!(completion.tool_calls, [call]);
        let text = "{\"response\": \"PLUM\"}";
        let (shown, completion) = run(Pieces(vec!["{\"resp", "onse\": \"PLUM\"}"], Vec::new()), &[]).await;
        assert_eq!(
            (shown.as_str(), completion.text.as_str()),
            (text, text),
            "held, then shown at the end"
        );
        assert!(completion.tool_calls.is_empty());
    }

    #[test]
    fn on_by_default_for_compatible_servers_only() {
        assert!(on_by_default(WireFormat::OpenAiChat, "http://127.0.0.1:8080/v1"));
        assert!(on_by_default(WireFormat::OpenAiChat, "https://openrouter.ai/api/v1"));
        assert!(!on_by_default(WireFormat::OpenAiChat, "https://api.openai.com/v1"));
        assert!(on_by_default(WireFormat::Responses, "http://127.0.0.1:8080/v1"));
        assert!(on_by_default(WireFormat::Anthropic, "http://127.0.0.1:8080"));
        assert!(!on_by_default(WireFormat::Anthropic, "https://api.anthropic.com"));
        assert!(!on_by_default(WireFormat::Responses, "https://api.openai.com/v1"));
    }
}
