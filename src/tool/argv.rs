//! Splitting a line into arguments the way a POSIX shell would — without running a shell.
//!
//! Used where text from a person or the model becomes separate arguments: a custom slash
//! command's `$1..$9` and a skill script's `args`. Whitespace separates words; single quotes
//! keep everything literally; double quotes keep everything but `\"`, `\\`, `\$` and `` \` ``;
//! a backslash outside quotes escapes the next character. Nothing is expanded (no `$VAR`, no
//! globs, no `~`): what the words say is what the program gets.

/// Why a line cannot be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error("unterminated {0} quote")]
    Unterminated(&'static str),
    #[error("the line ends with a lone backslash")]
    TrailingBackslash,
}

/// Splits `line` into words (see the module docs).
pub fn split(line: &str) -> Result<Vec<String>, SplitError> {
    let mut words = Vec::new();
    let mut word = String::new();
    // A word exists once anything (even an empty pair of quotes) was seen.
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(SplitError::Unterminated("single")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            // A backslash-newline inside double quotes joins the lines.
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(SplitError::Unterminated("double")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(SplitError::Unterminated("double")),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => {
                    in_word = true;
                    word.push(c);
                }
                None => return Err(SplitError::TrailingBackslash),
            },
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(line: &str) -> Vec<String> {
        split(line).unwrap()
    }

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(ok("  a  b\tc\n"), ["a", "b", "c"]);
        assert_eq!(ok("'a b' \"c d\" e\\ f"), ["a b", "c d", "e f"]);
        assert_eq!(ok("x'y'\"z\""), ["xyz"]);
        assert_eq!(ok("'' \"\""), ["", ""]);
        assert_eq!(ok(r#""a \"q\" \$HOME \n""#), [r#"a "q" $HOME \n"#]);
        assert_eq!(ok("'no $expansion * ~'"), ["no $expansion * ~"]);
        assert_eq!(ok("$HOME *.rs ~"), ["$HOME", "*.rs", "~"]);
        assert!(ok("").is_empty());
        assert!(ok("   ").is_empty());
    }

    #[test]
    fn broken_quoting_is_an_error() {
        assert_eq!(split("'open"), Err(SplitError::Unterminated("single")));
        assert_eq!(split("\"open"), Err(SplitError::Unterminated("double")));
        assert_eq!(split("end\\"), Err(SplitError::TrailingBackslash));
    }
}
