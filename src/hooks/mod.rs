//! Hooks: commands the person configures to run at points of a session (`[[hooks.<event>]]`
//! in config), to enforce a team's rules, add context, or rewrite a tool call.
//!
//! - [`config`]: the config tables and the compiled [`Hook`]s (matcher, command, timeout).
//! - [`run`]: starting one hook (as the person, not in the command sandbox, but through
//!   [`crate::sandbox::command`] so it has its own process group and dies with brute) with its
//!   JSON input on stdin, bounded output and a timeout that kills its process group.
//! - [`outcome`]: what a finished hook says (exit 0 and optional JSON, exit 2 blocks, anything
//!   else is a hook error), in brute's and Claude Code's output shapes.
//! - The tool middlewares for `pre_tool_use` and `post_tool_use` are in [`crate::pipeline::hooks`].
//!
//! Hooks of one event run one after another in config order (user config first, then the
//! project's): a later `pre_tool_use` hook sees the input an earlier one rewrote, and the first
//! hook that blocks ends the chain. With no hooks for an event nothing is started and nothing
//! is allocated ([`Hooks::has`] is a plain check).

pub mod config;
pub mod outcome;
pub mod run;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

pub use config::{Hook, HookEvent, HookSpec, HooksConfig};
pub use outcome::{Permission, Verdict};

use crate::protocol::{Event, EventSink};

/// The hooks of one session, by event, and what every hook's input carries.
#[derive(Debug, Default)]
pub struct Hooks {
    hooks: Vec<Hook>,
    /// Which events have at least one hook (indexed by [`HookEvent::index`]).
    present: [bool; HookEvent::ALL.len()],
    /// The project root (also `BRUTE_PROJECT_DIR` / `CLAUDE_PROJECT_DIR` for the hook).
    root: PathBuf,
    session_id: Mutex<String>,
    /// Where each hook's run is recorded as a span of the session's commands (see
    /// [`crate::busy`]): what a hook changes is not the person's edit.
    spans: Mutex<Option<std::sync::Arc<crate::busy::Spans>>>,
    /// How a program's hooks ([`Hook::callback`]) are asked.
    requests: Mutex<Option<crate::protocol::requests::Requests>>,
}

/// What all hooks of one event said, combined in config order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Combined {
    /// The first block's reason: the action does not happen.
    pub block: Option<String>,
    /// The input as the last rewriting hook left it (`pre_tool_use`).
    pub updated_input: Option<Value>,
    /// The strongest permission decision (deny > ask > allow); deny also blocks.
    pub permission: Option<Permission>,
    /// Extra context for the model, one entry per hook that gave some.
    pub context: Vec<String>,
}

impl Hooks {
    /// The hooks for a session in `root`, in config order.
    pub fn new(hooks: Vec<Hook>, root: PathBuf) -> Self {
        let mut present = [false; HookEvent::ALL.len()];
        for hook in &hooks {
            present[hook.event.index()] = true;
        }
        Self {
            hooks,
            present,
            root,
            session_id: Mutex::default(),
            spans: Mutex::default(),
            requests: Mutex::default(),
        }
    }

    /// Sets how the hooks a program registered are asked (the conversation's requests).
    pub fn set_requests(&self, requests: crate::protocol::requests::Requests) {
        *self.requests.lock().unwrap_or_else(|e| e.into_inner()) = Some(requests);
    }

    /// The hooks a sub-agent runs: the tool hooks only (its task is no prompt of the
    /// person's, and its end is no stop of the session).
    pub fn for_subagent(&self) -> std::sync::Arc<Self> {
        if !self.has(HookEvent::PreToolUse) && !self.has(HookEvent::PostToolUse) {
            return std::sync::Arc::default();
        }
        let tools = self.hooks.iter().filter(|h| h.event.has_tool()).cloned().collect();
        let hooks = Self::new(tools, self.root.clone());
        hooks.set_session_id(&self.session_id());
        if let Some(spans) = self.spans.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            hooks.set_spans(spans);
        }
        // A program's hooks hold inside sub-agents too: they are asked the same way.
        if let Some(requests) = self.requests.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            hooks.set_requests(requests);
        }
        std::sync::Arc::new(hooks)
    }

    /// Whether any hook is configured for `event` (the zero-cost check before anything else).
    pub fn has(&self, event: HookEvent) -> bool {
        self.present[event.index()]
    }

    /// Whether a hook of `event` matches `tool` (any hook, for events without a tool).
    pub fn matches(&self, event: HookEvent, tool: Option<&str>) -> bool {
        self.has(event) && self.hooks.iter().any(|h| h.event == event && h.matches(tool))
    }

    /// Sets the session id every hook input carries.
    pub fn set_session_id(&self, id: &str) {
        *self.session_id.lock().unwrap_or_else(|e| e.into_inner()) = id.to_owned();
    }

    /// Sets where hook runs are recorded as the session's command spans, unless they are
    /// recorded somewhere already (a sub-agent's hooks record into its parent's).
    pub fn set_spans(&self, spans: std::sync::Arc<crate::busy::Spans>) {
        self.spans
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(spans);
    }

    fn session_id(&self) -> String {
        self.session_id.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The JSON object a hook reads on stdin: the common fields, then `fields`.
    pub fn input(&self, event: HookEvent, cwd: &Path, fields: Map<String, Value>) -> Value {
        let mut input = Map::new();
        input.insert("hook_event_name".into(), json!(event.claude_name()));
        input.insert("event".into(), json!(event.name()));
        input.insert("session_id".into(), json!(self.session_id()));
        input.insert("cwd".into(), json!(cwd.display().to_string()));
        input.extend(fields);
        Value::Object(input)
    }

    /// Runs the hooks of `event` that match `tool`, in config order, and combines what they
    /// say. Hook errors (a failed start, another exit code, bad JSON, a timeout) are shown to
    /// the person as notices and never block. For `pre_tool_use` each hook gets the
    /// `tool_input` the previous one left.
    pub async fn run(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        cwd: &Path,
        mut fields: Map<String, Value>,
        events: &EventSink,
        cancel: Option<&CancellationToken>,
    ) -> Combined {
        let mut combined = Combined::default();
        if !self.has(event) {
            return combined;
        }
        for hook in self.hooks.iter().filter(|h| h.event == event && h.matches(tool)) {
            if let Some(input) = &combined.updated_input {
                fields.insert("tool_input".into(), input.clone());
            }
            let input = self.input(event, cwd, fields.clone());
            let spans = self.spans.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let busy = match &spans {
                Some(spans) => Some(spans.open().await),
                None => None,
            };
            let finished = match &hook.callback {
                Some(callback) => self.ask_program(hook, callback, &input, cancel).await,
                None => run::run(hook, &input, cwd, &self.root, cancel).await,
            };
            drop(busy);
            let verdict = outcome::interpret(event, &finished);
            if let Some(error) = &verdict.error {
                events.emit(Event::Notice {
                    message: format!("{} hook `{}`: {error}", event.name(), hook.shown()),
                });
            }
            if let Some(message) = verdict.system_message {
                events.emit(Event::Notice {
                    message: format!("{} hook: {message}", event.name()),
                });
            }
            if let Some(permission) = verdict.permission {
                combined.permission = Some(combined.permission.map_or(permission, |p| p.max(permission)));
            }
            if let Some(context) = verdict.context {
                combined.context.push(context);
            }
            if let Some(input) = verdict.updated_input {
                if input.is_object() {
                    combined.updated_input = Some(input);
                } else {
                    events.emit(Event::Notice {
                        message: format!(
                            "{} hook `{}`: the rewritten input is not a JSON object; ignored",
                            event.name(),
                            hook.shown()
                        ),
                    });
                }
            }
            if let Some(reason) = verdict.block {
                combined.block = Some(reason);
                return combined;
            }
        }
        combined
    }
}

impl Hooks {
    /// A program's hook: its answer is read as a command hook's JSON output (exit 0); no
    /// answer within the timeout, or none at all, is a hook error (never a block).
    async fn ask_program(
        &self,
        hook: &Hook,
        callback: &str,
        input: &Value,
        cancel: Option<&CancellationToken>,
    ) -> run::Finished {
        let requests = self.requests.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let failed = |why: &str| run::Finished {
            ending: run::Ending::NotStarted(why.to_owned()),
            stdout: String::new(),
            stderr: String::new(),
        };
        let Some(requests) = requests else {
            return failed("no program is there to answer it");
        };
        let never = CancellationToken::new();
        let turn = cancel.unwrap_or(&never);
        let kind = crate::protocol::RequestKind::Hook {
            callback: callback.to_owned(),
            input: input.clone(),
        };
        // Out of time, the request is withdrawn as an interrupt withdraws it (the program is
        // told), not merely forgotten.
        let ask = turn.child_token();
        let timer = {
            let (ask, timeout) = (ask.clone(), hook.timeout());
            tokio::spawn(async move {
                tokio::time::sleep(timeout).await;
                ask.cancel();
            })
        };
        let answer = requests.ask(kind, &ask).await;
        timer.abort();
        let ending = |ending| run::Finished {
            ending,
            stdout: String::new(),
            stderr: String::new(),
        };
        match answer {
            crate::protocol::Response::HookOutput { output } => run::Finished {
                ending: run::Ending::Exited(0),
                stdout: output.to_string(),
                stderr: String::new(),
            },
            _ if turn.is_cancelled() => ending(run::Ending::Interrupted),
            _ if ask.is_cancelled() => ending(run::Ending::TimedOut(hook.timeout())),
            _ => failed("the program did not answer it"),
        }
    }
}

/// Appends `paragraph` to `text` after a blank line (however `text` ended).
pub fn append_paragraph(text: &mut String, paragraph: &str) {
    let trimmed = text.trim_end_matches('\n').len();
    text.truncate(trimmed);
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(paragraph);
}

/// Builds the fields of a hook input from pairs.
pub fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}
