//! The terminal modes the UI sets, and restoring them exactly on exit. Everything is written
//! as bytes to any `Write`, so tests parse what would reach the terminal.
//!
//! - alternate screen (`?1049`), bracketed paste (`?2004`);
//! - mouse reporting: button events (`?1000`) in SGR encoding (`?1006`), so the wheel scrolls
//!   the transcript; the terminal's own selection still works with Shift+drag; `/mouse` turns
//!   reporting off;
//! - focus reporting (`?1004`), so a turn that ends while the person looks elsewhere can call
//!   them (see [`super::notify`]);
//! - alternate scroll (`?1007`) off while brute runs: with it on, a terminal turns wheel turns
//!   into Up/Down keys, which would page through the prompt history. Its previous state is asked
//!   for (DECRQM) and put back on exit.

use std::io::Write;

/// Mouse reporting on: button presses (the wheel included) in SGR encoding.
pub const MOUSE_ON: &str = "\x1b[?1000h\x1b[?1006h";
/// Mouse reporting off.
pub const MOUSE_OFF: &str = "\x1b[?1006l\x1b[?1000l";

/// What the terminal had before brute changed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Saved {
    /// Alternate scroll (`?1007`): `Some(on)` as reported, `None` when the terminal did not say.
    pub alternate_scroll: Option<bool>,
}

/// The bytes that enter the UI's modes.
pub fn enter(out: &mut impl Write, mouse: bool) -> std::io::Result<()> {
    write!(out, "\x1b[?1049h\x1b[?2004h\x1b[?1004h\x1b[?1007l")?;
    if mouse {
        write!(out, "{MOUSE_ON}")?;
    }
    out.flush()
}

/// The bytes that put the terminal back: every mode brute set is reset, and alternate scroll
/// returns to what the terminal reported (on when it did not say: most terminals' default).
pub fn leave(out: &mut impl Write, saved: Saved) -> std::io::Result<()> {
    write!(out, "{MOUSE_OFF}\x1b[?1004l\x1b[?2004l\x1b[?1049l\x1b[?25h")?;
    write!(
        out,
        "{}",
        if saved.alternate_scroll.unwrap_or(true) {
            "\x1b[?1007h"
        } else {
            "\x1b[?1007l"
        }
    )?;
    out.flush()
}

/// The DECRQM query for `?1007`, followed by a primary device attributes request that every
/// terminal answers, so the reply's end is known without waiting for a timeout.
pub const QUERY: &str = "\x1b[?1007$p\x1b[c";

/// Reads the reply to [`QUERY`]: `CSI ? 1007 ; Ps $ y` (1 or 3 set, 2 or 4 reset).
pub fn parse_reply(reply: &[u8]) -> Option<bool> {
    let text = String::from_utf8_lossy(reply);
    let start = text.find("\x1b[?1007;")? + "\x1b[?1007;".len();
    let rest = &text[start..];
    let end = rest.find("$y")?;
    match rest[..end].trim() {
        "1" | "3" => Some(true),
        "2" | "4" => Some(false),
        _ => None,
    }
}

/// Whether `reply` holds the device attributes answer (the end of the query's replies).
pub fn reply_complete(reply: &[u8]) -> bool {
    let text = String::from_utf8_lossy(reply);
    text.match_indices("\x1b[?").any(|(i, _)| {
        let rest = &text[i + 3..];
        let body = rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b';').count();
        rest[body..].starts_with('c')
    })
}

/// Asks the terminal (in raw mode, before the input reader starts) for alternate scroll's state.
/// Gives up after `timeout` when no answer comes.
#[cfg(unix)]
pub fn query_alternate_scroll(timeout: std::time::Duration) -> Option<bool> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let mut tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    tty.write_all(QUERY.as_bytes()).ok()?;
    tty.flush().ok()?;
    let deadline = std::time::Instant::now() + timeout;
    let mut reply = Vec::new();
    let mut buf = [0u8; 256];
    while !reply_complete(&reply) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        let mut fd = libc::pollfd {
            fd: tty.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(left.as_millis()).unwrap_or(i32::MAX).max(1);
        // SAFETY: one valid pollfd for the open tty.
        if unsafe { libc::poll(&mut fd, 1, ms) } <= 0 {
            break;
        }
        match tty.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => reply.extend_from_slice(&buf[..n]),
        }
    }
    parse_reply(&reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> vt100::Parser {
        let mut parser = vt100::Parser::new(24, 80, 0);
        parser.process(bytes);
        parser
    }

    #[test]
    fn modes_are_set_and_restored() {
        let mut bytes = Vec::new();
        enter(&mut bytes, true).unwrap();
        let parser = parse(&bytes);
        let screen = parser.screen();
        assert!(screen.alternate_screen());
        assert!(screen.bracketed_paste());
        assert_eq!(screen.mouse_protocol_mode(), vt100::MouseProtocolMode::PressRelease);
        assert_eq!(screen.mouse_protocol_encoding(), vt100::MouseProtocolEncoding::Sgr);
        assert!(String::from_utf8_lossy(&bytes).contains("\x1b[?1007l"));

        let mut all = bytes.clone();
        leave(
            &mut all,
            Saved {
                alternate_scroll: Some(true),
            },
        )
        .unwrap();
        let parser = parse(&all);
        let screen = parser.screen();
        assert!(!screen.alternate_screen());
        assert!(!screen.bracketed_paste());
        assert!(!screen.hide_cursor());
        assert_eq!(screen.mouse_protocol_mode(), vt100::MouseProtocolMode::None);
        assert_eq!(screen.mouse_protocol_encoding(), vt100::MouseProtocolEncoding::Default);
        let text = String::from_utf8_lossy(&all);
        assert!(text.ends_with("\x1b[?1007h"), "alternate scroll back on: {text:?}");
        // Focus reporting (vt100 does not track it): on while the UI runs, off after.
        let focus = |t: &str| t.rfind("\x1b[?1004").map(|i| t.as_bytes()[i + 7]);
        assert_eq!(focus(&String::from_utf8_lossy(&bytes)), Some(b'h'));
        assert_eq!(focus(&text), Some(b'l'));

        let mut off = Vec::new();
        leave(
            &mut off,
            Saved {
                alternate_scroll: Some(false),
            },
        )
        .unwrap();
        assert!(String::from_utf8_lossy(&off).ends_with("\x1b[?1007l"));
    }

    #[test]
    fn without_mouse_reporting_none_is_sent() {
        let mut bytes = Vec::new();
        enter(&mut bytes, false).unwrap();
        assert_eq!(
            parse(&bytes).screen().mouse_protocol_mode(),
            vt100::MouseProtocolMode::None
        );
    }

    #[test]
    fn decrqm_replies_parse() {
        assert_eq!(parse_reply(b"\x1b[?1007;1$y\x1b[?64;1c"), Some(true));
        assert_eq!(parse_reply(b"\x1b[?1007;2$y\x1b[?62c"), Some(false));
        assert_eq!(parse_reply(b"\x1b[?1007;0$y\x1b[?62c"), None);
        assert_eq!(parse_reply(b"\x1b[?62c"), None);
        assert!(reply_complete(b"\x1b[?1007;1$y\x1b[?64;1;2c"));
        assert!(!reply_complete(b"\x1b[?1007;1$y"));
    }
}
