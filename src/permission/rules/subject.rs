//! What a call looks like to the rules: which argument a tool's patterns are matched against
//! and how (the tool's [`RuleSubject`]), what the caller found out about it ([`Facts`]), and
//! the argument read as text, a path or a shell line.

use serde_json::Value;

use super::rule::Syntax;
use super::shell::{Split, split_command};

/// For a tool that says nothing of its rules, the first of these string arguments (else the
/// whole arguments JSON).
const FALLBACK_KEYS: &[&str] = &["command", "path", "file_path", "url"];

/// What a tool's `tool(pattern)` rules are matched against. Each tool says it of itself
/// (`Tool::rule_subject`, a layer up), so the rules keep no list of tool names: `shell` is a
/// command line in `command`; `write`, `patch` and `read` a path in `file_path`; `remove`,
/// `undo` and `fs_search` a path in `path`; `fetch` text in `url`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RuleSubject {
    /// A command line in this argument, split into its parts (text patterns).
    Command(&'static str),
    /// A path in this argument (path patterns).
    Path(&'static str),
    /// Text in this argument (text patterns).
    Text(&'static str),
    /// A tool that says nothing (command, MCP and library tools): the first string among
    /// `command`, `path`, `file_path`, `url`, else the whole arguments JSON, as text.
    #[default]
    Guess,
}

impl RuleSubject {
    /// How the tool's patterns are read.
    pub(super) fn syntax(self) -> Syntax {
        match self {
            RuleSubject::Path(_) => Syntax::Path,
            _ => Syntax::Text,
        }
    }
}

/// The argument a rule's pattern is matched against for a tool with this subject. `None` when
/// the argument the tool names is missing or not a string (then only rules without a pattern
/// can allow the call).
pub fn argument(subject: RuleSubject, args: &Value) -> Option<String> {
    let string = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    match subject {
        RuleSubject::Command(key) | RuleSubject::Path(key) | RuleSubject::Text(key) => string(key),
        RuleSubject::Guess => Some(
            FALLBACK_KEYS
                .iter()
                .find_map(|key| string(key))
                .unwrap_or_else(|| args.to_string()),
        ),
    }
}

/// The path argument of a tool whose rules use path patterns; `None` for other tools or when
/// it is missing.
pub fn path_argument(subject: RuleSubject, args: &Value) -> Option<String> {
    match subject {
        RuleSubject::Path(_) => argument(subject, args),
        _ => None,
    }
}

/// Where a call's path really leads, as the caller found it on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The path as the call gives it (the rules' argument when they are about it).
    pub given: String,
    /// The path made absolute, `..` folded and symlinks followed.
    pub absolute: String,
    /// The same, relative to the project root when it lies inside it (`.` for the root).
    pub relative: Option<String>,
}

/// What the caller knows about a call beyond its arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Where the path the call names really leads: path rules must match it as well (allow)
    /// or may match it instead (deny, ask).
    pub target: Option<Target>,
    /// The call goes beyond the sandbox (it would run commands unconfined, or change a path
    /// no allow rule may allow): only `allow_unsandboxed` rules allow it.
    pub unsandboxed: bool,
}

/// What a call's argument looks like to the rules.
#[derive(Debug)]
pub(super) enum Subject {
    /// A built-in without its argument.
    Missing,
    Text(String),
    Path {
        raw: String,
        normalized: String,
        /// Has a `..` component: no allow pattern applies.
        climbs: bool,
        /// Where it really leads (relative and absolute forms), when the caller found out:
        /// an allow pattern must match one of them too.
        resolved: Vec<String>,
    },
    Shell {
        /// The whole line, trimmed.
        line: String,
        split: Split,
    },
}

impl Subject {
    pub(super) fn of(subject: RuleSubject, args: &Value, facts: &Facts) -> Subject {
        let Some(arg) = argument(subject, args) else {
            return Subject::Missing;
        };
        // The target is about this argument only when it is the path the caller resolved.
        let target = facts.target.as_ref().filter(|t| t.given == arg);
        if let RuleSubject::Command(_) = subject {
            Subject::Shell {
                split: split_command(&arg),
                line: arg.trim().to_owned(),
            }
        } else if subject.syntax() == Syntax::Path || target.is_some() {
            Subject::Path {
                normalized: normalize_path(&arg),
                climbs: arg.split('/').any(|c| c == ".."),
                resolved: target
                    .map(|t| t.relative.iter().chain([&t.absolute]).cloned().collect())
                    .unwrap_or_default(),
                raw: arg,
            }
        } else {
            Subject::Text(arg)
        }
    }
}

/// Removes `.` components and repeated slashes and resolves `..` lexically (a leading `..`
/// stays); `""` and `"."` become `"."`.
pub(super) fn normalize_path(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if absolute => {}
                _ => parts.push(".."),
            },
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}
