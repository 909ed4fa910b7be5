//! Styles where they carry meaning, read cell by cell off ratatui's TestBackend: diff lines in
//! write/patch panes, highlighted code blocks, dimmed reasoning, error marks and notices.
//! (The snapshots in tui_render.rs hold only the text.)

use std::collections::BTreeSet;

use brute::protocol::{Display, Event, ToolResult};
use brute::tui::app::{App, SessionInfo};
use brute::tui::view;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::{Buffer, Cell};
use ratatui::style::{Color, Modifier};
use serde_json::json;

const WIDTH: u16 = 80;

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
    App::new(session, vec!["read".into(), "write".into()], Vec::new())
}

fn render(app: &mut App, height: u16) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, height)).unwrap();
    terminal.draw(|frame| view::draw(frame, app)).unwrap();
    terminal.backend().buffer().clone()
}

fn ctrl(app: &mut App, c: char) {
    app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
}

fn tool(app: &mut App, id: &str, name: &str, args: serde_json::Value, result: &str, is_error: bool) {
    // What the executor sends: the tool's own summary and display kind.
    let display = brute::app::builtin_tools()
        .get(name)
        .map_or(Display::Text, |t| t.display());
    app.on_event(Event::ToolCallStarted {
        call_id: id.into(),
        name: name.into(),
        summary: brute::tool::key_argument(&args),
        arguments: args,
        display,
    });
    app.on_event(Event::ToolResult(ToolResult {
        call_id: id.into(),
        name: name.into(),
        content: result.into(),
        is_error,
        duration_ms: 5,
        display,
        images: Vec::new(),
        failure: is_error.then_some(brute::protocol::Failure::Error),
    }));
}

/// Row `y` as text, with the column of each char.
fn row(buf: &Buffer, y: u16) -> (String, Vec<u16>) {
    let (mut text, mut xs) = (String::new(), Vec::new());
    for x in 0..buf.area.width {
        for ch in buf[(x, y)].symbol().chars() {
            text.push(ch);
            xs.push(x);
        }
    }
    (text, xs)
}

/// The cells showing `needle`, on the first row that holds it (in full).
#[track_caller]
fn cells<'a>(buf: &'a Buffer, needle: &str) -> Vec<&'a Cell> {
    for y in 0..buf.area.height {
        let (text, xs) = row(buf, y);
        if let Some(at) = text.find(needle) {
            let first = text[..at].chars().count();
            let count = needle.chars().count();
            let columns: BTreeSet<u16> = xs[first..first + count].iter().copied().collect();
            return columns.into_iter().map(|x| &buf[(x, y)]).collect();
        }
    }
    let screen: Vec<String> = (0..buf.area.height).map(|y| row(buf, y).0).collect();
    panic!("{needle:?} is not on the screen:\n{}", screen.join("\n"));
}

/// Asserts that every cell showing `needle` has foreground `fg`, and `modifiers` set.
#[track_caller]
fn assert_style(buf: &Buffer, needle: &str, fg: Color, modifiers: Modifier) {
    for cell in cells(buf, needle) {
        assert_eq!(
            (cell.fg, cell.modifier.contains(modifiers)),
            (fg, true),
            "{needle:?}: cell {:?} is {:?} with {:?}, want {fg:?} with {modifiers:?}",
            cell.symbol(),
            cell.fg,
            cell.modifier
        );
    }
}

#[test]
fn diff_lines_are_red_and_green_in_write_and_patch_panes() {
    let mut a = app();
    let old = "fn main() {\n    println!(\"hi\");\n}\n";
    let new = "fn main() {\n    println!(\"hello\");\n    println!(\"bye\");\n}\n";
    let diff = brute::tool::write::unified_diff("src/main.rs", old, new);
    tool(
        &mut a,
        "1",
        "write",
        json!({"file_path": "src/main.rs", "content": new}),
        &format!("Wrote 52 bytes to src/main.rs.\n\n{diff}"),
        false,
    );
    let patch = "Replaced 1 occurrence in lib.rs.\n\n--- a/lib.rs\n+++ b/lib.rs\n@@ -1 +1 @@\n-pub fn old_name() {}\n+pub fn new_name() {}\n";
    tool(
        &mut a,
        "2",
        "patch",
        json!({"file_path": "lib.rs", "old_string": "old_name", "new_string": "new_name"}),
        patch,
        false,
    );
    // The same kind of lines in a read pane are plain output, not a diff.
    tool(
        &mut a,
        "3",
        "read",
        json!({"file_path": "notes.md"}),
        "-not a removal\n+not an addition\n",
        false,
    );
    ctrl(&mut a, 'o');
    let buf = render(&mut a, 40);
    let none = Modifier::empty();
    // write pane
    assert_style(&buf, "-    println!(\"hi\");", Color::Red, none);
    assert_style(&buf, "+    println!(\"hello\");", Color::Green, none);
    assert_style(&buf, "+    println!(\"bye\");", Color::Green, none);
    assert_style(&buf, "@@ -1,3 +1,4 @@", Color::Cyan, none);
    assert_style(&buf, " fn main() {", Color::Gray, none);
    // patch pane; the file headers are bold, neither red nor green
    assert_style(&buf, "-pub fn old_name() {}", Color::Red, none);
    assert_style(&buf, "+pub fn new_name() {}", Color::Green, none);
    for header in ["--- a/lib.rs", "+++ b/lib.rs"] {
        assert_style(&buf, header, Color::Reset, Modifier::BOLD);
    }
    // read pane
    assert_style(&buf, "-not a removal", Color::Gray, none);
    assert_style(&buf, "+not an addition", Color::Gray, none);
}

#[test]
fn fenced_code_is_highlighted_in_several_colours() {
    let mut a = app();
    a.on_event(Event::TextDelta {
        text: "Use `main`:\n\n```rust\nfn main() {\n    let answer: u32 = 42; // the answer\n    println!(\"{answer}\");\n}\n```\n".into(),
    });
    let buf = render(&mut a, 20);
    assert_style(&buf, "╭─ rust", Color::DarkGray, Modifier::empty());
    assert_style(&buf, "`main`", Color::Yellow, Modifier::empty());
    let mut colours = BTreeSet::new();
    for line in [
        "fn main() {",
        "let answer: u32 = 42; // the answer",
        "println!(\"{answer}\");",
    ] {
        for cell in cells(&buf, line) {
            if cell.symbol().trim().is_empty() {
                continue;
            }
            assert!(
                matches!(cell.fg, Color::Rgb(..)),
                "{line:?}: {:?} is {:?}, not a theme colour",
                cell.symbol(),
                cell.fg
            );
            colours.insert(format!("{:?}", cell.fg));
        }
    }
    assert!(
        colours.len() >= 3,
        "keywords, numbers, strings and comments share colours: {colours:?}"
    );
    // Each token is one colour: `fn` differs from `main`, `42` from `answer`.
    let fg = |needle: &str| cells(&buf, needle)[0].fg;
    assert_ne!(fg("fn main"), fg("main() {"));
    assert_ne!(fg("42;"), fg("answer: u32"));
    assert_ne!(fg("// the answer"), fg("let answer"));
}

#[test]
fn reasoning_is_dimmed_and_the_answer_is_not() {
    let mut a = app();
    a.on_event(Event::ReasoningDelta {
        text: "The user wants a greeting.\nKeep it short.".into(),
    });
    a.on_event(Event::TextDelta {
        text: "Hello there.".into(),
    });
    let dim = Modifier::ITALIC;
    let buf = render(&mut a, 12);
    assert_style(&buf, "▸ thinking (2 lines, Ctrl-T shows)", Color::DarkGray, dim);
    assert_style(&buf, "Hello there.", Color::Reset, Modifier::empty());
    assert!(cells(&buf, "Hello there.").iter().all(|c| !c.modifier.contains(dim)));
    ctrl(&mut a, 't');
    let buf = render(&mut a, 12);
    for line in ["▾ thinking", "The user wants a greeting.", "Keep it short."] {
        assert_style(&buf, line, Color::DarkGray, dim);
    }
}

#[test]
fn errors_show_their_error_style() {
    let mut a = app();
    tool(
        &mut a,
        "1",
        "read",
        json!({"file_path": "src/main.rs"}),
        "1\tfn main() {}\n",
        false,
    );
    tool(
        &mut a,
        "2",
        "read",
        json!({"file_path": "src/mian.rs"}),
        "Error: NotFound: File not found: src/mian.rs",
        true,
    );
    a.on_event(Event::Notice {
        message: "the model hit its output token limit".into(),
    });
    a.on_event(Event::Error {
        message: "the provider returned HTTP 500: boom".into(),
    });
    let buf = render(&mut a, 20);
    // The failed call's mark is red, the successful one's green.
    let marks: Vec<(String, Color)> = (0..buf.area.height)
        .filter_map(|y| {
            let (text, xs) = row(&buf, y);
            let at = text.find(['✓', '✗'])?;
            let x = xs[text[..at].chars().count()];
            Some((buf[(x, y)].symbol().to_owned(), buf[(x, y)].fg))
        })
        .collect();
    assert_eq!(marks, [("✓".to_owned(), Color::Green), ("✗".to_owned(), Color::Red)]);
    assert_style(&buf, "read", Color::Reset, Modifier::BOLD);
    // The error notice is red; an ordinary notice is dim.
    assert_style(
        &buf,
        "error: the provider returned HTTP 500: boom",
        Color::Red,
        Modifier::empty(),
    );
    assert_style(
        &buf,
        "the model hit its output token limit",
        Color::DarkGray,
        Modifier::empty(),
    );
}

#[test]
fn welcome_header_styles() {
    let mut a = app();
    a.welcome();
    let buf = render(&mut a, 16);
    assert_style(&buf, "brute", Color::Cyan, Modifier::BOLD);
    assert_style(&buf, "directory", Color::DarkGray, Modifier::empty());
    assert_style(&buf, "workspace-write", Color::Cyan, Modifier::empty());
    assert_style(&buf, "/help lists commands and keys", Color::Reset, Modifier::empty());
}

#[test]
fn markdown_tables_quotes_and_links_are_styled() {
    let mut a = app();
    a.on_event(Event::TextDelta {
        text:
            "| name | size |\n|---|--:|\n| a.rs | 12 |\n\n> quoted words\n\nSee [the guide](https://example.com/guide)."
                .into(),
    });
    a.on_event(Event::TurnFinished {
        outcome: brute::protocol::TurnOutcome::Done,
        text: String::new(),
    });
    let buf = render(&mut a, 20);
    assert_style(&buf, "name", Color::Reset, Modifier::BOLD);
    assert_style(&buf, "────┼─", Color::DarkGray, Modifier::empty());
    assert!(cells(&buf, "a.rs").iter().all(|c| !c.modifier.contains(Modifier::BOLD)));
    assert_style(&buf, "│ ", Color::DarkGray, Modifier::empty());
    assert_style(&buf, "quoted words", Color::Reset, Modifier::empty());
    assert_style(&buf, "the guide", Color::Blue, Modifier::UNDERLINED);
    assert_style(&buf, "(https://example.com/guide)", Color::DarkGray, Modifier::empty());
}

#[test]
fn a_streaming_tail_is_plain_until_its_block_completes() {
    let mut a = app();
    a.on_event(Event::TextDelta {
        text: "Done **well**.\n\nNow **half".into(),
    });
    let buf = render(&mut a, 12);
    assert_style(&buf, "well", Color::Reset, Modifier::BOLD);
    assert_style(&buf, "Now **half", Color::Reset, Modifier::empty());
    a.on_event(Event::TextDelta { text: "way**".into() });
    a.on_event(Event::TurnFinished {
        outcome: brute::protocol::TurnOutcome::Done,
        text: String::new(),
    });
    let buf = render(&mut a, 12);
    assert_style(&buf, "halfway", Color::Reset, Modifier::BOLD);
}

#[test]
fn collapsed_edit_previews_colour_the_changed_lines() {
    let mut a = app();
    let old: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let new = old
        .replace("line 4\n", "line four\n")
        .replace("line 20\n", "line twenty\n");
    let diff = brute::tool::write::unified_diff("notes.txt", &old, &new);
    tool(
        &mut a,
        "1",
        "write",
        json!({"file_path": "notes.txt", "content": new}),
        &format!("Wrote 200 bytes to notes.txt.\n\n{diff}"),
        false,
    );
    let buf = render(&mut a, 20);
    let none = Modifier::empty();
    assert_style(&buf, "-line 4", Color::Red, none);
    assert_style(&buf, "+line four", Color::Green, none);
    assert_style(&buf, " line 3", Color::Gray, none);
    assert_style(&buf, "⋯", Color::DarkGray, none);
    assert_style(&buf, "+line twenty", Color::Green, none);
}

#[test]
fn wrapped_pane_lines_repeat_the_dim_bar() {
    let mut a = app();
    let long = format!("1\t{}\n", "word ".repeat(30));
    tool(&mut a, "1", "read", json!({"file_path": "a.txt"}), &long, false);
    let buf = render(&mut a, 12);
    let bars: Vec<Color> = (0..buf.area.height)
        .filter(|y| row(&buf, *y).0.starts_with("  │ "))
        .map(|y| buf[(2, y)].fg)
        .collect();
    assert!(bars.len() >= 2, "the line wraps: {bars:?}");
    assert!(bars.iter().all(|c| *c == Color::DarkGray), "{bars:?}");
}

#[test]
fn a_scrolled_question_keeps_its_selection_styled() {
    let mut a = app();
    let options: Vec<brute::protocol::QuestionOption> = (1..=60)
        .map(|i| brute::protocol::QuestionOption {
            label: format!("choice {i}"),
            description: None,
        })
        .collect();
    a.on_event(Event::Request {
        id: "q".into(),
        kind: brute::protocol::RequestKind::Question {
            questions: vec![brute::protocol::Question {
                question: "Pick one".into(),
                header: None,
                options,
                multiple: false,
                default: None,
            }],
        },
    });
    for _ in 0..40 {
        a.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    }
    let buf = render(&mut a, 12);
    assert_style(&buf, "› 41. choice 41", Color::Cyan, Modifier::BOLD);
    assert_style(&buf, "↓ 19 more", Color::DarkGray, Modifier::empty());
    assert_style(&buf, "Other:", Color::Gray, Modifier::empty());
}

/// `/diff`'s answer is drawn whole in the transcript: a cyan title, yellow file headers,
/// added lines green and removed lines red.
#[test]
fn the_diff_command_colours_its_diff() {
    let mut a = app();
    let diff = format!(
        "diff a/src/main.rs b/src/main.rs\n{}",
        brute::tool::write::unified_diff("src/main.rs", "let a = 1;\nkeep\n", "let a = 2;\nkeep\n")
    );
    a.on_event(Event::Diff {
        title: "turn 1 (\"bump a\")".into(),
        diff,
        files: 1,
    });
    let buf = render(&mut a, 30);
    assert_style(
        &buf,
        "diff of turn 1 (\"bump a\"): 1 file(s) changed",
        Color::Cyan,
        Modifier::BOLD,
    );
    assert_style(&buf, "diff a/src/main.rs b/src/main.rs", Color::Yellow, Modifier::BOLD);
    assert_style(&buf, "-let a = 1;", Color::Red, Modifier::empty());
    assert_style(&buf, "+let a = 2;", Color::Green, Modifier::empty());
}
