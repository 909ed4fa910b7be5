//! What the process sandbox costs per command: `bash -c true` started directly, through the
//! init under `full-access` (new PID and mount namespaces with their own `/proc`), and under
//! `workspace-write` (also Landlock, read-only `.git`, a network namespace), 100 runs each,
//! interleaved, all spawned the way the `shell` tool does; and the `workspace-write` start with
//! brute's own binary as the init instead of `brute-sandbox-init`.
//!
//! Run: `cargo bench --bench sandbox` (numbers go to BENCHMARKS.md by hand). With
//! `BRUTE_BENCH_BASE=/path/to/an/older/brute`, the same `workspace-write` start through that
//! binary's init is interleaved with the others, for a before/after on the same machine state.

use std::time::{Duration, Instant};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    assert!(
        brute::sandbox::isolated(),
        "the brute binary is needed beside this bench (cargo bench builds it)"
    );
    let project = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(project.path().join(".git")).expect(".git");
    let confined = brute::sandbox::Policy::for_project(brute::sandbox::Mode::WorkspaceWrite, project.path(), &[], &[]);
    let full = brute::sandbox::Policy::for_project(brute::sandbox::Mode::FullAccess, project.path(), &[], &[]);
    let base = std::env::var_os("BRUTE_BENCH_BASE").map(std::path::PathBuf::from);
    // An older init knows no `--git-root`: leave those out for it.
    let base_args: Vec<std::ffi::OsString> = {
        let args = confined.to_args();
        let mut kept = Vec::new();
        let mut i = 0;
        while i < args.len() {
            if args[i] == "--git-root" {
                i += 2;
                continue;
            }
            kept.push(args[i].clone());
            i += 1;
        }
        kept
    };
    let mut based = Vec::new();
    let mut in_brute = Vec::new();
    let (mut direct, mut unconfined, mut sandboxed) = (Vec::new(), Vec::new(), Vec::new());
    runtime.block_on(async {
        for _ in 0..100 {
            let started = Instant::now();
            let status = tokio::process::Command::new("bash")
                .args(["-c", "true"])
                .status()
                .await
                .expect("bash");
            assert!(status.success());
            direct.push(started.elapsed());
            for (policy, samples) in [(&full, &mut unconfined), (&confined, &mut sandboxed)] {
                let started = Instant::now();
                let command = brute::sandbox::confined_command(policy, "bash", ["-c", "true"]).expect("init");
                let mut child = brute::sandbox::spawn(command).await.expect("sandboxed bash");
                assert!(child.wait().await.expect("wait").success());
                samples.push(started.elapsed());
            }
            let started = Instant::now();
            let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_brute"));
            command
                .arg(brute::sandbox::INIT_ARG)
                .args(confined.to_args())
                .args(["--", "bash", "-c", "true"]);
            let mut child = brute::sandbox::spawn(command).await.expect("init in brute");
            assert!(child.wait().await.expect("wait").success());
            in_brute.push(started.elapsed());
            if let Some(base) = &base {
                let started = Instant::now();
                let mut command = tokio::process::Command::new(base);
                // An older brute's init argument names no build.
                command
                    .arg("__brute-sandbox-init")
                    .args(&base_args)
                    .args(["--", "bash", "-c", "true"]);
                let mut child = brute::sandbox::spawn(command).await.expect("base init");
                assert!(child.wait().await.expect("wait").success());
                based.push(started.elapsed());
            }
        }
    });
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (d, u, s) = (median(direct), median(unconfined), median(sandboxed));
    println!("bash -c true, median of 100:");
    println!("  direct                          {:>7.2} ms", ms(d));
    println!("  init, full-access (PID+mount ns) {:>7.2} ms", ms(u));
    println!("  init, workspace-write (+Landlock, netns) {:>7.2} ms", ms(s));
    println!("  sandboxed vs unconfined shell call: +{:.2} ms", ms(s) - ms(u));
    let own = median(in_brute);
    println!(
        "  workspace-write, init in brute's own binary {:>7.2} ms ({:+.2} ms)",
        ms(own),
        ms(own) - ms(s)
    );
    if !based.is_empty() {
        let b = median(based);
        println!("  base binary, workspace-write     {:>7.2} ms", ms(b));
        println!("  this binary vs base, workspace-write: {:+.2} ms", ms(s) - ms(b));
    }
}
