//! Skill scripts as tools (RobotLab's design, enforced by brute's Linux sandbox).
//!
//! Every executable file in a skill's `scripts/` folder becomes a tool:
//!
//! - **name**: the file name without its extension, dashes to underscores, anything else
//!   outside `[a-zA-Z0-9_-]` to `_`, at most 64 characters; prefixed with the skill's name
//!   (`pdf_tools_convert`) when another script or an existing tool has the plain name. Built-in
//!   tools are never shadowed (the registry refuses).
//! - **description**: the comment lines right after the shebang.
//! - **parameters**: one optional `args` string, split like a shell would
//!   ([`super::argv`]; no shell runs) and passed as the script's argv.
//!
//! A script runs with the working directory as its cwd, stdin empty, stdout and stderr
//! captured (the end kept, as for `shell`), in its own process group, killed with it on
//! timeout or interrupt.
//!
//! **Capabilities.** A skill's SKILL.md front matter declares what its scripts may do:
//! `fs_read` and `fs_write` (path lists, relative to the project root, `~` for home), `network`
//! (bool), `timeout` (seconds, default 60) and `trust` (`core` | `external`, default
//! external). They are intersected with the person's ceiling (`[skill_sandbox]` in config,
//! default: read the project, write nothing, no network, 60 s): a path is granted as far as it
//! lies within a ceiling path, the network only if both say so, the timeout is the smaller.
//! Nothing undeclared is granted. The grant is enforced by the sandbox ([`crate::sandbox`]):
//! Landlock limits reads to a base set that lets a program start (`/usr`, `/lib*`, `/bin`,
//! `/etc`, …), the skill's own folder and the granted trees, and writes to the granted
//! `fs_write` trees; without `network` the script gets a network namespace of its own.
//!
//! **Trust.** `trust: core` runs the scripts unconfined, and is honoured only for skills in
//! the person's own directories (brute's config dir, `~/.agents/skills`). A project skill (from
//! a cloned repository) claiming it runs confined, with a notice. Project skills' scripts are
//! advertised in untrusted projects too: they run confined to their grant, which the
//! person's ceiling bounds. Where no sandbox is available, every confined script call needs
//! the person's approval (an escalation), as `shell` does.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::shell::run_prepared;
use super::{Params, Tool, ToolContext, ToolError, ToolOutput};
use crate::tool::skills::{Skill, split_front_matter};

/// A script's timeout when neither the skill nor the ceiling says otherwise.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// The person's ceiling on what skill scripts may be granted (`[skill_sandbox]`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Ceiling {
    /// Trees scripts may be granted to read (relative to the project root, `~` for home).
    pub fs_read: Vec<String>,
    /// Trees scripts may be granted to write.
    pub fs_write: Vec<String>,
    /// Whether scripts may be granted the network.
    pub network: bool,
    /// The longest timeout a script may have, in seconds.
    pub timeout: u64,
}

impl Default for Ceiling {
    fn default() -> Self {
        Self {
            fs_read: vec![".".to_owned()],
            fs_write: Vec::new(),
            network: false,
            timeout: DEFAULT_TIMEOUT_SECS,
        }
    }
}

/// A path list: a YAML list or one string.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(untagged)]
enum Paths {
    One(String),
    Many(Vec<String>),
}

impl Paths {
    fn into_vec(self) -> Vec<String> {
        match self {
            Paths::One(p) => vec![p],
            Paths::Many(v) => v,
        }
    }
}

/// What a SKILL.md declares for its scripts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    pub fs_read: Vec<String>,
    pub fs_write: Vec<String>,
    pub network: bool,
    pub timeout: Option<u64>,
    /// `trust: core`.
    pub core: bool,
}

#[derive(Debug, Default, serde::Deserialize)]
struct CapsFront {
    #[serde(default)]
    fs_read: Option<Paths>,
    #[serde(default)]
    fs_write: Option<Paths>,
    #[serde(default)]
    network: Option<bool>,
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default)]
    trust: Option<String>,
}

impl Capabilities {
    /// Reads the capability keys of a SKILL.md's front matter (other keys are the skill's).
    pub fn of(skill_md: &Path) -> Result<Self, String> {
        let text = crate::files::read_text(skill_md, crate::tool::skills::MAX_SKILL_BYTES)
            .map_err(|e| format!("cannot read {}: {e}", skill_md.display()))?;
        let (front, _) = split_front_matter(&text);
        let Some(front) = front.filter(|f| !f.trim().is_empty()) else {
            return Ok(Self::default());
        };
        crate::tool::skills::check_front_matter(front)
            .map_err(|why| format!("{}: front matter refused: {why}", skill_md.display()))?;
        let caps: CapsFront = serde_norway::from_str::<Option<CapsFront>>(front)
            .map_err(|e| format!("{}: capabilities: {e}", skill_md.display()))?
            .unwrap_or_default();
        let core = match caps.trust.as_deref().map(str::trim) {
            None | Some("external") => false,
            Some("core") => true,
            Some(other) => {
                return Err(format!(
                    "{}: trust must be `core` or `external`, not `{other}`",
                    skill_md.display()
                ));
            }
        };
        Ok(Self {
            fs_read: caps.fs_read.map(Paths::into_vec).unwrap_or_default(),
            fs_write: caps.fs_write.map(Paths::into_vec).unwrap_or_default(),
            network: caps.network.unwrap_or(false),
            timeout: caps.timeout,
            core,
        })
    }
}

/// A declared or ceiling path made absolute: `~` is home, relative is under the project
/// root; `..` resolved and symlinks followed, so a link cannot widen a grant. `None` for `~`
/// without a home.
pub fn resolve_path(path: &str, root: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let path = path.trim();
    let joined = if path == "~" {
        home?.to_path_buf()
    } else if let Some(rest) = path.strip_prefix("~/") {
        home?.join(rest)
    } else {
        root.join(path)
    };
    Some(super::guard::real_path(&super::guard::normalize(root, &joined)))
}

/// The intersection of two sets of trees: a declared tree inside a ceiling tree is granted
/// whole; a ceiling tree inside a declared one is granted (the declared one is wider than
/// allowed); unrelated trees are not granted.
pub fn intersect(declared: &[PathBuf], ceiling: &[PathBuf]) -> Vec<PathBuf> {
    let mut granted: Vec<PathBuf> = Vec::new();
    for d in declared {
        for c in ceiling {
            let tree = if d.starts_with(c) {
                d
            } else if c.starts_with(d) {
                c
            } else {
                continue;
            };
            if !granted.contains(tree) {
                granted.push(tree.clone());
            }
        }
    }
    granted
}

/// What a skill's scripts may do, after the ceiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    pub network: bool,
    pub timeout: Duration,
    /// `trust: core` honoured: no sandbox.
    pub unconfined: bool,
}

/// The grant of a skill with `caps` under `ceiling`; `user_owned` says whether the skill
/// lives in the person's own directories (only those may run unconfined). Returns the grant
/// and notices for the person.
pub fn grant(
    skill: &str,
    caps: &Capabilities,
    ceiling: &Ceiling,
    root: &Path,
    home: Option<&Path>,
    user_owned: bool,
) -> (Grant, Vec<String>) {
    let resolve =
        |list: &[String]| -> Vec<PathBuf> { list.iter().filter_map(|p| resolve_path(p, root, home)).collect() };
    let mut notices = Vec::new();
    if caps.core && !user_owned {
        notices.push(format!(
            "skill `{skill}` asks for `trust: core`, but it is a project skill: its scripts run in the sandbox"
        ));
    }
    let timeout = caps.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS).min(ceiling.timeout).max(1);
    (
        Grant {
            read: intersect(&resolve(&caps.fs_read), &resolve(&ceiling.fs_read)),
            write: intersect(&resolve(&caps.fs_write), &resolve(&ceiling.fs_write)),
            network: caps.network && ceiling.network,
            timeout: Duration::from_secs(timeout),
            unconfined: caps.core && user_owned,
        },
        notices,
    )
}

/// Whether `path` (a SKILL.md) lies in one of the person's own skill directories.
pub fn user_owned(path: &Path, user_dirs: &[PathBuf]) -> bool {
    let real = super::guard::real_path(path);
    user_dirs.iter().any(|d| real.starts_with(super::guard::real_path(d)))
}

/// The executable files in a skill's `scripts/` folder (not its subfolders), sorted. A link
/// that leads out of the skill's folder is left out.
pub fn scripts(skill_dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(skill_dir.join("scripts")) else {
        return Vec::new();
    };
    let real_dir = super::guard::real_path(skill_dir);
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let real = super::guard::real_path(p);
            real.starts_with(&real_dir)
                && std::fs::metadata(&real).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .collect();
    found.sort();
    found
}

/// A tool name from a file or skill name: extension dropped (for files), dashes and other
/// characters outside `[a-zA-Z0-9_-]` to `_`, at most 64 characters.
pub fn sanitize_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
        .take(64)
        .collect();
    if out.is_empty() {
        out.push_str("script");
    }
    out
}

fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The comment lines right after the shebang (`#` or `//`), joined; empty when none.
pub fn script_description(path: &Path) -> String {
    let Ok(text) = crate::files::read_text(path, 8 * 1024) else {
        return String::new();
    };
    let mut lines = text.lines().peekable();
    if lines.peek().is_some_and(|l| l.starts_with("#!")) {
        lines.next();
    }
    let mut out: Vec<String> = Vec::new();
    for line in lines {
        let trimmed = line.trim();
        let comment = trimmed
            .strip_prefix("//")
            .or_else(|| trimmed.strip_prefix('#'))
            .map(|c| c.trim_start_matches(['#', '/']).trim());
        match comment {
            Some("") if out.is_empty() => {}
            Some("") | None => break,
            // Editor modelines and encodings say nothing about the script.
            Some(c) if out.is_empty() && (c.starts_with("-*-") || c.starts_with("vim:")) => {}
            Some(c) => out.push(c.to_owned()),
        }
        if out.join(" ").len() > 400 {
            break;
        }
    }
    let joined = out.join(" ");
    match joined.char_indices().nth(400) {
        Some((at, _)) => format!("{}…", &joined[..at]),
        None => joined,
    }
}

/// A skill script as a tool.
pub struct SkillScriptTool {
    name: String,
    description: String,
    skill: String,
    path: PathBuf,
    skill_dir: PathBuf,
    grant: Grant,
}

/// Builds the tools of `skills`' scripts: names resolved against `taken` (the tools already
/// registered) and each other. Returns the tools and notices for the person.
pub fn tools(
    skills: &[Skill],
    taken: &[String],
    ceiling: &Ceiling,
    root: &Path,
    home: Option<&Path>,
    user_dirs: &[PathBuf],
) -> (Vec<SkillScriptTool>, Vec<String>) {
    let mut notices = Vec::new();
    let mut pending: Vec<(&Skill, PathBuf, PathBuf, String, Grant)> = Vec::new();
    for skill in skills {
        let Some(dir) = skill.path.parent() else { continue };
        let found = scripts(dir);
        if found.is_empty() {
            continue;
        }
        let caps = match Capabilities::of(&skill.path) {
            Ok(caps) => caps,
            Err(problem) => {
                notices.push(format!(
                    "the scripts of skill `{}` are not offered: {problem}",
                    skill.name
                ));
                continue;
            }
        };
        let (grant, said) = grant(
            &skill.name,
            &caps,
            ceiling,
            root,
            home,
            user_owned(&skill.path, user_dirs),
        );
        notices.extend(said);
        for path in found {
            let base = sanitize_name(&file_stem(&path));
            pending.push((skill, dir.to_path_buf(), path, base, grant.clone()));
        }
    }
    let mut names: Vec<String> = taken.to_vec();
    let mut built = Vec::new();
    for (i, (skill, dir, path, base, grant)) in pending.iter().enumerate() {
        let clash = names.contains(base) || pending.iter().enumerate().any(|(j, other)| j != i && other.3 == *base);
        let name = if clash {
            let prefixed = sanitize_name(&format!("{}_{base}", skill.name.replace('-', "_")));
            if names.contains(&prefixed) {
                notices.push(format!(
                    "script {} of skill `{}` is not offered: the names `{base}` and `{prefixed}` are taken",
                    path.display(),
                    skill.name
                ));
                continue;
            }
            prefixed
        } else {
            base.clone()
        };
        names.push(name.clone());
        let said = script_description(path);
        let what = if said.is_empty() {
            format!("Runs the script {} of the `{}` skill.", file_name(path), skill.name)
        } else {
            said
        };
        built.push(SkillScriptTool {
            description: format!(
                "{what} (script of the `{}` skill; `args` are split like a shell's, no shell runs)",
                skill.name
            ),
            name,
            skill: skill.name.clone(),
            path: path.clone(),
            skill_dir: dir.clone(),
            grant: grant.clone(),
        });
    }
    (built, notices)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl SkillScriptTool {
    /// The sandbox policy of a confined run (see the module docs).
    pub fn policy(&self, root: &Path) -> crate::sandbox::Policy {
        let mut readable = vec![self.skill_dir.clone(), super::guard::real_path(&self.skill_dir)];
        readable.extend(self.grant.read.iter().cloned());
        crate::sandbox::Policy {
            mode: crate::sandbox::Mode::WorkspaceWrite,
            writable: self.grant.write.clone(),
            read_only: [".git", ".brute"].iter().map(|d| root.join(d)).collect(),
            git_roots: self.grant.write.clone(),
            network: self.grant.network,
            readable: Some(readable),
        }
    }

    /// The grant this script runs with.
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    /// Whether this script would run without the sandbox here although it should be confined.
    fn would_escape(&self) -> bool {
        !self.grant.unconfined && crate::sandbox::available().is_err()
    }
}

impl Tool for SkillScriptTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string(
                "args",
                "Arguments for the script, split like a shell would (quotes group words; nothing is expanded)",
                false,
            )
            .build()
    }

    fn display(&self) -> crate::protocol::Display {
        crate::protocol::Display::Output
    }

    fn runs_commands(&self) -> bool {
        true
    }

    /// Its script runs with the skill's own grant, not the session's sandbox: it may write
    /// what the grant allows whatever the mode, so plan mode leaves it out.
    fn reach(&self) -> super::Reach {
        super::Reach::Anything
    }

    fn escalation(&self, _args: &Value) -> Option<String> {
        self.would_escape().then(|| {
            format!(
                "no sandbox is available here, so the `{}` skill's script would run unconfined",
                self.skill
            )
        })
    }

    fn summary(&self, args: &Value) -> String {
        let line = args["args"].as_str().unwrap_or("");
        format!("{} {line}", file_name(&self.path))
            .trim()
            .chars()
            .take(80)
            .collect()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let line = args["args"].as_str().unwrap_or("");
            let argv = super::argv::split(line).map_err(|e| ToolError::invalid(format!("args: {e}")))?;
            let program = self.path.to_string_lossy().into_owned();
            let spawn = if self.grant.unconfined {
                crate::sandbox::command(&program, &argv)
            } else {
                match crate::sandbox::confined_command(&self.policy(&ctx.root), &program, &argv) {
                    Ok(spawn) => spawn,
                    // Only reached after the person approved the escalation (see `escalation`).
                    Err(_) => crate::sandbox::command(&program, &argv),
                }
            };
            let timeout = self.grant.timeout;
            let _ended = (!self.grant.unconfined).then(|| crate::sandbox::CommandEnded::new(self.policy(&ctx.root)));
            let run = run_prepared(spawn, &ctx.cwd, None, &[], timeout, ctx).await?;
            let unconfined = |code: i32| {
                (code == i32::from(crate::sandbox::UNAVAILABLE))
                    .then(|| "[the sandbox could not confine the script, so it did not run]".to_owned())
            };
            super::shell::describe_run(run, "script", timeout, unconfined, ctx)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    #[test]
    fn intersection_keeps_what_lies_within_the_ceiling() {
        assert_eq!(intersect(&[p("/p/src")], &[p("/p")]), [p("/p/src")]);
        assert_eq!(intersect(&[p("/")], &[p("/p")]), [p("/p")]);
        assert!(intersect(&[p("/etc")], &[p("/p")]).is_empty());
        assert!(
            intersect(&[p("/p2")], &[p("/p")]).is_empty(),
            "a sibling with a common prefix"
        );
        assert!(intersect(&[p("/p")], &[]).is_empty());
        assert_eq!(intersect(&[p("/p/a"), p("/p/a")], &[p("/p"), p("/p/a")]), [p("/p/a")]);
    }

    #[test]
    fn grants_are_intersected_with_the_ceiling() {
        let dir = tempfile::tempdir().unwrap();
        let (root, home) = (dir.path().join("proj"), dir.path().join("home"));
        std::fs::create_dir_all(root.join("out")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let root = root.canonicalize().unwrap();
        let home = home.canonicalize().unwrap();
        let caps = Capabilities {
            fs_read: vec!["src".into(), "~/.ssh".into(), "../elsewhere".into()],
            fs_write: vec!["out".into()],
            network: true,
            timeout: Some(600),
            core: true,
        };
        // The default ceiling: read the project, write nothing, no network, 60 s.
        let (g, notices) = grant("s", &caps, &Ceiling::default(), &root, Some(&home), false);
        assert_eq!(g.read, [root.join("src")]);
        assert!(g.write.is_empty());
        assert!(!g.network);
        assert_eq!(g.timeout, Duration::from_secs(60));
        assert!(!g.unconfined, "a project skill's trust: core is not honoured");
        assert!(notices[0].contains("asks for `trust: core`, but it is a project skill"));
        // A wider ceiling grants what lies within it; `..` cannot leave the project.
        let ceiling = Ceiling {
            fs_read: vec![".".into(), "~".into()],
            fs_write: vec!["out".into(), "build".into()],
            network: true,
            timeout: 30,
        };
        let (g, notices) = grant("s", &caps, &ceiling, &root, Some(&home), true);
        assert_eq!(g.read, [root.join("src"), home.join(".ssh")]);
        assert_eq!(g.write, [root.join("out")]);
        assert!(g.network && g.unconfined && notices.is_empty());
        assert_eq!(g.timeout, Duration::from_secs(30));
        let none = Capabilities::default();
        let (g, _) = grant("s", &none, &ceiling, &root, Some(&home), true);
        assert!(g.read.is_empty() && g.write.is_empty() && !g.network && !g.unconfined);
    }

    #[test]
    fn capabilities_names_and_descriptions() {
        let dir = tempfile::tempdir().unwrap();
        let md = dir.path().join("SKILL.md");
        std::fs::write(
            &md,
            "---\nname: s\ndescription: d\nfs_read: src\nfs_write: [out, ~/cache]\nnetwork: true\ntimeout: 5\ntrust: core\n---\n",
        )
        .unwrap();
        let caps = Capabilities::of(&md).unwrap();
        assert_eq!(caps.fs_read, ["src"]);
        assert_eq!(caps.fs_write, ["out", "~/cache"]);
        assert!(caps.network && caps.core);
        assert_eq!(caps.timeout, Some(5));
        std::fs::write(&md, "---\ndescription: d\ntrust: root\n---\n").unwrap();
        assert!(Capabilities::of(&md).unwrap_err().contains("trust must be"));
        assert_eq!(sanitize_name("make-pdf.v2"), "make_pdf_v2");
        assert_eq!(sanitize_name(&"x".repeat(80)).len(), 64);
        assert_eq!(sanitize_name(""), "script");
        let script = dir.path().join("a.sh");
        std::fs::write(&script, "#!/bin/sh\n# Converts a file.\n#   Writes out/.\n\necho\n").unwrap();
        assert_eq!(script_description(&script), "Converts a file. Writes out/.");
        std::fs::write(
            &script,
            "#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\n# Py tool\nx = 1\n",
        )
        .unwrap();
        assert_eq!(script_description(&script), "Py tool");
        std::fs::write(&script, "#!/bin/sh\necho\n").unwrap();
        assert_eq!(script_description(&script), "");
    }

    #[test]
    fn scripts_are_executables_named_without_clashes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let make = |skill: &str, file: &str, mode: u32| {
            let scripts = dir.path().join(skill).join("scripts");
            std::fs::create_dir_all(&scripts).unwrap();
            std::fs::write(dir.path().join(skill).join("SKILL.md"), "---\ndescription: d\n---\n").unwrap();
            let path = scripts.join(file);
            std::fs::write(&path, "#!/bin/sh\n# Does it.\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        make("pdf-tools", "convert.sh", 0o755);
        make("pdf-tools", "notes.txt", 0o644);
        make("pdf-tools", "read.py", 0o755);
        make("img", "convert", 0o755);
        make("img", "resize-it.sh", 0o755);
        let skill = |name: &str| Skill {
            name: name.to_owned(),
            description: "d".into(),
            path: dir.path().join(name).join("SKILL.md"),
        };
        let (built, notices) = tools(
            &[skill("pdf-tools"), skill("img")],
            &["read".to_owned(), "shell".to_owned()],
            &Ceiling::default(),
            dir.path(),
            None,
            &[],
        );
        let names: Vec<&str> = built.iter().map(|t| t.name()).collect();
        assert_eq!(
            names,
            ["pdf_tools_convert", "pdf_tools_read", "img_convert", "resize_it"]
        );
        assert!(notices.is_empty(), "{notices:?}");
        assert!(
            built[0]
                .description()
                .starts_with("Does it. (script of the `pdf-tools` skill")
        );
        assert_eq!(
            built[0].parameters(),
            serde_json::json!({"type": "object", "properties": {"args": {"type": "string", "description": "Arguments for the script, split like a shell would (quotes group words; nothing is expanded)"}}})
        );
    }
}
