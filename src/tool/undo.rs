//! `undo`: reverts the last mutation of one path by any tool.

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{Params, Tool, ToolContext, ToolError, ToolOutput, str_arg};

/// The built-in `undo` tool.
pub struct UndoTool;

impl Tool for UndoTool {
    fn name(&self) -> &str {
        "undo"
    }

    fn rule_subject(&self) -> crate::permission::RuleSubject {
        crate::permission::RuleSubject::Path("path")
    }

    /// Undo restores snapshots; taking one first would make it undo itself.
    fn snapshot_before(&self) -> bool {
        false
    }

    fn description(&self) -> &str {
        "Revert the last change made to a file by write, patch or remove in this session (a created file is deleted, a removed one re-created). Call again to go further back."
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string("path", "The file (or removed directory) to revert", true)
            .build()
    }

    fn mutated_path(&self, args: &Value) -> Option<String> {
        args["path"].as_str().map(str::to_owned)
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let shown = str_arg(&args, "path")?;
            let path = ctx.resolve(shown);
            let restored = ctx
                .snapshots
                .undo(&path)
                .map_err(|e| ToolError::io(format!("cannot undo {shown}"), &e))?
                .ok_or_else(|| ToolError::not_found(format!("no changes to {shown} to undo in this session")))?;
            let mut out = String::new();
            for item in &restored {
                out.push_str(&format!("{}: {}\n", ctx.display(&item.path), item.action));
            }
            Ok(ToolOutput::text(out))
        })
    }
}
