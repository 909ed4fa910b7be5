//! The integration suite: one binary, a module per area (as ripgrep's and codex's are), so a
//! change links once instead of once per file. The terminal UI's tests are in `tests/tui/`.

#[path = "../support/mod.rs"]
mod support;

mod acp;
mod agent;
mod background;
mod checkpoint_shortcut;
mod checkpoint_walk;
mod checkpoints;
mod claude_sdk;
mod cli;
mod cli_providers;
mod compaction;
mod config_reference;
mod confinement;
mod custom_commands;
mod docs;
mod every_tool;
mod example;
mod fetch;
mod fixtures;
mod git_baseline;
mod hooks;
mod hostile;
mod init_binary;
mod layers;
mod mcp;
mod network;
mod plan_mode;
mod project_root;
mod providers;
mod prune;
mod reasoning;
mod sandbox;
mod sessions;
mod skill_scripts;
mod spare;
mod strict_mock;
mod text_calls;
mod tools;
mod wire_shapes;
