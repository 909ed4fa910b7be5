//! Project instructions, found as Codex finds them: the person's global `AGENTS.md` (in the
//! user config directory), then one file per directory from the project root down to the
//! working directory — `AGENTS.md`, or `CLAUDE.md` where a directory has no `AGENTS.md` — root
//! first, so deeper files refine what the ones above say.
//!
//! They all share one size cap ([`MAX_BYTES`]): files are taken in order until it is reached;
//! the file that crosses it is cut and those after it are dropped, and a note at the end names
//! them. Every read is bounded and refuses FIFOs and devices. A project file that is a link
//! pointing outside the project is skipped (and named): a cloned repository must not be able to
//! send `~/.ssh/id_rsa` to the model as its "instructions".

use std::path::{Path, PathBuf};

use crate::config::project::Workspace;

/// The most bytes of instructions (all files together) put in the system prompt.
pub const MAX_BYTES: usize = 32 * 1024;

/// The file names looked for in each directory, in order of preference.
pub const NAMES: &[&str] = &["AGENTS.md", "CLAUDE.md"];

/// One instruction file: where it is, how its section is headed, and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub path: PathBuf,
    /// The heading: the path relative to the project root, or the full path and `(global)`.
    pub heading: String,
    /// Its text, trimmed; `None` for a project file that links outside the project (not read).
    pub text: Option<String>,
    /// Whether the file had more than the read limit.
    pub more: bool,
}

/// The directories from `root` down to `cwd`, root first (only `root` when `cwd` is not below
/// it).
fn chain(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![root.to_path_buf()];
    if let Ok(rel) = cwd.strip_prefix(root) {
        let mut dir = root.to_path_buf();
        for part in rel.components() {
            dir.push(part);
            dirs.push(dir.clone());
        }
    }
    dirs
}

/// A non-empty instruction text of at most `limit` bytes: (text, whether the file had more).
fn read(path: &Path, limit: usize) -> Option<(String, bool)> {
    let (text, more) = crate::files::read_head(path, limit as u64).ok()?;
    let text = text.trim().to_owned();
    (!text.is_empty()).then_some((text, more))
}

/// The instruction files that hold text, in prompt order, each read up to `limit` bytes: the
/// global one in `global_dir`, then per directory from the root to the working directory the
/// first of [`NAMES`] that holds text.
pub fn sources(global_dir: Option<&Path>, place: &Workspace, limit: usize) -> Vec<Source> {
    let mut found = Vec::new();
    if let Some(dir) = global_dir {
        let path = dir.join("AGENTS.md");
        if let Some((text, more)) = read(&path, limit) {
            found.push(Source {
                heading: format!("{} (global)", path.display()),
                path,
                text: Some(text),
                more,
            });
        }
    }
    // A project file may be a link to another file of the project (`CLAUDE.md -> AGENTS.md`),
    // never out of it.
    let real_root = place.root.canonicalize().unwrap_or_else(|_| place.root.clone());
    for dir in chain(&place.root, &place.cwd) {
        for name in NAMES {
            let path = dir.join(name);
            let Ok(real) = path.canonicalize() else {
                continue;
            };
            let heading = path.strip_prefix(&place.root).unwrap_or(&path).display().to_string();
            if !real.starts_with(&real_root) {
                found.push(Source {
                    path,
                    heading,
                    text: None,
                    more: false,
                });
                break;
            }
            if let Some((text, more)) = read(&path, limit) {
                found.push(Source {
                    path,
                    heading,
                    text: Some(text),
                    more,
                });
                break;
            }
        }
    }
    found
}

/// `text` cut to at most `max` bytes at a character boundary.
fn head(text: &str, max: usize) -> &str {
    let mut cut = max.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

/// The "Project instructions" section of the system prompt, at most `max_bytes` of file text
/// plus a note naming what was cut or dropped; `None` when there are no instructions.
pub fn section(global_dir: Option<&Path>, place: &Workspace, max_bytes: usize) -> Option<String> {
    let mut out = String::new();
    let mut left = max_bytes;
    let (mut cut, mut dropped, mut outside) = (Vec::new(), Vec::new(), Vec::new());
    for source in sources(global_dir, place, max_bytes) {
        let Some(text) = &source.text else {
            outside.push(source.heading);
            continue;
        };
        if left == 0 {
            dropped.push(source.heading);
            continue;
        }
        let taken = head(text, left);
        left -= taken.len();
        out.push_str(&format!("\n\n## {}\n{taken}", source.heading));
        if source.more || taken.len() < text.len() {
            cut.push(source.heading);
            left = 0;
        }
    }
    let mut notes = Vec::new();
    if !cut.is_empty() {
        notes.push(format!("cut short: {}", cut.join(", ")));
    }
    if !dropped.is_empty() {
        notes.push(format!("left out: {}", dropped.join(", ")));
    }
    if !notes.is_empty() {
        out.push_str(&format!(
            "\n\n[Instructions are capped at {max_bytes} bytes; {}. Read those files for the rest.]",
            notes.join("; ")
        ));
    }
    if !outside.is_empty() {
        out.push_str(&format!(
            "\n\n[Skipped (links pointing outside the project): {}]",
            outside.join(", ")
        ));
    }
    if out.is_empty() {
        return None;
    }
    Some(format!(
        "\n\n# Project instructions\nFrom AGENTS.md files (CLAUDE.md where a directory has none), the project root first; deeper files refine the ones above.{out}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        let place = Workspace {
            cwd: root.join("a/b"),
            root,
        };
        (dir, place)
    }

    #[test]
    fn root_to_cwd_with_claude_only_where_agents_is_missing() {
        let (dir, place) = project();
        let global = dir.path().join("config");
        std::fs::create_dir_all(&global).unwrap();
        std::fs::write(global.join("AGENTS.md"), "global rule").unwrap();
        std::fs::write(place.root.join("AGENTS.md"), "root rule").unwrap();
        std::fs::write(place.root.join("CLAUDE.md"), "ignored: AGENTS.md is here").unwrap();
        std::fs::write(place.root.join("a/CLAUDE.md"), "a rule").unwrap();
        std::fs::write(place.root.join("a/b/AGENTS.md"), "  \n").unwrap();
        std::fs::write(place.root.join("a/b/CLAUDE.md"), "b rule").unwrap();
        let headings: Vec<String> = sources(Some(&global), &place, MAX_BYTES)
            .into_iter()
            .map(|s| s.heading)
            .collect();
        assert_eq!(
            headings,
            [
                format!("{} (global)", global.join("AGENTS.md").display()),
                "AGENTS.md".to_owned(),
                "a/CLAUDE.md".to_owned(),
                "a/b/CLAUDE.md".to_owned()
            ]
        );
        let text = section(Some(&global), &place, MAX_BYTES).unwrap();
        let order: Vec<usize> = ["global rule", "## AGENTS.md\nroot rule", "a rule", "b rule"]
            .iter()
            .map(|t| text.find(t).unwrap_or_else(|| panic!("{t} missing in {text}")))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(!text.contains("ignored"));
        assert!(!text.contains("capped"));
    }

    #[test]
    fn the_cap_cuts_then_drops_and_says_so() {
        let (_dir, place) = project();
        std::fs::write(place.root.join("AGENTS.md"), "r".repeat(60)).unwrap();
        std::fs::write(place.root.join("a/AGENTS.md"), "é".repeat(30)).unwrap();
        std::fs::write(place.root.join("a/b/AGENTS.md"), "deep").unwrap();
        let text = section(None, &place, 100).unwrap();
        assert!(text.contains(&"r".repeat(60)));
        // 40 bytes left: 20 two-byte characters, none split.
        assert!(
            text.contains(&format!("## a/AGENTS.md\n{}\n", "é".repeat(20))),
            "{text}"
        );
        assert!(!text.contains("deep\n"));
        assert!(
            text.contains("capped at 100 bytes; cut short: a/AGENTS.md; left out: a/b/AGENTS.md"),
            "{text}"
        );
    }

    #[test]
    fn links_out_of_the_project_and_fifos_are_not_read() {
        let (dir, place) = project();
        std::fs::write(dir.path().join("secret"), "SECRET KEY").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), place.root.join("AGENTS.md")).unwrap();
        // A link inside the project is fine.
        std::fs::write(place.root.join("a/AGENTS.md"), "a rule").unwrap();
        std::os::unix::fs::symlink(place.root.join("a/AGENTS.md"), place.root.join("a/b/CLAUDE.md")).unwrap();
        let text = section(None, &place, MAX_BYTES).unwrap();
        assert!(!text.contains("SECRET"), "{text}");
        assert!(text.contains("Skipped (links pointing outside the project): AGENTS.md"));
        assert!(text.contains("## a/b/CLAUDE.md\na rule"), "{text}");
        let fifo = place.root.join("a/b/AGENTS.md");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates a node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        // The FIFO is refused (not waited on) and CLAUDE.md is used instead.
        assert!(section(None, &place, MAX_BYTES).unwrap().contains("## a/b/CLAUDE.md"));
        assert_eq!(section(None, &Workspace::at(dir.path().join("none")), MAX_BYTES), None);
    }
}
