//! brute driven by Claude Code's own Python SDK (`claude-agent-sdk` from PyPI, pinned in
//! `.ci/test-tools`), with brute as the SDK's CLI, against the mock provider: what programs
//! built on that SDK see. tests/fixtures/claude_sdk/drive.py prints each message the SDK parsed;
//! a message it could not parse would end the run with an error.

use crate::support;

use serde_json::{Value, json};
use support::{MockServer, Reply, Sandbox, openai_sse, tool_results};

/// Runs drive.py in `mode` with `prompts`; returns its exit status, its lines and its stderr.
fn drive(sb: &Sandbox, server: &MockServer, mode: &str, prompts: &[&str]) -> Option<(bool, Vec<Value>, String)> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude_sdk/drive.py");
    let mut cmd = support::python_driving_brute(sb, server, script)?;
    cmd.arg(mode)
        .arg(assert_cmd::cargo::cargo_bin("brute"))
        .arg(sb.project.path())
        .args(prompts);
    let output = assert_cmd::Command::from_std(cmd)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    Some((
        output.status.success(),
        lines,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

fn of_class<'a>(lines: &'a [Value], class: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["class"] == class).collect()
}

/// The first block of each message of `class`, as `(type, name or text)`.
fn blocks(lines: &[Value], class: &str) -> Vec<(String, String)> {
    of_class(lines, class)
        .iter()
        .flat_map(|m| m["blocks"].as_array().cloned().unwrap_or_default())
        .map(|b| {
            let what = b["name"].as_str().or(b["text"].as_str()).unwrap_or_default().to_owned();
            (b["type"].as_str().unwrap_or_default().to_owned(), what)
        })
        .collect()
}

fn reads_a_file(server: &MockServer) {
    server.push(Reply::sse(openai_sse(
        "",
        &[("call_1", "read", r#"{"file_path":"a.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("It says hello.", &[])));
}

#[test]
fn query_yields_the_messages_of_a_turn_that_reads_a_file() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.path().join("a.txt"), "hello from a file\n").unwrap();
    let server = MockServer::start();
    reads_a_file(&server);
    let Some((ok, lines, stderr)) = drive(&sb, &server, "query", &["what does a.txt say?"]) else {
        return;
    };
    assert!(ok, "{stderr}\n{lines:#?}");
    let system = of_class(&lines, "SystemMessage");
    let init = &system[0]["data"];
    assert_eq!(system[0]["subtype"], "init");
    assert_eq!(init["model"], "mock-model");
    assert!(init["tools"].as_array().unwrap().iter().any(|t| t == "read"), "{init}");
    for key in [
        "session_id",
        "cwd",
        "permissionMode",
        "mcp_servers",
        "slash_commands",
        "apiKeySource",
    ] {
        assert!(init.get(key).is_some(), "{key} in {init}");
    }
    assert_eq!(
        blocks(&lines, "AssistantMessage"),
        [
            ("tool_use".into(), "read".into()),
            ("text".into(), "It says hello.".into())
        ]
    );
    let user = of_class(&lines, "UserMessage");
    assert_eq!(user.len(), 1, "{lines:#?}");
    let result = &user[0]["blocks"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "call_1");
    assert!(
        result["content"].as_str().unwrap().contains("hello from a file"),
        "{result}"
    );
    assert_eq!(result["is_error"], false);
    let results = of_class(&lines, "ResultMessage");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["subtype"], "success");
    assert_eq!(results[0]["is_error"], false);
    assert_eq!(results[0]["result"], "It says hello.");
    assert_eq!(results[0]["num_turns"], 2);
    assert_eq!(results[0]["session_id"], init["session_id"]);
    assert!(results[0]["model_usage"]["mock-model"].is_object(), "{}", results[0]);
    // The order a program sees: init, the call, its result, the answer, the result.
    let order: Vec<&str> = lines.iter().map(|l| l["class"].as_str().unwrap()).collect();
    assert_eq!(
        order,
        [
            "SystemMessage",
            "AssistantMessage",
            "UserMessage",
            "AssistantMessage",
            "ResultMessage"
        ]
    );
    assert!(!stderr.contains("Traceback"), "{stderr}");
}

#[test]
fn a_sub_agents_messages_carry_the_id_of_its_task_call() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.path().join("a.txt"), "inner text\n").unwrap();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "call_t",
            "task",
            r#"{"task":"What does a.txt say?","description":"read a"}"#,
        )],
    )));
    // The sub-agent's own two requests, then the conversation's answer.
    server.push(Reply::sse(openai_sse(
        "",
        &[("sub_r", "read", r#"{"file_path":"a.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Report: inner text.", &[])));
    server.push(Reply::sse(openai_sse("The sub-agent says: inner text.", &[])));
    let Some((ok, lines, stderr)) = drive(&sb, &server, "query", &["ask a sub-agent"]) else {
        return;
    };
    assert!(ok, "{stderr}\n{lines:#?}");
    let inner: Vec<&Value> = lines.iter().filter(|l| l["parent"] == "call_t").collect();
    let inner_blocks: Vec<&str> = inner.iter().map(|l| l["blocks"][0]["type"].as_str().unwrap()).collect();
    assert_eq!(inner_blocks, ["tool_use", "tool_result", "text"], "{lines:#?}");
    assert_eq!(inner[0]["blocks"][0]["name"], "read");
    let outer: Vec<&Value> = lines
        .iter()
        .filter(|l| l["class"] == "AssistantMessage" && l["parent"].is_null())
        .collect();
    assert_eq!(outer[0]["blocks"][0]["name"], "task");
    assert_eq!(
        outer.last().unwrap()["blocks"][0]["text"],
        "The sub-agent says: inner text."
    );
}

#[test]
fn partial_messages_come_as_stream_events() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.path().join("a.txt"), "hello\n").unwrap();
    let server = MockServer::start();
    reads_a_file(&server);
    let Some((ok, lines, stderr)) = drive(&sb, &server, "partial", &["what does a.txt say?"]) else {
        return;
    };
    assert!(ok, "{stderr}");
    let events: Vec<&str> = of_class(&lines, "StreamEvent")
        .iter()
        .map(|l| l["event"].as_str().unwrap())
        .collect();
    for kind in [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_stop",
    ] {
        assert!(events.contains(&kind), "{kind} in {events:?}");
    }
    // The whole messages still come.
    assert_eq!(of_class(&lines, "AssistantMessage").len(), 2);
    assert_eq!(of_class(&lines, "ResultMessage").len(), 1);
}

#[test]
fn a_client_keeps_two_queries_in_one_session() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("The first answer.", &[])));
    server.push(Reply::sse(openai_sse("The second answer.", &[])));
    let Some((ok, lines, stderr)) = drive(&sb, &server, "client", &["the first question", "the second question"])
    else {
        return;
    };
    assert!(ok, "{stderr}\n{lines:#?}");
    let results = of_class(&lines, "ResultMessage");
    assert_eq!(results.len(), 2, "{lines:#?}");
    assert_eq!(results[0]["result"], "The first answer.");
    assert_eq!(results[1]["result"], "The second answer.");
    assert_eq!(results[0]["session_id"], results[1]["session_id"]);
    // The second request carries the first turn: one conversation, one process; set_model
    // took effect between them.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["model"], "mock-model");
    assert_eq!(requests[1].body["model"], "second-model");
    let second = requests[1].body["messages"].to_string();
    assert!(
        second.contains("the first question")
            && second.contains("The first answer.")
            && second.contains("the second question"),
        "{second}"
    );
}

#[test]
fn can_use_tool_denies_a_write_and_nothing_is_written() {
    let sb = Sandbox::new();
    // drive.py runs this one in read-only mode, where a write in the project asks.
    let outside = sb.project.path().join("asked.txt");
    let server = MockServer::start();
    let args = serde_json::json!({"file_path": outside.display().to_string(), "content": "x\n"}).to_string();
    server.push(Reply::sse(openai_sse("", &[("call_w", "write", &args)])));
    server.push(Reply::sse(openai_sse("I could not write it.", &[])));
    let Some((ok, lines, stderr)) = drive(&sb, &server, "deny", &["write asked.txt"]) else {
        return;
    };
    assert!(ok, "{stderr}\n{lines:#?}");
    let asked = of_class(&lines, "callback");
    assert_eq!(asked.len(), 1, "{lines:#?}");
    assert_eq!(asked[0]["tool"], "write");
    assert_eq!(asked[0]["tool_use_id"], "call_w");
    assert_eq!(asked[0]["input"]["file_path"], outside.display().to_string());
    assert!(!outside.exists(), "a denied write wrote");
    // The model is told why, and the result lists the denial.
    let requests = server.requests();
    let told = tool_results(&requests[1]);
    assert!(told[0].1.contains("not allowed by the test"), "{told:?}");
    let result = of_class(&lines, "ResultMessage")[0];
    assert_eq!(result["denials"][0]["tool_name"], "write", "{result}");
    assert_eq!(result["denials"][0]["tool_use_id"], "call_w");
}

#[test]
fn a_hook_the_sdk_registers_runs_for_its_tools_and_its_deny_holds() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.path().join("a.txt"), "hello\n").unwrap();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("call_r", "read", r#"{"file_path":"a.txt"}"#),
            ("call_s", "shell", r#"{"command":"touch hooked.txt"}"#),
        ],
    )));
    server.push(Reply::sse(openai_sse("The hook said no.", &[])));
    let Some((ok, lines, stderr)) = drive(&sb, &server, "hooks", &["read and touch"]) else {
        return;
    };
    assert!(ok, "{stderr}\n{lines:#?}");
    // The matcher `Bash` is brute's `shell`: the read does not reach the hook.
    let hooked = of_class(&lines, "hook");
    assert_eq!(hooked.len(), 1, "{lines:#?}");
    assert_eq!(hooked[0]["event"], "PreToolUse");
    assert_eq!(hooked[0]["tool"], "shell");
    assert_eq!(hooked[0]["input"]["command"], "touch hooked.txt");
    assert!(
        !sb.project.path().join("hooked.txt").exists(),
        "the hook's deny did not hold"
    );
    let told = tool_results(&server.requests()[1]);
    let shell = told.iter().find(|(id, _)| id == "call_s").unwrap();
    assert!(shell.1.contains("no shell in this test"), "{told:?}");
    let read = told.iter().find(|(id, _)| id == "call_r").unwrap();
    assert!(read.1.contains("hello"), "{told:?}");
}

/// A hook holds inside a `task` sub-agent too: its calls are asked of the program (here a
/// deny on `Read`, since a sub-agent's tools are read-only).
#[test]
fn a_hook_the_sdk_registers_holds_inside_a_sub_agent() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.path().join("secret.txt"), "the secret\n").unwrap();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("call_t", "task", r#"{"task":"read secret.txt","description":"read"}"#)],
    )));
    server.push(Reply::sse(openai_sse(
        "",
        &[("sub_r", "read", r#"{"file_path":"secret.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Report: it was refused.", &[])));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    let Some((ok, lines, stderr)) = drive(&sb, &server, "hooks_read", &["delegate"]) else {
        return;
    };
    assert!(ok, "{stderr}\n{lines:#?}");
    let hooked = of_class(&lines, "hook");
    assert_eq!(hooked.len(), 1, "{lines:#?}");
    assert_eq!(hooked[0]["tool"], "read");
    // The sub-agent's next request carries the refusal, not the file.
    let told = tool_results(&server.requests()[2]);
    assert!(
        told[0].1.contains("no shell in this test") && !told[0].1.contains("the secret"),
        "a sub-agent's call passed the hook: {told:?}"
    );
}

/// stdin ends while an approval waits for the program (or before one is asked): nobody can
/// answer, so the call is denied and the run ends, instead of waiting for ever.
#[test]
fn an_approval_asked_after_stdin_ended_is_denied_and_the_run_ends() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("call_w", "write", r#"{"file_path":"asked.txt","content":"x\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Not written.", &[])));
    let input = r#"{"type":"user","message":{"role":"user","content":"write it"}}"#;
    let output = sb
        .brute(&server)
        .args([
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
            "--permission-prompt-tool",
            "stdio",
            "--sandbox",
            "read-only",
        ])
        .write_stdin(format!("{input}\n"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(!sb.project.path().join("asked.txt").exists());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let results: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "result")
        .collect();
    assert_eq!(results.len(), 1, "{stdout}");
    assert_eq!(results[0]["permission_denials"][0]["tool_name"], "write");
}

/// `-p TEXT` with stream-json input is the first turn; every turn gets one result, and the
/// end of stdin adds none.
#[test]
fn a_prompt_and_stdins_turns_get_one_result_each() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("First.", &[])));
    server.push(Reply::sse(openai_sse("Second.", &[])));
    let input = r#"{"type":"user","message":{"role":"user","content":"and this"}}"#;
    let output = sb
        .brute(&server)
        .args([
            "-p",
            "this",
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
        ])
        .write_stdin(format!("{input}\n"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let results: Vec<String> = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "result")
        .map(|l| l["result"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(results, ["First.", "Second."], "{stdout}");
}

#[test]
fn interrupt_stops_a_long_command_and_the_session_goes_on() {
    let sb = Sandbox::new();
    let fifo = sb.project.path().join("ready.fifo");
    support::mkfifo(&fifo);
    let server = MockServer::start();
    let command = serde_json::json!({"command": "echo go > ready.fifo; sleep 612345"}).to_string();
    server.push(Reply::sse(openai_sse("", &[("call_s", "shell", &command)])));
    server.push(Reply::sse(openai_sse("Still here.", &[])));
    let Some((ok, lines, stderr)) = drive(&sb, &server, "interrupt", &["run the long command", "are you there?"])
    else {
        return;
    };
    assert!(ok, "{stderr}\n{lines:#?}");
    let running = of_class(&lines, "running");
    assert!(
        !running[0]["processes"].as_array().unwrap().is_empty(),
        "the command ran: {lines:#?}"
    );
    let after = of_class(&lines, "after");
    assert_eq!(after[0]["processes"], serde_json::json!([]), "the command is gone");
    let results = of_class(&lines, "ResultMessage");
    assert_eq!(results.len(), 2, "{lines:#?}");
    assert_eq!(results[0]["subtype"], "error_during_execution");
    assert_eq!(results[1]["result"], "Still here.");
    // Only the second prompt reached the model after the interrupt; the call got a result.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(tool_results(&requests[1]).len(), 1);
}

/// What a careless program writes on stdin is refused line by line and the session goes on:
/// a line that is not JSON and one of an unknown type (a note on stderr each), a control
/// request brute does not know (an error response), SDK hooks (refused at initialize); the
/// user message after them is answered, and stdin's end ends the run with 0.
#[test]
fn a_careless_program_on_stdin_gets_errors_and_the_session_goes_on() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Answered.", &[])));
    let input = [
        "not json at all",
        r#"{"type":"assistant","message":{}}"#,
        r#"{"type":"control_request","request_id":"r1","request":{"subtype":"rewind_files"}}"#,
        r#"{"type":"control_request","request_id":"r2","request":{"subtype":"initialize","hooks":{"PreToolUse":[{"matcher":null,"hookCallbackIds":["h1"]}]}}}"#,
        r#"{"type":"control_request","request_id":"r3","request":{"subtype":"set_permission_mode","mode":"bypassPermissions"}}"#,
        r#"{"type":"user","message":{"role":"user","content":"hello"},"parent_tool_use_id":null,"session_id":""}"#,
    ]
    .join("\n");
    let output = sb
        .brute(&server)
        .args([
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
            "--verbose",
        ])
        .write_stdin(input + "\n")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not JSON") && stderr.contains("`assistant`"),
        "{stderr}"
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let response = |id: &str| {
        lines
            .iter()
            .find(|l| l["type"] == "control_response" && l["response"]["request_id"] == id)
            .unwrap_or_else(|| panic!("no response to {id}: {lines:#?}"))["response"]
            .clone()
    };
    assert_eq!(response("r1")["subtype"], "error");
    assert_eq!(response("r2")["subtype"], "error");
    assert!(response("r2")["error"].as_str().unwrap().contains("hooks"));
    assert_eq!(response("r3")["subtype"], "error");
    let result = lines.iter().find(|l| l["type"] == "result").unwrap();
    assert_eq!(result["result"], "Answered.");
    assert_eq!(lines.last().unwrap()["type"], "result");
}

/// The flags that only make sense together are refused before anything starts.
#[test]
fn stream_json_input_flags_that_do_not_fit_are_usage_errors() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    for args in [
        &["--input-format", "stream-json"][..],
        &["-p", "x", "--permission-prompt-tool", "stdio"],
        &["-p", "x", "--include-partial-messages"],
    ] {
        let output = sb.brute(&server).args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
    }
    assert!(server.requests().is_empty());
}

#[test]
fn an_image_in_a_stream_json_message_reaches_the_model() {
    use base64::Engine;
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("A picture.", &[])));
    let data = base64::engine::general_purpose::STANDARD.encode(support::png(4, 3));
    let message = json!({"type": "user", "message": {"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        // A URL would be fetched by brute: left out, and said so.
        {"type": "image", "source": {"type": "url", "url": "http://127.0.0.1:9/x.png"}},
    ]}});
    let mut cmd = sb.brute(&server);
    // mock-model is in no table: the setting says it sees.
    std::fs::write(
        sb.home.path().join("config/config.toml"),
        "retry_base_ms = 1\n[models.\"mock-model\"]\nvision = true\n",
    )
    .unwrap();
    let output = cmd
        .args(["--output-format", "stream-json", "--input-format", "stream-json"])
        .write_stdin(format!("{message}\n"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let notice = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["subtype"] == "notice")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        notice["message"].as_str().unwrap().starts_with("1 content block(s)"),
        "{notice}"
    );
    let requests = server.requests();
    let parts = requests[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "user")
        .unwrap()["content"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(support::has_png_part(&parts), "{parts:?}");
    assert!(
        parts
            .iter()
            .any(|p| p["text"].as_str().is_some_and(|t| t.contains("what is this?"))),
        "{parts:?}"
    );
}
