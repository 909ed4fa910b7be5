//! `brute acp`: brute as an Agent Client Protocol agent (protocol version 1) over stdio, for
//! editors (Zed, JetBrains IDEs, Neovim and Emacs plugins). A front end like the TUI and
//! `-p`: each ACP session is one conversation of brute's core; the editor's prompts become
//! turns (or, for `/undo` and the other built-ins, [`commands`]), the core's events become
//! `session/update` notifications ([`updates`]), and its requests become the client's: approvals,
//! plans and undos `session/request_permission`, questions a form ([`elicit`]) where the
//! client offers one, and reads and writes of open files `fs/read_text_file` and
//! `fs/write_text_file`.
//!
//! JSON-RPC 2.0, one message a line, written here over serde_json rather than with the
//! `agent-client-protocol` crate: [`rpc`] is the whole of the wire (see docs/sdk.md for why).
//! Each session loads brute's settings for its own directory (config, trust and sandbox as a
//! terminal there would), and `session/load` continues a session saved by the terminal UI or
//! `-p`.

mod commands;
mod elicit;
mod rpc;
pub mod updates;

use std::collections::{HashMap, VecDeque};
use std::path::Path;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::app::{self, SessionChoice};
use crate::config::Settings;
use crate::config::project::Workspace;
use crate::protocol::{ApprovalDecision, Event, EventSink, Mode, Op, PlanDecision, RequestKind, Response, TurnOutcome};
use rpc::{Message, Out};

/// Loads the settings and workspace for a session's directory.
pub type LoadSettings = Box<dyn Fn(&Path) -> anyhow::Result<(Settings, Workspace)> + Send>;

/// One ACP session: a running conversation.
struct Session {
    ops: mpsc::UnboundedSender<Op>,
    task: tokio::task::JoinHandle<()>,
    /// `session/prompt` requests waiting for their turn's end, oldest first.
    prompts: VecDeque<Value>,
    /// `session/prompt` requests that were built-in commands, waiting for their op's outcome.
    commands: VecDeque<Value>,
    /// The last error of the running turn (an `Error` event), for the prompt's error reply.
    error: Option<String>,
    /// Paths of running calls (for their diffs), absolute.
    paths: HashMap<String, String>,
    /// The output of running commands so far (its last [`updates::LIVE_OUTPUT_BYTES`]).
    outputs: HashMap<String, String>,
    /// The session's working directory: relative paths in updates start there.
    cwd: std::path::PathBuf,
}

/// What an answer to one of brute's requests to the client is for.
enum Asked {
    Approval {
        session: String,
        id: String,
    },
    /// A question with choices, offered as options `choice-N`.
    Question {
        session: String,
        id: String,
        labels: Vec<String>,
    },
    Plan {
        session: String,
        id: String,
    },
    /// An undo or redo to confirm: files only, or the turn too.
    Move {
        session: String,
        id: String,
    },
    /// Questions asked as a form (`elicitation/create`).
    Form {
        session: String,
        id: String,
        questions: Vec<crate::protocol::Question>,
    },
    /// `fs/read_text_file` for the `read` tool.
    Buffer {
        session: String,
        id: String,
    },
    /// `fs/write_text_file` for `write` and `patch`.
    Write {
        session: String,
        id: String,
    },
}

/// The agent: its sessions and what it waits for from the client.
struct Agent {
    load: LoadSettings,
    out: Out,
    sessions: HashMap<String, Session>,
    asked: HashMap<String, Asked>,
    events: mpsc::UnboundedSender<(String, Event)>,
    next: u64,
    /// What the client offers of `fs/read_text_file` and `fs/write_text_file`.
    buffers: crate::protocol::requests::Buffers,
    /// The client offers form elicitation: questions are asked as forms.
    elicits: bool,
}

/// Runs the agent until stdin ends (exit 0) or a signal stops it (128 + signal).
pub async fn run(load: LoadSettings) -> anyhow::Result<i32> {
    let (events, mut merged) = mpsc::unbounded_channel();
    let mut agent = Agent {
        load,
        out: Out,
        sessions: HashMap::new(),
        asked: HashMap::new(),
        events,
        next: 0,
        buffers: Default::default(),
        elicits: false,
    };
    let mut lines = crate::lines::read(tokio::io::stdin());
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let code = loop {
        tokio::select! {
            line = lines.recv() => match line {
                None => break crate::cli::exit::OK,
                Some(Ok(line)) => agent.message(&line),
                Some(Err(error)) => crate::sanitize::eprint_line(&format!("brute acp: stdin: {error}")),
            },
            Some((session, event)) = merged.recv() => agent.event(&session, event),
            _ = sigint.recv() => break crate::cli::exit::INTERRUPTED,
            _ = sigterm.recv() => break crate::cli::exit::TERMINATED,
            _ = sighup.recv() => break crate::cli::exit::HANGUP,
        }
    };
    for (_, session) in agent.sessions.drain() {
        let _ = session.ops.send(Op::Shutdown);
        drop(session.ops);
        let _ = session.task.await;
    }
    Ok(code)
}

impl Agent {
    /// One line from the client.
    fn message(&mut self, line: &str) {
        match rpc::parse(line) {
            Ok(Message::Request { id, method, params }) => {
                let result = self.request(&method, &params, &id);
                if let Some(result) = result {
                    self.out.respond(&id, result);
                }
            }
            Ok(Message::Notification { method, params }) => {
                if method == "session/cancel"
                    && let Some(session) = params["sessionId"].as_str().and_then(|id| self.sessions.get(id))
                {
                    let _ = session.ops.send(Op::Interrupt);
                }
            }
            Ok(Message::Response { id, result }) => self.answered(&id, result),
            Err(error) => self.out.respond(&Value::Null, Err(error)),
        }
    }

    /// Answers a request; `None` when the answer comes later (a prompt answers at its turn's
    /// end).
    fn request(&mut self, method: &str, params: &Value, id: &Value) -> Option<Result<Value, rpc::Error>> {
        Some(match method {
            "initialize" => {
                let client = &params["clientCapabilities"];
                self.buffers = crate::protocol::requests::Buffers {
                    read: client["fs"]["readTextFile"] == true,
                    write: client["fs"]["writeTextFile"] == true,
                };
                self.elicits = client["elicitation"]["form"].is_object();
                Ok(json!({
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": true,
                    "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
                    "mcpCapabilities": {"http": false, "sse": false},
                },
                "authMethods": [],
                "agentInfo": {"name": "brute", "title": "brute", "version": env!("CARGO_PKG_VERSION")},
                }))
            }
            "authenticate" => Ok(json!({})),
            "session/new" => self.start(params, SessionChoice::New),
            "session/load" => match params["sessionId"].as_str() {
                // One conversation per session: a second load would fork it under the same id.
                Some(session) if self.sessions.contains_key(session) => {
                    Err(rpc::Error::params(format!("session `{session}` is already open")))
                }
                Some(session) => self.start(params, SessionChoice::Resume(session.to_owned())),
                None => Err(rpc::Error::params("session/load needs a sessionId")),
            },
            "session/prompt" => return self.prompt(params, id),
            "session/set_mode" => self.set_mode(params),
            other => Err(rpc::Error::method(other)),
        })
    }

    /// `session/new` and `session/load`: a conversation in the session's directory.
    fn start(&mut self, params: &Value, choice: SessionChoice) -> Result<Value, rpc::Error> {
        let cwd = params["cwd"].as_str().map(Path::new).filter(|p| p.is_absolute());
        let Some(cwd) = cwd else {
            return Err(rpc::Error::params("cwd must be an absolute path"));
        };
        let (mut settings, place) = (self.load)(cwd).map_err(|e| rpc::Error::internal(format!("{e:#}")))?;
        // The editor's MCP servers join the config's (one of the same name replaces it).
        let (servers, mcp_notes) = updates::mcp_servers(&params["mcpServers"]);
        crate::mcp::config::merge(&mut settings.mcp_servers, servers);
        if settings.permission_mode().sandbox() != crate::sandbox::Mode::FullAccess
            && let Err(unavailable) = crate::sandbox::available()
        {
            return Err(rpc::Error::internal(format!(
                "{unavailable}; start `brute acp --sandbox full-access` to let commands run unconfined"
            )));
        }
        let (sink, mut rx) = EventSink::channel();
        let front_end = app::FrontEnd::Editor { buffers: self.buffers };
        let started = app::start(&settings, &place, sink, front_end, Vec::new(), &choice)
            .map_err(|e| rpc::Error::internal(e.to_string()))?;
        let id = match (&choice, started.session_id.clone()) {
            (SessionChoice::Resume(id), _) => id.clone(),
            (_, Some(id)) => id,
            (_, None) => {
                self.next += 1;
                format!("acp-{}", self.next)
            }
        };
        // What the conversation said as it started (a restored history, notices) reaches the
        // client before the answer, as session/load requires.
        while let Ok(event) = rx.try_recv() {
            match event {
                Event::HistoryReplaced { messages, .. } => {
                    for update in updates::replay(&messages, &place.cwd) {
                        self.out.update(&id, update);
                    }
                }
                other => {
                    if let Some(update) = updates::update(&other, &place.cwd) {
                        self.out.update(&id, update);
                    }
                }
            }
        }
        for notice in mcp_notes.iter().chain(&started.notices) {
            self.out.update(
                &id,
                updates::update(
                    &Event::Notice {
                        message: notice.clone(),
                    },
                    &place.cwd,
                )
                .unwrap_or_default(),
            );
        }
        let forward = self.events.clone();
        let session_id = id.clone();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                if forward.send((session_id.clone(), event)).is_err() {
                    break;
                }
            }
        });
        self.out.update(&id, updates::commands(&started.commands));
        self.sessions.insert(
            id.clone(),
            Session {
                ops: started.handle.ops.clone(),
                task: started.handle.task,
                prompts: VecDeque::new(),
                commands: VecDeque::new(),
                error: None,
                paths: HashMap::new(),
                outputs: HashMap::new(),
                cwd: place.cwd.clone(),
            },
        );
        Ok(json!({"sessionId": id, "modes": updates::modes(settings.permission_mode())}))
    }

    fn session(&mut self, params: &Value) -> Result<&mut Session, rpc::Error> {
        let id = params["sessionId"].as_str().unwrap_or_default();
        self.sessions
            .get_mut(id)
            .ok_or_else(|| rpc::Error::params(format!("no session `{id}`")))
    }

    /// `session/prompt`: a turn; answered when it ends.
    fn prompt(&mut self, params: &Value, id: &Value) -> Option<Result<Value, rpc::Error>> {
        let blocks = params["prompt"].as_array().cloned().unwrap_or_default();
        let prompt = updates::prompt_text(&blocks);
        let mut notes = Vec::new();
        if prompt.dropped > 0 {
            notes.push(format!(
                "{} block(s) of the prompt were left out: brute reads text, images and embedded text files",
                prompt.dropped
            ));
        }
        let text = crate::agent::attach::with_images(prompt.text, &prompt.images, "editor", &mut notes);
        let session_id = params["sessionId"].as_str().unwrap_or_default().to_owned();
        let session = match self.session(params) {
            Ok(session) => session,
            Err(error) => return Some(Err(error)),
        };
        let command = commands::parse(&text);
        let is_command = command.is_some();
        if session.ops.send(command.unwrap_or(Op::UserTurn { text })).is_err() {
            // The conversation ended (its turn failed for good): nothing will answer.
            self.sessions.remove(&session_id);
            return Some(Err(rpc::Error::internal(
                "the session's conversation has ended; start or load it again",
            )));
        }
        match is_command {
            true => session.commands.push_back(id.clone()),
            false => session.prompts.push_back(id.clone()),
        }
        let cwd = session.cwd.clone();
        for note in notes {
            self.out.update(
                &session_id,
                updates::update(&Event::Notice { message: note }, &cwd).unwrap_or_default(),
            );
        }
        None
    }

    fn set_mode(&mut self, params: &Value) -> Result<Value, rpc::Error> {
        let mode = params["modeId"]
            .as_str()
            .and_then(Mode::parse)
            .ok_or_else(|| rpc::Error::params("modeId must be one of read-only, workspace-write, full-access, plan"))?;
        let session = self.session(params)?;
        let _ = session.ops.send(Op::SetSandbox { mode });
        Ok(json!({}))
    }

    /// One event of a session's conversation.
    fn event(&mut self, session_id: &str, event: Event) {
        // A sub-agent's calls show as calls of their own (`task-id/call-id`); its text is
        // in the `task` call's report, and its requests reach the person unwrapped.
        let event = match event {
            Event::Nested { .. } => match updates::nested_call(event) {
                Some(event) => event,
                None => return,
            },
            event => event,
        };
        let Some(session) = self.sessions.get_mut(session_id) else {
            return;
        };
        match &event {
            Event::ToolOutputDelta { call_id, chunk } => {
                let output = session.outputs.entry(call_id.clone()).or_default();
                updates::keep_tail(output, chunk);
                let update = updates::output_so_far(call_id, output);
                self.out.update(session_id, update);
                return;
            }
            Event::Request { id, kind } => {
                let (session_id, id) = (session_id.to_owned(), id.clone());
                self.ask(session_id, id, kind);
                return;
            }
            Event::Error { message } => session.error = Some(message.clone()),
            Event::ToolCallStarted { call_id, arguments, .. } => {
                if let Some(path) = updates::path_of(arguments, &session.cwd) {
                    session.paths.insert(call_id.clone(), path);
                }
            }
            Event::ToolResult(result) => {
                session.outputs.remove(&result.call_id);
                let path = session.paths.remove(&result.call_id);
                self.out
                    .update(session_id, updates::finished(result, path.as_deref(), &session.cwd));
                return;
            }
            // An interrupt gave back prompts queued behind the cancelled turn: each still
            // owes its `session/prompt` an answer, so each runs.
            Event::QueueReturned { prompts } => {
                for text in prompts {
                    let _ = session.ops.send(Op::UserTurn { text: text.clone() });
                }
                return;
            }
            Event::TurnFinished { outcome, .. } => {
                let error = session.error.take();
                if let Some(id) = session.prompts.pop_front() {
                    let stop = match outcome {
                        TurnOutcome::Done => Ok("end_turn"),
                        TurnOutcome::MaxTurns => Ok("max_turn_requests"),
                        TurnOutcome::Interrupted => Ok("cancelled"),
                        TurnOutcome::Error => Err(error.unwrap_or_else(|| "the turn failed".to_owned())),
                    };
                    let result = stop
                        .map(|stop| json!({"stopReason": stop}))
                        .map_err(rpc::Error::internal);
                    self.out.respond(&id, result);
                }
                return;
            }
            _ => {}
        }
        let cwd = session.cwd.clone();
        if let Some(update) = updates::update(&event, &cwd) {
            self.out.update(session_id, update);
        }
        if commands::ends_command(&event)
            && let Some(id) = session.commands.pop_front()
        {
            self.out.respond(&id, Ok(json!({"stopReason": "end_turn"})));
        }
    }

    /// A request of the core, asked of the client where it can answer, else its default.
    fn ask(&mut self, session: String, id: String, kind: &RequestKind) {
        self.next += 1;
        let request_id = format!("brute-{}", self.next);
        let (tool_call, options, asked) = match kind {
            RequestKind::Approval {
                summary,
                call_id,
                input,
                reason,
                tool,
                ..
            } => (
                json!({"toolCallId": call_id, "title": format!("{tool} {summary}: {reason}"), "rawInput": input}),
                json!([
                    {"optionId": "once", "name": "Allow once", "kind": "allow_once"},
                    {"optionId": "session", "name": "Allow for this session", "kind": "allow_always"},
                    {"optionId": "project", "name": "Always allow in this project", "kind": "allow_always"},
                    {"optionId": "deny", "name": "Deny", "kind": "reject_once"},
                ]),
                Asked::Approval {
                    session: session.clone(),
                    id,
                },
            ),
            RequestKind::Question { questions } if self.elicits => {
                self.out
                    .request(&request_id, "elicitation/create", elicit::request(&session, questions));
                let questions = questions.clone();
                self.asked.insert(request_id, Asked::Form { session, id, questions });
                return;
            }
            RequestKind::Question { questions }
                if questions.len() == 1 && !questions[0].options.is_empty() && !questions[0].multiple =>
            {
                let question = &questions[0];
                let mut options: Vec<Value> = question
                    .options
                    .iter()
                    .enumerate()
                    .map(|(n, o)| json!({"optionId": format!("choice-{n}"), "name": o.label, "kind": "allow_once"}))
                    .collect();
                options.push(json!({"optionId": "decline", "name": "Don't answer", "kind": "reject_once"}));
                (
                    json!({"toolCallId": format!("question-{id}"), "title": question.question, "kind": "think"}),
                    Value::Array(options),
                    Asked::Question {
                        session: session.clone(),
                        id,
                        labels: question.options.iter().map(|o| o.label.clone()).collect(),
                    },
                )
            }
            RequestKind::Undo { redo, summary } => {
                let verb = if *redo { "Redo" } else { "Undo" };
                let mut options = vec![
                    json!({"optionId": "files", "name": format!("{verb} the file changes"), "kind": "allow_once"}),
                ];
                if !redo {
                    options.push(
                        json!({"optionId": "turn", "name": "Undo the file changes and the turn", "kind": "allow_once"}),
                    );
                }
                options.push(json!({"optionId": "cancel", "name": "Cancel", "kind": "reject_once"}));
                (
                    json!({"toolCallId": format!("undo-{id}"), "title": format!("{verb} the last turn?"), "kind": "edit",
                           "content": [{"type": "content", "content": {"type": "text", "text": summary}}]}),
                    Value::Array(options),
                    Asked::Move {
                        session: session.clone(),
                        id,
                    },
                )
            }
            RequestKind::Plan { plan, .. } => (
                json!({"toolCallId": format!("plan-{id}"), "title": "Run this plan?", "kind": "switch_mode",
                       "content": [{"type": "content", "content": {"type": "text", "text": plan}}]}),
                json!([
                    {"optionId": "run", "name": "Run it", "kind": "allow_once"},
                    {"optionId": "run_accepting_edits", "name": "Run it, edits allowed", "kind": "allow_always"},
                    {"optionId": "keep_planning", "name": "Keep planning", "kind": "reject_once"},
                ]),
                Asked::Plan {
                    session: session.clone(),
                    id,
                },
            ),
            RequestKind::WriteBuffer { path, content } => {
                self.out.request(
                    &request_id,
                    "fs/write_text_file",
                    json!({"sessionId": session, "path": path, "content": content}),
                );
                self.asked.insert(request_id, Asked::Write { session, id });
                return;
            }
            RequestKind::ReadBuffer { path } => {
                self.out.request(
                    &request_id,
                    "fs/read_text_file",
                    json!({"sessionId": session, "path": path}),
                );
                self.asked.insert(request_id, Asked::Buffer { session, id });
                return;
            }
            other => {
                if let Some(s) = self.sessions.get(&session) {
                    let _ = s.ops.send(Op::Respond {
                        id,
                        response: other.default_response(),
                    });
                }
                return;
            }
        };
        self.out.request(
            &request_id,
            "session/request_permission",
            json!({"sessionId": session, "toolCall": tool_call, "options": options}),
        );
        self.asked.insert(request_id, asked);
    }

    /// The client's answer to one of brute's requests.
    fn answered(&mut self, id: &Value, result: Result<Value, Value>) {
        let Some(asked) = id.as_str().and_then(|id| self.asked.remove(id)) else {
            return;
        };
        if let Asked::Buffer { session, id } = asked {
            // An error (not open, not readable) reads the file on disk instead.
            let text = result.ok().and_then(|r| r["content"].as_str().map(str::to_owned));
            if let Some(s) = self.sessions.get(&session) {
                let _ = s.ops.send(Op::Respond {
                    id,
                    response: Response::Buffer { text },
                });
            }
            return;
        }
        if let Asked::Form { session, id, questions } = asked {
            // An error means the client could not ask: as if nobody were there.
            let response = match result {
                Ok(result) => match elicit::answers(&questions, &result) {
                    Some(answers) => Response::Answers { answers },
                    None => Response::Declined,
                },
                Err(_) => Response::NoPerson,
            };
            if let Some(s) = self.sessions.get(&session) {
                let _ = s.ops.send(Op::Respond { id, response });
            }
            return;
        }
        if let Asked::Write { session, id } = asked {
            if let Some(s) = self.sessions.get(&session) {
                let response = Response::Wrote { ok: result.is_ok() };
                let _ = s.ops.send(Op::Respond { id, response });
            }
            return;
        }
        let chosen = result
            .ok()
            .filter(|r| r["outcome"]["outcome"] == "selected")
            .and_then(|r| r["outcome"]["optionId"].as_str().map(str::to_owned));
        let (session, id, response) = match asked {
            Asked::Approval { session, id } => {
                let decision = match chosen.as_deref() {
                    Some("once") => ApprovalDecision::Once,
                    Some("session") => ApprovalDecision::Session,
                    Some("project") => ApprovalDecision::Project,
                    _ => ApprovalDecision::Deny,
                };
                let reason =
                    (decision == ApprovalDecision::Deny).then(|| "the person denied it in their editor".to_owned());
                (session, id, Response::Approval { decision, reason })
            }
            Asked::Question { session, id, labels } => {
                let answer = chosen
                    .as_deref()
                    .and_then(|c| c.strip_prefix("choice-"))
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|n| labels.get(n).cloned());
                let response = match answer {
                    Some(answer) => Response::Answers { answers: vec![answer] },
                    None => Response::Declined,
                };
                (session, id, response)
            }
            Asked::Move { session, id } => {
                let response = match chosen.as_deref() {
                    Some("files") => Response::Undo {
                        rewind_conversation: false,
                    },
                    Some("turn") => Response::Undo {
                        rewind_conversation: true,
                    },
                    _ => Response::Declined,
                };
                (session, id, response)
            }
            Asked::Buffer { .. } | Asked::Form { .. } | Asked::Write { .. } => return,
            Asked::Plan { session, id } => {
                let decision = match chosen.as_deref() {
                    Some("run") => Some(PlanDecision::Run),
                    Some("run_accepting_edits") => Some(PlanDecision::RunAcceptingEdits),
                    Some("keep_planning") => Some(PlanDecision::KeepPlanning),
                    _ => None,
                };
                let response = match decision {
                    Some(decision) => Response::Plan { decision, note: None },
                    None => Response::Declined,
                };
                (session, id, response)
            }
        };
        if let Some(s) = self.sessions.get(&session) {
            let _ = s.ops.send(Op::Respond { id, response });
        }
    }
}
