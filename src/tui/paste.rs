//! Pasted text: line breaks as terminals send them, and how a huge prompt shows in the
//! transcript (a summary, not megabytes drawn in full; the model still gets all of it).

use super::sanitize::sanitize;

/// Prompts above this size show as a summary in the transcript.
const SHOWN_BYTES: usize = 64 * 1024;
const SHOWN_LINES: usize = 1000;

/// CR LF and lone CR (tmux's default for pasted line breaks) become LF, before control
/// characters are stripped, so a paste keeps its lines.
pub fn line_breaks(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// How the transcript shows a prompt: sanitized, or a summary when it is huge.
pub fn shown(text: &str) -> String {
    let lines = text.lines().count();
    if text.len() <= SHOWN_BYTES && lines <= SHOWN_LINES {
        return sanitize(text);
    }
    let first: String = text.lines().next().unwrap_or("").chars().take(100).collect();
    format!(
        "{}… [{lines} lines, {} bytes in full to the model]",
        sanitize(&first),
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carriage_returns_keep_lines() {
        assert_eq!(line_breaks("a\rb\r\nc\n"), "a\nb\nc\n");
        let pasted = "line\r".repeat(120_000);
        assert_eq!(sanitize(&line_breaks(&pasted)).lines().count(), 120_000);
    }

    #[test]
    fn huge_prompts_show_as_a_summary() {
        assert_eq!(shown("small\nprompt"), "small\nprompt");
        let huge = "some text\n".repeat(200_000);
        let summary = shown(&huge);
        assert!(summary.len() < 200, "{summary}");
        assert!(summary.contains("200000 lines, 2000000 bytes"), "{summary}");
    }
}
