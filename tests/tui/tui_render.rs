//! Snapshots of the interactive UI on ratatui's TestBackend: every tool pane state, each
//! dialog variant, Markdown with code, the status line states, popups, a 60x20 terminal.

use brute::protocol::{
    Attachment, Display, Event, Failure, Question, QuestionOption, RequestKind, Response, ToolResult, TurnOutcome,
    Usage,
};
use brute::tui::app::{App, SessionInfo};
use brute::tui::view;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

fn app() -> App {
    let session = SessionInfo {
        sandbox: brute::permission::Mode::WorkspaceWrite,
        base_url: "http://127.0.0.1:1/v1".into(),
        session_id: None,
        effort: None,
        provider: "openai".into(),
        model: "gpt-test".into(),
        cwd: "~/project".into(),
    };
    App::new(
        session,
        vec!["read".into(), "write".into()],
        vec!["src/main.rs".into(), "src/lib.rs".into(), "README.md".into()],
    )
}

fn render(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| view::draw(frame, app)).unwrap();
    terminal.backend().to_string()
}

fn key(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c));
    }
}

/// How the built-in tool `name` asks to be shown (what the executor would send).
fn display_of(name: &str) -> Display {
    brute::app::builtin_tools()
        .get(name)
        .map_or(Display::Text, |t| t.display())
}

fn started_event(id: &str, name: &str, args: serde_json::Value) -> Event {
    Event::ToolCallStarted {
        call_id: id.into(),
        name: name.into(),
        summary: brute::tool::key_argument(&args),
        arguments: args,
        display: display_of(name),
    }
}

fn started(app: &mut App, id: &str, name: &str, args: serde_json::Value) {
    app.on_event(started_event(id, name, args));
}

fn finished_event(id: &str, name: &str, content: &str, is_error: bool, ms: u64) -> Event {
    Event::ToolResult(ToolResult {
        call_id: id.into(),
        name: name.into(),
        content: content.into(),
        is_error,
        duration_ms: ms,
        display: display_of(name),
        images: Vec::new(),
        failure: is_error.then_some(brute::protocol::Failure::Error),
    })
}

fn finished(app: &mut App, id: &str, name: &str, content: &str, is_error: bool, ms: u64) {
    app.on_event(finished_event(id, name, content, is_error, ms));
}

fn user_turn(app: &mut App, text: &str) {
    typed(app, text);
    key(app, KeyCode::Enter);
    app.on_event(Event::TurnStarted { prompt: text.into() });
}

#[test]
fn tool_panes_running_ok_error_and_diff() {
    let mut a = app();
    user_turn(&mut a, "fix the bug");
    a.on_event(Event::TextDelta {
        text: "Looking at the code.".into(),
    });
    started(&mut a, "1", "shell", json!({"command": "cargo test"}));
    a.on_event(Event::ToolOutputDelta {
        call_id: "1".into(),
        chunk: "running 3 tests\ntest a ... ok\n".into(),
    });
    started(&mut a, "2", "read", json!({"file_path": "src/main.rs"}));
    finished(
        &mut a,
        "2",
        "read",
        "1\tfn main() {\n2\t    println!(\"hi\");\n3\t}\n",
        false,
        3,
    );
    started(&mut a, "3", "read", json!({"file_path": "src/mian.rs"}));
    finished(
        &mut a,
        "3",
        "read",
        "Error: NotFound: File not found: src/mian.rs. Did you mean: src/main.rs?",
        true,
        1,
    );
    started(
        &mut a,
        "4",
        "patch",
        json!({"file_path": "src/main.rs", "old_string": "hi", "new_string": "hello"}),
    );
    finished(
        &mut a,
        "4",
        "patch",
        "Replaced 1 occurrence in src/main.rs.\n\n--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,3 +1,3 @@\n fn main() {\n-    println!(\"hi\");\n+    println!(\"hello\");\n }\n",
        false,
        12,
    );
    insta::assert_snapshot!(render(&mut a, 80, 34));
}

#[test]
fn failures_get_their_marks_and_running_panes_their_time() {
    let mut a = app();
    let failed = |a: &mut App, id: &str, name: &str, content: &str, is_error: bool, failure: Failure| {
        let display = display_of(name);
        a.on_event(Event::ToolResult(ToolResult {
            call_id: id.into(),
            name: name.into(),
            content: content.into(),
            is_error,
            duration_ms: 5,
            display,
            images: Vec::new(),
            failure: Some(failure),
        }));
    };
    started(&mut a, "1", "shell", json!({"command": "exit 3"}));
    failed(&mut a, "1", "shell", "oops\n[exit code: 3]", false, Failure::Exit(3));
    started(&mut a, "2", "write", json!({"file_path": "/etc/x", "content": "x"}));
    failed(
        &mut a,
        "2",
        "write",
        "Error: Denied: outside the project",
        true,
        Failure::Denied,
    );
    started(&mut a, "3", "question", json!({"questions": [{"question": "Which?"}]}));
    failed(
        &mut a,
        "3",
        "question",
        "The user declined to answer.",
        false,
        Failure::Declined,
    );
    started(&mut a, "4", "shell", json!({"command": "sleep 60"}));
    failed(
        &mut a,
        "4",
        "shell",
        "Error: Interrupted: killed",
        true,
        Failure::Interrupted,
    );
    started(&mut a, "5", "shell", json!({"command": "cargo build"}));
    // 42 seconds of spinner ticks later.
    a.tick += 42 * brute::tui::transcript::TICKS_PER_SECOND;
    insta::assert_snapshot!(render(&mut a, 70, 20));
}

#[test]
fn attachments_show_as_chips_not_text() {
    let mut a = app();
    a.on_event(Event::TurnStarted {
        prompt: "compare @notes.txt with @src".into(),
    });
    for (path, lines) in [("notes.txt", Some(120)), ("src", None)] {
        a.on_event(Event::Attached {
            attachment: Attachment {
                path: path.into(),
                lines,
            },
        });
    }
    insta::assert_snapshot!(render(&mut a, 60, 8));
}

#[test]
fn tool_pane_collapsed_and_expanded() {
    let mut a = app();
    started(&mut a, "1", "read", json!({"file_path": "big.txt"}));
    let long: String = (1..=20).map(|i| format!("{i}\tline {i}\n")).collect();
    finished(&mut a, "1", "read", &long, false, 2);
    let collapsed = render(&mut a, 60, 14);
    a.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let expanded = render(&mut a, 60, 26);
    insta::assert_snapshot!("collapsed", collapsed);
    insta::assert_snapshot!("expanded", expanded);
}

#[test]
fn sub_agent_activity_sits_in_its_pane() {
    let mut a = app();
    started(
        &mut a,
        "t",
        "task",
        json!({"task": "find the parser", "description": "find parser"}),
    );
    let nested = |event| Event::Nested {
        parent_call_id: "t".into(),
        event: Box::new(event),
    };
    a.on_event(nested(started_event("s1", "fs_search", json!({"pattern": "parse"}))));
    a.on_event(nested(finished_event(
        "s1",
        "fs_search",
        "src/config.rs:3:fn parse",
        false,
        4,
    )));
    a.on_event(nested(started_event(
        "s2",
        "read",
        json!({"file_path": "src/config.rs"}),
    )));
    insta::assert_snapshot!(render(&mut a, 60, 10));
}

#[test]
fn markdown_with_code_and_reasoning() {
    let mut a = app();
    user_turn(&mut a, "explain");
    a.on_event(Event::ReasoningDelta {
        text: "The user wants an explanation.\nKeep it short.".into(),
    });
    a.on_event(Event::TextDelta {
        text: "## Summary\n\nThe **parser** reads `config.toml`:\n\n1. opens the file\n2. parses it\n\n```rust\nfn parse(s: &str) -> Config {\n    toml::from_str(s).unwrap()\n}\n```\n\nSee [docs](https://example.com).".into(),
    });
    a.on_event(Event::TurnFinished {
        outcome: TurnOutcome::Done,
        text: String::new(),
    });
    let collapsed = render(&mut a, 70, 26);
    a.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    insta::assert_snapshot!("reasoning_collapsed", collapsed);
    insta::assert_snapshot!("reasoning_shown", render(&mut a, 70, 28));
}

fn question(text: &str, options: &[&str], multiple: bool, default: Option<&str>) -> Question {
    Question {
        question: text.into(),
        header: Some("Setup".into()),
        options: options
            .iter()
            .map(|l| QuestionOption {
                label: (*l).into(),
                description: Some(format!("use {l}")),
            })
            .collect(),
        multiple,
        default: default.map(Into::into),
    }
}

#[test]
fn question_dialog_variants() {
    let mut a = app();
    a.on_event(Event::Request {
        id: "q".into(),
        kind: RequestKind::Question {
            questions: vec![
                question(
                    "Which database should the service use?",
                    &["sqlite", "postgres"],
                    false,
                    Some("postgres"),
                ),
                question("Which features?", &["auth", "search", "billing"], true, None),
                question("Anything else?", &[], false, None),
            ],
        },
    });
    let single = render(&mut a, 70, 20);
    key(&mut a, KeyCode::Enter);
    key(&mut a, KeyCode::Char(' '));
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Char(' '));
    let multiple = render(&mut a, 70, 20);
    key(&mut a, KeyCode::Enter);
    typed(&mut a, "use port 8080");
    let free_text = render(&mut a, 70, 20);
    let actions = a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(
        actions,
        vec![brute::tui::app::Action::Op(brute::protocol::Op::Respond {
            id: "q".into(),
            response: Response::Answers {
                answers: vec!["postgres".into(), "auth, billing".into(), "use port 8080".into()]
            },
        })]
    );
    insta::assert_snapshot!("single", single);
    insta::assert_snapshot!("multiple", multiple);
    insta::assert_snapshot!("free_text", free_text);

    let mut a = app();
    a.on_event(Event::Request {
        id: "q2".into(),
        kind: RequestKind::Question {
            questions: vec![question("Proceed?", &["yes", "no"], false, None)],
        },
    });
    let actions = a.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert_eq!(
        actions,
        vec![brute::tui::app::Action::Op(brute::protocol::Op::Respond {
            id: "q2".into(),
            response: Response::Declined,
        })]
    );
    assert!(a.modals.is_empty());
}

#[test]
fn status_line_states() {
    let mut a = app();
    let idle = render(&mut a, 100, 3);
    user_turn(&mut a, "go");
    a.on_event(Event::Usage {
        usage: Usage {
            input_tokens: 12_345,
            output_tokens: 678,
            ..Usage::default()
        },
    });
    let thinking = render(&mut a, 100, 3);
    started(&mut a, "1", "shell", json!({"command": "sleep 1"}));
    started(&mut a, "2", "shell", json!({"command": "sleep 2"}));
    let running = render(&mut a, 100, 3);
    let last = |s: &str| s.lines().last().unwrap_or_default().to_owned();
    insta::assert_snapshot!("status_idle", last(&idle));
    insta::assert_snapshot!("status_thinking", last(&thinking));
    insta::assert_snapshot!("status_running", last(&running));
}

#[test]
fn the_status_line_keeps_state_mode_model_context_and_cost_as_it_narrows() {
    let mut a = app();
    a.session.provider = "anthropic".into();
    a.session.model = "claude-sonnet-4-5-20250929".into();
    a.session.cwd = "~/src/github.com/someone/a-long-project-name".into();
    user_turn(&mut a, "go");
    a.on_event(Event::Usage {
        usage: Usage {
            input_tokens: 12_345,
            output_tokens: 678,
            cache_read_tokens: 9_000,
            ..Usage::default()
        },
    });
    a.on_event(Event::ContextUsage {
        tokens: 84_000,
        window: Some(200_000),
    });
    a.on_event(Event::Cost { total_usd: 0.0421 });
    started(&mut a, "1", "shell", json!({"command": "sleep 1"}));
    let last = |s: &str| s.lines().last().unwrap_or_default().to_owned();
    let at_80 = last(&render(&mut a, 80, 24));
    for kept in [
        "running 1 tool",
        "workspace-write",
        "claude-sonnet-4-5",
        "ctx 42%",
        "$0.0421",
    ] {
        assert!(at_80.contains(kept), "{kept} is missing at 80 columns: {at_80}");
    }
    insta::assert_snapshot!("status_80", at_80);
    insta::assert_snapshot!("status_100", last(&render(&mut a, 100, 3)));
    insta::assert_snapshot!("status_120", last(&render(&mut a, 120, 3)));
    insta::assert_snapshot!("status_160", last(&render(&mut a, 160, 3)));
    insta::assert_snapshot!("status_210", last(&render(&mut a, 210, 3)));
}

#[test]
fn small_terminal_wide_chars_and_sanitized_output() {
    let mut a = app();
    user_turn(
        &mut a,
        "日本語のテキストと絵文字 🎉 を含む長いメッセージはきちんと折り返されるべきです",
    );
    started(&mut a, "1", "shell", json!({"command": "printf evil"}));
    finished(
        &mut a,
        "1",
        "shell",
        "\u{1b}]0;pwned\u{7}\u{1b}[2Jclean \u{1b}[31mred\u{1b}[0m text\n",
        false,
        5,
    );
    a.on_event(Event::TextDelta {
        text: "A very long line of assistant text that has to wrap several times on a sixty column terminal.".into(),
    });
    insta::assert_snapshot!(render(&mut a, 60, 20));
}

#[test]
fn popups_and_paste() {
    let mut a = app();
    typed(&mut a, "/");
    let commands = render(&mut a, 70, 16);
    key(&mut a, KeyCode::Backspace);
    typed(&mut a, "look at @mai");
    let files = render(&mut a, 70, 10);
    key(&mut a, KeyCode::Tab);
    assert_eq!(a.composer.text(), "look at @src/main.rs ");
    let big: String = (0..40).map(|i| format!("pasted line {i}\n")).collect();
    a.on_paste(&big);
    let paste = render(&mut a, 70, 8);
    insta::assert_snapshot!("slash_popup", commands);
    insta::assert_snapshot!("file_popup", files);
    insta::assert_snapshot!("large_paste", paste);
}

#[test]
fn scrolling_up_stops_following() {
    let mut a = app();
    for i in 0..30 {
        a.on_event(Event::Notice {
            message: format!("line {i}"),
        });
    }
    key(&mut a, KeyCode::PageUp);
    insta::assert_snapshot!(render(&mut a, 50, 12));
    key(&mut a, KeyCode::Esc);
    assert_eq!(a.scroll, 0);
}

#[test]
fn keys_send_ops() {
    use brute::protocol::Op;
    use brute::tui::app::Action;
    let mut a = app();
    typed(&mut a, "first line");
    a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
    typed(&mut a, "second");
    assert_eq!(
        a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
        vec![Action::Op(Op::UserTurn {
            text: "first line\nsecond".into()
        })]
    );
    assert_eq!(
        a.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)),
        vec![Action::Op(Op::Interrupt)]
    );
    a.on_event(Event::TurnFinished {
        outcome: TurnOutcome::Interrupted,
        text: String::new(),
    });
    typed(&mut a, "/undo");
    assert_eq!(
        a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
        vec![Action::Op(Op::Undo {
            force: false,
            partial: false
        })],
        "/undo asks the core, which answers with a confirmation request"
    );
    let undo_request = |a: &mut App, id: &str| {
        a.on_event(Event::Request {
            id: id.into(),
            kind: RequestKind::Undo {
                redo: false,
                summary: "undo turn 1 (\"go\"):\n  restored src/lib.rs (+1 -2)\n  deleted notes.txt (+0 -3)".into(),
            },
        });
    };
    undo_request(&mut a, "u1");
    let undo_dialog = render(&mut a, 70, 16);
    assert_eq!(
        a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
        vec![Action::Op(Op::Respond {
            id: "u1".into(),
            response: Response::Undo {
                rewind_conversation: true
            },
        })],
        "Enter takes the default: code and conversation"
    );
    undo_request(&mut a, "u2");
    assert_eq!(
        a.on_key(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE)),
        vec![Action::Op(Op::Respond {
            id: "u2".into(),
            response: Response::Undo {
                rewind_conversation: true
            },
        })],
        "y confirms"
    );
    undo_request(&mut a, "u3");
    key(&mut a, KeyCode::Down);
    assert_eq!(
        a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
        vec![Action::Op(Op::Respond {
            id: "u3".into(),
            response: Response::Undo {
                rewind_conversation: false
            },
        })]
    );
    undo_request(&mut a, "u4");
    assert_eq!(
        a.on_key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::NONE)),
        vec![Action::Op(Op::Respond {
            id: "u4".into(),
            response: Response::Declined,
        })]
    );
    insta::assert_snapshot!("undo_dialog", undo_dialog);
    typed(&mut a, "/nope");
    assert!(a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)).is_empty());
    assert!(a.transcript_text().contains("unknown command /nope; /help lists them"));
    key(&mut a, KeyCode::Up);
    assert_eq!(a.composer.text(), "/nope", "history");
    let ctrl_c = |a: &mut App| a.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(ctrl_c(&mut a).is_empty(), "a non-empty composer is cleared first");
    assert!(a.composer.is_empty());
    assert!(
        ctrl_c(&mut a).is_empty(),
        "then the first press on an idle, empty composer arms"
    );
    assert_eq!(ctrl_c(&mut a), vec![Action::Quit], "and the second quits");
}

#[test]
fn ctrl_c_interrupts_a_turn_declines_dialogs_and_prompts_queue() {
    use brute::protocol::Op;
    use brute::tui::app::Action;
    let mut a = app();
    user_turn(&mut a, "long job");
    let ctrl_c = |a: &mut App| a.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert_eq!(ctrl_c(&mut a), vec![Action::Op(Op::Interrupt)], "while a turn runs");
    assert_eq!(ctrl_c(&mut a), vec![Action::Op(Op::Interrupt)], "never quits mid-turn");
    // A dialog open during a turn: Ctrl-C declines it and interrupts.
    a.on_event(Event::Request {
        id: "q".into(),
        kind: RequestKind::Question {
            questions: vec![question("Proceed?", &["yes", "no"], false, None)],
        },
    });
    assert_eq!(
        ctrl_c(&mut a),
        vec![
            Action::Op(Op::Respond {
                id: "q".into(),
                response: Response::Declined
            }),
            Action::Op(Op::Interrupt)
        ]
    );
    assert!(a.modals.is_empty());
    // Prompts sent during the turn are queued and shown; Up takes the newest back.
    typed(&mut a, "next one");
    assert_eq!(
        a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
        vec![Action::Op(Op::UserTurn {
            text: "next one".into()
        })]
    );
    a.on_event(Event::QueueChanged {
        prompts: vec!["next one".into()],
    });
    let screen = render(&mut a, 60, 12);
    assert!(screen.contains("queued: next one"), "{screen}");
    assert_eq!(
        a.on_key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE)),
        vec![Action::Op(Op::Unqueue { index: 0 })]
    );
    assert_eq!(a.composer.text(), "next one");
    // An interrupt gives queued prompts back to the composer.
    a.composer.clear();
    a.on_event(Event::QueueReturned {
        prompts: vec!["a".into(), "b".into()],
    });
    assert_eq!(a.composer.text(), "a\n\nb");
    // Two requests at once queue instead of overwriting each other.
    for id in ["r1", "r2"] {
        a.on_event(Event::Request {
            id: id.into(),
            kind: RequestKind::Question {
                questions: vec![question("Which?", &["x"], false, None)],
            },
        });
    }
    assert_eq!(a.modals.len(), 2);
    assert!(render(&mut a, 70, 16).contains("1 more waiting"));
    a.on_event(Event::RequestClosed { id: "r1".into() });
    assert_eq!(a.modals.len(), 1);
    assert_eq!(a.modals[0].id(), "r2");
}

#[test]
fn a_scrolled_view_stays_put_while_output_arrives() {
    let mut a = app();
    for i in 0..30 {
        a.on_event(Event::Notice {
            message: format!("line {i}"),
        });
    }
    key(&mut a, KeyCode::PageUp);
    let before = render(&mut a, 50, 12);
    for i in 30..35 {
        a.on_event(Event::Notice {
            message: format!("line {i}"),
        });
    }
    let after = render(&mut a, 50, 12);
    let body = |s: &str| s.lines().take(5).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(body(&before), body(&after));
}

#[test]
fn a_restored_history_shows_panes_with_their_durations() {
    use brute::provider::{Message, ToolCall};
    let mut a = app();
    let messages = vec![
        Message::user("look"),
        Message::Assistant {
            text: "Reading.".into(),
            tool_calls: vec![ToolCall::new("r", "read", r#"{"file_path":"a.txt"}"#)],
            reasoning: Vec::new(),
        },
        Message::Tool {
            call_id: "r".into(),
            name: "read".into(),
            content: "1\thello".into(),
            is_error: false,
            images: Vec::new(),
        },
        Message::Assistant {
            text: "It says hello.".into(),
            tool_calls: Vec::new(),
            reasoning: Vec::new(),
        },
    ];
    a.on_event(Event::HistoryReplaced {
        messages,
        todos: Vec::new(),
        calls: [(
            "r".to_owned(),
            brute::protocol::CallView {
                summary: "a.txt".into(),
                display: Display::Text,
                duration_ms: 12,
                failure: None,
            },
        )]
        .into_iter()
        .collect(),
    });
    let screen = render(&mut a, 50, 14);
    assert!(screen.contains("✓ read  a.txt  12 ms"), "{screen}");
    assert!(screen.contains("It says hello."));
}

#[test]
fn random_keys_events_and_sizes_never_panic() {
    let keys = [
        KeyCode::Enter,
        KeyCode::Backspace,
        KeyCode::Delete,
        KeyCode::Left,
        KeyCode::Right,
        KeyCode::Up,
        KeyCode::Down,
        KeyCode::Home,
        KeyCode::End,
        KeyCode::PageUp,
        KeyCode::PageDown,
        KeyCode::Tab,
        KeyCode::Esc,
        KeyCode::Char('a'),
        KeyCode::Char('/'),
        KeyCode::Char('@'),
        KeyCode::Char(' '),
        KeyCode::Char('日'),
        KeyCode::Char('1'),
    ];
    for seed in 0..20u64 {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut a = app();
        for step in 0..300 {
            match rng.usize(0..10) {
                0..=5 => {
                    let code = keys[rng.usize(0..keys.len())];
                    let modifiers = [KeyModifiers::NONE, KeyModifiers::SHIFT, KeyModifiers::ALT][rng.usize(0..3)];
                    a.on_key(KeyEvent::new(code, modifiers));
                }
                6 => a.on_event(Event::TextDelta {
                    text: ["x", "\n", "# h\n", "```rs\nfn a(){}\n", "🎉 日本"][rng.usize(0..5)].into(),
                }),
                7 => started(
                    &mut a,
                    &format!("c{step}"),
                    ["shell", "read", "task"][rng.usize(0..3)],
                    json!({"command": "ls"}),
                ),
                8 => finished(
                    &mut a,
                    &format!("c{}", rng.usize(0..step + 1)),
                    "shell",
                    "out\n\u{1b}[31mred",
                    rng.bool(),
                    3,
                ),
                _ => {
                    if rng.bool() {
                        a.on_event(Event::Request {
                            id: format!("q{step}"),
                            kind: RequestKind::Question {
                                questions: vec![question("Q?", &["a", "b"][..rng.usize(0..3)], rng.bool(), None)],
                            },
                        });
                    } else {
                        a.on_event(Event::TurnFinished {
                            outcome: TurnOutcome::Done,
                            text: String::new(),
                        });
                    }
                }
            }
            if step % 7 == 0 {
                render(&mut a, rng.u16(1..120), rng.u16(1..40));
            }
        }
    }
}

#[test]
fn a_scrolled_view_stays_put_while_the_last_answer_streams() {
    let mut a = app();
    for i in 0..30 {
        a.on_event(Event::Notice {
            message: format!("line {i}"),
        });
    }
    a.on_event(Event::TextDelta {
        text: "streaming".into(),
    });
    key(&mut a, KeyCode::PageUp);
    let before = render(&mut a, 50, 12);
    for i in 0..5 {
        a.on_event(Event::TextDelta {
            text: format!("\n\nmore {i}"),
        });
    }
    let after = render(&mut a, 50, 12);
    let body = |s: &str| s.lines().take(5).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(body(&before), body(&after));
}

/// Shift-Tab goes the way a Claude Code user expects: from the default to plan first, then
/// read-only, then back; full access is never a step of it (only `/permissions full-access`,
/// confirmed first), and from full access Shift-Tab goes to plan.
#[test]
fn shift_tab_reaches_plan_first_and_never_full_access() {
    use brute::permission::Mode;
    use brute::protocol::Op;
    use brute::tui::app::Action;
    let shift_tab = |a: &mut App| a.on_key(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT));
    let mut a = app();
    assert_eq!(a.session.sandbox, Mode::WorkspaceWrite);
    let mut steps = Vec::new();
    for _ in 0..7 {
        let actions = shift_tab(&mut a);
        assert!(a.modals.is_empty(), "no confirmation on the way");
        let [Action::Op(Op::SetSandbox { mode })] = actions.as_slice() else {
            panic!("one mode switch, got {actions:?}")
        };
        // The core applies it and says so.
        a.on_event(Event::SandboxChanged { mode: *mode });
        steps.push(*mode);
    }
    assert_eq!(
        steps,
        [
            Mode::Plan,
            Mode::ReadOnly,
            Mode::WorkspaceWrite,
            Mode::Plan,
            Mode::ReadOnly,
            Mode::WorkspaceWrite,
            Mode::Plan
        ]
    );
    assert!(
        render(&mut a, 100, 3).contains(" plan "),
        "the status line shows the mode"
    );
    typed(&mut a, "/status");
    key(&mut a, KeyCode::Enter);
    assert!(
        a.transcript_text().contains("sandbox:  plan — planning"),
        "{}",
        a.transcript_text()
    );

    // Full access: only through /permissions, confirmed first.
    typed(&mut a, "/permissions full-access");
    assert!(press(&mut a, KeyCode::Enter).is_empty(), "confirmed first");
    assert!(render(&mut a, 80, 16).contains("Switch to full access?"));
    assert_eq!(
        a.on_key(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE)),
        vec![Action::Op(Op::SetSandbox { mode: Mode::FullAccess })]
    );
    a.on_event(Event::SandboxChanged { mode: Mode::FullAccess });
    assert!(render(&mut a, 100, 3).contains("full-access"));
    assert_eq!(shift_tab(&mut a), vec![Action::Op(Op::SetSandbox { mode: Mode::Plan })]);
    // Declining the confirmation changes nothing.
    typed(&mut a, "/permissions full-access");
    key(&mut a, KeyCode::Enter);
    assert!(
        a.on_key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::NONE))
            .is_empty()
    );
    typed(&mut a, "/permissions read-only");
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        vec![Action::Op(Op::SetSandbox { mode: Mode::ReadOnly })]
    );
    // /plan switches to plan mode; /plan TASK sends the task too.
    a.on_event(Event::SandboxChanged { mode: Mode::ReadOnly });
    typed(&mut a, "/plan");
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        vec![Action::Op(Op::SetSandbox { mode: Mode::Plan })]
    );
    typed(&mut a, "/plan add a flag");
    assert_eq!(
        press(&mut a, KeyCode::Enter),
        vec![
            Action::Op(Op::SetSandbox { mode: Mode::Plan }),
            Action::Op(Op::UserTurn {
                text: "add a flag".into()
            })
        ]
    );
}

fn plan_request(app: &mut App, id: &str, back_to: brute::sandbox::Mode) {
    app.on_event(Event::Request {
        id: id.into(),
        kind: RequestKind::Plan {
            plan: "# Add --verbose\n1. Parse the flag in src/cli.rs\n2. Log more in src/run.rs\n3. cargo test".into(),
            back_to,
        },
    });
}

/// The plan is shown (and kept in the transcript) with its choices: run it in the mode from
/// before, run it with edits auto-approved, or keep planning with a note.
#[test]
fn the_plan_dialog_runs_the_plan_or_keeps_planning_with_a_note() {
    use brute::protocol::PlanDecision;
    use brute::sandbox::Mode;
    let mut a = app();
    plan_request(&mut a, "p1", Mode::ReadOnly);
    let screen = render(&mut a, 80, 24);
    assert!(
        screen.contains("Plan ready")
            && screen.contains("Parse the flag in src/cli.rs")
            && screen.contains("(y) run it (back to read-only)")
            && screen.contains("(a) run it with edits auto-approved (workspace-write)")
            && screen.contains("(n) keep planning"),
        "{screen}"
    );
    insta::assert_snapshot!("plan_dialog_80x24", screen);
    assert!(
        a.transcript_text().contains("3. cargo test"),
        "the plan stays in the transcript"
    );
    let answer = |decision, note: Option<&str>| {
        Some(Response::Plan {
            decision,
            note: note.map(str::to_owned),
        })
    };
    assert_eq!(
        approval_answer(&press(&mut a, KeyCode::Char('y'))),
        answer(PlanDecision::Run, None)
    );
    plan_request(&mut a, "p2", Mode::ReadOnly);
    render(&mut a, 80, 24);
    assert_eq!(
        approval_answer(&press(&mut a, KeyCode::Char('a'))),
        answer(PlanDecision::RunAcceptingEdits, None)
    );
    plan_request(&mut a, "p3", Mode::ReadOnly);
    render(&mut a, 80, 24);
    assert!(press(&mut a, KeyCode::Char('n')).is_empty(), "n asks for a note");
    typed(&mut a, "use tabs");
    assert!(render(&mut a, 80, 24).contains("what should change? use tabs"));
    assert_eq!(
        approval_answer(&press(&mut a, KeyCode::Enter)),
        answer(PlanDecision::KeepPlanning, Some("use tabs"))
    );
    // From workspace-write, running it is already with edits auto-approved: one choice.
    plan_request(&mut a, "p4", Mode::WorkspaceWrite);
    let screen = render(&mut a, 80, 24);
    assert!(
        screen.contains("(y) run it (back to workspace-write)") && !screen.contains("(a) run it"),
        "{screen}"
    );
    assert!(approval_answer(&press(&mut a, KeyCode::Char('y'))).is_some());
    // Running waits until the whole plan has been on screen.
    plan_request(&mut a, "p5", Mode::ReadOnly);
    assert_eq!(approval_answer(&press(&mut a, KeyCode::Char('y'))), None);
    render(&mut a, 80, 24);
    assert!(approval_answer(&press(&mut a, KeyCode::Char('y'))).is_some());
}

#[test]
fn the_status_line_shows_the_context_meter_and_status_lists_the_session() {
    let mut a = app();
    a.on_event(Event::ContextUsage {
        tokens: 84_000,
        window: Some(200_000),
    });
    let status = render(&mut a, 140, 3);
    assert!(status.contains("ctx 42% 84k/200k"), "{status}");
    typed(&mut a, "/status");
    key(&mut a, KeyCode::Enter);
    let text = a.transcript_text();
    assert!(
        text.contains("context:  ctx 42% 84k/200k")
            && text.contains("sandbox:  workspace-write")
            && text.contains("base URL: http://127.0.0.1:1/v1"),
        "{text}"
    );
    a.on_event(Event::CompactionFinished {
        tokens_before: 170_000,
        tokens_after: 60_000,
        pruned_outputs: 12,
        summarized: true,
    });
    assert!(
        a.transcript_text().contains(
            "compacted: about 170000 → 60000 tokens; 12 old tool outputs pruned, the earlier turns summarized"
        )
    );
}

#[test]
fn welcome_header_on_the_first_screen() {
    let mut a = app();
    a.welcome();
    let wide = render(&mut a, 80, 14);
    assert!(wide.contains(&format!("brute {}", env!("CARGO_PKG_VERSION"))), "{wide}");
    insta::assert_snapshot!("welcome_80x14", wide.replace(env!("CARGO_PKG_VERSION"), "X.Y.Z"));
    insta::assert_snapshot!(
        "welcome_40x12",
        render(&mut a, 40, 12).replace(env!("CARGO_PKG_VERSION"), "X.Y.Z")
    );
    // It scrolls away like any entry.
    for i in 0..20 {
        a.on_event(Event::Notice {
            message: format!("line {i}"),
        });
    }
    assert!(!render(&mut a, 80, 14).contains(&format!("brute {}", env!("CARGO_PKG_VERSION"))));
}

#[test]
fn markdown_tables_quotes_nested_lists_and_links() {
    let mut a = app();
    a.on_event(Event::TextDelta {
        text: "| file | lines | state |\n|:--|--:|:-:|\n| src/main.rs | 120 | ok |\n| src/lib.rs | 8 | **new** |\n\n> Note: a quoted remark that is long enough to wrap in a narrow terminal.\n\n- top item\n  - nested item with `code`\n    - deeper\n- second top item whose text is long enough to wrap onto a second line\n\nRead [the guide](https://example.com/guide) or <https://example.com>.".into(),
    });
    a.on_event(Event::TurnFinished {
        outcome: TurnOutcome::Done,
        text: String::new(),
    });
    insta::assert_snapshot!(render(&mut a, 50, 26));
}

#[test]
fn streamed_markdown_renders_the_unfinished_tail_as_plain_text() {
    let mut a = app();
    user_turn(&mut a, "files?");
    a.on_event(Event::TextDelta {
        text: "Two files:\n\n| file | lines |\n|---|".into(),
    });
    let half = render(&mut a, 50, 12);
    a.on_event(Event::TextDelta {
        text: "---|\n| a.rs | 1 |\n".into(),
    });
    let rows = render(&mut a, 50, 12);
    a.on_event(Event::TurnFinished {
        outcome: TurnOutcome::Done,
        text: String::new(),
    });
    let done = render(&mut a, 50, 12);
    insta::assert_snapshot!("stream_half_table", half);
    insta::assert_snapshot!("stream_table_rows", rows);
    insta::assert_snapshot!("stream_done", done);
}

#[test]
fn edit_preview_shows_changed_lines_with_context() {
    let mut a = app();
    let old: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let new = old
        .replace("line 4\n", "line four\n")
        .replace("line 20\n", "line twenty\n");
    let diff = brute::tool::write::unified_diff("notes.txt", &old, &new);
    started(&mut a, "1", "write", json!({"file_path": "notes.txt", "content": new}));
    finished(
        &mut a,
        "1",
        "write",
        &format!("Wrote 200 bytes to notes.txt.\n\n{diff}"),
        false,
        4,
    );
    let screen = render(&mut a, 60, 16);
    assert!(!screen.contains("+++") && !screen.contains("@@"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn long_lines_wrap_with_hanging_indents_and_tabs_keep_columns() {
    let mut a = app();
    started(&mut a, "1", "read", json!({"file_path": "src/lib.rs"}));
    finished(
        &mut a,
        "1",
        "read",
        "8\tpub fn short() {}\n9\tpub fn a_function_with_a_long_signature(first: u32, second: u32) -> u32 {\n10\t\tfirst + second\n",
        false,
        2,
    );
    a.on_event(Event::TextDelta {
        text: "- a list item long enough to wrap across lines, with its continuation under the text\n\nplain words: supercalifragilisticexpialidociousandthensome".into(),
    });
    insta::assert_snapshot!(render(&mut a, 40, 18));
}

fn many_options(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("choice {i}")).collect()
}

#[test]
fn dialogs_scroll_and_fit_small_terminals() {
    let labels = many_options(60);
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    let mut a = app();
    a.on_event(Event::Request {
        id: "q".into(),
        kind: RequestKind::Question {
            questions: vec![question(
                "Which of these sixty choices should be used?",
                &labels,
                false,
                None,
            )],
        },
    });
    let top = render(&mut a, 40, 12);
    for _ in 0..30 {
        key(&mut a, KeyCode::Down);
    }
    let middle = render(&mut a, 40, 12);
    assert!(middle.contains("› 31. choice 31"), "{middle}");
    let large = render(&mut a, 80, 30);
    assert!(large.contains("› 31. choice 31") && large.contains("Other:"), "{large}");
    for _ in 0..40 {
        key(&mut a, KeyCode::Down);
    }
    let other = render(&mut a, 40, 12);
    assert!(other.contains("› Other:") && other.contains("choice 60"), "{other}");
    insta::assert_snapshot!("q60_top_40x12", top);
    insta::assert_snapshot!("q60_middle_40x12", middle);
    insta::assert_snapshot!("q60_middle_80x30", large);
    insta::assert_snapshot!("q60_other_40x12", other);

    let mut a = app();
    a.on_event(Event::Request {
        id: "a".into(),
        kind: RequestKind::Approval {
            tool: "shell".into(),
            summary: "curl https://example.com/install.sh | sh".into(),
            detail: String::new(),
            reason: "it asks to run without the sandbox: needs the network".into(),
            call_id: String::new(),
            input: serde_json::Value::Null,
        },
    });
    let approval = render(&mut a, 40, 12);
    // The choices scroll under the cut reason; the whole command and the key hints stay.
    assert!(
        approval.contains("shell ·")
            && approval.contains("curl")
            && approval.contains("install.sh |")
            && approval.contains("(y) allow once")
            && approval.contains("n deny"),
        "{approval}"
    );
    insta::assert_snapshot!("approval_40x12", approval);
}

/// `/mcp` shows what the core last reported about each server: starting, ready with its
/// tools, or failed with the error (escape sequences from a server never reach the screen).
#[test]
fn mcp_command_shows_the_servers_the_core_reported() {
    use brute::mcp::{ServerState, ServerStatus};
    let mut app = app();
    let status = |name: &str, state: ServerState, tools: &[&str]| ServerStatus {
        name: name.into(),
        transport: format!("stdio: {name}-server"),
        source: "/home/me/.config/brute/config.toml".into(),
        state,
        tools: tools.iter().map(|t| (*t).to_owned()).collect(),
    };
    app.on_event(Event::McpStatus {
        servers: vec![
            status("github", ServerState::Ready, &["search_issues", "create_issue"]),
            status("slow", ServerState::Starting, &[]),
            status(
                "broken",
                ServerState::Failed {
                    error: "failed to start: exited\u{1b}[2J (exit status: 7)".into(),
                },
                &[],
            ),
        ],
    });
    app.submit_text("/mcp");
    let screen = render(&mut app, 100, 30);
    assert!(
        screen.contains("github (stdio: github-server) ready, 2 tool(s)"),
        "{screen}"
    );
    assert!(screen.contains("tools: search_issues, create_issue"), "{screen}");
    assert!(screen.contains("slow (stdio: slow-server) starting"), "{screen}");
    assert!(
        screen.contains("broken (stdio: broken-server) failed: failed to start: exited (exit status: 7)"),
        "{screen}"
    );
    // The popup and /help offer it.
    assert!(brute::tui::commands::COMMANDS.iter().any(|(name, _)| *name == "/mcp"));
}

/// Opens an approval for the shell command `command`, as the approval step sends it.
fn approval_request(app: &mut App, id: &str, command: &str) {
    app.on_event(Event::Request {
        id: id.into(),
        kind: RequestKind::Approval {
            tool: "shell".into(),
            summary: brute::tool::key_argument(&json!({ "command": command })),
            detail: command.into(),
            reason: "it asks to run without the sandbox: needs the network".into(),
            call_id: String::new(),
            input: serde_json::Value::Null,
        },
    });
}

fn press(app: &mut App, code: KeyCode) -> Vec<brute::tui::app::Action> {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// The answer an approval got, if a key sent one.
fn approval_answer(actions: &[brute::tui::app::Action]) -> Option<Response> {
    actions.iter().find_map(|action| match action {
        brute::tui::app::Action::Op(brute::protocol::Op::Respond { response, .. }) => Some(response.clone()),
        _ => None,
    })
}

/// Pages down (a draw after each key, as the UI draws) until `needle` is on screen.
fn page_until(app: &mut App, needle: &str, width: u16, height: u16) -> String {
    let mut screen = render(app, width, height);
    for _ in 0..200 {
        if screen.contains(needle) {
            return screen;
        }
        assert_eq!(approval_answer(&press(app, KeyCode::PageDown)), None);
        screen = render(app, width, height);
    }
    panic!("{needle} never came into view:\n{screen}");
}

const ONCE: Response = Response::Approval {
    decision: brute::protocol::ApprovalDecision::Once,
    reason: None,
};

/// `echo status`, 60 newlines, `touch OUTSIDE`: the dialog says lines are hidden, a hurried
/// Enter or `y` approves nothing, and once scrolled to the end the payload is there and `y`
/// allows.
#[test]
fn an_approval_with_hidden_lines_says_so_and_cannot_be_allowed_unseen() {
    let mut a = app();
    approval_request(&mut a, "a1", &format!("echo status{}touch OUTSIDE", "\n".repeat(60)));
    let top = render(&mut a, 80, 24);
    assert!(top.contains("▏ echo status"), "{top}");
    assert!(top.contains("more lines — ↑/↓ (or PgUp/PgDn) to scroll"), "{top}");
    assert!(!top.contains("touch OUTSIDE"), "{top}");
    // Enter before scrolling reads on, y does nothing but say why: neither approves.
    assert_eq!(approval_answer(&press(&mut a, KeyCode::Enter)), None);
    let _ = render(&mut a, 80, 24);
    for c in ['y', 'a', 'p', '1'] {
        assert_eq!(approval_answer(&press(&mut a, KeyCode::Char(c))), None, "{c}");
    }
    let nudged = render(&mut a, 80, 24);
    assert!(nudged.contains("see all of it before allowing"), "{nudged}");
    assert_eq!(approval_answer(&press(&mut a, KeyCode::Enter)), None);
    let end = page_until(&mut a, "touch OUTSIDE", 80, 24);
    assert!(end.contains("end · ") && end.contains("lines above"), "{end}");
    assert_eq!(approval_answer(&press(&mut a, KeyCode::Char('y'))), Some(ONCE));
    insta::assert_snapshot!("approval_hidden_lines_top", top);
    insta::assert_snapshot!("approval_hidden_lines_end", end);

    // The arrows scroll too (a row a key), and Enter then allows once as for a short command.
    let mut a = app();
    approval_request(&mut a, "a2", &format!("echo status{}touch OUTSIDE", "\n".repeat(60)));
    let mut screen = render(&mut a, 60, 20);
    let mut keys = 0;
    while !screen.contains("touch OUTSIDE") {
        assert_eq!(approval_answer(&press(&mut a, KeyCode::Down)), None);
        screen = render(&mut a, 60, 20);
        keys += 1;
        assert!(keys < 100, "{screen}");
    }
    assert_eq!(approval_answer(&press(&mut a, KeyCode::Enter)), Some(ONCE));

    // A small terminal keeps a view, the line saying what is hidden, and the allow choice.
    let mut a = app();
    approval_request(&mut a, "a3", &format!("echo status{}touch OUTSIDE", "\n".repeat(60)));
    let small = render(&mut a, 40, 12);
    assert!(
        small.contains("▏ echo status") && small.contains("more lines"),
        "{small}"
    );
    assert_eq!(approval_answer(&press(&mut a, KeyCode::Char('y'))), None);
    let end = page_until(&mut a, "touch OUTSIDE", 40, 12);
    assert_eq!(approval_answer(&press(&mut a, KeyCode::Char('y'))), Some(ONCE), "{end}");
    insta::assert_snapshot!("approval_hidden_lines_40x12", small);
}

/// A 6,000-character word before the payload is wrapped at the dialog's width, not cut: the
/// payload after it is reachable, and allowing waits for it.
#[test]
fn an_approval_wraps_a_long_word_and_the_payload_after_it_is_reachable() {
    let word = "A".repeat(6000);
    let mut a = app();
    approval_request(&mut a, "a1", &format!("{word} ; touch OUTSIDE"));
    let top = render(&mut a, 80, 24);
    // Rows of the word fill the box's width (74 columns less the bar): hard-wrapped.
    let full_row = format!("▏ {}", "A".repeat(72));
    assert!(top.contains(&full_row), "{top}");
    assert!(top.contains("more lines") && !top.contains("OUTSIDE"), "{top}");
    assert_eq!(approval_answer(&press(&mut a, KeyCode::Char('y'))), None);
    assert_eq!(approval_answer(&press(&mut a, KeyCode::Enter)), None);
    let end = page_until(&mut a, "touch OUTSIDE", 80, 24);
    let rows = end.lines().filter(|l| l.contains(&full_row)).count();
    assert!(rows > 3, "the word's rows lead to the payload: {end}");
    assert_eq!(approval_answer(&press(&mut a, KeyCode::Char('y'))), Some(ONCE));
    insta::assert_snapshot!("approval_long_word_end", end);
}

/// Escape sequences, a carriage return, a tab and a bidi override in a command are shown as
/// visible stand-ins; no ESC or BEL reaches the screen's buffer.
#[test]
fn an_approval_shows_escape_sequences_in_the_command_visibly() {
    let mut a = app();
    approval_request(
        &mut a,
        "a1",
        "printf 'ok\u{1b}]52;c;SGVsbG8=\u{7}\u{1b}]0;pwned\u{7}'\r\u{1b}[2Jecho\tsafe \u{202e}txt.sh",
    );
    let mut terminal = Terminal::new(TestBackend::new(80, 16)).unwrap();
    terminal.draw(|frame| view::draw(frame, &mut a)).unwrap();
    let controls = terminal
        .backend()
        .buffer()
        .content()
        .iter()
        .filter(|cell| cell.symbol().chars().any(|c| c.is_control()))
        .count();
    assert_eq!(controls, 0, "no control character in the buffer");
    let screen = terminal.backend().to_string();
    assert!(
        screen.contains("ok␛]52;c;SGVsbG8=␇␛]0;pwned␇'␍␛[2Jecho  safe <U+202E>txt.sh"),
        "{screen}"
    );
    // All of it fits: Enter allows at once, as before.
    assert_eq!(approval_answer(&press(&mut a, KeyCode::Enter)), Some(ONCE));
    insta::assert_snapshot!("approval_escapes_visible", screen);
}

#[test]
fn attached_images_show_under_their_prompt_live_and_restored() {
    use brute::provider::Message;
    let mut a = app();
    user_turn(&mut a, "what is this?");
    a.on_event(Event::ImagesAttached {
        images: vec!["[image: shot.png, 640×480]".into()],
    });
    let screen = render(&mut a, 60, 12);
    assert!(screen.contains("[image: shot.png, 640×480]"), "{screen}");
    // A resumed session shows the images its messages keep.
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend(32u32.to_be_bytes());
    bytes.extend(16u32.to_be_bytes());
    let image = brute::provider::image::Image::from_bytes("pic.png", &bytes).unwrap();
    let mut b = app();
    b.on_event(Event::HistoryReplaced {
        messages: vec![Message::User {
            text: "and this?".into(),
            images: vec![image],
        }],
        todos: Vec::new(),
        calls: Default::default(),
    });
    let screen = render(&mut b, 60, 12);
    assert!(screen.contains("[image: pic.png, 32×16]"), "{screen}");
}
