//! Issue 14, the walk part:
//! - a later turn's checkpoint of a real ~15,000-file, ~220 MB tree (a copy of the cargo
//!   registry's sources, or `BRUTE_BENCH_TREE`), against `rg --files` on the same tree
//!   (target: ≤ 1.5×);
//! - the UI's first frame in a synthetic 200,000-file project (target: ≤ 100 ms), from brute's
//!   own timestamps (`BRUTE_TIMINGS=1`), while its first checkpoint walks in the background;
//! - a synthetic project of a million entries, over the default checkpoint budget: the first
//!   frame, how long a turn's `write` waits for the walk to give up, and that undo takes the
//!   write back (`BENCH_MILLION=0` leaves this part out: the tree takes a minute to write).
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
        recorder
            .end_turn(&brute::session::TurnWork::all_by_commands())
            .expect("checkpoint");
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

/// A project of `files` small files, `per_dir` to a directory, marked a repository.
fn synthetic(root: &Path, files: usize, per_dir: usize) {
    std::fs::create_dir_all(root.join(".git")).expect(".git");
    for i in 0..files {
        let dir = root.join(format!("d{:04}", i / per_dir));
        if i % per_dir == 0 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        std::fs::write(dir.join(format!("f{i:07}.txt")), format!("{i}\n")).expect("write");
    }
}

/// A million-entry project (998,000 files in 1,996 directories of 500 files, and the
/// directories): over the default budget of 500,000 entries. The UI's first frame; a turn
/// as the UI runs it (file watcher on) whose `write` waits for the first walk to give up at
/// the budget, with the notice; and `/undo` taking the write back (one call at a time).
fn million(home: &Path, server: &support::MockServer) {
    use brute::protocol::Event;
    let tree = tempfile::tempdir().expect("temp dir");
    let root = tree.path();
    let t = Instant::now();
    synthetic(root, 998_000, 500);
    println!(
        "million-entry tree: 998,000 files in 1,996 directories written in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let mut frames: Vec<f64> = (0..3).map(|run| first_frame(root, home, server, 100 + run)).collect();
    frames.sort_by(f64::total_cmp);
    println!(
        "UI first frame, million-entry project, 3 runs: median {:.1} ms, max {:.1} ms",
        frames[1], frames[2]
    );
    let data = tempfile::tempdir().expect("temp dir");
    let store = SessionStore::new(data.path(), root);
    let mut recorder = Recorder::new(
        store.clone(),
        store.create().expect("session"),
        &Default::default(),
        10 << 20,
    );
    recorder.watch_tree().expect("inotify");
    let script = r#"{"tool_calls": [{"name": "write", "arguments": {"file_path": "d0999/f0499999.txt", "content": "rewritten\n"}}]}
{"text": "done"}"#;
    let (mut agent, mut events) = support::replay_agent(root, recorder, script);
    let t = Instant::now();
    support::run_turn(&mut agent, "rewrite one file");
    let turn = t.elapsed();
    let file = root.join("d0999/f0499999.txt");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "rewritten\n");
    let mut notice = String::new();
    while let Ok(event) = events.try_recv() {
        if let Event::Notice { message } = event
            && message.contains("turn checkpoints are off")
        {
            notice = message;
        }
    }
    assert!(notice.contains("more than 500000"), "no budget notice: {notice:?}");
    let t = Instant::now();
    let (message, _) = agent.undo(false, false, false);
    let undo = t.elapsed();
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "499999\n", "{message}");
    println!(
        "million-entry project: a turn with one write {:.0} ms (its write waited for the walk to stop at the budget), undo of the write {:.1} ms",
        ms(turn),
        ms(undo)
    );
    println!("  notice: {notice}");
    let t = Instant::now();
    drop(tree);
    println!("  (tree removed in {:.1} s)", t.elapsed().as_secs_f64());
}

/// The first frame of one run of the UI in `project` (see [`support::tmux::first_frame_ms`]).
fn first_frame(project: &Path, home: &Path, server: &support::MockServer, run: usize) -> f64 {
    let config = home.join("config");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(config.join("config.toml"), "").expect("config");
    support::tmux::first_frame_ms(project, home, &config, server, run)
}

fn main() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let data = tempfile::tempdir().expect("temp dir");
    let tree = real_tree(scratch.path());
    later_turns(&tree, data.path());

    let big = tempfile::tempdir().expect("temp dir");
    let home = tempfile::tempdir().expect("temp dir");
    let t = Instant::now();
    synthetic(big.path(), 200_000, 200);
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
    drop(big);
    if std::env::var("BENCH_MILLION").as_deref() != Ok("0") {
        million(home.path(), &server);
    }
}
