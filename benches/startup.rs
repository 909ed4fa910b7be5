//! The UI's start in a real terminal (tmux): when the first frame is drawn, from brute's own
//! timestamps (`BRUTE_TIMINGS=1`), with no MCP servers and with three configured servers that
//! never answer (each a `sleep`, with the default 10 s start-up timeout). The servers start in
//! the background, so the first frame must not wait for them: both rows should read the same.
//!
//! Run: `cargo bench --bench startup` (needs tmux; numbers go to BENCHMARKS.md by hand).

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::{MockServer, Sandbox};

const RUNS: usize = 10;

/// Starts the UI in tmux, waits for its composer, ends it with SIGHUP (tmux kill-session) and
/// returns `first_frame_ms` from its timings line.
fn first_frame(sb: &Sandbox, server: &MockServer, config_dir: &std::path::Path, run: usize) -> f64 {
    let socket = format!("brute-bench-{}-{run}", std::process::id());
    let timings = sb.home.path().join(format!("timings-{run}"));
    let command = format!(
        "env -u OPENAI_API_KEY HOME='{home}' BRUTE_CONFIG_DIR='{config}' BRUTE_DATA_DIR='{home}/data' BRUTE_TIMINGS=1 TERM=xterm-256color '{bin}' --provider openai --model mock --base-url '{url}' 2>'{timings}'",
        home = sb.home.path().display(),
        config = config_dir.display(),
        bin = assert_cmd::cargo::cargo_bin("brute").display(),
        url = server.url("/v1"),
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
        .arg(sb.project.path())
        .arg(command)
        .status()
        .expect("tmux");
    assert!(status.success(), "tmux failed to start");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = Command::new("tmux")
            .args(["-L", &socket, "capture-pane", "-p"])
            .output()
            .expect("capture-pane");
        if String::from_utf8_lossy(&out.stdout).contains("Ask brute to do something") {
            break;
        }
        assert!(Instant::now() < deadline, "the UI never showed its composer");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = Command::new("tmux").args(["-L", &socket, "kill-server"]).status();
    loop {
        let text = std::fs::read_to_string(&timings).unwrap_or_default();
        if let Some(value) = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix("first_frame_ms="))
            .and_then(|v| v.parse::<f64>().ok())
        {
            return value;
        }
        assert!(Instant::now() < deadline, "no timings line: {text:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn row(name: &str, mut ms: Vec<f64>) {
    ms.sort_by(f64::total_cmp);
    println!(
        "{name:<46} median {:>7.2} ms   p90 {:>7.2} ms   max {:>7.2} ms",
        ms[ms.len() / 2],
        ms[ms.len() * 9 / 10],
        ms[ms.len() - 1]
    );
}

fn main() {
    assert!(
        Command::new("tmux").arg("-V").output().is_ok(),
        "the startup benchmark needs tmux"
    );
    let sb = Sandbox::new();
    let server = MockServer::start();
    let plain = sb.home.path().join("config-plain");
    let with_servers = sb.home.path().join("config-mcp");
    std::fs::create_dir_all(&plain).expect("config dir");
    std::fs::create_dir_all(&with_servers).expect("config dir");
    std::fs::write(plain.join("config.toml"), "").expect("config");
    let mut servers = String::new();
    for name in ["slow_a", "slow_b", "slow_c"] {
        servers.push_str(&format!(
            "[mcp_servers.{name}]\ncommand = \"sleep\"\nargs = [\"60\"]\n\n"
        ));
    }
    std::fs::write(with_servers.join("config.toml"), servers).expect("config");

    // One run each to warm the page cache.
    first_frame(&sb, &server, &plain, 1000);
    first_frame(&sb, &server, &with_servers, 1001);
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for run in 0..RUNS {
        without.push(first_frame(&sb, &server, &plain, run));
        with.push(first_frame(&sb, &server, &with_servers, RUNS + run));
    }
    println!("UI first frame, {RUNS} runs each (brute's own clock, from process start):");
    row("no MCP servers", without);
    row("3 MCP servers that never answer (10 s timeout)", with);
}
