//! The registry: the tools of one run, after filtering and capping, with their compiled
//! argument validators.

use std::sync::Arc;

use serde_json::Value;

use super::{Tool, ToolError};
use crate::provider::{ToolCall, ToolSpec};

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

/// At most this many items of a list in a notice…
const LIST_ITEMS: usize = 20;
/// …and at most about this many characters of them (each item is cut to a third of it).
const LIST_CHARS: usize = 300;

/// A list of names for a one-line notice, bounded whatever the list (a server may list
/// 10,000 tools): all of them when they fit, else `first N of M: a, b, …`.
pub fn brief_list(items: &[impl AsRef<str>]) -> String {
    let cut = |item: &str| -> String {
        let room = LIST_CHARS / 3;
        if item.chars().count() <= room {
            return item.to_owned();
        }
        let mut cut: String = item.chars().take(room).collect();
        cut.push('…');
        cut
    };
    let mut shown = Vec::new();
    let mut chars = 0;
    for item in items.iter().take(LIST_ITEMS) {
        let item = cut(item.as_ref());
        chars += item.chars().count() + 2;
        if chars > LIST_CHARS && !shown.is_empty() {
            break;
        }
        shown.push(item);
    }
    if shown.len() == items.len() {
        return shown.join(", ");
    }
    format!(
        "first {} of {}: {}, …",
        shown.len(),
        grouped(items.len() as u64),
        shown.join(", ")
    )
}

/// `n` with thousands separators (`419,430,400`).
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

struct Entry {
    tool: Arc<dyn Tool>,
}

/// How a registry wraps each tool it is given: the tool pipeline every call passes
/// ([`crate::pipeline::wrap`]: validation, the path guard, hooks, the approval step, the file
/// queue, snapshots, logging). Supplied by the layer above, so no registry can be built that
/// skips it by accident.
pub type Wrap = fn(Arc<dyn Tool>) -> Arc<dyn Tool>;

/// The tools of one run.
pub struct Registry {
    entries: Vec<Entry>,
    wrap: Wrap,
}

impl Registry {
    /// An empty registry whose tools are wrapped by `wrap` (usually [`crate::pipeline::registry`]
    /// builds it).
    pub fn new(wrap: Wrap) -> Self {
        Self {
            entries: Vec::new(),
            wrap,
        }
    }

    /// Adds a tool, wrapped by the registry's [`Wrap`]; a later tool with the same name
    /// replaces the earlier one.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.entries.retain(|e| e.tool.name() != tool.name());
        self.entries.push(Entry {
            tool: (self.wrap)(tool),
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
                            brief_list(&self.names())
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
                "the tool cap ({max}) dropped {} tool(s): {}",
                grouped(dropped as u64),
                brief_list(&names)
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

    /// The definitions advertised to the model in plan mode or out of it (see
    /// [`super::plan::offered`]).
    pub fn specs_for(&self, planning: bool) -> Vec<ToolSpec> {
        self.entries
            .iter()
            .filter(|e| super::plan::offered(e.tool.as_ref(), planning))
            .map(|e| ToolSpec {
                name: e.tool.name().to_owned(),
                description: e.tool.description().to_owned(),
                parameters: e.tool.parameters(),
            })
            .collect()
    }

    /// The definitions of every tool, whatever the mode.
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

    /// Finds the call's tool and takes its parsed arguments: an unknown tool or bad JSON becomes an error
    /// telling the model exactly what was wrong. (The schema is checked when the call runs.)
    pub fn prepare(&self, call: &ToolCall) -> Result<(Arc<dyn Tool>, Value), ToolError> {
        let name = call.name.as_str();
        let Some(entry) = self.entries.iter().find(|e| e.tool.name() == name) else {
            return Err(ToolError::new(
                "UnknownTool",
                format!("no tool named `{name}`. Available tools: {}", self.names().join(", ")),
            ));
        };
        let raw = call.arguments();
        let args = call
            .input()
            .map_err(|e| ToolError::invalid(format!("arguments are not valid JSON ({e}): {raw}")))?;
        if !args.is_object() {
            return Err(ToolError::invalid(format!(
                "arguments must be a JSON object, got: {raw}"
            )));
        }
        Ok((entry.tool.clone(), args.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{Params, ToolOutput, fn_tool};

    fn registry(n: usize) -> Registry {
        let mut registry = Registry::new(|tool| tool);
        for i in 0..n {
            let tool = fn_tool(&format!("t{i}"), "d", Params::new().build(), |_, _| async {
                Ok(ToolOutput::text(""))
            });
            registry.register(Arc::new(tool));
        }
        registry
    }

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(419_430_400), "419,430,400");
    }

    #[test]
    fn long_lists_in_notices_are_bounded() {
        assert_eq!(brief_list(&["a", "b"]), "a, b");
        assert_eq!(brief_list(&[] as &[&str]), "");
        let many: Vec<String> = (0..10_000).map(|i| format!("mcp__big__tool_{i:05}")).collect();
        let text = brief_list(&many);
        assert!(text.starts_with("first 13 of 10,000: mcp__big__tool_00000, "), "{text}");
        assert!(text.ends_with(", …") && text.len() < LIST_CHARS + 40, "{text}");
        let huge = brief_list(&["x".repeat(100_000)]);
        assert!(huge.chars().count() <= LIST_CHARS / 3 + 1, "{huge}");
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
