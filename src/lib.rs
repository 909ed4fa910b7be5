//! brute: a terminal coding agent.
//!
//! The core (`agent`, `tool`, `provider`, `config`, `protocol`) knows nothing of terminals;
//! front ends (`oneshot` for `brute -p`, `acp` for editors, and the TUI) send [`protocol::Op`]s and render
//! [`protocol::Event`]s.
//!
//! Module docs point contributors at their private submodules; `cargo doc --document-private-items`
//! renders those links (CI builds it with warnings denied).

// Input must never panic brute: outside tests, clippy (and so CI) refuses `unwrap` and `expect`.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![allow(rustdoc::private_intra_doc_links)]

pub mod acp;
pub mod agent;
pub mod app;
#[cfg(target_os = "linux")]
pub mod beneath;
pub mod busy;
pub mod cli;
pub mod config;
pub mod dates;
pub mod files;
pub mod hooks;
pub mod lines;
pub mod mcp;
pub mod net;
pub mod oneshot;
pub mod paths;
pub mod permission;
pub mod pipeline;
pub mod protocol;
pub mod provider;
pub mod sandbox;
pub mod sanitize;
pub mod secrets;
pub mod session;
pub mod timing;
pub mod tool;
#[cfg(feature = "tui")]
pub mod tui;
