//! Issue 14, the walk part:
//! - a later turn's checkpoint of a real ~15,000-file, ~220 MB tree (a copy of the cargo
//!   registry's sources, or `BRUTE_BENCH_TREE`), against `rg --files` on the same tree
//!   (target: ≤ 1.5×);
//! - the UI's first frame in a synthetic 200,000-file project (target: ≤ 100 ms), from brute's
//!   own timestamps (`BRUTE_TIMINGS=1`), while its first checkpoint walks in the background.
//!
//! Run: `cargo bench --bench walk` (needs `rg` and tmux; numbers go to BENCHMARKS.md by hand).

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use brute::session::checkpoint::Walked;
use brute::session::{Recorder, SessionStore};

const RUNS: usize = 7;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The tree to measure: `BRUTE_BENCH_TREE`, else a copy of the cargo registry's sources.
fn real_tree(scratch: &Path) -> PathBuf {
    if let Some(tree) = std::env::var_os("BRUTE_BENCH_TREE") {
        return PathBuf::from(tree);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).expect("HOME");
    let registry = home.join(".cargo/registry/src");
    let copy = scratch.join("tree");
    let status = Command::new("cp")
        .arg("-a")
        .arg(&registry)
        .arg(&copy)
        .status()
        .expect("cp");
    assert!(status.success(), "copying {} failed", registry.display());
    copy
}

/// Files and bytes under `root` (all of them, as the walk sees them with no ignore files).
fn size_of(root: &Path) -> (usize, u64) {
    let (mut files, mut bytes) = (0, 0);
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                files += 1;
                bytes += meta.len();
            }
        }
    }
    (files, bytes)
}

fn rg_files(root: &Path) -> Duration {
    let started = Instant::now();
    let out = Command::new("rg")
        .args(["--files", "--hidden", "--no-require-git"])
        .current_dir(root)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("rg (apt-get install ripgrep)");
    assert!(out.success() || out.code() == Some(1));
    started.elapsed()
}

fn later_turns(root: &Path, data: &Path) {
    let (files, bytes) = size_of(root);
    println!("tree: {files} files, {:.0} MB", bytes as f64 / 1e6);
    let store = SessionStore::new(data, root);
    let new_session = || {
        Recorder::new(
            store.clone(),
            store.create().expect("session"),
            &Default::default(),
            10 << 20,
        )
    };
    breakdown(root, data);
    let mut walked = new_session();
    measure(&mut walked, root, "walk");
    assert_eq!(walked.last_walk(), Walked::Full);
    // A new session of the same project starts from the last known tree, as brute does.
    let mut watched = new_session();
    watched.watch_tree().expect("inotify");
    measure(&mut watched, root, "watcher");
    assert_eq!(watched.last_walk(), Walked::Touched);
}

/// Where a walk-based checkpoint's time goes: a serial `ignore` walk with one lstat per entry
/// (what the walk did before, without the per-file work), the parallel scan with unchanged
/// files reused (no store), and the whole checkpoint (scan, manifest delta stored).
fn breakdown(root: &Path, data: &Path) {
    let serial = median(
        (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                let walker = ignore::WalkBuilder::new(root)
                    .hidden(false)
                    .require_git(false)
                    .filter_entry(|e| e.file_name() != ".git")
                    .build();
                let n = walker.flatten().filter(|e| e.metadata().is_ok()).count();
                assert!(n > 0);
                t.elapsed()
            })
            .collect(),
    );
    let objects = brute::session::objects::ObjectStore::new(data.join("breakdown/objects"));
    let mut scanner = brute::session::checkpoint::Scanner::new(root.to_path_buf(), objects, 10 << 20);
    scanner.checkpoint().expect("first");
    let scans = median(
        (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                scanner.scan().expect("scan");
                t.elapsed()
            })
            .collect(),
    );
    scanner.checkpoint().expect("stored");
    let checkpoints = median(
        (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                scanner.checkpoint().expect("checkpoint");
                t.elapsed()
            })
            .collect(),
    );
    println!(
        "breakdown: serial ignore walk + lstat {:.1} ms; parallel scan (all reused) {:.1} ms; scan + manifest stored {:.1} ms",
        ms(serial),
        ms(scans),
        ms(checkpoints)
    );
}

/// Runs turns (an edit before each) and prints the first checkpoint and the later ones'
/// median against `rg --files` measured between them.
fn measure(recorder: &mut Recorder, root: &Path, how: &str) {
    let started = Instant::now();
    recorder.begin_turn("first", 0).expect("checkpoint");
    let first = started.elapsed();
    let mut rg = Vec::new();
    let mut walks = Vec::new();
    let probe = root.join("brute-bench-probe.txt");
    for turn in 0..RUNS {
        std::fs::write(&probe, format!("turn {turn}\n")).expect("edit");
        rg.push(rg_files(root));
        let t = Instant::now();
        recorder.end_turn(&[]).expect("checkpoint");
        walks.push(t.elapsed());
        recorder.begin_turn("next", 0).expect("checkpoint");
    }
    let _ = std::fs::remove_file(&probe);
    let max = *walks.iter().max().expect("runs");
    let (rg, walk) = (median(rg), median(walks));
    println!(
        "{how:>7}: first checkpoint {:7.0} ms; later turn's checkpoint median {:7.1} ms (max {:.1}); rg --files median {:6.1} ms; ratio {:.2} (target <= 1.5)",
        ms(first),
        ms(walk),
        ms(max),
        ms(rg),
        walk.as_secs_f64() / rg.as_secs_f64()
    );
}

/// A 200,000-file project (1,000 directories of 200 small files), marked a repository.
fn synthetic(root: &Path, files: usize) {
    std::fs::create_dir_all(root.join(".git")).expect(".git");
    for i in 0..files {
        let dir = root.join(format!("d{:04}", i / 200));
        if i % 200 == 0 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        std::fs::write(dir.join(format!("f{i:06}.txt")), format!("{i}\n")).expect("write");
    }
}

/// Starts the UI in tmux in `project`, waits for its composer, ends it and returns
/// `first_frame_ms` from its timings line (as benches/startup.rs does).
fn first_frame(project: &Path, home: &Path, server: &support::MockServer, run: usize) -> f64 {
    let socket = format!("brute-walk-bench-{}-{run}", std::process::id());
    let timings = home.join(format!("timings-{run}"));
    let config = home.join("config");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(config.join("config.toml"), "").expect("config");
    let command = format!(
        "env -u OPENAI_API_KEY HOME='{home}' BRUTE_CONFIG_DIR='{config}' BRUTE_DATA_DIR='{home}/data' BRUTE_TIMINGS=1 TERM=xterm-256color '{bin}' --provider openai --model mock --base-url '{url}' 2>'{timings}'",
        home = home.display(),
        config = config.display(),
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

fn main() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let data = tempfile::tempdir().expect("temp dir");
    let tree = real_tree(scratch.path());
    later_turns(&tree, data.path());

    let big = tempfile::tempdir().expect("temp dir");
    let home = tempfile::tempdir().expect("temp dir");
    let t = Instant::now();
    synthetic(big.path(), 200_000);
    println!(
        "synthetic tree: 200,000 files written in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let server = support::MockServer::start();
    let mut frames: Vec<f64> = (0..RUNS)
        .map(|run| first_frame(big.path(), home.path(), &server, run))
        .collect();
    frames.sort_by(f64::total_cmp);
    println!(
        "UI first frame, 200,000-file project, {RUNS} runs: median {:.1} ms, max {:.1} ms (target ≤ 100)",
        frames[frames.len() / 2],
        frames[frames.len() - 1]
    );
}
