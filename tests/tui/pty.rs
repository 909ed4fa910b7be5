//! The real binary in a real pseudo-terminal (tmux), against the mock provider: send a
//! prompt, watch a tool pane finish, /undo, answer a question dialog, quit cleanly with the
//! terminal restored and the conversation left in the scrollback. Skipped (saying so) where
//! tmux is not installed.

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::tmux::Tmux;
use support::{MockServer, Reply, Sandbox, openai_sse, tool_results};

#[test]
fn prompt_tool_pane_undo_question_and_quit() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "original\n");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "Editing. ",
        &[(
            "w1",
            "write",
            r#"{"file_path":"notes.txt","content":"changed by the agent\n"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("I changed notes.txt.", &[])));
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "q1",
            "question",
            r#"{"questions":[{"question":"Which color?","options":[{"label":"red"},{"label":"blue"}]}]}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("Blue it is.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "flow") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    assert!(tmux.alternate_on());

    tmux.text("please edit notes");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the finished write pane, answer and turn", |s| {
        s.contains("✓ write") && s.contains("I changed notes.txt.") && s.contains(" idle │")
    });
    assert_eq!(
        std::fs::read_to_string(sb.path("notes.txt")).unwrap(),
        "changed by the agent\n"
    );

    tmux.text("/undo");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the undo dialog", |s| {
        s.contains("Undo the last turn") && s.contains("code and conversation")
    });
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the undo report", |s| {
        s.contains("undid turn") && s.contains("restored notes.txt (+1 -1)") && s.contains(" idle │")
    });
    assert!(screen.contains("the conversation was rewound"), "{screen}");
    assert!(
        !screen.contains("I changed notes.txt."),
        "the undone turn left the transcript:\n{screen}"
    );
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "original\n");

    tmux.text("pick a color");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the question dialog", |s| {
        s.contains("Question 1/1") && s.contains("Which color?")
    });
    tmux.keys(&["2"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the final answer", |s| s.contains("Blue it is."));
    let results = tool_results(&server.requests()[3]);
    let answer = results
        .iter()
        .find(|(id, _)| id == "q1")
        .map(|(_, content)| content.as_str());
    assert_eq!(answer, Some("The user answered:\n1. Which color? → blue\n"));

    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    let screen = tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
    assert!(!tmux.alternate_on(), "the alternate screen was left");
    assert!(
        screen.contains("› pick a color"),
        "the conversation stays in the scrollback:\n{screen}"
    );
    assert!(screen.contains("Blue it is."));
}

#[test]
fn escape_interrupts_a_running_command() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("s1", "shell", r#"{"command":"echo started; sleep 30"}"#)],
    )));
    let Some(tmux) = Tmux::start(&sb, &server, "esc") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("run it");
    tmux.keys(&["Enter"]);
    tmux.wait_for("live output", |s| {
        s.contains("│ started") && s.contains("running 1 tool")
    });
    tmux.keys(&["Escape"]);
    // The pane fills first, then the turn ends and the status line goes back to idle.
    let screen = tmux.wait_for("the interrupted pane and the end of the turn", |s| {
        s.contains("✗ shell") && s.contains(" idle │")
    });
    assert!(screen.contains("Error: Interrupted: started"), "{screen}");
    assert!(
        screen.contains("\ninterrupted\n"),
        "the turn says it was interrupted: {screen}"
    );
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn continue_shows_the_saved_conversation() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", &[("r1", "read", r#"{"file_path":"."}"#)])));
    server.push(Reply::sse(openai_sse("An earlier answer.", &[])));
    sb.brute(&server).args(["-p", "an earlier question"]).assert().success();
    server.push(Reply::sse(openai_sse("A later answer.", &[])));
    let Some(tmux) = Tmux::start_with(&sb, &server, "continue", "--continue") else {
        return;
    };
    let screen = tmux.wait_for("the restored transcript", |s| s.contains("An earlier answer."));
    assert!(screen.contains("› an earlier question"), "{screen}");
    assert!(screen.contains("✓ read"), "the tool call is restored: {screen}");
    tmux.text("and now?");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the new answer", |s| s.contains("A later answer."));
    let request = server.requests().last().unwrap().clone();
    let users: Vec<&str> = request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["an earlier question", "and now?"]);
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn headless_run_asks_a_person_at_the_terminal() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "q1",
            "question",
            r#"{"questions":[{"question":"Which color?","options":[{"label":"red"},{"label":"blue"}],"default":"red"}]}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("Blue it is.", &[])));
    let Some(tmux) = Tmux::start_with(&sb, &server, "headless", "-p 'pick a color'") else {
        return;
    };
    tmux.wait_for("the terminal prompt", |s| {
        s.contains("Which color?") && s.contains("2. blue")
    });
    tmux.text("2");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer and exit", |s| {
        s.contains("Blue it is.") && s.contains("BRUTE-EXITED-0")
    });
    let results = tool_results(&server.requests()[1]);
    assert_eq!(results[0].1, "The user answered:\n1. Which color? → blue\n");
}

#[test]
fn headless_output_at_a_terminal_cannot_retitle_or_touch_the_clipboard() {
    let sb = Sandbox::new();
    sb.write("x.txt", "plain\n");
    let server = MockServer::start();
    let evil_path = serde_json::json!({"file_path": "\u{1b}]0;EVIL-TOOL-TITLE\u{7}x.txt"}).to_string();
    server.push(Reply::sse(openai_sse("", &[("r1", "read", &evil_path)])));
    server.push(Reply::sse(openai_sse(
        "Answer \u{1b}]0;EVIL-TITLE\u{7}with \u{1b}]52;c;RVZJTC1DTElQ\u{7}escapes \u{1b}]2;EVIL-TWO\u{1b}\\done.",
        &[],
    )));
    let Some(tmux) = Tmux::start_with(&sb, &server, "osc", "-p 'show me'") else {
        return;
    };
    let screen = tmux.wait_for("the answer and exit", |s| s.contains("BRUTE-EXITED-0"));
    assert!(screen.contains("Answer with escapes done."), "{screen}");
    assert!(
        screen.contains("[read] ␛]0;EVIL-TOOL-TITLE␇x.txt — error"),
        "the tool line is shown, its escape sequence visible: {screen}"
    );
    let title = tmux.format("#{pane_title}");
    assert!(!title.contains("EVIL"), "the title was changed to {title}");
    assert_eq!(tmux.buffers(), "", "OSC 52 reached the clipboard");
}

/// Starts the UI, sends `signal` to brute, and checks that the terminal is back to normal.
fn terminal_restored_after(signal: i32, name: &str, code: i32) {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let Some(tmux) = Tmux::start(&sb, &server, name) else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    assert!(tmux.alternate_on());
    assert!(tmux.stty().contains("-icanon"), "raw mode while running");
    // SAFETY: plain kill(2) on the brute under test.
    unsafe { libc::kill(tmux.brute_pid(), signal) };
    tmux.wait_for("brute to exit", |s| s.contains(&format!("BRUTE-EXITED-{code}")));
    assert!(!tmux.alternate_on(), "the alternate screen was left");
    let stty = tmux.stty();
    assert!(
        !stty.contains("-icanon") && !stty.contains("-echo "),
        "the terminal is out of raw mode: {stty}"
    );
}

#[test]
fn the_terminal_is_restored_after_an_abort() {
    terminal_restored_after(libc::SIGABRT, "abort", 134);
}

#[test]
fn sigterm_and_sighup_end_the_ui_cleanly() {
    terminal_restored_after(libc::SIGTERM, "term", 143);
    terminal_restored_after(libc::SIGHUP, "hup", 129);
}

#[test]
fn started_in_home_the_ui_asks_before_checkpointing() {
    let sb = Sandbox::new();
    std::fs::write(sb.home.path().join("personal.txt"), "mine\n").unwrap();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("w1", "write", r#"{"file_path":"personal.txt","content":"changed\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Changed it.", &[])));
    let Some(tmux) = Tmux::start_in(&sb, &server, "home", "", sb.home.path(), "") else {
        return;
    };
    tmux.wait_for("the checkpoint question", |s| {
        s.contains("brute was started in your home directory") && s.contains("Checkpoint this tree")
    });
    // "Not now" is the default; take the other option.
    tmux.keys(&["1"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("checkpoints on", |s| s.contains("turn checkpoints are on"));
    tmux.text("change it");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer", |s| s.contains("Changed it.") && s.contains(" idle │"));
    tmux.text("/undo");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the undo dialog", |s| {
        s.contains("Undo the last turn") && s.contains("code and conversation")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("the undo report", |s| {
        s.contains("undid turn") && s.contains("restored personal.txt")
    });
    assert_eq!(
        std::fs::read_to_string(sb.home.path().join("personal.txt")).unwrap(),
        "mine\n"
    );
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn model_switch_queue_ctrl_c_and_undo_with_y_in_a_real_terminal() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "original\n");
    let server = MockServer::start();
    // Turn 1: a command that runs until the test lets it finish.
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "s1",
            "shell",
            r#"{"command":"while [ ! -e go ]; do sleep 0.02; done; echo finished"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("First done.", &[])));
    // Turn 2 (the queued prompt): a long command that Ctrl-C interrupts.
    server.push(Reply::sse(openai_sse(
        "",
        &[("s2", "shell", r#"{"command":"echo started; sleep 30"}"#)],
    )));
    // Turn 3: an edit to undo with `y`.
    server.push(Reply::sse(openai_sse(
        "",
        &[("w1", "write", r#"{"file_path":"notes.txt","content":"changed\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Changed.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "core") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("first");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the running command", |s| s.contains("running 1 tool"));
    tmux.text("/model other-model");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the model switch", |s| {
        s.contains("model: other-model (from the next request)")
    });
    tmux.text("second");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the queued prompt", |s| s.contains("queued: second"));
    std::fs::write(sb.path("go"), "").unwrap();
    tmux.wait_for("the queued prompt's long command", |s| {
        s.contains("First done.") && s.contains("│ started")
    });
    let requests = server.requests();
    assert_eq!(requests[0].body["model"], "mock");
    assert_eq!(requests[1].body["model"], "other-model", "the switch applied mid-turn");
    let last_user = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .clone();
    assert_eq!(last_user, "second", "the queued prompt ran after the turn");
    tmux.keys(&["C-c"]);
    let screen = tmux.wait_for("the interrupted command and idle", |s| {
        s.contains("✗ shell") && s.contains(" idle │")
    });
    assert!(screen.contains("Error: Interrupted: started"), "{screen}");
    assert!(
        !screen.contains("BRUTE-EXITED"),
        "Ctrl-C during a turn keeps brute open"
    );
    tmux.text("change notes");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the edit", |s| s.contains("Changed.") && s.contains(" idle │"));
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "changed\n");
    tmux.text("/undo");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the undo dialog", |s| {
        s.contains("Undo the last turn") && s.contains("restored notes.txt (+1 -1)")
    });
    tmux.keys(&["y"]);
    tmux.wait_for("the undo report", |s| s.contains("undid turn"));
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "original\n");
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn approvals_allow_once_with_y_and_deny_with_a_reason() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let escalate = |id: &str, marker: &str| {
        (
            id.to_owned(),
            serde_json::json!({"command": format!("echo {marker}"), "sandbox": "full", "justification": "needs the network"})
                .to_string(),
        )
    };
    let (first, first_args) = escalate("e1", "ran-unconfined");
    server.push(Reply::sse(openai_sse("", &[(&first, "shell", &first_args)])));
    server.push(Reply::sse(openai_sse("First ran.", &[])));
    let (second, second_args) = escalate("e2", "should-not-run");
    server.push(Reply::sse(openai_sse("", &[(&second, "shell", &second_args)])));
    server.push(Reply::sse(openai_sse("Understood.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "approve") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("fetch it");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the approval dialog", |s| {
        s.contains("Approve?") && s.contains("▏ echo ran-unconfined") && s.contains("without the sandbox: needs the")
    });
    tmux.keys(&["y"]);
    tmux.wait_for("the first answer", |s| {
        s.contains("First ran.") && s.contains(" idle │")
    });
    tmux.text("again");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the second approval", |s| {
        s.contains("Approve?") && s.contains("echo should-not-run")
    });
    tmux.keys(&["n"]);
    tmux.wait_for("the reason field", |s| s.contains("why not?"));
    tmux.text("use the mirror");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the second answer", |s| {
        s.contains("Understood.") && s.contains(" idle │")
    });
    let requests = server.requests();
    let first_result = tool_results(&requests[1]);
    assert_eq!(first_result.last().unwrap().1, "ran-unconfined\n");
    let second_result = tool_results(&requests[3]);
    let denied = &second_result.last().unwrap().1;
    assert!(
        denied.starts_with("Error: Denied: the user denied this call") && denied.contains("They said: use the mirror"),
        "{denied}"
    );
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn an_untrusted_project_is_asked_about_before_the_ui_starts() {
    let sb = Sandbox::new();
    sb.write(".brute/config.toml", "system_prompt = \"TRUSTED PROMPT\"\n");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Hi.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "trust") else {
        return;
    };
    tmux.wait_for("the trust question", |s| {
        s.contains("sets system_prompt") && s.contains("Trust this project?")
    });
    tmux.keys(&["Down"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("hi");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer", |s| s.contains("Hi.") && s.contains(" idle │"));
    let system = server.requests()[0].body["messages"][0]["content"].clone();
    assert_eq!(system, "TRUSTED PROMPT", "the trusted project's prompt applies");
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn a_blocked_command_is_offered_a_retry_and_without_a_sandbox_every_command_asks() {
    let sb = Sandbox::new();
    let outside =
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("pty-outside-{}", std::process::id()));
    std::fs::create_dir_all(&outside).unwrap();
    let target = outside.join("written.txt");
    let _ = std::fs::remove_file(&target);
    let server = MockServer::start();
    let write_outside = serde_json::json!({"command": format!("echo hi > {}", target.display())}).to_string();
    server.push(Reply::sse(openai_sse("", &[("w1", "shell", &write_outside)])));
    server.push(Reply::sse(openai_sse("Wrote it.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "retry") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("write outside");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the retry offer", |s| {
        s.contains("The sandbox blocked a command") && s.contains("Run it again without the sandbox?")
    });
    assert!(!target.exists(), "the sandboxed run wrote nothing");
    tmux.keys(&["y"]);
    tmux.wait_for("the answer", |s| s.contains("Wrote it.") && s.contains(" idle │"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hi\n");
    let result = tool_results(&server.requests()[1]);
    assert!(result[0].1.contains("ran again without the sandbox"), "{}", result[0].1);
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
    drop(tmux);

    // The forced no-sandbox path: the UI says so once and asks before every command.
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("s1", "shell", r#"{"command":"echo asked-first"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Ran.", &[])));
    let Some(tmux) = Tmux::start_in(&sb, &server, "nosandbox", "", sb.project.path(), "BRUTE_NO_SANDBOX=1") else {
        return;
    };
    tmux.wait_for("the notice", |s| {
        s.contains("no sandbox is available here (BRUTE_NO_SANDBOX is set)")
    });
    tmux.text("run it");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the approval", |s| {
        s.contains("Approve?") && s.contains("no sandbox is available here")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer", |s| s.contains("Ran.") && s.contains(" idle │"));
    assert_eq!(tool_results(&server.requests()[1])[0].1, "asked-first\n");
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn permissions_full_access_applies_to_the_next_command() {
    let sb = Sandbox::new();
    let outside =
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("pty-mode-{}", std::process::id()));
    std::fs::create_dir_all(&outside).unwrap();
    let target = outside.join("full.txt");
    let _ = std::fs::remove_file(&target);
    let server = MockServer::start();
    let write_outside = serde_json::json!({"command": format!("echo full > {}", target.display())}).to_string();
    server.push(Reply::sse(openai_sse("", &[("w1", "shell", &write_outside)])));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "mode") else {
        return;
    };
    tmux.wait_for("the composer", |s| {
        s.contains("Ask brute to do something") && s.contains("workspace-write")
    });
    tmux.text("/permissions full-access");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the full-access confirmation", |s| s.contains("Switch to full access?"));
    tmux.keys(&["y"]);
    tmux.wait_for("the new mode", |s| s.contains("sandbox: full-access"));
    tmux.text("write outside");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer", |s| s.contains("Done.") && s.contains(" idle │"));
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "full\n",
        "no sandbox, no question"
    );
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

/// Shift-Tab from the default is plan mode: the model's write is refused and its plan shown;
/// running it goes back to workspace-write, where the same write goes through.
#[test]
fn shift_tab_plans_and_running_the_plan_leaves_plan_mode() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let write = r#"{"file_path":"done.txt","content":"built\n"}"#;
    server.push(Reply::sse(openai_sse("", &[("w1", "write", write)])));
    server.push(Reply::sse(openai_sse(
        "",
        &[("x1", "exit_plan_mode", r#"{"plan":"PLAN-STEP write done.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("", &[("w2", "write", write)])));
    server.push(Reply::sse(openai_sse("Built.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "plan") else {
        return;
    };
    tmux.wait_for("the composer", |s| {
        s.contains("Ask brute to do something") && s.contains("workspace-write")
    });
    tmux.keys(&["BTab"]);
    tmux.wait_for("plan mode", |s| s.contains("mode: plan") && s.contains(" plan │"));
    tmux.text("build it");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the plan", |s| s.contains("Plan ready") && s.contains("PLAN-STEP"));
    assert!(!sb.path("done.txt").exists(), "nothing changed while planning");
    tmux.keys(&["y"]);
    tmux.wait_for("the answer", |s| s.contains("Built.") && s.contains(" idle │"));
    let requests = server.requests();
    assert!(tool_results(&requests[1])[0].1.starts_with("Error: PlanMode: "));
    assert!(
        tool_results(&requests[2])[1]
            .1
            .contains("the mode is now workspace-write")
    );
    assert_eq!(std::fs::read_to_string(sb.path("done.txt")).unwrap(), "built\n");
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn compact_in_a_real_terminal_marks_the_transcript() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("First answer.", &[])));
    server.push(Reply::sse(openai_sse("SUMMARY OF EVERYTHING", &[])));
    server.push(Reply::sse(openai_sse("After compaction.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "compact") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("GOAL: keep this");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the first answer", |s| {
        s.contains("First answer.") && s.contains(" idle │")
    });
    tmux.text("second");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the second turn", |s| s.contains("› second"));
    tmux.wait_for("idle again", |s| s.contains(" idle │"));
    tmux.text("/compact the goal");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the compaction marker", |s| s.contains("compacted: about"));
    assert!(screen.contains("the earlier turns were summarized"), "{screen}");
    assert!(
        screen.contains("› GOAL: keep this"),
        "the transcript keeps everything: {screen}"
    );
    let summary_request = &server.requests()[2];
    let asked = summary_request.body["messages"].to_string();
    assert!(asked.contains("Pay special attention to: the goal."), "{asked}");
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn effort_applies_from_the_next_request_and_default_removes_it() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Thought hard.", &[])));
    server.push(Reply::sse(openai_sse("Back to normal.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "effort") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("/effort high");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the effort notice", |s| {
        s.contains("reasoning effort: high (from the next request)")
    });
    tmux.text("think");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the first answer", |s| {
        s.contains("Thought hard.") && s.contains(" idle │")
    });
    tmux.text("/effort default");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the default notice", |s| {
        s.contains("reasoning effort: the model's default (from the next request)")
    });
    tmux.text("/status");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the status", |s| {
        s.contains("(openai), reasoning effort: the model's default") && s.contains("base URL:")
    });
    tmux.text("again");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the second answer", |s| {
        s.contains("Back to normal.") && s.contains(" idle │")
    });
    let requests = server.requests();
    assert_eq!(requests[0].body["reasoning_effort"], "high");
    assert!(
        requests[1].body.get("reasoning_effort").is_none(),
        "{}",
        requests[1].body
    );
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

/// `brute "prompt"` opens the UI with that prompt sent: the request goes out without typing.
#[test]
fn a_positional_prompt_is_sent_when_the_ui_starts() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Hello back.", &[])));
    let Some(tmux) = Tmux::start_with(&sb, &server, "positional", "'hello there'") else {
        return;
    };
    let screen = tmux.wait_for("the answer", |s| s.contains("Hello back.") && s.contains(" idle │"));
    assert!(
        screen.contains("› hello there"),
        "the prompt is in the transcript: {screen}"
    );
    assert_eq!(server.requests()[0].body["messages"][1]["content"], "hello there");
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

/// After `--` a subcommand's name is a prompt: `brute -- "undo that"` opens the UI with it sent.
#[test]
fn a_prompt_after_double_dash_is_not_a_subcommand() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Nothing to undo.", &[])));
    let Some(tmux) = Tmux::start_with(&sb, &server, "dashdash", "-- 'undo that'") else {
        return;
    };
    tmux.wait_for("the answer", |s| {
        s.contains("Nothing to undo.") && s.contains(" idle │")
    });
    assert_eq!(server.requests()[0].body["messages"][1]["content"], "undo that");
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

/// On one terminal, a tool line on stderr after answer text that stopped mid-line starts on a
/// line of its own, and the answer goes on without a blank line.
#[test]
fn headless_tool_lines_start_on_their_own_line() {
    let sb = Sandbox::new();
    sb.write("x.txt", "x\n");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "Let me look",
        &[("r1", "read", r#"{"file_path":"x.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("It holds x.", &[])));
    let Some(tmux) = Tmux::start_with(&sb, &server, "ownline", "-p 'what is in x.txt'") else {
        return;
    };
    let screen = tmux.wait_for("the answer and exit", |s| s.contains("BRUTE-EXITED-0"));
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    let at = lines
        .iter()
        .position(|l| *l == "Let me look")
        .unwrap_or_else(|| panic!("the text has a line of its own: {screen}"));
    assert!(lines[at + 1].starts_with("[read] x.txt — ok"), "{screen}");
    assert_eq!(lines[at + 2], "It holds x.", "{screen}");
}

#[test]
fn readline_keys_history_search_across_sessions_and_the_editor() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("First answer.", &[])));
    // An "editor" that rewrites the file it is given.
    let editor = sb.home.path().join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nprintf 'written in the editor' > \"$1\"\n").unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let env = format!("EDITOR='{}' VISUAL=", editor.display());
    let Some(tmux) = Tmux::start_in(&sb, &server, "readline", "", sb.project.path(), &env) else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("remember the parser bug");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer", |s| s.contains("First answer.") && s.contains(" idle │"));

    tmux.text("alpha beta gamma");
    tmux.keys(&["C-w"]);
    tmux.wait_for("Ctrl-W to delete a word", |s| {
        s.contains("│alpha beta ") && !s.contains("gamma")
    });
    tmux.keys(&["C-a", "C-k"]);
    tmux.wait_for("Ctrl-A Ctrl-K to empty the line", |s| {
        s.contains("Ask brute to do something")
    });
    tmux.keys(&["C-y"]);
    tmux.wait_for("Ctrl-Y to put it back", |s| s.contains("│alpha beta "));
    tmux.keys(&["C-u"]);
    tmux.keys(&["C-r"]);
    tmux.text("parser");
    tmux.wait_for("the history match", |s| {
        s.contains("history search: parser") && s.contains("│remember the parser bug")
    });
    tmux.keys(&["Escape"]);
    tmux.wait_for("the search closed", |s| s.contains("Ask brute to do something"));

    tmux.text("to be edited");
    tmux.keys(&["C-g"]);
    tmux.wait_for("the editor's text back in the composer", |s| {
        s.contains("│written in the editor") && !s.contains("to be edited")
    });
    assert!(tmux.alternate_on(), "back on the alternate screen after the editor");
    // The first clears the composer.
    tmux.keys(&["C-c", "C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
    drop(tmux);

    // A new session in the same project finds the prompt with Ctrl-R.
    let Some(tmux) = Tmux::start(&sb, &server, "readline2") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.keys(&["C-r"]);
    tmux.text("bug");
    tmux.wait_for("the prompt of the earlier session", |s| {
        s.contains("│remember the parser bug")
    });
    tmux.keys(&["Escape"]);
    tmux.wait_for("the search closed", |s| s.contains("Ask brute to do something"));
    tmux.keys(&["C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn resume_picker_searches_and_switches() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("About the parser.", &[])));
    sb.brute(&server).args(["-p", "look at the parser"]).assert().success();
    server.push(Reply::sse(openai_sse("About the docs.", &[])));
    sb.brute(&server).args(["-p", "write the docs"]).assert().success();
    let Some(tmux) = Tmux::start(&sb, &server, "picker") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("/resume");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the picker, newest first", |s| {
        let docs = s.find("write the docs");
        let parser = s.find("look at the parser");
        s.contains("resume a session") && docs.is_some() && parser.is_some() && docs < parser
    });
    tmux.text("parser");
    tmux.wait_for("the search to narrow", |s| {
        s.contains("look at the parser") && !s.contains("write the docs")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("the resumed conversation", |s| {
        s.contains("About the parser.") && s.contains("resumed session")
    });
    tmux.keys(&["C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn copy_says_it_used_osc52_and_the_mouse_modes_are_restored() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Copy me.", &[])));
    // No display: the system clipboard is not tried, OSC 52 is.
    let Some(tmux) = Tmux::start_in(&sb, &server, "copy", "", sb.project.path(), "DISPLAY= WAYLAND_DISPLAY=") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    assert_eq!(
        tmux.format("#{mouse_standard_flag}#{mouse_sgr_flag}"),
        "11",
        "mouse reporting on"
    );
    tmux.text("say something");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer", |s| s.contains("Copy me.") && s.contains(" idle │"));
    tmux.text("/copy");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the copy message", |s| s.contains("terminal's clipboard (OSC 52"));
    assert!(!screen.contains("copied the last answer"), "{screen}");
    assert!(tmux.buffers().contains("Copy me."), "{}", tmux.buffers());
    tmux.text("/mouse");
    tmux.keys(&["Enter"]);
    tmux.wait_for("mouse reporting off", |s| {
        s.contains("mouse reporting off: drag selects")
    });
    tmux.wait_format("#{mouse_standard_flag}#{mouse_sgr_flag}", "00");
    tmux.text("/mouse");
    tmux.keys(&["Enter"]);
    tmux.wait_for("mouse reporting on", |s| s.contains("mouse reporting on: the wheel"));
    tmux.wait_format("#{mouse_standard_flag}#{mouse_sgr_flag}", "11");
    tmux.keys(&["C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
    assert_eq!(
        tmux.format("#{alternate_on}#{mouse_any_flag}#{mouse_standard_flag}#{mouse_sgr_flag}"),
        "0000",
        "every mode brute set is reset"
    );
}

#[test]
fn a_cr_pasted_text_keeps_its_lines() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let Some(tmux) = Tmux::start(&sb, &server, "paste") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    // tmux pastes a buffer with CR line breaks (its default), bracketed (-p).
    let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    let file = sb.home.path().join("paste.txt");
    std::fs::write(&file, &text).unwrap();
    let status = Command::new("tmux")
        .args(["-L", &tmux.socket, "load-buffer", "-b", "big"])
        .arg(&file)
        .status()
        .unwrap();
    assert!(status.success());
    let status = Command::new("tmux")
        .args(["-L", &tmux.socket, "paste-buffer", "-p", "-b", "big"])
        .status()
        .unwrap();
    assert!(status.success());
    tmux.wait_for("the placeholder with every line", |s| {
        s.contains("[Pasted #1: 2000 lines")
    });
    tmux.keys(&["C-c", "C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

/// `notify = "osc9"`: a turn that ends while the terminal is not focused writes an OSC 9
/// notification; focus reporting is on while the UI runs and off after. The pane's raw output
/// is captured with `pipe-pane`; focus changes are the reports a terminal sends (`CSI O`/`CSI I`).
#[test]
fn a_turn_ending_unfocused_sends_the_notification_the_setting_names() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("First, while you look.", &[])));
    server.push(Reply::sse(openai_sse("Second, while you are away.", &[])));
    let config = sb.home.path().join("notify-config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "retry_base_ms = 1\nnotify = \"osc9\"\n").unwrap();
    let env = format!("BRUTE_CONFIG_DIR='{}'", config.display());
    let Some(tmux) = Tmux::start_in(&sb, &server, "notify", "", sb.project.path(), &env) else {
        return;
    };
    let raw = sb.home.path().join("pane-output");
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    let piped = Command::new("tmux")
        .args(["-L", &tmux.socket, "pipe-pane", "-o"])
        .arg(format!("cat >> '{}'", raw.display()))
        .status()
        .unwrap();
    assert!(piped.success());
    let notification = "\x1b]9;brute: the turn is done\x07";
    let output = || String::from_utf8_lossy(&std::fs::read(&raw).unwrap_or_default()).into_owned();

    tmux.text("one");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the first answer", |s| {
        s.contains("First, while you look.") && s.contains(" idle │")
    });

    tmux.keys(&["-H", "1b", "5b", "4f"]); // focus lost
    tmux.text("two");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the second answer", |s| {
        s.contains("Second, while you are away.") && s.contains(" idle │")
    });
    tmux.keys(&["C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
    let all = output();
    assert_eq!(
        all.matches(notification).count(),
        1,
        "one notification, for the unfocused turn only: {all:?}"
    );
    let focus_off = all.rfind("\x1b[?1004l");
    assert!(
        focus_off.is_some_and(|off| off > all.find(notification).unwrap_or(usize::MAX)),
        "focus reporting turned off on exit: {all:?}"
    );
}

/// `/diff` shows what the last turn changed, from the checkpoints (the project is no git
/// repository); `/diff session` shows every turn's changes.
#[test]
fn diff_shows_the_last_turn_and_the_session_from_checkpoints() {
    let sb = Sandbox::new();
    std::fs::write(sb.project.path().join("notes.txt"), "old line\n").unwrap();
    let server = MockServer::start();
    let write = |id: &str, path: &str, content: &str| {
        (
            id.to_owned(),
            serde_json::json!({"file_path": path, "content": content}).to_string(),
        )
    };
    let (first, first_args) = write("w1", "notes.txt", "new line\n");
    server.push(Reply::sse(openai_sse("", &[(&first, "write", &first_args)])));
    server.push(Reply::sse(openai_sse("Notes updated.", &[])));
    let (second, second_args) = write("w2", "added.txt", "brand new\n");
    server.push(Reply::sse(openai_sse("", &[(&second, "write", &second_args)])));
    server.push(Reply::sse(openai_sse("File added.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "diff") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("/diff");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the empty notice", |s| {
        s.contains("/diff: no turn has changed anything yet")
    });
    tmux.text("update the notes");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the first answer", |s| {
        s.contains("Notes updated.") && s.contains(" idle │")
    });
    tmux.text("add a file");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the second answer", |s| {
        s.contains("File added.") && s.contains(" idle │")
    });
    tmux.keys(&["C-l"]);
    tmux.text("/diff");
    tmux.keys(&["Enter"]);
    // Wait for the whole diff, not only its header: a capture can land between the cells of
    // one frame (the header drawn, the lines under it still the last frame's).
    let screen = tmux.wait_for("the last turn's diff", |s| {
        s.contains("diff of turn 2 (\"add a file\"): 1 file(s) changed") && s.contains("+brand new")
    });
    let shown = &screen[screen.find("diff of turn 2").unwrap_or(0)..];
    assert!(
        shown.contains("+++ b/added.txt\n") || shown.contains("+++ b/added.txt "),
        "{shown}"
    );
    assert!(shown.contains("+brand new"), "{shown}");
    assert!(!shown.contains("notes.txt"), "only the last turn: {shown}");
    tmux.text("/diff session");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the session's diff", |s| {
        s.contains("diff of turns 1–2 of this session: 2 file(s) changed")
            && s.contains("-old line")
            && s.contains("+new line")
    });
    let shown = &screen[screen.find("diff of turns 1–2").unwrap_or(0)..];
    assert!(shown.contains("-old line") && shown.contains("+new line"), "{shown}");
    assert!(shown.contains("+brand new"), "{shown}");
    tmux.keys(&["C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

/// `!command` runs the command through the shell tool (a pane like the model's), adds its
/// output to the conversation as the person's message, and is a turn of its own: `/undo`
/// takes back the file it made.
#[test]
fn a_failing_command_is_marked_as_failed() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let Some(tmux) = Tmux::start(&sb, &server, "bangfail") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("!echo oops >&2; exit 3");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the failed command's pane", |s| {
        s.contains("[exit code: 3]") && s.contains(" idle │")
    });
    assert!(screen.contains("✗ shell"), "{screen}");
    assert!(!screen.contains("✓ shell"), "{screen}");
    assert!(screen.contains("exit 3"), "{screen}");
    tmux.keys(&["C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn bang_command_runs_in_a_pane_reaches_the_model_and_undoes() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("You made a file.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "bang") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("!echo from-the-person > made.txt && echo wrote-it");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the command's pane", |s| {
        s.contains("› !echo from-the-person > made.txt") && s.contains("wrote-it") && s.contains(" idle │")
    });
    assert_eq!(
        std::fs::read_to_string(sb.project.path().join("made.txt")).unwrap(),
        "from-the-person\n"
    );
    assert!(server.requests().is_empty(), "a !command asks no model");
    tmux.text("what did I do?");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer", |s| {
        s.contains("You made a file.") && s.contains(" idle │")
    });
    let body = &server.requests()[0].body;
    let messages = body["messages"].as_array().unwrap();
    let texts: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "I ran this command myself:\n$ echo from-the-person > made.txt && echo wrote-it\nwrote-it",
            "what did I do?"
        ],
        "{body}"
    );
    tmux.text("/undo");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the undo dialog", |s| s.contains("Undo the last turn"));
    tmux.keys(&["y"]);
    tmux.wait_for("the undo report", |s| s.contains("undid turn"));
    tmux.text("/undo");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the second undo dialog", |s| {
        s.contains("Undo the last turn") && s.contains("deleted made.txt")
    });
    tmux.keys(&["y"]);
    tmux.wait_for("the second undo report", |s| {
        s.contains("undid turn 1 (\"!echo from-the-person")
    });
    assert!(
        !sb.project.path().join("made.txt").exists(),
        "undoing the !command's turn removes the file it made"
    );
    tmux.keys(&["C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn custom_command_in_the_popup_and_help_runs_expanded() {
    let sb = Sandbox::new();
    sb.write(
        ".brute/commands/review.md",
        "---\ndescription: Review one file carefully\nargument-hint: <file>\n---\nPlease review $1 line by line.",
    );
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Reviewed it.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "commands") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("/rev");
    tmux.wait_for("the popup with the custom command", |s| {
        s.contains("/review") && s.contains("Review one file carefully <file>")
    });
    tmux.text("iew src/lib.rs");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the answer", |s| s.contains("Reviewed it.") && s.contains(" idle │"));
    assert!(
        screen.contains("› /review src/lib.rs"),
        "the typed line is shown:\n{screen}"
    );
    let requests = server.requests();
    let messages = requests[0].body["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    assert_eq!(user["content"], "Please review src/lib.rs line by line.");

    tmux.text("/help");
    tmux.keys(&["Escape"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("/help listing the custom command", |s| {
        s.contains("custom commands")
            && s.lines()
                .any(|l| l.contains("/review") && l.contains("Review one file"))
    });
    tmux.text("/nosuch x");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the unknown command notice", |s| s.contains("unknown command /nosuch"));
    assert_eq!(server.requests().len(), 1, "an unknown command reached the model");
}

/// `/mcp` in a real terminal: a configured server (the reference server from npm, installed by
/// .ci/test-tools) starts in the background and the command shows it ready with its tools.
#[test]
fn mcp_shows_a_started_server_and_its_tools() {
    let tools = std::env::var_os("BRUTE_TEST_TOOLS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/brute-test-tools")
        });
    let everything = tools.join("node_modules/.bin/mcp-server-everything");
    if !everything.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is missing: run .ci/test-tools",
            everything.display()
        );
        eprintln!("skipping: {} is missing", everything.display());
        return;
    }
    let sb = Sandbox::new();
    let server = MockServer::start();
    let config = sb.home.path().join("mcp-config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "retry_base_ms = 1\n[mcp_servers.everything]\ncommand = \"{}\"\nargs = [\"stdio\"]\n",
            everything.display()
        ),
    )
    .unwrap();
    let env = format!("BRUTE_CONFIG_DIR='{}'", config.display());
    let Some(tmux) = Tmux::start_in(&sb, &server, "mcp", "", sb.project.path(), &env) else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    // Asked until the server has answered (it starts in the background).
    let deadline = Instant::now() + Duration::from_secs(20);
    let screen = loop {
        tmux.text("/mcp");
        tmux.keys(&["Enter"]);
        let screen = tmux.wait_for("the /mcp report", |s| s.contains("everything (stdio"));
        if screen.contains("ready,") || Instant::now() > deadline {
            break screen;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        screen.contains("everything (stdio") && screen.contains("ready,"),
        "{screen}"
    );
    assert!(screen.contains("echo"), "its tools are listed: {screen}");
    tmux.keys(&["C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

/// `hyperlinks = "on"`: a link in an answer reaches the terminal as an OSC 8 hyperlink
/// around its text; `off`, and `auto` under a tmux that is not told to pass hyperlinks (this
/// detached session has no client with the `hyperlinks` feature), write none. The text and
/// the address show the same in every case. The raw output is captured with `pipe-pane`.
#[test]
fn a_link_reaches_the_terminal_as_osc8_only_when_hyperlinks_are_on() {
    for setting in ["on", "off", "auto"] {
        let sb = Sandbox::new();
        let server = MockServer::start();
        server.push(Reply::sse(openai_sse(
            "Read [the guide](https://guide.example/start?x=1) first.",
            &[],
        )));
        let config = sb.home.path().join("links-config");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            format!("retry_base_ms = 1\nhyperlinks = \"{setting}\"\n"),
        )
        .unwrap();
        let env = format!("BRUTE_CONFIG_DIR='{}'", config.display());
        let name = format!("links-{setting}");
        let Some(tmux) = Tmux::start_in(&sb, &server, &name, "", sb.project.path(), &env) else {
            return;
        };
        let raw = sb.home.path().join("pane-output");
        tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
        let piped = Command::new("tmux")
            .args(["-L", &tmux.socket, "pipe-pane", "-o"])
            .arg(format!("cat >> '{}'", raw.display()))
            .status()
            .unwrap();
        assert!(piped.success());
        tmux.text("where is the guide?");
        tmux.keys(&["Enter"]);
        tmux.wait_for("the answer", |s| {
            s.contains("Read the guide (https://guide.example/start?x=1) first.") && s.contains(" idle │")
        });
        tmux.keys(&["C-c", "C-c"]);
        tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
        let all = String::from_utf8_lossy(&std::fs::read(&raw).unwrap_or_default()).into_owned();
        let open = "\x1b]8;;https://guide.example/start?x=1\x1b\\";
        if setting == "on" {
            let at = all.find(open).unwrap_or_else(|| panic!("no OSC 8 link in {all:?}"));
            let rest = &all[at + open.len()..];
            let close = rest.find("\x1b]8;;\x1b\\").expect("the link is closed");
            assert!(rest[..close].contains("the guide"), "{:?}", &rest[..close]);
        } else {
            assert!(!all.contains("\x1b]8;"), "hyperlinks = {setting}: {all:?}");
        }
    }
}

#[test]
fn the_model_picker_lists_the_providers_models_and_switches() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.list_models(support::strict::Api::Chat, &["mock-large", "mock-small"]);
    server.push(Reply::sse(openai_sse("Hi from small.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "models") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("/model");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the provider's models in the picker", |s| {
        s.contains("pick a model") && s.contains("mock-large") && s.contains("mock-small")
    });
    assert!(
        screen.contains("● mock  (current)"),
        "the model in use comes first: {screen}"
    );
    tmux.text("small");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the switch", |s| {
        s.contains("model: mock-small (from the next request)")
    });
    tmux.text("hello");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer", |s| s.contains("Hi from small."));
    assert_eq!(server.requests()[0].body["model"], "mock-small");
    let probes = server.probes();
    assert!(
        probes.iter().any(|p| p.method == "GET" && p.path == "/v1/models"),
        "{probes:?}"
    );
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

use support::png;

/// The image parts of the last user message of a Chat Completions request, as data URLs.
fn sent_images(request: &support::Recorded) -> Vec<String> {
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    let user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap_or_default();
    user["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|part| part["type"] == "image_url")
        .filter_map(|part| part["image_url"]["url"].as_str().map(str::to_owned))
        .collect()
}

/// The model sees images (brute does not know the mock's model).
fn with_vision(sb: &Sandbox) {
    let config = sb.home.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "[models.\"mock\"]\nvision = true\n").unwrap();
}

#[test]
fn a_pasted_image_path_with_spaces_attaches_the_image() {
    use base64::Engine;
    let sb = Sandbox::new();
    with_vision(&sb);
    let shot = sb.path("Screen Shot 1.png");
    std::fs::write(&shot, png(3, 2)).unwrap();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("A 3 by 2 image.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "imgpaste") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    // What a terminal pastes when a file is dropped on it: the path, quoted.
    let file = sb.home.path().join("dropped.txt");
    std::fs::write(&file, format!("'{}'", shot.display())).unwrap();
    for args in [
        vec!["load-buffer", "-b", "drop", file.to_str().unwrap()],
        vec!["paste-buffer", "-p", "-b", "drop"],
    ] {
        let status = Command::new("tmux")
            .args(["-L", &tmux.socket])
            .args(&args)
            .status()
            .unwrap();
        assert!(status.success());
    }
    tmux.wait_for("the mention in the composer", |s| {
        s.contains("@\"") && s.contains("Screen Shot 1.png\"")
    });
    tmux.text("what is it?");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the answer", |s| s.contains("A 3 by 2 image."));
    assert!(screen.contains("[image: Screen Shot 1.png, 3×2]"), "{screen}");
    let requests = server.requests();
    let expected = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png(3, 2))
    );
    assert_eq!(sent_images(&requests[0]), [expected]);
    tmux.keys(&["C-c", "C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn ctrl_v_pastes_the_clipboards_image_from_a_real_x_display() {
    use base64::Engine;
    let Some(display) = support::x11::Display::start() else {
        return;
    };
    let sb = Sandbox::new();
    with_vision(&sb);
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("Pasted, seen.", &[])));
    let env = format!("DISPLAY='{}' WAYLAND_DISPLAY=", display.name);
    let Some(tmux) = Tmux::start_in(&sb, &server, "clip", "", sb.project.path(), &env) else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    // Nothing on the clipboard yet: said, and nothing attached.
    tmux.keys(&["C-v"]);
    tmux.wait_for("the notice", |s| {
        s.contains("no image pasted: the clipboard holds no image")
    });
    display.copy("image/png", &png(5, 4));
    tmux.keys(&["C-v"]);
    let screen = tmux.wait_for("the mention", |s| s.contains("@") && s.contains("clipboard-"));
    assert!(screen.contains(".png"), "{screen}");
    tmux.text("what is this?");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the answer", |s| s.contains("Pasted, seen."));
    assert!(screen.contains("5×4]"), "{screen}");
    let expected = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png(5, 4))
    );
    assert_eq!(sent_images(&server.requests()[0]), [expected]);
    // Kept in brute's data directory, where commands cannot write.
    let kept: Vec<_> = std::fs::read_dir(sb.home.path().join("data/pasted"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(kept.len(), 1);
    tmux.keys(&["C-c", "C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

/// A clipboard whose owner never answers (a fake `xclip` that hangs when asked for the
/// image): Ctrl-V reads it off the UI thread, so what the person types next shows at once, and
/// the notice that it did not answer comes after. Read on the UI thread, the typing showed
/// only with that notice.
#[test]
fn a_clipboard_that_never_answers_does_not_stop_the_typing() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let server = MockServer::start();
    let bin = sb.home.path().join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let xclip = bin.join("xclip");
    std::fs::write(
        &xclip,
        "#!/bin/sh\ncase \"$*\" in\n  *TARGETS*) echo image/png ;;\n  *) exec sleep 600 ;;\nesac\n",
    )
    .unwrap();
    std::fs::set_permissions(&xclip, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = format!("DISPLAY=:97 WAYLAND_DISPLAY= PATH='{}':\"$PATH\"", bin.display());
    let Some(tmux) = Tmux::start_in(&sb, &server, "hangclip", "", sb.project.path(), &env) else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.keys(&["C-v"]);
    tmux.text("still typing");
    let screen = tmux.wait_for("the typing", |s| s.contains("still typing"));
    assert!(!screen.contains("did not answer"), "{screen}");
    let screen = tmux.wait_for("the notice", |s| {
        s.contains("no image pasted: the clipboard did not answer within 3 s")
    });
    assert!(screen.contains("still typing"), "{screen}");
    tmux.keys(&["C-c", "C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn a_restored_session_marks_its_failed_calls_as_they_were_marked_live() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", &[("s1", "shell", r#"{"command":"false"}"#)])));
    server.push(Reply::sse(openai_sse("It failed with 1.", &[])));
    sb.brute(&server)
        .args(["-p", "run the failing thing"])
        .assert()
        .success();
    let Some(tmux) = Tmux::start_with(&sb, &server, "restoredfail", "--continue") else {
        return;
    };
    let screen = tmux.wait_for("the restored transcript", |s| s.contains("It failed with 1."));
    assert!(screen.contains("✗ shell"), "{screen}");
    assert!(!screen.contains("✓ shell"), "{screen}");
    // `false`: the failure's word is nowhere in the command or its output.
    assert!(screen.contains("exit 1"), "{screen}");
    tmux.keys(&["C-c", "C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}
