//! The running MCP servers of a session: each starts in its own background task at session
//! start (so the UI is usable at once), each failure or time-out becomes a notice with the
//! server's stderr tail (never fatal), and every change of the set of ready tools (a server
//! became ready, sent `tools/list_changed`, or exited) bumps a generation number.
//!
//! The agent does not see tools appear mid-turn: [`LiveTools`] rebuilds its registry at the
//! start of a user turn, and only when the generation moved, so the advertised tool list (and
//! with it the provider's prompt cache) stays the same between changes.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::{Peer, RoleClient};
use tokio_util::sync::CancellationToken;

use super::client::{Connection, RemoteTool, StderrTail};
use super::config::Server;
use super::tool::{McpTool, advertised_name};
use crate::protocol::{Event, EventSink, ServerState, ServerStatus};
use crate::tool::{Registry, Tool, ToolError};

/// What a server's tools share: the live connection's peer and what tells that it is gone.
pub struct Link {
    server: String,
    peer: Peer<RoleClient>,
    closed: CancellationToken,
    stderr: StderrTail,
    exit: Arc<Mutex<Option<String>>>,
    /// The time one call may take (`tool_timeout_secs`).
    pub tool_timeout: Duration,
}

impl Link {
    /// The peer to call, unless the server is gone.
    pub fn peer(&self) -> Option<Peer<RoleClient>> {
        (!self.is_closed()).then(|| self.peer.clone())
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Resolves when the server exits or the connection closes.
    pub async fn closed(&self) {
        self.closed.cancelled().await
    }

    /// How the server ended, for messages.
    fn ending(&self) -> String {
        let exit = self.exit.lock().unwrap_or_else(|e| e.into_inner()).clone();
        format!(
            "the MCP server `{}` {}{}",
            self.server,
            exit.unwrap_or_else(|| "closed the connection".to_owned()),
            self.stderr.suffix()
        )
    }

    /// The error a call gets once the server is gone.
    pub fn gone_error(&self) -> ToolError {
        ToolError::new(
            "ServerExited",
            format!(
                "{}. Its tools are unavailable for the rest of this session.",
                self.ending()
            ),
        )
    }
}

struct Slot {
    server: Server,
    state: ServerState,
    tools: Vec<RemoteTool>,
    link: Option<Arc<Link>>,
}

/// The session's MCP servers.
pub struct Manager {
    slots: Mutex<Vec<Slot>>,
    generation: AtomicU64,
    starting: tokio::sync::watch::Sender<usize>,
    /// Tool lists a server said changed (`tools/list_changed`) and that are not fetched
    /// again yet: a turn starting meanwhile waits for them (see [`Manager::relisted`]).
    relisting: Arc<tokio::sync::watch::Sender<usize>>,
    events: EventSink,
}

/// How long a turn waits for announced tool lists before it starts with the ones it has.
const RELIST_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Manager {
    /// Starts every enabled server in the background (call inside a tokio runtime). `root` is
    /// where stdio servers start.
    pub fn start(servers: Vec<Server>, root: PathBuf, events: EventSink) -> Arc<Self> {
        let slots: Vec<Slot> = servers
            .into_iter()
            .map(|server| Slot {
                state: if server.spec.enabled() {
                    ServerState::Starting
                } else {
                    ServerState::Disabled
                },
                server,
                tools: Vec::new(),
                link: None,
            })
            .collect();
        let starting = slots.iter().filter(|s| s.state == ServerState::Starting).count();
        let manager = Arc::new(Self {
            slots: Mutex::new(slots),
            generation: AtomicU64::new(0),
            starting: tokio::sync::watch::Sender::new(starting),
            relisting: Arc::new(tokio::sync::watch::Sender::new(0)),
            events,
        });
        let count = manager.lock().len();
        for index in 0..count {
            if manager.lock()[index].state == ServerState::Starting {
                tokio::spawn(manager.clone().run(index, root.clone()));
            }
        }
        manager.emit_status();
        manager
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes with every change of the set of ready tools.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Resolves once no server is starting any more (each has its own start-up timeout).
    pub async fn settled(&self) {
        let mut starting = self.starting.subscribe();
        let _ = starting.wait_for(|n| *n == 0).await;
    }

    /// Resolves once every tool list a server announced as changed has been fetched again
    /// (or after [`RELIST_WAIT`], for a server slow to answer): a server that changes its
    /// tools during a turn (and says so before that call's result) has them offered from the
    /// next turn, however fast that turn starts.
    pub async fn relisted(&self) {
        let mut relisting = self.relisting.subscribe();
        let _ = tokio::time::timeout(RELIST_WAIT, relisting.wait_for(|n| *n == 0)).await;
    }

    /// Every server's status, in config order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.lock()
            .iter()
            .map(|slot| ServerStatus {
                name: slot.server.name.clone(),
                transport: slot.server.spec.describe(),
                source: slot.server.origin.to_string(),
                state: slot.state.clone(),
                tools: slot.tools.iter().map(|t| t.name.clone()).collect(),
            })
            .collect()
    }

    /// The ready servers' tools, named so none clashes with `taken` or with each other
    /// (servers in config order, tools in the server's order: the same set gets the same
    /// names).
    pub fn tools(&self, taken: &BTreeSet<String>) -> Vec<Arc<dyn Tool>> {
        let mut taken = taken.clone();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for slot in self.lock().iter() {
            let (ServerState::Ready, Some(link)) = (&slot.state, &slot.link) else {
                continue;
            };
            for remote in &slot.tools {
                let name = advertised_name(&slot.server.name, &remote.name, &taken);
                taken.insert(name.clone());
                tools.push(Arc::new(McpTool::new(
                    name,
                    &slot.server.name,
                    remote.clone(),
                    link.clone(),
                )));
            }
        }
        tools
    }

    fn emit_status(&self) {
        self.events.emit(Event::McpStatus { servers: self.status() });
    }

    /// Records a change of one server and tells the front ends.
    fn update(&self, index: usize, change: impl FnOnce(&mut Slot)) {
        {
            let mut slots = self.lock();
            let Some(slot) = slots.get_mut(index) else { return };
            let was_starting = slot.state == ServerState::Starting;
            change(slot);
            // The new generation is visible before anyone waiting in `settled` wakes.
            self.generation.fetch_add(1, Ordering::SeqCst);
            if was_starting && slot.state != ServerState::Starting {
                self.starting.send_modify(|n| *n = n.saturating_sub(1));
            }
        }
        self.emit_status();
    }

    fn fail(&self, index: usize, error: String) {
        let name = self
            .lock()
            .get(index)
            .map(|s| s.server.name.clone())
            .unwrap_or_default();
        self.events.emit(Event::Notice {
            message: format!("MCP server `{name}`: {error}"),
        });
        self.update(index, |slot| {
            slot.state = ServerState::Failed { error };
            slot.tools.clear();
            slot.link = None;
        });
    }

    /// Names the tools a server listed that brute cannot use (one bounded line, however many).
    fn skipped_notice(&self, server: &str, kept: usize, skipped: &[String]) {
        if skipped.is_empty() {
            return;
        }
        use crate::tool::registry::{brief_list, grouped};
        self.events.emit(Event::Notice {
            message: format!(
                "MCP server `{server}`: skipped {} of its {} tools, its other tools work: {}",
                grouped(skipped.len() as u64),
                grouped((kept + skipped.len()) as u64),
                brief_list(skipped)
            ),
        });
    }

    /// One server's life: start, list tools, then follow list changes until it exits.
    async fn run(self: Arc<Self>, index: usize, root: PathBuf) {
        let Some(spec) = self.lock().get(index).map(|s| s.server.spec.clone()) else {
            return;
        };
        let name = self.lock()[index].server.name.clone();
        let stderr = StderrTail::default();
        let timeout = spec.startup_timeout();
        let opening = async {
            let relisting = self.relisting.clone();
            let on_change: crate::mcp::client::OnToolsChanged = Arc::new(move || relisting.send_modify(|n| *n += 1));
            let connection = Connection::open(&spec, &root, stderr.clone(), on_change)
                .await
                .map_err(|e| e.to_string())?;
            let tools = connection
                .list_tools()
                .await
                .map_err(|e| format!("cannot list its tools: {e}"))?;
            Ok::<_, String>((connection, tools))
        };
        let (mut connection, listing) = match tokio::time::timeout(timeout, opening).await {
            Err(_) => {
                return self.fail(
                    index,
                    format!(
                        "did not start within {} s (startup_timeout_secs){}",
                        timeout.as_secs(),
                        stderr.suffix()
                    ),
                );
            }
            Ok(Err(error)) => return self.fail(index, format!("failed to start: {error}{}", stderr.suffix())),
            Ok(Ok(opened)) => opened,
        };
        let link = Arc::new(Link {
            server: name,
            peer: connection.peer(),
            closed: connection.closed.clone(),
            stderr: connection.stderr.clone(),
            exit: connection.exit.clone(),
            tool_timeout: spec.tool_timeout(),
        });
        let mut skipped = listing.skipped;
        self.skipped_notice(&link.server, listing.tools.len(), &skipped);
        self.update(index, |slot| {
            slot.state = ServerState::Ready;
            slot.tools = listing.tools;
            slot.link = Some(link.clone());
        });
        loop {
            tokio::select! {
                _ = link.closed() => break,
                changed = connection.tools_changed.recv() => {
                    if changed.is_none() {
                        // The service ended (its handler is gone): the process watcher says
                        // how the server ended a moment later, and closes the link.
                        link.closed().await;
                        break;
                    }
                    match connection.list_tools().await {
                        Ok(listing) => {
                            // Said again only when it changed.
                            if listing.skipped != skipped {
                                self.skipped_notice(&link.server, listing.tools.len(), &listing.skipped);
                                skipped = listing.skipped;
                            }
                            self.update(index, |slot| slot.tools = listing.tools);
                        }
                        Err(e) => tracing::warn!("MCP server {}: cannot list its tools again: {e}", link.server),
                    }
                    self.relisting.send_modify(|n| *n = n.saturating_sub(1));
                }
            }
        }
        // Announcements never fetched: nobody waits for them any more.
        while connection.tools_changed.try_recv().is_ok() {
            self.relisting.send_modify(|n| *n = n.saturating_sub(1));
        }
        self.fail(index, link.ending());
    }
}

/// Rebuilds a registry from the base tools plus the MCP tools ready now (with the run's
/// filter, deny list and cap), returning notices for the person.
pub type Rebuild = Box<dyn Fn(&Manager) -> (Registry, Vec<String>) + Send + Sync>;

/// The agent's view of the MCP servers: it swaps its registry between turns when the set of
/// ready tools changed (see the module docs).
pub struct LiveTools {
    manager: Arc<Manager>,
    seen: u64,
    settle_first: bool,
    rebuild: Rebuild,
}

impl LiveTools {
    /// `settle_first`: the first turn waits until every server is ready or failed (`brute
    /// -p`, which has no later turn to pick late tools up in).
    pub fn new(manager: Arc<Manager>, settle_first: bool, rebuild: Rebuild) -> Self {
        Self {
            manager,
            seen: 0,
            settle_first,
            rebuild,
        }
    }

    /// Waits for the servers before the first turn, when asked to, and before every turn
    /// for tool lists announced as changed and not fetched yet.
    pub async fn settle(&mut self) {
        if std::mem::take(&mut self.settle_first) {
            self.manager.settled().await;
        }
        self.manager.relisted().await;
    }

    /// A new registry when the ready tools changed since the last call.
    pub fn update(&mut self) -> Option<(Registry, Vec<String>)> {
        let generation = self.manager.generation();
        if generation == self.seen {
            return None;
        }
        self.seen = generation;
        Some((self.rebuild)(&self.manager))
    }

    pub fn manager(&self) -> &Arc<Manager> {
        &self.manager
    }
}
