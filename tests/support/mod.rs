//! A mock model provider: a real HTTP/1.1 server on 127.0.0.1 that answers from a script,
//! streams bodies in small chunks split at awkward byte boundaries, can fail with any
//! status or cut a stream, and records every request.
//!
//! It is strict by default ([`strict`]): a request the real API would refuse gets the real
//! API's error and uses up no scripted reply, so brute's requests are judged by the real
//! rules in every provider test. [`MockServer::lenient`] turns that off where a test needs it.
#![allow(dead_code)]

pub mod bytes_tree;
pub mod net;
pub mod strict;
pub mod tmux;
pub mod x11;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// One scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Bytes per chunk written to the socket (each chunk is flushed separately).
    pub chunk: usize,
    /// One chunk per SSE event instead (as a streaming provider sends them), see
    /// [`Reply::per_event`].
    pub per_event: bool,
    /// Stop after this many body bytes and drop the connection without finishing.
    pub cut_at: Option<usize>,
    /// After `cut_at`, keep the connection open and silent until the client hangs up.
    pub stall: bool,
    /// Sent only once the test releases it, after its request arrived (see [`Gate`]).
    pub gate: Option<Gate>,
}

/// A handshake between a test and one reply: the server says when the reply's request has
/// arrived and holds the reply until the test releases it (so the test acts at a known point of
/// a run, without sleeping).
#[derive(Clone, Default)]
pub struct Gate(Arc<(Mutex<(bool, bool)>, std::sync::Condvar)>);

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Gate")
    }
}

impl Gate {
    /// Blocks until the reply's request has arrived. A run that ends before sending it (a
    /// failure) would leave the test waiting: past [`RUN_DEADLINE`] it fails instead (a bound on
    /// a hang, never a timing assertion).
    pub fn arrived(&self) {
        let (state, signal) = &*self.0;
        let state = state.lock().unwrap();
        let (state, _) = signal.wait_timeout_while(state, RUN_DEADLINE, |s| !s.0).unwrap();
        assert!(state.0, "the gated request never arrived (the run ended or hung first)");
    }

    /// Lets the reply go.
    pub fn release(&self) {
        let (state, signal) = &*self.0;
        state.lock().unwrap().1 = true;
        signal.notify_all();
    }

    /// The server's side: says the request arrived, then waits for the release.
    fn pass(&self) {
        let (state, signal) = &*self.0;
        let mut state = state.lock().unwrap();
        state.0 = true;
        signal.notify_all();
        while !state.1 {
            state = signal.wait(state).unwrap();
        }
    }
}

impl Reply {
    /// A 200 `text/event-stream` reply, split every 7 bytes (mid-line, mid-UTF-8).
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into(),
            chunk: 7,
            per_event: false,
            cut_at: None,
            stall: false,
            gate: None,
        }
    }

    /// A JSON reply with the given status.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
            chunk: 64,
            per_event: false,
            cut_at: None,
            stall: false,
            gate: None,
        }
    }

    /// Sets a header, replacing one of the same name.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn chunked(mut self, bytes: usize) -> Self {
        self.chunk = bytes.max(1);
        self
    }

    /// Writes each SSE event (up to and with its blank line) as one flushed chunk, as a
    /// provider streaming a finished answer does, instead of the tests' 7-byte pieces.
    pub fn per_event(mut self) -> Self {
        self.per_event = true;
        self
    }

    /// With `cut_at`: goes silent instead of hanging up (to test idle timeouts).
    pub fn stall(mut self) -> Self {
        self.stall = true;
        self
    }

    /// Held until `gate` is released (see [`Gate`]).
    pub fn after(mut self, gate: &Gate) -> Self {
        self.gate = Some(gate.clone());
        self
    }

    /// Drops the connection after `bytes` bytes of body.
    pub fn cut_at(mut self, bytes: usize) -> Self {
        self.cut_at = Some(bytes);
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub raw_len: usize,
    /// The strict rule that refused this request, if one did.
    pub refused: Option<&'static str>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    replies: VecDeque<Reply>,
    requests: Vec<Recorded>,
    /// Replies by path for what a server answers outside the conversation (see
    /// [`MockServer::route`]), and the requests they answered.
    routes: Vec<(String, Reply)>,
    /// Routed paths the strict judge checks as this API's (its headers: a model list).
    route_apis: Vec<(String, strict::Api)>,
    probes: Vec<Recorded>,
    /// The prompts seen so far, as (tools, messages...) items, when prompt caching is
    /// emulated (see [`MockServer::prompt_cache`]).
    prompt_cache: Option<Vec<Vec<String>>>,
    /// `None`: lenient, every request gets the next scripted reply.
    strict: Option<strict::Strict>,
}

/// The running server; it lives as long as the test process.
#[derive(Clone)]
pub struct MockServer {
    pub port: u16,
    state: Arc<Mutex<State>>,
}

impl MockServer {
    /// A strict server: requests the real APIs refuse are refused.
    pub fn start() -> Self {
        Self::spawn(Some(strict::Strict::default()))
    }

    /// A server that answers every request from the script, whatever it holds.
    pub fn lenient() -> Self {
        Self::spawn(None)
    }

    /// Treats `model` as an OpenAI reasoning model too (a model brute does not know).
    pub fn reasoning_model(&self, model: &str) -> &Self {
        if let Some(strict) = self.state.lock().unwrap().strict.as_mut() {
            strict.reasoning_models.push(model.to_owned());
        }
        self
    }

    fn spawn(strict: Option<strict::Strict>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local addr").port();
        let state = Arc::new(Mutex::new(State {
            strict,
            ..State::default()
        }));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        Self { port, state }
    }

    /// `http://127.0.0.1:PORT`, plus `suffix` (e.g. `/v1`).
    pub fn url(&self, suffix: &str) -> String {
        format!("http://127.0.0.1:{}{suffix}", self.port)
    }

    pub fn push(&self, reply: Reply) -> &Self {
        self.state.lock().unwrap().replies.push_back(reply);
        self
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Answers every request to `path` with `reply`, outside the scripted queue (a local
    /// server's `/props` or `/api/show`). Unrouted, those paths answer 404, as servers without
    /// them (vLLM, OpenAI-compatible proxies) do; either way they stay out of
    /// [`MockServer::requests`].
    pub fn route(&self, path: &str, reply: Reply) -> &Self {
        self.state.lock().unwrap().routes.push((path.to_owned(), reply));
        self
    }

    /// Answers `GET /v1/models` as `api` lists `ids` (OpenAI's `{"object": "list", "data":
    /// [{"id", "object", "created", "owned_by"}]}`, Anthropic's `{"data": [{"type", "id",
    /// "display_name", "created_at"}], "has_more", "first_id", "last_id"}`), the request
    /// judged by that API's header rules when the server is strict.
    pub fn list_models(&self, api: strict::Api, ids: &[&str]) -> &Self {
        let body = match api {
            strict::Api::Anthropic => json!({
                "data": ids.iter().map(|id| json!({"type": "model", "id": id, "display_name": id, "created_at": "2025-09-29T00:00:00Z"})).collect::<Vec<_>>(),
                "has_more": false, "first_id": ids.first(), "last_id": ids.last()}),
            strict::Api::Chat | strict::Api::Responses => json!({"object": "list",
                "data": ids.iter().map(|id| json!({"id": id, "object": "model", "created": 1_700_000_000, "owned_by": "mock"})).collect::<Vec<_>>()}),
        };
        let mut state = self.state.lock().unwrap();
        state
            .routes
            .push(("/v1/models".to_owned(), Reply::json(200, body.to_string())));
        state.route_apis.push(("/v1/models".to_owned(), api));
        self
    }

    /// Emulates OpenAI's prompt caching on Chat Completions: each streamed answer's usage
    /// reports the request's size (bytes / 4) as `prompt_tokens` and, as `cached_tokens`, the
    /// longest prefix (tools, then whole messages) it shares with an earlier request, counted
    /// as OpenAI does: nothing under 1024 tokens, then in steps of 128.
    pub fn prompt_cache(&self) -> &Self {
        self.state.lock().unwrap().prompt_cache = Some(Vec::new());
        self
    }

    /// The requests that went to routed paths (see [`MockServer::route`]), in order.
    pub fn probes(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().probes.clone()
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>) {
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let writer = stream;
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let reply = {
        let mut state = state.lock().unwrap();
        let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let bare_path = path.split('?').next().unwrap_or(&path).to_owned();
        let bare_path = bare_path.as_str();
        let routed = state
            .routes
            .iter()
            .find(|(p, _)| p == bare_path)
            .map(|(_, r)| r.clone());
        if routed.is_some() || SERVER_PATHS.contains(&bare_path) {
            let api = state
                .route_apis
                .iter()
                .find(|(p, _)| p == bare_path)
                .map(|(_, api)| *api);
            let refusal = match (&state.strict, api) {
                (Some(_), Some(api)) => strict::check_list(api, &headers).err(),
                _ => None,
            };
            state.probes.push(Recorded {
                method,
                path,
                headers,
                body: json,
                raw_len: body.len(),
                refused: refusal.as_ref().map(|r| r.rule),
            });
            drop(state);
            let reply = match refusal {
                Some(refusal) => {
                    eprintln!("strict mock refused ({}): {}", refusal.rule, refusal.body);
                    Some(Reply::json(refusal.status, refusal.body))
                }
                None => routed,
            };
            let reply = reply.unwrap_or_else(|| Reply::json(404, r#"{"error":"File Not Found"}"#));
            return write_reply(writer, reader, reply);
        }
        let refusal = match &state.strict {
            Some(strict) if method == "POST" => strict.check(&path, &headers, &json).err(),
            _ => None,
        };
        state.requests.push(Recorded {
            method,
            path,
            headers,
            body: json,
            raw_len: body.len(),
            refused: refusal.as_ref().map(|r| r.rule),
        });
        match refusal {
            Some(refusal) => {
                // Said on stderr too: a test that fails because of it then shows which rule.
                eprintln!("strict mock refused ({}): {}", refusal.rule, refusal.body);
                Some(Reply::json(refusal.status, refusal.body))
            }
            None => {
                let state = &mut *state;
                let reply = state.replies.pop_front();
                match (state.prompt_cache.as_mut(), state.requests.last()) {
                    (Some(seen), Some(request)) if bare_path.ends_with("/chat/completions") => {
                        reply.map(|r| with_cached_usage(r, seen, &request.body))
                    }
                    _ => reply,
                }
            }
        }
    };
    let reply = reply.unwrap_or_else(|| Reply::json(500, r#"{"error":{"message":"mock: no scripted reply left"}}"#));
    write_reply(writer, reader, reply);
}

/// The usage chunk [`openai_sse`] writes, which prompt-cache emulation replaces.
const SCRIPTED_USAGE: &str = r#""usage":{"prompt_tokens":11,"completion_tokens":7}"#;

/// `reply` with its usage as a prompt cache would report it for `request` (see
/// [`MockServer::prompt_cache`]); `seen` gains this request's prompt.
fn with_cached_usage(mut reply: Reply, seen: &mut Vec<Vec<String>>, request: &Value) -> Reply {
    let mut items = vec![request["tools"].to_string()];
    items.extend(
        request["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(Value::to_string),
    );
    let shared = seen
        .iter()
        .map(|earlier| {
            earlier
                .iter()
                .zip(&items)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a.len())
                .sum::<usize>()
        })
        .max()
        .unwrap_or(0);
    let prompt_tokens = items.iter().map(String::len).sum::<usize>() / 4;
    let shared_tokens = shared / 4;
    let cached = if shared_tokens < 1024 {
        0
    } else {
        shared_tokens / 128 * 128
    };
    seen.push(items);
    let usage = format!(
        r#""usage":{{"prompt_tokens":{prompt_tokens},"completion_tokens":7,"prompt_tokens_details":{{"cached_tokens":{cached}}}}}"#
    );
    let body = String::from_utf8_lossy(&reply.body).replace(SCRIPTED_USAGE, &usage);
    reply.body = body.into_bytes();
    reply
}

/// Paths of a local server's own API outside the conversation; see [`MockServer::route`].
const SERVER_PATHS: &[&str] = &["/props", "/api/show"];

fn write_reply(mut writer: TcpStream, mut reader: BufReader<TcpStream>, reply: Reply) {
    if let Some(gate) = &reply.gate {
        gate.pass();
    }
    let mut head = format!(
        "HTTP/1.1 {} Mock\r\nconnection: close\r\ntransfer-encoding: chunked\r\n",
        reply.status
    );
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    if writer.write_all(head.as_bytes()).is_err() {
        return;
    }
    let limit = reply.cut_at.unwrap_or(reply.body.len()).min(reply.body.len());
    let body = &reply.body[..limit];
    let pieces: Vec<&[u8]> = if reply.per_event {
        let mut events = Vec::new();
        let mut start = 0;
        for end in (1..body.len()).filter(|&i| body[i - 1] == b'\n' && body[i] == b'\n') {
            events.push(&body[start..=end]);
            start = end + 1;
        }
        events.push(&body[start..]);
        events.retain(|e| !e.is_empty());
        events
    } else {
        body.chunks(reply.chunk).collect()
    };
    for piece in pieces {
        let mut frame = format!("{:x}\r\n", piece.len()).into_bytes();
        frame.extend_from_slice(piece);
        frame.extend_from_slice(b"\r\n");
        if writer.write_all(&frame).and_then(|_| writer.flush()).is_err() {
            return;
        }
    }
    if reply.cut_at.is_none() {
        let _ = writer.write_all(b"0\r\n\r\n");
    } else if reply.stall {
        // Block until the client closes the connection.
        let mut sink = [0u8; 64];
        while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
    }
    let _ = writer.flush();
    let _ = writer.shutdown(std::net::Shutdown::Both);
}

/// The shared fixtures folder, or `None` (tests then skip, saying why). Under CI (`CI` set)
/// a missing folder fails the test instead: CI has it beside its clone (`.ci/run`).
pub fn fixtures() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/llm-wire");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is absent, and CI must run the tests that read the recorded provider traffic",
        dir.display()
    );
    eprintln!(
        "skipping: ../shared/fixtures/llm-wire is absent (recorded provider responses are not committed; see docs/contributing.md)"
    );
    None
}

/// Reads a fixture file as text.
pub fn fixture(dir: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// Frames a JSON-lines fixture as SSE: `event: <type>` + `data: <line>` per line.
pub fn jsonl_to_sse(jsonl: &str) -> String {
    let mut out = String::new();
    for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
        let kind = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|v| v["type"].as_str().map(str::to_owned))
            .unwrap_or_default();
        out.push_str(&format!("event: {kind}\ndata: {line}\n\n"));
    }
    out
}

/// SSE for a Chat Completions stream of text and tool calls (synthetic, built from the
/// documented shape).
pub fn openai_sse(text: &str, calls: &[(&str, &str, &str)]) -> String {
    let mut out = String::new();
    let mut chunk = |delta: Value, finish: Value| {
        let v = serde_json::json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        out.push_str(&format!("data: {v}\n\n"));
    };
    chunk(serde_json::json!({"role": "assistant", "content": ""}), Value::Null);
    for word in text.split_inclusive(' ') {
        chunk(serde_json::json!({"content": word}), Value::Null);
    }
    for (i, (id, name, args)) in calls.iter().enumerate() {
        chunk(
            serde_json::json!({"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        );
        let mid = args.len() / 2;
        let mid = (0..=mid).rev().find(|m| args.is_char_boundary(*m)).unwrap_or(0);
        for part in [&args[..mid], &args[mid..]] {
            chunk(
                serde_json::json!({"tool_calls": [{"index": i, "function": {"arguments": part}}]}),
                Value::Null,
            );
        }
    }
    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    chunk(serde_json::json!({}), Value::String(finish.into()));
    out.push_str(&format!(
        "data: {{\"id\":\"chatcmpl-mock\",\"choices\":[],{SCRIPTED_USAGE}}}\n\n"
    ));
    out.push_str("data: [DONE]\n\n");
    out
}

/// A streamed Messages response (synthetic, in the documented event shapes): an optional
/// thinking block (text, signature), then text (may be empty), then tool calls.
pub fn anthropic_sse(thinking: Option<(&str, &str)>, text: &str, calls: &[(&str, &str, &str)]) -> String {
    use serde_json::json;
    let mut out = String::new();
    let mut event = |v: Value| {
        out.push_str(&format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap_or("")));
    };
    event(
        json!({"type": "message_start", "message": {"id": "msg_mock", "type": "message", "role": "assistant",
        "model": "claude-mock", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 1}}}),
    );
    let mut index = 0;
    if let Some((thought, signature)) = thinking {
        event(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}));
        event(
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": thought}}),
        );
        event(
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}}),
        );
        event(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    if !text.is_empty() {
        event(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}));
        event(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}));
        event(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    for (id, name, args) in calls {
        event(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
        event(json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "input_json_delta", "partial_json": args}}));
        event(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    let stop = if calls.is_empty() { "end_turn" } else { "tool_use" };
    event(
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
        "usage": {"output_tokens": 9}}),
    );
    event(json!({"type": "message_stop"}));
    out
}

/// A streamed Responses answer (synthetic, in the documented event shapes): an optional
/// reasoning item (summary, encrypted content), then text (may be empty), then calls.
pub fn responses_sse(reasoning: Option<(&str, &str)>, text: &str, calls: &[(&str, &str, &str)]) -> String {
    use serde_json::json;
    let mut out = String::new();
    let mut event = |v: Value| {
        out.push_str(&format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap_or("")));
    };
    event(json!({"type": "response.created", "response": {"id": "resp_mock", "status": "in_progress", "output": []}}));
    let mut output = Vec::new();
    if let Some((summary, encrypted)) = reasoning {
        let id = format!("rs_mock{}", encrypted.len());
        event(json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "reasoning", "id": id, "summary": [], "encrypted_content": null}}));
        event(
            json!({"type": "response.reasoning_summary_text.delta", "item_id": id, "output_index": 0,
            "summary_index": 0, "delta": summary}),
        );
        let item = json!({"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": summary}],
            "encrypted_content": encrypted});
        event(json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
        output.push(item);
    }
    if !text.is_empty() {
        let index = output.len();
        let item = json!({"type": "message", "id": "msg_mock", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]});
        event(json!({"type": "response.output_item.added", "output_index": index,
            "item": {"type": "message", "id": "msg_mock", "role": "assistant", "status": "in_progress", "content": []}}));
        event(
            json!({"type": "response.output_text.delta", "item_id": "msg_mock", "output_index": index,
            "content_index": 0, "delta": text}),
        );
        event(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
        output.push(item);
    }
    for (id, name, args) in calls {
        let index = output.len();
        let item_id = format!("fc_{id}");
        event(json!({"type": "response.output_item.added", "output_index": index,
            "item": {"type": "function_call", "id": item_id, "call_id": id, "name": name, "arguments": "", "status": "in_progress"}}));
        event(
            json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
            "output_index": index, "delta": args}),
        );
        let item = json!({"type": "function_call", "id": item_id, "call_id": id, "name": name,
            "arguments": args, "status": "completed"});
        event(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
        output.push(item);
    }
    event(
        json!({"type": "response.completed", "response": {"id": "resp_mock", "status": "completed",
        "output": output, "usage": {"input_tokens": 12, "output_tokens": 9}}}),
    );
    out
}

/// How long one run of the binary may take in a test before it is killed (a deadline, far
/// beyond what any run needs; never a timing assertion).
pub const RUN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(180);

/// A temporary project and a private home for one run of the real binary.
pub struct Sandbox {
    pub project: tempfile::TempDir,
    pub home: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        Self {
            project: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.project.path().join(rel)
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// `brute` in the project, isolated from the user's environment and config, talking to
    /// `server` with the OpenAI wire format and fast retries.
    pub fn brute(&self, server: &MockServer) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::from_std(self.std_brute(server));
        // Every run has a deadline: a hung brute fails the test instead of hanging it.
        cmd.timeout(RUN_DEADLINE);
        cmd
    }

    /// Trusts the project (as `brute trust` does), so its `.brute/config.toml` may set
    /// providers, command tools and the sandbox.
    pub fn trust(&self) {
        let status = self.std_command().arg("trust").status().unwrap();
        assert!(status.success(), "brute trust failed");
    }

    /// `brute` with no provider flags.
    pub fn bare(&self) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::from_std(self.std_command());
        cmd.timeout(RUN_DEADLINE);
        cmd
    }

    /// The same as [`Sandbox::brute`], as a plain process (for signal tests).
    pub fn std_brute(&self, server: &MockServer) -> std::process::Command {
        self.std_brute_of(server, &assert_cmd::cargo::cargo_bin("brute"))
    }

    /// [`Sandbox::std_brute`] with another `brute` binary (an older build, to compare).
    pub fn std_brute_of(&self, server: &MockServer, brute: &std::path::Path) -> std::process::Command {
        let mut cmd = self.command_of(brute);
        cmd.args([
            "--provider",
            "openai",
            "--model",
            "mock-model",
            "--base-url",
            &server.url("/v1"),
        ]);
        cmd
    }

    /// `brute` with no provider flags, as a plain process.
    pub fn std_command(&self) -> std::process::Command {
        self.command_of(&assert_cmd::cargo::cargo_bin("brute"))
    }

    /// [`Sandbox::std_command`] with another `brute` binary (a copy elsewhere).
    pub fn command_of(&self, brute: &std::path::Path) -> std::process::Command {
        let config = self.home.path().join("config");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("config.toml"), "retry_base_ms = 1\n").unwrap();
        let mut cmd = std::process::Command::new(brute);
        cmd.current_dir(self.project.path())
            .stdin(std::process::Stdio::null())
            .env("HOME", self.home.path())
            .env("BRUTE_CONFIG_DIR", &config)
            .env("BRUTE_DATA_DIR", self.home.path().join("data"))
            .env("BRUTE_NO_OLLAMA_PROBE", "1");
        for var in [
            "BRUTE_PROVIDER",
            "BRUTE_MODEL",
            "BRUTE_BASE_URL",
            "BRUTE_API_KEY",
            "BRUTE_MAX_TURNS",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "OLLAMA_HOST",
            // The person's proxy and certificate settings: tests talk to 127.0.0.1 directly.
            "HTTP_PROXY",
            "http_proxy",
            "HTTPS_PROXY",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
            "NO_PROXY",
            "no_proxy",
            "SSL_CERT_FILE",
            "SSL_CERT_DIR",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }
}

/// Runs `brute -p go` in `sb` with `args` and `env`, whose model makes `calls` in one answer and
/// then says done; returns the output and each call's result (by call id).
#[allow(dead_code)]
pub fn run_calls<V: AsRef<std::ffi::OsStr>>(
    sb: &Sandbox,
    args: &[&str],
    env: &[(&str, V)],
    calls: &[(&str, &str, &str)],
) -> (std::process::Output, std::collections::HashMap<String, String>) {
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", calls)));
    server.push(Reply::sse(openai_sse("done", &[])));
    let mut cmd = sb.brute(&server);
    cmd.args(["-p", "go"])
        .args(args)
        .timeout(std::time::Duration::from_secs(120));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = cmd.output().unwrap();
    (output, first_results(&server))
}

/// The results of the first batch of tool calls (the second request), by call id.
#[allow(dead_code)]
pub fn first_results(server: &MockServer) -> std::collections::HashMap<String, String> {
    server
        .requests()
        .get(1)
        .map(|r| tool_results(r).into_iter().collect())
        .unwrap_or_default()
}

/// The tool results a recorded OpenAI request carries, in order: (call id, content).
pub fn tool_results(request: &Recorded) -> Vec<(String, String)> {
    request.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or("").to_owned(),
                m["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// Runs tools in-process through the real registry and executor, in a temp project.
pub struct Harness {
    pub dir: tempfile::TempDir,
    pub executor: brute::tool::exec::Executor,
    pub events: std::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<brute::protocol::Event>>,
    pub runtime: tokio::runtime::Runtime,
}

impl Harness {
    /// The built-in tools plus `extra`.
    pub fn new(extra: Vec<Arc<dyn brute::tool::Tool>>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut registry = brute::app::builtin_tools();
        for tool in extra {
            registry.register(tool);
        }
        let (sink, rx) = brute::protocol::EventSink::channel();
        let provider = Arc::new(brute::provider::replay::ReplayProvider::from_script("").unwrap());
        let state = Arc::new(
            brute::tool::state::AgentState::new(provider, "m".into(), 1000, root)
                .with_overflow_dir(Some(dir.path().join(".overflow"))),
        );
        let executor = brute::tool::exec::Executor::new(Arc::new(registry), Arc::default(), state, sink);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap();
        Self {
            dir,
            executor,
            events: std::sync::Mutex::new(rx),
            runtime,
        }
    }

    pub fn root(&self) -> PathBuf {
        self.executor.agent().root.clone()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// Runs one call; returns (content, is_error).
    pub fn call(&self, name: &str, args: Value) -> (String, bool) {
        let record = self.batch(&[(name, args)]).remove(0);
        (record.result.content, record.result.is_error)
    }

    /// Runs calls as one assistant message (concurrently), results in call order.
    pub fn batch(&self, calls: &[(&str, Value)]) -> Vec<brute::tool::exec::CallRecord> {
        self.batch_cancellable(calls, tokio_util::sync::CancellationToken::new())
    }

    pub fn batch_cancellable(
        &self,
        calls: &[(&str, Value)],
        cancel: tokio_util::sync::CancellationToken,
    ) -> Vec<brute::tool::exec::CallRecord> {
        let calls: Vec<brute::provider::ToolCall> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| brute::provider::ToolCall::new(format!("call_{i}"), *name, args.to_string()))
            .collect();
        self.runtime.block_on(async {
            let pending: Vec<_> = calls.iter().map(|c| self.executor.start(c, &cancel)).collect();
            let mut out = Vec::new();
            for p in pending {
                out.push(p.finish(&cancel, &self.executor).await);
            }
            out
        })
    }

    /// Events emitted so far.
    pub fn drain_events(&self) -> Vec<brute::protocol::Event> {
        let mut rx = self.events.lock().unwrap();
        let mut out = Vec::new();
        while let Ok(e) = rx.try_recv() {
            out.push(e);
        }
        out
    }
}

/// A deadline for a test that reads a child's output as it comes: the child is killed after
/// `secs` if it is still running, so a hung brute fails the test instead of hanging it. The
/// watchdog stops as soon as the returned guard is dropped.
pub fn deadline(child: &std::process::Child, secs: u64) -> Deadline {
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if rx.recv_timeout(std::time::Duration::from_secs(secs)) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            eprintln!("deadline: killing pid {pid} after {secs} s");
            // SAFETY: kill(2) on the test's own child; a stale pid only fails.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    Deadline { _stop: tx }
}

/// Stops its watchdog when dropped.
pub struct Deadline {
    _stop: std::sync::mpsc::Sender<()>,
}

/// `brute -p PROMPT --output-format events` read event line by line as it runs, under a
/// [`deadline`]; for tests that act (signal, kill) at a given point of a run.
pub struct Streaming {
    pub child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    /// Every line read so far.
    pub seen: Vec<String>,
    _deadline: Deadline,
}

impl Streaming {
    pub fn start(mut cmd: std::process::Command, prompt: &str) -> Self {
        use std::io::BufRead;
        let mut child = cmd
            .args(["-p", prompt, "--output-format", "events"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let deadline = deadline(&child, 120);
        Self {
            child,
            lines: std::io::BufReader::new(stdout).lines(),
            seen: Vec::new(),
            _deadline: deadline,
        }
    }

    /// Reads events until one line satisfies `found`; panics if the run ends first.
    pub fn until(&mut self, found: impl Fn(&str) -> bool) {
        for line in self.lines.by_ref() {
            let line = line.unwrap();
            let hit = found(&line);
            self.seen.push(line);
            if hit {
                return;
            }
        }
        panic!("the run ended before the awaited event: {:?}", self.seen);
    }

    /// Reads the rest of the run's events.
    pub fn rest(&mut self) {
        self.seen.extend(self.lines.by_ref().map(|l| l.unwrap()));
    }
}

/// An agent in `root` over a replay `script` (see `brute::provider::replay`) with the built-in
/// tools, recording into `recorder`; the receiver gets its events.
pub fn replay_agent(
    root: &std::path::Path,
    recorder: brute::session::Recorder,
    script: &str,
) -> (
    brute::agent::Agent,
    tokio::sync::mpsc::UnboundedReceiver<brute::protocol::Event>,
) {
    let provider = Arc::new(brute::provider::replay::ReplayProvider::from_script(script).unwrap());
    let state = Arc::new(brute::tool::state::AgentState::new(
        provider,
        "replay".into(),
        100,
        root.to_path_buf(),
    ));
    let (sink, events) = brute::protocol::EventSink::channel();
    let executor = brute::tool::exec::Executor::new(
        Arc::new(brute::app::builtin_tools()),
        Arc::default(),
        state.clone(),
        sink.clone(),
    );
    let config = brute::agent::AgentConfig {
        system_prompt: "test".into(),
        max_turns: 10,
    };
    let agent = brute::agent::Agent::new(state, executor, config, sink).with_session(recorder, Vec::new());
    (agent, events)
}

/// Runs one user turn of `agent` to its end, on a runtime of its own.
pub fn run_turn(agent: &mut brute::agent::Agent, prompt: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(agent.run_turn(prompt.into()));
}

/// Every file and directory under `root` (links not followed): content (`None` for a
/// directory) and mode. Two trees compare equal when undo restored one exactly.
pub fn tree_snapshot(root: &std::path::Path) -> std::collections::BTreeMap<String, (Option<Vec<u8>>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.is_dir() {
                stack.push(path);
                out.insert(rel, (None, mode));
            } else {
                out.insert(rel, (Some(std::fs::read(&path).unwrap()), mode));
            }
        }
    }
    out
}

/// Returns once the kernel's coarse clock (the one it stamps file times from) has passed the
/// precise time now: a file changed after this is stamped later than anything before the call.
/// At most one clock tick (1–10 ms); a spin on the clock, not a sleep.
pub fn next_clock_tick() {
    let read = |clock| {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes one timespec.
        assert_eq!(unsafe { libc::clock_gettime(clock, &mut ts) }, 0);
        (ts.tv_sec as i128) * 1_000_000_000 + ts.tv_nsec as i128
    };
    let now = read(libc::CLOCK_REALTIME);
    while read(libc::CLOCK_REALTIME_COARSE) <= now {
        std::hint::spin_loop();
    }
}

/// Makes a FIFO at `path`.
pub fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates a node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Processes (not zombies) whose command line holds `token`.
pub fn processes_with(token: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = state
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(token) {
            found.push(format!("{name}: {}", String::from_utf8_lossy(&cmdline)));
        }
    }
    found
}

/// Waits until no process holds `token`: each one found is waited on through a pidfd, which
/// becomes readable when it exits (no polling). A process still there after a minute fails the
/// test instead of hanging it.
pub fn wait_gone(token: &str) {
    loop {
        let left = processes_with(token);
        if left.is_empty() {
            return;
        }
        for line in &left {
            let Some(pid) = line.split(':').next().and_then(|p| p.parse::<i32>().ok()) else {
                continue;
            };
            // SAFETY: pidfd_open(2) on a pid read from /proc; a pid already gone gives -1.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
            if fd < 0 {
                continue;
            }
            let mut poll = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd; the fd is ours and closed right after.
            let ready = unsafe { libc::poll(&mut poll, 1, 60_000) };
            // SAFETY: closing the pidfd opened above.
            unsafe { libc::close(fd) };
            assert!(ready == 1, "still running after a minute: {left:?}");
        }
    }
}

/// Runs `cmd` to its end and returns its output with the peak RSS, in KiB, of it and of every
/// process it waited for.
///
/// The count comes from a small python3 parent rather than from this test process: Linux copies
/// a parent's high-water mark into a forked child and keeps it across exec, so any child of a
/// test binary that once held 500 MB reports at least 500 MB, whatever it used itself.
pub fn run_measuring_peak_rss(cmd: &std::process::Command) -> (std::process::Output, u64) {
    const MEASURE: &str = "import resource, subprocess, sys\n\
        code = subprocess.run(sys.argv[2:]).returncode\n\
        open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n\
        sys.exit(code if code >= 0 else 128 - code)\n";
    let peak_file = tempfile::NamedTempFile::new().unwrap();
    let mut wrapper = std::process::Command::new("python3");
    wrapper.arg("-c").arg(MEASURE).arg(peak_file.path());
    wrapper.arg(cmd.get_program()).args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        wrapper.current_dir(dir);
    }
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapper.env(key, value),
            None => wrapper.env_remove(key),
        };
    }
    let output = wrapper
        .stdin(std::process::Stdio::null())
        .output()
        .expect("python3 runs the measured command (the CI script installs it)");
    let peak = std::fs::read_to_string(peak_file.path()).unwrap();
    let peak = peak
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("a peak in KiB, not {peak:?}: {output:?}"));
    (output, peak)
}

/// Whether the content parts of a Chat Completions message hold a PNG as an `image_url`
/// data URL (how an attached or returned image reaches the model).
pub fn has_png_part(parts: &[Value]) -> bool {
    parts.iter().any(|p| {
        p["type"] == "image_url"
            && p["image_url"]["url"]
                .as_str()
                .is_some_and(|u| u.starts_with("data:image/png;base64,iVBOR"))
    })
}

/// The first bytes of a PNG of this size (signature and IHDR: all brute and the mock read).
pub fn png(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([8, 6, 0, 0, 0, 0x1a, 0x2b, 0x3c, 0x4d]);
    bytes
}

/// Where `.ci/test-tools` installs the third-party programs tests run (MCP servers, the
/// Python SDKs).
pub fn tools_dir() -> std::path::PathBuf {
    std::env::var_os("BRUTE_TEST_TOOLS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()))
                .join(".cache/brute-test-tools")
        })
}

/// A required test program under [`tools_dir`], or `None` (skip, with the reason printed)
/// outside CI; under `CI` its absence fails the test.
#[allow(dead_code)]
pub fn require(rel: &str) -> Option<std::path::PathBuf> {
    let path = tools_dir().join(rel);
    if path.exists() {
        return Some(path);
    }
    let message = format!("{} is missing: run .ci/test-tools", path.display());
    assert!(std::env::var_os("CI").is_none(), "{message}");
    eprintln!("skipped: {message}");
    None
}

/// The venv's Python running `script`, in the project, with the environment brute gets in
/// every other test (its own home, data and config dirs) and the mock as its provider: for
/// the client libraries that start brute themselves (Claude Code's SDK, the ACP SDK), which
/// hand their environment to it. `None` (skip) outside CI when the venv is missing.
#[allow(dead_code)]
pub fn python_driving_brute(sb: &Sandbox, server: &MockServer, script: &str) -> Option<std::process::Command> {
    let python = require("venv/bin/python")?;
    let like = sb.std_command();
    let mut cmd = std::process::Command::new(python);
    cmd.arg(script).current_dir(sb.project.path());
    for (key, value) in like.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd.env("BRUTE_PROVIDER", "openai")
        .env("BRUTE_MODEL", "mock-model")
        .env("BRUTE_BASE_URL", server.url("/v1"));
    Some(cmd)
}

/// Whether the real sandbox (namespaces, Landlock) is here; a missing one fails under `CI`,
/// elsewhere the caller skips, saying why.
#[allow(dead_code)]
pub fn sandbox_ready() -> bool {
    match brute::sandbox::available() {
        Ok(()) => true,
        Err(why) => {
            assert!(std::env::var_os("CI").is_none(), "CI must run the sandbox tests: {why}");
            eprintln!("skipping: {why}");
            false
        }
    }
}

/// A fresh directory outside /tmp (which `workspace-write` policies may write), in the build's
/// own temporary dir, resolved (the sandbox compares real paths).
#[allow(dead_code)]
pub fn dir_outside_tmp(prefix: &str) -> PathBuf {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
        .keep();
    std::fs::canonicalize(dir).unwrap()
}
