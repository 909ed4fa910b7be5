//! A store that has seen 2,000 turns (issue: state that survives anything):
//! - the checkpoint of a small turn (3 files changed) at turn 1 and at turn 2,000, and of a
//!   turn creating 2,000 files on a fresh store and after 2,000 turns (target ≤ 1.5×);
//! - the store's size after 2,000 turns against the distinct content it holds;
//! - `brute --continue` and `brute undo --list` on the 2,000-turn session (the real binary).
//!
//! Run: `cargo bench --bench long_store` (`BENCH_DIR=/dev/shm` puts the trees and stores in
//! memory: then what is measured is brute's own work, without the filesystem's; on ext4 a fast
//! loop of creating and deleting files makes each new file slower to create for a while).
//!
//! Each turn's edits are dated 3 s back, as if the turn took that long (a model's turn takes
//! seconds): a checkpoint re-reads every file modified in the last 2 s however its metadata
//! looks (the walk's racy window), and a loop of 2,000 turns in 30 s would otherwise make
//! every late checkpoint re-read the ~450 files edited in the last 2 s where the first
//! turns re-read a few, which measures the loop's pace rather than the store.
//! `BENCH_FAST_TURNS=1` keeps the edits' real times; the files re-read per checkpoint (by
//! that rule) are printed either way.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use brute::provider::Message;

mod support;
use brute::session::{Recorder, SessionStore};
use support::{median, ms, old_project, source_file};

const TURNS: usize = 2000;
const FILES: usize = 500;

/// Bytes, disk blocks (in bytes) and files under `dir`.
fn usage(dir: &Path) -> (u64, u64, usize) {
    use std::os::unix::fs::MetadataExt;
    let (mut bytes, mut blocks, mut files) = (0, 0, 0);
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let meta = entry.metadata().expect("metadata");
            if meta.is_dir() {
                dirs.push(entry.path());
            } else {
                bytes += meta.len();
                blocks += meta.blocks() * 512;
                files += 1;
            }
        }
    }
    (bytes, blocks, files)
}

/// Files under `dir` modified in the last 2 s: what a checkpoint now re-reads whatever their
/// metadata says.
fn racy(dir: &Path) -> usize {
    let now = SystemTime::now();
    let mut count = 0;
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let meta = entry.metadata().expect("metadata");
            if meta.is_dir() {
                dirs.push(entry.path());
            } else if meta
                .modified()
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .is_none_or(|age| age < Duration::from_secs(2))
            {
                count += 1;
            }
        }
    }
    count
}

fn mean(v: &[Duration]) -> Duration {
    v.iter().sum::<Duration>() / v.len() as u32
}

/// One turn of `recorder` in which `change` edits the tree; returns the checkpoint time
/// (the end of the turn and the start of the next, halved).
fn turn(recorder: &mut Recorder, n: usize, change: impl FnOnce()) -> Duration {
    change();
    let t = Instant::now();
    recorder
        .end_turn(&brute::session::TurnWork::all_by_commands())
        .expect("checkpoint");
    let spent = t.elapsed();
    for message in [
        Message::Assistant {
            text: format!("Done with step {n}."),
            tool_calls: Vec::new(),
            reasoning: Vec::new(),
        },
        Message::user(format!("step {}: change three files", n + 1)),
    ] {
        recorder.message(&message).expect("message");
    }
    let t = Instant::now();
    recorder
        .begin_turn(&format!("step {}", n + 1), 2 * n + 1)
        .expect("checkpoint");
    (spent + t.elapsed()) / 2
}

/// Times a turn creating 2,000 new files.
fn big_turn(recorder: &mut Recorder, project: &Path, tag: &str) -> Duration {
    let dir = project.join(format!("generated-{tag}"));
    std::fs::create_dir_all(&dir).expect("mkdir");
    for i in 0..2000 {
        std::fs::write(dir.join(format!("g{i:04}.txt")), format!("{tag} generated file {i}\n")).expect("write");
    }
    let t = Instant::now();
    recorder
        .end_turn(&brute::session::TurnWork::all_by_commands())
        .expect("checkpoint");
    let spent = t.elapsed();
    recorder.begin_turn("next", 0).expect("checkpoint");
    spent
}

/// A temporary directory in `BENCH_DIR` (default: the system's temp dir).
fn temp() -> tempfile::TempDir {
    match std::env::var_os("BENCH_DIR") {
        Some(dir) => tempfile::tempdir_in(dir).expect("temp dir"),
        None => tempfile::tempdir().expect("temp dir"),
    }
}

fn main() {
    // A fresh store: the reference for the big turn.
    let fresh_project = temp();
    let fresh_data = temp();
    old_project(fresh_project.path(), FILES, 50);
    let fresh_store = SessionStore::new(fresh_data.path(), fresh_project.path());
    let mut fresh = Recorder::new(
        fresh_store.clone(),
        fresh_store.create().expect("session"),
        &Default::default(),
        10 << 20,
    );
    fresh.begin_turn("first", 0).expect("checkpoint");
    let fresh_big = big_turn(&mut fresh, fresh_project.path(), "fresh");

    let project = temp();
    let data = temp();
    old_project(project.path(), FILES, 50);
    let store = SessionStore::new(data.path(), project.path());
    let mut recorder = Recorder::new(
        store.clone(),
        store.create().expect("session"),
        &Default::default(),
        10 << 20,
    );
    recorder
        .message(&Message::user("step 1: change three files"))
        .expect("message");
    recorder.begin_turn("step 1", 1).expect("checkpoint");
    let mut times = Vec::with_capacity(TURNS);
    let mut reread = Vec::with_capacity(TURNS);
    let fast = std::env::var_os("BENCH_FAST_TURNS").is_some();
    let mut distinct: u64 = (0..FILES)
        .map(|i| format!("// file {i}\n").len() as u64 + 25 * 40)
        .sum();
    let started = Instant::now();
    for n in 1..=TURNS {
        let spent = turn(&mut recorder, n, || {
            for k in 0..3 {
                let i = (n * 3 + k) % FILES;
                let text = format!("// file {i}, turn {n}\n{}", "pub fn f() -> u32 { 43 }\n".repeat(40));
                distinct += text.len() as u64;
                let path = project.path().join(source_file(i, 50));
                std::fs::write(&path, text).expect("edit");
                if !fast {
                    std::fs::File::options()
                        .write(true)
                        .open(&path)
                        .and_then(|f| f.set_modified(SystemTime::now() - Duration::from_secs(3)))
                        .expect("mtime");
                }
            }
            reread.push(racy(project.path()));
        });
        times.push(spent);
    }
    let total = started.elapsed();
    let first: Vec<Duration> = times[..20].to_vec();
    let last: Vec<Duration> = times[TURNS - 20..].to_vec();
    let mut rereads = (reread[..20].to_vec(), reread[TURNS - 20..].to_vec());
    rereads.0.sort();
    rereads.1.sort();
    println!(
        "small turn checkpoint (3 of {FILES} files changed{}): turns 1-20 median {:5.2} ms, turns {}-{TURNS} median {:5.2} ms ({:.2}×); {TURNS} turns in {:.1} s",
        if fast {
            ", edits at the loop's pace"
        } else {
            ", edits dated 3 s back"
        },
        ms(median(first.clone())),
        TURNS - 19,
        ms(median(last.clone())),
        median(last.clone()).as_secs_f64() / median(first.clone()).as_secs_f64(),
        total.as_secs_f64()
    );
    let (early, late) = (mean(&times[..TURNS / 10]), mean(&times[TURNS - TURNS / 10..]));
    println!(
        "  mean (merges included) of turns 1-{} {:5.2} ms, of turns {}-{TURNS} {:5.2} ms ({:.2}×); files modified in the last 2 s (re-read) at turns 1-20 median {}, at turns {}-{TURNS} median {}",
        TURNS / 10,
        ms(early),
        TURNS - TURNS / 10 + 1,
        ms(late),
        late.as_secs_f64() / early.as_secs_f64(),
        rereads.0[10],
        TURNS - 19,
        rereads.1[10]
    );
    let big = big_turn(&mut recorder, project.path(), "late");
    println!(
        "a turn creating 2,000 files: fresh store {:6.1} ms, after {TURNS} turns {:6.1} ms ({:.2}×, target ≤ 1.5×)",
        ms(fresh_big),
        ms(big),
        big.as_secs_f64() / fresh_big.as_secs_f64()
    );
    let (bytes, blocks, files) = usage(&data.path().join("objects"));
    let (session_bytes, ..) = usage(&data.path().join("sessions"));
    println!(
        "store after {TURNS} turns: objects {:.1} MB ({:.1} MB of disk blocks) in {files} files ({} packs), distinct file content {:.1} MB ({:.2}×); session files {:.1} MB",
        bytes as f64 / 1e6,
        blocks as f64 / 1e6,
        store.objects().pack_count(),
        distinct as f64 / 1e6,
        bytes as f64 / distinct as f64,
        session_bytes as f64 / 1e6
    );
    let session_id = recorder.id().to_owned();
    drop(recorder);

    // The real binary on the 2,000-turn session.
    let script = data.path().join("answer.jsonl");
    std::fs::write(&script, "{\"text\": \"ok\"}\n".repeat(TURNS + 2)).expect("script");
    let brute = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_brute"));
        cmd.current_dir(project.path())
            .env("BRUTE_DATA_DIR", data.path())
            .env("BRUTE_CONFIG_DIR", data.path().join("config"))
            .env("HOME", data.path())
            .args(args);
        let t = Instant::now();
        let out = cmd.output().expect("brute");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (t.elapsed(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let mut lists = Vec::new();
    for _ in 0..5 {
        let (spent, out) = brute(&["undo", "--list"]);
        assert!(
            out.contains(&session_id) && out.contains(&format!("turn {}", TURNS + 1)),
            "{out}"
        );
        lists.push(spent);
    }
    let script = script.to_string_lossy().into_owned();
    let mut continues = Vec::new();
    for _ in 0..5 {
        let (spent, _) = brute(&[
            "--provider",
            "replay",
            "--script",
            &script,
            "--continue",
            "-p",
            "and now?",
        ]);
        continues.push(spent);
    }
    println!(
        "on the {TURNS}-turn session: `brute undo --list` median {:6.1} ms; `brute --continue -p` (replay provider) median {:6.1} ms",
        ms(median(lists)),
        ms(median(continues))
    );
}
