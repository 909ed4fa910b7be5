//! [`Held`]: the paths of a turn that undo and redo leave alone because another turn, or the
//! person, changed them meanwhile.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::manifest::Change;

/// The paths of a turn that undo and redo leave alone because another brute turn ran in the
/// project at the same time (see [`crate::session::activity`]). Both lists are sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// Changed while another turn ran, and not by this turn's own tools: either turn (a
    /// command, say) may have made the change. Moved only when forced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared: Vec<String>,
    /// Written by the other turn's own tools: its work, never moved by this turn's undo.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign: Vec<String>,
    /// Changed by the person while the turn ran (see [`crate::session::whose`]): kept unless forced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub person: Vec<String>,
    /// Changed while one of the turn's commands ran, not by its tools: taken back as the
    /// turn's, and listed (it may have been the person's save at that moment).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsure: Vec<String>,
}

impl Held {
    pub fn is_empty(&self) -> bool {
        self.shared.is_empty() && self.foreign.is_empty() && self.person.is_empty() && self.unsure.is_empty()
    }

    pub(super) fn has(list: &[String], path: &str) -> bool {
        list.binary_search_by(|p| p.as_str().cmp(path)).is_ok()
    }

    /// Sorts `changes` of a turn that overlapped others: what `own` (paths this turn's tools
    /// wrote; a directory covers what is under it) covers is the turn's; what the other
    /// turns' tools wrote (`theirs`) is theirs; the rest is shared. A path both wrote is
    /// shared.
    pub fn classify(changes: &[Change], own: &[String], theirs: &BTreeSet<String>) -> Self {
        let covered = |path: &str| {
            own.iter()
                .any(|o| path == o || path.strip_prefix(o.as_str()).is_some_and(|rest| rest.starts_with('/')))
        };
        let mut held = Held::default();
        for change in changes {
            let (ours, other) = (covered(&change.path), theirs.contains(&change.path));
            match (ours, other) {
                (true, false) => {}
                (false, true) => held.foreign.push(change.path.clone()),
                _ => held.shared.push(change.path.clone()),
            }
        }
        held
    }

    pub(super) fn holds(&self, path: &str, force: bool) -> bool {
        let has = |list: &[String]| Self::has(list, path);
        has(&self.foreign) || (!force && (has(&self.shared) || has(&self.person)))
    }
}
