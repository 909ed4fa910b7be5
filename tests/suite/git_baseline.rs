//! git's own blobs as checkpoint baselines, against real repositories made with the git CLI:
//! clean files are referenced, not copied; modified, untracked, converted (LFS-style filter,
//! CRLF) files are stored; packed objects and a `.git` file (worktree) are read; a pruned
//! object is a listed failure unless the turn's end copied it; brute never writes to `.git`.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use brute::session::checkpoint::{self, Held, Manifest, MissingContent, Scanner};
use brute::session::objects::ObjectStore;
use brute::session::{Recorder, SessionStore};

/// Whether the git CLI is here; under CI its absence fails the test.
fn have_git() -> bool {
    let ok = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "git is needed for these tests");
        eprintln!("skipped: no git");
    }
    ok
}

/// Runs git in `dir` with a fixed identity and no system or global configuration.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository in a temp dir with an initial commit of `files`.
fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    for (path, content) in files {
        write(dir.path(), path, content);
    }
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-qm", "init"]);
    dir
}

/// Writes a file with an mtime a minute old: an entry git indexes next is then not racy (a
/// file written within the same clock tick as the index would be, by chance).
fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(past)
        .unwrap();
}

/// Every file under `dir` with its bytes and mtime: `.git` before and after must be equal.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                let bytes = std::fs::read(entry.path()).unwrap_or_default();
                out.insert(entry.path(), (bytes, meta.modified().unwrap()));
            }
        }
    }
    out
}

fn store(data: &Path, root: &Path) -> ObjectStore {
    ObjectStore::new(data.join("objects")).with_git(root)
}

fn is_git(manifest: &Manifest, path: &str) -> bool {
    manifest[path].id.is_git()
}

/// Bytes stored in brute's store (loose and packed).
fn stored_bytes(objects: &ObjectStore) -> u64 {
    objects.list().iter().map(|(_, size)| size).sum()
}

#[test]
fn clean_files_are_git_references_and_the_rest_is_stored() {
    if !have_git() {
        return;
    }
    let big = "a line of a tracked file\n".repeat(4000);
    let p = repo(&[
        ("clean.txt", "clean\n"),
        ("big.txt", &big),
        ("dir/deep.rs", "fn main() {}\n"),
        ("modified.txt", "before\n"),
        ("staged.txt", "old\n"),
        ("deleted.txt", "bye\n"),
    ]);
    let root = p.path();
    write(root, "modified.txt", "after\n");
    write(root, "staged.txt", "new and staged\n");
    git(root, &["add", "staged.txt"]);
    std::fs::remove_file(root.join("deleted.txt")).unwrap();
    write(root, "untracked.txt", "untracked\n");
    let before_git = snapshot(&root.join(".git"));

    let data = tempfile::tempdir().unwrap();
    let objects = store(data.path(), root);
    let mut scanner = Scanner::new(root.to_path_buf(), objects.clone(), 1 << 20);
    let (id, scan) = scanner.checkpoint().unwrap();
    let m = &scan.manifest;
    for path in ["clean.txt", "big.txt", "dir/deep.rs", "staged.txt"] {
        assert!(is_git(m, path), "{path}: {:?}", m[path]);
    }
    for path in ["modified.txt", "untracked.txt"] {
        assert!(!is_git(m, path), "{path} is stored");
        assert_eq!(
            objects.get(&m[path].id).unwrap(),
            std::fs::read(root.join(path)).unwrap()
        );
    }
    assert!(!m.contains_key("deleted.txt"));
    // The first walk checks small clean files by their hash (reading them, storing nothing);
    // the 100 KB one by its blob's size.
    assert_eq!(scan.hashed, 5, "the changed files and the three small clean ones");
    let again = scanner.checkpoint().unwrap().1;
    assert!(
        again.hashed <= 2,
        "a later walk does not even read clean files: {} read",
        again.hashed
    );
    // Only the two changed files and the manifest were written: not the 100 KB file.
    let manifest_len = objects.get(&id).unwrap().len() as u64;
    assert!(
        stored_bytes(&objects) < manifest_len + 1000,
        "{} bytes stored",
        stored_bytes(&objects)
    );

    // Every file removed, then restored from the checkpoint: byte-identical.
    let now = {
        for path in ["clean.txt", "big.txt", "dir/deep.rs", "staged.txt", "modified.txt"] {
            std::fs::remove_file(root.join(path)).unwrap();
        }
        scanner.scan().unwrap().manifest
    };
    let changes = checkpoint::diff(m, &now);
    let report = checkpoint::apply(root, &objects, &changes, &Held::default(), &now, true, false, false).unwrap();
    assert_eq!(report.moved.len(), 5, "{report:?}");
    assert_eq!(std::fs::read_to_string(root.join("big.txt")).unwrap(), big);
    assert_eq!(
        std::fs::read_to_string(root.join("staged.txt")).unwrap(),
        "new and staged\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("dir/deep.rs")).unwrap(),
        "fn main() {}\n"
    );
    assert_eq!(snapshot(&root.join(".git")), before_git, "brute never writes to .git");
}

#[test]
fn packed_objects_with_deltas_and_packed_refs_are_read() {
    if !have_git() {
        return;
    }
    let v1: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    let p = repo(&[("f.txt", &v1), ("g.txt", "g\n")]);
    let root = p.path();
    let data = tempfile::tempdir().unwrap();
    let objects = store(data.path(), root);
    let mut scanner = Scanner::new(root.to_path_buf(), objects.clone(), 1 << 20);
    let (_, first) = scanner.checkpoint().unwrap();
    assert!(is_git(&first.manifest, "f.txt"));
    // A later version committed and everything packed (v1 becomes a delta or a delta base).
    let v2 = format!("{v1}one more\n");
    write(root, "f.txt", &v2);
    git(root, &["commit", "-qam", "v2"]);
    git(root, &["gc", "-q", "--aggressive"]);
    assert!(root.join(".git/packed-refs").is_file());
    assert!(
        !root.join(".git/objects").read_dir().unwrap().flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.len() == 2 && name != "pa" && name != "in"
        }),
        "no loose objects are left"
    );
    let before_git = snapshot(&root.join(".git"));
    let (_, second) = scanner.checkpoint().unwrap();
    assert!(is_git(&second.manifest, "f.txt"), "the committed v2 is clean too");
    let changes = checkpoint::diff(&first.manifest, &second.manifest);
    assert_eq!(changes.len(), 1);
    let report = checkpoint::apply(
        root,
        &objects,
        &changes,
        &Held::default(),
        &second.manifest,
        true,
        false,
        false,
    )
    .unwrap();
    assert_eq!(report.moved.len(), 1);
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), v1);
    assert_eq!(snapshot(&root.join(".git")), before_git);
}

#[test]
fn an_lfs_style_filter_and_crlf_conversion_are_stored_not_referenced() {
    if !have_git() {
        return;
    }
    let p = repo(&[("plain.txt", "plain\n")]);
    let root = p.path();
    // A fake LFS: the blob is upper case, the checked-out file lower case.
    git(root, &["config", "filter.fake.clean", "tr a-z A-Z"]);
    git(root, &["config", "filter.fake.smudge", "tr A-Z a-z"]);
    write(root, ".gitattributes", "*.bin filter=fake\n*.crlf text eol=crlf\n");
    write(root, "data.bin", "large media\n");
    write(root, "digits.bin", "1234\n");
    write(root, "win.crlf", "one\ntwo\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "attrs"]);
    // Checked out again, so the work tree holds what the filters make.
    for path in ["data.bin", "win.crlf"] {
        std::fs::remove_file(root.join(path)).unwrap();
    }
    git(root, &["checkout", "--", "data.bin", "win.crlf"]);
    assert_eq!(std::fs::read(root.join("win.crlf")).unwrap(), b"one\r\ntwo\r\n");
    assert_eq!(git(root, &["status", "--porcelain"]), "", "git calls it clean");
    let blob = git(root, &["cat-file", "-p", "HEAD:data.bin"]);
    assert_eq!(blob, "LARGE MEDIA\n");

    let data = tempfile::tempdir().unwrap();
    let objects = store(data.path(), root);
    let mut scanner = Scanner::new(root.to_path_buf(), objects.clone(), 1 << 20);
    let (_, scan) = scanner.checkpoint().unwrap();
    let m = &scan.manifest;
    assert!(is_git(m, "plain.txt"));
    assert!(!is_git(m, "data.bin"), "a filtered file is stored");
    assert!(!is_git(m, "win.crlf"), "a converted file is stored");
    assert!(
        is_git(m, "digits.bin"),
        "a filtered path whose bytes are the blob's is referenced"
    );
    assert_eq!(objects.get(&m["data.bin"].id).unwrap(), b"large media\n");
    assert_eq!(objects.get(&m["win.crlf"].id).unwrap(), b"one\r\ntwo\r\n");
    // The attributes deleted from the work tree (not from the index) still count.
    std::fs::rename(root.join(".gitattributes"), root.join("attributes.bak")).unwrap();
    let mut fresh = Scanner::new(root.to_path_buf(), objects.clone(), 1 << 20);
    let (_, scan) = fresh.checkpoint().unwrap();
    assert!(!is_git(&scan.manifest, "data.bin"), "the index's .gitattributes counts");
    std::fs::rename(root.join("attributes.bak"), root.join(".gitattributes")).unwrap();

    // core.autocrlf=true: every file is hashed before it is referenced.
    git(root, &["config", "core.autocrlf", "true"]);
    std::fs::remove_file(root.join("plain.txt")).unwrap();
    git(root, &["checkout", "--", "plain.txt"]);
    assert_eq!(std::fs::read(root.join("plain.txt")).unwrap(), b"plain\r\n");
    let (_, scan) = scanner.checkpoint().unwrap();
    assert!(!is_git(&scan.manifest, "plain.txt"));
    assert_eq!(objects.get(&scan.manifest["plain.txt"].id).unwrap(), b"plain\r\n");
    // The setting undone since: the file is still CRLF and stat-clean, its blob LF. The
    // blob's size (not the file's when indexed) says a conversion happened.
    git(root, &["config", "core.autocrlf", "false"]);
    let mut fresh = Scanner::new(root.to_path_buf(), objects.clone(), 1 << 20);
    let (_, scan) = fresh.checkpoint().unwrap();
    assert!(!is_git(&scan.manifest, "plain.txt"));
    assert_eq!(objects.get(&scan.manifest["plain.txt"].id).unwrap(), b"plain\r\n");
}

#[test]
fn a_racy_clean_entry_is_hashed_and_then_referenced() {
    if !have_git() {
        return;
    }
    let p = repo(&[("a.txt", "a\n")]);
    let root = p.path();
    // Modified "in the future": at or after the index's own time, so racy for git too.
    write(root, "racy.txt", "racy\n");
    let future = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(root.join("racy.txt"))
        .unwrap()
        .set_modified(future)
        .unwrap();
    git(root, &["add", "racy.txt"]);
    let data = tempfile::tempdir().unwrap();
    let objects = store(data.path(), root);
    let mut scanner = Scanner::new(root.to_path_buf(), objects.clone(), 1 << 20);
    let (_, scan) = scanner.checkpoint().unwrap();
    assert!(is_git(&scan.manifest, "racy.txt"), "{:?}", scan.manifest["racy.txt"]);
    assert!(is_git(&scan.manifest, "a.txt"));
    assert_eq!(scan.hashed, 2, "a first walk reads small files to check them");
    assert_eq!(objects.pack_count(), 0, "nothing was stored for either");
    let (_, scan) = scanner.checkpoint().unwrap();
    assert!(is_git(&scan.manifest, "racy.txt") && is_git(&scan.manifest, "a.txt"));
    assert_eq!(scan.hashed, 1, "the racy file is read again, the clean one not");
}

#[test]
fn a_worktree_with_a_git_file_is_read() {
    if !have_git() {
        return;
    }
    let p = repo(&[("a.txt", "a\n")]);
    let wt_parent = tempfile::tempdir().unwrap();
    let wt = wt_parent.path().join("wt");
    git(p.path(), &["worktree", "add", "-q", wt.to_str().unwrap()]);
    assert!(wt.join(".git").is_file());
    let data = tempfile::tempdir().unwrap();
    let objects = store(data.path(), &wt);
    let mut scanner = Scanner::new(wt.clone(), objects.clone(), 1 << 20);
    let (_, scan) = scanner.checkpoint().unwrap();
    assert!(is_git(&scan.manifest, "a.txt"));
    assert_eq!(objects.get(&scan.manifest["a.txt"].id).unwrap(), b"a\n");
}

#[test]
fn a_linked_git_dir_and_a_fifo_gitattributes_fall_back_to_storing() {
    if !have_git() {
        return;
    }
    let real = repo(&[("a.txt", "a\n")]);
    // A tree whose `.git` is a link to another repository: never used.
    let other = tempfile::tempdir().unwrap();
    write(other.path(), "a.txt", "a\n");
    std::os::unix::fs::symlink(real.path().join(".git"), other.path().join(".git")).unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut scanner = Scanner::new(other.path().to_path_buf(), store(data.path(), other.path()), 1 << 20);
    let (_, scan) = scanner.checkpoint().unwrap();
    assert!(!is_git(&scan.manifest, "a.txt"));
    // A FIFO named .gitattributes is never opened (the scan would block on it).
    let root = real.path();
    let fifo = root.join(".gitattributes");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let mut scanner = Scanner::new(root.to_path_buf(), store(data.path(), root), 1 << 20);
    let (_, scan) = scanner.checkpoint().unwrap();
    assert!(is_git(&scan.manifest, "a.txt"));
}

/// A recorder over `root` with its own data dir.
fn recorder(data: &Path, root: &Path) -> Recorder {
    let store = SessionStore::new(data, root);
    let file = store.create().unwrap();
    Recorder::new(store, file, &Default::default(), 1 << 20)
}

fn reopen(data: &Path, root: &Path) -> Recorder {
    let store = SessionStore::new(data, root);
    let id = store.latest().unwrap();
    let (file, loaded) = store.open(&id).unwrap();
    Recorder::new(store, file, &loaded, 1 << 20)
}

/// Rewrites history so the first version of `f.txt` is unreachable, and prunes it.
fn amend_and_prune(root: &Path) {
    git(root, &["commit", "-qa", "--amend", "-m", "rewritten"]);
    git(root, &["reflog", "expire", "--expire=now", "--all"]);
    git(root, &["gc", "-q", "--prune=now"]);
}

#[test]
fn a_turns_end_copies_the_blobs_it_changed_so_a_pruned_history_still_undoes() {
    if !have_git() {
        return;
    }
    let p = repo(&[("f.txt", "first version\n"), ("g.txt", "untouched\n")]);
    let root = p.path();
    let data = tempfile::tempdir().unwrap();
    let mut rec = recorder(data.path(), root);
    rec.begin_turn("change f", 0).unwrap();
    write(root, "f.txt", "second version\n");
    rec.end_turn(&brute::session::TurnWork::all_by_commands()).unwrap();
    // brute's own prune keeps the copies a kept session's manifests name (git ids included).
    let pruned = brute::session::prune::prune(
        data.path(),
        std::time::Duration::from_secs(3600),
        u64::MAX,
        std::time::Duration::ZERO,
    )
    .unwrap()
    .unwrap();
    assert_eq!(pruned.sessions, 0);
    amend_and_prune(root);
    let mut history = Vec::new();
    let undone = rec.undo(&mut history, false, false, false).unwrap().unwrap();
    assert_eq!(undone.report.moved.len(), 1, "{:?}", undone.report);
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "first version\n");
    let redone = rec.redo(&mut history, false, false).unwrap().unwrap();
    assert_eq!(redone.report.moved.len(), 1);
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "second version\n");
}

#[test]
fn a_pruned_object_no_turn_end_copied_is_a_listed_failure() {
    if !have_git() {
        return;
    }
    let p = repo(&[("f.txt", "first version\n"), ("g.txt", "untouched\n")]);
    let root = p.path();
    let data = tempfile::tempdir().unwrap();
    {
        // A brute killed in the middle of its turn: the end was never recorded.
        let mut rec = recorder(data.path(), root);
        rec.begin_turn("change f", 0).unwrap();
    }
    write(root, "f.txt", "second version\n");
    write(root, "h.txt", "new\n");
    amend_and_prune(root);
    let mut rec = reopen(data.path(), root);
    let mut history = Vec::new();
    let error = rec.undo(&mut history, false, false, false).unwrap_err();
    let missing = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<MissingContent>())
        .unwrap_or_else(|| panic!("{error}"));
    assert_eq!(missing.paths, ["f.txt"]);
    assert!(error.to_string().contains("f.txt"), "{error}");
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "second version\n");
    assert!(root.join("h.txt").exists(), "nothing changed");
    // --partial restores the rest and lists the file.
    let undone = rec.undo(&mut history, false, false, true).unwrap().unwrap();
    assert_eq!(undone.report.missing, ["f.txt"]);
    assert!(!root.join("h.txt").exists());
}

#[test]
fn brute_p_in_a_clean_repository_copies_nothing_big_and_undo_restores_from_git() {
    use predicates::prelude::*;
    use support::{MockServer, Reply, Sandbox, openai_sse};
    if !have_git() {
        return;
    }
    let sb = Sandbox::new();
    let root = sb.project.path();
    let big = "a line of a big tracked file\n".repeat(20_000);
    git(root, &["init", "-q"]);
    write(root, "big.txt", &big);
    write(root, "notes.txt", "mine\n");
    write(root, "other.txt", "other\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "init"]);
    let before = snapshot(&root.join(".git"));
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "s",
            "shell",
            r#"{"command":"echo changed > notes.txt && rm other.txt"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    sb.brute(&server).args(["-p", "change notes"]).assert().success();
    let data = sb.home.path().join("data");
    let stored: u64 = snapshot(&data).values().map(|(bytes, _)| bytes.len() as u64).sum();
    assert!(
        stored < big.len() as u64 / 4,
        "{stored} bytes in the data dir for a {} byte tree",
        big.len()
    );
    sb.bare()
        .args(["undo", "--list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("2 paths changed"));
    sb.bare().arg("undo").assert().success().stdout(
        predicate::str::contains("restored notes.txt (+1 -1)").and(predicate::str::contains("re-created other.txt")),
    );
    assert_eq!(std::fs::read_to_string(root.join("notes.txt")).unwrap(), "mine\n");
    assert_eq!(std::fs::read_to_string(root.join("other.txt")).unwrap(), "other\n");
    sb.bare().arg("redo").assert().success();
    assert_eq!(std::fs::read_to_string(root.join("notes.txt")).unwrap(), "changed\n");
    assert_eq!(snapshot(&root.join(".git")), before, "brute never writes to .git");
}

/// A repository of `files` (f.txt first) where `brute -p` runs `calls` and is killed
/// (SIGKILL) once their results are out, so its turn never ended (nothing was copied then);
/// then a rewrite of history (`commit -a --amend`) and `git gc --prune=now` that really lose
/// f.txt's first blob. Returns the sandbox, for `brute undo`.
fn killed_after_calls_then_pruned(files: &[(&str, &str)], calls: &[(&str, &str, &str)]) -> support::Sandbox {
    killed_after_calls_then_pruned_in(files, calls, false)
}

/// [`killed_after_calls_then_pruned`]; with `earlier`, a run that only answers comes first
/// (the killed one then starts from what that run recorded of the tree).
fn killed_after_calls_then_pruned_in(
    files: &[(&str, &str)],
    calls: &[(&str, &str, &str)],
    earlier: bool,
) -> support::Sandbox {
    use support::{MockServer, Reply, Streaming, openai_sse};
    let sb = support::Sandbox::new();
    let root = sb.project.path();
    git(root, &["init", "-q"]);
    for (path, content) in files {
        write(root, path, content);
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "init"]);
    let first_blob = git(root, &["rev-parse", "HEAD:f.txt"]);
    let server = MockServer::start();
    if earlier {
        server.push(Reply::sse(openai_sse("nothing to do", &[])));
        let out = sb.std_brute(&server).args(["-p", "look"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    server.push(Reply::sse(openai_sse("", calls)));
    // The answer after the calls never comes: brute is killed while it waits for it.
    server.push(Reply::sse(openai_sse("never", &[])).stall());
    let mut run = Streaming::start(sb.std_brute(&server), "change things");
    for _ in calls {
        run.until(|line| line.contains(r#""type":"tool_result""#));
    }
    run.child.kill().unwrap();
    run.child.wait().unwrap();
    assert_ne!(std::fs::read_to_string(root.join("f.txt")).unwrap(), files[0].1);
    amend_and_prune(root);
    assert!(
        !git_succeeds(root, &["cat-file", "-e", first_blob.trim()]),
        "git pruned the first version's blob"
    );
    sb
}

/// Whether a git command succeeds in `dir`.
fn git_succeeds(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A `write` to a clean tracked file, and a recursive `remove` of a tracked directory, copy
/// their git blobs before the files change: with brute killed before its turn's end and git's
/// copies pruned (see [`killed_after_calls_then_pruned`]), `brute undo` still restores
/// everything from brute's store.
#[test]
fn a_write_keeps_the_blob_before_it_changes_the_file_so_a_killed_turn_still_undoes() {
    if !have_git() {
        return;
    }
    let sb = killed_after_calls_then_pruned(
        &[
            ("f.txt", "first version\n"),
            ("g.txt", "untouched\n"),
            ("lib/one.txt", "one\n"),
            ("lib/deep/two.txt", "two\n"),
        ],
        &[
            ("w", "write", r#"{"file_path":"f.txt","content":"second version\n"}"#),
            ("r", "remove", r#"{"path":"lib","recursive":true}"#),
        ],
    );
    let root = sb.project.path();
    assert!(!root.join("lib").exists());
    sb.bare().arg("undo").assert().success();
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "first version\n");
    assert_eq!(std::fs::read_to_string(root.join("lib/deep/two.txt")).unwrap(), "two\n");
    assert_eq!(std::fs::read_to_string(root.join("lib/one.txt")).unwrap(), "one\n");
}

/// The tree the command tests below change: a file, one left alone, and one in a directory.
const COMMAND_FILES: [(&str, &str); 3] = [
    ("f.txt", "first version\n"),
    ("g.txt", "untouched\n"),
    ("lib/one.txt", "one\n"),
];

/// The same for a command: after a `shell` call, the git blobs of the tracked files the file
/// watcher saw it change are copied (all under a directory it moved away), so a `sed -i` and a
/// `mv` of a brute killed before the turn's end are still undone after a history rewrite and
/// `git gc --prune=now`.
#[test]
fn a_command_keeps_the_blobs_of_what_it_changed_so_a_killed_turn_still_undoes() {
    if !have_git() {
        return;
    }
    let sb = killed_after_calls_then_pruned(
        &COMMAND_FILES,
        &[(
            "s",
            "shell",
            r#"{"command":"sed -i 's/first/second/' f.txt && mv lib moved && sed -i 's/one/ONE/' moved/one.txt"}"#,
        )],
    );
    let root = sb.project.path();
    sb.bare().arg("undo").assert().success();
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "first version\n");
    // A directory moved whole says so in one event: what was in it was kept too.
    assert_eq!(std::fs::read_to_string(root.join("lib/one.txt")).unwrap(), "one\n");
    assert!(!root.join("moved").exists());
}

/// The same in a later run of a small project (no file watcher runs: the tree is walked
/// instead): after the command, the files the last walk named by a git blob are looked at
/// again, and the blobs of those it changed are kept.
#[test]
fn a_command_in_a_later_run_of_a_small_tree_keeps_its_blobs_so_a_killed_turn_still_undoes() {
    if !have_git() {
        return;
    }
    let sb = killed_after_calls_then_pruned_in(
        &COMMAND_FILES,
        &[(
            "s",
            "shell",
            r#"{"command":"sed -i 's/first/second/' f.txt && rm -r lib"}"#,
        )],
        true,
    );
    let root = sb.project.path();
    sb.bare().arg("undo").assert().success();
    assert_eq!(std::fs::read_to_string(root.join("f.txt")).unwrap(), "first version\n");
    assert_eq!(std::fs::read_to_string(root.join("lib/one.txt")).unwrap(), "one\n");
}

/// What the check after a command counts as changed, without a watcher: a tracked file edited,
/// one replaced by a FIFO (looked at, never opened: nothing waits on it), one replaced by a
/// link pointing out of the project (not followed), one removed; not one left alone.
#[test]
fn the_check_after_a_command_finds_edited_replaced_and_removed_tracked_files() {
    if !have_git() {
        return;
    }
    let names = ["edited.txt", "fifo.txt", "link.txt", "gone.txt", "kept.txt"];
    // Each its own content: each its own blob.
    let files: Vec<(&str, &str)> = names.iter().map(|n| (*n, *n)).collect();
    let p = repo(&files);
    let root = p.path();
    let data = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "outside\n").unwrap();
    let objects = store(data.path(), root);
    let mut scanner = Scanner::new(root.to_path_buf(), objects, 1 << 20);
    let (_, scan) = scanner.checkpoint().unwrap();
    assert!(names.iter().all(|n| is_git(&scan.manifest, n)));
    let id = |name: &str| scan.manifest[name].id.clone();
    assert_eq!(scanner.git_ids_changed(), Some(Vec::new()), "nothing changed yet");
    std::fs::write(root.join("edited.txt"), "other\n").unwrap();
    std::fs::remove_file(root.join("fifo.txt")).unwrap();
    support::mkfifo(&root.join("fifo.txt"));
    std::fs::remove_file(root.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), root.join("link.txt")).unwrap();
    std::fs::remove_file(root.join("gone.txt")).unwrap();
    let mut changed = scanner.git_ids_changed().expect("a small tree is looked at");
    changed.sort();
    let mut expected: Vec<String> = ["edited.txt", "fifo.txt", "link.txt", "gone.txt"]
        .map(|p| id(p).to_string())
        .to_vec();
    expected.sort();
    assert_eq!(changed, expected);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret")).unwrap(),
        "outside\n"
    );
}

#[test]
fn a_blob_an_earlier_walk_checked_is_not_looked_up_in_git_again() {
    if !have_git() {
        return;
    }
    let p = repo(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let root = p.path();
    let data = tempfile::tempdir().unwrap();
    let objects = store(data.path(), root);
    let (first, scan) = Scanner::new(root.to_path_buf(), objects.clone(), 1 << 20)
        .checkpoint()
        .unwrap();
    assert!(is_git(&scan.manifest, "a.txt") && is_git(&scan.manifest, "b.txt"));
    // a.txt's blob leaves the object database (its loose file is deleted): only a scanner
    // that asks the database can notice.
    let hex = git(root, &["rev-parse", "HEAD:a.txt"]).trim().to_owned();
    std::fs::remove_file(root.join(".git/objects").join(&hex[..2]).join(&hex[2..])).unwrap();
    // A later run, seeded with the last manifest, trusts what that walk checked: the index
    // still names the same blob for a.txt, so the database is not asked again.
    let mut later = Scanner::new(root.to_path_buf(), objects.clone(), 1 << 20);
    later.remember(&objects, &first).unwrap();
    let (_, scan) = later.checkpoint().unwrap();
    assert!(is_git(&scan.manifest, "a.txt"), "{:?}", scan.manifest["a.txt"]);
    assert_eq!(scan.hashed, 0, "nothing was read");
    // A scanner knowing nothing looks the blob up, finds it missing, and stores the file.
    let (_, scan) = Scanner::new(root.to_path_buf(), objects.clone(), 1 << 20)
        .checkpoint()
        .unwrap();
    assert!(!is_git(&scan.manifest, "a.txt"));
    assert_eq!(objects.get(&scan.manifest["a.txt"].id).unwrap(), b"a\n");
    assert!(is_git(&scan.manifest, "b.txt"));
}

#[test]
fn a_command_that_keeps_a_clean_files_size_and_mtime_is_still_seen_and_undone() {
    use support::{MockServer, Reply, Sandbox, openai_sse};
    if !have_git() {
        return;
    }
    let sb = Sandbox::new();
    let root = sb.project.path();
    git(root, &["init", "-q"]);
    write(root, "f.txt", "original");
    write(root, "g.txt", "other\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "init"]);
    let server = MockServer::start();
    // A first run: its last manifest seeds the next one (files reused by metadata).
    server.push(Reply::sse(openai_sse("Nothing to do.", &[])));
    sb.brute(&server).args(["-p", "look"]).assert().success();
    let before = std::fs::symlink_metadata(root.join("f.txt")).unwrap();
    // Same size, and the very same mtime (to the nanosecond) put back: only the ctime and
    // the bytes tell the edit, the racy case git's own stat check guards.
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "s",
            "shell",
            r#"{"command":"cp -p f.txt .ref && printf 'CHANGED!' > f.txt && touch -r .ref f.txt && rm .ref"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    sb.brute(&server).args(["-p", "edit"]).assert().success();
    let after = std::fs::symlink_metadata(root.join("f.txt")).unwrap();
    assert_eq!(std::fs::read(root.join("f.txt")).unwrap(), b"CHANGED!");
    assert_eq!(
        (after.len(), after.modified().unwrap()),
        (before.len(), before.modified().unwrap())
    );
    sb.bare()
        .args(["undo", "--list"])
        .assert()
        .success()
        .stdout(predicates::str::contains("  1 path  changed"));
    sb.bare().arg("undo").assert().success();
    assert_eq!(std::fs::read(root.join("f.txt")).unwrap(), b"original");
    assert_eq!(std::fs::read(root.join("g.txt")).unwrap(), b"other\n");
}
