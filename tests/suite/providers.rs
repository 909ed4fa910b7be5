//! Providers over real HTTP on 127.0.0.1 against the mock server: request shapes, streaming
//! split at odd byte boundaries, retries with backoff, and every error path.

use crate::support;

use std::time::Duration;

use brute::provider::http::{HttpProvider, HttpSettings};
use brute::provider::spec::ProviderKind;
use brute::provider::{ChatRequest, Completion, Delta, Message, Provider, ProviderError, ToolCall, ToolSpec};
use serde_json::json;
use support::{MockServer, Reply};

fn settings(base_url: String, attempts: u32) -> HttpSettings {
    HttpSettings {
        base_url,
        api_key: Some("test-key".into()),
        key_hint: "TEST_API_KEY".into(),
        stream: true,
        max_attempts: attempts,
        retry_base: Duration::from_millis(1),
        retry_max: Duration::from_millis(20),
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(10),
        web_search: false,
    }
}

/// The provider for `kind` as its row of the provider table describes it.
fn http(kind: ProviderKind, settings: HttpSettings) -> Result<HttpProvider, ProviderError> {
    let spec = kind.spec();
    HttpProvider::new(spec.endpoint().expect("an HTTP provider"), spec.name, settings)
}

fn history() -> Vec<Message> {
    vec![
        Message::user("weather in Paris?"),
        Message::Assistant {
            text: "Checking.".into(),
            tool_calls: vec![
                ToolCall::new("call_1", "weather", r#"{"city":"Paris"}"#),
                ToolCall::new("call_2", "noargs", "{}"),
            ],
            reasoning: Vec::new(),
        },
        Message::Tool {
            call_id: "call_1".into(),
            name: "weather".into(),
            content: "15°C".into(),
            is_error: false,
            images: Vec::new(),
        },
        Message::Tool {
            call_id: "call_2".into(),
            name: "noargs".into(),
            content: "Error: boom".into(),
            is_error: true,
            images: Vec::new(),
        },
    ]
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "weather".into(),
        description: "Weather for a city".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    }]
}

async fn complete(provider: &HttpProvider, deltas: &mut Vec<Delta>) -> Result<Completion, ProviderError> {
    complete_with(provider, "m", deltas).await
}

/// One completion of the shared history with `model`, temperature 0.5 asked for.
async fn complete_with(
    provider: &HttpProvider,
    model: &str,
    deltas: &mut Vec<Delta>,
) -> Result<Completion, ProviderError> {
    let messages = history();
    let tools = tools();
    let request = ChatRequest {
        model,
        system: "be brief",
        messages: &messages,
        tools: &tools,
        max_tokens: 100,
        temperature: Some(0.5),
        reasoning_effort: None,
    };
    let mut sink = |d: Delta| deltas.push(d);
    provider.complete(&request, &mut sink).await
}

#[tokio::test]
async fn openai_request_shape_and_streamed_tool_calls() {
    let server = MockServer::start();
    let body = support::openai_sse(
        "Héllo wörld ",
        &[
            ("c1", "read", r#"{"file_path":"a.rs"}"#),
            ("c2", "shell", r#"{"command":"ls"}"#),
        ],
    );
    server.push(Reply::sse(body).chunked(3));
    let provider = http(ProviderKind::OpenAi, settings(server.url("/v1"), 1)).unwrap();
    let mut deltas = Vec::new();
    let c = complete(&provider, &mut deltas).await.unwrap();
    assert_eq!(c.text, "Héllo wörld ");
    assert_eq!(c.tool_calls.len(), 2);
    assert_eq!(c.tool_calls[1].arguments(), r#"{"command":"ls"}"#);
    assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (11, 7));
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("authorization"), Some("Bearer test-key"));
    let b = &req.body;
    assert_eq!(b["stream"], true);
    assert_eq!(b["messages"][0], json!({"role": "system", "content": "be brief"}));
    assert_eq!(
        b["messages"][2]["tool_calls"][0]["function"]["arguments"],
        r#"{"city":"Paris"}"#
    );
    assert_eq!(
        b["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "15°C"})
    );
    assert_eq!(b["messages"][4]["tool_call_id"], "call_2");
    assert_eq!(b["temperature"], 0.5);
    assert_eq!(b["tools"][0]["type"], "function");
    assert_eq!(b["tools"][0]["function"]["name"], "weather");
}

/// Reasoning models refuse `max_tokens` and a non-default temperature (the strict mock
/// says so as the real API does); other models keep both.
#[tokio::test]
async fn openai_reasoning_models_get_max_completion_tokens_and_no_temperature() {
    let server = MockServer::start();
    server.push(Reply::sse(support::openai_sse("ok", &[])));
    server.push(Reply::sse(support::openai_sse("ok", &[])));
    let provider = http(ProviderKind::OpenAi, settings(server.url("/v1"), 1)).unwrap();
    let c = complete_with(&provider, "gpt-5.1", &mut Vec::new()).await.unwrap();
    assert_eq!(c.text, "ok");
    complete_with(&provider, "gpt-4.1", &mut Vec::new()).await.unwrap();
    let requests = server.requests();
    let (reasoning, plain) = (&requests[0].body, &requests[1].body);
    assert_eq!(reasoning["max_completion_tokens"], 100);
    assert!(reasoning.get("max_tokens").is_none() && reasoning.get("temperature").is_none());
    assert_eq!(
        (plain["max_tokens"].as_u64(), plain["temperature"].as_f64()),
        (Some(100), Some(0.5))
    );
}

/// A model brute does not know refuses `max_tokens` and the temperature: each is adapted
/// once, with a notice, and remembered for that model (not for others).
#[tokio::test]
async fn refused_parameters_are_adapted_once_and_remembered_per_model() {
    let server = MockServer::start();
    server.reasoning_model("acme-r1");
    for _ in 0..3 {
        server.push(Reply::sse(support::openai_sse("ok", &[])));
    }
    let provider = http(ProviderKind::OpenAi, settings(server.url("/v1"), 1)).unwrap();
    let mut deltas = Vec::new();
    let c = complete_with(&provider, "acme-r1", &mut deltas).await.unwrap();
    assert_eq!(c.text, "ok");
    let refused: Vec<_> = server.requests().iter().map(|r| r.refused).collect();
    assert_eq!(
        refused,
        [
            Some("chat.max-tokens-reasoning"),
            Some("chat.temperature-reasoning"),
            None
        ]
    );
    let notices: Vec<&String> = deltas
        .iter()
        .filter_map(|d| match d {
            Delta::Notice(n) => Some(n),
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(notices[0].contains("acme-r1 refused `max_tokens`: sending `max_completion_tokens`"));
    // The next request to that model is right the first time; another model is untouched.
    complete_with(&provider, "acme-r1", &mut Vec::new()).await.unwrap();
    complete_with(&provider, "gpt-4.1", &mut Vec::new()).await.unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(requests[3].refused, None);
    assert_eq!(requests[3].body["max_completion_tokens"], 100);
    assert!(requests[3].body.get("temperature").is_none());
    assert_eq!(requests[4].body["max_tokens"], 100);
    assert_eq!(requests[4].body["temperature"], 0.5);
}

/// When the adapted request is refused for the same parameter again, the error stands.
#[tokio::test]
async fn an_adaptation_that_does_not_help_is_not_repeated() {
    let server = MockServer::lenient();
    let refusal = r#"{"error":{"message":"Unsupported parameter: 'temperature' is not supported with this model.","type":"invalid_request_error","param":"temperature","code":"unsupported_parameter"}}"#;
    server.push(Reply::json(400, refusal));
    server.push(Reply::json(400, refusal));
    let provider = http(ProviderKind::OpenAi, settings(server.url("/v1"), 3)).unwrap();
    let e = complete(&provider, &mut Vec::new()).await.unwrap_err();
    assert!(matches!(e, ProviderError::Http { status: 400, .. }), "{e}");
    assert_eq!(server.requests().len(), 2);
    assert!(server.requests()[1].body.get("temperature").is_none());
    server.push(Reply::json(400, refusal.replace("temperature", "seed")));
    complete(&provider, &mut Vec::new()).await.unwrap_err();
    assert_eq!(
        server.requests().len(),
        3,
        "a parameter the body does not hold is not adapted"
    );
}

#[tokio::test]
async fn anthropic_request_shape() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let server = MockServer::start();
    server.push(Reply::sse(support::fixture(&dir, "anthropic/tool-use.sse")).chunked(11));
    let provider = http(ProviderKind::Anthropic, settings(server.url(""), 1)).unwrap();
    let mut deltas = Vec::new();
    let c = complete(&provider, &mut deltas).await.unwrap();
    assert_eq!(c.tool_calls[0].name, "get_weather");
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("test-key"));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    let b = &req.body;
    assert_eq!(
        b["system"],
        json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]),
        "the system prompt is a cache breakpoint"
    );
    assert_eq!(
        b["tools"][0]["cache_control"]["type"], "ephemeral",
        "so is the end of the tools"
    );
    assert_eq!(
        b["messages"][2]["content"][1]["cache_control"]["type"], "ephemeral",
        "and of the conversation"
    );
    assert_eq!(
        b["messages"][1]["content"][1],
        json!({"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}})
    );
    // Both results in one user message, the error flagged.
    assert_eq!(b["messages"][2]["role"], "user");
    assert_eq!(
        b["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "call_1", "content": "15°C"})
    );
    assert_eq!(b["messages"][2]["content"][1]["is_error"], true);
    assert_eq!(b["tools"][0]["input_schema"]["required"][0], "city");
}

#[tokio::test]
async fn responses_request_shape() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let server = MockServer::start();
    server.push(Reply::sse(support::fixture(
        &dir,
        "openai-responses/ruby_llm-stream-tool-multiturn.1.response.sse",
    )));
    let provider = http(ProviderKind::Responses, settings(server.url("/v1"), 1)).unwrap();
    let c = complete(&provider, &mut Vec::new()).await.unwrap();
    assert_eq!(c.text, "Berlin (52.5200, 13.4050): 15°C, wind 10 km/h.");
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/responses");
    let b = &req.body;
    assert_eq!(b["instructions"], "be brief");
    assert_eq!(b["store"], false);
    assert_eq!(
        b["input"][2],
        json!({"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": r#"{"city":"Paris"}"#})
    );
    assert_eq!(
        b["input"][4],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "15°C"})
    );
    assert_eq!(b["tools"][0]["name"], "weather");
}

#[tokio::test]
async fn retries_429_and_5xx_with_visible_events() {
    let server = MockServer::start();
    server.push(
        Reply::json(
            429,
            r#"{"error":{"message":"Rate limit reached","type":"rate_limit_exceeded"}}"#,
        )
        .header("retry-after", "0"),
    );
    server.push(Reply::json(500, "oops"));
    server.push(Reply::json(
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    ));
    server.push(Reply::sse(support::openai_sse("done", &[])));
    let provider = http(ProviderKind::OpenAi, settings(server.url("/v1"), 4)).unwrap();
    let mut deltas = Vec::new();
    let c = complete(&provider, &mut deltas).await.unwrap();
    assert_eq!(c.text, "done");
    assert_eq!(server.requests().len(), 4);
    let retries: Vec<_> = deltas
        .iter()
        .filter_map(|d| match d {
            Delta::Retrying {
                attempt,
                reason,
                delay_ms,
                ..
            } => Some((*attempt, reason.clone(), *delay_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 3);
    assert_eq!(retries[0].0, 2);
    assert!(retries[0].1.contains("429") && retries[0].1.contains("Rate limit reached"));
    assert_eq!(retries[0].2, 0, "retry-after: 0 is honoured");
    assert!(retries[2].1.contains("529"));
}

#[tokio::test]
async fn retries_are_bounded() {
    let server = MockServer::start();
    for _ in 0..3 {
        server.push(Reply::json(503, "unavailable"));
    }
    let provider = http(ProviderKind::OpenAi, settings(server.url("/v1"), 2)).unwrap();
    let error = complete(&provider, &mut Vec::new()).await.unwrap_err();
    assert!(matches!(error, ProviderError::Http { status: 503, .. }), "{error}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn auth_and_context_errors_are_clear_and_not_retried() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let server = MockServer::start();
    server.push(Reply::json(
        401,
        support::fixture(&dir, "errors/anthropic-401-authentication-error.0.response.json"),
    ));
    server.push(Reply::json(
        400,
        support::fixture(&dir, "errors/anthropic-400-prompt-too-long.0.response.json"),
    ));
    server.push(Reply::json(
        400,
        support::fixture(&dir, "errors/ollama-cloud-400-prompt-too-long.0.response.json"),
    ));
    server.push(Reply::json(
        400,
        support::fixture(
            &dir,
            "errors/openai-responses-400-context-length-exceeded.0.response.json",
        ),
    ));
    server.push(Reply::json(
        401,
        support::fixture(&dir, "errors/openai-responses-401-invalid-api-key.0.response.json"),
    ));
    let provider = http(ProviderKind::Anthropic, settings(server.url(""), 4)).unwrap();
    let e = complete(&provider, &mut Vec::new()).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "authentication failed (401): authentication_error: invalid x-api-key. Check TEST_API_KEY"
    );
    let e = complete(&provider, &mut Vec::new()).await.unwrap_err();
    assert!(
        matches!(&e, ProviderError::ContextTooLong(m) if m.contains("prompt is too long: 3333404 tokens")),
        "{e}"
    );
    let openai = http(ProviderKind::OpenAi, settings(server.url("/v1"), 4)).unwrap();
    let e = complete(&openai, &mut Vec::new()).await.unwrap_err();
    assert!(matches!(e, ProviderError::ContextTooLong(_)), "{e}");
    let responses = http(ProviderKind::Responses, settings(server.url("/v1"), 4)).unwrap();
    let e = complete(&responses, &mut Vec::new()).await.unwrap_err();
    assert!(matches!(e, ProviderError::ContextTooLong(_)), "{e}");
    let e = complete(&responses, &mut Vec::new()).await.unwrap_err();
    assert!(matches!(e, ProviderError::Auth { status: 401, .. }), "{e}");
    assert_eq!(server.requests().len(), 5, "none of these is retried");
}

#[tokio::test]
async fn a_cut_stream_is_an_error_and_yields_no_tool_call() {
    let server = MockServer::start();
    let body = support::openai_sse("", &[("c1", "write", r#"{"file_path":"x","content":"y"}"#)]);
    let cut = body.find("[DONE]").unwrap() - 200;
    server.push(Reply::sse(body.clone()).cut_at(cut));
    let provider = http(ProviderKind::OpenAi, settings(server.url("/v1"), 3)).unwrap();
    let e = complete(&provider, &mut Vec::new()).await.unwrap_err();
    assert!(matches!(e, ProviderError::StreamCut(_)), "{e}");
    assert_eq!(server.requests().len(), 1, "a stream cut midway is not retried");
}

#[tokio::test]
async fn anthropic_overloaded_inside_the_stream_is_retried() {
    let server = MockServer::start();
    let overloaded = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    server.push(Reply::sse(overloaded));
    let ok = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    server.push(Reply::sse(ok));
    let provider = http(ProviderKind::Anthropic, settings(server.url(""), 3)).unwrap();
    let c = complete(&provider, &mut Vec::new()).await.unwrap();
    assert_eq!(c.text, "hi");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let provider = http(ProviderKind::OpenAi, settings(url.clone(), 4)).unwrap();
    let mut deltas = Vec::new();
    let e = complete(&provider, &mut deltas).await.unwrap_err();
    assert!(matches!(e, ProviderError::Connect { .. }), "{e}");
    assert_eq!(
        deltas.iter().filter(|d| matches!(d, Delta::Retrying { .. })).count(),
        1,
        "retried once, though 4 attempts are allowed"
    );
    let message = e.to_string();
    assert_eq!(message.matches(&url).count(), 1, "the URL once: {message}");
    assert!(
        message.starts_with(&format!("could not reach the provider at {url}/chat/completions: ")),
        "{message}"
    );
    assert!(message.to_ascii_lowercase().contains("refused"), "{message}");
}

#[tokio::test]
async fn non_streaming_switch() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let server = MockServer::start();
    server.push(Reply::json(
        200,
        support::fixture(
            &dir,
            "ollama-openai-compat/ruby_llm-qwen3-parallel-tool-calls.0.response.json",
        ),
    ));
    let mut s = settings(server.url("/v1"), 1);
    s.stream = false;
    let provider = http(ProviderKind::Ollama, s).unwrap();
    let c = complete(&provider, &mut Vec::new()).await.unwrap();
    assert_eq!(c.tool_calls.len(), 2);
    assert_eq!(server.requests()[0].body["stream"], false);
}

#[tokio::test]
async fn idle_stream_times_out() {
    let server = MockServer::start();
    // Headers and one event, then silence: the connection stays open (cut_at keeps it).
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n";
    server.push(
        Reply::sse(format!("{body}{}", " ".repeat(10)))
            .cut_at(body.len())
            .stall(),
    );
    let mut s = settings(server.url("/v1"), 1);
    s.idle_timeout = Duration::from_millis(300);
    let provider = http(ProviderKind::OpenAi, s).unwrap();
    let e = complete(&provider, &mut Vec::new()).await.unwrap_err();
    assert!(matches!(e, ProviderError::IdleTimeout(_)), "{e}");
}

/// A 200 that is a web page (a wrong base URL, a proxy's login page) says so, naming the
/// URL, streamed or not; it is not retried.
#[tokio::test]
async fn an_html_answer_says_the_url_is_not_a_model_api() {
    let page = "<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body>hi</body></html>";
    for stream in [true, false] {
        let server = MockServer::lenient();
        server.push(Reply::json(200, page).header("content-type", "text/html; charset=utf-8"));
        let mut s = settings(server.url(""), 3);
        s.stream = stream;
        let provider = http(ProviderKind::OpenAi, s).unwrap();
        let e = complete(&provider, &mut Vec::new()).await.unwrap_err();
        assert!(matches!(e, ProviderError::NotAnApi { .. }), "{e}");
        let url = server.url("/chat/completions");
        assert_eq!(
            e.to_string(),
            format!(
                "{url} answered with an HTML page (\"Welcome to nginx!\"), not a model API. Check the base URL: OpenAI-compatible servers serve their API under /v1 (try {}/v1).",
                server.url("")
            )
        );
        assert_eq!(server.requests().len(), 1);
    }
    // Plain text is no API either; JSON sent instead of a stream is decoded as the answer.
    let server = MockServer::start();
    server.push(Reply::json(200, "It works!").header("content-type", "text/plain"));
    let provider = http(ProviderKind::OpenAi, settings(server.url("/v1"), 1)).unwrap();
    let e = complete(&provider, &mut Vec::new()).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("neither JSON nor an event stream (\"It works!\")"),
        "{e}"
    );
    server.push(Reply::json(
        200,
        r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}"#,
    ));
    assert_eq!(complete(&provider, &mut Vec::new()).await.unwrap().text, "whole");
}

/// A 404 names the URL and hints at the /v1 convention; an unknown model says so by name.
#[tokio::test]
async fn not_found_names_the_url_and_unknown_models_their_name() {
    let server = MockServer::start();
    let provider = http(ProviderKind::OpenAi, settings(server.url(""), 3)).unwrap();
    let e = complete(&provider, &mut Vec::new()).await.unwrap_err();
    let url = server.url("/chat/completions");
    assert_eq!(
        e.to_string(),
        format!(
            "nothing answers at {url} (HTTP 404: invalid_request_error: Invalid URL (POST /chat/completions)). Check the base URL: OpenAI-compatible servers serve their API under /v1 (try {}/v1).",
            server.url("")
        )
    );
    assert_eq!(server.requests().len(), 1, "not retried");

    let server = MockServer::start();
    server.push(Reply::json(
        404,
        r#"{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#,
    ));
    server.push(Reply::json(
        404,
        r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}"#,
    ));
    server.push(Reply::json(
        404,
        r#"{"error":{"message":"model \"qwen9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}"#,
    ));
    let openai = http(ProviderKind::OpenAi, settings(server.url("/v1"), 3)).unwrap();
    let e = complete_with(&openai, "gpt-9", &mut Vec::new()).await.unwrap_err();
    assert!(
        matches!(&e, ProviderError::UnknownModel { model, .. } if model == "gpt-9"),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with("the provider does not know the model `gpt-9` ("),
        "{e}"
    );
    let anthropic = http(ProviderKind::Anthropic, settings(server.url(""), 3)).unwrap();
    let e = complete_with(&anthropic, "claude-nope", &mut Vec::new())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("`claude-nope`"), "{e}");
    let e = complete_with(&openai, "qwen9", &mut Vec::new()).await.unwrap_err();
    assert!(e.to_string().contains("`qwen9`"), "{e}");
    assert_eq!(server.requests().len(), 3, "none is retried");
}

/// Anthropic's base URL is the host root; one ending in /v1 (the OpenAI SDKs' habit) is not
/// doubled into /v1/v1/messages (which the strict mock, like the real API, answers with 404).
#[tokio::test]
async fn an_anthropic_base_url_ending_in_v1_is_not_doubled() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let server = MockServer::start();
    server.push(Reply::sse(support::fixture(&dir, "anthropic/text-basic.sse")));
    let provider = http(ProviderKind::Anthropic, settings(server.url("/v1/"), 1)).unwrap();
    assert_eq!(complete(&provider, &mut Vec::new()).await.unwrap().text, "Hello there!");
    assert_eq!(server.requests()[0].path, "/v1/messages");
}

#[tokio::test]
async fn the_model_list_is_read_once_from_each_wire_formats_own_path() {
    for (kind, api, base) in [
        (ProviderKind::OpenAi, support::strict::Api::Chat, "/v1"),
        (ProviderKind::Anthropic, support::strict::Api::Anthropic, ""),
    ] {
        let server = MockServer::start();
        server.list_models(api, &["model-b", "model-a", "model-b"]);
        let provider = http(kind, settings(server.url(base), 1)).unwrap();
        let ids = provider.list_models().await.unwrap();
        assert_eq!(ids, ["model-b", "model-a"], "{kind:?}: the server's order, each once");
        // Asked again (the picker opened twice): the list read before.
        assert_eq!(provider.list_models().await.unwrap(), ids);
        let probes = server.probes();
        assert_eq!(probes.len(), 1, "{kind:?}: one request");
        let probe = &probes[0];
        assert_eq!(probe.method, "GET");
        assert_eq!(probe.refused, None, "{kind:?}: the strict judge refused {probe:?}");
        match api {
            support::strict::Api::Anthropic => {
                assert_eq!(probe.path, "/v1/models?limit=1000");
                assert_eq!(probe.header("x-api-key"), Some("test-key"));
            }
            _ => {
                assert_eq!(probe.path, "/v1/models");
                assert_eq!(probe.header("authorization"), Some("Bearer test-key"));
            }
        }
    }
}

#[tokio::test]
async fn a_model_list_that_fails_says_why_and_is_asked_again_later() {
    let server = MockServer::start();
    server.route("/v1/models", Reply::json(401, r#"{"error":{"message":"bad key"}}"#));
    let provider = http(ProviderKind::OpenAi, settings(server.url("/v1"), 1)).unwrap();
    let error = provider.list_models().await.unwrap_err().to_string();
    assert!(error.contains("401") && error.contains("bad key"), "{error}");
    let not_a_list = MockServer::start();
    not_a_list.route("/v1/models", Reply::json(200, r#"{"hello":"world"}"#));
    let provider = http(ProviderKind::OpenAi, settings(not_a_list.url("/v1"), 1)).unwrap();
    let error = provider.list_models().await.unwrap_err().to_string();
    assert!(error.contains("no model list"), "{error}");
    assert!(provider.list_models().await.is_err());
    assert_eq!(not_a_list.probes().len(), 2, "a failure is not kept");
}

#[tokio::test]
async fn a_redirect_takes_no_key_anywhere() {
    let elsewhere = MockServer::lenient();
    elsewhere.push(Reply::json(200, "{}"));
    elsewhere.route("/v1/models", Reply::json(200, r#"{"data":[{"id":"stolen"}]}"#));
    for kind in [ProviderKind::Anthropic, ProviderKind::OpenAi] {
        let server = MockServer::lenient();
        let mut moved = Reply::json(307, "{}");
        moved.headers.push(("location".into(), elsewhere.url("/v1/messages")));
        server.push(moved.clone());
        let mut listed = Reply::json(302, "{}");
        listed.headers.push(("location".into(), elsewhere.url("/v1/models")));
        server.route("/v1/models", listed);
        let base = match kind {
            ProviderKind::Anthropic => server.url(""),
            _ => server.url("/v1"),
        };
        let provider = http(kind, settings(base, 1)).unwrap();
        let messages = [Message::user("hi")];
        let request = ChatRequest {
            model: "m",
            system: "",
            messages: &messages,
            tools: &[],
            max_tokens: 16,
            temperature: None,
            reasoning_effort: None,
        };
        let error = provider.complete(&request, &mut |_| {}).await.unwrap_err().to_string();
        assert!(error.contains("307"), "{kind:?}: {error}");
        assert!(provider.list_models().await.is_err(), "{kind:?}");
    }
    assert!(elsewhere.requests().is_empty(), "{:?}", elsewhere.requests());
    assert!(elsewhere.probes().is_empty(), "{:?}", elsewhere.probes());
}

#[tokio::test]
async fn a_model_list_past_its_cap_is_refused_not_kept() {
    let server = MockServer::start();
    let huge = format!(r#"{{"data":[{{"id":"{}"}}]}}"#, "m".repeat(9 << 20));
    server.route("/v1/models", Reply::json(200, huge));
    let provider = http(ProviderKind::OpenAi, settings(server.url("/v1"), 1)).unwrap();
    let error = provider.list_models().await.unwrap_err().to_string();
    assert!(error.contains("over 8 MiB"), "{error}");
}
