//! The UI in a real terminal (tmux) while the session's first checkpoint is held back (the
//! `BRUTE_TEST_HOLD_CHECKPOINT` seam, a FIFO): the person types and sends a prompt at once,
//! the model is asked, and the `write` it calls waits for the checkpoint with a status line
//! note; released, the turn finishes and /undo takes the write back.
#![cfg(feature = "tui")]

mod support;

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{MockServer, Reply, Sandbox, openai_sse};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(sb: &Sandbox, server: &MockServer, name: &str, env: &str) -> Option<Self> {
        if Command::new("tmux").arg("-V").output().is_err() {
            // CI installs tmux (.ci/run): there a missing tmux is a failure, not a skip.
            assert!(
                std::env::var_os("CI").is_none(),
                "tmux is not installed, and CI must run the pty tests"
            );
            eprintln!("skipping: tmux is not installed (apt-get install tmux)");
            return None;
        }
        let socket = format!("brute-test-{}-{name}", std::process::id());
        let config = sb.home.path().join("config");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("config.toml"), "retry_base_ms = 1\n").unwrap();
        let command = format!(
            "env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY HOME='{home}' BRUTE_CONFIG_DIR='{config}' BRUTE_DATA_DIR='{home}/data' TERM=xterm-256color {env} '{bin}' --provider openai --model mock --base-url '{url}'; echo BRUTE-EXITED-$?; sleep 60",
            home = sb.home.path().display(),
            config = config.display(),
            bin = assert_cmd::cargo::cargo_bin("brute").display(),
            url = server.url("/v1"),
        );
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "100",
                "-y",
                "32",
                "-c",
            ])
            .arg(sb.project.path())
            .arg(command)
            .status()
            .unwrap();
        assert!(status.success());
        Some(Self { socket })
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-J", "-S", "-200"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn text(&self, text: &str) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-l", text])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Polls the screen until `ready` holds (a deadline against a hang, not a fixed sleep).
    fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).status();
    }
}

#[test]
fn the_ui_takes_a_prompt_while_the_first_checkpoint_is_held_and_the_write_waits_for_it() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "original\n");
    let fifo = sb.home.path().join("hold");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates a node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
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
    let env = format!("BRUTE_TEST_HOLD_CHECKPOINT='{}'", fifo.display());
    let Some(tmux) = Tmux::start(&sb, &server, "held", &env) else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("please edit notes");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the write waiting for the first checkpoint", |s| {
        s.contains("waiting for the first checkpoint…")
    });
    assert!(screen.contains("please edit notes"), "the prompt was taken:\n{screen}");
    assert_eq!(server.requests().len(), 1, "the model was asked meanwhile");
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "original\n");
    let mut release = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    release.write_all(b"go\n").unwrap();
    drop(release);
    tmux.wait_for("the finished turn", |s| {
        s.contains("I changed notes.txt.") && s.contains(" idle │")
    });
    assert_eq!(
        std::fs::read_to_string(sb.path("notes.txt")).unwrap(),
        "changed by the agent\n"
    );
    tmux.text("/undo");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the undo dialog", |s| s.contains("Undo the last turn"));
    tmux.keys(&["Enter"]);
    tmux.wait_for("the undo report", |s| s.contains("restored notes.txt (+1 -1)"));
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "original\n");
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}
