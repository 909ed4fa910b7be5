//! Confinement that holds, through the real binary with real namespaces, Landlock, seccomp and
//! (for the keystroke case) a real terminal in tmux: a sandboxed command cannot type into the
//! person's terminal, keeps no capability (root's included), cannot reach the host's hostname or
//! SysV IPC, cannot make device nodes, cannot write brute's own dirs, a nested `.git` or the
//! toolchain caches, and cannot redirect the file tools with a swapped link. Each test puts a
//! canary outside the writable roots and checks it never appears.

use crate::support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use support::{MockServer, Reply, Sandbox, openai_sse, tool_results};

/// A directory outside the project and outside /tmp (which workspace-write may write).
fn outside(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("confine-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn shell(id: &str, command: &str) -> (String, String, String) {
    (
        id.to_owned(),
        "shell".to_owned(),
        serde_json::json!({ "command": command }).to_string(),
    )
}

/// Runs `brute -p` in `sb` whose model makes `calls` in one answer, then says done; returns the
/// output and each call's result.
fn run(
    sb: &Sandbox,
    env: &[(&str, &Path)],
    calls: &[(String, String, String)],
) -> (std::process::Output, HashMap<String, String>) {
    let borrowed: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    support::run_calls(sb, &[], env, &borrowed)
}

/// The value of a `Name:\tvalue` line of /proc/self/status as a command printed it.
fn status_field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(':')))
        .map(str::trim)
}

/// The host's SysV message queues (one line each after the header).
fn host_queues() -> usize {
    std::fs::read_to_string("/proc/sysvipc/msg")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .count()
}

fn hostname() -> String {
    let out = std::process::Command::new("hostname").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

const TIOCSTI_PY: &str = r#"
import fcntl, os, sys, termios
try:
    fd = os.open("/dev/tty", os.O_RDWR)
except OSError as e:
    print("no-tty", e.errno)
    sys.exit(0)
for c in b"touch CANARY\n":
    fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
print("pushed")
"#;

/// A process that makes a pseudo-terminal its own controlling terminal and pushes a byte into
/// it: only the seccomp filter stops this (it is the process's own terminal).
const OWN_PTY_PY: &str = r#"
import fcntl, os, termios
master, slave = os.openpty()
name = os.ttyname(slave)
pid = os.fork()
if pid == 0:
    os.setsid()
    fd = os.open(name, os.O_RDWR)
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"x")
        print("tiocsti-ok", flush=True)
    except OSError as e:
        print("tiocsti-refused", e.errno, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"#;

#[test]
fn a_command_has_no_terminal_no_capabilities_and_no_host_names_or_ipc() {
    let sb = Sandbox::new();
    sb.write("tiocsti.py", TIOCSTI_PY);
    sb.write("own_pty.py", OWN_PTY_PY);
    let host = hostname();
    let queues_before = host_queues();
    let calls = vec![
        shell(
            "status",
            "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status",
        ),
        shell("tty", "python3 tiocsti.py"),
        shell("pty", "python3 own_pty.py"),
        shell(
            "session",
            "ps -o sid= -p $$; ps -o pid= -p $$; test -t 0 && echo has-tty || echo no-tty-stdin",
        ),
        shell("hostname", "hostname brute-sandbox-evil && echo renamed; hostname"),
        shell("ipc", "ipcmk -Q | tr -dc 0-9; echo"),
        shell("pts", "ls /dev/pts"),
    ];
    let (output, r) = run(&sb, &[], &calls);
    assert!(output.status.success(), "{output:?}");
    let status = &r["status"];
    for cap in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert_eq!(status_field(status, cap), Some("0000000000000000"), "{cap}: {status}");
    }
    assert_eq!(status_field(status, "NoNewPrivs"), Some("1"), "{status}");
    assert_eq!(status_field(status, "Seccomp"), Some("2"), "{status}");
    // No controlling terminal: /dev/tty cannot be opened (ENXIO), so nothing is pushed.
    assert!(r["tty"].contains("no-tty 6"), "{}", r["tty"]);
    assert!(!sb.path("CANARY").exists());
    // Its own terminal: TIOCSTI is refused by the filter (EPERM).
    assert!(r["pty"].contains("tiocsti-refused 1"), "{}", r["pty"]);
    // The command leads a session of its own.
    let mut ids = r["session"].split_whitespace();
    let (sid, pid) = (ids.next(), ids.next());
    assert!(sid.is_some() && sid == pid, "{}", r["session"]);
    // hostname: refused, and the host's name is untouched either way.
    assert!(!r["hostname"].contains("renamed"), "{}", r["hostname"]);
    assert_eq!(hostname(), host);
    // Its own devpts: none of the person's terminals (nor brute's) is there to open.
    assert_eq!(r["pts"].trim(), "ptmx", "{}", r["pts"]);
    // SysV IPC: a queue made inside is not the host's (the host has as many as before).
    assert!(
        r["ipc"].trim().parse::<u64>().is_ok(),
        "ipcmk made no queue: {}",
        r["ipc"]
    );
    assert_eq!(host_queues(), queues_before, "a message queue reached the host");
}

/// A loop device over a file of zeros, detached when dropped.
struct Loop {
    device: String,
    backing: PathBuf,
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup")
            .args(["-d", &self.device])
            .status();
    }
}

fn loop_device(dir: &Path) -> Option<Loop> {
    let backing = dir.join("disk.img");
    std::fs::write(&backing, vec![0u8; 1 << 20]).unwrap();
    let out = std::process::Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&backing)
        .output()
        .ok()
        .filter(|o| o.status.success());
    let Some(out) = out else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root and must be able to make a loop device (losetup -f) for this test"
        );
        eprintln!("skipping: cannot make a loop device here (needs root)");
        return None;
    };
    Some(Loop {
        device: String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        backing,
    })
}

#[test]
fn a_command_cannot_make_a_block_device_and_write_a_disk() {
    let out = outside("mknod");
    let Some(disk) = loop_device(&out) else { return };
    let minor = std::fs::metadata(&disk.device)
        .map(|m| std::os::unix::fs::MetadataExt::rdev(&m) & 0xff)
        .unwrap();
    let sb = Sandbox::new();
    let calls = vec![shell(
        "mknod",
        &format!("mknod ./blk b 7 {minor} && echo made; echo PAYLOAD > ./blk && echo wrote; ls -l blk"),
    )];
    let (output, r) = run(&sb, &[], &calls);
    assert!(output.status.success(), "{output:?}");
    assert!(!r["mknod"].contains("made"), "{}", r["mknod"]);
    assert!(
        std::fs::symlink_metadata(sb.path("blk")).is_ok_and(|m| m.is_file()) || !sb.path("blk").exists(),
        "no device node in the project"
    );
    let bytes = std::fs::read(&disk.backing).unwrap();
    assert!(
        bytes.iter().all(|b| *b == 0),
        "the disk behind {} was written",
        disk.device
    );
}

#[test]
fn brutes_own_dirs_nested_git_and_toolchain_caches_are_read_only() {
    // HOME (and so the data and config dirs) under /tmp, which commands may write, as in many
    // containers and CI jobs.
    let sb = Sandbox::new();
    sb.write(".git/config", "[core]\n");
    sb.write("vendor/lib/.git/config", "[core]\n");
    sb.write("vendor/lib/.git/hooks/README", "hooks\n");
    sb.write("deep/a/b/c/.git/info/exclude", "\n");
    let data = sb.home.path().join("data");
    let config = sb.home.path().join("config");
    // A home outside the temp dirs for the caches (a person's real home is not in /tmp).
    let home = outside("home");
    let cargo_src = home.join(".cargo/registry/src/index/serde-1.0.0");
    std::fs::create_dir_all(&cargo_src).unwrap();
    std::fs::write(cargo_src.join("build.rs"), "fn main() {}\n").unwrap();
    for dir in [
        home.join(".cache/pre-commit"),
        home.join(".cache/go-build"),
        home.join(".npm"),
    ] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let attempt = |path: &Path| format!("echo planted >> '{}' && echo WROTE", path.display());
    let calls = vec![
        shell("trust", &attempt(&data.join("trusted.toml"))),
        shell("config", &attempt(&config.join("config.toml"))),
        shell("root-git", &attempt(&sb.path(".git/config"))),
        shell(
            "nested",
            "echo '[core] fsmonitor = touch PWNED' >> vendor/lib/.git/config && echo WROTE",
        ),
        shell(
            "hook",
            "echo 'touch PWNED' > vendor/lib/.git/hooks/pre-commit && echo WROTE",
        ),
        shell("deep", "echo x >> deep/a/b/c/.git/info/exclude && echo WROTE"),
        shell("cargo", &attempt(&cargo_src.join("build.rs"))),
        shell("pre-commit", &attempt(&home.join(".cache/pre-commit/hook"))),
        shell("go", &attempt(&home.join(".cache/go-build/x"))),
        shell("npm", &attempt(&home.join(".npm/x"))),
        shell("inside", "echo ok > vendor/lib/file.txt && echo WROTE"),
    ];
    let (output, r) = run(&sb, &[("HOME", &home)], &calls);
    assert!(output.status.success(), "{output:?}");
    for id in [
        "trust",
        "config",
        "root-git",
        "nested",
        "hook",
        "deep",
        "cargo",
        "pre-commit",
        "go",
        "npm",
    ] {
        assert!(!r[id].contains("WROTE"), "{id}: {}", r[id]);
    }
    assert!(r["inside"].contains("WROTE"), "{}", r["inside"]);
    assert!(!data.join("trusted.toml").exists());
    assert_eq!(
        std::fs::read_to_string(config.join("config.toml")).unwrap(),
        "retry_base_ms = 1\n"
    );
    assert_eq!(
        std::fs::read_to_string(sb.path("vendor/lib/.git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!sb.path("vendor/lib/.git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(sb.path("deep/a/b/c/.git/info/exclude")).unwrap(),
        "\n"
    );
    assert_eq!(
        std::fs::read_to_string(cargo_src.join("build.rs")).unwrap(),
        "fn main() {}\n"
    );
    for file in [".cache/pre-commit/hook", ".cache/go-build/x", ".npm/x"] {
        assert!(!home.join(file).exists(), "{file}");
    }
}

#[test]
fn a_repository_made_by_one_command_is_read_only_to_the_next() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "make",
            "shell",
            r#"{"command": "mkdir -p sub/.git && echo '[core]' > sub/.git/config && echo made"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "plant",
            "shell",
            r#"{"command": "echo fsmonitor >> sub/.git/config && echo WROTE"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let output = sb.brute(&server).args(["-p", "go"]).output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let requests = server.requests();
    let made: HashMap<String, String> = tool_results(&requests[1]).into_iter().collect();
    let planted: HashMap<String, String> = tool_results(&requests[2]).into_iter().collect();
    assert!(made["make"].contains("made"), "{}", made["make"]);
    assert!(!planted["plant"].contains("WROTE"), "{}", planted["plant"]);
    assert_eq!(std::fs::read_to_string(sb.path("sub/.git/config")).unwrap(), "[core]\n");
}

#[test]
fn keystrokes_pushed_into_the_terminal_never_reach_the_persons_shell() {
    let sb = Sandbox::new();
    sb.write("tiocsti.py", TIOCSTI_PY);
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("push", "shell", r#"{"command": "python3 tiocsti.py"}"#)],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let Some(tmux) = support::tmux::Tmux::shell("tiocsti", sb.project.path()) else {
        return;
    };
    let config = sb.home.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "retry_base_ms = 1\n").unwrap();
    let command = format!(
        "env -u OPENAI_API_KEY HOME='{home}' BRUTE_CONFIG_DIR='{config}' BRUTE_DATA_DIR='{home}/data' '{bin}' --provider openai --model mock --base-url '{url}' -p go; echo EXITED-$((40+2))",
        home = sb.home.path().display(),
        config = config.display(),
        bin = assert_cmd::cargo::cargo_bin("brute").display(),
        url = server.url("/v1"),
    );
    tmux.text(&command);
    tmux.keys(&["Enter"]);
    tmux.wait_for("brute to exit", |s| s.contains("EXITED-42"));
    // Whatever was pushed into the terminal is read by the shell before this line.
    tmux.text("echo SHELL-$((20+1))");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the shell to read its input", |s| s.contains("SHELL-21"));
    assert!(!sb.path("CANARY").exists(), "a command typed into the person's shell");
    let results: HashMap<String, String> = tool_results(&server.requests()[1]).into_iter().collect();
    assert!(results["push"].contains("no-tty"), "{}", results["push"]);
}

/// Swaps `dir` and `link` (a link to somewhere outside) with `renameat2(RENAME_EXCHANGE)`
/// until `stop`, as a command of the same message could.
fn swapper(
    dir: PathBuf,
    link: PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        use std::os::unix::ffi::OsStrExt;
        let a = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
        let b = std::ffi::CString::new(link.as_os_str().as_bytes()).unwrap();
        let mut swaps = 0u64;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            // SAFETY: two valid C paths; RENAME_EXCHANGE (2) swaps the entries.
            let done = unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    libc::AT_FDCWD,
                    a.as_ptr(),
                    libc::AT_FDCWD,
                    b.as_ptr(),
                    2u32,
                )
            };
            if done == 0 {
                swaps += 1;
            }
        }
        swaps
    })
}

#[test]
fn a_swapped_link_never_redirects_writes_patches_or_removes_outside() {
    let sb = Sandbox::new();
    let out = outside("race");
    const N: usize = 40;
    for i in 0..N {
        sb.write(&format!("d/p{i}"), "old text\n");
        sb.write(&format!("d/r{i}"), "remove me\n");
        std::fs::write(out.join(format!("p{i}")), "old text\n").unwrap();
        std::fs::write(out.join(format!("r{i}")), "remove me\n").unwrap();
        std::fs::write(out.join(format!("w{i}")), "outside\n").unwrap();
    }
    std::os::unix::fs::symlink(&out, sb.path("l")).unwrap();
    let before = support::tree_snapshot(&out);
    let server = MockServer::start();
    let rounds = 3;
    for round in 0..rounds {
        let mut calls: Vec<(String, String, String)> = Vec::new();
        for i in 0..N {
            calls.push((
                format!("w{round}-{i}"),
                "write".into(),
                serde_json::json!({"file_path": format!("d/w{i}"), "content": format!("round {round}\n")}).to_string(),
            ));
            calls.push((
                format!("p{round}-{i}"),
                "patch".into(),
                serde_json::json!({"file_path": format!("d/p{i}"), "old_string": "old text", "new_string": "new text"})
                    .to_string(),
            ));
            calls.push((
                format!("r{round}-{i}"),
                "remove".into(),
                serde_json::json!({"path": format!("d/r{i}")}).to_string(),
            ));
        }
        let borrowed: Vec<(&str, &str, &str)> = calls
            .iter()
            .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
            .collect();
        server.push(Reply::sse(openai_sse("", &borrowed)));
    }
    // Held until the swapping has stopped: its request says every batch was answered.
    let last = support::Gate::default();
    server.push(Reply::sse(openai_sse("done", &[])).after(&last));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swaps = swapper(sb.path("d"), sb.path("l"), stop.clone());
    let child = sb
        .std_brute(&server)
        .args(["-p", "go"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let _deadline = support::deadline(&child, 180);
    // The swapping stops once the last batch is answered: a tree that changes without end
    // under the end-of-turn checkpoint is another test's matter.
    last.arrived();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swaps.join().unwrap();
    last.release();
    let output = child.wait_with_output().unwrap();
    assert!(swaps > 0, "the swapper never swapped");
    assert!(output.status.code().is_some(), "{output:?}");
    assert_eq!(
        support::tree_snapshot(&out),
        before,
        "the outside tree changed ({swaps} swaps)"
    );
    let stray: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".brute-"))
        .collect();
    assert!(stray.is_empty(), "temp files left outside: {stray:?}");
    // Every call got a result; the ones that found the swap say so or were not allowed.
    let requests = server.requests();
    assert_eq!(requests.len(), rounds + 1);
    for (round, request) in requests[1..].iter().enumerate() {
        assert_eq!(tool_results(request).len(), 3 * N * (round + 1));
    }
}

/// Waits for a line on the FIFO `go` (the approval dialog of its sibling call is open by
/// then), tries to type `y` into the terminal, and says so on the FIFO `pushed`.
#[cfg(feature = "tui")]
const PUSH_Y_PY: &str = r#"
import fcntl, os, sys, termios
open("go").read()
try:
    fd = os.open("/dev/tty", os.O_RDWR)
    fcntl.ioctl(fd, termios.TIOCSTI, b"y")
    print("pushed-y")
except OSError as e:
    print("no-tty", e.errno)
with open("pushed", "w") as done:
    done.write("done\n")
"#;

// The dialog is the UI's: a build without the `tui` feature has none to answer.
#[cfg(feature = "tui")]
#[test]
fn a_command_cannot_answer_an_approval_dialog_for_its_sibling() {
    let sb = Sandbox::new();
    sb.write("push_y.py", PUSH_Y_PY);
    let canary = outside("dialog").join("CANARY");
    let escalate = serde_json::json!({
        "command": format!("touch '{}'", canary.display()),
        "sandbox": "full",
        "justification": "needs it",
    })
    .to_string();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("push", "shell", r#"{"command": "python3 push_y.py"}"#),
            ("esc", "shell", &escalate),
        ],
    )));
    server.push(Reply::sse(openai_sse("Both answered.", &[])));
    support::mkfifo(&sb.path("go"));
    support::mkfifo(&sb.path("pushed"));
    let Some(tmux) = support::tmux::Tmux::start(&sb, &server, "dialog-tiocsti") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("go");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the approval dialog", |s| {
        s.contains("Approve?") && s.contains("CANARY")
    });
    // Both block until the command opens its end (the test's own deadline bounds a hang).
    std::fs::write(sb.path("go"), "go\n").unwrap();
    assert_eq!(std::fs::read_to_string(sb.path("pushed")).unwrap(), "done\n");
    // Anything the command pushed is ahead of this key in the terminal's input.
    tmux.keys(&["n"]);
    tmux.wait_for("the reason field", |s| s.contains("why not?"));
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer", |s| s.contains("Both answered.") && s.contains(" idle │"));
    assert!(!canary.exists(), "a command approved its sibling's escape");
    let results: HashMap<String, String> = tool_results(&server.requests()[1]).into_iter().collect();
    assert!(results["push"].contains("no-tty"), "{}", results["push"]);
    assert!(results["esc"].contains("Denied"), "{}", results["esc"]);
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}

#[test]
fn a_project_under_tmp_swapped_for_a_link_widens_nothing() {
    let sb = Sandbox::new();
    let out = outside("swapped-root");
    let project = sb.project.path().canonicalize().unwrap();
    let moved = project.with_extension("moved");
    let swap = format!(
        "mv '{}' '{}' && ln -s '{}' '{}' && echo swapped",
        project.display(),
        moved.display(),
        out.display(),
        project.display()
    );
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("swap", "shell", &serde_json::json!({"command": swap}).to_string())],
    )));
    server.push(Reply::sse(openai_sse(
        "",
        &[
            (
                "cmd",
                "shell",
                r#"{"command": "echo escaped > by-command && echo WROTE"}"#,
            ),
            ("tool", "write", r#"{"file_path": "by-tool", "content": "escaped\n"}"#),
        ],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let output = sb.brute(&server).args(["-p", "go"]).output().unwrap();
    let requests = server.requests();
    let first: HashMap<String, String> = tool_results(&requests[1]).into_iter().collect();
    assert!(first["swap"].contains("swapped"), "{}", first["swap"]);
    let second: HashMap<String, String> = tool_results(&requests[2]).into_iter().collect();
    assert!(!second["cmd"].contains("WROTE"), "{}", second["cmd"]);
    assert!(
        !out.join("by-command").exists(),
        "a command wrote through the swapped root"
    );
    assert!(
        !out.join("by-tool").exists(),
        "the write tool wrote through the swapped root"
    );
    assert!(output.status.code().is_some(), "{output:?}");
    // Put the project back so the temp dir is cleaned up.
    let _ = std::fs::remove_file(&project);
    let _ = std::fs::rename(&moved, &project);
}
