//! When this session's own commands ran: spans of wall-clock time during which a command
//! brute started (a tool call, a hook) was running.
//!
//! A file's status-change time (`ctime`) is stamped by the kernel at every change and cannot
//! be set back by anyone. So a file a turn's tools did not write last, whose `ctime` falls
//! outside every span, was changed while nothing of brute's ran: by the person at the
//! keyboard (an editor's save), and undo must keep it. One that falls inside a span may be the
//! command's or the person's; undo lists it (see `session::whose`).
//!
//! Timestamps are nanoseconds since the Unix epoch, the clock `ctime` uses. The kernel stamps
//! files from a coarse clock that may lag the precise one by a tick, so a span starts
//! [`START_SLACK`] early.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// How much earlier than the precise clock a span starts: more than a kernel tick (1–10 ms),
/// so a change the command made at once is inside its span.
pub const START_SLACK: Duration = Duration::from_millis(50);

/// Nanoseconds since the Unix epoch, now.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The spans of one session, oldest first.
#[derive(Debug, Default)]
pub struct Spans {
    spans: Mutex<Vec<(u64, Option<u64>)>>,
}

/// A span being run; it ends when dropped (also when the call is interrupted or dropped).
pub struct Busy {
    spans: Arc<Spans>,
    index: usize,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut spans = self.spans.spans.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(span) = spans.get_mut(self.index) {
            span.1 = Some(now_ns());
        }
    }
}

impl Spans {
    /// Starts a span: call it before the command starts, keep the guard until it has ended.
    pub fn open(self: &Arc<Self>) -> Busy {
        let from = now_ns().saturating_sub(u64::try_from(START_SLACK.as_nanos()).unwrap_or(0));
        let mut spans = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        spans.push((from, None));
        Busy {
            spans: self.clone(),
            index: spans.len() - 1,
        }
    }

    /// A mark: [`Spans::since`] it gives the spans opened after it.
    pub fn mark(&self) -> usize {
        self.spans.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The spans opened after `mark`, as `(from, to)`; one still running ends now.
    pub fn since(&self, mark: usize) -> Vec<(u64, u64)> {
        let now = now_ns();
        let spans = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        spans
            .get(mark..)
            .unwrap_or_default()
            .iter()
            .map(|(from, to)| (*from, to.unwrap_or(now)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_covers_what_happens_while_it_is_open() {
        let spans = Arc::new(Spans::default());
        let mark = spans.mark();
        let busy = spans.open();
        let during = now_ns();
        assert!(
            spans
                .since(mark)
                .iter()
                .all(|(from, to)| *from <= during && during <= *to)
        );
        drop(busy);
        let after = spans.since(mark);
        assert_eq!(after.len(), 1);
        assert!(after[0].0 <= during && during <= after[0].1);
        assert!(spans.since(spans.mark()).is_empty());
    }
}
