//! What front ends are told about MCP servers (`/mcp`, the status line): plain data, kept here
//! so the protocol does not depend on the MCP client.

use serde::{Deserialize, Serialize};

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerState {
    /// `enabled = false`.
    Disabled,
    Starting,
    Ready,
    /// It failed to start, timed out, or exited; the message says how (with stderr).
    Failed {
        error: String,
    },
}

/// One server's status, for `/mcp` and front ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStatus {
    pub name: String,
    /// `stdio: cmd args` or `http: URL`.
    pub transport: String,
    /// The config file or `.mcp.json` it came from.
    pub source: String,
    #[serde(flatten)]
    pub state: ServerState,
    /// The server's own tool names (ready servers).
    pub tools: Vec<String>,
}
