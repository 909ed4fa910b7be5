//! Slash commands: their list (for the popup and /help) and what each does to the [`App`].

use super::app::{Action, App};
use super::transcript::NoticeKind;
use crate::protocol::Op;

/// The slash commands, with their help lines.
pub const COMMANDS: &[(&str, &str)] = &[
    ("/help", "show keys and commands"),
    (
        "/undo",
        "take back the last turn: its file changes (and the conversation)",
    ),
    ("/redo", "re-apply what /undo took back"),
    (
        "/diff",
        "what the last turn changed in your files (/diff session: the whole session)",
    ),
    (
        "/resume",
        "pick a saved session to switch to, or /resume ID (a prefix will do)",
    ),
    ("/clear", "start a new conversation"),
    (
        "/compact",
        "compact the conversation to free context: /compact [what to focus on]",
    ),
    ("/model", "pick a model from the provider's list, or /model NAME"),
    (
        "/effort",
        "show or set how hard a reasoning model thinks: /effort low|medium|high|default",
    ),
    ("/tools", "list the tools the model can use"),
    (
        "/mcp",
        "the MCP servers: starting, ready with their tools, or why they failed",
    ),
    ("/status", "model, provider, base URL, context, usage, session and mode"),
    (
        "/cost",
        "what this session cost so far (where the model's price is known)",
    ),
    (
        "/permissions",
        "show the mode, or set it: /permissions read-only|workspace-write|full-access|plan",
    ),
    (
        "/plan",
        "plan mode: read-only tools and commands, the model ends with a plan; /plan TASK sends TASK too",
    ),
    (
        "/ps",
        "the background processes: command, age, state, last line; /ps kill ID stops one",
    ),
    ("/todo", "show the todo list"),
    ("/copy", "copy the last answer to the clipboard"),
    (
        "/mouse",
        "turn mouse reporting off or on (the wheel scrolls; Shift+drag selects)",
    ),
    ("/quit", "leave brute"),
];

/// The keys `/help` lists (the key table in docs/user-guide.md says the same).
pub const HELP_KEYS: &str = "keys: Enter send (queued while a turn runs; Up on an empty composer takes it back) · Shift/Alt+Enter newline
      Esc or Ctrl-C interrupt · Ctrl-C clears the composer; twice on an empty one quits · Ctrl-L redraw
      Ctrl-A/E start/end of line · Alt-B/F word back/forward · Ctrl-W/U/K delete word/to start/to end · Ctrl-Y paste it back
      Up/Down history · Ctrl-R search history · Ctrl-G edit in $EDITOR · @path mention a file · !cmd run a command yourself
      PgUp/PgDn or the mouse wheel scroll · Shift+drag selects text (/mouse turns reporting off)
      Ctrl-V paste the clipboard's image · pasting or dropping an image file attaches it
      Ctrl-O expand tool output · Ctrl-T show thinking";

/// The `/ps` listing: one line per background process, oldest first.
pub(super) fn ps_report(processes: &[crate::protocol::ProcessView]) -> String {
    use super::sanitize::sanitize;
    if processes.is_empty() {
        return "no background processes (shell with run_in_background starts one)".to_owned();
    }
    let mut text = String::from("background processes (/ps kill ID stops one):");
    for p in processes {
        let command: String = p.command.lines().next().unwrap_or_default().chars().take(60).collect();
        let age = match p.age_secs {
            s @ 0..60 => format!("{s}s"),
            s @ 60..3600 => format!("{}m{}s", s / 60, s % 60),
            s => format!("{}h{}m", s / 3600, (s % 3600) / 60),
        };
        text.push_str(&format!(
            "\n  {:<5} {:<8} {:<10} {}",
            sanitize(&p.id),
            age,
            sanitize(&p.state),
            sanitize(&command)
        ));
        if !p.last_line.is_empty() {
            text.push_str(&format!("\n        └ {}", sanitize(&p.last_line)));
        }
    }
    text
}

impl App {
    /// Runs a slash command typed in the composer.
    pub(super) fn command(&mut self, line: &str) -> Vec<Action> {
        let (name, arg) = line.split_once(' ').map_or((line, ""), |(n, a)| (n, a.trim()));
        match name {
            "/help" => {
                let mut help = String::from(HELP_KEYS);
                help.push_str("\ncommands:");
                for (command, text) in COMMANDS {
                    help.push_str(&format!("\n  {command:<12} {text}"));
                }
                if !self.custom_commands.is_empty() {
                    help.push_str("\ncustom commands (.brute/commands, the config dir's commands/):");
                    for (command, text) in &self.custom_commands {
                        help.push_str(&format!("\n  {command:<12} {}", super::sanitize::sanitize(text)));
                    }
                }
                self.notice(NoticeKind::Info, help);
                Vec::new()
            }
            // The core answers these: a confirmation to undo or redo a turn, or a notice when
            // a turn runs (they would change what it works on).
            "/undo" => vec![Action::Op(Op::Undo {
                force: arg.split_whitespace().any(|w| w == "force"),
                partial: arg.split_whitespace().any(|w| w == "partial"),
            })],
            "/redo" => vec![Action::Op(Op::Redo {
                force: arg.split_whitespace().any(|w| w == "force"),
                partial: arg.split_whitespace().any(|w| w == "partial"),
            })],
            "/resume" if arg.is_empty() => {
                self.open_picker();
                Vec::new()
            }
            "/resume" => {
                if let Some(list) = &self.list_sessions {
                    self.sessions = list();
                }
                match super::picker::resolve(&self.sessions, arg) {
                    Ok(id) => self.resume(id),
                    Err(why) => {
                        self.notice(NoticeKind::Info, why);
                        Vec::new()
                    }
                }
            }
            "/diff" => match arg {
                "" | "turn" => vec![Action::Op(Op::Diff { session: false })],
                "session" => vec![Action::Op(Op::Diff { session: true })],
                _ => {
                    self.notice(NoticeKind::Info, "usage: /diff [session]");
                    Vec::new()
                }
            },
            "/clear" => vec![Action::Op(Op::Clear)],
            "/compact" => vec![Action::Op(Op::Compact {
                focus: (!arg.is_empty()).then(|| arg.to_owned()),
            })],
            "/model" if arg.is_empty() => self.open_model_picker(),
            "/model" => vec![Action::Op(Op::SetModel { model: arg.to_owned() })],
            "/effort" if arg.is_empty() => {
                let text = format!(
                    "reasoning effort: {} (/effort low|medium|high|default)",
                    super::app::effort_label(self.session.effort)
                );
                self.notice(NoticeKind::Info, text);
                Vec::new()
            }
            "/effort" => match arg {
                "default" | "none" | "off" => vec![Action::Op(Op::SetEffort { effort: None })],
                level => match crate::provider::Effort::parse(level) {
                    Some(effort) => vec![Action::Op(Op::SetEffort { effort: Some(effort) })],
                    None => {
                        self.notice(NoticeKind::Info, "usage: /effort low|medium|high|default");
                        Vec::new()
                    }
                },
            },
            "/permissions" if arg.is_empty() => {
                let mode = self.session.sandbox;
                self.notice(
                    NoticeKind::Info,
                    format!(
                        "mode: {} — {}\nShift-Tab cycles read-only → workspace-write → plan; full access only with /permissions full-access (confirmed first); `brute permissions` lists the rules",
                        mode.as_str(),
                        super::app::mode_help(mode)
                    ),
                );
                Vec::new()
            }
            "/permissions" => match crate::permission::Mode::parse(arg) {
                Some(mode) => self.set_sandbox(mode),
                None => {
                    self.notice(
                        NoticeKind::Info,
                        "usage: /permissions read-only|workspace-write|full-access|plan",
                    );
                    Vec::new()
                }
            },
            "/plan" => {
                let mut actions = Vec::new();
                if self.session.sandbox == crate::permission::Mode::Plan {
                    if arg.is_empty() {
                        self.notice(
                            NoticeKind::Info,
                            "already in plan mode (Shift-Tab or /permissions MODE leaves it)",
                        );
                    }
                } else {
                    actions = self.set_sandbox(crate::permission::Mode::Plan);
                }
                if !arg.is_empty() {
                    actions.extend(self.submit_text(arg));
                }
                actions
            }
            "/cost" => {
                let text = match self.cost_usd {
                    Some(cost) => format!(
                        "this session: ${cost:.4} ({} input tokens, {} of them cached, {} output)",
                        self.usage.input_tokens, self.usage.cache_read_tokens, self.usage.output_tokens
                    ),
                    None => format!(
                        "no price is known for {}: set [models.\"{}\"] input_price/output_price in config.toml",
                        self.session.model, self.session.model
                    ),
                };
                self.notice(NoticeKind::Info, text);
                Vec::new()
            }
            "/status" => {
                let info = &self.session;
                let context = super::app::context_label(self.context).unwrap_or_else(|| "(no request yet)".to_owned());
                self.notice(
                    NoticeKind::Info,
                    format!(
                        "model:    {} ({}), reasoning effort: {}\nbase URL: {}\ncontext:  {context}\nusage:    {} input{}, {} output tokens this session\nsession:  {}\nsandbox:  {} — {}",
                        info.model,
                        info.provider,
                        super::app::effort_label(info.effort),
                        info.base_url,
                        self.usage.input_tokens,
                        match (self.usage.cache_read_tokens, self.usage.cache_write_tokens) {
                            (0, 0) => String::new(),
                            (read, written) => format!(" ({read} read from the cache, {written} written to it)"),
                        },
                        self.usage.output_tokens,
                        info.session_id.as_deref().unwrap_or("(not saved)"),
                        info.sandbox.as_str(),
                        super::app::mode_help(info.sandbox)
                    ),
                );
                Vec::new()
            }
            "/tools" => {
                let list = if self.tools.is_empty() {
                    "(none)".to_owned()
                } else {
                    self.tools.join(", ")
                };
                self.notice(NoticeKind::Info, format!("tools: {list}"));
                Vec::new()
            }
            "/mcp" => {
                let text = mcp_report(&self.mcp);
                self.notice(NoticeKind::Info, text);
                Vec::new()
            }
            "/ps" => match arg.split_whitespace().collect::<Vec<_>>().as_slice() {
                [] => vec![Action::Op(Op::ListProcesses)],
                ["kill", id] => vec![Action::Op(Op::KillProcess { id: (*id).to_owned() })],
                _ => {
                    self.notice(NoticeKind::Info, "usage: /ps, or /ps kill ID (e.g. /ps kill bg1)");
                    Vec::new()
                }
            },
            "/todo" => {
                let rendered = crate::tool::todo::render(&self.todos);
                self.notice(NoticeKind::Info, rendered.trim_end().to_owned());
                Vec::new()
            }
            "/copy" => {
                if self.last_answer.is_empty() {
                    self.notice(NoticeKind::Info, "nothing to copy yet");
                } else {
                    let result = self.clipboard.copy(&self.last_answer);
                    let message = super::clipboard::message(&result, "the last answer");
                    let kind = if result.is_ok() {
                        NoticeKind::Info
                    } else {
                        NoticeKind::Error
                    };
                    self.notice(kind, message);
                }
                Vec::new()
            }
            "/mouse" => {
                self.mouse_captured = !self.mouse_captured;
                let state = if self.mouse_captured {
                    "reporting on: the wheel scrolls the transcript (Shift+drag selects text)"
                } else {
                    "reporting off: drag selects text; PgUp/PgDn scroll"
                };
                self.notice(NoticeKind::Info, format!("mouse {state}"));
                vec![Action::ToggleMouse]
            }
            "/quit" | "/exit" => vec![Action::Quit],
            other => {
                self.notice(NoticeKind::Info, format!("unknown command {other}; /help lists them"));
                Vec::new()
            }
        }
    }
}

/// What `/mcp` shows: each server's transport, state and tools (or its last error).
pub fn mcp_report(servers: &[crate::mcp::ServerStatus]) -> String {
    use crate::mcp::ServerState;
    if servers.is_empty() {
        return "no MCP servers configured (add [mcp_servers.NAME] to config.toml, or brute mcp add)".to_owned();
    }
    let mut out = String::from("MCP servers:");
    for server in servers {
        let state = match &server.state {
            ServerState::Disabled => "disabled".to_owned(),
            ServerState::Starting => "starting".to_owned(),
            ServerState::Ready => format!("ready, {} tool(s)", server.tools.len()),
            ServerState::Failed { error } => format!("failed: {error}"),
        };
        out.push_str(&format!("\n  {} ({}) {state}", server.name, server.transport));
        if !server.tools.is_empty() {
            out.push_str(&format!("\n    tools: {}", server.tools.join(", ")));
        }
    }
    // Server names, commands and errors come from outside: no escape sequences.
    crate::sanitize::sanitize(&out)
}

#[cfg(test)]
mod tests {
    use super::COMMANDS;

    #[test]
    fn custom_commands_cannot_take_a_built_in_name() {
        for (name, _) in COMMANDS {
            let bare = name.trim_start_matches('/');
            assert!(
                crate::agent::commands::RESERVED.contains(&bare),
                "{name} is missing from agent::commands::RESERVED"
            );
        }
    }
}
