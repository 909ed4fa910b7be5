//! Configuration: built-in defaults < user `config.toml` < project `.brute/config.toml` <
//! environment < flags, then provider auto-detection. Every value remembers where it came
//! from so `brute config` can say so. API keys are never printed.

pub mod paths;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use crate::provider::spec::ProviderKind;
use crate::provider::spec::{self, ProviderSpec};

/// The provider a name from config, env or flags stands for.
pub fn parse_provider(name: &str) -> Result<ProviderKind, ConfigError> {
    spec::find(name)
        .map(|spec| spec.kind)
        .ok_or_else(|| ConfigError::UnknownProvider(name.trim().to_ascii_lowercase()))
}

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Default,
    File(PathBuf),
    Env(String),
    Flag(String),
    Detected(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => write!(f, "default"),
            Source::File(path) => write!(f, "{}", path.display()),
            Source::Env(var) => write!(f, "env {var}"),
            Source::Flag(flag) => write!(f, "flag {flag}"),
            Source::Detected(how) => write!(f, "detected: {how}"),
        }
    }
}

/// A value and its source.
#[derive(Debug, Clone, PartialEq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

impl<T> Sourced<T> {
    fn new(value: T, source: Source) -> Self {
        Self { value, source }
    }
}

/// Configuration errors: each is a usage error (exit code 2) with a message saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("no model provider configured. {}", spec::setup_help())]
    NoProvider,
    #[error("unknown provider `{0}` (expected one of: {names})", names = spec::names())]
    UnknownProvider(String),
    #[error("no API key for {provider}: set {var} (or `api_key` in config.toml)")]
    MissingKey { provider: &'static str, var: &'static str },
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("invalid config in {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid value for {name}: {message}")]
    Invalid { name: String, message: String },
}

/// One config file's contents. Every field is optional: a layer only overrides what it sets.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileLayer {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub max_turns: Option<u32>,
    pub max_tokens: Option<u32>,
    pub stream: Option<bool>,
    pub max_attempts: Option<u32>,
    pub retry_base_ms: Option<u64>,
    pub connect_timeout_secs: Option<u64>,
    pub idle_timeout_secs: Option<u64>,
    pub system_prompt: Option<String>,
    pub script: Option<PathBuf>,
    /// Allowlist of tool names offered by default.
    pub allow_tools: Option<Vec<String>>,
    /// Tools never offered.
    pub deny_tools: Option<Vec<String>>,
    pub max_tools: Option<usize>,
    /// Files larger than this are left out of turn checkpoints.
    pub checkpoint_max_file_bytes: Option<u64>,
    /// Command tools (`[[tools]]`).
    #[serde(default)]
    pub tools: Vec<crate::tool::command::CommandToolSpec>,
}

/// What the command line sets.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub max_turns: Option<u32>,
    pub script: Option<PathBuf>,
    pub no_stream: bool,
    pub tools: Option<Vec<String>>,
    pub no_tools: bool,
}

/// The effective settings.
#[derive(Debug, Clone)]
pub struct Settings {
    pub provider: Sourced<ProviderKind>,
    pub model: Sourced<String>,
    pub base_url: Sourced<String>,
    pub api_key: Option<Sourced<String>>,
    pub max_turns: Sourced<u32>,
    pub max_tokens: Sourced<u32>,
    pub stream: Sourced<bool>,
    pub max_attempts: Sourced<u32>,
    pub retry_base_ms: Sourced<u64>,
    pub connect_timeout_secs: Sourced<u64>,
    pub idle_timeout_secs: Sourced<u64>,
    pub system_prompt: Option<Sourced<String>>,
    pub script: Option<Sourced<PathBuf>>,
    pub allow_tools: Option<Sourced<Vec<String>>>,
    pub deny_tools: Sourced<Vec<String>>,
    pub max_tools: Sourced<usize>,
    pub checkpoint_max_file_bytes: Sourced<u64>,
    /// Command tools from config; a project tool replaces a user tool of the same name.
    pub command_tools: Vec<crate::tool::command::CommandToolSpec>,
    /// The config files that were read, lowest layer first.
    pub files: Vec<PathBuf>,
}

impl Settings {
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.connect_timeout_secs.value)
    }
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs.value)
    }
    /// The env var or config key the person sets for this provider's key.
    pub fn key_hint(&self) -> String {
        match self.provider.value.spec().key_vars.first() {
            Some(var) => format!("{var} (or `api_key` in config.toml)"),
            None => "the server's API key (`api_key` in config.toml or BRUTE_API_KEY)".to_owned(),
        }
    }

    /// A human-readable listing of every setting and its source; the API key is masked.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let mut line = |name: &str, value: String, source: &Source| {
            out.push_str(&format!("{name:<16} = {value:<32} # {source}\n"));
        };
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
        line("max_turns", self.max_turns.value.to_string(), &self.max_turns.source);
        line("max_tokens", self.max_tokens.value.to_string(), &self.max_tokens.source);
        line("stream", self.stream.value.to_string(), &self.stream.source);
        line(
            "max_attempts",
            self.max_attempts.value.to_string(),
            &self.max_attempts.source,
        );
        line(
            "retry_base_ms",
            self.retry_base_ms.value.to_string(),
            &self.retry_base_ms.source,
        );
        line(
            "connect_timeout_secs",
            self.connect_timeout_secs.value.to_string(),
            &self.connect_timeout_secs.source,
        );
        line(
            "idle_timeout_secs",
            self.idle_timeout_secs.value.to_string(),
            &self.idle_timeout_secs.source,
        );
        if let Some(prompt) = &self.system_prompt {
            line(
                "system_prompt",
                format!("({} chars)", prompt.value.len()),
                &prompt.source,
            );
        }
        if let Some(script) = &self.script {
            line("script", script.value.display().to_string(), &script.source);
        }
        match &self.allow_tools {
            Some(tools) => line("allow_tools", format!("{:?}", tools.value), &tools.source),
            None => line("allow_tools", "(all)".to_owned(), &Source::Default),
        }
        line(
            "deny_tools",
            format!("{:?}", self.deny_tools.value),
            &self.deny_tools.source,
        );
        line("max_tools", self.max_tools.value.to_string(), &self.max_tools.source);
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

/// Reads the environment; a trait-free function pointer so tests can inject variables.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment, ignoring empty values.
pub fn process_env(name: &str) -> Option<String> {
    crate::secrets::var(name).filter(|v| !v.is_empty())
}

/// Loads one config file; a missing file is an empty layer.
pub fn read_layer(path: &Path) -> Result<Option<FileLayer>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                message: e.to_string(),
            });
        }
    };
    toml::from_str(&text).map(Some).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Values gathered from the layers before provider defaults are applied.
#[derive(Default)]
struct Gathered {
    provider: Option<Sourced<String>>,
    model: Option<Sourced<String>>,
    base_url: Option<Sourced<String>>,
    api_key: Option<Sourced<String>>,
    max_turns: Option<Sourced<u32>>,
    max_tokens: Option<Sourced<u32>>,
    stream: Option<Sourced<bool>>,
    max_attempts: Option<Sourced<u32>>,
    retry_base_ms: Option<Sourced<u64>>,
    connect_timeout_secs: Option<Sourced<u64>>,
    idle_timeout_secs: Option<Sourced<u64>>,
    system_prompt: Option<Sourced<String>>,
    script: Option<Sourced<PathBuf>>,
    allow_tools: Option<Sourced<Vec<String>>>,
    deny_tools: Option<Sourced<Vec<String>>>,
    max_tools: Option<Sourced<usize>>,
    checkpoint_max_file_bytes: Option<Sourced<u64>>,
    command_tools: Vec<crate::tool::command::CommandToolSpec>,
}

fn set<T>(slot: &mut Option<Sourced<T>>, value: Option<T>, source: &Source) {
    if let Some(value) = value {
        *slot = Some(Sourced::new(value, source.clone()));
    }
}

impl Gathered {
    fn apply_file(&mut self, layer: FileLayer, path: &Path) -> Result<(), ConfigError> {
        let s = Source::File(path.to_path_buf());
        set(&mut self.provider, layer.provider, &s);
        set(&mut self.model, layer.model, &s);
        set(&mut self.base_url, layer.base_url, &s);
        set(&mut self.api_key, layer.api_key, &s);
        set(&mut self.max_turns, layer.max_turns, &s);
        set(&mut self.max_tokens, layer.max_tokens, &s);
        set(&mut self.stream, layer.stream, &s);
        set(&mut self.max_attempts, layer.max_attempts, &s);
        set(&mut self.retry_base_ms, layer.retry_base_ms, &s);
        set(&mut self.connect_timeout_secs, layer.connect_timeout_secs, &s);
        set(&mut self.idle_timeout_secs, layer.idle_timeout_secs, &s);
        set(&mut self.system_prompt, layer.system_prompt, &s);
        // A script path in a file is relative to that file's directory.
        let script = layer
            .script
            .map(|p| path.parent().map_or(p.clone(), |dir| dir.join(&p)));
        set(&mut self.script, script, &s);
        set(&mut self.allow_tools, layer.allow_tools, &s);
        set(&mut self.deny_tools, layer.deny_tools, &s);
        set(&mut self.max_tools, layer.max_tools, &s);
        set(&mut self.checkpoint_max_file_bytes, layer.checkpoint_max_file_bytes, &s);
        for tool in layer.tools {
            // A config tool named like a built-in would silently replace it (a cloned
            // repository's `read` that runs anything): refuse at load, naming both.
            if crate::tool::BUILTIN_NAMES.contains(&tool.name.as_str()) {
                return Err(ConfigError::Invalid {
                    name: format!("[[tools]] `{}` in {}", tool.name, path.display()),
                    message: format!(
                        "it has the name of the built-in tool `{}`, which config tools cannot replace; choose another name",
                        tool.name
                    ),
                });
            }
            self.command_tools.retain(|t| t.name != tool.name);
            self.command_tools.push(tool);
        }
        Ok(())
    }

    fn apply_env(&mut self, env: EnvLookup<'_>) -> Result<(), ConfigError> {
        let from = |var: &str| env(var).map(|v| (v, Source::Env(var.to_owned())));
        if let Some((v, s)) = from("BRUTE_PROVIDER") {
            self.provider = Some(Sourced::new(v, s));
        }
        if let Some((v, s)) = from("BRUTE_MODEL") {
            self.model = Some(Sourced::new(v, s));
        }
        if let Some((v, s)) = from("BRUTE_BASE_URL") {
            self.base_url = Some(Sourced::new(v, s));
        }
        if let Some((v, s)) = from("BRUTE_API_KEY") {
            self.api_key = Some(Sourced::new(v, s));
        }
        if let Some((v, s)) = from("BRUTE_MAX_TURNS") {
            let n = v.parse().map_err(|_| ConfigError::Invalid {
                name: "BRUTE_MAX_TURNS".into(),
                message: format!("`{v}` is not a positive whole number"),
            })?;
            self.max_turns = Some(Sourced::new(n, s));
        }
        Ok(())
    }

    fn apply_flags(&mut self, flags: &Flags) {
        let flag = |name: &str| Source::Flag(name.to_owned());
        set(&mut self.provider, flags.provider.clone(), &flag("--provider"));
        set(&mut self.model, flags.model.clone(), &flag("--model"));
        set(&mut self.base_url, flags.base_url.clone(), &flag("--base-url"));
        set(&mut self.max_turns, flags.max_turns, &flag("--max-turns"));
        set(&mut self.script, flags.script.clone(), &flag("--script"));
        if flags.no_stream {
            self.stream = Some(Sourced::new(false, flag("--no-stream")));
        }
        if flags.no_tools {
            self.allow_tools = Some(Sourced::new(Vec::new(), flag("--no-tools")));
        } else {
            set(&mut self.allow_tools, flags.tools.clone(), &flag("--tools"));
        }
    }
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
    let mut g = Gathered::default();
    let mut files = Vec::new();
    let project = root.join(".brute").join("config.toml");
    for path in user_config.into_iter().chain(std::iter::once(project.as_path())) {
        if let Some(layer) = read_layer(path)? {
            g.apply_file(layer, path)?;
            files.push(path.to_path_buf());
        }
    }
    g.apply_env(env)?;
    g.apply_flags(flags);

    let provider = match g.provider.take() {
        Some(name) => Sourced::new(parse_provider(&name.value)?, name.source),
        None => detect(env)?,
    };
    let spec = provider.value.spec();
    let api_key = g.api_key.take().or_else(|| {
        spec.key_vars
            .iter()
            .find_map(|var| env(var).map(|key| Sourced::new(key, Source::Env((*var).to_owned()))))
    });
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
    let max_tools = g
        .max_tools
        .take()
        .unwrap_or(Sourced::new(crate::tool::registry::DEFAULT_MAX_TOOLS, Source::Default));
    if max_tools.value == 0 {
        return Err(ConfigError::Invalid {
            name: "max_tools".into(),
            message: "must be a positive number".into(),
        });
    }
    let max_turns = g
        .max_turns
        .take()
        .unwrap_or(Sourced::new(crate::agent::DEFAULT_MAX_TURNS, Source::Default));
    if max_turns.value == 0 {
        return Err(ConfigError::Invalid {
            name: "max_turns".into(),
            message: "must be at least 1".into(),
        });
    }
    let d = |v| Sourced::new(v, Source::Default);
    Ok(Settings {
        provider,
        model,
        base_url,
        api_key,
        max_turns,
        max_tokens: g.max_tokens.unwrap_or(d(16_384)),
        stream: g.stream.unwrap_or(Sourced::new(true, Source::Default)),
        max_attempts: g.max_attempts.unwrap_or(Sourced::new(4, Source::Default)),
        retry_base_ms: g.retry_base_ms.unwrap_or(Sourced::new(500, Source::Default)),
        connect_timeout_secs: g.connect_timeout_secs.unwrap_or(Sourced::new(10, Source::Default)),
        idle_timeout_secs: g.idle_timeout_secs.unwrap_or(Sourced::new(120, Source::Default)),
        system_prompt: g.system_prompt,
        script: g.script,
        allow_tools: g.allow_tools,
        deny_tools: g.deny_tools.unwrap_or(Sourced::new(Vec::new(), Source::Default)),
        max_tools,
        checkpoint_max_file_bytes: g.checkpoint_max_file_bytes.unwrap_or(Sourced::new(
            crate::session::checkpoint::DEFAULT_MAX_FILE_BYTES,
            Source::Default,
        )),
        command_tools: std::mem::take(&mut g.command_tools),
        files,
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn layers_merge_in_order_with_sources() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.toml");
        std::fs::write(
            &user,
            "provider = \"openai\"\nmodel = \"user-model\"\nmax_turns = 7\napi_key = \"k\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join(".brute")).unwrap();
        std::fs::write(dir.path().join(".brute/config.toml"), "model = \"project-model\"\n").unwrap();
        let env = env_of(&[("BRUTE_MAX_TURNS", "9")]);
        let flags = Flags {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            ..Flags::default()
        };
        let s = load(dir.path(), &flags, &env, Some(&user)).unwrap();
        assert_eq!(s.provider.value, ProviderKind::OpenAi);
        assert_eq!(s.model.value, "project-model");
        assert_eq!(s.model.source, Source::File(dir.path().join(".brute/config.toml")));
        assert_eq!(s.max_turns.value, 9);
        assert_eq!(s.max_turns.source, Source::Env("BRUTE_MAX_TURNS".into()));
        assert_eq!(s.base_url.source, Source::Flag("--base-url".into()));
        let described = s.describe();
        assert!(described.contains("(set, 1 chars, hidden)"));
        let flags = Flags {
            model: Some("flag-model".into()),
            ..Flags::default()
        };
        assert_eq!(
            load(dir.path(), &flags, &env, Some(&user)).unwrap().model.value,
            "flag-model"
        );
    }

    #[test]
    fn detects_providers_from_environment() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_of(&[
            ("ANTHROPIC_API_KEY", "secret"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:1"),
        ]);
        let s = load(dir.path(), &Flags::default(), &env, None).unwrap();
        assert_eq!(s.provider.value, ProviderKind::Anthropic);
        assert_eq!(s.base_url.value, "http://127.0.0.1:1");
        assert!(!s.describe().contains("secret"));
        let env = env_of(&[("OLLAMA_HOST", "127.0.0.1:5")]);
        let s = load(dir.path(), &Flags::default(), &env, None).unwrap();
        assert_eq!(s.provider.value, ProviderKind::Ollama);
        assert_eq!(s.base_url.value, "http://127.0.0.1:5/v1");
        let env = env_of(&[("BRUTE_NO_OLLAMA_PROBE", "1")]);
        assert!(matches!(
            load(dir.path(), &Flags::default(), &env, None),
            Err(ConfigError::NoProvider)
        ));
    }

    #[test]
    fn missing_key_and_bad_values_are_usage_errors() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_of(&[]);
        let flags = Flags {
            provider: Some("anthropic".into()),
            ..Flags::default()
        };
        assert!(matches!(
            load(dir.path(), &flags, &env, None),
            Err(ConfigError::MissingKey { .. })
        ));
        let flags = Flags {
            provider: Some("nope".into()),
            ..Flags::default()
        };
        assert!(matches!(
            load(dir.path(), &flags, &env, None),
            Err(ConfigError::UnknownProvider(_))
        ));
        std::fs::create_dir_all(dir.path().join(".brute")).unwrap();
        std::fs::write(dir.path().join(".brute/config.toml"), "bogus = 1\n").unwrap();
        assert!(matches!(
            load(dir.path(), &flags, &env, None),
            Err(ConfigError::Parse { .. })
        ));
    }
}
