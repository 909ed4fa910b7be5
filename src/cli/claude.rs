//! Claude Code's spellings of permission rules (`--allowedTools "Bash(git log:*)" Edit`), read
//! into brute's (`shell(git log*)`, `patch`, `write`), so the flags its SDK passes mean what
//! they meant there.

use crate::permission::PermissionsConfig;

/// The command-line rules: `allowed` become allow rules, `disallowed` deny rules. Each value
/// may hold several rules, separated by commas or spaces outside parentheses.
pub fn rules(allowed: &[String], disallowed: &[String]) -> PermissionsConfig {
    let read = |values: &[String]| {
        values
            .iter()
            .flat_map(|v| split(v))
            .flat_map(|r| translate(&r))
            .collect()
    };
    PermissionsConfig {
        allow: read(allowed),
        deny: read(disallowed),
        ..PermissionsConfig::default()
    }
}

/// brute's tools for one of Claude Code's tool names (`Edit` covers both editing tools).
pub fn tool_names(claude: &str) -> Option<&'static [&'static str]> {
    Some(match claude {
        "Bash" => &["shell"],
        "Read" => &["read"],
        "Write" => &["write"],
        "Edit" | "MultiEdit" => &["patch", "write"],
        "Grep" | "Glob" | "LS" => &["fs_search"],
        "WebFetch" => &["fetch"],
        "WebSearch" => &["web_search"],
        "TodoWrite" => &["todo_write"],
        "Task" => &["task"],
        _ => return None,
    })
}

/// A hook matcher of Claude Code's (a pattern on its tool names: `Bash`, `Write|Edit`, `.*`,
/// `mcp__github__.*`) as brute's glob on its own names; `None` matches every tool.
pub fn hook_matcher(pattern: Option<&str>) -> Option<String> {
    let pattern = pattern.map(str::trim).unwrap_or_default();
    if pattern.is_empty() || pattern == "*" || pattern == ".*" {
        return None;
    }
    let mut globs: Vec<String> = Vec::new();
    for part in pattern.split('|').map(str::trim) {
        let names = match tool_names(part) {
            Some(names) => names.iter().map(|n| (*n).to_owned()).collect(),
            None => vec![part.replace(".*", "*")],
        };
        for name in names {
            if !globs.contains(&name) {
                globs.push(name);
            }
        }
    }
    Some(globs.join("|"))
}

/// `"Read,Bash(git log:*) Edit"` as `["Read", "Bash(git log:*)", "Edit"]`.
fn split(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in value.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' | ' ' if depth == 0 => {
                if !current.trim().is_empty() {
                    out.push(current.trim().to_owned());
                }
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_owned());
    }
    out
}

/// One rule in brute's words: Claude Code's tool names become brute's (`Edit` covers both of
/// brute's editing tools), and its `:*` prefix pattern becomes `*`. brute's own names and MCP
/// tools' (`mcp__server__tool`, the same in both) pass as they are.
fn translate(rule: &str) -> Vec<String> {
    let (name, pattern) = match rule.split_once('(') {
        Some((name, rest)) => (name, Some(rest.strip_suffix(')').unwrap_or(rest))),
        None => (rule, None),
    };
    let Some(names) = tool_names(name) else {
        return vec![rule.to_owned()];
    };
    names
        .iter()
        .map(|brute| match pattern {
            Some(pattern) => {
                let pattern = pattern
                    .strip_suffix(":*")
                    .map_or(pattern.to_owned(), |p| format!("{p}*"));
                format!("{brute}({pattern})")
            }
            None => (*brute).to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_codes_rules_read_as_brutes() {
        let rules = rules(
            &[
                "Read,Bash(git log:*)".to_owned(),
                "Edit(src/**) mcp__gh__issues".to_owned(),
            ],
            &["Bash(rm -rf /)".to_owned(), "shell(curl*)".to_owned()],
        );
        assert_eq!(
            rules.allow,
            [
                "read",
                "shell(git log*)",
                "patch(src/**)",
                "write(src/**)",
                "mcp__gh__issues"
            ]
        );
        assert_eq!(rules.deny, ["shell(rm -rf /)", "shell(curl*)"]);
    }

    #[test]
    fn claude_codes_hook_matchers_read_as_brutes_globs() {
        assert_eq!(hook_matcher(Some("Bash")).as_deref(), Some("shell"));
        assert_eq!(hook_matcher(Some("Write|Edit")).as_deref(), Some("write|patch"));
        assert_eq!(hook_matcher(Some("mcp__gh__.*")).as_deref(), Some("mcp__gh__*"));
        assert_eq!(hook_matcher(Some(".*")), None);
        assert_eq!(hook_matcher(None), None);
    }
}
