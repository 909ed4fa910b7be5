//! `brute -p`: one task, headless. Streams the answer to stdout, tool activity to stderr,
//! and maps the turn's outcome to an exit code. A renderer of the Event protocol like the TUI;
//! [`report`] holds the JSON it prints besides the events.

pub mod report;

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::Instant;

use serde_json::json;
use tokio::sync::mpsc;

use crate::app;
use crate::cli::{OutputFormat, exit};
use crate::config::Settings;
use crate::config::project::Workspace;
use crate::protocol::{Event, EventSink, Op, Question, RequestKind, Response, TurnOutcome};
use report::{Report, RunFacts};

/// Options of one headless run.
#[derive(Debug, Clone)]
pub struct Options {
    pub prompt: String,
    pub format: OutputFormat,
    pub quiet: bool,
    pub session: app::SessionChoice,
}

/// Whether a person can answer questions: both stdin and stderr are terminals.
pub fn interactive() -> bool {
    cfg!(feature = "tui") && std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Prints events as the chosen format wants.
struct Printer {
    format: OutputFormat,
    quiet: bool,
    calls: HashMap<String, (String, String)>,
    text_open: bool,
    /// stdout is a terminal: the answer text is sanitized there, so text from the model,
    /// files or commands cannot retitle the window, write the clipboard or move the cursor.
    ///
    /// Only there: piped, the answer is data (`brute -p "write a script" > x.sh`) and keeps
    /// its exact bytes; whoever shows it later chooses how. The text is sanitized (escape
    /// sequences dropped, not shown as `␛`) because it is the answer to read, where colour
    /// codes a model or a file carried are noise; every control character is dropped on its
    /// own, so a sequence split across two deltas cannot get through either. Stderr is not
    /// data: every line there goes through [`crate::sanitize::write_line`], terminal or not.
    clean_out: bool,
    /// stderr is a terminal too (then both are most likely the same one).
    err_terminal: bool,
}

/// `text` made safe for a terminal when `clean`, else as it is (a pipe gets exact bytes).
fn for_terminal(text: &str, clean: bool) -> std::borrow::Cow<'_, str> {
    if clean {
        std::borrow::Cow::Owned(crate::sanitize::sanitize(text))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

impl Printer {
    fn print(&mut self, event: &Event) {
        let mut out = std::io::stdout().lock();
        let mut err = std::io::stderr().lock();
        if self.format == OutputFormat::StreamJson {
            if let Ok(line) = serde_json::to_string(event) {
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            return;
        }
        let text_mode = self.format == OutputFormat::Text;
        if let Event::Nested { parent_call_id, event } = event {
            self.print_nested(parent_call_id, event, &mut out, &mut err);
            return;
        }
        match event {
            Event::TextDelta { text } if text_mode => {
                let _ = out.write_all(for_terminal(text, self.clean_out).as_bytes());
                let _ = out.flush();
                self.text_open = !text.ends_with('\n');
            }
            Event::ToolCallStarted {
                call_id, name, summary, ..
            } => {
                self.calls.insert(call_id.clone(), (name.clone(), summary.clone()));
            }
            Event::ToolResult(result) if !self.quiet => {
                let name = &result.name;
                let duration_ms = result.duration_ms;
                let key = self
                    .calls
                    .get(&result.call_id)
                    .map(|(_, key)| key.clone())
                    .unwrap_or_default();
                let status = match result.failed() {
                    None => "ok".to_owned(),
                    // An exit code or a declined question is the whole story; an error
                    // result's first line says what went wrong.
                    Some(failure) if !result.is_error => failure.word(),
                    Some(failure) => {
                        let first = result
                            .content
                            .lines()
                            .next()
                            .unwrap_or("")
                            .trim_start_matches("Error: ");
                        // `denied: <why>`, not `denied: Denied: <why>`.
                        let first = match first.split_once(": ") {
                            Some((_, rest)) if failure != crate::protocol::Failure::Error => rest,
                            _ => first,
                        };
                        format!(
                            "{}: {}",
                            failure.word(),
                            crate::tool::key_argument(&json!({"name": first}))
                        )
                    }
                };
                let line = format!("[{name}] {key} — {status} ({duration_ms} ms)");
                self.own_line(&mut out);
                crate::sanitize::write_line(&mut err, &line);
            }
            Event::Retrying {
                attempt,
                max_attempts,
                delay_ms,
                reason,
            } => {
                self.own_line(&mut out);
                crate::sanitize::write_line(
                    &mut err,
                    &format!("retrying (attempt {attempt}/{max_attempts}) in {delay_ms} ms: {reason}"),
                );
            }
            Event::Notice { message } => {
                self.own_line(&mut out);
                crate::sanitize::write_line(&mut err, &format!("note: {message}"));
            }
            Event::ImagesAttached { images } if !self.quiet => {
                self.own_line(&mut out);
                crate::sanitize::write_line(&mut err, &format!("attached {}", images.join(" ")));
            }
            Event::Attached { attachment } if !self.quiet => {
                let what = attachment
                    .lines
                    .map_or("directory".to_owned(), |n| format!("{n} lines"));
                self.own_line(&mut out);
                crate::sanitize::write_line(&mut err, &format!("attached: {} ({what})", attachment.path));
            }
            Event::Error { message } => {
                self.own_line(&mut out);
                crate::sanitize::write_line(&mut err, &format!("error: {message}"));
            }
            Event::RequestStarted { .. } | Event::TurnFinished { .. } if text_mode && self.text_open => {
                let _ = writeln!(out);
                self.text_open = false;
            }
            _ => {}
        }
    }
}

impl Printer {
    /// Before a line on stderr: when the answer text stopped mid-line and both streams are
    /// terminals (most likely the same one), ends that line, so the stderr line starts on its
    /// own. Piped output is left as it is.
    fn own_line(&mut self, out: &mut impl Write) {
        if self.text_open && self.clean_out && self.err_terminal {
            let _ = writeln!(out);
            let _ = out.flush();
            self.text_open = false;
        }
    }

    /// A sub-agent's tool calls, indented under the call that started it.
    fn print_nested(&mut self, parent: &str, event: &Event, out: &mut impl Write, err: &mut impl Write) {
        match event {
            Event::Nested { parent_call_id, event } => self.print_nested(parent_call_id, event, out, err),
            Event::ToolCallStarted {
                call_id, name, summary, ..
            } => {
                self.calls
                    .insert(format!("{parent}/{call_id}"), (name.clone(), summary.clone()));
            }
            Event::ToolResult(result) if !self.quiet => {
                let key = self
                    .calls
                    .get(&format!("{parent}/{}", result.call_id))
                    .map(|(_, k)| k.clone())
                    .unwrap_or_default();
                let status = result.failed().map_or_else(|| "ok".to_owned(), |f| f.word());
                let line = format!("    ↳ [{}] {key} — {status} ({} ms)", result.name, result.duration_ms);
                self.own_line(out);
                crate::sanitize::write_line(err, &line);
            }
            _ => {}
        }
    }
}

/// Asks the person through a terminal prompt; `None` when they cancel (Esc / Ctrl-D). The
/// model wrote the questions: they reach stderr in their [`crate::sanitize::visible`] form,
/// the default included (taken as shown: what the person accepts is what they saw).
#[cfg(feature = "tui")]
fn ask_in_terminal(questions: &[Question]) -> Option<Vec<String>> {
    use crate::sanitize::visible;
    let theme = dialoguer::theme::SimpleTheme;
    let mut answers = Vec::with_capacity(questions.len());
    for (i, q) in questions.iter().enumerate() {
        let mut text = String::new();
        if questions.len() > 1 {
            text.push_str(&format!("({}/{}) ", i + 1, questions.len()));
        }
        if let Some(header) = &q.header {
            text.push_str(&format!("[{}] ", visible(header)));
        }
        text.push_str(&visible(&q.question));
        for (n, option) in q.options.iter().enumerate() {
            text.push_str(&format!("\n  {}. {}", n + 1, visible(&option.label)));
            if let Some(description) = &option.description {
                text.push_str(&format!(" — {}", visible(description)));
            }
        }
        if !q.options.is_empty() {
            text.push_str(if q.multiple {
                "\n(numbers or labels, comma-separated, or your own answer)"
            } else {
                "\n(a number, a label, or your own answer)"
            });
        }
        let mut input = dialoguer::Input::<String>::with_theme(&theme)
            .with_prompt(text)
            .allow_empty(true);
        if let Some(default) = &q.default {
            input = input.default(visible(default)).show_default(true);
        }
        answers.push(input.interact_text().ok()?);
    }
    Some(answers)
}

#[cfg(not(feature = "tui"))]
fn ask_in_terminal(_questions: &[Question]) -> Option<Vec<String>> {
    None
}

/// Runs one headless task and returns the exit code.
pub async fn run(settings: &Settings, place: &Workspace, options: Options) -> anyhow::Result<i32> {
    let started = Instant::now();
    // A confined mode that cannot be enforced here is a usage error at start, not a run where
    // every command is denied.
    if settings.permission_mode().sandbox() != crate::sandbox::Mode::FullAccess
        && let Err(unavailable) = crate::sandbox::available()
    {
        crate::sanitize::eprint_line(&format!(
            "brute: {unavailable}. Run with --sandbox full-access to let commands run unconfined."
        ));
        return Ok(exit::USAGE);
    }
    if let Some(notice) = settings.untrusted_notice(&place.root) {
        crate::sanitize::eprint_line(&format!("brute: {notice}"));
    }
    let (events, mut rx) = EventSink::channel();
    let front_end = if interactive() {
        app::FrontEnd::HeadlessAtTerminal
    } else {
        app::FrontEnd::Headless
    };
    let conversation = app::start(settings, place, events, front_end, Vec::new(), &options.session)?;
    let ops_tx = conversation.handle.ops.clone();
    let mut printer = Printer {
        format: options.format,
        quiet: options.quiet,
        calls: HashMap::new(),
        text_open: false,
        clean_out: std::io::stdout().is_terminal(),
        err_terminal: std::io::stderr().is_terminal(),
    };
    if options.format == OutputFormat::StreamJson {
        let init = report::init(
            conversation.session_id.as_deref(),
            &settings.model.value,
            &conversation.tools,
            &place.cwd,
            &conversation.provider,
            settings.permission_mode(),
            settings.yolo,
        );
        if let Ok(line) = serde_json::to_string(&init) {
            let _ = writeln!(std::io::stdout(), "{line}");
        }
    }
    let mut report = Report::default();
    for notice in conversation.notices {
        let event = Event::Notice { message: notice };
        report.record(&event);
        printer.print(&event);
    }
    let _ = ops_tx.send(Op::UserTurn {
        text: options.prompt.clone(),
    });
    // One listener per signal for the whole run, so a signal between two polls is not lost.
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut stops = 0u32;
    let mut last_stop: Option<(i32, Instant)> = None;
    // SIGTERM / SIGHUP end the run like Ctrl-C, with the conventional 128 + signal code.
    let mut signal_code: Option<i32> = None;
    let mut outcome = TurnOutcome::Error;
    loop {
        let code = tokio::select! {
            event = rx.recv() => {
                let Some(event) = event else { break };
                report.record(&event);
                printer.print(&event);
                match &event {
                    Event::Request { id, kind } => answer_request(id, kind, &ops_tx),
                    Event::TurnFinished { outcome: finished, .. } => {
                        outcome = *finished;
                        break;
                    }
                    _ => {}
                }
                continue;
            }
            _ = sigint.recv() => exit::INTERRUPTED,
            _ = sigterm.recv() => exit::TERMINATED,
            _ = sighup.recv() => exit::HANGUP,
        };
        let now = Instant::now();
        if !counts(last_stop, code, now) {
            continue;
        }
        last_stop = Some((code, now));
        stops += 1;
        if code != exit::INTERRUPTED {
            signal_code = Some(code);
        }
        if stops > 1 {
            let _ = std::io::stdout().flush();
            return Ok(signal_code.unwrap_or(code));
        }
        if options.format == OutputFormat::Text && code == exit::INTERRUPTED {
            crate::sanitize::eprint_line("\ninterrupting… (Ctrl-C again to quit at once)");
        }
        let _ = ops_tx.send(Op::Interrupt);
    }
    // The turn is over and recorded; let the conversation end.
    let _ = ops_tx.send(Op::Shutdown);
    drop(ops_tx);
    let _ = conversation.handle.task.await;
    if options.format != OutputFormat::Text {
        let result = report.result(&RunFacts {
            outcome,
            session_id: conversation.session_id.as_deref(),
            provider: &conversation.provider,
            model: &settings.model.value,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        });
        // A closed stdout (e.g. `| head`) is not an error worth a panic.
        if let Ok(line) = serde_json::to_string(&result) {
            let _ = writeln!(std::io::stdout(), "{line}");
        }
    }
    let _ = std::io::stdout().flush();
    if let Some(code) = signal_code {
        return Ok(code);
    }
    Ok(match outcome {
        TurnOutcome::Done => exit::OK,
        TurnOutcome::Error => exit::ERROR,
        TurnOutcome::MaxTurns => exit::MAX_TURNS,
        TurnOutcome::Interrupted => exit::INTERRUPTED,
    })
}

/// Signals of one kind this close together are one delivery: `timeout -s INT` (and a
/// terminal's Ctrl-C with a job control shell) signals brute and then its whole process group,
/// which must count as one interrupt, not as "Ctrl-C twice: quit at once".
const ONE_DELIVERY: std::time::Duration = std::time::Duration::from_millis(300);

/// Whether a stop signal (by its exit code) counts, after the last one that did.
fn counts(last: Option<(i32, Instant)>, code: i32, now: Instant) -> bool {
    !last.is_some_and(|(previous, at)| previous == code && now.saturating_duration_since(at) < ONE_DELIVERY)
}

/// Answers a request from the core: a question is asked at the terminal (off the async
/// threads); every other kind takes its documented default, since `-p` has nobody to confirm
/// anything.
fn answer_request(id: &str, kind: &RequestKind, ops: &mpsc::UnboundedSender<Op>) {
    let (id, ops) = (id.to_owned(), ops.clone());
    match kind {
        RequestKind::Question { questions } => {
            let questions = questions.clone();
            tokio::task::spawn_blocking(move || {
                let response = match ask_in_terminal(&questions) {
                    Some(answers) => Response::Answers { answers },
                    None => Response::Declined,
                };
                let _ = ops.send(Op::Respond { id, response });
            });
        }
        other => {
            let _ = ops.send(Op::Respond {
                id,
                response: other.default_response(),
            });
        }
    }
}

#[cfg(test)]
mod stop_tests {
    use super::*;

    #[test]
    fn a_signal_repeated_at_once_counts_once() {
        let t = Instant::now();
        let ms = |n| t + std::time::Duration::from_millis(n);
        assert!(counts(None, exit::INTERRUPTED, t));
        assert!(!counts(Some((exit::INTERRUPTED, t)), exit::INTERRUPTED, ms(1)));
        assert!(counts(Some((exit::INTERRUPTED, t)), exit::INTERRUPTED, ms(400)));
        assert!(counts(Some((exit::INTERRUPTED, t)), exit::TERMINATED, ms(1)));
    }
}
