//! `@path` in a prompt attaches the file: its text, bounded as `read` bounds it (numbered
//! lines, at most 2000 of them and 50 KiB), goes into the user message after the prompt in a
//! block that names its path and line count; a directory attaches its listing. The front ends
//! show a chip for each ([`crate::protocol::Event::Attached`]), not the text; a restored
//! message is split back into its prompt and chips by [`split`].
//!
//! A mention that names nothing (an address like `me@host`, a path that does not exist) is left
//! as it is. So is a file `read` refuses (binary files); images are attached as images by
//! [`super::attach`].

use std::path::Path;

use crate::protocol::Attachment;

const OPEN: &str = "<attached path=\"";
const CLOSE: &str = "</attached>";

/// The prompt with its `@` mentions' files appended, and what was attached.
pub fn expand(prompt: &str, root: &Path, cwd: &Path) -> (String, Vec<Attachment>) {
    let mut text = prompt.to_owned();
    let mut attached: Vec<Attachment> = Vec::new();
    for mention in mentions(prompt) {
        if attached.iter().any(|a| a.path == mention) {
            continue;
        }
        let path = if Path::new(mention).is_absolute() {
            Path::new(mention).to_path_buf()
        } else {
            cwd.join(mention)
        };
        let Some((body, lines, directory)) = attachment(root, cwd, mention, &path) else {
            continue;
        };
        let what = if directory {
            "directory".to_owned()
        } else {
            format!("{lines} line{}", if lines == 1 { "" } else { "s" })
        };
        text.push_str(&format!("\n\n{OPEN}{mention}\" ({what})>\n{body}"));
        if !body.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(CLOSE);
        attached.push(Attachment {
            path: mention.to_owned(),
            lines: (!directory).then_some(lines),
        });
    }
    (text, attached)
}

/// The text `@path` attaches (as `read` shows it), its line count and whether it is a
/// directory; `None` for anything `read` refuses, and for images, which the image support
/// attaches as images ([`super::attach`]).
fn attachment(root: &Path, cwd: &Path, shown: &str, path: &Path) -> Option<(String, u64, bool)> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() && !meta.is_file() {
        return None; // FIFOs, devices: never opened
    }
    if meta.is_file() && crate::provider::image::has_image_extension(path) {
        return None;
    }
    let body = crate::tool::read::attachment_text(root, cwd, shown, path).ok()?;
    let lines = if meta.is_dir() {
        0
    } else {
        crate::tool::read::line_count(path).unwrap_or(0)
    };
    Some((body, lines, meta.is_dir()))
}

/// The `@` mentions of a prompt: `@` at the start or after white space, up to the next white
/// space, without trailing punctuation.
fn mentions(prompt: &str) -> Vec<&str> {
    prompt
        .split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        .map(|m| m.trim_end_matches([',', '.', ';', ':', ')', '?', '!', '"', '\'']))
        .filter(|m| !m.is_empty())
        .collect()
}

/// A user message split back into the prompt and what [`expand`] attached to it.
pub fn split(text: &str) -> (String, Vec<Attachment>) {
    let mut attached = Vec::new();
    let mut prompt_end = text.len();
    let mut rest = text;
    let mut offset = 0;
    while let Some(at) = rest.find(&format!("\n\n{OPEN}")) {
        let block = &rest[at + 2 + OPEN.len()..];
        let Some(quote) = block.find("\" (") else { break };
        let Some(end) = block.find(CLOSE) else { break };
        let header = &block[quote + 3..block.find(")>").unwrap_or(quote + 3)];
        let lines = header.split(' ').next().and_then(|n| n.parse().ok());
        if attached.is_empty() {
            prompt_end = offset + at;
        }
        attached.push(Attachment {
            path: block[..quote].to_owned(),
            lines,
        });
        let consumed = at + 2 + OPEN.len() + end + CLOSE.len();
        offset += consumed;
        rest = &rest[consumed..];
    }
    (text[..prompt_end].to_owned(), attached)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_files_and_directories_and_leaves_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "one\ntwo\n").unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "").unwrap();
        std::fs::write(dir.path().join("pic.png"), "x").unwrap();
        let (text, attached) = expand(
            "see @notes.txt, @src and @missing.txt or me@host @pic.png",
            dir.path(),
            dir.path(),
        );
        assert_eq!(
            attached,
            [
                Attachment {
                    path: "notes.txt".into(),
                    lines: Some(2)
                },
                Attachment {
                    path: "src".into(),
                    lines: None
                }
            ]
        );
        assert!(
            text.contains("<attached path=\"notes.txt\" (2 lines)>\n1\tone\n2\ttwo\n</attached>"),
            "{text}"
        );
        assert!(text.contains("a.rs"), "{text}");
        let (prompt, back) = split(&text);
        assert_eq!(prompt, "see @notes.txt, @src and @missing.txt or me@host @pic.png");
        assert_eq!(back, attached);
        assert_eq!(split("plain"), ("plain".to_owned(), Vec::new()));
    }
}
