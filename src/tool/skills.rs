//! Skill discovery: `SKILL.md` files under the skill directories ([`dirs`]) — the project's
//! `.brute/skills/`, `.agents/skills/` and `.claude/skills/`, then the user's `skills/` in the
//! brute config directory and `~/.agents/skills/`. Project directories come first and the first
//! skill of a name wins, so a project can pin its own version of a skill the person also has.
//!
//! A skill's front matter is YAML (as Claude Code and Codex write it: folded `>` and literal
//! `|` descriptions, quoted strings, extra keys): `name` (default: its folder's name) and a
//! required `description`. A SKILL.md that cannot be used — malformed YAML, no front matter, no
//! description, front matter that [`check_front_matter`] refuses — is skipped with a warning
//! naming the file. Skills add text to the prompt, and
//! the executables in their `scripts/` become tools that run confined to the capabilities the
//! front matter declares, under the person's ceiling ([`crate::tool::skill_script`]); so
//! project skills are read in untrusted projects too, as `AGENTS.md` is; every read is bounded.

use std::path::{Path, PathBuf};

/// A skill as listed in the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillSummary {
    pub name: String,
    pub description: String,
}

/// The largest SKILL.md read.
pub const MAX_SKILL_BYTES: u64 = 1024 * 1024;

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

/// Why a SKILL.md was skipped.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{} has no `---` front matter", path.display())]
    NoFrontMatter { path: PathBuf },
    #[error("{}: malformed YAML front matter: {message}", path.display())]
    Yaml { path: PathBuf, message: String },
    #[error("{} has no description in its front matter", path.display())]
    NoDescription { path: PathBuf },
    #[error("{}: front matter refused: {reason}", path.display())]
    Refused { path: PathBuf, reason: String },
}

/// What discovery found: the skills, and a warning per SKILL.md it had to skip.
#[derive(Debug, Default)]
pub struct Found {
    pub skills: Vec<Skill>,
    pub warnings: Vec<String>,
}

/// The skill directories in order of precedence: the project's (`.brute/skills`,
/// `.agents/skills`, `.claude/skills` under `project_root`), then the user's (`skills` in the
/// brute config directory, `.agents/skills` in `home`). A directory listed twice (brute started
/// in home) is kept once.
pub fn dirs(project_root: &Path, user_config_dir: Option<&Path>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = [".brute", ".agents", ".claude"]
        .iter()
        .map(|d| project_root.join(d).join("skills"))
        .collect();
    dirs.extend(user_config_dir.map(|d| d.join("skills")));
    dirs.extend(home.map(|h| h.join(".agents").join("skills")));
    let mut seen = Vec::new();
    dirs.retain(|d| {
        let new = !seen.contains(d);
        seen.push(d.clone());
        new
    });
    dirs
}

/// Finds the skills in `dirs` (see [`dirs`]); the first skill of a name wins.
pub fn discover(dirs: &[PathBuf]) -> Found {
    let mut found = Found::default();
    for dir in dirs {
        if !dir.is_dir() {
            continue;
        }
        let walker = ignore::WalkBuilder::new(dir)
            .standard_filters(false)
            .max_depth(Some(6))
            .build();
        let mut files: Vec<PathBuf> = walker
            .flatten()
            .filter(|e| e.file_name() == "SKILL.md")
            .map(|e| e.into_path())
            .collect();
        files.sort();
        for path in files {
            match parse(&path) {
                Ok(skill) => {
                    if !found.skills.iter().any(|s| s.name == skill.name) {
                        found.skills.push(skill);
                    }
                }
                Err(e) => {
                    tracing::warn!("skill skipped: {e}");
                    found.warnings.push(format!("skill skipped: {e}"));
                }
            }
        }
    }
    found
}

/// Splits `---` front matter from the body; returns (front matter, body). The front matter
/// runs from a first line `---` to the next line that is `---` (or YAML's `...`).
pub fn split_front_matter(text: &str) -> (Option<&str>, &str) {
    let unmarked = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = unmarked.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return (None, text);
    }
    let start = unmarked.find('\n').map_or(unmarked.len(), |i| i + 1);
    let mut at = start;
    for line in lines {
        if matches!(line.trim_end(), "---" | "...") {
            let body = &unmarked[at + line.len()..];
            return (Some(&unmarked[start..at]), body.trim_start_matches(['\r', '\n']));
        }
        at += line.len();
    }
    (None, text)
}

/// The front matter keys brute uses; others (license, allowed-tools, metadata…) are allowed.
#[derive(Debug, Default, serde::Deserialize)]
struct FrontMatter {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

/// The largest front matter handed to the YAML parser.
pub const MAX_FRONT_MATTER_BYTES: usize = 64 * 1024;
/// The deepest nesting of flow collections (`[`, `{`) or of indentation levels allowed.
pub const MAX_FRONT_MATTER_DEPTH: usize = 64;
/// The most flow collection openings (`[`, `{`) counted anywhere, quoted or not: a backstop
/// the depth count cannot be talked out of by quotes the scan misreads.
pub const MAX_FRONT_MATTER_FLOWS: usize = 1024;
/// The most anchors (`&a`) and aliases (`*a`) allowed (alias bombs).
pub const MAX_FRONT_MATTER_ANCHORS: usize = 100;

/// A cheap linear scan of front matter before the YAML parser sees it, whose time grows with
/// the square of nesting (100,000 nested `[` take half a minute) and which files from an
/// untrusted project reach at every start. Refuses front matter over
/// [`MAX_FRONT_MATTER_BYTES`], nested deeper than [`MAX_FRONT_MATTER_DEPTH`] (flow
/// collections outside quotes and comments, or indentation levels), with more than
/// [`MAX_FRONT_MATTER_FLOWS`] flow openings in all, or with more than
/// [`MAX_FRONT_MATTER_ANCHORS`] anchors and aliases. The error says why.
pub fn check_front_matter(yaml: &str) -> Result<(), String> {
    if yaml.len() > MAX_FRONT_MATTER_BYTES {
        return Err(format!(
            "{} bytes, more than the {MAX_FRONT_MATTER_BYTES} allowed",
            yaml.len()
        ));
    }
    let deep = || format!("nested more than {MAX_FRONT_MATTER_DEPTH} levels deep");
    // Indentation levels (block collections).
    let mut indents: Vec<usize> = Vec::new();
    for line in yaml.lines() {
        let rest = line.trim_start_matches([' ', '\t']);
        if rest.is_empty() || rest.starts_with('#') {
            continue;
        }
        let indent = line.len() - rest.len();
        while indents.last().is_some_and(|&top| top >= indent) {
            indents.pop();
        }
        indents.push(indent);
        if indents.len() > MAX_FRONT_MATTER_DEPTH {
            return Err(deep());
        }
    }
    // Flow collections, anchors and aliases.
    let bytes = yaml.as_bytes();
    let total_flows = bytes.iter().filter(|&&b| b == b'[' || b == b'{').count();
    if total_flows > MAX_FRONT_MATTER_FLOWS {
        return Err(format!(
            "{total_flows} flow collections, more than the {MAX_FRONT_MATTER_FLOWS} allowed"
        ));
    }
    // A node starts after a line start, blank or indicator: where anchors, aliases and
    // quoted scalars can begin. Counted outside quotes too, so that misreading cannot hide one.
    let node_start = |i: usize| {
        i == 0
            || matches!(
                bytes[i - 1],
                b' ' | b'\t' | b'\n' | b'\r' | b'[' | b'{' | b',' | b':' | b'-' | b'?'
            )
    };
    let anchors = (0..bytes.len())
        .filter(|&i| {
            matches!(bytes[i], b'&' | b'*')
                && node_start(i)
                && bytes.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace())
        })
        .count();
    if anchors > MAX_FRONT_MATTER_ANCHORS {
        return Err(format!(
            "{anchors} anchors and aliases, more than the {MAX_FRONT_MATTER_ANCHORS} allowed"
        ));
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'#' if node_start(i) && (i == 0 || bytes[i - 1].is_ascii_whitespace()) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            quote @ (b'\'' | b'"') if node_start(i) => {
                i += 1;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' if quote == b'"' => i += 1,
                        b'\'' if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 1,
                        b if b == quote => break,
                        _ => {}
                    }
                    i += 1;
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_FRONT_MATTER_DEPTH {
                    return Err(deep());
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// Parses YAML front matter text (an empty document is no keys).
fn front_matter(yaml: &str) -> Result<FrontMatter, String> {
    if yaml.trim().is_empty() {
        return Ok(FrontMatter::default());
    }
    serde_norway::from_str::<Option<FrontMatter>>(yaml)
        .map(Option::unwrap_or_default)
        .map_err(|e| e.to_string())
}

/// Reads one SKILL.md.
pub fn parse(path: &Path) -> Result<Skill, SkillError> {
    let text = crate::files::read_text(path, MAX_SKILL_BYTES).map_err(|source| SkillError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let (front, _) = split_front_matter(&text);
    let front = front.ok_or_else(|| SkillError::NoFrontMatter {
        path: path.to_path_buf(),
    })?;
    check_front_matter(front).map_err(|reason| SkillError::Refused {
        path: path.to_path_buf(),
        reason,
    })?;
    let front = front_matter(front).map_err(|message| SkillError::Yaml {
        path: path.to_path_buf(),
        message,
    })?;
    let description = front
        .description
        .map(|d| d.trim().to_owned())
        .filter(|d| !d.is_empty())
        .ok_or_else(|| SkillError::NoDescription {
            path: path.to_path_buf(),
        })?;
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = front
        .name
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or(folder);
    Ok(Skill {
        name,
        description,
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(root: &Path, dir: &str, text: &str) -> PathBuf {
        let dir = root.join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), text).unwrap();
        dir.join("SKILL.md")
    }

    #[test]
    fn finds_project_skills_with_front_matter() {
        let dir = tempfile::tempdir().unwrap();
        skill(
            dir.path(),
            ".brute/skills/deep/pdf-tools",
            "---\ndescription: Work with PDFs\n---\nBody",
        );
        skill(dir.path(), ".brute/skills/nodesc", "no front matter");
        let found = discover(&dirs(dir.path(), None, None));
        assert_eq!(found.skills.len(), 1);
        assert_eq!(found.skills[0].name, "pdf-tools");
        assert_eq!(found.skills[0].description, "Work with PDFs");
        assert_eq!(found.warnings.len(), 1);
        assert!(found.warnings[0].contains("nodesc/SKILL.md has no `---` front matter"));
        assert_eq!(split_front_matter("---\na: b\n---\nBody"), (Some("a: b\n"), "Body"));
        assert_eq!(
            split_front_matter("---\r\na: b\r\n---\r\n\r\nBody"),
            (Some("a: b\r\n"), "Body")
        );
        assert_eq!(split_front_matter("---\n---\nBody"), (Some(""), "Body"));
        assert_eq!(split_front_matter("--- not\n---\n").0, None);
        assert_eq!(split_front_matter("---\na: b\n----\n").0, None);
    }

    #[test]
    fn yaml_folded_literal_and_quoted_descriptions() {
        let dir = tempfile::tempdir().unwrap();
        let folded = skill(
            dir.path(),
            "a",
            "---\nname: fold\ndescription: >\n  Folded lines\n  join with spaces.\nlicense: MIT\nmetadata:\n  version: 2\n---\nBody",
        );
        assert_eq!(parse(&folded).unwrap().description, "Folded lines join with spaces.");
        let literal = skill(dir.path(), "b", "---\ndescription: |\n  Line one.\n  Line two.\n---\n");
        assert_eq!(parse(&literal).unwrap().description, "Line one.\nLine two.");
        let quoted = skill(
            dir.path(),
            "c",
            "---\nname: \"quoted: name\"\ndescription: 'It''s: fine'\n---\n",
        );
        let parsed = parse(&quoted).unwrap();
        assert_eq!(
            (parsed.name.as_str(), parsed.description.as_str()),
            ("quoted: name", "It's: fine")
        );
    }

    #[test]
    fn deeply_nested_front_matter_is_refused_with_a_notice() {
        let dir = tempfile::tempdir().unwrap();
        for nest in ["[", "{a: "] {
            let deep = format!("---\ndescription: x\nbomb: {}\n---\nBody", nest.repeat(100_000));
            // Under the size cap too, so the depth count is what refuses it.
            let small = format!("---\ndescription: x\nbomb: {}\n---\nBody", nest.repeat(200));
            for (i, text) in [deep, small].iter().enumerate() {
                let root = dir.path().join(format!("{}{i}", nest.len()));
                skill(&root, ".brute/skills/deep", text);
                let found = discover(&[root.join(".brute/skills")]);
                assert!(found.skills.is_empty());
                assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
                let warning = &found.warnings[0];
                assert!(warning.starts_with("skill skipped: "), "{warning}");
                assert!(warning.contains("deep/SKILL.md: front matter refused: "), "{warning}");
                let why = if i == 0 {
                    "bytes, more than"
                } else {
                    "nested more than 64 levels"
                };
                assert!(warning.contains(why), "{warning}");
            }
        }
        // Quotes cannot hide openings from the backstop count.
        let quoted = format!("description: It 's\nbomb: {}", "[".repeat(2000));
        assert!(
            check_front_matter(&quoted)
                .unwrap_err()
                .contains("2000 flow collections")
        );
        // Nor closers inside quotes undo the depth.
        let closers = format!("a: {}", "[ \"]]]\", ".repeat(70));
        assert!(check_front_matter(&closers).unwrap_err().contains("nested more than"));
        let indented: String = (0..70).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
        assert!(check_front_matter(&indented).unwrap_err().contains("nested more than"));
    }

    #[test]
    fn alias_bomb_front_matter_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::from(
            "---\ndescription: laughs\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        let mut prev = 'a';
        for name in 'b'..='k' {
            let refs = vec![format!("*{prev}"); 10].join(",");
            text.push_str(&format!("{name}: &{name} [{refs}]\n"));
            prev = name;
        }
        text.push_str("---\nBody");
        let path = skill(dir.path(), "laughs", &text);
        let err = parse(&path).unwrap_err();
        assert!(matches!(err, SkillError::Refused { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("anchors and aliases, more than the 100 allowed"),
            "{err}"
        );
        assert!(err.to_string().starts_with(&path.display().to_string()), "{err}");
    }

    #[test]
    fn ordinary_front_matter_passes_the_scan() {
        let dir = tempfile::tempdir().unwrap();
        let text = "---\nname: fine\ndescription: >\n  Uses **bold**, A & B, [links] and {braces}\n  # not a comment\nmetadata:\n  tags: [a, {b: [c]}]\n  anchor: &x 1\n  again: *x\n---\nBody";
        let path = skill(dir.path(), "fine", text);
        let skill = parse(&path).unwrap();
        assert_eq!(skill.name, "fine");
        assert!(skill.description.starts_with("Uses **bold**"));
    }

    #[test]
    fn malformed_yaml_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let bad = skill(dir.path(), "bad", "---\ndescription: [unclosed\nname: x\n---\n");
        let err = parse(&bad).unwrap_err();
        assert!(matches!(err, SkillError::Yaml { .. }), "{err}");
        assert!(err.to_string().starts_with(&bad.display().to_string()), "{err}");
        let empty = skill(dir.path(), "empty", "---\n---\nBody");
        assert!(matches!(parse(&empty), Err(SkillError::NoDescription { .. })));
        let list = skill(dir.path(), "list", "---\n- a\n- b\n---\n");
        assert!(matches!(parse(&list), Err(SkillError::Yaml { .. })));
    }

    #[test]
    fn project_dirs_win_over_user_dirs_first_name_wins() {
        let dir = tempfile::tempdir().unwrap();
        let (root, config, home) = (dir.path().join("p"), dir.path().join("cfg"), dir.path().join("home"));
        skill(&root, ".claude/skills/x", "---\ndescription: from claude\n---\n");
        skill(&root, ".agents/skills/x", "---\ndescription: from agents\n---\n");
        skill(&home, ".agents/skills/x", "---\ndescription: from home\n---\n");
        skill(&home, ".agents/skills/y", "---\ndescription: only home\n---\n");
        skill(&config, "skills/z", "---\ndescription: only config\n---\n");
        let found = discover(&dirs(&root, Some(&config), Some(&home)));
        let got: Vec<(&str, &str)> = found
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str()))
            .collect();
        assert_eq!(got, [("x", "from agents"), ("z", "only config"), ("y", "only home")]);
        // Started in home, the project's and the user's `.agents/skills` are one directory.
        assert_eq!(dirs(&home, None, Some(&home)).len(), 3);
    }
}
