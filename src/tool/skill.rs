//! `skill`: loads a skill's instructions on demand.

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{Params, Tool, ToolContext, ToolError, ToolOutput, str_arg};
use crate::tool::skills::split_front_matter;

/// The built-in `skill` tool.
pub struct SkillTool;

impl Tool for SkillTool {
    fn name(&self) -> &str {
        "skill"
    }

    /// It changes nothing outside the session: offered in plan mode.
    fn reach(&self) -> crate::tool::Reach {
        crate::tool::Reach::Reads
    }

    fn description(&self) -> &str {
        "Load a skill listed in the system prompt: returns its instructions and the files in its folder."
    }

    fn parameters(&self) -> Value {
        Params::new().string("name", "The skill's name", true).build()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let name = str_arg(&args, "name")?;
            let skills = &ctx.agent.skills;
            let Some(skill) = skills.iter().find(|s| s.name == name) else {
                let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
                let available = if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                };
                return Err(ToolError::not_found(format!(
                    "no skill named `{name}`. Available skills: {available}"
                )));
            };
            let text = crate::files::read_text(&skill.path, 1024 * 1024)
                .map_err(|e| ToolError::io(format!("cannot read {}", skill.path.display()), &e))?;
            let (_, body) = split_front_matter(&text);
            let folder = skill.path.parent().unwrap_or(&skill.path);
            let mut files: Vec<String> = ignore::WalkBuilder::new(folder)
                .standard_filters(false)
                .max_depth(Some(4))
                .build()
                .flatten()
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()) && e.path() != skill.path)
                .filter_map(|e| e.path().strip_prefix(folder).ok().map(|p| p.display().to_string()))
                .collect();
            files.sort();
            files.truncate(200);
            let mut out = format!(
                "# Skill: {}\nFolder: {}\n\n{}\n",
                skill.name,
                folder.display(),
                body.trim()
            );
            if !files.is_empty() {
                out.push_str("\nFiles in the skill's folder (read them as needed):\n");
                for file in files {
                    out.push_str(&format!("- {file}\n"));
                }
            }
            Ok(ToolOutput::text(out))
        })
    }
}
