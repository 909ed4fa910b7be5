//! The real `brute` binary against the mock provider: files really read and patched,
//! parallel calls answered in call order, errors as results, every exit code, the output
//! formats, retries and cut streams.

use crate::support;

use predicates::prelude::*;
use serde_json::Value;
use support::{MockServer, Reply, Sandbox, openai_sse, tool_results};

#[test]
fn reads_a_real_file_and_answers() {
    let sb = Sandbox::new();
    sb.write("src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "Reading. ",
        &[("c1", "read", r#"{"file_path":"src/lib.rs"}"#)],
    )));
    server.push(Reply::sse(openai_sse("It returns 42.", &[])));
    sb.brute(&server)
        .args(["-p", "what does answer return?"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Reading. \nIt returns 42."))
        .stderr(predicate::str::contains("[read] src/lib.rs — ok"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["messages"][1]["content"], "what does answer return?");
    let results = tool_results(&requests[1]);
    assert_eq!(
        results,
        vec![(
            "c1".to_owned(),
            "1\tpub fn answer() -> u32 {\n2\t    42\n3\t}\n".to_owned()
        )]
    );
}

#[test]
fn failed_commands_and_denials_say_so_on_stderr() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("s1", "shell", r#"{"command":"echo oops >&2; exit 1"}"#),
            ("w1", "write", r#"{"file_path":"/etc/brute-denied.txt","content":"x"}"#),
        ],
    )));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    let output = sb.brute(&server).args(["-p", "fail please"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("— exit 1 ("), "{stderr}");
    assert!(!stderr.contains("[shell] echo oops >&2; exit 1 — ok"), "{stderr}");
    assert!(stderr.contains("[write] /etc/brute-denied.txt — denied: "), "{stderr}");
}

#[test]
fn the_same_failing_call_is_told_what_to_do_and_the_fifth_ends_the_run() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    for i in 1..=6 {
        server.push(Reply::sse(openai_sse(
            "",
            &[(&format!("c{i}"), "read", r#"{"file_path":"missing.txt"}"#)],
        )));
    }
    sb.brute(&server)
        .args(["-p", "read missing.txt"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "error: stopped: the model made the same failing call 5 times (`read` with the same arguments",
        ));
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "the fifth failing call ends the turn");
    let results = tool_results(&requests[4]);
    assert!(!results[1].1.contains("Stop:"), "{}", results[1].1);
    let third = &results[2].1;
    assert!(
        third.contains("Stop: this is the 3rd time this exact call (`read` with the same arguments) failed."),
        "{third}"
    );
    assert!(third.contains("The path does not exist."), "{third}");
    assert!(!third.contains("identical call in a row"), "one note, not two: {third}");
}

#[test]
fn an_at_mention_attaches_the_file_to_the_first_request() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "buy milk\ncall mum\n");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Two errands.", &[])));
    sb.brute(&server)
        .args(["-p", "summarize @notes.txt please"])
        .assert()
        .success()
        .stderr(predicate::str::contains("attached: notes.txt (2 lines)"));
    let requests = server.requests();
    let sent = requests[0].body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(sent.starts_with("summarize @notes.txt please\n\n"), "{sent}");
    assert!(
        sent.contains("<attached path=\"notes.txt\" (2 lines)>\n1\tbuy milk\n2\tcall mum\n</attached>"),
        "{sent}"
    );
}

#[test]
fn exec_runs_headless_and_a_missing_session_says_how_to_list_them() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Fixed.", &[])));
    sb.brute(&server)
        .args(["exec", "fix", "it"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Fixed."));
    assert_eq!(server.requests()[0].body["messages"][1]["content"], "fix it");
    let out = sb
        .brute(&server)
        .args(["-r", "nonexistent", "-p", "hi"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no such session: nonexistent; `brute -r` lists them"),
        "{stderr}"
    );
    assert!(!stderr.contains(".jsonl"), "no internal paths: {stderr}");
    sb.bare()
        .args(["undo", "that", "change"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "hint: `undo` is a subcommand; for a prompt, quote it",
        ));
}

#[test]
fn patches_a_real_file() {
    let sb = Sandbox::new();
    sb.write("config.py", "LIMIT = 10\nfor i in range(LIMIT - 1):\n    pass\n");
    let server = MockServer::start();
    let args = r#"{"file_path":"config.py","old_string":"range(LIMIT - 1)","new_string":"range(LIMIT)"}"#;
    server.push(Reply::sse(openai_sse("", &[("p1", "patch", args)])));
    server.push(Reply::sse(openai_sse("Fixed the off-by-one.", &[])));
    sb.brute(&server)
        .args(["-p", "fix the off-by-one", "-q"])
        .assert()
        .success()
        .stderr("");
    assert_eq!(
        std::fs::read_to_string(sb.path("config.py")).unwrap(),
        "LIMIT = 10\nfor i in range(LIMIT):\n    pass\n"
    );
    let results = tool_results(&server.requests()[1]);
    assert!(
        results[0].1.starts_with("Replaced 1 occurrence in config.py."),
        "{}",
        results[0].1
    );
    assert!(
        results[0]
            .1
            .contains("-for i in range(LIMIT - 1):\n+for i in range(LIMIT):")
    );
}

#[test]
fn parallel_calls_are_answered_in_call_order() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            // The first call waits for a file the second call creates: it can only finish if
            // both run at the same time. It then works a while longer, so it finishes last.
            (
                "slow",
                "shell",
                r#"{"command":"while [ ! -f go ]; do sleep 0.01; done; sleep 0.3; echo first"}"#,
            ),
            ("fast", "shell", r#"{"command":"touch go; echo second"}"#),
        ],
    )));
    server.push(Reply::sse(openai_sse("ok", &[])));
    let out = sb
        .brute(&server)
        .args(["-p", "go", "--output-format", "events"])
        .assert()
        .success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let finished: Vec<String> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["call_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        finished,
        vec!["fast", "slow"],
        "each result is announced as soon as it is ready"
    );
    let results = tool_results(&server.requests()[1]);
    assert_eq!(
        results,
        vec![("slow".into(), "first\n".into()), ("fast".into(), "second\n".into())]
    );
}

#[test]
fn tool_errors_become_results() {
    let sb = Sandbox::new();
    sb.write("src/main.rs", "fn main() {}\n");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("a", "read", r#"{"file_path":"src/mian.rs"}"#),
            ("b", "nosuchtool", r#"{}"#),
            ("c", "read", r#"{"file_path": 5}"#),
            ("d", "read", r#"{"file_path": "#),
        ],
    )));
    server.push(Reply::sse(openai_sse("noted", &[])));
    sb.brute(&server)
        .args(["-p", "x"])
        .assert()
        .success()
        .stderr(predicate::str::contains("[read] src/mian.rs — error: NotFound"));
    let results = tool_results(&server.requests()[1]);
    assert_eq!(results.len(), 4, "every call got exactly one result");
    assert_eq!(
        results[0].1,
        "Error: NotFound: File not found: src/mian.rs. Did you mean: src/main.rs?"
    );
    assert!(results[1].1.starts_with("Error: UnknownTool: no tool named `nosuchtool`. Available tools: read, write, patch, remove, undo, fs_search, shell, shell_output, shell_kill, fetch, todo_write, todo_read, question, skill, task"), "{}", results[1].1);
    assert!(
        results[2].1.starts_with(
            "Error: InvalidArguments: arguments do not match the `read` schema: /file_path: 5 is not of type \"string\""
        ),
        "{}",
        results[2].1
    );
    assert!(
        results[3]
            .1
            .starts_with("Error: InvalidArguments: arguments are not valid JSON"),
        "{}",
        results[3].1
    );
}

#[test]
fn json_output_shape() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", &[("r", "read", r#"{"file_path":"a.txt"}"#)])));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    let out = sb
        .brute(&server)
        .args(["-p", "x", "--output-format", "json"])
        .assert()
        .success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert_eq!(
        stdout.lines().count(),
        1,
        "json prints one object and nothing else: {stdout}"
    );
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["outcome"], "done");
    assert_eq!(v["result"], "Done.");
    assert_eq!(v["tool_calls"][0]["name"], "read");
    assert_eq!(v["tool_calls"][0]["arguments"]["file_path"], "a.txt");
    assert_eq!(v["tool_calls"][0]["result"], "1\talpha\n");
    assert_eq!(v["tool_calls"][0]["is_error"], false);
    assert_eq!(v["usage"]["input_tokens"], 22);
    assert_eq!(v["model"], "mock-model");
    assert!(v["duration_ms"].is_u64());
    // Claude Code's result fields.
    assert_eq!(v["type"], "result");
    assert_eq!(v["subtype"], "success");
    assert_eq!(v["is_error"], false);
    assert_eq!(v["num_turns"], 2);
    assert_eq!(v["session_id"], v["session"]);
    assert!(
        v["total_cost_usd"].is_null(),
        "no cost for an unknown price, never a guess: {v}"
    );
}

#[test]
fn stream_json_prints_every_event() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Hello there", &[])));
    let out = sb
        .brute(&server)
        .args(["-p", "hi", "--output-format", "events"])
        .assert()
        .success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let kinds: Vec<String> = stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("every line is JSON")["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        // The turn's checkpoint runs beside the request: whether the turn's end waits for it
        // (and says so) depends on which finishes first.
        .filter(|kind| kind != "checkpoint_waiting")
        .collect();
    assert!(
        stdout
            .matches(r#""type":"checkpoint_waiting""#)
            .count()
            .is_multiple_of(2),
        "a wait is announced and ended: {stdout}"
    );
    assert_eq!(
        kinds,
        [
            "system",
            "turn_started",
            "request_started",
            "text_delta",
            "text_delta",
            "usage",
            "context_usage",
            "turn_finished",
            "result"
        ]
    );
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let finished = &lines[lines.len() - 2];
    assert_eq!(finished["outcome"], "done");
    assert_eq!(finished["text"], "Hello there");
}

/// The first line is Claude Code's `system`/`init` line, the last its `result` line; brute's
/// own events stay in between.
#[test]
fn stream_json_starts_with_init_and_ends_with_the_result() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", &[("r", "read", r#"{"file_path":"a.txt"}"#)])));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    let out = sb
        .brute(&server)
        .args(["-p", "x", "--tools", "read,shell", "--output-format", "events"])
        .assert()
        .success();
    let lines: Vec<Value> = out
        .get_output()
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("every line is JSON"))
        .collect();
    let raw = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(raw.starts_with(r#"{"type":"system","subtype":"init","#), "{raw}");
    assert!(
        raw.lines()
            .last()
            .unwrap()
            .starts_with(r#"{"type":"result","subtype":"success","#),
        "{raw}"
    );
    let init = &lines[0];
    assert_eq!(init["type"], "system");
    assert_eq!(init["subtype"], "init");
    assert_eq!(init["model"], "mock-model");
    assert_eq!(init["tools"], serde_json::json!(["read", "shell"]));
    let cwd = std::fs::canonicalize(sb.project.path()).unwrap();
    assert_eq!(std::fs::canonicalize(init["cwd"].as_str().unwrap()).unwrap(), cwd);
    let session = init["session_id"].as_str().expect("a session id").to_owned();
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "Done.");
    assert_eq!(result["session_id"], session.as_str());
    assert_eq!(result["num_turns"], 2, "two model requests");
    assert!(result["duration_ms"].is_u64());
    assert_eq!(result["usage"]["input_tokens"], 22);
    assert_eq!(result["usage"]["cache_read_input_tokens"], 0);
    assert_eq!(result["tool_calls"][0]["name"], "read", "brute's fields stay");
    assert_eq!(
        lines.iter().filter(|l| l["type"] == "result").count(),
        1,
        "one result line"
    );
}

/// `jq` where it is installed; under CI it must be (`.ci/run` installs it), elsewhere the
/// test says it skipped.
fn jq(filter: &str, input: &[u8]) -> Option<String> {
    use std::io::Write;
    let child = std::process::Command::new("jq")
        .args(["-c", filter])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "jq is not installed, and CI must run this test: {e}"
            );
            eprintln!("skipping the jq part: jq is not installed (apt-get install jq)");
            return None;
        }
    };
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "jq failed: {out:?}");
    Some(String::from_utf8(out.stdout).unwrap())
}

/// What scripts written for Claude Code do: `jq 'select(.type=="result")'` on either format
/// gives the one result object.
#[test]
fn jq_selects_the_result_from_stream_json_and_json() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    for format in ["stream-json", "events", "json"] {
        server.push(Reply::sse(openai_sse("The answer.", &[])));
        let out = sb
            .brute(&server)
            .args(["-p", "x", "--output-format", format])
            .assert()
            .success();
        let stdout = &out.get_output().stdout;
        // Parsed in Rust: exactly one line is the result.
        let results: Vec<Value> = stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice::<Value>(l).unwrap())
            .filter(|v| v["type"] == "result")
            .collect();
        assert_eq!(results.len(), 1, "{format}");
        assert_eq!(results[0]["result"], "The answer.");
        let Some(selected) = jq(r#"select(.type=="result")"#, stdout) else {
            continue;
        };
        assert_eq!(selected.lines().count(), 1, "{format}: {selected}");
        let v: Value = serde_json::from_str(&selected).unwrap();
        assert_eq!(v["subtype"], "success", "{format}");
        assert_eq!(v["is_error"], false);
        assert_eq!(v["result"], "The answer.");
        let text = jq(r#"select(.type=="result") | .result"#, stdout).unwrap();
        assert_eq!(text, "\"The answer.\"\n");
    }
}

#[test]
fn retries_after_429_then_succeeds() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(
        Reply::json(
            429,
            r#"{"error":{"message":"Rate limit","type":"rate_limit_exceeded"}}"#,
        )
        .header("retry-after", "0"),
    );
    server.push(Reply::sse(openai_sse("fine", &[])));
    sb.brute(&server)
        .args(["-p", "x"])
        .assert()
        .success()
        .stdout("fine\n")
        .stderr(predicate::str::contains(
            "retrying (attempt 2/4) in 0 ms: the provider returned HTTP 429: rate_limit_exceeded: Rate limit",
        ));
}

#[test]
fn provider_error_exits_1() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    for _ in 0..4 {
        server.push(Reply::json(500, "internal"));
    }
    sb.brute(&server)
        .args(["-p", "x"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "error: the provider returned HTTP 500: internal",
        ));
    assert_eq!(server.requests().len(), 4, "default: 4 attempts");
}

#[test]
fn a_cut_stream_exits_1_and_runs_no_half_received_call() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let body = openai_sse("", &[("w", "write", r#"{"file_path":"made.txt","content":"x"}"#)]);
    let cut = body.find("finish_reason\":\"tool_calls").unwrap() - 60;
    server.push(Reply::sse(body).cut_at(cut));
    sb.brute(&server)
        .args(["-p", "x"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cut before it finished"));
    assert!(!sb.path("made.txt").exists());
}

#[test]
fn auth_error_names_the_variable() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    ));
    sb.bare()
        .args(["--provider", "openai", "--base-url", &server.url("/v1"), "-p", "x"])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("authentication failed (401)").and(predicate::str::contains("OPENAI_API_KEY")),
        );
}

#[test]
fn no_provider_exits_2_with_what_to_set() {
    let sb = Sandbox::new();
    sb.bare().args(["-p", "x"]).assert().code(2).stdout("").stderr(
        predicate::str::contains("ANTHROPIC_API_KEY")
            .and(predicate::str::contains("OPENAI_API_KEY"))
            .and(predicate::str::contains("OLLAMA_HOST")),
    );
    sb.bare().args(["--provider", "bogus", "-p", "x"]).assert().code(2);
    sb.bare().args(["--max-turns", "0", "-p", "x"]).assert().code(2);
}

#[test]
fn iteration_cap_exits_3_with_every_call_answered() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("s1", "shell", r#"{"command":"echo one"}"#)],
    )));
    server.push(Reply::sse(openai_sse(
        "",
        &[("s2", "shell", r#"{"command":"echo two"}"#)],
    )));
    let out = sb
        .brute(&server)
        .args(["-p", "loop", "--max-turns", "2", "--output-format", "json"])
        .assert()
        .code(3);
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["outcome"], "max_turns");
    assert_eq!(v["subtype"], "error_max_turns");
    assert_eq!(v["is_error"], true);
    assert_eq!(v["tool_calls"][1]["result"], "two\n");
    assert!(v["notices"][0].as_str().unwrap().contains("iteration cap"));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn piped_stdin_joins_the_prompt() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("LGTM", &[])));
    sb.brute(&server)
        .args(["-p", "review this"])
        .write_stdin("diff --git a/x b/x\n+added\n")
        .assert()
        .success();
    let prompt = server.requests()[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(prompt, "review this\n\n<stdin>\ndiff --git a/x b/x\n+added\n</stdin>");
}

#[test]
fn question_without_a_person_says_so() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "q",
            "question",
            r#"{"questions":[{"question":"Which DB?","options":[{"label":"sqlite"},{"label":"postgres"}]}]}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("Assuming sqlite.", &[])));
    sb.brute(&server).args(["-p", "set up a db"]).assert().success();
    let results = tool_results(&server.requests()[1]);
    assert!(
        results[0].1.starts_with("No interactive user is present"),
        "{}",
        results[0].1
    );
}

#[test]
fn tool_filtering_changes_what_is_advertised() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("a", &[])));
    server.push(Reply::sse(openai_sse("b", &[])));
    sb.brute(&server)
        .args(["-p", "x", "--tools", "read,fs_search"])
        .assert()
        .success();
    sb.brute(&server).args(["-p", "x", "--no-tools"]).assert().success();
    let requests = server.requests();
    let names: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "fs_search"]);
    assert!(requests[1].body.get("tools").is_none());
}

#[test]
fn first_request_stays_small() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.brute(&server).args(["-p", "hello"]).assert().success();
    let size = server.requests()[0].raw_len;
    eprintln!("first request: {size} bytes");
    assert!(size <= 12 * 1024, "first request is {size} bytes");
}

#[test]
fn config_command_shows_sources_and_hides_keys() {
    let sb = Sandbox::new();
    sb.bare()
        .env("OPENAI_API_KEY", "sk-very-secret-value")
        .arg("config")
        .assert()
        .success()
        .stdout(
            predicate::str::contains("provider         = openai")
                .and(predicate::str::contains("detected: OPENAI_API_KEY is set"))
                .and(predicate::str::contains("(set, 20 chars, hidden)"))
                .and(predicate::str::contains("retry_base_ms    = 1"))
                .and(predicate::str::contains("sk-very-secret").not()),
        );
}

#[test]
fn config_command_works_with_nothing_configured() {
    let sb = Sandbox::new();
    let user = sb.home.path().join("config").join("config.toml");
    let project = sb.path(".brute/config.toml");
    sb.bare()
        .env("BRUTE_API_KEY", "sk-brute-secret-value")
        .env("OPENAI_BASE_URL", "http://secret-host.invalid/v1")
        .arg("config")
        .assert()
        .code(0)
        .stdout(
            predicate::str::starts_with("no model provider configured\n")
                .and(predicate::str::contains("retry_base_ms    = 1"))
                .and(predicate::str::contains(format!(
                    "user config      {} (sets retry_base_ms)",
                    user.display()
                )))
                .and(predicate::str::contains(format!(
                    "project config   {} (not found)",
                    project.display()
                )))
                .and(predicate::str::contains("environment      BRUTE_API_KEY\n"))
                .and(predicate::str::contains("BRUTE_API_KEY          set      (api_key)"))
                .and(predicate::str::contains("ANTHROPIC_API_KEY      not set"))
                .and(predicate::str::contains("OPENAI_BASE_URL        set"))
                .and(predicate::str::contains("OLLAMA_HOST            not set"))
                .and(predicate::str::contains("BRUTE_NO_OLLAMA_PROBE  set"))
                .and(predicate::str::contains("Set one of:\n  ANTHROPIC_API_KEY=..."))
                .and(predicate::str::contains("sk-brute-secret").not())
                .and(predicate::str::contains("secret-host").not()),
        )
        .stderr(predicate::str::is_empty());
}

#[test]
fn config_command_without_a_key_says_what_to_set() {
    let sb = Sandbox::new();
    sb.write(".brute/config.toml", "provider = \"anthropic\"\n");
    sb.trust();
    sb.bare().arg("config").assert().code(0).stdout(
        predicate::str::starts_with("no API key for anthropic: set ANTHROPIC_API_KEY")
            .and(predicate::str::contains("(sets provider)")),
    );
    // A broken config file is still an error.
    sb.write(".brute/config.toml", "bogus = 1\n");
    sb.bare()
        .arg("config")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown field `bogus`"));
}

/// A rule's pattern is read as its tool says: one the file tools cannot read as a path glob
/// stops the start (exit 2, nothing sent), naming the rule, its file and the tool; the same
/// pattern on `shell`, which reads text, is fine.
#[test]
fn a_path_rule_that_is_no_glob_stops_the_start() {
    let sb = Sandbox::new();
    sb.write(".brute/config.toml", "[permissions]\ndeny = [\"write([)\"]\n");
    sb.trust();
    sb.bare()
        .args(["--provider", "replay", "-p", "show me around"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(
            predicate::str::contains(
                "permissions.deny: permission rule `write([)`: not a valid path pattern for `write`",
            )
            .and(predicate::str::contains(".brute/config.toml")),
        );
    sb.write(".brute/config.toml", "[permissions]\ndeny = [\"shell([)\"]\n");
    sb.trust();
    sb.bare()
        .args(["--provider", "replay", "-p", "show me around"])
        .assert()
        .code(0);
}

#[test]
fn a_config_that_is_not_utf8_is_a_usage_error_naming_the_file_and_byte() {
    let sb = Sandbox::new();
    sb.write(".brute/config.toml", "model = \"m\"\n");
    let project = sb.path(".brute/config.toml");
    std::fs::write(&project, b"model = \"\xff\"\n").unwrap();
    sb.bare()
        .arg("config")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{}: not valid UTF-8 at byte 9",
            project.display()
        )));
    // The user's config, written after the sandbox writes its own.
    std::fs::remove_file(&project).unwrap();
    let cmd = sb.std_command();
    let user = sb.home.path().join("config").join("config.toml");
    std::fs::write(&user, b"retry_base_ms = 1\n# \xfe\n").unwrap();
    assert_cmd::Command::from_std(cmd)
        .timeout(support::RUN_DEADLINE)
        .args(["-p", "x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{}: not valid UTF-8 at byte 20",
            user.display()
        )));
}

#[test]
fn replay_demo_runs_without_a_key() {
    let sb = Sandbox::new();
    sb.write("README.md", "# demo project\n");
    sb.bare()
        .args(["--provider", "replay", "-p", "show me around"])
        .assert()
        .success()
        .stdout(predicate::str::contains("That was the replay demo"))
        .stderr(predicate::str::contains("[fs_search] *.md — ok").and(predicate::str::contains("[shell]")));
}

#[test]
fn sigint_gives_pending_calls_results_and_exits_130() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("long", "shell", r#"{"command":"echo started; sleep 30"}"#)],
    )));
    let mut run = support::Streaming::start(sb.std_brute(&server), "x");
    // Wait for the command's first output: the tool is running.
    run.until(|line| line.contains("\"tool_output_delta\""));
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(run.child.id() as i32, libc::SIGINT) };
    run.rest();
    let status = run.child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let events: Vec<Value> = run.seen.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result")
        .expect("the running call got a result");
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with("Error: Interrupted: started\n"),
        "{result}"
    );
    assert_eq!(events.last().unwrap()["outcome"], "interrupted");
}

/// `timeout -s INT` signals brute and then its whole process group: two SIGINTs at once are
/// one interrupt (the JSON result is still written, exit 130), not "Ctrl-C twice: quit now".
#[test]
fn sigint_to_the_process_group_counts_once() {
    use std::os::unix::process::CommandExt;
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("long", "shell", r#"{"command":"echo started; sleep 30"}"#)],
    )));
    let mut cmd = sb.std_brute(&server);
    cmd.process_group(0);
    let mut run = support::Streaming::start(cmd, "x");
    run.until(|line| line.contains("\"tool_output_delta\""));
    let pid = run.child.id() as i32;
    // SAFETY: kill(2) on our own child and its process group (which holds only it).
    unsafe {
        libc::kill(pid, libc::SIGINT);
        libc::kill(-pid, libc::SIGINT);
    }
    run.rest();
    let status = run.child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let last: Value = serde_json::from_str(run.seen.last().unwrap()).unwrap();
    assert_eq!(last["type"], "result", "the result object is still written");
    assert_eq!(last["outcome"], "interrupted");
}

#[test]
fn completions_and_man_page_match_the_cli() {
    for (shell, file) in [
        ("bash", "brute.bash"),
        ("zsh", "_brute"),
        ("fish", "brute.fish"),
        ("man", "brute.1"),
    ] {
        let committed = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("completions")
                .join(file),
        )
        .unwrap_or_else(|_| {
            panic!("completions/{file} is missing: run `brute completions {shell} > completions/{file}`")
        });
        let out = assert_cmd::Command::cargo_bin("brute")
            .unwrap()
            .args(["completions", shell])
            .assert()
            .success();
        assert!(
            out.get_output().stdout == committed,
            "completions/{file} drifted from the CLI: run `brute completions {shell} > completions/{file}`"
        );
    }
}

#[test]
fn provider_keys_do_not_reach_commands() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("s", "shell", r#"{"command":"echo \"[$OPENAI_API_KEY][$OTHER_VAR]\""}"#)],
    )));
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.brute(&server)
        .env("OPENAI_API_KEY", "sk-secret-for-test")
        .env("OTHER_VAR", "visible")
        .args(["-p", "x"])
        .assert()
        .success();
    assert_eq!(tool_results(&server.requests()[1])[0].1, "[][visible]\n");
    // Every file under sessions/: the session files and the turn records in turns/.
    let mut dirs = vec![sb.home.path().join("data/sessions")];
    let mut files = 0;
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                dirs.push(entry.path());
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(entry.path()).unwrap();
            assert!(
                !text.contains("sk-secret-for-test"),
                "the key reached {}",
                entry.path().display()
            );
        }
    }
    assert!(files > 0, "no session file was written");
}

#[test]
fn replay_scripts_from_a_file() {
    let sb = Sandbox::new();
    sb.write(
        "script.jsonl",
        "# a comment\n{\"text\": \"Reading. \", \"tool_calls\": [{\"name\": \"read\", \"arguments\": {\"file_path\": \"script.jsonl\"}}]}\n{\"error\": \"simulated outage\"}\n",
    );
    sb.bare()
        .args(["--provider", "replay", "--script", "script.jsonl", "-p", "x"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("Reading."))
        .stderr(
            predicate::str::contains("[read] script.jsonl — ok")
                .and(predicate::str::contains("error: replay: simulated outage")),
        );
    sb.write("bad.jsonl", "{\"text\": 5}\n");
    sb.bare()
        .args(["--provider", "replay", "--script", "bad.jsonl", "-p", "x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("replay: line 1"));
    sb.bare()
        .args(["--provider", "replay", "--script", "missing.jsonl", "-p", "x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read the replay script missing.jsonl"));
}

#[test]
fn short_m_sets_the_model() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.bare()
        .args([
            "--provider",
            "openai",
            "--base-url",
            &server.url("/v1"),
            "-m",
            "other-model",
            "-p",
            "x",
        ])
        .assert()
        .success();
    assert_eq!(server.requests()[0].body["model"], "other-model");
}

#[test]
fn short_r_resumes_a_session() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("First answer.", &[])));
    let out = sb
        .brute(&server)
        .args(["-p", "first question", "--output-format", "json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let id = v["session_id"].as_str().unwrap().to_owned();
    server.push(Reply::sse(openai_sse("Second answer.", &[])));
    sb.brute(&server)
        .args(["-r", &id, "-p", "second question"])
        .assert()
        .success()
        .stdout("Second answer.\n");
    let users: Vec<Value> = server.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(users, ["first question", "second question"]);
    sb.brute(&server)
        .args(["-r", "no-such-session", "-p", "x"])
        .assert()
        .code(2);
}

#[test]
fn short_c_upper_runs_in_the_directory() {
    let sb = Sandbox::new();
    sb.write("sub/inner.txt", "from the subdirectory\n");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("r", "read", r#"{"file_path":"inner.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Read it.", &[])));
    let out = sb
        .brute(&server)
        .args(["-C", "sub", "-p", "read inner.txt", "--output-format", "events"])
        .assert()
        .success();
    let init: Value = serde_json::from_slice(out.get_output().stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(
        std::fs::canonicalize(init["cwd"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(sb.path("sub")).unwrap()
    );
    assert_eq!(
        tool_results(&server.requests()[1]),
        vec![("r".to_owned(), "1\tfrom the subdirectory\n".to_owned())]
    );
    // --cd is the long form; a missing directory is a usage error before anything runs.
    sb.brute(&server)
        .args(["--cd", "missing", "-p", "x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot change to missing"));
    assert_eq!(server.requests().len(), 2);
}

/// `--add-dir` opens another tree to the tools; with -C a relative one starts in -C's
/// directory (as `git -C` takes paths).
#[test]
fn add_dir_works_with_cd() {
    let sb = Sandbox::new();
    // Outside the temp dir, which the sandbox lets everything write anyway.
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::create_dir_all(base.path().join("app")).unwrap();
    std::fs::create_dir_all(base.path().join("shared")).unwrap();
    let target = base.path().join("shared/out.txt");
    let args = serde_json::json!({"file_path": target, "content": "written\n"}).to_string();
    let server = MockServer::start();
    // Without --add-dir the write is outside the project: asked, so refused without a person.
    server.push(Reply::sse(openai_sse("", &[("w", "write", &args)])));
    server.push(Reply::sse(openai_sse("Could not.", &[])));
    sb.brute(&server)
        .current_dir(base.path())
        .args(["-C", "app", "-p", "write it"])
        .assert()
        .success();
    assert!(!target.exists(), "written outside the project without --add-dir");
    let refused = &tool_results(&server.requests()[1])[0].1;
    assert!(refused.contains("outside the writable roots"), "{refused}");
    server.push(Reply::sse(openai_sse("", &[("w", "write", &args)])));
    server.push(Reply::sse(openai_sse("Wrote it.", &[])));
    sb.brute(&server)
        .current_dir(base.path())
        .args(["-C", "app", "--add-dir", "../shared", "-p", "write it"])
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "written\n");
    let result = &tool_results(&server.requests()[3])[0].1;
    assert!(!result.starts_with("Error"), "{result}");
}

#[test]
fn p_dash_reads_the_prompt_from_stdin() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("a", &[])));
    server.push(Reply::sse(openai_sse("b", &[])));
    sb.brute(&server)
        .args(["-p", "-"])
        .write_stdin("the whole task\nfrom stdin\n")
        .assert()
        .success();
    // `-p` without text and stdin piped: the same.
    sb.brute(&server)
        .arg("-p")
        .write_stdin("another task")
        .assert()
        .success();
    let requests = server.requests();
    assert_eq!(
        requests[0].body["messages"][1]["content"],
        "the whole task\nfrom stdin\n"
    );
    assert_eq!(requests[1].body["messages"][1]["content"], "another task");
}

#[test]
fn an_empty_prompt_is_a_usage_error() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    for args in [&["-p", ""][..], &["-p", "  "], &["-p", "-"], &["-p"], &["--", ""]] {
        sb.brute(&server)
            .args(args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains("the prompt is empty"));
    }
    sb.brute(&server)
        .args(["-p", "a", "b"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("two prompts"));
    assert!(server.requests().is_empty());
}

/// A first argument naming a subcommand is the subcommand; after `--` it is a prompt.
#[test]
fn double_dash_makes_a_subcommand_name_a_prompt() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Nothing to undo yet.", &[])));
    sb.brute(&server)
        .args(["-p", "--", "undo that"])
        .assert()
        .success()
        .stdout("Nothing to undo yet.\n");
    assert_eq!(server.requests()[0].body["messages"][1]["content"], "undo that");
    // Without `--`, `undo` is the subcommand: it undoes that turn.
    sb.bare()
        .arg("undo")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("undid turn 1 (\"undo that\")"));
    // A positional prompt without -p opens the UI, which needs a terminal (and a build with it).
    let refusal = if cfg!(feature = "tui") {
        "needs a terminal"
    } else {
        "built without the `tui` feature"
    };
    sb.brute(&server)
        .args(["--", "undo that"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(refusal));
    assert_eq!(server.requests().len(), 1);
}

/// `brute config` in an empty home with no config directory set: where it looked (the
/// platform paths), what to set and the file to create.
#[test]
fn config_command_in_an_empty_home_prints_the_searched_paths() {
    let sb = Sandbox::new();
    let home = tempfile::tempdir().unwrap();
    let user = home.path().join(".config/brute/config.toml");
    let data = home.path().join(".local/share/brute");
    sb.bare()
        .env("HOME", home.path())
        .env_remove("BRUTE_CONFIG_DIR")
        .env_remove("BRUTE_DATA_DIR")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .arg("config")
        .assert()
        .code(0)
        .stdout(
            predicate::str::starts_with("no model provider configured\n")
                .and(predicate::str::contains(format!(
                    "user config      {} (not found)",
                    user.display()
                )))
                .and(predicate::str::contains(format!(
                    "project config   {} (not found)",
                    sb.path(".brute/config.toml").display()
                )))
                .and(predicate::str::contains(format!(
                    "data directory (sessions, checkpoints, trust; BRUTE_DATA_DIR overrides): {}",
                    data.display()
                )))
                .and(predicate::str::contains("BRUTE_CONFIG_DIR       not set"))
                .and(predicate::str::contains("Set one of:\n  ANTHROPIC_API_KEY=..."))
                .and(predicate::str::contains(format!("Or create {} with", user.display()))),
        )
        .stderr("");
}

/// `BRUTE_TIMINGS=1` prints brute's own timestamps at exit, in order; without it, nothing.
#[test]
fn timings_are_reported_on_request() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("one", &[])));
    server.push(Reply::sse(openai_sse("two", &[])));
    let out = sb
        .brute(&server)
        .env("BRUTE_TIMINGS", "1")
        .args(["-p", "x"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.lines().find(|l| l.starts_with("brute timings:")).expect(&stderr);
    let value = |key: &str| -> f64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{key}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{key} in {line}"))
    };
    let (first, last, exit) = (value("first_request_ms"), value("last_byte_ms"), value("exit_ms"));
    assert!(0.0 < first && first <= last && last <= exit, "{line}");
    assert!(
        (value("exit_after_last_byte_ms") - (exit - last)).abs() < 0.02,
        "{line}"
    );
    let out = sb.brute(&server).args(["-p", "x"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("brute timings"));
}

/// A flag Claude Code's SDK passes that changes nothing in brute is accepted, with a note on
/// stderr; a flag nobody knows is still a usage error (exit 2) that names it.
#[test]
fn sdk_flags_are_accepted_with_a_note_and_an_unknown_flag_is_a_usage_error() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("fine", &[])));
    sb.brute(&server)
        .args(["-p", "x", "--betas", "b", "--fallback-model", "other"])
        .assert()
        .success()
        .stdout(predicate::str::contains("fine"))
        .stderr(predicate::str::contains("--betas is Claude Code's"))
        .stderr(predicate::str::contains("--fallback-model"));
    sb.brute(&server)
        .args(["-p", "x", "--no-such-flag"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--no-such-flag"));
}
