//! Makes untrusted text safe to draw: escape sequences (CSI, OSC, DCS, …) and other control
//! characters from files, commands, the web or the model cannot move the cursor, retitle the
//! window or touch the clipboard. Tabs become spaces; carriage returns are dropped.
//!
//! Two forms: [`sanitize`] drops what it cannot draw (tool output, the model's text: colour
//! codes there are noise), [`visible`] shows it as a stand-in (`␛`, `␍`, `<U+202E>`) for text
//! a person must judge or find exactly: a command to approve, a file name in a warning. Every
//! line `brute -p` and the subcommands write to stderr goes through [`visible`] by
//! [`eprint_line`] / [`write_line`].

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

/// Returns `text` with nothing a terminal would act on, every such character shown instead
/// of dropped: ESC as `␛`, the other C0 controls and DEL as their control pictures (`␇`,
/// `␍`, `␈`, `␡`), and C1 controls, bidi overrides and isolates, zero-width and other
/// invisible format characters as `<U+XXXX>`. Newlines and tabs are kept (a tab cannot
/// overwrite anything; the UI expands it to tab stops). So `a\x1b]0;t\x07b` reads
/// `a␛]0;t␇b`: no escape sequence survives, and the person sees that there was one.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            // The control pictures block: U+2400 + the C0 code, U+2421 for DEL.
            '\u{0}'..='\u{1f}' => out.extend(char::from_u32(0x2400 + c as u32)),
            '\u{7f}' => out.push('\u{2421}'),
            c if c.is_control() || invisible(c) => out.push_str(&format!("<U+{:04X}>", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Characters that change how text around them is drawn, or draw as nothing, while a
/// terminal shows no trace of them: bidi marks, embeddings, overrides and isolates (which
/// can make a command read differently from what runs), zero-width spaces and joiners
/// that are not part of a script's spelling, the byte-order mark, line and paragraph
/// separators, the soft hyphen, interlinear annotations and tag characters (which can
/// carry hidden ASCII).
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{61c}'
            | '\u{180e}'
            | '\u{200b}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

/// Writes `line` and a newline to `out` in its [`visible`] form; a closed stream is ignored.
pub fn write_line(out: &mut impl std::io::Write, line: &str) {
    let _ = writeln!(out, "{}", visible(line));
}

/// Writes `line` to stderr in its [`visible`] form: the one way `brute -p` and the
/// subcommands print notices, warnings, errors and progress. Text there comes from file
/// names, commands, servers and the model; whatever stderr is (a terminal, a log later
/// `cat`), it must not carry escape sequences. (A source test keeps `eprintln!` out.)
pub fn eprint_line(line: &str) {
    write_line(&mut std::io::stderr().lock(), line);
}

#[cfg(test)]
mod tests {
    use super::{sanitize, visible};

    #[test]
    fn visible_shows_every_control_and_drops_none() {
        assert_eq!(
            visible("x\u{1b}]52;c;SGVsbG8=\u{7}y\u{1b}]0;pwned\u{7}\u{1b}[2J"),
            "x␛]52;c;SGVsbG8=␇y␛]0;pwned␇␛[2J"
        );
        assert_eq!(visible("a\r\nb\tc\u{8}\u{0}\u{7f}"), "a␍\nb\tc␈␀␡");
        assert_eq!(visible("\u{9b}31m\u{85}"), "<U+009B>31m<U+0085>");
        assert_eq!(
            visible("ok\u{202e}txt.exe\u{2066}\u{200b}\u{feff}\u{e0041}"),
            "ok<U+202E>txt.exe<U+2066><U+200B><U+FEFF><U+E0041>"
        );
        assert_eq!(
            visible("日本語 🎉 e\u{301} 👨\u{200d}👩"),
            "日本語 🎉 e\u{301} 👨\u{200d}👩"
        );
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            let shown = visible(&c.to_string());
            assert!(
                !shown.chars().any(|s| s.is_control() && s != '\n' && s != '\t'),
                "{c:?} -> {shown:?}"
            );
        }
    }

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

    /// Every stderr line of `brute -p` and the subcommands goes through `eprint_line` /
    /// `write_line`: no other code writes to stderr. The sandbox's init is the exception:
    /// it runs in the confined process, whose stderr is the command's (captured, never
    /// brute's terminal).
    #[test]
    fn stderr_is_written_only_through_the_visible_form() {
        fn walk(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, files);
                } else if path.extension().is_some_and(|x| x == "rs") {
                    files.push(path);
                }
            }
        }
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        walk(&src, &mut files);
        assert!(files.len() > 50, "the sources were not found in {}", src.display());
        let allowed = [src.join("sanitize.rs"), src.join("sandbox").join("init.rs")];
        let forbidden = ["eprintln!(", "eprint!(", "writeln!(err", "write!(err", "stderr().write"];
        let mut found = Vec::new();
        for file in files.iter().filter(|f| !allowed.contains(f)) {
            let text = std::fs::read_to_string(file).unwrap();
            for (n, line) in text.lines().enumerate() {
                if forbidden.iter().any(|f| line.contains(f)) {
                    found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
        assert!(
            found.is_empty(),
            "write stderr through crate::sanitize::eprint_line:\n{}",
            found.join("\n")
        );
    }
}
