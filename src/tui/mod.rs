//! The interactive terminal UI: a second renderer of the Event protocol.
//!
//! [`app`] holds the state and its update logic (no terminal), [`view`] draws it, and this
//! module owns the terminal: raw mode, the alternate screen, bracketed paste, synchronized
//! updates, and restoring everything on exit, on error and on panic. On exit the
//! conversation is printed to the normal screen so it stays in the scrollback.

pub mod app;
pub mod commands;
pub mod composer;
pub mod confirm;
pub mod dialog;
pub mod fatal;
pub mod markdown;
pub mod modal_view;
pub mod sanitize;
pub mod transcript;
pub mod view;
pub mod wrap;

use std::io::{Write, stdout};
use std::path::Path;
use std::time::Duration;

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, Event as TermEvent,
    EventStream, KeyEventKind, KeyboardEnhancementFlags, MouseEventKind, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    self, BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::{cursor, execute};
use futures_util::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::mpsc;

use crate::config::Settings;
use crate::protocol::{Event, EventSink, Op};
use app::{Action, App, SessionInfo};

/// Spinner frame interval while something runs.
const TICK: Duration = Duration::from_millis(100);
/// Files offered for `@` completion, at most.
const MAX_FILES: usize = 20_000;

/// Runs the interactive UI until the person quits; returns the exit code. `first_prompt`
/// (`brute "prompt"`) is sent as if typed once the UI is up.
pub async fn run(
    settings: &Settings,
    place: &crate::config::project::Workspace,
    session: &crate::app::SessionChoice,
    first_prompt: Option<String>,
) -> anyhow::Result<i32> {
    let root = place.root.as_path();
    let (events, mut rx) = EventSink::channel();
    let started = crate::app::start(settings, place, events, crate::app::FrontEnd::Ui, Vec::new(), session)?;
    let info = SessionInfo {
        provider: started.provider.clone(),
        model: settings.model.value.clone(),
        cwd: shorten_home(&place.cwd),
        sandbox: settings.sandbox_mode(),
        base_url: settings.base_url.value.clone(),
        session_id: started.session_id.clone(),
        effort: settings.reasoning_effort(),
    };
    let mut app = App::new(info, started.tools.clone(), list_files(&place.cwd));
    app.welcome();
    app.sessions = list_sessions(root);
    for notice in started.notices.into_iter().chain(settings.untrusted_notice(root)) {
        app.notice(transcript::NoticeKind::Info, notice);
    }
    if settings.sandbox_mode() != crate::sandbox::Mode::FullAccess
        && let Err(unavailable) = crate::sandbox::available()
    {
        app.notice(
            transcript::NoticeKind::Error,
            format!("{unavailable}: every command will ask for your approval before it runs"),
        );
    }
    let crate::agent::conversation::Handle {
        ops: ops_tx,
        task: mut agent_task,
    } = started.handle;

    let mut terminal = enter()?;
    let first = first_prompt.map(|text| app.submit_text(&text)).unwrap_or_default();
    let result = event_loop(&mut terminal, &mut app, &mut rx, &ops_tx, first).await;
    leave(app.mouse_captured);
    // Stop the turn the way Esc does (commands get TERM, then KILL after a grace), give it
    // that long to record its results, then drop what is left.
    let _ = ops_tx.send(Op::Interrupt);
    let _ = ops_tx.send(Op::Shutdown);
    // A closed channel ends the conversation once the turn is over.
    drop(ops_tx);
    let grace = Duration::from_secs(6);
    if tokio::time::timeout(grace, &mut agent_task).await.is_err() {
        agent_task.abort();
    }
    let transcript = app.transcript_text();
    if !transcript.trim().is_empty() {
        let mut out = stdout().lock();
        let _ = writeln!(out, "{}", transcript.trim_end());
    }
    result
}

type Term = Terminal<CrosstermBackend<std::io::Stdout>>;

/// Runs until the person quits (exit code 0) or a SIGTERM / SIGHUP arrives (143 / 129).
/// `first` are actions to take before any input (those of the first prompt).
async fn event_loop(
    terminal: &mut Term,
    app: &mut App,
    rx: &mut mpsc::UnboundedReceiver<Event>,
    ops: &mpsc::UnboundedSender<Op>,
    first: Vec<Action>,
) -> anyhow::Result<i32> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut input = EventStream::new();
    let mut ticker = tokio::time::interval(TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut actions = first;
    loop {
        for action in std::mem::take(&mut actions) {
            match action {
                Action::Op(op) => {
                    let _ = ops.send(op);
                }
                Action::Quit => return Ok(0),
                Action::Copy(text) => copy_osc52(&text),
                Action::ToggleMouse => {
                    let _ = if app.mouse_captured {
                        execute!(stdout(), EnableMouseCapture)
                    } else {
                        execute!(stdout(), DisableMouseCapture)
                    };
                }
                Action::Redraw => {
                    terminal.clear()?;
                    app.dirty = true;
                }
            }
        }
        if app.dirty {
            draw(terminal, app)?;
        }
        if std::mem::take(&mut app.bell) {
            // BEL, and OSC 9 for terminals that turn it into a desktop notification.
            let mut out = stdout();
            let _ = write!(out, "\u{7}\u{1b}]9;brute: an approval is waiting\u{7}");
            let _ = out.flush();
        }
        actions = tokio::select! {
            event = input.next() => match event {
                Some(Ok(event)) => on_terminal_event(app, event),
                Some(Err(e)) => return Err(e.into()),
                None => vec![Action::Quit],
            },
            _ = sigterm.recv() => return Ok(crate::cli::exit::TERMINATED),
            _ = sighup.recv() => return Ok(crate::cli::exit::HANGUP),
            event = rx.recv() => {
                if let Some(event) = event {
                    app.on_event(event);
                    // Take everything already queued before drawing once.
                    while let Ok(event) = rx.try_recv() {
                        app.on_event(event);
                    }
                }
                Vec::new()
            }
            _ = ticker.tick(), if app.animating() => {
                app.on_tick();
                Vec::new()
            }
        };
    }
}

fn on_terminal_event(app: &mut App, event: TermEvent) -> Vec<Action> {
    match event {
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => app.on_key(key),
        TermEvent::Paste(text) => {
            app.on_paste(&text);
            Vec::new()
        }
        TermEvent::Mouse(mouse) => {
            match mouse.kind {
                MouseEventKind::ScrollUp => app.scroll_by(3),
                MouseEventKind::ScrollDown => app.scroll_by(-3),
                _ => {}
            }
            Vec::new()
        }
        TermEvent::Resize(..) => {
            app.dirty = true;
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// Draws one frame inside a synchronized update, so the terminal shows it at once.
fn draw(terminal: &mut Term, app: &mut App) -> anyhow::Result<()> {
    execute!(stdout(), BeginSynchronizedUpdate)?;
    let drawn = terminal.draw(|frame| view::draw(frame, app));
    execute!(stdout(), EndSynchronizedUpdate)?;
    drawn?;
    app.dirty = false;
    Ok(())
}

fn enter() -> anyhow::Result<Term> {
    fatal::install();
    terminal::enable_raw_mode()?;
    let mut out = stdout();
    execute!(out, EnterAlternateScreen, EnableBracketedPaste)?;
    // Some terminals turn wheel turns into arrow keys on the alternate screen, which would
    // page through the composer's history; the wheel scrolls after `/mouse` instead.
    let _ = write!(out, "\u{1b}[?1007l");
    if terminal::supports_keyboard_enhancement().unwrap_or(false) {
        let _ = execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        );
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        leave(true);
        previous(info);
    }));
    Ok(Terminal::new(CrosstermBackend::new(stdout()))?)
}

/// Restores the terminal (idempotent; also called from the panic hook).
fn leave(mouse: bool) {
    let mut out = stdout();
    if mouse {
        let _ = execute!(out, DisableMouseCapture);
    }
    let _ = execute!(
        out,
        PopKeyboardEnhancementFlags,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = terminal::disable_raw_mode();
}

/// Puts `text` on the clipboard with OSC 52 (works over SSH in most terminals).
fn copy_osc52(text: &str) {
    let encoded = base64(text.as_bytes());
    let mut out = stdout();
    let _ = write!(out, "\u{1b}]52;c;{encoded}\u{7}");
    let _ = out.flush();
}

fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(TABLE[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn shorten_home(path: &Path) -> String {
    match std::env::var_os("HOME").map(std::path::PathBuf::from) {
        Some(home) if path.starts_with(&home) => format!(
            "~/{}",
            path.strip_prefix(&home)
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ),
        _ => path.display().to_string(),
    }
}

/// This directory's saved sessions, for `/resume`.
fn list_sessions(root: &Path) -> Vec<String> {
    let Some(data_dir) = crate::config::paths::data_dir() else {
        return Vec::new();
    };
    crate::session::SessionStore::new(&data_dir, root)
        .list()
        .into_iter()
        .map(|s| {
            format!(
                "{}  {}  {} messages  {}",
                s.id,
                crate::session::format_time(s.modified_ms),
                s.messages,
                s.first_prompt
            )
        })
        .collect()
}

/// Project files for `@` completion (respecting .gitignore).
fn list_files(root: &Path) -> Vec<String> {
    ignore::WalkBuilder::new(root)
        .require_git(false)
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| e.path().strip_prefix(root).ok().map(|p| p.display().to_string()))
        .take(MAX_FILES)
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_encodes() {
        assert_eq!(super::base64(b"hello"), "aGVsbG8=");
        assert_eq!(super::base64(b"hi!"), "aGkh");
        assert_eq!(super::base64(b""), "");
    }
}
