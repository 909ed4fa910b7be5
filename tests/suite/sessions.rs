//! Sessions through the real binary: `-p` runs are saved, `--continue` and `--resume` pick
//! them up with a valid next request (even after a crash mid-turn), and `brute undo` /
//! `brute redo` work from the shell after a restart.

use crate::support;

use predicates::prelude::*;
use serde_json::Value;
use support::{MockServer, Reply, Sandbox, openai_sse};

/// Every tool call in the request has exactly one result, right after its message.
fn assert_valid(request: &support::Recorded) {
    let messages = request.body["messages"].as_array().unwrap();
    for (i, m) in messages.iter().enumerate() {
        let Some(calls) = m["tool_calls"].as_array() else {
            continue;
        };
        let results: Vec<&str> = messages[i + 1..]
            .iter()
            .take_while(|r| r["role"] == "tool")
            .map(|r| r["tool_call_id"].as_str().unwrap())
            .collect();
        let ids: Vec<&str> = calls.iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(results, ids, "tool calls without results in {messages:#?}");
    }
}

#[test]
fn continue_picks_up_the_conversation() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("w", "write", r#"{"file_path":"a.txt","content":"one\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Wrote a.txt.", &[])));
    server.push(Reply::sse(openai_sse("It says one.", &[])));
    let out = sb
        .brute(&server)
        .args(["-p", "write a.txt", "--output-format", "json"])
        .assert()
        .success();
    let first: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let session = first["session"].as_str().unwrap().to_owned();
    sb.brute(&server)
        .args(["-p", "what is in a.txt?", "--continue"])
        .assert()
        .success()
        .stdout("It says one.\n");
    let request = &server.requests()[2];
    let messages = request.body["messages"].as_array().unwrap();
    let users: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["write a.txt", "what is in a.txt?"]);
    assert_valid(request);
    // The list shows the session with its first prompt; --resume ID continues it too.
    sb.bare()
        .args(["--resume"])
        .assert()
        .success()
        .stdout(predicate::str::contains(&session).and(predicate::str::contains("write a.txt")));
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.brute(&server)
        .args(["-p", "again", "--resume", &session])
        .assert()
        .success();
    assert_eq!(server.requests()[3].body["messages"].as_array().unwrap().len(), 8);
    sb.brute(&server)
        .args(["-p", "x", "--resume", "no-such-session"])
        .assert()
        .code(2);
}

#[test]
fn a_crash_mid_turn_still_resumes_with_a_valid_request() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("long", "shell", r#"{"command":"echo started; sleep 30"}"#)],
    )));
    let mut run = support::Streaming::start(sb.std_brute(&server), "run the long thing");
    run.until(|line| line.contains("\"tool_output_delta\""));
    let child = &mut run.child;
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    server.push(Reply::sse(openai_sse("Resumed.", &[])));
    sb.brute(&server)
        .args(["-p", "go on", "--continue"])
        .assert()
        .success()
        .stdout("Resumed.\n");
    let request = &server.requests()[1];
    assert_valid(request);
    let messages = request.body["messages"].as_array().unwrap();
    let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(
        result["content"],
        "Error: Interrupted: brute stopped before this call finished"
    );
}

#[test]
fn a_finished_call_is_saved_even_if_an_earlier_one_is_still_running_at_a_crash() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("slow", "shell", r#"{"command":"sleep 30"}"#),
            ("w", "write", r#"{"file_path":"notes.txt","content":"written\n"}"#),
        ],
    )));
    let mut run = support::Streaming::start(sb.std_brute(&server), "two calls");
    // The write, called second, finishes while the first call still runs.
    run.until(|line| line.contains("\"tool_result\"") && line.contains("\"call_id\":\"w\""));
    let child = &mut run.child;
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    server.push(Reply::sse(openai_sse("Resumed.", &[])));
    sb.brute(&server).args(["-p", "go on", "--continue"]).assert().success();
    let request = &server.requests()[1];
    assert_valid(request);
    let results: std::collections::HashMap<String, String> = support::tool_results(request).into_iter().collect();
    assert!(
        results["w"].starts_with("Created notes.txt"),
        "the finished write is not reported as interrupted: {}",
        results["w"]
    );
    assert_eq!(
        results["slow"],
        "Error: Interrupted: brute stopped before this call finished"
    );
    let order: Vec<String> = support::tool_results(request).into_iter().map(|(id, _)| id).collect();
    assert_eq!(order, ["slow", "w"], "results follow the call order");
}

#[test]
fn undo_and_redo_from_the_shell_after_a_restart() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "mine\n");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "s",
            "shell",
            r#"{"command":"echo changed > notes.txt && touch new.txt && mkdir made"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    sb.brute(&server).args(["-p", "change notes"]).assert().success();
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "changed\n");
    sb.bare().args(["undo", "--list"]).assert().success().stdout(
        predicate::str::contains("turn   1")
            .and(predicate::str::contains("3 paths changed"))
            .and(predicate::str::contains("change notes")),
    );
    sb.bare().arg("undo").assert().success().stdout(
        predicate::str::contains("restored notes.txt (+1 -1)").and(predicate::str::contains("deleted new.txt")),
    );
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "mine\n");
    assert!(!sb.path("new.txt").exists() && !sb.path("made").exists());
    sb.bare()
        .arg("undo")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("nothing to undo"));
    sb.bare().arg("redo").assert().success();
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "changed\n");
    assert!(sb.path("made").is_dir());
    // The conversation was rewound with the first undo and restored by redo.
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.brute(&server).args(["-p", "next", "--continue"]).assert().success();
    let request = server.requests().last().unwrap().clone();
    assert_eq!(request.body["messages"][1]["content"], "change notes");
    assert_valid(&request);
}

#[test]
fn an_unwritable_data_directory_costs_the_session_not_the_run() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("still works", &[])));
    // A file where the data directory should be: nothing can be created under it.
    let blocked = sb.home.path().join("blocked");
    std::fs::write(&blocked, "not a directory").unwrap();
    sb.brute(&server)
        .env("BRUTE_DATA_DIR", &blocked)
        .args(["-p", "x"])
        .assert()
        .success()
        .stdout("still works\n")
        .stderr(predicate::str::contains("note: cannot save this session"));
}

/// The one session file of the sandbox's project.
fn session_file(sb: &Sandbox) -> std::path::PathBuf {
    let projects = std::fs::read_dir(sb.home.path().join("data/sessions")).unwrap();
    let files: Vec<_> = projects
        .flatten()
        .flat_map(|p| std::fs::read_dir(p.path()).unwrap().flatten().map(|f| f.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "one session file: {files:?}");
    files[0].clone()
}

/// The session file's lines, and the (1-based) number of the first line containing `needle`.
fn find_line(lines: &[Vec<u8>], needle: &str) -> usize {
    lines
        .iter()
        .position(|l| String::from_utf8_lossy(l).contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle}"))
}

fn read_lines(path: &std::path::Path) -> Vec<Vec<u8>> {
    std::fs::read(path)
        .unwrap()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

fn write_lines(path: &std::path::Path, lines: &[Vec<u8>]) {
    let mut bytes = Vec::new();
    for line in lines {
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
    }
    std::fs::write(path, bytes).unwrap();
}

/// No tool result without its call right before it, either.
fn assert_no_orphans(request: &support::Recorded) {
    let messages = request.body["messages"].as_array().unwrap();
    for (i, m) in messages.iter().enumerate().filter(|(_, m)| m["role"] == "tool") {
        let owner = messages[..i].iter().rev().find(|p| p["role"] != "tool").unwrap();
        let ids: Vec<&str> = owner["tool_calls"]
            .as_array()
            .map(|c| c.iter().map(|c| c["id"].as_str().unwrap()).collect())
            .unwrap_or_default();
        assert!(
            ids.contains(&m["tool_call_id"].as_str().unwrap()),
            "orphan result in {messages:#?}"
        );
    }
}

/// Two turns: the first writes a.txt with a tool, the second changes it with the shell.
fn two_turns(sb: &Sandbox, server: &MockServer) {
    server.push(Reply::sse(openai_sse(
        "",
        &[("w1", "write", r#"{"file_path":"a.txt","content":"one\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Wrote a.txt.", &[])));
    sb.brute(server).args(["-p", "first turn"]).assert().success();
    server.push(Reply::sse(openai_sse(
        "",
        &[("s2", "shell", r#"{"command":"echo two > a.txt && touch b.txt"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Changed it.", &[])));
    sb.brute(server)
        .args(["-p", "second turn", "--continue"])
        .assert()
        .success();
}

#[test]
fn an_invalid_byte_mid_file_is_reported_with_file_and_line_and_the_rest_loads() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    two_turns(&sb, &server);
    let path = session_file(&sb);
    let mut lines = read_lines(&path);
    let bad = find_line(&lines, "Wrote a.txt.");
    let at = lines[bad].len() / 2;
    lines[bad][at] = 0xff;
    lines.insert(bad + 1, br#"{"type":"from_a_future_version","x":1}"#.to_vec());
    write_lines(&path, &lines);
    let where_ = format!("{}:{}", path.display(), bad + 1);
    let unknown = format!("{}:{}", path.display(), bad + 2);
    sb.bare().args(["undo", "--list"]).assert().success().stdout(
        predicate::str::contains("turn   1")
            .and(predicate::str::contains("turn   2"))
            .and(predicate::str::contains("first turn")),
    );
    sb.bare()
        .args(["--resume"])
        .assert()
        .success()
        .stdout(predicate::str::contains("first turn"));
    server.push(Reply::sse(openai_sse("Still here.", &[])));
    sb.brute(&server)
        .args(["-p", "third", "--continue"])
        .assert()
        .success()
        .stdout("Still here.\n")
        .stderr(
            predicate::str::contains(format!("{where_}: skipped a damaged record (invalid UTF-8)")).and(
                predicate::str::contains(format!("{unknown}: skipped a damaged record (unknown record")),
            ),
        );
    let request = server.requests().last().unwrap().clone();
    assert_valid(&request);
    assert_no_orphans(&request);
    let users: Vec<&str> = request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["first turn", "second turn", "third"]);
    // Undo still walks back turn by turn (turn 3 changed nothing, turn 2 the shell's files).
    sb.bare().arg("undo").assert().success();
    sb.bare()
        .arg("undo")
        .assert()
        .success()
        .stdout(predicate::str::contains("undid turn 2").and(predicate::str::contains("deleted b.txt")));
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "one\n");
}

#[test]
fn a_line_cut_in_half_mid_file_drops_the_orphan_result_with_a_notice() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    two_turns(&sb, &server);
    let path = session_file(&sb);
    let mut lines = read_lines(&path);
    // The assistant message that made call s2: its result is now an orphan.
    let cut = find_line(&lines, r#""tool_calls":[{"id":"s2""#);
    let half = lines[cut].len() / 2;
    lines[cut].truncate(half);
    write_lines(&path, &lines);
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.brute(&server)
        .args(["-p", "third", "--continue"])
        .assert()
        .success()
        .stderr(
            predicate::str::contains(format!(
                "{}:{}: skipped a damaged record (a cut line)",
                path.display(),
                cut + 1
            ))
            .and(predicate::str::contains("dropped the result of call s2")),
        );
    let request = server.requests().last().unwrap().clone();
    assert_valid(&request);
    assert_no_orphans(&request);
}

#[test]
fn a_missing_turn_end_still_undoes_that_turn_and_not_the_one_before() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    two_turns(&sb, &server);
    let path = session_file(&sb);
    let mut lines = read_lines(&path);
    // Both turn ends go: the first one's end is the second's start, the last one's is the tree.
    lines.retain(|l| !String::from_utf8_lossy(l).contains(r#""type":"turn_end""#));
    write_lines(&path, &lines);
    sb.bare()
        .args(["undo", "--list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("unfinished"));
    sb.bare()
        .arg("undo")
        .assert()
        .success()
        .stdout(predicate::str::contains("undid turn 2").and(predicate::str::contains("deleted b.txt")));
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "one\n");
    sb.bare()
        .arg("undo")
        .assert()
        .success()
        .stdout(predicate::str::contains("undid turn 1").and(predicate::str::contains("deleted a.txt")));
    assert!(!sb.path("a.txt").exists());
    // And redo brings both back, as recorded by the undos.
    sb.bare().arg("redo").assert().success();
    sb.bare().arg("redo").assert().success();
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "two\n");
    assert!(sb.path("b.txt").exists());
}

#[test]
fn a_missing_object_changes_nothing_and_partial_restores_the_rest() {
    let sb = Sandbox::new();
    for name in ["a", "b", "c"] {
        sb.write(&format!("{name}.txt"), &format!("{name}0\n"));
    }
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("w", "write", r#"{"file_path":"x.txt","content":"x\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.brute(&server).args(["-p", "make x"]).assert().success();
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "s",
            "shell",
            r#"{"command":"echo a1 > a.txt && echo b1 > b.txt && echo c1 > c.txt"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.brute(&server)
        .args(["-p", "change abc", "--continue"])
        .assert()
        .success();
    // The seam: drop b.txt's original content from the store, as a damaged disk or a bad
    // prune would.
    let objects = brute::session::objects::ObjectStore::new(sb.home.path().join("data/objects"));
    let lost = brute::session::objects::hash(b"b0\n");
    assert!(objects.contains(&lost));
    objects.retain(|id| id != lost, std::time::Duration::ZERO).unwrap();
    assert!(!objects.contains(&lost));
    let read = |name: &str| std::fs::read_to_string(sb.path(name)).unwrap();
    for _ in 0..2 {
        // Atomic, and every retry is the same: nothing changes, the files are named.
        sb.bare().arg("undo").assert().failure().stderr(
            predicate::str::contains("b.txt")
                .and(predicate::str::contains("nothing was changed"))
                .and(predicate::str::contains("--partial")),
        );
        assert_eq!(
            (read("a.txt"), read("b.txt"), read("c.txt")),
            ("a1\n".into(), "b1\n".into(), "c1\n".into())
        );
    }
    sb.bare().args(["undo", "--partial"]).assert().success().stdout(
        predicate::str::contains("restored a.txt")
            .and(predicate::str::contains("restored c.txt"))
            .and(predicate::str::contains(
                "not restorable b.txt: its stored content is missing",
            )),
    );
    assert_eq!(
        (read("a.txt"), read("b.txt"), read("c.txt")),
        ("a0\n".into(), "b1\n".into(), "c0\n".into())
    );
    // The earlier turn is reachable again.
    sb.bare()
        .arg("undo")
        .assert()
        .success()
        .stdout(predicate::str::contains("undid turn 1").and(predicate::str::contains("deleted x.txt")));
    assert!(!sb.path("x.txt").exists());
}

/// `cmd` run with the data directory mounted read-only (a private mount namespace; with
/// `unshare -r` when not root). `None` where namespaces are unavailable (a failure under CI).
fn read_only_data(sb: &Sandbox, cmd: std::process::Command) -> Option<assert_cmd::Command> {
    read_only(&sb.home.path().join("data"), cmd)
}

/// `cmd` run with `dir` mounted read-only (see [`read_only_data`]).
fn read_only(dir: &std::path::Path, cmd: std::process::Command) -> Option<assert_cmd::Command> {
    let probe = std::process::Command::new("unshare").args(["-rm", "true"]).status();
    if !probe.is_ok_and(|s| s.success()) {
        assert!(std::env::var_os("CI").is_none(), "unshare -rm is needed for this test");
        eprintln!("skipped: no mount namespaces here");
        return None;
    }
    let mut ro = std::process::Command::new("unshare");
    // -r keeps an unprivileged user's mount rights; as root, plain -m keeps root's.
    ro.arg(if unsafe { libc::geteuid() } == 0 { "-m" } else { "-rm" });
    ro.args([
        "sh",
        "-c",
        r#"mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@""#,
    ])
    .arg(dir)
    .arg(cmd.get_program())
    .args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        ro.current_dir(dir);
    }
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => ro.env(key, value),
            None => ro.env_remove(key),
        };
    }
    ro.stdin(std::process::Stdio::null());
    Some(assert_cmd::Command::from_std(ro))
}

#[test]
fn a_read_only_data_dir_still_lists_and_every_error_names_the_path() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("w", "write", r#"{"file_path":"x.txt","content":"x\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.brute(&server).args(["-p", "make x"]).assert().success();
    let file = session_file(&sb);
    let base = |args: &[&str]| {
        let mut c = if args[0] == "-p" {
            sb.std_brute(&server)
        } else {
            sb.std_command()
        };
        c.args(args);
        c
    };
    let Some(mut listing) = read_only_data(&sb, base(&["undo", "--list"])) else {
        return;
    };
    listing
        .assert()
        .success()
        .stdout(predicate::str::contains("turn   1").and(predicate::str::contains("make x")));
    read_only_data(&sb, base(&["--resume"]))
        .unwrap()
        .assert()
        .success()
        .stdout(predicate::str::contains("make x"));
    read_only_data(&sb, base(&["undo"])).unwrap().assert().failure().stderr(
        predicate::str::contains(file.display().to_string()).and(predicate::str::contains("Read-only file system")),
    );
    assert!(sb.path("x.txt").exists(), "nothing was undone");
    // A new run still works and says, before the turn, that it is not saved and why.
    server.push(Reply::sse(openai_sse("fine", &[])));
    let sessions = file.parent().unwrap().display().to_string();
    read_only_data(&sb, base(&["-p", "another"]))
        .unwrap()
        .assert()
        .success()
        .stdout("fine\n")
        .stderr(predicate::str::contains(format!(
            "cannot save this session ({sessions}"
        )));
}

#[test]
fn a_turn_that_cannot_be_checkpointed_says_so_before_it_runs() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("first", &[])));
    sb.brute(&server).args(["-p", "one"]).assert().success();
    let objects = sb.home.path().join("data/objects");
    sb.write("new.txt", "content the store has not seen\n");
    server.push(Reply::sse(openai_sse(
        "",
        &[("s", "shell", r#"{"command":"echo ran"}"#)],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let mut cmd = sb.std_brute(&server);
    cmd.args(["-p", "two", "--continue"]);
    let Some(mut run) = read_only(&objects, cmd) else {
        return;
    };
    let out = run.assert().success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let notice = stderr
        .find(&format!(
            "turn 2 has no checkpoint, so /undo cannot take it back: {}",
            objects.display()
        ))
        .unwrap_or_else(|| panic!("no notice naming the store in {stderr}"));
    let tool = stderr
        .find("[shell]")
        .unwrap_or_else(|| panic!("no tool line in {stderr}"));
    assert!(notice < tool, "the notice comes before the turn runs: {stderr}");
}

#[test]
fn a_read_only_data_dir_resumes_and_continues_in_print_mode_unsaved() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("first answer", &[])));
    sb.brute(&server)
        .args(["-p", "remember the word kiwi"])
        .assert()
        .success();
    let file = session_file(&sb);
    let id = file.file_stem().unwrap().to_string_lossy().into_owned();
    let before = std::fs::read(&file).unwrap();
    let runs: [&[&str]; 2] = [&["-p", "and now?", "--continue"], &["-p", "and now?", "--resume", &id]];
    for args in runs {
        server.push(Reply::sse(openai_sse("still here", &[])));
        let mut cmd = sb.std_brute(&server);
        cmd.args(args);
        let Some(mut run) = read_only_data(&sb, cmd) else {
            return;
        };
        let out = run.assert().code(0).stdout("still here\n");
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert_eq!(
            stderr.matches("cannot save this session").count(),
            1,
            "said once, for {args:?}: {stderr}"
        );
        assert!(stderr.contains("Read-only file system"), "{stderr}");
        // The model saw the resumed conversation.
        let request = server.requests().last().unwrap().clone();
        let texts: Vec<String> = request.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].to_string())
            .collect();
        assert!(texts.iter().any(|t| t.contains("remember the word kiwi")), "{texts:?}");
        assert_valid(&request);
    }
    assert_eq!(std::fs::read(&file).unwrap(), before, "the session file is unchanged");
}

/// A tmpfs of `size` mounted on `dir` in a mount namespace of its own (with `unshare -r` when
/// not root), held by a process for as long as this lives: brute runs in it through
/// `nsenter`, and the test reaches its files through `/proc/PID/root`.
struct Tmpfs {
    holder: std::process::Child,
    dir: std::path::PathBuf,
    user_ns: bool,
}

impl Tmpfs {
    /// `None` where mount namespaces are unavailable (a failure under CI).
    fn mount(dir: &std::path::Path, size: &str) -> Option<Self> {
        use std::io::BufRead;
        let probe = std::process::Command::new("unshare").args(["-rm", "true"]).status();
        if !probe.is_ok_and(|s| s.success()) {
            assert!(std::env::var_os("CI").is_none(), "unshare -rm is needed for this test");
            eprintln!("skipped: no mount namespaces here");
            return None;
        }
        std::fs::create_dir_all(dir).unwrap();
        let user_ns = unsafe { libc::geteuid() } != 0;
        let mut holder = std::process::Command::new("unshare")
            .arg(if user_ns { "-rm" } else { "-m" })
            .args([
                "sh",
                "-c",
                r#"mount -t tmpfs -o size="$1" tmpfs "$0" && echo mounted && exec cat"#,
            ])
            .arg(dir)
            .arg(size)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(holder.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "mounted\n", "the tmpfs is mounted");
        Some(Self {
            holder,
            dir: dir.to_path_buf(),
            user_ns,
        })
    }

    /// `rel` on the tmpfs, as this process reaches it.
    fn path(&self, rel: &str) -> std::path::PathBuf {
        let inside = self.dir.join(rel);
        std::path::PathBuf::from(format!("/proc/{}/root{}", self.holder.id(), inside.display()))
    }

    /// `cmd` run where the tmpfs is mounted.
    fn run(&self, cmd: std::process::Command) -> assert_cmd::Command {
        let mut inside = std::process::Command::new("nsenter");
        inside.arg("-t").arg(self.holder.id().to_string());
        if self.user_ns {
            inside.args(["-U", "--preserve-credentials"]);
        }
        inside.arg("-m");
        if let Some(dir) = cmd.get_current_dir() {
            inside.arg(format!("--wd={}", dir.display()));
        }
        inside.arg(cmd.get_program()).args(cmd.get_args());
        for (key, value) in cmd.get_envs() {
            match value {
                Some(value) => inside.env(key, value),
                None => inside.env_remove(key),
            };
        }
        inside.stdin(std::process::Stdio::null());
        let mut run = assert_cmd::Command::from_std(inside);
        run.timeout(support::RUN_DEADLINE);
        run
    }

    /// The packs under `objects/pack` that have no index.
    fn packs_without_index(&self) -> Vec<std::path::PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.path("objects/pack")) else {
            return Vec::new();
        };
        entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "pack") && !p.with_extension("idx").exists())
            .collect()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // `cat` ends with its input, and the namespace (and the tmpfs) with it.
        drop(self.holder.stdin.take());
        let _ = self.holder.wait();
    }
}

#[test]
fn a_full_disk_costs_one_checkpoint_and_the_next_session_works() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let Some(disk) = Tmpfs::mount(&sb.home.path().join("data"), "2m") else {
        return;
    };
    // More than the data directory's disk holds: the first checkpoint runs out of space.
    sb.write("big.bin", &"x".repeat(3 << 20));
    sb.write("notes.txt", "one\n");
    let write = |content: &str| {
        let args = serde_json::json!({"file_path": "notes.txt", "content": content}).to_string();
        Reply::sse(openai_sse("", &[("w", "write", &args)]))
    };
    server.push(write("two\n"));
    server.push(Reply::sse(openai_sse("done", &[])));
    let mut cmd = sb.std_brute(&server);
    cmd.args(["-p", "fill it"]);
    let out = disk.run(cmd).assert().success().stdout("done\n");
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let notice = stderr
        .find("turn 1 has no checkpoint, so /undo cannot take it back")
        .unwrap_or_else(|| panic!("no notice in {stderr}"));
    assert!(stderr.contains("No space left on device"), "{stderr}");
    let tool = stderr
        .find("[write]")
        .unwrap_or_else(|| panic!("no tool line in {stderr}"));
    assert!(notice < tool, "the notice comes before the turn runs: {stderr}");
    assert_eq!(
        disk.packs_without_index(),
        Vec::<std::path::PathBuf>::new(),
        "no partial pack is left"
    );
    // The big file goes: a tiny project, and the next session saves and undoes as ever.
    std::fs::remove_file(sb.path("big.bin")).unwrap();
    server.push(write("three\n"));
    server.push(Reply::sse(openai_sse("ok", &[])));
    let mut cmd = sb.std_brute(&server);
    cmd.args(["-p", "again"]);
    let out = disk.run(cmd).assert().success().stdout("ok\n");
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        !stderr.contains("cannot save") && !stderr.contains("no checkpoint"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "three\n");
    let mut undo = sb.std_command();
    undo.arg("undo");
    disk.run(undo)
        .assert()
        .success()
        .stdout(predicate::str::contains("restored notes.txt"));
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "two\n");
}

#[test]
fn a_pack_a_killed_writer_left_without_its_index_is_discarded_at_the_next_open() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    let Some(disk) = Tmpfs::mount(&sb.home.path().join("data"), "1m") else {
        return;
    };
    sb.write("notes.txt", "one\n");
    server.push(Reply::sse(openai_sse("first", &[])));
    let mut cmd = sb.std_brute(&server);
    cmd.args(["-p", "one"]);
    disk.run(cmd).assert().success().stdout("first\n");
    // A brute killed while writing a pack left it, without its index, filling the disk.
    let partial = disk.path("objects/pack/1700000000000-0badf00d.pack");
    std::fs::create_dir_all(partial.parent().unwrap()).unwrap();
    let error = std::fs::write(&partial, vec![0u8; 2 << 20]).unwrap_err();
    assert_eq!(error.raw_os_error(), Some(libc::ENOSPC), "the disk is full");
    let args = serde_json::json!({"file_path": "notes.txt", "content": "two\n"}).to_string();
    server.push(Reply::sse(openai_sse("", &[("w", "write", &args)])));
    server.push(Reply::sse(openai_sse("ok", &[])));
    let mut cmd = sb.std_brute(&server);
    cmd.args(["-p", "two"]);
    let out = disk.run(cmd).assert().success().stdout("ok\n");
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        !stderr.contains("cannot save") && !stderr.contains("no checkpoint"),
        "{stderr}"
    );
    assert!(!partial.exists(), "the partial pack was discarded");
    let mut undo = sb.std_command();
    undo.arg("undo");
    disk.run(undo)
        .assert()
        .success()
        .stdout(predicate::str::contains("restored notes.txt"));
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "one\n");
}

#[test]
fn a_second_process_on_a_session_in_use_forks_it_and_undo_is_refused() {
    use std::io::{BufRead, BufReader};
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("w", "write", r#"{"file_path":"a.txt","content":"one\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("ok", &[])));
    sb.brute(&server).args(["-p", "first"]).assert().success();
    let original = session_file(&sb);
    let id = original.file_stem().unwrap().to_string_lossy().into_owned();
    // A UI-like long run holds the session: its shell waits for `go` (with its own deadline).
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "hold",
            "shell",
            r#"{"command":"echo started; timeout 30 sh -c 'while [ ! -f go ]; do sleep 0.01; done'"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("held", &[])));
    let mut holder = sb
        .std_brute(&server)
        .args(["-p", "hold it", "--continue", "--output-format", "events"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    assert!(
        lines
            .by_ref()
            .map_while(Result::ok)
            .any(|l| l.contains("\"tool_output_delta\"")),
        "the holder's command started"
    );
    // `brute undo` from another terminal is refused and changes nothing.
    sb.bare().arg("undo").assert().failure().stderr(
        predicate::str::contains(format!("session {id} is in use by another brute process"))
            .and(predicate::str::contains("nothing was changed")),
    );
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "one\n");
    // `-p --continue` forks: a new id, shown, with the conversation so far.
    server.push(Reply::sse(openai_sse("forked", &[])));
    let out = sb
        .brute(&server)
        .args(["-p", "meanwhile", "--continue", "--output-format", "json"])
        .assert()
        .success()
        .stderr(predicate::str::contains(format!(
            "session {id} is in use by another brute process"
        )));
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let fork = report["session"].as_str().unwrap().to_owned();
    assert_ne!(fork, id);
    assert!(
        report["notices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains(&fork)),
        "the new id is shown: {report}"
    );
    let request = server.requests().last().unwrap().clone();
    assert_valid(&request);
    assert_eq!(request.body["messages"][1]["content"], "first");
    std::fs::write(sb.path("go"), "").unwrap();
    let _ = lines.count();
    assert!(holder.wait().unwrap().success());
    // The original file was written by one process only: one checkpoint per turn number.
    let text = std::fs::read_to_string(&original).unwrap();
    assert_eq!(text.matches(r#""type":"checkpoint","turn":2"#).count(), 1);
}

/// Lets a command blocked on `read x < fifo` go on: opening the FIFO read-write never blocks,
/// and the line stays in the pipe for the reader.
fn release(fifo: &std::path::Path) -> std::fs::File {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().read(true).write(true).open(fifo).unwrap();
    file.write_all(b"go\n").unwrap();
    file
}

fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates a node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Two `brute -p` runs in one project, overlapping in time (A starts, B starts, A ends, B
/// ends), each writing with its own tools and with commands: undoing B takes back only what
/// B's tools wrote. A's tool write is never touched; what a command wrote while both ran is
/// left alone, and taken back only with --force.
#[test]
fn undo_of_one_of_two_overlapping_runs_never_reverts_the_others_work() {
    let sb = Sandbox::new();
    sb.write("keep.txt", "unchanged\n");
    for fifo in ["a.go", "b.go"] {
        mkfifo(&sb.path(fifo));
    }
    let server_a = MockServer::start();
    server_a.push(Reply::sse(openai_sse(
        "",
        &[("a1", "shell", r#"{"command":"read x < a.go; echo a > a_shell.txt"}"#)],
    )));
    server_a.push(Reply::sse(openai_sse(
        "",
        &[("a2", "write", r#"{"file_path":"a_tool.txt","content":"from A\n"}"#)],
    )));
    server_a.push(Reply::sse(openai_sse("A done.", &[])));
    let server_b = MockServer::start();
    server_b.push(Reply::sse(openai_sse(
        "",
        &[
            ("b1", "write", r#"{"file_path":"b_tool.txt","content":"from B\n"}"#),
            ("b2", "shell", r#"{"command":"echo b > b_shell.txt; read x < b.go"}"#),
        ],
    )));
    server_b.push(Reply::sse(openai_sse("B done.", &[])));
    let started = |line: &str| line.contains("\"request_started\"");
    let mut a = support::Streaming::start(sb.std_brute(&server_a), "task A");
    a.until(started);
    let mut b = support::Streaming::start(sb.std_brute(&server_b), "task B");
    // B's checkpoint runs beside its request; its first tool result comes after it is taken,
    // so A's command below writes after B's start.
    b.until(|line| line.contains("\"tool_result\"") && line.contains("\"b1\""));
    let _a_go = release(&sb.path("a.go"));
    a.rest();
    assert!(a.child.wait().unwrap().success(), "{:?}", a.seen);
    let _b_go = release(&sb.path("b.go"));
    b.rest();
    assert!(b.child.wait().unwrap().success(), "{:?}", b.seen);
    for file in ["a_shell.txt", "a_tool.txt", "b_shell.txt", "b_tool.txt"] {
        assert!(sb.path(file).exists(), "{file}");
    }

    // `brute undo` takes the latest session: B's.
    let out = sb.bare().arg("undo").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("task B"), "{text}");
    assert!(
        !sb.path("b_tool.txt").exists(),
        "B's own tool write is taken back: {text}"
    );
    assert!(sb.path("a_tool.txt").exists(), "A's tool write is A's: {text}");
    assert!(
        sb.path("a_shell.txt").exists() && sb.path("b_shell.txt").exists(),
        "{text}"
    );
    for left in ["a_tool.txt", "a_shell.txt", "b_shell.txt"] {
        assert!(
            text.contains(&format!("left alone {left}: another brute turn")),
            "{left}: {text}"
        );
    }
    assert_eq!(std::fs::read_to_string(sb.path("keep.txt")).unwrap(), "unchanged\n");

    // Forced, what either run's command may have written goes too; A's tool write never.
    let out = sb.bare().arg("redo").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(sb.path("b_tool.txt").exists());
    let out = sb.bare().args(["undo", "--force"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(
        !sb.path("b_tool.txt").exists() && !sb.path("b_shell.txt").exists(),
        "{text}"
    );
    assert!(
        sb.path("a_tool.txt").exists(),
        "never another turn's tool write: {text}"
    );
}

/// Writes `bytes` at the project path whose name is `name` (any bytes but `/` and NUL).
fn write_raw(sb: &Sandbox, name: &[u8], bytes: &[u8]) {
    use std::os::unix::ffi::OsStrExt;
    std::fs::write(sb.project.path().join(std::ffi::OsStr::from_bytes(name)), bytes).unwrap();
}

/// Names that are not UTF-8 (and names with newlines and escape sequences) come back byte
/// for byte through `brute undo` and `brute redo`, in a plain directory and in a git
/// repository: a deleted `precious\xff.txt` is re-created under its own name, a modified
/// `other\xfe.txt` is restored (not skipped), two names that differ only in invalid bytes
/// stay two files, and no name forges a line of the undo list or reaches the terminal raw.
#[test]
fn names_that_are_not_utf8_come_back_byte_for_byte() {
    use support::bytes_tree;
    for in_git in [false, true] {
        let sb = Sandbox::new();
        write_raw(&sb, b"precious\xff.txt", b"precious\n");
        write_raw(&sb, b"other\xfe.txt", b"other\n");
        write_raw(&sb, b"twin\xfe", b"first twin\n");
        write_raw(&sb, b"twin\xff", b"second twin\n");
        write_raw(&sb, b"line\nundid turn 9 (\"forged\"): no file changes", b"newline\n");
        write_raw(&sb, b"esc\x1b[2Jname", b"escape\n");
        if in_git {
            for args in [
                &["init", "-q"][..],
                &["add", "-A"],
                &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
            ] {
                let status = std::process::Command::new("git")
                    .args(args)
                    .current_dir(sb.project.path())
                    .status()
                    .unwrap();
                assert!(status.success(), "git {args:?}");
            }
        }
        let before = bytes_tree::read(sb.project.path());
        let server = MockServer::start();
        let command = [
            r#"rm "$(printf 'precious\377.txt')""#,
            r#"echo changed > "$(printf 'other\376.txt')""#,
            r#"echo changed > "$(printf 'twin\376')""#,
            r#"rm "$(printf 'twin\377')""#,
            r#"echo made > "$(printf 'made\375')""#,
            r#"rm "$(printf 'line\nundid turn 9 ("forged"): no file changes')""#,
            r#"echo changed > "$(printf 'esc\033[2Jname')""#,
        ]
        .join(" && ");
        let args = serde_json::json!({ "command": command }).to_string();
        server.push(Reply::sse(openai_sse("", &[("s", "shell", &args)])));
        server.push(Reply::sse(openai_sse("Done.", &[])));
        sb.brute(&server).args(["-p", "change them"]).assert().success();
        let after = bytes_tree::read(sb.project.path());
        assert_eq!(
            bytes_tree::shown(&after),
            ["esc\\x1b[2Jname", "made\\xfd", "other\\xfe.txt", "twin\\xfe",],
            "in git: {in_git}: the command ran as written"
        );
        let undone = sb.bare().arg("undo").assert().success();
        let out = String::from_utf8(undone.get_output().stdout.clone()).unwrap();
        assert_eq!(
            bytes_tree::read(sb.project.path()),
            before,
            "in git: {in_git}: undo restores every name and content: {out}"
        );
        assert!(
            !out.contains('\u{1b}'),
            "no escape sequence reaches the terminal: {out:?}"
        );
        assert!(
            out.lines().all(|line| !line.starts_with("undid turn 9")),
            "a name forges no line: {out}"
        );
        for shown in [
            "precious\\xff.txt",
            "other\\xfe.txt",
            "twin\\xff",
            "made\\xfd",
            "esc␛[2Jname",
        ] {
            assert!(out.contains(shown), "in git: {in_git}: {shown} is listed: {out}");
        }
        // A redo says what it did, not what an undo did.
        sb.bare().arg("redo").assert().success().stdout(
            predicate::str::contains("redid turn 1")
                .and(predicate::str::contains(
                    "the conversation is back as it was after that turn",
                ))
                .and(predicate::str::contains("`brute undo` (/undo) takes it back again"))
                .and(predicate::str::contains("rewound").not()),
        );
        assert_eq!(bytes_tree::read(sb.project.path()), after, "in git: {in_git}: redo");
    }
}

/// A tree deeper than PATH_MAX (121 levels of 40-byte names, about 5,000 bytes of path):
/// a turn that deletes it is undone whole, leaf included, and a turn that makes one is undone
/// by removing all of it; redo brings each back. Both byte for byte.
#[test]
fn trees_deeper_than_path_max_are_undone_and_redone_whole() {
    use support::bytes_tree;
    let name = |i: usize| format!("{i:03}{}", "d".repeat(37)).into_bytes();
    let names: Vec<Vec<u8>> = (0..121).map(name).collect();
    let sb = Sandbox::new();
    sb.write("top.txt", "top\n");
    let leaf = bytes_tree::make_dirs(sb.project.path(), &names);
    bytes_tree::write_at(&leaf, b"leaf.txt", b"the deepest file\n");
    drop(leaf);
    let before = bytes_tree::read(sb.project.path());
    assert_eq!(before.len(), 123);
    // The deep tree goes.
    let server = MockServer::start();
    let rm = serde_json::json!({ "command": format!("rm -rf {}", String::from_utf8_lossy(&names[0])) }).to_string();
    server.push(Reply::sse(openai_sse("", &[("s", "shell", &rm)])));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    sb.brute(&server).args(["-p", "delete it"]).assert().success();
    assert_eq!(
        bytes_tree::read(sb.project.path()).len(),
        1,
        "the command deleted the tree"
    );
    sb.bare().arg("undo").assert().success();
    assert_eq!(
        bytes_tree::read(sb.project.path()),
        before,
        "undo restores every level and the leaf"
    );
    sb.bare().arg("redo").assert().success();
    assert_eq!(bytes_tree::read(sb.project.path()).len(), 1, "redo deletes it again");
    sb.bare().arg("undo").assert().success();
    assert_eq!(bytes_tree::read(sb.project.path()), before);
    // A deep tree is made (by relative steps, as a build would), then undone and redone.
    let make = format!(
        "mkdir made && cd made && for i in $(seq 1 121); do mkdir {d} && cd {d}; done && echo leaf > leaf.txt",
        d = "m".repeat(40)
    );
    let make = serde_json::json!({ "command": make }).to_string();
    server.push(Reply::sse(openai_sse("", &[("m", "shell", &make)])));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    sb.brute(&server).args(["-p", "make one"]).assert().success();
    let made = bytes_tree::read(sb.project.path());
    assert_eq!(
        made.len(),
        before.len() + 123,
        "the command made 122 directories and a leaf"
    );
    let undone = sb.bare().arg("undo").assert().success();
    let out = String::from_utf8_lossy(&undone.get_output().stdout).into_owned();
    assert!(!out.contains("no file changes"), "{out}");
    assert_eq!(
        bytes_tree::read(sb.project.path()),
        before,
        "undo removes all of it: {out}"
    );
    sb.bare().arg("redo").assert().success();
    assert_eq!(bytes_tree::read(sb.project.path()), made, "redo makes it again");
    // The same as a project's very first run: its size unknown, the file watcher runs, and
    // the turn's end lists only the directories it saw touched (the new one walked whole).
    let fresh = Sandbox::new();
    fresh.write("top.txt", "top\n");
    let first = bytes_tree::read(fresh.project.path());
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("", &[("m", "shell", &make)])));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    fresh.brute(&server).args(["-p", "make one"]).assert().success();
    assert_eq!(bytes_tree::read(fresh.project.path()).len(), first.len() + 123);
    fresh
        .bare()
        .args(["undo", "--list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("123 paths changed"));
    fresh.bare().arg("undo").assert().success();
    assert_eq!(
        bytes_tree::read(fresh.project.path()),
        first,
        "the watched turn's undo removes all of it"
    );
}

/// A file the person saves while a turn runs (between the model's answers, when nothing of
/// brute's runs) is the person's: `brute undo` keeps it and says so, also one the agent's
/// own `write` changed first; `brute undo --force` then takes back just those, on the turn
/// already undone, instead of "nothing to undo".
#[test]
fn the_persons_saves_during_a_turn_are_kept_by_undo_and_listed() {
    let sb = Sandbox::new();
    sb.write("a.txt", "original a\n");
    sb.write("mine.txt", "mine before\n");
    sb.write("tooled.txt", "tooled before\n");
    let server = MockServer::start();
    let gate = support::Gate::default();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("s", "shell", r#"{"command":"echo agent > a.txt"}"#),
            (
                "w",
                "write",
                r#"{"file_path":"tooled.txt","content":"the agent wrote\n"}"#,
            ),
        ],
    )));
    server.push(Reply::sse(openai_sse("Done.", &[])).after(&gate));
    let mut child = sb
        .std_brute(&server)
        .args(["-p", "change a"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _deadline = support::deadline(&child, 180);
    // The tool calls are done and their results sent: the person saves two files now, a
    // clock tick after (the kernel stamps files from a coarse clock: a save within the
    // command's last tick cannot be told from the command's; no person is that fast).
    gate.arrived();
    support::next_clock_tick();
    std::fs::write(sb.path("mine.txt"), "the person's save\n").unwrap();
    std::fs::write(sb.path("tooled.txt"), "the person edited it after the agent\n").unwrap();
    gate.release();
    assert!(child.wait().unwrap().success());
    let undone = sb.bare().arg("undo").assert().success();
    let out = String::from_utf8_lossy(&undone.get_output().stdout).into_owned();
    assert_eq!(
        std::fs::read_to_string(sb.path("a.txt")).unwrap(),
        "original a\n",
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.path("mine.txt")).unwrap(),
        "the person's save\n",
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.path("tooled.txt")).unwrap(),
        "the person edited it after the agent\n",
        "{out}"
    );
    for line in [
        "kept mine.txt: you changed it while the turn ran",
        "kept tooled.txt: you changed it while the turn ran",
        "`brute undo --force` (/undo force) takes back what was skipped or kept",
        "`brute redo` (/redo) re-applies the turn",
    ] {
        assert!(out.contains(line), "{line:?} in {out}");
    }
    let forced = sb.bare().args(["undo", "--force"]).assert().success();
    let out = String::from_utf8_lossy(&forced.get_output().stdout).into_owned();
    assert!(
        out.starts_with("undid what the undo of turn 1 (\"change a\") had left:"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.path("mine.txt")).unwrap(),
        "mine before\n",
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.path("tooled.txt")).unwrap(),
        "tooled before\n",
        "{out}"
    );
    sb.bare()
        .arg("undo")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("nothing to undo"));
}

/// A save made while one of the turn's commands runs cannot be told from the command's
/// change: undo takes it back as the turn's, but lists it with the way back, never silently;
/// `brute redo` brings it back.
#[test]
fn a_save_while_a_command_runs_is_undone_but_listed() {
    let sb = Sandbox::new();
    sb.write("mine.txt", "mine before\n");
    support::mkfifo(&sb.path("ready"));
    support::mkfifo(&sb.path("go"));
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "s",
            "shell",
            r#"{"command":"echo agent > a.txt && echo ready > ready && read line < go"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    let mut child = sb
        .std_brute(&server)
        .args(["-p", "run it"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _deadline = support::deadline(&child, 180);
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(std::fs::File::open(sb.path("ready")).unwrap()),
        &mut line,
    )
    .unwrap();
    // The command runs: the person saves meanwhile.
    std::fs::write(sb.path("mine.txt"), "the person's save\n").unwrap();
    std::fs::write(sb.path("go"), "go\n").unwrap();
    assert!(child.wait().unwrap().success());
    let undone = sb.bare().arg("undo").assert().success();
    let out = String::from_utf8_lossy(&undone.get_output().stdout).into_owned();
    assert!(!sb.path("a.txt").exists(), "{out}");
    assert_eq!(
        std::fs::read_to_string(sb.path("mine.txt")).unwrap(),
        "mine before\n",
        "{out}"
    );
    assert!(
        out.contains(
            "changed while a command of the turn ran, so taken as the turn's: a.txt, mine.txt; if one was your own edit, `brute redo` (/redo) brings it back"
        ),
        "{out}"
    );
    sb.bare().arg("redo").assert().success();
    assert_eq!(
        std::fs::read_to_string(sb.path("mine.txt")).unwrap(),
        "the person's save\n"
    );
}
