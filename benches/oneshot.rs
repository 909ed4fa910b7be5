//! `brute -p` end to end against the mock provider with no added latency: a task of two
//! model requests and three tool calls, its answers streamed one SSE event per chunk (and, in
//! alternate runs, in the tests' 7-byte pieces). Reports wall time and peak RSS of the real binary,
//! `brute --version` time, and the first request's size; and, from brute's own timestamps
//! (`BRUTE_TIMINGS=1`), when the first request left and how long exit took after the last
//! byte of the last answer.
//!
//! Run: `cargo bench --bench oneshot` (numbers go to BENCHMARKS.md by hand). With
//! `BRUTE_BENCH_BASE=/path/to/an/older/brute`, every run of the task is paired with one of that
//! binary (in a project and data dir of its own; each goes first in every other pair), for a
//! before/after on the same machine state.
//!
//! Each binary runs from a copy ([`installed`]), as `cargo install` leaves it: the file the
//! linker just wrote costs every run about 130 page faults more.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{MockServer, Reply, Sandbox, openai_sse};

const RUNS: usize = 30;

/// Runs the command, returning wall time and peak RSS in KiB (from wait4's rusage). Its
/// stderr goes to `stderr_to` (brute's timings line lands there).
#[allow(clippy::zombie_processes)] // the child is reaped by wait4 below
fn measure_to(cmd: &mut Command, stderr_to: Stdio) -> (Duration, i64) {
    let started = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(stderr_to)
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

fn measure(cmd: &mut Command) -> (Duration, i64) {
    measure_to(cmd, Stdio::null())
}

/// The value of `key=` in brute's timings line, in ms.
fn timing(line: &str, key: &str) -> Duration {
    let value = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no {key} in {line:?}"));
    Duration::from_secs_f64(value / 1000.0)
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

/// The two-answer task's numbers over its runs.
#[derive(Default)]
struct Task {
    times: Vec<Duration>,
    peak: i64,
    first_request: Vec<Duration>,
    after_last_byte: Vec<Duration>,
}

impl Task {
    /// One run: a first answer with three tool calls, then a final one.
    fn run(&mut self, sb: &Sandbox, brute: &std::path::Path, server: &MockServer, per_event: bool) {
        let reply = |body: String| {
            let reply = Reply::sse(body);
            if per_event { reply.per_event() } else { reply }
        };
        server.push(reply(openai_sse(
            "Looking. ",
            &[
                ("c1", "read", r#"{"file_path":"src/lib.rs"}"#),
                ("c2", "fs_search", r#"{"pattern":"LIMIT","glob":"*.rs"}"#),
                ("c3", "shell", r#"{"command":"echo ok"}"#),
            ],
        )));
        server.push(reply(openai_sse("LIMIT is 10, defined in src/config.rs.", &[])));
        let timings = sb.home.path().join("timings.txt");
        let stderr = std::fs::File::create(&timings).expect("timings file");
        let (time, rss) = measure_to(
            sb.std_brute_of(server, brute)
                .env(brute::timing::VAR, "1")
                .args(["-p", "where is LIMIT defined?"]),
            Stdio::from(stderr),
        );
        let text = std::fs::read_to_string(&timings).expect("timings");
        let line = text
            .lines()
            .find(|l| l.starts_with("brute timings:"))
            .expect("a timings line");
        self.first_request.push(timing(line, "first_request_ms"));
        self.after_last_byte.push(timing(line, "exit_after_last_byte_ms"));
        self.times.push(time);
        self.peak = self.peak.max(rss);
    }

    fn report(self, name: &str) {
        summary(name, self.times, Some(self.peak));
        summary("  start to first request", self.first_request, None);
        summary("  last byte to exit", self.after_last_byte, None);
    }
}

/// `brute` (and `brute-sandbox-init` beside it, when there is one) copied into a directory of
/// their own, as `cargo install` copies them. The file the linker just wrote is in the page
/// cache as it was written, through the linker's mapping, in 4 KB pages; a copy, like any
/// binary read back from disk, is in large folios, so each run maps its code in fewer faults:
/// about 130 fewer a run and 1-1.5 ms of the task here (BENCHMARKS.md, eleventh session). The
/// bench measures brute as it runs installed.
fn installed(brute: &std::path::Path) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("a temp dir for the copies");
    for name in ["brute", brute::sandbox::INIT_BINARY] {
        let from = brute.with_file_name(name);
        if name == "brute" || from.is_file() {
            std::fs::copy(&from, dir.path().join(name)).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
        }
    }
    let copied = dir.path().join("brute");
    (dir, copied)
}

/// The bench's project: a crate of three files.
fn project() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("src/lib.rs", &"pub fn f() -> u32 { 1 }\n".repeat(200));
    sb.write("src/config.rs", "pub const LIMIT: usize = 10;\n");
    sb.write("README.md", "# bench project\n");
    sb
}

fn main() {
    let sb = project();
    let server = MockServer::start();
    let (_installed, brute) = installed(std::path::Path::new(env!("CARGO_BIN_EXE_brute")));
    let base_installed = std::env::var_os("BRUTE_BENCH_BASE").map(|b| installed(std::path::Path::new(&b)));
    let base = base_installed.as_ref().map(|(_, b)| (b.clone(), project()));

    // Each SSE event in a chunk of its own, as a provider streams a finished answer; and, in
    // alternate runs, the tests' 7-byte pieces (every piece its own TCP segment), as this
    // bench measured until the ninth session of issue 29.
    let mut by_event = Task::default();
    let mut by_7_bytes = Task::default();
    let mut base_by_event = Task::default();
    let mut base_by_7_bytes = Task::default();
    for round in 0..RUNS {
        for (task, base_task, per_event) in [
            (&mut by_event, &mut base_by_event, true),
            (&mut by_7_bytes, &mut base_by_7_bytes, false),
        ] {
            // A run's process teardown (and the kernel's cleanup of its sandbox's namespaces)
            // spills into the next: the base goes first every other round.
            let base_first = round % 2 == 1;
            if base_first && let Some((base, base_sb)) = &base {
                base_task.run(base_sb, base, &server, per_event);
            }
            task.run(&sb, &brute, &server, per_event);
            if !base_first && let Some((base, base_sb)) = &base {
                base_task.run(base_sb, base, &server, per_event);
            }
        }
    }
    by_event.report("task: 2 requests, 3 tools");
    by_7_bytes.report("same, answers in 7-byte pieces");
    if base.is_some() {
        base_by_event.report("BASE task: 2 requests, 3 tools");
        base_by_7_bytes.report("BASE same, 7-byte pieces");
    }

    let mut times = Vec::new();
    let mut peak = 0;
    for _ in 0..RUNS {
        let (time, rss) = measure(Command::new(&brute).arg("--version"));
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
