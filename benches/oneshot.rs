//! `brute -p` end to end against the mock provider with no added latency: a task of two
//! model requests and three tool calls. Reports wall time and peak RSS of the real binary,
//! `brute --version` time, and the first request's size.
//!
//! Run: `cargo bench --bench oneshot` (numbers go to BENCHMARKS.md by hand).

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{MockServer, Reply, Sandbox, openai_sse};

const RUNS: usize = 30;

/// Runs the command, returning wall time and peak RSS in KiB (from wait4's rusage).
#[allow(clippy::zombie_processes)] // the child is reaped by wait4 below
fn measure(cmd: &mut Command) -> (Duration, i64) {
    let started = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn brute");
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter for wait4 on our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: waits for our own child; pointers are valid for the call.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let elapsed = started.elapsed();
    assert_eq!(waited, pid, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "brute failed: status {status}"
    );
    (elapsed, usage.ru_maxrss)
}

fn summary(name: &str, mut times: Vec<Duration>, rss_kib: Option<i64>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = times[times.len() / 2];
    print!(
        "{name:<28} median {:7.2} ms   min {:7.2} ms   max {:7.2} ms",
        ms(median),
        ms(times[0]),
        ms(times[times.len() - 1])
    );
    if let Some(kib) = rss_kib {
        print!("   peak RSS {:.1} MB", kib as f64 / 1024.0);
    }
    println!();
}

fn main() {
    let sb = Sandbox::new();
    sb.write("src/lib.rs", &"pub fn f() -> u32 { 1 }\n".repeat(200));
    sb.write("src/config.rs", "pub const LIMIT: usize = 10;\n");
    sb.write("README.md", "# bench project\n");
    let server = MockServer::start();

    let mut times = Vec::new();
    let mut peak = 0;
    for _ in 0..RUNS {
        server.push(Reply::sse(openai_sse(
            "Looking. ",
            &[
                ("c1", "read", r#"{"file_path":"src/lib.rs"}"#),
                ("c2", "fs_search", r#"{"pattern":"LIMIT","glob":"*.rs"}"#),
                ("c3", "shell", r#"{"command":"echo ok"}"#),
            ],
        )));
        server.push(Reply::sse(openai_sse("LIMIT is 10, defined in src/config.rs.", &[])));
        let (time, rss) = measure(sb.std_brute(&server).args(["-p", "where is LIMIT defined?"]));
        times.push(time);
        peak = peak.max(rss);
    }
    summary("task: 2 requests, 3 tools", times, Some(peak));

    let mut times = Vec::new();
    let mut peak = 0;
    for _ in 0..RUNS {
        let (time, rss) = measure(Command::new(env!("CARGO_BIN_EXE_brute")).arg("--version"));
        times.push(time);
        peak = peak.max(rss);
    }
    summary("brute --version", times, Some(peak));

    let first = &server.requests()[0];
    println!(
        "first request of the task: {} bytes (system prompt + tool definitions + prompt)",
        first.raw_len
    );
}
