//! `brute mcp list | get | add | remove`: what each prints and its exit code. `add` and
//! `remove` change only the user's config file (see [`edit`]); project servers are
//! edited in the project's own files.

use std::path::Path;

pub mod edit;

use crate::cli::{McpCommand, exit};
use crate::mcp::config::{Server, ServerSpec};

/// Runs one `brute mcp` action. `servers` loads the configured servers (only when needed).
/// Returns the text for stdout and the exit code; usage problems are errors.
pub fn run(
    action: &McpCommand,
    user_config: Option<&Path>,
    servers: impl FnOnce() -> Result<(Vec<Server>, Vec<String>), crate::config::ConfigError>,
) -> anyhow::Result<(String, i32)> {
    match action {
        McpCommand::List => {
            let (servers, notices) = servers()?;
            let mut out = String::new();
            if servers.is_empty() {
                out.push_str("no MCP servers configured (brute mcp add NAME -- COMMAND ARGS…)\n");
            }
            for server in &servers {
                out.push_str(&format!(
                    "{}\t{}\t{}\t{}\n",
                    server.name,
                    server.spec.describe(),
                    if server.spec.enabled() { "enabled" } else { "disabled" },
                    server.origin
                ));
            }
            for notice in notices {
                out.push_str(&format!("note: {notice}\n"));
            }
            Ok((out, exit::OK))
        }
        McpCommand::Get { name } => {
            let (servers, _) = servers()?;
            let Some(server) = servers.iter().find(|s| &s.name == name) else {
                anyhow::bail!("no MCP server named `{name}` (brute mcp list shows them)");
            };
            Ok((describe(server), exit::OK))
        }
        McpCommand::Add {
            name,
            env,
            url,
            command,
        } => {
            let file = user_config.ok_or_else(|| anyhow::anyhow!("no config directory (set BRUTE_CONFIG_DIR)"))?;
            let mut spec = ServerSpec {
                url: url.clone(),
                ..ServerSpec::default()
            };
            if let Some((program, args)) = command.split_first() {
                spec.command = Some(program.clone());
                spec.args = args.to_vec();
            }
            for pair in env {
                let Some((key, value)) = pair.split_once('=').filter(|(k, _)| !k.is_empty()) else {
                    anyhow::bail!("--env takes KEY=VALUE, got `{pair}`");
                };
                spec.env.insert(key.to_owned(), value.to_owned());
            }
            edit::add(file, name, &spec)?;
            Ok((
                format!(
                    "added MCP server `{name}` ({}) to {}\n",
                    spec.describe(),
                    file.display()
                ),
                exit::OK,
            ))
        }
        McpCommand::Remove { name } => {
            let file = user_config.ok_or_else(|| anyhow::anyhow!("no config directory (set BRUTE_CONFIG_DIR)"))?;
            edit::remove(file, name)?;
            Ok((
                format!("removed MCP server `{name}` from {}\n", file.display()),
                exit::OK,
            ))
        }
    }
}

/// Every setting of one server (environment values are not shown: they may be secrets).
fn describe(server: &Server) -> String {
    let spec = &server.spec;
    let mut out = format!("name: {}\n", server.name);
    out.push_str(&format!("transport: {}\n", spec.describe()));
    if let Some(cwd) = &spec.cwd {
        out.push_str(&format!("cwd: {}\n", cwd.display()));
    }
    if !spec.env.is_empty() {
        let keys: Vec<&str> = spec.env.keys().map(String::as_str).collect();
        out.push_str(&format!("env: {} (values hidden)\n", keys.join(", ")));
    }
    if !spec.headers.is_empty() {
        let keys: Vec<&str> = spec.headers.keys().map(String::as_str).collect();
        out.push_str(&format!("headers: {} (values hidden)\n", keys.join(", ")));
    }
    if let Some(var) = &spec.bearer_token_env_var {
        out.push_str(&format!("bearer token from: ${var}\n"));
    }
    out.push_str(&format!("enabled: {}\n", spec.enabled()));
    out.push_str(&format!("startup timeout: {} s\n", spec.startup_timeout().as_secs()));
    out.push_str(&format!("tool timeout: {} s\n", spec.tool_timeout().as_secs()));
    out.push_str(&format!("source: {}\n", server.origin));
    out
}
