//! Purpose-built confirmation dialogs (undo/redo of a turn, consent): a text saying exactly
//! what will happen and a few choices, each with its own key. No free-text field, so typed
//! keys are never swallowed: Enter takes the highlighted choice (the default first), `y` the
//! first, `n` or Esc cancels, a digit picks by number.

use crate::protocol::{RequestKind, Response};

/// What a key did to a confirmation.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfirmOutcome {
    Open,
    /// Closed with this response for the core.
    Done(Response),
}

/// One choice: its label and the response it sends.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub key: char,
    pub label: String,
    pub response: Response,
}

/// An open confirmation for the request `id`.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirm {
    pub id: String,
    pub title: String,
    pub body: String,
    pub choices: Vec<Choice>,
    pub selected: usize,
}

impl Confirm {
    /// The dialog for a request, or `None` for kinds that are not confirmations.
    pub fn for_request(id: &str, kind: &RequestKind) -> Option<Self> {
        let (title, body, choices, selected) = match kind {
            RequestKind::Undo { redo, summary } => {
                let verb = if *redo { "Redo" } else { "Undo" };
                let choices = if *redo {
                    vec![
                        choice(
                            'y',
                            "redo it",
                            Response::Undo {
                                rewind_conversation: true,
                            },
                        ),
                        choice('n', "cancel", Response::Declined),
                    ]
                } else {
                    vec![
                        choice(
                            'y',
                            "code and conversation",
                            Response::Undo {
                                rewind_conversation: true,
                            },
                        ),
                        choice(
                            'c',
                            "code only",
                            Response::Undo {
                                rewind_conversation: false,
                            },
                        ),
                        choice('n', "cancel", Response::Declined),
                    ]
                };
                (format!(" {verb} the last turn "), summary.clone(), choices, 0)
            }
            RequestKind::Consent {
                title,
                message,
                yes,
                no,
            } => (
                format!(" {title} "),
                message.clone(),
                vec![
                    choice('y', yes, Response::Consent { yes: true }),
                    choice('n', no, Response::Consent { yes: false }),
                ],
                1,
            ),
            RequestKind::Question { .. } => return None,
        };
        Some(Self {
            id: id.to_owned(),
            title,
            body,
            choices,
            selected,
        })
    }

    pub fn up(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    pub fn down(&mut self) {
        self.selected = (self.selected + 1).min(self.choices.len().saturating_sub(1));
    }

    /// Enter: the highlighted choice.
    pub fn enter(&self) -> ConfirmOutcome {
        self.choices
            .get(self.selected)
            .map_or(ConfirmOutcome::Open, |c| ConfirmOutcome::Done(c.response.clone()))
    }

    /// A typed key: a choice's letter or number picks it; `n` always cancels.
    pub fn key(&mut self, c: char) -> ConfirmOutcome {
        let c = c.to_ascii_lowercase();
        if let Some(n) = c.to_digit(10).map(|d| d as usize)
            && (1..=self.choices.len()).contains(&n)
        {
            self.selected = n - 1;
            return ConfirmOutcome::Open;
        }
        match self.choices.iter().find(|choice| choice.key == c) {
            Some(choice) => ConfirmOutcome::Done(choice.response.clone()),
            None if c == 'n' => ConfirmOutcome::Done(Response::Declined),
            None => ConfirmOutcome::Open,
        }
    }
}

fn choice(key: char, label: &str, response: Response) -> Choice {
    Choice {
        key,
        label: label.to_owned(),
        response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn undo() -> Confirm {
        Confirm::for_request(
            "r1",
            &RequestKind::Undo {
                redo: false,
                summary: "undo turn 1:\n  restored a.txt (+1 -1)".into(),
            },
        )
        .unwrap()
    }

    #[test]
    fn enter_and_letters_answer() {
        assert_eq!(
            undo().enter(),
            ConfirmOutcome::Done(Response::Undo {
                rewind_conversation: true
            })
        );
        assert_eq!(
            undo().key('y'),
            ConfirmOutcome::Done(Response::Undo {
                rewind_conversation: true
            })
        );
        assert_eq!(
            undo().key('c'),
            ConfirmOutcome::Done(Response::Undo {
                rewind_conversation: false
            })
        );
        assert_eq!(undo().key('n'), ConfirmOutcome::Done(Response::Declined));
        let mut d = undo();
        assert_eq!(d.key('2'), ConfirmOutcome::Open);
        assert_eq!(
            d.enter(),
            ConfirmOutcome::Done(Response::Undo {
                rewind_conversation: false
            })
        );
        assert_eq!(undo().key('x'), ConfirmOutcome::Open, "other keys do nothing");
    }
}
