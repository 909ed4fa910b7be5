//! Every built-in tool, in temp dirs, through the real registry and executor: each behaviour
//! and each bad input of the TOOLS.md table.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use serde_json::json;
use support::Harness;

fn h() -> Harness {
    Harness::new(Vec::new())
}

// ---------- read ----------

#[test]
fn read_numbers_lines_and_pages() {
    let h = h();
    let text: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
    h.write("big.txt", &text);
    let (out, err) = h.call("read", json!({"file_path": "big.txt"}));
    assert!(!err);
    assert!(out.starts_with("1\tline 1\n2\tline 2\n"));
    assert!(out.contains("2000\tline 2000\n"));
    assert!(!out.contains("2001\tline 2001"));
    assert!(
        out.ends_with("(Showing lines 1-2000 of 2500. Use start_line=2001 to continue.)"),
        "{}",
        &out[out.len() - 100..]
    );
    let (out, _) = h.call("read", json!({"file_path": "big.txt", "start_line": 2001}));
    assert!(out.starts_with("2001\tline 2001\n"));
    assert!(out.ends_with("2500\tline 2500\n"), "no hint when nothing remains");
    let (out, _) = h.call(
        "read",
        json!({"file_path": "big.txt", "start_line": 10, "end_line": 12}),
    );
    assert_eq!(out, "10\tline 10\n11\tline 11\n12\tline 12\n");
}

#[test]
fn read_cuts_long_lines_and_respects_the_byte_cap() {
    let h = h();
    h.write("long.txt", format!("{}\nshort\n", "x".repeat(5000)));
    let (out, _) = h.call("read", json!({"file_path": "long.txt"}));
    assert!(out.contains("… [line truncated: 5000 chars]"));
    assert!(out.contains("2\tshort"));
    let wide: String = (1..=1000).map(|i| format!("{i:04}{}\n", "y".repeat(196))).collect();
    h.write("wide.txt", &wide);
    let (out, _) = h.call("read", json!({"file_path": "wide.txt"}));
    assert!(out.len() <= 51_200, "{} bytes", out.len());
    let last = out.lines().rfind(|l| l.contains('\t')).unwrap();
    let shown: usize = last.split('\t').next().unwrap().parse().unwrap();
    assert!(shown > 200 && shown < 1000);
    assert!(out.ends_with(&format!(
        "(Showing lines 1-{shown} of 1000. Use start_line={} to continue.)",
        shown + 1
    )));
}

#[test]
fn read_lists_directories() {
    let h = h();
    h.write("b.txt", "");
    h.write("a/inner.txt", "");
    h.write(".hidden", "");
    let (out, err) = h.call("read", json!({"file_path": "."}));
    assert!(!err);
    assert_eq!(out.lines().skip(1).collect::<Vec<_>>(), ["a/", "b.txt"]);
    for i in 0..2005 {
        h.write(&format!("many/f{i:05}"), "");
    }
    let (out, _) = h.call("read", json!({"file_path": "many"}));
    assert!(out.starts_with("many: 2005 entries"));
    assert!(out.ends_with("(5 more entries not shown)\n"));
}

#[test]
fn read_refuses_binary_and_suggests_names() {
    let h = h();
    h.write("data.bin", b"abc\0def");
    h.write("image.png", b"not really a png");
    h.write("src/main.rs", "fn main() {}\n");
    let (out, err) = h.call("read", json!({"file_path": "data.bin"}));
    assert!(
        err && out.starts_with("Error: BinaryFile: data.bin is a binary file"),
        "{out}"
    );
    let (out, err) = h.call("read", json!({"file_path": "image.png"}));
    assert!(err && out.contains("BinaryFile"));
    let (out, err) = h.call("read", json!({"file_path": "src/mian.rs"}));
    assert!(err);
    assert_eq!(
        out,
        "Error: NotFound: File not found: src/mian.rs. Did you mean: src/main.rs?"
    );
    let (out, _) = h.call("read", json!({"file_path": "elsewhere/main.rs"}));
    assert!(out.contains("Did you mean: src/main.rs?"), "same name elsewhere: {out}");
}

#[test]
fn read_decodes_invalid_utf8_lossily_and_checks_ranges() {
    let h = h();
    h.write("latin1.txt", b"caf\xe9\n");
    let (out, err) = h.call("read", json!({"file_path": "latin1.txt"}));
    assert!(!err);
    assert_eq!(out, "1\tcaf\u{fffd}\n");
    h.write("empty.txt", "");
    assert_eq!(
        h.call("read", json!({"file_path": "empty.txt"})).0,
        "(empty.txt is empty)"
    );
    // Out of range: lines anyway, with a note saying what was shown instead.
    let (out, err) = h.call("read", json!({"file_path": "latin1.txt", "start_line": 1000}));
    assert!(!err, "{out}");
    assert!(out.starts_with("1\tcaf\u{fffd}\n"), "{out}");
    assert!(
        out.contains("start_line 1000 is past the end of latin1.txt, which has 1 line; showing its last lines 1-1"),
        "{out}"
    );
    h.write("ten.txt", (1..=10).map(|i| format!("line {i}\n")).collect::<String>());
    let (out, err) = h.call(
        "read",
        json!({"file_path": "ten.txt", "start_line": 50, "end_line": 52}),
    );
    assert!(!err && out.starts_with("8\tline 8\n9\tline 9\n10\tline 10\n"), "{out}");
    let (out, err) = h.call("read", json!({"file_path": "ten.txt", "start_line": 4, "end_line": 2}));
    assert!(!err && out.starts_with("2\tline 2\n3\tline 3\n4\tline 4\n"), "{out}");
    assert!(out.contains("were reversed; showing lines 2-4"), "{out}");
    let (out, err) = h.call("read", json!({"file_path": "ten.txt", "start_line": 0, "end_line": 1}));
    assert!(!err && out.starts_with("1\tline 1\n"), "{out}");
    assert!(out.contains("start_line 0 is not a line number"), "{out}");
    let (out, err) = h.call(
        "read",
        json!({"file_path": "ten.txt", "start_line": 9, "end_line": 400}),
    );
    assert!(!err && out.starts_with("9\tline 9\n10\tline 10\n"), "{out}");
    assert!(
        out.contains("end_line 400 is past the end of ten.txt, which has 10 lines"),
        "{out}"
    );
}

// ---------- write ----------

#[test]
fn write_creates_dirs_atomically_with_a_diff_and_keeps_permissions() {
    let h = h();
    let (out, err) = h.call(
        "write",
        json!({"file_path": "deep/new/file.txt", "content": "one\ntwo\n"}),
    );
    assert!(!err, "{out}");
    assert!(out.starts_with("Created deep/new/file.txt (8 bytes)."));
    assert!(out.contains("+one\n+two\n"));
    assert_eq!(h.read("deep/new/file.txt"), "one\ntwo\n");
    h.write("run.sh", "#!/bin/sh\necho a\n");
    std::fs::set_permissions(h.path("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (out, _) = h.call(
        "write",
        json!({"file_path": "run.sh", "content": "#!/bin/sh\necho b\n"}),
    );
    assert!(out.contains("-echo a\n+echo b"));
    assert_eq!(
        std::fs::metadata(h.path("run.sh")).unwrap().permissions().mode() & 0o777,
        0o755
    );
    let leftovers: Vec<_> = std::fs::read_dir(h.root())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".brute-"))
        .collect();
    assert!(leftovers.is_empty(), "no temp files left behind");
    let (out, err) = h.call("write", json!({"file_path": "deep", "content": "x"}));
    assert!(err && out.contains("is a directory"));
    let (out, err) = h.call("write", json!({"file_path": "x.txt"}));
    assert!(err && out.contains("\"content\" is a required property"), "{out}");
}

// ---------- patch ----------

#[test]
fn patch_replaces_literally_and_uniquely() {
    let h = h();
    h.write("a.txt", "price = $1 * (x+y)\nkeep\n");
    let (out, err) = h.call(
        "patch",
        json!({"file_path": "a.txt", "old_string": "$1 * (x+y)", "new_string": "$2 \\1"}),
    );
    assert!(!err, "{out}");
    assert_eq!(h.read("a.txt"), "price = $2 \\1\nkeep\n");
    h.write("dup.txt", "x\nx\nx\n");
    let (out, err) = h.call(
        "patch",
        json!({"file_path": "dup.txt", "old_string": "x", "new_string": "y"}),
    );
    assert!(
        err && out.contains("occurs 3 times") && out.contains("more surrounding context"),
        "{out}"
    );
    assert_eq!(h.read("dup.txt"), "x\nx\nx\n", "nothing changed");
    let (out, _) = h.call(
        "patch",
        json!({"file_path": "dup.txt", "old_string": "x", "new_string": "y", "replace_all": true}),
    );
    assert!(out.starts_with("Replaced 3 occurrences in dup.txt."));
    assert_eq!(h.read("dup.txt"), "y\ny\ny\n");
    let (out, err) = h.call(
        "patch",
        json!({"file_path": "dup.txt", "old_string": "zzz", "new_string": "y"}),
    );
    assert!(err && out.starts_with("Error: NoMatch: old_string was not found in dup.txt"));
    let (out, err) = h.call(
        "patch",
        json!({"file_path": "dup.txt", "old_string": "", "new_string": "y"}),
    );
    assert!(err && out.contains("old_string is empty"));
    let (out, err) = h.call(
        "patch",
        json!({"file_path": "dup.txt", "old_string": "y", "new_string": "y"}),
    );
    assert!(err && out.contains("identical"));
    let (out, err) = h.call(
        "patch",
        json!({"file_path": "nope.txt", "old_string": "a", "new_string": "b"}),
    );
    assert!(err && out.contains("NotFound"));
}

#[test]
fn patch_keeps_crlf_line_endings() {
    let h = h();
    h.write("win.txt", "first\r\nsecond\r\nthird\r\n");
    let (out, err) = h.call(
        "patch",
        json!({"file_path": "win.txt", "old_string": "first\nsecond", "new_string": "1st\n2nd"}),
    );
    assert!(!err, "{out}");
    assert_eq!(h.read("win.txt"), "1st\r\n2nd\r\nthird\r\n");
}

// ---------- remove and undo ----------

#[test]
fn remove_and_undo_files_and_trees() {
    let h = h();
    h.write("f.txt", "content\n");
    std::fs::set_permissions(h.path("f.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let (out, err) = h.call("remove", json!({"path": "f.txt"}));
    assert!(!err, "{out}");
    assert!(!h.path("f.txt").exists());
    let (out, err) = h.call("undo", json!({"path": "f.txt"}));
    assert!(!err, "{out}");
    assert_eq!(out, "f.txt: re-created\n");
    assert_eq!(h.read("f.txt"), "content\n");
    assert_eq!(
        std::fs::metadata(h.path("f.txt")).unwrap().permissions().mode() & 0o777,
        0o600
    );

    h.write("tree/a.txt", "a");
    h.write("tree/sub/b.txt", "b");
    std::fs::create_dir_all(h.path("tree/empty")).unwrap();
    let (out, err) = h.call("remove", json!({"path": "tree"}));
    assert!(
        err && out.contains("not empty") && out.contains("recursive=true"),
        "{out}"
    );
    let (out, err) = h.call("remove", json!({"path": "tree", "recursive": true}));
    assert!(!err && out.contains("(2 files)"), "{out}");
    assert!(!h.path("tree").exists());
    let (_, err) = h.call("undo", json!({"path": "tree"}));
    assert!(!err);
    assert_eq!(h.read("tree/a.txt"), "a");
    assert_eq!(h.read("tree/sub/b.txt"), "b");
    assert!(h.path("tree/empty").is_dir());
    let (out, err) = h.call("remove", json!({"path": "ghost"}));
    assert!(err && out.contains("NotFound"));
    let (out, err) = h.call("remove", json!({"path": "."}));
    assert!(err && out.contains("project root"), "{out}");
}

#[test]
fn undo_walks_back_any_mutation() {
    let h = h();
    let (out, err) = h.call("undo", json!({"path": "x.txt"}));
    assert!(err && out.contains("no changes to x.txt"), "{out}");
    h.call("write", json!({"file_path": "x.txt", "content": "v1\n"}));
    h.call("write", json!({"file_path": "x.txt", "content": "v2\n"}));
    h.call(
        "patch",
        json!({"file_path": "x.txt", "old_string": "v2", "new_string": "v3"}),
    );
    // A failed patch changes nothing and leaves no history step.
    h.call(
        "patch",
        json!({"file_path": "x.txt", "old_string": "absent", "new_string": "v4"}),
    );
    assert_eq!(h.read("x.txt"), "v3\n");
    h.call("undo", json!({"path": "x.txt"}));
    assert_eq!(h.read("x.txt"), "v2\n");
    h.call("undo", json!({"path": "x.txt"}));
    assert_eq!(h.read("x.txt"), "v1\n");
    let (out, _) = h.call("undo", json!({"path": "x.txt"}));
    assert_eq!(out, "x.txt: deleted (it did not exist before)\n");
    assert!(!h.path("x.txt").exists());
}

// ---------- fs_search ----------

#[test]
fn search_respects_ignores_and_orders_newest_first() {
    let h = h();
    h.write(".gitignore", "ignored/\n");
    h.write("ignored/x.rs", "needle\n");
    h.write(".hidden/x.rs", "needle\n");
    h.write("bin.dat", b"needle\0\0");
    h.write("old.rs", "fn a() {}\n// needle here\n");
    let old = std::fs::File::options().write(true).open(h.path("old.rs")).unwrap();
    old.set_modified(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000))
        .unwrap();
    h.write("new.rs", "needle\n");
    let (out, err) = h.call("fs_search", json!({"pattern": "needle"}));
    assert!(!err, "{out}");
    assert_eq!(out, "new.rs:1:needle\nold.rs:2:// needle here\n");
    let (out, _) = h.call(
        "fs_search",
        json!({"pattern": "NEEDLE", "ignore_case": true, "glob": "old.*"}),
    );
    assert_eq!(out, "old.rs:2:// needle here\n");
    let (out, _) = h.call("fs_search", json!({"pattern": "absent"}));
    assert_eq!(out, "No matches for `absent` in ..");
    let (out, err) = h.call("fs_search", json!({"pattern": "(unclosed"}));
    assert!(
        err && out.starts_with("Error: InvalidArguments: invalid regex `(unclosed`"),
        "{out}"
    );
    let (out, err) = h.call("fs_search", json!({}));
    assert!(err && out.contains("give a `pattern`"));
    let (out, err) = h.call("fs_search", json!({"pattern": "x", "path": "nowhere"}));
    assert!(err && out.contains("NotFound"));
}

#[test]
fn search_caps_matches_and_lists_files_by_glob() {
    let h = h();
    let many: String = (0..150).map(|i| format!("hit {i}\n")).collect();
    h.write("many.txt", &many);
    h.write("other.txt", "hit\n");
    let (out, _) = h.call("fs_search", json!({"pattern": "hit"}));
    assert_eq!(out.lines().filter(|l| l.contains(":hit")).count(), 100);
    assert!(
        out.ends_with("(Showing 100 of 151 matches in 2 files. Narrow the pattern, path or glob to see the rest.)\n"),
        "{out}"
    );
    h.write("src/a.ts", "");
    h.write("src/b.js", "");
    h.write("src/c.rs", "");
    let (out, _) = h.call("fs_search", json!({"glob": "*.{js,ts}"}));
    let mut files: Vec<&str> = out.lines().collect();
    files.sort();
    assert_eq!(files, ["src/a.ts", "src/b.js"]);
    let (out, _) = h.call("fs_search", json!({"glob": "*.py"}));
    assert!(out.starts_with("No files match"));
}

/// Where the regex engine is slow: random bits, 200 to a line, searched for `BITS_PATTERN`.
/// A `1` twenty-one places before the end is 2^21 lazy-DFA states, so the engine keeps
/// rebuilding its cache: about 2 µs a byte in a debug build, 65 ns in release, so the 32 MB
/// file takes over a minute (debug) or about 2 s (release). The first and last lines match.
const BITS_PATTERN: &str = "[01]*1[01]{20}2";
const BITS_HIT: &str = "1000000000000000000002";

fn write_bits(h: &Harness) -> (std::path::PathBuf, usize) {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut block = String::new();
    while block.len() < 256 << 10 {
        block.extend((0..200).map(|_| if rng.bool() { '1' } else { '0' }));
        block.push('\n');
    }
    let mut text = format!("{BITS_HIT}\n");
    for _ in 0..128 {
        text.push_str(&block);
    }
    text.push_str(BITS_HIT);
    text.push('\n');
    let lines = text.lines().count();
    h.write("bits.txt", &text);
    (h.path("bits.txt"), lines)
}

#[test]
fn search_stops_at_its_time_budget_with_what_it_found() {
    let h = Harness::new(vec![std::sync::Arc::new(
        brute::tool::fs_search::SearchTool::with_budget(Duration::from_millis(500)),
    )]);
    let (_, lines) = write_bits(&h);
    let started = Instant::now();
    let (out, err) = h.call("fs_search", json!({"pattern": BITS_PATTERN}));
    eprintln!("stopped after {:?}", started.elapsed());
    assert!(!err, "{out}");
    assert!(
        !out.contains(&format!("bits.txt:{lines}:")),
        "the last line is not reached: the search stopped inside the file\n{out}"
    );
    assert_eq!(
        out,
        format!(
            "bits.txt:1:{BITS_HIT}\n\n(Stopped by the 500ms time budget: 1 match in 1 file found so far. Narrow the path or glob, or simplify the pattern.)\n"
        )
    );
}

/// Watches a file for reads (inotify), so a test can act once a search is inside it.
struct ReadWatch(libc::c_int);

impl ReadWatch {
    fn new(path: &std::path::Path) -> Self {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: plain syscalls on a descriptor this struct owns and a NUL-terminated path.
        unsafe {
            let fd = libc::inotify_init1(libc::IN_CLOEXEC);
            assert!(fd >= 0, "inotify_init1");
            assert!(libc::inotify_add_watch(fd, path.as_ptr(), libc::IN_ACCESS) >= 0);
            Self(fd)
        }
    }

    /// Blocks until the file is read from; false if `timeout` passes first.
    fn wait(&self, timeout: Duration) -> bool {
        let mut poll = libc::pollfd {
            fd: self.0,
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut poll, 1, millis) == 1 }
    }
}

impl Drop for ReadWatch {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

#[test]
fn an_interrupt_stops_a_search_inside_a_big_file() {
    // `search` is called directly: the executor would abandon a blocking search that ignores
    // the interrupt (leaving it to burn CPU), and this checks that the search itself stops.
    use brute::tool::fs_search::{DEFAULT_BUDGET, Query, Stop, search};
    let h = h();
    let (path, _) = write_bits(&h);
    let query = Query {
        pattern: Some(BITS_PATTERN.to_owned()),
        glob: None,
        ignore_case: false,
        path: h.root(),
        root: h.root(),
    };
    let watch = ReadWatch::new(&path);
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = Stop::new(cancel.clone(), DEFAULT_BUDGET);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || done_tx.send(search(&query, &stop)));
    assert!(watch.wait(Duration::from_secs(10)), "the search reads the file");
    cancel.cancel();
    let result = done_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the search stops when interrupted");
    let error = result.unwrap_err();
    assert_eq!(
        (error.kind.as_str(), error.message.as_str()),
        ("Interrupted", "the search was interrupted")
    );
}

#[test]
fn search_refuses_a_regex_too_big_to_compile() {
    let h = h();
    h.write("a.txt", "text\n");
    for pattern in [r"(\w{100}){100}", r"\w{1000}"] {
        let (out, err) = h.call("fs_search", json!({"pattern": pattern}));
        assert!(err, "{out}");
        assert!(
            out.starts_with(&format!(
                "Error: InvalidArguments: the regex `{pattern}` is too big once compiled (over 10 MB)"
            )),
            "{out}"
        );
        assert!(out.contains("Simplify it"), "{out}");
    }
}

#[test]
fn search_splits_very_long_lines_and_keeps_line_numbers() {
    let h = h();
    h.write("long.txt", format!("{}needle\nneedle\n", "x".repeat(1_000_000)));
    let (out, err) = h.call("fs_search", json!({"pattern": "needle"}));
    assert!(!err, "{out}");
    assert_eq!(out, format!("long.txt:1:{}…\nlong.txt:2:needle\n", "x".repeat(500)));
}

// ---------- shell ----------

#[test]
fn shell_reports_streams_and_exit_codes() {
    let h = h();
    let (out, err) = h.call("shell", json!({"command": "echo out; echo err >&2; exit 3"}));
    assert!(!err);
    assert_eq!(out, "out\nSTDERR:\nerr\n[exit code: 3]");
    std::fs::create_dir_all(h.path("sub")).unwrap();
    let (out, _) = h.call("shell", json!({"command": "pwd", "cwd": "sub"}));
    assert!(out.trim_end().ends_with("/sub"));
    let (out, _) = h.call("shell", json!({"command": "true"}));
    assert_eq!(out, "(no output)");
    let (out, _) = h.call("shell", json!({"command": "read x; echo \"[$x]\""}));
    assert_eq!(out, "[]\n", "stdin is empty");
    let events = h.drain_events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, brute::protocol::Event::ToolOutputDelta { chunk, .. } if chunk.contains("out")))
    );
}

#[test]
fn shell_keeps_the_end_of_long_output() {
    let h = h();
    let (out, _) = h.call("shell", json!({"command": "seq 1 5000"}));
    assert!(
        out.starts_with("[Output truncated: showing the last 2000 of 5000 lines."),
        "{}",
        &out[..200]
    );
    assert!(out.ends_with("4999\n5000"));
}

fn processes_with(marker: &str) -> usize {
    processes(|cmdline| cmdline.contains(marker))
}

fn processes(matches: impl Fn(&str) -> bool) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| matches(&String::from_utf8_lossy(&c)))
                .unwrap_or(false)
        })
        .count()
}

#[test]
fn a_timed_out_command_leaves_no_process_behind() {
    let h = h();
    let marker = "4242.4242";
    let started = Instant::now();
    let (out, err) = h.call(
        "shell",
        json!({"command": format!("echo begun; (sleep {marker} &); sleep {marker} & sleep {marker}"), "timeout": 1}),
    );
    assert!(err);
    assert!(
        out.starts_with("Error: Timeout: begun\n[timed out after 1 s; the command and its process group were killed"),
        "{out}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(processes_with(marker), 0, "children and grandchildren were killed");
}

#[test]
fn eight_sleeps_run_concurrently() {
    let h = h();
    let calls: Vec<(&str, serde_json::Value)> = (0..8)
        .map(|_| ("shell", json!({"command": "sleep 1; echo done"})))
        .collect();
    let started = Instant::now();
    let records = h.batch(&calls);
    let elapsed = started.elapsed();
    assert!(records.iter().all(|r| r.result.content == "done\n"));
    assert!(elapsed < Duration::from_millis(1900), "took {elapsed:?}");
}

#[test]
fn interrupt_kills_the_command_and_answers_every_call() {
    let h = h();
    let cancel = tokio_util::sync::CancellationToken::new();
    let trigger = cancel.clone();
    let marker = "4343.4343";
    std::thread::spawn(move || {
        // Cancel once the command is surely past its echo: poll for the `sleep` process.
        while processes(|c| c.starts_with("sleep\0") && c.contains(marker)) == 0 {
            std::thread::yield_now();
        }
        trigger.cancel();
    });
    let records = h.batch_cancellable(
        &[
            ("shell", json!({"command": format!("echo so-far; sleep {marker}")})),
            ("read", json!({"file_path": "."})),
        ],
        cancel,
    );
    assert_eq!(records.len(), 2);
    assert!(records[0].result.is_error);
    assert!(
        records[0].result.content.starts_with("Error: Interrupted: so-far\n"),
        "{}",
        records[0].result.content
    );
    assert_eq!(processes_with(marker), 0);
}

// ---------- todo ----------

#[test]
fn todos_are_validated_and_shared() {
    let h = h();
    let (out, err) = h.call(
        "todo_write",
        json!({"todos": [{"id": "1", "content": "write tests", "status": "in_progress"}, {"id": "2", "content": "ship", "status": "pending"}]}),
    );
    assert!(!err, "{out}");
    assert_eq!(h.call("todo_read", json!({})).0, "[~] 1: write tests\n[ ] 2: ship\n");
    assert!(
        h.drain_events()
            .iter()
            .any(|e| matches!(e, brute::protocol::Event::TodosUpdated { todos } if todos.len() == 2))
    );
    let (out, err) = h.call(
        "todo_write",
        json!({"todos": [{"id": "1", "content": "a", "status": "done"}]}),
    );
    assert!(err && out.contains("InvalidArguments"), "{out}");
    let (out, err) = h.call("todo_write", json!({"todos": [{"id": "1", "content": "a", "status": "pending"}, {"id": "1", "content": "b", "status": "pending"}]}));
    assert!(err && out.contains("appears twice"));
    assert_eq!(h.executor.agent().todos().len(), 2, "a rejected list changes nothing");
}

// ---------- skill ----------

#[test]
fn skills_load_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let skill_dir = dir.path().join(".brute/skills/pdf");
    std::fs::create_dir_all(skill_dir.join("scripts")).unwrap();
    std::fs::write(
        skill_dir.join("SKILL.md"),
        "---\nname: pdf-tools\ndescription: Work with PDFs\n---\n# Use pdftotext\n",
    )
    .unwrap();
    std::fs::write(skill_dir.join("scripts/extract.sh"), "pdftotext \"$1\"\n").unwrap();
    let skills = brute::tool::skills::discover(&brute::tool::skills::dirs(dir.path(), None, None)).skills;
    let provider = std::sync::Arc::new(brute::provider::replay::ReplayProvider::from_script("").unwrap());
    let state = std::sync::Arc::new(
        brute::tool::state::AgentState::new(provider, "m".into(), 10, dir.path().to_path_buf()).with_skills(skills),
    );
    let (sink, _rx) = brute::protocol::EventSink::channel();
    let ctx = brute::tool::ToolContext::standalone(state, sink);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    use brute::tool::Tool;
    let out = runtime
        .block_on(brute::tool::skill::SkillTool.call(json!({"name": "pdf-tools"}), &ctx))
        .unwrap();
    assert!(out.content.starts_with("# Skill: pdf-tools\n"));
    assert!(out.content.contains("# Use pdftotext"));
    assert!(!out.content.contains("description:"), "front matter is stripped");
    assert!(out.content.contains("- scripts/extract.sh"));
    let err = runtime
        .block_on(brute::tool::skill::SkillTool.call(json!({"name": "nope"}), &ctx))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "NotFound: no skill named `nope`. Available skills: pdf-tools"
    );
}

// ---------- the executor ----------

#[test]
fn writes_to_one_file_are_serialized_in_call_order_and_different_files_run_in_parallel() {
    use brute::tool::{Params, ToolOutput, fn_tool};
    let slow_append = fn_tool(
        "slow_append",
        "appends after a pause",
        Params::new()
            .string("path", "file", true)
            .string("text", "what", true)
            .integer("ms", "pause", true)
            .build(),
        |args, ctx| async move {
            tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0))).await;
            let path = ctx.resolve(args["path"].as_str().unwrap_or_default());
            let mut text = std::fs::read_to_string(&path).unwrap_or_default();
            text.push_str(args["text"].as_str().unwrap_or_default());
            std::fs::write(&path, text).map_err(|e| brute::tool::ToolError::io("write", &e))?;
            Ok(ToolOutput::text("ok"))
        },
    )
    .mutating("path");
    let queued = brute::tool::Pipeline::new(std::sync::Arc::new(slow_append)).layer(brute::tool::adapter::FileQueue);
    let h = Harness::new(vec![std::sync::Arc::new(queued)]);
    std::fs::create_dir_all(h.path("sub")).unwrap();
    // The first call is the slowest: without the queue it would append last.
    let calls = [
        ("slow_append", json!({"path": "same.txt", "text": "1", "ms": 300})),
        ("slow_append", json!({"path": "./same.txt", "text": "2", "ms": 10})),
        ("slow_append", json!({"path": "sub/../same.txt", "text": "3", "ms": 0})),
    ];
    h.batch(&calls);
    assert_eq!(h.read("same.txt"), "123");
    let calls = [
        ("slow_append", json!({"path": "a.txt", "text": "a", "ms": 400})),
        ("slow_append", json!({"path": "b.txt", "text": "b", "ms": 400})),
        ("slow_append", json!({"path": "c.txt", "text": "c", "ms": 400})),
    ];
    let started = Instant::now();
    h.batch(&calls);
    assert!(
        started.elapsed() < Duration::from_millis(1000),
        "different files in parallel: {:?}",
        started.elapsed()
    );
}

#[test]
fn panics_retryable_and_critical_errors() {
    use brute::tool::{Params, ToolError, fn_tool};
    let panicky = fn_tool("panicky", "panics", Params::new().build(), |_, _| async {
        panic!("boom")
    });
    let flaky = fn_tool("flaky", "fails", Params::new().build(), |_, _| async {
        Err(ToolError::new("Network", "connection reset").retryable())
    });
    let fatal = fn_tool("fatal", "aborts", Params::new().build(), |_, _| async {
        Err(ToolError::new("Corrupt", "the index is corrupt").critical())
    });
    let h = Harness::new(vec![
        std::sync::Arc::new(panicky),
        std::sync::Arc::new(flaky),
        std::sync::Arc::new(fatal),
    ]);
    let records = h.batch(&[("panicky", json!({})), ("flaky", json!({})), ("fatal", json!({}))]);
    assert_eq!(records[0].result.content, "Error: Panic: the tool panicked: boom");
    assert_eq!(
        records[1].result.content,
        "Error: Network: connection reset (retryable)"
    );
    assert_eq!(
        records[2].critical.as_deref(),
        Some("Error: Corrupt: the index is corrupt")
    );
}

#[test]
fn undo_after_writing_through_a_symlink_restores_the_target_and_keeps_the_link() {
    let h = support::Harness::new(Vec::new());
    h.write("AGENTS.md", "the real instructions\n");
    std::os::unix::fs::symlink("AGENTS.md", h.path("CLAUDE.md")).unwrap();
    let (out, err) = h.call(
        "write",
        serde_json::json!({"file_path": "CLAUDE.md", "content": "changed\n"}),
    );
    assert!(!err, "{out}");
    assert_eq!(h.read("AGENTS.md"), "changed\n", "written through the link");
    let (out, err) = h.call("undo", serde_json::json!({"path": "CLAUDE.md"}));
    assert!(!err, "{out}");
    assert_eq!(
        h.read("AGENTS.md"),
        "the real instructions\n",
        "the target's content is back"
    );
    assert!(
        std::fs::symlink_metadata(h.path("CLAUDE.md"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::symlink_metadata(h.path("AGENTS.md")).unwrap().is_file(),
        "the target is still a file"
    );
    // Removing a tree with a link deletes the link, not what it points to, and undo brings it
    // back as a link.
    std::fs::create_dir_all(h.path("tree")).unwrap();
    h.write("outside.txt", "keep\n");
    std::os::unix::fs::symlink(h.path("outside.txt"), h.path("tree/link")).unwrap();
    // A link to a directory too: removed as a link, the directory and its files untouched.
    h.write("elsewhere/kept.txt", "kept\n");
    std::os::unix::fs::symlink(h.path("elsewhere"), h.path("tree/dirlink")).unwrap();
    let (out, err) = h.call("remove", serde_json::json!({"path": "tree", "recursive": true}));
    assert!(!err, "{out}");
    assert_eq!(h.read("outside.txt"), "keep\n");
    assert_eq!(h.read("elsewhere/kept.txt"), "kept\n");
    let (out, err) = h.call("undo", serde_json::json!({"path": "tree"}));
    assert!(!err, "{out}");
    assert!(
        std::fs::symlink_metadata(h.path("tree/link"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "{out}"
    );
    assert_eq!(
        std::fs::read_link(h.path("tree/dirlink")).unwrap(),
        h.path("elsewhere"),
        "the directory link is back as a link: {out}"
    );
    assert_eq!(h.read("outside.txt"), "keep\n");
}
