//! Custom slash commands: prompt templates kept as Markdown files, run as `/name args`.
//!
//! Where they are found ([`dirs`]), first of a name wins: the project's `.brute/commands/` and
//! `.claude/commands/`, then the user's `commands/` in brute's config directory and
//! `~/.claude/commands/`. `review.md` is `/review`; `git/commit.md` is `/git:commit` (Claude
//! Code's convention). A command never replaces a built-in slash command ([`RESERVED`]): such
//! a file is skipped with a notice.
//!
//! The body is the prompt: `$ARGUMENTS` becomes everything after the name, `$1`..`$9` the
//! words of it split like a shell would ([`crate::tool::argv`]; missing ones become empty).
//! A body with neither gets the arguments appended as `ARGUMENTS: …`. Optional YAML front
//! matter: `description` (else the body's first line), `argument-hint`, `model` (the model for
//! that turn only) and `allowed-tools` (only these tools are offered in that turn: a list or a
//! comma-separated string; `Bash(git *)`-style entries name their tool, and Claude Code's tool
//! names are mapped to brute's).
//!
//! Commands only add text, so a project's commands load in untrusted projects too (as its
//! `AGENTS.md` does). What they may change is limited there: `allowed-tools` can only narrow
//! the tools a turn offers (it never adds one, never skips an approval), and a project
//! command's `model` applies only in a trusted project (an untrusted one could otherwise send
//! the conversation to an expensive model); elsewhere it is ignored with a notice.
//!
//! The conversation expands a prompt that starts with a command's name at the start of the
//! turn ([`Commands::prepare`]): the history and session keep the expanded text (what the
//! model saw), the front ends show the line that was typed.

use std::path::{Path, PathBuf};

use crate::tool::skills::split_front_matter;

/// The largest command file read.
pub const MAX_COMMAND_BYTES: u64 = 256 * 1024;

/// Slash commands the front ends handle themselves; a custom command never takes these names.
pub const RESERVED: &[&str] = &[
    "help",
    "undo",
    "redo",
    "diff",
    "resume",
    "clear",
    "compact",
    "model",
    "effort",
    "tools",
    "status",
    "cost",
    "permissions",
    "plan",
    "todo",
    "copy",
    "mouse",
    "quit",
    "exit",
    "mcp",
    "ps",
];

/// Where a command file lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The project's directories (from a cloned repository, possibly untrusted).
    Project,
    /// The person's own directories.
    User,
}

/// One custom command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The name without the slash (`review`, `git:commit`).
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    pub model: Option<String>,
    /// Tool names offered in the command's turn (`None`: the usual tools).
    pub allowed_tools: Option<Vec<String>>,
    /// The template.
    pub body: String,
    pub path: PathBuf,
    pub origin: Origin,
}

/// The command directories in order of precedence (see the module docs).
pub fn dirs(project_root: &Path, user_config_dir: Option<&Path>, home: Option<&Path>) -> Vec<(PathBuf, Origin)> {
    let mut dirs: Vec<(PathBuf, Origin)> = [".brute", ".claude"]
        .iter()
        .map(|d| (project_root.join(d).join("commands"), Origin::Project))
        .collect();
    dirs.extend(user_config_dir.map(|d| (d.join("commands"), Origin::User)));
    dirs.extend(home.map(|h| (h.join(".claude").join("commands"), Origin::User)));
    // Started in home, `.claude/commands` is the person's own: keep it once, as theirs.
    let mut kept: Vec<(PathBuf, Origin)> = Vec::new();
    for (dir, origin) in dirs {
        match kept.iter_mut().find(|(d, _)| *d == dir) {
            Some(existing) if origin == Origin::User => existing.1 = Origin::User,
            Some(_) => {}
            None => kept.push((dir, origin)),
        }
    }
    kept
}

/// What discovery found, and a notice per file it skipped or command it hid.
#[derive(Debug, Default, Clone)]
pub struct Commands {
    pub commands: Vec<Command>,
    pub notices: Vec<String>,
    /// Whether the project is trusted (a project command's `model` applies only then).
    pub project_trusted: bool,
}

/// A prompt made from a command, for one turn.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Prepared {
    /// The expanded prompt (what the model sees).
    pub text: String,
    /// The model for this turn only.
    pub model: Option<String>,
    /// The tools offered in this turn only.
    pub allowed_tools: Option<Vec<String>>,
    /// For the person: what the command changed for the turn, or ignored.
    pub notices: Vec<String>,
}

/// Finds the commands in `dirs` (see [`dirs`]); the first of a name wins.
pub fn discover(dirs: &[(PathBuf, Origin)]) -> Commands {
    let mut found = Commands::default();
    for (dir, origin) in dirs {
        if !dir.is_dir() {
            continue;
        }
        let mut files: Vec<PathBuf> = ignore::WalkBuilder::new(dir)
            .standard_filters(false)
            .hidden(true)
            .max_depth(Some(4))
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(ignore::DirEntry::into_path)
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        files.sort();
        for path in files {
            let Some(name) = command_name(dir, &path) else {
                found.notices.push(format!(
                    "command skipped: {} (a name is letters, digits, `_`, `-` or `.`)",
                    path.display()
                ));
                continue;
            };
            if RESERVED.contains(&name.as_str()) {
                found.notices.push(format!(
                    "command /{name} from {} is not used: /{name} is a built-in command",
                    path.display()
                ));
                continue;
            }
            if found.commands.iter().any(|c| c.name == name) {
                continue;
            }
            match parse(&path, name, *origin) {
                Ok(command) => found.commands.push(command),
                Err(problem) => found.notices.push(format!("command skipped: {problem}")),
            }
        }
    }
    found
}

/// The built-in `/init`: a model turn that writes or updates the project's AGENTS.md. Added
/// as a command after discovery (a person's or project's own `init.md` replaces it).
pub fn init() -> Command {
    Command {
        name: "init".to_owned(),
        description: "write or update AGENTS.md (how to build, test and find your way here)".to_owned(),
        argument_hint: Some("[what to focus on]".to_owned()),
        model: None,
        allowed_tools: None,
        body: include_str!("../../assets/init.md").to_owned(),
        path: PathBuf::from("(built in)"),
        origin: Origin::User,
    }
}

/// `git/commit.md` under `dir` → `git:commit`; `None` for a name that could not be typed.
fn command_name(dir: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(dir).ok()?.with_extension("");
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_str().map(str::to_owned))
        .collect::<Option<_>>()?;
    let valid = |p: &String| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    (!parts.is_empty() && parts.iter().all(valid)).then(|| parts.join(":"))
}

/// The front matter keys a command may have (others are allowed and ignored).
#[derive(Debug, Default, serde::Deserialize)]
struct FrontMatter {
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "argument-hint")]
    argument_hint: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default, rename = "allowed-tools")]
    allowed_tools: Option<ToolList>,
}

/// `allowed-tools` as a YAML list or a comma-separated string.
#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum ToolList {
    List(Vec<String>),
    Text(String),
}

/// Claude Code's tool names, for commands written for it.
const CLAUDE_NAMES: &[(&str, &str)] = &[
    ("Bash", "shell"),
    ("Read", "read"),
    ("Write", "write"),
    ("Edit", "patch"),
    ("MultiEdit", "patch"),
    ("Grep", "fs_search"),
    ("Glob", "fs_search"),
    ("LS", "read"),
    ("WebFetch", "fetch"),
    ("TodoWrite", "todo_write"),
    ("TodoRead", "todo_read"),
    ("Task", "task"),
];

/// Tool names from an `allowed-tools` value: `shell(git *)` names `shell`, Claude Code's
/// names become brute's, duplicates go.
fn tool_names(list: ToolList) -> Vec<String> {
    let entries: Vec<String> = match list {
        ToolList::List(items) => items,
        ToolList::Text(text) => text.split(',').map(str::to_owned).collect(),
    };
    let mut names: Vec<String> = Vec::new();
    for entry in entries {
        let name = entry.split('(').next().unwrap_or("").trim();
        if name.is_empty() {
            continue;
        }
        let name = CLAUDE_NAMES
            .iter()
            .find(|(claude, _)| *claude == name)
            .map_or(name, |(_, ours)| *ours)
            .to_owned();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Reads one command file.
pub fn parse(path: &Path, name: String, origin: Origin) -> Result<Command, String> {
    let text =
        crate::files::read_text(path, MAX_COMMAND_BYTES).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let (front, body) = split_front_matter(&text);
    let front = match front {
        Some(yaml) if !yaml.trim().is_empty() => {
            crate::tool::skills::check_front_matter(yaml)
                .map_err(|why| format!("{}: front matter refused: {why}", path.display()))?;
            serde_norway::from_str::<Option<FrontMatter>>(yaml)
                .map_err(|e| format!("{}: malformed YAML front matter: {e}", path.display()))?
                .unwrap_or_default()
        }
        _ => FrontMatter::default(),
    };
    let body = body.trim().to_owned();
    let description = front
        .description
        .map(|d| d.trim().to_owned())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| first_line(&body));
    let clean = |v: Option<String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    Ok(Command {
        name,
        description,
        argument_hint: clean(front.argument_hint),
        model: clean(front.model),
        allowed_tools: front.allowed_tools.map(tool_names),
        body,
        path: path.to_path_buf(),
        origin,
    })
}

/// The body's first non-empty line, cut to 80 characters (a command's default description).
fn first_line(body: &str) -> String {
    let line = body.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let line = line.trim_start_matches('#').trim();
    match line.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

/// Splits a prompt into a command name and its arguments: `/name args…` (the name ends at the
/// first whitespace; the arguments keep their inner newlines). `None` when it is no command.
pub fn invocation(prompt: &str) -> Option<(&str, &str)> {
    let rest = prompt.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    (!name.is_empty()).then(|| (name, rest[end..].trim()))
}

/// Fills a template with the arguments (see the module docs), in one pass: an argument that
/// contains `$1` or `$ARGUMENTS` stays as written.
pub fn expand(body: &str, args: &str) -> String {
    let words = crate::tool::argv::split(args).unwrap_or_else(|_| args.split_whitespace().map(str::to_owned).collect());
    let mut out = String::with_capacity(body.len() + args.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            used = true;
            rest = tail;
        } else if let Some(digit) = after.chars().next().and_then(|c| c.to_digit(10)).filter(|d| *d >= 1) {
            if let Some(word) = words.get(digit as usize - 1) {
                out.push_str(word);
            }
            used = true;
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    if !used && !args.is_empty() {
        out.push_str(&format!("\n\nARGUMENTS: {args}"));
    }
    out
}

impl Commands {
    /// The command a prompt invokes, if it names one.
    pub fn find<'a, 'p>(&'a self, prompt: &'p str) -> Option<(&'a Command, &'p str)> {
        let (name, args) = invocation(prompt)?;
        self.commands.iter().find(|c| c.name == name).map(|c| (c, args))
    }

    /// Expands `prompt` when it invokes a command (see the module docs); `None` otherwise.
    pub fn prepare(&self, prompt: &str) -> Option<Prepared> {
        let (command, args) = self.find(prompt)?;
        let mut notices = Vec::new();
        let model = match (&command.model, command.origin) {
            (Some(model), Origin::Project) if !self.project_trusted => {
                notices.push(format!(
                    "/{}: the model `{model}` it asks for is ignored (the project is not trusted)",
                    command.name
                ));
                None
            }
            (model, _) => model.clone(),
        };
        if let Some(model) = &model {
            notices.push(format!("/{}: model {model} for this turn", command.name));
        }
        if let Some(tools) = &command.allowed_tools {
            let list = if tools.is_empty() {
                "none".to_owned()
            } else {
                tools.join(", ")
            };
            notices.push(format!("/{}: tools offered in this turn: {list}", command.name));
        }
        Some(Prepared {
            text: expand(&command.body, args),
            model,
            allowed_tools: command.allowed_tools.clone(),
            notices,
        })
    }

    /// `(/name, description)` pairs for a front end's list (the hint after the description).
    pub fn listing(&self) -> Vec<(String, String)> {
        self.commands
            .iter()
            .map(|c| {
                let help = match &c.argument_hint {
                    Some(hint) => format!("{} {hint}", c.description),
                    None => c.description.clone(),
                };
                (format!("/{}", c.name), help)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn hostile_command_files_never_block_or_escape() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        write(&root, ".brute/commands/ok.md", "fine");
        // A FIFO (opening it would block until a writer came) and a link to a file outside.
        let fifo = root.join(".brute/commands/fifo.md");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
        write(dir.path(), "secret.txt", "outside the project");
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join(".brute/commands/leak.md")).unwrap();
        write(&root, ".brute/commands/huge.md", &"x".repeat(2 * 1024 * 1024));
        let found = discover(&dirs(&root, None, None));
        let names: Vec<&str> = found.commands.iter().map(|c| c.name.as_str()).collect();
        assert!(names.contains(&"ok"), "{names:?}");
        assert!(!names.contains(&"fifo"), "a FIFO is no command: {names:?}");
        assert!(!names.contains(&"huge"), "an oversized file is skipped: {names:?}");
        assert!(
            found
                .notices
                .iter()
                .any(|n| n.contains("huge.md") && n.contains("larger than 256 KiB")),
            "{:?}",
            found.notices
        );
        let leak = found.commands.iter().find(|c| c.name == "leak");
        assert!(
            leak.is_none_or(|c| !c.body.contains("outside the project")),
            "a link out of the project does not read what it points to"
        );
    }

    #[test]
    fn discovery_names_folders_and_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let (root, config, home) = (dir.path().join("p"), dir.path().join("cfg"), dir.path().join("home"));
        write(
            &root,
            ".brute/commands/review.md",
            "---\ndescription: Review a file\n---\nReview $1",
        );
        write(&root, ".claude/commands/review.md", "from claude");
        write(
            &root,
            ".claude/commands/git/commit.md",
            "# Commit the staged work\nbody",
        );
        write(&config, "commands/review.md", "user review");
        write(&config, "commands/mine.md", "mine");
        write(&config, "commands/help.md", "shadow");
        write(&config, "commands/bad name.md", "x");
        write(&config, "commands/notes.txt", "not a command");
        write(&home, ".claude/commands/home.md", "---\nmodel: m\n---\nfrom home");
        let found = discover(&dirs(&root, Some(&config), Some(&home)));
        let got: Vec<(&str, &str, Origin)> = found
            .commands
            .iter()
            .map(|c| (c.name.as_str(), c.description.as_str(), c.origin))
            .collect();
        assert_eq!(
            got,
            [
                ("review", "Review a file", Origin::Project),
                ("git:commit", "Commit the staged work", Origin::Project),
                ("mine", "mine", Origin::User),
                ("home", "from home", Origin::User),
            ]
        );
        assert!(
            found.notices.iter().any(|n| n.contains("/help is a built-in command")),
            "{:?}",
            found.notices
        );
        assert!(
            found.notices.iter().any(|n| n.contains("bad name.md")),
            "{:?}",
            found.notices
        );
        assert_eq!(found.notices.len(), 2, "{:?}", found.notices);
        // Started in home, its `.claude/commands` is the person's own.
        assert!(dirs(&home, None, Some(&home)).contains(&(home.join(".claude/commands"), Origin::User)));
    }

    #[test]
    fn arguments_expand_with_shell_quoting_and_missing_ones_empty() {
        assert_eq!(expand("Review $1 then $2.", "src/lib.rs"), "Review src/lib.rs then .");
        assert_eq!(
            expand("[$1] [$2] all: $ARGUMENTS", "'a b' \"c d\" e"),
            "[a b] [c d] all: 'a b' \"c d\" e"
        );
        // One pass: an argument holding a placeholder stays literal; `$0`, `$x`, `$` stay.
        assert_eq!(expand("$1 $2", "$2 x"), "$2 x");
        assert_eq!(expand("cost $5.00 $0 $x $", ""), "cost .00 $0 $x $");
        // No placeholder: the arguments are appended; none given, the body is unchanged.
        assert_eq!(
            expand("Explain this.", "the loop"),
            "Explain this.\n\nARGUMENTS: the loop"
        );
        assert_eq!(expand("Explain this.", ""), "Explain this.");
        // Broken quoting falls back to whitespace words.
        assert_eq!(expand("$1|$2", "'open b"), "'open|b");
        assert_eq!(
            invocation("  /git:commit  fix the\nbug "),
            Some(("git:commit", "fix the\nbug"))
        );
        assert_eq!(invocation("/x"), Some(("x", "")));
        assert_eq!(invocation("no /x"), None);
        assert_eq!(invocation("/ x"), None);
    }

    #[test]
    fn front_matter_model_and_tools() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "a.md",
            "---\ndescription: >\n  Folded\n  text\nargument-hint: <file>\nmodel: big-model\nallowed-tools: Bash(git status:*), Read, fs_search\n---\nDo $ARGUMENTS",
        );
        write(
            dir.path(),
            "b.md",
            "---\nallowed-tools:\n  - read\n  - shell(cargo *)\n  - read\n---\nB",
        );
        write(dir.path(), "c.md", "---\ndescription: [unclosed\n---\nC");
        let a = parse(&dir.path().join("a.md"), "a".into(), Origin::Project).unwrap();
        assert_eq!(a.description, "Folded text");
        assert_eq!(a.argument_hint.as_deref(), Some("<file>"));
        assert_eq!(a.model.as_deref(), Some("big-model"));
        assert_eq!(
            a.allowed_tools,
            Some(vec!["shell".into(), "read".into(), "fs_search".into()])
        );
        assert_eq!(a.body, "Do $ARGUMENTS");
        let b = parse(&dir.path().join("b.md"), "b".into(), Origin::User).unwrap();
        assert_eq!(b.allowed_tools, Some(vec!["read".into(), "shell".into()]));
        assert_eq!(b.description, "B");
        let c = parse(&dir.path().join("c.md"), "c".into(), Origin::User).unwrap_err();
        assert!(c.contains("c.md: malformed YAML"), "{c}");
    }

    #[test]
    fn an_untrusted_projects_model_is_ignored_tools_still_narrow() {
        let command = |origin| Command {
            name: "r".into(),
            description: "d".into(),
            argument_hint: Some("<f>".into()),
            model: Some("pricey".into()),
            allowed_tools: Some(vec!["read".into()]),
            body: "R $1".into(),
            path: PathBuf::from("r.md"),
            origin,
        };
        let mut set = Commands {
            commands: vec![command(Origin::Project)],
            notices: Vec::new(),
            project_trusted: false,
        };
        let prepared = set.prepare("/r x").unwrap();
        assert_eq!(prepared.text, "R x");
        assert_eq!(prepared.model, None);
        assert_eq!(prepared.allowed_tools, Some(vec!["read".to_owned()]));
        assert!(prepared.notices[0].contains("ignored (the project is not trusted)"));
        set.project_trusted = true;
        assert_eq!(set.prepare("/r").unwrap().model.as_deref(), Some("pricey"));
        set.project_trusted = false;
        set.commands = vec![command(Origin::User)];
        assert_eq!(set.prepare("/r").unwrap().model.as_deref(), Some("pricey"));
        assert_eq!(set.prepare("/other"), None);
        assert_eq!(set.prepare("/rx"), None);
        assert_eq!(set.listing(), [("/r".to_owned(), "d <f>".to_owned())]);
    }
}
