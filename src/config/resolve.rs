//! Resolving the layers into [`Settings`]: defaults for what no layer set, and the provider
//! (named, or detected from the environment or a local server that answers) with its key,
//! base URL and model.

use std::path::Path;
use std::time::Duration;

use super::layers::{Layers, gather};
use super::settings::{Resolved, Settings};
use super::{ConfigError, EnvLookup, Flags, Source, Sourced};
use crate::provider::spec::{self, ProviderKind, ProviderSpec};

/// The provider a name from config, env or flags stands for.
pub fn parse_provider(name: &str) -> Result<ProviderKind, ConfigError> {
    spec::find(name)
        .map(|spec| spec.kind)
        .ok_or_else(|| ConfigError::UnknownProvider(name.trim().to_ascii_lowercase()))
}

/// Set to skip the probe for a local server (tests, machines where a probe is unwelcome).
pub const NO_PROBE_VAR: &str = "BRUTE_NO_OLLAMA_PROBE";

/// Whether something accepts connections at `authority` (`host:port`) within 150 ms.
fn answers(authority: &str) -> bool {
    use std::net::ToSocketAddrs;
    let Ok(mut addrs) = authority.to_socket_addrs() else {
        return false;
    };
    addrs
        .next()
        .is_some_and(|addr| std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(150)).is_ok())
}

/// Resolves the settings for a project root.
pub fn load(
    root: &Path,
    flags: &Flags,
    env: EnvLookup<'_>,
    user_config: Option<&Path>,
) -> Result<Settings, ConfigError> {
    resolve(gather(root, flags, env, user_config)?, env)
}

/// Applies defaults and picks the provider: the special settings, worked out by hand.
pub(super) fn resolve(layers: Layers, env: EnvLookup<'_>) -> Result<Settings, ConfigError> {
    let Layers {
        mut gathered,
        command_tools,
        searched,
        untrusted_ignored,
        config_changed,
        yolo,
        plan,
        add_dirs,
        images,
        append_system_prompt,
        rules,
        models,
        hooks,
        mcp_servers,
        mcp_notices,
    } = layers;
    let plain = gathered.take_plain()?;
    let g = &mut gathered;
    let provider = match g.provider.take() {
        Some(name) => Sourced::new(parse_provider(&name.value)?, name.source),
        None => detect(env)?,
    };
    let spec = provider.value.spec();
    let own_key = || {
        spec.key_vars
            .iter()
            .find_map(|var| env(var).map(|key| Sourced::new(key, Source::Env((*var).to_owned()))))
    };
    // A provider found by its own key variable gets that key: the generic key
    // (BRUTE_API_KEY, `api_key`) may belong to another server and must not travel to this one.
    let detected = matches!(provider.source, Source::Detected(_)) && !spec.key_vars.is_empty();
    let generic = g.api_key.take();
    let api_key = if detected { own_key() } else { generic.or_else(own_key) };
    let base_url = g.base_url.take().unwrap_or_else(|| default_base_url(spec, env));
    if api_key.is_none()
        && spec.key_required
        && let Some(var) = spec.key_vars.first()
        && base_url.source == Source::Default
    {
        return Err(ConfigError::MissingKey {
            provider: spec.name,
            var,
        });
    }
    let model = g
        .model
        .take()
        .unwrap_or_else(|| Sourced::new(spec.default_model.to_owned(), Source::Default));
    let resolved = Resolved {
        provider,
        model,
        base_url,
        api_key,
        script: g.script.take(),
        allow_tools: g.allow_tools.take(),
        command_tools,
        files: searched
            .into_iter()
            .filter(|file| file.found)
            .map(|file| file.path)
            .collect(),
        untrusted_ignored,
        config_changed,
        yolo,
        plan,
        add_dirs,
        images,
        append_system_prompt,
        rules,
        models,
        hooks,
        mcp_servers,
        mcp_notices,
    };
    Ok(Settings::assemble(resolved, plain))
}

/// The base URL when no layer sets one: the provider's variable, else its default.
fn default_base_url(spec: &ProviderSpec, env: EnvLookup<'_>) -> Sourced<String> {
    if let Some(var) = spec.base_url_var
        && let Some(value) = env(var.var())
    {
        return Sourced::new(var.base_url(&value), Source::Env(var.var().to_owned()));
    }
    Sourced::new(spec.default_base_url.unwrap_or("(none)").to_owned(), Source::Default)
}

/// Picks a provider from the usual environment variables, or a local server that answers, in
/// the table's order.
fn detect(env: EnvLookup<'_>) -> Result<Sourced<ProviderKind>, ConfigError> {
    for spec in spec::SPECS {
        if let Some(var) = spec.detect_var
            && env(var).is_some()
        {
            return Ok(Sourced::new(spec.kind, Source::Detected(format!("{var} is set"))));
        }
    }
    if env(NO_PROBE_VAR).is_none() {
        for spec in spec::SPECS.iter().filter(|spec| spec.probe) {
            if let Some(authority) = spec.default_authority()
                && answers(authority)
            {
                let how = format!("{} answers on {authority}", spec.label);
                return Ok(Sourced::new(spec.kind, Source::Detected(how)));
            }
        }
    }
    Err(ConfigError::NoProvider)
}
