//! What the process sandbox costs per command: `bash -c true` started directly vs through
//! [`brute::sandbox`] (the init in a new PID and mount namespace with its own `/proc`, spawned
//! from the long-lived spawner thread), 100 runs each, interleaved.
//!
//! Run: `cargo bench --bench sandbox` (numbers go to BENCHMARKS.md by hand).

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
    let (mut direct, mut sandboxed) = (Vec::new(), Vec::new());
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
            let started = Instant::now();
            let command = brute::sandbox::command("bash", ["-c", "true"]);
            let mut child = brute::sandbox::spawn(command).await.expect("sandboxed bash");
            assert!(child.wait().await.expect("wait").success());
            sandboxed.push(started.elapsed());
        }
    });
    let (d, s) = (median(direct), median(sandboxed));
    println!("bash -c true, median of 100:");
    println!("  direct     {:>7.2} ms", d.as_secs_f64() * 1e3);
    println!("  sandboxed  {:>7.2} ms", s.as_secs_f64() * 1e3);
    println!("  overhead   {:>7.2} ms", (s.as_secs_f64() - d.as_secs_f64()) * 1e3);
}
