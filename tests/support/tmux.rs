//! brute's UI in a real terminal: a tmux server per test, driven by keys and read back as
//! screen text (the pty tests share it).

use std::process::Command;
use std::time::{Duration, Instant};

use super::{MockServer, Sandbox};

/// brute's UI in its own tmux server (one socket per test), killed when dropped.
pub struct Tmux {
    /// The tmux server's socket name (`tmux -L`), for commands the helpers do not wrap.
    pub socket: String,
}

impl Tmux {
    pub fn start(sb: &Sandbox, server: &MockServer, name: &str) -> Option<Self> {
        Self::start_with(sb, server, name, "")
    }

    /// Starts brute with `extra` arguments appended (already shell-safe).
    pub fn start_with(sb: &Sandbox, server: &MockServer, name: &str, extra: &str) -> Option<Self> {
        Self::start_in(sb, server, name, extra, sb.project.path(), "")
    }

    /// Starts brute in `dir` with `extra` arguments appended and `env` (`NAME=value …`, shell-safe)
    /// set.
    pub fn start_in(
        sb: &Sandbox,
        server: &MockServer,
        name: &str,
        extra: &str,
        dir: &std::path::Path,
        env: &str,
    ) -> Option<Self> {
        if !available() {
            return None;
        }
        let socket = format!("brute-test-{}-{name}", std::process::id());
        let bin = assert_cmd::cargo::cargo_bin("brute");
        let config = sb.home.path().join("config");
        std::fs::create_dir_all(&config).unwrap();
        // What the test wrote to the person's config first stays, after the fast retries.
        let own = std::fs::read_to_string(config.join("config.toml")).unwrap_or_default();
        if !own.contains("retry_base_ms") {
            std::fs::write(config.join("config.toml"), format!("retry_base_ms = 1\n{own}")).unwrap();
        }
        let command = format!(
            "env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY HOME='{home}' BRUTE_CONFIG_DIR='{config}' BRUTE_DATA_DIR='{home}/data' TERM=xterm-256color {env} '{bin}' --provider openai --model mock --base-url '{url}' {extra}; echo BRUTE-EXITED-$?; sleep 60",
            home = sb.home.path().display(),
            config = config.display(),
            bin = bin.display(),
            url = server.url("/v1"),
        );
        // OSC 52 and titles would reach tmux (a buffer, the pane title) if brute let them out.
        let tmux_conf = sb.home.path().join("tmux.conf");
        std::fs::write(&tmux_conf, "set -s set-clipboard on\nset -g allow-rename on\n").unwrap();
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                tmux_conf.to_str().unwrap(),
                "new-session",
                "-d",
                "-x",
                "100",
                "-y",
                "32",
                "-c",
            ])
            .arg(dir)
            .arg(command)
            .status()
            .unwrap();
        assert!(status.success());
        Some(Self { socket })
    }

    pub fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-J", "-S", "-200"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn format(&self, format: &str) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "display", "-p", format])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// The clipboard buffers tmux holds (OSC 52 writes create one).
    pub fn buffers(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "list-buffers"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pid of brute in the pane (the pane's shell runs `env … brute`, which execs).
    pub fn brute_pid(&self) -> i32 {
        let shell: i32 = self.format("#{pane_pid}").parse().unwrap();
        let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
        children.split_whitespace().next().unwrap().parse().unwrap()
    }

    /// `stty -a` of the pane's terminal.
    pub fn stty(&self) -> String {
        let tty = self.format("#{pane_tty}");
        let out = Command::new("stty").args(["-F", &tty, "-a"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn alternate_on(&self) -> bool {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "display", "-p", "#{alternate_on}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    pub fn keys(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    pub fn text(&self, text: &str) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-l", text])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Polls a tmux format (pane modes) until it reads `expected`.
    pub fn wait_format(&self, format: &str, expected: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let value = self.format(format);
            if value == expected {
                return;
            }
            assert!(Instant::now() < deadline, "{format} is {value}, not {expected}");
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Polls the screen until `ready` holds (a deadline, not a fixed sleep).
    pub fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
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

impl Tmux {
    /// An interactive bash (no rc files) in `dir`, in its own tmux server: the person's shell,
    /// for tests of what a program run from it leaves behind in the terminal.
    pub fn shell(name: &str, dir: &std::path::Path) -> Option<Self> {
        if !available() {
            return None;
        }
        let socket = format!("brute-test-{}-{name}", std::process::id());
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "120",
                "-y",
                "40",
                "-c",
            ])
            .arg(dir)
            .arg("env PS1='$ ' bash --norc --noprofile -i")
            .status()
            .unwrap();
        assert!(status.success());
        Some(Self { socket })
    }
}

/// Whether tmux is installed; under `CI` (which installs it, `.ci/run`) a missing tmux is a
/// failure, not a skip.
fn available() -> bool {
    if Command::new("tmux").arg("-V").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "tmux is not installed, and CI must run the pty tests"
    );
    eprintln!("skipping: tmux is not installed (apt-get install tmux)");
    false
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).status();
    }
}

/// Starts the UI in `project` in its own tmux server, waits for its composer, ends it (tmux
/// kill-server: SIGHUP) and returns `first_frame_ms` from its timings line (`BRUTE_TIMINGS=1`),
/// for the benches. `run` keeps the socket and timings file of each run apart.
pub fn first_frame_ms(
    project: &std::path::Path,
    home: &std::path::Path,
    config: &std::path::Path,
    server: &MockServer,
    run: usize,
) -> f64 {
    let wait = UiWait {
        prompt: None,
        ready: "Ask brute to do something",
        idle: false,
        key: "first_frame_ms",
    };
    ui_timing(project, home, config, server, run, wait)
}

/// Starts the UI in `project` with `prompt` sent at once and returns `first_turn_ms` (the
/// first turn ended, its checkpoint recorded) once the screen shows `answer` and the UI is
/// idle; the mock must answer the prompt with `answer`. For the benches.
pub fn first_turn_ms(
    project: &std::path::Path,
    home: &std::path::Path,
    config: &std::path::Path,
    server: &MockServer,
    run: usize,
    answer: &str,
) -> f64 {
    let wait = UiWait {
        prompt: Some("x"),
        ready: answer,
        idle: true,
        key: "first_turn_ms",
    };
    ui_timing(project, home, config, server, run, wait)
}

/// What [`ui_timing`] sends, waits for and reads.
struct UiWait<'a> {
    /// Sent at start (the UI's prompt argument).
    prompt: Option<&'a str>,
    /// The screen holds this text...
    ready: &'a str,
    /// ...and, when set, an idle status line.
    idle: bool,
    /// The value read from the timings line.
    key: &'a str,
}

/// The UI in its own tmux server, ended (SIGHUP) once its screen shows what `wait` says, and
/// the value of `wait.key` in its timings line.
fn ui_timing(
    project: &std::path::Path,
    home: &std::path::Path,
    config: &std::path::Path,
    server: &MockServer,
    run: usize,
    wait: UiWait<'_>,
) -> f64 {
    let UiWait {
        prompt,
        ready: text,
        idle,
        key,
    } = wait;
    let socket = format!("brute-bench-{}-{run}", std::process::id());
    let timings = home.join(format!("timings-{run}"));
    let command = format!(
        "env -u OPENAI_API_KEY HOME='{home}' BRUTE_CONFIG_DIR='{config}' BRUTE_DATA_DIR='{home}/data' BRUTE_TIMINGS=1 TERM=xterm-256color '{bin}' --provider openai --model mock --base-url '{url}' {prompt} 2>'{timings}'",
        home = home.display(),
        config = config.display(),
        bin = assert_cmd::cargo::cargo_bin("brute").display(),
        url = server.url("/v1"),
        prompt = prompt.map(|p| format!("'{p}'")).unwrap_or_default(),
        timings = timings.display(),
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
            "30",
            "-c",
        ])
        .arg(project)
        .arg(command)
        .status()
        .expect("tmux");
    assert!(status.success(), "tmux failed to start");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = Command::new("tmux")
            .args(["-L", &socket, "capture-pane", "-p"])
            .output()
            .expect("capture-pane");
        let screen = String::from_utf8_lossy(&out.stdout);
        if screen.contains(text) && (!idle || screen.contains(" idle │")) {
            break;
        }
        assert!(Instant::now() < deadline, "the UI never showed {text:?}: {screen}");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = Command::new("tmux").args(["-L", &socket, "kill-server"]).status();
    loop {
        let text = std::fs::read_to_string(&timings).unwrap_or_default();
        if let Some(value) = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix(key).and_then(|w| w.strip_prefix('=')))
            .and_then(|v| v.parse::<f64>().ok())
        {
            return value;
        }
        assert!(Instant::now() < deadline, "no timings line: {text:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}
