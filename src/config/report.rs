//! What brute tells the person about its configuration: `brute config` (every setting with
//! its source, or, with no usable provider, where brute looked and what to set), `brute
//! permissions`, and the environment variables configuration reads.

use std::path::{Path, PathBuf};

use super::layers::{Layers, gather};
use super::resolve::{NO_PROBE_VAR, resolve};
use super::settings::{Gathered, Settings};
use super::{ConfigError, EnvLookup, Flags, Source, Value};
use crate::paths;
use crate::provider::spec;

impl Settings {
    /// A human-readable listing of every setting and its source; the API key is masked.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let mut line = |name: &str, value: String, source: &Source| out.push_str(&format_line(name, &value, source));
        line(
            "provider",
            self.provider.value.as_str().to_owned(),
            &self.provider.source,
        );
        line("model", self.model.value.clone(), &self.model.source);
        line("base_url", self.base_url.value.clone(), &self.base_url.source);
        match &self.api_key {
            Some(key) => line(
                "api_key",
                format!("(set, {} chars, hidden)", key.value.chars().count()),
                &key.source,
            ),
            None => line("api_key", "(not set)".to_owned(), &Source::Default),
        }
        self.plain().describe(&mut line);
        if let Some(script) = &self.script {
            line("script", script.value.show(), &script.source);
        }
        match &self.allow_tools {
            Some(tools) => line("allow_tools", tools.value.show(), &tools.source),
            None => line("allow_tools", "(all)".to_owned(), &Source::Default),
        }
        if self.command_tools.is_empty() {
            line("tools", "(none)".to_owned(), &Source::Default);
        }
        for tool in &self.command_tools {
            line("tools", tool.value.name.clone(), &tool.source);
        }
        let kinds = crate::permission::RuleKind::ALL;
        if self.models.is_empty() {
            line("models", "(none)".to_owned(), &Source::Default);
        }
        for (name, model) in &self.models {
            line("models", format!("{name}: {:?}", model.value), &model.source);
        }
        if self.hooks.is_empty() {
            line("hooks", "(none)".to_owned(), &Source::Default);
        }
        for hook in &self.hooks {
            line("hooks", hook.value.describe(), &hook.source);
        }
        if self.mcp_servers.is_empty() {
            line("mcp_servers", "(none)".to_owned(), &Source::Default);
        }
        for server in &self.mcp_servers {
            let off = if server.spec.enabled() { "" } else { " (disabled)" };
            line(
                "mcp_servers",
                format!("{}: {}{off}", server.name, server.spec.describe()),
                &Source::File(PathBuf::from(server.origin.to_string())),
            );
        }
        for notice in &self.mcp_notices {
            line("mcp_servers", notice.clone(), &Source::Default);
        }
        if self.rules.is_empty() {
            line("permissions", "(none)".to_owned(), &Source::Default);
        }
        for kind in kinds {
            for (rule, source) in self.rules.list(kind) {
                let source = match source {
                    crate::permission::Source::File(path) => Source::File(path.clone()),
                    other => Source::Detected(other.to_string()),
                };
                line("permissions", format!("{kind} {rule}"), &source);
            }
        }
        out.push_str("\nconfig files read:\n");
        if self.files.is_empty() {
            out.push_str("  (none)\n");
        }
        for file in &self.files {
            out.push_str(&format!("  {}\n", file.display()));
        }
        out
    }
}

/// What `brute permissions` prints: the sandbox mode and where it came from, then every
/// permission rule with its source (config files, then the approvals saved for this project),
/// and the project settings left out for want of trust. Needs no provider.
pub fn permissions_report(
    root: &Path,
    flags: &Flags,
    env: EnvLookup<'_>,
    user_config: Option<&Path>,
) -> Result<String, ConfigError> {
    let layers = gather(root, flags, env, user_config)?;
    let plain = layers.gathered.clone().take_plain()?;
    let mut out = format!("sandbox: {} ({})\n", plain.sandbox.value.as_str(), plain.sandbox.source);
    let mut rules = layers.rules.clone();
    if let Some(data) = paths::data_dir() {
        let file = crate::permission::approvals::file(&data, root);
        rules.append(crate::permission::approvals::load(&file));
        out.push_str(&format!("saved approvals: {}\n", file.display()));
    }
    out.push_str(
        "\nrules (deny wins over ask, ask over allow; only allow_unsandboxed allows a call out of the sandbox):\n",
    );
    if rules.is_empty() {
        out.push_str("  (none: add [permissions] allow/deny/ask to config.toml)\n");
    } else {
        for line in rules.describe().lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    if !layers.untrusted_ignored.is_empty() {
        out.push_str(&format!(
            "\nignored (project not trusted; brute trust applies them): {}\n",
            layers.untrusted_ignored.join(", ")
        ));
    }
    Ok(out)
}

/// The MCP servers configured for a project root (user config, then a trusted project's
/// config and `.mcp.json`), and notices for what was left out. Needs no provider.
pub fn mcp_servers(
    root: &Path,
    flags: &Flags,
    env: EnvLookup<'_>,
    user_config: Option<&Path>,
) -> Result<(Vec<crate::mcp::config::Server>, Vec<String>), ConfigError> {
    let layers = gather(root, flags, env, user_config)?;
    Ok((layers.mcp_servers, layers.mcp_notices))
}

/// What `brute config` prints: the effective settings or, when no provider can be used yet,
/// where brute looked, what each layer set, the variables it reads and what to set. Only
/// unreadable or invalid configuration is an error.
pub fn report(
    root: &Path,
    flags: &Flags,
    env: EnvLookup<'_>,
    user_config: Option<&Path>,
) -> Result<String, ConfigError> {
    let layers = gather(root, flags, env, user_config)?;
    match resolve(layers.clone(), env) {
        Ok(settings) => Ok(settings.describe()),
        Err(problem @ (ConfigError::NoProvider | ConfigError::MissingKey { .. })) => {
            unconfigured(layers, env, &problem)
        }
        Err(e) => Err(e),
    }
}

/// The `brute config` report without a usable provider. Never shows a variable's value.
fn unconfigured(layers: Layers, env: EnvLookup<'_>, problem: &ConfigError) -> Result<String, ConfigError> {
    let mut out = match problem {
        ConfigError::NoProvider => "no model provider configured\n".to_owned(),
        other => format!("{other}\n"),
    };
    let plain = layers.gathered.clone().take_plain()?;
    out.push_str("\nsettings that need no provider:\n");
    plain.describe(&mut |name, value, source| out.push_str(&format_line(name, &value, source)));

    out.push_str("\nlayers, lowest first:\n");
    for (layer, what) in layer_rows(&layers) {
        out.push_str(&format!("  {layer:<16} {what}\n"));
    }

    out.push_str("\nenvironment variables brute reads (values are never shown):\n");
    for (var, users) in env_vars() {
        let state = if env(var).is_some() { "set" } else { "not set" };
        out.push_str(&format!("  {var:<22} {state:<8} ({})\n", users.join(", ")));
    }
    if let Some(data) = paths::data_dir() {
        out.push_str(&format!(
            "\ndata directory (sessions, checkpoints, trust; BRUTE_DATA_DIR overrides): {}\n",
            data.display()
        ));
    }
    if matches!(problem, ConfigError::NoProvider) {
        out.push_str(&format!("\n{}\n", spec::setup_help()));
        if let Some(user) = layers.searched.iter().find(|f| f.layer == "user config" && !f.found) {
            out.push_str(&format!(
                "Or create {} with e.g. provider = \"openai\" and model = \"...\" (keys belong in the environment).\n",
                user.path.display()
            ));
        }
    }
    Ok(out)
}

/// Each layer and what it set, lowest first.
fn layer_rows(layers: &Layers) -> Vec<(&'static str, String)> {
    let sources = layers.gathered.sources();
    let mut rows = vec![("defaults", "built in".to_owned())];
    if !layers.searched.iter().any(|f| f.layer == "user config") {
        let what = format!("(no config directory: set {})", paths::CONFIG_DIR_VAR);
        rows.push(("user config", what));
    }
    for file in &layers.searched {
        let from_file = Source::File(file.path.clone());
        let mut keys: Vec<&str> = sources
            .iter()
            .filter(|(_, source)| **source == from_file)
            .map(|(key, _)| *key)
            .collect();
        if layers.command_tools.iter().any(|tool| tool.source == from_file) {
            keys.push("tools");
        }
        if layers.hooks.iter().any(|hook| hook.source == from_file) {
            keys.push("hooks");
        }
        if layers
            .mcp_servers
            .iter()
            .any(|server| server.origin == crate::mcp::config::Origin::Config(file.path.clone()))
        {
            keys.push("mcp_servers");
        }
        let status = match (file.found, keys.is_empty()) {
            (false, _) => "not found".to_owned(),
            (true, true) => "found, sets nothing".to_owned(),
            (true, false) => format!("sets {}", keys.join(", ")),
        };
        rows.push((file.layer, format!("{} ({status})", file.path.display())));
    }
    let named = |pick: fn(&Source) -> Option<&str>| {
        let mut names: Vec<&str> = sources.iter().filter_map(|(_, source)| pick(source)).collect();
        names.dedup();
        if names.is_empty() {
            "(nothing)".to_owned()
        } else {
            names.join(", ")
        }
    };
    rows.push((
        "environment",
        named(|source| match source {
            Source::Env(var) => Some(var),
            _ => None,
        }),
    ));
    rows.push((
        "flags",
        named(|source| match source {
            Source::Flag(flag) => Some(flag),
            _ => None,
        }),
    ));
    rows
}

/// Every environment variable configuration reads, with what reads it (`brute config` lists
/// them; the man page's ENVIRONMENT must name each).
pub fn env_vars() -> Vec<(&'static str, Vec<String>)> {
    let mut vars: Vec<(&str, Vec<String>)> = Gathered::ENV_VARS
        .iter()
        .map(|(var, key)| (*var, vec![(*key).to_owned()]))
        .collect();
    for spec in spec::SPECS {
        for var in spec.env_vars() {
            match vars.iter_mut().find(|(known, _)| *known == var) {
                Some((_, users)) => users.push(spec.label.to_owned()),
                None => vars.push((var, vec![spec.label.to_owned()])),
            }
        }
    }
    let probes: Vec<String> = spec::SPECS
        .iter()
        .filter(|spec| spec.probe)
        .filter_map(|spec| Some(format!("{} on {}", spec.label, spec.default_authority()?)))
        .collect();
    vars.push((NO_PROBE_VAR, vec![format!("skips looking for {}", probes.join(", "))]));
    vars.push((paths::CONFIG_DIR_VAR, vec!["user config directory".to_owned()]));
    vars
}

/// One `brute config` line.
fn format_line(name: &str, value: &str, source: &Source) -> String {
    format!("{name:<16} = {value:<32} # {source}\n")
}
