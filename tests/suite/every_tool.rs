//! `brute -p` against the mock provider, exercising every built-in tool once, plus command
//! tools from config and the `task` sub-agent; the results are checked in the requests the
//! model received.

use crate::support;

use serde_json::Value;
use support::{MockServer, Reply, Sandbox, openai_sse, tool_results};

fn results_by_id(request: &support::Recorded) -> std::collections::HashMap<String, String> {
    tool_results(request).into_iter().collect()
}

#[test]
fn every_tool_once() {
    let sb = Sandbox::new();
    sb.write("src/lib.rs", "pub fn greet() -> &'static str { \"hello\" }\n");
    sb.write(
        ".brute/skills/greet/SKILL.md",
        "---\ndescription: How to greet\n---\nSay hello politely.\n",
    );
    sb.write(
        ".brute/config.toml",
        r#"
[[tools]]
name = "count_words"
description = "Count words in a file"
params = { path = "string: the file" }
command = "wc -w < {{path}} | tr -d ' '; echo \"arg=$BRUTE_ARG_PATH\"; cat"

[[tools]]
name = "fails"
description = "Always fails"
command = "echo bad >&2; exit 4"
"#,
    );
    sb.trust();
    let server = MockServer::start();
    let page = server.url("/page");
    let batch1 = [
        (
            "w",
            "write",
            r#"{"file_path":"notes.txt","content":"hi there\n"}"#.to_owned(),
        ),
        ("r", "read", r#"{"file_path":"src/lib.rs"}"#.to_owned()),
        ("s", "fs_search", r#"{"pattern":"greet","glob":"*.rs"}"#.to_owned()),
        ("sh", "shell", r#"{"command":"echo from-shell"}"#.to_owned()),
        ("f", "fetch", format!(r#"{{"url":"{page}"}}"#)),
        (
            "tw",
            "todo_write",
            r#"{"todos":[{"id":"1","content":"greet","status":"in_progress"}]}"#.to_owned(),
        ),
        ("sk", "skill", r#"{"name":"greet"}"#.to_owned()),
        ("q", "question", r#"{"questions":[{"question":"Formal?"}]}"#.to_owned()),
        ("cw", "count_words", r#"{"path":"src/lib.rs"}"#.to_owned()),
        ("fl", "fails", "{}".to_owned()),
    ];
    let batch1: Vec<(&str, &str, &str)> = batch1.iter().map(|(a, b, c)| (*a, *b, c.as_str())).collect();
    server.push(Reply::sse(openai_sse("", &batch1)));
    server.push(
        Reply::json(
            200,
            "<html><body><h1>Docs</h1><p>Use <code>greet()</code>.</p></body></html>",
        )
        .header("content-type", "text/html"),
    );
    server.push(Reply::sse(openai_sse(
        "",
        &[
            (
                "p",
                "patch",
                r#"{"file_path":"notes.txt","old_string":"hi","new_string":"hello"}"#,
            ),
            ("tr", "todo_read", "{}"),
            (
                "t",
                "task",
                r#"{"task":"What does src/lib.rs say?","description":"read lib"}"#,
            ),
        ],
    )));
    server.push(Reply::sse(openai_sse(
        "",
        // Not notes.txt: the patch of the same message may or may not have run yet.
        &[("sub_r", "read", r#"{"file_path":"src/lib.rs"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Report: notes.txt says hello there.", &[])));
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("rm", "remove", r#"{"path":"notes.txt"}"#),
            ("u", "undo", r#"{"path":"notes.txt"}"#),
        ],
    )));
    server.push(Reply::sse(openai_sse("All done.", &[])));

    let out = sb
        .brute(&server)
        .args(["-p", "tour", "--output-format", "events"])
        .assert()
        .success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        7,
        "{:?}",
        requests.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    assert_eq!(requests[1].method, "GET");

    let names: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"count_words") && names.contains(&"task"));
    assert!(
        requests[0].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("- greet: How to greet"),
        "skills are listed in the system prompt"
    );

    let r = results_by_id(&requests[2]);
    assert!(r["w"].starts_with("Created notes.txt (9 bytes)."), "{}", r["w"]);
    assert_eq!(r["r"], "1\tpub fn greet() -> &'static str { \"hello\" }\n");
    assert_eq!(r["s"], "src/lib.rs:1:pub fn greet() -> &'static str { \"hello\" }\n");
    assert_eq!(r["sh"], "from-shell\n");
    assert!(
        r["f"].contains("Status: 200 OK") && r["f"].contains("# Docs") && r["f"].contains("`greet()`"),
        "{}",
        r["f"]
    );
    assert!(r["tw"].starts_with("Todo list updated:\n[~] 1: greet"));
    assert!(r["sk"].contains("Say hello politely."));
    assert!(r["q"].starts_with("No interactive user is present"));
    assert_eq!(r["cw"], "9\narg=src/lib.rs\n{\"path\":\"src/lib.rs\"}");
    assert_eq!(r["fl"], "Error: CommandFailed: `fails` exited with 4\nstderr:\nbad");

    let r = results_by_id(&requests[5]);
    assert!(r["p"].starts_with("Replaced 1 occurrence in notes.txt."));
    assert_eq!(r["tr"], "[~] 1: greet\n");
    assert_eq!(r["t"], "Report: notes.txt says hello there.");
    // The sub-agent had its own context and read-only tools.
    assert_eq!(requests[3].body["messages"][1]["content"], "What does src/lib.rs say?");
    let sub_tools: Vec<&str> = requests[3].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(sub_tools, ["read", "fs_search", "fetch", "skill"]);
    assert_eq!(
        results_by_id(&requests[4])["sub_r"],
        "1\tpub fn greet() -> &'static str { \"hello\" }\n"
    );

    let r = results_by_id(&requests[6]);
    assert_eq!(r["rm"], "Removed notes.txt.");
    assert_eq!(r["u"], "notes.txt: re-created\n");
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "hello there\n");

    // The sub-agent's events arrive nested under the task call, for its pane.
    let nested: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "nested")
        .collect();
    assert!(nested.iter().all(|e| e["parent_call_id"] == "t"));
    assert!(
        nested
            .iter()
            .any(|e| e["event"]["type"] == "tool_result" && e["event"]["call_id"] == "sub_r")
    );
    assert!(stdout.contains("\"type\":\"todos_updated\""));
}

#[test]
fn fetch_errors() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let missing = server.url("/missing");
    let binary = server.url("/image");
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("nf", "fetch", &format!(r#"{{"url":"{missing}"}}"#)),
            ("ftp", "fetch", r#"{"url":"ftp://example.com/x"}"#),
        ],
    )));
    server.push(Reply::json(404, "<html><body><p>no such page</p></body></html>").header("content-type", "text/html"));
    server.push(Reply::sse(openai_sse(
        "",
        &[("bin", "fetch", &format!(r#"{{"url":"{binary}"}}"#))],
    )));
    server.push(Reply::json(200, b"\x89PNG\r\n\x1a\n\0\0\0".to_vec()).header("content-type", "image/png"));
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.brute(&server).args(["-p", "x"]).assert().success();
    let requests = server.requests();
    let r = results_by_id(&requests[2]);
    assert!(r["nf"].starts_with("Error: HttpStatus: GET "), "{}", r["nf"]);
    assert!(
        r["nf"].contains("Status: 404 Not Found") && r["nf"].contains("no such page"),
        "{}",
        r["nf"]
    );
    assert!(r["ftp"].starts_with("Error: InvalidArguments: only http and https URLs"));
    let r = results_by_id(&requests[4]);
    assert!(
        r["bin"].starts_with("Error: BinaryContent: the response is binary (image/png"),
        "{}",
        r["bin"]
    );
}

#[test]
fn fetch_follows_at_most_five_redirects() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let hop = server.url("/hop");
    server.push(Reply::sse(openai_sse(
        "",
        &[("f", "fetch", &format!(r#"{{"url":"{hop}"}}"#))],
    )));
    for _ in 0..6 {
        server.push(Reply::json(302, "").header("location", &hop));
    }
    server.push(Reply::sse(openai_sse(
        "",
        &[("g", "fetch", &format!(r#"{{"url":"{hop}"}}"#))],
    )));
    for _ in 0..5 {
        server.push(Reply::json(302, "").header("location", &hop));
    }
    server.push(Reply::json(200, "landed").header("content-type", "text/plain"));
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.brute(&server).args(["-p", "x"]).assert().success();
    let requests = server.requests();
    let first = results_by_id(&requests[7]);
    assert!(
        first["f"].starts_with("Error: TooManyRedirects: gave up after 5 redirects"),
        "{}",
        first["f"]
    );
    let second = results_by_id(requests.last().unwrap());
    assert!(
        second["g"].contains("Status: 200 OK") && second["g"].ends_with("landed"),
        "{}",
        second["g"]
    );
}
