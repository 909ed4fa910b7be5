//! Whose change is it: the turn's (its built-in tools, its commands, its hooks) or the
//! person's, who may save a file in an editor while a turn runs.
//!
//! A file's status-change time (`ctime`) is stamped by the kernel at every change and cannot be
//! set back. A changed file the turn's tools wrote last still carries the `ctime` that write
//! left. Otherwise its `ctime` is compared with the spans during which the turn's commands and
//! hooks ran ([`crate::busy`]): outside all of them, nothing of brute's was running, so the
//! change is the person's, and undo keeps it (listed; forced, it goes too). Inside one, brute
//! cannot tell the command from the person: undo takes it back as the turn's, and lists it.
//!
//! Only files whose end state holds content are judged: restoring a file the person deleted
//! loses nothing, a directory is only ever removed when empty, and a link holds no work.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::checkpoint::Change;

/// What a turn's own tools did, for telling its changes from the person's.
#[derive(Debug, Clone, Default)]
pub struct TurnWork {
    /// The paths the turn's built-in tools changed (absolute).
    pub wrote: Vec<PathBuf>,
    /// For each of them, the status-change time the tool's last change left (`None`: it
    /// removed the path).
    pub last_writes: Vec<(PathBuf, Option<u64>)>,
    /// When the turn's commands and hooks ran: `(from, to)` in ns since the epoch.
    pub busy: Vec<(u64, u64)>,
}

impl TurnWork {
    /// A turn whose every change so far counts as its commands' (one span from the epoch to
    /// now): for callers that drive the tree themselves, as tests do.
    pub fn all_by_commands() -> Self {
        Self {
            busy: vec![(0, crate::busy::now_ns())],
            ..Self::default()
        }
    }
}

/// Sorts `changes`: the paths the person changed (kept by undo) and those changed while a
/// command of the turn ran, where brute cannot tell (taken back, and listed). `last_writes` are
/// keyed by spelled relative path (see [`super::relpath`]). Both lists are sorted.
pub fn persons(
    changes: &[Change],
    last_writes: &BTreeMap<String, Option<u64>>,
    busy: &[(u64, u64)],
) -> (Vec<String>, Vec<String>) {
    let (mut person, mut unsure) = (Vec::new(), Vec::new());
    for change in changes {
        let Some(after) = &change.after else {
            continue;
        };
        // Old manifests recorded no ctime: nothing to judge by.
        if after.dir || after.link || after.ctime_ns == 0 {
            continue;
        }
        if last_writes.get(&change.path) == Some(&Some(after.ctime_ns)) {
            continue; // the tool's own write is the last
        }
        if busy.iter().any(|(from, to)| (*from..=*to).contains(&after.ctime_ns)) {
            unsure.push(change.path.clone());
        } else {
            person.push(change.path.clone());
        }
    }
    person.sort();
    unsure.sort();
    (person, unsure)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::checkpoint::FileState;

    fn file(ctime_ns: u64) -> Option<FileState> {
        Some(FileState {
            id: "x".into(),
            size: 1,
            mode: 0o100644,
            mtime_ns: ctime_ns,
            ctime_ns,
            ..Default::default()
        })
    }

    fn change(path: &str, after: Option<FileState>) -> Change {
        Change {
            path: path.into(),
            before: None,
            after,
        }
    }

    #[test]
    fn a_change_is_the_tools_the_commands_or_the_persons() {
        let changes = [
            change("tool.txt", file(100)),
            change("edited-after-tool.txt", file(300)),
            change("command.txt", file(150)),
            change("person.txt", file(500)),
            change("deleted.txt", None),
        ];
        let last = BTreeMap::from([
            ("tool.txt".to_owned(), Some(100)),
            ("edited-after-tool.txt".to_owned(), Some(90)),
        ]);
        let (person, unsure) = persons(&changes, &last, &[(120, 200)]);
        assert_eq!(person, ["edited-after-tool.txt", "person.txt"]);
        assert_eq!(unsure, ["command.txt"]);
    }
}
