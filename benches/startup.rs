//! The UI's start in a real terminal (tmux): when the first frame is drawn, from brute's own
//! timestamps (`BRUTE_TIMINGS=1`), with no MCP servers and with three configured servers that
//! never answer (each a `sleep`, with the default 10 s start-up timeout). The servers start in
//! the background, so the first frame must not wait for them: both rows should read the same.
//!
//! Run: `cargo bench --bench startup` (needs tmux; numbers go to BENCHMARKS.md by hand).

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::Command;

use support::{MockServer, Sandbox};

const RUNS: usize = 10;

/// The first frame of one run of the UI (see [`support::tmux::first_frame_ms`]).
fn first_frame(sb: &Sandbox, server: &MockServer, config_dir: &std::path::Path, run: usize) -> f64 {
    support::tmux::first_frame_ms(sb.project.path(), sb.home.path(), config_dir, server, run)
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
