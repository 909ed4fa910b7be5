//! The settings list: every config key, declared once in `settings!` (see
//! [`super::setting`]), with its checks, how `brute config` shows it, and the accessors the
//! rest of brute reads settings through.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::layers::{check, set, set_from_env};
use super::reference::{Entry, Group};
use super::setting::file_value;
use super::{ConfigError, EnvLookup, Source, Sourced};
use crate::provider::Effort;
use crate::provider::spec::{self, ProviderKind};
use crate::sandbox::Mode;
use crate::tool::command::CommandToolSpec;

pub use super::choice::{Hyperlinks, NotifyChannel};

settings! {
    file_only {
        /// Command tools (`[[tools]]`); a project tool replaces a user tool of the same name.
        tools: Vec<CommandToolSpec>, form = "[[tools]]", see = "docs/extensions.md",
            risky = "runs commands";
        /// Permission rules (`[permissions] allow/deny/ask`); every layer's rules apply.
        permissions: crate::permission::PermissionsConfig, form = "[permissions]", see = "docs/safety.md",
            risky = "allows calls without asking";
        /// Per-model facts (`[models."NAME"]`: context window, vision, prices); later layers
        /// override earlier ones per model.
        models: std::collections::BTreeMap<String, ModelConfig>, form = "[models.\"NAME\"]",
            see = "docs/extensions.md",
            risky = "sets the prices brute reports and the window it fills (a project could hide what a turn costs)";
        /// Hooks (`[[hooks.<event>]]`); every layer's hooks run, the user's first.
        hooks: crate::hooks::HooksConfig, form = "[[hooks.EVENT]]", see = "docs/extensions.md",
            risky = "runs commands";
        /// MCP servers (`[mcp_servers.NAME]`); a project's only in a trusted project.
        mcp_servers: std::collections::BTreeMap<String, crate::mcp::config::ServerSpec>,
            form = "[mcp_servers.NAME]", see = "docs/extensions.md",
            risky = "starts programs";
    }
    layered {
        /// The model provider (`brute config` lists them); unset, brute picks one from the
        /// environment.
        provider: String, env = "BRUTE_PROVIDER",
            default = "detected: the first provider whose key variable is set, else a local server that answers",
            risky = "sends the API key and the conversation elsewhere";
        /// The model's name as the provider spells it.
        model: String, env = "BRUTE_MODEL", default = "the provider's default model";
        /// The server requests go to.
        base_url: String, env = "BRUTE_BASE_URL",
            default = "the provider's URL (or its base URL variable, e.g. OPENAI_BASE_URL)",
            risky = "sends the API key and the conversation elsewhere";
        /// The API key. Better kept in the environment than in a file.
        api_key: String, env = spec::ANY_KEY_VAR, default = "the provider's own key variable",
            risky = "picks whose account pays";
        /// Script for the replay provider; in a file, relative to that file's directory.
        script: PathBuf, default = "(not set)";
        /// Allowlist of tool names offered by default.
        allow_tools: Vec<String>, default = "(all)";
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
        /// Project settings left out because the project is not trusted (see [`super::trust`]).
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
        /// `--append-system-prompt`: added to the end of the system prompt.
        append_system_prompt: Option<String>,
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
        max_turns: u32 = super::DEFAULT_MAX_TURNS, env = "BRUTE_MAX_TURNS", check = at_least_one;
        /// The most tokens one response may have.
        max_tokens: u32 = 16_384;
        /// Stream responses (off for servers that cannot stream tool calls).
        stream: bool = true;
        /// Retries of 429/5xx/overloaded/connection failures, the first attempt included.
        max_attempts: u32 = 4;
        /// The first retry's wait in milliseconds; each later one waits longer.
        retry_base_ms: u64 = 500;
        /// How long connecting to the server may take, in seconds.
        connect_timeout_secs: u64 = 10;
        /// Silence allowed inside a stream.
        idle_timeout_secs: u64 = 120;
        /// Replaces `assets/system_prompt.md`.
        system_prompt: Option<String> = None, show = show_prompt,
            risky = "rewrites what the model is told it may do";
        /// Tools never offered.
        deny_tools: Vec<String> = Vec::new();
        /// Cap on advertised tools.
        max_tools: usize = crate::tool::registry::DEFAULT_MAX_TOOLS, check = at_least_one;
        /// Files larger than this are left out of turn checkpoints.
        checkpoint_max_file_bytes: u64 = crate::session::checkpoint::DEFAULT_MAX_FILE_BYTES,
            risky = "could have brute copy every file of any size into the data directory";
        /// Trees with more files and directories than this get no turn checkpoints (the
        /// built-in tools' writes stay undoable call by call).
        checkpoint_max_entries: usize = crate::session::checkpoint::DEFAULT_MAX_ENTRIES,
            risky = "could turn off the undo of the project's own turns";
        /// What commands may do: `read-only`, `workspace-write` or `full-access`.
        sandbox: Mode = Mode::default(), risky = "widens what commands may do";
        /// More trees commands may write in `workspace-write` (e.g. a build cache).
        writable_roots: Vec<String> = Vec::new(), risky = "widens what commands may write";
        /// The ceiling on what skill scripts may be granted (`[skill_sandbox]`: `fs_read`,
        /// `fs_write`, `network`, `timeout`).
        skill_sandbox: crate::tool::skill_script::Ceiling = crate::tool::skill_script::Ceiling::default(),
            risky = "widens what skill scripts may do";
        /// The model's context window in tokens (default: brute's table of common models).
        context_window: Option<u64> = None;
        /// Compact before a request would pass this share of the context window.
        compact_at: f64 = 0.8, check = share;
        /// Compaction brings the conversation down to this share of the window.
        compact_to: f64 = 0.5, check = share;
        /// How hard reasoning models think: `low`, `medium` or `high`; unset leaves the
        /// model's default (Claude's thinking off).
        reasoning_effort: Option<Effort> = None;
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
        web_search_url: Option<String> = None, check = search_url,
            risky = "sends the model's search queries (which may quote the project) elsewhere";
        /// How the UI calls the person when a turn ends while the terminal is not focused,
        /// or an approval waits: `bel`, `osc9` (a desktop notification) or `off`.
        notify: NotifyChannel = NotifyChannel::default();
        /// Links in answers as OSC 8 hyperlinks: `auto` (where the terminal is known to
        /// support them), `on` or `off`.
        hyperlinks: Hyperlinks = Hyperlinks::default();
    }
}

/// The values of the `notify` setting (the UI maps them to bytes for the terminal).
pub const NOTIFY_CHANNELS: &[&str] = <NotifyChannel as super::Choice>::NAMES;

/// The values of the `hyperlinks` setting (the UI decides what `auto` means).
pub const HYPERLINK_SETTINGS: &[&str] = <Hyperlinks as super::Choice>::NAMES;

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

impl Settings {
    /// The reasoning effort (read at load).
    pub fn reasoning_effort(&self) -> Option<Effort> {
        self.reasoning_effort.value
    }

    /// The sandbox mode (read at load).
    pub fn sandbox_mode(&self) -> Mode {
        self.sandbox.value
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
    use std::path::PathBuf;

    #[test]
    fn a_writable_root_under_home_is_written_with_a_tilde() {
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        assert_eq!(super::expand_home("~/.cargo/registry"), home.join(".cargo/registry"));
        assert_eq!(super::expand_home("/srv/cache"), PathBuf::from("/srv/cache"));
        assert_eq!(super::expand_home("~user/x"), PathBuf::from("~user/x"));
    }
}
