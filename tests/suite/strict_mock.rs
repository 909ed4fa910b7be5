//! The mock's strict mode proves each of its rules: for every rule one request that breaks
//! it (and only it) is refused by that rule, and a well-formed request of each API is
//! accepted. The request brute sent before strict mode existed (Chat Completions to gpt-5.1
//! with `max_tokens`) is refused the way the real API refused it.

use crate::support;

use serde_json::{Value, json};
use support::strict::{Api, RULES, Strict, claude_version, openai_reasoning};
use support::{MockServer, Reply};

const CHAT: &str = "/v1/chat/completions";
const RESPONSES: &str = "/v1/responses";
const MESSAGES: &str = "/v1/messages";

fn anthropic_headers() -> Vec<(String, String)> {
    vec![
        ("x-api-key".into(), "k".into()),
        ("anthropic-version".into(), "2023-06-01".into()),
    ]
}

fn good_chat() -> Value {
    json!({
        "model": "gpt-4.1",
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": 100,
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "x"},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "again"},
        ],
        "tools": [{"type": "function", "function": {"name": "read", "description": "d", "parameters": {"type": "object"}}}],
    })
}

fn good_responses() -> Value {
    json!({
        "model": "gpt-5.1",
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "low", "summary": "auto"},
        "max_output_tokens": 100,
        "instructions": "be brief",
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
            {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "x"},
        ],
        "tools": [{"type": "function", "name": "read", "description": "d", "parameters": {"type": "object"}, "strict": false}],
    })
}

fn good_anthropic() -> Value {
    json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 16384,
        "stream": true,
        "thinking": {"type": "enabled", "budget_tokens": 4000},
        "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "x", "cache_control": {"type": "ephemeral"}}]},
        ],
        "tools": [{"name": "read", "description": "d", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
    })
}

/// A Responses request with the hosted web search and a search sent back as Codex sends it.
fn good_responses_search() -> Value {
    with(good_responses(), |b| {
        b["include"] = json!(["reasoning.encrypted_content", "web_search_call.action.sources"]);
        if let Some(tools) = b["tools"].as_array_mut() {
            tools.insert(0, json!({"type": "web_search"}));
        }
        if let Some(input) = b["input"].as_array_mut() {
            input.insert(
                1,
                json!({"type": "web_search_call", "status": "completed",
                "action": {"type": "search", "query": "q", "sources": [{"type": "url", "url": "https://e.test/"}]}}),
            );
        }
    })
}

/// A Messages request with the hosted web search and a search sent back verbatim.
fn good_anthropic_search() -> Value {
    with(good_anthropic(), |b| {
        if let Some(tools) = b["tools"].as_array_mut() {
            tools.insert(
                0,
                json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 8}),
            );
        }
        if let Some(blocks) = b["messages"][1]["content"].as_array_mut() {
            blocks.insert(
                1,
                json!({"type": "server_tool_use", "id": "srvtoolu_01A", "name": "web_search", "input": {"query": "q"}}),
            );
            blocks.insert(2, json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01A", "content": [
                {"type": "web_search_result", "url": "https://e.test/", "title": "E", "encrypted_content": "EqgfCioI", "page_age": null}]}));
        }
    })
}

/// One request that breaks `rule`.
struct Case {
    rule: &'static str,
    path: &'static str,
    body: Value,
    headers: Vec<(String, String)>,
}

fn case(rule: &'static str, path: &'static str, body: Value) -> Case {
    let headers = if path == MESSAGES {
        anthropic_headers()
    } else {
        Vec::new()
    };
    Case {
        rule,
        path,
        body,
        headers,
    }
}

/// `base` with `edit` applied.
fn with(mut base: Value, edit: impl FnOnce(&mut Value)) -> Value {
    edit(&mut base);
    base
}

fn remove(v: &mut Value, key: &str) {
    if let Some(object) = v.as_object_mut() {
        object.remove(key);
    }
}

/// A PNG's first bytes (its signature and IHDR chunk), base64.
fn png_b64(width: u32, height: u32) -> String {
    use base64::Engine;
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([8, 6, 0, 0, 0]);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn png_url() -> String {
    format!("data:image/png;base64,{}", png_b64(4, 3))
}

fn chat_image(url: String) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": url}}]})
}

fn anthropic_image(media: &str, data: String) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}})
}

/// Good requests that carry images where each API takes them.
fn good_with_images() -> [(&'static str, Value); 3] {
    [
        (
            CHAT,
            with(good_chat(), |b| {
                b["messages"].as_array_mut().unwrap().push(chat_image(png_url()))
            }),
        ),
        (
            RESPONSES,
            with(good_responses(), |b| {
                b["input"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"role": "user", "content": [
                    {"type": "input_text", "text": "see"},
                    {"type": "input_image", "image_url": png_url(), "detail": "auto"}]}))
            }),
        ),
        (
            MESSAGES,
            with(good_anthropic(), |b| {
                b["messages"][2]["content"][0]["content"] =
                    json!([{"type": "text", "text": "x"}, anthropic_image("image/png", png_b64(4, 3))]);
                b["messages"][0]["content"]
                    .as_array_mut()
                    .unwrap()
                    .push(anthropic_image("image/png", png_b64(4, 3)));
            }),
        ),
    ]
}

fn cases() -> Vec<Case> {
    let chat = good_chat;
    let resp = good_responses;
    let anth = good_anthropic;
    let push = |b: &mut Value, key: &str, item: Value| b[key].as_array_mut().unwrap().push(item);
    vec![
        case(
            "chat.tool-image",
            CHAT,
            with(chat(), |b| {
                b["messages"][3]["content"] = json!([{"type": "image_url", "image_url": {"url": png_url()}}])
            }),
        ),
        case(
            "chat.user-part",
            CHAT,
            with(chat(), |b| {
                push(
                    b,
                    "messages",
                    json!({"role": "user", "content": [{"type": "input_image", "image_url": png_url()}]}),
                )
            }),
        ),
        case(
            "chat.image-url",
            CHAT,
            with(chat(), |b| {
                push(
                    b,
                    "messages",
                    chat_image(format!("data:image/jpeg;base64,{}", png_b64(4, 3))),
                )
            }),
        ),
        case(
            "chat.image-url",
            CHAT,
            with(chat(), |b| {
                push(b, "messages", chat_image("data:image/png;base64,!!!".into()))
            }),
        ),
        case(
            "chat.image-model",
            CHAT,
            with(chat(), |b| {
                b["model"] = json!("gpt-3.5-turbo");
                push(b, "messages", chat_image(png_url()));
            }),
        ),
        case(
            "responses.input-part",
            RESPONSES,
            with(resp(), |b| {
                push(
                    b,
                    "input",
                    json!({"role": "user", "content": [{"type": "input_image", "image_url": png_url()}]}),
                )
            }),
        ),
        case(
            "responses.input-part",
            RESPONSES,
            with(resp(), |b| {
                push(
                    b,
                    "input",
                    json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": png_url()}}]}),
                )
            }),
        ),
        case(
            "responses.image-url",
            RESPONSES,
            with(resp(), |b| {
                push(
                    b,
                    "input",
                    json!({"role": "user", "content": [{"type": "input_image", "image_url": "shot.png", "detail": "auto"}]}),
                )
            }),
        ),
        case(
            "anthropic.image-source",
            MESSAGES,
            with(anth(), |b| {
                b["messages"][0]["content"][0] = anthropic_image("image/jpeg", png_b64(4, 3))
            }),
        ),
        case(
            "anthropic.image-source",
            MESSAGES,
            with(anth(), |b| {
                b["messages"][0]["content"][0] = anthropic_image("image/bmp", png_b64(4, 3))
            }),
        ),
        case(
            "anthropic.image-size",
            MESSAGES,
            with(anth(), |b| {
                b["messages"][0]["content"][0] = anthropic_image("image/png", png_b64(9000, 3))
            }),
        ),
        case(
            "anthropic.image-size",
            MESSAGES,
            with(anth(), |b| {
                b["messages"][0]["content"][0] = anthropic_image("image/png", "A".repeat(5 * 1024 * 1024 + 4))
            }),
        ),
        case(
            "anthropic.image-place",
            MESSAGES,
            with(anth(), |b| {
                b["messages"][2]["content"][0]["content"] =
                    json!([{"type": "image_url", "image_url": {"url": png_url()}}])
            }),
        ),
        case(
            "anthropic.image-place",
            MESSAGES,
            with(anth(), |b| {
                b["messages"][1]["content"]
                    .as_array_mut()
                    .unwrap()
                    .insert(1, anthropic_image("image/png", png_b64(4, 3)))
            }),
        ),
        case("path", "/chat/completions", chat()),
        case("path", "/v1/v1/messages", anth()),
        case(
            "tool-name",
            CHAT,
            with(chat(), |b| b["tools"][0]["function"]["name"] = json!("read.file")),
        ),
        case(
            "tool-name",
            RESPONSES,
            with(resp(), |b| b["tools"][0]["name"] = json!("x".repeat(65))),
        ),
        case(
            "tool-name",
            MESSAGES,
            with(anth(), |b| b["tools"][0]["name"] = json!("mcp:read")),
        ),
        case(
            "chat.unknown-param",
            CHAT,
            with(chat(), |b| b["max_output_tokens"] = json!(5)),
        ),
        case(
            "chat.stream-options",
            CHAT,
            with(chat(), |b| b["stream"] = json!(false)),
        ),
        case(
            "chat.max-tokens-reasoning",
            CHAT,
            with(chat(), |b| b["model"] = json!("o3")),
        ),
        case(
            "chat.temperature-reasoning",
            CHAT,
            with(chat(), |b| {
                b["model"] = json!("gpt-5-mini");
                remove(b, "max_tokens");
                b["max_completion_tokens"] = json!(100);
                b["temperature"] = json!(0.5);
            }),
        ),
        case(
            "chat.effort-non-reasoning",
            CHAT,
            with(chat(), |b| b["reasoning_effort"] = json!("low")),
        ),
        case(
            "chat.tool-without-call",
            CHAT,
            with(chat(), |b| {
                b["messages"][2] = json!({"role": "assistant", "content": "no calls"})
            }),
        ),
        case(
            "chat.call-without-result",
            CHAT,
            with(chat(), |b| {
                if let Some(m) = b["messages"].as_array_mut() {
                    m.remove(3);
                }
            }),
        ),
        case(
            "chat.empty-assistant",
            CHAT,
            with(chat(), |b| b["messages"][4]["content"] = Value::Null),
        ),
        case(
            "responses.unknown-param",
            RESPONSES,
            with(resp(), |b| b["max_tokens"] = json!(5)),
        ),
        case(
            "responses.temperature-reasoning",
            RESPONSES,
            with(resp(), |b| b["temperature"] = json!(0.2)),
        ),
        case(
            "responses.reasoning-non-reasoning",
            RESPONSES,
            with(resp(), |b| b["model"] = json!("gpt-4.1")),
        ),
        case(
            "responses.output-without-call",
            RESPONSES,
            with(resp(), |b| {
                if let Some(items) = b["input"].as_array_mut() {
                    items.remove(2);
                }
            }),
        ),
        case(
            "responses.call-without-output",
            RESPONSES,
            with(resp(), |b| {
                if let Some(items) = b["input"].as_array_mut() {
                    items.pop();
                }
            }),
        ),
        case(
            "responses.reasoning-not-stored",
            RESPONSES,
            with(resp(), |b| {
                b["input"][1] = json!({"type": "reasoning", "id": "rs_1", "summary": []})
            }),
        ),
        case(
            "responses.reasoning-last",
            RESPONSES,
            with(resp(), |b| {
                if let Some(items) = b["input"].as_array_mut() {
                    items.truncate(2);
                }
            }),
        ),
        case(
            "anthropic.unknown-param",
            MESSAGES,
            with(anth(), |b| b["reasoning_effort"] = json!("low")),
        ),
        Case {
            rule: "anthropic.version-header",
            path: MESSAGES,
            body: anth(),
            headers: vec![("x-api-key".into(), "k".into())],
        },
        Case {
            rule: "anthropic.api-key",
            path: MESSAGES,
            body: anth(),
            headers: vec![
                ("authorization".into(), "Bearer k".into()),
                ("anthropic-version".into(), "2023-06-01".into()),
            ],
        },
        case(
            "anthropic.max-tokens",
            MESSAGES,
            with(anth(), |b| remove(b, "max_tokens")),
        ),
        case(
            "anthropic.tool-use-without-result",
            MESSAGES,
            with(anth(), |b| {
                // A text block before the results: they must come first.
                if let Some(blocks) = b["messages"][2]["content"].as_array_mut() {
                    blocks.insert(0, json!({"type": "text", "text": "here"}));
                }
            }),
        ),
        case(
            "anthropic.result-without-tool-use",
            MESSAGES,
            with(anth(), |b| {
                // Every call is answered, and one result answers nothing.
                if let Some(blocks) = b["messages"][2]["content"].as_array_mut() {
                    blocks.push(json!({"type": "tool_result", "tool_use_id": "t9", "content": "?"}));
                }
            }),
        ),
        case(
            "anthropic.empty-text",
            MESSAGES,
            with(anth(), |b| b["messages"][0]["content"][0]["text"] = json!("")),
        ),
        case(
            "anthropic.empty-content",
            MESSAGES,
            with(anth(), |b| b["messages"][0]["content"] = json!([])),
        ),
        case(
            "anthropic.cache-breakpoints",
            MESSAGES,
            with(anth(), |b| {
                b["messages"][0]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
                b["messages"][1]["content"][1]["cache_control"] = json!({"type": "ephemeral"});
            }),
        ),
        case(
            "anthropic.budget",
            MESSAGES,
            with(anth(), |b| b["thinking"]["budget_tokens"] = json!(16384)),
        ),
        case(
            "anthropic.budget-removed",
            MESSAGES,
            with(anth(), |b| b["model"] = json!("claude-opus-4-7")),
        ),
        case(
            "anthropic.adaptive-unsupported",
            MESSAGES,
            with(anth(), |b| b["thinking"] = json!({"type": "adaptive"})),
        ),
        case(
            "anthropic.temperature-thinking",
            MESSAGES,
            with(anth(), |b| b["temperature"] = json!(0.5)),
        ),
        case(
            "anthropic.temperature-fixed",
            MESSAGES,
            with(anth(), |b| {
                b["model"] = json!("claude-sonnet-5");
                remove(b, "thinking");
                b["temperature"] = json!(0.5);
            }),
        ),
        case(
            "anthropic.thinking-signature",
            MESSAGES,
            with(anth(), |b| {
                if let Some(block) = b["messages"][1]["content"][0].as_object_mut() {
                    block.remove("signature");
                }
            }),
        ),
        case(
            "responses.tool-type",
            RESPONSES,
            with(resp(), |b| b["tools"][0]["type"] = json!("web_search_20250305")),
        ),
        case(
            "responses.include-value",
            RESPONSES,
            with(resp(), |b| b["include"] = json!(["web_search_call.sources"])),
        ),
        case(
            "responses.web-search-call",
            RESPONSES,
            with(good_responses_search(), |b| b["input"][1]["id"] = json!("ws_01")),
        ),
        case(
            "responses.web-search-call",
            RESPONSES,
            with(good_responses_search(), |b| remove(&mut b["input"][1], "action")),
        ),
        case(
            "anthropic.server-tool",
            MESSAGES,
            with(good_anthropic_search(), |b| b["tools"][0]["name"] = json!("search")),
        ),
        case(
            "anthropic.server-tool",
            MESSAGES,
            with(good_anthropic_search(), |b| b["tools"][0]["type"] = json!("web_search")),
        ),
        case(
            "anthropic.server-tool-result",
            MESSAGES,
            with(good_anthropic_search(), |b| {
                if let Some(blocks) = b["messages"][1]["content"].as_array_mut() {
                    blocks.remove(2);
                }
            }),
        ),
        case(
            "anthropic.server-tool-result",
            MESSAGES,
            with(good_anthropic_search(), |b| {
                if let Some(blocks) = b["messages"][1]["content"].as_array_mut() {
                    blocks.swap(1, 2);
                }
            }),
        ),
        case(
            "anthropic.server-tool-verbatim",
            MESSAGES,
            with(good_anthropic_search(), |b| {
                remove(&mut b["messages"][1]["content"][2]["content"][0], "encrypted_content")
            }),
        ),
        case(
            "anthropic.server-tool-verbatim",
            MESSAGES,
            with(good_anthropic_search(), |b| {
                b["messages"][1]["content"][1]["id"] = json!("toolu_01A")
            }),
        ),
        case(
            "anthropic.thinking-first",
            MESSAGES,
            with(anth(), |b| {
                if let Some(blocks) = b["messages"][1]["content"].as_array_mut() {
                    blocks.remove(0);
                }
            }),
        ),
    ]
}

#[test]
fn each_rule_fires_on_a_request_that_breaks_it() {
    let strict = Strict::default();
    for (path, body) in [(CHAT, good_chat()), (RESPONSES, good_responses())] {
        assert!(
            strict.check(path, &[], &body).is_ok(),
            "{path}: a good request is refused"
        );
    }
    let good = strict.check(MESSAGES, &anthropic_headers(), &good_anthropic());
    assert!(good.is_ok(), "a good Messages request is refused: {good:?}");
    let good = strict.check(RESPONSES, &[], &good_responses_search());
    assert!(
        good.is_ok(),
        "a good Responses request with web search is refused: {good:?}"
    );
    let good = strict.check(MESSAGES, &anthropic_headers(), &good_anthropic_search());
    assert!(
        good.is_ok(),
        "a good Messages request with web search is refused: {good:?}"
    );
    for (path, body) in good_with_images() {
        let headers = if path == MESSAGES {
            anthropic_headers()
        } else {
            Vec::new()
        };
        let good = strict.check(path, &headers, &body);
        assert!(good.is_ok(), "{path}: a good request with images is refused: {good:?}");
    }
    let mut fired = Vec::new();
    for c in cases() {
        match strict.check(c.path, &c.headers, &c.body) {
            Err(refusal) => {
                assert_eq!(refusal.rule, c.rule, "{}: {}", c.rule, refusal.body);
                assert!(
                    matches!(refusal.status, 400 | 401 | 404),
                    "{}: {}",
                    c.rule,
                    refusal.status
                );
                let body: Value = serde_json::from_str(&refusal.body).unwrap();
                assert!(
                    body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()),
                    "{}: the real error shape carries a message: {body}",
                    c.rule
                );
                fired.push(c.rule);
            }
            Ok(()) => panic!("{} did not fire on {} {}", c.rule, c.path, c.body),
        }
    }
    for rule in RULES {
        assert!(fired.contains(&rule.id), "no request proves rule {} fires", rule.id);
        assert!(!rule.source.is_empty(), "{} names no source", rule.id);
        assert!(
            rule.api.is_none()
                || rule.id.starts_with(match rule.api {
                    Some(Api::Chat) => "chat.",
                    Some(Api::Responses) => "responses.",
                    Some(Api::Anthropic) => "anthropic.",
                    None => "",
                }),
            "{}",
            rule.id
        );
    }
}

/// What brute sent with only OPENAI_API_KEY set before strict mode existed.
fn old_default_request() -> Value {
    json!({
        "model": "gpt-5.1",
        "messages": [{"role": "system", "content": "You are brute."}, {"role": "user", "content": "hi"}],
        "stream": true,
        "max_tokens": 16384,
        "stream_options": {"include_usage": true},
    })
}

#[test]
fn the_old_default_request_is_refused_as_the_real_api_refused_it() {
    let refusal = Strict::default()
        .check(CHAT, &[], &old_default_request())
        .expect_err("the old default request must be refused");
    assert_eq!(refusal.rule, "chat.max-tokens-reasoning");
    assert_eq!(refusal.status, 400);
    let body: Value = serde_json::from_str(&refusal.body).unwrap();
    assert_eq!(
        body["error"]["message"],
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
    );
    assert_eq!(body["error"]["param"], "max_tokens");
}

/// Through the server: a refused request is answered with the real error and uses up no
/// scripted reply; a lenient server answers anything.
#[test]
fn the_server_refuses_without_using_a_reply() {
    let server = MockServer::start();
    server.push(Reply::json(200, "{}"));
    let post = |server: &MockServer, body: &Value| {
        let client = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        raw_post(client, CHAT, body)
    };
    let (status, text) = post(&server, &old_default_request());
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("max_completion_tokens"), "{text}");
    let (status, text) = post(&server, &good_chat());
    assert_eq!(
        (status, text.as_str()),
        (200, "{}"),
        "the scripted reply is still there"
    );
    let requests = server.requests();
    assert_eq!(requests[0].refused, Some("chat.max-tokens-reasoning"));
    assert_eq!(requests[1].refused, None);

    let lenient = MockServer::lenient();
    lenient.push(Reply::json(200, "{}"));
    assert_eq!(post(&lenient, &old_default_request()).0, 200);

    let custom = MockServer::start();
    custom.reasoning_model("acme-r1");
    let body = with(good_chat(), |b| b["model"] = json!("acme-r1"));
    assert_eq!(
        post(&custom, &body).0,
        400,
        "a model made a reasoning model for one test"
    );
}

/// A minimal HTTP/1.1 POST; returns the status and the de-chunked body.
fn raw_post(mut stream: std::net::TcpStream, path: &str, body: &Value) -> (u16, String) {
    use std::io::{Read, Write};
    let body = body.to_string();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let status = raw.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let chunked = raw.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
    let mut text = String::new();
    let mut rest = chunked;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || after.len() < size {
            break;
        }
        text.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    (status, text)
}

#[test]
fn the_mock_knows_models_from_their_names() {
    for reasoning in ["gpt-5.1", "gpt-5-mini", "o3", "o4-mini", "openai/gpt-5", "gpt-6-sol"] {
        assert!(openai_reasoning(reasoning), "{reasoning}");
    }
    for plain in ["gpt-4.1", "gpt-4o", "qwen3", "gpt-oss-20b", "mock-model", "olmo-2"] {
        assert!(!openai_reasoning(plain), "{plain}");
    }
    assert_eq!(claude_version("claude-sonnet-4-5-20250929"), Some((4, 5)));
    assert_eq!(claude_version("claude-3-7-sonnet-20250219"), Some((3, 7)));
    assert_eq!(claude_version("claude-opus-4-20250514"), Some((4, 0)));
    assert_eq!(claude_version("anthropic/claude-opus-4.6"), Some((4, 6)));
    assert_eq!(claude_version("claude-mythos-preview"), None);
}

/// A reply streamed per event arrives as one HTTP chunk per SSE event, whole, in order (the
/// benchmarks' provider shape), where the tests' replies come in 7-byte pieces.
#[test]
fn a_reply_per_event_comes_one_event_per_chunk() {
    use std::io::{Read, Write};
    let server = MockServer::start();
    let body = support::openai_sse("hello there", &[("c1", "read", r#"{"file_path":"a"}"#)]);
    server.push(Reply::sse(body.clone()).per_event());
    let request = serde_json::to_vec(&good_chat()).unwrap();
    let url = server.url(CHAT);
    let address = url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "POST {CHAT} HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer k\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        request.len()
    )
    .unwrap();
    stream.write_all(&request).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, mut rest) = raw.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let mut chunks = Vec::new();
    loop {
        let (size, after) = rest.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size, 16).unwrap();
        if size == 0 {
            break;
        }
        chunks.push(&after[..size]);
        rest = &after[size + 2..];
    }
    let events: Vec<String> = body.split_inclusive("\n\n").map(str::to_owned).collect();
    assert_eq!(chunks, events);
    assert!(chunks.len() > 3, "{chunks:?}");
}
