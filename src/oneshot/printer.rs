//! How `-p` shows brute's events in the `text` and `events` formats: the answer on stdout,
//! tool activity on stderr (`text`), or every event as a JSON line (`events`).

use std::collections::HashMap;
use std::io::Write;

use serde_json::json;

use crate::cli::OutputFormat;
use crate::protocol::Event;

/// Prints events as the chosen format wants.
pub(super) struct Printer {
    pub(super) format: OutputFormat,
    pub(super) quiet: bool,
    pub(super) calls: HashMap<String, (String, String)>,
    pub(super) text_open: bool,
    /// stdout is a terminal: the answer text is sanitized there, so text from the model,
    /// files or commands cannot retitle the window, write the clipboard or move the cursor.
    ///
    /// Only there: piped, the answer is data (`brute -p "write a script" > x.sh`) and keeps
    /// its exact bytes; whoever shows it later chooses how. The text is sanitized (escape
    /// sequences dropped, not shown as `␛`) because it is the answer to read, where colour
    /// codes a model or a file carried are noise; every control character is dropped on its
    /// own, so a sequence split across two deltas cannot get through either. Stderr is not
    /// data: every line there goes through [`crate::sanitize::write_line`], terminal or not.
    pub(super) clean_out: bool,
    /// stderr is a terminal too (then both are most likely the same one).
    pub(super) err_terminal: bool,
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
    pub(super) fn print(&mut self, event: &Event) {
        let mut out = std::io::stdout().lock();
        let mut err = std::io::stderr().lock();
        if self.format != OutputFormat::Text && self.format != OutputFormat::Json {
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
