//! The system prompt: the template in `assets/`, the environment, the project's instructions
//! (AGENTS.md, else CLAUDE.md, capped) and the available skills.

use std::path::Path;
use std::time::SystemTime;

/// The built-in template; `{cwd}`, `{git}`, `{platform}` and `{date}` are filled in.
pub const TEMPLATE: &str = include_str!("../../assets/system_prompt.md");
/// Project instructions longer than this are cut, saying so.
pub const MAX_INSTRUCTIONS_BYTES: usize = 12_000;

/// A skill as listed in the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillSummary {
    pub name: String,
    pub description: String,
}

/// Builds the system prompt for a project root.
pub fn build(template: &str, root: &Path, skills: &[SkillSummary]) -> String {
    let git = if root.ancestors().any(|d| d.join(".git").exists()) {
        "yes"
    } else {
        "no"
    };
    let mut prompt = template
        .replace("{cwd}", &root.display().to_string())
        .replace("{git}", git)
        .replace("{platform}", std::env::consts::OS)
        .replace("{date}", &today());
    if let Some(section) = instructions(root) {
        prompt.push_str(&section);
    }
    if !skills.is_empty() {
        prompt.push_str("\n\n# Skills\nLoad one with the `skill` tool when it fits the task:\n");
        for skill in skills {
            prompt.push_str(&format!("- {}: {}\n", skill.name, skill.description));
        }
    }
    prompt
}

fn instructions(root: &Path) -> Option<String> {
    let (name, text) = ["AGENTS.md", "CLAUDE.md"].iter().find_map(|name| {
        crate::tool::guard::read_text(&root.join(name), 4 * 1024 * 1024)
            .ok()
            .map(|t| (*name, t))
    })?;
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut section = format!("\n\n# Project instructions ({name})\n");
    if text.len() > MAX_INSTRUCTIONS_BYTES {
        let mut cut = MAX_INSTRUCTIONS_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        section.push_str(&text[..cut]);
        section.push_str(&format!(
            "\n[{name} cut at {cut} of {} bytes; read the file for the rest]",
            text.len()
        ));
    } else {
        section.push_str(text);
    }
    Some(section)
}

/// Today's date (UTC) as YYYY-MM-DD, from days since the epoch (civil-from-days).
fn today() -> String {
    let days = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0) as i64;
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_786), (2026, 11, 29));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn instructions_are_capped_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("CLAUDE.md"), "x".repeat(MAX_INSTRUCTIONS_BYTES + 10)).unwrap();
        let prompt = build("base {cwd}", dir.path(), &[]);
        assert!(prompt.contains("# Project instructions (CLAUDE.md)"));
        assert!(prompt.contains(&format!(
            "cut at {MAX_INSTRUCTIONS_BYTES} of {} bytes",
            MAX_INSTRUCTIONS_BYTES + 10
        )));
        std::fs::write(dir.path().join("AGENTS.md"), "use tabs").unwrap();
        let prompt = build(
            "base",
            dir.path(),
            &[SkillSummary {
                name: "pdf".into(),
                description: "PDF work".into(),
            }],
        );
        assert!(prompt.contains("(AGENTS.md)\nuse tabs"));
        assert!(prompt.contains("- pdf: PDF work"));
    }
}
