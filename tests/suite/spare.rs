//! The spare init (`brute::sandbox::spare`) with the real binary as the init, real namespaces
//! and Landlock: a command it takes runs as it would under a fresh init (same output, status,
//! directory, environment, stdin and confinement), under the command's own policy whatever the
//! spare was made for, and a spare that cannot take a command hands it on. Under `CI` a missing
//! sandbox fails these tests; elsewhere they skip, saying why.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use brute::sandbox::spare::{self, Request, Spare};
use brute::sandbox::{Mode, Policy};
use support::{MockServer, Reply, Sandbox, openai_sse};

/// A fresh directory outside /tmp (which workspace-write policies may write).
fn dir(name: &str) -> PathBuf {
    support::dir_outside_tmp(name)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The init's command for `script` under `policy`, as the `shell` tool prepares it.
fn command(policy: &Policy, cwd: &Path, script: &str) -> tokio::process::Command {
    let mut command = brute::sandbox::confined_command(policy, "bash", ["-c", script]).unwrap();
    command
        .current_dir(cwd)
        .env("SPARE_TEST_VAR", "per-call value")
        .env_remove("HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    command
}

/// How a command ended and what it printed.
#[derive(Debug, PartialEq, Eq)]
struct Ran {
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Feeds `input` (or nothing) and waits for the command.
async fn finish(mut child: tokio::process::Child, input: Option<&[u8]>) -> Ran {
    use std::os::unix::process::ExitStatusExt;
    use tokio::io::AsyncWriteExt;
    let stdin = child.stdin.take();
    if let (Some(mut stdin), Some(input)) = (stdin, input) {
        stdin.write_all(input).await.unwrap();
    }
    let output = child.wait_with_output().await.unwrap();
    Ran {
        code: output.status.code(),
        signal: output.status.signal(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs `script` under `policy` in a spare made for `spare_policy` (`None`: under a fresh
/// init); returns how it ran and whether the spare took it.
async fn run(
    policy: &Policy,
    spare_policy: Option<&Policy>,
    cwd: &Path,
    script: &str,
    input: Option<&[u8]>,
) -> (Ran, bool) {
    let command = command(policy, cwd, script);
    let (child, used) = match spare_policy {
        Some(made_for) => {
            let spare = Spare::start(made_for, &[]).await.unwrap();
            spare::run_in(spare, command, input.is_none()).await.unwrap()
        }
        None => (brute::sandbox::spawn(command).await.unwrap(), false),
    };
    (finish(child, input).await, used)
}

/// What a spare runs is what a fresh init runs: the same output and status for a command that
/// prints its directory, the environment it was given, its PID in the namespace and its
/// stdin, exits with a code or by a signal; the same walls (a write outside the project, into
/// `.git`, and a connection to a listener outside are refused; its own loopback works).
#[test]
fn a_command_in_a_spare_runs_as_under_a_fresh_init() {
    if !support::sandbox_ready() {
        return;
    }
    let project = dir("spare-project");
    let outside = dir("spare-outside");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(project.join("sub")).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let policy = Policy::for_project(Mode::WorkspaceWrite, &project, &[], &[]);
    let scripts: Vec<(String, Option<&[u8]>)> = vec![
        (
            "pwd; echo \"[$SPARE_TEST_VAR] [${HOME-unset}] pid=$$\"; cat".to_owned(),
            Some(b"the input\n"),
        ),
        ("cat; echo read-nothing; exit 3".to_owned(), None),
        ("kill -TERM $$".to_owned(), None),
        (
            format!("echo x > {}/f 2>&1 || echo outside-refused", outside.display()),
            None,
        ),
        (
            "echo x > .git/config 2>/dev/null || echo git-refused; echo y > made && echo inside".to_owned(),
            None,
        ),
        (
            format!("(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached || echo no-network"),
            None,
        ),
        (
            "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); c=socket.create_connection(s.getsockname()); print(\"loopback\")' 2>&1 || echo no-python".to_owned(),
            None,
        ),
    ];
    let rt = runtime();
    for (script, input) in &scripts {
        let cwd = project.join("sub");
        let (fresh, _) = rt.block_on(run(&policy, None, &cwd, script, *input));
        let _ = std::fs::remove_file(project.join("made"));
        let (spared, used) = rt.block_on(run(&policy, Some(&policy), &cwd, script, *input));
        let _ = std::fs::remove_file(project.join("made"));
        assert!(used, "the spare took `{script}`");
        assert_eq!(spared, fresh, "`{script}`");
    }
    let (first, _) = rt.block_on(run(
        &policy,
        Some(&policy),
        &project.join("sub"),
        &scripts[0].0,
        scripts[0].1,
    ));
    assert_eq!(
        first.stdout,
        format!(
            "{}\n[per-call value] [unset] pid=2\nthe input\n",
            project.join("sub").display()
        )
    );
    let (ended, _) = rt.block_on(run(&policy, Some(&policy), &project, &scripts[2].0, None));
    assert_eq!(ended.signal, Some(libc::SIGTERM), "{ended:?}");
    assert!(!outside.join("f").exists(), "nothing was written outside");
    assert_eq!(listener.set_nonblocking(true).ok(), Some(()));
    assert!(listener.accept().is_err(), "the listener outside saw no connection");
}

/// A command started in `.git` (the model chose that `cwd`) writes there no more than one
/// naming it by path: its directory is entered again through the read-only mount, fresh init
/// or spare.
#[test]
fn a_command_started_inside_git_cannot_write_it() {
    if !support::sandbox_ready() {
        return;
    }
    let project = dir("spare-gitcwd");
    std::fs::create_dir_all(project.join(".git/hooks")).unwrap();
    std::fs::write(project.join(".git/config"), "[core]\n").unwrap();
    let policy = Policy::for_project(Mode::WorkspaceWrite, &project, &[], &[]);
    let script = "echo hacked >> config 2>/dev/null || echo config-refused; \
                  echo x > hooks/pre-commit 2>/dev/null || echo hook-refused";
    let rt = runtime();
    for spare in [None, Some(&policy)] {
        let (ran, _) = rt.block_on(run(&policy, spare, &project.join(".git"), script, None));
        assert_eq!(ran.stdout, "config-refused\nhook-refused\n", "{ran:?}");
    }
    assert_eq!(
        std::fs::read_to_string(project.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!project.join(".git/hooks/pre-commit").exists());
}

/// A spare made for one project runs a command under the command's policy: its project is
/// writable, the spare's is not, and a read-only path the command's policy names (a nested
/// `.git` found after the spare was made) is read-only.
#[test]
fn a_spare_enforces_the_commands_policy_not_the_one_it_was_made_for() {
    if !support::sandbox_ready() {
        return;
    }
    let first = dir("spare-first");
    let second = dir("spare-second");
    let made_for = Policy::for_project(Mode::WorkspaceWrite, &first, &[], &[]);
    std::fs::create_dir_all(second.join("vendor/.git")).unwrap();
    std::fs::write(second.join("vendor/.git/config"), "[core]\n").unwrap();
    let policy = Policy::for_project(Mode::WorkspaceWrite, &second, &[], &[]);
    let script = format!(
        "echo a > {first}/a 2>/dev/null || echo first-refused; echo b > b && echo second-written; \
         echo hook >> vendor/.git/config 2>/dev/null || echo nested-git-refused",
        first = first.display()
    );
    let (ran, used) = runtime().block_on(run(&policy, Some(&made_for), &second, &script, None));
    assert!(used);
    assert_eq!(
        ran.stdout, "first-refused\nsecond-written\nnested-git-refused\n",
        "{ran:?}"
    );
    assert!(!first.join("a").exists());
    assert_eq!(
        std::fs::read_to_string(second.join("vendor/.git/config")).unwrap(),
        "[core]\n"
    );
}

/// A spare whose shape is not the command's (unconfined, for a confined command) is not
/// used: the command runs confined under a fresh init. And a request of the wrong shape
/// written to a spare directly is refused by the init itself, running nothing.
#[test]
fn a_spare_of_another_shape_runs_nothing_for_the_command() {
    if !support::sandbox_ready() {
        return;
    }
    let project = dir("spare-shape");
    let outside = dir("spare-shape-outside");
    let full = Policy::for_project(Mode::FullAccess, &project, &[], &[]);
    let confined = Policy::for_project(Mode::WorkspaceWrite, &project, &[], &[]);
    let script = format!("echo x > {}/f 2>/dev/null || echo refused", outside.display());
    let rt = runtime();
    let (ran, used) = rt.block_on(run(&confined, Some(&full), &project, &script, None));
    assert!(!used, "an unconfined spare never takes a confined command");
    assert_eq!(ran.stdout, "refused\n");
    assert!(!outside.join("f").exists());

    let ran = rt.block_on(async {
        let spare = Spare::start(&full, &[]).await.unwrap();
        let command = command(&confined, &project, &script);
        let request = Request::for_command(&command, true).unwrap();
        let mut child = spare.into_child();
        let mut stdin = child.stdin.take().unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut stdin, &request.encode())
            .await
            .unwrap();
        drop(stdin);
        finish(child, None).await
    });
    assert_eq!(ran.code, Some(i32::from(brute::sandbox::UNAVAILABLE)), "{ran:?}");
    assert!(ran.stderr.contains("does not fit"), "{ran:?}");
    assert!(!outside.join("f").exists());
}

/// A spare that died before the command came (killed, say) hands it to a fresh init; one
/// whose pipe closes with no request (discarded, or brute gone) ends at once, quietly.
#[test]
fn a_dead_spare_hands_the_command_on_and_an_unused_one_ends_quietly() {
    if !support::sandbox_ready() {
        return;
    }
    let project = dir("spare-dead");
    let policy = Policy::for_project(Mode::WorkspaceWrite, &project, &[], &[]);
    let rt = runtime();
    let ran = rt.block_on(async {
        let spare = Spare::start(&policy, &[]).await.unwrap();
        let mut child = spare.into_child();
        child.start_kill().unwrap();
        child.wait().await.unwrap();
        // The same process, dead, as a spare again: through `run_in`'s hand-over.
        let command = command(&policy, &project, "echo ran");
        let request = Request::for_command(&command, true).unwrap();
        let (child, used) = spare::hand_over(child, command, &request).await.unwrap();
        assert!(!used, "a dead spare takes nothing");
        finish(child, None).await
    });
    assert_eq!(ran.stdout, "ran\n", "{ran:?}");

    let ended = rt.block_on(async {
        let spare = Spare::start(&policy, &[]).await.unwrap();
        let mut child = spare.into_child();
        drop(child.stdin.take());
        finish(child, None).await
    });
    assert_eq!(
        ended,
        Ran {
            code: Some(0),
            signal: None,
            stdout: String::new(),
            stderr: String::new()
        }
    );
}

/// Through the binary: a `-p` run's first command starts in the spare made when the request
/// left (the log says so) and gets the same result as with spares off; no process of the
/// run outlives it.
#[test]
fn a_runs_first_command_starts_in_its_spare() {
    if !support::sandbox_ready() {
        return;
    }
    for spares in [true, false] {
        let sb = Sandbox::new();
        let data = sb.home.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let server = MockServer::start();
        server.push(Reply::sse(openai_sse(
            "",
            &[("c", "shell", r#"{"command": "echo pid=$$; echo made > made.txt"}"#)],
        )));
        server.push(Reply::sse(openai_sse("done", &[])));
        let mut cmd = sb.brute(&server);
        cmd.env("BRUTE_LOG", "brute=debug").args(["-p", "go"]);
        if !spares {
            cmd.env(spare::DISABLE_VAR, "1");
        }
        let output = cmd.output().unwrap();
        assert!(output.status.success(), "{output:?}");
        let results = support::first_results(&server);
        assert!(results["c"].contains("pid=2"), "{}", results["c"]);
        assert_eq!(std::fs::read_to_string(sb.path("made.txt")).unwrap(), "made\n");
        let log = std::fs::read_to_string(data.join("brute.log")).unwrap_or_default();
        assert_eq!(
            log.contains("the command starts in a spare init"),
            spares,
            "spares {spares}: {log}"
        );
    }
}
