//! `patch`: literal find-and-replace in one file, atomic, snapshotted, line endings kept.

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::write::unified_diff;
use super::{Params, Tool, ToolContext, ToolError, ToolOutput, str_arg};

/// The built-in `patch` tool.
pub struct PatchTool;

impl Tool for PatchTool {
    fn name(&self) -> &str {
        "patch"
    }

    fn rule_subject(&self) -> crate::permission::RuleSubject {
        crate::permission::RuleSubject::Path("file_path")
    }

    fn description(&self) -> &str {
        "Replace an exact, literal string in a file (no regex). old_string must match the file exactly, including indentation, and be unique unless replace_all is true; include surrounding lines to make it unique. Returns a diff."
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string("file_path", "Path of the file to edit", true)
            .string("old_string", "The exact text to replace", true)
            .string("new_string", "The replacement text", true)
            .boolean("replace_all", "Replace every occurrence (default false)", false)
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
            let old_string = str_arg(&args, "old_string")?;
            let new_string = str_arg(&args, "new_string")?;
            let replace_all = args["replace_all"].as_bool().unwrap_or(false);
            if old_string.is_empty() {
                return Err(ToolError::invalid(
                    "old_string is empty; use `write` to create or fill a file",
                ));
            }
            if old_string == new_string {
                return Err(ToolError::invalid(
                    "old_string and new_string are identical; nothing to change",
                ));
            }
            let path = ctx.resolve(shown);
            super::guard::refuse_special(&path, shown)?;
            // Read and written through the descriptor of the checked parent (see `place`).
            let place = super::place::place(ctx, &path, shown, true)?;
            // The editor's text of it, unsaved changes included, is what the model read.
            let buffer = super::read::editor_buffer(ctx, &path).await;
            let bytes =
                match buffer.map_or_else(|| place.root.read_bounded(&place.rel, crate::files::MAX_FILE_BYTES), Ok) {
                    Ok(bytes) => bytes,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Err(super::read::not_found(&ctx.root, &ctx.cwd, shown, &path));
                    }
                    Err(e) => return Err(ToolError::io(format!("cannot read {shown}"), &e)),
                };
            let text = String::from_utf8(bytes).map_err(|_| {
                ToolError::new(
                    "BinaryFile",
                    format!("{shown} is not UTF-8 text; patch edits text files only"),
                )
            })?;
            let (old, new) = match_line_endings(&text, old_string, new_string);
            let count = text.matches(old.as_str()).count();
            if count == 0 {
                return Err(ToolError::new(
                    "NoMatch",
                    format!(
                        "old_string was not found in {shown}. Read the file and copy the text exactly, including whitespace"
                    ),
                ));
            }
            if count > 1 && !replace_all {
                return Err(ToolError::new(
                    "AmbiguousMatch",
                    format!(
                        "old_string occurs {count} times in {shown}; add more surrounding context to make it unique, or set replace_all to true"
                    ),
                ));
            }
            let updated = if replace_all {
                text.replace(old.as_str(), &new)
            } else {
                text.replacen(old.as_str(), &new, 1)
            };
            place
                .store(ctx, updated.as_bytes(), true)
                .await
                .map_err(|e| ToolError::io(format!("cannot write {shown}"), &e))?;
            let shown = ctx.display(&path);
            let diff = unified_diff(&shown, &text, &updated);
            let noun = if count == 1 { "occurrence" } else { "occurrences" };
            Ok(ToolOutput::text(format!(
                "Replaced {count} {noun} in {shown}.\n\n{diff}"
            )))
        })
    }
}

/// In a CRLF file, `\n` in the strings the model sent (which almost always uses `\n`) is
/// taken to mean the file's `\r\n`, so matching works and the file keeps its line endings.
fn match_line_endings(text: &str, old: &str, new: &str) -> (String, String) {
    let crlf = text.contains("\r\n");
    if crlf && !old.contains('\r') && old.contains('\n') && !text.contains(old) {
        (
            old.replace('\n', "\r\n"),
            new.replace("\r\n", "\n").replace('\n', "\r\n"),
        )
    } else if crlf && !new.contains('\r') && new.contains('\n') {
        (old.to_owned(), new.replace('\n', "\r\n"))
    } else {
        (old.to_owned(), new.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::match_line_endings;

    #[test]
    fn crlf_files_keep_crlf() {
        let (old, new) = match_line_endings("a\r\nb\r\n", "a\nb", "x\ny");
        assert_eq!(old, "a\r\nb");
        assert_eq!(new, "x\r\ny");
    }

    #[test]
    fn lf_files_are_untouched() {
        let (old, new) = match_line_endings("a\nb\n", "a\nb", "x\ny");
        assert_eq!((old.as_str(), new.as_str()), ("a\nb", "x\ny"));
    }
}
