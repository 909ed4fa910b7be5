//! Command tools declared in config, for tools written without Rust:
//!
//! ```toml
//! [[tools]]
//! name = "word_count"
//! description = "Count words in a file"
//! params = { path = "string: the file", lines = "boolean?: count lines instead" }
//! command = "wc -w < {{path}}"
//! timeout_secs = 30
//! ```
//!
//! `params` is the short form (`type`, `type?` for optional, `: description`); `parameters`
//! takes a full JSON Schema instead. The arguments reach the command as JSON on stdin, as
//! `BRUTE_ARG_<NAME>` environment variables (simple values), and as `{{name}}` template
//! values (shell-quoted). stdout is the result; a non-zero exit is an error with stderr.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::shell::{Ending, ProcessRun, run_process};
use super::{Params, Tool, ToolContext, ToolError, ToolOutput};

/// Default timeout of a command tool.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// A `[[tools]]` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandToolSpec {
    pub name: String,
    pub description: String,
    /// Short form: name → `type`, `type?` (optional) or `type: description`.
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    /// A full JSON Schema for the arguments (instead of `params`).
    #[serde(default)]
    pub parameters: Option<toml::Value>,
    pub command: String,
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

/// A tool that runs a configured command.
pub struct CommandTool {
    spec: CommandToolSpec,
    schema: Value,
}

const TYPES: &[&str] = &["string", "integer", "number", "boolean", "array", "object"];

impl CommandTool {
    /// Checks the spec and builds its schema.
    pub fn new(spec: CommandToolSpec) -> Result<Self, String> {
        let valid_name = !spec.name.is_empty()
            && spec
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid_name {
            return Err(format!("tool name `{}` must be letters, digits, `_` or `-`", spec.name));
        }
        let schema = match &spec.parameters {
            Some(schema) => {
                let schema = serde_json::to_value(schema).map_err(|e| e.to_string())?;
                jsonschema::validator_for(&schema)
                    .map_err(|e| format!("tool `{}`: invalid parameters schema: {e}", spec.name))?;
                schema
            }
            None => {
                let mut params = Params::new();
                for (name, short) in &spec.params {
                    let (kind, description) = short
                        .split_once(':')
                        .map_or((short.as_str(), ""), |(k, d)| (k, d.trim()));
                    let kind = kind.trim();
                    let (kind, required) = match kind.strip_suffix('?') {
                        Some(k) => (k, false),
                        None => (kind, true),
                    };
                    if !TYPES.contains(&kind) {
                        return Err(format!(
                            "tool `{}`: parameter `{name}` has unknown type `{kind}` (use one of {})",
                            spec.name,
                            TYPES.join(", ")
                        ));
                    }
                    params = params.param(name, kind, description, required);
                }
                params.build()
            }
        };
        Ok(Self { spec, schema })
    }
}

/// Quotes a value for POSIX shells.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Fills `{{name}}` placeholders with shell-quoted argument values.
pub fn render_command(template: &str, args: &Value) -> String {
    let mut out = template.to_owned();
    if let Some(map) = args.as_object() {
        for (name, value) in map {
            out = out.replace(&format!("{{{{{name}}}}}"), &shell_quote(&scalar(value)));
        }
    }
    out
}

impl Tool for CommandTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn parameters(&self) -> Value {
        self.schema.clone()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let command = render_command(&self.spec.command, &args);
            let envs: Vec<(String, String)> = args
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, v)| !v.is_object() && !v.is_array())
                .map(|(k, v)| (format!("BRUTE_ARG_{}", k.to_ascii_uppercase()), scalar(v)))
                .collect();
            let timeout = Duration::from_secs(self.spec.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS));
            let stdin = serde_json::to_vec(&args).unwrap_or_default();
            let ProcessRun { stdout, stderr, ending } =
                run_process(&command, &ctx.root, Some(stdin), &envs, timeout, ctx).await?;
            let stdout = String::from_utf8_lossy(&stdout).into_owned();
            let stderr = String::from_utf8_lossy(&stderr).into_owned();
            match ending {
                Ending::Exited(status) if status.success() => Ok(ToolOutput::text(if stdout.is_empty() {
                    "(no output)".to_owned()
                } else {
                    stdout
                })),
                Ending::Exited(status) => {
                    let code = status.code().map_or_else(|| "a signal".to_owned(), |c| c.to_string());
                    let mut message = format!("`{}` exited with {code}", self.spec.name);
                    for (label, text) in [("stderr", &stderr), ("stdout", &stdout)] {
                        if !text.trim().is_empty() {
                            message.push_str(&format!("\n{label}:\n{}", text.trim_end()));
                        }
                    }
                    Err(ToolError::new("CommandFailed", super::shell::bounded(&message, ctx)))
                }
                Ending::TimedOut => Err(ToolError::new(
                    "Timeout",
                    format!(
                        "`{}` timed out after {} s and was killed",
                        self.spec.name,
                        timeout.as_secs()
                    ),
                )),
                Ending::Interrupted => Err(ToolError::new("Interrupted", "the user interrupted this call")),
            }
        })
    }
}

/// The schema of a tool with no parameters, for reference in docs and tests.
pub fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(params: &[(&str, &str)]) -> CommandToolSpec {
        CommandToolSpec {
            name: "t".into(),
            description: "d".into(),
            params: params.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
            parameters: None,
            command: "true".into(),
            timeout_secs: None,
        }
    }

    #[test]
    fn short_form_schema() {
        let tool = CommandTool::new(spec(&[("path", "string: the file"), ("n", "integer?")])).unwrap();
        let schema = tool.parameters();
        assert_eq!(
            schema["properties"]["path"],
            json!({"type": "string", "description": "the file"})
        );
        assert_eq!(schema["required"], json!(["path"]));
        assert!(CommandTool::new(spec(&[("x", "strin")])).is_err());
        assert_eq!(CommandTool::new(spec(&[])).unwrap().parameters(), empty_schema());
    }

    #[test]
    fn templates_are_shell_quoted() {
        let args = json!({"path": "a b'; rm -rf /", "n": 3});
        assert_eq!(
            render_command("wc {{path}} {{n}}", &args),
            r"wc 'a b'\''; rm -rf /' '3'"
        );
    }
}
