//! `write`: creates or replaces a file atomically, snapshotting it first for undo.

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{Params, Tool, ToolContext, ToolError, ToolOutput, str_arg};

/// A unified diff (3 lines of context) between two texts, headed with the path.
pub fn unified_diff(shown: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string()
}

/// The built-in `write` tool.
pub struct WriteTool;

impl Tool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }

    fn rule_subject(&self) -> crate::permission::RuleSubject {
        crate::permission::RuleSubject::Path("file_path")
    }

    fn description(&self) -> &str {
        "Create or overwrite a file with the given content (parent directories are created). Prefer `patch` for small edits to existing files. Returns a diff."
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string("file_path", "Path of the file to write", true)
            .string("content", "The complete new content of the file", true)
            .build()
    }

    fn mutated_path(&self, args: &Value) -> Option<String> {
        args["file_path"].as_str().map(str::to_owned)
    }

    fn display(&self) -> crate::protocol::Display {
        crate::protocol::Display::Diff
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let shown = str_arg(&args, "file_path")?;
            let content = str_arg(&args, "content")?;
            let path = ctx.resolve(shown);
            if path.is_dir() {
                return Err(ToolError::invalid(format!("{shown} is a directory")));
            }
            super::guard::refuse_special(&path, shown)?;
            // Read and written through the descriptor of the checked parent (see `place`).
            let place = super::place::place(ctx, &path, shown, true)?;
            let old = match place.root.read_bounded(&place.rel, crate::files::MAX_FILE_BYTES) {
                Ok(bytes) => Some(bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(ToolError::io(format!("cannot read {shown}"), &e)),
            };
            place
                .store(ctx, content.as_bytes(), old.is_some())
                .await
                .map_err(|e| ToolError::io(format!("cannot write {shown}"), &e))?;
            let shown = ctx.display(&path);
            let summary = match &old {
                None => format!("Created {shown} ({} bytes).", content.len()),
                Some(old) if old == content.as_bytes() => {
                    format!(
                        "{shown} already had this content ({} bytes); nothing changed.",
                        content.len()
                    )
                }
                Some(_) => format!("Wrote {} bytes to {shown}.", content.len()),
            };
            let old_text = old.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
            let diff = unified_diff(&shown, &old_text, content);
            Ok(ToolOutput::text(if diff.is_empty() {
                summary
            } else {
                format!("{summary}\n\n{diff}")
            }))
        })
    }
}
