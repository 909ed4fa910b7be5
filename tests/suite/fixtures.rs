//! The recorded provider responses in ../shared/fixtures/llm-wire, decoded through each
//! wire format's decoder, fed in chunks of several sizes (so SSE lines and UTF-8 sequences
//! split at every kind of boundary). Expected values were read off the raw files.

use crate::support;

use brute::provider::sse::decode_stream;
use brute::provider::{Completion, Delta, ProviderError, StopReason, StreamDecoder, anthropic, openai, responses};
use futures_util::stream;

#[derive(Clone, Copy)]
enum Wire {
    Chat,
    Anthropic,
    Responses,
}

fn decoder(wire: Wire) -> Box<dyn StreamDecoder> {
    match wire {
        Wire::Chat => Box::new(openai::Decoder::new()),
        Wire::Anthropic => Box::new(anthropic::Decoder::new()),
        Wire::Responses => Box::new(responses::Decoder::new()),
    }
}

/// Decodes `body` with chunk sizes 1, 5, 64 and whole; all must agree. Returns the result
/// and the concatenated text deltas.
fn decode(wire: Wire, body: &str) -> (Result<Completion, String>, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut results = Vec::new();
    for size in [1usize, 5, 64, body.len().max(1)] {
        let chunks: Vec<Result<Vec<u8>, std::convert::Infallible>> =
            body.as_bytes().chunks(size).map(|c| Ok(c.to_vec())).collect();
        let mut text = String::new();
        let mut on_delta = |d: Delta| {
            if let Delta::Text(t) = d {
                text.push_str(&t)
            }
        };
        let result = runtime
            .block_on(decode_stream(stream::iter(chunks), decoder(wire), None, &mut on_delta))
            .map_err(|e: ProviderError| e.to_string());
        results.push((result, text));
    }
    let first = results[0].clone();
    for other in &results[1..] {
        assert_eq!(&first, other, "chunking changed the decoded result");
    }
    first
}

fn calls(c: &Completion) -> Vec<(&str, &str, &str)> {
    c.tool_calls
        .iter()
        .map(|t| (t.id.as_str(), t.name.as_str(), t.arguments()))
        .collect()
}

#[test]
fn openai_chat_streams() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let (c, _) = decode(
        Wire::Chat,
        &support::fixture(&dir, "openai-chat/parallel-tool-calls.sse"),
    );
    let c = c.unwrap();
    assert_eq!(
        calls(&c),
        vec![
            (
                "call_JMW1whyEaYG438VE1OIflxA2",
                "GetWeatherArgs",
                r#"{"city": "Edinburgh", "country": "GB", "units": "c"}"#
            ),
            (
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "get_stock_price",
                r#"{"ticker": "AAPL", "exchange": "NASDAQ"}"#
            ),
        ]
    );
    assert_eq!(c.stop_reason, Some(StopReason::ToolUse));
    assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (149, 60));

    let (c, _) = decode(Wire::Chat, &support::fixture(&dir, "openai-chat/single-tool-call.sse"));
    let c = c.unwrap();
    assert_eq!(
        calls(&c),
        vec![(
            "call_c91SqDXlYFuETYv8mUHzz6pp",
            "GetWeatherArgs",
            r#"{"city":"Edinburgh","country":"UK","units":"c"}"#
        )]
    );

    let (c, text) = decode(Wire::Chat, &support::fixture(&dir, "openai-chat/finish-length.sse"));
    let c = c.unwrap();
    assert_eq!((c.text.as_str(), text.as_str()), ("{\"", "{\""));
    assert_eq!(c.stop_reason, Some(StopReason::MaxTokens));

    let (c, _) = decode(Wire::Chat, &support::fixture(&dir, "openai-chat/refusal.sse"));
    let c = c.unwrap();
    assert_eq!(c.text, "I'm sorry, I can't assist with that request.");
    assert_eq!(c.stop_reason, Some(StopReason::EndTurn));
    assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (79, 11));
}

#[test]
fn openrouter_and_ollama_multiturn_streams() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let base = "openai-chat/ruby_llm-openrouter-stream-tool-multiturn";
    let (c, _) = decode(Wire::Chat, &support::fixture(&dir, &format!("{base}.0.response.sse")));
    let c = c.unwrap();
    assert_eq!(
        calls(&c),
        vec![(
            "toolu_bdrk_01FnJwNhnbF7UbXLQGHJ5dda",
            "weather",
            r#"{"latitude": "52.5200", "longitude": "13.4050"}"#
        )]
    );
    assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (633, 75));
    let (c, text) = decode(Wire::Chat, &support::fixture(&dir, &format!("{base}.1.response.sse")));
    let c = c.unwrap();
    assert!(
        c.text
            .starts_with("The current weather in Berlin is:\n- **Temperature**: 15°C (59°F)")
    );
    assert_eq!(c.text, text);
    assert!(c.tool_calls.is_empty());
    assert_eq!(c.stop_reason, Some(StopReason::EndTurn));

    let base = "ollama-openai-compat/ruby_llm-qwen3-stream-tool-multiturn";
    let (c, _) = decode(Wire::Chat, &support::fixture(&dir, &format!("{base}.0.response.sse")));
    let c = c.unwrap();
    assert_eq!(
        calls(&c),
        vec![(
            "call_blqyt530",
            "weather",
            r#"{"latitude":"52.5200","longitude":"13.4050"}"#
        )]
    );
    assert!(
        c.reasoning
            .starts_with("Okay, the user is asking for the weather in Berlin")
    );
    assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (195, 140));
    let (c, _) = decode(Wire::Chat, &support::fixture(&dir, &format!("{base}.3.response.sse")));
    let c = c.unwrap();
    assert_eq!(
        c.text,
        "The current weather in Paris (48.8575, 2.3514) is **15°C** with winds at **10 km/h**. 🌤️ Would you like additional weather details?"
    );
}

#[test]
fn anthropic_streams() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let (c, text) = decode(Wire::Anthropic, &support::fixture(&dir, "anthropic/tool-use.sse"));
    let c = c.unwrap();
    assert_eq!(c.text, "I'll check the current weather in Paris for you.");
    assert_eq!(text, c.text);
    assert_eq!(
        calls(&c),
        vec![(
            "toolu_01NRLabsLyVHZPKxbKvkfSMn",
            "get_weather",
            r#"{"location": "Paris"}"#
        )]
    );
    assert_eq!(c.stop_reason, Some(StopReason::ToolUse));
    assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (377, 65));

    let (c, _) = decode(Wire::Anthropic, &support::fixture(&dir, "anthropic/text-basic.sse"));
    let c = c.unwrap();
    assert_eq!(
        (c.text.as_str(), c.stop_reason),
        ("Hello there!", Some(StopReason::EndTurn))
    );

    // A tool with no arguments: one empty input_json_delta becomes `{}`.
    let body = support::jsonl_to_sse(&support::fixture(&dir, "anthropic/tool-use-no-args.jsonl"));
    let (c, _) = decode(Wire::Anthropic, &body);
    let c = c.unwrap();
    assert_eq!(c.text, "I'll update the issue list for you.");
    assert_eq!(
        calls(&c),
        vec![("toolu_01QE1WLsSVp5hy5Q3GmGTmjP", "updateIssueList", "{}")]
    );

    // Cut off by max_tokens mid-arguments: the half-received call is dropped, never run.
    let (c, _) = decode(
        Wire::Anthropic,
        &support::fixture(&dir, "anthropic/tool-use-truncated-max-tokens.sse"),
    );
    let c = c.unwrap();
    assert_eq!(c.stop_reason, Some(StopReason::MaxTokens));
    assert!(c.text.starts_with("I'll create a comprehensive tax guide"));
    assert!(c.tool_calls.is_empty());

    let base = "anthropic/ruby_llm-stream-tool-multiturn";
    let (c, _) = decode(
        Wire::Anthropic,
        &support::fixture(&dir, &format!("{base}.2.response.sse")),
    );
    assert_eq!(
        calls(&c.unwrap()),
        vec![(
            "toolu_01WyBDTrFVoidP92YhrB1xZ2",
            "weather",
            r#"{"latitude": "48.8575", "longitude": "2.3514"}"#
        )]
    );
    let (c, _) = decode(
        Wire::Anthropic,
        &support::fixture(&dir, &format!("{base}.3.response.sse")),
    );
    let c = c.unwrap();
    assert!(
        c.text
            .starts_with("The weather in Paris is currently:\n- **Temperature:** 15°C")
    );
    assert_eq!((c.usage.input_tokens, c.usage.output_tokens), (934, 53));
}

/// Splits a multi-response JSONL recording at each `response.created`.
fn split_responses(jsonl: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
        if line.contains("\"type\":\"response.created\"") || out.is_empty() {
            out.push(String::new());
        }
        if let Some(last) = out.last_mut() {
            last.push_str(line);
            last.push('\n');
        }
    }
    out
}

#[test]
fn responses_streams() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let parts = split_responses(&support::fixture(
        &dir,
        "openai-responses/function-calls-multiturn.jsonl",
    ));
    assert_eq!(parts.len(), 4);
    let expected = [
        (
            "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
            r#"{"a":12,"b":7,"op":"add"}"#,
            (134, 28),
        ),
        (
            "call_Q6pW65MUgW9vF59BmItYGos3",
            r#"{"a":19,"b":3,"op":"multiply"}"#,
            (221, 26),
        ),
        (
            "call_Zl5vIMnD7dVAjgU6FkhmiCZh",
            r#"{"a":57,"b":10,"op":"multiply"}"#,
            (260, 26),
        ),
    ];
    for (part, (id, args, usage)) in parts.iter().zip(expected) {
        let (c, _) = decode(Wire::Responses, &support::jsonl_to_sse(part));
        let c = c.unwrap();
        assert_eq!(calls(&c), vec![(id, "calculator", args)]);
        assert_eq!(c.stop_reason, Some(StopReason::ToolUse));
        assert_eq!((c.usage.input_tokens, c.usage.output_tokens), usage);
    }
    let (first, _) = decode(Wire::Responses, &support::jsonl_to_sse(&parts[0]));
    assert!(
        first
            .unwrap()
            .reasoning
            .starts_with("**Calculating step-by-step using calculator**\n\nI'll compute")
    );
    let (c, _) = decode(Wire::Responses, &support::jsonl_to_sse(&parts[3]));
    let c = c.unwrap();
    assert_eq!(
        (c.text.as_str(), c.stop_reason),
        ("The final result is **570**.", Some(StopReason::EndTurn))
    );

    // Unknown output item types are skipped.
    let body = support::jsonl_to_sse(&support::fixture(
        &dir,
        "openai-responses/function-call-after-tool-search.jsonl",
    ));
    let (c, _) = decode(Wire::Responses, &body);
    assert_eq!(
        calls(&c.unwrap()),
        vec![(
            "call_pddfxhfOx4gY56zn4vIIEbFp",
            "get_weather",
            r#"{"location":"San Francisco, CA","unit":"fahrenheit"}"#
        )]
    );

    let base = "openai-responses/ruby_llm-stream-tool-multiturn";
    let (c, _) = decode(
        Wire::Responses,
        &support::fixture(&dir, &format!("{base}.0.response.sse")),
    );
    assert_eq!(
        calls(&c.unwrap()),
        vec![(
            "call_E9m0fralKLjUmND1MuTXjnqm",
            "weather",
            r#"{"latitude":"52.5200","longitude":"13.4050"}"#
        )]
    );
    let (c, _) = decode(
        Wire::Responses,
        &support::fixture(&dir, &format!("{base}.1.response.sse")),
    );
    assert_eq!(c.unwrap().text, "Berlin (52.5200, 13.4050): 15°C, wind 10 km/h.");
}

#[test]
fn responses_stream_error_midway() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let body = support::jsonl_to_sse(&support::fixture(
        &dir,
        "errors/openai-responses-stream-error-insufficient-quota.jsonl",
    ));
    let (result, _) = decode(Wire::Responses, &body);
    let error = result.unwrap_err();
    assert!(
        error.contains("insufficient_quota: You exceeded your current quota"),
        "{error}"
    );
}

#[test]
fn streams_cut_before_their_end_are_errors() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    for (wire, name) in [
        (Wire::Chat, "openai-chat/parallel-tool-calls.sse"),
        (Wire::Anthropic, "anthropic/tool-use.sse"),
        (
            Wire::Responses,
            "openai-responses/ruby_llm-stream-tool-multiturn.0.response.sse",
        ),
    ] {
        let body = support::fixture(&dir, name);
        let cut = &body[..body.len() * 2 / 3];
        let cut = &cut[..cut.rfind("\n\n").unwrap_or(0) + 2];
        let (result, _) = decode(wire, cut);
        let error = result.unwrap_err();
        assert!(error.contains("cut before it finished"), "{name}: {error}");
    }
}

#[test]
fn non_streamed_bodies() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let json = |name: &str| serde_json::from_str::<serde_json::Value>(&support::fixture(&dir, name)).unwrap();
    let c = anthropic::decode_full(&json("anthropic/ruby_llm-parallel-tool-use.0.response.json")).unwrap();
    assert_eq!(c.tool_calls.len(), 2);
    assert_eq!(c.stop_reason, Some(StopReason::ToolUse));
    let c = anthropic::decode_full(&json("anthropic/ruby_llm-three-tool-use.0.response.json")).unwrap();
    assert_eq!(c.tool_calls.len(), 3);
    assert!(
        c.tool_calls
            .iter()
            .all(|t| t.id.starts_with("toolu_") && t.input().is_ok())
    );
    let c = responses::decode_full(&json(
        "openai-responses/ruby_llm-parallel-function-calls.0.response.json",
    ))
    .unwrap();
    assert_eq!(c.tool_calls.len(), 2);
    assert!(c.tool_calls.iter().all(|t| t.id.starts_with("call_")));
    let c = openai::decode_full(&json(
        "ollama-openai-compat/ruby_llm-qwen3-parallel-tool-calls.0.response.json",
    ))
    .unwrap();
    assert_eq!(c.tool_calls.len(), 2);
    assert_eq!(c.stop_reason, Some(StopReason::ToolUse));
    let c = anthropic::decode_full(&json("anthropic/ruby_llm-parallel-tool-use.1.response.json")).unwrap();
    assert!(c.tool_calls.is_empty() && !c.text.is_empty());
}

#[test]
fn mangled_streams_give_errors_not_panics() {
    let Some(dir) = support::fixtures() else { return };
    let bodies = [
        (
            Wire::Chat,
            support::fixture(&dir, "openai-chat/parallel-tool-calls.sse"),
        ),
        (Wire::Anthropic, support::fixture(&dir, "anthropic/tool-use.sse")),
        (
            Wire::Responses,
            support::fixture(&dir, "openai-responses/ruby_llm-stream-tool-multiturn.0.response.sse"),
        ),
    ];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for seed in 0..200u64 {
        let mut rng = fastrand::Rng::with_seed(seed);
        for (wire, body) in &bodies {
            let mut bytes = body.as_bytes().to_vec();
            for _ in 0..rng.usize(1..20) {
                if bytes.is_empty() {
                    break;
                }
                let at = rng.usize(0..bytes.len());
                match rng.usize(0..3) {
                    0 => bytes[at] = rng.u8(..),
                    1 => {
                        bytes.remove(at);
                    }
                    _ => bytes.truncate(at.max(1)),
                }
            }
            let chunks: Vec<Result<Vec<u8>, std::convert::Infallible>> =
                bytes.chunks(rng.usize(1..64)).map(|c| Ok(c.to_vec())).collect();
            let mut ignore = |_: Delta| {};
            // Any outcome but a panic is fine: a mangled stream is an error or, by luck, a
            // smaller valid answer.
            let _ = runtime.block_on(decode_stream(stream::iter(chunks), decoder(*wire), None, &mut ignore));
        }
    }
}

/// Cached input tokens: counted in `input_tokens`, and reported apart as read from or
/// written to the prompt cache. The llama.cpp recording is real; the others are synthetic,
/// in each API's documented usage shape.
#[test]
fn cached_input_tokens_are_reported() {
    if let Some(dir) = support::fixtures() {
        let (c, _) = decode(
            Wire::Chat,
            &support::fixture(&dir, "local-llama/read-task.0.response.seed2.sse"),
        );
        let u = c.unwrap().usage;
        assert_eq!(
            (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens),
            (2091, 2090, 0)
        );
    }
    let chat = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1200,\"completion_tokens\":5,",
        "\"prompt_tokens_details\":{\"cached_tokens\":1024,\"cache_write_tokens\":100}}}\n\n",
        "data: [DONE]\n\n"
    );
    let u = decode(Wire::Chat, chat).0.unwrap().usage;
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens
        ),
        (1200, 5, 1024, 100)
    );
    let anthropic = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,",
        "\"cache_read_input_tokens\":2000,\"cache_creation_input_tokens\":500,\"output_tokens\":1}}}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
    );
    let u = decode(Wire::Anthropic, anthropic).0.unwrap().usage;
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens
        ),
        (2503, 7, 2000, 500)
    );
    let responses = concat!(
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",",
        "\"output\":[],\"usage\":{\"input_tokens\":4000,\"input_tokens_details\":{\"cached_tokens\":3072,",
        "\"cache_write_tokens\":0},\"output_tokens\":9}}}\n\n"
    );
    let u = decode(Wire::Responses, responses).0.unwrap().usage;
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens
        ),
        (4000, 9, 3072, 0)
    );
}

/// A real Responses stream's encrypted reasoning item is kept whole, as the recording's
/// next request (from a real client) sent it back.
#[test]
fn responses_reasoning_items_are_kept_for_the_turn() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let base = "openai-responses/ruby_llm-stream-tool-multiturn";
    let (c, _) = decode(
        Wire::Responses,
        &support::fixture(&dir, &format!("{base}.0.response.sse")),
    );
    let c = c.unwrap();
    let next: serde_json::Value =
        serde_json::from_str(&support::fixture(&dir, &format!("{base}.1.request.json"))).unwrap();
    let sent = &next["input"][1];
    assert_eq!(sent["type"], "reasoning");
    assert_eq!(c.reasoning_items.len(), 1);
    assert_eq!(c.reasoning_items[0].at, 0, "before the call it led to");
    match &c.reasoning_items[0].kind {
        brute::provider::ReasoningKind::Encrypted { summary, content } => {
            assert!(summary.is_empty());
            assert_eq!(Some(content.as_str()), sent["encrypted_content"].as_str());
        }
        other => panic!("{other:?}"),
    }
}
