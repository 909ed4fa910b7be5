//! Issue 14: the first turn's checkpoint in a big tree, with and without git. Generates a
//! reproducible tree of 15,000 files / ~220 MB (seeded pseudo-random text, sizes from 200 B
//! to 760 KB), commits it with the git CLI (the bench runs git; brute never does), and measures
//! the real `brute -p` against the mock provider: the first turn's wall time and the bytes it
//! adds to the data directory, a later turn (a new session seeded from the last checkpoint),
//! the same tree without `.git`, and `rg --files` on the tree for comparison.
//!
//! Run: `cargo bench --bench big_tree` (numbers go to BENCHMARKS.md by hand).

#[path = "support/mod.rs"]
mod shared;
#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shared::{median, ms};
use support::{MockServer, Reply, Sandbox, openai_sse};

const FILES: usize = 15_000;
const RUNS: usize = 3;

/// Writes the tree: directories of 60 files, text lines of pseudo-words, a few large files.
fn generate(root: &Path) -> u64 {
    let mut rng = fastrand::Rng::with_seed(14);
    let words = [
        "fn", "let", "mut", "impl", "struct", "self", "return", "match", "Some", "None", "Ok", "Err", "pub", "use",
        "crate", "value", "index", "buffer", "len", "iter",
    ];
    let mut total = 0u64;
    for i in 0..FILES {
        let path = root.join(format!("crate{:03}/src/m{:02}/file{i:05}.rs", i / 600, (i / 60) % 10));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        // Mostly a few KB; one in 50 files is large (up to 760 KB): about 14.6 KB on average.
        let size = if i % 50 == 0 {
            rng.usize(100_000..760_000)
        } else {
            rng.usize(200..12_000)
        };
        let mut text = String::with_capacity(size + 80);
        while text.len() < size {
            for _ in 0..rng.usize(3..12) {
                text.push_str(words[rng.usize(0..words.len())]);
                text.push(' ');
            }
            text.push_str(&rng.u32(..).to_string());
            text.push('\n');
        }
        total += text.len() as u64;
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .expect("write");
    }
    std::fs::write(root.join(".gitignore"), "target/\n").expect("gitignore");
    total
}

fn git(root: &Path, args: &[&str]) {
    let status = shared::git(root, args).status().expect("git");
    assert!(status.success(), "git {args:?}");
}

/// Bytes of every file under `dir` (0 when it does not exist).
fn du(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => du(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// One `brute -p` turn in `sb`: its wall time, and when its request left (after the turn's
/// first checkpoint), from brute's own timings line.
fn turn(sb: &Sandbox, server: &MockServer) -> (Duration, Duration) {
    server.push(Reply::sse(openai_sse("ok", &[])));
    let timings = sb.home.path().join("timings.txt");
    let stderr = std::fs::File::create(&timings).expect("timings file");
    let started = Instant::now();
    let status = sb
        .std_brute(server)
        .env(brute::timing::VAR, "1")
        .args(["-p", "x"])
        .stdout(Stdio::null())
        .stderr(stderr)
        .status()
        .expect("brute");
    let elapsed = started.elapsed();
    assert!(status.success(), "brute failed");
    let text = std::fs::read_to_string(&timings).expect("timings");
    let request = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("first_request_ms="))
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(Duration::ZERO, |ms| Duration::from_secs_f64(ms / 1000.0));
    (elapsed, request)
}

/// First turns (each with an empty data dir) and later turns of `sb`'s project.
fn measure(name: &str, sb: &Sandbox, server: &MockServer) {
    let data = sb.home.path().join("data");
    let (mut first, mut request, mut later, mut added, mut later_added) = (Vec::new(), Vec::new(), Vec::new(), 0, 0);
    for _ in 0..RUNS {
        let _ = std::fs::remove_dir_all(&data);
        let (wall, sent) = turn(sb, server);
        first.push(wall);
        request.push(sent);
        added = du(&data);
        later.push(turn(sb, server).0);
        later_added = du(&data) - added;
    }
    println!(
        "{name:<12} first turn median {:7.1} ms (min {:7.1}, request sent at {:6.1})   data dir +{:6.1} MB   later turn median {:7.1} ms, +{:5.2} MB",
        ms(median(first.clone())),
        ms(*first.iter().min().expect("runs")),
        ms(median(request)),
        added as f64 / 1e6,
        ms(median(later)),
        later_added as f64 / 1e6,
    );
}

fn main() {
    let sb = Sandbox::new();
    let root = sb.project.path();
    let started = Instant::now();
    let bytes = generate(root);
    println!(
        "tree: {FILES} files, {:.1} MB, generated in {:.1} s",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let server = MockServer::start();

    // Not under git first (the same tree), then committed.
    measure("no git", &sb, &server);
    let started = Instant::now();
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "tree"]);
    git(root, &["gc", "-q"]);
    println!("git init + add + commit + gc: {:.1} s", started.elapsed().as_secs_f64());
    measure("git, clean", &sb, &server);

    let mut times = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let out = Command::new("rg")
            .args(["--files", "--hidden", "-g", "!.git"])
            .current_dir(root)
            .stdout(Stdio::null())
            .status();
        match out {
            Ok(status) if status.success() => times.push(started.elapsed()),
            _ => {
                println!("rg --files: ripgrep is not installed");
                return;
            }
        }
    }
    println!("rg --files          median {:8.1} ms", ms(median(times)));
}
