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

/// Work that must be done before the session's first command starts (see
/// [`Spans::before_first`]).
pub type BeforeFirst = Box<dyn FnOnce() + Send>;

/// The spans of one session, oldest first.
#[derive(Default)]
pub struct Spans {
    spans: Mutex<Vec<(u64, Option<u64>)>>,
    /// Held shared by every open span, and alone by [`Spans::quiet`].
    gate: Arc<tokio::sync::RwLock<()>>,
    /// Done by the first span to open, before it opens; the others wait for it.
    before_first: Arc<tokio::sync::Mutex<Option<BeforeFirst>>>,
}

impl std::fmt::Debug for Spans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spans")
            .field("spans", &self.spans)
            .finish_non_exhaustive()
    }
}

/// No command of the session runs while this is held, and none starts until it is dropped
/// (see [`Spans::quiet`]).
pub struct Quiet {
    _gate: tokio::sync::OwnedRwLockWriteGuard<()>,
}

/// A point in a session's spans (a turn's start), for [`Spans::since`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    index: usize,
    at: u64,
}

impl Mark {
    /// Before every span: [`Spans::since`] it gives them all.
    pub const ORIGIN: Mark = Mark { index: 0, at: 0 };
}

/// A span being run; it ends when dropped (also when the call is interrupted or dropped).
pub struct Busy {
    spans: Arc<Spans>,
    index: usize,
    _gate: tokio::sync::OwnedRwLockReadGuard<()>,
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
    /// Sets work to do before the first span opens: a one-shot run starts its file watcher
    /// only when a command is about to run (a run without one never pays for it). Blocking
    /// work is fine: it runs off the async runtime, once, and every span waits for it.
    pub fn before_first(&self, work: BeforeFirst) {
        if let Ok(mut slot) = self.before_first.try_lock() {
            *slot = Some(work);
        }
    }

    /// Starts a span: call it before the command starts, keep the guard until it has ended.
    /// Waits while the session is held [quiet](Spans::quiet), and for the work to do before
    /// the first span (see [`Spans::before_first`]).
    pub async fn open(self: &Arc<Self>) -> Busy {
        let mut first = self.before_first.clone().lock_owned().await;
        if let Some(work) = first.take() {
            // The lock goes with the work: a span whose opener is cancelled meanwhile still
            // holds the others back until the work is done. A panic in it is the work's own
            // failure: the command still runs.
            let _ = tokio::task::spawn_blocking(move || {
                work();
                drop(first);
            })
            .await;
        } else {
            drop(first);
        }
        let gate = self.gate.clone().read_owned().await;
        self.open_with(gate)
    }

    /// [`Spans::open`] for code that cannot wait: `None` while the session is held quiet or
    /// another span is doing the work before the first; that work is done here otherwise.
    pub fn try_open(self: &Arc<Self>) -> Option<Busy> {
        let work = self.before_first.try_lock().ok()?.take();
        if let Some(work) = work {
            work();
        }
        let gate = self.gate.clone().try_read_owned().ok()?;
        Some(self.open_with(gate))
    }

    fn open_with(self: &Arc<Self>, gate: tokio::sync::OwnedRwLockReadGuard<()>) -> Busy {
        let from = now_ns().saturating_sub(u64::try_from(START_SLACK.as_nanos()).unwrap_or(0));
        let mut spans = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        spans.push((from, None));
        Busy {
            spans: self.clone(),
            index: spans.len() - 1,
            _gate: gate,
        }
    }

    /// Holds the session quiet: `None` while a command of its runs; else no command starts
    /// until the hold is dropped. For work a running command must not race: an editor writing
    /// a file by path, where a command could swap a directory for a link in between.
    pub fn quiet(&self) -> Option<Quiet> {
        self.gate
            .clone()
            .try_write_owned()
            .ok()
            .map(|gate| Quiet { _gate: gate })
    }

    /// A mark: [`Spans::since`] it gives the spans that ran after it.
    pub fn mark(&self) -> Mark {
        let spans = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        Mark {
            index: spans.len(),
            at: now_ns(),
        }
    }

    /// The spans that ran after `mark`, as `(from, to)`; one still running ends now. Those
    /// opened before it count when they were still open at it: a background process started
    /// in an earlier turn that writes during this one is a command's, not the person's.
    pub fn since(&self, mark: Mark) -> Vec<(u64, u64)> {
        let now = now_ns();
        let spans = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        spans
            .iter()
            .enumerate()
            .filter(|(i, (_, to))| *i >= mark.index || to.is_none_or(|to| to > mark.at))
            .map(|(_, (from, to))| (*from, to.unwrap_or(now)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_span_covers_what_happens_while_it_is_open() {
        let spans = Arc::new(Spans::default());
        let mark = spans.mark();
        let busy = spans.open().await;
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

    #[tokio::test]
    async fn a_span_still_open_at_a_mark_counts_after_it() {
        let spans = Arc::new(Spans::default());
        let long = spans.open().await;
        let ended = spans.open().await;
        drop(ended);
        let mark = spans.mark();
        let during = now_ns();
        let after = spans.since(mark);
        assert_eq!(after.len(), 1, "only the span still open at the mark: {after:?}");
        assert!(after[0].0 <= during && during <= after[0].1);
        drop(long);
        assert_eq!(spans.since(mark).len(), 1);
    }

    #[tokio::test]
    async fn the_work_before_the_first_span_is_done_once_and_every_span_waits_for_it() {
        let spans = Arc::new(Spans::default());
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = done.clone();
        spans.before_first(Box::new(move || {
            let _ = started_tx.send(());
            let _ = go_rx.recv();
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
        let first = tokio::spawn({
            let spans = spans.clone();
            async move { spans.open().await }
        });
        tokio::task::spawn_blocking(move || started_rx.recv())
            .await
            .unwrap()
            .unwrap();
        let second = tokio::spawn({
            let spans = spans.clone();
            async move { spans.open().await }
        });
        tokio::task::yield_now().await;
        assert!(spans.try_open().is_none(), "the work is still being done");
        assert!(!first.is_finished() && !second.is_finished(), "both wait for the work");
        // The first opener is cancelled (an interrupted call): the work goes on, and the
        // others still wait for it.
        first.abort();
        assert!(first.await.is_err_and(|e| e.is_cancelled()));
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!second.is_finished(), "the second still waits for the work");
        assert!(spans.try_open().is_none(), "the work is still being done");
        assert!(spans.since(Mark::ORIGIN).is_empty(), "no span opened before it is done");
        go_tx.send(()).unwrap();
        let opened = second.await.unwrap();
        assert_eq!(done.load(std::sync::atomic::Ordering::SeqCst), 1);
        drop(opened);
        drop(spans.open().await);
        assert!(spans.try_open().is_some());
        assert_eq!(done.load(std::sync::atomic::Ordering::SeqCst), 1, "done once");
    }

    #[tokio::test]
    async fn no_command_starts_while_the_session_is_held_quiet() {
        let spans = Arc::new(Spans::default());
        let busy = spans.open().await;
        assert!(spans.quiet().is_none(), "a command runs");
        assert!(spans.try_open().is_some(), "commands run side by side");
        drop(busy);
        let quiet = spans.quiet().expect("nothing runs");
        let waiting = tokio::spawn({
            let spans = spans.clone();
            async move { spans.open().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "a command waits for the hold");
        assert!(spans.try_open().is_none());
        drop(quiet);
        let busy = waiting.await.unwrap();
        assert!(spans.quiet().is_none());
        drop(busy);
    }
}
