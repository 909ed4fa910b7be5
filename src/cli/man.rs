//! The man page: clap_mangen's title, name, synopsis, description and options, then brute's
//! own sections. clap_mangen's SUBCOMMANDS section names a page per subcommand
//! (`brute-config(1)`) that brute does not ship, and its EXTRA section is `--help`'s epilogue;
//! both are replaced here by COMMANDS, EXIT STATUS, ENVIRONMENT, FILES and EXAMPLES.

use roff::{Roff, bold, italic, roman};

/// An environment variable brute reads and what it does.
pub struct EnvVar {
    pub name: &'static str,
    pub does: &'static str,
}

/// Every environment variable brute reads, in the order the man page lists them. A test keeps
/// it a superset of what configuration reads ([`crate::config::env_vars`]).
pub const ENVIRONMENT: &[EnvVar] = &[
    EnvVar {
        name: "ANTHROPIC_API_KEY",
        does: "The Anthropic key; when set (and nothing else picks a provider) brute uses Anthropic.",
    },
    EnvVar {
        name: "OPENAI_API_KEY",
        does: "The OpenAI key; when set (and ANTHROPIC_API_KEY is not) brute uses OpenAI.",
    },
    EnvVar {
        name: "BRUTE_API_KEY",
        does: "A key for whichever provider is configured, e.g. a compatible server at a custom base URL.",
    },
    EnvVar {
        name: "ANTHROPIC_BASE_URL",
        does: "Anthropic's base URL (the host root, as Anthropic's SDKs take it).",
    },
    EnvVar {
        name: "OPENAI_BASE_URL",
        does: "The OpenAI-style base URL (ending in /v1, as OpenAI's SDKs take it).",
    },
    EnvVar {
        name: "OLLAMA_HOST",
        does: "host:port of an Ollama server; when set, brute uses it if no key variable is set.",
    },
    EnvVar {
        name: "BRUTE_NO_OLLAMA_PROBE",
        does: "When set, brute does not look for a local Ollama on 127.0.0.1:11434.",
    },
    EnvVar {
        name: "BRUTE_PROVIDER",
        does: "The provider, as --provider (overrides config files, overridden by flags).",
    },
    EnvVar {
        name: "BRUTE_MODEL",
        does: "The model, as --model.",
    },
    EnvVar {
        name: "BRUTE_BASE_URL",
        does: "The base URL, as --base-url.",
    },
    EnvVar {
        name: "BRUTE_MAX_TURNS",
        does: "Model requests per user turn, as --max-turns.",
    },
    EnvVar {
        name: "BRUTE_CONFIG_DIR",
        does: "The user config directory (default: the platform's, e.g. ~/.config/brute).",
    },
    EnvVar {
        name: "BRUTE_DATA_DIR",
        does: "The data directory: sessions, checkpoints, trust, approvals, logs (default: the platform's, e.g. ~/.local/share/brute).",
    },
    EnvVar {
        name: "BRUTE_LOG",
        does: "The log filter (e.g. debug, brute=trace) for brute.log in the data directory; default warn.",
    },
    EnvVar {
        name: "BRUTE_NO_SANDBOX",
        does: "When set (not 0), commands run without the sandbox's namespaces, so the confined modes are unavailable: brute -p refuses to start in them and the UI asks before every command.",
    },
    EnvVar {
        name: "HTTPS_PROXY, HTTP_PROXY, NO_PROXY",
        does: "The proxy for provider requests and fetch, and the hosts that bypass it.",
    },
    EnvVar {
        name: "SSL_CERT_FILE, SSL_CERT_DIR",
        does: "Extra CA certificates to trust (a PEM file, a directory of them), e.g. for a corporate proxy.",
    },
    EnvVar {
        name: "HOME",
        does: "The home directory: never taken as a project to checkpoint without asking, and the base of the default config and data directories.",
    },
];

/// The files brute reads and writes (path, what it is).
const FILES: &[(&str, &str)] = &[
    (
        "$BRUTE_CONFIG_DIR/config.toml (e.g. ~/.config/brute/config.toml)",
        "User config: provider, model, limits, sandbox, permission rules, command tools. `brute config` shows the path searched and what each layer set.",
    ),
    (
        "$BRUTE_CONFIG_DIR/AGENTS.md",
        "Your own instructions for every project, first in the system prompt.",
    ),
    (
        "$BRUTE_CONFIG_DIR/skills/, ~/.agents/skills/",
        "User skills (a SKILL.md per skill).",
    ),
    (
        ".brute/config.toml",
        "Project config, in the project root (the nearest directory with .git or .brute, below $HOME). Settings that can run code, widen the sandbox or redirect traffic apply only once the project is trusted (`brute trust`).",
    ),
    (".brute/skills/, .agents/skills/, .claude/skills/", "Project skills."),
    (
        "AGENTS.md (or CLAUDE.md)",
        "Project instructions, from the project root down to the working directory, added to the system prompt.",
    ),
    (
        "$BRUTE_DATA_DIR/sessions/",
        "Saved sessions, one JSON-lines file each, by project (for --continue, --resume, undo).",
    ),
    (
        "$BRUTE_DATA_DIR/objects/",
        "File contents of the turn checkpoints that undo and redo restore.",
    ),
    (
        "$BRUTE_DATA_DIR/trusted-projects.json",
        "The trusted projects (never kept in a project, so a repository cannot trust itself).",
    ),
    ("$BRUTE_DATA_DIR/permissions/", "Approvals saved with \"always\"."),
    (
        "$BRUTE_DATA_DIR/tool-output/",
        "Full output of tool calls that was truncated for the model.",
    ),
    ("$BRUTE_DATA_DIR/brute.log", "The log (see BRUTE_LOG)."),
];

/// The whole man page, as roff.
pub fn render(command: clap::Command) -> Vec<u8> {
    let man = clap_mangen::Man::new(command.clone());
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = man.render_title(&mut out);
    let _ = man.render_name_section(&mut out);
    let _ = man.render_synopsis_section(&mut out);
    let _ = man.render_description_section(&mut out);
    let _ = man.render_options_section(&mut out);
    out.extend(own_sections(&command).to_roff().into_bytes());
    if command.get_version().is_some() {
        let _ = man.render_version_section(&mut out);
    }
    out
}

/// COMMANDS, EXIT STATUS, ENVIRONMENT, FILES and EXAMPLES.
fn own_sections(command: &clap::Command) -> Roff {
    let mut page = Roff::new();
    page.control("SH", ["COMMANDS"]);
    page.text([roman(
        "A first argument that names a command runs that command; after -- it is a prompt.",
    )]);
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        commands_entry(&mut page, "brute", sub);
    }
    page.control("TP", []);
    page.text([bold("brute help"), roman(" ["), italic("COMMAND"), roman("]")]);
    page.text([roman("Print the help of brute or of a command.")]);

    page.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in super::EXIT_CODES {
        page.control("TP", []);
        page.text([bold(*code)]);
        page.text([roman(*meaning)]);
    }

    page.control("SH", ["ENVIRONMENT"]);
    page.text([roman(
        "Key variables are removed from the environment of every command brute runs, and their values are never printed.",
    )]);
    for var in ENVIRONMENT {
        page.control("TP", []);
        page.text([bold(var.name)]);
        page.text([roman(var.does)]);
    }

    page.control("SH", ["FILES"]);
    for (path, what) in FILES {
        page.control("TP", []);
        page.text([italic(*path)]);
        page.text([roman(*what)]);
    }

    page.control("SH", ["EXAMPLES"]);
    for (example, what) in super::EXAMPLES {
        page.control("TP", []);
        page.text([bold(*example)]);
        page.text([roman(*what)]);
    }
    page
}

/// One command: its synopsis, what it does and its options; then its own subcommands
/// (`brute mcp add`), each as an entry of its own.
fn commands_entry(page: &mut Roff, parent: &str, sub: &clap::Command) {
    let name = format!("{parent} {}", sub.get_name());
    page.control("TP", []);
    let mut line = vec![bold(name.clone())];
    for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
        let id = arg.get_id().as_str();
        if id == "help" || id == "version" {
            continue;
        }
        let (open, close) = if arg.is_required_set() {
            (" <", ">")
        } else {
            (" [", "]")
        };
        line.push(roman(open));
        match arg.get_long() {
            Some(long) => line.push(bold(format!("--{long}"))),
            None => {
                let names = arg
                    .get_value_names()
                    .map(|n| n.join(" "))
                    .unwrap_or_else(|| id.to_owned());
                line.push(italic(names.to_uppercase()));
            }
        }
        line.push(roman(close));
    }
    page.text(line);
    if let Some(about) = sub.get_long_about().or_else(|| sub.get_about()) {
        page.text([roman(about.to_string())]);
    }
    for arg in sub
        .get_arguments()
        .filter(|a| !a.is_hide_set() && a.get_long().is_some())
    {
        let (Some(long), Some(help)) = (arg.get_long(), arg.get_help()) else {
            continue;
        };
        if long == "help" {
            continue;
        }
        page.control("RS", []);
        page.control("TP", []);
        page.text([bold(format!("--{long}"))]);
        page.text([roman(help.to_string())]);
        page.control("RE", []);
    }
    for nested in sub
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        commands_entry(page, &name, nested);
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    fn page() -> String {
        String::from_utf8(super::render(crate::cli::Cli::command())).expect("roff is UTF-8")
    }

    #[test]
    fn no_references_to_pages_that_do_not_exist() {
        let page = page();
        assert!(!page.contains("brute\\-config(1)"), "{page}");
        assert!(!page.contains("(1)"), "a reference to another page: {page}");
        assert!(!page.contains(".SH EXTRA"));
    }

    #[test]
    fn has_the_sections_a_man_page_is_expected_to_have() {
        let page = page();
        for section in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "OPTIONS",
            "COMMANDS",
            "\"EXIT STATUS\"",
            "ENVIRONMENT",
            "FILES",
            "EXAMPLES",
        ] {
            assert!(
                page.contains(&format!(".SH {section}\n")),
                "no {section} section:\n{page}"
            );
        }
        assert!(page.contains("brute undo"), "{page}");
        assert!(page.contains("\\-\\-code\\-only"), "command options are listed: {page}");
    }

    /// A command with commands of its own (as `brute mcp add` will be) lists each of them.
    #[test]
    fn nested_commands_get_entries_of_their_own() {
        let command = clap::Command::new("brute").subcommand(
            clap::Command::new("mcp").about("MCP servers").subcommand(
                clap::Command::new("add")
                    .about("Add a server")
                    .arg(clap::Arg::new("name").required(true)),
            ),
        );
        let page = String::from_utf8(super::render(command)).unwrap();
        assert!(page.contains("brute mcp add"), "{page}");
        assert!(page.contains("<\\fINAME\\fR>"), "{page}");
        assert!(!page.contains("(1)"), "{page}");
    }

    #[test]
    fn every_variable_configuration_reads_is_documented() {
        let documented: Vec<&str> = super::ENVIRONMENT.iter().flat_map(|var| var.name.split(", ")).collect();
        for (var, _) in crate::config::env_vars() {
            assert!(
                documented.contains(&var),
                "{var} is missing from the man page's ENVIRONMENT"
            );
        }
        for var in [
            crate::sandbox::DISABLE_VAR,
            "BRUTE_DATA_DIR",
            "BRUTE_LOG",
            crate::paths::CONFIG_DIR_VAR,
        ] {
            assert!(documented.contains(&var), "{var}");
        }
    }
}
