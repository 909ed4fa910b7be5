//! The approval step: a tool call that goes beyond what the sandbox mode allows waits for the
//! person. Added to every tool by the registry, so no tool shape can skip it.
//!
//! The permission rules decide first: a `deny` rule refuses the call, an `ask` rule asks even
//! where the mode would allow it, an `allow` rule lets it through without asking. Otherwise a
//! call needs approval when it would change a path outside the writable roots (or anything in
//! `read-only` mode), when it asks to run a command beyond the sandbox
//! ([`super::Tool::escalation`]), or when it runs commands and no sandbox is available here.
//! `--yolo` and approvals for the session skip the question; without a person (`brute -p`) the
//! call is denied with a result that names what would allow it.
//!
//! A `pre_tool_use` hook's `permissionDecision` ([`crate::hooks::layer::decision`]) is weighed
//! here too: `ask` asks even where the rules or the mode would allow; `allow` answers the
//! question the mode would ask (like the person approving once) but never a rule's.
//!
//! An external tool ([`super::Tool::external`], e.g. an MCP server's) is allowed without
//! asking when it declares itself read-only; otherwise it is asked about once per tool per
//! session (its arguments mean nothing brute could judge), and an allow rule on its name
//! (`mcp__github__*`) lets it through.

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::adapter::{Middleware, Next};
use super::{ToolContext, ToolError, ToolOutput};
use crate::hooks::Permission;
use crate::permission::{Decision, Rule, Source};
use crate::protocol::{ApprovalDecision, RequestKind, Response};
use crate::sandbox::Mode;

/// The approval middleware (see the module docs).
pub struct Approve;

/// Why a call needs the person, if it does.
fn reason(next: &Next<'_>, args: &Value, ctx: &ToolContext) -> Option<String> {
    let tool = next.tool();
    let access = ctx.agent.access();
    if let Some(shown) = tool.mutated_path(args) {
        let path = super::guard::real_path(&super::guard::normalize(&ctx.cwd, &ctx.resolve(&shown)));
        if !access.policy.allows_write(&path) {
            return Some(match access.policy.mode {
                Mode::ReadOnly => "the sandbox is read-only".to_owned(),
                _ => format!("{} is outside the writable roots", path.display()),
            });
        }
    }
    if let Some(justification) = tool.escalation(args) {
        return Some(format!("it asks to run without the sandbox: {justification}"));
    }
    if tool.runs_commands() && access.policy.confined() && !access.can_confine() {
        return Some("no sandbox is available here, so the command would run unconfined".to_owned());
    }
    match tool.external() {
        Some(external) if !external.read_only => {
            Some("it is a tool of an outside server that does not declare itself read-only".to_owned())
        }
        _ => None,
    }
}

/// "Always allow in this project": an exact allow rule for this call, saved in the person's
/// data (never the project) and applied for the rest of the session.
fn remember_for_project(tool: &str, args: &Value, external: bool, ctx: &ToolContext) {
    let argument = crate::permission::rules::argument(tool, args).unwrap_or_default();
    // An external tool is approved as a whole: the rule is its bare name.
    let rule = if external {
        Rule::parse(tool)
    } else {
        Rule::exact(tool, &argument)
    };
    let rule = match rule {
        Ok(rule) => rule,
        Err(e) => {
            tracing::warn!("cannot keep the approval: {e}");
            return;
        }
    };
    // An allow rule covers a compound command only part by part, which would allow more than
    // was approved: such a call is allowed for this session only.
    let mut check = crate::permission::Rules::default();
    check.push(
        crate::permission::RuleKind::Allow,
        rule.clone(),
        Source::ProjectApprovals,
    );
    if !matches!(check.decide(tool, args), Decision::Allow(_)) {
        ctx.events.emit(crate::protocol::Event::Notice {
            message: "this command has several parts: allowed for this session only, not kept for the project"
                .to_owned(),
        });
        return;
    }
    if let Some(file) = ctx.agent.access().approvals_file
        && let Err(e) = crate::permission::approvals::save(&file, &rule)
    {
        ctx.events.emit(crate::protocol::Event::Notice {
            message: format!("could not save the approval in {}: {e}", file.display()),
        });
    }
    ctx.agent.add_rule(rule, Source::ProjectApprovals);
}

/// What a session approval is keyed on: the tool's whole argument (the command, the path, or
/// all arguments) and whether the call leaves the sandbox.
fn approval_key(tool: &str, args: &Value, escalated: bool) -> String {
    let argument = crate::permission::rules::argument(tool, args).unwrap_or_else(|| args.to_string());
    format!("{}{argument}", if escalated { "[unsandboxed] " } else { "" })
}

/// What allows such a call without asking, for the denial `brute -p` gives.
fn how_to_allow(tool: &str, summary: &str, external: Option<&super::External>) -> String {
    if let Some(external) = external {
        return format!(
            "allow it in config with `allow = [\"{tool}\"]` (or `\"{}\"` for all of its server's tools) under [permissions], or run brute with --yolo",
            external.family
        );
    }
    let first = summary.split_whitespace().next().unwrap_or("");
    format!(
        "run brute with --sandbox full-access (or --yolo), or allow it in config with a rule like `{tool}({first}*)` under [permissions]"
    )
}

/// The arguments as pretty JSON for an approval; empty when there are none.
fn all_arguments(args: &Value) -> String {
    match args {
        Value::Object(map) if map.is_empty() => String::new(),
        Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

impl Middleware for Approve {
    fn handle<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let tool = next.tool();
            let rules = ctx.agent.access().rules;
            // A pre_tool_use hook's say: `ask` forces the question, `allow` answers only the
            // question the mode would ask; neither overrides a deny (or ask) rule.
            let hook = crate::hooks::layer::decision();
            let hook_asks = "a pre_tool_use hook asks for approval";
            let reason = match rules.decide(tool.name(), &args) {
                Decision::Deny(matched) => {
                    return Err(ToolError::new(
                        "Denied",
                        format!(
                            "the permission rule deny `{}` ({}) refuses this call",
                            matched.rule, matched.source
                        ),
                    ));
                }
                Decision::Allow(_) if hook == Some(Permission::Ask) => hook_asks.to_owned(),
                Decision::Allow(_) => return next.run(args, ctx).await,
                Decision::Ask(Some(matched)) => format!("the rule ask `{}` ({})", matched.rule, matched.source),
                Decision::Ask(None) | Decision::Default => match (reason(&next, &args, ctx), hook) {
                    (Some(_), Some(Permission::Allow)) => {
                        ctx.approve_beyond_roots();
                        return next.run(args, ctx).await;
                    }
                    (Some(reason), _) => reason,
                    (None, Some(Permission::Ask)) => hook_asks.to_owned(),
                    (None, _) => return next.run(args, ctx).await,
                },
            };
            let summary = tool.summary(&args);
            // "For this session" covers exactly this call: the whole argument (not the shown
            // summary) and whether it asks to leave the sandbox.
            let external = tool.external();
            let key = match &external {
                // Once per tool: its arguments mean nothing brute could judge.
                Some(_) => String::new(),
                None => approval_key(tool.name(), &args, tool.escalation(&args).is_some()),
            };
            if ctx.agent.access().yolo || ctx.agent.approved(tool.name(), &key) {
                ctx.approve_beyond_roots();
                return next.run(args, ctx).await;
            }
            // What the person judges: the whole command or content, else every argument (an
            // outside server's tool, a removal), so nothing of the call is left out.
            let detail = ["command", "content", "new_string"]
                .iter()
                .find_map(|k| args.get(*k).and_then(Value::as_str))
                .map_or_else(|| all_arguments(&args), str::to_owned);
            let kind = RequestKind::Approval {
                tool: tool.name().to_owned(),
                summary: summary.clone(),
                detail,
                reason: reason.clone(),
            };
            match ctx.ask(kind).await {
                Response::Approval {
                    decision: ApprovalDecision::Once,
                    ..
                } => {
                    ctx.approve_beyond_roots();
                    next.run(args, ctx).await
                }
                Response::Approval {
                    decision: ApprovalDecision::Session,
                    ..
                } => {
                    ctx.approve_beyond_roots();
                    ctx.agent.approve_for_session(tool.name(), &key);
                    next.run(args, ctx).await
                }
                Response::Approval {
                    decision: ApprovalDecision::Project,
                    ..
                } => {
                    ctx.approve_beyond_roots();
                    ctx.agent.approve_for_session(tool.name(), &key);
                    remember_for_project(tool.name(), &args, external.is_some(), ctx);
                    next.run(args, ctx).await
                }
                Response::Approval {
                    decision: ApprovalDecision::Deny,
                    reason: why,
                } => {
                    let why = why
                        .filter(|w| !w.trim().is_empty())
                        .map(|w| format!(" They said: {}", w.trim()))
                        .unwrap_or_default();
                    Err(ToolError::new(
                        "Denied",
                        format!("the user denied this call ({reason}).{why} Do not retry it as is."),
                    ))
                }
                Response::NoPerson => Err(ToolError::new(
                    "Denied",
                    format!(
                        "not allowed without approval ({reason}), and nobody is here to approve it: {}",
                        how_to_allow(tool.name(), &summary, external.as_ref())
                    ),
                )),
                _ if ctx.cancel.is_cancelled() => Err(ToolError::new(
                    "Interrupted",
                    "the user interrupted the turn before approving this call",
                )),
                _ => Err(ToolError::new(
                    "Denied",
                    format!("the user dismissed the approval ({reason}). Do not retry it as is."),
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures_util::future::BoxFuture;
    use serde_json::{Value, json};

    use super::Approve;
    use crate::agent::requests::Requests;
    use crate::agent::state::AgentState;
    use crate::protocol::{ApprovalDecision, Event, EventSink, RequestKind, Response};
    use crate::tool::{External, Pipeline, Tool, ToolContext, ToolError, ToolOutput};

    /// An outside tool that counts its runs.
    struct Outside {
        read_only: bool,
        runs: AtomicUsize,
    }

    impl Tool for Outside {
        fn name(&self) -> &str {
            if self.read_only {
                "mcp__srv__look"
            } else {
                "mcp__srv__change"
            }
        }
        fn description(&self) -> &str {
            "outside"
        }
        fn parameters(&self) -> Value {
            json!({"type": "object", "properties": {}})
        }
        fn external(&self) -> Option<External> {
            Some(External {
                read_only: self.read_only,
                family: "mcp__srv__*".to_owned(),
            })
        }
        fn call<'a>(&'a self, _: Value, _: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(ToolOutput::text("ran")) })
        }
    }

    /// A call without a command or content is shown with every argument.
    #[test]
    fn approvals_show_all_arguments_when_there_is_no_command() {
        assert_eq!(super::all_arguments(&json!({})), "");
        assert_eq!(
            super::all_arguments(&json!({"path": "a", "body": "x\ny"})),
            "{\n  \"body\": \"x\\ny\",\n  \"path\": \"a\"\n}"
        );
    }

    /// An outside tool is asked about once per session, whatever its arguments; a read-only
    /// one is never asked about.
    #[tokio::test]
    async fn outside_tools_are_approved_once_per_tool() {
        let (events, mut rx) = EventSink::channel();
        let requests = Requests::new(events.clone());
        let provider = Arc::new(crate::provider::replay::ReplayProvider::from_script("").unwrap());
        let dir = tempfile::tempdir().unwrap();
        let agent = Arc::new(
            AgentState::new(provider, "m".into(), 100, dir.path().to_path_buf()).with_requests(requests.clone()),
        );
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = asked.clone();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                if let Event::Request {
                    id,
                    kind: RequestKind::Approval { .. },
                } = event
                {
                    counter.fetch_add(1, Ordering::SeqCst);
                    let answer = Response::Approval {
                        decision: ApprovalDecision::Session,
                        reason: None,
                    };
                    requests.resolve(&id, answer);
                }
            }
        });
        let ctx = ToolContext::standalone(agent, events);
        let change = Arc::new(Outside {
            read_only: false,
            runs: AtomicUsize::new(0),
        });
        let look = Arc::new(Outside {
            read_only: true,
            runs: AtomicUsize::new(0),
        });
        let changing = Pipeline::new(change.clone()).layer(Approve);
        let looking = Pipeline::new(look.clone()).layer(Approve);
        for args in [json!({"a": 1}), json!({"a": 2}), json!({})] {
            assert_eq!(changing.call(args, &ctx).await.unwrap().content, "ran");
            looking.call(json!({"x": 1}), &ctx).await.unwrap();
        }
        assert_eq!(asked.load(Ordering::SeqCst), 1, "asked once for the changing tool only");
        assert_eq!(change.runs.load(Ordering::SeqCst), 3);
        assert_eq!(look.runs.load(Ordering::SeqCst), 3);
    }
}
