//! Makes untrusted text safe to draw: escape sequences (CSI, OSC, DCS, …) and other control
//! characters from files, commands, the web or the model cannot move the cursor, retitle the
//! window or touch the clipboard. Tabs become spaces; carriage returns are dropped.

/// Returns `text` without terminal control sequences or control characters (newlines kept).
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\u{1b}' => skip_escape(&mut chars),
            // C1 control introducers (CSI, OSC, DCS, …) as single code points.
            '\u{9b}' | '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars, c == '\u{9b}'),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => skip_string(chars, true),
        Some(']' | 'P' | 'X' | '^' | '_') => skip_string(chars, false),
        // Two-character escapes (ESC c, ESC 7, …) and charset selections (ESC ( B).
        Some('(' | ')' | '*' | '+' | '#' | '%') => {
            chars.next();
        }
        _ => {}
    }
}

/// Skips a CSI (ends at a final byte 0x40..=0x7e) or a string sequence (ends at BEL or ST).
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, csi: bool) {
    while let Some(c) = chars.next() {
        if csi {
            if ('\u{40}'..='\u{7e}').contains(&c) {
                return;
            }
        } else if c == '\u{7}' || c == '\u{9c}' {
            return;
        } else if c == '\u{1b}' {
            if chars.peek() == Some(&'\\') {
                chars.next();
            }
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sanitize;

    #[test]
    fn strips_sequences_keeps_text() {
        assert_eq!(sanitize("\u{1b}[31mred\u{1b}[0m plain"), "red plain");
        assert_eq!(sanitize("a\u{1b}]0;evil title\u{7}b"), "ab", "no window title");
        assert_eq!(sanitize("x\u{1b}]52;c;ZXZpbA==\u{1b}\\y"), "xy", "no clipboard writes");
        assert_eq!(sanitize("up\u{1b}[2Aleft\u{1b}[10D"), "upleft", "no cursor movement");
        assert_eq!(sanitize("tab\there\r\nnext\u{7}\u{8}"), "tab    here\nnext");
        assert_eq!(sanitize("\u{9b}31mC1\u{9d}0;t\u{7}"), "C1");
        assert_eq!(sanitize("日本語 🎉"), "日本語 🎉");
    }
}
