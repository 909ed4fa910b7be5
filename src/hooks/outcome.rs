//! What a finished hook says, as a plain function of its ending and output.
//!
//! - exit 0: go on. Stdout may be a JSON object: `{"decision": "block", "reason": ...}` blocks,
//!   `{"updated_input": {...}}` rewrites a tool call's input; Claude Code's
//!   `{"hookSpecificOutput": {"permissionDecision": "allow|deny|ask",
//!   "permissionDecisionReason": ..., "updatedInput": {...}, "additionalContext": ...}}`,
//!   `{"decision": "approve"}` and `{"systemMessage": ...}` are accepted too. Plain text
//!   (not JSON) is extra context for the model on `session_start` and `user_prompt_submit`,
//!   and ignored elsewhere.
//! - exit 2: block; stderr is the reason (it goes to the model, or to the person for a prompt).
//! - anything else (another exit code, a signal, bad JSON, a timeout, a failed start): a hook
//!   error shown to the person; it never blocks.

use serde_json::Value;

use super::HookEvent;
use super::run::{Ending, Finished};

/// A hook's say on a tool call's permission (Claude Code's `permissionDecision`). Ordered by
/// strength: when several hooks decide, the strongest wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    /// Answers the approval question brute would ask because of the sandbox mode; never
    /// overrides a `deny` or `ask` rule.
    Allow,
    /// Asks the person even where the mode and rules would allow the call.
    Ask,
    /// Refuses the call (the same as blocking it).
    Deny,
}

/// What one hook said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// Block, with the reason.
    pub block: Option<String>,
    pub updated_input: Option<Value>,
    pub permission: Option<Permission>,
    /// Extra context for the model.
    pub context: Option<String>,
    /// A message for the person (`systemMessage`).
    pub system_message: Option<String>,
    /// A hook error for the person (never blocks).
    pub error: Option<String>,
}

/// The last `max` characters of `text`, trimmed (for error notices).
fn tail(text: &str, max: usize) -> String {
    let text = text.trim();
    match text.char_indices().rev().nth(max) {
        Some((cut, _)) => format!("…{}", &text[cut..]),
        None => text.to_owned(),
    }
}

fn string(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Interprets a finished hook of `event`.
pub fn interpret(event: HookEvent, finished: &Finished) -> Verdict {
    let error = |message: String| Verdict {
        error: Some(message),
        ..Verdict::default()
    };
    match &finished.ending {
        Ending::Exited(0) => {}
        Ending::Exited(2) => {
            let reason = finished.stderr.trim();
            return Verdict {
                block: Some(if reason.is_empty() {
                    format!("blocked by a {} hook (it gave no reason)", event.name())
                } else {
                    reason.to_owned()
                }),
                ..Verdict::default()
            };
        }
        Ending::Exited(code) => {
            let stderr = tail(&finished.stderr, 400);
            let detail = if stderr.is_empty() {
                String::new()
            } else {
                format!(": {stderr}")
            };
            return error(format!("failed with exit code {code}{detail}"));
        }
        Ending::Signaled => return error("was killed by a signal".to_owned()),
        Ending::TimedOut(after) => {
            return error(format!(
                "timed out after {} s and was killed (raise `timeout` in its [[hooks.{}]] table)",
                after.as_secs(),
                event.name()
            ));
        }
        Ending::Interrupted => return error("was stopped: the turn was interrupted".to_owned()),
        Ending::NotStarted(why) => return error(format!("could not be started: {why}")),
    }
    let stdout = finished.stdout.trim();
    if stdout.is_empty() {
        return Verdict::default();
    }
    let object = match serde_json::from_str::<Value>(stdout) {
        Ok(Value::Object(object)) => object,
        _ if stdout.starts_with('{') => {
            return error(format!("printed invalid JSON: {}", tail(stdout, 200)));
        }
        _ => {
            let takes_context = matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit);
            return Verdict {
                context: takes_context.then(|| stdout.to_owned()),
                ..Verdict::default()
            };
        }
    };
    let specific = object.get("hookSpecificOutput");
    let mut verdict = Verdict {
        system_message: string(object.get("systemMessage")),
        context: string(specific.and_then(|s| s.get("additionalContext"))),
        updated_input: object
            .get("updated_input")
            .or_else(|| specific.and_then(|s| s.get("updatedInput")))
            .cloned(),
        ..Verdict::default()
    };
    let reason = string(object.get("reason"));
    match object.get("decision").and_then(Value::as_str) {
        Some("block") => {
            verdict.block = Some(
                reason
                    .clone()
                    .unwrap_or_else(|| format!("blocked by a {} hook (it gave no reason)", event.name())),
            )
        }
        Some("approve") => verdict.permission = Some(Permission::Allow),
        _ => {}
    }
    let permission_reason = string(specific.and_then(|s| s.get("permissionDecisionReason")));
    match specific
        .and_then(|s| s.get("permissionDecision"))
        .and_then(Value::as_str)
    {
        Some("allow") => verdict.permission = Some(Permission::Allow),
        Some("ask") => verdict.permission = Some(Permission::Ask),
        Some("deny") => {
            verdict.permission = Some(Permission::Deny);
            if verdict.block.is_none() {
                verdict.block = Some(
                    permission_reason
                        .unwrap_or_else(|| format!("denied by a {} hook (it gave no reason)", event.name())),
                );
            }
        }
        _ => {}
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn exited(code: i32, stdout: &str, stderr: &str) -> Finished {
        Finished {
            ending: Ending::Exited(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn exit_codes() {
        let pre = HookEvent::PreToolUse;
        assert_eq!(interpret(pre, &exited(0, "", "")), Verdict::default());
        assert_eq!(
            interpret(pre, &exited(2, "", "no shell today\n")).block.as_deref(),
            Some("no shell today")
        );
        assert!(interpret(pre, &exited(2, "", "")).block.is_some());
        let failed = interpret(pre, &exited(1, "", "boom"));
        assert_eq!(failed.block, None);
        assert_eq!(failed.error.as_deref(), Some("failed with exit code 1: boom"));
        let timed_out = Finished {
            ending: Ending::TimedOut(Duration::from_secs(1)),
            stdout: String::new(),
            stderr: String::new(),
        };
        let verdict = interpret(pre, &timed_out);
        assert!(verdict.block.is_none() && verdict.error.unwrap().contains("timed out after 1 s"));
    }

    #[test]
    fn json_output_in_both_shapes() {
        let pre = HookEvent::PreToolUse;
        let v = interpret(pre, &exited(0, r#"{"decision":"block","reason":"not here"}"#, ""));
        assert_eq!(v.block.as_deref(), Some("not here"));
        let v = interpret(pre, &exited(0, r#"{"updated_input":{"command":"ls"}}"#, ""));
        assert_eq!(v.updated_input, Some(json!({"command": "ls"})));
        let claude = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"ok","updatedInput":{"command":"pwd"}}}"#;
        let v = interpret(pre, &exited(0, claude, ""));
        assert_eq!(v.updated_input, Some(json!({"command": "pwd"})));
        assert_eq!(v.permission, Some(Permission::Allow));
        assert_eq!(v.block, None);
        let deny = r#"{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"no rm"}}"#;
        let v = interpret(pre, &exited(0, deny, ""));
        assert_eq!(
            (v.permission, v.block.as_deref()),
            (Some(Permission::Deny), Some("no rm"))
        );
        let ask = r#"{"hookSpecificOutput":{"permissionDecision":"ask"}}"#;
        assert_eq!(interpret(pre, &exited(0, ask, "")).permission, Some(Permission::Ask));
        assert!(Permission::Deny > Permission::Ask && Permission::Ask > Permission::Allow);
        let bad = interpret(pre, &exited(0, "{not json", ""));
        assert!(bad.error.unwrap().contains("invalid JSON") && bad.block.is_none());
    }

    #[test]
    fn plain_stdout_is_context_only_where_it_can_be() {
        let v = interpret(HookEvent::UserPromptSubmit, &exited(0, "branch: main\n", ""));
        assert_eq!(v.context.as_deref(), Some("branch: main"));
        assert_eq!(
            interpret(HookEvent::PreToolUse, &exited(0, "chatter", "")),
            Verdict::default()
        );
        let v = interpret(
            HookEvent::SessionStart,
            &exited(0, r#"{"hookSpecificOutput":{"additionalContext":"ctx"}}"#, ""),
        );
        assert_eq!(v.context.as_deref(), Some("ctx"));
    }
}
