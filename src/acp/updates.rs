//! What an ACP client is shown: brute's events as `session/update` payloads, a restored
//! conversation as the updates that replay it, and an editor's prompt blocks as the text of a
//! turn. Plain functions of the protocol's data, so every shape is tested without a process.

use std::path::Path;

use serde_json::{Value, json};

use crate::protocol::{Display, Event, Failure, Mode, TodoItem, TodoStatus, ToolResult};
use crate::provider::Message;

/// The modes a session offers (brute's sandbox modes and plan mode), with descriptions.
pub const MODES: &[(Mode, &str, &str)] = &[
    (
        Mode::ReadOnly,
        "Read-only",
        "Reads and confined read-only commands; every change asks",
    ),
    (
        Mode::WorkspaceWrite,
        "Workspace write",
        "Edits in the project and confined commands need no approval",
    ),
    (
        Mode::FullAccess,
        "Full access",
        "Commands run unconfined; changes outside the project still ask",
    ),
    (
        Mode::Plan,
        "Plan",
        "Read-only tools; the model ends with a plan to run or keep working on",
    ),
];

/// The `modes` of `session/new` and `session/load`.
pub fn modes(current: Mode) -> Value {
    json!({
        "currentModeId": current.as_str(),
        "availableModes": MODES
            .iter()
            .map(|(mode, name, description)| json!({"id": mode.as_str(), "name": name, "description": description}))
            .collect::<Vec<_>>(),
    })
}

/// The update an event shows as, if any. A sub-agent's events stay inside its call (its
/// report is the call's result).
pub fn update(event: &Event, cwd: &Path) -> Option<Value> {
    Some(match event {
        Event::TextDelta { text } => {
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
        }
        Event::ReasoningDelta { text } => {
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}})
        }
        Event::ToolCallStarted {
            call_id,
            name,
            arguments,
            summary,
            display,
        } => tool_call(call_id, name, arguments, summary, *display, cwd),
        Event::ToolResult(result) => finished(result, None, cwd),
        Event::TodosUpdated { todos } => plan(todos),
        Event::SandboxChanged { mode } => {
            json!({"sessionUpdate": "current_mode_update", "currentModeId": mode.as_str()})
        }
        Event::ContextUsage {
            tokens,
            window: Some(window),
        } => json!({"sessionUpdate": "usage_update", "used": tokens, "size": window}),
        Event::Diff { title, diff, .. } => {
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("{title}\n\n```diff\n{}\n```\n", diff.trim_end())}})
        }
        Event::Notice { message } => {
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": format!("\n\n_note: {message}_\n\n")}})
        }
        _ => return None,
    })
}

/// The MCP servers an editor passes in `session/new` or `session/load`: stdio ones, as
/// brute's own config would start them; an HTTP or SSE one (not offered in `initialize`) or
/// one without a usable name or command is left out, with the reason.
pub fn mcp_servers(servers: &Value) -> (Vec<crate::mcp::config::Server>, Vec<String>) {
    use crate::mcp::config::{Origin, Server, ServerSpec};
    let (mut kept, mut notes) = (Vec::new(), Vec::new());
    for server in servers.as_array().into_iter().flatten() {
        let name = server["name"].as_str().unwrap_or_default();
        let command = server["command"].as_str().unwrap_or_default();
        if let Err(why) = crate::mcp::config::check_name(name) {
            notes.push(format!("the editor's MCP server was left out: {why}"));
            continue;
        }
        if server.get("url").is_some() || command.trim().is_empty() {
            notes.push(format!(
                "the editor's MCP server `{name}` was left out: brute starts stdio servers (a command) only"
            ));
            continue;
        }
        let text = |v: &Value| v.as_str().map(str::to_owned);
        let spec = ServerSpec {
            command: Some(command.to_owned()),
            args: server["args"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(text)
                .collect(),
            env: server["env"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| Some((text(&v["name"])?, text(&v["value"])?)))
                .collect(),
            ..ServerSpec::default()
        };
        kept.push(Server {
            name: name.to_owned(),
            spec,
            origin: Origin::Editor,
        });
    }
    (kept, notes)
}

/// How much of a running command's output an editor is shown live: its last 16 KiB (the
/// whole output comes with the call's end).
pub const LIVE_OUTPUT_BYTES: usize = 16 * 1024;

/// Adds `chunk` to `output`, keeping its last [`LIVE_OUTPUT_BYTES`] (cut at a character).
pub fn keep_tail(output: &mut String, chunk: &str) {
    output.push_str(chunk);
    if output.len() > LIVE_OUTPUT_BYTES {
        let mut cut = output.len() - LIVE_OUTPUT_BYTES;
        while !output.is_char_boundary(cut) {
            cut += 1;
        }
        output.drain(..cut);
    }
}

/// A running call's output so far, as the `tool_call_update` that replaces its content.
pub fn output_so_far(call_id: &str, output: &str) -> Value {
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "content": [{"type": "content", "content": {"type": "text", "text": output}}],
    })
}

/// A sub-agent's event as the editor sees it: its calls' starts, output and results, with
/// ids `parent/call` so they cannot collide with the parent's; its requests as they are;
/// `None` for the rest (its text is the `task` call's report).
pub fn nested_call(event: Event) -> Option<Event> {
    let Event::Nested { parent_call_id, event } = event else {
        return Some(event);
    };
    let prefixed = |id: &str| format!("{parent_call_id}/{id}");
    match nested_call(*event)? {
        Event::ToolCallStarted {
            call_id,
            name,
            arguments,
            summary,
            display,
        } => Some(Event::ToolCallStarted {
            call_id: prefixed(&call_id),
            name,
            arguments,
            summary,
            display,
        }),
        Event::ToolOutputDelta { call_id, chunk } => Some(Event::ToolOutputDelta {
            call_id: prefixed(&call_id),
            chunk,
        }),
        Event::ToolResult(mut result) => {
            result.call_id = prefixed(&result.call_id);
            Some(Event::ToolResult(result))
        }
        request @ Event::Request { .. } => Some(request),
        _ => None,
    }
}

/// A call that starts: its kind from how it is shown (tools describe their presentation; a
/// front end never matches on their names), its path as a location (absolute, as ACP wants:
/// a relative one is taken from `cwd`).
pub fn tool_call(call_id: &str, name: &str, arguments: &Value, summary: &str, display: Display, cwd: &Path) -> Value {
    let kind = match display {
        Display::Diff => "edit",
        Display::Output => "execute",
        Display::Todos | Display::Agent => "think",
        Display::Text => "read",
    };
    let title = match summary.is_empty() {
        true => name.to_owned(),
        false => format!("{name} {summary}"),
    };
    let locations: Vec<Value> = path_of(arguments, cwd)
        .map(|p| json!({"path": p}))
        .into_iter()
        .collect();
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": title,
        "kind": kind,
        "status": "in_progress",
        "locations": locations,
        "rawInput": arguments,
    })
}

/// The path a call's arguments name, if any, absolute (a relative one from `cwd`).
pub fn path_of(arguments: &Value, cwd: &Path) -> Option<String> {
    ["file_path", "path"]
        .iter()
        .find_map(|k| arguments.get(*k).and_then(Value::as_str))
        .map(|p| cwd.join(p).display().to_string())
}

/// A finished call: its status, and its content (a diff as the editor's diff, else the text).
/// `path` is where a diff applies when the arguments are not at hand.
pub fn finished(result: &ToolResult, path: Option<&str>, cwd: &Path) -> Value {
    let status = match result.failed() {
        None | Some(Failure::Exit(_)) => "completed",
        Some(_) => "failed",
    };
    let mut content = Vec::new();
    if result.display == Display::Diff
        && !result.is_error
        && let Some((file, old, new)) = diff_texts(&result.content)
    {
        let path = path.map_or_else(|| cwd.join(&file).display().to_string(), str::to_owned);
        let mut diff = json!({"type": "diff", "path": path, "newText": new});
        if let Some(old) = old {
            diff["oldText"] = json!(old);
        }
        content.push(diff);
    }
    content.push(json!({"type": "content", "content": {"type": "text", "text": result.content}}));
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": result.call_id,
        "status": status,
        "content": content,
    })
}

/// The old and new text of a unified diff's hunks (context lines in both), and the file it
/// names; `None` old text for a created file. `None` when the text holds no diff.
pub fn diff_texts(text: &str) -> Option<(String, Option<String>, String)> {
    let mut file = None;
    let mut created = false;
    let (mut old, mut new) = (String::new(), String::new());
    let mut in_hunk = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("--- ") {
            created = rest.trim() == "/dev/null";
            in_hunk = false;
            continue;
        }
        if let Some(rest) = line.strip_prefix("+++ ") {
            let rest = rest.trim();
            file = Some(rest.strip_prefix("b/").unwrap_or(rest).to_owned());
            continue;
        }
        if line.starts_with("@@") {
            in_hunk = true;
            continue;
        }
        if !in_hunk {
            continue;
        }
        match line.split_at_checked(1) {
            Some((" ", rest)) => {
                old.push_str(rest);
                old.push('\n');
                new.push_str(rest);
                new.push('\n');
            }
            Some(("-", rest)) => {
                old.push_str(rest);
                old.push('\n');
            }
            Some(("+", rest)) => {
                new.push_str(rest);
                new.push('\n');
            }
            _ => {}
        }
    }
    let file = file?;
    let created = created || old.is_empty();
    Some((file, (!created).then_some(old), new))
}

/// The todo list as the client's plan (cancelled items are left out).
pub fn plan(todos: &[TodoItem]) -> Value {
    let entries: Vec<Value> = todos
        .iter()
        .filter_map(|todo| {
            let status = match todo.status {
                TodoStatus::Pending => "pending",
                TodoStatus::InProgress => "in_progress",
                TodoStatus::Completed => "completed",
                TodoStatus::Cancelled => return None,
            };
            Some(json!({"content": todo.content, "priority": "medium", "status": status}))
        })
        .collect();
    json!({"sessionUpdate": "plan", "entries": entries})
}

/// The built-in and custom commands as `available_commands_update`.
pub fn commands(custom: &[(String, String)]) -> Value {
    let built_in = super::commands::BUILT_IN
        .iter()
        .map(|(name, description, hint)| match hint {
            Some(hint) => json!({"name": name, "description": description, "input": {"hint": hint}}),
            None => json!({"name": name, "description": description}),
        });
    let custom = custom.iter().map(|(name, description)| {
        json!({"name": name.trim_start_matches('/'), "description": description, "input": {"hint": "arguments"}})
    });
    json!({
        "sessionUpdate": "available_commands_update",
        "availableCommands": built_in.chain(custom).collect::<Vec<_>>(),
    })
}

/// A restored conversation as the updates that show it again (`session/load`).
pub fn replay(messages: &[Message], cwd: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for message in messages {
        match message {
            Message::User { text, .. } => {
                out.push(json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}}));
            }
            Message::Assistant { text, tool_calls, .. } => {
                if !text.is_empty() {
                    out.push(update(&Event::TextDelta { text: text.clone() }, cwd).unwrap_or_default());
                }
                for call in tool_calls {
                    let arguments = call.input().cloned().unwrap_or(Value::Null);
                    let mut shown = tool_call(&call.id, &call.name, &arguments, "", Display::Text, cwd);
                    shown["status"] = json!("completed");
                    out.push(shown);
                }
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => out.push(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": if *is_error { "failed" } else { "completed" },
                "content": [{"type": "content", "content": {"type": "text", "text": content}}],
            })),
        }
    }
    out
}

/// An editor's prompt, read: its text and images, and how many blocks were left out.
#[derive(Debug, Default, PartialEq)]
pub struct Prompt {
    pub text: String,
    /// Image blocks' data, base64: kept and attached by the agent.
    pub images: Vec<String>,
    /// Blocks brute does not read (audio, a binary resource).
    pub dropped: usize,
}

/// An editor's prompt as the text of a turn: text blocks as they are, a file it embedded as
/// a fenced block under its URI, a link as its URI, images aside. Audio is not read (the
/// agent says so in `initialize`).
pub fn prompt_text(blocks: &[Value]) -> Prompt {
    let mut prompt = Prompt::default();
    let mut parts = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(block["text"].as_str().unwrap_or_default().to_owned()),
            Some("resource") => {
                let resource = &block["resource"];
                let uri = resource["uri"].as_str().unwrap_or_default();
                match resource["text"].as_str() {
                    Some(text) => parts.push(format!("{uri}:\n```\n{}\n```", text.trim_end())),
                    None => prompt.dropped += 1,
                }
            }
            Some("resource_link") => parts.push(block["uri"].as_str().unwrap_or_default().to_owned()),
            Some("image") => match block["data"].as_str() {
                Some(data) => prompt.images.push(data.to_owned()),
                None => prompt.dropped += 1,
            },
            _ => prompt.dropped += 1,
        }
    }
    prompt.text = parts.join("\n\n");
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_becomes_the_editors_old_and_new_text() {
        let text = "Edited a.txt\n\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n";
        assert_eq!(
            diff_texts(text),
            Some(("a.txt".into(), Some("keep\nold\n".into()), "keep\nnew\n".into()))
        );
        let created = "Created x (2 bytes).\n\n--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+x\n";
        assert_eq!(diff_texts(created), Some(("x".into(), None, "x\n".into())));
        assert_eq!(diff_texts("no diff here"), None);
    }

    #[test]
    fn a_calls_kind_comes_from_how_it_is_shown() {
        let cwd = Path::new("/p");
        let call = tool_call("c1", "shell", &json!({"command": "ls"}), "ls", Display::Output, cwd);
        assert_eq!(call["kind"], "execute");
        assert_eq!(call["title"], "shell ls");
        assert_eq!(call["locations"], json!([]));
        let call = tool_call(
            "c2",
            "write",
            &json!({"file_path": "a.txt"}),
            "a.txt",
            Display::Diff,
            cwd,
        );
        assert_eq!(call["kind"], "edit");
        assert_eq!(call["locations"][0]["path"], "/p/a.txt", "absolute, as ACP wants");
    }

    #[test]
    fn live_output_keeps_its_tail_at_a_character() {
        let mut output = String::new();
        keep_tail(&mut output, "start ");
        keep_tail(&mut output, &"é".repeat(LIVE_OUTPUT_BYTES));
        assert!(output.len() <= LIVE_OUTPUT_BYTES);
        assert!(output.chars().all(|c| c == 'é'), "the start is gone, no half character");
        let update = output_so_far("c1", "x");
        assert_eq!(update["content"][0]["content"]["text"], "x");
        assert!(update.get("status").is_none(), "still running");
    }

    #[test]
    fn prompt_blocks_become_the_turns_text() {
        let prompt = prompt_text(&[
            json!({"type": "text", "text": "explain"}),
            json!({"type": "resource", "resource": {"uri": "file:///p/a.rs", "text": "fn main() {}\n"}}),
            json!({"type": "image", "data": "iVBO", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "", "mimeType": "audio/wav"}),
        ]);
        assert_eq!(prompt.text, "explain\n\nfile:///p/a.rs:\n```\nfn main() {}\n```");
        assert_eq!(prompt.images, ["iVBO"]);
        assert_eq!(prompt.dropped, 1);
    }
}
