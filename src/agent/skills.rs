//! Skill discovery: `.brute/skills/**/SKILL.md` in the project and `skills/` in the user's
//! config directory. A skill's front matter gives `name` (default: its folder's name) and a
//! required `description`.

use std::path::{Path, PathBuf};

use super::prompt::SkillSummary;

/// A discovered skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The SKILL.md file.
    pub path: PathBuf,
}

impl Skill {
    pub fn summary(&self) -> SkillSummary {
        SkillSummary {
            name: self.name.clone(),
            description: self.description.clone(),
        }
    }
}

/// Finds skills; project skills win over user skills of the same name. Skills without a
/// description are skipped (they could not be listed usefully).
pub fn discover(project_root: &Path, user_skills_dir: Option<&Path>) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    let dirs = [
        Some(project_root.join(".brute").join("skills")),
        user_skills_dir.map(Path::to_path_buf),
    ];
    for dir in dirs.into_iter().flatten() {
        if !dir.is_dir() {
            continue;
        }
        let walker = ignore::WalkBuilder::new(&dir)
            .standard_filters(false)
            .max_depth(Some(6))
            .build();
        let mut found: Vec<PathBuf> = walker
            .flatten()
            .filter(|e| e.file_name() == "SKILL.md")
            .map(|e| e.into_path())
            .collect();
        found.sort();
        for path in found {
            if let Some(skill) = parse(&path)
                && !skills.iter().any(|s| s.name == skill.name)
            {
                skills.push(skill);
            }
        }
    }
    skills
}

/// Splits `---` front matter from the body; returns (front matter, body).
pub fn split_front_matter(text: &str) -> (Option<&str>, &str) {
    let Some(rest) = text.strip_prefix("---") else {
        return (None, text);
    };
    let rest = rest.trim_start_matches(['\r', '\n']);
    match rest.find("\n---") {
        Some(end) => {
            let body = &rest[end + 4..];
            (Some(&rest[..end]), body.trim_start_matches(['-', '\r', '\n']))
        }
        None => (None, text),
    }
}

fn field(front: &str, key: &str) -> Option<String> {
    front.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().trim_matches(['"', '\'']).to_owned())
    })
}

fn parse(path: &Path) -> Option<Skill> {
    let text = crate::tool::guard::read_text(path, 1024 * 1024).ok()?;
    let (front, _) = split_front_matter(&text);
    let front = front?;
    let description = field(front, "description").filter(|d| !d.is_empty())?;
    let folder = path.parent()?.file_name()?.to_string_lossy().into_owned();
    let name = field(front, "name").filter(|n| !n.is_empty()).unwrap_or(folder);
    Some(Skill {
        name,
        description,
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_project_skills_with_front_matter() {
        let dir = tempfile::tempdir().unwrap();
        let skill_dir = dir.path().join(".brute/skills/deep/pdf-tools");
        std::fs::create_dir_all(&skill_dir).unwrap();
        std::fs::write(
            skill_dir.join("SKILL.md"),
            "---\ndescription: Work with PDFs\n---\nBody",
        )
        .unwrap();
        let other = dir.path().join(".brute/skills/nodesc");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("SKILL.md"), "no front matter").unwrap();
        let skills = discover(dir.path(), None);
        assert_eq!(skills.len(), 1);
        assert_eq!(skills[0].name, "pdf-tools");
        assert_eq!(skills[0].description, "Work with PDFs");
        assert_eq!(split_front_matter("---\na: b\n---\nBody").1, "Body");
    }
}
