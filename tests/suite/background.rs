//! Background processes through the real binary against the mock provider: `shell` with
//! `run_in_background` returns at once with an id, `shell_output` reads what it printed,
//! `shell_kill` stops its whole group, and `brute -p` ends without waiting for one and leaves
//! none behind. Processes are found by a unique argument in /proc (commands run in their own
//! PID namespace, so their pids mean nothing here).

use crate::support;

use serde_json::json;
use support::{Gate, MockServer, Reply, Sandbox, openai_sse, tool_results};

/// A token no other process's command line holds.
fn token(n: u32) -> String {
    format!("{}{n}", std::process::id())
}

/// The content of the result of call `id` in the `n`th request.
fn result_of(server: &MockServer, n: usize, id: &str) -> String {
    let requests = server.requests();
    tool_results(&requests[n])
        .into_iter()
        .find(|(call, _)| call == id)
        .map(|(_, content)| content)
        .unwrap_or_else(|| panic!("no result for {id} in request {n}: {:?}", requests[n].body))
}

#[test]
fn a_background_command_is_read_while_it_runs_and_killed_with_its_group() {
    let sb = Sandbox::new();
    let marker = format!("30.{}", token(1));
    let command = format!("for i in 1 2 3; do echo tick$i; sleep 1; done; sleep {marker}");
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "start",
            "shell",
            // A background command has no timeout: this one only cuts a run that was not.
            &json!({"command": command, "run_in_background": true, "timeout": 5}).to_string(),
        )],
    )));
    let (read, kill, done) = (Gate::default(), Gate::default(), Gate::default());
    server.push(Reply::sse(openai_sse("", &[("read", "shell_output", r#"{"id":"bg1","wait":30}"#)])).after(&read));
    server.push(Reply::sse(openai_sse("", &[("kill", "shell_kill", r#"{"id":"bg1"}"#)])).after(&kill));
    server.push(Reply::sse(openai_sse("Stopped it.", &[])).after(&done));
    let out = sb.home.path().join("out.jsonl");
    let mut child = sb
        .std_brute(&server)
        .args(["-p", "run the ticker", "--output-format", "events"])
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _deadline = support::deadline(&child, 120);

    // `shell` came back at once, while the command runs on.
    read.arrived();
    let started = result_of(&server, 1, "start");
    assert!(started.starts_with("Started in the background as bg1."), "{started}");
    assert!(started.contains("[bg1 is still running"), "{started}");
    assert!(!support::processes_with(&marker).is_empty(), "the command runs");
    read.release();

    // `shell_output` waited for what it printed next.
    kill.arrived();
    let output = result_of(&server, 2, "read");
    assert!(output.contains("tick"), "{output}");
    assert!(output.contains("[bg1 is still running"), "{output}");
    assert!(
        format!("{started}{output}").contains("tick1\n"),
        "tick1 in the first output or the read: {started} / {output}"
    );
    kill.release();

    // `shell_kill` stopped the whole group, while brute still runs.
    done.arrived();
    let killed = result_of(&server, 3, "kill");
    assert!(killed.contains("[bg1 was stopped (TERM, then KILL"), "{killed}");
    assert_eq!(
        support::processes_with(&marker),
        Vec::<String>::new(),
        "nothing of it is left"
    );
    done.release();

    assert!(child.wait().unwrap().success());
    let events = std::fs::read_to_string(&out).unwrap();
    for name in [
        "\"shell_output\"",
        "\"shell_kill\"",
        r#"{"type":"background_changed","running":1}"#,
        r#"{"type":"background_changed","running":0}"#,
    ] {
        assert!(events.contains(name), "{name} in the stream-json output:\n{events}");
    }
}

#[test]
fn brute_p_ends_with_a_background_command_running_and_leaves_none() {
    let sb = Sandbox::new();
    // Far longer than the run's deadline: brute must not wait for it.
    let marker = format!("1000.{}", token(2));
    let server = MockServer::start();
    server.push(Reply::sse(openai_sse(
        "",
        &[(
            "start",
            "shell",
            &json!({"command": format!("sleep {marker} & sleep {marker}"), "run_in_background": true, "timeout": 5})
                .to_string(),
        )],
    )));
    let done = Gate::default();
    server.push(Reply::sse(openai_sse("Started it.", &[])).after(&done));
    let mut child = sb
        .std_brute(&server)
        .args(["-p", "start a server", "--output-format", "json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _deadline = support::deadline(&child, 60);
    done.arrived();
    assert!(result_of(&server, 1, "start").contains("[bg1 is still running"));
    assert!(support::processes_with(&marker).len() >= 2, "both sleeps run");
    done.release();
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "{status:?} (killed by the deadline: brute waited for it)"
    );
    support::wait_gone(&marker);
}

/// What a background process writes belongs to the turn running when it writes: started in
/// turn 1, it writes `during.txt` while turn 2 runs (turn 2's undo takes it back, listed as
/// changed while a command ran, never kept as the person's edit), and `between.txt` while
/// brute is idle between the turns (no turn's: turn 2 starts from it, and turn 1's undo
/// leaves it alone as changed since). FIFOs order the writes; nothing sleeps.
#[test]
fn a_background_process_writes_are_the_turns_in_which_they_happen() {
    use brute::protocol::Event;
    use brute::session::{Recorder, SessionStore};
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::write(r.join("during.txt"), "before\n").unwrap();
    std::fs::write(r.join("between.txt"), "before\n").unwrap();
    for fifo in ["a.fifo", "b.fifo", "c.fifo"] {
        support::mkfifo(&r.join(fifo));
    }
    let store = SessionStore::new(data.path(), r);
    let recorder = Recorder::new(store.clone(), store.create().unwrap(), &Default::default(), 1 << 20);
    let command = "read x < a.fifo; echo from-bg > between.txt; echo written > b.fifo; read y < c.fifo; echo from-bg > during.txt";
    let script = format!(
        "{}\n{}\n{}\n{}",
        json!({"tool_calls": [
            {"name": "shell", "arguments": {"command": command, "run_in_background": true}},
            {"name": "write", "arguments": {"file_path": "between.txt", "content": "turn 1\n"}},
        ]}),
        json!({"text": "started"}),
        json!({"tool_calls": [{"name": "shell_output", "arguments": {"id": "bg1", "wait": 60}}]}),
        json!({"text": "done"}),
    );
    let (mut agent, mut events) = support::replay_agent(r, recorder, &script);
    // One runtime for both turns: the process lives as long as the session.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fifo = |name: &str| r.join(name);
    runtime.block_on(async {
        agent.run_turn("start it".into()).await;
        // Between the turns: it writes between.txt, and says so through b.fifo.
        let (a, b) = (fifo("a.fifo"), fifo("b.fifo"));
        tokio::task::spawn_blocking(move || {
            std::fs::write(a, "go\n").unwrap();
            assert_eq!(std::fs::read_to_string(b).unwrap(), "written\n");
        })
        .await
        .unwrap();
        // During turn 2 (once its shell_output call runs): it writes during.txt and exits.
        let c = fifo("c.fifo");
        let release = async move {
            while let Some(event) = events.recv().await {
                if matches!(&event, Event::ToolCallStarted { name, .. } if name == "shell_output") {
                    tokio::task::spawn_blocking(move || std::fs::write(c, "go\n").unwrap())
                        .await
                        .unwrap();
                    return;
                }
            }
        };
        tokio::join!(agent.run_turn("wait for it".into()), release);
    });
    assert_eq!(std::fs::read_to_string(r.join("during.txt")).unwrap(), "from-bg\n");
    let output = agent.history().iter().rev().find_map(|m| match m {
        brute::provider::Message::Tool { content, .. } => Some(content.clone()),
        _ => None,
    });
    assert!(
        output
            .as_deref()
            .is_some_and(|o| o.contains("[bg1 has exited (code 0)]")),
        "{output:?}"
    );

    let (undid, _) = agent.undo(false, false, false);
    assert!(
        undid.contains("changed while a command of the turn ran, so taken as the turn's: during.txt"),
        "{undid}"
    );
    assert_eq!(std::fs::read_to_string(r.join("during.txt")).unwrap(), "before\n");
    assert_eq!(
        std::fs::read_to_string(r.join("between.txt")).unwrap(),
        "from-bg\n",
        "turn 2 started from it: {undid}"
    );

    let (undid, _) = agent.undo(false, false, false);
    assert!(
        undid.contains("skipped between.txt: changed since the agent's turn"),
        "{undid}"
    );
    assert_eq!(std::fs::read_to_string(r.join("between.txt")).unwrap(), "from-bg\n");
}

/// Output that piles up unread is kept as a foreground command's is: the end in memory, the
/// rest in a file of the overflow directory that the read names, and the result cut to the
/// universal caps keeping the end.
#[test]
fn unread_output_past_the_memory_cap_spills_to_a_file_the_read_names() {
    let h = support::Harness::new(Vec::new());
    support::mkfifo(&h.path("go.fifo"));
    support::mkfifo(&h.path("done.fifo"));
    let (started, err) = h.call(
        "shell",
        json!({"command": "read x < go.fifo; yes 0123456789abcdefghij | head -n 200000; echo done > done.fifo; echo the-end", "run_in_background": true}),
    );
    assert!(!err && started.contains("[bg1 is still running"), "{started}");
    std::fs::write(h.path("go.fifo"), "go\n").unwrap();
    // All but what the pipe and the channel still hold has been read by brute now.
    assert_eq!(std::fs::read_to_string(h.path("done.fifo")).unwrap(), "done\n");
    let (read, err) = h.call("shell_output", json!({"id": "bg1"}));
    assert!(!err, "{read}");
    assert!(
        read.starts_with("[Output truncated: showing the last"),
        "{}",
        &read[..200]
    );
    let note = read
        .lines()
        .find(|l| l.starts_with("[output: ") && l.contains("too long to keep"))
        .unwrap_or_else(|| panic!("a spill note in {}", &read[read.len() - 600..]));
    let saved = note
        .split("All of it was saved to ")
        .nth(1)
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or_else(|| panic!("{note}"));
    let saved = std::fs::read_to_string(saved).unwrap();
    assert!(saved.len() > 1024 * 1024, "{}", saved.len());
    // What had arrived at the read, from its start: whole lines, the last maybe cut short.
    let lines: Vec<&str> = saved.lines().collect();
    let (last, whole) = lines.split_last().unwrap();
    assert!(
        whole.iter().all(|l| *l == "0123456789abcdefghij" || *l == "the-end"),
        "{}",
        &saved[..200]
    );
    assert!(
        ["0123456789abcdefghij", "the-end"].iter().any(|l| l.starts_with(last)),
        "{last:?}"
    );
    // The rest, and the exit, come with later reads if they had not yet.
    let mut all = read.clone();
    while !all.contains("[bg1 has exited (code 0)]") {
        let (more, err) = h.call("shell_output", json!({"id": "bg1", "wait": 60}));
        assert!(!err, "{more}");
        all.push_str(&more);
    }
    assert!(all.contains("the-end\n"), "{}", &all[all.len() - 300..]);
}
