//! [`TurnMove`]: what an undo or redo did, and its human summary.

use crate::session::{Turn, checkpoint};

/// What an undo or redo did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnMove {
    pub turn: u32,
    pub prompt: String,
    pub report: checkpoint::MoveReport,
    pub skipped: Vec<String>,
    pub rewound: bool,
    /// A forced undo of what the turn's undo had left (see [`Turn::left`]), not a whole turn.
    pub forced_left: bool,
}

impl TurnMove {
    pub(super) fn of(turn: Turn, report: checkpoint::MoveReport, rewound: bool) -> Self {
        Self {
            turn: turn.turn,
            prompt: turn.prompt,
            report,
            skipped: turn.skipped,
            rewound,
            forced_left: false,
        }
    }

    /// The paths this move left alone that a forced move would take: changed since, the
    /// person's, or maybe another turn's (never what another turn's tools wrote).
    pub fn left(&self, held: &checkpoint::Held) -> Vec<String> {
        let report = &self.report;
        let mut left: Vec<String> = report
            .conflicts
            .iter()
            .chain(&report.kept)
            .chain(report.concurrent.iter().filter(|p| !held.foreign.contains(p)))
            .cloned()
            .collect();
        left.sort();
        left.dedup();
        left
    }

    /// A human summary: what was restored with +/- line counts, what was left alone and why,
    /// and what the next command does. Paths are shown escaped (see [`crate::session::relpath::shown`]):
    /// a name cannot forge a line.
    pub fn describe(&self, verb: &str) -> String {
        let shown = crate::session::relpath::shown;
        // "undo"/"redo" in a preview, "undid"/"redid" after.
        let undo = verb.starts_with("und");
        let first = self.prompt.lines().next().unwrap_or("");
        let mut out = if self.forced_left {
            format!("{verb} what the undo of turn {} (\"{first}\") had left:", self.turn)
        } else {
            format!("{verb} turn {} (\"{first}\"):", self.turn)
        };
        let report = &self.report;
        if report.moved.is_empty() {
            out.push_str(" no file changes");
        }
        for moved in &report.moved {
            out.push_str(&format!(
                "\n  {} {} (+{} -{})",
                moved.action,
                shown(&moved.path),
                moved.added,
                moved.removed
            ));
        }
        let other = if undo {
            "`brute redo` (/redo)"
        } else {
            "`brute undo` (/undo)"
        };
        if !report.unsure.is_empty() {
            const NAMED: usize = 10;
            let mut names: Vec<String> = report.unsure.iter().take(NAMED).map(|p| shown(p)).collect();
            if report.unsure.len() > NAMED {
                names.push(format!("and {} more", report.unsure.len() - NAMED));
            }
            out.push_str(&format!(
                "\n  changed while a command of the turn ran, so taken as the turn's: {}; if one was your own edit, {other} brings it back",
                names.join(", ")
            ));
        }
        for path in &report.conflicts {
            out.push_str(&format!("\n  skipped {}: changed since the agent's turn", shown(path)));
        }
        for path in &report.kept {
            out.push_str(&format!(
                "\n  kept {}: you changed it while the turn ran, after the agent",
                shown(path)
            ));
        }
        for path in &report.concurrent {
            out.push_str(&format!(
                "\n  left alone {}: another brute turn ran in this project at the same time and may have made this change",
                shown(path)
            ));
        }
        for path in &report.missing {
            out.push_str(&format!(
                "\n  not restorable {}: its stored content is missing",
                shown(path)
            ));
        }
        for path in &self.skipped {
            out.push_str(&format!(
                "\n  not restorable {}: over the checkpoint size cap",
                shown(path)
            ));
        }
        if !report.conflicts.is_empty() || !report.kept.is_empty() {
            if undo {
                out.push_str(
                    "\n  `brute undo --force` (/undo force) takes back what was skipped or kept as well, before any older turn",
                );
            } else {
                out.push_str(
                    "\n  to overwrite what was skipped: `brute undo`, then `brute redo --force` (/redo force)",
                );
            }
        }
        if self.rewound {
            out.push_str(if undo {
                "\n  the conversation was rewound to before that turn"
            } else {
                "\n  the conversation is back as it was after that turn"
            });
        }
        if !self.forced_left {
            out.push_str(if undo {
                "\n  `brute redo` (/redo) re-applies the turn"
            } else {
                "\n  `brute undo` (/undo) takes it back again"
            });
        }
        out
    }
}
