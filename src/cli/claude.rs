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
    let names: &[&str] = match name {
        "Bash" => &["shell"],
        "Read" => &["read"],
        "Write" => &["write"],
        "Edit" | "MultiEdit" => &["patch", "write"],
        "Grep" | "Glob" | "LS" => &["fs_search"],
        "WebFetch" => &["fetch"],
        "WebSearch" => &["web_search"],
        "TodoWrite" => &["todo_write"],
        "Task" => &["task"],
        _ => return vec![rule.to_owned()],
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
}
