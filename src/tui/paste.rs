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

/// The image file a paste names, when the whole paste is one path to an existing image file
/// (what dropping a file on a terminal, or pasting a copied file, sends): bare, quoted
/// (`'…'`, `"…"`), with shell escapes (`\ `), or a `file://` URL.
pub fn image_path(text: &str) -> Option<std::path::PathBuf> {
    let text = text.trim();
    if text.is_empty() || text.contains('\n') || text.len() > 4096 {
        return None;
    }
    let unquoted = ['\'', '"']
        .iter()
        .find_map(|q| text.strip_prefix(*q).and_then(|t| t.strip_suffix(*q)))
        .map(str::to_owned)
        .unwrap_or_else(|| unescape(text));
    let path = match unquoted.strip_prefix("file://") {
        Some(url) => percent_decode(url.strip_prefix("localhost").unwrap_or(url))?,
        None => unquoted,
    };
    let path = std::path::PathBuf::from(path);
    let is_file = std::fs::metadata(&path).is_ok_and(|m| m.is_file());
    (is_file && crate::provider::image::has_image_extension(&path)).then_some(path)
}

/// `a\ b` → `a b`: a shell-escaped path as terminals paste one.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

/// A `file://` URL's path, decoded (`%20` → space); `None` when it is not valid UTF-8.
fn percent_decode(url: &str) -> Option<String> {
    let bytes = url.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|b| char::from(*b).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pasted_image_path_is_read_in_every_form_terminals_send() {
        let dir = tempfile::tempdir().unwrap();
        let shot = dir.path().join("Screen Shot 1.png");
        std::fs::write(&shot, "png").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "text").unwrap();
        let full = shot.display().to_string();
        for pasted in [
            format!("'{full}'"),
            format!("\"{full}\"\n"),
            full.replace(' ', "\\ "),
            format!("file://{}", full.replace(' ', "%20")),
        ] {
            assert_eq!(image_path(&pasted).as_deref(), Some(shot.as_path()), "{pasted}");
        }
        let fifo = dir.path().join("pipe.png");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        assert_eq!(image_path(&fifo.display().to_string()), None, "a FIFO is never opened");
        let notes = dir.path().join("notes.txt").display().to_string();
        let gone = dir.path().join("gone.png").display().to_string();
        for pasted in [
            notes,
            gone,
            dir.path().display().to_string(),
            format!("{full}\n{full}"),
            String::new(),
        ] {
            assert_eq!(image_path(&pasted), None, "{pasted:?}");
        }
    }

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
