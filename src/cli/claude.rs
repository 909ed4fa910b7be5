//! Claude Code's spellings of permission rules (`--allowedTools "Bash(git log:*)" Edit`), read
//! into brute's (`shell(git log*)`, `patch`, `write`), so the flags its SDK passes mean what
//! they meant there.

use crate::permission::PermissionsConfig;

/// The command-line rules: `allowed` become allow rules, `disallowed` deny rules. Each value
/// may hold several rules, separated by commas or spaces outside parentheses. A rule brute
/// cannot read as Claude Code meant it is refused, never kept as one that matches nothing (a
/// deny that silently denies nothing).
pub fn rules(allowed: &[String], disallowed: &[String]) -> Result<PermissionsConfig, String> {
    let read = |values: &[String]| -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for rule in values.iter().flat_map(|v| split(v)) {
            out.extend(translate(&rule)?);
        }
        Ok(out)
    };
    Ok(PermissionsConfig {
        allow: read(allowed)?,
        deny: read(disallowed)?,
        ..PermissionsConfig::default()
    })
}

/// A name that reads as one of Claude Code's tools (capitalized) but is not one brute maps.
fn unknown_claude_tool(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase()) && tool_names(name).is_none()
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
/// `mcp__github__.*`) as brute's glob on its own names; `Ok(None)` matches every tool. A
/// pattern of another shape (anchors, groups, classes, a tool brute has no counterpart of) is
/// refused: a guard whose matcher matched nothing would look registered and never run.
pub fn hook_matcher(pattern: Option<&str>) -> Result<Option<String>, String> {
    let pattern = pattern.map(str::trim).unwrap_or_default();
    if pattern.is_empty() || pattern == "*" || pattern == ".*" {
        return Ok(None);
    }
    let mut globs: Vec<String> = Vec::new();
    for part in pattern.split('|').map(str::trim) {
        let names = match tool_names(part) {
            Some(names) => names.iter().map(|n| (*n).to_owned()).collect(),
            None => {
                let glob = part.replace(".*", "*");
                let plain = glob
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'*');
                if !plain || glob.is_empty() || unknown_claude_tool(&glob) {
                    return Err(format!(
                        "the hook matcher `{pattern}` is not one brute can read (tool names joined by `|`, `.*` for any)"
                    ));
                }
                vec![glob]
            }
        };
        for name in names {
            if !globs.contains(&name) {
                globs.push(name);
            }
        }
    }
    Ok(Some(globs.join("|")))
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
fn translate(rule: &str) -> Result<Vec<String>, String> {
    let (name, pattern) = match rule.split_once('(') {
        Some((name, rest)) => (name, Some(rest.strip_suffix(')').unwrap_or(rest))),
        None => (rule, None),
    };
    if unknown_claude_tool(name) || pattern.is_some_and(|p| p.starts_with("domain:")) {
        return Err(format!(
            "the rule `{rule}` has no counterpart in brute (write it with brute's tool names: `brute permissions` lists them)"
        ));
    }
    let Some(names) = tool_names(name) else {
        return Ok(vec![rule.to_owned()]);
    };
    Ok(names
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
        .collect())
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
        )
        .unwrap();
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
        // A deny brute cannot read as meant is refused, not kept as one that denies nothing.
        assert!(super::rules(&[], &["WebFetch(domain:evil.example)".to_owned()]).is_err());
        assert!(super::rules(&[], &["NotebookEdit".to_owned()]).is_err());
    }

    #[test]
    fn claude_codes_hook_matchers_read_as_brutes_globs() {
        let read = |p| hook_matcher(p).unwrap();
        assert_eq!(read(Some("Bash")).as_deref(), Some("shell"));
        assert_eq!(read(Some("Write|Edit")).as_deref(), Some("write|patch"));
        assert_eq!(read(Some("mcp__gh__.*")).as_deref(), Some("mcp__gh__*"));
        assert_eq!(read(Some(".*")), None);
        assert_eq!(read(None), None);
        // Shapes brute cannot read are refused, never kept as a glob that matches nothing.
        for pattern in ["^Bash$", "(Bash|Write)", "[Ee]dit", "NotebookEdit", "Bash.+"] {
            assert!(hook_matcher(Some(pattern)).is_err(), "{pattern}");
        }
    }
}
