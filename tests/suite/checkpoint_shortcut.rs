//! The incremental checkpoint shortcut: a file whose size, mtime and mode did not change keeps
//! its recorded hash without being read, and a new session seeds that cache from the previous
//! session's last checkpoint. These tests back-date files so the shortcut applies, then check
//! that what it records is still the tree on disk, byte for byte (content and mode): through
//! the scanner itself, and through the real binary (`brute -p` in three processes, a racy
//! edit that keeps the size and puts the old mtime back, then `brute undo` / `brute redo`).

use crate::support;

use std::collections::BTreeMap;
use std::fs::{File, FileTimes};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use brute::session::SessionStore;
use brute::session::checkpoint::{self, Manifest, Scanner};
use brute::session::objects::ObjectStore;
use support::{MockServer, Reply, Sandbox, openai_sse};

/// No run of brute may take longer (it takes well under a second).
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// The mtime every file is back-dated to: long ago, with nanoseconds.
fn old() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::new(1_600_000_000, 123_456_789)
}

/// One path as it is on disk: `None` content for a directory, and the permission bits.
type Tree = BTreeMap<String, (Option<Vec<u8>>, u32)>;

/// Every file and directory under `root`, with content and mode.
fn tree(root: &Path) -> Tree {
    support::tree_snapshot(root)
}

/// Names what differs between two trees (empty when identical).
fn tree_diff(want: &Tree, got: &Tree) -> Vec<String> {
    let show = |e: Option<&(Option<Vec<u8>>, u32)>| match e {
        None => "absent".to_owned(),
        Some((None, mode)) => format!("directory {mode:o}"),
        Some((Some(bytes), mode)) => format!("{:?} {mode:o}", String::from_utf8_lossy(bytes)),
    };
    let paths: std::collections::BTreeSet<&String> = want.keys().chain(got.keys()).collect();
    paths
        .into_iter()
        .filter(|p| want.get(*p) != got.get(*p))
        .map(|p| format!("{p}: want {}, got {}", show(want.get(p)), show(got.get(p))))
        .collect()
}

#[track_caller]
fn assert_tree(step: &str, want: &Tree, root: &Path) {
    let diff = tree_diff(want, &tree(root));
    assert!(diff.is_empty(), "{step}: the tree differs:\n  {}", diff.join("\n  "));
}

fn set_mtime(path: &Path, when: SystemTime) {
    File::open(path)
        .unwrap()
        .set_times(FileTimes::new().set_modified(when))
        .unwrap();
}

/// Sets the mtime of every file under `root` to [`old`].
fn backdate(root: &Path) {
    for (rel, (content, _)) in tree(root) {
        if content.is_some() {
            set_mtime(&root.join(rel), old());
        }
    }
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

fn write(root: &Path, rel: &str, content: &str, mode: u32) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// What a manifest says the tree is, read back from the object store.
fn recorded(objects: &ObjectStore, manifest: &Manifest) -> Tree {
    manifest
        .iter()
        .map(|(path, state)| {
            let content = (!state.dir).then(|| objects.get(&state.id).unwrap());
            (path.to_owned(), (content, state.mode & 0o7777))
        })
        .collect()
}

#[test]
fn the_scanner_reuses_only_what_did_not_change() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root = project.path();
    write(root, "keep.txt", "kept as it is\n", 0o644);
    write(root, "racy.txt", "aaaa\n", 0o644);
    write(root, "run.sh", "#!/bin/sh\necho hi\n", 0o755);
    write(root, "dir/nested.txt", "nested\n", 0o600);
    backdate(root);
    let objects = ObjectStore::new(data.path().join("objects"));
    let mut scanner = Scanner::new(root.to_path_buf(), objects.clone(), 1 << 20);
    let first = scanner.scan().unwrap();
    assert_eq!(first.hashed, 4, "a first scan reads every file");
    assert_eq!(recorded(&objects, &first.manifest), tree(root));

    // Nothing changed: nothing is read, in this scanner or in a new one seeded like a new
    // session (Recorder::new remembers the previous session's last checkpoint).
    assert_eq!(scanner.scan().unwrap().hashed, 0);
    let mut seeded = Scanner::new(root.to_path_buf(), objects.clone(), 1 << 20);
    let stored = brute::session::checkpoint::save_manifest(&objects, &first.manifest).unwrap();
    seeded.remember(&objects, &stored).unwrap();
    let again = seeded.scan().unwrap();
    assert_eq!(again.hashed, 0, "the seeded scanner reads nothing");
    assert_eq!(again.manifest, first.manifest);

    // A mode change alone is seen.
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let scan = seeded.scan().unwrap();
    assert_eq!(scan.hashed, 1);
    assert_eq!(recorded(&objects, &scan.manifest), tree(root));

    // A racy edit: same size, and the old mtime put back to the nanosecond.
    std::fs::write(root.join("racy.txt"), "bbbb\n").unwrap();
    set_mtime(&root.join("racy.txt"), old());
    let scan = seeded.scan().unwrap();
    assert_eq!(scan.hashed, 1, "only the edited file is read");
    assert_eq!(recorded(&objects, &scan.manifest), tree(root));
}

/// The project's session store, as the binary opens it.
fn store(sb: &Sandbox) -> SessionStore {
    SessionStore::new(&sb.home.path().join("data"), &sb.project.path().canonicalize().unwrap())
}

/// The checkpoint the latest turn ended with holds exactly the tree on disk.
#[track_caller]
fn assert_checkpoint_is_the_tree(step: &str, sb: &Sandbox) {
    let store = store(sb);
    let id = store.latest().expect("a session");
    let (_, loaded) = store.open(&id).unwrap();
    let end = loaded
        .turns
        .last()
        .and_then(|t| t.end.clone())
        .expect("a finished turn");
    let manifest = checkpoint::load_manifest(store.objects(), &end).unwrap();
    let diff = tree_diff(&tree(sb.project.path()), &recorded(store.objects(), &manifest));
    assert!(
        diff.is_empty(),
        "{step}: the checkpoint is not the tree on disk (want = disk, got = checkpoint):\n  {}",
        diff.join("\n  ")
    );
}

/// One `brute -p` turn that runs `command` with the shell tool.
fn turn(sb: &Sandbox, server: &MockServer, prompt: &str, command: &str, resume: bool) {
    let args = serde_json::json!({ "command": command }).to_string();
    server.push(Reply::sse(openai_sse("", &[("sh", "shell", &args)])));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    let mut cmd = sb.brute(server);
    cmd.timeout(RUN_LIMIT).args(["-p", prompt]);
    if resume {
        cmd.arg("--continue");
    }
    cmd.assert().success().stdout("Done.\n");
}

#[test]
fn undo_and_redo_across_processes_restore_byte_identical_trees() {
    let sb = Sandbox::new();
    let root: PathBuf = sb.project.path().to_path_buf();
    let server = MockServer::start();
    write(&root, "keep.txt", "kept as it is\n", 0o644);
    write(&root, "racy.txt", "aaaa\n", 0o644);
    write(&root, "grow.txt", "short\n", 0o644);
    write(&root, "run.sh", "#!/bin/sh\necho hi\n", 0o755);
    write(&root, "private.txt", "secret\n", 0o600);
    write(&root, "dir/nested.txt", "nested\n", 0o640);
    // Back-dated once, before anything runs: from then on the files no turn touches keep
    // their metadata, so every later scan, in each new process too, takes the shortcut.
    backdate(&root);

    // Session A, turn 1: ordinary edits.
    turn(
        &sb,
        &server,
        "A1",
        "printf 'much longer now\\n' > grow.txt && rm dir/nested.txt && echo new > new.txt",
        false,
    );
    let s1 = tree(&root);
    assert_checkpoint_is_the_tree("after A1", &sb);

    // Session B (a new process and a new session, seeded from A's last checkpoint), turn 1:
    // a racy edit of racy.txt (same size, mtime put back to the old value) and an append.
    turn(
        &sb,
        &server,
        "B1",
        "printf 'bbbb\\n' > racy.txt && touch -r keep.txt racy.txt && printf 'more\\n' >> grow.txt",
        false,
    );
    assert_eq!(mtime(&root.join("racy.txt")), old(), "the racy edit kept the old mtime");
    assert_eq!(std::fs::read(root.join("racy.txt")).unwrap(), b"bbbb\n");
    assert_eq!(store(&sb).ids().len(), 2, "B1 ran in a session of its own");
    let s2 = tree(&root);
    assert_checkpoint_is_the_tree("after B1 (the racy edit)", &sb);

    // Session B resumed in a third process, turn 2: a mode change alone, a same-size edit,
    // new directories.
    turn(
        &sb,
        &server,
        "B2",
        "chmod 700 run.sh && printf 'SECRET\\n' > private.txt && mkdir -p made/deep && echo x > made/deep/f.txt",
        true,
    );
    let s3 = tree(&root);
    assert_checkpoint_is_the_tree("after B2", &sb);
    assert_ne!(s2, s3);

    sb.bare().timeout(RUN_LIMIT).arg("undo").assert().success();
    assert_tree("undo of B2", &s2, &root);
    sb.bare().timeout(RUN_LIMIT).arg("undo").assert().success();
    assert_tree("undo of B1 (the racy edit)", &s1, &root);
    sb.bare().timeout(RUN_LIMIT).arg("redo").assert().success();
    assert_tree("redo of B1", &s2, &root);
    sb.bare().timeout(RUN_LIMIT).arg("redo").assert().success();
    assert_tree("redo of B2", &s3, &root);
}
