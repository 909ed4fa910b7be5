//! The UI in a real terminal (tmux) while the session's first checkpoint is held back (the
//! `BRUTE_TEST_HOLD_CHECKPOINT` seam, a FIFO): the person types and sends a prompt at once,
//! the model is asked, and the `write` it calls waits for the checkpoint with a status line
//! note; released, the turn finishes and /undo takes the write back.

use crate::support;

use std::io::Write;

use support::tmux::Tmux;
use support::{MockServer, Reply, Sandbox, openai_sse};

#[test]
fn the_ui_takes_a_prompt_while_the_first_checkpoint_is_held_and_the_write_waits_for_it() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "original\n");
    let fifo = sb.home.path().join("hold");
    support::mkfifo(&fifo);
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "Editing. ",
        &[(
            "w1",
            "write",
            r#"{"file_path":"notes.txt","content":"changed by the agent\n"}"#,
        )],
    )));
    server.push(Reply::sse(openai_sse("I changed notes.txt.", &[])));
    let env = format!("BRUTE_TEST_HOLD_CHECKPOINT='{}'", fifo.display());
    let Some(tmux) = Tmux::start_in(&sb, &server, "held", "", sb.project.path(), &env) else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("please edit notes");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the write waiting for the first checkpoint", |s| {
        s.contains("waiting for the first checkpoint…")
    });
    assert!(screen.contains("please edit notes"), "the prompt was taken:\n{screen}");
    assert_eq!(server.requests().len(), 1, "the model was asked meanwhile");
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "original\n");
    let mut release = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    release.write_all(b"go\n").unwrap();
    drop(release);
    tmux.wait_for("the finished turn", |s| {
        s.contains("I changed notes.txt.") && s.contains(" idle │")
    });
    assert_eq!(
        std::fs::read_to_string(sb.path("notes.txt")).unwrap(),
        "changed by the agent\n"
    );
    tmux.text("/undo");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the undo dialog", |s| s.contains("Undo the last turn"));
    tmux.keys(&["Enter"]);
    // "undid", not the dialog's "undo": the move is done, not only previewed.
    tmux.wait_for("the undo report", |s| {
        s.contains("undid turn 1") && s.contains("restored notes.txt (+1 -1)")
    });
    assert_eq!(std::fs::read_to_string(sb.path("notes.txt")).unwrap(), "original\n");
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
}
