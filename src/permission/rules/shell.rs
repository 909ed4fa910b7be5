//! Splitting a shell command line into its simple commands ("parts"): separators, quotes,
//! substitutions, groups, keywords and leading environment assignments (see the module docs).

/// Variables an allow rule may look past in `NAME=value cmd`: they only tune logging, colour
/// and test threads, and cannot make a command load or run other code.
pub const SAFE_ENV: &[&str] = &[
    "RUST_LOG",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
    "RUST_TEST_THREADS",
    "CARGO_TERM_COLOR",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
];

/// Reserved words dropped from the start of a part, so the command they guard is judged.
const KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done", "while", "until",
];

/// Deeper nesting of `$(…)`, backticks or groups than this makes a line unreadable (and so
/// never allowed), instead of risking the stack.
pub(super) const MAX_DEPTH: usize = 64;

/// A shell line split into its simple commands.
#[derive(Debug, Default)]
pub(super) struct Split {
    /// In reading order.
    pub(super) parts: Vec<Part>,
    /// False when the line could not be read to its end (an unclosed quote, `$(` or
    /// backtick, a stray `)`, nesting beyond [`MAX_DEPTH`]): no allow pattern applies then.
    pub(super) complete: bool,
}

/// One simple command of a shell line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Part {
    /// Where it starts in the line (approximate inside backticks), to keep reading order.
    pub(super) start: usize,
    /// As written, leading keywords dropped, blanks collapsed, trimmed.
    pub(super) text: String,
    /// Byte offset in `text` where the command begins after leading `NAME=value` words.
    pub(super) command_at: usize,
    /// Every leading assignment sets a variable in [`SAFE_ENV`].
    pub(super) env_safe: bool,
}

impl Part {
    /// The text without leading assignments.
    pub(super) fn command(&self) -> &str {
        &self.text[self.command_at..]
    }
}

/// Splits a shell line into parts (see the module docs).
pub(super) fn split_command(line: &str) -> Split {
    let mut lexer = Lexer {
        chars: line.chars().collect(),
        pos: 0,
        base: 0,
        depth: 0,
        parts: Vec::new(),
        complete: true,
    };
    lexer.list(false);
    let mut parts = lexer.parts;
    parts.sort_by_key(|part| part.start);
    Split {
        parts,
        complete: lexer.complete,
    }
}

/// Collects one part while the lexer reads it.
#[derive(Default)]
struct Builder {
    start: Option<usize>,
    text: String,
    /// Byte ranges of the finished top-level words in `text`.
    words: Vec<(usize, usize)>,
    word_start: Option<usize>,
    /// Blanks were read since the last word: one space goes before the next.
    pending_blank: bool,
}

impl Builder {
    fn push(&mut self, at: usize, piece: &str) {
        if piece.is_empty() {
            return;
        }
        self.start.get_or_insert(at);
        if self.pending_blank && !self.text.is_empty() {
            self.text.push(' ');
        }
        self.pending_blank = false;
        if self.word_start.is_none() {
            self.word_start = Some(self.text.len());
        }
        self.text.push_str(piece);
    }

    fn blank(&mut self) {
        self.end_word();
        self.pending_blank = true;
    }

    fn end_word(&mut self) {
        if let Some(start) = self.word_start.take() {
            self.words.push((start, self.text.len()));
        }
    }

    /// The character just before the next one, a blank counting as a space.
    fn last(&self) -> Option<char> {
        if self.pending_blank {
            Some(' ')
        } else {
            self.text.chars().last()
        }
    }

    /// Whether a `(` here opens a group: no word yet but keywords.
    fn at_command_start(&self) -> bool {
        self.word_start.is_none() && self.words.iter().all(|&(s, e)| KEYWORDS.contains(&&self.text[s..e]))
    }

    fn finish(mut self, base: usize) -> Option<Part> {
        self.end_word();
        let word = |i: usize| {
            let (s, e) = self.words[i];
            &self.text[s..e]
        };
        let mut first = 0;
        while first < self.words.len() && KEYWORDS.contains(&word(first)) {
            first += 1;
        }
        if first == self.words.len() {
            return None;
        }
        let mut command = first;
        let mut env_safe = true;
        while command < self.words.len() {
            let Some(name) = assigned_name(word(command)) else {
                break;
            };
            env_safe &= SAFE_ENV.contains(&name);
            command += 1;
        }
        let begin = self.words[first].0;
        let command_at = match self.words.get(command) {
            Some(&(s, _)) => s - begin,
            None => self.text.len() - begin,
        };
        Some(Part {
            start: base + self.start.unwrap_or(0),
            text: self.text[begin..].to_owned(),
            command_at,
            env_safe,
        })
    }
}

/// The variable a `NAME=value` (or `NAME+=value`) word sets.
fn assigned_name(word: &str) -> Option<&str> {
    let (name, _) = word.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}

/// A small shell lexer: just enough to find every simple command a line runs.
struct Lexer {
    chars: Vec<char>,
    pos: usize,
    /// Offset of `chars` in the outermost line (for the text inside backticks).
    base: usize,
    depth: usize,
    parts: Vec<Part>,
    complete: bool,
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn finish(&mut self, builder: Builder) {
        if let Some(part) = builder.finish(self.base) {
            self.parts.push(part);
        }
    }

    /// Reads commands to the end, or (when `closing`) to the `)` that ends a group or
    /// substitution, which it consumes.
    fn list(&mut self, closing: bool) {
        let mut cur = Builder::default();
        while let Some(c) = self.peek(0) {
            let next = self.peek(1);
            match c {
                ')' => {
                    self.pos += 1;
                    self.finish(std::mem::take(&mut cur));
                    if closing {
                        return;
                    }
                    self.complete = false;
                }
                ';' | '\n' => {
                    self.pos += 1;
                    self.finish(std::mem::take(&mut cur));
                }
                '&' if next == Some('>') || matches!(cur.last(), Some('>' | '<')) => {
                    cur.push(self.pos, "&");
                    self.pos += 1;
                }
                '|' if cur.last() == Some('>') => {
                    cur.push(self.pos, "|");
                    self.pos += 1;
                }
                '&' | '|' => {
                    let doubled = matches!((c, next), ('&', Some('&')) | ('|', Some('|' | '&')));
                    self.pos += if doubled { 2 } else { 1 };
                    self.finish(std::mem::take(&mut cur));
                }
                '(' if cur.at_command_start() => {
                    self.pos += 1;
                    self.finish(std::mem::take(&mut cur));
                    self.nested();
                }
                ' ' | '\t' | '\r' => {
                    self.pos += 1;
                    cur.blank();
                }
                _ => {
                    let at = self.pos;
                    let piece = self.word_piece();
                    cur.push(at, &piece);
                }
            }
        }
        if closing {
            self.complete = false;
        }
        self.finish(cur);
    }

    /// Reads one piece of a word (a character, an escape, a quoted string or a
    /// substitution) and returns it as written.
    fn word_piece(&mut self) -> String {
        let start = self.pos;
        match (self.peek(0), self.peek(1)) {
            (Some('\\'), Some('\n')) => {
                self.pos += 2;
                return String::new();
            }
            (Some('\\'), _) => self.pos += 2,
            (Some('\''), _) => {
                self.pos += 1;
                self.single_quoted(false);
            }
            (Some('$'), Some('\'')) => {
                self.pos += 2;
                self.single_quoted(true);
            }
            (Some('"'), _) => {
                self.pos += 1;
                self.double_quoted();
            }
            (Some('$' | '<' | '>'), Some('(')) => {
                self.pos += 2;
                self.nested();
            }
            (Some('`'), _) => {
                self.pos += 1;
                self.backticks();
            }
            _ => self.pos += 1,
        }
        self.pos = self.pos.min(self.chars.len());
        self.chars[start..self.pos].iter().collect()
    }

    /// After the opening quote; `$'…'` strings (`ansi`) honour backslash escapes.
    fn single_quoted(&mut self, ansi: bool) {
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            match c {
                '\\' if ansi => self.pos += 1,
                '\'' => return,
                _ => {}
            }
        }
        self.complete = false;
    }

    /// After the opening quote: substitutions still run inside double quotes.
    fn double_quoted(&mut self) {
        while let Some(c) = self.peek(0) {
            match (c, self.peek(1)) {
                ('\\', _) => self.pos += 2,
                ('"', _) => {
                    self.pos += 1;
                    return;
                }
                ('$', Some('(')) => {
                    self.pos += 2;
                    self.nested();
                }
                ('`', _) => {
                    self.pos += 1;
                    self.backticks();
                }
                _ => self.pos += 1,
            }
        }
        self.pos = self.pos.min(self.chars.len());
        self.complete = false;
    }

    /// After `$(`, `<(`, `>(` or a group's `(`: the inner commands, up to the closing `)`.
    fn nested(&mut self) {
        if self.depth >= MAX_DEPTH {
            self.complete = false;
            self.pos = self.chars.len();
            return;
        }
        self.depth += 1;
        self.list(true);
        self.depth -= 1;
    }

    /// After an opening backtick: the inner text (with `` \` ``, `\$`, `\\` unescaped) is a
    /// line of its own.
    fn backticks(&mut self) {
        let inner_start = self.pos;
        let mut inner = String::new();
        loop {
            match (self.peek(0), self.peek(1)) {
                (None, _) => {
                    self.complete = false;
                    break;
                }
                (Some('`'), _) => {
                    self.pos += 1;
                    break;
                }
                (Some('\\'), Some(escaped @ ('`' | '$' | '\\'))) => {
                    inner.push(escaped);
                    self.pos += 2;
                }
                (Some(c), _) => {
                    inner.push(c);
                    self.pos += 1;
                }
            }
        }
        if self.depth >= MAX_DEPTH {
            self.complete = false;
            return;
        }
        let mut sub = Lexer {
            chars: inner.chars().collect(),
            pos: 0,
            base: self.base + inner_start,
            depth: self.depth + 1,
            parts: Vec::new(),
            complete: true,
        };
        sub.list(false);
        self.parts.append(&mut sub.parts);
        self.complete &= sub.complete;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(line: &str) -> Vec<String> {
        let split = split_command(line);
        assert!(split.complete, "{line:?} should read to its end");
        split.parts.into_iter().map(|p| p.text).collect()
    }

    // --- compound shell commands ---

    #[test]
    fn splits_on_every_separator() {
        assert_eq!(
            parts("a; b && c || d | e & f\ng |& h"),
            ["a", "b", "c", "d", "e", "f", "g", "h"]
        );
        assert_eq!(parts("  cargo   test \t --lib  ;;  "), ["cargo test --lib"]);
        assert!(parts(" ; && \n ").is_empty());
    }

    #[test]
    fn quotes_and_escapes_do_not_split() {
        assert_eq!(parts(r#"echo "a; b""#), [r#"echo "a; b""#]);
        assert_eq!(parts("echo 'a && b | c'"), ["echo 'a && b | c'"]);
        assert_eq!(parts(r"echo a\;b \| c"), [r"echo a\;b \| c"]);
        assert_eq!(parts(r#"echo "say \"x; y\"" ; z"#), [r#"echo "say \"x; y\"""#, "z"]);
        assert_eq!(parts(r"echo $'it\'s; fine'; z"), [r"echo $'it\'s; fine'", "z"]);
        // A backslash-newline continues the line.
        assert_eq!(parts("cargo test \\\n  --lib"), ["cargo test --lib"]);
    }

    #[test]
    fn redirections_do_not_split() {
        assert_eq!(parts("cargo test 2>&1 | tail -5"), ["cargo test 2>&1", "tail -5"]);
        assert_eq!(
            parts("make &> log; cat <&3 >&2; echo x >| f"),
            ["make &> log", "cat <&3 >&2", "echo x >| f"]
        );
        assert_eq!(parts("sleep 1 & wait"), ["sleep 1", "wait"]);
    }

    #[test]
    fn substitutions_are_parts_of_their_own() {
        assert_eq!(parts("cargo test $(curl x)"), ["cargo test $(curl x)", "curl x"]);
        assert_eq!(parts("echo `date`"), ["echo `date`", "date"]);
        assert_eq!(
            parts(r#"echo "$(a "$(b; c)")""#),
            [r#"echo "$(a "$(b; c)")""#, r#"a "$(b; c)""#, "b", "c"]
        );
        assert_eq!(parts(r"echo `a \`b\``"), [r"echo `a \`b\``", "a `b`", "b"]);
        assert_eq!(parts("diff <(ls a) >(wc)"), ["diff <(ls a) >(wc)", "ls a", "wc"]);
        assert_eq!(parts("x=$((1 + 2))"), ["x=$((1 + 2))", "1 + 2"]);
        assert_eq!(
            parts("echo '$(not run)' \"`run`\""),
            ["echo '$(not run)' \"`run`\"", "run"]
        );
    }

    #[test]
    fn groups_and_keywords_expose_their_commands() {
        assert_eq!(parts("(cd sub && make) ; { curl x; }"), ["cd sub", "make", "curl x"]);
        assert_eq!(parts("if cargo test; then rm -rf /; fi"), ["cargo test", "rm -rf /"]);
        assert_eq!(parts("while true; do ! curl x; done"), ["true", "curl x"]);
        assert_eq!(parts("echo if then"), ["echo if then"]);
        assert_eq!(parts("(cd sub && make) 2>&1"), ["cd sub", "make", "2>&1"]);
        assert_eq!(parts("ls # x; y"), ["ls # x", "y"]);
    }

    #[test]
    fn unreadable_lines_are_incomplete() {
        for line in [
            "echo 'a",
            "echo \"a",
            "echo $(a",
            "echo `a",
            "echo a)",
            "f() { x; }",
            "echo $'a\\'",
        ] {
            assert!(!split_command(line).complete, "{line:?}");
        }
        let deep = format!("{}x{}", "$(".repeat(MAX_DEPTH + 5), ")".repeat(MAX_DEPTH + 5));
        assert!(!split_command(&deep).complete);
        let deep = format!("{}x", "(".repeat(10_000));
        assert!(!split_command(&deep).complete);
    }

    #[test]
    fn records_where_assignments_end() {
        let split = split_command("if A=1 B+='x y' cargo test; then FOO=1 true; fi");
        let seen: Vec<(&str, &str, bool)> = split
            .parts
            .iter()
            .map(|p| (p.text.as_str(), p.command(), p.env_safe))
            .collect();
        assert_eq!(
            seen,
            [
                ("A=1 B+='x y' cargo test", "cargo test", false),
                ("FOO=1 true", "true", false)
            ]
        );
        assert_eq!(assigned_name("RUST_LOG=x"), Some("RUST_LOG"));
        assert_eq!(assigned_name("A+=x"), Some("A"));
        for word in ["=x", "1A=x", "\"A\"=x", "a-b=x", "ls"] {
            assert_eq!(assigned_name(word), None, "{word}");
        }
    }

    // --- config, merge, describe ---
}
