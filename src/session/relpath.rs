//! Project-relative paths as checkpoints, manifests, session records and undo spell them:
//! `/`-separated, every byte of every name kept.
//!
//! Linux allows any byte but `/` and NUL in a name, so a name need not be UTF-8
//! (`precious\xff.txt`). The spelling is a `String` that round-trips every byte: what is valid
//! UTF-8 is spelled as it is, and each byte that is not is spelled as NUL followed by two hex
//! digits. A real name never holds NUL, so two different paths never share a spelling, and
//! manifests written before (all UTF-8) read unchanged. JSON carries NUL as `\u0000`.
//!
//! The spelling is compositional over `/` (a `/` never ends an invalid sequence early or joins
//! one), so `spell(dir) + "/" + spell(name)` is `spell(dir/name)` and prefix ranges over a
//! manifest keep working. People see [`shown`]: invalid bytes as `\xNN`, control characters
//! as visible stand-ins, so no name can forge a line or move the cursor.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The spelling of the relative path `rel` (see the module doc).
pub fn spell(rel: &Path) -> String {
    spell_bytes(rel.as_os_str().as_bytes())
}

/// [`spell`] for raw bytes.
pub fn spell_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for &byte in chunk.invalid() {
            out.push('\0');
            out.push(HEX[usize::from(byte >> 4)] as char);
            out.push(HEX[usize::from(byte & 0xf)] as char);
        }
    }
    out
}

/// The bytes `spelled` stands for. A NUL not followed by two hex digits (a damaged record)
/// is kept as NUL, which every file operation refuses.
pub fn bytes(spelled: &str) -> Vec<u8> {
    let raw = spelled.as_bytes();
    if !raw.contains(&0) {
        return raw.to_vec();
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(nul) = rest.iter().position(|b| *b == 0) {
        out.extend_from_slice(&rest[..nul]);
        match (rest.get(nul + 1).and_then(hex), rest.get(nul + 2).and_then(hex)) {
            (Some(high), Some(low)) => {
                out.push(high << 4 | low);
                rest = &rest[nul + 3..];
            }
            _ => {
                out.push(0);
                rest = &rest[nul + 1..];
            }
        }
    }
    out.extend_from_slice(rest);
    out
}

fn hex(digit: &u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

/// The relative path `spelled` stands for.
pub fn path(spelled: &str) -> PathBuf {
    PathBuf::from(OsString::from_vec(bytes(spelled)))
}

/// `root` joined with the relative path `spelled` stands for.
pub fn under(root: &Path, spelled: &str) -> PathBuf {
    root.join(OsStr::from_bytes(&bytes(spelled)))
}

/// `spelled` for people: bytes that are not UTF-8 as `\xNN`, control and invisible
/// characters as visible stand-ins ([`crate::sanitize::visible`], newlines included), so a
/// name cannot forge a line of a list or send an escape sequence to the terminal.
pub fn shown(spelled: &str) -> String {
    let mut text = String::with_capacity(spelled.len());
    for chunk in bytes(spelled).utf8_chunks() {
        text.push_str(chunk.valid());
        for byte in chunk.invalid() {
            text.push_str(&format!("\\x{byte:02x}"));
        }
    }
    crate::sanitize::visible(&text)
        .replace('\n', "\u{2424}")
        .replace('\t', "\u{2409}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_round_trips_and_utf8_is_spelled_as_it_is() {
        assert_eq!(spell(Path::new("src/main.rs")), "src/main.rs");
        assert_eq!(spell(Path::new("héllo/wörld")), "héllo/wörld");
        for byte in 1..=255u8 {
            if byte == b'/' {
                continue;
            }
            let name = [b'a', byte, b'z'];
            let spelled = spell_bytes(&name);
            assert_eq!(bytes(&spelled), name, "byte {byte:#x}");
        }
        let a = spell_bytes(b"precious\xff.txt");
        let b = spell_bytes(b"precious\xfe.txt");
        assert_ne!(a, b, "names that differ only in invalid bytes stay apart");
        assert_ne!(a, spell_bytes("precious\u{fffd}.txt".as_bytes()));
        assert_eq!(shown(&a), "precious\\xff.txt");
    }

    #[test]
    fn the_spelling_composes_over_slashes() {
        let dir = b"d\xc3/";
        let full = b"d\xc3/\xa9f";
        assert_eq!(
            spell_bytes(full),
            format!("{}{}", spell_bytes(dir), spell_bytes(b"\xa9f"))
        );
        assert!(spell_bytes(full).starts_with(&format!("{}/", spell_bytes(b"d\xc3"))));
    }

    #[test]
    fn a_name_cannot_forge_a_line_or_an_escape() {
        let spelled = spell_bytes(b"a\nundone: b\x1b[2J");
        let shown = shown(&spelled);
        assert!(!shown.contains('\n') && !shown.contains('\u{1b}'), "{shown}");
    }
}
