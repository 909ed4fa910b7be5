//! Images the person attaches to a prompt: the files of `-i` (for the first prompt) and every
//! `@path` in the prompt's text that names an image file (`@shot.png`, relative to the
//! working directory, or absolute). A mention of a path that is not there stays plain text;
//! a file that is there but cannot be sent (not an image, over a provider limit) refuses the
//! prompt with a message that says why.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::provider::image::{self, Image, ImageError};

/// Why an attachment was refused.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error("cannot attach {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("cannot attach {path}: not a regular file")]
    NotAFile { path: String },
    #[error("cannot attach {0}")]
    Image(#[from] ImageError),
}

/// The `@path` words of `text` that name image files by their extension, as written; a
/// path with spaces is written `@"…"` (as a pasted image path is put in the composer).
pub fn mentions(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('@') {
        let starts_word = rest[..at].chars().next_back().is_none_or(char::is_whitespace);
        let after = &rest[at + 1..];
        let (path, next) = match after.strip_prefix('"').and_then(|q| q.split_once('"')) {
            Some((quoted, tail)) if starts_word && !quoted.contains('\n') => (quoted, tail),
            _ => {
                let end = after.find(char::is_whitespace).unwrap_or(after.len());
                let word = after[..end].trim_end_matches([',', '.', ';', ':', '!', '?', ')', '"', '\'']);
                (if starts_word { word } else { "" }, &after[end..])
            }
        };
        if !path.is_empty() && image::has_image_extension(Path::new(path)) {
            found.push(path);
        }
        rest = next;
    }
    found
}

/// How a path is mentioned so that [`mentions`] reads it back: `@path`, or `@"path"` when
/// it holds whitespace (`None` for a path no mention can hold: a `"` or a control character).
pub fn mention(path: &str) -> Option<String> {
    if path.contains('"') || path.contains(char::is_control) {
        return None;
    }
    Some(match path.contains(char::is_whitespace) {
        true => format!("@\"{path}\""),
        false => format!("@{path}"),
    })
}

/// The images of one prompt: `files` (`-i`, absolute) first, then the existing image files
/// `text` mentions; each file once.
pub fn gather(text: &str, files: &[PathBuf], cwd: &Path) -> Result<Vec<Image>, AttachError> {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut images = Vec::new();
    let mentioned = mentions(text).into_iter().map(|m| cwd.join(m)).filter(|p| p.exists());
    for path in files.iter().cloned().chain(mentioned) {
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        images.push(load(&path)?);
    }
    Ok(images)
}

/// One image file, named by its file name; never read past the providers' limit.
pub fn load(path: &Path) -> Result<Image, AttachError> {
    let shown = path.display().to_string();
    let io = |source| AttachError::Io {
        path: shown.clone(),
        source,
    };
    // Metadata first: a FIFO or a device is refused before anything opens it.
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(AttachError::NotAFile { path: shown });
    }
    let name = path
        .file_name()
        .map_or_else(|| shown.clone(), |n| n.to_string_lossy().into_owned());
    if meta.len() > image::MAX_BYTES as u64 {
        return Err(ImageError::TooLarge {
            name,
            size: usize::try_from(meta.len()).unwrap_or(usize::MAX),
            max: image::MAX_BYTES,
        }
        .into());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(image::MAX_BYTES as u64 + 1).read_to_end(&mut bytes))
        .map_err(io)?;
    Ok(Image::from_bytes(&name, &bytes)?)
}

/// Keeps an image the person gave without a file (the clipboard's, an editor's prompt
/// block) under brute's data directory, where commands cannot write, as
/// `pasted/{source}-{millis}-{random}.{ext}`, and returns the `@` mention that attaches it.
/// The bytes are checked first, so a file kept is one a provider takes.
pub fn keep(source: &str, bytes: &[u8]) -> Result<String, String> {
    let checked = Image::from_bytes(source, bytes).map_err(|e| e.to_string())?;
    let ext = checked.media_type.trim_start_matches("image/").replace("jpeg", "jpg");
    let data = crate::paths::data_dir().ok_or("no data directory to keep the image in")?;
    let dir = crate::paths::pasted_dir(&data);
    crate::paths::private_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let path = dir.join(format!("{source}-{stamp}-{}.{ext}", fastrand::u32(..)));
    let write = || {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(bytes)?;
        file.sync_all()
    };
    write().map_err(|e| format!("cannot save {}: {e}", path.display()))?;
    path.to_str()
        .and_then(mention)
        .ok_or_else(|| format!("{} cannot be mentioned", path.display()))
}

/// [`keep`] for an image given in base64 (an editor's or an SDK's prompt block).
pub fn keep_base64(source: &str, data: &str) -> Result<String, String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("the image is not valid base64: {e}"))?;
    keep(source, &bytes)
}

/// The prompt `text` with each image (base64) kept and mentioned after it; `notes` gets why
/// an image was refused.
pub fn with_images(mut text: String, images: &[String], source: &str, notes: &mut Vec<String>) -> String {
    for data in images {
        match keep_base64(source, data) {
            Ok(mention) => {
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&mention);
            }
            Err(why) => notes.push(format!("an image of the prompt was left out: {why}")),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_that_is_not_one_or_too_large_is_refused_before_anything_is_kept() {
        // Refused on the bytes: no data directory is looked at, nothing is written.
        let not_image = keep("editor", b"\x1b]52;c;evil\x07 not a picture").unwrap_err();
        assert!(
            not_image.contains("is not a PNG, JPEG, GIF or WebP image"),
            "{not_image}"
        );
        let mut huge = Vec::new();
        huge.extend_from_slice(&[0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n']);
        huge.extend_from_slice(&[
            0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0,
        ]);
        huge.resize(image::MAX_BYTES + 1, 0);
        let too_large = keep("editor", &huge).unwrap_err();
        assert!(too_large.contains("scale it down first"), "{too_large}");
        let not_base64 = keep_base64("editor", "%%%").unwrap_err();
        assert!(not_base64.contains("not valid base64"), "{not_base64}");
        let mut notes = Vec::new();
        let text = with_images("look".into(), &["%%%".to_owned()], "editor", &mut notes);
        assert_eq!(text, "look", "the prompt goes on without it");
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn mentions_are_image_paths_after_an_at() {
        assert_eq!(
            mentions("look at @shot.png, and @docs/a.JPG. not @notes.md nor me@x.png or @"),
            ["shot.png", "docs/a.JPG"]
        );
        assert_eq!(
            mentions(r#"see @"/tmp/Screen Shot 1.png" and @"open quote.png"#),
            ["/tmp/Screen Shot 1.png"],
            "quoted paths hold spaces; an unclosed quote is no mention"
        );
        for path in ["/tmp/Screen Shot 1.png", "plain.png"] {
            let text = format!("look {} now", mention(path).unwrap_or_default());
            assert_eq!(mentions(&text), [path]);
        }
        assert_eq!(mention("a\"b.png"), None);
        assert_eq!(
            mention("a\u{1b}]52;c;x\u{7}.png"),
            None,
            "no escape sequence reaches the composer"
        );
    }

    #[test]
    fn missing_mentions_stay_text_and_bad_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend(3u32.to_be_bytes());
        png.extend(2u32.to_be_bytes());
        std::fs::write(dir.path().join("a.png"), &png).unwrap();
        std::fs::write(dir.path().join("fake.png"), "text").unwrap();
        let images = gather(
            "@a.png @gone.png and @a.png again",
            &[dir.path().join("a.png")],
            dir.path(),
        )
        .unwrap();
        assert_eq!(images.len(), 1, "each file once");
        assert_eq!(images[0].label(), "[image: a.png, 3×2]");
        let error = gather("see @fake.png", &[], dir.path()).unwrap_err().to_string();
        assert!(
            error.contains("fake.png is not a PNG, JPEG, GIF or WebP image"),
            "{error}"
        );
        let error = gather("", &[dir.path().to_path_buf()], dir.path())
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a regular file"), "{error}");
    }
}
