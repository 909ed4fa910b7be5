//! Configuration: built-in defaults < user `config.toml` < project `.brute/config.toml` <
//! environment < flags, then provider auto-detection. Every value remembers where it came
//! from so `brute config` can say so. API keys are never printed.
//!
//! Every key is declared once, in the `settings!` list in [`settings`]'s source. A plain
//! setting (`name: Type = default`) needs nothing else: its file key, its merge, its
//! [`Settings`] field, its `brute config` line and its entry in the configuration reference
//! all come from that line, and a `risky` mark there keeps it out of an untrusted project.
//! Special settings (the provider and what depends on it, the API key, the script path,
//! `[[tools]]`, the tool allowlist) are layered the same way but resolved by hand.
//!
//! One job per file: `setting.rs` the machinery, `choice.rs` the settings that take one of a
//! few names, `settings.rs` the list, `layers.rs` reading and merging the layers,
//! `resolve.rs` defaults and the provider, `report.rs` what `brute config` and `brute
//! permissions` print, `reference.rs` `docs/configuration.md`.

pub mod project;
pub mod trust;
#[macro_use]
mod setting;
mod choice;
mod layers;
mod reference;
mod report;
mod resolve;
mod settings;

pub use choice::Choice;
pub use layers::read_layer;
pub use reference::reference_markdown;
pub use report::{env_vars, mcp_servers, permissions_report, report};
pub use resolve::{NO_PROBE_VAR, load, parse_provider};
pub use setting::Value;
pub use settings::{FileLayer, HYPERLINK_SETTINGS, Hyperlinks, ModelConfig, NOTIFY_CHANNELS, NotifyChannel, Settings};

use std::fmt;
use std::path::PathBuf;

use crate::provider::spec;
pub use crate::provider::spec::ProviderKind;

/// The default cap on model requests per user turn.
pub const DEFAULT_MAX_TURNS: u32 = 100;

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
    /// `--system-prompt` (empty: keep brute's own).
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`.
    pub append_system_prompt: Option<String>,
    /// `--allowedTools` / `--disallowedTools`, already in brute's rule syntax.
    pub permissions: crate::permission::PermissionsConfig,
}

/// Reads the environment; a trait-free function pointer so tests can inject variables.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment, ignoring empty values.
pub fn process_env(name: &str) -> Option<String> {
    crate::secrets::var(name).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests;
