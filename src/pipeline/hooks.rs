//! The tool middlewares for `pre_tool_use` and `post_tool_use`. The registry adds both to
//! every tool, whatever its shape:
//!
//! ```text
//! LogCalls → PreToolHooks → ValidateArgs → GuardPaths → Approve → PostToolHooks → tool
//! ```
//!
//! So a rewritten input (`updated_input`) is validated against the tool's schema, kept inside
//! the path guards and decided by the permission rules again like the model's own: a hook
//! cannot turn a denied call into an allowed one. A hook's `permissionDecision` reaches the
//! approval step through [`decision`] (a task-local, so it never leaks into other calls).
//! `post_tool_use` runs only when the tool itself ran (not for calls refused before it).

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use crate::hooks::{HookEvent, Permission, fields};
use crate::protocol::Event;
use crate::tool::adapter::{Middleware, Next};
use crate::tool::{ToolContext, ToolError, ToolOutput};

tokio::task_local! {
    static DECISION: Permission;
}

/// The `pre_tool_use` hooks' permission decision for the call being run, if any (read by the
/// approval step).
pub fn decision() -> Option<Permission> {
    DECISION.try_with(|d| *d).ok()
}

/// Runs `future` with `permission` as the hooks' decision (what [`decision`] returns in it).
pub(crate) async fn with_decision<F: std::future::Future>(permission: Permission, future: F) -> F::Output {
    DECISION.scope(permission, future).await
}

/// Runs the `pre_tool_use` hooks: they may block the call, rewrite its input, or decide its
/// permission (see the module docs).
pub struct PreToolHooks;

impl Middleware for PreToolHooks {
    fn handle<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let hooks = &ctx.agent.hooks;
            let name = next.tool().name();
            if !hooks.matches(HookEvent::PreToolUse, Some(name)) {
                return next.run(args, ctx).await;
            }
            let input = fields([
                ("tool_name", json!(name)),
                ("tool_input", args.clone()),
                ("tool_use_id", json!(ctx.call_id)),
            ]);
            let said = hooks
                .run(
                    HookEvent::PreToolUse,
                    Some(name),
                    &ctx.cwd,
                    input,
                    &ctx.events,
                    Some(&ctx.cancel),
                )
                .await;
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::new(
                    "Interrupted",
                    "the user interrupted the turn while a pre_tool_use hook ran",
                ));
            }
            if let Some(reason) = said.block {
                return Err(ToolError::new(
                    "Blocked",
                    format!("a pre_tool_use hook blocked this call: {reason}"),
                ));
            }
            let args = match said.updated_input {
                Some(updated) if updated != args => {
                    ctx.events.emit(Event::Notice {
                        message: format!("a pre_tool_use hook rewrote the `{name}` call's input to {updated}"),
                    });
                    updated
                }
                _ => args,
            };
            match said.permission {
                Some(permission) => with_decision(permission, next.run(args, ctx)).await,
                None => next.run(args, ctx).await,
            }
        })
    }
}

/// Runs the `post_tool_use` hooks with the tool's result: a block (exit 2 or
/// `"decision": "block"`) or `additionalContext` is appended to the result the model sees.
pub struct PostToolHooks;

impl Middleware for PostToolHooks {
    fn handle<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let hooks = &ctx.agent.hooks;
            let name = next.tool().name();
            if !hooks.matches(HookEvent::PostToolUse, Some(name)) {
                return next.run(args, ctx).await;
            }
            let tool_input = args.clone();
            let mut result = next.run(args, ctx).await;
            let (response, is_error) = match &result {
                Ok(output) => (output.content.clone(), false),
                Err(error) => (crate::tool::exec::error_content(error), true),
            };
            let input = fields([
                ("tool_name", json!(name)),
                ("tool_input", tool_input),
                ("tool_use_id", json!(ctx.call_id)),
                ("tool_response", json!(response)),
                ("is_error", json!(is_error)),
            ]);
            let said = hooks
                .run(
                    HookEvent::PostToolUse,
                    Some(name),
                    &ctx.cwd,
                    input,
                    &ctx.events,
                    Some(&ctx.cancel),
                )
                .await;
            let mut feedback: Vec<String> = said.context;
            feedback.extend(said.block);
            if !feedback.is_empty() {
                let note = format!("[post_tool_use hook] {}", feedback.join("\n"));
                match &mut result {
                    Ok(output) => crate::hooks::append_paragraph(&mut output.content, &note),
                    Err(error) => crate::hooks::append_paragraph(&mut error.message, &note),
                }
            }
            result
        })
    }
}
