//! `/resume`'s picker: this project's saved sessions, newest first, the current one marked,
//! narrowed as the person types (by id or first prompt); Enter resumes the selected one.
//! Also resolves the id prefixes `/resume PREFIX` accepts.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// One saved session as the picker lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub id: String,
    /// Last modified, as the session store formats it.
    pub when: String,
    pub messages: usize,
    pub first_prompt: String,
}

/// What a key did to the picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickerOutcome {
    Open,
    Resume(String),
    Cancelled,
}

/// The open picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picker {
    rows: Vec<SessionRow>,
    current: Option<String>,
    pub query: String,
    selected: usize,
}

impl Picker {
    /// `rows` newest first; `current` is the session this UI is in.
    pub fn new(rows: Vec<SessionRow>, current: Option<String>) -> Self {
        Self {
            rows,
            current,
            query: String::new(),
            selected: 0,
        }
    }

    /// The sessions matching the query, newest first.
    pub fn visible(&self) -> Vec<&SessionRow> {
        let query = self.query.to_lowercase();
        self.rows
            .iter()
            .filter(|r| r.id.to_lowercase().contains(&query) || r.first_prompt.to_lowercase().contains(&query))
            .collect()
    }

    pub fn type_char(&mut self, c: char) {
        self.query.push(c);
        self.selected = 0;
    }

    pub fn backspace(&mut self) {
        self.query.pop();
        self.selected = 0;
    }

    pub fn up(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    pub fn down(&mut self) {
        self.selected = (self.selected + 1).min(self.visible().len().saturating_sub(1));
    }

    /// Enter: the selected session (nothing when none matches).
    pub fn enter(&self) -> PickerOutcome {
        match self.visible().get(self.selected) {
            Some(row) => PickerOutcome::Resume(row.id.clone()),
            None => PickerOutcome::Open,
        }
    }

    /// Draws the picker over `area`.
    pub fn draw(&self, frame: &mut Frame<'_>, area: Rect) {
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::new().fg(Color::Cyan))
            .title(Span::styled(
                " resume a session · type to search · ↑↓ · Enter resumes · Esc closes ",
                Style::new().fg(Color::Cyan),
            ));
        let inner = block.inner(area);
        frame.render_widget(Clear, area);
        frame.render_widget(block, area);
        if inner.height < 2 {
            return;
        }
        let visible = self.visible();
        let mut lines = vec![Line::from(vec![
            Span::styled("search: ", Style::new().fg(Color::DarkGray)),
            Span::raw(self.query.clone()),
            Span::styled("▏", Style::new().fg(Color::Cyan)),
        ])];
        let rows = usize::from(inner.height) - 1;
        if visible.is_empty() {
            lines.push(Line::styled(
                if self.rows.is_empty() {
                    "(no saved sessions here)"
                } else {
                    "(no session matches)"
                },
                Style::new().fg(Color::DarkGray),
            ));
        }
        let start = (self.selected + 1).saturating_sub(rows);
        for (i, row) in visible.iter().enumerate().skip(start).take(rows) {
            let current = self.current.as_deref() == Some(row.id.as_str());
            let style = if i == self.selected {
                Style::new().fg(Color::Black).bg(Color::Cyan)
            } else {
                Style::new()
            };
            let prompt: String = row
                .first_prompt
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(200)
                .collect();
            lines.push(Line::from(vec![
                Span::styled(if current { "● " } else { "  " }, Style::new().fg(Color::Green)),
                Span::styled(format!("{}  {}", row.id, row.when), style),
                Span::styled(format!("  {} msgs  ", row.messages), Style::new().fg(Color::DarkGray)),
                Span::styled(
                    if current { format!("(current) {prompt}") } else { prompt },
                    Style::new().add_modifier(if current { Modifier::BOLD } else { Modifier::empty() }),
                ),
            ]));
        }
        frame.render_widget(Paragraph::new(lines), inner);
    }
}

/// The one session whose id starts with `prefix` (an exact id always wins).
pub fn resolve(rows: &[SessionRow], prefix: &str) -> Result<String, String> {
    if let Some(row) = rows.iter().find(|r| r.id == prefix) {
        return Ok(row.id.clone());
    }
    let matching: Vec<&SessionRow> = rows.iter().filter(|r| r.id.starts_with(prefix)).collect();
    match matching.as_slice() {
        [one] => Ok(one.id.clone()),
        [] => Err(format!(
            "no saved session here starts with {prefix}; /resume lists them"
        )),
        many => Err(format!(
            "{} sessions start with {prefix}: {} — type more of the id",
            many.len(),
            many.iter().map(|r| r.id.as_str()).collect::<Vec<_>>().join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<SessionRow> {
        [
            ("20261201-b2", "fix the parser"),
            ("20261130-a1", "write docs"),
            ("20261129-a9", "Parse args"),
        ]
        .map(|(id, prompt)| SessionRow {
            id: id.into(),
            when: "2026-12-01 10:00".into(),
            messages: 2,
            first_prompt: prompt.into(),
        })
        .to_vec()
    }

    #[test]
    fn searches_as_you_type_and_resumes_the_selection() {
        let mut picker = Picker::new(rows(), Some("20261130-a1".into()));
        assert_eq!(picker.visible().len(), 3);
        for c in "pars".chars() {
            picker.type_char(c);
        }
        let ids: Vec<&str> = picker.visible().iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["20261201-b2", "20261129-a9"]);
        picker.down();
        picker.down();
        assert_eq!(picker.enter(), PickerOutcome::Resume("20261129-a9".into()));
        picker.type_char('z');
        assert_eq!(picker.enter(), PickerOutcome::Open);
    }

    #[test]
    fn prefixes_resolve_when_unique() {
        assert_eq!(resolve(&rows(), "20261201"), Ok("20261201-b2".into()));
        assert!(resolve(&rows(), "2026").unwrap_err().contains("3 sessions"));
        assert!(resolve(&rows(), "x").unwrap_err().contains("no saved session"));
    }
}
