//! Doom-loop detection: a model that calls the same tool with the same arguments again and
//! again, or goes round a cycle of calls (A, B, A, B, A, B), is usually stuck. The detector
//! watches one user turn's calls (across the turn loop's iterations) and returns a note for
//! the call that completes such a repetition; the loop appends it to that call's result, so
//! the model reads it (and the session file and the person see the same text).
//!
//! Arguments are compared as parsed JSON, so key order and spacing do not matter.

use serde_json::Value;

use crate::provider::ToolCall;

/// How many times in a row a call (or a cycle of calls) must repeat to be noted.
pub const REPEATS: usize = 3;
/// The longest cycle looked for.
pub const MAX_PERIOD: usize = 4;
/// Calls remembered (enough for the longest cycle repeated).
const WINDOW: usize = MAX_PERIOD * REPEATS;

/// One call as the detector compares it: the tool's name and its parsed arguments.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    name: String,
    args: Value,
}

/// A call as compared: its parsed arguments (their text when they are not JSON).
fn seen(call: &ToolCall) -> Seen {
    Seen {
        name: call.name.clone(),
        args: call.input_or_text(),
    }
}

/// Watches one turn's tool calls (see the module docs).
#[derive(Debug, Default)]
pub struct DoomLoop {
    recent: Vec<Seen>,
    /// Calls that failed this turn and how many times in a row each did.
    failing: Vec<(Seen, usize)>,
}

/// From the how-manyth identical failing call on the result says what to do instead.
pub const FAILURES_NOTED: usize = 3;
/// Without a person to interrupt (`brute -p`), the identical failing call that ends the turn.
pub const FAILURES_ENDING_THE_TURN: usize = 5;

use crate::tool::exec::ordinal;

impl DoomLoop {
    /// Forgets the calls seen (a new user turn).
    pub fn reset(&mut self) {
        self.recent.clear();
        self.failing.clear();
    }

    /// How manyth identical failing call this one would be if it fails again, from
    /// [`FAILURES_NOTED`] on (then its failed result says what to do instead).
    pub fn failing_note(&self, call: &ToolCall) -> Option<usize> {
        let nth = self.failures(&seen(call)) + 1;
        (nth >= FAILURES_NOTED).then_some(nth)
    }

    /// Records how a call ended; returns how many times in a row it has now failed.
    pub fn finished(&mut self, call: &ToolCall, failed: bool) -> usize {
        let call = seen(call);
        let count = self.failures(&call);
        self.failing.retain(|(seen, _)| *seen != call);
        if failed {
            self.failing.push((call, count + 1));
            count + 1
        } else {
            0
        }
    }

    fn failures(&self, call: &Seen) -> usize {
        self.failing
            .iter()
            .find(|(seen, _)| seen == call)
            .map_or(0, |(_, count)| *count)
    }

    /// Records a call and returns the note for its result when it completes a repetition.
    pub fn observe(&mut self, call: &ToolCall) -> Option<String> {
        if self.recent.len() == WINDOW {
            self.recent.remove(0);
        }
        self.recent.push(seen(call));
        self.identical_run()
            .or_else(|| (2..=MAX_PERIOD).find_map(|period| self.cycle(period)))
    }

    /// The same call `REPEATS` or more times in a row.
    fn identical_run(&self) -> Option<String> {
        let last = self.recent.last()?;
        let run = self.recent.iter().rev().take_while(|seen| *seen == last).count();
        (run >= REPEATS).then(|| {
            format!(
                "Note: this is the {} identical call in a row (`{}` with the same arguments); the result did not change the outcome before. Try a different approach or ask the user.",
                ordinal(run),
                last.name
            )
        })
    }

    /// The last `period * REPEATS` calls are one cycle of `period` calls, repeated, and the
    /// cycle has no shorter period of its own (that one is reported instead).
    fn cycle(&self, period: usize) -> Option<String> {
        let span = period * REPEATS;
        let tail = self.recent.get(self.recent.len().checked_sub(span)?..)?;
        let cycle = &tail[..period];
        let repeats = tail.chunks(period).all(|chunk| chunk == cycle);
        let shorter =
            (1..period).any(|p| period.is_multiple_of(p) && cycle.iter().enumerate().all(|(i, s)| *s == cycle[i % p]));
        (repeats && !shorter).then(|| {
            let names: Vec<String> = cycle.iter().map(|s| format!("`{}`", s.name)).collect();
            format!(
                "Note: the last {span} calls repeat the same cycle of {period} calls ({}) {REPEATS} times with the same arguments; the results did not change the outcome before. Try a different approach or ask the user.",
                names.join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, args: &str) -> ToolCall {
        ToolCall::new("id", name, args)
    }

    fn feed(calls: &[(&str, &str)]) -> Vec<Option<String>> {
        let mut detector = DoomLoop::default();
        calls
            .iter()
            .map(|(name, args)| detector.observe(&c(name, args)))
            .collect()
    }

    #[test]
    fn three_identical_calls_in_a_row_are_noted() {
        let notes = feed(&[
            ("read", r#"{"file_path":"a","start_line":1}"#),
            ("read", r#"{"start_line":1, "file_path":"a"}"#),
            ("read", r#"{ "file_path": "a", "start_line": 1 }"#),
            ("read", r#"{"file_path":"a","start_line":1}"#),
        ]);
        assert_eq!(notes[..2], [None, None]);
        assert_eq!(
            notes[2].as_deref(),
            Some(
                "Note: this is the 3rd identical call in a row (`read` with the same arguments); the result did not change the outcome before. Try a different approach or ask the user."
            )
        );
        assert!(notes[3].as_deref().unwrap().contains("4th identical call"));
    }

    #[test]
    fn cycles_of_two_to_four_calls_are_noted() {
        let a = ("read", r#"{"file_path":"a"}"#);
        let b = ("shell", r#"{"command":"make"}"#);
        let c = ("patch", r#"{"file_path":"a","old_string":"x","new_string":"y"}"#);
        let d = ("fs_search", r#"{"pattern":"x"}"#);
        let notes = feed(&[a, b, a, b, a, b]);
        assert!(notes[..5].iter().all(Option::is_none), "{notes:?}");
        assert!(
            notes[5]
                .as_deref()
                .unwrap()
                .contains("cycle of 2 calls (`read`, `shell`) 3 times")
        );
        let notes = feed(&[a, b, c, a, b, c, a, b, c]);
        assert!(notes[..8].iter().all(Option::is_none), "{notes:?}");
        assert!(notes[8].as_deref().unwrap().contains("cycle of 3 calls"));
        let notes = feed(&[a, b, c, d, a, b, c, d, a, b, c, d]);
        assert!(notes[..11].iter().all(Option::is_none), "{notes:?}");
        assert!(notes[11].as_deref().unwrap().contains("cycle of 4 calls"));
    }

    #[test]
    fn identical_failures_are_counted_until_one_succeeds() {
        let mut detector = DoomLoop::default();
        let (name, args) = ("read", r#"{"file_path":"missing"}"#);
        assert_eq!(detector.failing_note(&c(name, args)), None);
        assert_eq!(detector.finished(&c(name, args), true), 1);
        assert_eq!(detector.failing_note(&c(name, args)), None);
        assert_eq!(detector.finished(&c(name, r#"{ "file_path": "missing" }"#), true), 2);
        assert_eq!(detector.failing_note(&c(name, args)), Some(3));
        assert_eq!(detector.failing_note(&c(name, r#"{"file_path":"other"}"#)), None);
        assert_eq!(detector.finished(&c(name, args), false), 0);
        assert_eq!(detector.failing_note(&c(name, args)), None);
        detector.finished(&c(name, args), true);
        detector.reset();
        assert_eq!(detector.finished(&c(name, args), true), 1);
    }

    #[test]
    fn no_false_positives() {
        let a = ("read", r#"{"file_path":"a"}"#);
        let b = ("read", r#"{"file_path":"b"}"#);
        // A, A, B: not three in a row.
        assert!(feed(&[a, a, b]).iter().all(Option::is_none));
        // Same tool, changed arguments.
        assert!(
            feed(&[
                ("read", r#"{"file_path":"a","start_line":1}"#),
                ("read", r#"{"file_path":"a","start_line":2}"#),
                ("read", r#"{"file_path":"a","start_line":3}"#),
            ])
            .iter()
            .all(Option::is_none)
        );
        // A cycle repeated only twice.
        assert!(feed(&[a, b, a, b]).iter().all(Option::is_none));
        // A, A, B, A, A, B is a cycle of 3, never called a cycle of its halves.
        let notes = feed(&[a, a, b, a, a, b, a, a, b]);
        assert!(notes[..8].iter().all(Option::is_none), "{notes:?}");
        assert!(notes[8].as_deref().unwrap().contains("cycle of 3 calls"));
        // After a reset nothing is remembered.
        let mut detector = DoomLoop::default();
        detector.observe(&c(a.0, a.1));
        detector.observe(&c(a.0, a.1));
        detector.reset();
        assert_eq!(detector.observe(&c(a.0, a.1)), None);
    }
}
