//! The system prompt: the template in `assets/`, the environment, the project's instructions
//! (AGENTS.md files, else CLAUDE.md, capped; see [`super::instructions`]) and the available
//! skills.

use std::path::Path;
use std::time::SystemTime;

use crate::config::project::Workspace;
pub use crate::tool::skills::SkillSummary;

/// The built-in template; `{cwd}`, `{root}`, `{git}`, `{platform}` and `{date}` are filled in.
pub const TEMPLATE: &str = include_str!("../../assets/system_prompt.md");

/// Builds the system prompt for a workspace: the template, the project instructions (the
/// global `AGENTS.md` in `global_dir`, then the project's; see [`super::instructions`]) and the
/// skills.
pub fn build(template: &str, place: &Workspace, global_dir: Option<&Path>, skills: &[SkillSummary]) -> String {
    let git = if place.cwd.ancestors().any(|d| d.join(".git").exists()) {
        "yes"
    } else {
        "no"
    };
    let mut prompt = template
        .replace("{cwd}", &place.cwd.display().to_string())
        .replace("{root}", &place.root.display().to_string())
        .replace("{git}", git)
        .replace("{platform}", std::env::consts::OS)
        .replace("{date}", &today());
    if place.root != place.cwd && !template.contains("{root}") {
        prompt.push_str(&format!(
            "\nProject root: {} (the workspace; relative paths and commands start in the working directory).",
            place.root.display()
        ));
    }
    if let Some(section) = super::instructions::section(global_dir, place, super::instructions::MAX_BYTES) {
        prompt.push_str(&section);
    }
    if !skills.is_empty() {
        prompt.push_str("\n\n# Skills\nLoad one with the `skill` tool when it fits the task:\n");
        for skill in skills {
            // A literal (`|`) description keeps its lines, indented under its item.
            prompt.push_str(&format!(
                "- {}: {}\n",
                skill.name,
                skill.description.replace('\n', "\n  ")
            ));
        }
    }
    prompt
}

/// Today's date (UTC) as YYYY-MM-DD, from days since the epoch (civil-from-days).
fn today() -> String {
    let days = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0) as i64;
    let (y, m, d) = crate::dates::civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_has_the_place_instructions_and_skills() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "use tabs").unwrap();
        let place = Workspace {
            root: dir.path().to_path_buf(),
            cwd: dir.path().join("sub"),
        };
        let skills = [SkillSummary {
            name: "pdf".into(),
            description: "PDF work".into(),
        }];
        let prompt = build("base {cwd}", &place, None, &skills);
        assert!(prompt.starts_with(&format!("base {}", place.cwd.display())), "{prompt}");
        assert!(prompt.contains(&format!("Project root: {}", place.root.display())));
        assert!(prompt.contains("# Project instructions\n"));
        assert!(prompt.contains("## AGENTS.md\nuse tabs"));
        assert!(prompt.contains("- pdf: PDF work"));
        let prompt = build("base", &Workspace::at(dir.path()), None, &[]);
        assert!(!prompt.contains("Project root:"));
    }
}
