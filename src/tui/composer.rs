//! The composer: multi-line input with a cursor, history, large pastes kept whole behind a
//! compact placeholder, and the word under the cursor for `@path` and `/command` completion.

use super::wrap::width;

/// Pastes longer than this many lines (or bytes) are shown as a placeholder.
const LARGE_PASTE_LINES: usize = 5;
const LARGE_PASTE_BYTES: usize = 1000;

/// The input being composed.
#[derive(Debug, Clone, Default)]
pub struct Composer {
    lines: Vec<String>,
    /// Cursor row and column (in characters).
    row: usize,
    col: usize,
    history: Vec<String>,
    /// Position while browsing history (`None`: editing a new message).
    browsing: Option<usize>,
    draft: Option<String>,
    pastes: Vec<(String, String)>,
    /// What Ctrl-W, Ctrl-U or Ctrl-K took last, for Ctrl-Y (consecutive kills add up).
    killed: String,
    /// Whether the previous edit was a kill (the next one appends to `killed`).
    killing: bool,
}

impl Composer {
    pub fn new() -> Self {
        Self {
            lines: vec![String::new()],
            ..Self::default()
        }
    }

    /// The raw text, placeholders included.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// Display column of the cursor in its row.
    pub fn cursor_x(&self) -> usize {
        width(&self.lines[self.row].chars().take(self.col).collect::<String>())
    }

    fn byte(&self, row: usize, col: usize) -> usize {
        self.lines[row]
            .char_indices()
            .nth(col)
            .map_or(self.lines[row].len(), |(i, _)| i)
    }

    /// Replaces the history (loaded from the project's history file), oldest first.
    pub fn set_history(&mut self, history: Vec<String>) {
        self.history = history;
        self.browsing = None;
    }

    /// The prompts sent, oldest first (for Ctrl-R).
    pub fn history(&self) -> &[String] {
        &self.history
    }

    pub fn insert_char(&mut self, c: char) {
        self.killing = false;
        let at = self.byte(self.row, self.col);
        self.lines[self.row].insert(at, c);
        self.col += 1;
    }

    pub fn insert_str(&mut self, text: &str) {
        for c in text.chars() {
            if c == '\n' {
                self.newline();
            } else if c != '\r' {
                self.insert_char(c);
            }
        }
    }

    /// A paste: small ones are inserted; large ones become `[Pasted #n: N lines]`, kept whole.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        if lines > LARGE_PASTE_LINES || text.len() > LARGE_PASTE_BYTES {
            let label = format!(
                "[Pasted #{}: {lines} lines, {} bytes]",
                self.pastes.len() + 1,
                text.len()
            );
            self.insert_str(&label);
            self.pastes.push((label, text));
        } else {
            self.insert_str(&text);
        }
    }

    pub fn newline(&mut self) {
        self.killing = false;
        let at = self.byte(self.row, self.col);
        let rest = self.lines[self.row].split_off(at);
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
    }

    pub fn backspace(&mut self) {
        self.killing = false;
        if self.col > 0 {
            let start = self.byte(self.row, self.col - 1);
            let end = self.byte(self.row, self.col);
            self.lines[self.row].replace_range(start..end, "");
            self.col -= 1;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
            self.lines[self.row].push_str(&line);
        }
    }

    pub fn delete(&mut self) {
        self.killing = false;
        let len = self.lines[self.row].chars().count();
        if self.col < len {
            let start = self.byte(self.row, self.col);
            let end = self.byte(self.row, self.col + 1);
            self.lines[self.row].replace_range(start..end, "");
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    pub fn left(&mut self) {
        self.killing = false;
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
        }
    }

    pub fn right(&mut self) {
        self.killing = false;
        if self.col < self.lines[self.row].chars().count() {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    pub fn home(&mut self) {
        self.killing = false;
        self.col = 0;
    }

    pub fn end(&mut self) {
        self.killing = false;
        self.col = self.lines[self.row].chars().count();
    }

    /// Up: the previous row, or the previous history entry from the first row.
    pub fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.lines[self.row].chars().count());
            return;
        }
        let next = match self.browsing {
            None if !self.history.is_empty() => self.history.len() - 1,
            Some(i) if i > 0 => i - 1,
            _ => return,
        };
        if self.browsing.is_none() {
            self.draft = Some(self.text());
        }
        self.browsing = Some(next);
        let entry = self.history[next].clone();
        self.set(&entry);
    }

    /// Down: the next row, or the next history entry (then the draft) from the last row.
    pub fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.lines[self.row].chars().count());
            return;
        }
        let Some(i) = self.browsing else { return };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            let entry = self.history[i + 1].clone();
            self.set(&entry);
        } else {
            self.browsing = None;
            let draft = self.draft.take().unwrap_or_default();
            self.set(&draft);
        }
    }

    /// Replaces the content, cursor at the end.
    pub fn set(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_owned).collect();
        if self.lines.is_empty() {
            self.lines.push(String::new());
        }
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].chars().count();
    }

    pub fn clear(&mut self) {
        self.lines = vec![String::new()];
        self.row = 0;
        self.col = 0;
        self.browsing = None;
        self.draft = None;
        self.pastes.clear();
    }

    /// Takes the message: placeholders expanded, added to history, composer cleared.
    pub fn submit(&mut self) -> String {
        let raw = self.text();
        let mut text = raw.clone();
        for (label, content) in &self.pastes {
            text = text.replacen(label.as_str(), content, 1);
        }
        if !raw.trim().is_empty() && self.history.last() != Some(&raw) {
            self.history.push(raw);
        }
        self.clear();
        text
    }

    /// The current row's characters.
    fn row_chars(&self) -> Vec<char> {
        self.lines[self.row].chars().collect()
    }

    /// Alt-B: to the start of the word before the cursor (words are alphanumeric runs).
    pub fn word_left(&mut self) {
        let line = self.row_chars();
        let mut col = self.col.min(line.len());
        while col > 0 && !line[col - 1].is_alphanumeric() {
            col -= 1;
        }
        while col > 0 && line[col - 1].is_alphanumeric() {
            col -= 1;
        }
        self.col = col;
        self.killing = false;
    }

    /// Alt-F: to the end of the word after the cursor.
    pub fn word_right(&mut self) {
        let line = self.row_chars();
        let mut col = self.col.min(line.len());
        while col < line.len() && !line[col].is_alphanumeric() {
            col += 1;
        }
        while col < line.len() && line[col].is_alphanumeric() {
            col += 1;
        }
        self.col = col;
        self.killing = false;
    }

    /// Removes columns `from..to` of the current row into the kill buffer; `before` says the
    /// text lies before earlier kills (Ctrl-W, Ctrl-U) rather than after them (Ctrl-K).
    fn kill(&mut self, from: usize, to: usize, before: bool) {
        let (start, end) = (self.byte(self.row, from), self.byte(self.row, to));
        let taken: String = self.lines[self.row].drain(start..end).collect();
        if !self.killing {
            self.killed.clear();
        }
        if before {
            self.killed.insert_str(0, &taken);
        } else {
            self.killed.push_str(&taken);
        }
        self.killing = true;
        self.col = from;
    }

    /// Ctrl-W: kills the whitespace-separated word before the cursor (as readline's
    /// `unix-word-rubout`); at the start of a row, joins it to the previous one.
    pub fn kill_word_back(&mut self) {
        if self.col == 0 {
            self.killing = false;
            self.backspace();
            return;
        }
        let line = self.row_chars();
        let mut col = self.col.min(line.len());
        while col > 0 && line[col - 1].is_whitespace() {
            col -= 1;
        }
        while col > 0 && !line[col - 1].is_whitespace() {
            col -= 1;
        }
        self.kill(col, self.col, true);
    }

    /// Ctrl-U: kills from the start of the row to the cursor.
    pub fn kill_to_start(&mut self) {
        if self.col == 0 {
            return;
        }
        self.kill(0, self.col, true);
    }

    /// Ctrl-K: kills from the cursor to the end of the row; at its end, joins the next row.
    pub fn kill_to_end(&mut self) {
        let len = self.lines[self.row].chars().count();
        if self.col >= len {
            if self.row + 1 < self.lines.len() {
                let appending = self.killing;
                self.delete();
                if !appending {
                    self.killed.clear();
                }
                self.killed.push('\n');
                self.killing = true;
            }
            return;
        }
        self.kill(self.col, len, false);
    }

    /// Ctrl-Y: inserts what the last kill took.
    pub fn yank(&mut self) {
        let text = self.killed.clone();
        self.insert_str(&text);
    }

    /// Ctrl-A: the start of the row, or of the previous row when already there.
    pub fn home_or_up(&mut self) {
        self.killing = false;
        if self.col == 0 && self.row > 0 {
            self.row -= 1;
        }
        self.col = 0;
    }

    /// Ctrl-E: the end of the row, or of the next row when already there.
    pub fn end_or_down(&mut self) {
        self.killing = false;
        if self.col == self.lines[self.row].chars().count() && self.row + 1 < self.lines.len() {
            self.row += 1;
        }
        self.end();
    }

    /// The word ending at the cursor (for completion), with its start column.
    pub fn current_word(&self) -> (usize, String) {
        let line: Vec<char> = self.lines[self.row].chars().collect();
        let mut start = self.col;
        while start > 0 && !line[start - 1].is_whitespace() {
            start -= 1;
        }
        (start, line[start..self.col].iter().collect())
    }

    /// Replaces the word ending at the cursor with `replacement`.
    pub fn replace_current_word(&mut self, replacement: &str) {
        let (start, _) = self.current_word();
        let from = self.byte(self.row, start);
        let to = self.byte(self.row, self.col);
        self.lines[self.row].replace_range(from..to, replacement);
        self.col = start + replacement.chars().count();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_history_and_pastes() {
        let mut c = Composer::new();
        c.insert_str("héllo");
        c.newline();
        c.insert_str("wörld");
        c.left();
        c.backspace();
        assert_eq!(c.text(), "héllo\nwörd");
        assert_eq!(c.submit(), "héllo\nwörd");
        assert!(c.is_empty());
        c.insert_str("second");
        c.submit();
        c.insert_str("draft");
        c.up();
        assert_eq!(c.text(), "second");
        c.up();
        assert_eq!(c.text(), "héllo\nwörd");
        c.down();
        c.down();
        assert_eq!(c.text(), "draft");
        c.clear();
        let big: String = (0..50).map(|i| format!("line {i}\n")).collect();
        c.insert_str("see ");
        c.paste(&big);
        assert_eq!(c.text(), "see [Pasted #1: 50 lines, 390 bytes]");
        assert_eq!(c.submit(), format!("see {big}"));
        c.insert_str("look at @src/ma");
        assert_eq!(c.current_word(), (8, "@src/ma".to_owned()));
        c.replace_current_word("@src/main.rs ");
        assert_eq!(c.text(), "look at @src/main.rs ");
    }

    #[test]
    fn readline_motions_kills_and_yank() {
        let mut c = Composer::new();
        c.insert_str("fix the parser.rs bug");
        c.word_left();
        assert_eq!(c.cursor(), (0, 18));
        c.word_left();
        c.word_left();
        assert_eq!(c.cursor(), (0, 8), "`parser.rs` is two words");
        c.word_right();
        assert_eq!(c.cursor(), (0, 14));
        // Ctrl-W takes the whitespace word before the cursor; twice in a row adds up.
        c.end();
        c.kill_word_back();
        assert_eq!(c.text(), "fix the parser.rs ");
        c.kill_word_back();
        assert_eq!(c.text(), "fix the ");
        c.yank();
        assert_eq!(c.text(), "fix the parser.rs bug");
        // Ctrl-U and Ctrl-K split the row at the cursor.
        c.home();
        c.word_right();
        c.kill_to_end();
        assert_eq!(c.text(), "fix");
        c.kill_to_start();
        assert!(c.is_empty());
        c.yank();
        assert_eq!(c.text(), "fix the parser.rs bug", "consecutive kills add up");
        c.left();
        c.kill_to_end();
        c.yank();
        c.yank();
        assert_eq!(
            c.text(),
            "fix the parser.rs bugg",
            "after other keys a kill starts afresh"
        );
        c.clear();
        c.insert_str("fix");
        // Ctrl-A / Ctrl-E move within the row, then to the neighbours'.
        c.newline();
        c.insert_str("ünïcode");
        c.home_or_up();
        assert_eq!(c.cursor(), (1, 0));
        c.home_or_up();
        assert_eq!(c.cursor(), (0, 0));
        c.end_or_down();
        assert_eq!(c.cursor(), (0, 3));
        c.end_or_down();
        assert_eq!(c.cursor(), (1, 7));
        // Ctrl-K at the end of a row joins the next one; Ctrl-W at a row's start joins too.
        c.home_or_up();
        c.home_or_up();
        c.end();
        c.kill_to_end();
        assert_eq!(c.text(), "fixünïcode");
        c.newline();
        c.kill_word_back();
        assert_eq!(c.text(), "fixünïcode");
    }
}
