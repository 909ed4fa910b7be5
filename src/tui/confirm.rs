//! Purpose-built confirmation dialogs (undo/redo of a turn, consent): a text saying exactly
//! what will happen and a few choices, each with its own key. No free-text field, so typed
//! keys are never swallowed: Enter takes the highlighted choice (the default first), `y` the
//! first, `n` or Esc cancels, a digit picks by number.
//!
//! An approval also carries its payload ([`Payload`]): the whole command (or content, or the
//! arguments), every line, control characters shown ([`crate::sanitize::visible`]). The rule:
//! **nothing allows a call while any of its payload has not been on screen.** When it does
//! not fit, it scrolls (↑/↓ by a line, PgUp/PgDn by a page, Enter reads on by a page) and Tab
//! moves between the choices; until the last row has been drawn, Enter only scrolls and the
//! allow keys (`y`, `a`, `p`, or Enter on an allow choice) do nothing but say why. Denying
//! always works. Once everything has been seen, the dialog behaves as for a short command.
//!
//! A plan (plan mode's end) is shown the same way: the plan is the payload, and running it
//! waits until all of it has been on screen; keeping on planning opens a note field for what
//! should change.

use crate::protocol::{ApprovalDecision, PlanDecision, RequestKind, Response};

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
    /// Whether this is a plan (`n` opens the field for a note, in `reason`, sent with
    /// "keep planning").
    pub plan: bool,
    /// An approval's payload, to be seen in full before it can be allowed.
    pub payload: Option<Payload>,
}

/// An approval's payload and how much of it has been on screen. The view wraps it to the
/// dialog's width and reports each draw through [`Payload::fit`]; what counts as seen is
/// what was drawn, so no key can approve rows that never were.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Payload {
    /// The text in its visible form, lines as they are.
    pub text: String,
    /// The first row shown (of the text wrapped at the last draw's width).
    pub scroll: usize,
    /// The last draw: the width wrapped at, the rows in all, the rows shown.
    fit: Option<Fit>,
    /// Rows from the top that have been on screen (at the last draw's width).
    seen_rows: usize,
    /// Every row has been on screen; kept through a later resize.
    pub seen: bool,
    /// An allow key came while some of it was unseen: the view says why nothing happened.
    pub nudged: bool,
    /// The view's rows of the text at a width, kept between draws (a write's content can
    /// be large, and the spinner redraws while the dialog waits).
    pub(super) rows: Option<(usize, Vec<ratatui::text::Line<'static>>)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fit {
    width: usize,
    total: usize,
    rows: usize,
}

impl Payload {
    pub fn new(text: &str) -> Self {
        Self {
            text: crate::sanitize::visible(text),
            ..Self::default()
        }
    }

    /// A draw: the text wraps to `total` rows at `width` and `rows` of them fit. Returns the
    /// first row to show and counts the rows shown as seen. A new width (a resize) wraps
    /// differently: until everything was seen, reading starts again at the top.
    pub fn fit(&mut self, width: usize, total: usize, rows: usize) -> usize {
        if self.fit.is_some_and(|f| f.width != width) && !self.seen {
            self.scroll = 0;
            self.seen_rows = 0;
        }
        self.fit = Some(Fit { width, total, rows });
        self.scroll = self.scroll.min(total.saturating_sub(rows));
        // Rows count only when they join the seen ones from the top (scrolling cannot skip
        // ahead, see `scroll_by`; this holds whatever changed the offset).
        if rows > 0 && self.scroll <= self.seen_rows {
            self.seen_rows = self.seen_rows.max(self.scroll + rows).min(total);
        }
        if self.seen_rows >= total {
            self.seen = true;
        }
        self.scroll
    }

    /// More rows than the last draw could show.
    pub fn overflows(&self) -> bool {
        self.fit.is_some_and(|f| f.total > f.rows)
    }

    /// The rows below the view at the last draw.
    pub fn below(&self) -> usize {
        self.fit.map_or(0, |f| f.total.saturating_sub(self.scroll + f.rows))
    }

    /// Moves the view by `delta` rows; never past rows not yet seen.
    fn scroll_by(&mut self, delta: isize) {
        let Some(fit) = self.fit else { return };
        let mut end = fit.total.saturating_sub(fit.rows);
        if !self.seen {
            end = end.min(self.seen_rows);
        }
        self.scroll = self.scroll.saturating_add_signed(delta).min(end);
    }

    /// A page: the rows shown less one, kept for context.
    fn page(&self) -> isize {
        let rows = self.fit.map_or(1, |f| f.rows.saturating_sub(1).max(1));
        isize::try_from(rows).unwrap_or(isize::MAX)
    }
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
                ..
            } => {
                // The payload: the whole command or content (`detail`), else the summary.
                // The summary leads only when it says something else (a write's path);
                // a command's summary is its first line, which the payload shows anyway.
                let payload = if detail.is_empty() { summary } else { detail };
                let own_summary = !detail.is_empty() && !detail.starts_with(summary.trim_end_matches('…'));
                let body = if own_summary {
                    format!("{tool}: {summary}\nwhy it needs you: {reason}")
                } else {
                    format!("{tool} · why it needs you: {reason}")
                };
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
                    body: crate::sanitize::visible(&body),
                    choices,
                    selected: 0,
                    reason: None,
                    approval: true,
                    plan: false,
                    payload: (!payload.is_empty()).then(|| Payload::new(payload)),
                });
            }
            RequestKind::Plan { plan, back_to } => {
                let answer = |decision| Response::Plan { decision, note: None };
                let mut choices = vec![choice(
                    'y',
                    &format!("run it (back to {})", back_to.as_str()),
                    answer(PlanDecision::Run),
                )];
                // Running it in workspace-write is a choice of its own only from another mode.
                if *back_to != crate::sandbox::Mode::WorkspaceWrite {
                    choices.push(choice(
                        'a',
                        "run it with edits auto-approved (workspace-write)",
                        answer(PlanDecision::RunAcceptingEdits),
                    ));
                }
                choices.push(choice(
                    'n',
                    "keep planning (and say what to change)",
                    answer(PlanDecision::KeepPlanning),
                ));
                return Some(Self {
                    id: id.to_owned(),
                    title: " Plan ready ".to_owned(),
                    body: "The model's plan (nothing has changed yet):".to_owned(),
                    choices,
                    selected: 0,
                    reason: None,
                    approval: false,
                    plan: true,
                    payload: Some(Payload::new(plan)),
                });
            }
            // A program's hook is asked of the program driving brute, never of the UI.
            RequestKind::Question { .. }
            | RequestKind::Hook { .. }
            | RequestKind::ReadBuffer { .. }
            | RequestKind::WriteBuffer { .. } => return None,
        };
        Some(Self {
            id: id.to_owned(),
            title,
            // Paths of the tree and messages name files: shown, never acted on.
            body: crate::sanitize::visible(&body),
            choices,
            selected,
            reason: None,
            approval: false,
            plan: false,
            payload: None,
        })
    }

    /// Some of the payload has not been on screen yet: nothing may allow the call.
    pub fn unseen(&self) -> bool {
        self.payload.as_ref().is_some_and(|p| !p.seen)
    }

    /// Whether choice `index` lets the call (or the plan) run.
    fn allows(&self, index: usize) -> bool {
        self.choices.get(index).is_some_and(|c| match &c.response {
            Response::Approval { decision, .. } => *decision != ApprovalDecision::Deny,
            Response::Plan { decision, .. } => *decision != PlanDecision::KeepPlanning,
            _ => false,
        })
    }

    /// What the text field sends: an approval's denial with its reason, or a plan's "keep
    /// planning" with its note (`None`: nothing typed).
    fn with_text(&self, text: Option<String>) -> Response {
        match self.plan {
            true => Response::Plan {
                decision: PlanDecision::KeepPlanning,
                note: text,
            },
            false => Response::Approval {
                decision: ApprovalDecision::Deny,
                reason: text,
            },
        }
    }

    /// The response for a choice: an approval's denial first asks for a reason; an allow
    /// waits until the whole payload was seen.
    fn pick(&mut self, index: usize) -> ConfirmOutcome {
        if self.allows(index) && self.unseen() {
            if let Some(payload) = &mut self.payload {
                payload.nudged = true;
            }
            return ConfirmOutcome::Open;
        }
        let Some(choice) = self.choices.get(index) else {
            return ConfirmOutcome::Open;
        };
        if (self.approval || self.plan) && choice.key == 'n' {
            self.reason = Some(String::new());
            return ConfirmOutcome::Open;
        }
        ConfirmOutcome::Done(choice.response.clone())
    }

    /// Esc: an approval opens the reason field (Esc there denies without one; in a plan's
    /// note field it keeps planning without a note); any other confirmation is cancelled.
    pub fn escape(&mut self) -> ConfirmOutcome {
        match (&self.reason, self.approval) {
            (Some(_), _) => ConfirmOutcome::Done(self.with_text(None)),
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

    /// The payload scrolls (it did not fit the last draw): the arrows move it, not the
    /// highlighted choice (Tab does that).
    pub fn scrolls(&self) -> bool {
        self.payload.as_ref().is_some_and(Payload::overflows)
    }

    /// ↑: the payload up a row when it scrolls, else the choice above.
    pub fn up(&mut self) {
        match &mut self.payload {
            Some(payload) if payload.overflows() => payload.scroll_by(-1),
            _ => self.previous_choice(),
        }
    }

    /// ↓: the payload down a row when it scrolls, else the choice below.
    pub fn down(&mut self) {
        match &mut self.payload {
            Some(payload) if payload.overflows() => payload.scroll_by(1),
            _ => self.next_choice(),
        }
    }

    /// PgUp / PgDn (`pages` of them): the payload by a page.
    pub fn page(&mut self, pages: isize) {
        if let Some(payload) = &mut self.payload {
            payload.scroll_by(pages.saturating_mul(payload.page()));
        }
    }

    /// Tab: the next choice.
    pub fn next_choice(&mut self) {
        self.selected = (self.selected + 1).min(self.choices.len().saturating_sub(1));
    }

    /// Shift-Tab: the previous choice.
    pub fn previous_choice(&mut self) {
        self.selected = self.selected.saturating_sub(1);
    }

    /// Enter: the highlighted choice, or the denial with the reason typed. On an allow
    /// choice while some of the payload is unseen, it reads on by a page instead.
    pub fn enter(&mut self) -> ConfirmOutcome {
        if let Some(reason) = &self.reason {
            let reason = reason.trim().to_owned();
            return ConfirmOutcome::Done(self.with_text((!reason.is_empty()).then_some(reason)));
        }
        if self.allows(self.selected)
            && self.unseen()
            && let Some(payload) = &mut self.payload
            && payload.below() > 0
        {
            payload.scroll_by(payload.page());
            return ConfirmOutcome::Open;
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
                call_id: String::new(),
                input: serde_json::Value::Null,
            },
        )
        .unwrap()
    }

    /// `confirm` as a draw would leave it: its payload wrapped to `total` rows, all shown.
    fn drawn(mut confirm: Confirm) -> Confirm {
        if let Some(payload) = &mut confirm.payload {
            payload.fit(60, 1, 5);
        }
        confirm
    }

    #[test]
    fn approvals_allow_or_deny_with_a_reason() {
        let allow = |decision| ConfirmOutcome::Done(Response::Approval { decision, reason: None });
        let approval = || drawn(approval());
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

    const HIDDEN_TAIL: &str = "touch OUTSIDE";

    /// `echo status`, 60 newlines, then the payload.
    fn long_approval() -> Confirm {
        Confirm::for_request(
            "a2",
            &RequestKind::Approval {
                tool: "shell".into(),
                summary: "echo status".into(),
                detail: format!("echo status{}{HIDDEN_TAIL}", "\n".repeat(60)),
                reason: "it asks to run without the sandbox: needs the network".into(),
                call_id: String::new(),
                input: serde_json::Value::Null,
            },
        )
        .unwrap()
    }

    fn payload(confirm: &mut Confirm) -> &mut Payload {
        confirm.payload.as_mut().unwrap()
    }

    #[test]
    fn the_payload_is_the_whole_command_made_visible() {
        let mut d = long_approval();
        assert_eq!(
            d.body,
            "shell · why it needs you: it asks to run without the sandbox: needs the network"
        );
        assert_eq!(payload(&mut d).text.lines().count(), 61);
        assert!(payload(&mut d).text.ends_with(HIDDEN_TAIL));
        let d = Confirm::for_request(
            "a3",
            &RequestKind::Approval {
                tool: "write".into(),
                summary: "/etc/\u{1b}]0;t\u{7}x".into(),
                detail: "a\u{1b}[2Jb\r\n".into(),
                reason: "outside".into(),
                call_id: String::new(),
                input: serde_json::Value::Null,
            },
        )
        .unwrap();
        assert_eq!(d.body, "write: /etc/␛]0;t␇x\nwhy it needs you: outside");
        assert_eq!(d.payload.unwrap().text, "a␛[2Jb␍\n");
    }

    #[test]
    fn nothing_allows_while_some_of_the_payload_is_unseen() {
        let once = ConfirmOutcome::Done(Response::Approval {
            decision: ApprovalDecision::Once,
            reason: None,
        });
        let mut d = long_approval();
        // Never drawn: nothing has been seen.
        assert_eq!(d.enter(), ConfirmOutcome::Open);
        for c in ['y', 'a', 'p', 'Y'] {
            assert_eq!(d.key(c), ConfirmOutcome::Open, "{c}");
        }
        assert!(payload(&mut d).nudged, "the view says why nothing happened");
        // Drawn: 61 rows, 10 in view.
        assert_eq!(payload(&mut d).fit(40, 61, 10), 0);
        assert!(d.unseen() && d.scrolls());
        assert_eq!(d.key('y'), ConfirmOutcome::Open);
        // Enter on an allow choice reads on by a page (one row kept)...
        assert_eq!(d.enter(), ConfirmOutcome::Open);
        assert_eq!(payload(&mut d).scroll, 9);
        // ...and no key skips past rows that were never drawn.
        for _ in 0..10 {
            d.enter();
            d.page(1);
            d.down();
        }
        assert_eq!(payload(&mut d).scroll, 10, "only as far as the last row drawn");
        // Arrows scroll the payload; Tab moves the choice.
        d.up();
        assert_eq!((payload(&mut d).scroll, d.selected), (9, 0));
        d.next_choice();
        d.previous_choice();
        assert_eq!(d.selected, 0);
        // Reading on, draw by draw, until the last row was on screen.
        let mut draws = 0;
        while d.unseen() {
            let scroll = payload(&mut d).scroll;
            payload(&mut d).fit(40, 61, 10);
            assert!(payload(&mut d).scroll <= scroll + 9);
            d.page(1);
            draws += 1;
            assert!(draws < 20, "never seen");
        }
        assert_eq!(payload(&mut d).below(), 0);
        assert_eq!(d.enter(), once, "seen: Enter allows as for a short command");
    }

    #[test]
    fn denying_never_waits_and_a_resize_starts_reading_again() {
        let mut d = long_approval();
        assert_eq!(d.key('n'), ConfirmOutcome::Open, "n opens the reason field at once");
        assert_eq!(
            d.enter(),
            ConfirmOutcome::Done(Response::Approval {
                decision: ApprovalDecision::Deny,
                reason: None
            })
        );
        let mut d = long_approval();
        d.key('4');
        assert_eq!(d.enter(), ConfirmOutcome::Open, "Enter on deny asks why, unseen or not");
        assert_eq!(d.reason.as_deref(), Some(""));

        let mut d = long_approval();
        payload(&mut d).fit(40, 61, 30);
        d.page(1);
        payload(&mut d).fit(40, 61, 30);
        assert!(d.unseen(), "rows 59 and 60 not yet drawn");
        // Another width wraps differently: reading starts at the top again.
        assert_eq!(payload(&mut d).fit(30, 70, 30), 0);
        d.page(1);
        d.page(1);
        assert_eq!(
            payload(&mut d).fit(30, 70, 30),
            30,
            "at most to the first row not drawn"
        );
        assert!(d.unseen());
        d.page(1);
        payload(&mut d).fit(30, 70, 30);
        assert!(!d.unseen());
        // Once seen, a resize does not take it back.
        payload(&mut d).fit(50, 61, 5);
        assert!(!d.unseen());
        assert_eq!(
            d.key('a'),
            ConfirmOutcome::Done(Response::Approval {
                decision: ApprovalDecision::Session,
                reason: None
            })
        );
    }
}
