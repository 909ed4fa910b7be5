//! MCP servers end to end: the real `brute -p` against the strict mock provider, with real
//! MCP servers this project did not write — the reference `mcp-server-everything` (npm) and
//! the official Python SDK's `MCPServer` serving tests/fixtures/mcp/server.py — over stdio
//! and streamable HTTP. Installed by `.ci/test-tools`; under `CI` a missing one fails the
//! test, elsewhere the test is skipped with the reason printed.

use crate::support;

use std::path::PathBuf;

use serde_json::Value;
use support::{MockServer, Reply, Sandbox, openai_sse, tool_results};

use support::require;

fn everything() -> Option<PathBuf> {
    require("node_modules/.bin/mcp-server-everything")
}

fn python() -> Option<PathBuf> {
    require("venv/bin/python")
}

fn fixture() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp/server.py").to_owned()
}

/// A TOML string.
fn q(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// `[mcp_servers.NAME]` for a stdio server.
fn stdio_server(name: &str, command: &std::path::Path, args: &[&str], extra: &str) -> String {
    let args: Vec<String> = args.iter().map(|a| q(a)).collect();
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}]\n{extra}\n",
        q(&command.display().to_string()),
        args.join(", ")
    )
}

/// The fixture over stdio as server `name`, with `mode`.
fn fixture_server(name: &str, python: &std::path::Path, mode: &str, extra: &str) -> String {
    stdio_server(name, python, &[&fixture(), mode], extra)
}

/// `brute -p` in the sandbox with `config` as the user's config file (written after the
/// sandbox's own default, which it replaces).
fn brute(sb: &Sandbox, server: &MockServer, config: &str) -> assert_cmd::Command {
    let cmd = sb.brute(server);
    std::fs::write(
        sb.home.path().join("config/config.toml"),
        format!("retry_base_ms = 1\n{config}"),
    )
    .unwrap();
    cmd
}

/// `brute` without provider flags, with `config` as the user's config file.
fn bare(sb: &Sandbox, config: &str) -> assert_cmd::Command {
    let cmd = sb.bare();
    std::fs::write(sb.home.path().join("config/config.toml"), config).unwrap();
    cmd
}

/// The tool names a recorded OpenAI request advertised.
fn advertised(request: &support::Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

fn tool_spec<'a>(request: &'a support::Recorded, name: &str) -> &'a Value {
    request.body["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["function"]["name"] == name))
        .unwrap_or_else(|| panic!("{name} not advertised: {:?}", advertised(request)))
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn stdio_everything_tools_are_listed_and_echo_reaches_the_model() {
    let Some(everything) = everything() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("c1", "mcp__everything__echo", r#"{"message":"hello from mcp"}"#)],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = stdio_server("everything", &everything, &["stdio"], "");
    let output = brute(&sb, &server, &config)
        .args(["-p", "echo something"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let names = advertised(&requests[0]);
    assert!(names.contains(&"read".to_owned()), "built-ins stay: {names:?}");
    assert!(names.contains(&"mcp__everything__echo".to_owned()), "{names:?}");
    assert!(
        names.iter().filter(|n| n.starts_with("mcp__everything__")).count() > 3,
        "{names:?}"
    );
    let echo = tool_spec(&requests[0], "mcp__everything__echo");
    assert_eq!(echo["function"]["parameters"]["type"], "object");
    assert!(
        echo["function"]["parameters"]["properties"]["message"].is_object(),
        "{echo}"
    );
    // The same list in both requests of the turn (prompt caches keep hitting).
    assert_eq!(requests[0].body["tools"], requests[1].body["tools"]);
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1);
    assert!(results[0].1.contains("hello from mcp"), "{results:?}");
    assert!(!results[0].1.starts_with("Error"), "{results:?}");
}

#[test]
fn without_a_person_only_read_only_or_allowed_mcp_tools_run() {
    let Some(python) = python() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("c1", "mcp__fx__peek", r#"{"key":"k1"}"#),
            ("c2", "mcp__fx__poke", r#"{"value":"v1"}"#),
        ],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let marker = format!("brute-mcp-approvals-{}", std::process::id());
    let config = stdio_server("fx", &python, &[&fixture(), "stdio", &marker], "");
    let output = brute(&sb, &server, &config).args(["-p", "go"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", stderr(&output));
    // The server did not outlive brute (its end is asynchronous: poll).
    gone(&marker);
    let results = tool_results(&requests[1]);
    // readOnlyHint: allowed without a person.
    assert_eq!(results[0].1, "peeked k1");
    // Not read-only, no rule, nobody to ask: denied, naming the rule that would allow it.
    assert!(results[1].1.starts_with("Error: Denied"), "{results:?}");
    assert!(
        results[1].1.contains(r#"allow = ["mcp__fx__poke"]"#) && results[1].1.contains("mcp__fx__*"),
        "{results:?}"
    );
}

#[test]
fn an_allow_rule_on_the_server_lets_its_tools_run_errors_and_images_included() {
    let Some(python) = python() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("c1", "mcp__fx__poke", r#"{"value":"v1"}"#),
            ("c2", "mcp__fx__fail_tool", r#"{"reason":"no disk"}"#),
            ("c3", "mcp__fx__picture", "{}"),
        ],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = format!(
        "[permissions]\nallow = [\"mcp__fx__*\"]\n\n{}",
        fixture_server("fx", &python, "stdio", "")
    );
    let output = brute(&sb, &server, &config).args(["-p", "go"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let results = tool_results(&server.requests()[1]);
    assert_eq!(results[0].1, "poked v1");
    // An isError result is an error result the model sees, with the server's text.
    assert!(
        results[1].1.starts_with("Error: ") && results[1].1.contains("fixture failure: no disk"),
        "{results:?}"
    );
    // The fixture's 11 bytes are no real PNG: a placeholder that says why it was not sent.
    assert!(
        results[2].1.contains("[image: image/png, 11 bytes; not sent:"),
        "{results:?}"
    );
}

#[test]
fn streamable_http_everything_is_listed_and_called() {
    let Some(everything) = everything() else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut http = std::process::Command::new(&everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Ready once it says it listens (on stderr).
    let mut out = std::io::BufReader::new(http.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        let n = std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        assert!(n > 0, "the HTTP server ended before it listened");
        if line.contains("listening") {
            break;
        }
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("c1", "mcp__web__echo", r#"{"message":"over http"}"#)],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = format!("[mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\nheaders = {{ X-Test = \"1\" }}\n");
    let output = brute(&sb, &server, &config).args(["-p", "go"]).output().unwrap();
    let _ = http.kill();
    let _ = http.wait();
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert!(
        advertised(&requests[0]).contains(&"mcp__web__echo".to_owned()),
        "{}",
        stderr(&output)
    );
    let results = tool_results(&requests[1]);
    assert!(results[0].1.contains("over http"), "{results:?}");
}

#[test]
fn a_server_that_crashes_mid_session_gives_an_error_result_with_its_stderr() {
    let Some(python) = python() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", &[("c1", "mcp__fx__crash", "{}")])));
    server.push(Reply::sse(openai_sse("", &[("c2", "mcp__fx__peek", r#"{"key":"k"}"#)])));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = format!(
        "[permissions]\nallow = [\"mcp__fx__*\"]\n\n{}",
        fixture_server("fx", &python, "stdio", "")
    );
    let output = brute(&sb, &server, &config).args(["-p", "go"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The call that crashed it gets the same kind of error as later calls.
    let crash = &tool_results(&requests[1])[0].1;
    assert!(crash.starts_with("Error: ServerExited: the MCP server `fx`"), "{crash}");
    // However the end is noticed first (the call's reply, the process, the closed pipe), the
    // result and the notice wait for how the process ended.
    assert!(crash.contains("exit status: 3"), "{crash}");
    let after = &tool_results(&requests[2])[1].1;
    assert!(after.contains("ServerExited") && after.contains("`fx`"), "{after}");
    assert!(after.contains("exit status: 3"), "{after}");
    assert!(
        after.contains("fixture: crashing on purpose"),
        "the stderr tail: {after}"
    );
    assert!(
        stderr(&output).contains("MCP server `fx`: the MCP server `fx` exited (exit status: 3)"),
        "the person is told: {}",
        stderr(&output)
    );
}

/// Runs `prompts` as consecutive user turns of one in-process conversation (`brute -p` has
/// one turn only) with `config` as the user config; returns every event.
fn converse(sb: &Sandbox, server: &MockServer, config: &str, prompts: &[&str]) -> Vec<brute::protocol::Event> {
    use brute::protocol::{Event, EventSink, Op};
    let file = sb.home.path().join("config.toml");
    std::fs::write(&file, config).unwrap();
    let flags = brute::config::Flags {
        provider: Some("openai".into()),
        model: Some("mock-model".into()),
        base_url: Some(server.url("/v1")),
        ..Default::default()
    };
    let settings = brute::config::load(sb.project.path(), &flags, &|_| None, Some(&file)).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let (events, mut rx) = EventSink::channel();
        let place = brute::config::project::Workspace::at(sb.project.path());
        let started = brute::app::start(
            &settings,
            &place,
            events,
            brute::app::FrontEnd::Headless,
            Vec::new(),
            &brute::app::SessionChoice::Off,
        )
        .unwrap();
        let mut seen = Vec::new();
        for prompt in prompts {
            started
                .handle
                .ops
                .send(Op::UserTurn {
                    text: (*prompt).to_owned(),
                })
                .unwrap();
            loop {
                let event = tokio::time::timeout(support::RUN_DEADLINE, rx.recv())
                    .await
                    .expect("the turn ends")
                    .expect("events flow");
                let done = matches!(event, Event::TurnFinished { .. });
                seen.push(event);
                if done {
                    break;
                }
            }
        }
        let _ = started.handle.ops.send(Op::Shutdown);
        seen
    })
}

#[test]
fn list_changed_tools_appear_from_the_next_turn_only() {
    let Some(python) = python() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    // Turn 1: grow (the server adds `added` and says so), then the turn goes on.
    server.push(Reply::sse(openai_sse("", &[("c1", "mcp__fx__grow", "{}")])));
    server.push(Reply::sse(openai_sse("grown", &[])));
    // Turn 2: the new tool is offered and works.
    server.push(Reply::sse(openai_sse(
        "",
        &[("c2", "mcp__fx__added", r#"{"text":"hi"}"#)],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = format!(
        "[permissions]\nallow = [\"mcp__fx__*\"]\n\n{}",
        fixture_server("fx", &python, "stdio", "")
    );
    let events = converse(&sb, &server, &config, &["grow", "use it"]);
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{events:?}");
    assert_eq!(tool_results(&requests[1])[0].1, "grown");
    assert!(
        !advertised(&requests[1]).contains(&"mcp__fx__added".to_owned()),
        "not mid-turn"
    );
    assert_eq!(
        requests[0].body["tools"], requests[1].body["tools"],
        "the list holds within a turn"
    );
    assert!(advertised(&requests[2]).contains(&"mcp__fx__added".to_owned()));
    assert_eq!(tool_results(&requests[3]).last().unwrap().1, "added says hi");
    assert!(events.iter().any(
        |e| matches!(e, brute::protocol::Event::ToolsChanged { tools } if tools.contains(&"mcp__fx__added".to_owned()))
    ));
}

/// Whether a process with `marker` among its arguments is still running (zombies aside).
fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'));
        !zombie && String::from_utf8_lossy(&cmdline).contains(marker)
    })
}

/// A server's stderr comes from a program brute did not write: relayed by `brute -p` (in
/// the note that it failed), its escape sequences are shown, never sent to the terminal.
#[test]
fn a_servers_escape_sequences_on_stderr_reach_brute_p_stderr_visible() {
    let Some(python) = python() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("still here", &[])));
    let config = fixture_server("hostile", &python, "hostile", "");
    let output = brute(&sb, &server, &config).args(["-p", "hi"]).output().unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(
        !output.stderr.iter().any(|b| *b == 0x1b || *b == 0x07),
        "stderr carries escape sequences: {err:?}"
    );
    assert!(
        err.contains("MCP server `hostile`: failed to start")
            && err.contains("fixture: evil␛]52;c;SGVsbG8=␇␛]0;pwned␇␛[2J"),
        "the stderr tail, visible: {err}"
    );
}

#[test]
fn failing_and_hanging_servers_are_notices_and_the_run_still_answers() {
    let Some(python) = python() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("still here", &[])));
    let marker = format!("brute-mcp-slow-{}", std::process::id());
    let config = format!(
        "{}{}{}",
        fixture_server("broken", &python, "fail", ""),
        stdio_server(
            "slow",
            &python,
            &[&fixture(), "slow", &marker],
            "startup_timeout_secs = 1"
        ),
        fixture_server("fx", &python, "stdio", "")
    );
    let output = brute(&sb, &server, &config).args(["-p", "hi"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "still here");
    let err = stderr(&output);
    assert!(
        err.contains("MCP server `broken`: failed to start")
            && err.contains("cannot open the database /nonexistent/db"),
        "the notice carries the stderr tail: {err}"
    );
    assert!(
        err.contains("MCP server `slow`: did not start within 1 s") && err.contains("fixture: warming up"),
        "{err}"
    );
    let names = advertised(&server.requests()[0]);
    assert!(
        names.contains(&"mcp__fx__peek".to_owned()),
        "the good server still serves: {names:?}"
    );
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("mcp__broken") || n.starts_with("mcp__slow"))
    );
    // The abandoned server was killed, not left behind.
    gone(&marker);
}

/// Waits until no process carries `marker` (a kill is asynchronous); fails after a generous
/// deadline.
fn gone(marker: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while running(marker) {
        assert!(
            std::time::Instant::now() < deadline,
            "a server outlived brute: {marker}"
        );
        std::thread::yield_now();
    }
}

#[test]
fn an_untrusted_projects_mcp_json_starts_nothing() {
    let sb = Sandbox::new();
    let marker = sb.path("PWNED");
    let mcp_json = serde_json::json!({"mcpServers": {"evil": {"command": "sh", "args": ["-c", format!("touch {}", marker.display())]}}});
    sb.write(".mcp.json", &mcp_json.to_string());
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("ok", &[])));
    let output = brute(&sb, &server, "").args(["-p", "hi"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!marker.exists(), "nothing from an untrusted .mcp.json ran");
    assert!(!advertised(&server.requests()[0]).iter().any(|n| n.starts_with("mcp__")));
    assert!(
        stderr(&output).contains("ignored the MCP servers in"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_trusted_projects_mcp_json_is_used_until_it_changes() {
    let Some(python) = python() else { return };
    let sb = Sandbox::new();
    let mcp_json = serde_json::json!({"mcpServers": {"proj": {"command": python, "args": [fixture()]}}});
    sb.write(".mcp.json", &mcp_json.to_string());
    sb.trust();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("ok", &[])));
    let output = brute(&sb, &server, "").args(["-p", "hi"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(advertised(&server.requests()[0]).contains(&"mcp__proj__peek".to_owned()));
    // `brute config` names the server and where it came from.
    let config = bare(
        &sb,
        &format!("provider = \"openai\"\nbase_url = {}\n", q(&server.url("/v1"))),
    )
    .arg("config")
    .output()
    .unwrap();
    let shown = String::from_utf8_lossy(&config.stdout);
    assert!(
        shown.contains("proj: stdio: ") && shown.contains(".mcp.json"),
        "{shown}{}",
        stderr(&config)
    );
    // Changed after it was trusted (say, by a command the model ran): ignored again.
    let marker = sb.path("PWNED");
    let changed = serde_json::json!({"mcpServers": {"proj": {"command": "sh", "args": ["-c", format!("touch {}", marker.display())]}}});
    sb.write(".mcp.json", &changed.to_string());
    server.push(Reply::sse(openai_sse("ok", &[])));
    let output = brute(&sb, &server, "").args(["-p", "hi"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!marker.exists());
    assert!(!advertised(&server.requests()[1]).iter().any(|n| n.starts_with("mcp__")));
    assert!(
        stderr(&output).contains("changed since you trusted it"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn brute_mcp_add_list_get_remove_round_trip() {
    let sb = Sandbox::new();
    let file = sb.home.path().join("config/config.toml");
    let run = |args: &[&str]| {
        // `bare` rewrites the config file: restore what the previous step left.
        let kept = std::fs::read_to_string(&file).unwrap_or_default();
        let output = bare(&sb, &kept).args(args).output().unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr(&output),
        )
    };
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "# mine\nretry_base_ms = 1\n").unwrap();
    let (code, out, err) = run(&[
        "mcp",
        "add",
        "files",
        "--env",
        "TOKEN=s3cret",
        "--",
        "npx",
        "-y",
        "srv",
        "two words",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("added MCP server `files`"), "{out}");
    let (code, _, err) = run(&["mcp", "add", "web", "--url", "http://127.0.0.1:9/mcp"]);
    assert_eq!(code, Some(0), "{err}");
    let (_, out, _) = run(&["mcp", "list"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("files\tstdio: npx -y srv two words\tenabled\t"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("web\thttp: http://127.0.0.1:9/mcp\tenabled\t"),
        "{out}"
    );
    let (code, out, _) = run(&["mcp", "get", "files"]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains("env: TOKEN (values hidden)") && !out.contains("s3cret"),
        "{out}"
    );
    // The written table is what a person would write, and the rest of the file is kept.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("# mine\nretry_base_ms = 1\n"), "{text}");
    assert!(text.contains("args = [\"-y\", \"srv\", \"two words\"]"), "{text}");
    let (code, _, err) = run(&["mcp", "add", "files", "--", "other"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("already configured"), "{err}");
    let (code, _, err) = run(&["mcp", "remove", "files"]);
    assert_eq!(code, Some(0), "{err}");
    let (_, out, _) = run(&["mcp", "list"]);
    assert!(!out.contains("files") && out.contains("web"), "{out}");
    let (code, _, err) = run(&["mcp", "get", "files"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("no MCP server named `files`"), "{err}");
}

#[test]
fn tool_timeouts_and_interrupts_end_a_call_and_the_turn_goes_on() {
    use brute::protocol::{Event, EventSink, Op};
    let Some(python) = python() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    // Turn 1: the call runs into tool_timeout_secs.
    server.push(Reply::sse(openai_sse("", &[("c1", "mcp__fx__wait", "{}")])));
    server.push(Reply::sse(openai_sse("timed out", &[])));
    // Turn 2: the call is interrupted (Esc) while it runs.
    server.push(Reply::sse(openai_sse("", &[("c2", "mcp__fx__wait", "{}")])));
    let config = format!(
        "[permissions]\nallow = [\"mcp__fx__*\"]\n\n{}",
        fixture_server("fx", &python, "stdio", "tool_timeout_secs = 1")
    );
    let file = sb.home.path().join("config.toml");
    std::fs::write(&file, config).unwrap();
    let flags = brute::config::Flags {
        provider: Some("openai".into()),
        model: Some("mock-model".into()),
        base_url: Some(server.url("/v1")),
        ..Default::default()
    };
    let settings = brute::config::load(sb.project.path(), &flags, &|_| None, Some(&file)).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let results = runtime.block_on(async {
        let (events, mut rx) = EventSink::channel();
        let place = brute::config::project::Workspace::at(sb.project.path());
        let started = brute::app::start(
            &settings,
            &place,
            events,
            brute::app::FrontEnd::Headless,
            Vec::new(),
            &brute::app::SessionChoice::Off,
        )
        .unwrap();
        let mut results = Vec::new();
        for (prompt, interrupt) in [("wait", false), ("wait again", true)] {
            started
                .handle
                .ops
                .send(Op::UserTurn {
                    text: prompt.to_owned(),
                })
                .unwrap();
            loop {
                let event = tokio::time::timeout(support::RUN_DEADLINE, rx.recv())
                    .await
                    .expect("the turn ends")
                    .expect("events flow");
                match event {
                    Event::ToolCallStarted { .. } if interrupt => started.handle.ops.send(Op::Interrupt).unwrap(),
                    Event::ToolResult(result) => results.push(result.content),
                    Event::TurnFinished { .. } => break,
                    _ => {}
                }
            }
        }
        let _ = started.handle.ops.send(Op::Shutdown);
        results
    });
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].starts_with("Error: Timeout") && results[0].contains("within 1 s"),
        "{results:?}"
    );
    assert!(results[1].starts_with("Error: Interrupted"), "{results:?}");
    // The timed-out call's result reached the model in turn 1; turn 2 ended at the interrupt.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(tool_results(&requests[1])[0].1.starts_with("Error: Timeout"));
}

/// The extensions together: an MCP server's tools and a skill script are advertised side by
/// side (the registry rebuilt for the MCP tools keeps the script), the script runs, and a
/// `pre_tool_use` hook matching `mcp__*` blocks the MCP call with its reason reaching the model.
#[test]
fn mcp_tools_skill_scripts_and_hooks_work_together() {
    use std::os::unix::fs::PermissionsExt;
    let Some(everything) = everything() else { return };
    let sb = Sandbox::new();
    let skill = sb.home.path().join("config/skills/greet");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\ndescription: greets\n---\nUse the script.\n",
    )
    .unwrap();
    let script = skill.join("scripts/say-hello");
    std::fs::write(
        &script,
        "#!/bin/sh\n# Says hello to its arguments.\necho \"hello $1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("c1", "say_hello", r#"{"args":"world"}"#),
            ("c2", "mcp__everything__echo", r#"{"message":"blocked?"}"#),
        ],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = format!(
        "{}\n[permissions]\nallow = [\"mcp__everything__*\"]\n\n[[hooks.pre_tool_use]]\nmatcher = \"mcp__*\"\ncommand = \"echo 'no MCP calls in this repo' >&2; exit 2\"\n",
        stdio_server("everything", &everything, &["stdio"], "")
    );
    let output = brute(&sb, &server, &config).args(["-p", "go"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", stderr(&output));
    let names = advertised(&requests[0]);
    assert!(names.contains(&"say_hello".to_owned()), "{names:?}");
    assert!(names.contains(&"mcp__everything__echo".to_owned()), "{names:?}");
    let results: std::collections::HashMap<String, String> = tool_results(&requests[1]).into_iter().collect();
    assert_eq!(results["c1"].trim(), "hello world", "{results:?}");
    assert!(
        results["c2"].contains("no MCP calls in this repo") && results["c2"].starts_with("Error"),
        "{results:?}"
    );
}

/// SIGKILL of brute in the middle of an MCP call: brute cannot clean up, yet the server (started
/// through the sandbox's init, which dies with brute and takes its process group along) is gone.
#[test]
fn a_server_does_not_outlive_a_killed_brute() {
    let Some(python) = python() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", &[("c1", "mcp__fx__wait", "{}")])));
    server.push(Reply::sse(openai_sse("never reached", &[])));
    let marker = format!("brute-mcp-killed-{}", std::process::id());
    let config = format!(
        "[permissions]\nallow = [\"mcp__fx__*\"]\n{}",
        stdio_server("fx", &python, &[&fixture(), "stdio", &marker], "")
    );
    // A std command (its child can be killed), with the config written after it is made.
    let mut cmd = sb.std_brute(&server);
    std::fs::write(
        sb.home.path().join("config/config.toml"),
        format!("retry_base_ms = 1\n{config}"),
    )
    .unwrap();
    let mut child = cmd
        .args(["-p", "wait"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The call is under way once the model asked for it and the server runs.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while server.requests().is_empty() || !running(&marker) {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("the call never started: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::yield_now();
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    gone(&marker);
    assert_eq!(server.requests().len(), 1, "brute died during the call");
}

/// tests/fixtures/mcp/raw_server.py (the protocol written by hand) over stdio as server `name`.
fn raw_server(name: &str, python: &std::path::Path, mode: &str, extra: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp/raw_server.py");
    format!(
        "[permissions]\nallow = [\"mcp__{name}__*\"]\n\n{}",
        stdio_server(name, python, &[script, mode], extra)
    )
}

/// One tool without `inputSchema` used to fail the whole server ("cannot list its tools:
/// Unexpected response type"): now the tools brute cannot use are skipped with a notice naming
/// them, one without a schema is taken as taking no arguments, and the rest work.
#[test]
fn a_tool_list_with_bad_tools_keeps_the_good_ones_and_names_the_bad() {
    let Some(python) = python() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("c1", "mcp__raw__echo", r#"{"text":"hi"}"#),
            ("c2", "mcp__raw__no_schema", "{}"),
        ],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = raw_server("raw", &python, "bad", "");
    let output = brute(&sb, &server, &config).args(["-p", "go"]).output().unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{err}");
    let names: Vec<String> = advertised(&requests[0])
        .into_iter()
        .filter(|n| n.starts_with("mcp__raw__"))
        .collect();
    assert_eq!(
        names,
        [
            "mcp__raw__echo",
            "mcp__raw__mixed",
            "mcp__raw__huge",
            "mcp__raw__no_schema"
        ],
        "{err}"
    );
    let bare = tool_spec(&requests[0], "mcp__raw__no_schema");
    assert_eq!(bare["function"]["parameters"]["type"], "object", "{bare}");
    assert!(
        err.contains(
            "MCP server `raw`: skipped 4 of its 8 tools, its other tools work: \
             `string_schema` (its inputSchema is not an object), \
             `array_schema` (its inputSchema's type is not \"object\"), \
             tool #7 (it has no name), `echo` (listed twice)"
        ),
        "{err}"
    );
    let results = tool_results(&requests[1]);
    assert_eq!(results[0].1, "echo: hi", "{results:?}");
    assert_eq!(results[1].1, "no_schema ran", "{results:?}");
}

/// One content item of an unknown type used to lose the whole result: now it is a placeholder
/// between the text items that came with it.
#[test]
fn an_unknown_content_item_is_a_placeholder_and_the_text_is_kept() {
    let Some(python) = python() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", &[("c1", "mcp__raw__mixed", "{}")])));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = raw_server("raw", &python, "good", "");
    let output = brute(&sb, &server, &config).args(["-p", "go"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let results = tool_results(&server.requests()[1]);
    assert_eq!(
        results[0].1, "before\n[unsupported content item of type \"foo\"]\nafter",
        "{results:?}"
    );
}

/// A result over the 16 MiB bound used to be dropped and reported as a time-out a minute later:
/// now the call gets an error naming its size as soon as the message has gone by, brute never
/// holding it (400 MiB), and the server's next call works.
#[test]
fn a_result_over_16_mib_is_an_error_naming_its_size_and_the_server_goes_on() {
    let Some(python) = python() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", &[("c1", "mcp__raw__huge", "{}")])));
    server.push(Reply::sse(openai_sse(
        "",
        &[("c2", "mcp__raw__echo", r#"{"text":"after"}"#)],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = raw_server("raw", &python, "good", "");
    let mut cmd = sb.std_brute(&server);
    let user_config = format!("retry_base_ms = 1\n{config}");
    std::fs::write(sb.home.path().join("config/config.toml"), user_config).unwrap();
    cmd.args(["-p", "go"]);
    let (output, peak_kib) = support::run_measuring_peak_rss(&cmd);
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", stderr(&output));
    let huge = &tool_results(&requests[1])[0].1;
    assert!(
        huge.starts_with("Error: ResultTooLarge: the MCP server `raw`: the server's answer is 419,430,")
            && huge.contains("bytes, over brute's limit of 16 MiB (16,777,216 bytes)"),
        "{huge}"
    );
    assert_eq!(tool_results(&requests[2])[1].1, "echo: after");
    // Neither brute nor any process it waited for came near holding the message.
    let peak_mib = peak_kib / 1024;
    assert!(peak_mib < 300, "a child peaked at {peak_mib} MiB");
}

/// 10,000 tools used to make one 217 KB line on stderr (the tool cap naming every tool it
/// dropped): now every line stays short and the list is summarised.
#[test]
fn ten_thousand_tools_make_short_notices() {
    let Some(python) = python() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("c1", "mcp__raw__echo", r#"{"text":"hi"}"#)],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let config = raw_server("raw", &python, "many", "");
    let output = brute(&sb, &server, &config).args(["-p", "go"]).output().unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err:.2000}");
    let longest = err.lines().map(str::len).max().unwrap_or(0);
    assert!(longest <= 500, "a stderr line of {longest} bytes: {err:.2000}");
    assert!(
        err.contains("the tool cap (128) dropped 9,") && err.contains(" tool(s): first ") && err.contains("of 9,"),
        "{err:.2000}"
    );
    assert_eq!(tool_results(&server.requests()[1])[0].1, "echo: hi");
}

#[test]
fn an_mcp_image_reaches_a_model_that_sees_as_an_image() {
    let Some(everything) = everything() else { return };
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("c1", "mcp__everything__get-tiny-image", "{}")],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    // mock-model is in no table: the setting says it sees.
    let config = format!(
        "{}[models.\"mock-model\"]\nvision = true\n",
        stdio_server("everything", &everything, &["stdio"], "")
    );
    let output = brute(&sb, &server, &config).args(["-p", "show me"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    let messages = requests[1].body["messages"].as_array().cloned().unwrap_or_default();
    let tool = messages
        .iter()
        .position(|m| m["role"] == "tool")
        .expect("a tool message");
    let text = messages[tool]["content"].as_str().unwrap_or_default();
    assert!(text.contains("[image: mcp__everything__get-tiny-image, "), "{text}");
    assert!(text.contains("The image above is the MCP logo."), "{text}");
    // Tool messages carry text only: the image follows as the user's part.
    let parts = messages[tool + 1]["content"].as_array().cloned().unwrap_or_default();
    assert_eq!(messages[tool + 1]["role"], "user");
    assert!(support::has_png_part(&parts), "{parts:?}");
}
