//! Issue 14, the walk: a turn's checkpoint runs beside the model request and is complete
//! before the first tool runs; a tree over the checkpoint budget gets no turn checkpoints, says
//! so, and /undo still takes back the built-in tools' writes.
//!
//! The checkpoint is held back with the `BRUTE_TEST_HOLD_CHECKPOINT` seam (a FIFO the first
//! walk of the process waits on), so every ordering here is forced, never timed.

mod support;

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use brute::agent::state::AgentState;
use brute::agent::{Agent, AgentConfig};
use brute::protocol::{Event, EventSink};
use brute::provider::replay::ReplayProvider;
use brute::session::checkpoint::Budget;
use brute::session::{Recorder, SessionStore};
use brute::tool::exec::Executor;
use support::{MockServer, Reply, Sandbox, Streaming, openai_sse};

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates a node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Lets the held walk go (blocks until brute's walk has the FIFO open).
fn release(fifo: &Path) {
    let mut file = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
    file.write_all(b"go\n").unwrap();
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
/// the turn says turn checkpoints are off and why, the conversation still runs, and `/undo`
/// takes back the `write` (one call) while a command's change stays.
#[test]
fn over_the_budget_checkpoints_are_off_with_a_notice_and_undo_takes_back_the_write() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    for i in 0..60 {
        let dir = root.path().join(format!("d{}", i % 6));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    std::fs::write(root.path().join("a.txt"), "before\n").unwrap();
    let store = SessionStore::new(data.path(), root.path());
    let mut recorder = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
    recorder.set_budget(Budget {
        entries: 50,
        ..Budget::default()
    });
    let script = r#"{"tool_calls": [{"name": "write", "arguments": {"file_path": "a.txt", "content": "after\n"}}]}
{"text": "done"}"#;
    let provider = Arc::new(ReplayProvider::from_script(script).unwrap());
    let state = Arc::new(AgentState::new(
        provider,
        "replay".into(),
        100,
        root.path().to_path_buf(),
    ));
    let (sink, mut events) = EventSink::channel();
    let executor = Executor::new(
        Arc::new(brute::app::builtin_tools()),
        Arc::default(),
        state.clone(),
        sink.clone(),
    );
    let config = AgentConfig {
        system_prompt: "test".into(),
        max_turns: 10,
    };
    let mut agent = Agent::new(state, executor, config, sink).with_session(recorder, Vec::new());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (_tx, mut ops) = tokio::sync::mpsc::unbounded_channel();
    runtime.block_on(agent.run_turn("edit".into(), &mut ops));
    let mut notices = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let Event::Notice { message } = event {
            notices.push(message);
        }
    }
    assert!(
        notices
            .iter()
            .any(|n| n.contains("turn checkpoints are off for this session")
                && n.contains("more than 50 files and directories")
                && n.contains("one call at a time")),
        "{notices:?}"
    );
    assert_eq!(std::fs::read_to_string(root.path().join("a.txt")).unwrap(), "after\n");
    assert!(
        agent.with_recorder(|r| r.turns.is_empty()).unwrap(),
        "no turn checkpoint"
    );
    assert!(agent.undoes_calls());
    let (message, _) = agent.undo(true, false, false);
    assert!(message.contains("a.txt"), "{message}");
    assert_eq!(std::fs::read_to_string(root.path().join("a.txt")).unwrap(), "before\n");
    // The next turn does not walk again: the notice came once.
    let count = notices
        .iter()
        .filter(|n| n.contains("turn checkpoints are off"))
        .count();
    assert_eq!(count, 1, "{notices:?}");
}
