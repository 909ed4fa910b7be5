//! The UI's pickers: `/resume`'s (this project's saved sessions, newest first, the current
//! one marked) and `/model`'s (the configured models, then the provider's own list, which
//! arrives a moment later). Both narrow as the person types; Enter takes the selected row
//! (in the model picker, a typed name nothing matches is taken as it is). Also resolves the
//! id prefixes `/resume PREFIX` accepts.

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

/// One model as the picker lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRow {
    pub id: String,
    /// Named in the configuration (else: from the provider's list).
    pub configured: bool,
}

/// What a picker picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickerKind {
    Sessions,
    Models,
}

/// A row of either picker.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Row {
    Session(SessionRow),
    Model(ModelRow),
}

impl Row {
    fn id(&self) -> &str {
        match self {
            Row::Session(row) => &row.id,
            Row::Model(row) => &row.id,
        }
    }

    fn matches(&self, query: &str) -> bool {
        match self {
            Row::Session(row) => {
                row.id.to_lowercase().contains(query) || row.first_prompt.to_lowercase().contains(query)
            }
            Row::Model(row) => row.id.to_lowercase().contains(query),
        }
    }

    fn line(&self, selected: bool, current: bool) -> Line<'static> {
        let style = if selected {
            Style::new().fg(Color::Black).bg(Color::Cyan)
        } else {
            Style::new()
        };
        let mark = Span::styled(if current { "● " } else { "  " }, Style::new().fg(Color::Green));
        match self {
            Row::Session(row) => {
                let prompt: String = row
                    .first_prompt
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(200)
                    .collect();
                Line::from(vec![
                    mark,
                    Span::styled(format!("{}  {}", row.id, row.when), style),
                    Span::styled(format!("  {} msgs  ", row.messages), Style::new().fg(Color::DarkGray)),
                    Span::styled(
                        if current { format!("(current) {prompt}") } else { prompt },
                        Style::new().add_modifier(if current { Modifier::BOLD } else { Modifier::empty() }),
                    ),
                ])
            }
            Row::Model(row) => {
                let id: String = row.id.chars().take(200).collect();
                let tag = match (current, row.configured) {
                    (true, _) => "  (current)",
                    (false, true) => "  configured",
                    (false, false) => "",
                };
                Line::from(vec![
                    mark,
                    Span::styled(id, style),
                    Span::styled(tag, Style::new().fg(Color::DarkGray)),
                ])
            }
        }
    }
}

/// What a key did to the picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickerOutcome {
    Open,
    /// Enter: the session to resume, or the model to use.
    Chosen(String),
    Cancelled,
}

/// The open picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picker {
    pub kind: PickerKind,
    rows: Vec<Row>,
    current: Option<String>,
    pub query: String,
    selected: usize,
    /// A line under the search (the model list is on its way, or could not be read).
    note: Option<String>,
}

impl Picker {
    /// `/resume`'s picker: `rows` newest first; `current` is the session this UI is in.
    pub fn new(rows: Vec<SessionRow>, current: Option<String>) -> Self {
        Self {
            kind: PickerKind::Sessions,
            rows: rows.into_iter().map(Row::Session).collect(),
            current,
            query: String::new(),
            selected: 0,
            note: None,
        }
    }

    /// `/model`'s picker, with only the model in use until [`Picker::fill_models`].
    pub fn models(current: &str) -> Self {
        Self {
            kind: PickerKind::Models,
            rows: vec![Row::Model(ModelRow {
                id: current.to_owned(),
                configured: true,
            })],
            current: Some(current.to_owned()),
            query: String::new(),
            selected: 0,
            note: Some("asking the provider for its models…".to_owned()),
        }
    }

    /// Fills the model picker: the one in use, the configured ones, then the provider's,
    /// each once; `error` is shown when the provider's list could not be read.
    pub fn fill_models(&mut self, current: &str, configured: &[String], provider: &[String], error: Option<&str>) {
        let mut rows: Vec<ModelRow> = Vec::new();
        let named = std::iter::once(current).chain(configured.iter().map(String::as_str));
        for (id, configured) in named
            .map(|id| (id, true))
            .chain(provider.iter().map(|id| (id.as_str(), false)))
        {
            if !id.is_empty() && !rows.iter().any(|r| r.id == id) {
                rows.push(ModelRow {
                    id: id.to_owned(),
                    configured,
                });
            }
        }
        let keep = self.visible().get(self.selected).map(|r| r.id().to_owned());
        self.rows = rows.into_iter().map(Row::Model).collect();
        self.current = Some(current.to_owned());
        self.selected = keep
            .and_then(|id| self.visible().iter().position(|r| r.id() == id))
            .unwrap_or(0);
        self.note = match (error, provider.is_empty()) {
            (Some(why), _) => Some(format!("the provider's list could not be read: {why}")),
            (None, true) => Some("the provider lists no models".to_owned()),
            (None, false) => None,
        };
    }

    fn visible(&self) -> Vec<&Row> {
        let query = self.query.to_lowercase();
        self.rows.iter().filter(|r| r.matches(&query)).collect()
    }

    /// The ids of the rows matching the query, in order.
    pub fn visible_ids(&self) -> Vec<&str> {
        self.visible().into_iter().map(Row::id).collect()
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

    /// Enter: the selected row; in the model picker a typed name nothing matches is taken
    /// as it is (a model the list does not show); else nothing.
    pub fn enter(&self) -> PickerOutcome {
        match self.visible().get(self.selected) {
            Some(row) => PickerOutcome::Chosen(row.id().to_owned()),
            None if self.kind == PickerKind::Models && !self.query.trim().is_empty() => {
                PickerOutcome::Chosen(self.query.trim().to_owned())
            }
            None => PickerOutcome::Open,
        }
    }

    /// Draws the picker over `area`.
    pub fn draw(&self, frame: &mut Frame<'_>, area: Rect) {
        let title = match self.kind {
            PickerKind::Sessions => " resume a session · type to search · ↑↓ · Enter resumes · Esc closes ",
            PickerKind::Models => " pick a model · type to search · ↑↓ · Enter uses it · Esc closes ",
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::new().fg(Color::Cyan))
            .title(Span::styled(title, Style::new().fg(Color::Cyan)));
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
        if let Some(note) = &self.note {
            lines.push(Line::styled(note.clone(), Style::new().fg(Color::DarkGray)));
        }
        let rows = usize::from(inner.height).saturating_sub(lines.len());
        if visible.is_empty() {
            lines.push(Line::styled(
                match (self.kind, self.rows.is_empty()) {
                    (PickerKind::Sessions, true) => "(no saved sessions here)".to_owned(),
                    (PickerKind::Sessions, false) => "(no session matches)".to_owned(),
                    (PickerKind::Models, _) => {
                        format!("(no model matches: Enter uses {:?} as it is)", self.query.trim())
                    }
                },
                Style::new().fg(Color::DarkGray),
            ));
        }
        let start = (self.selected + 1).saturating_sub(rows);
        for (i, row) in visible.iter().enumerate().skip(start).take(rows) {
            let current = self.current.as_deref() == Some(row.id());
            lines.push(row.line(i == self.selected, current));
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
        assert_eq!(picker.visible_ids().len(), 3);
        for c in "pars".chars() {
            picker.type_char(c);
        }
        assert_eq!(picker.visible_ids(), ["20261201-b2", "20261129-a9"]);
        picker.down();
        picker.down();
        assert_eq!(picker.enter(), PickerOutcome::Chosen("20261129-a9".into()));
        picker.type_char('z');
        assert_eq!(picker.enter(), PickerOutcome::Open);
    }

    #[test]
    fn the_model_picker_fills_in_order_keeps_the_selection_and_takes_a_typed_name() {
        let mut picker = Picker::models("gpt-a");
        assert_eq!(picker.visible_ids(), ["gpt-a"]);
        picker.type_char('4');
        assert_eq!(
            picker.enter(),
            PickerOutcome::Chosen("4".into()),
            "a name nothing matches"
        );
        picker.backspace();
        let configured = ["gpt-a".to_owned(), "local-q".to_owned()];
        let provider = ["o4".to_owned(), "gpt-a".to_owned(), "gpt-b".to_owned()];
        picker.fill_models("gpt-a", &configured, &provider, None);
        assert_eq!(picker.visible_ids(), ["gpt-a", "local-q", "o4", "gpt-b"]);
        assert_eq!(picker.note, None);
        picker.type_char('g');
        picker.down();
        assert_eq!(picker.enter(), PickerOutcome::Chosen("gpt-b".into()));
        // A list that comes later keeps what is selected.
        picker.fill_models("gpt-a", &configured, &provider, Some("HTTP 401"));
        assert_eq!(picker.enter(), PickerOutcome::Chosen("gpt-b".into()));
        assert!(picker.note.as_deref().is_some_and(|n| n.contains("HTTP 401")));
    }

    #[test]
    fn prefixes_resolve_when_unique() {
        assert_eq!(resolve(&rows(), "20261201"), Ok("20261201-b2".into()));
        assert!(resolve(&rows(), "2026").unwrap_err().contains("3 sessions"));
        assert!(resolve(&rows(), "x").unwrap_err().contains("no saved session"));
    }
}
