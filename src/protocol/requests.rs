//! The one way the core asks the person something: a request with an id and a kind
//! ([`RequestKind`]: a question, an undo confirmation, consent, later approvals), answered by
//! one [`Op::Respond`](crate::protocol::Op::Respond) with the same id.
//!
//! A tool (like `question`) awaits [`Requests::ask`]; the conversation's op loop hands each
//! response to [`Requests::resolve`]. Requests the conversation itself makes between turns
//! (an undo confirmation) are opened with [`Requests::open`] and come back from `resolve` to
//! their owner. Without a person ([`Requests::headless`]) every request takes its kind's
//! documented default at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::protocol::{Event, EventSink, RequestKind, Response};

/// What an editor front end does with its files for the core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Buffers {
    /// It answers [`RequestKind::ReadBuffer`] with its open files' text.
    pub read: bool,
    /// It answers [`RequestKind::WriteBuffer`]: writes a file for a tool, so its buffer
    /// holds the change.
    pub write: bool,
}

struct Inner {
    events: Option<EventSink>,
    buffers: Buffers,
    waiting: Mutex<HashMap<String, oneshot::Sender<Response>>>,
    next: AtomicU64,
}

/// The request service of one conversation (shared with its tools and sub-agents).
#[derive(Clone)]
pub struct Requests {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Requests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Requests")
            .field("has_person", &self.has_person())
            .finish()
    }
}

impl Default for Requests {
    fn default() -> Self {
        Self::headless()
    }
}

impl Requests {
    /// Requests go to a front end through `events`.
    pub fn new(events: EventSink) -> Self {
        Self {
            inner: Arc::new(Inner {
                events: Some(events),
                buffers: Buffers::default(),
                waiting: Mutex::default(),
                next: AtomicU64::new(0),
            }),
        }
    }

    /// Requests go to an editor through `events`, which reads and writes files as `buffers`
    /// says.
    pub fn with_buffers(events: EventSink, buffers: Buffers) -> Self {
        Self {
            inner: Arc::new(Inner {
                events: Some(events),
                buffers,
                waiting: Mutex::default(),
                next: AtomicU64::new(0),
            }),
        }
    }

    /// Whether the front end answers [`RequestKind::ReadBuffer`]: only then may a tool ask.
    pub fn reads_buffers(&self) -> bool {
        self.inner.buffers.read
    }

    /// Whether the front end answers [`RequestKind::WriteBuffer`]: only then may a tool ask.
    pub fn writes_buffers(&self) -> bool {
        self.inner.buffers.write
    }

    /// Nobody can answer: every request takes its default at once.
    pub fn headless() -> Self {
        Self {
            inner: Arc::new(Inner {
                events: None,
                buffers: Buffers::default(),
                waiting: Mutex::default(),
                next: AtomicU64::new(0),
            }),
        }
    }

    /// Whether a front end receives requests.
    pub fn has_person(&self) -> bool {
        self.inner.events.is_some()
    }

    fn new_id(&self) -> String {
        format!("req-{}", self.inner.next.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// Shows a request whose answer comes back from [`Requests::resolve`] to the caller (no
    /// one awaits it). `None` when nobody can answer.
    pub fn open(&self, kind: RequestKind) -> Option<String> {
        let events = self.inner.events.as_ref()?;
        let id = self.new_id();
        events.emit(Event::Request { id: id.clone(), kind });
        Some(id)
    }

    /// Asks and waits for the answer; the default when nobody can answer, [`Response::Declined`]
    /// when `cancel` fires first (the front end is told to close the dialog).
    pub async fn ask(&self, kind: RequestKind, cancel: &CancellationToken) -> Response {
        let Some(events) = &self.inner.events else {
            return kind.default_response();
        };
        let id = self.new_id();
        let (tx, rx) = oneshot::channel();
        self.waiting().insert(id.clone(), tx);
        events.emit(Event::Request { id: id.clone(), kind });
        tokio::select! {
            response = rx => response.unwrap_or(Response::Declined),
            _ = cancel.cancelled() => {
                self.waiting().remove(&id);
                events.emit(Event::RequestClosed { id });
                Response::Declined
            }
        }
    }

    /// Delivers an answer to whoever waits for `id`; returns it when nobody does (a request
    /// made with [`Requests::open`], or one that was already closed).
    pub fn resolve(&self, id: &str, response: Response) -> Option<Response> {
        if let Some(events) = &self.inner.events {
            events.emit(Event::RequestClosed { id: id.to_owned() });
        }
        match self.waiting().remove(id) {
            Some(waiter) => {
                let _ = waiter.send(response);
                None
            }
            None => Some(response),
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Response>>> {
        self.inner.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Question;

    fn question() -> RequestKind {
        RequestKind::Question {
            questions: vec![Question {
                question: "?".into(),
                header: None,
                options: Vec::new(),
                multiple: false,
                default: None,
            }],
        }
    }

    #[tokio::test]
    async fn answers_reach_the_asker_and_defaults_apply_headless() {
        assert_eq!(
            Requests::headless().ask(question(), &CancellationToken::new()).await,
            Response::NoPerson
        );
        let (events, mut rx) = EventSink::channel();
        let requests = Requests::new(events);
        let asker = {
            let requests = requests.clone();
            tokio::spawn(async move { requests.ask(question(), &CancellationToken::new()).await })
        };
        let Some(Event::Request { id, .. }) = rx.recv().await else {
            panic!("a request event")
        };
        let answer = Response::Answers {
            answers: vec!["x".into()],
        };
        assert_eq!(requests.resolve(&id, answer.clone()), None);
        assert_eq!(asker.await.unwrap(), answer);
        // An answer nobody waits for comes back to the caller.
        assert_eq!(requests.resolve("req-99", Response::Declined), Some(Response::Declined));
    }
}
