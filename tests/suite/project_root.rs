//! The project root through the real binary: started in a subdirectory, brute finds the root
//! (nearest `.git` or `.brute`, never `$HOME`), reads every AGENTS.md from the root down (plus
//! the global one), finds skills in `.agents/skills` with YAML front matter, and keeps the
//! project's sessions at the root so `--continue` and `brute undo` work from anywhere in it.

use crate::support;

use predicates::prelude::*;
use support::{MockServer, Reply, Sandbox, openai_sse, tool_results};

/// The system prompt of a recorded request.
fn system_prompt(request: &support::Recorded) -> String {
    request.body["messages"][0]["content"].as_str().unwrap().to_owned()
}

/// Where each of `needles` is in `text`, asserting all are there and in this order.
fn assert_in_order(text: &str, needles: &[&str]) {
    let at: Vec<usize> = needles
        .iter()
        .map(|n| text.find(n).unwrap_or_else(|| panic!("{n:?} missing in:\n{text}")))
        .collect();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]),
        "{needles:?} out of order in:\n{text}"
    );
}

fn real(path: std::path::PathBuf) -> String {
    path.canonicalize().unwrap().display().to_string()
}

#[test]
fn instructions_from_the_root_down_to_a_subdirectory_and_tools_work_from_it() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path(".git")).unwrap();
    std::fs::create_dir_all(sb.home.path().join("config")).unwrap();
    std::fs::write(sb.home.path().join("config/AGENTS.md"), "GLOBAL RULE\n").unwrap();
    sb.write("AGENTS.md", "ROOT RULE\n");
    sb.write("pkg/CLAUDE.md", "PKG CLAUDE RULE\n");
    sb.write("pkg/mod/AGENTS.md", "MOD RULE\n");
    sb.write("pkg/mod/CLAUDE.md", "CLAUDE WHERE AGENTS IS\n");
    sb.write("pkg/mod/local.txt", "local file\n");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("r", "read", r#"{"file_path":"local.txt"}"#),
            ("s", "shell", r#"{"command":"pwd"}"#),
        ],
    )));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    let mut cmd = sb.brute(&server);
    cmd.current_dir(sb.path("pkg/mod"))
        .args(["-p", "go"])
        .assert()
        .success()
        .stdout("Done.\n");
    let requests = server.requests();
    let prompt = system_prompt(&requests[0]);
    assert_in_order(
        &prompt,
        &[
            "# Project instructions",
            "(global)\nGLOBAL RULE",
            "## AGENTS.md\nROOT RULE",
            "## pkg/CLAUDE.md\nPKG CLAUDE RULE",
            "## pkg/mod/AGENTS.md\nMOD RULE",
        ],
    );
    assert!(!prompt.contains("CLAUDE WHERE AGENTS IS"), "{prompt}");
    assert!(!prompt.contains("capped"), "{prompt}");
    assert!(prompt.contains(&format!("working directory {}", sb.path("pkg/mod").display())));
    assert!(prompt.contains(&format!("Project root: {}", sb.project.path().display())));
    // Relative paths and commands start in the working directory.
    let results: std::collections::HashMap<String, String> = tool_results(&requests[1]).into_iter().collect();
    assert_eq!(results["r"], "1\tlocal file\n");
    assert_eq!(results["s"].trim(), real(sb.path("pkg/mod")));
}

#[test]
fn a_dotfiles_repository_in_home_does_not_make_home_the_root() {
    let sb = Sandbox::new();
    let home = sb.home.path();
    std::fs::create_dir(home.join(".git")).unwrap();
    std::fs::write(home.join("AGENTS.md"), "HOME RULE\n").unwrap();
    std::fs::create_dir_all(home.join("work/sub")).unwrap();
    std::fs::write(home.join("work/AGENTS.md"), "WORK RULE\n").unwrap();
    std::fs::write(home.join("work/sub/AGENTS.md"), "SUB RULE\n").unwrap();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("ok", &[])));
    let mut cmd = sb.brute(&server);
    cmd.current_dir(home.join("work/sub"))
        .args(["-p", "hi"])
        .assert()
        .success();
    let prompt = system_prompt(&server.requests()[0]);
    assert!(prompt.contains("## AGENTS.md\nSUB RULE"), "{prompt}");
    assert!(
        !prompt.contains("HOME RULE") && !prompt.contains("WORK RULE"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("Project root:"),
        "the working directory is the root: {prompt}"
    );
}

#[test]
fn the_size_cap_names_what_it_cut_and_left_out() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path(".brute")).unwrap();
    sb.write("AGENTS.md", &format!("BIG START {}", "x".repeat(40 * 1024)));
    sb.write("sub/AGENTS.md", "SUB RULE\n");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("ok", &[])));
    let mut cmd = sb.brute(&server);
    cmd.current_dir(sb.path("sub")).args(["-p", "hi"]).assert().success();
    let prompt = system_prompt(&server.requests()[0]);
    assert!(prompt.contains("## AGENTS.md\nBIG START"), "{prompt}");
    assert!(!prompt.contains("SUB RULE"));
    assert!(
        prompt.contains("[Instructions are capped at 32768 bytes; cut short: AGENTS.md; left out: sub/AGENTS.md."),
        "{}",
        &prompt[prompt.len().saturating_sub(400)..]
    );
}

#[test]
fn agents_skills_with_folded_yaml_are_listed_and_a_malformed_one_is_named() {
    let sb = Sandbox::new();
    sb.write(
        ".agents/skills/x/SKILL.md",
        "---\nname: x\ndescription: >\n  Folded first line\n  and second line.\nallowed-tools: [read]\n---\nDo x.\n",
    );
    sb.write(".claude/skills/bad/SKILL.md", "---\ndescription: [unclosed\n---\n");
    let user_skill = sb.home.path().join(".agents/skills/y/SKILL.md");
    std::fs::create_dir_all(user_skill.parent().unwrap()).unwrap();
    std::fs::write(&user_skill, "---\ndescription: |\n  From home.\n  Two lines.\n---\n").unwrap();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.brute(&server)
        .args(["-p", "hi"])
        .assert()
        .success()
        .stderr(predicate::str::contains("skill skipped:").and(predicate::str::contains(
            ".claude/skills/bad/SKILL.md: malformed YAML front matter",
        )));
    let prompt = system_prompt(&server.requests()[0]);
    assert_in_order(
        &prompt,
        &[
            "# Skills",
            "- x: Folded first line and second line.\n",
            "- y: From home.\n  Two lines.\n",
        ],
    );
    assert!(!prompt.contains("- bad:"), "{prompt}");
}

#[test]
fn continue_and_undo_from_a_subdirectory_use_the_root_session() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path(".git")).unwrap();
    std::fs::create_dir_all(sb.path("sub/deeper")).unwrap();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("w", "write", r#"{"file_path":"a.txt","content":"one\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Wrote a.txt.", &[])));
    server.push(Reply::sse(openai_sse("It says one.", &[])));
    sb.brute(&server).args(["-p", "write a.txt"]).assert().success();
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "one\n");
    let mut cmd = sb.brute(&server);
    cmd.current_dir(sb.path("sub/deeper"))
        .args(["-p", "what is in a.txt?", "--continue"])
        .assert()
        .success()
        .stdout("It says one.\n")
        .stderr(predicate::str::contains("no earlier session").not());
    let request = &server.requests()[2];
    let users: Vec<&str> = request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["write a.txt", "what is in a.txt?"]);
    // `brute undo` from the subdirectory works on the project's latest session: it undoes the
    // second turn (nothing changed), then the first (a.txt created at the root).
    for _ in 0..2 {
        let mut undo = sb.bare();
        undo.current_dir(sb.path("sub")).arg("undo").assert().success();
    }
    assert!(!sb.path("a.txt").exists(), "the first turn's file is undone");
}
