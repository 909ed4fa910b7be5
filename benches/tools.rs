//! Tool benchmarks:
//! - `read` of a 100 MB file returns its first page (target ≤ 20 ms: it never loads the whole
//!   file to show 2000 lines);
//! - `fs_search` over a large tree against ripgrep on the same pattern and tree (target:
//!   within 1.3× of rg's wall time, warm and cold cache).
//!
//! Run: `cargo bench --bench tools`. The search tree defaults to the cargo registry sources
//! (`$CARGO_HOME/registry/src`); set `BRUTE_BENCH_TREE` to use another. ripgrep comes from
//! `apt-get install ripgrep`; without it the comparison is skipped. Cold-cache runs need root
//! (they write /proc/sys/vm/drop_caches) and are skipped otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use brute::protocol::EventSink;
use brute::provider::replay::ReplayProvider;
use brute::tool::fs_search::{Query, Stop, search};
use brute::tool::state::AgentState;
use brute::tool::{Tool, ToolContext};

const PATTERN: &str = r"fn [a-z_]+_mut\(";

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn bench_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big.log");
    let line = format!("{}\n", "0123456789".repeat(10));
    let mut content = String::with_capacity(100 * 1024 * 1024 + line.len());
    while content.len() < 100 * 1024 * 1024 {
        content.push_str(&line);
    }
    std::fs::write(&path, &content).expect("write the 100 MB file");
    drop(content);
    let provider = Arc::new(ReplayProvider::from_script("").expect("script"));
    let state = Arc::new(AgentState::new(provider, "m".into(), 1, dir.path().to_path_buf()));
    let (sink, _rx) = EventSink::channel();
    let ctx = ToolContext::standalone(state, sink);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let args = serde_json::json!({"file_path": "big.log"});
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..20 {
        let started = Instant::now();
        let out = runtime
            .block_on(brute::tool::read::ReadTool.call(args.clone(), &ctx))
            .expect("read works");
        times.push(started.elapsed());
        bytes = out.content.len();
    }
    println!(
        "read: first page of a 100 MB file   median {:6.2} ms (min {:.2}, max {:.2}); {bytes} bytes returned",
        ms(median(times.clone())),
        ms(*times.iter().min().expect("runs")),
        ms(*times.iter().max().expect("runs")),
    );
}

fn drop_caches() -> bool {
    let _ = Command::new("sync").status();
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").is_ok()
}

fn time_rg(tree: &Path) -> (Duration, usize) {
    let started = Instant::now();
    let out = Command::new("rg")
        .args(["-n", "--no-heading", "--color", "never", PATTERN])
        .arg(tree)
        .stderr(Stdio::null())
        .output()
        .expect("run rg");
    (started.elapsed(), out.stdout.iter().filter(|b| **b == b'\n').count())
}

fn time_brute(tree: &Path) -> (Duration, String) {
    let query = Query {
        pattern: Some(PATTERN.to_owned()),
        glob: None,
        ignore_case: false,
        path: tree.to_path_buf(),
        root: tree.to_path_buf(),
    };
    let started = Instant::now();
    let out = search(
        &query,
        &Stop::new(tokio_util::sync::CancellationToken::new(), Duration::MAX),
    )
    .expect("search works");
    (started.elapsed(), out)
}

fn bench_search() {
    let tree = std::env::var_os("BRUTE_BENCH_TREE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("CARGO_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo"));
            home.join("registry/src")
        });
    if !tree.is_dir() {
        println!("fs_search: skipped, no tree at {}", tree.display());
        return;
    }
    let files = ignore::WalkBuilder::new(&tree)
        .build()
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().is_file()))
        .count();
    println!("fs_search: pattern `{PATTERN}` over {} ({files} files)", tree.display());
    let has_rg = Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_rg {
        println!("  ripgrep not installed (apt-get install ripgrep): comparison skipped");
    }
    // Warm: one run each to fill the cache, then alternate.
    let _ = time_brute(&tree);
    if has_rg {
        let _ = time_rg(&tree);
    }
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let mut total_line = String::new();
    let mut rg_lines = 0;
    for _ in 0..7 {
        let (t, out) = time_brute(&tree);
        ours.push(t);
        total_line = out.lines().last().unwrap_or_default().to_owned();
        if has_rg {
            let (t, n) = time_rg(&tree);
            theirs.push(t);
            rg_lines = n;
        }
    }
    report("warm", &ours, &theirs);
    println!("  brute: {total_line}   rg: {rg_lines} matching lines");
    if drop_caches() {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            drop_caches();
            ours.push(time_brute(&tree).0);
            if has_rg {
                drop_caches();
                theirs.push(time_rg(&tree).0);
            }
        }
        report("cold", &ours, &theirs);
    } else {
        println!("  cold: skipped (cannot write /proc/sys/vm/drop_caches; needs root)");
    }
}

fn report(label: &str, ours: &[Duration], theirs: &[Duration]) {
    let ours = median(ours.to_vec());
    if theirs.is_empty() {
        println!("  {label}: brute {:7.1} ms", ms(ours));
        return;
    }
    let theirs = median(theirs.to_vec());
    println!(
        "  {label}: brute {:7.1} ms   rg {:7.1} ms   ratio {:.2}× (target ≤ 1.3×)",
        ms(ours),
        ms(theirs),
        ours.as_secs_f64() / theirs.as_secs_f64()
    );
}

fn main() {
    bench_read();
    bench_search();
}
