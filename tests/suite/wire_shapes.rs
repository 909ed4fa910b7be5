//! The requests brute sends, compared by shape with the requests real clients sent in the
//! recorded conversations of ../shared/fixtures/llm-wire (OpenAI chat through OpenRouter, a
//! real Ollama's OpenAI-compatible route, Anthropic Messages, OpenAI Responses).
//!
//! The real binary runs a two-turn conversation against the mock server (text, a tool call,
//! its result, an answer; then a second prompt with `--continue`, a call, its result, an
//! answer), so its four requests line up with the four recorded ones. The comparer checks keys
//! and value types, never values; each array element is matched with a recorded element of
//! the same kind (its `type`, else its `role`). Every difference either has a written reason
//! the real API accepts it (below, per wire) or fails the test, naming the key.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use support::{MockServer, Recorded, Reply, Sandbox};

/// No run of brute may take longer (it takes well under a second).
const RUN_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wire {
    Chat,
    Ollama,
    Anthropic,
    Responses,
}

/// What kind of difference the comparer found.
#[derive(Clone, Copy, Debug, PartialEq)]
enum What {
    /// brute sends a key no recorded request has at that place.
    Extra,
    /// The real client sends a key brute does not.
    Missing,
    /// Both send it, with different JSON types.
    Type,
    /// brute sends an array element of a kind no recorded request has at that place.
    Unrecorded,
}

/// A difference the real API accepts, and why.
struct Accepted {
    /// Where, as a pattern: keys joined by `.`, array elements as `[kind]`; a leading `*`
    /// matches any prefix.
    at: &'static str,
    what: What,
    why: &'static str,
}

const fn ok(at: &'static str, what: What, why: &'static str) -> Accepted {
    Accepted { at, what, why }
}

/// Differences shared by both OpenAI-chat-shaped wires.
const CHAT_ACCEPTED: &[Accepted] = &[
    ok(
        "max_tokens",
        What::Extra,
        "a documented Chat Completions parameter (the recorded client set no limit)",
    ),
    ok(
        "messages[system]",
        What::Unrecorded,
        "the standard system role; the recorded conversations had no system prompt",
    ),
    ok(
        "messages[assistant+tool_calls].content",
        What::Type,
        "null content is documented as allowed when tool_calls are present (Ollama's \
         openai.go takes the same path); without tool_calls it is not, and that is not accepted",
    ),
];

/// Differences of Ollama's route beyond [`CHAT_ACCEPTED`].
const OLLAMA_ACCEPTED: &[Accepted] = &[
    ok(
        "enable_thinking",
        What::Missing,
        "not an Ollama parameter (ruby_llm sends it for other servers); Ollama ignores it",
    ),
    ok(
        "messages[assistant+tool_calls].reasoning",
        What::Missing,
        "optional: brute does not send a model's reasoning back",
    ),
    ok(
        "messages[assistant+tool_calls].reasoning_content",
        What::Missing,
        "optional: brute does not send a model's reasoning back",
    ),
    ok(
        "messages[assistant].reasoning",
        What::Missing,
        "optional: brute does not send a model's reasoning back",
    ),
    ok(
        "messages[assistant].reasoning_content",
        What::Missing,
        "optional: brute does not send a model's reasoning back",
    ),
];

const ANTHROPIC_ACCEPTED: &[Accepted] = &[
    ok(
        "*.cache_control",
        What::Extra,
        "documented prompt caching breakpoints (system, last tool, last block)",
    ),
    ok(
        "messages[user].content[tool_result].content",
        What::Type,
        "tool_result content is documented as a string or an array of content blocks",
    ),
];

const RESPONSES_ACCEPTED: &[Accepted] = &[
    ok("max_output_tokens", What::Extra, "a documented Responses parameter"),
    ok(
        "instructions",
        What::Extra,
        "the documented place for the system prompt",
    ),
    ok(
        "reasoning",
        What::Extra,
        "a documented Responses parameter: brute asks reasoning models for a summary to show \
         (the recorded client asked for none)",
    ),
    ok(
        "input[assistant].content",
        What::Type,
        "an input message's content is documented as a string or an array of parts",
    ),
];

impl Wire {
    const ALL: [Wire; 4] = [Wire::Chat, Wire::Ollama, Wire::Anthropic, Wire::Responses];

    /// The recorded conversation brute's four requests are compared with.
    fn recorded(self) -> &'static str {
        match self {
            Wire::Chat => "openai-chat/ruby_llm-openrouter-stream-tool-multiturn",
            Wire::Ollama => "ollama-openai-compat/ruby_llm-qwen3-stream-tool-multiturn",
            Wire::Anthropic => "anthropic/ruby_llm-stream-tool-multiturn",
            Wire::Responses => "openai-responses/ruby_llm-stream-tool-multiturn",
        }
    }

    /// The key holding the conversation.
    fn items(self) -> &'static str {
        match self {
            Wire::Responses => "input",
            _ => "messages",
        }
    }

    fn accepted(self) -> Vec<&'static Accepted> {
        let lists: &[&'static [Accepted]] = match self {
            Wire::Chat => &[CHAT_ACCEPTED],
            Wire::Ollama => &[CHAT_ACCEPTED, OLLAMA_ACCEPTED],
            Wire::Anthropic => &[ANTHROPIC_ACCEPTED],
            Wire::Responses => &[RESPONSES_ACCEPTED],
        };
        lists.iter().flat_map(|l| l.iter()).collect()
    }

    /// A tool call id in this provider's style.
    fn call_id(self, n: u32) -> String {
        match self {
            Wire::Anthropic => format!("toolu_01Mock{n}"),
            Wire::Ollama => format!("call_mock{n}"),
            Wire::Chat | Wire::Responses => format!("call_Mock{n}"),
        }
    }

    /// brute, pointed at `server` with this wire format.
    fn brute(self, sb: &Sandbox, server: &MockServer) -> assert_cmd::Command {
        let mut cmd = sb.bare();
        cmd.timeout(RUN_LIMIT);
        match self {
            Wire::Chat => {
                cmd.env("OPENAI_API_KEY", "test-key").args([
                    "--provider",
                    "openai",
                    "--model",
                    "anthropic/claude-haiku-4.5",
                    "--base-url",
                    &server.url("/v1"),
                ]);
            }
            Wire::Ollama => {
                cmd.env("OLLAMA_HOST", format!("127.0.0.1:{}", server.port)).args([
                    "--provider",
                    "ollama",
                    "--model",
                    "qwen3",
                ]);
            }
            Wire::Anthropic => {
                cmd.env("ANTHROPIC_API_KEY", "test-key")
                    .env("ANTHROPIC_BASE_URL", server.url(""))
                    .args(["--provider", "anthropic"]);
            }
            Wire::Responses => {
                cmd.env("OPENAI_API_KEY", "test-key").args([
                    "--provider",
                    "responses",
                    "--base-url",
                    &server.url("/v1"),
                ]);
            }
        }
        cmd
    }

    /// A streamed reply of `text` (may be empty) then `calls` (id, name, arguments).
    fn reply(self, text: &str, calls: &[(&str, &str, &str)]) -> Reply {
        Reply::sse(match self {
            Wire::Chat | Wire::Ollama => support::openai_sse(text, calls),
            Wire::Anthropic => support::anthropic_sse(None, text, calls),
            Wire::Responses => support::responses_sse(None, text, calls),
        })
    }
}

/// A JSON value's type, as the comparer names it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// What an array element is: its `type`, else its `role` (`+tool_calls` when it has calls).
fn kind(v: &Value) -> String {
    if let Some(t) = v["type"].as_str() {
        return t.to_owned();
    }
    match v["role"].as_str() {
        Some(role) if v["tool_calls"].as_array().is_some_and(|c| !c.is_empty()) => format!("{role}+tool_calls"),
        Some(role) => role.to_owned(),
        None => String::new(),
    }
}

fn key_at(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

/// Where a value's shape is free (JSON Schemas, tool inputs): only its type is compared.
const FREE_FORM: &[&str] = &[
    "tools[function].function.parameters",
    "tools[function].parameters",
    "tools[].input_schema",
    "messages[assistant+tool_calls].content[tool_use].input",
    "messages[assistant].content[tool_use].input",
];

/// Every value of the recorded requests of one wire, by pattern (the paired request first).
struct Shapes<'a> {
    at: BTreeMap<String, Vec<&'a Value>>,
}

impl<'a> Shapes<'a> {
    fn new(requests: &'a [Value]) -> Self {
        let mut shapes = Self { at: BTreeMap::new() };
        for r in requests {
            shapes.index(r, "");
        }
        shapes
    }

    fn index(&mut self, v: &'a Value, at: &str) {
        self.at.entry(at.to_owned()).or_default().push(v);
        match v {
            Value::Object(m) => m.iter().for_each(|(k, x)| self.index(x, &key_at(at, k))),
            Value::Array(a) => a.iter().for_each(|x| self.index(x, &format!("{at}[{}]", kind(x)))),
            _ => {}
        }
    }

    /// A recorded object at `at` that has `key`.
    fn with_key(&self, at: &str, key: &str) -> Option<&'a Value> {
        self.at.get(at)?.iter().copied().find(|v| v.get(key).is_some())
    }
}

/// One difference between brute's request and the real client's.
#[derive(Debug)]
struct Diff {
    at: String,
    path: String,
    what: What,
    detail: String,
}

fn compare(b: &Value, r: &Value, at: &str, path: &str, shapes: &Shapes<'_>, out: &mut Vec<Diff>) {
    let mut diff = |at: &str, path: &str, what: What, detail: String| {
        out.push(Diff {
            at: at.to_owned(),
            path: path.to_owned(),
            what,
            detail,
        })
    };
    if type_name(b) != type_name(r) {
        let detail = format!("brute sends {}, real clients send {}", type_name(b), type_name(r));
        diff(at, path, What::Type, detail);
        return;
    }
    if FREE_FORM.contains(&at) {
        return;
    }
    match (b, r) {
        (Value::Object(bm), Value::Object(rm)) => {
            for (k, rv) in rm {
                if !bm.contains_key(k) {
                    let detail = format!("real clients send it ({}), brute does not", type_name(rv));
                    diff(&key_at(at, k), &key_at(path, k), What::Missing, detail);
                }
            }
            for (k, bv) in bm {
                let (child_at, child_path) = (key_at(at, k), key_at(path, k));
                match rm.get(k).or_else(|| shapes.with_key(at, k).and_then(|o| o.get(k))) {
                    Some(rv) => compare(bv, rv, &child_at, &child_path, shapes, out),
                    None => {
                        let detail = format!("brute sends it ({}), no recorded request has it", type_name(bv));
                        out.push(Diff {
                            at: child_at,
                            path: child_path,
                            what: What::Extra,
                            detail,
                        });
                    }
                }
            }
        }
        (Value::Array(ba), Value::Array(ra)) => {
            for (i, bv) in ba.iter().enumerate() {
                let k = kind(bv);
                let (child_at, child_path) = (format!("{at}[{k}]"), format!("{path}[{i}]"));
                let recorded = ra
                    .iter()
                    .find(|x| kind(x) == k)
                    .or_else(|| shapes.at.get(&child_at).and_then(|v| v.first().copied()));
                match recorded {
                    Some(rv) => compare(bv, rv, &child_at, &child_path, shapes, out),
                    None => out.push(Diff {
                        at: child_at,
                        path: child_path,
                        what: What::Unrecorded,
                        detail: format!("no recorded request has a `{k}` element here"),
                    }),
                }
            }
        }
        _ => {}
    }
}

fn is_accepted(a: &Accepted, d: &Diff) -> bool {
    a.what == d.what
        && match a.at.strip_prefix('*') {
            Some(suffix) => d.at.ends_with(suffix),
            None => d.at == a.at,
        }
}

/// The recorded requests of `wire`'s folder, the one of `name` first.
fn recorded_requests(dir: &Path, wire: Wire, name: &str) -> Vec<Value> {
    let folder = wire.recorded().split('/').next().unwrap_or_default();
    let mut names: Vec<String> = std::fs::read_dir(dir.join(folder))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".request.json"))
        .map(|n| format!("{folder}/{n}"))
        .filter(|n| n != name)
        .collect();
    names.sort();
    names.insert(0, name.to_owned());
    names
        .iter()
        .map(|n| serde_json::from_str(&support::fixture(dir, n)).unwrap_or_else(|e| panic!("{n}: {e}")))
        .collect()
}

/// Compares brute's request with the recorded `name`; returns the differences not accepted,
/// and marks the accepted ones it used.
fn differences(wire: Wire, dir: &Path, name: &str, brute: &Value, used: &mut [bool]) -> Vec<String> {
    let recorded = recorded_requests(dir, wire, name);
    let shapes = Shapes::new(&recorded);
    let mut diffs = Vec::new();
    compare(brute, &recorded[0], "", "", &shapes, &mut diffs);
    let accepted = wire.accepted();
    // One line per pattern: the first place it occurs, and how many more.
    let mut grouped: Vec<(Diff, usize)> = Vec::new();
    for d in diffs {
        if let Some(i) = accepted.iter().position(|a| is_accepted(a, &d)) {
            used[i] = true;
        } else if let Some(g) = grouped.iter_mut().find(|(g, _)| g.at == d.at && g.what == d.what) {
            g.1 += 1;
        } else {
            grouped.push((d, 0));
        }
    }
    grouped
        .into_iter()
        .map(|(d, more)| {
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!("{:?} at `{}` ({}{more}): {}", d.what, d.at, d.path, d.detail)
        })
        .collect()
}

/// The conversation's messages or items as kinds, with Anthropic's content blocks.
fn sequence(wire: Wire, request: &Value) -> Vec<String> {
    request[wire.items()]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| match m["content"].as_array() {
            Some(blocks) if wire == Wire::Anthropic => {
                let kinds: Vec<String> = blocks.iter().map(kind).collect();
                format!("{}[{}]", kind(m), kinds.join(","))
            }
            _ => kind(m),
        })
        .collect()
}

/// brute's sequence, less what the recorded conversations cannot show: the system message
/// (they had none) and text said beside a tool call (their models said none).
fn brute_sequence(wire: Wire, request: &Value) -> Vec<String> {
    let mut seq = sequence(wire, request);
    if seq.first().is_some_and(|s| s == "system") {
        seq.remove(0);
    }
    let mut out: Vec<String> = Vec::new();
    for (i, s) in seq.iter().enumerate() {
        match wire {
            Wire::Anthropic if s.starts_with("assistant[text,tool_use") => {
                out.push(s.replacen("[text,", "[", 1));
            }
            Wire::Responses if s == "assistant" && seq.get(i + 1).is_some_and(|n| n == "function_call") => {}
            _ => out.push(s.clone()),
        }
    }
    out
}

/// The recorded sequence, less reasoning items (the recorded client sends back every turn's;
/// brute sends back the current turn's, and the mock's replies here carry none; the
/// reasoning tests cover them).
fn real_sequence(wire: Wire, request: &Value) -> Vec<String> {
    let mut seq = sequence(wire, request);
    seq.retain(|s| s != "reasoning");
    seq
}

/// How results refer to calls: every result answers a call of the message or items just
/// before it, and every call's arguments are a JSON object (as a string, or an object for
/// Anthropic). Returns what breaks that.
fn broken_links(wire: Wire, request: &Value) -> Vec<String> {
    let mut broken = Vec::new();
    let items = request[wire.items()].as_array().cloned().unwrap_or_default();
    let mut open: Vec<String> = Vec::new();
    for (i, m) in items.iter().enumerate() {
        match wire {
            Wire::Chat | Wire::Ollama => {
                if let Some(calls) = m["tool_calls"].as_array() {
                    open = Vec::new();
                    for c in calls {
                        if c["type"] != "function" {
                            broken.push(format!("messages[{i}]: a tool call's type is not \"function\""));
                        }
                        let args = c["function"]["arguments"].as_str().map(serde_json::from_str::<Value>);
                        if !matches!(args, Some(Ok(Value::Object(_)))) {
                            broken.push(format!(
                                "messages[{i}]: arguments are not a string holding a JSON object"
                            ));
                        }
                        open.push(c["id"].as_str().unwrap_or_default().to_owned());
                    }
                } else if m["role"] == "tool" {
                    let id = m["tool_call_id"].as_str().unwrap_or_default();
                    if !open.iter().any(|o| o == id) {
                        broken.push(format!("messages[{i}]: tool_call_id {id:?} answers no call before it"));
                    }
                } else {
                    open.clear();
                }
            }
            Wire::Anthropic => {
                let blocks = m["content"].as_array().cloned().unwrap_or_default();
                if m["role"] == "assistant" {
                    open = Vec::new();
                    for b in blocks.iter().filter(|b| b["type"] == "tool_use") {
                        if !b["input"].is_object() {
                            broken.push(format!("messages[{i}]: tool_use input is not an object"));
                        }
                        open.push(b["id"].as_str().unwrap_or_default().to_owned());
                    }
                } else {
                    for b in blocks.iter().filter(|b| b["type"] == "tool_result") {
                        let id = b["tool_use_id"].as_str().unwrap_or_default();
                        if !open.iter().any(|o| o == id) {
                            broken.push(format!(
                                "messages[{i}]: tool_use_id {id:?} answers no tool_use before it"
                            ));
                        }
                    }
                    open.clear();
                }
            }
            Wire::Responses => match m["type"].as_str() {
                Some("function_call") => {
                    let args = m["arguments"].as_str().map(serde_json::from_str::<Value>);
                    if !matches!(args, Some(Ok(Value::Object(_)))) {
                        broken.push(format!("input[{i}]: arguments are not a string holding a JSON object"));
                    }
                    open.push(m["call_id"].as_str().unwrap_or_default().to_owned());
                }
                Some("function_call_output") => {
                    let id = m["call_id"].as_str().unwrap_or_default();
                    if !open.iter().any(|o| o == id) {
                        broken.push(format!("input[{i}]: call_id {id:?} answers no function_call before it"));
                    }
                }
                Some("reasoning") => {}
                _ => open.clear(),
            },
        }
    }
    broken
}

/// Runs the two-turn conversation through the real binary; returns the four requests.
fn converse(wire: Wire) -> Vec<Recorded> {
    let sb = Sandbox::new();
    sb.write("notes.txt", "hello from notes\n");
    sb.write("todo.txt", "buy milk\n");
    let server = MockServer::start();
    let (first, second) = (wire.call_id(1), wire.call_id(2));
    server.push(wire.reply("Let me look.", &[(&first, "read", r#"{"file_path":"notes.txt"}"#)]));
    server.push(wire.reply("It says hello.", &[]));
    server.push(wire.reply("", &[(&second, "read", r#"{"file_path":"todo.txt"}"#)]));
    server.push(wire.reply("Buy milk.", &[]));
    let out = wire
        .brute(&sb, &server)
        .args(["-p", "What is in notes.txt?"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        stdout.contains("It says hello."),
        "{wire:?}: first turn printed {stdout:?}"
    );
    wire.brute(&sb, &server)
        .args(["-p", "And todo.txt?", "--continue"])
        .assert()
        .success()
        .stdout("Buy milk.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{wire:?}: brute sent {} requests", requests.len());
    requests
}

/// brute's four requests against the recorded four, for one wire format.
fn check_conversation(wire: Wire, dir: &Path) -> Vec<String> {
    let requests = converse(wire);
    let accepted = wire.accepted();
    let mut used = vec![false; accepted.len()];
    let mut failures = Vec::new();
    // The results brute sends are the real `read` results, not errors.
    let last = requests[3].body.to_string();
    assert!(
        last.contains("hello from notes") && last.contains("buy milk"),
        "{wire:?}: {last}"
    );
    for (n, request) in requests.iter().enumerate() {
        let name = format!("{}.{n}.request.json", wire.recorded());
        let real: Value = serde_json::from_str(&support::fixture(dir, &name)).unwrap();
        assert!(
            broken_links(wire, &real).is_empty(),
            "{name}: {:?}",
            broken_links(wire, &real)
        );
        for broken in broken_links(wire, &request.body) {
            failures.push(format!("{wire:?} request {n}: {broken}"));
        }
        let (b, r) = (brute_sequence(wire, &request.body), real_sequence(wire, &real));
        if b != r {
            failures.push(format!(
                "{wire:?} request {n}: the {} differ from {name}:\n    brute {b:?}\n    real  {r:?}",
                wire.items()
            ));
        }
        for d in differences(wire, dir, &name, &request.body, &mut used) {
            failures.push(format!("{wire:?} request {n} vs {name}: {d}"));
        }
    }
    for (a, used) in accepted.iter().zip(used) {
        if !used {
            failures.push(format!(
                "{wire:?}: the accepted difference {:?} at `{}` no longer occurs; drop it from the list ({})",
                a.what, a.at, a.why
            ));
        }
    }
    failures
}

#[test]
fn requests_have_the_shape_real_clients_send() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let failures: Vec<String> = Wire::ALL
        .iter()
        .flat_map(|wire| check_conversation(*wire, &dir))
        .collect();
    assert!(
        failures.is_empty(),
        "brute's requests differ from the recorded real clients' requests:\n  {}",
        failures.join("\n  ")
    );
}

/// A streamed reply with no text and no tool call (e.g. a thinking model that only thought).
fn empty_reply(wire: Wire) -> Reply {
    match wire {
        Wire::Chat | Wire::Ollama => Reply::sse(
            [
                json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "", "reasoning": "Hmm."}, "finish_reason": null}]}),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            ]
            .iter()
            .map(|c| format!("data: {c}\n\n"))
            .collect::<String>()
                + "data: [DONE]\n\n",
        ),
        Wire::Anthropic | Wire::Responses => wire.reply("", &[]),
    }
}

#[test]
fn an_answer_without_text_is_sent_back_in_a_shape_the_api_takes() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let mut failures = Vec::new();
    for wire in Wire::ALL {
        let sb = Sandbox::new();
        let server = MockServer::start();
        server.push(empty_reply(wire));
        server.push(wire.reply("Hello.", &[]));
        wire.brute(&sb, &server).args(["-p", "think"]).assert().success();
        wire.brute(&sb, &server)
            .args(["-p", "and now say it", "--continue"])
            .assert()
            .success()
            .stdout("Hello.\n");
        let requests = server.requests();
        // The recorded request 2 has an assistant answer followed by a new prompt.
        let name = format!("{}.2.request.json", wire.recorded());
        let mut used = vec![false; wire.accepted().len()];
        for d in differences(wire, &dir, &name, &requests[1].body, &mut used) {
            failures.push(format!("{wire:?} vs {name}: {d}"));
        }
    }
    assert!(
        failures.is_empty(),
        "after an answer without text, brute's next request differs from real clients':\n  {}",
        failures.join("\n  ")
    );
}

#[test]
fn the_comparer_names_each_difference() {
    let recorded = [json!({
        "model": "m",
        "stream": true,
        "messages": [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "a", "content": "x"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    })];
    let brute = json!({
        "model": "m",
        "stream": true,
        "seed": 1,
        "messages": [
            {"role": "user", "content": ["hi"]},
            {"role": "tool", "content": "x"},
            {"role": "developer", "content": "d"},
        ],
        "tools": [{"type": "function", "function": {"name": "g", "parameters": {"type": "object", "required": []}}}],
    });
    let shapes = Shapes::new(&recorded);
    let mut diffs = Vec::new();
    compare(&brute, &recorded[0], "", "", &shapes, &mut diffs);
    let mut got: Vec<(String, String, String)> = diffs
        .iter()
        .map(|d| (format!("{:?}", d.what), d.at.clone(), d.path.clone()))
        .collect();
    got.sort();
    let want = [
        ("Extra", "seed", "seed"),
        ("Missing", "messages[tool].tool_call_id", "messages[1].tool_call_id"),
        ("Type", "messages[user].content", "messages[0].content"),
        ("Unrecorded", "messages[developer]", "messages[2]"),
    ];
    let want: Vec<(String, String, String)> = want
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
    // Values never count, and a JSON Schema is compared by type only.
    assert_eq!(got, want);
}

use support::png;

/// The first bytes of a GIF of this size.
fn gif(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = b"GIF89a".to_vec();
    bytes.extend(width.to_le_bytes());
    bytes.extend(height.to_le_bytes());
    bytes.extend([0, 0, 0, b';']);
    bytes
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A project with `shot.png` (for `-i`), `pic.gif` (for `@pic.gif`) and `diagram.png` (for
/// `read`), and their base64.
fn image_project() -> (Sandbox, [String; 3]) {
    let sb = Sandbox::new();
    let files = [
        ("shot.png", png(640, 480)),
        ("pic.gif", gif(20, 10)),
        ("diagram.png", png(32, 16)),
    ];
    for (name, bytes) in &files {
        std::fs::write(sb.path(name), bytes).unwrap();
    }
    let [a, b, c] = files.map(|(_, bytes)| b64(&bytes));
    (sb, [a, b, c])
}

/// The images of a request, where each wire puts them, as (where, media type, base64):
/// `user` for a person's message, `tool` for what follows or holds a tool's result.
fn images_in(wire: Wire, body: &Value) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    let items = body[wire.items()].as_array().cloned().unwrap_or_default();
    let data_url = |url: &str| {
        let (media, data) = url.strip_prefix("data:")?.split_once(";base64,")?;
        Some((media.to_owned(), data.to_owned()))
    };
    for (i, item) in items.iter().enumerate() {
        let after_tool = i > 0
            && matches!(
                items[i - 1]["role"].as_str().or(items[i - 1]["type"].as_str()),
                Some("tool" | "function_call_output")
            );
        let place = if after_tool { "tool" } else { "user" };
        for part in item["content"].as_array().into_iter().flatten() {
            match (wire, part["type"].as_str().unwrap_or_default()) {
                (Wire::Chat, "image_url") => found.extend(
                    data_url(part["image_url"]["url"].as_str().unwrap_or("")).map(|(m, d)| (place.to_owned(), m, d)),
                ),
                (Wire::Responses, "input_image") => {
                    assert_eq!(part["detail"], "auto", "{part}");
                    found.extend(
                        data_url(part["image_url"].as_str().unwrap_or("")).map(|(m, d)| (place.to_owned(), m, d)),
                    )
                }
                (Wire::Anthropic, "image") => {
                    let s = &part["source"];
                    assert_eq!(s["type"], "base64", "{part}");
                    found.push((
                        "user".into(),
                        s["media_type"].as_str().unwrap_or("").into(),
                        s["data"].as_str().unwrap_or("").into(),
                    ));
                }
                (Wire::Anthropic, "tool_result") => {
                    for inner in part["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|b| b["type"] == "image")
                    {
                        let s = &inner["source"];
                        found.push((
                            "tool".into(),
                            s["media_type"].as_str().unwrap_or("").into(),
                            s["data"].as_str().unwrap_or("").into(),
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    found
}

#[test]
fn images_from_the_flag_a_mention_and_read_reach_each_wire_as_its_api_requires() {
    for wire in [Wire::Chat, Wire::Anthropic, Wire::Responses] {
        let (sb, [shot, pic, diagram]) = image_project();
        let server = MockServer::start();
        let id = wire.call_id(1);
        server.push(wire.reply("", &[(&id, "read", r#"{"file_path":"diagram.png"}"#)]));
        server.push(wire.reply("Both look fine.", &[]));
        let out = wire
            .brute(&sb, &server)
            .args(["-p", "compare @pic.gif with the shot", "-i", "shot.png"])
            .assert()
            .success();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(
            stderr.contains("[image: shot.png, 640×480] [image: pic.gif, 20×10]"),
            "{wire:?}: {stderr}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{wire:?}: the strict mock took both requests");
        let user = |m: &str, d: &str| ("user".to_owned(), m.to_owned(), d.to_owned());
        let tool = |m: &str, d: &str| ("tool".to_owned(), m.to_owned(), d.to_owned());
        assert_eq!(
            images_in(wire, &requests[0].body),
            [user("image/png", &shot), user("image/gif", &pic)],
            "{wire:?}: the prompt carries -i's image, then the mentioned one"
        );
        assert_eq!(
            images_in(wire, &requests[1].body),
            [
                user("image/png", &shot),
                user("image/gif", &pic),
                tool("image/png", &diagram)
            ],
            "{wire:?}: read's image goes with its result"
        );
        let text = requests[1].body.to_string();
        assert!(
            text.contains("[image: diagram.png, 32×16] (image/png, 33 bytes, attached as an image)"),
            "{wire:?}: {text}"
        );
    }
}

#[test]
fn a_model_without_vision_gets_notes_and_images_stay_in_the_session() {
    // Ollama's default model (qwen3) is not known to see: the person's image becomes a note.
    let (sb, [shot, ..]) = image_project();
    let server = MockServer::start();
    server.push(Wire::Ollama.reply("I cannot see it.", &[]));
    server.push(Wire::Chat.reply("It is a screenshot.", &[]));
    Wire::Ollama
        .brute(&sb, &server)
        .args(["-p", "what is this?", "-i", "shot.png"])
        .assert()
        .success();
    let first = &server.requests()[0].body;
    let content = first["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m["content"].clone());
    let note = content.as_ref().and_then(Value::as_str).unwrap_or_default();
    assert!(
        note.starts_with(
            "what is this?\n[image: shot.png, 640×480] (not sent: the model qwen3 is not known to accept images"
        ),
        "{content:?}"
    );
    assert!(
        !first.to_string().contains(&shot),
        "no image bytes to a model without vision"
    );
    // Resumed with a model that sees, the image kept in the session is sent.
    Wire::Chat
        .brute(&sb, &server)
        .args(["-p", "and now?", "--continue"])
        .assert()
        .success();
    let second = &server.requests()[1].body;
    assert_eq!(
        images_in(Wire::Chat, second),
        [("user".to_owned(), "image/png".to_owned(), shot)]
    );
}

#[test]
fn images_over_the_providers_limits_are_refused_naming_the_limit() {
    let sb = Sandbox::new();
    std::fs::write(sb.path("wide.png"), png(9000, 100)).unwrap();
    let server = MockServer::start();
    let out = Wire::Anthropic
        .brute(&sb, &server)
        .args(["-p", "look", "-i", "wide.png"])
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("wide.png is 9000×100 pixels; providers take images up to 8000×8000"),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "nothing was sent");
    // The same file read by the model: an error result naming the limit, the turn goes on.
    let id = Wire::Anthropic.call_id(1);
    server.push(Wire::Anthropic.reply("", &[(&id, "read", r#"{"file_path":"wide.png"}"#)]));
    server.push(Wire::Anthropic.reply("Too wide.", &[]));
    Wire::Anthropic
        .brute(&sb, &server)
        .args(["-p", "read wide.png"])
        .assert()
        .success();
    let result = server.requests()[1].body["messages"][2]["content"][0].clone();
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains("up to 8000×8000")),
        "{result}"
    );
}

/// How [`anthropic_search_reply`] ends.
#[derive(Clone, Copy)]
enum SearchEnd<'a> {
    /// With a call of `read` (this id): `stop_reason: tool_use`.
    Read(&'a str),
    /// Paused after the search and its cited text, as a long server-side loop does.
    Paused,
    /// Paused right after the search call, before its result.
    PausedMidSearch,
}

/// A streamed Messages answer that searched the web itself (synthetic, in the documented
/// shapes of `web_search_20250305`: a `server_tool_use` whose input streams, its
/// `web_search_tool_result` with encrypted content, cited text), then ends as `end` says.
fn anthropic_search_reply(end: SearchEnd) -> Reply {
    let mut out = String::new();
    let mut event = |v: Value| out.push_str(&format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap_or("")));
    event(
        json!({"type": "message_start", "message": {"id": "msg_s", "type": "message", "role": "assistant",
        "model": "claude-mock", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 1}}}),
    );
    event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
    event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Searching. "}}));
    event(json!({"type": "content_block_stop", "index": 0}));
    event(json!({"type": "content_block_start", "index": 1, "content_block":
        {"type": "server_tool_use", "id": "srvtoolu_01Search", "name": "web_search", "input": {}}}));
    event(
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"query\": \"brute"}}),
    );
    event(
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": " release\"}"}}),
    );
    event(json!({"type": "content_block_stop", "index": 1}));
    if let SearchEnd::PausedMidSearch = end {
        event(
            json!({"type": "message_delta", "delta": {"stop_reason": "pause_turn", "stop_sequence": null}, "usage": {"output_tokens": 5}}),
        );
        event(json!({"type": "message_stop"}));
        return Reply::sse(out);
    }
    event(json!({"type": "content_block_start", "index": 2, "content_block": ANTHROPIC_SEARCH_RESULT.clone()}));
    event(json!({"type": "content_block_stop", "index": 2}));
    event(
        json!({"type": "content_block_start", "index": 3, "content_block": {"type": "text", "text": "", "citations": []}}),
    );
    event(
        json!({"type": "content_block_delta", "index": 3, "delta": {"type": "citations_delta", "citation":
        {"type": "web_search_result_location", "url": "https://brute.test/news", "title": "Brute news",
         "encrypted_index": "Eo8BCioI", "cited_text": "brute 1.0 is out"}}}),
    );
    event(json!({"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "It is out."}}));
    event(json!({"type": "content_block_stop", "index": 3}));
    if let SearchEnd::Read(call_id) = end {
        event(json!({"type": "content_block_start", "index": 4, "content_block":
            {"type": "tool_use", "id": call_id, "name": "read", "input": {}}}));
        event(
            json!({"type": "content_block_delta", "index": 4, "delta": {"type": "input_json_delta", "partial_json": "{\"file_path\":\"notes.txt\"}"}}),
        );
        event(json!({"type": "content_block_stop", "index": 4}));
    }
    let stop_reason = if let SearchEnd::Read(_) = end {
        "tool_use"
    } else {
        "pause_turn"
    };
    event(
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": 9, "server_tool_use": {"web_search_requests": 1}}}),
    );
    event(json!({"type": "message_stop"}));
    Reply::sse(out)
}

static ANTHROPIC_SEARCH_RESULT: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01Search", "content": [
        {"type": "web_search_result", "url": "https://brute.test/news", "title": "Brute news",
         "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2USDOPAQUEs", "page_age": "April 30, 2025"},
        {"type": "web_search_result", "url": "https://brute.test/blog", "title": "Brute blog",
         "encrypted_content": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm", "page_age": null}]})
});

/// The blocks of the assistant message in `body` of these types.
fn assistant_blocks<'a>(body: &'a Value, kind: &str) -> Vec<&'a Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == kind)
        .collect()
}

#[test]
fn anthropic_hosted_web_search_is_advertised_shown_and_sent_back_verbatim_across_a_resume() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "hello from notes\n");
    // The mock is no api.anthropic.com: the hosted search is asked for.
    sb.write(".brute/config.toml", "web_search = true\n");
    let server = MockServer::start();
    server.push(anthropic_search_reply(SearchEnd::Read("toolu_01Read")));
    server.push(Wire::Anthropic.reply("Done.", &[]));
    server.push(Wire::Anthropic.reply("Still out.", &[]));
    let out = Wire::Anthropic
        .brute(&sb, &server)
        .args(["-p", "Is brute out?", "--output-format", "json"])
        .assert()
        .success();
    let result: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let search = result["tool_calls"]
        .as_array()
        .and_then(|calls| calls.iter().find(|c| c["name"] == "web_search"))
        .unwrap_or_else(|| panic!("no web_search among the calls: {result}"));
    assert_eq!(search["arguments"], json!({"query": "brute release"}));
    let shown = search["result"].as_str().unwrap_or_default();
    assert!(
        shown.contains("https://brute.test/news") && shown.contains("Brute blog"),
        "the sources are shown: {shown}"
    );
    Wire::Anthropic
        .brute(&sb, &server)
        .args(["-p", "Still?", "--continue"])
        .assert()
        .success()
        .stdout("Still out.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for (n, request) in requests.iter().enumerate() {
        assert_eq!(request.refused, None, "request {n} refused");
        assert_eq!(
            request.body["tools"][0],
            json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 8}),
            "request {n} offers the hosted search"
        );
    }
    for n in [1, 2] {
        let body = &requests[n].body;
        let uses = assistant_blocks(body, "server_tool_use");
        assert_eq!(
            uses,
            [
                &json!({"type": "server_tool_use", "id": "srvtoolu_01Search", "name": "web_search", "input": {"query": "brute release"}})
            ],
            "request {n}: the search call goes back with its streamed input"
        );
        let results = assistant_blocks(body, "web_search_tool_result");
        let mut sent = results.first().copied().cloned().unwrap_or_default();
        if let Some(block) = sent.as_object_mut() {
            block.remove("cache_control");
        }
        assert_eq!(
            sent, *ANTHROPIC_SEARCH_RESULT,
            "request {n}: the result goes back verbatim"
        );
    }
}

#[test]
fn a_turn_the_provider_paused_goes_on_from_the_paused_answer_as_is() {
    let sb = Sandbox::new();
    sb.write(".brute/config.toml", "web_search = true\n");
    let server = MockServer::start();
    server.push(anthropic_search_reply(SearchEnd::Paused));
    server.push(Wire::Anthropic.reply(" And that is all.", &[]));
    server.push(Wire::Anthropic.reply("Yes.", &[]));
    let out = Wire::Anthropic
        .brute(&sb, &server)
        .args(["-p", "Is brute out?", "--output-format", "json"])
        .assert()
        .success();
    let result: Value = serde_json::from_slice(&out.get_output().stdout).unwrap_or_default();
    assert_eq!(result["result"], "Searching. It is out. And that is all.", "{result}");
    assert_eq!(result["is_error"], false, "{result}");
    Wire::Anthropic
        .brute(&sb, &server)
        .args(["-p", "Sure?", "--continue"])
        .assert()
        .success()
        .stdout("Yes.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "the pause costs one more request, no more");
    for (n, request) in requests.iter().enumerate() {
        assert_eq!(request.refused, None, "request {n} refused");
    }
    // The continuation: the same messages, then the paused answer as the last one, with no
    // user message in between.
    let messages = requests[1].body["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["content"][0]["text"], "Is brute out?");
    assert_eq!(messages[1]["role"], "assistant");
    let kinds: Vec<&str> = array_of(&messages[1]["content"])
        .iter()
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert_eq!(kinds, ["text", "server_tool_use", "web_search_tool_result"]);
    // A later turn sees one assistant turn: the paused answer and its continuation together.
    let later = requests[2].body["messages"].as_array().cloned().unwrap_or_default();
    let roles: Vec<&str> = later.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "user"], "{later:?}");
    let texts: Vec<&str> = array_of(&later[1]["content"])
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert_eq!(texts, ["Searching. It is out.", " And that is all."]);
}

#[test]
fn a_search_still_unanswered_goes_back_only_while_its_message_is_the_last() {
    let sb = Sandbox::new();
    sb.write(".brute/config.toml", "web_search = true\n");
    let server = MockServer::start();
    server.push(anthropic_search_reply(SearchEnd::PausedMidSearch));
    server.push(Wire::Anthropic.reply("Found it.", &[]));
    server.push(Wire::Anthropic.reply("Yes.", &[]));
    Wire::Anthropic
        .brute(&sb, &server)
        .args(["-p", "Search slowly"])
        .assert()
        .success();
    Wire::Anthropic
        .brute(&sb, &server)
        .args(["-p", "Sure?", "--continue"])
        .assert()
        .success()
        .stdout("Yes.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for (n, request) in requests.iter().enumerate() {
        assert_eq!(request.refused, None, "request {n} refused");
    }
    // The continuation: the paused call goes back unanswered, in the last message.
    let calls = |n: usize| assistant_blocks(&requests[n].body, "server_tool_use").len();
    assert_eq!(calls(1), 1, "the continuation sends the paused answer as it came");
    // A later turn: that call was never answered, and no longer last, so it is left out.
    assert_eq!(calls(2), 0, "{}", requests[2].body["messages"]);
}

#[test]
fn the_turns_result_is_its_final_answer_when_a_pause_came_before_a_tool_round() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "hello\n");
    sb.write(".brute/config.toml", "web_search = true\n");
    let server = MockServer::start();
    server.push(anthropic_search_reply(SearchEnd::Paused));
    server.push(Wire::Anthropic.reply("Reading. ", &[("toolu_01R", "read", r#"{"file_path":"notes.txt"}"#)]));
    server.push(Wire::Anthropic.reply("It says hello.", &[]));
    let out = Wire::Anthropic
        .brute(&sb, &server)
        .args(["-p", "What do the notes say?", "--output-format", "json"])
        .assert()
        .success();
    let result: Value = serde_json::from_slice(&out.get_output().stdout).unwrap_or_default();
    assert_eq!(result["result"], "It says hello.", "{result}");
}

fn array_of(value: &Value) -> &[Value] {
    value.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// A streamed Responses answer that searched the web itself (synthetic, in the documented
/// `web_search_call` shape with `web_search_call.action.sources` included), then calls `read`.
fn responses_search_reply(call_id: &str) -> Reply {
    let mut out = String::new();
    let mut event = |v: Value| out.push_str(&format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap_or("")));
    event(json!({"type": "response.created", "response": {"id": "resp_s", "status": "in_progress", "output": []}}));
    event(json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"type": "web_search_call", "id": "ws_01Search", "status": "in_progress"}}));
    event(json!({"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_01Search"}));
    event(json!({"type": "response.output_item.done", "output_index": 0, "item": RESPONSES_SEARCH_CALL.clone()}));
    let message = json!({"type": "message", "id": "msg_s", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": "It is out.", "annotations": [
            {"type": "url_citation", "start_index": 0, "end_index": 10, "url": "https://brute.test/news", "title": "Brute news"}]}]});
    event(json!({"type": "response.output_item.added", "output_index": 1,
        "item": {"type": "message", "id": "msg_s", "role": "assistant", "status": "in_progress", "content": []}}));
    event(
        json!({"type": "response.output_text.delta", "item_id": "msg_s", "output_index": 1, "content_index": 0, "delta": "It is out."}),
    );
    event(json!({"type": "response.output_item.done", "output_index": 1, "item": message}));
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": call_id, "name": "read",
        "arguments": "{\"file_path\":\"notes.txt\"}", "status": "completed"});
    event(json!({"type": "response.output_item.added", "output_index": 2, "item": call}));
    event(json!({"type": "response.output_item.done", "output_index": 2, "item": call}));
    event(
        json!({"type": "response.completed", "response": {"id": "resp_s", "status": "completed",
        "output": [RESPONSES_SEARCH_CALL.clone(), message, call], "usage": {"input_tokens": 12, "output_tokens": 9}}}),
    );
    Reply::sse(out)
}

static RESPONSES_SEARCH_CALL: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    json!({"type": "web_search_call", "id": "ws_01Search", "status": "completed",
        "action": {"type": "search", "query": "brute release", "sources": [
            {"type": "url", "url": "https://brute.test/news"}, {"type": "url", "url": "https://brute.test/blog"}]}})
});

#[test]
fn responses_hosted_web_search_is_advertised_shown_and_sent_back_across_a_resume() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "hello from notes\n");
    sb.write(".brute/config.toml", "web_search = true\n");
    let server = MockServer::start();
    server.push(responses_search_reply("call_Read1"));
    server.push(Wire::Responses.reply("Done.", &[]));
    server.push(Wire::Responses.reply("Still out.", &[]));
    let out = Wire::Responses
        .brute(&sb, &server)
        .args(["-p", "Is brute out?", "--output-format", "events"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let searched = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .any(|event| event.to_string().contains("web_search") && event.to_string().contains("https://brute.test/blog"));
    assert!(
        searched,
        "the search and its sources are among the stream-json events:\n{stdout}"
    );
    Wire::Responses
        .brute(&sb, &server)
        .args(["-p", "Still?", "--continue"])
        .assert()
        .success()
        .stdout("Still out.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let mut stateless = RESPONSES_SEARCH_CALL.clone();
    if let Some(item) = stateless.as_object_mut() {
        item.remove("id");
    }
    for (n, request) in requests.iter().enumerate() {
        let body = &request.body;
        assert_eq!(request.refused, None, "request {n} refused");
        assert_eq!(
            body["tools"][0],
            json!({"type": "web_search"}),
            "request {n} offers the hosted search"
        );
        assert!(
            body["include"]
                .as_array()
                .is_some_and(|i| i.contains(&json!("web_search_call.action.sources"))),
            "request {n} asks for the sources: {}",
            body["include"]
        );
        let calls: Vec<&Value> = body["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|item| item["type"] == "web_search_call")
            .collect();
        let expected: Vec<&Value> = if n == 0 { vec![] } else { vec![&stateless] };
        assert_eq!(
            calls, expected,
            "request {n}: the search goes back, without its stored id"
        );
    }
}

#[test]
fn the_configured_search_endpoint_backs_a_web_search_tool_on_chat_completions() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let results: Vec<Value> = (0..12)
        .map(|i| {
            json!({"title": format!("Result {i}"), "url": format!("https://brute.test/{i}"),
            "content": format!("snippet {i} {}", "long ".repeat(300)), "engine": "mock"})
        })
        .collect();
    server.route(
        "/search",
        Reply::json(200, json!({"query": "q", "results": results}).to_string()),
    );
    sb.write(
        ".brute/config.toml",
        &format!("web_search_url = \"{}\"\n", server.url("/search?language=en")),
    );
    sb.trust();
    server.push(Wire::Chat.reply(
        "",
        &[("call_S1", "web_search", r#"{"query":"brute release","max_results":3}"#)],
    ));
    server.push(Wire::Chat.reply("Found.", &[]));
    Wire::Chat
        .brute(&sb, &server)
        .args(["-p", "search"])
        .assert()
        .success()
        .stdout("Found.\n");
    let requests = server.requests();
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"web_search"), "the tool is offered: {offered:?}");
    let probes = server.probes();
    let asked: Vec<&support::Recorded> = probes.iter().filter(|p| p.path.starts_with("/search")).collect();
    assert_eq!(asked.len(), 1, "one search: {probes:?}");
    assert_eq!(asked[0].method, "GET");
    assert_eq!(asked[0].path, "/search?language=en&q=brute+release&format=json");
    assert_eq!(
        asked[0].header("authorization"),
        None,
        "no key goes to the search endpoint"
    );
    let results = support::tool_results(&requests[1]);
    let (_, content) = results
        .iter()
        .find(|(id, _)| id == "call_S1")
        .unwrap_or_else(|| panic!("no result: {results:?}"));
    assert!(
        content.starts_with("1. Result 0\n   https://brute.test/0\n   snippet 0"),
        "{content}"
    );
    assert!(
        content.contains("3. Result 2") && !content.contains("Result 3"),
        "{content}"
    );
    assert!(content.contains("(Showing 3 of 12 results."), "{content}");
    assert!(content.len() < 4000, "snippets are cut: {} bytes", content.len());
}

#[test]
fn no_web_search_is_offered_unless_the_person_asked_for_one() {
    // A custom base URL (a local server on either wire) and no setting: neither the hosted
    // search nor the tool, so nothing goes anywhere the person did not choose.
    for wire in [Wire::Anthropic, Wire::Responses, Wire::Chat] {
        let sb = Sandbox::new();
        let server = MockServer::start();
        server.push(wire.reply("Hi.", &[]));
        wire.brute(&sb, &server).args(["-p", "hi"]).assert().success();
        let body = server.requests()[0].body.to_string();
        assert!(!body.contains("web_search"), "{wire:?}: {body}");
    }
    // An untrusted project cannot point the search somewhere.
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Wire::Chat.reply("Hi.", &[]));
    sb.write(".brute/config.toml", "web_search_url = \"http://127.0.0.1:9/search\"\n");
    Wire::Chat.brute(&sb, &server).args(["-p", "hi"]).assert().success();
    assert!(!server.requests()[0].body.to_string().contains("web_search"));
}
