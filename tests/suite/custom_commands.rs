//! Custom slash commands through the real binary: `brute -p "/review src/lib.rs"` sends the
//! expanded template to the (strict) mock, with the command's model and tool subset for that
//! turn only.

use crate::support;

use serde_json::Value;
use support::{MockServer, Reply, Sandbox, openai_sse, tool_results};

/// The text of the last user message of a recorded OpenAI request.
fn last_user_text(body: &Value) -> String {
    let message = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("a user message");
    match &message["content"] {
        Value::String(text) => text.clone(),
        parts => parts
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect(),
    }
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn p_expands_a_user_command_with_its_model_and_tools_for_that_turn() {
    let server = MockServer::start();
    let sb = Sandbox::new();
    sb.write("src/lib.rs", "pub fn x() {}\n");
    let commands = sb.home.path().join("config/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("review.md"),
        "---\ndescription: Review a file\nargument-hint: <file>\nmodel: review-model\nallowed-tools: [read, fs_search]\n---\nReview $1 with care.\nFocus: $2\nAll: $ARGUMENTS\n",
    )
    .unwrap();
    // The model first calls `shell`, which this turn does not offer: refused, never run.
    server.push(Reply::sse(openai_sse(
        "",
        &[("c1", "shell", r#"{"command":"touch RAN"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Looks fine.", &[])));
    let out = sb
        .brute(&server)
        .args(["-p", "/review src/lib.rs \"error handling\""])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("Looks fine."), "{stdout}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(
        last_user_text(first),
        "Review src/lib.rs with care.\nFocus: error handling\nAll: src/lib.rs \"error handling\""
    );
    assert_eq!(first["model"], "review-model");
    assert_eq!(tool_names(first), ["read", "fs_search"]);
    // The turn keeps its scope across its requests; the refused call got a result.
    assert_eq!(requests[1].body["model"], "review-model");
    assert_eq!(tool_names(&requests[1].body), ["read", "fs_search"]);
    let results = tool_results(&requests[1]);
    assert!(
        results[0].1.contains("`shell` is not available in this turn"),
        "{results:?}"
    );
    assert!(!sb.path("RAN").exists(), "a tool the command left out ran");
}

#[test]
fn p_project_command_narrows_tools_but_an_untrusted_project_sets_no_model() {
    let server = MockServer::start();
    let sb = Sandbox::new();
    sb.write(
        ".brute/commands/git/explain.md",
        "---\nmodel: expensive-model\nallowed-tools: Read\n---\nExplain the commit $1.",
    );
    // `/help` in a project file never replaces the built-in; `.claude/commands` also counts.
    sb.write(".brute/commands/help.md", "hijacked");
    sb.write(".claude/commands/plain.md", "No placeholders here.");
    server.push(Reply::sse(openai_sse("One.", &[])));
    server.push(Reply::sse(openai_sse("Two.", &[])));
    let out = sb.brute(&server).args(["-p", "/git:explain HEAD~1"]).assert().success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("is ignored (the project is not trusted)"), "{stderr}");
    assert!(stderr.contains("/help is a built-in command"), "{stderr}");
    let first = &server.requests()[0].body;
    assert_eq!(last_user_text(first), "Explain the commit HEAD~1.");
    assert_eq!(first["model"], "mock-model");
    assert_eq!(tool_names(first), ["read"]);

    sb.brute(&server).args(["-p", "/plain some words"]).assert().success();
    let second = &server.requests()[1].body;
    assert_eq!(last_user_text(second), "No placeholders here.\n\nARGUMENTS: some words");
    assert!(tool_names(second).contains(&"shell".to_owned()), "the usual tools");
}

#[test]
fn p_trusted_project_command_sets_the_model_and_unknown_slash_is_a_prompt() {
    let server = MockServer::start();
    let sb = Sandbox::new();
    sb.write(
        ".brute/commands/fast.md",
        "---\nmodel: fast-model\n---\nQuick: $ARGUMENTS",
    );
    sb.trust();
    server.push(Reply::sse(openai_sse("ok", &[])));
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.brute(&server).args(["-p", "/fast go"]).assert().success();
    let first = &server.requests()[0].body;
    assert_eq!(first["model"], "fast-model");
    assert_eq!(last_user_text(first), "Quick: go");
    // A slash word that names no command is sent as written.
    sb.brute(&server).args(["-p", "/usr/bin is missing"]).assert().success();
    let second = &server.requests()[1].body;
    assert_eq!(last_user_text(second), "/usr/bin is missing");
    assert_eq!(second["model"], "mock-model");
}

/// `/init` is built in: a model turn asked to write or update AGENTS.md.
#[test]
fn init_asks_the_model_to_write_agents_md() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Wrote AGENTS.md.", &[])));
    sb.brute(&server)
        .args(["-p", "/init focus on tests"])
        .assert()
        .success();
    let requests = server.requests();
    let sent = requests[0].body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        sent.starts_with("Write or update AGENTS.md at the project root"),
        "{sent}"
    );
    assert!(sent.trim_end().ends_with("focus on tests"), "{sent}");
}
