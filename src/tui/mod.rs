//! The interactive terminal UI: a second renderer of the Event protocol.
//!
//! [`app`] holds the state and its update logic (no terminal), [`view`] draws it, and this
//! module owns the terminal: raw mode, the alternate screen, bracketed paste, synchronized
//! updates, and restoring everything on exit, on error and on panic. On exit the
//! conversation is printed to the normal screen so it stays in the scrollback.

pub mod app;
pub mod clipboard;
mod clipboard_image;
pub mod commands;
pub mod composer;
pub mod confirm;
pub mod dialog;
pub mod editor;
pub mod fatal;
pub mod files;
pub mod history;
pub mod hyperlink;
pub mod markdown;
pub mod modal_view;
pub mod modes;
pub mod notify;
pub mod paste;
pub mod picker;
pub mod sanitize;
pub mod search;
pub mod transcript;
pub mod view;
pub mod wrap;

#[cfg(test)]
mod input_tests;

use std::io::{Write, stdout};
use std::path::Path;
use std::time::Duration;

use crossterm::event::{
    Event as TermEvent, EventStream, KeyEventKind, KeyboardEnhancementFlags, MouseEventKind,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{self, BeginSynchronizedUpdate, EndSynchronizedUpdate};
use futures_util::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::mpsc;

use crate::config::Settings;
use crate::protocol::{Event, EventSink, Op};
use app::{Action, App, SessionInfo};

/// Spinner frame interval while something runs.
const TICK: Duration = Duration::from_millis(1000 / transcript::TICKS_PER_SECOND as u64);
/// How long to wait for the terminal to say which modes it had.
const QUERY_TIMEOUT: Duration = Duration::from_millis(500);

/// The modes the terminal had before the UI started (restored on exit and from the panic hook).
static SAVED_MODES: std::sync::Mutex<modes::Saved> = std::sync::Mutex::new(modes::Saved { alternate_scroll: None });

/// Runs the interactive UI until the person quits; returns the exit code. `first_prompt`
/// (`brute "prompt"`) is sent as if typed once the UI is up.
pub async fn run(
    settings: &Settings,
    place: &crate::config::project::Workspace,
    session: &crate::app::SessionChoice,
    first_prompt: Option<String>,
) -> anyhow::Result<i32> {
    let root = place.root.as_path();
    // Under tmux, `auto` asks the tmux server (a process and a round trip): on a thread, so
    // the first frame does not wait for it (it has no links yet anyway).
    let hyperlinks = hyperlink::Setting::parse(settings.hyperlinks.value.as_str()).unwrap_or_default();
    let hyperlinks = std::thread::spawn(move || {
        hyperlinks.enabled(|name| std::env::var(name).ok(), hyperlink::tmux_client_features)
    });
    let (events, mut rx) = EventSink::channel();
    let started = crate::app::start(settings, place, events, crate::app::FrontEnd::Ui, Vec::new(), session)?;
    let info = SessionInfo {
        provider: started.provider.clone(),
        model: settings.model.value.clone(),
        cwd: shorten_home(&place.cwd),
        sandbox: settings.permission_mode(),
        base_url: settings.base_url.value.clone(),
        session_id: started.session_id.clone(),
        effort: settings.reasoning_effort(),
    };
    let mut app = App::with_files(info, started.tools.clone(), files::FileIndex::scan(&place.cwd));
    app.notify = notify::Notify::parse(settings.notify.value.as_str()).unwrap_or_default();
    app.hyperlinks_pending = Some(hyperlinks);
    app.custom_commands = started.commands.clone();
    app.welcome();
    app.sessions = list_sessions(root);
    let sessions_root = root.to_path_buf();
    app.list_sessions = Some(Box::new(move || list_sessions(&sessions_root)));
    if let Some(data_dir) = crate::paths::data_dir() {
        let history = history::HistoryFile::new(&data_dir, root);
        app.composer.set_history(history.load());
        app.history_file = Some(history);
    }
    app.clipboard = Box::new(clipboard::SystemOrOsc52::new(
        stdout(),
        std::io::IsTerminal::is_terminal(&stdout()),
        clipboard::has_display(),
    ));
    for notice in started.notices.into_iter().chain(settings.untrusted_notice(root)) {
        app.notice(transcript::NoticeKind::Info, notice);
    }
    if settings.permission_mode().sandbox() != crate::sandbox::Mode::FullAccess
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

    let links = hyperlink::Links::default();
    let mut terminal = enter(app.mouse_captured, links.clone())?;
    let first = first_prompt.map(|text| app.submit_text(&text)).unwrap_or_default();
    let result = event_loop(&mut terminal, &links, &mut app, &mut rx, &ops_tx, first).await;
    leave();
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

type Term = Terminal<hyperlink::LinkBackend<CrosstermBackend<std::io::Stdout>>>;

/// Runs until the person quits (exit code 0) or a SIGTERM / SIGHUP arrives (143 / 129).
/// `first` are actions to take before any input (those of the first prompt).
async fn event_loop(
    terminal: &mut Term,
    links: &hyperlink::Links,
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
    // Ctrl-V's reads report here (one at a time: the app asks for no other meanwhile).
    let (pasted_tx, mut pasted_rx) = mpsc::unbounded_channel::<Result<String, String>>();
    loop {
        for action in std::mem::take(&mut actions) {
            match action {
                Action::Op(op) => {
                    let _ = ops.send(op);
                }
                Action::Quit => return Ok(0),
                Action::Editor(text) => {
                    // The editor owns the terminal meanwhile: no reader may take its keys.
                    drop(input);
                    leave();
                    let result = editor::edit(&text);
                    reenter(app.mouse_captured)?;
                    terminal.clear()?;
                    input = EventStream::new();
                    app.edited(result);
                }
                Action::ToggleMouse => {
                    let mut out = stdout();
                    let on = if app.mouse_captured {
                        modes::MOUSE_ON
                    } else {
                        modes::MOUSE_OFF
                    };
                    let _ = write!(out, "{on}");
                    let _ = out.flush();
                }
                Action::Redraw => {
                    terminal.clear()?;
                    app.dirty = true;
                }
                Action::PasteImage => {
                    let read = app.clipboard.image();
                    let pasted = pasted_tx.clone();
                    tokio::task::spawn_blocking(move || {
                        let _ = pasted.send(clipboard::read_and_keep(read));
                    });
                }
            }
        }
        if app.dirty {
            draw(terminal, links, app)?;
        }
        if let Some(sequence) = app.notification.take() {
            let mut out = stdout();
            let _ = write!(out, "{sequence}");
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
            Some(saved) = pasted_rx.recv() => {
                app.image_pasted(saved);
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
        TermEvent::FocusGained => {
            app.on_focus(true);
            Vec::new()
        }
        TermEvent::FocusLost => {
            app.on_focus(false);
            Vec::new()
        }
        TermEvent::Resize(..) => {
            app.dirty = true;
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// Draws one frame with its hyperlinks (see [`hyperlink`]): the link table the view records
/// is captured against the rendered buffer and written by the backend with ratatui's diff.
pub fn draw_frame<B: ratatui::backend::Backend>(
    terminal: &mut Terminal<hyperlink::LinkBackend<B>>,
    links: &hyperlink::Links,
    app: &mut App,
) -> Result<(), B::Error> {
    terminal.draw(|frame| {
        view::draw(frame, app);
        if app.hyperlinks {
            links.capture(frame.buffer_mut(), &app.links);
        }
    })?;
    Ok(())
}

/// Draws one frame inside a synchronized update, so the terminal shows it at once.
fn draw(terminal: &mut Term, links: &hyperlink::Links, app: &mut App) -> anyhow::Result<()> {
    app.settle_hyperlinks();
    execute!(stdout(), BeginSynchronizedUpdate)?;
    let drawn = draw_frame(terminal, links, app);
    execute!(stdout(), EndSynchronizedUpdate)?;
    drawn?;
    crate::timing::frame_drawn();
    app.dirty = false;
    Ok(())
}

fn enter(mouse: bool, links: hyperlink::Links) -> anyhow::Result<Term> {
    fatal::install();
    terminal::enable_raw_mode()?;
    // Asked before the input reader starts, so the reply is not read as keys.
    let saved = modes::Saved {
        alternate_scroll: modes::query_alternate_scroll(QUERY_TIMEOUT),
    };
    if let Ok(mut modes) = SAVED_MODES.lock() {
        *modes = saved;
    }
    reenter(mouse)?;
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        leave();
        previous(info);
    }));
    Ok(Terminal::new(hyperlink::LinkBackend::new(
        CrosstermBackend::new(stdout()),
        links,
    ))?)
}

/// Sets the UI's modes (at start, and after `$EDITOR` returns).
fn reenter(mouse: bool) -> anyhow::Result<()> {
    terminal::enable_raw_mode()?;
    let mut out = stdout();
    modes::enter(&mut out, mouse)?;
    if terminal::supports_keyboard_enhancement().unwrap_or(false) {
        let _ = execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        );
    }
    Ok(())
}

/// Restores the terminal (idempotent; also called from the panic hook).
fn leave() {
    let mut out = stdout();
    let _ = execute!(out, PopKeyboardEnhancementFlags);
    let saved = SAVED_MODES.lock().map(|m| *m).unwrap_or_default();
    let _ = modes::leave(&mut out, saved);
    let _ = terminal::disable_raw_mode();
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

/// This directory's saved sessions, newest first, for `/resume`.
fn list_sessions(root: &Path) -> Vec<picker::SessionRow> {
    let Some(data_dir) = crate::paths::data_dir() else {
        return Vec::new();
    };
    crate::session::SessionStore::new(&data_dir, root)
        .list()
        .into_iter()
        .map(|s| picker::SessionRow {
            when: crate::session::format_time(s.modified_ms),
            id: s.id,
            messages: s.messages,
            first_prompt: sanitize::sanitize(&s.first_prompt),
        })
        .collect()
}
