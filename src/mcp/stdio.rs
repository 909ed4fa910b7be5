//! The stdio transport: one JSON-RPC message a line, in both directions, with a bound on what
//! one incoming message may take.
//!
//! brute's own rather than rmcp's `AsyncRwTransport` because of what happens to a message over
//! the bound: rmcp drops it without a word, so the call it answered waits for its time-out and
//! is reported as one. Here the line is skipped as it streams past (never more than
//! [`MAX_MESSAGE`] held, whatever the server sends), its top-level `id` is picked out on the
//! way, and the call gets an error response naming the message's size as soon as the line
//! ends: the connection and the server's other calls carry on.

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The largest incoming message (one line) brute reads: 16 MiB, as rmcp's own bound for
/// stdio and for an SSE event over HTTP.
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// The JSON-RPC error code of the response standing in for a message over the bound
/// (implementation-defined range), so callers can tell it from the server's own errors.
pub const TOO_LARGE: i32 = -32099;

/// How much of a line's top-level `id` value is kept (ids are numbers or short strings).
const ID_BYTES: usize = 256;

/// A JSON-RPC client transport over a server's stdout (`read`) and stdin (`write`).
pub struct StdioTransport<R, W> {
    lines: Lines<R>,
    write: Arc<tokio::sync::Mutex<Option<W>>>,
}

impl<R: AsyncRead + Unpin, W> StdioTransport<R, W> {
    pub fn new(read: R, write: W) -> Self {
        Self {
            lines: Lines::new(read, MAX_MESSAGE),
            write: Arc::new(tokio::sync::Mutex::new(Some(write))),
        }
    }
}

impl<R, W> rmcp::transport::Transport<RoleClient> for StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = std::io::Result<()>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut write = write.lock().await;
            let Some(write) = write.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the transport is closed",
                ));
            };
            write.write_all(&line).await?;
            write.flush().await
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            match self.lines.next().await {
                Next::Line(line) => {
                    if let Some(message) = parse(&line) {
                        return Some(message);
                    }
                }
                Next::Oversized(over) => match over.response() {
                    Some(message) => return Some(message),
                    None => tracing::warn!(
                        "an MCP server sent a message of {} bytes (over the {MAX_MESSAGE}-byte limit) that answers no request; skipped",
                        over.bytes
                    ),
                },
                Next::End => return None,
                Next::Failed(e) => {
                    tracing::warn!("cannot read from an MCP server: {e}");
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> std::io::Result<()> {
        if let Some(mut write) = self.write.lock().await.take() {
            let _ = write.shutdown().await;
        }
        Ok(())
    }
}

/// One line as a message; `None` (skipped, as the other MCP SDKs do) for blank lines and
/// anything that is no JSON-RPC message.
fn parse(line: &[u8]) -> Option<ServerJsonRpcMessage> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match serde_json::from_slice(line) {
        Ok(message) => Some(message),
        Err(e) => {
            tracing::debug!("skipped a line from an MCP server that is no JSON-RPC message: {e}");
            None
        }
    }
}

/// What [`Lines::next`] read.
pub enum Next {
    /// One whole line (its newline included, when it had one).
    Line(Vec<u8>),
    /// A line over the bound, skipped.
    Oversized(Oversized),
    /// The server closed its output.
    End,
    Failed(std::io::Error),
}

/// A line over the bound: how long it was and what its top level said.
#[derive(Debug, Default)]
pub struct Oversized {
    /// Its length without the newline.
    pub bytes: u64,
    scan: Scan,
}

impl Oversized {
    /// The error response standing in for it, when it was a response (a top-level `id` and
    /// no `method`).
    fn response(&self) -> Option<ServerJsonRpcMessage> {
        let id = self.id()?;
        let message = format!(
            "the server's answer is {} bytes, over brute's limit of 16 MiB ({} bytes) for one message; it was discarded",
            crate::tool::registry::grouped(self.bytes),
            crate::tool::registry::grouped(MAX_MESSAGE as u64)
        );
        let response = json!({"jsonrpc": "2.0", "id": id, "error": {"code": TOO_LARGE, "message": message}});
        serde_json::from_value(response).ok()
    }

    /// Its top-level `id` (a number or a string), unless it was a request or notification.
    fn id(&self) -> Option<Value> {
        if self.scan.method {
            return None;
        }
        let raw = self.scan.id.as_deref()?;
        match serde_json::from_slice::<Value>(raw.trim_ascii()).ok()? {
            id @ (Value::Number(_) | Value::String(_)) => Some(id),
            _ => None,
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        self.scan.feed(chunk);
    }
}

/// Lines read with a bound: a line longer than `max` is not kept but skipped as it streams
/// past. Cancel-safe (`receive` is polled in a `select!`): every step of the read is kept in
/// `self` between polls, and bytes are consumed only once they are accounted for.
pub struct Lines<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    /// The line being skipped, once it went over `max`.
    over: Option<Oversized>,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub fn new(read: R, max: usize) -> Self {
        Self {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            max,
            over: None,
        }
    }

    /// The memory held for the line being read, besides the fixed read buffer (for the test
    /// of the bound).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.line.capacity()
    }

    pub async fn next(&mut self) -> Next {
        loop {
            let buf = match self.read.fill_buf().await {
                Ok(buf) => buf,
                Err(e) => return Next::Failed(e),
            };
            if buf.is_empty() {
                // A last line without its newline still counts.
                if let Some(over) = self.over.take() {
                    return Next::Oversized(over);
                }
                if !self.line.is_empty() {
                    return Next::Line(std::mem::take(&mut self.line));
                }
                return Next::End;
            }
            let newline = buf.iter().position(|&b| b == b'\n');
            let taken = newline.map_or(buf.len(), |i| i + 1);
            let content = newline.unwrap_or(buf.len());
            let chunk = &buf[..taken];
            if let Some(over) = self.over.as_mut() {
                over.bytes += content as u64;
                over.feed(chunk);
            } else if self.line.len() + content > self.max {
                let mut over = Oversized {
                    bytes: (self.line.len() + content) as u64,
                    scan: Scan::default(),
                };
                over.feed(&self.line);
                over.feed(chunk);
                // Gives the memory back, not only the length.
                self.line = Vec::new();
                self.over = Some(over);
            } else {
                // Grown by doubling but never past the bound.
                let need = self.line.len() + chunk.len();
                if need > self.line.capacity() {
                    let want = need.max(self.line.capacity() * 2).min(self.max + 1);
                    self.line.reserve_exact(want.max(need) - self.line.len());
                }
                self.line.extend_from_slice(chunk);
            }
            self.read.consume(taken);
            if newline.is_some() {
                if let Some(over) = self.over.take() {
                    return Next::Oversized(over);
                }
                return Next::Line(std::mem::take(&mut self.line));
            }
        }
    }
}

/// Where the scan is at the top level of the object.
#[derive(Debug, Default, PartialEq, Eq)]
enum Phase {
    #[default]
    Key,
    Colon,
    Value,
}

/// A streaming look at a JSON object's top level, in constant memory: its `id` value's raw
/// bytes (bounded) and whether it has a `method`. Strings and nesting are followed only as
/// far as needed to tell the top level apart.
#[derive(Debug, Default)]
struct Scan {
    depth: usize,
    in_string: bool,
    escaped: bool,
    phase: Phase,
    /// The top-level key being read (only its first bytes: `id` and `method` are short).
    key: Vec<u8>,
    /// The `id` value being read.
    capture: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
    method: bool,
}

impl Scan {
    fn feed(&mut self, chunk: &[u8]) {
        let mut i = 0;
        while i < chunk.len() {
            let b = chunk[i];
            i += 1;
            let top = self.depth == 1;
            if self.in_string {
                let reading_key = top && self.phase == Phase::Key;
                if let Some(capture) = self.capture.as_mut().filter(|_| top) {
                    if capture.len() < ID_BYTES {
                        capture.push(b);
                    }
                } else if reading_key {
                    if !self.escaped && b != b'"' && self.key.len() < 8 {
                        self.key.push(b);
                    }
                } else if !self.escaped {
                    // Inside a value's string: jump to the next quote or backslash.
                    if let Some(skip) = chunk[i - 1..].iter().position(|&c| c == b'"' || c == b'\\') {
                        i += skip;
                        let b = chunk[i - 1];
                        self.string_byte(b);
                    } else {
                        i = chunk.len();
                    }
                    continue;
                }
                self.string_byte(b);
                continue;
            }
            if let Some(capture) = self.capture.as_mut().filter(|_| top && b != b',' && b != b'}')
                && capture.len() < ID_BYTES
            {
                capture.push(b);
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    if top && self.phase == Phase::Key {
                        self.key.clear();
                    }
                }
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    if top {
                        self.end_value();
                    }
                    self.depth = self.depth.saturating_sub(1);
                }
                b':' if top && self.phase == Phase::Colon => {
                    self.phase = Phase::Value;
                    match self.key.as_slice() {
                        b"id" => self.capture = Some(Vec::new()),
                        b"method" => self.method = true,
                        _ => {}
                    }
                }
                b',' if top => {
                    self.end_value();
                    self.phase = Phase::Key;
                }
                _ => {}
            }
        }
    }

    /// A byte inside a string (its escapes and its end).
    fn string_byte(&mut self, b: u8) {
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
        } else if b == b'"' {
            self.in_string = false;
            if self.depth == 1 && self.phase == Phase::Key {
                self.phase = Phase::Colon;
            }
        }
    }

    fn end_value(&mut self) {
        if let Some(id) = self.capture.take() {
            self.id = Some(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Oversized {
        let mut over = Oversized::default();
        // Byte by byte as well as whole: chunk boundaries must not matter.
        for b in text.as_bytes() {
            over.feed(std::slice::from_ref(b));
        }
        let mut whole = Oversized::default();
        whole.feed(text.as_bytes());
        assert_eq!((whole.id(), whole.scan.method), (over.id(), over.scan.method), "{text}");
        over
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is() {
        let body = r#"{"content":[{"type":"text","text":"a \"quoted\" }, \"id\": 9 \\"}],"id":"x"}"#;
        assert_eq!(
            scan(&format!(r#"{{"jsonrpc":"2.0","id":7,"result":{body}}}"#)).id(),
            Some(json!(7))
        );
        assert_eq!(
            scan(&format!(r#"{{"result":{body},"jsonrpc":"2.0","id":7}}"#)).id(),
            Some(json!(7))
        );
        assert_eq!(
            scan(&format!(r#"{{ "result" : {body} , "id" : "a,b}}" }}"#)).id(),
            Some(json!("a,b}"))
        );
        // A request from the server is not answered with an error of ours.
        assert_eq!(
            scan(r#"{"id":3,"method":"sampling/createMessage","params":{}}"#).id(),
            None
        );
        assert_eq!(
            scan(r#"{"method":"notifications/message","params":{"id":4}}"#).id(),
            None
        );
        assert_eq!(scan(r#"{"result":{"id":5}}"#).id(), None, "only the top level counts");
        assert_eq!(scan(r#"{"id":{"a":1},"result":1}"#).id(), None);
    }

    /// One line of `len` bytes (`{"jsonrpc":"2.0","result":…"xxx…"…,"id":41}`, the id last as the
    /// TypeScript SDK writes it) then `tail`, made up as it is read, never held; every other
    /// read is `Pending`, so the reader is dropped and resumed mid-line.
    struct Huge {
        len: u64,
        sent: u64,
        tail: &'static [u8],
        pause: bool,
    }

    const HEAD: &[u8] = br#"{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":""#;
    const END: &[u8] = b"\"}]},\"id\":41}\n";
    static XS: [u8; 65536] = [b'x'; 65536];

    impl AsyncRead for Huge {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            self.pause = !self.pause;
            if self.pause {
                cx.waker().wake_by_ref();
                return std::task::Poll::Pending;
            }
            let (head, body) = (HEAD.len() as u64, self.len + 1 - END.len() as u64);
            let at = self.sent;
            let piece: &[u8] = if at < head {
                &HEAD[at as usize..]
            } else if at < body {
                &XS[..(body - at).min(XS.len() as u64) as usize]
            } else if at < body + END.len() as u64 {
                &END[(at - body) as usize..]
            } else {
                self.tail
                    .get((at - body - END.len() as u64) as usize..)
                    .unwrap_or_default()
            };
            let n = piece.len().min(buf.remaining());
            buf.put_slice(&piece[..n]);
            self.sent += n as u64;
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_line_over_the_bound_is_skipped_in_bounded_memory_and_answered_at_once() {
        let len = 400 * 1024 * 1024;
        let tail: &'static [u8] = b"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{}}\n";
        let mut lines = Lines::new(
            Huge {
                len,
                sent: 0,
                tail,
                pause: false,
            },
            MAX_MESSAGE,
        );
        let mut most = 0;
        let over = loop {
            // One poll, then the read is dropped (as `select!` does) and measured.
            let next = std::future::poll_fn(|cx| {
                let next = std::pin::pin!(lines.next());
                std::task::Poll::Ready(next.poll(cx))
            })
            .await;
            most = most.max(lines.held());
            match next {
                std::task::Poll::Pending => continue,
                std::task::Poll::Ready(Next::Oversized(over)) => break over,
                std::task::Poll::Ready(Next::Line(_)) => panic!("the huge line was kept"),
                std::task::Poll::Ready(_) => panic!("ended early"),
            }
        };
        assert_eq!(over.bytes, len);
        assert!(most > 0 && most <= MAX_MESSAGE + 1, "held {most} bytes");
        let Some(ServerJsonRpcMessage::Error(error)) = over.response() else {
            panic!("no error response: {:?}", over.response());
        };
        assert_eq!(error.id, Some(rmcp::model::NumberOrString::Number(41)));
        assert!(
            error.error.message.contains("419,430,400 bytes"),
            "{}",
            error.error.message
        );
        // The next line is read as usual.
        let Next::Line(line) = lines.next().await else {
            panic!("the next line is lost")
        };
        assert_eq!(line, tail);
        assert!(matches!(lines.next().await, Next::End));
    }
}
