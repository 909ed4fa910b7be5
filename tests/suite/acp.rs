//! `brute acp` driven by the Python ACP SDK (`agent-client-protocol` from PyPI, pinned in
//! `.ci/test-tools`) as an editor would, against the mock provider: tests/fixtures/acp/drive.py
//! goes through a session (a read, a rejected write, a cancelled command, a later prompt, then
//! `session/load` in a second process) and prints what it saw.

use crate::support;

use serde_json::{Value, json};
use support::{MockServer, Reply, Sandbox, openai_sse, tool_results};

/// Runs the editor script `name` (tests/fixtures/acp/) against `brute acp` in `sb`; `None`
/// (skip) outside CI when the ACP SDK is missing.
fn editor(sb: &Sandbox, server: &MockServer, name: &str) -> Option<std::process::Output> {
    editor_with(sb, server, name, "")
}

/// The lines the editor script printed, once it succeeded (else its stderr and lines).
fn succeeded(output: &std::process::Output) -> Vec<Value> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(output.status.success(), "{stderr}\n{lines:#?}");
    lines
}

/// [`editor`] with `config` added to the person's config.toml.
fn editor_with(sb: &Sandbox, server: &MockServer, name: &str, config: &str) -> Option<std::process::Output> {
    editor_run(sb, server, name, config, &[])
}

/// [`editor_with`], the script given `args` after the project.
fn editor_run(
    sb: &Sandbox,
    server: &MockServer,
    name: &str,
    config: &str,
    args: &[&str],
) -> Option<std::process::Output> {
    let script = format!("{}/tests/fixtures/acp/{name}", env!("CARGO_MANIFEST_DIR"));
    let mut cmd = support::python_driving_brute(sb, server, &script)?;
    let file = sb.home.path().join("config/config.toml");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(config);
    std::fs::write(&file, text).unwrap();
    if config.contains("# buffer only") {
        cmd.env("BUFFER_ONLY", "1");
    }
    if let Some(server) = config.strip_prefix("# mcp server ") {
        cmd.env("MCP_SERVER", server.trim());
    }
    cmd.arg(assert_cmd::cargo::cargo_bin("brute"))
        .arg(sb.project.path())
        .args(args);
    let output = assert_cmd::Command::from_std(cmd)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    Some(output)
}

#[test]
fn an_editor_reads_is_asked_cancels_and_loads_the_session_again() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.path().join("a.txt"), "hello from a file\n").unwrap();
    support::mkfifo(&sb.project.path().join("ready.fifo"));
    let server = MockServer::start();
    // 1. a read, then the answer.
    server.push(Reply::sse(openai_sse(
        "",
        &[("call_r", "read", r#"{"file_path":"a.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("It says hello.", &[])));
    // 2. a write, in read-only mode: asked, rejected.
    server.push(Reply::sse(openai_sse(
        "",
        &[("call_w", "write", r#"{"file_path":"b.txt","content":"b\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("I was not allowed.", &[])));
    // 3. a long command, cancelled once it runs.
    let command = json!({"command": "echo go > ready.fifo; sleep 612345"}).to_string();
    server.push(Reply::sse(openai_sse("", &[("call_s", "shell", &command)])));
    // 4. the last prompt.
    server.push(Reply::sse(openai_sse("Still here.", &[])));
    let Some(output) = editor(&sb, &server, "drive.py") else {
        return;
    };
    let lines = succeeded(&output);

    // initialize: honest capabilities.
    let init = &lines.iter().find(|l| l.get("initialize").is_some()).unwrap()["initialize"];
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(init["agentCapabilities"]["promptCapabilities"]["image"], true);
    assert_eq!(init["agentCapabilities"]["promptCapabilities"]["embeddedContext"], true);
    let session = &lines
        .iter()
        .find(|l| l.get("session").is_some() && l.get("update").is_none())
        .unwrap()["session"];
    let modes: Vec<&str> = session["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["read-only", "workspace-write", "full-access", "plan"]);
    assert_eq!(session["modes"]["currentModeId"], "workspace-write");

    // The turns, split at their stop lines.
    let stops: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.get("stop").is_some())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(stops.len(), 4, "{lines:#?}");
    let stop = |n: usize| lines[stops[n]]["stop"].as_str().unwrap();
    assert_eq!(
        [stop(0), stop(1), stop(2), stop(3)],
        ["end_turn", "end_turn", "cancelled", "end_turn"]
    );
    let updates =
        |from: usize, to: usize| -> Vec<&Value> { lines[from..to].iter().filter_map(|l| l.get("update")).collect() };

    // 1. tool_call (read, with its location and raw input), its completed update with the
    // file's text, and the answer's chunks.
    let first = updates(0, stops[0]);
    let call = first.iter().find(|u| u["sessionUpdate"] == "tool_call").unwrap();
    assert_eq!(call["toolCallId"], "call_r");
    assert_eq!(call["kind"], "read");
    assert_eq!(call["status"], "in_progress");
    assert_eq!(
        call["locations"][0]["path"],
        sb.project.path().join("a.txt").display().to_string(),
        "absolute, as ACP wants"
    );
    assert_eq!(call["rawInput"]["file_path"], "a.txt");
    // The editor's unsaved text is what the model reads, asked through fs/read_text_file.
    let done = first.iter().find(|u| u["sessionUpdate"] == "tool_call_update").unwrap();
    assert_eq!(done["status"], "completed");
    assert!(
        done["content"].to_string().contains("hello from the unsaved buffer"),
        "{done}"
    );
    let asked_for = lines.iter().find(|l| l.get("read_text_file").is_some()).unwrap();
    assert_eq!(
        asked_for["read_text_file"],
        sb.project.path().join("a.txt").display().to_string()
    );
    assert!(
        tool_results(&server.requests()[1])[0]
            .1
            .contains("1\thello from the unsaved buffer")
    );
    let said: String = first
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(said, "It says hello.");

    // 2. the mode changed, the write asked with brute's choices, was rejected, wrote nothing.
    let second = updates(stops[0], stops[1]);
    assert!(
        second
            .iter()
            .any(|u| u["sessionUpdate"] == "current_mode_update" && u["currentModeId"] == "read-only"),
        "{second:#?}"
    );
    let asked: Vec<&Value> = lines[stops[0]..stops[1]]
        .iter()
        .filter(|l| l.get("permission").is_some())
        .collect();
    assert_eq!(asked.len(), 1, "{lines:#?}");
    assert_eq!(asked[0]["permission"]["toolCallId"], "call_w");
    assert_eq!(asked[0]["permission"]["rawInput"]["file_path"], "b.txt");
    let kinds: Vec<&str> = asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "allow_always", "reject_once"]);
    assert!(!sb.project.path().join("b.txt").exists(), "a rejected write wrote");
    let failed = second
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update")
        .unwrap();
    assert_eq!(failed["status"], "failed");

    // 3. cancelled while the command ran: it ran, and it is gone.
    let running = lines.iter().find(|l| l.get("running").is_some()).unwrap();
    assert!(!running["running"].as_array().unwrap().is_empty(), "the command ran");
    let after = lines.iter().find(|l| l.get("after").is_some()).unwrap();
    assert_eq!(after["after"], json!([]), "the command is gone");

    // 4. the last prompt's request carries the earlier turns, the cancelled call's result too.
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    let last = requests[5].body["messages"].to_string();
    assert!(
        last.contains("what does a.txt say?") && last.contains("It says hello."),
        "{last}"
    );
    assert!(tool_results(&requests[5]).iter().any(|(id, _)| id == "call_s"));

    // 5. session/load in a new process replays the conversation before it answers.
    let loaded = lines.iter().position(|l| l.get("loaded").is_some()).unwrap();
    let replayed: Vec<&Value> = lines[stops[3]..loaded].iter().filter_map(|l| l.get("update")).collect();
    let users: Vec<&str> = replayed
        .iter()
        .filter(|u| u["sessionUpdate"] == "user_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        users,
        [
            "what does a.txt say?",
            "write b.txt",
            "run the long command",
            "are you there?"
        ]
    );
    assert!(
        replayed
            .iter()
            .any(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "call_r")
    );
    assert_eq!(lines[loaded]["loaded"]["modes"]["currentModeId"], "workspace-write");
}

/// What a careless or hostile client writes gets a JSON-RPC error, and the agent goes on: a
/// line that is not JSON, an unknown method, a prompt to a session that does not exist, a
/// relative directory, an answer nobody asked for. Then stdin ends and brute exits 0.
#[test]
fn a_careless_client_gets_errors_and_the_agent_goes_on() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let input = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
        "this is not json",
        r#"{"jsonrpc":"2.0","id":2,"method":"session/fly","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}"#,
        r#"{"jsonrpc":"2.0","id":"brute-99","result":{"outcome":{"outcome":"cancelled"}}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"session/set_mode","params":{"sessionId":"nope","modeId":"plan"}}"#,
        // A session id that would lead out of brute's session store.
        &format!(
            r#"{{"jsonrpc":"2.0","id":6,"method":"session/load","params":{{"sessionId":"../../../outside","cwd":{},"mcpServers":[]}}}}"#,
            serde_json::to_string(&sb.project.path()).unwrap()
        ),
    ]
    .join("\n");
    let output = sb.brute(&server).arg("acp").write_stdin(input + "\n").output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let replies: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let code = |id: Value| {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["error"]["code"].clone())
            .unwrap_or_else(|| panic!("no reply to {id}: {replies:#?}"))
    };
    assert_eq!(replies[0]["result"]["protocolVersion"], 1);
    assert_eq!(code(Value::Null), -32700);
    assert_eq!(code(json!(2)), -32601);
    assert_eq!(code(json!(3)), -32602);
    assert_eq!(code(json!(4)), -32602);
    assert_eq!(code(json!(5)), -32602);
    assert!(code(json!(6)).is_i64(), "refused: {replies:#?}");
    assert_eq!(replies.len(), 7, "the stray answer gets no reply: {replies:#?}");
    assert!(server.requests().is_empty());
}

/// A prompt sent while a turn runs, then a cancel (Zed's "send while the agent works"): the
/// running turn answers `cancelled`, and the prompt queued behind it still runs and answers.
#[test]
fn a_prompt_queued_behind_a_cancelled_turn_still_runs() {
    let sb = Sandbox::new();
    support::mkfifo(&sb.project.path().join("ready.fifo"));
    let server = MockServer::start();
    let command = json!({"command": "echo go > ready.fifo; sleep 612346"}).to_string();
    server.push(Reply::sse(openai_sse("", &[("call_s", "shell", &command)])));
    server.push(Reply::sse(openai_sse("The second one.", &[])));
    let Some(output) = editor(&sb, &server, "queued_prompt.py") else {
        return;
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [r#"{"first": "cancelled"}"#, r#"{"second": "end_turn"}"#],
        "{output:?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].body["messages"].to_string().contains("and then this"));
}

/// SIGTERM ends `brute acp` like the shell's convention (143), its sessions shut down first;
/// stdin staying open does not keep it alive.
#[test]
fn sigterm_ends_the_agent_with_143() {
    use std::io::{BufRead, Write};
    let sb = Sandbox::new();
    let server = MockServer::start();
    let mut child = sb
        .std_brute(&server)
        .arg("acp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let new = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                     "params": {"cwd": sb.project.path(), "mcpServers": []}});
    writeln!(stdin, "{new}").unwrap();
    // Its answer (after any updates) says the session and its conversation are up.
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let reply = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "brute acp ended early");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 1 {
            break message;
        }
    };
    assert!(reply["result"]["sessionId"].is_string(), "{reply}");
    // SAFETY: signalling a child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _deadline = support::deadline(&child, 60);
    assert_eq!(child.wait().unwrap().code(), Some(143));
    drop(stdin);
}

#[test]
fn an_editor_sends_a_picture_and_answers_questions_in_one_form() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    // 1. a prompt with a picture: answered at once.
    server.push(Reply::sse(openai_sse("A red picture.", &[])));
    // 2. the model asks two questions, then answers.
    let questions = json!({"questions": [
        {"question": "Which colour?", "options": [{"label": "red"}, {"label": "blue"}]},
        {"question": "Which sizes?", "header": "Sizes", "multiple": true,
         "options": [{"label": "S"}, {"label": "M"}, {"label": "L"}]},
    ]})
    .to_string();
    server.push(Reply::sse(openai_sse("", &[("call_q", "question", &questions)])));
    server.push(Reply::sse(openai_sse("Blue, S and L.", &[])));
    // mock-model is in no table: the setting says it sees.
    let config = "[models.\"mock-model\"]\nvision = true\n";
    let Some(output) = editor_with(&sb, &server, "forms_and_images.py", config) else {
        return;
    };
    let lines = succeeded(&output);
    let stops: Vec<&Value> = lines.iter().filter_map(|l| l.get("stop")).collect();
    assert_eq!(stops, [&json!("end_turn"), &json!("end_turn")], "{lines:#?}");

    // The picture reached the model as an image, with the prompt's text.
    let requests = server.requests();
    let user = &requests[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "user")
        .unwrap()["content"];
    let parts = user.as_array().unwrap_or_else(|| panic!("{user}"));
    assert!(
        parts
            .iter()
            .any(|p| p["type"] == "text" && p["text"].as_str().unwrap().contains("what is in this picture?")),
        "{parts:?}"
    );
    assert!(support::has_png_part(parts), "{parts:?}");
    // Kept where commands cannot write, private to the person.
    let pasted: Vec<_> = std::fs::read_dir(sb.home.path().join("data/pasted"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(pasted.len(), 1, "{pasted:?}");
    assert!(pasted[0].file_name().unwrap().to_str().unwrap().starts_with("editor-"));
    assert!(pasted[0].extension().is_some_and(|e| e == "png"));

    // Both questions came as one form: a single-select and a multi-select.
    let asked: Vec<&Value> = lines.iter().filter_map(|l| l.get("elicitation")).collect();
    assert_eq!(asked.len(), 1, "{lines:#?}");
    assert_eq!(asked[0]["message"], "The model asks 2 questions.");
    let schema = &asked[0]["mode"]["requestedSchema"];
    assert_eq!(schema["properties"]["q1"]["description"], "Which colour?");
    assert_eq!(schema["properties"]["q1"]["oneOf"][1]["const"], "blue");
    assert_eq!(schema["properties"]["q2"]["title"], "Sizes");
    assert_eq!(schema["properties"]["q2"]["items"]["anyOf"][2]["const"], "L");
    assert_eq!(schema["required"], json!(["q1", "q2"]));
    // The form's answers are the tool's result.
    let results = tool_results(&requests[2]);
    assert_eq!(results[0].0, "call_q");
    assert!(results[0].1.contains("1. Which colour? → blue"), "{}", results[0].1);
    assert!(results[0].1.contains("2. Which sizes? → S, L"), "{}", results[0].1);
    assert!(
        !lines.iter().any(|l| l.get("permission").is_some()),
        "a client with forms is not asked through permission options"
    );
}

#[test]
fn slash_commands_from_the_editor_undo_a_turn_and_show_its_diff() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.path().join("keep.txt"), "kept\n").unwrap();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("call_w", "write", r#"{"file_path":"c.txt","content":"new\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Wrote it.", &[])));
    server.push(Reply::sse(openai_sse("A prompt, then.", &[])));
    let prompts = ["write c.txt", "/diff", "/undo", "/redo now"];
    let Some(output) = editor_run(&sb, &server, "commands.py", "", &prompts) else {
        return;
    };
    let lines = succeeded(&output);
    let stops: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.get("stop").is_some())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(stops.len(), 4, "every prompt is answered: {lines:#?}");
    assert!(stops.iter().all(|&i| lines[i]["stop"] == "end_turn"), "{lines:#?}");

    // The editor is offered the built-in commands.
    let offered = lines
        .iter()
        .filter_map(|l| l.get("update"))
        .find(|u| u["sessionUpdate"] == "available_commands_update")
        .unwrap();
    let names: Vec<&str> = offered["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names[..5],
        ["undo", "redo", "diff", "compact", "clear"],
        "then custom ones"
    );
    assert!(names.contains(&"init"), "{names:?}");

    let text = |from: usize, to: usize| -> String {
        lines[from..to]
            .iter()
            .filter_map(|l| l.get("update"))
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
            .collect()
    };
    // /diff shows the turn's change.
    let diff = text(stops[0], stops[1]);
    assert!(diff.contains("+new"), "{diff}");
    // /undo asks, is told "the file changes and the turn", and takes both back.
    let asked: Vec<&Value> = lines[stops[1]..stops[2]]
        .iter()
        .filter(|l| l.get("permission").is_some())
        .collect();
    assert_eq!(asked.len(), 1, "{lines:#?}");
    let options: Vec<&str> = asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["files", "turn", "cancel"]);
    assert!(asked[0]["permission"].to_string().contains("c.txt"), "{}", asked[0]);
    assert!(!sb.project.path().join("c.txt").exists(), "undone");
    assert_eq!(
        std::fs::read_to_string(sb.project.path().join("keep.txt")).unwrap(),
        "kept\n"
    );
    // A command with an argument it does not take is a prompt: the model gets it.
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{lines:#?}");
    assert!(requests[2].body.to_string().contains("/redo now"));
}

#[test]
fn edits_go_through_the_editors_buffer_while_no_command_runs_and_undo_sees_them() {
    let sb = Sandbox::new();
    let a = sb.project.path().join("a.txt");
    std::fs::write(&a, "one\ntwo\n").unwrap();
    let server = MockServer::start();
    // 1. a patch of the open file: made on the editor's unsaved text, written through it.
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "call_p",
            "patch",
            r#"{"file_path":"a.txt","old_string":"one","new_string":"ONE"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("Patched.", &[])));
    // 2. a background command starts, then a write: with a command alive, brute writes it.
    let background = json!({"command": "sleep 612345", "run_in_background": true}).to_string();
    server.push(Reply::sse(openai_sse("", &[("call_b", "shell", &background)])));
    server.push(Reply::sse(openai_sse(
        "",
        &[("call_w", "write", r#"{"file_path":"a.txt","content":"three\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Wrote.", &[])));
    let prompts = ["patch a.txt", "start it, then write a.txt", "/undo", "/undo"];
    let Some(output) = editor_run(&sb, &server, "writes.py", "", &prompts) else {
        return;
    };
    let lines = succeeded(&output);
    let writes: Vec<&Value> = lines.iter().filter(|l| l.get("write_text_file").is_some()).collect();
    assert_eq!(writes.len(), 1, "only the write made while no command ran: {lines:#?}");
    assert_eq!(writes[0]["write_text_file"], a.display().to_string());
    assert_eq!(
        writes[0]["content"], "ONE\ntwo (unsaved)\n",
        "the patch of the editor's text"
    );
    let disk: Vec<&str> = lines.iter().filter_map(|l| l["disk"].as_str()).collect();
    assert_eq!(
        disk,
        ["ONE\ntwo (unsaved)\n", "three\n", "ONE\ntwo (unsaved)\n", "one\ntwo\n"],
        "each undo restores what was on disk before its turn: {lines:#?}"
    );
    let asked: Vec<&Value> = lines.iter().filter(|l| l.get("permission").is_some()).collect();
    assert_eq!(asked.len(), 2, "{lines:#?}");
}

#[test]
fn an_editor_that_does_not_save_what_it_was_asked_to_write_still_gets_it_on_disk() {
    let sb = Sandbox::new();
    let a = sb.project.path().join("a.txt");
    std::fs::write(&a, "one\ntwo\n").unwrap();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "call_p",
            "patch",
            r#"{"file_path":"a.txt","old_string":"one","new_string":"ONE"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("Patched.", &[])));
    let Some(output) = editor_run(&sb, &server, "writes.py", "# buffer only\n", &["patch a.txt"]) else {
        return;
    };
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("write_text_file"), "asked: {stdout}");
    assert_eq!(
        std::fs::read_to_string(&a).unwrap(),
        "ONE\ntwo (unsaved)\n",
        "brute wrote it"
    );
}

#[test]
fn a_commands_output_streams_live_and_a_sub_agents_calls_show_as_their_own() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.path().join("a.txt"), "inner text\n").unwrap();
    let server = MockServer::start();
    let command = json!({"command": "printf 'live line\\n'"}).to_string();
    server.push(Reply::sse(openai_sse("", &[("call_s", "shell", &command)])));
    server.push(Reply::sse(openai_sse("Ran.", &[])));
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
    server.push(Reply::sse(openai_sse("It says inner text.", &[])));
    let Some(output) = editor_run(&sb, &server, "commands.py", "", &["run it", "ask a sub-agent"]) else {
        return;
    };
    let lines = succeeded(&output);
    let updates: Vec<&Value> = lines.iter().filter_map(|l| l.get("update")).collect();
    let of = |id: &str| -> Vec<&Value> { updates.iter().copied().filter(|u| u["toolCallId"] == id).collect() };
    // The command's output while it runs: an update with the text and no status, before the
    // completed one.
    let command = of("call_s");
    let live = command
        .iter()
        .position(|u| u["sessionUpdate"] == "tool_call_update" && u.get("status").is_none())
        .unwrap_or_else(|| panic!("{command:#?}"));
    assert!(
        command[live]["content"].to_string().contains("live line"),
        "{command:#?}"
    );
    let done = command.iter().position(|u| u["status"] == "completed").unwrap();
    assert!(live < done, "{command:#?}");
    // The sub-agent's read: a call of its own under the task's id, started and completed.
    let inner = of("call_t/sub_r");
    assert_eq!(inner.len(), 2, "{updates:#?}");
    assert_eq!(inner[0]["sessionUpdate"], "tool_call");
    assert_eq!(inner[0]["kind"], "read");
    assert_eq!(inner[1]["status"], "completed");
    assert!(inner[1]["content"].to_string().contains("inner text"), "{inner:#?}");
    assert!(of("call_t").iter().any(|u| u["status"] == "completed"));
}

#[test]
fn the_mcp_servers_an_editor_passes_are_started_for_its_session() {
    let Some(everything) = support::require("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "c1",
            "mcp__everything__echo",
            r#"{"message":"hello from the editor's server"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("Echoed.", &[])));
    let config = format!("# mcp server {}\n", everything.display());
    let Some(output) = editor_run(&sb, &server, "commands.py", &config, &["echo something"]) else {
        return;
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stderr}\n{stdout}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{stdout}");
    let results = tool_results(&requests[1]);
    assert!(results[0].1.contains("hello from the editor's server"), "{results:?}");
    // The HTTP one (not offered in initialize) is left out, and the editor is told.
    assert!(
        stdout.contains("the editor's MCP server `web` was left out"),
        "{stdout}"
    );
}

/// Without form elicitation: one question with one set of choices is a permission request with
/// an option per choice (and "Don't answer"), and the editor's pick is the answer; two questions
/// at once, which such a request cannot hold, tell the model that no one can answer.
#[test]
fn questions_without_forms_become_choices_or_say_no_one_can_answer() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let one = json!({"questions": [
        {"question": "Which colour?", "options": [{"label": "red"}, {"label": "blue"}]},
    ]})
    .to_string();
    server.push(Reply::sse(openai_sse("", &[("call_1", "question", &one)])));
    server.push(Reply::sse(openai_sse("Blue it is.", &[])));
    let two = json!({"questions": [
        {"question": "Which colour?", "options": [{"label": "red"}, {"label": "blue"}]},
        {"question": "Which size?", "options": [{"label": "S"}, {"label": "L"}]},
    ]})
    .to_string();
    server.push(Reply::sse(openai_sse("", &[("call_2", "question", &two)])));
    server.push(Reply::sse(openai_sse("I will choose myself.", &[])));
    let Some(output) = editor_with(&sb, &server, "questions_without_forms.py", "") else {
        return;
    };
    let lines = succeeded(&output);
    let stops: Vec<&Value> = lines.iter().filter_map(|l| l.get("stop")).collect();
    assert_eq!(stops, [&json!("end_turn"), &json!("end_turn")], "{lines:#?}");
    let asked: Vec<&Value> = lines.iter().filter_map(|l| l.get("permission")).collect();
    assert_eq!(asked.len(), 1, "only the single question is asked: {lines:#?}");
    assert_eq!(asked[0]["title"], "Which colour?");
    let ids: Vec<&str> = asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["choice-0", "choice-1", "decline"]);
    let requests = server.requests();
    let first = tool_results(&requests[1]);
    assert_eq!(first[0].0, "call_1");
    assert!(first[0].1.contains("blue"), "{first:?}");
    let second = tool_results(&requests[3]);
    let answer = &second
        .iter()
        .find(|(id, _)| id == "call_2")
        .unwrap_or_else(|| panic!("{second:?}"))
        .1;
    assert!(answer.contains(brute::agent::question::NO_USER), "{answer}");
}
