//! The UI's use of [`crate::sanitize`] (shared with `brute -p`, which needs it without the
//! terminal crates).

pub use crate::sanitize::sanitize;

/// Like [`sanitize`], but keeps tabs: for tool output drawn through `wrap`, which expands
/// them to tab stops so numbered `read` lines (`<n>\t<line>`) keep their columns. Each piece
/// between tabs is sanitized on its own, so a tab can only end an escape sequence early
/// (its rest shows as text), never let one through.
pub fn sanitize_keep_tabs(text: &str) -> String {
    text.split('\t').map(sanitize).collect::<Vec<_>>().join("\t")
}

#[cfg(test)]
mod tests {
    use super::sanitize_keep_tabs;

    #[test]
    fn tabs_stay_and_escapes_go() {
        assert_eq!(
            sanitize_keep_tabs("1\tfn\u{1b}[31m main\t\u{1b}]0;x\u{7}ok"),
            "1\tfn main\tok"
        );
        assert_eq!(sanitize_keep_tabs("\u{1b}]0;a\tb\u{7}c"), "\tbc");
    }
}
