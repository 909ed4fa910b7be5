//! Tool calls a local model wrote as text, recovered as real calls: the real binary against
//! the strict mock replaying what a real llama.cpp server answered with Qwen2.5-Coder-0.5B
//! (`../shared/fixtures/llm-wire/local-llama/`, see its README).
//!
//! The recordings name the project `/home/user/demo`; each test puts its own project's path
//! there (inside the streamed text, whose tokens split the path) so the recovered `read`
//! reads the test's `hello.txt`.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::{MockServer, Reply, Sandbox};

const PROMPT: &str = "Use the read tool to read the file hello.txt, then tell me the secret word.";
const MODEL: &str = "qwen2.5-coder-0.5b-instruct";
const RECORDED_ROOT: &str = "/home/user/demo";
const ANSWER: &str = "The secret word is PLUM.";

/// A recorded Chat Completions stream with `from` replaced by `to` in its text, wherever the
/// model's tokens split it: the replacement goes to the chunk where `from` starts, and its
/// other pieces leave their chunks (which keep their boundaries otherwise).
fn relocate(sse: &str, from: &str, to: &str) -> String {
    let mut events: Vec<Option<Value>> = Vec::new();
    let mut pieces: Vec<(usize, String)> = Vec::new();
    for block in sse.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let data = block.trim().strip_prefix("data: ").expect("a data: line");
        let event: Option<Value> = (data != "[DONE]").then(|| serde_json::from_str(data).unwrap());
        if let Some(text) = event
            .as_ref()
            .and_then(|e| e["choices"][0]["delta"]["content"].as_str())
        {
            pieces.push((events.len(), text.to_owned()));
        }
        events.push(event);
    }
    let joined: String = pieces.iter().map(|(_, t)| t.as_str()).collect();
    let matches: Vec<usize> = joined.match_indices(from).map(|(i, _)| i).collect();
    let mut offset = 0;
    for (index, text) in &pieces {
        let mut out = String::new();
        for (i, c) in text.char_indices() {
            let at = offset + i;
            match matches.iter().find(|m| (**m..**m + from.len()).contains(&at)) {
                Some(m) if *m == at => out.push_str(to),
                Some(_) => {}
                None => out.push(c),
            }
        }
        offset += text.len();
        if let Some(event) = events[*index].as_mut() {
            event["choices"][0]["delta"]["content"] = json!(out);
        }
    }
    let mut body = String::new();
    for event in events {
        match event {
            Some(event) => body.push_str(&format!("data: {event}\n\n")),
            None => body.push_str("data: [DONE]\n\n"),
        }
    }
    body
}

/// The text a Chat Completions stream carries.
fn streamed_text(sse: &str) -> String {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect()
}

/// A project with the recording's `hello.txt`; returns it and its path as brute sees it.
fn project() -> (Sandbox, String) {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", ANSWER);
    let root = sandbox.project.path().canonicalize().unwrap().display().to_string();
    (sandbox, root)
}

/// `brute -p PROMPT` against `server` as the recorded run was made (model, prompt).
fn run(sandbox: &Sandbox, server: &MockServer, extra: &[&str]) -> assert_cmd::assert::Assert {
    let mut cmd = assert_cmd::Command::from_std(sandbox.std_command());
    cmd.timeout(support::RUN_DEADLINE)
        .args([
            "--provider",
            "openai",
            "--model",
            MODEL,
            "--base-url",
            &server.url("/v1"),
        ])
        .args(extra)
        .args(["-p", PROMPT]);
    cmd.assert()
}

fn local(dir: &Path, name: &str) -> String {
    support::fixture(dir, &format!("local-llama/{name}"))
}

#[test]
fn recorded_calls_written_as_text_are_run_and_the_turn_answers() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    for seed in 1..=4 {
        let (sandbox, root) = project();
        let recorded = local(&dir, &format!("read-task.0.response.seed{seed}.sse"));
        let server = MockServer::start();
        server.push(Reply::sse(relocate(&recorded, RECORDED_ROOT, &root)));
        server.push(Reply::sse(support::openai_sse(ANSWER, &[])));
        let out = run(&sandbox, &server, &[]).success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        assert_eq!(stdout.trim(), ANSWER, "seed {seed}: only the answer on stdout");

        let requests = server.requests();
        assert_eq!(
            requests.len(),
            2,
            "seed {seed}: the call ran and the model was asked again"
        );
        assert!(requests.iter().all(|r| r.refused.is_none()), "seed {seed}");
        let messages = requests[1].body["messages"].as_array().unwrap().clone();
        // What the model wrote, inside its fence or not, is the call's arguments text.
        let written = streamed_text(&relocate(&recorded, RECORDED_ROOT, &root));
        let start = written.find("\"arguments\":").unwrap() + "\"arguments\":".len();
        let end = written[..written.rfind('}').unwrap()].rfind('}').unwrap() + 1;
        let arguments = written[start..end].trim_start();
        let parsed: Value = serde_json::from_str(arguments).unwrap();
        assert_eq!(parsed["file_path"], format!("{root}/hello.txt"), "seed {seed}");
        assert_eq!(
            messages[2],
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_local_0", "type": "function",
                "function": {"name": "read", "arguments": arguments}}]}),
            "seed {seed}: a structured call, the text gone"
        );
        assert_eq!(messages[3]["role"], "tool");
        assert_eq!(messages[3]["tool_call_id"], "call_local_0");
        assert!(
            messages[3]["content"]
                .as_str()
                .unwrap()
                .starts_with("1\tThe secret word is PLUM."),
            "seed {seed}: {}",
            messages[3]["content"]
        );
        if seed <= 2 {
            // The call as the recorded run sent it (read-task.1.request.json).
            let expected: Value =
                serde_json::from_str(&local(&dir, "read-task.1.request.json").replace(RECORDED_ROOT, &root)).unwrap();
            assert_eq!(messages[2], expected["messages"][2], "seed {seed}");
        }
    }
}

#[test]
fn a_recovered_call_never_shows_as_streamed_text() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let (sandbox, root) = project();
    // Pretty-printed inside a fenced block: held back line by line until the fence closes.
    let recorded = local(&dir, "read-task.0.response.seed4.sse");
    let server = MockServer::start();
    server.push(Reply::sse(relocate(&recorded, RECORDED_ROOT, &root)));
    server.push(Reply::sse(support::openai_sse(ANSWER, &[])));
    let out = run(&sandbox, &server, &["--output-format", "events"]).success();
    let events: Vec<Value> = String::from_utf8_lossy(&out.get_output().stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, ANSWER);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool_call_started" && e["name"] == "read"),
        "{events:?}"
    );
}

#[test]
fn a_reply_ending_in_an_answer_object_stays_text() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let (sandbox, root) = project();
    // The model repeats the read as text, then writes `{"response": "..."}`: that object is
    // no tool call, so nothing is recovered and the reply is the answer as it was written.
    let server = MockServer::start();
    server.push(Reply::sse(relocate(
        &local(&dir, "read-task.0.response.seed2.sse"),
        RECORDED_ROOT,
        &root,
    )));
    let second = relocate(&local(&dir, "read-task.1.response.seed2.sse"), RECORDED_ROOT, &root);
    server.push(Reply::sse(second.clone()));
    let out = run(&sandbox, &server, &[]).success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert_eq!(stdout.trim_end(), streamed_text(&second));
    assert!(stdout.contains("{\"response\": \"The secret word is PLUM.\"}"));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn recorded_runs_of_several_calls_recover_what_the_text_ends_with() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let request: Value = serde_json::from_str(&local(&dir, "read-task.0.request.json")).unwrap();
    let tools: Vec<brute::provider::ToolSpec> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| brute::provider::ToolSpec {
            name: t["function"]["name"].as_str().unwrap().to_owned(),
            description: String::new(),
            parameters: t["function"]["parameters"].clone(),
        })
        .collect();
    let names = |seed: u32| {
        let text = streamed_text(&local(&dir, &format!("read-task.1.response.seed{seed}.sse")));
        brute::provider::text_calls::recover(&text, &tools, 1).map(|r| {
            (
                r.text.lines().count(),
                r.calls.into_iter().map(|c| c.name).collect::<Vec<_>>(),
            )
        })
    };
    // Eight lines, all naming advertised tools, but the sixth (`question`) has one `}` too
    // many: only the two calls after it end the text. Seven lines, the sixth no JSON
    // (`{...})}`): only the call after it.
    assert_eq!(names(3), Some((6, vec!["skill".to_owned(), "task".to_owned()])));
    assert_eq!(names(1), Some((6, vec!["shell".to_owned()])));
    // A call, then `{"response": ...}`: the text does not end with a call.
    assert_eq!(names(2), None);
}

#[test]
fn text_that_merely_contains_json_is_the_answer() {
    let cases = [
        // An example inside an explanation, with prose after it.
        "To read a file, send:\n{\"name\": \"read\", \"arguments\": {\"file_path\": \"hello.txt\"}}\nand brute runs it.",
        // A call of a tool that is not advertised.
        "{\"name\": \"launch_rockets\", \"arguments\": {\"count\": 3}}",
    ];
    for text in cases {
        let sandbox = Sandbox::new();
        let server = MockServer::start();
        server.push(Reply::sse(support::openai_sse(text, &[])));
        let out = sandbox.brute(&server).args(["-p", "hi"]).assert().success();
        assert_eq!(String::from_utf8_lossy(&out.get_output().stdout).trim_end(), text);
        assert_eq!(server.requests().len(), 1, "nothing ran: {text}");
    }
    // Advertised is what this run offers: `shell` is left out here.
    let sandbox = Sandbox::new();
    let server = MockServer::start();
    let text = "{\"name\": \"shell\", \"arguments\": {\"command\": \"ls\"}}";
    server.push(Reply::sse(support::openai_sse(text, &[])));
    let out = sandbox
        .brute(&server)
        .args(["--tools", "read", "-p", "hi"])
        .assert()
        .success();
    assert_eq!(String::from_utf8_lossy(&out.get_output().stdout).trim_end(), text);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn the_text_tool_calls_setting_turns_recovery_off() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    let (sandbox, root) = project();
    sandbox.write(".brute/config.toml", "text_tool_calls = false\n");
    let recorded = relocate(&local(&dir, "read-task.0.response.seed2.sse"), RECORDED_ROOT, &root);
    let server = MockServer::start();
    server.push(Reply::sse(recorded.clone()));
    let out = run(&sandbox, &server, &[]).success();
    assert_eq!(
        String::from_utf8_lossy(&out.get_output().stdout).trim_end(),
        streamed_text(&recorded),
        "off: the JSON is the answer"
    );
    assert_eq!(server.requests().len(), 1);
}

/// A recorded Anthropic Messages stream with `from` replaced by `to` in its text blocks,
/// wherever the tokens split it (as [`relocate`] does for Chat Completions).
fn relocate_anthropic(sse: &str, from: &str, to: &str) -> String {
    let mut blocks: Vec<(String, Value)> = Vec::new();
    for block in sse.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut event = String::new();
        let mut data = Value::Null;
        for line in block.lines() {
            if let Some(name) = line.strip_prefix("event: ") {
                event = name.trim().to_owned();
            } else if let Some(json) = line.strip_prefix("data: ") {
                data = serde_json::from_str(json.trim()).unwrap();
            }
        }
        blocks.push((event, data));
    }
    let pieces: Vec<(usize, String)> = blocks
        .iter()
        .enumerate()
        .filter_map(|(i, (_, d))| d["delta"]["text"].as_str().map(|t| (i, t.to_owned())))
        .collect();
    let joined: String = pieces.iter().map(|(_, t)| t.as_str()).collect();
    let matches: Vec<usize> = joined.match_indices(from).map(|(i, _)| i).collect();
    let mut offset = 0;
    for (index, text) in &pieces {
        let mut out = String::new();
        for (i, c) in text.char_indices() {
            let at = offset + i;
            match matches.iter().find(|m| (**m..**m + from.len()).contains(&at)) {
                Some(m) if *m == at => out.push_str(to),
                Some(_) => {}
                None => out.push(c),
            }
        }
        offset += text.len();
        blocks[*index].1["delta"]["text"] = json!(out);
    }
    blocks
        .into_iter()
        .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
        .collect()
}

/// llama.cpp answering Anthropic Messages (`/v1/messages`) writes the call as text too: each
/// recorded answer is recovered, the read runs, and the turn answers.
#[test]
fn a_local_server_on_anthropic_messages_gets_its_text_calls_recovered() {
    let Some(dir) = support::fixtures() else {
        return;
    };
    for seed in 1..=3 {
        let (sandbox, root) = project();
        let recorded = local(&dir, &format!("anthropic-read-task.0.response.seed{seed}.sse"));
        let server = MockServer::start();
        server.push(Reply::sse(relocate_anthropic(&recorded, "/tmp/rec/proj", &root)));
        server.push(Reply::sse(support::anthropic_sse(None, ANSWER, &[])));
        let mut cmd = assert_cmd::Command::from_std(sandbox.std_command());
        cmd.timeout(support::RUN_DEADLINE)
            .env("ANTHROPIC_API_KEY", "test-key")
            .args([
                "--provider",
                "anthropic",
                "--model",
                "qwen",
                "--base-url",
                &server.url(""),
            ])
            .args(["-p", PROMPT]);
        let out = cmd.assert().success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
        assert_eq!(stdout.trim(), ANSWER, "seed {seed}: only the answer on stdout");
        let requests = server.requests();
        assert_eq!(
            requests.len(),
            2,
            "seed {seed}: the call ran and the model was asked again"
        );
        let messages = requests[1].body["messages"].as_array().unwrap();
        let result = &messages[2]["content"][0];
        assert_eq!(result["type"], "tool_result", "seed {seed}: {}", requests[1].body);
        assert!(
            result["content"].to_string().contains("The secret word is PLUM."),
            "seed {seed}: {result}"
        );
    }
}
