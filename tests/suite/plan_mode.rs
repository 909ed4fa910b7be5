//! Plan mode through the real binary against the mock (`--permission-mode plan`): the model
//! is offered read-only tools, commands run in the read-only sandbox, it is told it is
//! planning, and the run ends with its plan as the result; nothing in the tree changes, even
//! when the model calls the tools that would change it.

use crate::support;

use serde_json::Value;
use support::{MockServer, Reply, Sandbox, openai_sse, tool_results};

const PLAN: &str = "# Plan\n1. Rename keep.txt\n2. Run the tests";

/// The project before the run: a file to patch, one to remove.
fn project() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("keep.txt", "old line\n");
    sb.write("gone.txt", "still here\n");
    sb
}

/// A model that tries every way of changing the tree, then hands over its plan; a third
/// reply is there to show no further request is made.
fn planner() -> MockServer {
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("w", "write", r#"{"file_path":"new.txt","content":"x"}"#),
            (
                "p",
                "patch",
                r#"{"file_path":"keep.txt","old_string":"old","new_string":"new"}"#,
            ),
            ("r", "remove", r#"{"path":"gone.txt"}"#),
            ("t", "shell", r#"{"command":"touch touched.txt; cat keep.txt"}"#),
        ],
    )));
    let plan = serde_json::json!({ "plan": PLAN }).to_string();
    server.push(Reply::sse(openai_sse("", &[("x", "exit_plan_mode", &plan)])));
    server.push(Reply::sse(openai_sse("carried on without approval", &[])));
    server
}

fn tree_unchanged(sb: &Sandbox) {
    assert_eq!(std::fs::read_to_string(sb.path("keep.txt")).unwrap(), "old line\n");
    assert_eq!(std::fs::read_to_string(sb.path("gone.txt")).unwrap(), "still here\n");
    assert!(!sb.path("new.txt").exists(), "write wrote");
    assert!(!sb.path("touched.txt").exists(), "the command wrote");
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn plan_mode_changes_nothing_and_the_plan_is_the_result() {
    let sb = project();
    let server = planner();
    let output = sb
        .brute(&server)
        .args([
            "-p",
            "rename things",
            "--permission-mode",
            "plan",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    tree_unchanged(&sb);
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["result"], PLAN, "{result}");
    assert_eq!(result["is_error"], false);

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the plan ended the run");
    let offered = tool_names(&requests[0].body);
    for name in ["write", "patch", "remove", "undo"] {
        assert!(!offered.iter().any(|n| n == name), "{name} offered: {offered:?}");
    }
    for name in ["read", "fs_search", "shell", "exit_plan_mode"] {
        assert!(offered.iter().any(|n| n == name), "{name} not offered: {offered:?}");
    }
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap_or("");
    assert!(system.contains("# Plan mode"), "the model is told it is planning");

    // Called anyway, the changing tools are refused by the core; the command ran read-only.
    let results: std::collections::HashMap<String, String> = tool_results(&requests[1]).into_iter().collect();
    for id in ["w", "p", "r"] {
        assert!(
            results[id].starts_with("Error: PlanMode: ") && results[id].contains("exit_plan_mode"),
            "{id}: {}",
            results[id]
        );
    }
    assert!(
        results["t"].contains("old line") && results["t"].contains("touched.txt"),
        "reads work, writes fail: {}",
        results["t"]
    );
}

/// stream-json shows the `exit_plan_mode` call like any other and ends with the plan; the
/// init line names the mode. Text prints the plan as the answer.
#[test]
fn plan_mode_in_stream_json_and_text() {
    let sb = project();
    let server = planner();
    let output = sb
        .brute(&server)
        .args(["-p", "go", "--permission-mode", "plan", "--output-format", "events"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    tree_unchanged(&sb);
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let init = &lines[0];
    assert_eq!(
        (init["sandbox"].as_str(), init["permissionMode"].as_str()),
        (Some("plan"), Some("plan"))
    );
    assert!(
        !init["tools"].as_array().unwrap().iter().any(|t| t == "write"),
        "{init}"
    );
    assert!(
        lines.iter().any(|l| l["type"] == "tool_call_started"
            && l["name"] == "exit_plan_mode"
            && l["arguments"]["plan"] == PLAN),
        "the exit_plan_mode call is shown"
    );
    let result = lines.last().unwrap();
    assert_eq!(
        (result["type"].as_str(), result["result"].as_str()),
        (Some("result"), Some(PLAN))
    );

    let sb = project();
    let server = planner();
    let output = sb
        .brute(&server)
        .args(["-p", "go", "--permission-mode", "plan"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    tree_unchanged(&sb);
    assert!(String::from_utf8_lossy(&output.stdout).contains(PLAN), "{output:?}");
}

/// Claude Code's other names map onto brute's modes; anything else is a usage error that names
/// the choices.
#[test]
fn permission_mode_values() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let output = sb
        .brute(&server)
        .args(["-p", "go", "--permission-mode", "auto"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("default")
            && stderr.contains("acceptEdits")
            && stderr.contains("plan")
            && stderr.contains("bypassPermissions"),
        "{stderr}"
    );
    let output = sb
        .brute(&server)
        .args(["-p", "go", "--permission-mode", "plan", "--sandbox", "full-access"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "one way to say the mode: {output:?}");
    for (value, sandbox, claude) in [
        ("default", "workspace-write", "default"),
        ("acceptEdits", "workspace-write", "default"),
        ("bypassPermissions", "full-access", "bypassPermissions"),
    ] {
        let server = MockServer::start();
        server.push(Reply::sse(openai_sse("ok", &[])));
        let output = sb
            .brute(&server)
            .args(["-p", "go", "--permission-mode", value, "--output-format", "events"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{value}: {output:?}");
        let text = String::from_utf8_lossy(&output.stdout);
        let init: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(
            (init["sandbox"].as_str(), init["permissionMode"].as_str()),
            (Some(sandbox), Some(claude)),
            "{value}"
        );
    }
}
