//! The `[[hooks.<event>]]` config tables and the compiled [`Hook`].
//!
//! ```toml
//! [[hooks.pre_tool_use]]
//! matcher = "shell"          # tool-name glob; `a|b` alternatives; absent = every tool
//! command = "~/bin/check-command"
//! timeout = 10               # seconds, default 60
//! ```

use std::time::Duration;

use globset::{Glob, GlobMatcher};
use serde::Deserialize;

/// How long a hook may run when its table gives no `timeout`.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// The points of a session where hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    Stop,
    PreCompact,
}

impl HookEvent {
    /// Every event, in the order of [`HookEvent::index`].
    pub const ALL: [HookEvent; 6] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::Stop,
        HookEvent::PreCompact,
    ];

    /// brute's name (the config table, the `event` input field).
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "session_start",
            HookEvent::UserPromptSubmit => "user_prompt_submit",
            HookEvent::PreToolUse => "pre_tool_use",
            HookEvent::PostToolUse => "post_tool_use",
            HookEvent::Stop => "stop",
            HookEvent::PreCompact => "pre_compact",
        }
    }

    /// Claude Code's name (the `hook_event_name` input field), so its hooks work unchanged.
    pub fn claude_name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::PreCompact => "PreCompact",
        }
    }

    /// Its place in [`HookEvent::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether the matcher applies (tool events); other events run every hook.
    pub fn has_tool(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }
}

/// One `[[hooks.<event>]]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    /// Tool-name glob (`shell`, `mcp__*`, `write|patch`); absent, empty or `*`: every tool.
    #[serde(default)]
    pub matcher: Option<String>,
    /// Run with `bash -c` in the working directory, as the person.
    pub command: String,
    /// Seconds before the hook's process group is killed (default 60).
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// The `[hooks]` table of one config file: a list per event. Unknown events are config
/// errors (a typo must not silently disable a rule).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    #[serde(default)]
    pub session_start: Vec<HookSpec>,
    #[serde(default)]
    pub user_prompt_submit: Vec<HookSpec>,
    #[serde(default)]
    pub pre_tool_use: Vec<HookSpec>,
    #[serde(default)]
    pub post_tool_use: Vec<HookSpec>,
    #[serde(default)]
    pub stop: Vec<HookSpec>,
    #[serde(default)]
    pub pre_compact: Vec<HookSpec>,
}

impl HooksConfig {
    /// The hooks in event order, each list in file order; a bad matcher or a zero timeout is
    /// an error naming the hook.
    pub fn compile(self) -> Result<Vec<Hook>, String> {
        let lists = [
            (HookEvent::SessionStart, self.session_start),
            (HookEvent::UserPromptSubmit, self.user_prompt_submit),
            (HookEvent::PreToolUse, self.pre_tool_use),
            (HookEvent::PostToolUse, self.post_tool_use),
            (HookEvent::Stop, self.stop),
            (HookEvent::PreCompact, self.pre_compact),
        ];
        let mut hooks = Vec::new();
        for (event, specs) in lists {
            for spec in specs {
                hooks.push(Hook::new(event, spec)?);
            }
        }
        Ok(hooks)
    }
}

/// A hook ready to run: its event, its command and its compiled matcher.
#[derive(Debug, Clone)]
pub struct Hook {
    pub event: HookEvent,
    pub spec: HookSpec,
    /// `None` matches every tool.
    matcher: Option<Vec<GlobMatcher>>,
    /// A hook the program driving brute registered (Claude Code SDK's hook callbacks): asked
    /// of that program with this callback id instead of running a command.
    pub callback: Option<String>,
}

impl PartialEq for Hook {
    fn eq(&self, other: &Self) -> bool {
        self.event == other.event && self.spec == other.spec
    }
}

impl Hook {
    pub fn new(event: HookEvent, spec: HookSpec) -> Result<Self, String> {
        if spec.command.trim().is_empty() {
            return Err(format!("a {} hook has an empty command", event.name()));
        }
        if spec.timeout == Some(0) {
            return Err(format!(
                "the {} hook `{}` has timeout 0 (give seconds, at least 1)",
                event.name(),
                spec.command
            ));
        }
        let pattern = spec.matcher.as_deref().map(str::trim).unwrap_or("");
        let matcher = if pattern.is_empty() || pattern == "*" {
            None
        } else {
            let globs = pattern
                .split('|')
                .map(|part| {
                    Glob::new(part.trim())
                        .map(|g| g.compile_matcher())
                        .map_err(|e| format!("the {} hook matcher `{pattern}` is not a glob: {e}", event.name()))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Some(globs)
        };
        Ok(Self {
            event,
            spec,
            matcher,
            callback: None,
        })
    }

    /// A hook answered by the program that drives brute (see [`Hook::callback`]); `matcher`
    /// is a glob on brute's tool names, as in config.
    pub fn program(
        event: HookEvent,
        matcher: Option<String>,
        callback: &str,
        timeout: Option<u64>,
    ) -> Result<Self, String> {
        let spec = HookSpec {
            matcher,
            command: format!("the program's hook callback {callback}"),
            timeout: timeout.filter(|t| *t > 0),
        };
        let mut hook = Self::new(event, spec)?;
        hook.callback = Some(callback.to_owned());
        Ok(hook)
    }

    /// Whether this hook runs for `tool` (always for events without a tool).
    pub fn matches(&self, tool: Option<&str>) -> bool {
        match (&self.matcher, tool) {
            (None, _) => true,
            (Some(_), None) => !self.event.has_tool(),
            (Some(globs), Some(name)) => globs.iter().any(|g| g.is_match(name)),
        }
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.spec.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS))
    }

    /// The command as shown in notices (first line, at most 60 characters).
    pub fn shown(&self) -> String {
        let first = self.spec.command.lines().next().unwrap_or("");
        match first.char_indices().nth(60) {
            Some((cut, _)) => format!("{}…", &first[..cut]),
            None if first.len() < self.spec.command.trim_end().len() => format!("{first}…"),
            None => first.to_owned(),
        }
    }

    /// One `brute config` line: `event [matcher] command (timeout)`.
    pub fn describe(&self) -> String {
        let matcher = match &self.spec.matcher {
            Some(m) if !m.trim().is_empty() => format!(" [{}]", m.trim()),
            _ => String::new(),
        };
        format!(
            "{}{matcher}: {} (timeout {} s)",
            self.event.name(),
            self.shown(),
            self.timeout().as_secs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(event: HookEvent, matcher: Option<&str>) -> Hook {
        Hook::new(
            event,
            HookSpec {
                matcher: matcher.map(str::to_owned),
                command: "true".into(),
                timeout: None,
            },
        )
        .unwrap()
    }

    #[test]
    fn matchers_are_globs_with_alternatives() {
        let h = hook(HookEvent::PreToolUse, Some("mcp__*"));
        assert!(h.matches(Some("mcp__github__search")));
        assert!(!h.matches(Some("shell")));
        let h = hook(HookEvent::PreToolUse, Some("write|patch"));
        assert!(h.matches(Some("patch")) && h.matches(Some("write")) && !h.matches(Some("read")));
        assert!(hook(HookEvent::PreToolUse, None).matches(Some("anything")));
        assert!(hook(HookEvent::PreToolUse, Some("*")).matches(Some("anything")));
        // A matcher on an event without a tool does not filter it out.
        assert!(hook(HookEvent::Stop, Some("shell")).matches(None));
        assert_eq!(hook(HookEvent::Stop, None).timeout(), Duration::from_secs(60));
    }

    #[test]
    fn config_tables_parse_and_bad_ones_are_errors() {
        let config: HooksConfig = toml::from_str(
            "[[pre_tool_use]]\nmatcher = \"shell\"\ncommand = \"a\"\ntimeout = 5\n[[stop]]\ncommand = \"b\"\n",
        )
        .unwrap();
        let hooks = config.compile().unwrap();
        assert_eq!(hooks.len(), 2);
        assert_eq!(hooks[0].event, HookEvent::PreToolUse);
        assert_eq!(hooks[0].timeout(), Duration::from_secs(5));
        assert_eq!(hooks[0].describe(), "pre_tool_use [shell]: a (timeout 5 s)");
        assert!(toml::from_str::<HooksConfig>("[[pre_tool]]\ncommand = \"a\"\n").is_err());
        assert!(toml::from_str::<HooksConfig>("[[stop]]\ncommand = \"a\"\nbogus = 1\n").is_err());
        let bad: HooksConfig = toml::from_str("[[pre_tool_use]]\nmatcher = \"[\"\ncommand = \"a\"\n").unwrap();
        assert!(bad.compile().unwrap_err().contains("not a glob"));
        let zero: HooksConfig = toml::from_str("[[stop]]\ncommand = \"a\"\ntimeout = 0\n").unwrap();
        assert!(zero.compile().is_err());
    }
}
