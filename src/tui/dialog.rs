//! The question dialog for the `question` tool: single choice (arrows or a number), multiple
//! choice (space toggles), free text always possible (the "Other" row), the default
//! pre-selected so Enter takes it, Esc cancels, several questions in a row with progress.

use crate::protocol::Question;

/// What a key did to the dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DialogOutcome {
    /// Still open.
    Open,
    /// All questions answered: the raw answers, in order.
    Answered(Vec<String>),
    /// Cancelled by the person.
    Cancelled,
}

/// An open question dialog.
#[derive(Debug, Clone, PartialEq)]
pub struct Dialog {
    pub questions: Vec<Question>,
    pub index: usize,
    pub answers: Vec<String>,
    /// The highlighted row: an option, or `options.len()` for "Other".
    pub selected: usize,
    pub checked: Vec<bool>,
    pub other: String,
}

impl Dialog {
    pub fn new(questions: Vec<Question>) -> Self {
        let mut dialog = Self {
            questions,
            index: 0,
            answers: Vec::new(),
            selected: 0,
            checked: Vec::new(),
            other: String::new(),
        };
        dialog.reset();
        dialog
    }

    pub fn question(&self) -> &Question {
        &self.questions[self.index]
    }

    fn reset(&mut self) {
        let q = &self.questions[self.index];
        self.checked = vec![false; q.options.len()];
        self.other.clear();
        self.selected = q
            .default
            .as_ref()
            .and_then(|d| q.options.iter().position(|o| &o.label == d))
            .unwrap_or(0);
        if q.multiple
            && let Some(default) = &q.default
        {
            for part in default.split(',') {
                if let Some(i) = q.options.iter().position(|o| o.label == part.trim()) {
                    self.checked[i] = true;
                }
            }
        }
    }

    /// The "Other" row's index.
    pub fn other_row(&self) -> usize {
        self.question().options.len()
    }

    pub fn up(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    pub fn down(&mut self) {
        self.selected = (self.selected + 1).min(self.other_row());
    }

    /// Space: toggles the highlighted option of a multiple-choice question (or types a space).
    pub fn space(&mut self) {
        if self.question().multiple && self.selected < self.other_row() {
            self.checked[self.selected] = !self.checked[self.selected];
        } else {
            self.type_char(' ');
        }
    }

    /// A typed character: a digit picks that option; anything else is free text.
    pub fn type_char(&mut self, c: char) {
        let options = self.question().options.len();
        if self.other.is_empty()
            && let Some(n) = c.to_digit(10).map(|d| d as usize)
            && (1..=options).contains(&n)
        {
            self.selected = n - 1;
            if self.question().multiple {
                self.checked[n - 1] = !self.checked[n - 1];
            }
            return;
        }
        self.selected = self.other_row();
        self.other.push(c);
    }

    pub fn backspace(&mut self) {
        self.other.pop();
    }

    /// Enter: answers the current question and moves on.
    pub fn enter(&mut self) -> DialogOutcome {
        let q = self.question();
        let answer = if self.selected == self.other_row() {
            self.other.trim().to_owned()
        } else if q.multiple {
            let picked: Vec<&str> = q
                .options
                .iter()
                .zip(&self.checked)
                .filter(|(_, c)| **c)
                .map(|(o, _)| o.label.as_str())
                .collect();
            if picked.is_empty() {
                q.options[self.selected].label.clone()
            } else {
                picked.join(", ")
            }
        } else {
            q.options[self.selected].label.clone()
        };
        self.answers.push(answer);
        if self.index + 1 < self.questions.len() {
            self.index += 1;
            self.reset();
            DialogOutcome::Open
        } else {
            DialogOutcome::Answered(self.answers.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::QuestionOption;

    fn q(labels: &[&str], multiple: bool, default: Option<&str>) -> Question {
        Question {
            question: "?".into(),
            header: None,
            options: labels
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multiple,
            default: default.map(Into::into),
        }
    }

    #[test]
    fn single_multiple_other_and_defaults() {
        let mut d = Dialog::new(vec![
            q(&["a", "b", "c"], false, Some("b")),
            q(&["x", "y", "z"], true, None),
            q(&[], false, None),
        ]);
        assert_eq!(d.selected, 1, "the default is pre-selected");
        assert_eq!(d.enter(), DialogOutcome::Open);
        d.space();
        d.down();
        d.down();
        d.space();
        assert_eq!(d.enter(), DialogOutcome::Open);
        d.type_char('h');
        d.type_char('i');
        assert_eq!(
            d.enter(),
            DialogOutcome::Answered(vec!["b".into(), "x, z".into(), "hi".into()])
        );
        let mut d = Dialog::new(vec![q(&["a", "b"], false, None)]);
        d.type_char('2');
        assert_eq!(d.enter(), DialogOutcome::Answered(vec!["b".into()]));
    }
}
