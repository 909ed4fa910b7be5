//! `remove`: deletes a file, an empty directory, or (with `recursive`) a tree. Every removed
//! file is snapshotted first, so `undo` on the path brings it all back.

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{Params, Tool, ToolContext, ToolError, ToolOutput, str_arg};

/// The built-in `remove` tool.
pub struct RemoveTool;

impl Tool for RemoveTool {
    fn name(&self) -> &str {
        "remove"
    }

    fn rule_subject(&self) -> crate::permission::RuleSubject {
        crate::permission::RuleSubject::Path("path")
    }

    fn description(&self) -> &str {
        "Delete a file or an empty directory; with recursive=true, a directory tree. Undoable with `undo`."
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string("path", "File or directory to delete", true)
            .boolean(
                "recursive",
                "Delete a non-empty directory and everything in it (default false)",
                false,
            )
            .build()
    }

    fn mutated_path(&self, args: &Value) -> Option<String> {
        args["path"].as_str().map(str::to_owned)
    }

    fn follows_links(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let shown = str_arg(&args, "path")?;
            let recursive = args["recursive"].as_bool().unwrap_or(false);
            let path = ctx.resolve(shown);
            // Also kept by the registry's guard; repeated so the tool is safe on its own.
            super::guard::check_destructive(&ctx.root, &path, shown)?;
            let meta = match std::fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(super::read::not_found(&ctx.root, &ctx.cwd, shown, &path));
                }
                Err(e) => return Err(ToolError::io(format!("cannot inspect {shown}"), &e)),
            };
            if let Some(kind) = crate::files::special_kind(&meta) {
                return Err(super::guard::special_error(shown, kind));
            }
            // Removed through the descriptor of the checked parent (see `place`).
            let place = super::place::place(ctx, &path, shown, false)?;
            if !meta.is_dir() {
                place
                    .root
                    .remove(&place.rel, false)
                    .map_err(|e| ToolError::io(format!("cannot remove {shown}"), &e))?;
                return Ok(ToolOutput::text(format!("Removed {}.", ctx.display(&path))));
            }
            let mut entries =
                std::fs::read_dir(&path).map_err(|e| ToolError::io(format!("cannot list {shown}"), &e))?;
            if entries.next().is_some() && !recursive {
                return Err(ToolError::invalid(format!(
                    "{shown} is a directory that is not empty; set recursive=true to delete it and everything in it"
                )));
            }
            // Snapshot every file and directory below, deepest last, before deleting anything.
            // Special files inside are refused up front: nothing is deleted then.
            let entries = walkdir(&path)?;
            for entry in &entries {
                if let Some(kind) = std::fs::symlink_metadata(entry)
                    .ok()
                    .as_ref()
                    .and_then(crate::files::special_kind)
                {
                    return Err(super::guard::special_error(&ctx.display(entry), kind));
                }
            }
            let mut files = 0usize;
            for entry in entries {
                ctx.snapshots
                    .record_entry(&entry, ctx.op)
                    .map_err(|e| ToolError::io(format!("cannot snapshot {}", ctx.display(&entry)), &e))?;
                if !std::fs::symlink_metadata(&entry).is_ok_and(|m| m.is_dir()) {
                    files += 1;
                }
            }
            place
                .root
                .remove(&place.rel, true)
                .map_err(|e| ToolError::io(format!("cannot remove {shown}"), &e))?;
            Ok(ToolOutput::text(format!(
                "Removed directory {} ({files} files).",
                ctx.display(&path)
            )))
        })
    }
}

/// Every path below `root` (not following symlinks), parents before children.
fn walkdir(root: &std::path::Path) -> Result<Vec<std::path::PathBuf>, ToolError> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| ToolError::io(format!("cannot list {}", dir.display()), &e))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    Ok(out)
}
