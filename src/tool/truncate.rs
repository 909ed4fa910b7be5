//! Universal truncation: every tool result passes through here before it reaches the model.
//!
//! Caps: [`MAX_LINES`] lines and [`MAX_BYTES`] bytes; a single line longer than
//! [`MAX_LINE_CHARS`] characters is cut with a note. When anything is cut, the full text is
//! saved under the data directory's `tool-output/` and the result says where and how to read
//! the rest.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::Keep;

pub const MAX_LINES: usize = 2000;
pub const MAX_BYTES: usize = 51_200;
pub const MAX_LINE_CHARS: usize = 2000;
/// Saved full outputs older than this are removed.
pub const OVERFLOW_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// Cuts one line to [`MAX_LINE_CHARS`] characters, with a note saying how long it was.
pub fn cut_line(line: &str) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None => std::borrow::Cow::Borrowed(line),
        Some((cut, _)) => std::borrow::Cow::Owned(format!(
            "{}… [line truncated: {} chars]",
            &line[..cut],
            line.chars().count()
        )),
    }
}

/// The result of bounding a text.
#[derive(Debug, Clone, PartialEq)]
pub struct Bounded {
    pub text: String,
    /// Lines shown and lines in the whole text.
    pub shown: usize,
    pub total: usize,
    /// True when lines were dropped or the byte cap was hit.
    pub cut: bool,
}

/// Keeps at most [`MAX_LINES`] lines and [`MAX_BYTES`] bytes from the chosen end, cutting
/// over-long lines. Cuts are at line boundaries.
pub fn bound(content: &str, keep: Keep) -> Bounded {
    let lines: Vec<&str> = content.lines().collect();
    let total = lines.len();
    let mut kept: Vec<std::borrow::Cow<'_, str>> = Vec::new();
    let mut bytes = 0usize;
    let mut long_line_cut = false;
    let ordered: Box<dyn Iterator<Item = &&str>> = match keep {
        Keep::Head => Box::new(lines.iter()),
        Keep::Tail => Box::new(lines.iter().rev()),
    };
    for line in ordered {
        if kept.len() == MAX_LINES {
            break;
        }
        let line = cut_line(line);
        long_line_cut |= matches!(line, std::borrow::Cow::Owned(_));
        if bytes + line.len() + 1 > MAX_BYTES {
            break;
        }
        bytes += line.len() + 1;
        kept.push(line);
    }
    if keep == Keep::Tail {
        kept.reverse();
    }
    let shown = kept.len();
    let mut text = kept.join("\n");
    if content.ends_with('\n') && shown == total && !text.is_empty() {
        text.push('\n');
    }
    Bounded {
        text,
        shown,
        total,
        cut: shown < total || (long_line_cut && content.len() > MAX_BYTES),
    }
}

/// Applies the universal step: bounds `content`; when something was cut, saves the full text
/// to `overflow_dir` and appends the marker and hint. Returns the text for the model.
pub fn truncate(content: &str, keep: Keep, overflow_dir: Option<&Path>, call_id: &str) -> String {
    let needs_cut = content.len() > MAX_BYTES
        || content.lines().nth(MAX_LINES).is_some()
        || content.lines().any(|l| l.len() > MAX_LINE_CHARS);
    if !needs_cut {
        return content.to_owned();
    }
    let bounded = bound(content, keep);
    if !bounded.cut {
        return bounded.text; // only long lines were cut; each says so itself
    }
    let saved = overflow_dir.and_then(|dir| save_overflow(dir, call_id, content).ok());
    let where_ = match &saved {
        Some(path) => format!(
            " Full output saved to {}; use read with start_line/end_line on it to see the rest, or fs_search to find something in it.",
            path.display()
        ),
        None => String::new(),
    };
    let marker = match keep {
        Keep::Head => format!(
            "[Output truncated: showing {} of {} lines.{where_}]",
            bounded.shown, bounded.total
        ),
        Keep::Tail => format!(
            "[Output truncated: showing the last {} of {} lines.{where_}]",
            bounded.shown, bounded.total
        ),
    };
    match keep {
        Keep::Head => format!("{}\n\n{marker}", bounded.text.trim_end_matches('\n')),
        Keep::Tail => format!("{marker}\n\n{}", bounded.text),
    }
}

/// `name` with everything but ASCII letters, digits, `-` and `_` replaced by `_`: a call id
/// made safe for a file name in the overflow directory.
pub fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn save_overflow(dir: &Path, call_id: &str, content: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let safe = file_safe(call_id);
    let stamp = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let path = dir.join(format!("{stamp}-{safe}.txt"));
    std::io::Write::write_all(&mut crate::paths::private_file(&path)?, content.as_bytes())?;
    Ok(path)
}

/// Removes saved outputs older than [`OVERFLOW_MAX_AGE`]; errors are ignored (best effort).
pub fn clean_overflow(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age > OVERFLOW_MAX_AGE);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_passes_through() {
        assert_eq!(truncate("a\nb\n", Keep::Head, None, "c"), "a\nb\n");
    }

    #[test]
    fn head_keeps_first_lines_and_saves_full_text() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
        let out = truncate(&text, Keep::Head, Some(dir.path()), "call/1");
        assert!(out.starts_with("line 1\nline 2\n"));
        assert!(out.contains("[Output truncated: showing 2000 of 5000 lines."));
        assert!(out.contains("start_line/end_line"));
        let saved: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(saved.len(), 1);
        let path = saved[0].as_ref().unwrap().path();
        assert_eq!(std::fs::read_to_string(path).unwrap(), text);
    }

    #[test]
    fn tail_keeps_the_end_under_the_byte_cap() {
        let text: String = (1..=3000).map(|i| format!("{i:0>60}\n")).collect();
        let out = truncate(&text, Keep::Tail, None, "c");
        assert!(out.starts_with("[Output truncated: showing the last"));
        assert!(out.trim_end().ends_with(&format!("{:0>60}", 3000)));
        assert!(out.len() <= MAX_BYTES + 300);
        assert!(!out.contains(&format!("{:0>60}\n", 1)));
    }

    #[test]
    fn byte_cap_cuts_at_line_boundary() {
        let text: String = (0..1000).map(|_| format!("{}\n", "x".repeat(100))).collect();
        let b = bound(&text, Keep::Head);
        assert!(b.text.len() <= MAX_BYTES);
        assert!(b.text.lines().all(|l| l.len() == 100));
        assert!(b.cut);
    }

    #[test]
    fn long_line_is_cut_with_note() {
        let line = "é".repeat(2500);
        let out = cut_line(&line);
        assert!(out.ends_with("[line truncated: 2500 chars]"));
        assert_eq!(out.chars().filter(|c| *c == 'é').count(), MAX_LINE_CHARS);
    }
}
