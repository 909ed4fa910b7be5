//! Telling a person in another window that brute needs them: a terminal bell or an OSC 9
//! desktop notification (`notify = "bel" | "osc9" | "off"`).
//!
//! A finished turn notifies only while the terminal is not focused (focus reporting, `?1004`,
//! says so; a terminal that never reports focus counts as focused, so it stays quiet). A
//! waiting approval notifies whatever the focus: the turn cannot go on without the person.

use crate::tui::sanitize::sanitize;

/// How brute gets the person's attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Notify {
    /// The terminal bell (`BEL`): most terminals flash, beep or mark the tab.
    #[default]
    Bel,
    /// OSC 9, which iTerm2, WezTerm, kitty, Windows Terminal and others turn into a desktop
    /// notification carrying the message; followed by a bell for the rest.
    Osc9,
    /// Nothing.
    Off,
}

/// Why the person is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A turn ended while the terminal was not focused.
    TurnFinished,
    /// An approval dialog waits.
    ApprovalWaiting,
}

impl Notify {
    /// Reads the `notify` setting (`None` for anything else).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "bel" => Some(Self::Bel),
            "osc9" => Some(Self::Osc9),
            "off" => Some(Self::Off),
            _ => None,
        }
    }

    /// The bytes to write for `reason`, given whether the terminal has focus; `None` when the
    /// person is not to be called.
    pub fn sequence(self, reason: Reason, focused: bool) -> Option<String> {
        if self == Self::Off || (reason == Reason::TurnFinished && focused) {
            return None;
        }
        let message = match reason {
            Reason::TurnFinished => "brute: the turn is done",
            Reason::ApprovalWaiting => "brute: an approval is waiting",
        };
        Some(match self {
            Self::Bel | Self::Off => "\u{7}".to_owned(),
            // The message is fixed text today; sanitized so a later dynamic one cannot end
            // the sequence early or smuggle escapes.
            Self::Osc9 => format!("\u{1b}]9;{}\u{7}", sanitize(message).replace(['\u{7}', '\u{1b}'], "")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_turn_calls_only_when_the_terminal_is_not_focused() {
        assert_eq!(Notify::Bel.sequence(Reason::TurnFinished, true), None);
        assert_eq!(
            Notify::Bel.sequence(Reason::TurnFinished, false).as_deref(),
            Some("\u{7}")
        );
        assert_eq!(
            Notify::Osc9.sequence(Reason::TurnFinished, false).as_deref(),
            Some("\u{1b}]9;brute: the turn is done\u{7}")
        );
        assert_eq!(Notify::Off.sequence(Reason::TurnFinished, false), None);
    }

    #[test]
    fn a_waiting_approval_calls_whatever_the_focus_unless_off() {
        assert_eq!(
            Notify::Bel.sequence(Reason::ApprovalWaiting, true).as_deref(),
            Some("\u{7}")
        );
        assert!(
            Notify::Osc9
                .sequence(Reason::ApprovalWaiting, true)
                .is_some_and(|s| s.starts_with("\u{1b}]9;brute: an approval"))
        );
        assert_eq!(Notify::Off.sequence(Reason::ApprovalWaiting, false), None);
    }

    #[test]
    fn the_setting_parses_its_three_values_only() {
        for name in crate::config::NOTIFY_CHANNELS {
            assert!(Notify::parse(name).is_some(), "{name}");
        }
        assert_eq!(Notify::parse("beep"), None);
    }
}
