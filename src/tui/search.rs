//! Ctrl-R: a reverse search through the prompt history, as in a shell. Typing narrows the
//! query, Ctrl-R again steps to older matches; the match shows in the composer while searching.

/// An open history search.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HistorySearch {
    pub query: String,
    /// The history index of the match shown (`None`: no match).
    pub found: Option<usize>,
    /// The composer's text before the search, restored on Esc.
    pub draft: String,
}

impl HistorySearch {
    pub fn new(draft: String) -> Self {
        Self {
            draft,
            ..Self::default()
        }
    }

    /// Finds the newest match of the query from the newest entry (after the query changed).
    pub fn refind(&mut self, history: &[String]) {
        self.found = find(history, &self.query, history.len());
    }

    /// Ctrl-R again: the next older match, staying on the current one when there is none.
    pub fn older(&mut self, history: &[String]) {
        let before = self.found.unwrap_or(history.len());
        if let Some(i) = find(history, &self.query, before) {
            self.found = Some(i);
        }
    }

    /// What the composer shows: the match, or the draft while nothing matches.
    pub fn shown<'a>(&'a self, history: &'a [String]) -> &'a str {
        self.found
            .and_then(|i| history.get(i))
            .map_or(&self.draft, String::as_str)
    }

    /// The composer's title while searching.
    pub fn title(&self) -> String {
        let state = if self.found.is_some() || self.query.is_empty() {
            ""
        } else {
            " (no match)"
        };
        format!(
            " history search: {}{state} · Ctrl-R older · Enter takes · Esc cancels ",
            self.query
        )
    }
}

/// The newest entry before index `before` containing `query` (ignoring case).
pub fn find(history: &[String], query: &str, before: usize) -> Option<usize> {
    let query = query.to_lowercase();
    history[..before.min(history.len())]
        .iter()
        .rposition(|entry| entry.to_lowercase().contains(&query))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_newest_first_then_older() {
        let history: Vec<String> = ["cargo test", "fix the Parser", "cargo build", "parse it"]
            .map(String::from)
            .to_vec();
        let mut search = HistorySearch::new("draft".into());
        search.refind(&history);
        assert_eq!(search.shown(&history), "parse it");
        search.query = "PARS".into();
        search.refind(&history);
        assert_eq!(search.found, Some(3));
        search.older(&history);
        assert_eq!(search.shown(&history), "fix the Parser");
        search.older(&history);
        assert_eq!(search.found, Some(1), "stays on the oldest match");
        search.query = "nothing".into();
        search.refind(&history);
        assert_eq!(search.shown(&history), "draft");
        assert!(search.title().contains("no match"));
    }
}
