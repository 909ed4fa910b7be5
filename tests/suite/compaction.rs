//! Long sessions against the mock provider with a small context window: automatic compaction
//! before the limit keeps the first goal, the todo list and the last turn; a "too long" error
//! is recovered by compacting; `--continue` resumes the compacted conversation.

use crate::support;

use serde_json::Value;
use support::{MockServer, Reply, Sandbox, openai_sse};

const WINDOW: u64 = 3000;

fn configure(sb: &Sandbox) {
    std::fs::write(
        sb.home.path().join("config/config.toml"),
        format!("retry_base_ms = 1\nsystem_prompt = \"test\"\ncontext_window = {WINDOW}\ncompact_at = 0.7\n"),
    )
    .unwrap();
}

fn run(sb: &Sandbox, server: &MockServer, prompt: &str, more: &[&str]) -> std::process::Output {
    let mut cmd = sb.brute(server);
    configure(sb);
    cmd.args(["-p", prompt, "--tools", "read,todo_write", "--output-format", "events"])
        .args(more)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap()
}

fn request_text(request: &support::Recorded) -> String {
    request.body["messages"].to_string()
}

fn estimated_tokens(request: &support::Recorded) -> u64 {
    (request.body.to_string().len() as u64).div_ceil(4)
}

#[test]
fn a_long_session_is_compacted_before_the_window_and_keeps_what_matters() {
    let sb = Sandbox::new();
    sb.write("big.txt", &"a line of the configuration file\n".repeat(200));
    let server = MockServer::start();
    // Turn 1: the goal, a todo list, a big read.
    server.push(Reply::sse(openai_sse(
        "",
        &[
            (
                "t",
                "todo_write",
                r#"{"todos":[{"id":"1","content":"parse the config","status":"in_progress"}]}"#,
            ),
            ("r", "read", r#"{"file_path":"big.txt"}"#),
        ],
    )));
    server.push(Reply::sse(openai_sse("Read it.", &[])));
    let output = run(&sb, &server, "GOAL: make the config parser strict", &[]);
    assert!(output.status.success(), "{output:?}");
    // Turn 2 in a new process: the conversation no longer fits; the old output is pruned.
    server.push(Reply::sse(openai_sse("Next step done.", &[])));
    let output = run(&sb, &server, "now check the tests", &["--continue"]);
    assert!(output.status.success(), "{output:?}");
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let finished = events
        .iter()
        .find(|e| e["type"] == "compaction_finished")
        .expect("a compaction_finished event");
    assert!(events.iter().any(|e| e["type"] == "compaction_started"));
    assert!(finished["tokens_after"].as_u64().unwrap() < finished["tokens_before"].as_u64().unwrap());
    assert_eq!(
        finished["pruned_outputs"], 1,
        "pruning came first and was enough: {finished}"
    );
    assert_eq!(finished["summarized"], false);
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "no summary request was needed");
    let compacted = &requests[2];
    let text = request_text(compacted);
    assert!(
        text.contains("GOAL: make the config parser strict"),
        "the first goal, verbatim: {text}"
    );
    assert!(text.contains("parse the config"), "the todo list");
    assert!(
        text.contains("[output pruned to fit the context window"),
        "the pruned output says so"
    );
    assert!(text.contains("now check the tests"), "the last turn");
    assert!(
        !text.contains("150\\ta line of the configuration file"),
        "the big output is gone"
    );
    for (i, request) in requests.iter().enumerate() {
        assert!(
            estimated_tokens(request) <= WINDOW,
            "request {i} passes the window: {} tokens",
            estimated_tokens(request)
        );
    }
    // Resuming sends the compacted conversation, not the full one.
    server.push(Reply::sse(openai_sse("Resumed.", &[])));
    let output = run(&sb, &server, "and then?", &["--continue"]);
    assert!(output.status.success(), "{output:?}");
    let requests = server.requests();
    let resumed = request_text(requests.last().unwrap());
    // The compacted conversation is a stable prefix: the next request starts with exactly the
    // messages the compacted one sent, so a provider's prompt cache keeps hitting.
    let before = requests[2].body["messages"].as_array().unwrap().clone();
    let after = requests.last().unwrap().body["messages"].as_array().unwrap().clone();
    assert_eq!(&after[..before.len()], &before[..], "a stable prefix after compaction");
    assert!(resumed.contains("[output pruned") && resumed.contains("GOAL: make the config parser strict"));
    assert!(!resumed.contains("150\\ta line of the configuration file"));
}

#[test]
fn a_too_long_error_is_recovered_by_compacting() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("First answer.", &[])));
    let output = run(&sb, &server, "GOAL: first", &[]);
    assert!(output.status.success(), "{output:?}");
    server.push(Reply::json(
        400,
        r#"{"error":{"message":"This model's maximum context length is 3000 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    ));
    server.push(Reply::sse(openai_sse("SUMMARY: one earlier turn.", &[])));
    server.push(Reply::sse(openai_sse("Recovered.", &[])));
    let output = run(&sb, &server, "second", &["--continue"]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("\"outcome\":\"done\"") && stdout.contains("Recovered."),
        "{stdout}"
    );
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        4,
        "first turn, the refused request, the summary, the retry"
    );
    let retry = request_text(&requests[3]);
    assert!(
        retry.contains("SUMMARY: one earlier turn.") && retry.contains("GOAL: first"),
        "{retry}"
    );
    assert!(retry.contains("second"), "the current turn is kept");
}

#[test]
fn cost_is_reported_only_where_the_price_is_known() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Priced.", &[])));
    let mut cmd = sb.brute(&server);
    std::fs::write(
        sb.home.path().join("config/config.toml"),
        "retry_base_ms = 1\n[models.\"mock-model\"]\ncontext_window = 8000\ninput_price = 1.0\noutput_price = 2.0\n",
    )
    .unwrap();
    let output = cmd.args(["-p", "hi", "--output-format", "json"]).output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let input = json["usage"]["input_tokens"].as_f64().unwrap();
    let out = json["usage"]["output_tokens"].as_f64().unwrap();
    let expected = (input * 1.0 + out * 2.0) / 1e6;
    assert!(
        (json["total_cost_usd"].as_f64().unwrap() - expected).abs() < 1e-12,
        "{json}"
    );

    let sb = Sandbox::new();
    server.push(Reply::sse(openai_sse("Unpriced.", &[])));
    let output = sb
        .brute(&server)
        .args(["-p", "hi", "--output-format", "json"])
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        json["total_cost_usd"].is_null(),
        "an unknown price gives no cost, never a guess: {json}"
    );
}

#[test]
fn undo_across_a_compaction_rewinds_the_full_conversation() {
    let sb = Sandbox::new();
    sb.write("big.txt", &"a line of the configuration file\n".repeat(200));
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("r", "read", r#"{"file_path":"big.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Read it.", &[])));
    assert!(run(&sb, &server, "GOAL: first", &[]).status.success());
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "t",
            "todo_write",
            r#"{"todos":[{"id":"1","content":"second step","status":"pending"}]}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("Planned it.", &[])));
    let output = run(&sb, &server, "second, after which we compact", &["--continue"]);
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("compaction_finished"));
    // Undo the second turn (compacted during it): the conversation goes back, in full.
    let mut undo = sb.bare();
    configure(&sb);
    let undo = undo.arg("undo").output().unwrap();
    assert!(undo.status.success(), "{undo:?}");
    assert!(
        String::from_utf8_lossy(&undo.stdout).contains("the conversation was rewound"),
        "{undo:?}"
    );
    // A bigger window now, so the rewound conversation is sent as it is (it would be
    // compacted again in the small one).
    server.push(Reply::sse(openai_sse("Back.", &[])));
    let mut cmd = sb.brute(&server);
    std::fs::write(
        sb.home.path().join("config/config.toml"),
        "retry_base_ms = 1\nsystem_prompt = \"test\"\ncontext_window = 100000\n",
    )
    .unwrap();
    let output = cmd
        .args(["-p", "after the undo", "--tools", "read,todo_write", "--continue"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = request_text(server.requests().last().unwrap());
    assert!(
        text.contains("150\\ta line of the configuration file"),
        "the conversation before the compaction, in full: {}",
        &text[..text.len().min(3000)]
    );
    assert!(
        !text.contains("second, after which we compact"),
        "the undone turn is gone"
    );
    assert!(!text.contains("[output pruned"), "not the compacted one");
}

/// Runs the first test's two turns against a server that reports its own window at `path`
/// (`context_window` not configured, a model the built-in table does not know): the second
/// turn is compacted before it passes the reported window.
fn compacted_by_the_reported_window(path: &str, report: &str) -> MockServer {
    let sb = Sandbox::new();
    sb.write("big.txt", &"a line of the configuration file\n".repeat(260));
    let server = MockServer::start();
    server.route(path, Reply::json(200, report.to_owned()));
    server.push(Reply::sse(openai_sse(
        "",
        &[("r", "read", r#"{"file_path":"big.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Read it.", &[])));
    server.push(Reply::sse(openai_sse("Next step done.", &[])));
    let config = sb.home.path().join("config/config.toml");
    let turn = |prompt: &str, more: &[&str]| {
        let mut cmd = sb.brute(&server);
        std::fs::write(
            &config,
            "retry_base_ms = 1\nsystem_prompt = \"test\"\ncompact_at = 0.7\n",
        )
        .unwrap();
        cmd.args(["-p", prompt, "--tools", "read", "--output-format", "events"])
            .args(more)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap()
    };
    let output = turn("GOAL: read the config", &[]);
    assert!(output.status.success(), "{output:?}");
    let output = turn("now check the tests", &["--continue"]);
    assert!(output.status.success(), "{output:?}");
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        events.iter().any(|e| e["type"] == "compaction_finished"),
        "compacted by the reported window: {events:?}"
    );
    let usage = events
        .iter()
        .rev()
        .find(|e| e["type"] == "context_usage")
        .expect("context usage");
    assert_eq!(usage["window"], WINDOW, "the meter shows the reported window");
    for request in server.requests() {
        assert!(estimated_tokens(&request) <= WINDOW);
    }
    server
}

#[test]
fn a_llama_cpp_server_reports_its_window() {
    let report = format!(r#"{{"default_generation_settings":{{"n_ctx":{WINDOW},"temperature":0.8}},"total_slots":1}}"#);
    let server = compacted_by_the_reported_window("/props", &report);
    let probes = server.probes();
    assert!(probes.iter().any(|p| p.method == "GET" && p.path == "/props"));
}

/// llama.cpp answering Anthropic Messages is asked for its window the same way.
#[test]
fn a_local_server_on_anthropic_messages_reports_its_window() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.route(
        "/props",
        Reply::json(200, r#"{"default_generation_settings":{"n_ctx":3000}}"#.to_owned()),
    );
    server.push(Reply::sse(support::anthropic_sse(None, "fine", &[])));
    let mut cmd = sb.std_command();
    cmd.env("ANTHROPIC_API_KEY", "test-key")
        .args([
            "--provider",
            "anthropic",
            "--model",
            "qwen",
            "--base-url",
            &server.url(""),
        ])
        .args(["-p", "x", "--output-format", "events"]);
    let output = cmd.output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let usage = first_context_usage(&output.stdout);
    assert_eq!(usage["window"], 3000, "{usage}");
    assert!(server.probes().iter().any(|p| p.method == "GET" && p.path == "/props"));
}

#[test]
fn an_ollama_server_reports_its_window() {
    let report = format!(
        r#"{{"parameters":"stop \"<|im_end|>\"\nnum_ctx {WINDOW}","model_info":{{"general.architecture":"qwen3","qwen3.context_length":40960}}}}"#
    );
    let server = compacted_by_the_reported_window("/api/show", &report);
    let probes = server.probes();
    let show = probes.iter().find(|p| p.path == "/api/show").expect("asked /api/show");
    assert_eq!(show.method, "POST");
    assert_eq!(show.body["model"], "mock-model", "asked about the model in use");
}

#[test]
fn prompt_caches_keep_hitting_after_a_compaction() {
    let sb = Sandbox::new();
    sb.write("big.txt", &"a line of the configuration file\n".repeat(300));
    sb.write("more.txt", &"a line of the test suite\n".repeat(250));
    let server = MockServer::start();
    server.prompt_cache();
    let config = sb.home.path().join("config/config.toml");
    let turn = |prompt: &str, more: &[&str]| {
        let mut cmd = sb.brute(&server);
        std::fs::write(
            &config,
            "retry_base_ms = 1\nsystem_prompt = \"test\"\ncontext_window = 8000\ncompact_at = 0.7\n",
        )
        .unwrap();
        let output = cmd
            .args(["-p", prompt, "--tools", "read", "--output-format", "events"])
            .args(more)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .collect::<Vec<_>>()
    };
    // A goal long enough to be worth caching (the person's messages survive compaction).
    let goal = format!("GOAL: {}", "make every config key strict and documented; ".repeat(120));
    server.push(Reply::sse(openai_sse(
        "",
        &[("r1", "read", r#"{"file_path":"big.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Read the config.", &[])));
    let first = turn(&goal, &[]);
    assert!(!first.iter().any(|e| e["type"] == "compaction_finished"));
    // The second turn's second request would pass 0.7 of the window: the first turn's read
    // is pruned.
    server.push(Reply::sse(openai_sse(
        "",
        &[("r2", "read", r#"{"file_path":"more.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Read the tests.", &[])));
    let second = turn("now the tests", &["--continue"]);
    assert!(
        second.iter().any(|e| e["type"] == "compaction_finished"),
        "compacted in the second turn: {:?}",
        second
            .iter()
            .chain(&first)
            .filter(|e| e["type"] == "context_usage")
            .map(|e| e["tokens"].clone())
            .collect::<Vec<_>>()
    );
    // The next turn starts with the compacted conversation: the provider's cache hits it.
    server.push(Reply::sse(openai_sse("Both done.", &[])));
    let third = turn("and then?", &["--continue"]);
    let requests = server.requests();
    let compacted = &requests[3];
    let compacted_tokens = (compacted.body["tools"].to_string().len()
        + compacted.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.to_string().len())
            .sum::<usize>())
        / 4;
    let cached = third
        .iter()
        .filter(|e| e["type"] == "usage")
        .map(|e| e["usage"]["cache_read_tokens"].as_u64().unwrap())
        .sum::<u64>();
    assert!(
        cached >= 1024 && cached as usize + 128 > compacted_tokens,
        "the whole compacted request ({compacted_tokens} tokens) is read from the cache, reported as {cached}"
    );
}

/// A server whose window report is not one to believe (over 1 MB) is not believed: no window.
#[test]
fn an_oversized_window_report_is_ignored() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let padding = "x".repeat(2 << 20);
    server.route(
        "/props",
        Reply::json(
            200,
            format!(r#"{{"default_generation_settings":{{"n_ctx":3000}},"pad":"{padding}"}}"#),
        ),
    );
    server.push(Reply::sse(openai_sse("fine", &[])));
    let output = sb
        .brute(&server)
        .args(["-p", "x", "--output-format", "events"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let usage = first_context_usage(&output.stdout);
    assert_eq!(usage["window"], Value::Null, "{usage}");
    assert!(server.probes().iter().any(|p| p.path == "/props"));
}

/// A conversation's first request does not wait for a local server's answer about its window
/// (nothing is there to compact yet): it leaves while `/props` is still unanswered, and the
/// usage after the answer reports the window all the same. Waiting for it would hold the
/// request until the probe's 2 s timeout and lose the window.
#[test]
fn the_first_request_does_not_wait_for_the_window_probe() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let props = support::Gate::default();
    let chat = support::Gate::default();
    server.route(
        "/props",
        Reply::json(200, r#"{"default_generation_settings":{"n_ctx":3000}}"#.to_owned()).after(&props),
    );
    server.push(Reply::sse(openai_sse("fine", &[])).after(&chat));
    let mut cmd = sb.brute(&server);
    cmd.args(["-p", "x", "--output-format", "events"]);
    let run = std::thread::spawn(move || cmd.output().unwrap());
    props.arrived();
    chat.arrived();
    props.release();
    chat.release();
    let output = run.join().unwrap();
    assert!(output.status.success(), "{output:?}");
    let usage = first_context_usage(&output.stdout);
    assert_eq!(usage["window"], 3000, "{usage}");
}

/// The first `context_usage` event of a run's `--output-format events` output.
fn first_context_usage(stdout: &[u8]) -> Value {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "context_usage")
        .expect("context usage")
}
