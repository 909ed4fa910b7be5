//! The mode the person picks (`--permission-mode`, `/permissions`, Shift-Tab): one of the
//! sandbox modes, or plan mode.
//!
//! Plan mode is the read-only sandbox for commands and more: tools that change anything
//! outside it are neither offered nor run ([`crate::tool::plan`]), the model is told it is
//! planning, and it ends with a plan the person may approve. Approving goes back to the
//! sandbox mode the session was in before (kept in [`crate::tool::state::Access::plan`]).

use serde::{Deserialize, Serialize};

use crate::sandbox;

/// A sandbox mode, or planning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    ReadOnly,
    #[default]
    WorkspaceWrite,
    FullAccess,
    Plan,
}

impl Mode {
    pub const NAMES: &'static [&'static str] = &["read-only", "workspace-write", "full-access", "plan"];

    /// Parses a sandbox mode's name or `plan`.
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim() {
            "plan" => Some(Self::Plan),
            other => sandbox::Mode::parse(other).map(Self::from),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            other => other.sandbox().as_str(),
        }
    }

    /// The sandbox commands run in: planning is read-only.
    pub fn sandbox(self) -> sandbox::Mode {
        match self {
            Self::ReadOnly | Self::Plan => sandbox::Mode::ReadOnly,
            Self::WorkspaceWrite => sandbox::Mode::WorkspaceWrite,
            Self::FullAccess => sandbox::Mode::FullAccess,
        }
    }

    /// The next mode for Shift-Tab, in Claude Code's order (edits asked → edits accepted →
    /// plan): read-only → workspace-write → plan → read-only. Full access is never a next
    /// step (it stays behind `/permissions full-access` and its confirmation); from it,
    /// Shift-Tab goes to plan.
    pub fn next(self) -> Self {
        match self {
            Self::ReadOnly => Self::WorkspaceWrite,
            Self::WorkspaceWrite | Self::FullAccess => Self::Plan,
            Self::Plan => Self::ReadOnly,
        }
    }
}

impl From<sandbox::Mode> for Mode {
    fn from(mode: sandbox::Mode) -> Self {
        match mode {
            sandbox::Mode::ReadOnly => Self::ReadOnly,
            sandbox::Mode::WorkspaceWrite => Self::WorkspaceWrite,
            sandbox::Mode::FullAccess => Self::FullAccess,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_shift_tab_never_reaches_full_access() {
        for name in Mode::NAMES {
            assert_eq!(Mode::parse(name).map(Mode::as_str), Some(*name));
        }
        assert_eq!(
            Mode::WorkspaceWrite.next(),
            Mode::Plan,
            "plan comes first from the default"
        );
        let mut mode = Mode::FullAccess;
        for _ in 0..10 {
            mode = mode.next();
            assert_ne!(mode, Mode::FullAccess);
        }
        assert_eq!(Mode::Plan.sandbox(), sandbox::Mode::ReadOnly);
    }
}
