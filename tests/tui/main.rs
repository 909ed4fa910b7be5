//! The terminal UI's tests: snapshots on ratatui's `TestBackend`, styles and links, and the real
//! binary in a pseudo-terminal through tmux. Built only with the `tui` feature (Cargo.toml), so
//! `cargo test --no-default-features` runs the suite without terminal crates.

#[path = "../support/mod.rs"]
mod support;

mod pty;
mod pty_background;
mod pty_checkpoint;
mod tui_links;
mod tui_render;
mod tui_styles;
