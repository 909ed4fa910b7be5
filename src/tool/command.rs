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

/// Fills `{{name}}` placeholders with shell-quoted argument values, in one pass over the
/// template: a value is never scanned again, so a value containing `{{other}}` stays literal
/// text. A declared parameter the call omitted becomes an empty argument (`''`); a
/// placeholder that names no parameter is left as written.
pub fn render_command(template: &str, args: &Value, declared: &[String]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = &after[..end];
        match args.get(name) {
            Some(value) => out.push_str(&shell_quote(&scalar(value))),
            None if declared.iter().any(|d| d == name) => out.push_str("''"),
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The parameter names a schema declares.
fn declared_params(schema: &Value) -> Vec<String> {
    schema["properties"]
        .as_object()
        .map(|props| props.keys().cloned().collect())
        .unwrap_or_default()
}

impl Tool for CommandTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn display(&self) -> crate::protocol::Display {
        crate::protocol::Display::Output
    }

    fn runs_commands(&self) -> bool {
        true
    }

    fn parameters(&self) -> Value {
        self.schema.clone()
    }
    /// brute's when built from `params`; a `parameters` schema from the config is its writer's.
    fn parameters_in_draft_7(&self) -> bool {
        self.spec.parameters.is_none()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let command = render_command(&self.spec.command, &args, &declared_params(&self.schema));
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
                // Like the shell, in the working directory: path arguments the model gives
                // are relative to it.
                run_process(&command, &ctx.cwd, Some(stdin), &envs, timeout, ctx).await?;
            let notes: Vec<String> = [stdout.note(), stderr.note()].into_iter().flatten().collect();
            let mut stdout = stdout.text();
            let stderr = stderr.text();
            for note in &notes {
                stdout.push_str(&format!("\n{note}"));
            }
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

    /// A schema written in the config keeps its own draft (2020-12 unless it says otherwise):
    /// checked as draft 7, `prefixItems` would constrain nothing.
    #[test]
    fn a_written_schema_is_checked_in_its_own_draft() {
        let schema =
            json!({"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}]}}});
        let written = CommandTool::new(CommandToolSpec {
            parameters: Some(toml::Value::try_from(&schema).unwrap()),
            ..spec(&[])
        })
        .unwrap();
        assert!(!written.parameters_in_draft_7());
        assert!(
            CommandTool::new(spec(&[("n", "integer")]))
                .unwrap()
                .parameters_in_draft_7()
        );
        let bad = json!({"pair": [1]});
        let own = crate::tool::adapter::compile("t", &written.parameters(), false).unwrap();
        assert!(crate::tool::adapter::validate("t", &own, &bad).is_err());
        let as_7 = crate::tool::adapter::compile("t", &written.parameters(), true).unwrap();
        assert!(
            crate::tool::adapter::validate("t", &as_7, &bad).is_ok(),
            "the difference the choice makes"
        );
    }

    #[test]
    fn templates_are_shell_quoted() {
        let args = json!({"path": "a b'; rm -rf /", "n": 3});
        let declared = ["path".to_owned(), "n".to_owned()];
        assert_eq!(
            render_command("wc {{path}} {{n}}", &args, &declared),
            r"wc 'a b'\''; rm -rf /' '3'"
        );
    }

    #[test]
    fn templates_fill_in_one_pass() {
        // A value holding another placeholder is never expanded again.
        let args = json!({"a": "{{b}}", "b": "; touch PWNED; #"});
        let declared = ["a".to_owned(), "b".to_owned(), "opt".to_owned()];
        assert_eq!(render_command("echo {{a}}", &args, &declared), "echo '{{b}}'");
        // An omitted optional parameter is an empty argument, never the literal placeholder.
        assert_eq!(render_command("ls {{opt}} x", &args, &declared), "ls '' x");
        // Unknown placeholders and unclosed braces stay as written.
        assert_eq!(render_command("{{zz}} {{a", &args, &declared), "{{zz}} {{a");
    }
}
