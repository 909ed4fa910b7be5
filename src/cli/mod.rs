//! The command line, defined once with clap: the source of `--help`, the shell completions
//! in `completions/` and the man page ([`man`]). [`prompt`] decides what the prompt
//! arguments ask for (the UI, with or without a first prompt, or a headless run).

pub mod claude;
pub mod man;
pub mod mcp;
pub mod prompt;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Exit codes, documented in `--help`, the man page and `docs/user-guide.md`.
pub mod exit {
    /// The task finished.
    pub const OK: i32 = 0;
    /// A provider or runtime error.
    pub const ERROR: i32 = 1;
    /// A usage or configuration error.
    pub const USAGE: i32 = 2;
    /// The iteration cap (`--max-turns`) was reached.
    pub const MAX_TURNS: i32 = 3;
    /// Interrupted with Ctrl-C.
    pub const INTERRUPTED: i32 = 130;
    /// Ended by SIGTERM (128 + 15), after stopping the turn like Ctrl-C.
    pub const TERMINATED: i32 = 143;
    /// Ended by SIGHUP (128 + 1): the terminal went away.
    pub const HANGUP: i32 = 129;
}

/// Exit codes and what they mean, for `--help` and the man page's EXIT STATUS.
pub const EXIT_CODES: &[(&str, &str)] = &[
    ("0", "done"),
    ("1", "provider or runtime error"),
    ("2", "usage or configuration error"),
    ("3", "the iteration cap (--max-turns) was reached"),
    ("130", "interrupted (Ctrl-C); pending tool calls still got results"),
    (
        "143, 129",
        "ended by SIGTERM, SIGHUP (the turn was stopped like Ctrl-C first)",
    ),
];

/// Examples (command, what it does), for `--help` and the man page.
pub const EXAMPLES: &[(&str, &str)] = &[
    ("brute \"add a --verbose flag\"", "open the UI with this prompt sent"),
    (
        "brute -p \"find where the config is parsed and fix the off-by-one\"",
        "one task, headless",
    ),
    (
        "git diff | brute -p \"review this\"",
        "piped stdin is added to the prompt",
    ),
    ("brute -p - < task.md", "the whole prompt from stdin"),
    (
        "brute -p \"run the tests\" --output-format stream-json | jq 'select(.type==\"result\")'",
        "the final result object",
    ),
    (
        "brute -C ~/src/app -m gpt-5.1 -r",
        "another directory and model; pick a session",
    ),
    ("brute -- \"undo that\"", "a prompt that starts with a command name"),
    (
        "brute --provider replay -p \"show me around\"",
        "the demo; no key needed",
    ),
];

/// `--help`'s epilogue: the exit codes and examples.
fn after_help() -> String {
    let mut out = String::from("Exit codes:\n");
    for (code, meaning) in EXIT_CODES {
        out.push_str(&format!("  {code:<9}{meaning}\n"));
    }
    out.push_str("\nExamples:\n");
    for (command, what) in EXAMPLES {
        out.push_str(&format!("  {command}\n      {what}\n"));
    }
    out.truncate(out.trim_end().len());
    out
}

/// brute: a terminal coding agent.
#[derive(Debug, Parser)]
#[command(name = "brute", version, about, after_help = after_help())]
pub struct Cli {
    /// Open the UI with this prompt sent; unquoted words are one prompt (a subcommand name is
    /// the subcommand: use `--` first for a prompt like "undo that")
    #[arg(value_name = "PROMPT")]
    pub first_prompt: Vec<String>,

    /// Run one task headless and print the answer. Piped stdin is added to PROMPT; `-p -`, or
    /// `-p` with no text and stdin piped, reads the whole prompt from stdin
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT", num_args = 0..=1)]
    pub prompt: Option<Option<String>>,

    /// Change to DIR before anything else (as `git -C`: other relative paths start there)
    #[arg(short = 'C', long = "cd", value_name = "DIR", global = true)]
    pub cd: Option<PathBuf>,

    /// Provider: openai, anthropic, responses, ollama or replay
    #[arg(long, value_name = "NAME", global = true)]
    pub provider: Option<String>,

    /// Model name, as the provider spells it
    #[arg(short = 'm', long, value_name = "MODEL", global = true)]
    pub model: Option<String>,

    /// Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)
    #[arg(long, value_name = "URL", global = true)]
    pub base_url: Option<String>,

    /// Maximum model requests per user turn (default 100)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub max_turns: Option<u32>,

    /// Script for the replay provider (default: the built-in demo)
    #[arg(long, value_name = "FILE", global = true)]
    pub script: Option<PathBuf>,

    /// Ask for whole responses instead of streams (for servers that cannot stream tool calls)
    #[arg(long, global = true)]
    pub no_stream: bool,

    /// Only offer these tools (comma-separated)
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        conflicts_with = "no_tools",
        global = true
    )]
    pub tools: Option<Vec<String>>,

    /// Offer no tools at all
    #[arg(long, global = true)]
    pub no_tools: bool,

    /// What commands may do: read-only, workspace-write (default) or full-access
    #[arg(long, value_name = "MODE", value_parser = ["read-only", "workspace-write", "full-access"], global = true)]
    pub sandbox: Option<String>,

    /// Full access and no approval prompts (only where you would run anything yourself)
    #[arg(long, conflicts_with = "sandbox", global = true)]
    pub yolo: bool,

    /// Claude Code's permission modes, mapped onto brute's (plan: read-only, ends with a plan)
    #[arg(long, value_enum, value_name = "MODE", conflicts_with_all = ["sandbox", "yolo"], global = true)]
    pub permission_mode: Option<PermissionMode>,

    /// How hard reasoning models think (Claude's extended thinking, OpenAI's reasoning effort)
    #[arg(long, value_name = "LEVEL", value_parser = ["low", "medium", "high"], global = true)]
    pub effort: Option<String>,

    /// Another directory commands and tools may write (repeatable; relative to -C's DIR)
    #[arg(long = "add-dir", value_name = "DIR", global = true)]
    pub add_dir: Vec<std::path::PathBuf>,

    /// Attach an image (PNG, JPEG, GIF or WebP) to the first prompt (repeatable)
    #[arg(short = 'i', long = "image", value_name = "FILE")]
    pub image: Vec<std::path::PathBuf>,

    /// Output format for -p
    #[arg(long, value_enum, default_value_t = OutputFormat::Text, value_name = "FORMAT")]
    pub output_format: OutputFormat,

    /// Where headless prompts come from: text (the -p prompt) or stream-json (user messages and
    /// Claude Code's control requests as JSON lines on stdin, many turns in one process)
    #[arg(long, value_enum, default_value_t = InputFormat::Text, value_name = "FORMAT")]
    pub input_format: InputFormat,

    /// With --output-format stream-json: also print the model's stream as it arrives
    /// (`stream_event` lines)
    #[arg(long)]
    pub include_partial_messages: bool,

    /// Ask approvals through the program on stdin (`stdio`: Claude Code's `can_use_tool`
    /// control requests; needs --input-format stream-json)
    #[arg(long, value_name = "TOOL", value_parser = ["stdio"])]
    pub permission_prompt_tool: Option<String>,

    /// Replace brute's system prompt with TEXT (empty keeps brute's own)
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,

    /// Add TEXT to the end of the system prompt
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Option<String>,

    /// Permission rules that allow calls without asking, comma- or space-separated
    /// (`shell(cargo test*)`; Claude Code's `Bash(git log:*)`, `Edit`, `Read` are understood)
    #[arg(long = "allowedTools", alias = "allowed-tools", value_name = "RULES", num_args = 1..)]
    pub allowed_tools: Vec<String>,

    /// Permission rules that refuse calls, like --allowedTools
    #[arg(long = "disallowedTools", alias = "disallowed-tools", value_name = "RULES", num_args = 1..)]
    pub disallowed_tools: Vec<String>,

    /// Accepted for Claude Code's tools; brute prints the same either way
    #[arg(long)]
    pub verbose: bool,

    /// Accepted for Claude Code's SDK; brute reads its own config files (user, then a trusted
    /// project's), whatever the list says
    #[arg(long, value_name = "SOURCES")]
    pub setting_sources: Option<String>,

    /// Claude Code's options that change nothing brute promises, accepted and ignored with a
    /// note (docs/sdk.md lists them): beta headers, a fallback model, hook events in the
    /// stream, thinking budgets and display.
    #[command(flatten)]
    pub ignored: IgnoredClaudeFlags,

    /// Continue the latest session of this directory (also with -p)
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_session: bool,

    /// Resume a session of this directory; without an ID, list them to pick one
    #[arg(short = 'r', long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,

    /// With -p: no tool activity lines on stderr
    #[arg(short, long)]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Claude Code's flags brute accepts and ignores (see [`Cli::ignored`]).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct IgnoredClaudeFlags {
    #[arg(long, hide = true, value_name = "LIST")]
    pub betas: Option<String>,
    #[arg(long, hide = true, value_name = "MODEL")]
    pub fallback_model: Option<String>,
    #[arg(long, hide = true)]
    pub include_hook_events: bool,
    #[arg(long, hide = true, value_name = "N")]
    pub max_thinking_tokens: Option<u64>,
    #[arg(long, hide = true, value_name = "MODE")]
    pub thinking: Option<String>,
    #[arg(long, hide = true, value_name = "MODE")]
    pub thinking_display: Option<String>,
}

impl IgnoredClaudeFlags {
    /// One note per flag given, for stderr.
    pub fn notes(&self) -> Vec<String> {
        let given = [
            ("--betas", self.betas.is_some(), "brute sends no beta headers"),
            (
                "--fallback-model",
                self.fallback_model.is_some(),
                "brute retries the same model",
            ),
            (
                "--include-hook-events",
                self.include_hook_events,
                "hooks show as notices",
            ),
            (
                "--max-thinking-tokens",
                self.max_thinking_tokens.is_some(),
                "use --effort low|medium|high",
            ),
            ("--thinking", self.thinking.is_some(), "use --effort low|medium|high"),
            (
                "--thinking-display",
                self.thinking_display.is_some(),
                "thinking is always streamed",
            ),
        ];
        given
            .iter()
            .filter(|(_, set, _)| *set)
            .map(|(flag, _, why)| format!("{flag} is Claude Code's and ignored here ({why})"))
            .collect()
    }
}

/// `--permission-mode`: Claude Code's names, mapped onto brute's modes (see [`PermissionMode::flags`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PermissionMode {
    /// The configured sandbox mode (workspace-write unless config says otherwise)
    #[value(name = "default")]
    Default,
    /// workspace-write: edits in the project and confined commands need no approval
    #[value(name = "acceptEdits")]
    AcceptEdits,
    /// Plan mode: read-only tools and commands; the model ends with a plan
    #[value(name = "plan")]
    Plan,
    /// The same as --yolo: full access, no approval prompts
    #[value(name = "bypassPermissions")]
    BypassPermissions,
    /// The configured sandbox mode, and nobody is asked: what would need approval is denied
    #[value(name = "dontAsk")]
    DontAsk,
}

impl PermissionMode {
    /// What the mode sets of brute's own flags: `--sandbox`, `--yolo`, and plan mode.
    pub fn flags(self) -> (Option<crate::sandbox::Mode>, bool, bool) {
        match self {
            Self::Default => (None, false, false),
            Self::AcceptEdits => (Some(crate::sandbox::Mode::WorkspaceWrite), false, false),
            Self::Plan => (None, false, true),
            Self::BypassPermissions => (None, true, false),
            Self::DontAsk => (None, false, false),
        }
    }
}

/// How `brute -p` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The answer streamed as text; tool activity on stderr
    Text,
    /// One JSON object at the end: the result (Claude Code's shape, plus brute's fields)
    Json,
    /// Claude Code's message stream: system/init, assistant and user messages, a result per turn
    StreamJson,
    /// brute's own events as JSON lines, between the init line and the result
    Events,
}

/// Where `brute -p` takes its prompts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// The -p prompt (with piped stdin added)
    Text,
    /// Claude Code's stream-json: user messages and control requests as JSON lines
    StreamJson,
}

/// The subcommands. A first argument that names one is that subcommand, never a prompt
/// (`brute -- "undo that"` is the prompt); each is dispatched in `main.rs`'s `subcommand`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the effective settings and where each came from (keys hidden)
    Config,
    /// Undo the last turn of the latest session in this directory (files and conversation)
    Undo {
        /// List the checkpoints instead
        #[arg(long)]
        list: bool,
        /// Overwrite files changed since the agent's turn instead of skipping them
        #[arg(long)]
        force: bool,
        /// Restore the files but keep the conversation as it is
        #[arg(long)]
        code_only: bool,
        /// When some stored contents are missing, restore the other files anyway
        #[arg(long)]
        partial: bool,
    },
    /// Re-apply the turn the last undo took back
    Redo {
        /// Overwrite files changed since the undo instead of skipping them
        #[arg(long)]
        force: bool,
        /// When some stored contents are missing, re-apply the other files anyway
        #[arg(long)]
        partial: bool,
    },
    /// List the sandbox mode and the permission rules in effect here, with their sources
    Permissions,
    /// Trust a project directory (default: this one): its .brute/config.toml may then set the
    /// provider, base URL, command tools, sandbox and permission rules
    Trust {
        #[arg(value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// Stop trusting a project directory (default: this one)
    Untrust {
        #[arg(value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// Manage MCP servers: list, show, add or remove them (add and remove edit the user
    /// config file)
    Mcp {
        #[command(subcommand)]
        action: McpCommand,
    },
    /// Serve the Agent Client Protocol on stdin and stdout, for editors (Zed, JetBrains,
    /// Neovim, Emacs): `brute acp [FLAGS]`, with the usual provider, model and sandbox flags
    Acp,
    /// Print shell completions
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
}

/// `brute mcp …`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// List the configured servers: name, transport, command or URL, enabled, source
    List,
    /// Show one server's settings
    Get {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Add a server to the user config: `brute mcp add NAME -- COMMAND [ARGS...]` (stdio) or
    /// `brute mcp add NAME --url URL` (streamable HTTP)
    Add {
        #[arg(value_name = "NAME")]
        name: String,
        /// An environment variable for the server (repeatable)
        #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// A streamable HTTP endpoint instead of a command
        #[arg(long, value_name = "URL", conflicts_with = "command")]
        url: Option<String>,
        /// The command that starts the server, and its arguments (after `--`)
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Remove a server from the user config
    Remove {
        #[arg(value_name = "NAME")]
        name: String,
    },
}

/// Other agents' spellings, turned into brute's before the arguments are parsed, with a note
/// for each (for stderr): `brute exec TASK…` (Codex) is `brute -p "TASK…"`, and
/// `--dangerously-skip-permissions` (Claude Code) is `--yolo`.
pub fn habits(args: Vec<std::ffi::OsString>) -> (Vec<std::ffi::OsString>, Vec<String>) {
    let mut notes = Vec::new();
    let mut out: Vec<std::ffi::OsString> = Vec::with_capacity(args.len());
    let mut rest = args.into_iter().peekable();
    if let Some(program) = rest.next() {
        out.push(program);
    }
    // The options before the first word (with their values) stay as they are.
    let valued = valued_options();
    while let Some(arg) = rest.next_if(|a| a.to_string_lossy().starts_with('-') && a != "--") {
        let takes_value = valued.iter().any(|o| *o == arg.to_string_lossy());
        out.push(translate(arg, &mut notes));
        if takes_value && let Some(value) = rest.next() {
            out.push(value);
        }
    }
    if rest.peek().is_some_and(|a| a == "exec") {
        rest.next();
        let mut words = Vec::new();
        while let Some(word) = rest.next_if(|a| !a.to_string_lossy().starts_with('-')) {
            words.push(word.to_string_lossy().into_owned());
        }
        out.push("-p".into());
        if !words.is_empty() {
            out.push(words.join(" ").into());
        }
    }
    for arg in rest {
        out.push(translate(arg, &mut notes));
    }
    (out, notes)
}

/// One option in brute's spelling.
fn translate(arg: std::ffi::OsString, notes: &mut Vec<String>) -> std::ffi::OsString {
    if arg == "--dangerously-skip-permissions" {
        notes.push("--dangerously-skip-permissions is brute's --yolo: full access, no approval prompts".to_owned());
        "--yolo".into()
    } else {
        arg
    }
}

/// The spellings (`--model`, `-m`) of the options that always take a value.
fn valued_options() -> Vec<String> {
    use clap::CommandFactory;
    let command = Cli::command();
    let mut out = Vec::new();
    for arg in command.get_arguments() {
        let always = arg.get_action().takes_values() && arg.get_num_args().is_none_or(|n| n.min_values() > 0);
        if !always || arg.is_positional() {
            continue;
        }
        out.extend(arg.get_long().map(|l| format!("--{l}")));
        out.extend(arg.get_short().map(|c| format!("-{c}")));
    }
    out
}

/// For a command line clap refused: a hint when its first word names a subcommand but the
/// rest reads like a prompt (`brute undo that change`).
pub fn prompt_hint(args: &[std::ffi::OsString]) -> Option<String> {
    use clap::CommandFactory;
    let first = args.get(1)?.to_str()?;
    let command = Cli::command();
    command.find_subcommand(first)?;
    let words: Vec<String> = args[1..].iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let prompt = words.join(" ");
    Some(format!(
        "`{first}` is a subcommand; for a prompt, quote it after `--`: brute -- \"{prompt}\" (or brute -p \"{prompt}\")"
    ))
}

/// Shells with generated completions (and the man page, generated the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    /// The man page (roff), for `man -l` or a man directory
    Man,
}

impl Shell {
    /// The file in `completions/` that holds this shell's script.
    pub fn file_name(self) -> &'static str {
        match self {
            Shell::Bash => "brute.bash",
            Shell::Zsh => "_brute",
            Shell::Fish => "brute.fish",
            Shell::Man => "brute.1",
        }
    }
}

/// Generates the completion script for `shell`.
pub fn completions(shell: Shell) -> Vec<u8> {
    use clap::CommandFactory;
    let mut command = Cli::command();
    let mut out = Vec::new();
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
        Shell::Man => return man::render(command),
    };
    clap_complete::generate(generator, &mut command, "brute", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::{EXIT_CODES, exit};

    fn parsed(args: &[&str]) -> (Result<super::Cli, clap::Error>, Vec<String>) {
        let (args, notes) = super::habits(args.iter().map(Into::into).collect());
        (<super::Cli as clap::Parser>::try_parse_from(args), notes)
    }

    #[test]
    fn other_agents_habits_parse() {
        let (cli, _) = parsed(&["brute", "fix", "the", "bug"]);
        let cli = cli.unwrap();
        assert_eq!(cli.first_prompt, ["fix", "the", "bug"]);
        assert!(cli.command.is_none());
        let (cli, _) = parsed(&["brute", "exec", "fix", "it", "-m", "x"]);
        let cli = cli.unwrap();
        assert_eq!(cli.prompt, Some(Some("fix it".to_owned())));
        assert_eq!(cli.model.as_deref(), Some("x"));
        let (cli, notes) = parsed(&["brute", "--dangerously-skip-permissions", "-p", "go"]);
        assert!(cli.unwrap().yolo);
        assert!(notes[0].contains("--yolo"), "{notes:?}");
        let (cli, _) = parsed(&["brute", "acp", "--model", "m", "--sandbox", "read-only"]);
        let cli = cli.unwrap();
        assert!(matches!(cli.command, Some(super::Command::Acp)));
        assert_eq!(
            (cli.model.as_deref(), cli.sandbox.as_deref()),
            (Some("m"), Some("read-only"))
        );
        let (cli, _) = parsed(&["brute", "-p", "x", "--betas", "b", "--include-hook-events"]);
        let notes = cli.unwrap().ignored.notes();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("--betas is Claude Code's"), "{notes:?}");
        let (cli, _) = parsed(&["brute", "undo", "that", "change"]);
        assert!(cli.is_err());
        let hint = super::prompt_hint(&["brute".into(), "undo".into(), "that".into()]).unwrap();
        assert!(hint.contains("brute -- \"undo that\""), "{hint}");
        assert_eq!(super::prompt_hint(&["brute".into(), "fix".into()]), None);
    }

    /// Every exit code brute uses is explained in `--help`, the man page and the user guide.
    #[test]
    fn every_exit_code_is_documented() {
        let guide = include_str!("../../docs/user-guide.md");
        for code in [
            exit::OK,
            exit::ERROR,
            exit::USAGE,
            exit::MAX_TURNS,
            exit::INTERRUPTED,
            exit::TERMINATED,
            exit::HANGUP,
        ] {
            let code = code.to_string();
            assert!(
                EXIT_CODES.iter().any(|(codes, _)| codes.split(", ").any(|c| c == code)),
                "exit code {code} is not in EXIT_CODES"
            );
            assert!(
                guide
                    .lines()
                    .any(|l| l.starts_with('|') && l.contains(&format!(" {code} "))),
                "exit code {code} is not in the exit code table of docs/user-guide.md"
            );
        }
    }
}
