//! `read`: a file's lines (numbered), or a directory's listing.
//!
//! Reads line by line and stops at the page it returns, so the first page of a huge file
//! costs the same as a small file's. A PNG, JPEG, GIF or WebP file is returned as an image
//! (the model sees it; models without vision get a note), within the providers' limits.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::truncate::{MAX_BYTES, MAX_LINES, cut_line};
use super::{Params, Tool, ToolContext, ToolError, ToolOutput, str_arg};
use crate::provider::image::{self, Image};

/// Files up to this size get an exact line count in the continuation hint.
const COUNT_LINES_UP_TO: u64 = 16 * 1024 * 1024;
/// Bytes sniffed for NUL to detect binary files.
const SNIFF_BYTES: usize = 8192;
const MAX_ENTRIES: usize = 2000;
/// Lines shown from the end of a file when `start_line` is past it.
const TAIL_LINES: u64 = 50;

/// Extensions that are binary whatever their first bytes say.
const BINARY_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "tiff", "psd", "pdf", "zip", "gz", "tgz", "bz2", "xz", "zst",
    "7z", "rar", "tar", "jar", "war", "class", "exe", "dll", "so", "dylib", "o", "a", "lib", "obj", "bin", "wasm",
    "pyc", "mp3", "mp4", "wav", "ogg", "flac", "avi", "mov", "mkv", "webm", "ttf", "otf", "woff", "woff2", "eot",
    "sqlite", "db", "rlib", "dat",
];

/// The built-in `read` tool.
pub struct ReadTool;

impl Tool for ReadTool {
    fn name(&self) -> &str {
        "read"
    }

    fn rule_subject(&self) -> crate::permission::RuleSubject {
        crate::permission::RuleSubject::Path("file_path")
    }

    /// It changes nothing outside the session: offered in plan mode.
    fn reach(&self) -> crate::tool::Reach {
        crate::tool::Reach::Reads
    }

    fn description(&self) -> &str {
        "Read a text file as numbered lines (`<n>\\t<line>`), or list a directory. Returns up to 2000 lines; use start_line/end_line (1-based, inclusive) for other parts. Prefer reading the relevant range over whole large files."
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string(
                "file_path",
                "Path to the file or directory (relative to the working directory, or absolute)",
                true,
            )
            .schema(
                "start_line",
                serde_json::json!({"type": "integer", "description": "First line to show (1-based, default 1)"}),
                false,
            )
            .schema(
                "end_line",
                serde_json::json!({"type": "integer", "description": "Last line to show, inclusive"}),
                false,
            )
            .build()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let file_path = str_arg(&args, "file_path")?.to_owned();
            // Line numbers out of range are clamped with a note, not refused: a weak model
            // learns from the note and still gets lines.
            let (start, end, note) = clamp(args["start_line"].as_i64(), args["end_line"].as_i64());
            let path = ctx.resolve(&file_path);
            let buffer = editor_buffer(ctx, &path).await;
            let (root, cwd) = (ctx.root.clone(), ctx.cwd.clone());
            let (mut content, images) = tokio::task::spawn_blocking(move || {
                let source = Source {
                    root: &root,
                    cwd: &cwd,
                    shown: &file_path,
                    path: &path,
                    buffer: buffer.as_deref(),
                };
                read_path(&source, start, end)
            })
            .await
            .map_err(|e| ToolError::new("Internal", e.to_string()))??;
            if let Some(note) = note {
                content.push_str(&format!("\n({note})"));
            }
            Ok(ToolOutput {
                content,
                self_truncated: true,
                images,
                ..ToolOutput::default()
            })
        })
    }
}

/// The text of `path` as the editor has it open (unsaved changes included), when the front
/// end is an editor that offers its files and has this one open as a text file. Everything
/// else (directories, pictures, devices) is read from disk as always.
pub(crate) async fn editor_buffer(ctx: &ToolContext, path: &Path) -> Option<Vec<u8>> {
    if !ctx.agent.requests.reads_buffers() || image::has_image_extension(path) {
        return None;
    }
    let absolute = crate::tool::guard::normalize(&ctx.cwd, path);
    if !std::fs::metadata(&absolute).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let kind = crate::protocol::RequestKind::ReadBuffer {
        path: absolute.display().to_string(),
    };
    match ctx.ask(kind).await {
        crate::protocol::Response::Buffer { text } => text.map(String::into_bytes),
        _ => None,
    }
}

/// What one read reads: the path as the model gave it and resolved, and the editor's text of
/// it when the editor has it open.
struct Source<'a> {
    root: &'a Path,
    cwd: &'a Path,
    shown: &'a str,
    path: &'a Path,
    buffer: Option<&'a [u8]>,
}

/// What `@path` in a prompt attaches: the file as `read` shows it from its first line
/// (bounded the same way), or a directory's listing.
pub(crate) fn attachment_text(root: &Path, cwd: &Path, shown: &str, path: &Path) -> Result<String, ToolError> {
    let source = Source {
        root,
        cwd,
        shown,
        path,
        buffer: None,
    };
    read_path(&source, 1, None).map(|(text, _)| text)
}

/// A file's line count (the last line counts without its newline).
pub(crate) fn line_count(path: &Path) -> std::io::Result<u64> {
    count_lines(&mut crate::files::open_regular(path)?)
}

fn read_path(source: &Source<'_>, start: u64, end: Option<u64>) -> Result<(String, Vec<Image>), ToolError> {
    let Source {
        root,
        cwd,
        shown,
        path,
        buffer,
    } = *source;
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(not_found(root, cwd, shown, path));
        }
        Err(e) => return Err(ToolError::io(format!("cannot read {shown}"), &e)),
    };
    if meta.is_dir() {
        return list_dir(shown, path).map(|listing| (listing, Vec::new()));
    }
    if let Some(kind) = crate::files::special_kind(&meta) {
        return Err(super::guard::special_error(shown, kind));
    }
    let (mut reader, len): (Box<dyn BufRead>, u64) = match buffer {
        Some(text) => (Box::new(std::io::Cursor::new(text)), text.len() as u64),
        None => {
            let file =
                crate::files::open_regular(path).map_err(|e| ToolError::io(format!("cannot open {shown}"), &e))?;
            (Box::new(BufReader::with_capacity(64 * 1024, file)), meta.len())
        }
    };
    let head = reader
        .fill_buf()
        .map_err(|e| ToolError::io(format!("cannot read {shown}"), &e))?;
    if image::has_image_extension(path) || image::sniff(head).is_some() {
        let image = read_image(shown, meta.len(), reader)?;
        let content = format!(
            "{} ({}, {} bytes, attached as an image)",
            image.label(),
            image.media_type,
            meta.len()
        );
        return Ok((content, vec![image]));
    }
    if is_binary_extension(path) {
        return Err(binary(shown, meta.len()));
    }
    if content_inspector::inspect(&head[..head.len().min(SNIFF_BYTES)]).is_binary() {
        return Err(binary(shown, meta.len()));
    }
    let wanted_last = end
        .unwrap_or(start + MAX_LINES as u64 - 1)
        .min(start + MAX_LINES as u64 - 1);
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut last_shown = 0u64;
    let mut eof = false;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| ToolError::io(format!("cannot read {shown}"), &e))?;
        if n == 0 {
            eof = true;
            break;
        }
        number += 1;
        if number < start {
            continue;
        }
        if number > wanted_last {
            break;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        let entry = format!("{number}\t{}\n", cut_line(text));
        if out.len() + entry.len() > MAX_BYTES - 200 {
            break; // the byte cap: stop at a line boundary
        }
        out.push_str(&entry);
        last_shown = number;
    }
    if number == 0 {
        return Ok((format!("({shown} is empty)"), Vec::new()));
    }
    if last_shown == 0 {
        // Past the end: the file's last lines, saying so.
        let span = end.map_or(TAIL_LINES, |e| e - start + 1).min(TAIL_LINES);
        let from = number.saturating_sub(span - 1).max(1);
        let (mut out, images) = read_path(source, from, Some(number))?;
        out.push_str(&format!(
            "\n(start_line {start} is past the end of {shown}, which has {number} line{}; showing its last lines {from}-{number} instead.)",
            if number == 1 { "" } else { "s" }
        ));
        return Ok((out, images));
    }
    if eof && end.is_some_and(|e| e > number) && start > 1 {
        out.push_str(&format!(
            "\n(end_line {} is past the end of {shown}, which has {number} lines; showing lines {start}-{number}.)",
            end.unwrap_or_default()
        ));
    }
    if !eof && end.is_none_or(|e| last_shown < e) {
        let total = if len <= COUNT_LINES_UP_TO {
            let rest = count_lines(&mut reader).map_err(|e| ToolError::io(format!("cannot read {shown}"), &e))?;
            Some(number + rest)
        } else {
            None
        };
        let of = match total {
            Some(total) => format!("of {total}"),
            None => format!("of a {} MB file", len / 1_000_000),
        };
        out.push_str(&format!(
            "\n(Showing lines {start}-{last_shown} {of}. Use start_line={} to continue.)",
            last_shown + 1
        ));
    }
    Ok((out, Vec::new()))
}

/// The lines `read` shows, given what the model asked for: a start below 1 becomes 1, an end
/// below 1 is dropped, reversed numbers are swapped; each fix comes with a note.
fn clamp(start: Option<i64>, end: Option<i64>) -> (u64, Option<u64>, Option<String>) {
    let mut notes = Vec::new();
    let mut first = start.unwrap_or(1);
    if first < 1 {
        notes.push(format!(
            "start_line {first} is not a line number (lines start at 1); read from line 1"
        ));
        first = 1;
    }
    let mut last = end;
    if let Some(e) = last.filter(|e| *e < 1) {
        notes.push(format!("end_line {e} is not a line number; ignored"));
        last = None;
    }
    if let Some(e) = last.filter(|e| *e < first) {
        notes.push(format!(
            "start_line {first} and end_line {e} were reversed; showing lines {e}-{first}"
        ));
        last = Some(first);
        first = e;
    }
    let to_u64 = |n: i64| u64::try_from(n).unwrap_or(1);
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    (to_u64(first), last.map(to_u64), note)
}

fn count_lines(reader: &mut impl Read) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 256 * 1024];
    let mut count = 0u64;
    let mut last = b'\n';
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        count += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        last = buf[n - 1];
    }
    if last != b'\n' {
        count += 1;
    }
    Ok(count)
}

/// An image file, refused when over the providers' limits (never read past them).
fn read_image(shown: &str, size: u64, reader: impl Read) -> Result<Image, ToolError> {
    let mut bytes = Vec::new();
    reader
        .take(image::MAX_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io(format!("cannot read {shown}"), &e))?;
    if bytes.len() > image::MAX_BYTES {
        // The message names the real size, not the bytes read.
        let error = image::ImageError::TooLarge {
            name: shown.to_owned(),
            size: usize::try_from(size).unwrap_or(usize::MAX),
            max: image::MAX_BYTES,
        };
        return Err(ToolError::new("ImageTooLarge", error.to_string()));
    }
    Image::from_bytes(shown, &bytes).map_err(|e| {
        let kind = match e {
            image::ImageError::Unknown { .. } => "BinaryFile",
            _ => "ImageTooLarge",
        };
        ToolError::new(kind, e.to_string())
    })
}

fn binary(shown: &str, size: u64) -> ToolError {
    ToolError::new(
        "BinaryFile",
        format!("{shown} is a binary file ({size} bytes); read shows text files only"),
    )
}

/// True for file extensions that are binary formats.
pub fn is_binary_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| BINARY_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

fn list_dir(shown: &str, path: &Path) -> Result<String, ToolError> {
    let entries = std::fs::read_dir(path).map_err(|e| ToolError::io(format!("cannot list {shown}"), &e))?;
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                return None;
            }
            let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false)
                || (entry.file_type().map(|t| t.is_symlink()).unwrap_or(false) && entry.path().is_dir());
            Some(if is_dir { format!("{name}/") } else { name })
        })
        .collect();
    names.sort();
    let total = names.len();
    let mut out = format!("{shown}: {total} entries (hidden files not shown)\n");
    for name in names.iter().take(MAX_ENTRIES) {
        out.push_str(name);
        out.push('\n');
    }
    if total > MAX_ENTRIES {
        out.push_str(&format!("({} more entries not shown)\n", total - MAX_ENTRIES));
    }
    Ok(out)
}

/// A "file not found" error with up to three close names from the same directory or, failing
/// that, files of the same name elsewhere in the project (under `root`), shown relative to the
/// working directory `cwd`.
pub fn not_found(root: &Path, cwd: &Path, shown: &str, path: &Path) -> ToolError {
    let suggestions = suggest(root, cwd, path);
    let mut message = format!("File not found: {shown}");
    if !suggestions.is_empty() {
        message.push_str(&format!(". Did you mean: {}?", suggestions.join(", ")));
    }
    ToolError::not_found(message)
}

fn suggest(root: &Path, cwd: &Path, path: &Path) -> Vec<String> {
    let Some(wanted) = path.file_name().map(|n| n.to_string_lossy().to_lowercase()) else {
        return Vec::new();
    };
    let mut candidates: Vec<(usize, String)> = Vec::new();
    let shown = |p: &Path| p.strip_prefix(cwd).unwrap_or(p).display().to_string();
    // Nearest existing ancestor: typos usually sit in the last component.
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d.is_dir() {
            break;
        }
        dir = d.parent();
    }
    if let Some(dir) = dir
        && let Ok(entries) = std::fs::read_dir(dir)
    {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_lowercase();
            let distance = levenshtein(&wanted, &name);
            if distance <= (wanted.len() / 3).max(2) {
                candidates.push((distance, shown(&entry.path())));
            }
        }
    }
    if candidates.is_empty() {
        let walker = ignore::WalkBuilder::new(root).require_git(false).build();
        for entry in walker.flatten().take(20_000) {
            if entry.file_name().to_string_lossy().to_lowercase() == wanted {
                candidates.push((0, shown(entry.path())));
            }
        }
    }
    candidates.sort();
    candidates.into_iter().map(|(_, p)| p).take(3).collect()
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == *cb {
                previous
            } else {
                1 + previous.min(row[j]).min(current)
            };
            previous = current;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::levenshtein;

    #[test]
    fn edit_distance() {
        assert_eq!(levenshtein("mian.rs", "main.rs"), 2);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("same", "same"), 0);
    }
}
