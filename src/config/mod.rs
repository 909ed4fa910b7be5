//! Configuration: built-in defaults < user `config.toml` < project `.brute/config.toml` <
//! environment < flags, then provider auto-detection. Every value remembers where it came
//! from so `brute config` can say so. API keys are never printed.
//!
//! Every key is declared once, in the `settings!` list below. A plain setting (`name: Type =
//! default`) needs nothing else: its file key, its merge, its [`Settings`] field and its
//! `brute config` line all come from that line. Special settings (the provider and what
//! depends on it, the API key, the script path, `[[tools]]`, the tool allowlist) are layered
//! the same way but resolved by hand in `resolve`.

pub mod project;
pub mod trust;
#[macro_use]
mod setting;

pub use setting::Value;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::paths;
pub use crate::provider::spec::ProviderKind;
use crate::provider::spec::{self, ProviderSpec};
use crate::tool::command::CommandToolSpec;

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
    #[error("{}: not valid UTF-8 at byte {offset}", path.display())]
    NotUtf8 { path: PathBuf, offset: usize },
    #[error("invalid value for {name}: {message}")]
    Invalid { name: String, message: String },
}

/// The default cap on model requests per user turn.
pub const DEFAULT_MAX_TURNS: u32 = 100;

settings! {
    file_only {
        /// Command tools (`[[tools]]`); a project tool replaces a user tool of the same name.
        tools: Vec<CommandToolSpec>,
        /// Permission rules (`[permissions] allow/deny/ask`); every layer's rules apply.
        permissions: crate::permission::PermissionsConfig,
        /// Per-model facts (`[models."NAME"]`: context window, prices).
        models: std::collections::BTreeMap<String, ModelConfig>,
        /// Hooks (`[[hooks.<event>]]`); every layer's hooks run, the user's first.
        hooks: crate::hooks::HooksConfig,
        /// MCP servers (`[mcp_servers.NAME]`); a project's only in a trusted project.
        mcp_servers: std::collections::BTreeMap<String, crate::mcp::config::ServerSpec>,
    }
    layered {
        provider: String, env = "BRUTE_PROVIDER";
        model: String, env = "BRUTE_MODEL";
        base_url: String, env = "BRUTE_BASE_URL";
        api_key: String, env = spec::ANY_KEY_VAR;
        /// Script for the replay provider; in a file, relative to that file's directory.
        script: PathBuf;
        /// Allowlist of tool names offered by default.
        allow_tools: Vec<String>;
    }
    resolved {
        provider: Sourced<ProviderKind>,
        model: Sourced<String>,
        base_url: Sourced<String>,
        /// `None` where the provider needs no key (or a custom base URL may do without).
        api_key: Option<Sourced<String>>,
        script: Option<Sourced<PathBuf>>,
        /// `None` offers every tool.
        allow_tools: Option<Sourced<Vec<String>>>,
        /// Command tools from config; a project tool replaces a user tool of the same name.
        command_tools: Vec<Sourced<CommandToolSpec>>,
        /// The config files that were read, lowest layer first.
        files: Vec<PathBuf>,
        /// Project settings left out because the project is not trusted (see [`trust`]).
        untrusted_ignored: Vec<String>,
        /// The project was trusted, but its `.brute/config.toml` changed since.
        config_changed: bool,
        /// `--yolo`: full access and no approval prompts.
        yolo: bool,
        /// `--permission-mode plan`: start in plan mode (leaving it goes back to `sandbox`).
        plan: bool,
        /// `--add-dir`: more roots commands and tools may write.
        add_dirs: Vec<PathBuf>,
        /// `-i`: images attached to the first prompt (absolute).
        images: Vec<PathBuf>,
        /// Permission rules from every config file, each with its file.
        rules: crate::permission::Rules,
        /// `[models."NAME"]` tables, later layers overriding earlier ones per model.
        models: std::collections::BTreeMap<String, Sourced<ModelConfig>>,
        /// Hooks from every config file in order (user config first), each with its file.
        hooks: Vec<Sourced<crate::hooks::Hook>>,
        /// MCP servers: the user's, then a trusted project's (config, then `.mcp.json`).
        mcp_servers: Vec<crate::mcp::config::Server>,
        /// What was left out of the MCP server lists, and why (for the person).
        mcp_notices: Vec<String>,
    }
    plain {
        /// Model requests per user turn.
        max_turns: u32 = DEFAULT_MAX_TURNS, env = "BRUTE_MAX_TURNS", check = at_least_one;
        max_tokens: u32 = 16_384;
        /// Stream responses (off for servers that cannot stream tool calls).
        stream: bool = true;
        /// Retries of 429/5xx/overloaded/connection failures, the first attempt included.
        max_attempts: u32 = 4;
        retry_base_ms: u64 = 500;
        connect_timeout_secs: u64 = 10;
        /// Silence allowed inside a stream.
        idle_timeout_secs: u64 = 120;
        /// Replaces `assets/system_prompt.md`.
        system_prompt: Option<String> = None, show = show_prompt;
        /// Tools never offered.
        deny_tools: Vec<String> = Vec::new();
        /// Cap on advertised tools.
        max_tools: usize = crate::tool::registry::DEFAULT_MAX_TOOLS, check = at_least_one;
        /// Files larger than this are left out of turn checkpoints.
        checkpoint_max_file_bytes: u64 = crate::session::checkpoint::DEFAULT_MAX_FILE_BYTES;
        /// Trees with more files and directories than this get no turn checkpoints (the
        /// built-in tools' writes stay undoable call by call).
        checkpoint_max_entries: usize = crate::session::checkpoint::DEFAULT_MAX_ENTRIES;
        /// What commands may do: `read-only`, `workspace-write` or `full-access`.
        sandbox: String = crate::sandbox::Mode::default().as_str().to_owned(), check = sandbox_mode;
        /// More trees commands may write in `workspace-write` (e.g. a build cache).
        writable_roots: Vec<String> = Vec::new();
        /// The ceiling on what skill scripts may be granted (`[skill_sandbox]`: `fs_read`,
        /// `fs_write`, `network`, `timeout`); see [`crate::tool::skill_script`].
        skill_sandbox: crate::tool::skill_script::Ceiling = crate::tool::skill_script::Ceiling::default();
        /// The model's context window in tokens (default: brute's table of common models).
        context_window: Option<u64> = None;
        /// Compact before a request would pass this share of the context window.
        compact_at: f64 = 0.8, check = share;
        /// Compaction brings the conversation down to this share of the window.
        compact_to: f64 = 0.5, check = share;
        /// How hard reasoning models think: `low`, `medium` or `high`; unset leaves the
        /// model's default (Claude's thinking off).
        reasoning_effort: Option<String> = None, check = effort_level;
        /// Recover tool calls a model wrote as text (`{"name": ..., "arguments": ...}`, a
        /// fenced `json` block, `<tool_call>` tags) as real calls; unset: on for
        /// OpenAI-compatible servers other than api.openai.com, off elsewhere.
        text_tool_calls: Option<bool> = None, show = show_auto;
        /// Web search. Unset: the provider's hosted search where brute talks to the provider
        /// itself (Anthropic Messages at api.anthropic.com, OpenAI Responses at
        /// api.openai.com), none elsewhere; `true` offers the hosted search on those wire
        /// formats at any base URL (a proxy that forwards it); `false` turns every web search
        /// off, `web_search_url` included.
        web_search: Option<bool> = None, show = show_auto;
        /// A search endpoint of the person's own (a SearXNG instance's
        /// `http://127.0.0.1:8888/search`): brute offers a `web_search` tool that asks it
        /// (`?q=...&format=json`) instead of any hosted search. No key ever goes to it.
        web_search_url: Option<String> = None, check = search_url;
        /// How the UI calls the person when a turn ends while the terminal is not focused,
        /// or an approval waits: `bel`, `osc9` (a desktop notification) or `off`.
        notify: String = "bel".to_owned(), check = notify_channel;
        /// Links in answers as OSC 8 hyperlinks: `auto` (where the terminal is known to
        /// support them), `on` or `off`.
        hyperlinks: String = "auto".to_owned(), check = hyperlinks_setting;
    }
}

/// An optional switch whose absence means "brute decides".
fn show_auto(value: &Option<bool>) -> String {
    value.map_or_else(|| "auto".to_owned(), |on| on.to_string())
}

/// A search endpoint: an absolute http or https URL.
fn search_url(value: &Option<String>) -> Result<(), &'static str> {
    match value.as_deref().map(reqwest::Url::parse) {
        None => Ok(()),
        Some(Ok(url)) if matches!(url.scheme(), "http" | "https") && url.has_host() => Ok(()),
        Some(_) => Err("must be an http:// or https:// URL, e.g. http://127.0.0.1:8888/search"),
    }
}

/// A share of the context window, above 0 and at most 1.
fn share(value: &f64) -> Result<(), &'static str> {
    if *value > 0.0 && *value <= 1.0 {
        Ok(())
    } else {
        Err("must be a share of the context window, above 0 and at most 1 (e.g. 0.8)")
    }
}

/// What `[models."NAME"]` may say about a model.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Its context window in tokens.
    pub context_window: Option<u64>,
    /// It takes images (default: brute's table of common models; unknown models get a
    /// text note in place of each image).
    pub vision: Option<bool>,
    /// Prices in USD per million tokens: input, output, and cached input read / written.
    pub input_price: Option<f64>,
    pub output_price: Option<f64>,
    pub cache_read_price: Option<f64>,
    pub cache_write_price: Option<f64>,
}

impl ModelConfig {
    /// The price, when both input and output prices are given.
    pub fn price(&self) -> Option<crate::provider::pricing::Price> {
        Some(crate::provider::pricing::Price {
            input: self.input_price?,
            output: self.output_price?,
            cache_read: self.cache_read_price,
            cache_write: self.cache_write_price,
        })
    }
}

/// A sandbox mode name.
#[allow(clippy::ptr_arg)] // the settings! check signature is fn(&T)
fn sandbox_mode(name: &String) -> Result<(), &'static str> {
    match crate::sandbox::Mode::parse(name) {
        Some(_) => Ok(()),
        None => Err("must be read-only, workspace-write or full-access"),
    }
}

/// The values of the `notify` setting (the UI maps them to bytes for the terminal).
pub const NOTIFY_CHANNELS: &[&str] = &["bel", "osc9", "off"];

#[allow(clippy::ptr_arg)] // the settings! check signature is fn(&T)
fn notify_channel(name: &String) -> Result<(), &'static str> {
    if NOTIFY_CHANNELS.contains(&name.as_str()) {
        Ok(())
    } else {
        Err("must be bel, osc9 or off")
    }
}

/// The values of the `hyperlinks` setting (the UI decides what `auto` means).
pub const HYPERLINK_SETTINGS: &[&str] = &["auto", "on", "off"];

#[allow(clippy::ptr_arg)] // the settings! check signature is fn(&T)
fn hyperlinks_setting(name: &String) -> Result<(), &'static str> {
    if HYPERLINK_SETTINGS.contains(&name.as_str()) {
        Ok(())
    } else {
        Err("must be auto, on or off")
    }
}

/// A reasoning effort level, when one is set.
fn effort_level(level: &Option<String>) -> Result<(), &'static str> {
    match level {
        Some(name) if crate::provider::Effort::parse(name).is_none() => Err("must be low, medium or high"),
        _ => Ok(()),
    }
}

/// A count that must be at least 1.
fn at_least_one<T: PartialOrd + From<u8>>(n: &T) -> Result<(), &'static str> {
    if *n < T::from(1) {
        Err("must be at least 1")
    } else {
        Ok(())
    }
}

fn show_prompt(prompt: &Option<String>) -> String {
    prompt
        .as_ref()
        .map_or_else(|| "(built-in)".to_owned(), |p| format!("({} chars)", p.len()))
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
    pub sandbox: Option<String>,
    pub yolo: bool,
    /// Start in plan mode (`--permission-mode plan`).
    pub plan: bool,
    pub add_dirs: Vec<PathBuf>,
    /// `--effort`.
    pub effort: Option<String>,
    /// `-i`.
    pub images: Vec<PathBuf>,
}

impl Settings {
    /// The reasoning effort (checked at load).
    pub fn reasoning_effort(&self) -> Option<crate::provider::Effort> {
        self.reasoning_effort
            .value
            .as_deref()
            .and_then(crate::provider::Effort::parse)
    }

    /// The sandbox mode (checked at load).
    pub fn sandbox_mode(&self) -> crate::sandbox::Mode {
        crate::sandbox::Mode::parse(&self.sandbox.value).unwrap_or_default()
    }

    /// The mode the session starts in: plan mode, or the sandbox mode.
    pub fn permission_mode(&self) -> crate::permission::Mode {
        match self.plan {
            true => crate::permission::Mode::Plan,
            false => self.sandbox_mode().into(),
        }
    }

    /// Roots commands and tools may write besides the project: `--add-dir`s and
    /// `writable_roots`.
    pub fn extra_roots(&self) -> Vec<PathBuf> {
        self.add_dirs
            .iter()
            .cloned()
            .chain(self.writable_roots.value.iter().map(|root| expand_home(root)))
            .collect()
    }

    /// The one line `brute -p` prints when an untrusted project's risky settings were left
    /// out; `None` when nothing was.
    pub fn untrusted_notice(&self, root: &Path) -> Option<String> {
        (!self.untrusted_ignored.is_empty()).then(|| {
            let why = if self.config_changed {
                "it changed since you trusted the project"
            } else {
                "the project is not trusted"
            };
            format!(
                "ignored project settings {} in {}: {why} (brute trust trusts it as it is now)",
                self.untrusted_ignored.join(", "),
                root.join(".brute").join("config.toml").display()
            )
        })
    }

    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.connect_timeout_secs.value)
    }
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs.value)
    }
    /// Whether requests offer the provider's hosted web search (see the `web_search`
    /// setting): never beside a `web_search_url` of the person's, and unset only where brute
    /// talks to Anthropic's or OpenAI's own API on a wire format that hosts one.
    pub fn hosted_web_search(&self) -> bool {
        if self.web_search_endpoint().is_some() {
            return false;
        }
        let spec = self.provider.value.spec();
        let Some(endpoint) = spec.endpoint_for(&self.base_url.value) else {
            return false;
        };
        let hosted_wire = matches!(endpoint.wire, spec::WireFormat::Anthropic | spec::WireFormat::Responses);
        let own_api = reqwest::Url::parse(&self.base_url.value).is_ok_and(|url| {
            url.scheme() == "https" && matches!(url.host_str(), Some("api.anthropic.com" | "api.openai.com"))
        });
        hosted_wire && self.web_search.value.unwrap_or(own_api)
    }

    /// The person's search endpoint for the `web_search` tool, unless `web_search = false`.
    pub fn web_search_endpoint(&self) -> Option<&str> {
        match self.web_search.value {
            Some(false) => None,
            _ => self.web_search_url.value.as_deref(),
        }
    }

    /// The env var or config key the person sets for this provider's key.
    pub fn key_hint(&self) -> String {
        match self.provider.value.spec().key_vars.first() {
            Some(var) => format!("{var} (or `api_key` in config.toml)"),
            None => format!(
                "the server's API key (`api_key` in config.toml or {})",
                spec::ANY_KEY_VAR
            ),
        }
    }

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
                &Source::File(std::path::PathBuf::from(server.origin.to_string())),
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

/// Reads the environment; a trait-free function pointer so tests can inject variables.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment, ignoring empty values.
pub fn process_env(name: &str) -> Option<String> {
    crate::secrets::var(name).filter(|v| !v.is_empty())
}

/// Loads one config file; a missing file is an empty layer.
pub fn read_layer(path: &Path) -> Result<Option<FileLayer>, ConfigError> {
    // A repository's config could be a FIFO or a link to /dev/zero: read it bounded.
    // Refused, not decoded lossily: a replaced byte could change what a key or value says.
    let text = match crate::files::read_bounded(path, 1024 * 1024) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|e| ConfigError::NotUtf8 {
            path: path.to_path_buf(),
            offset: e.utf8_error().valid_up_to(),
        })?,
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

fn set<T>(slot: &mut Option<Sourced<T>>, value: Option<T>, source: &Source) {
    if let Some(value) = value {
        *slot = Some(Sourced::new(value, source.clone()));
    }
}

fn set_from_env<T: Value>(slot: &mut Option<Sourced<T>>, var: &str, env: EnvLookup<'_>) -> Result<(), ConfigError> {
    if let Some(text) = env(var) {
        let value = T::parse_env(&text).map_err(|message| ConfigError::Invalid {
            name: var.to_owned(),
            message: format!("`{text}` {message}"),
        })?;
        *slot = Some(Sourced::new(value, Source::Env(var.to_owned())));
    }
    Ok(())
}

fn check<T>(name: &str, value: &T, rule: impl Fn(&T) -> Result<(), &'static str>) -> Result<(), ConfigError> {
    rule(value).map_err(|message| ConfigError::Invalid {
        name: name.to_owned(),
        message: message.to_owned(),
    })
}

/// A config file brute looked for.
#[derive(Debug, Clone)]
struct Searched {
    /// `user config` or `project config`.
    layer: &'static str,
    path: PathBuf,
    found: bool,
}

/// Everything the layers set, before defaults and provider resolution.
#[derive(Debug, Clone, Default)]
struct Layers {
    gathered: Gathered,
    command_tools: Vec<Sourced<CommandToolSpec>>,
    /// Each config file looked for, lowest layer first.
    searched: Vec<Searched>,
    /// Risky project settings dropped because the project is not trusted.
    untrusted_ignored: Vec<String>,
    /// The project was trusted, but its config changed since.
    config_changed: bool,
    yolo: bool,
    plan: bool,
    add_dirs: Vec<PathBuf>,
    images: Vec<PathBuf>,
    rules: crate::permission::Rules,
    models: std::collections::BTreeMap<String, Sourced<ModelConfig>>,
    hooks: Vec<Sourced<crate::hooks::Hook>>,
    mcp_servers: Vec<crate::mcp::config::Server>,
    mcp_notices: Vec<String>,
}

impl Layers {
    /// An untrusted project may only narrow the tool list: its `deny_tools` adds to the user's,
    /// its `allow_tools` keeps only tools the user's allows too.
    fn narrow_only(&self, layer: &mut FileLayer) {
        if let (Some(deny), Some(user)) = (layer.deny_tools.as_mut(), self.gathered.deny_tools.as_ref()) {
            for name in &user.value {
                if !deny.contains(name) {
                    deny.push(name.clone());
                }
            }
        }
        if let (Some(allow), Some(user)) = (layer.allow_tools.as_mut(), self.gathered.allow_tools.as_ref()) {
            allow.retain(|name| user.value.contains(name));
        }
    }
}

/// Takes the risky settings ([`trust::RISKY_KEYS`]) out of an untrusted project's layer and
/// names the ones it held.
fn strip_risky(layer: &mut FileLayer) -> Vec<String> {
    let mut ignored = Vec::new();
    macro_rules! take {
        ($($key:ident),*) => {$(
            if layer.$key.take().is_some() {
                ignored.push(stringify!($key).to_owned());
            }
        )*};
    }
    take!(
        provider,
        base_url,
        api_key,
        tools,
        sandbox,
        writable_roots,
        skill_sandbox,
        system_prompt,
        permissions,
        models,
        hooks,
        mcp_servers,
        checkpoint_max_entries,
        checkpoint_max_file_bytes,
        web_search_url
    );
    ignored
}

impl Layers {
    fn apply_file(&mut self, mut layer: FileLayer, path: &Path) -> Result<(), ConfigError> {
        let source = Source::File(path.to_path_buf());
        // A script path in a file is relative to that file's directory.
        if let (Some(script), Some(dir)) = (layer.script.as_mut(), path.parent()) {
            *script = dir.join(&*script);
        }
        for (name, model) in layer.models.take().unwrap_or_default() {
            self.models.insert(name, Sourced::new(model, source.clone()));
        }
        if let Some(permissions) = layer.permissions.take() {
            let rules = crate::permission::Rules::from_config(
                &permissions,
                crate::permission::Source::File(path.to_path_buf()),
            )
            .map_err(|e| ConfigError::Invalid {
                name: "[permissions]".to_owned(),
                message: e.to_string(),
            })?;
            self.rules.append(rules);
        }
        if let Some(hooks) = layer.hooks.take() {
            let hooks = hooks.compile().map_err(|message| ConfigError::Invalid {
                name: format!("[hooks] in {}", path.display()),
                message,
            })?;
            self.hooks
                .extend(hooks.into_iter().map(|hook| Sourced::new(hook, source.clone())));
        }
        if let Some(table) = layer.mcp_servers.take() {
            let servers = crate::mcp::config::from_table(table, path).map_err(|message| ConfigError::Invalid {
                name: format!("[mcp_servers] in {}", path.display()),
                message,
            })?;
            crate::mcp::config::merge(&mut self.mcp_servers, servers);
        }
        for tool in layer.tools.take().unwrap_or_default() {
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
            self.command_tools.retain(|t| t.value.name != tool.name);
            self.command_tools.push(Sourced::new(tool, source.clone()));
        }
        self.gathered.merge_file(layer, &source);
        Ok(())
    }

    fn apply_flags(&mut self, flags: &Flags) {
        let g = &mut self.gathered;
        let flag = |name: &str| Source::Flag(name.to_owned());
        set(&mut g.provider, flags.provider.clone(), &flag("--provider"));
        set(&mut g.model, flags.model.clone(), &flag("--model"));
        set(&mut g.base_url, flags.base_url.clone(), &flag("--base-url"));
        set(&mut g.max_turns, flags.max_turns, &flag("--max-turns"));
        set(&mut g.script, flags.script.clone(), &flag("--script"));
        if flags.no_stream {
            g.stream = Some(Sourced::new(false, flag("--no-stream")));
        }
        if flags.no_tools {
            g.allow_tools = Some(Sourced::new(Vec::new(), flag("--no-tools")));
        } else {
            set(&mut g.allow_tools, flags.tools.clone(), &flag("--tools"));
        }
        set(&mut g.sandbox, flags.sandbox.clone(), &flag("--sandbox"));
        set(
            &mut g.reasoning_effort,
            flags.effort.clone().map(Some),
            &flag("--effort"),
        );
        if flags.yolo {
            g.sandbox = Some(Sourced::new(
                crate::sandbox::Mode::FullAccess.as_str().to_owned(),
                flag("--yolo"),
            ));
        }
        self.yolo = flags.yolo;
        self.plan = flags.plan;
        self.add_dirs = flags.add_dirs.clone();
        self.images = flags.images.clone();
    }
}

/// Reads every layer for a project root: config files, then the environment, then flags.
fn gather(root: &Path, flags: &Flags, env: EnvLookup<'_>, user_config: Option<&Path>) -> Result<Layers, ConfigError> {
    let mut layers = Layers::default();
    let project = root.join(".brute").join("config.toml");
    let files = user_config
        .map(|path| ("user config", path))
        .into_iter()
        .chain([("project config", project.as_path())]);
    for (name, path) in files {
        let layer = read_layer(path)?;
        layers.searched.push(Searched {
            layer: name,
            path: path.to_path_buf(),
            found: layer.is_some(),
        });
        if let Some(mut layer) = layer {
            if name == "project config" {
                match trust::check(root) {
                    trust::Trust::Trusted => {}
                    trust::Trust::Untrusted => layers.untrusted_ignored = strip_risky(&mut layer),
                    trust::Trust::ConfigChanged => {
                        layers.untrusted_ignored = strip_risky(&mut layer);
                        layers.config_changed = true;
                    }
                }
                if !layers.untrusted_ignored.is_empty() || trust::check(root) != trust::Trust::Trusted {
                    layers.narrow_only(&mut layer);
                }
            }
            layers.apply_file(layer, path)?;
        }
    }
    // A project's `.mcp.json` starts programs as the person: only in a trusted project.
    let mcp_json = root.join(crate::mcp::config::MCP_JSON);
    // (No file, no further work at start-up.)
    if std::fs::symlink_metadata(&mcp_json).is_ok() {
        let why = match trust::check(root) {
            trust::Trust::Trusted => None,
            trust::Trust::Untrusted => Some("the project is not trusted"),
            trust::Trust::ConfigChanged => Some("the project's config changed since you trusted it"),
        };
        match why {
            None => {
                let (servers, notices) = crate::mcp::config::project_servers(root);
                crate::mcp::config::merge(&mut layers.mcp_servers, servers);
                layers.mcp_notices.extend(notices);
            }
            Some(why) => layers.mcp_notices.push(format!(
                "ignored the MCP servers in {}: {why} (brute trust trusts it as it is now)",
                mcp_json.display()
            )),
        }
    }
    layers.gathered.merge_env(env)?;
    layers.apply_flags(flags);
    Ok(layers)
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
fn resolve(layers: Layers, env: EnvLookup<'_>) -> Result<Settings, ConfigError> {
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
        rules,
        models,
        hooks,
        mcp_servers,
        mcp_notices,
    };
    Ok(Settings::assemble(resolved, plain))
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
    let mode = crate::sandbox::Mode::parse(&plain.sandbox.value).unwrap_or_default();
    let mut out = format!("sandbox: {} ({})\n", mode.as_str(), plain.sandbox.source);
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

/// `~/rest` as `$HOME/rest` (a `writable_roots` entry such as `~/.cargo/registry`); other paths
/// as they are.
fn expand_home(path: &str) -> PathBuf {
    match (
        path.strip_prefix("~/"),
        std::env::var_os("HOME").filter(|h| !h.is_empty()),
    ) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_writable_root_under_home_is_written_with_a_tilde() {
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        assert_eq!(super::expand_home("~/.cargo/registry"), home.join(".cargo/registry"));
        assert_eq!(super::expand_home("/srv/cache"), PathBuf::from("/srv/cache"));
        assert_eq!(super::expand_home("~user/x"), PathBuf::from("~user/x"));
    }

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

    /// `brute config`'s lines as (name, source) pairs.
    fn described(settings: &Settings) -> Vec<(String, String)> {
        let text = settings.describe();
        let lines = text.split("\n\n").next().unwrap_or_default();
        lines
            .lines()
            .map(|line| {
                let name = line.split(' ').next().unwrap_or_default().to_owned();
                let source = line.rsplit_once(" # ").map(|(_, s)| s.to_owned()).unwrap_or_default();
                (name, source)
            })
            .collect()
    }

    /// Adding a key to `settings!` is enough for `brute config` to show it with its file:
    /// a key without a sample here, or without a line there, fails this test.
    #[test]
    fn every_file_key_round_trips_through_describe() {
        let samples: &[(&str, &str)] = &[
            ("provider", "provider = \"openai\""),
            ("model", "model = \"m\""),
            ("base_url", "base_url = \"http://127.0.0.1:9/v1\""),
            ("api_key", "api_key = \"k\""),
            ("script", "script = \"demo.txt\""),
            ("allow_tools", "allow_tools = [\"read\"]"),
            ("max_turns", "max_turns = 3"),
            ("max_tokens", "max_tokens = 99"),
            ("stream", "stream = false"),
            ("max_attempts", "max_attempts = 2"),
            ("retry_base_ms", "retry_base_ms = 1"),
            ("connect_timeout_secs", "connect_timeout_secs = 1"),
            ("idle_timeout_secs", "idle_timeout_secs = 1"),
            ("system_prompt", "system_prompt = \"be brief\""),
            ("deny_tools", "deny_tools = [\"shell\"]"),
            ("max_tools", "max_tools = 5"),
            ("checkpoint_max_file_bytes", "checkpoint_max_file_bytes = 7"),
            ("checkpoint_max_entries", "checkpoint_max_entries = 9"),
            ("sandbox", "sandbox = \"read-only\""),
            ("writable_roots", "writable_roots = [\"/opt/cache\"]"),
            ("context_window", "context_window = 32000"),
            ("compact_at", "compact_at = 0.7"),
            ("web_search", "web_search = false"),
            ("web_search_url", "web_search_url = \"http://127.0.0.1:8888/search\""),
            ("compact_to", "compact_to = 0.4"),
            ("reasoning_effort", "reasoning_effort = \"high\""),
            ("text_tool_calls", "text_tool_calls = false"),
            ("notify", "notify = \"osc9\""),
            ("hyperlinks", "hyperlinks = \"on\""),
            // Tables come after the top-level keys.
            ("permissions", "[permissions]\nallow = [\"shell(cargo test*)\"]"),
            (
                "skill_sandbox",
                "[skill_sandbox]\nfs_read = [\".\"]\nfs_write = [\"out\"]\nnetwork = false\ntimeout = 30",
            ),
            (
                "models",
                "[models.\"m\"]\ncontext_window = 1000\ninput_price = 1.0\noutput_price = 2.0",
            ),
            (
                "tools",
                "[[tools]]\nname = \"lint\"\ndescription = \"Lint\"\ncommand = \"true\"",
            ),
            (
                "hooks",
                "[[hooks.pre_tool_use]]\nmatcher = \"shell\"\ncommand = \"check\"",
            ),
            (
                "mcp_servers",
                "[mcp_servers.srv]\ncommand = \"srv\"\nargs = [\"--stdio\"]",
            ),
        ];
        let mut keys: Vec<&str> = FileLayer::KEYS.to_vec();
        let mut sampled: Vec<&str> = samples.iter().map(|(key, _)| *key).collect();
        keys.sort_unstable();
        sampled.sort_unstable();
        assert_eq!(sampled, keys, "one sample per FileLayer key");

        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".brute")).unwrap();
        // The user's own config (a project's needs trust for the risky keys; see
        // `an_untrusted_project_keeps_only_harmless_keys`).
        let file = dir.path().join(".brute/config.toml");
        let text: Vec<&str> = samples.iter().map(|(_, line)| *line).collect();
        std::fs::write(&file, text.join("\n")).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let s = load(elsewhere.path(), &Flags::default(), &env_of(&[]), Some(&file)).unwrap();
        let lines = described(&s);
        let mut names: Vec<&str> = lines.iter().map(|(name, _)| name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names, keys, "describe() shows exactly the file keys");
        for (name, source) in &lines {
            assert_eq!(*source, file.display().to_string(), "{name}");
        }
        assert_eq!(s.script.unwrap().value, dir.path().join(".brute/demo.txt"));
        assert_eq!(s.command_tools[0].value.name, "lint");
    }

    #[test]
    fn hosted_web_search_is_on_only_at_the_providers_own_api_unless_asked() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.toml");
        let run = |provider: &str, base_url: Option<&str>, config: &str| {
            std::fs::write(&user, config).unwrap();
            let flags = Flags {
                provider: Some(provider.into()),
                base_url: base_url.map(str::to_owned),
                ..Flags::default()
            };
            let env = env_of(&[("OPENAI_API_KEY", "k"), ("ANTHROPIC_API_KEY", "k")]);
            let s = load(dir.path(), &flags, &env, Some(&user)).unwrap();
            (s.hosted_web_search(), s.web_search_endpoint().map(str::to_owned))
        };
        assert_eq!(run("anthropic", None, ""), (true, None));
        assert_eq!(run("responses", None, ""), (true, None));
        assert_eq!(
            run("openai", None, ""),
            (true, None),
            "brute speaks Responses to api.openai.com"
        );
        assert_eq!(
            run("ollama", None, "web_search = true\n"),
            (false, None),
            "Chat Completions hosts none"
        );
        assert_eq!(run("anthropic", Some("http://127.0.0.1:9"), ""), (false, None));
        assert_eq!(
            run("anthropic", Some("http://127.0.0.1:9"), "web_search = true\n"),
            (true, None)
        );
        assert_eq!(run("anthropic", None, "web_search = false\n"), (false, None));
        let searx = "web_search_url = \"http://127.0.0.1:8888/search\"\n";
        assert_eq!(
            run("anthropic", None, searx),
            (false, Some("http://127.0.0.1:8888/search".to_owned())),
            "the person's endpoint replaces the hosted search"
        );
        assert_eq!(
            run("openai", None, &format!("{searx}web_search = false\n")),
            (false, None)
        );
        std::fs::write(&user, "web_search_url = \"ftp://x\"\n").unwrap();
        assert!(
            load(
                dir.path(),
                &Flags::default(),
                &env_of(&[("OPENAI_API_KEY", "k")]),
                Some(&user)
            )
            .is_err()
        );
    }

    #[test]
    fn an_untrusted_project_keeps_only_harmless_keys() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".brute")).unwrap();
        std::fs::write(
            dir.path().join(".brute/config.toml"),
            "base_url = \"http://127.0.0.1:9/v1\"\nsandbox = \"full-access\"\nmodel = \"m2\"\nmax_turns = 7\ncheckpoint_max_entries = 0\ncheckpoint_max_file_bytes = 99999999999\nweb_search_url = \"http://127.0.0.1:9/search\"\n[[tools]]\nname = \"x\"\ndescription = \"d\"\ncommand = \"true\"\n[models.\"m2\"]\ninput_price = 0.0\noutput_price = 0.0\n[mcp_servers.x]\ncommand = \"touch\"\n",
        )
        .unwrap();
        let env = env_of(&[("OPENAI_API_KEY", "k")]);
        let s = load(dir.path(), &Flags::default(), &env, None).unwrap();
        assert_eq!(
            s.untrusted_ignored,
            [
                "base_url",
                "tools",
                "sandbox",
                "models",
                "mcp_servers",
                "checkpoint_max_entries",
                "checkpoint_max_file_bytes",
                "web_search_url"
            ]
        );
        assert_eq!(
            (s.checkpoint_max_entries.value, s.checkpoint_max_file_bytes.value),
            (
                crate::session::checkpoint::DEFAULT_MAX_ENTRIES,
                crate::session::checkpoint::DEFAULT_MAX_FILE_BYTES
            ),
            "a cloned repo neither turns off nor blows up the undo of its turns"
        );
        assert!(s.mcp_servers.is_empty(), "a cloned repo starts no MCP server");
        assert!(s.models.is_empty(), "a cloned repo sets no prices");
        assert_eq!(
            s.base_url.value, "https://api.openai.com/v1",
            "the key never goes to the project's URL"
        );
        assert_eq!(s.sandbox_mode(), crate::sandbox::Mode::WorkspaceWrite);
        assert!(s.command_tools.is_empty());
        assert_eq!(
            (s.model.value.as_str(), s.max_turns.value),
            ("m2", 7),
            "harmless keys apply"
        );
        assert!(
            s.untrusted_notice(dir.path())
                .is_some_and(|n| n.contains("base_url, tools, sandbox"))
        );

        // It may narrow the tool list, never widen the user's.
        let user = dir.path().join("user.toml");
        std::fs::write(&user, "deny_tools = [\"shell\"]\nallow_tools = [\"read\", \"shell\"]\n").unwrap();
        std::fs::write(
            dir.path().join(".brute/config.toml"),
            "deny_tools = []\nallow_tools = [\"read\", \"write\"]\n",
        )
        .unwrap();
        let s = load(dir.path(), &Flags::default(), &env, Some(&user)).unwrap();
        assert_eq!(s.deny_tools.value, ["shell"], "the user's denial stands");
        assert_eq!(s.allow_tools.unwrap().value, ["read"], "only tools both allow");
    }

    /// Hooks from the user's config and a trusted project run, the user's first; an untrusted
    /// project's hooks are left out and named.
    #[test]
    fn project_hooks_need_trust() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".brute")).unwrap();
        std::fs::write(
            dir.path().join(".brute/config.toml"),
            "[[hooks.pre_tool_use]]\ncommand = \"project-hook\"\n",
        )
        .unwrap();
        let user = dir.path().join("user.toml");
        std::fs::write(&user, "[[hooks.stop]]\ncommand = \"user-hook\"\ntimeout = 3\n").unwrap();
        let env = env_of(&[("OPENAI_API_KEY", "k")]);
        let s = load(dir.path(), &Flags::default(), &env, Some(&user)).unwrap();
        let commands: Vec<&str> = s.hooks.iter().map(|h| h.value.spec.command.as_str()).collect();
        assert_eq!(commands, ["user-hook"], "an untrusted project's hook never runs");
        assert_eq!(s.untrusted_ignored, ["hooks"]);
        assert!(
            s.describe()
                .contains("hooks            = stop: user-hook (timeout 3 s)")
        );
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "[[hooks.pre_tool]]\ncommand = \"x\"\n").unwrap();
        assert!(matches!(
            load(dir.path(), &Flags::default(), &env, Some(&bad)),
            Err(ConfigError::Parse { .. })
        ));
    }

    /// Each variable the environment layer reads is shown as the source of its key.
    #[test]
    fn every_env_variable_is_shown_as_a_source() {
        let samples: &[(&str, &str)] = &[
            ("BRUTE_PROVIDER", "openai"),
            ("BRUTE_MODEL", "m"),
            ("BRUTE_BASE_URL", "http://127.0.0.1:9/v1"),
            ("BRUTE_API_KEY", "k"),
            ("BRUTE_MAX_TURNS", "7"),
        ];
        let mut vars: Vec<&str> = Gathered::ENV_VARS.iter().map(|(var, _)| *var).collect();
        let mut sampled: Vec<&str> = samples.iter().map(|(var, _)| *var).collect();
        vars.sort_unstable();
        sampled.sort_unstable();
        assert_eq!(sampled, vars, "one sample per variable");
        let dir = tempfile::tempdir().unwrap();
        let s = load(dir.path(), &Flags::default(), &env_of(samples), None).unwrap();
        let sources: Vec<String> = described(&s).into_iter().map(|(_, source)| source).collect();
        for var in vars {
            assert!(sources.contains(&format!("env {var}")), "{var}");
        }
        let env = env_of(&[("BRUTE_PROVIDER", "replay"), ("BRUTE_MAX_TURNS", "many")]);
        let e = load(dir.path(), &Flags::default(), &env, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value for BRUTE_MAX_TURNS: `many` is not a positive whole number"
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

    /// With only OPENAI_API_KEY: OpenAI's own API through Responses with the default model;
    /// a compatible server at OPENAI_BASE_URL through Chat Completions.
    #[test]
    fn an_openai_key_alone_picks_the_responses_api() {
        use crate::provider::spec::WireFormat;
        let dir = tempfile::tempdir().unwrap();
        let wire = |s: &Settings| s.provider.value.spec().endpoint_for(&s.base_url.value).map(|e| e.wire);
        let s = load(dir.path(), &Flags::default(), &env_of(&[("OPENAI_API_KEY", "k")]), None).unwrap();
        assert_eq!(
            (s.provider.value, s.model.value.as_str()),
            (ProviderKind::OpenAi, "gpt-5.1")
        );
        assert_eq!(wire(&s), Some(WireFormat::Responses));
        let env = env_of(&[("OPENAI_API_KEY", "k"), ("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")]);
        let s = load(dir.path(), &Flags::default(), &env, None).unwrap();
        assert_eq!(wire(&s), Some(WireFormat::OpenAiChat));
    }

    /// The generic key never travels to a provider detected from its own key variable.
    #[test]
    fn keys_go_only_with_their_own_provider() {
        let dir = tempfile::tempdir().unwrap();
        let key = |pairs: &[(&str, &str)], flags: &Flags| {
            let s = load(dir.path(), flags, &env_of(pairs), None).unwrap();
            let key = s.api_key.map(|k| (k.value, k.source.to_string()));
            (s.provider.value, key)
        };
        let both = [("ANTHROPIC_API_KEY", "anthropic-key"), ("BRUTE_API_KEY", "other-key")];
        assert_eq!(
            key(&both, &Flags::default()),
            (
                ProviderKind::Anthropic,
                Some(("anthropic-key".to_owned(), "env ANTHROPIC_API_KEY".to_owned()))
            )
        );
        let openai = [("OPENAI_API_KEY", "openai-key"), ("BRUTE_API_KEY", "other-key")];
        assert_eq!(
            key(&openai, &Flags::default()).1.map(|k| k.0).as_deref(),
            Some("openai-key")
        );
        // Named, the provider takes the generic key: the person said which server it is for.
        let named = Flags {
            provider: Some("anthropic".into()),
            ..Flags::default()
        };
        assert_eq!(key(&both, &named).1.map(|k| k.0).as_deref(), Some("other-key"));
        // A provider with no key variable of its own (Ollama behind a proxy) takes it.
        let ollama = [("OLLAMA_HOST", "127.0.0.1:5"), ("BRUTE_API_KEY", "proxy-key")];
        assert_eq!(
            key(&ollama, &Flags::default()).1.map(|k| k.0).as_deref(),
            Some("proxy-key")
        );
    }

    #[test]
    fn a_config_that_is_not_utf8_is_refused_with_its_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, b"model = \"caf\xff\"\n").unwrap();
        let err = read_layer(&path).map(|_| ()).unwrap_err();
        assert!(matches!(err, ConfigError::NotUtf8 { offset: 12, .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!("{}: not valid UTF-8 at byte 12", path.display())
        );
        // A project's config too, trusted or not.
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(project.path().join(".brute")).unwrap();
        std::fs::write(project.path().join(".brute/config.toml"), b"\xc3(\n").unwrap();
        let err = gather(project.path(), &Flags::default(), &|_: &str| None, None)
            .map(|_| ())
            .unwrap_err();
        assert!(
            err.to_string()
                .ends_with(".brute/config.toml: not valid UTF-8 at byte 0"),
            "{err}"
        );
        // Valid multi-byte text still loads.
        std::fs::write(&path, "model = \"café\"\n").unwrap();
        assert!(read_layer(&path).unwrap().is_some());
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
        std::fs::write(dir.path().join(".brute/config.toml"), "max_tools = 0\n").unwrap();
        let e = load(
            dir.path(),
            &Flags::default(),
            &env_of(&[("BRUTE_PROVIDER", "replay")]),
            None,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "invalid value for max_tools: must be at least 1");
        std::fs::write(dir.path().join(".brute/config.toml"), "reasoning_effort = \"max\"\n").unwrap();
        let e = load(
            dir.path(),
            &Flags::default(),
            &env_of(&[("BRUTE_PROVIDER", "replay")]),
            None,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value for reasoning_effort: must be low, medium or high"
        );
        std::fs::write(dir.path().join(".brute/config.toml"), "bogus = 1\n").unwrap();
        assert!(matches!(
            load(dir.path(), &flags, &env, None),
            Err(ConfigError::Parse { .. })
        ));
    }
}
