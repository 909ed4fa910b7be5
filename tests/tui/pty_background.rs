//! Background processes in the real UI (tmux): the status line counts them, `/ps` lists them
//! with their last line and kills one, and one that ends between turns is noted in the next
//! prompt the model gets. Skipped (saying so) where tmux is not installed.

use crate::support;

use serde_json::json;
use support::tmux::Tmux;
use support::{MockServer, Reply, Sandbox, openai_sse};

#[test]
fn ps_lists_and_kills_background_processes_and_an_ended_one_is_noted() {
    let sb = Sandbox::new();
    support::mkfifo(&sb.path("gate.fifo"));
    let tok = std::process::id();
    let marker = format!("1000.{tok}7");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "s1",
            "shell",
            &json!({"command": format!("echo serving-{tok}; sleep {marker}"), "run_in_background": true}).to_string(),
        )],
    )));
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "s2",
            "shell",
            &json!({"command": format!("cat gate.fifo >/dev/null; echo finished-{tok}"), "run_in_background": true})
                .to_string(),
        )],
    )));
    server.push(Reply::sse(openai_sse("Both started.", &[])));
    let left_running = format!("1000.{tok}8");
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "s3",
            "shell",
            &json!({"command": format!("sleep {left_running}"), "run_in_background": true}).to_string(),
        )],
    )));
    server.push(Reply::sse(openai_sse("Noted.", &[])));
    let Some(tmux) = Tmux::start(&sb, &server, "ps") else {
        return;
    };
    tmux.wait_for("the composer", |s| s.contains("Ask brute to do something"));
    tmux.text("start two servers");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the turn's end with two running", |s| {
        s.contains("Both started.") && s.contains(" idle │ 2 bg │")
    });

    tmux.text("/ps");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the /ps list", |s| {
        s.contains("background processes (/ps kill ID stops one)")
    });
    for shown in [
        "bg1".to_owned(),
        format!("echo serving-{tok}; sleep {marker}"),
        format!("└ serving-{tok}"),
        "bg2".to_owned(),
        "running".to_owned(),
    ] {
        assert!(screen.contains(&shown), "{shown:?} in:\n{screen}");
    }
    assert!(!support::processes_with(&marker).is_empty(), "bg1 runs");

    tmux.text("/ps kill bg1");
    tmux.keys(&["Enter"]);
    tmux.wait_for("one left running", |s| {
        s.contains("stopping bg1: TERM to its process group") && s.contains(" idle │ 1 bg │")
    });
    assert_eq!(
        support::processes_with(&marker),
        Vec::<String>::new(),
        "bg1's group is gone"
    );

    // bg2 ends between turns: the status line says so, and the next prompt tells the model.
    std::fs::write(sb.path("gate.fifo"), "go\n").unwrap();
    tmux.wait_for("none running", |s| {
        s.contains(" idle │ workspace-write") || s.contains(" idle │ read-only")
    });
    tmux.text("anything new?");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer", |s| s.contains("Noted.") && s.contains(" idle │ 1 bg │"));
    let requests = server.requests();
    let prompt = requests[3].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_owned();
    assert!(prompt.starts_with("anything new?"), "{prompt}");
    assert!(
        prompt.contains("[background process bg2 (`cat gate.fifo >/dev/null; echo finished-")
            && prompt.contains("has ended: exited 0"),
        "{prompt}"
    );
    assert!(
        prompt.contains("[background process bg1 (`echo serving-") && prompt.contains("has ended: stopped"),
        "the model hears that the person stopped bg1 too: {prompt}"
    );

    tmux.text("/ps");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the list again", |s| s.contains("exited 0"));
    assert!(screen.contains("stopped"), "{screen}");
    assert!(screen.contains(&format!("└ finished-{tok}")), "{screen}");

    // Quitting the UI ends the one still running.
    assert!(screen.contains(" idle │ 1 bg │"), "{screen}");
    assert!(!support::processes_with(&left_running).is_empty());
    tmux.text("/quit");
    tmux.keys(&["Enter"]);
    tmux.wait_for("brute to exit", |s| s.contains("BRUTE-EXITED-0"));
    support::wait_gone(&left_running);
}
