//! The tool pipeline: the one place that says what every tool call passes through, whatever
//! the tool's shape (built-in, config command, skill script, MCP server's tool, sub-agent,
//! library closure).
//!
//! From the outside in: the call is logged ([`LogCalls`]); `pre_tool_use` hooks run and may
//! change the arguments or decide ([`hooks`]); the arguments are validated against the tool's
//! schema ([`ValidateArgs`]); the paths it changes are kept inside the boundaries of
//! [`crate::tool::guard`] ([`GuardPaths`]); the approval step decides ([`approve`]: plan
//! mode, rules, the sandbox mode, the person); commands' changes are kept for undo
//! ([`KeepAfterCommands`]); `post_tool_use` hooks see the result. Inside that, calls on one
//! file wait their turn in call order ([`FileQueue`]) and the file is snapshotted before it
//! changes ([`SnapshotFirst`], unless the tool says [`Tool::snapshot_before`] is false).
//!
//! It sits above `tool`, `hooks` and `permission` because it joins them; the registry
//! ([`crate::tool::Registry`]) is handed [`wrap`] so a registry without it cannot be built.

pub mod approve;
pub mod hooks;

use std::sync::Arc;

use crate::tool::adapter::{FileQueue, GuardPaths, KeepAfterCommands, LogCalls, SnapshotFirst, ValidateArgs};
use crate::tool::{Pipeline, Registry, Tool};

/// Wraps `tool` in the whole pipeline (see the module docs).
pub fn wrap(tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
    let snapshot = tool.snapshot_before();
    let mut files = Pipeline::new(tool).layer(FileQueue);
    if snapshot {
        files = files.layer(SnapshotFirst);
    }
    Arc::new(
        Pipeline::new(Arc::new(files))
            .layer(LogCalls)
            .layer(hooks::PreToolHooks)
            .layer(ValidateArgs::default())
            .layer(GuardPaths)
            .layer(approve::Approve)
            .layer(KeepAfterCommands)
            .layer(hooks::PostToolHooks),
    )
}

/// An empty registry whose tools pass the pipeline.
pub fn registry() -> Registry {
    Registry::new(wrap)
}
