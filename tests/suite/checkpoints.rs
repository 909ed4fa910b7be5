//! Turn checkpoints: undo and redo of whole turns, whatever changed the files (tools or shell
//! commands), conflicts with the person's own edits, .gitignore'd paths, restarts, and a
//! randomized check that any sequence of changes and undos restores byte-identical trees.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;

use brute::agent::Agent;
use brute::provider::Message;
use brute::session::{Recorder, SessionStore};

/// What one path holds, byte for byte: its kind, content or link target, and mode.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir { mode: u32 },
    File { bytes: Vec<u8>, mode: u32 },
    Link { target: std::path::PathBuf },
}

/// Every file, directory and symlink under `root` (except `.git`), links not followed.
fn tree(root: &Path) -> BTreeMap<String, Node> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    for entry in walk(root) {
        let rel = entry.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        let meta = std::fs::symlink_metadata(&entry).unwrap();
        let mode = meta.permissions().mode() & 0o7777;
        let node = if meta.file_type().is_symlink() {
            Node::Link {
                target: std::fs::read_link(&entry).unwrap(),
            }
        } else if meta.is_dir() {
            Node::Dir { mode }
        } else {
            Node::File {
                bytes: std::fs::read(&entry).unwrap(),
                mode,
            }
        };
        out.insert(rel, node);
    }
    out
}

/// A file node's bytes.
fn bytes(node: &Node) -> &[u8] {
    match node {
        Node::File { bytes, .. } => bytes,
        other => panic!("not a file: {other:?}"),
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_name() == ".git" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

struct Project {
    root: tempfile::TempDir,
    data: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        Self {
            root: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        }
    }

    /// A project and data dir in memory (`/dev/shm`) where there is one: for long histories,
    /// where thousands of fsyncs to a disk would be most of the time.
    fn in_memory() -> Self {
        let shm = Path::new("/dev/shm");
        if !shm.is_dir() {
            return Self::new();
        }
        Self {
            root: tempfile::tempdir_in(shm).unwrap(),
            data: tempfile::tempdir_in(shm).unwrap(),
        }
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn store(&self) -> SessionStore {
        SessionStore::new(self.data.path(), self.root())
    }

    fn recorder(&self) -> Recorder {
        let store = self.store();
        let file = store.create().unwrap();
        Recorder::new(store, file, &Default::default(), 1024 * 1024)
    }

    /// Reopens the latest session, as a restarted brute would.
    fn reopen(&self) -> (Recorder, Vec<Message>) {
        let store = self.store();
        let id = store.latest().unwrap();
        let (file, loaded) = store.open(&id).unwrap();
        let history = loaded.history.clone();
        (Recorder::new(store, file, &loaded, 1024 * 1024), history)
    }

    /// An agent over a replay script, recording into a new session.
    fn agent(&self, script: &str) -> Agent {
        support::replay_agent(self.root(), self.recorder(), script).0
    }
}

fn run(agent: &mut Agent, prompt: &str) {
    support::run_turn(agent, prompt);
}

const TURN: &str = r#"{"tool_calls": [{"name": "write", "arguments": {"file_path": "new.txt", "content": "created\n"}}, {"name": "patch", "arguments": {"file_path": "edit.txt", "old_string": "one", "new_string": "uno"}}, {"name": "remove", "arguments": {"path": "gone.txt"}}]}
{"tool_calls": [{"name": "shell", "arguments": {"command": "sed -i 's/alpha/ALPHA/' sed.txt && touch touched.txt && rm deleted.txt && mkdir -p made/deeper && mv moved.txt made/moved.txt && echo ignored > build/out.log && echo scratch > sub/scratch.tmp && echo kept > sub/new.txt"}}]}
{"text": "done"}"#;

fn seed(p: &Project) {
    p.write("edit.txt", "one\ntwo\n");
    p.write("gone.txt", "to be removed\n");
    p.write("sed.txt", "alpha\nbeta\n");
    p.write("deleted.txt", "bye\n");
    p.write("moved.txt", "moving\n");
    p.write(".gitignore", "build/\n");
    p.write("build/old.log", "old\n");
    p.write("sub/.gitignore", "*.tmp\n");
    p.write("sub/keep.txt", "keep\n");
}

#[test]
fn undo_takes_back_tools_and_shell_changes_and_redo_reapplies() {
    let p = Project::new();
    seed(&p);
    let before = tree(p.root());
    let mut agent = p.agent(TURN);
    run(&mut agent, "change things");
    let after = tree(p.root());
    assert_eq!(bytes(&after["new.txt"]), b"created\n");
    assert_eq!(bytes(&after["made/moved.txt"]), b"moving\n");
    assert_eq!(bytes(&after["sed.txt"]), b"ALPHA\nbeta\n");

    let (message, rewound) = agent.undo(true, false, false);
    assert!(rewound);
    assert!(
        agent.history().is_empty(),
        "the conversation went back to before the turn"
    );
    let mut expected = before.clone();
    // The .gitignore'd build output is left alone.
    expected.insert("build/out.log".into(), after["build/out.log"].clone());
    // So is what the nested sub/.gitignore ignores; sub/new.txt is not ignored and goes.
    expected.insert("sub/scratch.tmp".into(), after["sub/scratch.tmp"].clone());
    assert_eq!(tree(p.root()), expected, "{message}");
    assert!(message.contains("restored edit.txt (+1 -1)"), "{message}");
    assert!(message.contains("re-created gone.txt (+1 -0)"), "{message}");
    assert!(message.contains("deleted new.txt"), "{message}");
    assert!(
        message.contains("deleted made"),
        "the directory made by mkdir goes too: {message}"
    );

    let (message, history_back) = agent.redo(false, false);
    assert!(history_back);
    assert_eq!(tree(p.root()), after, "{message}");
    assert_eq!(agent.history().len(), 8, "redo restores the conversation");
    assert!(!p.root().join(".git").exists(), "no git repository was created");
}

#[test]
fn the_persons_edits_are_never_overwritten_silently() {
    let p = Project::new();
    p.write("a.txt", "original\n");
    p.write("b.txt", "original\n");
    let mut recorder = p.recorder();
    let mut history = Vec::new();
    recorder.begin_turn("edit", 0).unwrap();
    p.write("a.txt", "agent\n");
    p.write("b.txt", "agent\n");
    recorder.end_turn(&brute::session::TurnWork::all_by_commands()).unwrap();
    p.write("b.txt", "the person's own edit\n");
    let moved = recorder.undo(&mut history, false, false, false).unwrap().unwrap();
    assert_eq!(std::fs::read_to_string(p.root().join("a.txt")).unwrap(), "original\n");
    assert_eq!(
        std::fs::read_to_string(p.root().join("b.txt")).unwrap(),
        "the person's own edit\n"
    );
    assert_eq!(moved.report.conflicts, ["b.txt"]);
    assert!(
        moved
            .describe("undid")
            .contains("skipped b.txt: changed since the agent's turn")
    );
    // Forced, after a redo and another undo: now it is overwritten.
    recorder.redo(&mut history, false, false).unwrap();
    let moved = recorder.undo(&mut history, false, true, false).unwrap().unwrap();
    assert!(moved.report.conflicts.is_empty());
    assert_eq!(std::fs::read_to_string(p.root().join("b.txt")).unwrap(), "original\n");
}

#[test]
fn undo_walks_back_turn_by_turn_and_survives_a_restart() {
    let p = Project::new();
    p.write("f.txt", "v0\n");
    let mut recorder = p.recorder();
    for v in 1..=3 {
        recorder.begin_turn(&format!("turn {v}"), 0).unwrap();
        p.write("f.txt", &format!("v{v}\n"));
        recorder.end_turn(&brute::session::TurnWork::all_by_commands()).unwrap();
    }
    drop(recorder);
    let (mut recorder, mut history) = p.reopen();
    recorder.undo(&mut history, false, false, false).unwrap();
    assert_eq!(std::fs::read_to_string(p.root().join("f.txt")).unwrap(), "v2\n");
    drop(recorder);
    let (mut recorder, mut history) = p.reopen();
    recorder.undo(&mut history, false, false, false).unwrap();
    assert_eq!(std::fs::read_to_string(p.root().join("f.txt")).unwrap(), "v1\n");
    recorder.redo(&mut history, false, false).unwrap();
    assert_eq!(std::fs::read_to_string(p.root().join("f.txt")).unwrap(), "v2\n");
    let listed = recorder.checkpoints();
    assert_eq!(listed.len(), 3);
    assert!(listed[2].0.undone && !listed[1].0.undone);
}

#[test]
fn large_files_are_skipped_and_reported() {
    let p = Project::new();
    let store = p.store();
    let file = store.create().unwrap();
    let mut recorder = Recorder::new(store, file, &Default::default(), 10);
    let mut history = Vec::new();
    p.write("big.bin", "more than ten bytes");
    recorder.begin_turn("x", 0).unwrap();
    p.write("big.bin", "changed, and still more than ten bytes");
    p.write("small", "ok");
    recorder.end_turn(&brute::session::TurnWork::all_by_commands()).unwrap();
    let moved = recorder.undo(&mut history, false, false, false).unwrap().unwrap();
    assert!(
        moved
            .describe("undid")
            .contains("not restorable big.bin: over the checkpoint size cap")
    );
    assert!(!p.root().join("small").exists());
}

#[test]
fn randomized_changes_and_undos_restore_identical_trees() {
    for seed in 0..12u64 {
        randomized_history(seed, false);
    }
}

/// The same on a git-backed tree: clean files are git references, and turns also stage,
/// commit, unstage, pack (`git gc`: packed objects and refs) and make racy-clean entries.
#[test]
fn randomized_changes_and_undos_restore_identical_trees_in_a_git_repository() {
    let have_git = std::process::Command::new("git").arg("--version").output().is_ok();
    if !have_git {
        assert!(std::env::var_os("CI").is_none(), "git is needed for this test");
        return;
    }
    for seed in 0..12u64 {
        randomized_history(seed, true);
    }
}

fn randomized_history(seed: u64, in_git: bool) {
    {
        let mut rng = fastrand::Rng::with_seed(seed);
        let p = Project::new();
        p.write("start.txt", "start\n");
        if in_git {
            p.write("tracked/a.txt", "tracked a\n");
            p.write("tracked/b.txt", "tracked b\n");
            git(p.root(), &["init", "-q"]);
            git(p.root(), &["add", "-A"]);
            git(p.root(), &["commit", "-qm", "init"]);
        }
        let mut recorder = p.recorder();
        let mut history = Vec::new();
        let mut states = vec![tree(p.root())];
        let turns = rng.usize(1..6);
        for turn in 0..turns {
            recorder.begin_turn(&format!("turn {turn}"), 0).unwrap();
            for _ in 0..rng.usize(1..8) {
                if in_git && rng.usize(0..3) == 0 {
                    random_git_change(&mut rng, p.root());
                } else {
                    random_change(&mut rng, p.root());
                }
            }
            recorder.end_turn(&brute::session::TurnWork::all_by_commands()).unwrap();
            states.push(tree(p.root()));
        }
        // Undo and redo read git's objects; they never write there.
        let dot_git = in_git.then(|| git_dir_state(p.root()));
        for back in (0..turns).rev() {
            recorder.undo(&mut history, false, false, false).unwrap().unwrap();
            assert_eq!(
                tree(p.root()),
                states[back],
                "seed {seed}: after undoing back to state {back}"
            );
        }
        for (forward, state) in states.iter().enumerate().skip(1) {
            recorder.redo(&mut history, false, false).unwrap().unwrap();
            assert_eq!(&tree(p.root()), state, "seed {seed}: after redoing to state {forward}");
        }
        if let Some(before) = dot_git {
            assert_eq!(git_dir_state(p.root()), before, "seed {seed}: .git changed");
        }
    }
}

/// Runs git in `dir` with a fixed identity and no system or global configuration.
fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
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
}

/// Every file under `.git` with its bytes and mtime.
fn git_dir_state(root: &Path) -> BTreeMap<std::path::PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.join(".git")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                out.insert(
                    entry.path(),
                    (std::fs::read(entry.path()).unwrap(), meta.modified().unwrap()),
                );
            }
        }
    }
    out
}

/// What a turn's shell commands do to git: stage all, commit, unstage one file, pack
/// everything, or stage a file modified "in the future" (a racy-clean entry).
fn random_git_change(rng: &mut fastrand::Rng, root: &Path) {
    match rng.usize(0..5) {
        0 => git(root, &["add", "-A"]),
        1 => {
            git(root, &["add", "-A"]);
            git(root, &["commit", "-qm", "turn", "--allow-empty"]);
        }
        2 => {
            let _ = std::process::Command::new("git")
                .args(["rm", "-q", "--cached", "--ignore-unmatch", "tracked/a.txt"])
                .current_dir(root)
                .output();
        }
        3 => git(root, &["gc", "-q"]),
        _ => {
            let path = root.join(format!("racy{}.txt", rng.usize(0..2)));
            std::fs::write(&path, format!("racy {}\n", rng.u32(..))).unwrap();
            let future = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(future)
                .unwrap();
            git(root, &["add", "-A"]);
        }
    }
}

fn random_change(rng: &mut fastrand::Rng, root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let all = walk(root);
    let is = |p: &std::path::PathBuf, f: fn(&std::fs::FileType) -> bool| {
        std::fs::symlink_metadata(p).is_ok_and(|m| f(&m.file_type()))
    };
    let files: Vec<std::path::PathBuf> = all.iter().filter(|p| is(p, |t| t.is_file())).cloned().collect();
    let dirs: Vec<std::path::PathBuf> = all.iter().filter(|p| is(p, |t| t.is_dir())).cloned().collect();
    let links: Vec<std::path::PathBuf> = all.iter().filter(|p| is(p, |t| t.is_symlink())).cloned().collect();
    match rng.usize(0..10) {
        // A link (to a file of the tree, a directory, or nothing), or a link retargeted.
        6 => {
            let path = root.join(format!("l{}", rng.usize(0..3)));
            let target = ["start.txt", "a", "missing", "../outside"][rng.usize(0..4)];
            let _ = std::fs::remove_file(&path);
            if std::fs::symlink_metadata(&path).is_err() {
                std::os::unix::fs::symlink(target, &path).unwrap();
            }
            return;
        }
        7 if !links.is_empty() => {
            std::fs::remove_file(&links[rng.usize(0..links.len())]).unwrap();
            return;
        }
        8 if !dirs.is_empty() => {
            let mode = [0o700, 0o755, 0o750][rng.usize(0..3)];
            let dir = &dirs[rng.usize(0..dirs.len())];
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
            return;
        }
        9 if !files.is_empty() => {
            let mode = [0o600, 0o644, 0o755][rng.usize(0..3)];
            let file = &files[rng.usize(0..files.len())];
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(mode)).unwrap();
            return;
        }
        _ => {}
    }
    let name = |rng: &mut fastrand::Rng| {
        let dir = ["", "a/", "a/b/", "c/"][rng.usize(0..4)];
        format!("{dir}f{}.txt", rng.usize(0..6))
    };
    match rng.usize(0..6) {
        0 | 1 => {
            let path = root.join(name(rng));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let len = rng.usize(0..64);
            let bytes: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            std::fs::write(path, bytes).unwrap();
        }
        2 if !files.is_empty() => {
            std::fs::remove_file(&files[rng.usize(0..files.len())]).unwrap();
        }
        3 if !files.is_empty() => {
            let to = root.join(name(rng));
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::rename(&files[rng.usize(0..files.len())], to).unwrap();
        }
        4 if !files.is_empty() => {
            let path = &files[rng.usize(0..files.len())];
            let mut text = std::fs::read(path).unwrap();
            text.extend_from_slice(b"\nappended");
            std::fs::write(path, text).unwrap();
        }
        _ => {
            std::fs::create_dir_all(root.join(format!("d{}", rng.usize(0..3)))).unwrap();
        }
    }
}

/// 2,000 turns leave a handful of packs (merged as they grow), every turn's content
/// readable, and the last turn undoable after a restart.
#[test]
fn a_2000_turn_store_stays_small_and_every_turn_stays_readable() {
    let p = Project::in_memory();
    p.write("f.txt", "v0\n");
    p.write("stable.txt", "never changes\n");
    for i in 0..100 {
        p.write(&format!("lib/m{i:03}.rs"), &format!("// module {i}\n"));
    }
    let mut recorder = p.recorder();
    for v in 1..=2000 {
        recorder.begin_turn(&format!("turn {v}"), 0).unwrap();
        p.write("f.txt", &format!("v{v}\n"));
        p.write(&format!("new/{}.txt", v % 7), &format!("made in turn {v}\n"));
        recorder.end_turn(&brute::session::TurnWork::all_by_commands()).unwrap();
    }
    let objects = p.store().objects().clone();
    assert!(
        objects.pack_count() <= brute::session::objects::MAX_PACKS + 1,
        "{} packs",
        objects.pack_count()
    );
    // Disk in proportion to what changed, not to turns × tree: each turn's manifest is stored
    // as its changes (whole, the 100-file manifest alone is over 15 KB: 30 MB for 2,000 turns).
    let mut bytes = 0;
    let mut dirs = vec![p.data.path().join("objects")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                dirs.push(entry.path());
            } else {
                bytes += meta.len();
            }
        }
    }
    assert!(bytes < 4 << 20, "the store holds {bytes} bytes after 2,000 small turns");
    drop(recorder);
    let (mut recorder, mut history) = p.reopen();
    assert_eq!(recorder.checkpoints().len(), 2000);
    recorder.undo(&mut history, false, false, false).unwrap();
    assert_eq!(std::fs::read_to_string(p.root().join("f.txt")).unwrap(), "v1999\n");
    // Every turn's content is still there, read through the merged packs.
    for turn in &recorder.turns {
        let start = brute::session::checkpoint::load_manifest(&objects, &turn.start).unwrap();
        let f = objects.get(&start["f.txt"].id).unwrap();
        assert_eq!(f, format!("v{}\n", turn.turn - 1).as_bytes());
    }
    assert_eq!(
        std::fs::read_to_string(p.root().join("stable.txt")).unwrap(),
        "never changes\n"
    );
}

/// Apparent bytes, disk blocks (bytes) and files under `dir`.
fn usage(dir: &Path) -> (u64, u64, usize) {
    use std::os::unix::fs::MetadataExt;
    let (mut bytes, mut blocks, mut files) = (0, 0, 0);
    for path in walk(dir) {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_file() {
            bytes += meta.len();
            blocks += meta.blocks() * 512;
            files += 1;
        }
    }
    (bytes, blocks, files)
}

/// The store grows with the distinct content it holds, not with turns × tree: 400 turns
/// each changing 3 of 200 files of about 1 KB leave contents plus a small record of each
/// turn's changes, in a handful of packs and a few loose files (each loose file is a disk
/// block, a whole manifest every 32 turns was over half the store).
#[test]
fn the_store_grows_with_distinct_content_not_with_turns() {
    let p = Project::in_memory();
    let text = |i: usize, turn: usize| format!("// file {i}, turn {turn}\n{}", "let x = 1;\n".repeat(90));
    let mut distinct = 0;
    for i in 0..200 {
        let content = text(i, 0);
        distinct += content.len() as u64;
        p.write(&format!("src/m{}/f{i:03}.rs", i / 50), &content);
    }
    let mut recorder = p.recorder();
    for turn in 1..=400 {
        recorder.begin_turn(&format!("turn {turn}"), 0).unwrap();
        for k in 0..3 {
            let i = (turn * 3 + k) % 200;
            let content = text(i, turn);
            distinct += content.len() as u64;
            p.write(&format!("src/m{}/f{i:03}.rs", i / 50), &content);
        }
        recorder.end_turn(&brute::session::TurnWork::all_by_commands()).unwrap();
    }
    let (bytes, blocks, files) = usage(&p.data.path().join("objects"));
    let ratio = bytes as f64 / distinct as f64;
    let on_disk = blocks as f64 / distinct as f64;
    eprintln!("{bytes} bytes ({blocks} on disk, {files} files) for {distinct} bytes of distinct content");
    assert!(
        ratio < 1.4 && on_disk < 1.5,
        "{bytes} bytes ({blocks} on disk) for {distinct} bytes of distinct content: {ratio:.2}× ({on_disk:.2}× on disk)"
    );
    let packs = recorder.store.objects().pack_count();
    assert!(
        packs <= brute::session::objects::MAX_PACKS + 1 && files <= 2 * packs + brute::session::objects::MAX_LOOSE,
        "{files} files, {packs} packs"
    );
    // And every turn still loads and undoes.
    drop(recorder);
    let (mut recorder, mut history) = p.reopen();
    assert_eq!(recorder.checkpoints().len(), 400);
    recorder.undo(&mut history, false, false, false).unwrap();
    assert_eq!(
        std::fs::read_to_string(p.root().join("src/m0/f000.rs")).unwrap(),
        text(0, 333)
    );
}

/// A session and store written by brute before chains counted their entries (a whole
/// manifest as plain JSON, the next stored as an old delta, spelled out here byte for byte
/// as that brute wrote them) still lists, undoes and redoes; a new turn on top is stored
/// (whole, then as changes), and a prune keeps everything the old turns need.
#[test]
fn a_store_written_in_the_old_format_still_undoes_prunes_and_continues() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new();
    let store = p.store();
    let objects = store.objects().clone();
    let (one, two, bee) = (
        objects.put(b"one\n").unwrap(),
        objects.put(b"two\n").unwrap(),
        objects.put(b"bee\n").unwrap(),
    );
    let whole = format!(
        r#"{{"a.txt":{{"id":"{one}","size":4,"mode":33188,"mtime_ns":1000,"ctime_ns":1000}},"b.txt":{{"id":"{bee}","size":4,"mode":33188,"mtime_ns":1000,"ctime_ns":1000}},"d":{{"id":"","size":0,"mode":16877,"mtime_ns":0,"ctime_ns":0,"dir":true}}}}"#
    );
    let whole = objects.put(whole.as_bytes()).unwrap();
    let delta = format!(
        "brute-manifest-delta\n{{\"base\":\"{whole}\",\"depth\":1,\"set\":{{\"a.txt\":{{\"id\":\"{two}\",\"size\":4,\"mode\":33188,\"mtime_ns\":2000,\"ctime_ns\":2000}}}},\"del\":[\"b.txt\"]}}"
    );
    let delta = objects.put(delta.as_bytes()).unwrap();
    let mut file = store.create().unwrap();
    for record in [
        brute::session::Record::Checkpoint {
            turn: 1,
            manifest: whole.clone(),
            history_len: 0,
            prompt: "old turn".into(),
            at_ms: 1,
        },
        brute::session::Record::TurnEnd {
            turn: 1,
            manifest: delta.clone(),
            skipped: Vec::new(),
            held: Default::default(),
            tools_start: None,
        },
    ] {
        file.append(&record).unwrap();
    }
    drop(file);
    // The tree as that turn left it, and files made since (so one change is a small delta).
    p.write("a.txt", "two\n");
    for i in 0..8 {
        p.write(&format!("later/{i}.txt"), "made later\n");
    }
    std::fs::create_dir(p.root().join("d")).unwrap();
    for path in ["a.txt", "d"] {
        let mode = if path == "d" { 0o755 } else { 0o644 };
        std::fs::set_permissions(p.root().join(path), std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let (mut recorder, _) = p.reopen();
    let listed = recorder.checkpoints();
    assert_eq!((listed.len(), listed[0].1), (1, 2), "a.txt changed, b.txt deleted");
    // A new turn on top: its start stored whole after the old delta, its end as changes.
    recorder.begin_turn("turn 2", 0).unwrap();
    p.write("a.txt", "three\n");
    recorder.end_turn(&brute::session::TurnWork::all_by_commands()).unwrap();
    let turn = recorder.turns.last().unwrap().clone();
    assert!(!objects.get(&turn.start).unwrap().starts_with(b"brute-manifest-delta"));
    assert!(
        objects
            .get(&turn.end.unwrap())
            .unwrap()
            .starts_with(b"brute-manifest-delta")
    );
    drop(recorder);
    brute::session::prune::prune(
        p.data.path(),
        brute::session::prune::DEFAULT_MAX_AGE,
        brute::session::prune::DEFAULT_MAX_BYTES,
        std::time::Duration::ZERO,
    )
    .unwrap()
    .unwrap();
    for id in [&one, &two, &bee, &whole, &delta] {
        assert!(objects.contains(id), "{id} was pruned");
    }
    let (mut recorder, mut history) = p.reopen();
    recorder.undo(&mut history, false, false, false).unwrap().unwrap();
    assert_eq!(std::fs::read_to_string(p.root().join("a.txt")).unwrap(), "two\n");
    recorder.undo(&mut history, false, false, false).unwrap().unwrap();
    assert_eq!(std::fs::read_to_string(p.root().join("a.txt")).unwrap(), "one\n");
    assert_eq!(std::fs::read_to_string(p.root().join("b.txt")).unwrap(), "bee\n");
    recorder.redo(&mut history, false, false).unwrap().unwrap();
    assert_eq!(std::fs::read_to_string(p.root().join("a.txt")).unwrap(), "two\n");
    assert!(!p.root().join("b.txt").exists());
}

/// Links to special files and FIFOs in the tree are never opened: a turn that removes a link
/// to `/dev/zero` and one to a FIFO is checkpointed and undone without reading either.
#[test]
fn links_to_special_files_are_kept_as_links_and_never_read() {
    let p = Project::new();
    let fifo = p.root().join("pipe");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates a node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    std::os::unix::fs::symlink("/dev/zero", p.root().join("zero")).unwrap();
    std::os::unix::fs::symlink("pipe", p.root().join("to-pipe")).unwrap();
    let mut recorder = p.recorder();
    recorder.begin_turn("remove the links", 0).unwrap();
    std::fs::remove_file(p.root().join("zero")).unwrap();
    std::fs::remove_file(p.root().join("to-pipe")).unwrap();
    recorder.end_turn(&brute::session::TurnWork::all_by_commands()).unwrap();
    let mut history = Vec::new();
    let moved = recorder.undo(&mut history, false, false, false).unwrap().unwrap();
    assert_eq!(
        std::fs::read_link(p.root().join("zero")).unwrap(),
        Path::new("/dev/zero")
    );
    assert_eq!(std::fs::read_link(p.root().join("to-pipe")).unwrap(), Path::new("pipe"));
    assert!(
        moved.describe("undid").contains("re-created the link zero"),
        "{}",
        moved.describe("undid")
    );
}

/// A directory the turn made, replaced by a link out of the project afterwards: undo never
/// deletes or writes through it, forced or not; the outside tree is untouched.
#[test]
fn undo_never_goes_through_a_directory_that_became_a_link() {
    let p = Project::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("new.txt"), "outside, not the agent's\n").unwrap();
    let mut recorder = p.recorder();
    recorder.begin_turn("make sub", 0).unwrap();
    p.write("sub/new.txt", "made by the turn\n");
    recorder.end_turn(&brute::session::TurnWork::all_by_commands()).unwrap();
    std::fs::remove_dir_all(p.root().join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), p.root().join("sub")).unwrap();
    let mut history = Vec::new();
    let moved = recorder.undo(&mut history, false, true, false).unwrap().unwrap();
    assert_eq!(
        std::fs::read_to_string(outside.path().join("new.txt")).unwrap(),
        "outside, not the agent's\n",
        "{}",
        moved.describe("undid")
    );
    assert!(
        moved.report.conflicts.contains(&"sub/new.txt".to_owned()),
        "{:?}",
        moved.report
    );
}

/// A `!command` the person ran is a turn of its own: its file changes are checkpointed (undo
/// takes them back), and its output is recorded as the person's message, never as a tool
/// result without a call (a resumed session has nothing to repair).
#[test]
fn a_person_command_is_an_undoable_turn_recorded_as_their_message() {
    let p = Project::new();
    p.write("kept.txt", "kept\n");
    let before = tree(p.root());
    let mut agent = p.agent(r#"{"text": "unused"}"#);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let end = runtime.block_on(agent.run_command(
        "echo hi > made.txt && echo shown".into(),
        tokio_util::sync::CancellationToken::new(),
    ));
    assert_eq!(end.outcome, brute::protocol::TurnOutcome::Done);
    assert_eq!(bytes(&tree(p.root())["made.txt"]), b"hi\n");
    assert_eq!(
        agent.history(),
        [Message::user(
            "I ran this command myself:\n$ echo hi > made.txt && echo shown\nshown"
        )]
    );

    let store = p.store();
    let text = std::fs::read_to_string(store.file_path(&store.latest().unwrap())).unwrap();
    let replayed = brute::session::replay(&text);
    assert_eq!(
        replayed.history,
        agent.history(),
        "the session file holds the same message"
    );
    assert!(
        !text.contains("\"tool_result\""),
        "no tool result without a call is recorded: {text}"
    );

    let (message, rewound) = agent.undo(true, false, false);
    assert!(rewound, "{message}");
    assert_eq!(tree(p.root()), before, "{message}");
    assert!(agent.history().is_empty());
}

/// A file the turn replaced by a directory comes back only when nothing but the turn's own
/// files is in that directory: a file the person put there since is never deleted with it
/// (the directory is listed as a conflict and stays, the turn's own file in it goes).
#[test]
fn a_file_replaced_by_a_directory_is_not_restored_over_the_persons_file_in_it() {
    let p = Project::new();
    p.write("d", "a file\n");
    let mut agent = p.agent(
        r#"{"tool_calls": [{"name": "shell", "arguments": {"command": "rm d && mkdir d && echo theirs > d/x"}}]}
{"text": "done"}"#,
    );
    run(&mut agent, "make d a directory");
    std::fs::write(p.root().join("d/mine.txt"), "the person's\n").unwrap();
    let (message, _) = agent.undo(false, false, false);
    assert!(message.contains("d"), "{message}");
    assert_eq!(
        std::fs::read_to_string(p.root().join("d/mine.txt")).unwrap(),
        "the person's\n",
        "{message}"
    );
    assert!(!p.root().join("d/x").exists(), "the turn's own file goes: {message}");
    // With nothing of the person's in it, the file comes back.
    std::fs::remove_file(p.root().join("d/mine.txt")).unwrap();
    let (message, _) = agent.redo(false, false);
    assert!(p.root().join("d/x").exists(), "{message}");
    let (message, _) = agent.undo(false, false, false);
    assert_eq!(
        std::fs::read_to_string(p.root().join("d")).unwrap(),
        "a file\n",
        "{message}"
    );
}

/// Property: random trees (names of any bytes but `/` and NUL, chains to 150 levels and past
/// PATH_MAX, file and directory modes, links to anywhere), a random turn of built-in tool
/// writes (through the tools' own descriptor code, recorded as the turn's) and command effects
/// (plain calls while a command span is open), then undo: the tree is the start tree byte for
/// byte; redo: the end tree. `BRUTE_PROPTEST_CASES` sets the number of cases (10,000 by
/// default), `BRUTE_PROPTEST_SEED` the first seed.
#[test]
fn any_tree_and_any_turn_undo_and_redo_byte_for_byte() {
    let cases: u64 = std::env::var("BRUTE_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let first: u64 = std::env::var("BRUTE_PROPTEST_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(4) as u64;
    std::thread::scope(|scope| {
        for t in 0..threads {
            scope.spawn(move || {
                // One session for all of a thread's cases: each case is one more turn of it.
                let project = Project::in_memory();
                let mut recorder = project.recorder();
                let mut seed = first + t;
                while seed < first + cases {
                    property_case(&project, &mut recorder, seed);
                    seed += threads;
                }
            });
        }
    });
}

mod fdtree {
    //! Changes to a tree by relative byte paths at any depth, through descriptors.
    use std::os::fd::OwnedFd;
    use std::path::Path;

    use rustix::fs::{AtFlags, FileType, Mode, OFlags};

    pub fn root(path: &Path) -> OwnedFd {
        rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap()
    }

    /// The directory holding `rel` (its parents must exist) and `rel`'s last name.
    pub fn parent(root: &OwnedFd, rel: &[u8]) -> (OwnedFd, Vec<u8>) {
        let mut names: Vec<&[u8]> = rel.split(|b| *b == b'/').collect();
        let last = names.pop().unwrap().to_vec();
        let mut dir = rustix::fs::openat(root, ".", OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        for name in names {
            dir = rustix::fs::openat(
                &dir,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW,
                Mode::empty(),
            )
            .unwrap();
        }
        (dir, last)
    }

    pub fn kind(root: &OwnedFd, rel: &[u8]) -> Option<FileType> {
        let (dir, name) = parent(root, rel);
        rustix::fs::statat(&dir, name.as_slice(), AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .map(|s| FileType::from_raw_mode(s.st_mode))
    }

    pub fn write(root: &OwnedFd, rel: &[u8], bytes: &[u8], mode: u32) {
        let (dir, name) = parent(root, rel);
        let fd = rustix::fs::openat(
            &dir,
            name.as_slice(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW,
            Mode::from_raw_mode(mode),
        )
        .unwrap();
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode)).unwrap();
        std::io::Write::write_all(&mut std::fs::File::from(fd), bytes).unwrap();
    }

    pub fn mkdir(root: &OwnedFd, rel: &[u8], mode: u32) {
        let (dir, name) = parent(root, rel);
        rustix::fs::mkdirat(&dir, name.as_slice(), Mode::from_raw_mode(mode)).unwrap();
        chmod(root, rel, mode);
    }

    pub fn chmod(root: &OwnedFd, rel: &[u8], mode: u32) {
        let (dir, name) = parent(root, rel);
        rustix::fs::chmodat(&dir, name.as_slice(), Mode::from_raw_mode(mode), AtFlags::empty()).unwrap();
    }

    pub fn symlink(root: &OwnedFd, rel: &[u8], target: &[u8]) {
        let (dir, name) = parent(root, rel);
        rustix::fs::symlinkat(target, &dir, name.as_slice()).unwrap();
    }

    /// Removes `rel`, everything in it first when it is a directory.
    pub fn remove(root: &OwnedFd, rel: &[u8]) {
        if kind(root, rel) == Some(FileType::Directory) {
            let (dir, name) = parent(root, rel);
            let inner = rustix::fs::openat(
                &dir,
                name.as_slice(),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW,
                Mode::empty(),
            )
            .unwrap();
            let mut children = Vec::new();
            let mut listing = rustix::fs::Dir::read_from(&inner).unwrap();
            while let Some(entry) = listing.read() {
                let child = entry.unwrap().file_name().to_bytes().to_vec();
                if child != b"." && child != b".." {
                    children.push(child);
                }
            }
            for child in children {
                let mut path = rel.to_vec();
                path.push(b'/');
                path.extend_from_slice(&child);
                remove(root, &path);
            }
            rustix::fs::unlinkat(&dir, name.as_slice(), AtFlags::REMOVEDIR).unwrap();
        } else {
            let (dir, name) = parent(root, rel);
            rustix::fs::unlinkat(&dir, name.as_slice(), AtFlags::empty()).unwrap();
        }
    }

    pub fn rename(root: &OwnedFd, from: &[u8], to: &[u8]) {
        let (from_dir, from_name) = parent(root, from);
        let (to_dir, to_name) = parent(root, to);
        rustix::fs::renameat(&from_dir, from_name.as_slice(), &to_dir, to_name.as_slice()).unwrap();
    }
}

/// A random name: any bytes but `/` and NUL, never `.`, `..` or one the checkpoint rules
/// treat specially (`.git`, ignore files); mostly short, sometimes long (chains past PATH_MAX).
fn random_name(rng: &mut fastrand::Rng, long: bool) -> Vec<u8> {
    loop {
        let len = if long { rng.usize(30..60) } else { rng.usize(1..8) };
        let name: Vec<u8> = (0..len)
            .map(|_| match rng.usize(0..4) {
                0 => rng.u8(b'a'..=b'z'),
                _ => loop {
                    let b = rng.u8(1..=255);
                    if b != b'/' {
                        break b;
                    }
                },
            })
            .collect();
        let special = name == b"." || name == b".." || name.starts_with(b".git") || name.starts_with(b".ignore");
        if !special {
            return name;
        }
    }
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    if dir.is_empty() {
        return name.to_vec();
    }
    let mut path = dir.to_vec();
    path.push(b'/');
    path.extend_from_slice(name);
    path
}

/// Paths of `kind` in the tree now.
fn of_kind(tree: &BTreeMap<Vec<u8>, support::bytes_tree::Node>, dirs: bool) -> Vec<Vec<u8>> {
    tree.iter()
        .filter(|(_, n)| matches!(n, support::bytes_tree::Node::Dir { .. }) == dirs)
        .map(|(p, _)| p.clone())
        .collect()
}

/// Grows a random tree (or changes one, as a turn does): files, chains of directories, links.
fn random_effect(
    rng: &mut fastrand::Rng,
    root: &std::os::fd::OwnedFd,
    at: &Path,
    tool: Option<&brute::beneath::Root>,
) -> Option<Vec<u8>> {
    use support::bytes_tree::{self, Node};
    let tree = bytes_tree::read(at);
    let dirs = of_kind(&tree, true);
    let others = of_kind(&tree, false);
    let any_dir = |rng: &mut fastrand::Rng| {
        if dirs.is_empty() || rng.usize(0..3) == 0 {
            Vec::new()
        } else {
            dirs[rng.usize(0..dirs.len())].clone()
        }
    };
    let content = |rng: &mut fastrand::Rng| -> Vec<u8> { (0..rng.usize(0..48)).map(|_| rng.u8(..)).collect() };
    let file_mode = |rng: &mut fastrand::Rng| [0o600, 0o644, 0o755, 0o400, 0o4755][rng.usize(0..5)];
    let dir_mode = |rng: &mut fastrand::Rng| [0o700, 0o755, 0o750, 0o500][rng.usize(0..4)];
    let free = |rng: &mut fastrand::Rng, dir: &[u8]| loop {
        let path = join(dir, &random_name(rng, false));
        if !tree.contains_key(&path) {
            break path;
        }
    };
    // A tool writes (0..=2) or removes (4); everything else is a command's.
    let pick = if tool.is_some() {
        [0, 1, 2, 4][rng.usize(0..4)]
    } else {
        rng.usize(0..12)
    };
    match pick {
        // A file written by a built-in tool (new or over an existing file).
        0..=2 if tool.is_some() => {
            let path = match others
                .iter()
                .filter(|p| matches!(tree[*p], Node::File { .. }))
                .nth(rng.usize(0..4))
            {
                Some(existing) if rng.bool() => existing.clone(),
                _ => {
                    let dir = any_dir(rng);
                    free(rng, &dir)
                }
            };
            let rel = std::path::PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&path));
            tool?.write(&rel, &content(rng)).unwrap();
            return Some(path);
        }
        0..=2 => {
            let dir = any_dir(rng);
            let path = free(rng, &dir);
            fdtree::write(root, &path, &content(rng), file_mode(rng));
        }
        // A chain of directories, sometimes deep, sometimes past PATH_MAX, with a leaf.
        3 => {
            let (depth, long) = match rng.usize(0..100) {
                0 => (rng.usize(100..=150), true),
                1..=3 => (rng.usize(20..=150), false),
                _ => (rng.usize(1..4), false),
            };
            let parent = any_dir(rng);
            let mut path = free(rng, &parent);
            fdtree::mkdir(root, &path, 0o755);
            for _ in 1..depth {
                path = join(&path, &random_name(rng, long));
                fdtree::mkdir(root, &path, dir_mode(rng) | 0o700);
            }
            fdtree::write(
                root,
                &join(&path, &random_name(rng, false)),
                &content(rng),
                file_mode(rng),
            );
        }
        _ if tool.is_some() && others.is_empty() => {}
        4 if !others.is_empty() => {
            let victim = &others[rng.usize(0..others.len())];
            if let Some(tool) = tool {
                let rel =
                    std::path::PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(victim));
                tool.remove(&rel, false).unwrap();
                return Some(victim.clone());
            }
            fdtree::remove(root, victim);
        }
        5 if !dirs.is_empty() => fdtree::remove(root, &dirs[rng.usize(0..dirs.len())]),
        6 if !others.is_empty() => {
            let from = &others[rng.usize(0..others.len())];
            let parent = any_dir(rng);
            let to = free(rng, &parent);
            if !to.starts_with(from) {
                fdtree::rename(root, from, &to);
            }
        }
        7 if !dirs.is_empty() => fdtree::chmod(root, &dirs[rng.usize(0..dirs.len())], dir_mode(rng)),
        8 if !others.is_empty() => {
            let file = &others[rng.usize(0..others.len())];
            if matches!(tree[file], Node::File { .. }) {
                fdtree::chmod(root, file, file_mode(rng));
            }
        }
        9 => {
            let target: Vec<u8> = match rng.usize(0..4) {
                0 => b"../outside".to_vec(),
                1 => b"/etc/passwd".to_vec(),
                2 => random_name(rng, false),
                _ => (0..rng.usize(1..30)).map(|_| rng.u8(1..=255)).collect(),
            };
            let parent = any_dir(rng);
            let path = free(rng, &parent);
            fdtree::symlink(root, &path, &target);
        }
        // A file replaced by a directory, or a directory by a file.
        10 if !others.is_empty() => {
            let path = &others[rng.usize(0..others.len())];
            fdtree::remove(root, path);
            fdtree::mkdir(root, path, 0o755);
            fdtree::write(root, &join(path, b"inside"), &content(rng), 0o644);
        }
        11 if !dirs.is_empty() => {
            let path = &dirs[rng.usize(0..dirs.len())];
            fdtree::remove(root, path);
            fdtree::write(root, path, &content(rng), file_mode(rng));
        }
        _ => {}
    }
    None
}

/// One case of [`any_tree_and_any_turn_undo_and_redo_byte_for_byte`].
fn property_case(p: &Project, recorder: &mut Recorder, seed: u64) {
    use support::bytes_tree;
    let mut rng = fastrand::Rng::with_seed(seed);
    // A fresh tree for each case, made between turns.
    let fd = fdtree::root(p.root());
    for (name, _) in bytes_tree::read(p.root())
        .into_iter()
        .filter(|(n, _)| !n.contains(&b'/'))
    {
        fdtree::remove(&fd, &name);
    }
    for _ in 0..rng.usize(0..12) {
        random_effect(&mut rng, &fd, p.root(), None);
    }
    let start = bytes_tree::read(p.root());
    let mut history = Vec::new();
    recorder.begin_turn(&format!("case {seed}"), 0).unwrap();
    let real = p.root().canonicalize().unwrap();
    let tool = brute::beneath::Root::open(&real).unwrap();
    let spans = std::sync::Arc::new(brute::busy::Spans::default());
    let mut work = brute::session::TurnWork::default();
    for _ in 0..rng.usize(1..8) {
        if rng.bool() {
            if let Some(path) = random_effect(&mut rng, &fd, p.root(), Some(&tool)) {
                let abs = real.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&path));
                // Through descriptors: the path may be longer than PATH_MAX.
                let (dir, name) = fdtree::parent(&fd, &path);
                let ctime = rustix::fs::openat(
                    &dir,
                    name.as_slice(),
                    rustix::fs::OFlags::PATH | rustix::fs::OFlags::NOFOLLOW,
                    rustix::fs::Mode::empty(),
                )
                .ok()
                .and_then(|fd| std::fs::File::from(fd).metadata().ok())
                .map(|m| {
                    use std::os::unix::fs::MetadataExt;
                    m.ctime() as u64 * 1_000_000_000 + m.ctime_nsec() as u64
                });
                work.wrote.push(abs.clone());
                work.last_writes.push((abs, ctime));
            }
        } else {
            let _busy = spans.try_open().expect("nothing holds the session quiet");
            random_effect(&mut rng, &fd, p.root(), None);
        }
    }
    work.busy = spans.since(brute::busy::Mark::ORIGIN);
    let end = bytes_tree::read(p.root());
    recorder.end_turn(&work).unwrap();
    recorder.undo(&mut history, false, false, false).unwrap().unwrap();
    let undone = bytes_tree::read(p.root());
    assert!(
        undone == start,
        "seed {seed} (BRUTE_PROPTEST_SEED={seed} BRUTE_PROPTEST_CASES=1 reruns it): undo: {}",
        difference(&start, &undone)
    );
    recorder.redo(&mut history, false, false).unwrap().unwrap();
    let redone = bytes_tree::read(p.root());
    assert!(
        redone == end,
        "seed {seed} (BRUTE_PROPTEST_SEED={seed} BRUTE_PROPTEST_CASES=1 reruns it): redo: {}",
        difference(&end, &redone)
    );
}

/// The first few paths where two trees differ, and how (for failure messages).
fn difference(
    expected: &BTreeMap<Vec<u8>, support::bytes_tree::Node>,
    found: &BTreeMap<Vec<u8>, support::bytes_tree::Node>,
) -> String {
    let shown = |p: &[u8]| {
        let text = p.escape_ascii().to_string();
        if text.len() > 120 {
            format!("…{}", &text[text.len() - 100..])
        } else {
            text
        }
    };
    let mut lines = Vec::new();
    for (path, node) in expected {
        match found.get(path) {
            None => lines.push(format!(
                "missing {} ({} levels)",
                shown(path),
                path.split(|b| *b == b'/').count()
            )),
            Some(other) if other != node => lines.push(format!("differs {}: {node:?} / {other:?}", shown(path))),
            _ => {}
        }
    }
    for path in found.keys().filter(|p| !expected.contains_key(*p)) {
        lines.push(format!(
            "extra {} ({} levels)",
            shown(path),
            path.split(|b| *b == b'/').count()
        ));
    }
    let total = lines.len();
    lines.truncate(8);
    format!("{total} paths differ:\n  {}", lines.join("\n  "))
}
