//! One connection to one MCP server (the `rmcp` client): a stdio server brute starts itself,
//! or a streamable HTTP endpoint.
//!
//! A stdio server is spawned through [`crate::sandbox::command`] rather than rmcp's own
//! child-process transport, so it gets what every process brute starts gets: its own process
//! group, death with brute (SIGKILL of brute included), and brute's provider keys removed from
//! its environment. It runs as the person, unconfined: servers come only from the person's
//! config or a trusted project, and many need the network (`npx`). The last lines of its
//! stderr are kept for the notice shown when it fails. Its messages go through
//! [`super::stdio`], which bounds each one (16 MiB) and answers a call whose result is over
//! the bound with an error naming its size.
//!
//! What a server lists and answers is read from the protocol's JSON, leniently, item by item,
//! rather than through rmcp's model types (one field they do not expect fails a whole list or
//! result there):
//! - a listed tool without a name, with an `inputSchema` that is no object, or whose schema's
//!   `type` is not `"object"` (no call could satisfy it), is skipped, and so is a second tool
//!   of the same name; the rest of the list is used and the skipped ones are named in a notice.
//! - a tool with no `inputSchema` at all (or `null`) is taken as `{"type": "object"}`: the
//!   field is required, yet servers that omit it almost always mean a tool without arguments,
//!   its name and description are intact, and an open object schema leaves the arguments to
//!   the server's own validation — as brute already does for a schema it cannot compile.
//! - a result's content items are read one by one ([`super::tool::result_text`]): an item of
//!   an unknown type becomes a placeholder and the others are kept.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest, CustomRequest, ErrorCode,
    Implementation, RequestId,
};
use rmcp::service::{MaybeSendFuture, NotificationContext, PeerRequestOptions};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::config::{ServerSpec, Transport};

/// How many lines of a server's stderr are kept.
const STDERR_LINES: usize = 20;
/// How long a stdio server that closed its output may take to exit before the message
/// stops waiting for its exit status.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(3);
/// Longer stderr lines are cut to this many bytes.
const STDERR_LINE_BYTES: usize = 400;

/// A server's last stderr lines (a ring buffer shared with the task reading the pipe).
#[derive(Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

/// Reads a server's stderr to its end, keeping the last lines in `tail`. It never stops
/// early (a server whose stderr pipe fills up would block) and holds at most one cut line in
/// memory, whatever the server writes: invalid UTF-8 is decoded lossily, and a line with no end
/// is kept only up to the per-line cap.
async fn drain_stderr(reader: impl tokio::io::AsyncRead + Unpin, tail: StderrTail) {
    use tokio::io::AsyncBufReadExt;
    let mut reader = tokio::io::BufReader::new(reader);
    let mut line: Vec<u8> = Vec::new();
    while let Ok(buf) = reader.fill_buf().await {
        if buf.is_empty() {
            if !line.is_empty() {
                tail.push(&String::from_utf8_lossy(&line));
            }
            break;
        }
        let end = buf.iter().position(|&b| b == b'\n');
        let chunk = &buf[..end.unwrap_or(buf.len())];
        // One byte over the cap is enough for `push` to mark the line as cut.
        let room = (STDERR_LINE_BYTES + 4).saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let consumed = end.map_or(buf.len(), |i| i + 1);
        reader.consume(consumed);
        if end.is_some() {
            tail.push(&String::from_utf8_lossy(&line));
            line.clear();
        }
    }
}

impl StderrTail {
    fn push(&self, line: &str) {
        let mut line = line.trim_end().to_owned();
        if line.len() > STDERR_LINE_BYTES {
            let mut cut = STDERR_LINE_BYTES;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push('…');
        }
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(crate::secrets::redact(&line).into_owned());
    }

    /// The kept lines, joined; empty when the server wrote nothing.
    pub fn text(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// `: stderr:\n…` for a message, or nothing when there is no stderr.
    pub fn suffix(&self) -> String {
        let text = self.text();
        if text.trim().is_empty() {
            String::new()
        } else {
            format!("\nlast lines of its stderr:\n{text}")
        }
    }
}

/// Called for every `tools/list_changed` as it arrives, before it is queued (the manager
/// counts the lists it still has to fetch again).
pub type OnToolsChanged = Arc<dyn Fn() + Send + Sync>;

/// The client side's handler: it only passes `tools/list_changed` on.
#[derive(Clone)]
struct Handler {
    tools_changed: tokio::sync::mpsc::UnboundedSender<()>,
    on_change: OnToolsChanged,
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        (self.on_change)();
        let _ = self.tools_changed.send(());
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("brute", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// `annotations.readOnlyHint: true`.
    pub read_only: bool,
}

/// A live connection.
pub struct Connection {
    peer: Peer<RoleClient>,
    /// Fires when the server process exits or the connection closes.
    pub closed: CancellationToken,
    /// A stdio server's stderr tail (empty for HTTP).
    pub stderr: StderrTail,
    /// How the stdio server process ended, once it has.
    pub exit: Arc<Mutex<Option<String>>>,
    /// Receives a message for every `notifications/tools/list_changed`.
    pub tools_changed: tokio::sync::mpsc::UnboundedReceiver<()>,
    /// Cancelled on drop: stops the watchers (which kills a stdio server's group).
    shutdown: CancellationToken,
}

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("{0}")]
    Config(String),
    #[error("cannot start `{command}`: {error}")]
    Spawn { command: String, error: std::io::Error },
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
    #[error("cannot build the HTTP client: {0}")]
    Http(String),
}

impl Connection {
    /// Starts (stdio) or reaches (HTTP) the server and completes the MCP handshake. `root` is
    /// where a stdio server starts unless it names its own `cwd`. Not time-limited here: the
    /// caller applies the start-up timeout, and dropping the future kills the process.
    pub async fn open(
        spec: &ServerSpec,
        root: &std::path::Path,
        stderr: StderrTail,
        on_change: OnToolsChanged,
    ) -> Result<Self, ConnectError> {
        let (tx, tools_changed) = tokio::sync::mpsc::unbounded_channel();
        let handler = Handler {
            tools_changed: tx,
            on_change,
        };
        let closed = CancellationToken::new();
        let eof = CancellationToken::new();
        let shutdown = CancellationToken::new();
        // A failed or abandoned (timed-out) start kills what it started.
        let abort = shutdown.clone().drop_guard();
        let exit = Arc::new(Mutex::new(None));
        let stdio = matches!(spec.transport(), Ok(Transport::Stdio { .. }));
        let service = match spec.transport().map_err(ConnectError::Config)? {
            Transport::Stdio { command, args } => {
                let mut cmd = crate::sandbox::command(command, args);
                cmd.current_dir(spec.cwd.as_ref().map_or_else(|| root.to_path_buf(), |c| root.join(c)))
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .process_group(0)
                    .kill_on_drop(true);
                // brute's provider keys are not the server's business (unless given on purpose).
                for var in crate::secrets::key_vars() {
                    if !spec.env.contains_key(var) {
                        cmd.env_remove(var);
                    }
                }
                cmd.envs(&spec.env);
                let mut child = crate::sandbox::spawn(cmd).await.map_err(|error| ConnectError::Spawn {
                    command: command.to_owned(),
                    error,
                })?;
                let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                    return Err(ConnectError::Handshake("the server's pipes are missing".to_owned()));
                };
                if let Some(err) = child.stderr.take() {
                    tokio::spawn(drain_stderr(err, stderr.clone()));
                }
                // The child is owned by this watcher: it records how the process ended, then
                // marks the connection closed; dropping it (the connection dropped, brute
                // ending) kills the group.
                let (watch_closed, watch_exit, watch_eof, watch_shutdown) =
                    (closed.clone(), exit.clone(), eof.clone(), shutdown.clone());
                let pid = child.id();
                tokio::spawn(async move {
                    let _group = pid.map(KillGroup);
                    let describe = |status: std::io::Result<std::process::ExitStatus>| match status {
                        Ok(status) => format!("exited ({status})"),
                        Err(e) => format!("could not be waited for ({e})"),
                    };
                    let ended = tokio::select! {
                        status = child.wait() => describe(status),
                        // Dropped by brute: nothing is left to call, and no call waits.
                        _ = watch_shutdown.cancelled() => {
                            watch_closed.cancel();
                            return;
                        }
                        // The server closed its end first: give it a moment to exit by itself
                        // so the message can say how it ended.
                        _ = watch_eof.cancelled() => match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
                            Ok(status) => describe(status),
                            Err(_) => "closed the connection and has not exited".to_owned(),
                        },
                    };
                    *watch_exit.lock().unwrap_or_else(|e| e.into_inner()) = Some(ended);
                    watch_closed.cancel();
                });
                handler
                    .serve_with_ct(super::stdio::StdioTransport::new(stdout, stdin), shutdown.child_token())
                    .await
                    .map_err(|e| ConnectError::Handshake(e.to_string()))?
            }
            Transport::Http { url } => {
                let client = crate::net::client_builder()
                    .build()
                    .map_err(|e| ConnectError::Http(e.to_string()))?;
                let mut config =
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url);
                let mut headers = std::collections::HashMap::new();
                for (name, value) in &spec.headers {
                    let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|e| ConnectError::Config(format!("header `{name}`: {e}")))?;
                    let value = reqwest::header::HeaderValue::from_str(value)
                        .map_err(|e| ConnectError::Config(format!("header `{name}`: {e}")))?;
                    headers.insert(name, value);
                }
                config = config.custom_headers(headers);
                if let Some(var) = &spec.bearer_token_env_var {
                    let token = std::env::var(var)
                        .ok()
                        .filter(|t| !t.is_empty())
                        .ok_or_else(|| ConnectError::Config(format!("`bearer_token_env_var`: {var} is not set")))?;
                    crate::secrets::register(&token);
                    config = config.auth_header(token);
                }
                let transport = rmcp::transport::StreamableHttpClientTransport::with_client(client, config);
                handler
                    .serve_with_ct(transport, shutdown.child_token())
                    .await
                    .map_err(|e| ConnectError::Handshake(e.to_string()))?
            }
        };
        // The service ending (the server closed the connection) closes this connection: at
        // once over HTTP, through the process watcher for a stdio server.
        let peer = service.peer().clone();
        let mark = if stdio { eof } else { closed.clone() };
        tokio::spawn(async move {
            let _ = service.waiting().await;
            mark.cancel();
        });
        abort.disarm();
        Ok(Self {
            peer,
            closed,
            shutdown,
            stderr,
            exit,
            tools_changed,
        })
    }

    /// A handle for calls, cheap to clone.
    pub fn peer(&self) -> Peer<RoleClient> {
        self.peer.clone()
    }

    /// Lists every tool (all pages), leniently: see the module docs.
    pub async fn list_tools(&self) -> Result<Listing, String> {
        let mut listing = Listing::default();
        let mut names = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        let mut seen_cursors = std::collections::HashSet::new();
        for _ in 0..MAX_PAGES {
            let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({"cursor": c}));
            let page = request(&self.peer, "tools/list", params)
                .await
                .map_err(|e| e.to_string())?;
            let Some(tools) = page.get("tools").and_then(Value::as_array) else {
                return Err("its answer to tools/list has no `tools` list".to_owned());
            };
            for tool in tools {
                let position = listing.tools.len() + listing.skipped.len() + 1;
                match remote_tool(tool) {
                    Ok(remote) if !names.insert(remote.name.clone()) => listing
                        .skipped
                        .push(format!("`{}` (listed twice)", shown(&remote.name))),
                    Ok(remote) => listing.tools.push(remote),
                    Err(why) => {
                        let name = tool.get("name").and_then(Value::as_str).map(shown);
                        listing.skipped.push(match name {
                            Some(name) => format!("`{name}` ({why})"),
                            None => format!("tool #{position} ({why})"),
                        });
                    }
                }
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                // A cursor seen before would list the same pages forever.
                Some(next) if !next.is_empty() && seen_cursors.insert(next.to_owned()) => {
                    cursor = Some(next.to_owned());
                }
                _ => return Ok(listing),
            }
        }
        tracing::warn!("an MCP server listed more than {MAX_PAGES} pages of tools; the rest are ignored");
        Ok(listing)
    }
}

/// A server's tool list as brute reads it.
#[derive(Debug, Default)]
pub struct Listing {
    pub tools: Vec<RemoteTool>,
    /// The tools skipped, each named with why (`` `name` (why) ``, or `tool #N (why)`).
    pub skipped: Vec<String>,
}

/// The most pages of `tools/list` brute follows.
const MAX_PAGES: usize = 100;

/// A server-given name for a notice: at most [`NAME_CHARS`] characters.
fn shown(name: &str) -> String {
    if name.chars().count() <= NAME_CHARS {
        return name.to_owned();
    }
    let mut cut: String = name.chars().take(NAME_CHARS).collect();
    cut.push('…');
    cut
}

/// How much of a server-given name a notice shows.
const NAME_CHARS: usize = 64;

impl Drop for Connection {
    fn drop(&mut self) {
        // Ends the watcher, which kills the server's process group.
        self.shutdown.cancel();
    }
}

/// Kills a process group when dropped.
struct KillGroup(u32);

impl Drop for KillGroup {
    fn drop(&mut self) {
        crate::sandbox::group::kill_group(self.0);
    }
}

/// Reads a listed tool from its wire form (so brute depends on the protocol's JSON, not on
/// the SDK's model types), or says why it cannot be used (see the module docs).
fn remote_tool(tool: &Value) -> Result<RemoteTool, &'static str> {
    if !tool.is_object() {
        return Err("not an object");
    }
    let name = match tool.get("name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        Some(Value::String(_)) => return Err("its name is empty"),
        Some(_) => return Err("its name is not a string"),
        None => return Err("it has no name"),
    };
    let input_schema = match tool.get("inputSchema") {
        None | Some(Value::Null) => json!({"type": "object"}),
        Some(schema @ Value::Object(map)) => match map.get("type") {
            None => schema.clone(),
            Some(Value::String(kind)) if kind == "object" => schema.clone(),
            Some(_) => return Err("its inputSchema's type is not \"object\""),
        },
        Some(_) => return Err("its inputSchema is not an object"),
    };
    Ok(RemoteTool {
        name,
        description: tool
            .get("description")
            .and_then(Value::as_str)
            .or_else(|| tool.get("title").and_then(Value::as_str))
            .unwrap_or("")
            .to_owned(),
        input_schema,
        read_only: tool
            .pointer("/annotations/readOnlyHint")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// Why a call got no result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The connection closed under the call (the server exited, most likely).
    #[error("the connection closed")]
    Closed,
    /// The answer was over the message bound (the message names its size).
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    Other(String),
}

/// Calls `tool` with `args`, returning the result's wire form (`content`, `isError`, …).
pub async fn call(peer: &Peer<RoleClient>, tool: &str, args: Value) -> Result<Value, CallError> {
    let mut params = json!({"name": tool});
    if args.is_object() {
        params["arguments"] = args;
    }
    request(peer, "tools/call", params).await
}

/// Sends `method` with `params` and returns the result as JSON. Sent as a custom request so
/// that rmcp hands the result over as it came (its catch-all for results its model types do
/// not fit) rather than failing it; a well-formed result, parsed into its model type, is
/// turned back into the same JSON. Dropping the future (a timeout, an interrupt) tells the
/// server the request is cancelled.
async fn request(peer: &Peer<RoleClient>, method: &str, params: Value) -> Result<Value, CallError> {
    let closed = |e: rmcp::ServiceError| match e {
        rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_) => CallError::Closed,
        rmcp::ServiceError::McpError(e) if e.code == ErrorCode(super::stdio::TOO_LARGE) => {
            CallError::TooLarge(e.message.into_owned())
        }
        other => CallError::Other(other.to_string()),
    };
    let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .map_err(closed)?;
    let mut guard = CancelOnDrop {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let result = handle.await_response().await;
    guard.id = None;
    serde_json::to_value(result.map_err(closed)?).map_err(|e| CallError::Other(e.to_string()))
}

/// Sends `notifications/cancelled` for a request whose answer nobody waits for any more.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let reason = Some("the client stopped waiting".to_owned());
            let _ = peer
                .notify_cancelled(CancelledNotificationParam::new(Some(id), reason))
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn stderr_is_drained_to_the_end_whatever_the_server_writes() {
        let mut input = b"starting\n".to_vec();
        input.extend_from_slice(b"bad \xff\xfe bytes\n");
        input.extend(std::iter::repeat_n(b'x', 5 * 1024 * 1024));
        input.extend_from_slice(b"\nlast words");
        let tail = super::StderrTail::default();
        super::drain_stderr(input.as_slice(), tail.clone()).await;
        let text = tail.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text:.200}");
        assert_eq!(lines[0], "starting");
        assert_eq!(
            lines[1], "bad \u{FFFD}\u{FFFD} bytes",
            "invalid UTF-8 does not stop the reading"
        );
        assert!(
            lines[2].starts_with("xxx") && lines[2].ends_with('…'),
            "a huge line is cut"
        );
        assert!(lines[2].len() <= super::STDERR_LINE_BYTES + 4);
        assert_eq!(lines[3], "last words", "the reading went on past both");
    }

    use super::*;

    #[test]
    fn stderr_tail_keeps_the_last_lines_cut() {
        let tail = StderrTail::default();
        assert_eq!(tail.suffix(), "");
        for i in 0..30 {
            tail.push(&format!("line {i}"));
        }
        tail.push(&"é".repeat(300));
        let text = tail.text();
        assert_eq!(text.lines().count(), STDERR_LINES);
        assert!(text.starts_with("line 11\n"));
        assert!(text.ends_with('…') && text.lines().last().is_some_and(|l| l.len() <= STDERR_LINE_BYTES + 3));
    }

    #[test]
    fn reads_tools_from_their_wire_form() {
        let tool = json!({"name": "echo", "description": "Echoes", "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}});
        let got = remote_tool(&tool).unwrap();
        assert_eq!((got.name.as_str(), got.read_only), ("echo", true));
        let bare = remote_tool(&json!({"name": "x"})).unwrap();
        assert!(!bare.read_only);
        assert_eq!(
            bare.input_schema,
            json!({"type": "object"}),
            "no inputSchema: no arguments"
        );
        assert_eq!(
            remote_tool(&json!({"name": "x", "inputSchema": null}))
                .unwrap()
                .input_schema,
            json!({"type": "object"})
        );
        assert_eq!(remote_tool(&json!({"description": "no name"})), Err("it has no name"));
        assert_eq!(remote_tool(&json!({"name": 3})), Err("its name is not a string"));
        assert_eq!(
            remote_tool(&json!({"name": "x", "inputSchema": "oops"})),
            Err("its inputSchema is not an object")
        );
        assert_eq!(
            remote_tool(&json!({"name": "x", "inputSchema": {"type": "array"}})),
            Err("its inputSchema's type is not \"object\"")
        );
        assert_eq!(remote_tool(&json!("x")), Err("not an object"));
        assert_eq!(shown(&"é".repeat(100)).chars().count(), NAME_CHARS + 1);
    }

    /// Results arrive as rmcp's `ServerResult` (an untagged union): whatever its variants, the
    /// results brute reads leniently must come out as the JSON that went in.
    #[test]
    fn results_rmcp_cannot_type_come_through_as_they_were() {
        let cases = [
            json!({"tools": [{"name": "ok", "inputSchema": {"type": "object"}}, {"name": "bare"}, {"description": "nameless"}]}),
            json!({"tools": [{"name": "s", "inputSchema": "oops"}], "nextCursor": "2"}),
            json!({"content": [{"type": "text", "text": "kept"}, {"type": "foo", "x": 1}, {"type": "text", "text": "also"}]}),
            json!({"content": [{"type": "text", "text": "a"}], "isError": false}),
            json!({"tools": []}),
        ];
        for case in cases {
            let typed: rmcp::model::ServerResult = serde_json::from_value(case.clone()).unwrap();
            let back = serde_json::to_value(&typed).unwrap();
            for key in case.as_object().unwrap().keys() {
                assert_eq!(back.get(key), case.get(key), "{case} became {back}");
            }
        }
    }
}
