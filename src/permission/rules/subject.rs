//! What a call looks like to the rules: which argument a tool's patterns are matched against
//! ([`argument`]), what the caller found out about it ([`Facts`]), and the argument read as
//! text, a path or a shell line.

use serde_json::Value;

use super::rule::Syntax;
use super::shell::{Split, split_command};

/// The shell tool, whose command lines are split into parts.
pub(super) const SHELL_TOOL: &str = "shell";
/// Tools whose pattern is matched against `file_path`.
pub(super) const FILE_PATH_TOOLS: &[&str] = &["write", "patch", "read"];
/// Tools whose pattern is matched against `path`.
pub(super) const PATH_TOOLS: &[&str] = &["remove", "undo", "fs_search"];
/// Tools whose pattern is matched against `url`.
const URL_TOOLS: &[&str] = &["fetch"];
/// For any other tool, the first of these string arguments (else the whole arguments JSON).
const FALLBACK_KEYS: &[&str] = &["command", "path", "file_path", "url"];

/// The argument a rule's pattern is matched against for this tool: `command` for `shell`,
/// `file_path` for `write`/`patch`/`read`, `path` for `remove`/`undo`/`fs_search`, `url` for
/// `fetch`; for any other tool the first string among `command`, `path`, `file_path`, `url`,
/// else the whole arguments JSON. `None` when a built-in's argument is missing or not a
/// string (then only rules without a pattern can allow the call).
pub fn argument(tool: &str, args: &Value) -> Option<String> {
    let string = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    if tool == SHELL_TOOL {
        string("command")
    } else if FILE_PATH_TOOLS.contains(&tool) {
        string("file_path")
    } else if PATH_TOOLS.contains(&tool) {
        string("path")
    } else if URL_TOOLS.contains(&tool) {
        string("url")
    } else {
        Some(
            FALLBACK_KEYS
                .iter()
                .find_map(|key| string(key))
                .unwrap_or_else(|| args.to_string()),
        )
    }
}

/// The argument of a path tool (`write`, `patch`, `read`, `remove`, `undo`, `fs_search`), whose
/// rules use path patterns; `None` for other tools or when it is missing.
pub fn path_argument(tool: &str, args: &Value) -> Option<String> {
    (Syntax::for_tool(tool) == Syntax::Path)
        .then(|| argument(tool, args))
        .flatten()
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
    pub(super) fn of(tool: &str, args: &Value, facts: &Facts) -> Subject {
        let Some(arg) = argument(tool, args) else {
            return Subject::Missing;
        };
        // The target is about this argument only when it is the path the caller resolved.
        let target = facts.target.as_ref().filter(|t| t.given == arg);
        if tool == SHELL_TOOL {
            Subject::Shell {
                split: split_command(&arg),
                line: arg.trim().to_owned(),
            }
        } else if Syntax::for_tool(tool) == Syntax::Path || target.is_some() {
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
