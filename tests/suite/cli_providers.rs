//! The real binary with each wire format end to end, replaying recorded provider responses
//! from ../shared/fixtures/llm-wire through the mock server: the loop runs the (unknown)
//! recorded tool, sends its result back in the provider's own shape, and prints the answer.

use crate::support;

use predicates::prelude::*;
use support::{MockServer, Reply, Sandbox};

#[test]
fn anthropic_end_to_end() {
    let Some(dir) = support::fixtures() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    let base = "anthropic/ruby_llm-stream-tool-multiturn";
    server.push(Reply::sse(support::fixture(&dir, &format!("{base}.0.response.sse"))).chunked(13));
    server.push(Reply::sse(support::fixture(&dir, &format!("{base}.1.response.sse"))).chunked(5));
    sb.bare()
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", server.url(""))
        .args(["-p", "What's the weather in Berlin?"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("The weather in Berlin is currently:"))
        .stderr(predicate::str::contains("[weather]").and(predicate::str::contains("error: UnknownTool")));
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), Some("test-key"));
    let second = &requests[1].body["messages"];
    assert_eq!(second[1]["content"][0]["type"], "tool_use");
    assert_eq!(second[1]["content"][0]["id"], "toolu_01MKSN7NHsBVKr7Jvw5pqCQq");
    assert_eq!(second[1]["content"][0]["input"]["latitude"], "52.5200");
    let result = &second[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_01MKSN7NHsBVKr7Jvw5pqCQq");
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with("Error: UnknownTool: no tool named `weather`")
    );
}

#[test]
fn responses_end_to_end() {
    let Some(dir) = support::fixtures() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    let base = "openai-responses/ruby_llm-stream-tool-multiturn";
    server.push(Reply::sse(support::fixture(&dir, &format!("{base}.0.response.sse"))));
    server.push(Reply::sse(support::fixture(&dir, &format!("{base}.1.response.sse"))));
    sb.bare()
        .env("OPENAI_API_KEY", "test-key")
        .args([
            "--provider",
            "responses",
            "--base-url",
            &server.url("/v1"),
            "-p",
            "weather?",
        ])
        .assert()
        .success()
        .stdout("Berlin (52.5200, 13.4050): 15°C, wind 10 km/h.\n");
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/responses");
    assert_eq!(requests[0].header("authorization"), Some("Bearer test-key"));
    let input = requests[1].body["input"].as_array().unwrap();
    let call = input.iter().find(|i| i["type"] == "function_call").unwrap();
    assert_eq!(call["call_id"], "call_E9m0fralKLjUmND1MuTXjnqm");
    let output = input.iter().find(|i| i["type"] == "function_call_output").unwrap();
    assert_eq!(output["call_id"], "call_E9m0fralKLjUmND1MuTXjnqm");
}

#[test]
fn ollama_compatible_end_to_end() {
    let Some(dir) = support::fixtures() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    let base = "ollama-openai-compat/ruby_llm-qwen3-stream-tool-multiturn";
    server.push(Reply::sse(support::fixture(&dir, &format!("{base}.0.response.sse"))));
    server.push(Reply::sse(support::fixture(&dir, &format!("{base}.1.response.sse"))));
    let out = sb
        .bare()
        .env("OLLAMA_HOST", format!("127.0.0.1:{}", server.port))
        .args(["--model", "qwen3", "-p", "weather?", "--output-format", "events"])
        .assert()
        .success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(stdout.contains("\"type\":\"reasoning_delta\""), "reasoning is streamed");
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].body["model"], "qwen3");
    assert!(
        requests[0].header("authorization").is_none(),
        "no key is sent to a local Ollama"
    );
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert!(
        messages
            .iter()
            .any(|m| m["role"] == "tool" && m["tool_call_id"] == "call_blqyt530")
    );
}

/// With only OPENAI_API_KEY (and a compatible server's URL) the default model works on the
/// first try: the strict mock refuses what the real API refuses (max_tokens for gpt-5.1).
#[test]
fn an_openai_key_alone_works_with_the_default_model() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(support::openai_sse("Hello.", &[])));
    sb.bare()
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", server.url("/v1"))
        .args(["-p", "hi"])
        .assert()
        .success()
        .stdout("Hello.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "accepted the first time");
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].body["model"], "gpt-5.1");
    assert!(requests[0].body["max_completion_tokens"].is_u64());
}

/// The json output's usage carries the cached input tokens, summed over the turn.
#[test]
fn json_usage_reports_cached_input_tokens() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let answer = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,",
        "\"cache_read_input_tokens\":2000,\"cache_creation_input_tokens\":500,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi.\"}}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
    );
    server.push(Reply::sse(answer));
    let out = sb
        .bare()
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", server.url(""))
        .args(["-p", "hi", "--output-format", "json"])
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(
        v["usage"],
        serde_json::json!({
            "input_tokens": 2503, "output_tokens": 7,
            "cache_read_input_tokens": 2000, "cache_creation_input_tokens": 500,
            "cache_read_tokens": 2000, "cache_write_tokens": 500
        })
    );
}

/// BRUTE_API_KEY is for another server: with the provider detected from ANTHROPIC_API_KEY,
/// only that key goes to Anthropic, and in Anthropic's header only.
#[test]
fn keys_go_only_with_their_own_provider() {
    let Some(dir) = support::fixtures() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(support::fixture(&dir, "anthropic/text-basic.sse")));
    sb.bare()
        .env("ANTHROPIC_API_KEY", "anthropic-key")
        .env("ANTHROPIC_BASE_URL", server.url(""))
        .env("BRUTE_API_KEY", "other-key")
        .args(["-p", "hi"])
        .assert()
        .success();
    let request = &server.requests()[0];
    assert_eq!(request.header("x-api-key"), Some("anthropic-key"));
    assert!(request.header("authorization").is_none());
    assert!(
        request.headers.iter().all(|(_, v)| !v.contains("other-key")),
        "{:?}",
        request.headers
    );
}
