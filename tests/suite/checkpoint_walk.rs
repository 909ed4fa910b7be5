//! Issue 14, the walk: a turn's checkpoint runs beside the model request and is complete
//! before the first tool runs; a tree over the checkpoint budget gets no turn checkpoints, says
//! so, and /undo still takes back the built-in tools' writes.
//!
//! The checkpoint is held back with the `BRUTE_TEST_HOLD_CHECKPOINT` seam (a FIFO the first
//! walk of the process waits on), so every ordering here is forced, never timed.

use crate::support;

use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use brute::agent::Agent;
use brute::protocol::Event;
use brute::session::checkpoint::{self, Budget};
use brute::session::{Recorder, SessionStore};
use support::{MockServer, Reply, Sandbox, Streaming, mkfifo, openai_sse};

/// Lets the held walk go (blocks until brute's walk has the FIFO open).
fn release(fifo: &Path) {
    let mut file = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
    file.write_all(b"go\n").unwrap();
}

/// A project of 60 files in 6 directories and `a.txt` ("before\n"), whose trusted config
/// sets the checkpoint budget (50 entries) below its size.
fn over_budget_project() -> Sandbox {
    let sb = Sandbox::new();
    for i in 0..60 {
        sb.write(&format!("d{}/f{i}.txt", i % 6), "x\n");
    }
    sb.write("a.txt", "before\n");
    sb.write(".brute/config.toml", "checkpoint_max_entries = 50\n");
    sb.trust();
    sb
}

/// The one session file of the sandbox's project.
fn session_file(sb: &Sandbox) -> std::path::PathBuf {
    let projects = std::fs::read_dir(sb.home.path().join("data/sessions")).unwrap();
    let files: Vec<_> = projects
        .flatten()
        .flat_map(|p| std::fs::read_dir(p.path()).unwrap().flatten().map(|f| f.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "one session file: {files:?}");
    files[0].clone()
}

/// The model's first request leaves while the turn's checkpoint is still held; its `write`
/// call waits for the checkpoint (the stream says so), which therefore records the file as it
/// was, before any tool result in the session file; `brute undo` then takes the write back.
#[test]
fn the_request_goes_out_while_the_checkpoint_is_held_and_the_write_waits_for_it() {
    let sb = Sandbox::new();
    sb.write("a.txt", "before\n");
    let fifo = sb.home.path().join("hold");
    mkfifo(&fifo);
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("c1", "write", r#"{"file_path":"a.txt","content":"after\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("done", &[])));
    let mut cmd = sb.std_brute(&server);
    cmd.env("BRUTE_TEST_HOLD_CHECKPOINT", &fifo);
    let mut run = Streaming::start(cmd, "edit a.txt");
    run.until(|line| line.contains(r#""type":"checkpoint_waiting""#) && line.contains(r#""waiting":true"#));
    // The walk has not even started, yet the model was asked and answered.
    assert_eq!(
        server.requests().len(),
        1,
        "the first request went out beside the checkpoint"
    );
    assert_eq!(
        std::fs::read_to_string(sb.path("a.txt")).unwrap(),
        "before\n",
        "the write waits"
    );
    release(&fifo);
    run.rest();
    let status = run.child.wait().unwrap();
    assert!(status.success(), "{:?}", run.seen);
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "after\n");
    let text = std::fs::read_to_string(session_file(&sb)).unwrap();
    let line_of = |needle: &str| {
        text.lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle} in the session file:\n{text}"))
    };
    assert!(
        line_of(r#""type":"checkpoint""#) < line_of(r#""type":"tool_result""#),
        "the checkpoint record precedes the turn's tool results:\n{text}"
    );
    sb.bare().arg("undo").assert().success();
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "before\n");
}

/// A project over the checkpoint budget (set low here; the default is far above this tree):
/// the first turn says turn checkpoints are off and why (once: the second turn does not say it
/// again), the conversation still runs, and each turn records what its built-in tools changed
/// — a `write` over a file, a `write` into directories it makes, a recursive `remove` — so
/// `/undo` takes back whole turns, newest first, while what a command changed stays.
#[test]
fn over_the_budget_turns_record_the_tools_changes_and_undo_takes_them_back() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = root.path();
    for i in 0..60 {
        let dir = r.join(format!("d{}", i % 6));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    std::fs::write(r.join("a.txt"), "before\n").unwrap();
    let store = SessionStore::new(data.path(), r);
    let mut recorder = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
    recorder.set_budget(Budget {
        entries: 50,
        ..Budget::default()
    });
    let script = r#"{"tool_calls": [{"name": "write", "arguments": {"file_path": "a.txt", "content": "after\n"}}, {"name": "shell", "arguments": {"command": "echo by a command > c.txt"}}]}
{"text": "done"}
{"tool_calls": [{"name": "write", "arguments": {"file_path": "new/deeper/made.txt", "content": "made\n"}}, {"name": "remove", "arguments": {"path": "d3", "recursive": true}}, {"name": "patch", "arguments": {"file_path": "ghost.txt", "old_string": "a", "new_string": "b"}}]}
{"tool_calls": [{"name": "shell", "arguments": {"command": "echo by a command > ghost.txt"}}]}
{"text": "done"}"#;
    let (mut agent, mut events) = support::replay_agent(r, recorder, script);
    let before = snapshot(r);
    run(&mut agent, "edit");
    let after_first = snapshot(r);
    run(&mut agent, "more");
    let mut notices = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let Event::Notice { message } = event {
            notices.push(message);
        }
    }
    let off: Vec<&String> = notices
        .iter()
        .filter(|n| n.contains("turn checkpoints are off for this session"))
        .collect();
    assert_eq!(off.len(), 1, "said once: {notices:?}");
    assert!(
        off[0].contains("more than 50 files and directories") && off[0].contains("turn by turn"),
        "{off:?}"
    );
    assert_eq!(std::fs::read_to_string(r.join("a.txt")).unwrap(), "after\n");
    assert_eq!(
        std::fs::read_to_string(r.join("new/deeper/made.txt")).unwrap(),
        "made\n"
    );
    assert!(!r.join("d3").exists());
    let turns = agent.with_recorder(|r| r.turns.clone()).unwrap();
    assert_eq!(turns.len(), 2, "{turns:?}");
    assert!(turns.iter().all(|t| t.tools_only));
    assert!(!agent.undoes_calls(), "undo takes back turns");
    // `/diff all`: both turns' changes, and nothing else.
    let (_, diff, files) = agent.with_recorder(|r| r.diff(true)).unwrap().unwrap().unwrap();
    assert!(
        diff.contains("+after") && diff.contains("+made") && diff.contains("-file 3"),
        "{diff}"
    );
    assert!(!diff.contains("c.txt") && !diff.contains("d0/"), "{diff}");
    assert_eq!(
        files, 15,
        "a.txt; new, new/deeper, made.txt; d3 and its 10 files: {diff}"
    );

    // The `patch` of a file that did not exist failed: it made nothing, so the file a command
    // made there later in the turn is not the tools', and undo leaves it.
    let (message, _) = agent.undo(false, false, false);
    assert!(message.contains("undid turn 2"), "{message}");
    assert_eq!(std::fs::read_to_string(r.join("ghost.txt")).unwrap(), "by a command\n");
    std::fs::remove_file(r.join("ghost.txt")).unwrap();
    assert_eq!(snapshot(r), after_first, "{message}");
    let (message, _) = agent.undo(false, false, false);
    assert!(message.contains("restored a.txt"), "{message}");
    let mut expected = before;
    // A command's change is not the tools': it stays.
    expected.insert("c.txt".into(), (Some(b"by a command\n".to_vec()), 0o644));
    assert_eq!(snapshot(r), expected, "{message}");
    let (message, _) = agent.redo(false, false);
    assert!(message.contains("redid turn 1"), "{message}");
    assert_eq!(std::fs::read_to_string(r.join("a.txt")).unwrap(), "after\n");
    // A turn whose tools change nothing is a turn too: it ends what redo may re-apply, and
    // undo takes it back (the conversation only) before turn 1.
    run(&mut agent, "just talk");
    let turns = agent.with_recorder(|r| r.turns.clone()).unwrap();
    assert_eq!(turns.len(), 3, "{turns:?}");
    let (message, _) = agent.redo(false, false);
    assert!(message.contains("nothing to redo"), "{message}");
    let (message, _) = agent.undo(false, false, false);
    assert!(
        message.contains("undid turn 3") && message.contains("no file changes"),
        "{message}"
    );
}

/// A turn that started under the budget and never recorded its end (brute killed), then a
/// turn over the budget: the first turn's end is not taken from the second's start (which
/// holds only some paths), so its undo fails with a clear error and changes nothing, where it
/// would otherwise have compared the whole tree with a handful of paths.
#[test]
fn an_unfinished_turn_is_never_ended_by_a_turn_over_the_budget() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = root.path();
    for i in 0..60 {
        std::fs::write(r.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    let store = SessionStore::new(data.path(), r);
    let mut rec = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
    rec.begin_turn("one", 0).unwrap();
    std::fs::write(r.join("f1.txt"), "changed in turn one\n").unwrap();
    // Killed before the turn's end; the tree is over a (lowered) budget from here on.
    rec.set_budget(Budget {
        entries: 50,
        ..Budget::default()
    });
    let notice = rec.begin_turn("two", 0).unwrap_err();
    assert!(notice.to_string().contains("turn checkpoints are off"), "{notice}");
    rec.end_turn(&brute::session::TurnWork::all_by_commands()).unwrap();
    assert!(rec.turns[1].tools_only && !rec.turns[0].tools_only);
    let before = snapshot(r);
    let mut history = Vec::new();
    let undone = rec.undo(&mut history, false, false, false).unwrap().unwrap();
    assert_eq!(undone.turn, 2);
    assert!(undone.report.moved.is_empty(), "{:?}", undone.report);
    let error = rec.undo(&mut history, false, false, false).unwrap_err();
    assert!(error.to_string().contains("more than 50"), "{error}");
    assert_eq!(snapshot(r), before, "nothing changed");
}

/// `brute -p` over the budget killed (SIGKILL) right after its tools ran: what they were about
/// to change was recorded as each call finished, so `brute undo` takes the killed turn back:
/// the overwritten file restored, the file and directories it made removed.
#[test]
fn a_killed_turn_over_the_budget_is_still_undone() {
    let sb = over_budget_project();
    let before = snapshot(sb.project.path());
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("w", "write", r#"{"file_path":"a.txt","content":"after\n"}"#),
            (
                "n",
                "write",
                r#"{"file_path":"new/deeper/made.txt","content":"made\n"}"#,
            ),
        ],
    )));
    server.push(Reply::sse(openai_sse("never", &[])).stall());
    let mut run = Streaming::start(sb.std_brute(&server), "edit");
    run.until(|line| line.contains(r#""type":"tool_result""#));
    run.until(|line| line.contains(r#""type":"tool_result""#));
    // The answer that follows the results is asked for only after both are recorded.
    run.until(|line| line.contains(r#""type":"request_started""#));
    run.child.kill().unwrap();
    run.child.wait().unwrap();
    assert!(sb.path("new/deeper/made.txt").exists());
    sb.bare().arg("undo").assert().success();
    assert_eq!(snapshot(sb.project.path()), before);
}

/// An agent over a replay script in `root`, recording into a new session whose checkpoints
/// use the file watcher.
fn watched_agent(root: &Path, data: &Path, script: &str) -> Agent {
    let store = SessionStore::new(data, root);
    let mut recorder = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
    recorder.watch_tree().expect("inotify");
    support::replay_agent(root, recorder, script).0
}

fn run(agent: &mut Agent, prompt: &str) {
    support::run_turn(agent, prompt);
}

/// What differs in content, kind or mode between a stored checkpoint and a full walk of the
/// tree now (made without a watcher): empty when the checkpoint is exact.
fn differs_from_disk(agent: &Agent, root: &Path, id: &str) -> Vec<String> {
    let objects = agent.with_recorder(|r| r.store.objects().clone()).unwrap();
    let stored = checkpoint::load_manifest(&objects, id).unwrap();
    let mut fresh = checkpoint::Scanner::new(root.to_path_buf(), objects, 1 << 20);
    let walked = fresh.scan().unwrap().manifest;
    let paths: std::collections::BTreeSet<&str> = stored.keys().chain(walked.keys()).collect();
    paths
        .into_iter()
        .filter(|p| match (stored.get(p), walked.get(p)) {
            (Some(a), Some(b)) => !a.same_content(b),
            _ => true,
        })
        .map(|p| format!("{p}: stored {:?}, on disk {:?}", stored.get(p), walked.get(p)))
        .collect()
}

fn snapshot(root: &Path) -> std::collections::BTreeMap<String, (Option<Vec<u8>>, u32)> {
    support::tree_snapshot(root)
}

/// With the file watcher, the turn's end re-lists only the touched directories, yet sees a
/// `sed -i` (a rename over the file), a file made in a new subdirectory, a removal and a
/// mode change made by a shell command: the checkpoint equals a full walk, and undo restores
/// the tree exactly. Then an overflow (injected: the events so far are lost) makes the next
/// checkpoint walk the whole tree, so the person's edit the lost events carried is still in
/// it, and undo is exact again.
#[test]
fn watched_checkpoints_see_commands_changes_and_an_overflow_falls_back_to_a_full_walk() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir_all(r.join("sub/inner")).unwrap();
    std::fs::write(r.join("sub/sed.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(r.join("sub/inner/keep.txt"), "keep\n").unwrap();
    std::fs::write(r.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(r.join("person.txt"), "mine\n").unwrap();
    std::fs::write(r.join("later.txt"), "one\n").unwrap();
    std::fs::write(r.join(".gitignore"), "*.log\n").unwrap();
    let script = r#"{"tool_calls": [{"name": "shell", "arguments": {"command": "sed -i 's/alpha/ALPHA/' sub/sed.txt && mkdir -p fresh/deeper && echo new > fresh/deeper/made.txt && rm gone.txt && chmod 700 sub/inner && echo noise > build.log"}}]}
{"text": "done"}
{"tool_calls": [{"name": "shell", "arguments": {"command": "echo two >> later.txt"}}]}
{"text": "done"}"#;
    let mut agent = watched_agent(r, data.path(), script);
    let before = snapshot(r);
    run(&mut agent, "change things");
    assert_eq!(
        std::fs::read_to_string(r.join("fresh/deeper/made.txt")).unwrap(),
        "new\n"
    );
    let walked = agent.with_recorder(|r| r.last_walk()).unwrap();
    let gaps = agent.with_recorder(|r| r.watch_gaps()).unwrap();
    assert_eq!(
        walked,
        checkpoint::Walked::Touched,
        "the turn's end used the watcher: {gaps:?}"
    );
    let end = agent.with_recorder(|r| r.turns[0].end.clone().unwrap()).unwrap();
    assert_eq!(differs_from_disk(&agent, r, &end), Vec::<String>::new());
    let (message, _) = agent.undo(false, false, false);
    let mut expected = before.clone();
    // The ignored log stays (it was never checkpointed).
    expected.insert("build.log".into(), (Some(b"noise\n".to_vec()), 0o644));
    let after_undo = snapshot(r);
    assert_eq!(after_undo, expected, "{message}");
    std::fs::remove_file(r.join("build.log")).unwrap();

    // The person edits a file; the events saying so are lost in an overflow.
    std::fs::write(r.join("person.txt"), "mine, edited\n").unwrap();
    agent.with_recorder(|r| r.inject_watch_overflow());
    let before = snapshot(r);
    run(&mut agent, "append");
    let start = agent.with_recorder(|r| r.turns.last().unwrap().start.clone()).unwrap();
    let end = agent
        .with_recorder(|r| r.turns.last().unwrap().end.clone().unwrap())
        .unwrap();
    assert_eq!(differs_from_disk(&agent, r, &end), Vec::<String>::new());
    // The start was walked whole: it has the person's edit, so undo leaves it alone.
    let objects = agent.with_recorder(|r| r.store.objects().clone()).unwrap();
    let started = checkpoint::load_manifest(&objects, &start).unwrap();
    assert_eq!(
        objects.get(&started["person.txt"].id).unwrap(),
        b"mine, edited\n",
        "the fallback walk saw the change the lost events carried"
    );
    let gaps = agent.with_recorder(|r| r.watch_gaps()).unwrap();
    assert_eq!(gaps, [brute::session::watch::Gap::Overflow]);
    let (message, _) = agent.undo(false, false, false);
    assert_eq!(snapshot(r), before, "{message}");
}

/// Files `d00/f0.txt` … in 40 directories, past [`checkpoint::SMALL_TREE`]: a tree this big
/// is watched rather than walked again. File `i` holds `i` and a newline.
fn big_tree(r: &Path) {
    for i in 0..checkpoint::SMALL_TREE + 100 {
        let dir = r.join(format!("d{:02}", i % 40));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
    }
}

/// A one-shot run (`brute -p`) in a tree too big to walk twice for free: its turn starts no
/// file watcher while the model only answers, and starts one only when the first command is
/// about to run. That turn's end then re-lists only what the watcher saw and what the built-in
/// tools wrote before it started, and is still exact: it equals a full walk, and undo restores
/// the tree byte for byte.
#[test]
fn a_one_shot_run_watches_the_tree_only_from_its_first_command() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = root.path();
    big_tree(r);
    std::fs::write(r.join("d01/sed.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(r.join("d02/gone.txt"), "bye\n").unwrap();
    let script = r#"{"text": "nothing to run"}
{"tool_calls": [{"name": "write", "arguments": {"file_path": "d03/written.txt", "content": "by the write tool\n"}}]}
{"tool_calls": [{"name": "shell", "arguments": {"command": "sed -i 's/alpha/ALPHA/' d01/sed.txt && rm d02/gone.txt && mkdir -p fresh/deeper && echo new > fresh/deeper/made.txt && chmod 700 d04"}}]}
{"text": "done"}"#;
    let store = SessionStore::new(data.path(), r);
    let mut recorder = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
    recorder.watch_tree_when_big(checkpoint::WatchFrom::FirstWalk);
    let (mut agent, _events) = support::replay_agent(r, recorder, script);
    // As `brute -p` sets it up: the watcher waits for the first command.
    agent.watch_tree_from_first_command();

    run(&mut agent, "just answer");
    assert!(
        !agent.with_recorder(|r| r.watching()).unwrap(),
        "a turn that ran no command started no watcher"
    );

    let before = snapshot(r);
    run(&mut agent, "change things");
    assert!(agent.with_recorder(|r| r.watching()).unwrap(), "the command started it");
    let gaps = agent.with_recorder(|r| r.watch_gaps()).unwrap();
    assert_eq!(
        agent.with_recorder(|r| r.last_walk()).unwrap(),
        checkpoint::Walked::Touched,
        "the turn's end re-listed what was touched: {gaps:?}"
    );
    assert_eq!(
        std::fs::read_to_string(r.join("d03/written.txt")).unwrap(),
        "by the write tool\n"
    );
    assert_eq!(std::fs::read_to_string(r.join("d01/sed.txt")).unwrap(), "ALPHA\nbeta\n");
    let end = agent.with_recorder(|r| r.turns[1].end.clone().unwrap()).unwrap();
    assert_eq!(differs_from_disk(&agent, r, &end), Vec::<String>::new());
    let (message, _) = agent.undo(false, false, false);
    assert_eq!(snapshot(r), before, "{message}");
}

/// A directory swapped for a link pointing out of the project before the first command: the
/// watcher started then does not follow it (what the command writes through the link is
/// outside the tree, never recorded); a command's change elsewhere is still seen.
#[test]
fn a_watcher_started_at_the_first_command_does_not_follow_a_link_that_replaced_a_directory() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let r = root.path();
    big_tree(r);
    let objects = brute::session::objects::ObjectStore::new(data.path().join("objects"));
    let mut scanner = checkpoint::Scanner::new(r.to_path_buf(), objects, 1 << 20);
    scanner.watch_when_big(checkpoint::WatchFrom::FirstCommand);
    scanner.checkpoint().unwrap();
    assert!(scanner.watcher().is_none(), "no watcher before a command");
    std::fs::remove_dir_all(r.join("d05")).unwrap();
    std::os::unix::fs::symlink(outside.path(), r.join("d05")).unwrap();
    scanner.watch_for_commands();
    assert!(scanner.watcher().is_some());
    // The "command": writes through the link, and edits a file of the tree.
    std::fs::write(r.join("d05/through-the-link.txt"), "outside\n").unwrap();
    std::fs::write(r.join("d06/f6.txt"), "edited\n").unwrap();
    let (_, scan) = scanner.checkpoint().unwrap();
    assert_eq!(scanner.last_walk(), checkpoint::Walked::Touched);
    assert!(!scan.manifest.contains_key("d05/through-the-link.txt"));
    assert_ne!(scan.manifest["d06/f6.txt"].size, 2, "the edit was seen");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("through-the-link.txt")).unwrap(),
        "outside\n"
    );
}

/// SIGTERM while the turn's checkpoint is held (and the request hangs): the turn ends as
/// interrupted only after the checkpoint is complete and recorded, brute exits with 143, and
/// the session lists the turn with both its checkpoints; nothing in the tree changed.
#[test]
fn sigterm_while_the_checkpoint_is_held_loses_nothing() {
    let sb = Sandbox::new();
    sb.write("a.txt", "before\n");
    let fifo = sb.home.path().join("hold");
    mkfifo(&fifo);
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse("never", &[])).stall());
    let mut cmd = sb.std_brute(&server);
    cmd.env("BRUTE_TEST_HOLD_CHECKPOINT", &fifo);
    let mut run = Streaming::start(cmd, "hang");
    run.until(|line| line.contains(r#""type":"request_started""#));
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(run.child.id() as i32, libc::SIGTERM) };
    run.until(|line| line.contains(r#""type":"checkpoint_waiting""#) && line.contains(r#""waiting":true"#));
    release(&fifo);
    run.rest();
    assert_eq!(run.child.wait().unwrap().code(), Some(143), "{:?}", run.seen);
    let text = std::fs::read_to_string(session_file(&sb)).unwrap();
    assert!(text.contains(r#""type":"checkpoint""#), "{text}");
    assert!(text.contains(r#""type":"turn_end""#), "{text}");
    let listed = sb.bare().args(["undo", "--list"]).assert().success();
    let out = String::from_utf8_lossy(&listed.get_output().stdout).into_owned();
    assert!(out.contains("turn   1") && out.contains("done"), "{out}");
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "before\n");
}

/// The issue's synthetic 200,000-file tree (1,000 directories of 200 small files), as in the
/// UI: the file watcher runs, a turn makes a `write` and a `sed -i` (a command: only the
/// watcher or a walk can see it), the turn's end re-lists only the two touched directories,
/// and undo restores the whole tree exactly.
#[test]
fn a_200_000_file_tree_undoes_a_write_and_a_sed_i() {
    // In memory where there is a tmpfs: writing 200,000 files to this machine's disk takes
    // 20-70 s of kernel time, in memory a few seconds (the walk and undo are the same).
    let shm = Path::new("/dev/shm");
    let root = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let data = tempfile::tempdir().unwrap();
    let r = root.path();
    for d in 0..1_000 {
        let dir = r.join(format!("d{d:03}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..200 {
            std::fs::write(dir.join(format!("f{f:03}.txt")), format!("file {d} {f}\n")).unwrap();
        }
    }
    let script = r#"{"tool_calls": [{"name": "write", "arguments": {"file_path": "d500/f100.txt", "content": "rewritten\n"}}, {"name": "shell", "arguments": {"command": "sed -i 's/file/FILE/' d700/f007.txt"}}]}
{"text": "done"}"#;
    let mut agent = watched_agent(r, data.path(), script);
    let before = snapshot(r);
    assert_eq!(before.len(), 201_000);
    run(&mut agent, "change two files");
    assert_eq!(std::fs::read_to_string(r.join("d500/f100.txt")).unwrap(), "rewritten\n");
    assert_eq!(
        std::fs::read_to_string(r.join("d700/f007.txt")).unwrap(),
        "FILE 700 7\n"
    );
    let walked = agent.with_recorder(|r| r.last_walk()).unwrap();
    let gaps = agent.with_recorder(|r| r.watch_gaps()).unwrap();
    assert_eq!(walked, checkpoint::Walked::Touched, "{gaps:?}");
    let (message, _) = agent.undo(false, false, false);
    assert!(
        message.contains("d500/f100.txt") && message.contains("d700/f007.txt"),
        "{message}"
    );
    assert!(snapshot(r) == before, "the tree is as before the turn: {message}");
}

/// From the shell, as a person would: `brute -p` in a project over the checkpoint budget (set
/// low in its trusted config) says turn checkpoints are off, and `brute undo` in a new process
/// takes back what the turn's `write` calls changed, leaving the file the person edited since
/// alone and saying so; `brute redo` puts the write back.
#[test]
fn brute_p_over_the_budget_then_brute_undo_takes_back_the_tools_changes() {
    use predicates::prelude::*;
    let sb = over_budget_project();
    sb.write("keep.txt", "mine\n");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[
            ("w", "write", r#"{"file_path":"a.txt","content":"after\n"}"#),
            ("k", "write", r#"{"file_path":"keep.txt","content":"the agent's\n"}"#),
            (
                "e",
                "write",
                r#"{"file_path":"esc\u001b]0;owned\u0007.txt","content":"named\n"}"#,
            ),
        ],
    )));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    sb.brute(&server)
        .args(["-p", "edit"])
        .assert()
        .success()
        .stderr(predicate::str::contains("turn checkpoints are off for this session"));
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "after\n");
    std::fs::write(sb.path("keep.txt"), "mine, edited after the turn\n").unwrap();
    sb.bare()
        .args(["undo", "--list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("3 paths changed"));
    sb.bare()
        .arg("undo")
        .assert()
        .success()
        .stdout(predicate::str::contains("restored a.txt").and(predicate::str::contains("keep.txt")))
        // The made file's name is printed without its escape sequence.
        .stdout(predicate::str::contains("esc").and(predicate::str::contains("\u{1b}").not()));
    assert!(!sb.path("esc\u{1b}]0;owned\u{7}.txt").exists());
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "before\n");
    assert_eq!(
        std::fs::read_to_string(sb.path("keep.txt")).unwrap(),
        "mine, edited after the turn\n",
        "the person's edit is never overwritten"
    );
    sb.bare().arg("redo").assert().success();
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "after\n");
}

/// A turn over the budget whose records of what its tools were about to change are lost (a
/// damaged file): its start no longer holds the file the `write` overwrote, and undo must not
/// take that file for one the turn made (it would delete it). It leaves it as it is.
#[test]
fn a_turn_over_the_budget_with_its_start_lost_never_deletes_what_it_did_not_make() {
    let sb = over_budget_project();
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[("w", "write", r#"{"file_path":"a.txt","content":"after\n"}"#)],
    )));
    server.push(Reply::sse(openai_sse("Done.", &[])));
    sb.brute(&server).args(["-p", "edit"]).assert().success();
    let path = session_file(&sb);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(r#""type":"tools_turn""#) && text.contains(r#""type":"touched""#),
        "{text}"
    );
    let damaged: String = text
        .lines()
        .filter(|line| !line.contains(r#""type":"touched""#))
        .map(|line| {
            let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(fields) = record.as_object_mut() {
                fields.remove("tools_start");
            }
            format!("{record}\n")
        })
        .collect();
    std::fs::write(&path, damaged).unwrap();
    sb.bare().arg("undo").assert().success();
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "after\n");
}

/// Hostile paths in a turn over the budget, each with a defined outcome: a `write` through a
/// link pointing out of the project and a `write` to `../` (whatever the tools' guards let
/// happen outside, undo never touches it: it is not recorded), a `write` over a file bigger
/// than `checkpoint_max_file_bytes` (its earlier content cannot be kept: the turn lists it,
/// undo leaves it), a `write` to a FIFO (refused, nothing blocks), and a file whose name holds
/// an escape sequence (made, and removed again by undo).
#[test]
fn over_the_budget_hostile_paths_have_defined_outcomes() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = root.path();
    for i in 0..60 {
        std::fs::write(r.join(format!("f{i}.txt")), "x\n").unwrap();
    }
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), r.join("out")).unwrap();
    std::fs::write(r.join("big.bin"), vec![b'a'; 4096]).unwrap();
    mkfifo(&r.join("pipe"));
    let store = SessionStore::new(data.path(), r);
    let mut recorder = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1024);
    recorder.set_budget(Budget {
        entries: 50,
        ..Budget::default()
    });
    let escape = format!("{}/../escape.txt", r.display());
    let script = format!(
        r#"{{"tool_calls": [{{"name": "write", "arguments": {{"file_path": "out", "content": "through the link\n"}}}}, {{"name": "write", "arguments": {{"file_path": "{escape}", "content": "escaped\n"}}}}, {{"name": "write", "arguments": {{"file_path": "big.bin", "content": "small now\n"}}}}, {{"name": "write", "arguments": {{"file_path": "pipe", "content": "x"}}}}, {{"name": "write", "arguments": {{"file_path": "esc\u001b]0;owned\u0007.txt", "content": "named\n"}}}}]}}
{{"text": "done"}}"#
    );
    let (mut agent, _events) = support::replay_agent(r, recorder, &script);
    run(&mut agent, "hostile");
    let outside_after = snapshot(outside.path());
    let parent_escape = r.parent().unwrap().join("escape.txt");
    let escaped_after = std::fs::read(&parent_escape).ok();
    let named = "esc\u{1b}]0;owned\u{7}.txt";
    assert_eq!(std::fs::read_to_string(r.join(named)).unwrap(), "named\n");
    assert_eq!(std::fs::read_to_string(r.join("big.bin")).unwrap(), "small now\n");
    let turn = agent.with_recorder(|r| r.turns[0].clone()).unwrap();
    assert!(
        turn.tools_only && turn.skipped.contains(&"big.bin".to_owned()),
        "{turn:?}"
    );

    let (message, _) = agent.undo(false, false, false);
    assert!(message.contains("undid turn 1"), "{message}");
    assert!(!r.join(named).exists(), "{message}");
    assert_eq!(
        std::fs::read_to_string(r.join("big.bin")).unwrap(),
        "small now\n",
        "left as it is"
    );
    assert!(
        std::fs::symlink_metadata(r.join("pipe")).unwrap().file_type().is_fifo(),
        "the FIFO is still a FIFO"
    );
    assert!(
        std::fs::symlink_metadata(r.join("out"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        snapshot(outside.path()),
        outside_after,
        "undo never touches what is outside"
    );
    assert_eq!(std::fs::read(&parent_escape).ok(), escaped_after);
    let _ = std::fs::remove_file(parent_escape);
}

/// A turn whose only change is the `undo` tool putting back an earlier turn's write (no
/// command ran, and `undo` snapshots nothing) still records that change: its end lists the
/// file again, and `/undo` of that turn brings the write back.
#[test]
fn the_undo_tools_change_is_the_turns_and_is_undone_with_it() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir(r.join("sub")).unwrap();
    std::fs::write(r.join("sub/a.txt"), "old\n").unwrap();
    let script = r#"{"tool_calls": [{"name": "write", "arguments": {"file_path": "sub/a.txt", "content": "new\n"}}]}
{"text": "written"}
{"tool_calls": [{"name": "undo", "arguments": {"path": "sub/a.txt"}}]}
{"text": "put back"}"#;
    let mut agent = watched_agent(r, data.path(), script);
    run(&mut agent, "write it");
    assert_eq!(std::fs::read_to_string(r.join("sub/a.txt")).unwrap(), "new\n");
    run(&mut agent, "take it back");
    assert_eq!(std::fs::read_to_string(r.join("sub/a.txt")).unwrap(), "old\n");
    let end = agent.with_recorder(|r| r.turns[1].end.clone().unwrap()).unwrap();
    assert_eq!(differs_from_disk(&agent, r, &end), Vec::<String>::new());
    let (message, _) = agent.undo(false, false, false);
    assert_eq!(
        std::fs::read_to_string(r.join("sub/a.txt")).unwrap(),
        "new\n",
        "undoing the second turn brings the write back: {message}"
    );
}
