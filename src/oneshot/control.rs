//! `--input-format stream-json`: what a program writes to brute's stdin, one JSON object a line,
//! as Claude Code reads it from its SDK: user messages (each one a turn, queued behind the
//! running one), `control_request`s (initialize, interrupt, set_permission_mode, set_model,
//! mcp_status) and the `control_response`s that answer brute's own requests (`can_use_tool`,
//! for approvals under `--permission-prompt-tool stdio`).
//!
//! [`parse`] reads one line into an [`Incoming`]; [`can_use_tool`] and [`approval`] turn an
//! approval into a request line and the answer back into brute's response. Plain functions, so
//! each shape is tested without a process.

use serde_json::{Value, json};

use crate::protocol::{ApprovalDecision, Response};

/// One line from the program.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// A user message: a turn, with its images (base64). `dropped` counts content blocks
    /// brute does not read.
    User {
        text: String,
        images: Vec<String>,
        dropped: usize,
    },
    /// A request brute answers with a `control_response`.
    Control { request_id: String, request: Control },
    /// The answer to a request brute made: its `response`, or the error it came with.
    Answer {
        request_id: String,
        result: Result<Value, String>,
    },
    /// A line with nothing to do (`keep_alive`, a cancel for a request brute does not make).
    Nothing,
}

/// A control request from the program.
#[derive(Debug, PartialEq)]
pub enum Control {
    /// The SDK's hooks (by Claude Code's event names) and whether it defines agents, which
    /// brute does not run.
    Initialize {
        hooks: Value,
        agents: bool,
    },
    Interrupt,
    SetPermissionMode(String),
    /// `None`: back to the configured model.
    SetModel(Option<String>),
    McpStatus,
    /// Anything else, by subtype: answered with an error.
    Other(String),
}

/// The program's answer to `can_use_tool`.
#[derive(Debug, PartialEq)]
pub enum Answer {
    Allow {
        updated_input: Option<Value>,
    },
    Deny {
        message: String,
        interrupt: bool,
    },
    /// The program could not answer (no callback, or it failed).
    Error(String),
}

/// Why a line could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LineError {
    #[error("not JSON: {0}")]
    Json(String),
    #[error("a line of type `{0}` is not something brute reads")]
    Type(String),
    #[error("a {0} without {1}")]
    Missing(&'static str, &'static str),
}

/// Reads one line.
pub fn parse(line: &str) -> Result<Incoming, LineError> {
    let value: Value = serde_json::from_str(line).map_err(|e| LineError::Json(e.to_string()))?;
    let kind = value.get("type").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "user" => user(&value),
        "control_request" => {
            let request_id = string(&value, "request_id").ok_or(LineError::Missing("control_request", "request_id"))?;
            let request = value
                .get("request")
                .ok_or(LineError::Missing("control_request", "request"))?;
            Ok(Incoming::Control {
                request_id,
                request: control(request),
            })
        }
        "control_response" => {
            let response = value
                .get("response")
                .ok_or(LineError::Missing("control_response", "response"))?;
            let request_id =
                string(response, "request_id").ok_or(LineError::Missing("control_response", "request_id"))?;
            let result = match response.get("subtype").and_then(Value::as_str) {
                Some("success") => Ok(response.get("response").cloned().unwrap_or(Value::Null)),
                _ => Err(string(response, "error").unwrap_or_else(|| "the program gave no answer".to_owned())),
            };
            Ok(Incoming::Answer { request_id, result })
        }
        "keep_alive" | "control_cancel_request" | "update_environment_variables" => Ok(Incoming::Nothing),
        other => Err(LineError::Type(other.to_owned())),
    }
}

fn string(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// A user message's text: a string, or its text blocks joined.
fn user(value: &Value) -> Result<Incoming, LineError> {
    let content = value
        .get("message")
        .and_then(|m| m.get("content"))
        .ok_or(LineError::Missing("user message", "message.content"))?;
    match content {
        Value::String(text) => Ok(Incoming::User {
            text: text.clone(),
            images: Vec::new(),
            dropped: 0,
        }),
        Value::Array(blocks) => {
            let (mut texts, mut images, mut dropped) = (Vec::new(), Vec::new(), 0);
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => match block.get("text").and_then(Value::as_str) {
                        Some(text) => texts.push(text),
                        None => dropped += 1,
                    },
                    // Anthropic's image block: only base64 sources (a URL would be fetched).
                    Some("image") if block["source"]["type"] == "base64" => match block["source"]["data"].as_str() {
                        Some(data) => images.push(data.to_owned()),
                        None => dropped += 1,
                    },
                    _ => dropped += 1,
                }
            }
            Ok(Incoming::User {
                text: texts.join("\n\n"),
                images,
                dropped,
            })
        }
        _ => Err(LineError::Missing("user message", "text content")),
    }
}

fn control(request: &Value) -> Control {
    let subtype = request.get("subtype").and_then(Value::as_str).unwrap_or_default();
    let present = |key: &str| {
        request
            .get(key)
            .is_some_and(|v| !v.is_null() && v.as_object().is_none_or(|o| !o.is_empty()))
    };
    match subtype {
        "initialize" => Control::Initialize {
            hooks: request.get("hooks").cloned().unwrap_or(Value::Null),
            agents: present("agents"),
        },
        "interrupt" => Control::Interrupt,
        "set_permission_mode" => Control::SetPermissionMode(string(request, "mode").unwrap_or_default()),
        "set_model" => Control::SetModel(string(request, "model").filter(|m| !m.is_empty() && m != "default")),
        "mcp_status" => Control::McpStatus,
        other => Control::Other(other.to_owned()),
    }
}

/// The program's answer to `can_use_tool`, from its response (or the error it sent).
pub fn decision(result: Result<Value, String>) -> Answer {
    let response = match result {
        Ok(response) => response,
        Err(error) => return Answer::Error(error),
    };
    match response.get("behavior").and_then(Value::as_str) {
        Some("allow") => Answer::Allow {
            updated_input: response.get("updatedInput").cloned(),
        },
        Some("deny") => Answer::Deny {
            message: string(&response, "message").unwrap_or_default(),
            interrupt: response.get("interrupt").and_then(Value::as_bool).unwrap_or(false),
        },
        _ => Answer::Error("the answer has no behavior (allow or deny)".to_owned()),
    }
}

/// The hooks an `initialize` registers, in brute's terms: one hook per callback id, its
/// matcher read as brute's tool names. An event brute has no hook point for is refused (a
/// guard that never runs must not look registered).
pub fn hooks(registered: &Value) -> Result<Vec<crate::hooks::Hook>, String> {
    use crate::hooks::{Hook, HookEvent};
    let Some(events) = registered.as_object() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (name, matchers) in events {
        let event = HookEvent::ALL
            .iter()
            .copied()
            .find(|e| e.claude_name() == name)
            .ok_or_else(|| {
                format!(
                    "brute has no `{name}` hook point (it has {})",
                    HookEvent::ALL
                        .iter()
                        .map(|e| e.claude_name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
        for matcher in matchers.as_array().into_iter().flatten() {
            let glob = crate::cli::claude::hook_matcher(matcher.get("matcher").and_then(Value::as_str))?;
            let timeout = matcher.get("timeout").and_then(Value::as_u64);
            for id in matcher["hookCallbackIds"].as_array().into_iter().flatten() {
                let id = id.as_str().ok_or("a hook callback id is not a string")?;
                out.push(Hook::program(event, glob.clone(), id, timeout)?);
            }
        }
    }
    Ok(out)
}

/// A `control_response` line: success with `response`, or an error.
pub fn respond(request_id: &str, result: Result<Value, String>) -> Value {
    match result {
        Ok(response) => json!({
            "type": "control_response",
            "response": {"subtype": "success", "request_id": request_id, "response": response},
        }),
        Err(error) => json!({
            "type": "control_response",
            "response": {"subtype": "error", "request_id": request_id, "error": error},
        }),
    }
}

/// The `can_use_tool` request for an approval.
pub fn can_use_tool(request_id: &str, tool: &str, input: &Value, call_id: &str, summary: &str, reason: &str) -> Value {
    json!({
        "type": "control_request",
        "request_id": request_id,
        "request": {
            "subtype": "can_use_tool",
            "tool_name": tool,
            "input": input,
            "tool_use_id": call_id,
            "permission_suggestions": [],
            "decision_reason": reason,
            "title": summary,
            "description": reason,
        },
    })
}

/// brute's response to an approval from the program's answer to `can_use_tool`, and whether
/// the turn is to stop. An allow that changes the input is refused: brute runs calls as the
/// model made them (and the approval judged), never a rewritten one it was not shown.
pub fn approval(answer: Answer, input: &Value) -> (Response, bool) {
    let deny = |reason: String| Response::Approval {
        decision: ApprovalDecision::Deny,
        reason: Some(reason),
    };
    match answer {
        Answer::Allow { updated_input } if updated_input.as_ref().is_none_or(|u| u == input) => (
            Response::Approval {
                decision: ApprovalDecision::Once,
                reason: None,
            },
            false,
        ),
        Answer::Allow { .. } => (
            deny(
                "the program that approves calls changed its input; brute runs calls only as the model made them"
                    .to_owned(),
            ),
            false,
        ),
        Answer::Deny { message, interrupt } => (deny(message), interrupt),
        Answer::Error(error) => (
            deny(format!("the program that approves calls could not answer: {error}")),
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdks_lines_are_read() {
        assert_eq!(
            parse(
                r#"{"type":"user","session_id":"","message":{"role":"user","content":"hi"},"parent_tool_use_id":null}"#
            ),
            Ok(Incoming::User {
                text: "hi".into(),
                images: vec![],
                dropped: 0
            })
        );
        assert_eq!(
            parse(
                r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"url","url":"http://x/y.png"}},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},{"type":"text","text":"b"}]}}"#
            ),
            Ok(Incoming::User {
                text: "a\n\nb".into(),
                images: vec!["iVBO".into()],
                dropped: 1
            })
        );
        assert_eq!(
            parse(r#"{"type":"control_request","request_id":"r1","request":{"subtype":"initialize","hooks":null}}"#),
            Ok(Incoming::Control {
                request_id: "r1".into(),
                request: Control::Initialize {
                    hooks: Value::Null,
                    agents: false
                }
            })
        );
        assert_eq!(
            parse(r#"{"type":"control_request","request_id":"r2","request":{"subtype":"set_model","model":null}}"#),
            Ok(Incoming::Control {
                request_id: "r2".into(),
                request: Control::SetModel(None)
            })
        );
        assert_eq!(
            parse(
                r#"{"type":"control_response","response":{"subtype":"success","request_id":"b1","response":{"behavior":"deny","message":"no"}}}"#
            ),
            Ok(Incoming::Answer {
                request_id: "b1".into(),
                result: Ok(json!({"behavior": "deny", "message": "no"}))
            })
        );
        assert_eq!(
            decision(Ok(json!({"behavior": "deny", "message": "no"}))),
            Answer::Deny {
                message: "no".into(),
                interrupt: false
            }
        );
        assert!(matches!(parse("{"), Err(LineError::Json(_))));
        assert_eq!(
            parse(r#"{"type":"assistant"}"#),
            Err(LineError::Type("assistant".into()))
        );
        assert_eq!(parse(r#"{"type":"keep_alive"}"#), Ok(Incoming::Nothing));
    }

    #[test]
    fn the_sdks_hooks_become_brutes_and_unknown_points_are_refused() {
        let hooks = hooks(&json!({"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["h1", "h2"], "timeout": 5}]}))
            .unwrap();
        assert_eq!(hooks.len(), 2);
        assert_eq!(hooks[0].callback.as_deref(), Some("h1"));
        assert!(hooks[0].matches(Some("shell")) && !hooks[0].matches(Some("read")));
        assert_eq!(hooks[0].timeout(), std::time::Duration::from_secs(5));
        let refused =
            super::hooks(&json!({"Notification": [{"matcher": null, "hookCallbackIds": ["h"]}]})).unwrap_err();
        assert!(refused.contains("Notification"), "{refused}");
        assert!(super::hooks(&Value::Null).unwrap().is_empty());
    }

    #[test]
    fn an_allow_that_rewrites_the_call_is_a_denial() {
        let input = json!({"command": "ls"});
        let allow = |updated_input| Answer::Allow { updated_input };
        assert!(matches!(
            approval(allow(None), &input).0,
            Response::Approval {
                decision: ApprovalDecision::Once,
                ..
            }
        ));
        assert!(matches!(
            approval(allow(Some(input.clone())), &input).0,
            Response::Approval {
                decision: ApprovalDecision::Once,
                ..
            }
        ));
        assert!(matches!(
            approval(allow(Some(json!({"command": "rm -rf ~"}))), &input).0,
            Response::Approval {
                decision: ApprovalDecision::Deny,
                ..
            }
        ));
        let (response, stop) = approval(
            Answer::Deny {
                message: "not that".into(),
                interrupt: true,
            },
            &input,
        );
        assert_eq!(
            response,
            Response::Approval {
                decision: ApprovalDecision::Deny,
                reason: Some("not that".into())
            }
        );
        assert!(stop);
    }
}
