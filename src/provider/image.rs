//! Images in the conversation: what one is (its bytes, base64, and what the person is shown),
//! how brute tells one from its first bytes (PNG, JPEG, GIF, WebP; dimensions from the
//! header, no decoding), and the limits the providers document.
//!
//! One set of limits holds for every provider, the strictest documented: Anthropic refuses an
//! image whose base64 form is over 5 MiB ("image exceeds 5 MB maximum") or a side over 8000
//! pixels; OpenAI takes PNG, JPEG, WebP and non-animated GIF. An image over a limit is refused
//! with a message naming it; nothing is scaled (that would need an image codec in the build).

use std::borrow::Cow;

use base64::Engine;
use serde::{Deserialize, Serialize};

use super::Message;

/// The largest base64 form of one image any provider takes (Anthropic: 5 MiB).
pub const MAX_BASE64_BYTES: usize = 5 * 1024 * 1024;
/// The largest file that stays under [`MAX_BASE64_BYTES`] once encoded.
pub const MAX_BYTES: usize = MAX_BASE64_BYTES / 4 * 3;
/// The longest side any provider takes (Anthropic: 8000 pixels).
pub const MAX_SIDE: u32 = 8000;

/// An image sent to the model: a name for people, its media type, its size in pixels and
/// its bytes in base64 (as every wire format wants them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// Where it came from (a file name or an MCP tool's name), for people.
    pub name: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    pub width: u32,
    pub height: u32,
    /// The file's bytes, base64 (standard alphabet, padded).
    pub data: String,
}

/// Why bytes are not an image brute can send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    #[error("{name} is not a PNG, JPEG, GIF or WebP image (or its header is damaged)")]
    Unknown { name: String },
    #[error(
        "{name} is {size} bytes; providers take images up to {max} bytes ({} MiB once base64-encoded): scale it down first",
        MAX_BASE64_BYTES / 1024 / 1024
    )]
    TooLarge { name: String, size: usize, max: usize },
    #[error("{name} is {width}×{height} pixels; providers take images up to {max}×{max}: scale it down first")]
    TooWide {
        name: String,
        width: u32,
        height: u32,
        max: u32,
    },
    #[error("{name}: the image data is not valid base64: {reason}")]
    Base64 { name: String, reason: String },
}

/// The media type and size of an image, read from its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub media_type: &'static str,
    pub width: u32,
    pub height: u32,
}

impl Image {
    /// The image in `bytes`, checked against the providers' limits.
    pub fn from_bytes(name: &str, bytes: &[u8]) -> Result<Self, ImageError> {
        let header = sniff(bytes).ok_or_else(|| ImageError::Unknown { name: name.to_owned() })?;
        if bytes.len() > MAX_BYTES {
            return Err(ImageError::TooLarge {
                name: name.to_owned(),
                size: bytes.len(),
                max: MAX_BYTES,
            });
        }
        if header.width > MAX_SIDE || header.height > MAX_SIDE {
            return Err(ImageError::TooWide {
                name: name.to_owned(),
                width: header.width,
                height: header.height,
                max: MAX_SIDE,
            });
        }
        Ok(Self {
            name: name.to_owned(),
            media_type: header.media_type.to_owned(),
            width: header.width,
            height: header.height,
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        })
    }

    /// An image given in base64 (an MCP tool's image content), checked like a file's.
    pub fn from_base64(name: &str, data: &str) -> Result<Self, ImageError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| ImageError::Base64 {
                name: name.to_owned(),
                reason: e.to_string(),
            })?;
        Self::from_bytes(name, &bytes)
    }

    /// The `data:` URL OpenAI's formats take.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data)
    }

    /// How people (and models without vision) see it: `[image: shot.png, 640×480]`.
    pub fn label(&self) -> String {
        format!("[image: {}, {}×{}]", self.name, self.width, self.height)
    }
}

/// Whether a path names an image by its extension (what `read` and `@path` look at first;
/// the bytes decide).
pub fn has_image_extension(path: &std::path::Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["png", "jpg", "jpeg", "gif", "webp"].contains(&e.to_ascii_lowercase().as_str()))
}

/// The media type and dimensions from an image's first bytes; `None` for anything else.
pub fn sniff(bytes: &[u8]) -> Option<Header> {
    let be16 = |at: usize| {
        bytes
            .get(at..at + 2)
            .map(|b| u32::from(u16::from_be_bytes([b[0], b[1]])))
    };
    let le16 = |at: usize| {
        bytes
            .get(at..at + 2)
            .map(|b| u32::from(u16::from_le_bytes([b[0], b[1]])))
    };
    let be32 = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let le24 = |at: usize| bytes.get(at..at + 3).map(|b| u32::from_le_bytes([b[0], b[1], b[2], 0]));
    let header = |media_type, width: Option<u32>, height: Option<u32>| {
        Some(Header {
            media_type,
            width: width?,
            height: height?,
        })
        .filter(|h| h.width > 0 && h.height > 0)
    };
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.get(12..16) == Some(b"IHDR") {
        return header("image/png", be32(16), be32(20));
    }
    if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        return header("image/gif", le16(6), le16(8));
    }
    if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        return match bytes.get(12..16)? {
            b"VP8 " if bytes.get(23..26) == Some(&[0x9d, 0x01, 0x2a]) => {
                header("image/webp", le16(26).map(|w| w & 0x3fff), le16(28).map(|h| h & 0x3fff))
            }
            b"VP8L" if bytes.get(20) == Some(&0x2f) => {
                let bits = bytes
                    .get(21..25)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))?;
                header(
                    "image/webp",
                    Some((bits & 0x3fff) + 1),
                    Some(((bits >> 14) & 0x3fff) + 1),
                )
            }
            b"VP8X" => header("image/webp", le24(24).map(|w| w + 1), le24(27).map(|h| h + 1)),
            _ => None,
        };
    }
    if bytes.starts_with(&[0xff, 0xd8]) {
        // Walk the segments to the first start-of-frame marker, which holds the size.
        let mut at = 2;
        while let (Some(&0xff), Some(&marker)) = (bytes.get(at), bytes.get(at + 1)) {
            if marker == 0xff {
                at += 1; // fill byte
                continue;
            }
            if matches!(marker, 0xd0..=0xd9 | 0x01) {
                at += 2; // markers without a length
                continue;
            }
            let length = be16(at + 2)? as usize;
            let frame = matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc);
            if frame {
                return header("image/jpeg", be16(at + 7), be16(at + 5));
            }
            at += 2 + length;
        }
        return None;
    }
    None
}

/// The conversation as a model without vision gets it: each image replaced by a note saying
/// what it was and that it was not sent. Borrowed when there is nothing to replace.
pub fn without_images<'a>(messages: &'a [Message], model: &str) -> Cow<'a, [Message]> {
    let has_images = messages.iter().any(|m| !m.images().is_empty());
    if !has_images {
        return Cow::Borrowed(messages);
    }
    let note = |images: &[Image]| {
        images
            .iter()
            .map(|image| {
                format!(
                    "{} (not sent: the model {model} is not known to accept images; set `vision = true` under [models.\"{model}\"] in config.toml if it does)",
                    image.label()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let join = |text: &str, extra: String| match text.is_empty() {
        true => extra,
        false => format!("{text}\n{extra}"),
    };
    Cow::Owned(
        messages
            .iter()
            .map(|message| match message {
                Message::User { text, images } if !images.is_empty() => Message::User {
                    text: join(text, note(images)),
                    images: Vec::new(),
                },
                Message::Tool {
                    call_id,
                    name,
                    content,
                    is_error,
                    images,
                } if !images.is_empty() => Message::Tool {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    content: join(content, note(images)),
                    is_error: *is_error,
                    images: Vec::new(),
                },
                other => other.clone(),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PNG header of the given size (no pixel data: only the header is read).
    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        bytes.extend(width.to_be_bytes());
        bytes.extend(height.to_be_bytes());
        bytes.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
        bytes
    }

    #[test]
    fn headers_give_type_and_size() {
        assert_eq!(
            sniff(&png(640, 480)),
            Some(Header {
                media_type: "image/png",
                width: 640,
                height: 480
            })
        );
        let gif = b"GIF89a\x20\x03\x58\x02\0\0\0";
        assert_eq!(
            sniff(gif).map(|h| (h.media_type, h.width, h.height)),
            Some(("image/gif", 800, 600))
        );
        // JPEG: SOI, an APP0 segment, then SOF0 (precision, height, width).
        let jpeg = [
            0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x4a, 0x46, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0xe0, 0x02, 0x80,
        ];
        assert_eq!(
            sniff(&jpeg).map(|h| (h.media_type, h.width, h.height)),
            Some(("image/jpeg", 640, 480))
        );
        let mut vp8x = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
        vp8x.extend([0x7f, 0x02, 0x00, 0xdf, 0x01, 0x00]);
        assert_eq!(sniff(&vp8x).map(|h| (h.width, h.height)), Some((640, 480)));
        let mut vp8l = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        let bits: u32 = 639 | (479 << 14);
        vp8l.extend(bits.to_le_bytes());
        assert_eq!(sniff(&vp8l).map(|h| (h.width, h.height)), Some((640, 480)));
        assert_eq!(sniff(b"not an image"), None);
        assert_eq!(sniff(&png(0, 1)), None, "a zero side is a damaged header");
    }

    #[test]
    fn limits_are_named() {
        let wide = Image::from_bytes("wide.png", &png(9000, 10)).unwrap_err();
        assert!(wide.to_string().contains("9000×10") && wide.to_string().contains("8000×8000"));
        let mut big = png(10, 10);
        big.resize(MAX_BYTES + 1, 0);
        let large = Image::from_bytes("big.png", &big).unwrap_err().to_string();
        assert!(
            large.contains("5 MiB") && large.contains(&MAX_BYTES.to_string()),
            "{large}"
        );
        let ok = Image::from_bytes("a.png", &png(2, 3)).unwrap();
        assert_eq!(ok.label(), "[image: a.png, 2×3]");
        assert_eq!(Image::from_base64("a.png", &ok.data), Ok(ok));
    }
}
