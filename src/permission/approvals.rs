//! "Always allow in this project": approvals the person saved, kept in their own data directory
//! keyed by the project (`<data>/permissions/<project key>.toml`), never in the project's
//! `.brute/config.toml`, which may be committed and shared. An approval of a call that ran
//! outside the sandbox is kept as an `allow_unsandboxed` rule, any other as an `allow` rule, so
//! approving a confined call never lets the same call out of the sandbox later.

use std::path::{Path, PathBuf};

use super::rules::{PermissionsConfig, Rule, RuleKind, Rules, Source};

/// Where the saved approvals of the project at `root` live.
pub fn file(data_dir: &Path, root: &Path) -> PathBuf {
    data_dir
        .join("permissions")
        .join(format!("{}.toml", crate::session::project_key(root)))
}

/// The saved approvals as rules (none when the file is missing or unreadable; a broken
/// rule is skipped with a log line rather than failing the run).
pub fn load(path: &Path) -> Rules {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Rules::default();
    };
    let config: PermissionsConfig = match toml::from_str(&text) {
        Ok(config) => config,
        Err(e) => {
            tracing::warn!("ignoring {}: {e}", path.display());
            return Rules::default();
        }
    };
    Rules::from_config(&config, Source::ProjectApprovals).unwrap_or_else(|e| {
        tracing::warn!("ignoring {}: {e}", path.display());
        Rules::default()
    })
}

/// Adds `rule` to the saved approvals at `path`, in the list of `kind` (`allow`, or
/// `allow_unsandboxed` for an approval of a call that ran outside the sandbox).
pub fn save(path: &Path, kind: RuleKind, rule: &Rule) -> std::io::Result<()> {
    let mut config: PermissionsConfig = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| toml::from_str(&text).ok())
        .unwrap_or_default();
    let list = config.list_mut(kind);
    if !list.iter().any(|r| r == rule.as_str()) {
        list.push(rule.as_str().to_owned());
    }
    if let Some(dir) = path.parent() {
        crate::paths::private_dir(dir)?;
    }
    let mut text = String::from("# Approvals you chose to keep for this project (\"always allow\").\n");
    for kind in [RuleKind::Allow, RuleKind::AllowUnsandboxed] {
        let list = config.list_mut(kind);
        if list.is_empty() && kind != RuleKind::Allow {
            continue;
        }
        text.push_str(&format!("{kind} = [\n"));
        for rule in list.iter() {
            text.push_str(&format!("  {},\n", toml_string(rule)));
        }
        text.push_str("]\n");
    }
    crate::paths::replace_private(path, text.as_bytes())
}

fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Tool;

    /// What the shell tool says its rules match on.
    fn shell() -> crate::permission::RuleSubject {
        crate::tool::shell::ShellTool.rule_subject()
    }

    #[test]
    fn saved_approvals_come_back_as_allow_rules() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path(), Path::new("/some/project"));
        assert!(load(&path).is_empty());
        let rule = Rule::exact("shell", shell(), "curl \"https://x/a b\" -o 'out*.txt'").unwrap();
        save(&path, RuleKind::Allow, &rule).unwrap();
        save(&path, RuleKind::Allow, &rule).unwrap();
        let rules = load(&path);
        assert_eq!(rules.allow.len(), 1, "saved once");
        let args = serde_json::json!({"command": "curl \"https://x/a b\" -o 'out*.txt'"});
        assert!(matches!(
            rules.decide("shell", shell(), &args),
            crate::permission::Decision::Allow(_)
        ));
        let other = serde_json::json!({"command": "curl \"https://x/a b\" -o 'out*.txt'; rm -rf ~"});
        assert!(matches!(
            rules.decide("shell", shell(), &other),
            crate::permission::Decision::Default
        ));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn an_approval_of_an_unsandboxed_call_is_kept_in_its_own_list() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path(), Path::new("/some/project"));
        let plain = Rule::exact("shell", shell(), "git status").unwrap();
        let out = Rule::exact("shell", shell(), "git fetch").unwrap();
        save(&path, RuleKind::Allow, &plain).unwrap();
        save(&path, RuleKind::AllowUnsandboxed, &out).unwrap();
        let rules = load(&path);
        let listed = |kind| -> Vec<String> { rules.list(kind).iter().map(|(r, _)| r.to_string()).collect() };
        assert_eq!(listed(RuleKind::Allow), ["shell(git status)"]);
        assert_eq!(listed(RuleKind::AllowUnsandboxed), ["shell(git fetch)"]);
        let unsandboxed = crate::permission::rules::Facts {
            unsandboxed: true,
            ..Default::default()
        };
        let decide = |command: &str| {
            rules.decide_call(
                "shell",
                shell(),
                &serde_json::json!({ "command": command }),
                &unsandboxed,
            )
        };
        assert!(matches!(decide("git status"), crate::permission::Decision::Default));
        assert!(matches!(decide("git fetch"), crate::permission::Decision::Allow(_)));
    }
}
