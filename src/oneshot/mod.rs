//! `brute -p`: headless runs. One task from the prompt (its answer streamed to stdout, tool
//! activity to stderr, the outcome as the exit code), or, with `--input-format stream-json`,
//! a session driven by a program on stdin (Claude Code's SDK): many turns in one process,
//! approvals asked of that program. A renderer of the Event protocol like the TUI:
//! [`printer`] shows the `text` and `events` formats, [`messages`] Claude Code's message
//! stream, [`control`] reads what the program writes, [`report`] holds the init and result
//! lines.

pub mod control;
pub mod messages;
mod printer;
pub mod report;

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::app;
use crate::cli::{InputFormat, OutputFormat, exit};
use crate::config::Settings;
use crate::config::project::Workspace;
use crate::protocol::{Event, EventSink, Mode, Op, Question, RequestKind, Response, ServerStatus, TurnOutcome};
use control::{Control, Incoming};
use messages::Messages;
use printer::Printer;
use report::{Report, RunFacts};

/// Options of one headless run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The first turn's prompt (always there with text input; with stream-json input, an
    /// optional first message before stdin's).
    pub prompt: Option<String>,
    pub input: InputFormat,
    pub format: OutputFormat,
    pub quiet: bool,
    pub session: app::SessionChoice,
    /// `--include-partial-messages`.
    pub partial: bool,
    /// `--permission-prompt-tool stdio`: approvals go to the program on stdin.
    pub ask_program: bool,
    /// `--permission-mode dontAsk`: nobody is asked; what needs approval is denied.
    pub never_ask: bool,
}

/// Whether a person can answer questions: both stdin and stderr are terminals.
pub fn interactive() -> bool {
    cfg!(feature = "tui") && std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Writes one JSON line to stdout at once (a closed stdout is not worth a panic).
fn emit(line: &impl serde::Serialize) {
    if let Ok(text) = serde_json::to_string(line) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

/// How the run shows events.
enum Render {
    Printer(Printer),
    Messages(Messages),
}

impl Render {
    fn event(&mut self, event: &Event) {
        match self {
            Render::Printer(printer) => printer.print(event),
            Render::Messages(messages) => messages.event(event).iter().for_each(emit),
        }
    }
}

/// What the program driving a stream-json session has going with brute.
struct Program {
    /// Ask it about approvals (`--permission-prompt-tool stdio`, not `dontAsk`).
    ask: bool,
    /// Requests to the program waiting for an answer, by the request id the program sees.
    pending: HashMap<String, Pending>,
    /// The MCP servers' last status, for `mcp_status`.
    servers: Vec<ServerStatus>,
    /// The program asked for an interrupt (its turn's end is no failure of the run).
    interrupted: bool,
    /// stdin is still read: only then can the program answer anything.
    open: bool,
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

/// What a request to the program is for.
enum Pending {
    /// `can_use_tool`: brute's request id and the call's input.
    Approval { id: String, input: Value },
    /// `hook_callback`: brute's request id.
    Hook { id: String },
}

/// The usage errors of a flag combination, before anything starts.
fn check(options: &Options) -> Result<(), &'static str> {
    let stream_out = options.format == OutputFormat::StreamJson;
    if options.input == InputFormat::StreamJson && !stream_out {
        return Err("--input-format stream-json needs --output-format stream-json");
    }
    if options.ask_program && options.input != InputFormat::StreamJson {
        return Err("--permission-prompt-tool stdio needs --input-format stream-json (the answers come on stdin)");
    }
    if options.partial && !stream_out {
        return Err("--include-partial-messages needs --output-format stream-json");
    }
    Ok(())
}

/// Runs one headless task (or a stream-json session) and returns the exit code.
pub async fn run(settings: &Settings, place: &Workspace, options: Options) -> anyhow::Result<i32> {
    let started = Instant::now();
    if let Err(usage) = check(&options) {
        crate::sanitize::eprint_line(&format!("brute: {usage}"));
        return Ok(exit::USAGE);
    }
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
    let streaming = options.input == InputFormat::StreamJson;
    let mut input_open = streaming;
    let mut lines = match streaming {
        true => crate::lines::read(tokio::io::stdin()),
        false => mpsc::unbounded_channel().1,
    };
    // The SDK's first line is its `initialize`, with the hooks it registers: they join the
    // session's hooks before it starts. Any other first line is handled once it has.
    let mut settings = std::borrow::Cow::Borrowed(settings);
    let mut initialize: Option<(String, Result<(), String>)> = None;
    let mut first_line: Option<Result<String, String>> = None;
    if streaming {
        match lines.recv().await {
            None => input_open = false,
            Some(Ok(line)) => match control::parse(&line) {
                Ok(Incoming::Control {
                    request_id,
                    request: Control::Initialize { hooks, agents },
                }) => {
                    let registered = match agents {
                        true => Err(
                            "brute does not run agents defined through the SDK (its `task` tool is the sub-agent)"
                                .to_owned(),
                        ),
                        false => control::hooks(&hooks),
                    };
                    let registered = registered.map(|hooks| {
                        let source = crate::config::Source::Flag("the SDK's initialize".to_owned());
                        settings
                            .to_mut()
                            .hooks
                            .extend(hooks.into_iter().map(|value| crate::config::Sourced {
                                value,
                                source: source.clone(),
                            }));
                    });
                    initialize = Some((request_id, registered));
                }
                _ => first_line = Some(Ok(line)),
            },
            Some(Err(error)) => first_line = Some(Err(error)),
        }
    }
    let settings: &Settings = &settings;
    let (events, mut rx) = EventSink::channel();
    let front_end = if streaming {
        app::FrontEnd::Program
    } else if interactive() {
        app::FrontEnd::HeadlessAtTerminal
    } else {
        app::FrontEnd::Headless
    };
    let conversation = app::start(settings, place, events, front_end, Vec::new(), &options.session)?;
    let ops_tx = conversation.handle.ops.clone();
    let session_id = conversation.session_id.clone();
    let mut render = match options.format {
        OutputFormat::StreamJson => Render::Messages(Messages::new(
            session_id.as_deref(),
            &settings.model.value,
            options.partial,
        )),
        format => Render::Printer(Printer {
            format,
            quiet: options.quiet,
            calls: HashMap::new(),
            text_open: false,
            clean_out: std::io::stdout().is_terminal(),
            err_terminal: std::io::stderr().is_terminal(),
        }),
    };
    let commands: Vec<String> = conversation.commands.iter().map(|(name, _)| name.clone()).collect();
    if matches!(options.format, OutputFormat::StreamJson | OutputFormat::Events) {
        let facts = report::InitFacts {
            session_id: session_id.as_deref(),
            model: &settings.model.value,
            tools: &conversation.tools,
            cwd: &place.cwd,
            provider: &conversation.provider,
            mode: settings.permission_mode(),
            yolo: settings.yolo,
            mcp_servers: settings.mcp_servers.iter().map(|s| s.name.clone()).collect(),
            commands: commands.clone(),
            key_source: key_source(settings),
        };
        emit(&report::init(&facts));
    }
    let mut report = Report::default();
    for notice in &conversation.notices {
        let event = Event::Notice {
            message: notice.clone(),
        };
        report.record(&event);
        render.event(&event);
    }
    // Turns asked for and not finished yet.
    let mut owed = 0usize;
    if let Some(prompt) = &options.prompt {
        let _ = ops_tx.send(Op::UserTurn { text: prompt.clone() });
        owed += 1;
    }
    let mut program = Program {
        ask: options.ask_program && !options.never_ask,
        pending: HashMap::new(),
        servers: Vec::new(),
        interrupted: false,
        open: streaming,
    };
    if let Some((request_id, registered)) = initialize {
        let answer = registered.map(|()| program.capabilities(&commands));
        emit(&control::respond(&request_id, answer));
    }
    if let Some(line) = first_line {
        owed += program.line(line, settings, &commands, &ops_tx);
    }
    // One listener per signal for the whole run, so a signal between two polls is not lost.
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut stops = 0u32;
    let mut last_stop: Option<(i32, Instant)> = None;
    // SIGTERM / SIGHUP end the run like Ctrl-C, with the conventional 128 + signal code.
    let mut signal_code: Option<i32> = None;
    let mut outcome = TurnOutcome::Done;
    let mut turn_started = started;
    let facts = |outcome, since: Instant| RunFacts {
        outcome,
        session_id: session_id.as_deref(),
        provider: &conversation.provider,
        model: &settings.model.value,
        duration_ms: u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX),
        context_window: settings.context_window.value,
    };
    while owed > 0 || input_open {
        let code = tokio::select! {
            event = rx.recv() => {
                let Some(event) = event else { break };
                report.record(&event);
                render.event(&event);
                match &event {
                    Event::TurnStarted { .. } => program.interrupted = false,
                    Event::Request { id, kind } if streaming => program.request(id, kind, &ops_tx),
                    Event::Request { id, kind } => answer_request(id, kind, &ops_tx),
                    Event::RequestClosed { id } => program.closed(id),
                    Event::McpStatus { servers } => program.servers.clone_from(servers),
                    // An interrupt gave queued prompts back: the program's own interrupt stops
                    // one turn and the rest still run; a signal ends the run, so they do not.
                    Event::QueueReturned { prompts } if streaming && signal_code.is_none() && stops == 0 => {
                        for text in prompts {
                            let _ = ops_tx.send(Op::UserTurn { text: text.clone() });
                        }
                    }
                    Event::QueueReturned { prompts } => owed = owed.saturating_sub(prompts.len()),
                    Event::TurnFinished { outcome: finished, .. } => {
                        outcome = *finished;
                        owed = owed.saturating_sub(1);
                        if owed == 0 && !input_open {
                            break;
                        }
                        if options.format != OutputFormat::Text {
                            emit(&report.result(&facts(outcome, turn_started)));
                        }
                        report = Report::default();
                        turn_started = Instant::now();
                    }
                    _ => {}
                }
                continue;
            }
            line = lines.recv(), if input_open => {
                match line {
                    None => {
                        input_open = false;
                        program.input_closed(&ops_tx);
                    }
                    Some(line) => owed += program.line(line, settings, &commands, &ops_tx),
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
        if stops > 1 || owed == 0 {
            let _ = std::io::stdout().flush();
            return Ok(signal_code.unwrap_or(code));
        }
        if options.format == OutputFormat::Text && code == exit::INTERRUPTED {
            crate::sanitize::eprint_line("\ninterrupting… (Ctrl-C again to quit at once)");
        }
        outcome = TurnOutcome::Interrupted;
        input_open = false;
        program.input_closed(&ops_tx);
        let _ = ops_tx.send(Op::Interrupt);
    }
    // The last turn is over and recorded; let the conversation end.
    let _ = ops_tx.send(Op::Shutdown);
    drop(ops_tx);
    let _ = conversation.handle.task.await;
    // The last turn's result, unless it was printed when the turn ended (input still open).
    if options.format != OutputFormat::Text && (report.has_turn() || (!streaming && options.prompt.is_some())) {
        emit(&report.result(&facts(outcome, turn_started)));
    }
    let _ = std::io::stdout().flush();
    if let Some(code) = signal_code {
        return Ok(code);
    }
    Ok(match outcome {
        TurnOutcome::Done => exit::OK,
        TurnOutcome::Error => exit::ERROR,
        TurnOutcome::MaxTurns => exit::MAX_TURNS,
        // An interrupt the program asked for ends its turn, not the run's success.
        TurnOutcome::Interrupted if program.interrupted => exit::OK,
        TurnOutcome::Interrupted => exit::INTERRUPTED,
    })
}

/// One MCP server in Claude Code's `mcp_status` words.
fn server_status(server: &ServerStatus) -> Value {
    use crate::protocol::ServerState;
    let status = match &server.state {
        ServerState::Disabled => "disabled",
        ServerState::Starting => "pending",
        ServerState::Ready => "connected",
        ServerState::Failed { .. } => "failed",
    };
    json!({"name": server.name, "status": status, "tools": server.tools})
}

/// Where the API key came from, in the words of Claude Code's `apiKeySource`.
fn key_source(settings: &Settings) -> String {
    use crate::config::Source;
    match settings.api_key.as_ref().map(|key| &key.source) {
        None => "none".to_owned(),
        Some(Source::Env(var)) => var.clone(),
        Some(Source::File(_)) => "config".to_owned(),
        Some(Source::Flag(_)) => "flag".to_owned(),
        Some(Source::Default | Source::Detected(_)) => "none".to_owned(),
    }
}

impl Program {
    /// stdin ended (or a signal stops reading it): nothing the program was asked can be
    /// answered any more, so every waiting request takes its default, and so does every
    /// later one.
    fn input_closed(&mut self, ops: &mpsc::UnboundedSender<Op>) {
        self.open = false;
        for (_, pending) in self.pending.drain() {
            let id = match pending {
                Pending::Approval { id, .. } | Pending::Hook { id } => id,
            };
            let _ = ops.send(Op::Respond {
                id,
                response: Response::NoPerson,
            });
        }
    }

    /// A request of the core: an approval goes to the program when it answers approvals;
    /// every other kind (and every approval when it does not) takes its documented default.
    fn request(&mut self, id: &str, kind: &RequestKind, ops: &mpsc::UnboundedSender<Op>) {
        if !self.open {
            let _ = ops.send(Op::Respond {
                id: id.to_owned(),
                response: kind.default_response(),
            });
            return;
        }
        match kind {
            RequestKind::Approval {
                tool,
                summary,
                reason,
                call_id,
                input,
                ..
            } if self.ask => {
                let request_id = format!("brute-{id}");
                emit(&control::can_use_tool(
                    &request_id,
                    tool,
                    input,
                    call_id,
                    summary,
                    reason,
                ));
                self.pending.insert(
                    request_id,
                    Pending::Approval {
                        id: id.to_owned(),
                        input: input.clone(),
                    },
                );
            }
            RequestKind::Hook { callback, input } => {
                let request_id = format!("brute-{id}");
                emit(&json!({
                    "type": "control_request",
                    "request_id": request_id,
                    "request": {"subtype": "hook_callback", "callback_id": callback, "input": input,
                                "tool_use_id": input.get("tool_use_id")},
                }));
                self.pending.insert(request_id, Pending::Hook { id: id.to_owned() });
            }
            other => {
                let _ = ops.send(Op::Respond {
                    id: id.to_owned(),
                    response: other.default_response(),
                });
            }
        }
    }

    /// A request no longer waits (its turn was interrupted): the program is told to drop it.
    fn closed(&mut self, id: &str) {
        let request_id = format!("brute-{id}");
        if self.pending.remove(&request_id).is_some() {
            emit(&json!({"type": "control_cancel_request", "request_id": request_id}));
        }
    }

    /// One line from stdin (or the error reading it); returns the turns it asked for.
    fn line(
        &mut self,
        line: Result<String, String>,
        settings: &Settings,
        commands: &[String],
        ops: &mpsc::UnboundedSender<Op>,
    ) -> usize {
        match line.and_then(|line| control::parse(&line).map_err(|e| e.to_string())) {
            Ok(incoming) => self.incoming(incoming, settings, commands, ops),
            Err(error) => {
                crate::sanitize::eprint_line(&format!("brute: stdin: {error}"));
                0
            }
        }
    }

    /// What `initialize` answers: the commands, and brute's pid.
    fn capabilities(&self, commands: &[String]) -> Value {
        json!({
            "commands": commands.iter().map(|c| json!({"name": c.trim_start_matches('/'), "description": "", "argumentHint": ""})).collect::<Vec<_>>(),
            "output_style": "default",
            "available_output_styles": ["default"],
            "models": [],
            "pid": std::process::id(),
        })
    }

    /// One line from the program; returns the turns it asked for (0 or 1).
    fn incoming(
        &mut self,
        incoming: Incoming,
        settings: &Settings,
        commands: &[String],
        ops: &mpsc::UnboundedSender<Op>,
    ) -> usize {
        match incoming {
            Incoming::User { text, images, dropped } => {
                let mut notes = Vec::new();
                if dropped > 0 {
                    notes.push(format!(
                        "{dropped} content block(s) of the message were left out: brute reads text and base64 image blocks of stream-json input"
                    ));
                }
                let text = crate::agent::attach::with_images(text, &images, "sdk", &mut notes);
                for note in notes {
                    emit(&json!({"type": "system", "subtype": "notice", "uuid": report::uuid(), "message": note}));
                }
                let _ = ops.send(Op::UserTurn { text });
                1
            }
            Incoming::Answer { request_id, result } => {
                match self.pending.remove(&request_id) {
                    Some(Pending::Approval { id, input }) => {
                        let (response, stop) = control::approval(control::decision(result), &input);
                        let _ = ops.send(Op::Respond { id, response });
                        if stop {
                            self.interrupted = true;
                            let _ = ops.send(Op::Interrupt);
                        }
                    }
                    Some(Pending::Hook { id }) => {
                        let response = match result {
                            Ok(output) => Response::HookOutput { output },
                            Err(_) => Response::NoPerson,
                        };
                        let _ = ops.send(Op::Respond { id, response });
                    }
                    None => {}
                }
                0
            }
            Incoming::Control { request_id, request } => {
                let result = self.control(request, settings, commands, ops);
                emit(&control::respond(&request_id, result));
                0
            }
            Incoming::Nothing => 0,
        }
    }

    /// The answer to one control request.
    fn control(
        &mut self,
        request: Control,
        settings: &Settings,
        commands: &[String],
        ops: &mpsc::UnboundedSender<Op>,
    ) -> Result<Value, String> {
        match request {
            // Hooks join a session as it starts (the first line); a later initialize may not
            // add any.
            Control::Initialize { hooks, agents } if agents || hooks.as_object().is_some_and(|h| !h.is_empty()) => Err(
                "hooks and agents are registered by the first initialize only, before the session starts".to_owned(),
            ),
            Control::Initialize { .. } => Ok(self.capabilities(commands)),
            Control::Interrupt => {
                self.interrupted = true;
                let _ = ops.send(Op::Interrupt);
                Ok(json!({}))
            }
            Control::SetPermissionMode(mode) => {
                let to = match mode.as_str() {
                    "default" => Mode::from(settings.sandbox_mode()),
                    "acceptEdits" => Mode::WorkspaceWrite,
                    "plan" => Mode::Plan,
                    "dontAsk" => {
                        self.ask = false;
                        return Ok(json!({}));
                    }
                    "bypassPermissions" => {
                        return Err("full access without approvals is not switched on mid-session: start brute with --permission-mode bypassPermissions (or --yolo)".to_owned());
                    }
                    other => return Err(format!("unknown permission mode `{other}`")),
                };
                let _ = ops.send(Op::SetSandbox { mode: to });
                Ok(json!({}))
            }
            Control::SetModel(model) => {
                let model = model.unwrap_or_else(|| settings.model.value.clone());
                let _ = ops.send(Op::SetModel { model });
                Ok(json!({}))
            }
            Control::McpStatus => Ok(json!({
                "mcpServers": self.servers.iter().map(server_status).collect::<Vec<_>>(),
            })),
            Control::Other(subtype) => Err(format!("brute does not support the control request `{subtype}`")),
        }
    }
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
