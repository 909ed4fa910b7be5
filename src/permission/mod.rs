//! Permissions: whether a tool call may run, must be asked about, or is refused.
//!
//! [`rules`] holds the person's allow / deny / ask rules (Claude-Code style, such as
//! `shell(cargo test*)`); the approval step consults them before the sandbox mode decides.
//! The mode the person picks (a sandbox mode, or plan mode) is [`crate::protocol::Mode`].

pub mod approvals;
pub mod rules;

pub use crate::protocol::Mode;

pub use rules::{Decision, Matched, PermissionsConfig, Rule, RuleError, RuleKind, RuleSubject, Rules, Source};
