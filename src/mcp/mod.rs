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
//! - [`edit`]: `brute mcp add/remove` on the user's config file; [`command`]: `brute mcp`.

pub mod client;
pub mod command;
pub mod config;
pub mod edit;
pub mod manager;
pub mod stdio;
pub mod tool;

pub use manager::{LiveTools, Manager, ServerState, ServerStatus};
