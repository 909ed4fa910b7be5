//! Ctrl-G: the composer's text in the person's own editor (`$VISUAL`, `$EDITOR`, else `vi`),
//! read back when it exits. The caller leaves the alternate screen and raw mode first. The
//! editor is the person's tool, run as they would run it, not one of the model's commands, so
//! it is not sandboxed.

use std::io::Write;
use std::process::Command;

/// The editor command line: `$VISUAL`, else `$EDITOR`, else `vi`.
pub fn command() -> String {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.trim().is_empty())
        .unwrap_or_else(|| "vi".to_owned())
}

/// Runs the editor on `text` in a private temporary file; the edited text, or why not.
pub fn edit(text: &str) -> Result<String, String> {
    edit_with(&command(), text)
}

/// Runs `editor` (a shell command line: `code --wait` works) on `text`.
pub fn edit_with(editor: &str, text: &str) -> Result<String, String> {
    let mut file = tempfile::Builder::new()
        .prefix("brute-prompt-")
        .suffix(".md")
        .tempfile()
        .map_err(|e| format!("no temporary file: {e}"))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| format!("writing the temporary file: {e}"))?;
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("brute-editor")
        .arg(file.path())
        .status()
        .map_err(|e| format!("could not start {editor}: {e}"))?;
    if !status.success() {
        return Err(format!("{editor} exited with {status}; the message is unchanged"));
    }
    std::fs::read_to_string(file.path()).map_err(|e| format!("reading the edited text: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edited_file_is_read_back() {
        let edited = edit_with("sed -i 's/draft/final/'", "a draft\nsecond line").unwrap();
        assert_eq!(edited, "a final\nsecond line");
        let failed = edit_with("false", "kept").unwrap_err();
        assert!(failed.contains("unchanged"), "{failed}");
    }
}
