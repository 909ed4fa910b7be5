//! The input items driven through [`App`]: readline keys, history search, `$EDITOR`, the
//! scrolling popup, `/resume`'s picker, `/copy`'s messages and pastes.

use std::cell::RefCell;
use std::rc::Rc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::app::{Action, App, SessionInfo};
use super::clipboard::{Clipboard, Copied};
use super::picker::SessionRow;
use super::transcript::Entry;
use crate::protocol::{Event, Op, TurnOutcome};

fn app() -> App {
    App::new(
        SessionInfo {
            session_id: Some("20261201-cur".into()),
            ..SessionInfo::default()
        },
        Vec::new(),
        vec!["src/main.rs".into(), "src/tui/app.rs".into(), "README.md".into()],
    )
}

fn press(app: &mut App, code: KeyCode, modifiers: KeyModifiers) -> Vec<Action> {
    app.on_key(KeyEvent::new(code, modifiers))
}

fn ctrl(app: &mut App, c: char) -> Vec<Action> {
    press(app, KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c), KeyModifiers::NONE);
    }
}

fn render(app: &mut App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(100, 30)).expect("terminal");
    terminal.draw(|frame| super::view::draw(frame, app)).expect("draw");
    terminal.backend().to_string()
}

#[test]
fn readline_keys_reach_the_composer() {
    let mut a = app();
    typed(&mut a, "explain the code");
    ctrl(&mut a, 'w');
    assert_eq!(a.composer.text(), "explain the ");
    ctrl(&mut a, 'a');
    press(&mut a, KeyCode::Char('f'), KeyModifiers::ALT);
    ctrl(&mut a, 'k');
    assert_eq!(a.composer.text(), "explain");
    ctrl(&mut a, 'y');
    assert_eq!(a.composer.text(), "explain the ");
    press(&mut a, KeyCode::Char('b'), KeyModifiers::ALT);
    ctrl(&mut a, 'u');
    assert_eq!(a.composer.text(), "the ");
    ctrl(&mut a, 'e');
    assert_eq!(a.composer.cursor(), (0, 4));
    // Ctrl-O and Ctrl-T are the view toggles now.
    ctrl(&mut a, 'o');
    ctrl(&mut a, 't');
    assert!(a.flags.expand_tools && a.flags.show_reasoning);
    assert_eq!(a.composer.text(), "the ");
}

#[test]
fn ctrl_r_searches_the_history_and_esc_restores_the_draft() {
    let mut a = app();
    a.composer
        .set_history(vec!["cargo test".into(), "fix the parser".into(), "cargo build".into()]);
    typed(&mut a, "draft");
    ctrl(&mut a, 'r');
    typed(&mut a, "cargo");
    assert_eq!(a.composer.text(), "cargo build");
    assert!(render(&mut a).contains("history search: cargo"));
    ctrl(&mut a, 'r');
    assert_eq!(a.composer.text(), "cargo test");
    press(&mut a, KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(a.composer.text(), "draft");
    assert!(a.search.is_none());
    ctrl(&mut a, 'r');
    typed(&mut a, "pars");
    let actions = press(&mut a, KeyCode::Enter, KeyModifiers::NONE);
    assert!(actions.is_empty(), "Enter takes the match without sending it");
    assert_eq!(a.composer.text(), "fix the parser");
    let actions = press(&mut a, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(
        actions,
        vec![Action::Op(Op::UserTurn {
            text: "fix the parser".into()
        })]
    );
}

#[test]
fn ctrl_g_hands_the_text_to_the_editor_and_takes_it_back() {
    let mut a = app();
    typed(&mut a, "short");
    assert_eq!(ctrl(&mut a, 'g'), vec![Action::Editor("short".into())]);
    a.edited(Ok("a longer\nmessage\n".into()));
    assert_eq!(a.composer.text(), "a longer\nmessage");
    a.edited(Err("vi exited with 1".into()));
    assert_eq!(a.composer.text(), "a longer\nmessage");
}

#[test]
fn the_slash_popup_scrolls_to_every_command() {
    let mut a = app();
    typed(&mut a, "/");
    let count = super::commands::COMMANDS.len();
    assert!(count > super::app::POPUP_ROWS);
    for _ in 0..count {
        press(&mut a, KeyCode::Down, KeyModifiers::NONE);
    }
    let screen = render(&mut a);
    assert!(screen.contains("/quit"), "{screen}");
    assert!(
        !screen.contains(" /help  show keys"),
        "scrolled past the first: {screen}"
    );
    for _ in 0..count {
        press(&mut a, KeyCode::Up, KeyModifiers::NONE);
    }
    assert!(render(&mut a).contains(" /help  show keys"));
}

#[test]
fn at_completion_ranks_with_the_fuzzy_matcher() {
    let mut a = app();
    typed(&mut a, "see @tuiapp");
    let popup = a.popup.clone().expect("popup");
    assert_eq!(popup.items[0].0, "src/tui/app.rs");
    press(&mut a, KeyCode::Tab, KeyModifiers::NONE);
    assert_eq!(a.composer.text(), "see @src/tui/app.rs ");
}

fn sessions() -> Vec<SessionRow> {
    ["20261201-cur", "20261130-abc", "20261129-abd"]
        .iter()
        .zip(["now", "write the docs", "fix the parser"])
        .map(|(id, prompt)| SessionRow {
            id: (*id).into(),
            when: "2026-12-01 10:00".into(),
            messages: 4,
            first_prompt: prompt.into(),
        })
        .collect()
}

#[test]
fn resume_opens_a_live_picker_and_accepts_prefixes() {
    let mut a = app();
    a.list_sessions = Some(Box::new(sessions));
    typed(&mut a, "/resume");
    press(&mut a, KeyCode::Enter, KeyModifiers::NONE);
    assert!(a.picker.is_some());
    let screen = render(&mut a);
    assert!(
        screen.contains("● 20261201-cur"),
        "the current session is marked: {screen}"
    );
    typed(&mut a, "parser");
    let screen = render(&mut a);
    assert!(
        screen.contains("20261129-abd") && !screen.contains("20261130-abc"),
        "{screen}"
    );
    let actions = press(&mut a, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(
        actions,
        vec![Action::Op(Op::Resume {
            id: "20261129-abd".into()
        })]
    );
    assert!(a.picker.is_none());
    a.on_event(Event::HistoryReplaced {
        messages: Vec::new(),
        todos: Vec::new(),
        calls: Default::default(),
    });
    assert_eq!(a.session.session_id.as_deref(), Some("20261129-abd"));

    let actions = a.submit_text("/resume 20261130");
    assert_eq!(
        actions,
        vec![Action::Op(Op::Resume {
            id: "20261130-abc".into()
        })]
    );
    assert!(a.submit_text("/resume 202611").is_empty());
    assert!(a.transcript_text().contains("2 sessions start with 202611"));
}

/// A clipboard that records what it was given and answers as told.
struct Fake {
    copied: Rc<RefCell<Vec<String>>>,
    answer: Result<Copied, String>,
}

impl Clipboard for Fake {
    fn copy(&mut self, text: &str) -> Result<Copied, String> {
        self.copied.borrow_mut().push(text.to_owned());
        self.answer.clone()
    }
    fn image(&self) -> super::clipboard::ImageRead {
        Box::new(|| Err("the clipboard holds no image".to_owned()))
    }
}

#[test]
fn copy_says_where_the_text_went_and_never_claims_a_failed_copy() {
    let mut a = app();
    a.submit_text("/copy");
    assert!(a.transcript_text().contains("nothing to copy yet"));
    a.on_event(Event::TurnFinished {
        outcome: TurnOutcome::Done,
        text: "the answer".into(),
    });
    for (answer, expected) in [
        (Ok(Copied::System), "copied the last answer to the system clipboard"),
        (
            Ok(Copied::Osc52),
            "sent the last answer to the terminal's clipboard (OSC 52",
        ),
        (Err("no terminal".into()), "could not copy the last answer: no terminal"),
    ] {
        let copied = Rc::new(RefCell::new(Vec::new()));
        a.clipboard = Box::new(Fake {
            copied: copied.clone(),
            answer,
        });
        a.submit_text("/copy");
        assert_eq!(copied.borrow().as_slice(), ["the answer"]);
        let last = a.entries.last().map(|e| e.entry.plain()).unwrap_or_default();
        assert!(last.contains(expected), "{last}");
    }
}

#[test]
fn a_cr_paste_keeps_its_lines_and_stays_a_placeholder_in_the_transcript() {
    let mut a = app();
    let pasted = "row\r".repeat(120_000);
    a.on_paste(&pasted);
    let label = "[Pasted #1: 120000 lines, 480000 bytes]";
    assert_eq!(a.composer.text(), label);
    let actions = press(&mut a, KeyCode::Enter, KeyModifiers::NONE);
    let full = "row\n".repeat(120_000);
    assert_eq!(actions, vec![Action::Op(Op::UserTurn { text: full.clone() })]);
    a.on_event(Event::TurnStarted { prompt: full });
    let shown = a.entries.iter().rev().find_map(|e| match &e.entry {
        Entry::User(text, _) => Some(text.clone()),
        _ => None,
    });
    assert_eq!(shown.as_deref(), Some(label));
    // A huge prompt from elsewhere (a resumed session, `brute "…"`) shows as a summary.
    a.on_event(Event::TurnStarted {
        prompt: "x\n".repeat(300_000),
    });
    let last = a.entries.last().map(|e| e.entry.plain()).unwrap_or_default();
    assert!(last.len() < 300, "{}", last.len());
}

#[test]
fn a_turn_that_ends_unfocused_calls_the_person_as_the_setting_says() {
    let finish = |a: &mut App| {
        a.on_event(Event::TurnFinished {
            outcome: TurnOutcome::Done,
            text: "done".into(),
        })
    };
    let mut a = app();
    finish(&mut a);
    assert_eq!(a.notification, None, "focused: nobody needs calling");

    a.on_focus(false);
    finish(&mut a);
    assert_eq!(a.notification.take().as_deref(), Some("\u{7}"));

    a.notify = crate::tui::notify::Notify::Osc9;
    finish(&mut a);
    assert_eq!(
        a.notification.take().as_deref(),
        Some("\u{1b}]9;brute: the turn is done\u{7}")
    );

    a.on_focus(true);
    finish(&mut a);
    assert_eq!(a.notification, None, "focus came back");

    a.notify = crate::tui::notify::Notify::Off;
    a.on_focus(false);
    finish(&mut a);
    assert_eq!(a.notification, None, "notify = off");
}

#[test]
fn ctrl_v_reads_the_clipboard_once_at_a_time_and_its_outcome_lands_where_the_cursor_is() {
    let mut a = app();
    a.composer.set("look at ");
    assert_eq!(ctrl(&mut a, 'v'), vec![Action::PasteImage]);
    // A second Ctrl-V while the first still reads starts no other read.
    assert!(ctrl(&mut a, 'v').is_empty());
    assert!(a.transcript_text().contains("still reading the clipboard"));
    a.image_pasted(Err("the clipboard did not answer within 3 s".into()));
    assert!(
        a.transcript_text()
            .contains("no image pasted: the clipboard did not answer within 3 s")
    );
    assert_eq!(a.composer.text(), "look at ");
    // Read again: the mention goes where the cursor is when the image arrives.
    assert_eq!(ctrl(&mut a, 'v'), vec![Action::PasteImage]);
    a.image_pasted(Ok("@/data/pasted/clipboard-1.png".into()));
    assert_eq!(a.composer.text(), "look at @/data/pasted/clipboard-1.png ");
}

#[test]
fn an_image_that_arrives_during_a_history_search_lands_in_the_draft() {
    let mut a = app();
    a.composer.set("my draft ");
    assert_eq!(ctrl(&mut a, 'v'), vec![Action::PasteImage]);
    ctrl(&mut a, 'r');
    assert!(a.search.is_some());
    a.image_pasted(Ok("@/data/pasted/clipboard-2.png".into()));
    assert!(a.search.is_none());
    assert_eq!(a.composer.text(), "my draft @/data/pasted/clipboard-2.png ");
}
