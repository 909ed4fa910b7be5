//! What the session benches share: timing helpers, a project of old Rust files, and git run
//! apart from the person's configuration.
// Each bench uses its own part of these.
#![allow(dead_code)]

use std::path::Path;
use std::time::{Duration, SystemTime};

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The path of source file `i` in a project made by [`old_project`] with `per_dir` files a
/// directory.
pub fn source_file(i: usize, per_dir: usize) -> String {
    format!("src/m{:03}/f{i:05}.rs", i / per_dir)
}

/// Writes `files` source files of about 1 KB under `dir`, their mtimes an hour old: real
/// projects' files are not all brand new, and new files are re-read to be safe.
pub fn old_project(dir: &Path, files: usize, per_dir: usize) {
    let old = SystemTime::now() - Duration::from_secs(3600);
    for i in 0..files {
        let path = dir.join(source_file(i, per_dir));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(
            &path,
            format!("// file {i}\n{}", "pub fn f() -> u32 { 42 }\n".repeat(40)),
        )
        .expect("write");
        std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(old))
            .expect("mtime");
    }
}

/// `git args` in `root` with no user or system config, no detached maintenance (it would hold
/// gc's lock when the bench runs `git gc`) and a fixed author; output discarded.
pub fn git(root: &Path, args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new("git");
    cmd.args(args)
        .current_dir(root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_COUNT", "3")
        .env("GIT_CONFIG_KEY_0", "gc.autoDetach")
        .env("GIT_CONFIG_VALUE_0", "false")
        .env("GIT_CONFIG_KEY_1", "maintenance.autoDetach")
        .env("GIT_CONFIG_VALUE_1", "false")
        .env("GIT_CONFIG_KEY_2", "maintenance.auto")
        .env("GIT_CONFIG_VALUE_2", "false")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    cmd
}
