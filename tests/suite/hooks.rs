//! Hooks and doom-loop notes, end to end: the real `brute -p` against the strict mock model,
//! with hooks from the user's config (or a project's, trusted or not) that are real shell
//! commands.

use crate::support;

use std::process::Output;

use serde_json::Value;
use support::{MockServer, Reply, Sandbox, openai_sse, tool_results};

/// Runs `brute -p prompt` with `config` as the user's config (after the harness's own).
fn run(sb: &Sandbox, server: &MockServer, config: &str, prompt: &str) -> Output {
    run_with(sb, server, config, &["-p", prompt])
}

/// Runs `brute ARGS` with `config` as the user's config (after the harness's own).
fn run_with(sb: &Sandbox, server: &MockServer, config: &str, args: &[&str]) -> Output {
    let mut cmd = sb.brute(server);
    std::fs::write(
        sb.home.path().join("config/config.toml"),
        format!("retry_base_ms = 1\n{config}"),
    )
    .unwrap();
    cmd.args(args).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn json_file(sb: &Sandbox, rel: &str) -> Value {
    let text = std::fs::read_to_string(sb.path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rel} is not JSON ({e}): {text}"))
}

/// The messages of a recorded OpenAI request.
fn messages(server: &MockServer, request: usize) -> Vec<Value> {
    server.requests()[request].body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_pre_tool_use_hook_that_exits_2_blocks_the_call_and_the_model_reads_why() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("c1", "shell", r#"{"command":"touch made.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("understood", &[])));
    let config = r#"
[[hooks.pre_tool_use]]
matcher = "shell"
command = '''echo 'no shell today' >&2; exit 2'''
"#;
    let output = run(&sb, &server, config, "make a file");
    assert!(output.status.success(), "{output:?}");
    let results = tool_results(&server.requests()[1]);
    assert_eq!(
        results,
        [(
            "c1".to_owned(),
            "Error: Blocked: a pre_tool_use hook blocked this call: no shell today".to_owned()
        )]
    );
    assert!(!sb.path("made.txt").exists(), "the blocked command ran");
}

#[test]
fn a_hook_rewrites_the_input_in_brutes_and_claude_codes_shape() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("w", "write", r#"{"file_path":"model.txt","content":"from the model"}"#),
            (
                "p",
                "patch",
                r#"{"file_path":"keep.txt","old_string":"old","new_string":"model"}"#,
            ),
        ],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    sb.write("keep.txt", "old\n");
    sb.write("other.txt", "old\n");
    let config = r#"
[[hooks.pre_tool_use]]
matcher = "write"
command = '''echo '{"updated_input": {"file_path": "hook.txt", "content": "from the hook"}}' '''

[[hooks.pre_tool_use]]
matcher = "patch"
command = '''echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"file_path": "other.txt", "old_string": "old", "new_string": "claude"}}}' '''
"#;
    let output = run(&sb, &server, config, "edit");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(std::fs::read_to_string(sb.path("hook.txt")).unwrap(), "from the hook");
    assert!(!sb.path("model.txt").exists(), "the model's input was used");
    assert_eq!(std::fs::read_to_string(sb.path("other.txt")).unwrap(), "claude\n");
    assert_eq!(std::fs::read_to_string(sb.path("keep.txt")).unwrap(), "old\n");
    assert!(
        stderr(&output).contains("a pre_tool_use hook rewrote the `write` call's input"),
        "the person is told: {}",
        stderr(&output)
    );
}

/// A rewritten input goes through validation and the permission rules again: a hook's
/// `allow` cannot turn a denied call into an allowed one, and its `ask` asks (and with nobody
/// to ask, `-p` denies).
#[test]
fn rewritten_input_is_checked_again_and_hook_decisions_never_beat_rules() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    sb.write("notes.txt", "hello\n");
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("w", "write", r#"{"file_path":"fine.txt","content":"x"}"#),
            (
                "p",
                "patch",
                r#"{"file_path":"notes.txt","old_string":"hello","new_string":"bye"}"#,
            ),
            ("r", "read", r#"{"file_path":"notes.txt"}"#),
        ],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = r#"
[permissions]
deny = ["write(secret*)"]

[[hooks.pre_tool_use]]
matcher = "write"
command = '''echo '{"updated_input": {"file_path": "secret.txt", "content": "x"}, "hookSpecificOutput": {"permissionDecision": "allow"}}' '''

[[hooks.pre_tool_use]]
matcher = "patch"
command = '''echo '{"updated_input": {"file_path": 5}}' '''

[[hooks.pre_tool_use]]
matcher = "read"
command = '''echo '{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "check first"}}' '''
"#;
    let output = run(&sb, &server, config, "go");
    assert!(output.status.success(), "{output:?}");
    let results: std::collections::HashMap<String, String> = tool_results(&server.requests()[1]).into_iter().collect();
    assert!(
        results["w"].starts_with("Error: Denied: the permission rule deny `write(secret*)`"),
        "{}",
        results["w"]
    );
    assert!(!sb.path("secret.txt").exists() && !sb.path("fine.txt").exists());
    assert!(
        results["p"].starts_with("Error: InvalidArguments: arguments do not match the `patch` schema"),
        "{}",
        results["p"]
    );
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "hello\n");
    assert!(
        results["r"].starts_with("Error: Denied: not allowed without approval (a pre_tool_use hook asks for approval)"),
        "{}",
        results["r"]
    );
}

/// Whether a live process has `marker` as its argv[0].
fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc").into_iter().flatten().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .is_ok_and(|cmdline| cmdline.split(|b| *b == 0).next() == Some(marker.as_bytes()))
    })
}

#[test]
fn a_hook_that_times_out_is_killed_shown_and_the_call_proceeds() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("w", "write", r#"{"file_path":"out.txt","content":"written"}"#)],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let marker = format!(
        "brute-hook-sleeper-{}-{}",
        std::process::id(),
        sb.project.path().file_name().unwrap().to_string_lossy()
    );
    let config =
        format!("[[hooks.pre_tool_use]]\ncommand = '''echo $$ > hook.pid; exec -a {marker} sleep 30'''\ntimeout = 1\n");
    let output = run(&sb, &server, &config, "write it");
    assert!(output.status.success(), "{output:?}");
    assert!(sb.path("hook.pid").exists(), "the hook started");
    assert!(
        stderr(&output).contains("timed out after 1 s and was killed"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read_to_string(sb.path("out.txt")).unwrap(), "written");
    assert!(
        tool_results(&server.requests()[1])[0]
            .1
            .starts_with("Created out.txt (7 bytes).")
    );
    assert!(!running(&marker), "the timed-out hook's process is still running");
}

#[test]
fn matchers_pick_the_tools_a_hook_runs_for() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    sb.write("notes.txt", "hello\n");
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("r", "read", r#"{"file_path":"notes.txt"}"#),
            ("w", "write", r#"{"file_path":"new.txt","content":"x"}"#),
        ],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = r#"
[[hooks.pre_tool_use]]
matcher = "wr*|patch"
command = '''echo 'no edits' >&2; exit 2'''

[[hooks.pre_tool_use]]
matcher = "mcp__*"
command = '''touch mcp-hook-ran; exit 2'''
"#;
    let output = run(&sb, &server, config, "go");
    assert!(output.status.success(), "{output:?}");
    let results: std::collections::HashMap<String, String> = tool_results(&server.requests()[1]).into_iter().collect();
    assert!(results["r"].contains("hello"), "{}", results["r"]);
    assert!(
        results["w"].ends_with("blocked this call: no edits"),
        "{}",
        results["w"]
    );
    assert!(!sb.path("new.txt").exists() && !sb.path("mcp-hook-ran").exists());
}

#[test]
fn post_tool_use_gets_the_result_and_its_feedback_reaches_the_model() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    sb.write("notes.txt", "hello\n");
    server.push(Reply::sse(openai_sse(
        "",
        &[("r", "read", r#"{"file_path":"notes.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = r#"
[[hooks.post_tool_use]]
matcher = "read"
command = '''cat > post.json; echo 'reviewed by the post hook' >&2; exit 2'''
"#;
    let output = run(&sb, &server, config, "read it");
    assert!(output.status.success(), "{output:?}");
    let input = json_file(&sb, "post.json");
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert_eq!(input["event"], "post_tool_use");
    assert_eq!(input["tool_name"], "read");
    assert_eq!(input["tool_input"], serde_json::json!({"file_path": "notes.txt"}));
    assert_eq!(input["tool_response"], "1\thello\n");
    assert_eq!(input["is_error"], false);
    let result = &tool_results(&server.requests()[1])[0].1;
    assert_eq!(result, "1\thello\n\n[post_tool_use hook] reviewed by the post hook");
}

#[test]
fn a_user_prompt_submit_hook_can_refuse_a_prompt_before_it_is_sent() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let config = r#"
[[hooks.user_prompt_submit]]
command = '''cat > prompt.json; echo 'prompts about the vault are refused' >&2; exit 2'''
"#;
    let output = run(&sb, &server, config, "open the vault");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(server.requests().is_empty(), "the refused prompt was sent");
    assert!(
        stderr(&output).contains("refused this prompt, so it was not sent: prompts about the vault are refused"),
        "{}",
        stderr(&output)
    );
    let input = json_file(&sb, "prompt.json");
    assert_eq!(input["hook_event_name"], "UserPromptSubmit");
    assert_eq!(input["prompt"], "open the vault");
}

#[test]
fn session_start_and_prompt_hooks_add_context_to_the_prompt() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("ok", &[])));
    let config = r#"
[[hooks.session_start]]
command = '''cat > start.json; echo 'branch: main' '''

[[hooks.user_prompt_submit]]
command = '''echo '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ticket BR-7"}}' '''
"#;
    let output = run(&sb, &server, config, "fix the bug");
    assert!(output.status.success(), "{output:?}");
    let sent = messages(&server, 0);
    let user = sent.iter().rev().find(|m| m["role"] == "user").unwrap();
    assert_eq!(
        user["content"],
        "fix the bug\n\n<hook_context event=\"session_start\">\nbranch: main\n</hook_context>\n\n<hook_context event=\"user_prompt_submit\">\nticket BR-7\n</hook_context>"
    );
    let start = json_file(&sb, "start.json");
    assert_eq!(
        (start["event"].as_str(), start["source"].as_str()),
        (Some("session_start"), Some("startup"))
    );
}

#[test]
fn a_stop_hook_continues_the_turn_once_with_its_reason() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("all done", &[])));
    server.push(Reply::sse(openai_sse("tests pass now", &[])));
    let config = r#"
[[hooks.stop]]
command = '''cat > stop.json; if [ -e stopped-once ]; then exit 0; fi; touch stopped-once; echo 'run the tests first' >&2; exit 2'''
"#;
    let output = run(&sb, &server, config, "fix it");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(server.requests().len(), 2);
    let sent = messages(&server, 1);
    assert_eq!(sent.last().unwrap()["content"], "[stop hook] run the tests first");
    assert!(String::from_utf8_lossy(&output.stdout).contains("tests pass now"));
    let last = json_file(&sb, "stop.json");
    assert_eq!(last["stop_hook_active"], true, "the second run knows it continued");
    assert_eq!(last["last_assistant_message"], "tests pass now");
}

#[test]
fn a_stop_hook_that_always_blocks_continues_at_most_three_times() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    for _ in 0..4 {
        server.push(Reply::sse(openai_sse("done", &[])));
    }
    let config = "[[hooks.stop]]\ncommand = '''echo 'never satisfied' >&2; exit 2'''\n";
    let output = run(&sb, &server, config, "fix it");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(server.requests().len(), 4, "one answer and three continuations");
    assert!(
        stderr(&output).contains("already continued this turn 3 times"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn project_hooks_run_only_in_a_trusted_project() {
    let sb = Sandbox::new();
    sb.write(
        ".brute/config.toml",
        "[[hooks.pre_tool_use]]\ncommand = '''touch hook-ran; echo 'project says no' >&2; exit 2'''\n",
    );
    let call = [("w", "write", r#"{"file_path":"out.txt","content":"x"}"#)];
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", &call)));
    server.push(Reply::sse(openai_sse("done", &[])));
    let output = run(&sb, &server, "", "go");
    assert!(output.status.success(), "{output:?}");
    assert!(!sb.path("hook-ran").exists(), "an untrusted repository's hook ran");
    assert!(sb.path("out.txt").exists());
    assert!(
        stderr(&output).contains("ignored project settings hooks"),
        "{}",
        stderr(&output)
    );

    std::fs::remove_file(sb.path("out.txt")).unwrap();
    sb.trust();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", &call)));
    server.push(Reply::sse(openai_sse("done", &[])));
    let output = run(&sb, &server, "", "go");
    assert!(output.status.success(), "{output:?}");
    assert!(sb.path("hook-ran").exists());
    assert!(!sb.path("out.txt").exists());
    assert!(tool_results(&server.requests()[1])[0].1.ends_with("project says no"));
}

#[test]
fn the_hook_input_carries_the_documented_fields_and_brute_config_lists_hooks() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let args = r#"{"file_path":"out.txt","content":"x"}"#;
    server.push(Reply::sse(openai_sse("", &[("c1", "write", args)])));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = "[[hooks.pre_tool_use]]\nmatcher = \"write\"\ncommand = \"cat > pre.json\"\ntimeout = 9\n";
    let output = run(&sb, &server, config, "go");
    assert!(output.status.success(), "{output:?}");
    let input = json_file(&sb, "pre.json");
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["event"], "pre_tool_use");
    assert_eq!(input["tool_name"], "write");
    assert_eq!(input["tool_use_id"], "c1");
    assert_eq!(input["tool_input"], serde_json::from_str::<Value>(args).unwrap());
    assert!(input["session_id"].as_str().is_some_and(|id| !id.is_empty()), "{input}");
    let cwd = std::path::Path::new(input["cwd"].as_str().unwrap());
    assert_eq!(cwd.canonicalize().unwrap(), sb.project.path().canonicalize().unwrap());

    let mut listing = sb.bare();
    let user_config = sb.home.path().join("config/config.toml");
    let provider = format!("provider = \"openai\"\nbase_url = \"{}\"\n", server.url("/v1"));
    std::fs::write(&user_config, provider + config).unwrap();
    let listing = listing.arg("config").output().unwrap();
    let text = String::from_utf8_lossy(&listing.stdout);
    let line = text.lines().find(|l| l.starts_with("hooks ")).unwrap_or_default();
    assert!(
        line.contains("pre_tool_use [write]: cat > pre.json (timeout 9 s)")
            && line.ends_with(&user_config.display().to_string()),
        "{text}"
    );
}

#[test]
fn the_third_identical_read_gets_a_doom_loop_note() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    sb.write("notes.txt", "hello\n");
    let read = r#"{"file_path":"notes.txt"}"#;
    // Key order and spacing differ; the arguments are the same.
    let reread = r#"{ "file_path" : "notes.txt" }"#;
    server.push(Reply::sse(openai_sse("", &[("r1", "read", read)])));
    server.push(Reply::sse(openai_sse("", &[("r2", "read", reread)])));
    server.push(Reply::sse(openai_sse("", &[("r3", "read", read)])));
    server.push(Reply::sse(openai_sse("I will stop", &[])));
    let output = run(&sb, &server, "", "read it");
    assert!(output.status.success(), "{output:?}");
    let results = tool_results(&server.requests()[3]);
    let note = "Note: this is the 3rd identical call in a row (`read` with the same arguments)";
    assert_eq!(results.len(), 3);
    assert!(results[..2].iter().all(|(_, r)| r == "1\thello\n"), "{results:?}");
    assert!(
        results[2].1.starts_with("1\thello\n\nNote: ") && results[2].1.contains(note),
        "{results:?}"
    );
    assert!(
        stderr(&output).contains(note),
        "the person sees it: {}",
        stderr(&output)
    );
}

/// `allow` answers the question the sandbox mode would ask (read-only: every change asks, and
/// `-p` has nobody to answer), and only for the call it was given for.
#[test]
fn a_hooks_allow_answers_the_modes_question() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    sb.write("notes.txt", "hello\n");
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("w", "write", r#"{"file_path":"allowed.txt","content":"x"}"#),
            (
                "p",
                "patch",
                r#"{"file_path":"notes.txt","old_string":"hello","new_string":"bye"}"#,
            ),
        ],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = r#"
[[hooks.pre_tool_use]]
matcher = "write"
command = '''echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}' '''
"#;
    let output = run_with(&sb, &server, config, &["-p", "go", "--sandbox", "read-only"]);
    assert!(output.status.success(), "{output:?}");
    let results: std::collections::HashMap<String, String> = tool_results(&server.requests()[1]).into_iter().collect();
    assert!(results["w"].starts_with("Created allowed.txt"), "{}", results["w"]);
    assert!(
        results["p"].starts_with("Error: Denied: not allowed without approval (the sandbox is read-only)"),
        "{}",
        results["p"]
    );
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "hello\n");
}

/// A hook that fails (another exit code) or prints invalid JSON is shown to the person and
/// does not block.
#[test]
fn a_failing_hook_is_a_notice_not_a_block() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("w", "write", r#"{"file_path":"out.txt","content":"x"}"#)],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = r#"
[[hooks.pre_tool_use]]
command = '''echo 'linter crashed' >&2; exit 1'''

[[hooks.pre_tool_use]]
command = '''echo '{"decision": "block", oops' '''
"#;
    let output = run(&sb, &server, config, "go");
    assert!(output.status.success(), "{output:?}");
    let err = stderr(&output);
    assert!(err.contains("failed with exit code 1: linter crashed"), "{err}");
    assert!(err.contains("printed invalid JSON"), "{err}");
    assert!(sb.path("out.txt").exists(), "a broken hook blocked the call");
}

/// `pre_compact` runs before compaction (here the recovery from a "too long" error), and
/// `session_start` tells a resumed session from a new one.
#[test]
fn pre_compact_runs_before_compaction_and_session_start_knows_a_resumed_session() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let config = r#"
system_prompt = "test"
[[hooks.pre_compact]]
command = "cat > compact.json"
[[hooks.session_start]]
command = "cat > start.json"
"#;
    server.push(Reply::sse(openai_sse("First answer.", &[])));
    let output = run(&sb, &server, config, "GOAL: first");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(json_file(&sb, "start.json")["source"], "startup");
    assert!(!sb.path("compact.json").exists());
    server.push(Reply::json(
        400,
        r#"{"error":{"message":"This model's maximum context length is 3000 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    ));
    server.push(Reply::sse(openai_sse("SUMMARY: one earlier turn.", &[])));
    server.push(Reply::sse(openai_sse("Recovered.", &[])));
    let output = run_with(&sb, &server, config, &["-p", "second", "--continue"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(server.requests().len(), 4);
    let compact = json_file(&sb, "compact.json");
    assert_eq!(compact["hook_event_name"], "PreCompact");
    assert_eq!(compact["trigger"], "auto");
    assert_eq!(json_file(&sb, "start.json")["source"], "resume");
}

/// SIGKILL of brute while a hook runs: brute cannot clean up, yet the hook (started through the
/// sandbox's init, which dies with brute and takes the process group along) is gone.
#[test]
fn a_hook_does_not_outlive_a_killed_brute() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", &[("r", "read", r#"{"file_path":"x"}"#)])));
    server.push(Reply::sse(openai_sse("never reached", &[])));
    let marker = format!("brute-hook-killed-{}", std::process::id());
    let mut cmd = sb.std_brute(&server);
    std::fs::write(
        sb.home.path().join("config/config.toml"),
        format!("retry_base_ms = 1\n[[hooks.pre_tool_use]]\ncommand = '''exec -a {marker} sleep 600'''\n"),
    )
    .unwrap();
    let mut child = cmd
        .args(["-p", "read x"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !running(&marker) {
        assert!(std::time::Instant::now() < deadline, "the hook never started");
        std::thread::yield_now();
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    while running(&marker) {
        assert!(std::time::Instant::now() < deadline, "the hook outlived a killed brute");
        std::thread::yield_now();
    }
}
