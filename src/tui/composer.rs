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

    pub fn insert_char(&mut self, c: char) {
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
        let at = self.byte(self.row, self.col);
        let rest = self.lines[self.row].split_off(at);
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
    }

    pub fn backspace(&mut self) {
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
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
        }
    }

    pub fn right(&mut self) {
        if self.col < self.lines[self.row].chars().count() {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    pub fn home(&mut self) {
        self.col = 0;
    }

    pub fn end(&mut self) {
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
}
