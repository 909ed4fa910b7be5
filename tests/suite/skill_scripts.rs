//! Skill scripts as tools through the real binary and the real sandbox (Landlock and a
//! network namespace): advertised with their name, description and schema; run with
//! shell-split args; confined to what their SKILL.md declares within the person's ceiling.
//! Under `CI` a missing sandbox fails these tests; elsewhere they skip, saying why.

use crate::support;

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;
use support::{MockServer, Reply, Sandbox, openai_sse, tool_results};

/// Writes a skill at `dir` (relative to `base`) with `front` matter lines and executable scripts.
fn skill(base: &Path, dir: &str, front: &str, scripts: &[(&str, &str)]) {
    let dir = base.join(dir);
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\ndescription: test skill\n{front}---\nUse the scripts.\n"),
    )
    .unwrap();
    for (name, body) in scripts {
        let path = dir.join("scripts").join(name);
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Runs `brute -p go` with the model calling `calls` in one message; returns the results by
/// call id, the first request's body and brute's stderr.
fn run(sb: &Sandbox, calls: &[(&str, &str, &str)]) -> (HashMap<String, String>, Value, String) {
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", calls)));
    server.push(Reply::sse(openai_sse("done", &[])));
    let out = sb.brute(&server).args(["-p", "go"]).assert().success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{stderr}");
    let results = tool_results(&requests[1]).into_iter().collect();
    (results, requests[0].body.clone(), stderr)
}

fn args(line: &str) -> String {
    serde_json::json!({ "args": line }).to_string()
}

/// A trusted project whose config raises the ceiling (the user's config.toml is rewritten by
/// the harness on every run).
fn trusted_with_ceiling(sb: &Sandbox, ceiling: &str) {
    sb.write(".brute/config.toml", &format!("[skill_sandbox]\n{ceiling}\n"));
    sb.trust();
}

#[test]
fn a_script_is_advertised_and_runs_with_shell_split_args() {
    if !support::sandbox_ready() {
        return;
    }
    let sb = Sandbox::new();
    skill(
        sb.project.path(),
        ".brute/skills/tools",
        "",
        &[(
            "echo-args.sh",
            "#!/bin/sh\n# Prints each argument on its own line.\nfor a in \"$@\"; do echo \"[$a]\"; done\n",
        )],
    );
    let line = r#"one 'two words' "three $HOME" *"#;
    let (results, first, _) = run(&sb, &[("c1", "echo_args", &args(line))]);
    let tool = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "echo_args")
        .expect("echo_args is advertised");
    let description = tool["function"]["description"].as_str().unwrap();
    assert!(
        description.starts_with("Prints each argument on its own line. (script of the `tools` skill"),
        "{description}"
    );
    assert_eq!(tool["function"]["parameters"]["properties"]["args"]["type"], "string");
    assert_eq!(results["c1"], "[one]\n[two words]\n[three $HOME]\n[*]\n");
}

#[test]
fn writes_only_inside_the_granted_tree() {
    if !support::sandbox_ready() {
        return;
    }
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("out")).unwrap();
    skill(
        sb.project.path(),
        ".brute/skills/writer",
        "fs_write: [out]\n",
        &[("put.sh", "#!/bin/sh\n# Writes a file.\necho written > \"$1\"\n")],
    );
    trusted_with_ceiling(&sb, "fs_read = [\".\"]\nfs_write = [\"out\", \"~\"]");
    let home_file = sb.home.path().join("evil.txt");
    let (results, _, _) = run(
        &sb,
        &[
            ("in", "put", &args("out/ok.txt")),
            ("project", "put", &args("bad.txt")),
            ("home", "put", &args(home_file.to_str().unwrap())),
        ],
    );
    assert_eq!(
        std::fs::read_to_string(sb.path("out/ok.txt")).unwrap(),
        "written\n",
        "{results:?}"
    );
    assert_eq!(results["in"], "(no output)");
    for id in ["project", "home"] {
        assert!(
            results[id].contains("Permission denied") && results[id].contains("[exit code: "),
            "{id}: {}",
            results[id]
        );
    }
    assert!(!sb.path("bad.txt").exists(), "wrote into the project outside out/");
    assert!(
        !home_file.exists(),
        "wrote into HOME (granted by the ceiling, not declared)"
    );
}

#[test]
fn reads_outside_the_grant_fail() {
    if !support::sandbox_ready() {
        return;
    }
    let sb = Sandbox::new();
    sb.write("src/a.txt", "project text\n");
    sb.write("other/b.txt", "undeclared\n");
    let secret = sb.home.path().join("secret.txt");
    std::fs::write(&secret, "home secret\n").unwrap();
    skill(
        sb.project.path(),
        ".brute/skills/reader",
        "fs_read: [src, \"~\"]\n",
        &[("show.sh", "#!/bin/sh\n# Shows a file.\ncat \"$1\"\n")],
    );
    // The default ceiling reads the project only: `~` is not granted.
    let (results, _, _) = run(
        &sb,
        &[
            ("src", "show", &args("src/a.txt")),
            ("other", "show", &args("other/b.txt")),
            ("home", "show", &args(secret.to_str().unwrap())),
        ],
    );
    assert_eq!(results["src"], "project text\n");
    for id in ["other", "home"] {
        assert!(
            results[id].contains("Permission denied")
                && !results[id].contains("undeclared")
                && !results[id].contains("home secret"),
            "{id}: {}",
            results[id]
        );
    }
}

#[test]
fn a_socket_fails_without_network_and_the_listener_sees_nothing() {
    if !support::sandbox_ready() {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let connect = "#!/bin/bash\n# Connects to a local port.\nexec 3<>/dev/tcp/127.0.0.1/\"$1\" && echo connected\n";
    let sb = Sandbox::new();
    // It asks for the network; the default ceiling gives none.
    skill(
        sb.project.path(),
        ".brute/skills/net",
        "network: true\n",
        &[("dial.sh", connect)],
    );
    let (results, _, _) = run(&sb, &[("c", "dial", &args(&port))]);
    assert!(
        !results["c"].contains("connected") && results["c"].contains("[exit code: 1]"),
        "{}",
        results["c"]
    );
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "the listener saw a connection"
    );
    // Control: with the ceiling allowing it, the same script reaches the listener.
    let sb = Sandbox::new();
    skill(
        sb.project.path(),
        ".brute/skills/net",
        "network: true\n",
        &[("dial.sh", connect)],
    );
    trusted_with_ceiling(&sb, "network = true");
    let (results, _, _) = run(&sb, &[("c", "dial", &args(&port))]);
    assert_eq!(results["c"], "connected\n");
    listener.set_nonblocking(false).unwrap();
    assert!(listener.accept().is_ok());
}

/// Host processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(marker) {
                found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

#[test]
fn a_timeout_kills_the_script_and_its_children() {
    if !support::sandbox_ready() {
        return;
    }
    let sb = Sandbox::new();
    let marker = format!("{}", 80000 + std::process::id() % 9999);
    skill(
        sb.project.path(),
        ".brute/skills/slow",
        "timeout: 1\n",
        &[(
            "hang.sh",
            "#!/bin/sh\n# Never ends.\nsleep \"$1\" &\n( setsid sleep \"$1\" || sleep \"$1\" ) &\necho started\nsleep \"$1\"\n",
        )],
    );
    let (results, _, _) = run(&sb, &[("c", "hang", &args(&marker))]);
    let result = &results["c"];
    assert!(result.starts_with("Error: Timeout: "), "{result}");
    assert!(result.contains("started"), "{result}");
    assert!(
        result.contains("timed out after 1 s; the script and its process group were killed"),
        "{result}"
    );
    let left = processes_with(&format!("sleep {marker}"));
    assert!(left.is_empty(), "children outlived the timeout: {left:?}");
}

#[test]
fn trust_core_is_honoured_for_user_skills_only() {
    if !support::sandbox_ready() {
        return;
    }
    let sb = Sandbox::new();
    let put = "#!/bin/sh\n# Writes a file.\necho core > \"$1\"\n";
    skill(
        sb.project.path(),
        ".brute/skills/claims",
        "trust: core\n",
        &[("claim.sh", put)],
    );
    skill(
        &sb.home.path().join("config"),
        "skills/mine",
        "trust: core\n",
        &[("mine.sh", put)],
    );
    let (from_project, from_user) = (sb.home.path().join("p.txt"), sb.home.path().join("u.txt"));
    let (results, _, stderr) = run(
        &sb,
        &[
            ("p", "claim", &args(from_project.to_str().unwrap())),
            ("u", "mine", &args(from_user.to_str().unwrap())),
        ],
    );
    assert!(
        stderr.contains("skill `claims` asks for `trust: core`, but it is a project skill"),
        "{stderr}"
    );
    assert!(results["p"].contains("Permission denied"), "{}", results["p"]);
    assert!(!from_project.exists(), "a project skill ran unconfined");
    assert_eq!(results["u"], "(no output)");
    assert_eq!(std::fs::read_to_string(&from_user).unwrap(), "core\n");
}
