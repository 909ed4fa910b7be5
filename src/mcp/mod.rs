//! The MCP client: tools from Model Context Protocol servers the person configured
//! (`[mcp_servers.NAME]` in config, or a trusted project's `.mcp.json`), advertised to the
//! model as `mcp__<server>__<tool>` and run through the same middleware (validation,
//! approvals, truncation) as every other tool.
//!
//! - [`config`]: which servers, from where.
//! - [`client`]: one connection (a stdio server brute spawns, or streamable HTTP), and the
//!   lenient reading of what servers list and answer; [`stdio`]: the bounded stdio transport.
//! - [`tool`]: a server's tool as a [`crate::tool::Tool`].
//! - [`manager`]: starting servers in the background, their status, and the tool set the
//!   agent picks up between turns.
//! - `brute mcp list/get/add/remove` lives with the command line ([`crate::cli::mcp`]).

pub mod client;
pub mod config;
pub mod manager;
pub mod stdio;
pub mod tool;

pub use crate::protocol::{ServerState, ServerStatus};
pub use manager::{LiveTools, Manager};
