//! Purpose-built confirmation dialogs (undo/redo of a turn, consent): a text saying exactly
//! what will happen and a few choices, each with its own key. No free-text field, so typed
//! keys are never swallowed: Enter takes the highlighted choice (the default first), `y` the
//! first, `n` or Esc cancels, a digit picks by number.

use crate::protocol::{ApprovalDecision, RequestKind, Response};

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
    /// An approval being denied: the one-line reason typed so far (sent with the denial).
    pub reason: Option<String>,
    /// Whether this is an approval (`n`/Esc open the reason field instead of closing).
    pub approval: bool,
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
            RequestKind::Approval {
                tool,
                summary,
                detail,
                reason,
            } => {
                let mut body = format!("{tool}: {summary}\nwhy it needs you: {reason}");
                if !detail.is_empty() && detail != summary {
                    let shown: Vec<&str> = detail.lines().take(12).collect();
                    body.push_str(&format!("\n\n{}", shown.join("\n")));
                }
                let approve = |decision| Response::Approval { decision, reason: None };
                let choices = vec![
                    choice('y', "allow once", approve(ApprovalDecision::Once)),
                    choice('a', "allow for this session", approve(ApprovalDecision::Session)),
                    choice('p', "always allow in this project", approve(ApprovalDecision::Project)),
                    choice('n', "deny (and say why)", approve(ApprovalDecision::Deny)),
                ];
                return Some(Self {
                    id: id.to_owned(),
                    title: " Approve? ".to_owned(),
                    body,
                    choices,
                    selected: 0,
                    reason: None,
                    approval: true,
                });
            }
            RequestKind::Question { .. } => return None,
        };
        Some(Self {
            id: id.to_owned(),
            title,
            body,
            choices,
            selected,
            reason: None,
            approval: false,
        })
    }

    /// The response for a choice: an approval's denial first asks for a reason.
    fn pick(&mut self, index: usize) -> ConfirmOutcome {
        let Some(choice) = self.choices.get(index) else {
            return ConfirmOutcome::Open;
        };
        if self.approval && choice.key == 'n' {
            self.reason = Some(String::new());
            return ConfirmOutcome::Open;
        }
        ConfirmOutcome::Done(choice.response.clone())
    }

    /// Esc: an approval opens the reason field (Esc there denies without one); any other
    /// confirmation is cancelled.
    pub fn escape(&mut self) -> ConfirmOutcome {
        match (&self.reason, self.approval) {
            (Some(_), _) => ConfirmOutcome::Done(Response::Approval {
                decision: ApprovalDecision::Deny,
                reason: None,
            }),
            (None, true) => {
                self.reason = Some(String::new());
                ConfirmOutcome::Open
            }
            (None, false) => ConfirmOutcome::Done(Response::Declined),
        }
    }

    /// Backspace in the reason field.
    pub fn backspace(&mut self) {
        if let Some(reason) = &mut self.reason {
            reason.pop();
        }
    }

    pub fn up(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    pub fn down(&mut self) {
        self.selected = (self.selected + 1).min(self.choices.len().saturating_sub(1));
    }

    /// Enter: the highlighted choice, or the denial with the reason typed.
    pub fn enter(&mut self) -> ConfirmOutcome {
        if let Some(reason) = &self.reason {
            let reason = reason.trim().to_owned();
            return ConfirmOutcome::Done(Response::Approval {
                decision: ApprovalDecision::Deny,
                reason: (!reason.is_empty()).then_some(reason),
            });
        }
        self.pick(self.selected)
    }

    /// A typed key: a choice's letter or number picks it; `n` always cancels. In the reason
    /// field every key is text.
    pub fn key(&mut self, c: char) -> ConfirmOutcome {
        if let Some(reason) = &mut self.reason {
            reason.push(c);
            return ConfirmOutcome::Open;
        }
        let c = c.to_ascii_lowercase();
        if let Some(n) = c.to_digit(10).map(|d| d as usize)
            && (1..=self.choices.len()).contains(&n)
        {
            self.selected = n - 1;
            return ConfirmOutcome::Open;
        }
        match self.choices.iter().position(|choice| choice.key == c) {
            Some(index) => self.pick(index),
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

    fn approval() -> Confirm {
        Confirm::for_request(
            "a1",
            &RequestKind::Approval {
                tool: "shell".into(),
                summary: "curl example.com".into(),
                detail: String::new(),
                reason: "it asks to run without the sandbox: needs the network".into(),
            },
        )
        .unwrap()
    }

    #[test]
    fn approvals_allow_or_deny_with_a_reason() {
        let allow = |decision| ConfirmOutcome::Done(Response::Approval { decision, reason: None });
        assert_eq!(approval().enter(), allow(ApprovalDecision::Once));
        assert_eq!(approval().key('y'), allow(ApprovalDecision::Once));
        assert_eq!(approval().key('a'), allow(ApprovalDecision::Session));
        assert_eq!(approval().key('p'), allow(ApprovalDecision::Project));
        let mut d = approval();
        assert_eq!(d.key('n'), ConfirmOutcome::Open, "n opens the reason field");
        for c in "use the mirror".chars() {
            d.key(c);
        }
        assert_eq!(
            d.enter(),
            ConfirmOutcome::Done(Response::Approval {
                decision: ApprovalDecision::Deny,
                reason: Some("use the mirror".into())
            })
        );
        let mut d = approval();
        assert_eq!(d.escape(), ConfirmOutcome::Open, "Esc opens the reason field too");
        assert_eq!(d.enter(), allow(ApprovalDecision::Deny), "an empty reason is fine");
    }
}
