//! Where `/copy` puts text: the system clipboard where there is one (`arboard`, with the
//! `clipboard` feature), else the terminal's through OSC 52 (which works over SSH, if the
//! terminal allows it). Ctrl-V reads an image from the system clipboard (see
//! [`super::clipboard_image`]). Behind a trait so tests check the message and the fallback without a
//! display; the message says which way was used and never claims a copy that did not happen.

use std::io::Write;

/// How text reached a clipboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copied {
    /// The system clipboard (X11/Wayland through arboard).
    System,
    /// An OSC 52 sequence sent to the terminal, which may or may not honour it.
    Osc52,
}

/// Reads the clipboard's image where it is run: the UI runs it off its own thread, since a
/// clipboard's owner may take seconds to answer, or never answer.
pub type ImageRead = Box<dyn FnOnce() -> Result<Vec<u8>, String> + Send>;

/// A place to copy text to, and to paste an image from.
pub trait Clipboard {
    /// Copies `text`; the error says why nothing could be copied.
    fn copy(&mut self, text: &str) -> Result<Copied, String>;
    /// What reads the PNG image the clipboard holds (Ctrl-V); its error says why there is
    /// none.
    fn image(&self) -> ImageRead;
}

/// What `/copy` tells the person.
pub fn message(result: &Result<Copied, String>, what: &str) -> String {
    match result {
        Ok(Copied::System) => format!("copied {what} to the system clipboard"),
        Ok(Copied::Osc52) => format!(
            "sent {what} to the terminal's clipboard (OSC 52; no system clipboard here) — pasting works if your terminal allows OSC 52"
        ),
        Err(why) => format!("could not copy {what}: {why}"),
    }
}

/// The system clipboard, else OSC 52 to `out` when it is a terminal.
pub struct SystemOrOsc52<W: Write> {
    out: W,
    is_terminal: bool,
    /// Whether the system clipboard is asked (a display is named, and not in tests).
    read_system: bool,
    #[cfg(feature = "clipboard")]
    system: Option<arboard::Clipboard>,
}

impl<W: Write> SystemOrOsc52<W> {
    /// `system`: whether to try the system clipboard (off in tests and without a display).
    pub fn new(out: W, is_terminal: bool, system: bool) -> Self {
        Self {
            out,
            is_terminal,
            read_system: system,
            // Kept for the session: on X11 the owner must live for the text to stay pasteable.
            #[cfg(feature = "clipboard")]
            system: if system { arboard::Clipboard::new().ok() } else { None },
        }
    }

    /// The terminal's output, for tests.
    pub fn output(&self) -> &W {
        &self.out
    }
}

impl<W: Write> Clipboard for SystemOrOsc52<W> {
    fn copy(&mut self, text: &str) -> Result<Copied, String> {
        #[cfg(feature = "clipboard")]
        if let Some(system) = &mut self.system
            && system.set_text(text).is_ok()
        {
            return Ok(Copied::System);
        }
        if !self.is_terminal {
            return Err("no system clipboard, and the output is not a terminal".to_owned());
        }
        write!(self.out, "\u{1b}]52;c;{}\u{7}", base64(text.as_bytes()))
            .and_then(|()| self.out.flush())
            .map_err(|e| format!("writing to the terminal failed: {e}"))?;
        Ok(Copied::Osc52)
    }

    fn image(&self) -> ImageRead {
        match self.read_system {
            true => Box::new(super::clipboard_image::read_png),
            false => Box::new(|| Err("no system clipboard here (no Wayland or X11 display)".to_owned())),
        }
    }
}

/// Runs `read` and keeps the image it returns (see [`crate::agent::attach::keep`]): the mention
/// that attaches it, or why there is none. A read that panics is an error too: the app waits
/// for one outcome per Ctrl-V.
pub fn read_and_keep(read: ImageRead) -> Result<String, String> {
    let keep = || read().and_then(|png| crate::agent::attach::keep("clipboard", &png));
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(keep))
        .unwrap_or_else(|_| Err("reading the clipboard failed".to_owned()))
}

/// Whether a system clipboard can be expected (a display server is named).
pub fn has_display() -> bool {
    std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty())
        || std::env::var_os("WAYLAND_DISPLAY").is_some_and(|d| !d.is_empty())
}

fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(TABLE[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_that_panics_is_an_outcome_too() {
        let read: ImageRead = Box::new(|| panic!("a clipboard library's bug"));
        assert_eq!(read_and_keep(read), Err("reading the clipboard failed".to_owned()));
        let read: ImageRead = Box::new(|| Err("the clipboard holds no image".to_owned()));
        assert_eq!(read_and_keep(read), Err("the clipboard holds no image".to_owned()));
    }

    #[test]
    fn base64_encodes() {
        assert_eq!(base64(b"hello"), "aGVsbG8=");
        assert_eq!(base64(b"hi!"), "aGkh");
        assert_eq!(base64(b""), "");
    }

    #[test]
    fn falls_back_to_osc52_and_says_so() {
        let mut clipboard = SystemOrOsc52::new(Vec::new(), true, false);
        let result = clipboard.copy("hello");
        assert_eq!(result, Ok(Copied::Osc52));
        assert_eq!(clipboard.output().as_slice(), b"\x1b]52;c;aGVsbG8=\x07");
        assert!(message(&result, "the last answer").contains("OSC 52"));
        assert!(!message(&result, "the last answer").starts_with("copied"));
    }

    #[test]
    fn never_claims_a_copy_without_a_terminal_or_clipboard() {
        let mut clipboard = SystemOrOsc52::new(Vec::new(), false, false);
        let result = clipboard.copy("hello");
        assert!(result.is_err());
        assert!(clipboard.output().is_empty());
        assert!(message(&result, "the last answer").starts_with("could not copy"));
    }
}
