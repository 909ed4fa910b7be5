//! Sessions and checkpoints:
//! - the checkpoint before a turn in a 10,000-file project: the first (everything hashed and
//!   stored; target ≤ 2 s) and the next ones (incremental by metadata; target ≤ 100 ms);
//! - resuming a 5,000-message session (read, replay, ready for the next request; ≤ 300 ms).
//!
//! Run: `cargo bench --bench sessions`.

use std::time::Instant;

use brute::provider::{Message, ToolCall};
use brute::session::{Record, Recorder, SessionStore};

mod support;

use support::{median, ms, old_project, source_file};

fn main() {
    let project = tempfile::tempdir().expect("temp dir");
    let data = tempfile::tempdir().expect("temp dir");
    old_project(project.path(), 10_000, 100);
    let store = SessionStore::new(data.path(), project.path());
    let mut recorder = Recorder::new(
        store.clone(),
        store.create().expect("session"),
        &Default::default(),
        10 << 20,
    );
    let started = Instant::now();
    recorder.begin_turn("first", 0).expect("checkpoint");
    let first = started.elapsed();
    let mut next = Vec::new();
    for turn in 0..10 {
        for k in 0..3 {
            std::fs::write(
                project.path().join(source_file(turn * 3 + k, 100)),
                format!("changed {turn}"),
            )
            .expect("edit");
        }
        let t = Instant::now();
        recorder
            .end_turn(&brute::session::TurnWork::all_by_commands())
            .expect("checkpoint");
        recorder.begin_turn("next", 0).expect("checkpoint");
        next.push(t.elapsed() / 2);
    }
    // A new session of the same project starts from the last known state of the tree.
    let mut fresh = Recorder::new(
        store.clone(),
        store.create().expect("session"),
        &Default::default(),
        10 << 20,
    );
    let t = Instant::now();
    fresh.begin_turn("new session", 0).expect("checkpoint");
    println!(
        "checkpoint, first of a new session of the same project: {:6.1} ms",
        ms(t.elapsed())
    );
    println!(
        "checkpoint, 10,000 files: first {:8.1} ms (target ≤ 2000)   incremental median {:6.1} ms, max {:6.1} ms (target ≤ 100)",
        ms(first),
        ms(median(next.clone())),
        ms(*next.iter().max().expect("runs"))
    );

    // A 5,000-message session: user prompts, assistant calls and tool results.
    let resume_store = SessionStore::new(data.path(), &project.path().join("src"));
    let mut file = resume_store.create().expect("session");
    for i in 0..1250 {
        let call = ToolCall::new(format!("c{i}"), "read", format!("{{\"file_path\":\"src/f{i}.rs\"}}"));
        let messages = [
            Message::user(format!("step {i}: please look at src/f{i}.rs and fix the bug")),
            Message::Assistant {
                text: "Reading it.".into(),
                tool_calls: vec![call],
                reasoning: Vec::new(),
            },
            Message::Tool {
                call_id: format!("c{i}"),
                name: "read".into(),
                content: "1\tfn main() {}\n".repeat(20),
                is_error: false,
                images: Vec::new(),
            },
            Message::Assistant {
                text: format!("Fixed step {i}: the loop bound was off by one."),
                tool_calls: Vec::new(),
                reasoning: Vec::new(),
            },
        ];
        for message in messages {
            file.append(&Record::Message { message }).expect("append");
        }
    }
    let id = file.id.clone();
    drop(file);
    let mut times = Vec::new();
    let mut count = 0;
    for _ in 0..10 {
        let t = Instant::now();
        let (file, loaded) = resume_store.open(&id).expect("open");
        count = loaded.history.len();
        let recorder = Recorder::new(resume_store.clone(), file, &loaded, 10 << 20);
        times.push(t.elapsed());
        drop(recorder);
    }
    println!(
        "resume a {count}-message session: median {:6.1} ms, max {:6.1} ms (target ≤ 300)",
        ms(median(times.clone())),
        ms(*times.iter().max().expect("runs"))
    );
}
