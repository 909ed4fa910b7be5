//! The registry: the tools of one run, after filtering and capping, with their compiled
//! argument validators.

use std::sync::Arc;

use serde_json::Value;

use super::adapter::{GuardPaths, KeepAfterCommands, LogCalls, Pipeline, ValidateArgs};
use super::{Tool, ToolError};
use crate::provider::ToolSpec;

/// The default cap on advertised tools.
pub const DEFAULT_MAX_TOOLS: usize = 128;

/// Which tools a run offers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ToolFilter {
    /// Every registered tool.
    #[default]
    All,
    /// No tools at all.
    None,
    /// Only these names (unknown names are reported).
    Only(Vec<String>),
}

struct Entry {
    tool: Arc<dyn Tool>,
}

/// The tools of one run.
#[derive(Default)]
pub struct Registry {
    entries: Vec<Entry>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool; a later tool with the same name replaces the earlier one. Every tool is
    /// wrapped so its `pre_tool_use` hooks run first (see [`crate::hooks::layer`]), its
    /// arguments (as a hook left them) are validated against its schema before it runs, the
    /// paths it changes are kept inside the boundaries of [`super::guard`], the permission step
    /// decides, its `post_tool_use` hooks see the result, and it is logged.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.entries.retain(|e| e.tool.name() != tool.name());
        let wrapped = Pipeline::new(tool)
            .layer(LogCalls)
            .layer(crate::hooks::layer::PreToolHooks)
            .layer(ValidateArgs::default())
            .layer(GuardPaths)
            .layer(super::approve::Approve)
            .layer(KeepAfterCommands)
            .layer(crate::hooks::layer::PostToolHooks);
        self.entries.push(Entry {
            tool: Arc::new(wrapped),
        });
    }

    /// Adds a tool that must not replace one already registered (config and library tools
    /// never shadow a built-in). The error names the tool.
    pub fn register_new(&mut self, tool: Arc<dyn Tool>) -> Result<(), String> {
        if self.get(tool.name()).is_some() {
            return Err(format!(
                "a tool named `{}` already exists (built-in tools cannot be replaced)",
                tool.name()
            ));
        }
        self.register(tool);
        Ok(())
    }

    /// Keeps only what `filter` and `deny` allow, then at most `max` tools. Returns notices
    /// for the person (unknown names, tools dropped by the cap).
    pub fn apply(&mut self, filter: &ToolFilter, deny: &[String], max: usize) -> Vec<String> {
        let mut notices = Vec::new();
        match filter {
            ToolFilter::All => {}
            ToolFilter::None => self.entries.clear(),
            ToolFilter::Only(names) => {
                for name in names {
                    if !self.entries.iter().any(|e| e.tool.name() == name) {
                        notices.push(format!(
                            "unknown tool `{name}` in the tool list (available: {})",
                            self.names().join(", ")
                        ));
                    }
                }
                self.entries.retain(|e| names.iter().any(|n| n == e.tool.name()));
            }
        }
        self.entries.retain(|e| !deny.iter().any(|n| n == e.tool.name()));
        let max = max.max(1);
        if self.entries.len() > max {
            let dropped = self.entries.len() - max;
            let names: Vec<String> = self.entries[max..].iter().map(|e| e.tool.name().to_owned()).collect();
            self.entries.truncate(max);
            notices.push(format!(
                "the tool cap ({max}) dropped {dropped} tool(s): {}",
                names.join(", ")
            ));
        }
        notices
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.entries
            .iter()
            .find(|e| e.tool.name() == name)
            .map(|e| e.tool.clone())
    }

    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.tool.name()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The definitions advertised to the model.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.entries
            .iter()
            .map(|e| ToolSpec {
                name: e.tool.name().to_owned(),
                description: e.tool.description().to_owned(),
                parameters: e.tool.parameters(),
            })
            .collect()
    }

    /// Finds the tool and parses raw arguments: an unknown tool or bad JSON becomes an error
    /// telling the model exactly what was wrong. (The schema is checked when the call runs.)
    pub fn prepare(&self, name: &str, raw: &str) -> Result<(Arc<dyn Tool>, Value), ToolError> {
        let Some(entry) = self.entries.iter().find(|e| e.tool.name() == name) else {
            return Err(ToolError::new(
                "UnknownTool",
                format!("no tool named `{name}`. Available tools: {}", self.names().join(", ")),
            ));
        };
        let raw = if raw.trim().is_empty() { "{}" } else { raw };
        let args: Value = serde_json::from_str(raw)
            .map_err(|e| ToolError::invalid(format!("arguments are not valid JSON ({e}): {raw}")))?;
        if !args.is_object() {
            return Err(ToolError::invalid(format!(
                "arguments must be a JSON object, got: {raw}"
            )));
        }
        Ok((entry.tool.clone(), args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{Params, ToolOutput, fn_tool};

    fn registry(n: usize) -> Registry {
        let mut registry = Registry::new();
        for i in 0..n {
            let tool = fn_tool(&format!("t{i}"), "d", Params::new().build(), |_, _| async {
                Ok(ToolOutput::text(""))
            });
            registry.register(Arc::new(tool));
        }
        registry
    }

    #[test]
    fn filters_and_caps_with_notices() {
        let mut r = registry(5);
        let notices = r.apply(&ToolFilter::All, &[], 3);
        assert_eq!(r.names(), ["t0", "t1", "t2"]);
        assert_eq!(notices, ["the tool cap (3) dropped 2 tool(s): t3, t4"]);
        let mut r = registry(5);
        let notices = r.apply(
            &ToolFilter::Only(vec!["t1".into(), "t4".into(), "zz".into()]),
            &["t4".into()],
            128,
        );
        assert_eq!(r.names(), ["t1"]);
        assert!(notices[0].starts_with("unknown tool `zz`"));
        let mut r = registry(2);
        r.apply(&ToolFilter::None, &[], 128);
        assert!(r.is_empty() && r.specs().is_empty());
        // A tool without parameters advertises an empty object schema.
        assert_eq!(
            registry(1).specs()[0].parameters,
            serde_json::json!({"type": "object", "properties": {}})
        );
    }
}
