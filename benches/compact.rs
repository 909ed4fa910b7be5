//! Long sessions: what a 200k-token conversation costs brute per request. Pruning-only
//! compaction of it (no model call), the request size estimate, and building the request
//! body (OpenAI wire format, serialized to bytes) — each median of 20.
//!
//! Run: `cargo bench --bench compact` (numbers go to BENCHMARKS.md by hand).

use std::time::{Duration, Instant};

use brute::agent::compact::{self, Meter};
use brute::provider::{ChatRequest, Message, ToolCall};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// About `tokens` tokens of turns: a prompt, a read call, its 3 KB result, an answer.
fn history(tokens: u64) -> Vec<Message> {
    let mut out = Vec::new();
    let mut i = 0;
    while compact::estimate(out.iter().map(compact::message_bytes).sum()) < tokens {
        out.push(Message::user(format!(
            "step {i}: look at module {i} and fix what is wrong"
        )));
        out.push(Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall::new(
                format!("call_{i}"),
                "read",
                format!(r#"{{"file_path":"src/module_{i}.rs"}}"#),
            )],
            reasoning: Vec::new(),
        });
        out.push(Message::Tool {
            call_id: format!("call_{i}"),
            name: "read".into(),
            content: (1..=60)
                .map(|n| format!("{n:>6}\tlet value_{n} = compute({n}, \"{i}\");\n"))
                .collect(),
            is_error: false,
            images: Vec::new(),
        });
        out.push(Message::Assistant {
            text: format!("Module {i} looks right; the value on line 12 is computed twice."),
            tool_calls: Vec::new(),
            reasoning: Vec::new(),
        });
        i += 1;
    }
    out
}

fn main() {
    let base = history(200_000);
    let bytes: usize = base.iter().map(compact::message_bytes).sum();
    println!(
        "history: {} messages, {:.1} MB, about {} tokens",
        base.len(),
        bytes as f64 / 1e6,
        compact::estimate(bytes)
    );
    let size = |h: &[Message]| compact::estimate(h.iter().map(compact::message_bytes).sum());

    let mut prune_times = Vec::new();
    let mut pruned = compact::Pruned::default();
    for _ in 0..20 {
        let mut h = base.clone();
        let started = Instant::now();
        pruned = compact::prune(&mut h, 2, 100_000, size);
        prune_times.push(started.elapsed());
    }
    println!(
        "pruning-only compaction to 100k tokens: median {:.2} ms ({} outputs pruned)",
        median(prune_times).as_secs_f64() * 1e3,
        pruned.outputs
    );

    let mut meter = Meter::default();
    meter.reported(base.len() - 4, 195_000);
    let mut estimate_times = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        std::hint::black_box(meter.estimate(&base, 8_000));
        estimate_times.push(started.elapsed());
    }
    println!(
        "estimating the next request: median {:.3} ms",
        median(estimate_times).as_secs_f64() * 1e3
    );

    let tools = brute::app::builtin_tools().specs();
    let mut build_times = Vec::new();
    let mut body_len = 0;
    for _ in 0..20 {
        let started = Instant::now();
        let request = ChatRequest {
            model: "gpt-5.1",
            system: "You are brute.",
            messages: &base,
            tools: &tools,
            max_tokens: 16_384,
            temperature: None,
            reasoning_effort: None,
        };
        let body = serde_json::to_vec(&brute::provider::openai::request_body(&request, true)).expect("json");
        body_len = body.len();
        build_times.push(started.elapsed());
    }
    println!(
        "building the request body ({:.1} MB): median {:.2} ms",
        body_len as f64 / 1e6,
        median(build_times).as_secs_f64() * 1e3
    );
}
