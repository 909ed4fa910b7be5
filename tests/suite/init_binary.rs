//! `brute-sandbox-init`, brute's init as a binary of its own (`brute::sandbox::exe`), with the
//! real binaries, namespaces and Landlock: commands run in a sealed copy of it when it is
//! installed beside brute and sound, in brute's own binary otherwise (or when asked), and
//! confined the same either way; an init from another build runs nothing. (A command that
//! rewrites the file: `sandbox::a_command_cannot_replace_the_init_the_next_command_starts_under`.) Under `CI` a missing sandbox fails these
//! tests; elsewhere they skip, saying why.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use brute::sandbox::{IN_BRUTE_VAR, INIT_ARG, INIT_BINARY, UNAVAILABLE};
use support::{MockServer, Reply, Sandbox, openai_sse};

/// A fresh directory outside /tmp (which workspace-write policies may write).
fn dir(name: &str) -> PathBuf {
    support::dir_outside_tmp(name)
}

/// The command the model runs: which binary is PID 1 (the init), a write in the project and
/// one outside it.
fn probe_command(outside: &Path) -> String {
    format!(
        "echo init=$(readlink /proc/1/exe); echo in > inside.txt; (echo out > {}/x) 2>/dev/null || echo blocked",
        outside.display()
    )
}

/// Runs `brute -p` (the binary at `brute`) whose model runs [`probe_command`]; returns the
/// command's result.
fn run(sb: &Sandbox, brute: &Path, env: &[(&str, &str)], outside: &Path) -> String {
    let server = MockServer::start();
    let arguments = serde_json::json!({ "command": probe_command(outside) }).to_string();
    server.push(Reply::sse(openai_sse("", &[("c", "shell", &arguments)])));
    server.push(Reply::sse(openai_sse("done", &[])));
    let mut cmd = sb.std_brute_of(&server, brute);
    cmd.args(["-p", "go"]);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let output = cmd.output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let result = support::first_results(&server).remove("c").unwrap_or_default();
    assert_eq!(
        std::fs::read_to_string(sb.path("inside.txt")).unwrap(),
        "in\n",
        "{result}"
    );
    assert!(
        result.contains("blocked"),
        "a write outside the project went through: {result}"
    );
    assert!(!outside.join("x").exists());
    result
}

fn init_line(result: &str) -> String {
    result
        .lines()
        .find_map(|l| l.strip_prefix("init="))
        .unwrap_or_else(|| panic!("no init line in {result}"))
        .to_owned()
}

/// The installed pair: commands run in a sealed copy of `brute-sandbox-init`; with
/// [`IN_BRUTE_VAR`], in brute's own binary; confined the same either way.
#[test]
fn commands_run_in_the_init_binary_or_in_brute_confined_alike() {
    if !support::sandbox_ready() {
        return;
    }
    let brute = assert_cmd::cargo::cargo_bin("brute");
    let outside = dir("init-outside");
    let small = init_line(&run(&Sandbox::new(), &brute, &[], &outside));
    assert!(small.contains(&format!("memfd:{INIT_BINARY}")), "{small}");
    let own = init_line(&run(&Sandbox::new(), &brute, &[(IN_BRUTE_VAR, "1")], &outside));
    assert!(own.ends_with("/brute"), "{own}");
}

/// brute copied elsewhere with an init beside it: a sound one is used (a copy of it); one that
/// cannot run, one others may write,
/// or (as root) one of another owner, is passed over for brute's own binary.
#[test]
fn only_a_sound_init_beside_brute_is_used() {
    if !support::sandbox_ready() {
        return;
    }
    let install = dir("init-install");
    let brute = install.join("brute");
    // A link keeps the test from copying brute's debug binary; the init is copied (its mode
    // and owner change below).
    std::fs::hard_link(assert_cmd::cargo::cargo_bin("brute"), &brute).unwrap();
    let init = install.join(INIT_BINARY);
    std::fs::copy(assert_cmd::cargo::cargo_bin(INIT_BINARY), &init).unwrap();
    let outside = dir("init-outside");
    let sealed = init_line(&run(&Sandbox::new(), &brute, &[], &outside));
    assert!(sealed.contains(&format!("memfd:{INIT_BINARY}")), "{sealed}");
    std::fs::set_permissions(&init, std::fs::Permissions::from_mode(0o775)).unwrap();
    assert_eq!(
        init_line(&run(&Sandbox::new(), &brute, &[], &outside)),
        brute.to_string_lossy()
    );
    std::fs::set_permissions(&init, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A sound file that cannot run (as where an LSM refuses to run a memfd): the start's check
    // finds out, and brute is its own init.
    let real = std::fs::read(&init).unwrap();
    std::fs::write(&init, b"not a program\n").unwrap();
    assert_eq!(
        init_line(&run(&Sandbox::new(), &brute, &[], &outside)),
        brute.to_string_lossy()
    );
    std::fs::write(&init, real).unwrap();
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs this test as root (it changes a file's owner)"
        );
        eprintln!("not root: the owner case is not checked");
        return;
    }
    std::os::unix::fs::chown(&init, Some(4242), None).unwrap();
    assert_eq!(
        init_line(&run(&Sandbox::new(), &brute, &[], &outside)),
        brute.to_string_lossy()
    );
}

/// An init beside brute that cannot run here is tried once: the start that finds out remembers
/// it (with brute's own binary, which passed), and later starts in the same data directory run
/// the init in brute without trying the copy again (each try costs a start a few milliseconds).
#[test]
fn an_init_that_cannot_run_is_not_tried_again() {
    if !support::sandbox_ready() {
        return;
    }
    let install = dir("init-unrunnable");
    let brute = install.join("brute");
    std::fs::hard_link(assert_cmd::cargo::cargo_bin("brute"), &brute).unwrap();
    // A sound file whose every run is counted, then fails (as an init an LSM refuses would):
    // a script whose interpreter line runs the counter.
    let tries = install.join("tries");
    let counter = install.join("count.sh");
    std::fs::write(&counter, format!("echo tried >> {}\nexit 1\n", tries.display())).unwrap();
    let init = install.join(INIT_BINARY);
    std::fs::write(&init, format!("#!/bin/sh {}\n", counter.display())).unwrap();
    std::fs::set_permissions(&init, std::fs::Permissions::from_mode(0o755)).unwrap();
    let outside = dir("init-outside");
    let sb = Sandbox::new();
    for _ in 0..3 {
        assert_eq!(init_line(&run(&sb, &brute, &[], &outside)), brute.to_string_lossy());
    }
    assert_eq!(std::fs::read_to_string(&tries).unwrap(), "tried\n");
    // A new init there (another file) is tried again, and used once it runs.
    std::fs::remove_file(&init).unwrap();
    std::fs::copy(assert_cmd::cargo::cargo_bin(INIT_BINARY), &init).unwrap();
    let sealed = init_line(&run(&sb, &brute, &[], &outside));
    assert!(sealed.contains(&format!("memfd:{INIT_BINARY}")), "{sealed}");
}

/// The init binary given `first` as its first argument, to run `script` unconfined (full
/// access, network on).
fn init_running(first: &str, script: &str) -> Command {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin(INIT_BINARY));
    command.args([
        first,
        "--mode",
        "full-access",
        "--net",
        "on",
        "--",
        "bash",
        "-c",
        script,
    ]);
    command
}

/// An init given another build's first argument, or started by hand, says why and runs
/// nothing.
#[test]
fn an_init_from_another_build_runs_nothing() {
    let work = dir("init-other-build");
    let marker = work.join("ran");
    let touch = format!("touch {}", marker.display());
    let other = INIT_ARG.replace(env!("CARGO_PKG_VERSION"), "0.0.0-other");
    let output = init_running(other.as_str(), &touch).output().unwrap();
    assert_eq!(output.status.code(), Some(i32::from(UNAVAILABLE)));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("another build of brute") && said.contains(&other),
        "{said}"
    );
    assert!(!marker.exists(), "the command ran");
    let by_hand = Command::new(assert_cmd::cargo::cargo_bin(INIT_BINARY))
        .output()
        .unwrap();
    assert_eq!(by_hand.status.code(), Some(i32::from(UNAVAILABLE)));
    assert!(String::from_utf8_lossy(&by_hand.stderr).contains("brute starts it"));
    // The same arguments from this build run the program.
    let ours = init_running(INIT_ARG, &touch).output().unwrap();
    assert!(ours.status.success(), "{ours:?}");
    assert!(marker.exists());
}
