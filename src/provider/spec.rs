//! Everything brute knows about each provider, in one table: [`SPECS`].
//!
//! Config parsing, auto-detection, `brute config`, the error messages and the HTTP driver all
//! read this table, so adding a provider or changing a default is one edit here. This module
//! depends on nothing else in brute (config depends on it, never the other way round).

use super::anthropic;

/// A provider brute can use; the key of [`SPECS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    Anthropic,
    /// OpenAI: the Responses API at api.openai.com, Chat Completions at any other base URL
    /// (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter).
    OpenAi,
    /// A local Ollama server through its OpenAI-compatible route.
    Ollama,
    /// OpenAI Responses API at any base URL.
    Responses,
    /// Plays a script; needs no network and no key.
    Replay,
}

impl ProviderKind {
    /// This provider's row of [`SPECS`].
    pub fn spec(self) -> &'static ProviderSpec {
        match self {
            Self::Anthropic => &ANTHROPIC,
            Self::OpenAi => &OPENAI,
            Self::Ollama => &OLLAMA,
            Self::Responses => &RESPONSES,
            Self::Replay => &REPLAY,
        }
    }

    /// The canonical name, as config files and `--provider` spell it.
    pub fn as_str(self) -> &'static str {
        self.spec().name
    }
}

/// The wire formats brute speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// OpenAI Chat Completions and every compatible server.
    OpenAiChat,
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Responses.
    Responses,
}

impl WireFormat {
    /// The path appended to the base URL: base URLs follow each SDK's convention (OpenAI-style
    /// ends in `/v1`, Anthropic-style is the host root).
    pub fn path(self) -> &'static str {
        match self {
            Self::OpenAiChat => "/chat/completions",
            Self::Anthropic => "/v1/messages",
            Self::Responses => "/responses",
        }
    }

    /// Headers every request in this format carries besides the key.
    pub fn headers(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Anthropic => &[("anthropic-version", anthropic::API_VERSION)],
            Self::OpenAiChat | Self::Responses => &[],
        }
    }
}

/// How an API key travels with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// `authorization: Bearer <key>`.
    Bearer,
    /// The key alone in this header (Anthropic's `x-api-key`).
    Header(&'static str),
    /// The provider takes no key.
    None,
}

/// What an HTTP provider speaks: its wire format and how it sends the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    pub wire: WireFormat,
    pub auth: Auth,
}

/// How brute reaches a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// HTTP requests to the base URL.
    Http(Endpoint),
    /// A script played in process (no network, no key).
    Replay,
}

/// An environment variable that gives a provider's base URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseUrlVar {
    /// The variable holds the whole base URL (`OPENAI_BASE_URL`).
    Url(&'static str),
    /// The variable holds `host:port` or a URL without path (`OLLAMA_HOST`); `path` is appended.
    Host { var: &'static str, path: &'static str },
}

impl BaseUrlVar {
    /// The variable's name.
    pub fn var(self) -> &'static str {
        match self {
            Self::Url(var) | Self::Host { var, .. } => var,
        }
    }

    /// The base URL a value of the variable stands for.
    pub fn base_url(self, value: &str) -> String {
        match self {
            Self::Url(_) => value.to_owned(),
            Self::Host { path, .. } => {
                let host = value.trim_end_matches('/');
                if host.starts_with("http://") || host.starts_with("https://") {
                    format!("{host}{path}")
                } else {
                    format!("http://{host}{path}")
                }
            }
        }
    }
}

/// One provider's facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderSpec {
    pub kind: ProviderKind,
    /// The canonical name (`--provider`, `provider = ...`, status lines).
    pub name: &'static str,
    /// Other names accepted for it (case-insensitive).
    pub aliases: &'static [&'static str],
    /// The name people know it by, for messages.
    pub label: &'static str,
    pub transport: Transport,
    /// Hosts that speak a better wire format of their own than the transport's: there that
    /// format is used (api.openai.com gets the Responses API, as Codex uses it; every other
    /// OpenAI-compatible server keeps Chat Completions).
    pub native_wire: &'static [(&'static str, WireFormat)],
    /// Where requests go when nothing sets a base URL; `None` for providers without one.
    pub default_base_url: Option<&'static str>,
    /// The environment variable that overrides the default base URL.
    pub base_url_var: Option<BaseUrlVar>,
    pub default_model: &'static str,
    /// Where its key is read from, first match wins. `BRUTE_API_KEY` and `api_key` win over
    /// these when the provider is named (flag, variable, config), and are never used when the
    /// provider was detected from one of these variables.
    pub key_vars: &'static [&'static str],
    /// The default endpoint refuses requests without a key: loading fails early (unless a
    /// base URL points elsewhere, e.g. a local compatible server).
    pub key_required: bool,
    /// A variable whose presence selects this provider when nothing names one.
    pub detect_var: Option<&'static str>,
    /// When no variable selects a provider, probe the default base URL's port for a server.
    pub probe: bool,
}

impl ProviderSpec {
    /// The HTTP endpoint, or `None` for providers that are not reached over HTTP.
    pub fn endpoint(&self) -> Option<Endpoint> {
        match self.transport {
            Transport::Http(endpoint) => Some(endpoint),
            Transport::Replay => None,
        }
    }

    /// The endpoint for requests to `base_url`: the transport's, with the wire format of
    /// [`ProviderSpec::native_wire`] when the URL's host has one.
    pub fn endpoint_for(&self, base_url: &str) -> Option<Endpoint> {
        let mut endpoint = self.endpoint()?;
        let host = host_of(base_url);
        if let Some((_, wire)) = self.native_wire.iter().find(|(h, _)| h.eq_ignore_ascii_case(host)) {
            endpoint.wire = *wire;
        }
        Some(endpoint)
    }

    /// `host:port` of the default base URL, for the probe and its message.
    pub fn default_authority(&self) -> Option<&'static str> {
        let url = self.default_base_url?;
        let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
        rest.split('/').next()
    }

    /// Every environment variable this provider reads, without repeats.
    pub fn env_vars(&self) -> Vec<&'static str> {
        let mut vars: Vec<&'static str> = self.key_vars.to_vec();
        vars.extend(self.base_url_var.map(BaseUrlVar::var));
        vars.extend(self.detect_var);
        let mut seen = Vec::new();
        vars.retain(|v| {
            let new = !seen.contains(v);
            seen.push(*v);
            new
        });
        vars
    }
}

/// The host of a URL (`https://api.openai.com/v1` → `api.openai.com`), without port or user.
pub fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    if authority.starts_with('[') {
        return authority
            .split_once(']')
            .map_or(authority, |(h, _)| h)
            .trim_start_matches('[');
    }
    authority.split(':').next().unwrap_or(authority)
}

/// How a Claude model is asked to think.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaudeThinking {
    /// Not a thinking model (Claude 3.5 and older, or not Claude).
    None,
    /// `thinking: {type: "enabled", budget_tokens}` (Claude 3.7 to 4.5, and unknown names).
    Budget,
    /// `thinking: {type: "adaptive"}` with `output_config.effort` (Claude 4.6 on; 4.7 on
    /// refuses the budget form with a 400).
    Adaptive,
}

/// What brute knows of a model from its name: which request parameters it takes. Names are
/// read without a router's `vendor/` prefix (`openai/gpt-5` on OpenRouter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelFacts {
    /// An OpenAI reasoning model (o-series, gpt-5 on): `max_completion_tokens` instead of
    /// `max_tokens`, no temperature but the default, reasoning effort and encrypted reasoning.
    pub openai_reasoning: bool,
    /// A known OpenAI model that does not reason: reasoning parameters are refused.
    pub openai_plain: bool,
    pub claude_thinking: ClaudeThinking,
    /// Refuses every sampling temperature but the default (OpenAI reasoning models, Claude 4.7 on).
    pub fixed_temperature: bool,
    /// Takes images: `Some` for the families brute knows, `None` for the rest (then
    /// `[models."NAME"] vision` decides, and without it images become text notes).
    pub vision: Option<bool>,
}

/// Model families known to take no images, checked before [`SEEING`] (`o1-mini` before `o1`).
const TEXT_ONLY: &[&str] = &[
    "gpt-3.5",
    "o1-mini",
    "o1-preview",
    "o3-mini",
    "gpt-oss",
    "claude-2",
    "claude-instant",
    "deepseek",
    "codestral",
    "codellama",
    "qwen2.5-coder",
    "qwen3-coder",
];

/// Model families known to take images (by name prefix; any name with `vision` or `-vl`).
const SEEING: &[&str] = &[
    "claude-",
    "gpt-4o",
    "chatgpt-4o",
    "gpt-4.1",
    "gpt-4-turbo",
    "gpt-5",
    "o1",
    "o3",
    "o4",
    "codex-mini",
    "gemini",
    "gemma3",
    "llava",
    "bakllava",
    "pixtral",
    "moondream",
    "minicpm-v",
    "llama4",
    "mistral-small3",
    "qwen2.5vl",
];

fn vision(name: &str) -> Option<bool> {
    if TEXT_ONLY.iter().any(|p| name.starts_with(p)) {
        Some(false)
    } else if SEEING.iter().any(|p| name.starts_with(p)) || name.contains("vision") || name.contains("-vl") {
        Some(true)
    } else {
        None
    }
}

/// The facts of `model` (see [`ModelFacts`]).
pub fn model_facts(model: &str) -> ModelFacts {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    let o_series = name.len() > 1 && name.starts_with('o') && name.as_bytes()[1].is_ascii_digit();
    let gpt_major = name
        .strip_prefix("gpt-")
        .and_then(|rest| rest.split(['.', '-']).next())
        .and_then(|major| major.parse::<u32>().ok());
    let openai_reasoning = o_series || gpt_major.is_some_and(|m| m >= 5) || name.starts_with("codex-mini");
    let openai_plain = !openai_reasoning && ["gpt-4", "gpt-3.5", "chatgpt-"].iter().any(|p| name.starts_with(p));
    let (claude_thinking, claude_fixed) = match name.strip_prefix("claude-") {
        None => (ClaudeThinking::None, false),
        Some(rest) => match claude_version(rest) {
            Some(v) if v >= (4, 7) => (ClaudeThinking::Adaptive, true),
            Some(v) if v >= (4, 6) => (ClaudeThinking::Adaptive, false),
            Some(v) if v >= (3, 7) => (ClaudeThinking::Budget, false),
            Some(_) => (ClaudeThinking::None, false),
            // A name without a version: the preview models are of the newest kind.
            None if rest.contains("preview") => (ClaudeThinking::Adaptive, true),
            None => (ClaudeThinking::Budget, false),
        },
    };
    ModelFacts {
        openai_reasoning,
        openai_plain,
        claude_thinking,
        fixed_temperature: openai_reasoning || claude_fixed,
        vision: vision(&name),
    }
}

/// (major, minor) from the part of a Claude id after `claude-`: numbers after the family
/// (`sonnet-4-5-20250929`) or before it (`3-7-sonnet-20250219`); an 8-digit date is no version.
fn claude_version(rest: &str) -> Option<(u32, u32)> {
    let mut numbers = rest
        .split(['-', '.'])
        .filter(|p| !p.is_empty() && p.len() < 8 && p.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|p| p.parse::<u32>().ok());
    let major = numbers.next()?;
    Some((major, numbers.next().unwrap_or(0)))
}

/// A key variable for any provider (e.g. a compatible server at a custom base URL).
pub const ANY_KEY_VAR: &str = "BRUTE_API_KEY";

static ANTHROPIC: ProviderSpec = ProviderSpec {
    kind: ProviderKind::Anthropic,
    name: "anthropic",
    aliases: &["claude"],
    label: "Anthropic",
    transport: Transport::Http(Endpoint {
        wire: WireFormat::Anthropic,
        auth: Auth::Header("x-api-key"),
    }),
    native_wire: &[],
    default_base_url: Some("https://api.anthropic.com"),
    base_url_var: Some(BaseUrlVar::Url("ANTHROPIC_BASE_URL")),
    default_model: "claude-sonnet-4-5",
    key_vars: &["ANTHROPIC_API_KEY"],
    key_required: true,
    detect_var: Some("ANTHROPIC_API_KEY"),
    probe: false,
};

static OPENAI: ProviderSpec = ProviderSpec {
    kind: ProviderKind::OpenAi,
    name: "openai",
    aliases: &["openai-chat", "chat", "openai-compatible"],
    label: "OpenAI",
    transport: Transport::Http(Endpoint {
        wire: WireFormat::OpenAiChat,
        auth: Auth::Bearer,
    }),
    native_wire: &[("api.openai.com", WireFormat::Responses)],
    default_base_url: Some("https://api.openai.com/v1"),
    base_url_var: Some(BaseUrlVar::Url("OPENAI_BASE_URL")),
    default_model: "gpt-5.1",
    key_vars: &["OPENAI_API_KEY"],
    key_required: true,
    detect_var: Some("OPENAI_API_KEY"),
    probe: false,
};

static OLLAMA: ProviderSpec = ProviderSpec {
    kind: ProviderKind::Ollama,
    name: "ollama",
    aliases: &[],
    label: "Ollama",
    // Ollama ignores the key; a proxy in front of it may want one as a bearer token.
    transport: Transport::Http(Endpoint {
        wire: WireFormat::OpenAiChat,
        auth: Auth::Bearer,
    }),
    native_wire: &[],
    default_base_url: Some("http://127.0.0.1:11434/v1"),
    base_url_var: Some(BaseUrlVar::Host {
        var: "OLLAMA_HOST",
        path: "/v1",
    }),
    default_model: "qwen3",
    key_vars: &[],
    key_required: false,
    detect_var: Some("OLLAMA_HOST"),
    probe: true,
};

static RESPONSES: ProviderSpec = ProviderSpec {
    kind: ProviderKind::Responses,
    name: "responses",
    aliases: &["openai-responses"],
    label: "OpenAI Responses",
    transport: Transport::Http(Endpoint {
        wire: WireFormat::Responses,
        auth: Auth::Bearer,
    }),
    native_wire: &[],
    default_base_url: Some("https://api.openai.com/v1"),
    base_url_var: Some(BaseUrlVar::Url("OPENAI_BASE_URL")),
    default_model: "gpt-5.1",
    key_vars: &["OPENAI_API_KEY"],
    key_required: true,
    detect_var: None,
    probe: false,
};

static REPLAY: ProviderSpec = ProviderSpec {
    kind: ProviderKind::Replay,
    name: "replay",
    aliases: &[],
    label: "Replay",
    transport: Transport::Replay,
    native_wire: &[],
    default_base_url: None,
    base_url_var: None,
    default_model: "replay",
    key_vars: &[],
    key_required: false,
    detect_var: None,
    probe: false,
};

/// Every provider, in auto-detection order: the first whose [`ProviderSpec::detect_var`] is
/// set wins, then the first whose server answers the [`ProviderSpec::probe`].
/// Whether `base_url` is a hosted provider's own API (a default base URL of [`SPECS`] that is
/// not on this machine): its models make real tool calls and it has no llama.cpp-style
/// window probe.
pub fn known_provider_host(base_url: &str) -> bool {
    let host = |url: &str| {
        reqwest::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
    };
    let Some(wanted) = host(base_url) else { return false };
    SPECS
        .iter()
        .filter_map(|spec| spec.default_base_url.and_then(host))
        .filter(|h| h != "127.0.0.1" && h != "localhost" && h != "::1" && h != "[::1]")
        .any(|h| h == wanted)
}

pub static SPECS: &[&ProviderSpec] = &[&ANTHROPIC, &OPENAI, &OLLAMA, &RESPONSES, &REPLAY];

/// The provider a name or alias stands for (case-insensitive, surrounding space ignored).
pub fn find(name: &str) -> Option<&'static ProviderSpec> {
    let name = name.trim().to_ascii_lowercase();
    SPECS
        .iter()
        .copied()
        .find(|spec| spec.name == name || spec.aliases.contains(&name.as_str()))
}

/// The canonical names, comma-separated, for messages.
pub fn names() -> String {
    SPECS.iter().map(|spec| spec.name).collect::<Vec<_>>().join(", ")
}

/// Every variable that may hold a provider key, without repeats: what brute takes out of its
/// environment at start and keeps from the commands it runs.
pub fn key_vars() -> Vec<&'static str> {
    let mut vars: Vec<&'static str> = Vec::new();
    for var in SPECS
        .iter()
        .flat_map(|spec| spec.key_vars.iter().copied())
        .chain([ANY_KEY_VAR])
    {
        if !vars.contains(&var) {
            vars.push(var);
        }
    }
    vars
}

/// What to set to get a provider: one line per detectable provider, then the flags.
pub fn setup_help() -> String {
    let mut out = String::from("Set one of:\n");
    for spec in SPECS.iter().filter(|spec| spec.detect_var.is_some()) {
        let Some(var) = spec.detect_var else { continue };
        let mut notes = String::new();
        if let Some(BaseUrlVar::Url(url_var)) = spec.base_url_var {
            notes.push_str(&format!("; {url_var} for a compatible server"));
        }
        if spec.probe {
            notes.push_str(&format!("; or start {} on its default port", spec.label));
        }
        out.push_str(&format!("  {:<24}({}{notes})\n", format!("{var}=..."), spec.label));
    }
    out.push_str(&format!(
        "or pass --provider ({}) with --base-url and --model.",
        names()
    ));
    if let Some(replay) = SPECS.iter().find(|spec| spec.transport == Transport::Replay) {
        out.push_str(&format!(
            "\nTry it without a key: brute --provider {} -p \"show me around\"",
            replay.name
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_row() {
        for spec in SPECS {
            assert_eq!(spec.kind.spec(), *spec, "{}", spec.name);
            assert_eq!(find(spec.name), Some(*spec));
            for alias in spec.aliases {
                assert_eq!(find(alias), Some(*spec), "{alias}");
            }
        }
        assert_eq!(SPECS.len(), 5);
        assert_eq!(find(" Claude "), Some(&ANTHROPIC));
        assert_eq!(find("nope"), None);
    }

    #[test]
    fn names_are_unique() {
        let mut all: Vec<&str> = SPECS
            .iter()
            .flat_map(|s| std::iter::once(s.name).chain(s.aliases.iter().copied()))
            .collect();
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count);
    }

    #[test]
    fn keys_and_urls() {
        assert_eq!(key_vars(), ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "BRUTE_API_KEY"]);
        assert_eq!(OLLAMA.default_authority(), Some("127.0.0.1:11434"));
        let host = BaseUrlVar::Host { var: "H", path: "/v1" };
        assert_eq!(host.base_url("127.0.0.1:5"), "http://127.0.0.1:5/v1");
        assert_eq!(host.base_url("https://box:5/"), "https://box:5/v1");
        assert_eq!(OLLAMA.env_vars(), ["OLLAMA_HOST"]);
        assert_eq!(OPENAI.env_vars(), ["OPENAI_API_KEY", "OPENAI_BASE_URL"]);
        // With only OPENAI_API_KEY, OpenAI's own API gets Responses; compatible servers Chat.
        let wire = |url: &str| OPENAI.endpoint_for(url).map(|e| e.wire);
        assert_eq!(wire("https://api.openai.com/v1"), Some(WireFormat::Responses));
        assert_eq!(wire("https://API.openai.com:443/v1/"), Some(WireFormat::Responses));
        for other in [
            "http://127.0.0.1:11434/v1",
            "https://openrouter.ai/api/v1",
            "http://api.openai.com.evil/v1",
        ] {
            assert_eq!(wire(other), Some(WireFormat::OpenAiChat), "{other}");
        }
        assert_eq!(
            OPENAI
                .endpoint_for(OPENAI.default_base_url.unwrap_or_default())
                .map(|e| e.wire),
            Some(WireFormat::Responses)
        );
        assert_eq!(REPLAY.endpoint_for("x"), None);
        assert_eq!(host_of("http://user:pw@[::1]:8080/v1"), "::1");
        // A key is required only where there is a key variable to name.
        for spec in SPECS {
            assert!(!spec.key_required || !spec.key_vars.is_empty(), "{}", spec.name);
        }
    }

    /// The `--provider` help (and so the completions and man page) is written by hand.
    #[test]
    fn provider_flag_help_names_every_provider() {
        use clap::CommandFactory;
        let cli = crate::cli::Cli::command();
        let help = cli
            .get_arguments()
            .find(|arg| arg.get_id() == "provider")
            .and_then(|arg| arg.get_help())
            .map(ToString::to_string)
            .unwrap_or_default();
        for spec in SPECS {
            assert!(help.contains(spec.name), "--provider help lacks {}: {help}", spec.name);
        }
    }

    #[test]
    fn model_facts_from_names() {
        for reasoning in [
            "gpt-5.1",
            "gpt-5-mini",
            "o3",
            "o4-mini-2025-04-16",
            "openai/gpt-5",
            "gpt-6-sol",
        ] {
            let facts = model_facts(reasoning);
            assert!(facts.openai_reasoning && facts.fixed_temperature, "{reasoning}");
        }
        for plain in ["gpt-4.1", "gpt-4o-mini", "chatgpt-4o-latest"] {
            assert!(model_facts(plain).openai_plain, "{plain}");
        }
        for other in ["qwen3", "gpt-oss-20b", "mock-model", "olmo-2", "llama3.1:8b"] {
            let facts = model_facts(other);
            assert!(
                !facts.openai_reasoning && !facts.openai_plain && !facts.fixed_temperature,
                "{other}"
            );
            assert_eq!(facts.claude_thinking, ClaudeThinking::None, "{other}");
        }
        let thinking = |m: &str| model_facts(m).claude_thinking;
        assert_eq!(thinking("claude-3-5-sonnet-20241022"), ClaudeThinking::None);
        assert_eq!(thinking("claude-3-7-sonnet-20250219"), ClaudeThinking::Budget);
        assert_eq!(thinking("claude-opus-4-20250514"), ClaudeThinking::Budget);
        assert_eq!(thinking("claude-sonnet-4-5"), ClaudeThinking::Budget);
        assert_eq!(thinking("claude-haiku-4-5-20251001"), ClaudeThinking::Budget);
        assert_eq!(thinking("anthropic/claude-opus-4.6"), ClaudeThinking::Adaptive);
        assert!(!model_facts("claude-sonnet-4-6").fixed_temperature);
        for newest in [
            "claude-opus-4-7",
            "claude-sonnet-5",
            "claude-fable-5-1",
            "claude-mythos-preview",
        ] {
            let facts = model_facts(newest);
            assert_eq!(facts.claude_thinking, ClaudeThinking::Adaptive, "{newest}");
            assert!(facts.fixed_temperature, "{newest}");
        }
        let sees = |m: &str| model_facts(m).vision;
        assert_eq!(sees("claude-sonnet-4-5"), Some(true));
        assert_eq!(sees("openai/gpt-4o-mini"), Some(true));
        assert_eq!(sees("o3"), Some(true));
        assert_eq!(sees("o3-mini"), Some(false));
        assert_eq!(sees("gpt-3.5-turbo"), Some(false));
        assert_eq!(sees("qwen2.5vl:7b"), Some(true));
        assert_eq!(sees("llama3.1:8b"), None, "unknown: the setting decides");
        assert_eq!(sees("llama3.2-vision:11b"), Some(true));
        assert_eq!(sees("mock-model"), None);
        assert_eq!(
            thinking("claude-custom"),
            ClaudeThinking::Budget,
            "unknown: the API decides"
        );
    }

    #[test]
    fn setup_help_names_every_detected_variable() {
        let help = setup_help();
        assert!(help.starts_with(
            "Set one of:\n  ANTHROPIC_API_KEY=...   (Anthropic; ANTHROPIC_BASE_URL for a compatible server)\n  OPENAI_API_KEY=...      (OpenAI; OPENAI_BASE_URL for a compatible server)\n  OLLAMA_HOST=...         (Ollama; or start Ollama on its default port)\n"
        ), "{help}");
        assert!(help.contains("--provider (anthropic, openai, ollama, responses, replay)"));
        assert!(help.ends_with("brute --provider replay -p \"show me around\""));
    }
}
