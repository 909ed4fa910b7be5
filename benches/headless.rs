//! Issue 29: what a one-shot `brute -p` costs in a big git repository, side by side with
//! `git status` and `rg --files` on the same tree. For each size (20,000 and 200,000 files by
//! default; `BENCH_HEADLESS_SIZES=20000` for one), a generated repository of small source
//! files, committed: a first run (empty data dir), later runs, the peak RSS of each, and a
//! tiny project's run for the overhead brute adds over it; then the UI's first turn in the same
//! repository, in tmux (`first_turn_ms` of `BRUTE_TIMINGS`). The model is the mock on
//! 127.0.0.1, answering at once. The target's ratio is taken from `git status`, the tiny run
//! and the later run measured in turn, round after round, so all three see the same load.
//!
//! Run: `cargo bench --bench headless` (numbers go to BENCHMARKS.md by hand).

#[path = "support/mod.rs"]
mod shared;
#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shared::{git, median, ms};
use support::{MockServer, Reply, Sandbox, openai_sse};

const RUNS: usize = 5;

fn run_ok(cmd: &mut Command, what: &str) {
    let status = cmd.status().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(status.success(), "{what} failed");
}

/// Wall time of `make()`'s command, median of [`RUNS`], and its peak RSS in MB (one more run,
/// measured from a python3 parent so this process's own high-water mark does not count).
fn cost(make: impl Fn() -> Command, before_each: impl Fn()) -> (Duration, f64) {
    let mut times = Vec::new();
    for _ in 0..RUNS {
        before_each();
        let mut cmd = make();
        let started = Instant::now();
        let status = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().expect("run");
        times.push(started.elapsed());
        assert!(status.success(), "{cmd:?} failed");
    }
    before_each();
    let (output, kib) = support::run_measuring_peak_rss(&make());
    assert!(output.status.success(), "{output:?}");
    (median(times), kib as f64 / 1024.0)
}

/// Wall times of the commands `makers` make, run in turn round after round, the median of
/// [`INTERLEAVED`] rounds each: what is compared is measured under the same load (this
/// machine's noise moves batches run one after another by 20-30 %).
fn interleaved<const N: usize>(makers: [&dyn Fn() -> Command; N]) -> [Duration; N] {
    let mut times: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::new());
    for _ in 0..INTERLEAVED {
        for (make, times) in makers.iter().zip(times.iter_mut()) {
            let mut cmd = make();
            let started = Instant::now();
            let status = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().expect("run");
            times.push(started.elapsed());
            assert!(status.success(), "{cmd:?} failed");
        }
    }
    times.map(median)
}

/// Rounds of [`interleaved`].
const INTERLEAVED: usize = 11;

/// `brute -p x` in `sb`, the mock answering `ok` (queued once per run).
fn brute_run(sb: &Sandbox, server: &MockServer) -> Command {
    server.push(Reply::sse(openai_sse("ok", &[])));
    let mut cmd = sb.std_brute(server);
    cmd.args(["-p", "x"]);
    cmd
}

fn measure(files: usize, server: &MockServer, tiny_sb: &Sandbox) {
    let sb = Sandbox::new();
    let root = sb.project.path();
    let started = Instant::now();
    shared::old_project(root, files, 50);
    std::fs::write(root.join(".gitignore"), "target/\n").expect("gitignore");
    run_ok(&mut git(root, &["init", "-q"]), "git init");
    run_ok(&mut git(root, &["add", "-A"]), "git add");
    run_ok(&mut git(root, &["commit", "-qm", "tree"]), "git commit");
    println!(
        "{files} files in {} directories, committed, in {:.1} s",
        files.div_ceil(50),
        started.elapsed().as_secs_f64()
    );
    let (_, status_mb) = cost(|| git(root, &["status", "--short"]), || {});
    let (rg, rg_mb) = cost(
        || {
            let mut cmd = Command::new("rg");
            cmd.args(["--files"]).current_dir(root).stdin(Stdio::null());
            cmd
        },
        || {},
    );
    let data = sb.home.path().join("data");
    let (first, first_mb) = cost(
        || brute_run(&sb, server),
        || {
            let _ = std::fs::remove_dir_all(&data);
        },
    );
    let (_, later_mb) = cost(|| brute_run(&sb, server), || {});
    // The ratio's three terms, each round one after another.
    let [status, tiny, later] = interleaved([
        &|| git(root, &["status", "--short"]),
        &|| brute_run(tiny_sb, server),
        &|| brute_run(&sb, server),
    ]);
    // The UI in the same repository: its first turn (prompt given at start, answered at once),
    // with what the -p runs left in the data dir, then with none.
    let config = sb.home.path().join("config");
    let ui_turn = |run: usize| {
        server.push(Reply::sse(openai_sse(UI_ANSWER, &[])));
        support::tmux::first_turn_ms(root, sb.home.path(), &config, server, run, UI_ANSWER)
    };
    let ui_later = median_ms((0..RUNS).map(ui_turn).collect());
    let ui_first = median_ms(
        (0..RUNS)
            .map(|run| {
                let _ = std::fs::remove_dir_all(&data);
                ui_turn(RUNS + run)
            })
            .collect(),
    );
    println!(
        "  git status --short   median {:7.1} ms   peak RSS {status_mb:5.1} MB",
        ms(status)
    );
    println!(
        "  rg --files           median {:7.1} ms   peak RSS {rg_mb:5.1} MB",
        ms(rg)
    );
    println!(
        "  brute -p, first run  median {:7.1} ms   peak RSS {first_mb:5.1} MB",
        ms(first)
    );
    println!(
        "  brute -p, later run  median {:7.1} ms   peak RSS {later_mb:5.1} MB   over a tiny project's run: {:.1} ms = {:.2}× git status (target ≤ 1.5×)",
        ms(later),
        ms(later.saturating_sub(tiny)),
        later.saturating_sub(tiny).as_secs_f64() / status.as_secs_f64().max(1e-9)
    );
    println!(
        "    (medians of {INTERLEAVED} rounds of git status, the tiny run and the later run one after another: {:.1}, {:.1}, {:.1} ms)",
        ms(status),
        ms(tiny),
        ms(later)
    );
    println!(
        "  UI first turn        median {ui_later:7.1} ms after earlier runs, {ui_first:7.1} ms with an empty data dir (target ≤ 300 ms; brute's own clock, from process start)"
    );
}

/// What the mock answers the UI's prompt with (the bench waits for it on the screen).
const UI_ANSWER: &str = "the first turn is done";

/// The median of `values` (ms).
fn median_ms(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    for tool in ["git", "rg", "python3", "tmux"] {
        let flag = if tool == "tmux" { "-V" } else { "--version" };
        if Command::new(tool).arg(flag).output().is_err() {
            println!("{tool} is not installed: the bench needs it (apt-get install git ripgrep python3 tmux)");
            return;
        }
    }
    let server = MockServer::start();
    let tiny = Sandbox::new();
    tiny.write("hello.txt", "hello\n");
    run_ok(&mut git(tiny.project.path(), &["init", "-q"]), "git init");
    run_ok(&mut git(tiny.project.path(), &["add", "-A"]), "git add");
    run_ok(&mut git(tiny.project.path(), &["commit", "-qm", "tiny"]), "git commit");
    run_ok(
        brute_run(&tiny, &server).stdout(Stdio::null()).stderr(Stdio::null()),
        "a first tiny run",
    );
    let (tiny_run, tiny_mb) = cost(|| brute_run(&tiny, &server), || {});
    println!(
        "a tiny project (1 file, git): brute -p median {:.1} ms, peak RSS {tiny_mb:.1} MB",
        ms(tiny_run)
    );
    let sizes = std::env::var("BENCH_HEADLESS_SIZES").unwrap_or_else(|_| "20000,200000".to_owned());
    for files in sizes.split(',').filter_map(|s| s.trim().parse::<usize>().ok()) {
        measure(files, &server, &tiny);
    }
}
