//! The `brute` binary: parse the command line, set up logging, dispatch.

#![deny(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

/// `println!` that ignores a closed stdout (`brute undo --list | head -1`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `eprintln!` through [`brute::sanitize::eprint_line`]: what reaches stderr names files,
/// sessions and errors of the tree, and is shown in its visible form, never with escape
/// sequences.
macro_rules! errln {
    ($($arg:tt)*) => {
        brute::sanitize::eprint_line(&format!($($arg)*))
    };
}
use std::process::ExitCode;

use brute::app::SessionChoice;
use brute::cli::prompt::{self, PromptError, Run};
use brute::cli::{Cli, Command, exit};
use brute::config::{self, Flags};
use brute::paths;
use brute::session::{self, SessionStore};

fn main() -> ExitCode {
    // The sandbox init (see brute::sandbox) runs before anything else, single-threaded.
    if let Some(code) = brute::sandbox::dispatch_init() {
        return ExitCode::from(code);
    }
    brute::timing::start();
    // SAFETY: first thing in main: no other thread exists and nothing changed the environment.
    unsafe { brute::secrets::take_from_environment() };
    let (args, notes) = brute::cli::habits(std::env::args_os().collect());
    let cli = match <Cli as clap::Parser>::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(error) => {
            let refused = error.use_stderr();
            let _ = error.print();
            if refused && let Some(hint) = brute::cli::prompt_hint(&args) {
                errln!("hint: {hint}");
            }
            return ExitCode::from(if refused { exit::USAGE as u8 } else { 0 });
        }
    };
    for note in notes.into_iter().chain(cli.ignored.notes()) {
        errln!("brute: {note}");
    }
    if matches!(cli.command, None | Some(Command::Acp)) {
        // A task or the UI: both ask whether commands can be confined before their first
        // request.
        brute::sandbox::check_in_background(brute::paths::private_data_dir());
    }
    // -C first, as `git -C`: everything after, relative paths included, starts there.
    if let Some(dir) = &cli.cd
        && let Err(error) = std::env::set_current_dir(dir)
    {
        errln!("brute: cannot change to {}: {error}", dir.display());
        return ExitCode::from(exit::USAGE as u8);
    }
    let code = match run(cli) {
        Ok(code) => code,
        Err(error) => {
            let usage = error.downcast_ref::<config::ConfigError>().is_some()
                || error.downcast_ref::<PromptError>().is_some()
                || matches!(
                    error.downcast_ref::<brute::app::SetupError>(),
                    Some(
                        brute::app::SetupError::Session(_)
                            | brute::app::SetupError::Rules(_)
                            | brute::app::SetupError::Script { .. }
                            | brute::app::SetupError::Provider(brute::provider::ProviderError::Replay(_))
                    )
                );
            // An error may name a file of the tree, escape sequences and all.
            errln!("brute: {error:#}");
            if usage { exit::USAGE } else { exit::ERROR }
        }
    };
    let _ = std::io::stdout().flush();
    if let Some(timings) = brute::timing::report() {
        errln!("{timings}");
    }
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn flags(cli: &Cli) -> Flags {
    // `--permission-mode` conflicts with `--sandbox` and `--yolo` (clap says so).
    let (sandbox, yolo, plan) = cli.permission_mode.map_or((None, false, false), |m| m.flags());
    Flags {
        provider: cli.provider.clone(),
        model: cli.model.clone(),
        base_url: cli.base_url.clone(),
        max_turns: cli.max_turns,
        script: cli.script.clone(),
        no_stream: cli.no_stream,
        tools: cli.tools.clone(),
        no_tools: cli.no_tools,
        sandbox: cli.sandbox.clone().or(sandbox.map(|m| m.as_str().to_owned())),
        yolo: cli.yolo || yolo,
        plan,
        // Absolute now, so they mean the same to every tool and to the sandbox (relative ones
        // start in -C's directory, like every other path).
        add_dirs: cli
            .add_dir
            .iter()
            .map(|dir| std::path::absolute(dir).unwrap_or_else(|_| dir.clone()))
            .collect(),
        effort: cli.effort.clone(),
        images: cli
            .image
            .iter()
            .map(|file| std::path::absolute(file).unwrap_or_else(|_| file.clone()))
            .collect(),
        system_prompt: cli.system_prompt.clone(),
        append_system_prompt: cli.append_system_prompt.clone(),
        // Refused in `run` before this is reached, when they cannot be read.
        permissions: brute::cli::claude::rules(&cli.allowed_tools, &cli.disallowed_tools).unwrap_or_default(),
    }
}

/// Logs go to a file in the data directory, never to the terminal.
fn init_logging() {
    let Some(dir) = paths::private_data_dir() else { return };
    if !dir.is_dir() {
        return;
    }
    let Ok(file) = std::fs::OpenOptions::new()
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .append(true)
        .open(dir.join("brute.log"))
    else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("BRUTE_LOG").unwrap_or_else(|_| "warn".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init();
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Runs `future` to completion, then leaves without waiting for blocking work that cannot be
/// stopped (a read stuck in the kernel must not keep brute from exiting after Ctrl-C).
fn block_on<F: std::future::Future>(future: F) -> anyhow::Result<F::Output> {
    let runtime = runtime()?;
    let output = runtime.block_on(future);
    runtime.shutdown_background();
    Ok(output)
}

/// `brute` without `-p`: the terminal UI when a terminal is there, with `first_prompt` sent
/// once it starts.
#[cfg(feature = "tui")]
fn interactive(
    settings: &config::Settings,
    place: &config::project::Workspace,
    session: &SessionChoice,
    first_prompt: Option<String>,
) -> anyhow::Result<i32> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        errln!("brute: the interactive UI needs a terminal; use `brute -p \"...\"` in scripts and pipes");
        return Ok(exit::USAGE);
    }
    init_logging();
    block_on(brute::tui::run(settings, place, session, first_prompt))?
}

#[cfg(not(feature = "tui"))]
fn interactive(
    _settings: &config::Settings,
    _place: &config::project::Workspace,
    _session: &SessionChoice,
    _first_prompt: Option<String>,
) -> anyhow::Result<i32> {
    errln!("brute: built without the `tui` feature; run a task with `brute -p \"...\"`");
    Ok(exit::USAGE)
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    if let Err(refused) = brute::cli::claude::rules(&cli.allowed_tools, &cli.disallowed_tools) {
        errln!("brute: {refused}");
        return Ok(exit::USAGE);
    }
    // Started in a subdirectory, the project root (nearest `.git` or `.brute` below `$HOME`)
    // holds the config, trust and sessions; tools work from the working directory.
    let place = config::project::Workspace::discover(std::env::current_dir()?);
    let root = place.root.clone();
    if let Some(command) = &cli.command {
        return subcommand(&cli, command, &root);
    }
    // Usage errors in the prompt arguments come before anything else is looked at. A session
    // driven on stdin (stream-json input) reads no prompt from it: a -p text is its first turn.
    let positional = (!cli.first_prompt.is_empty()).then(|| cli.first_prompt.join(" "));
    let run = match cli.input_format {
        brute::cli::InputFormat::StreamJson => Run::Program {
            first: cli.prompt.clone().flatten().filter(|p| p != "-").or(positional),
        },
        brute::cli::InputFormat::Text => prompt::resolve(cli.prompt.clone(), positional, &mut prompt::ProcessStdin)?,
    };
    // Picking a session needs no provider; do it before the settings are checked.
    let session = match (&cli.resume, cli.continue_session) {
        (Some(id), _) if id.is_empty() => match pick_session(&root)? {
            Some(id) => SessionChoice::Resume(id),
            None => return Ok(exit::OK),
        },
        (Some(id), _) => SessionChoice::Resume(id.clone()),
        (None, true) => SessionChoice::Continue,
        (None, false) => SessionChoice::New,
    };
    let user_config = user_config();
    let mut settings = config::load(&root, &flags(&cli), &config::process_env, user_config.as_deref())?;
    match run {
        Run::Ui { first_prompt } => {
            if ask_trust(&settings, &root)? {
                settings = config::load(&root, &flags(&cli), &config::process_env, user_config.as_deref())?;
            }
            interactive(&settings, &place, &session, first_prompt)
        }
        Run::Headless { prompt } => headless(&cli, &settings, &place, session, Some(prompt)),
        Run::Program { first } => headless(&cli, &settings, &place, session, first),
    }
}

/// `brute -p`, or a session a program drives on stdin.
fn headless(
    cli: &Cli,
    settings: &config::Settings,
    place: &config::project::Workspace,
    session: SessionChoice,
    prompt: Option<String>,
) -> anyhow::Result<i32> {
    init_logging();
    let options = brute::oneshot::Options {
        prompt,
        input: cli.input_format,
        format: cli.output_format,
        quiet: cli.quiet,
        session,
        partial: cli.include_partial_messages,
        ask_program: cli.permission_prompt_tool.is_some(),
        never_ask: cli.permission_mode == Some(brute::cli::PermissionMode::DontAsk),
    };
    block_on(brute::oneshot::run(settings, place, options))?
}

/// The user config file's path, when there is a config directory.
fn user_config() -> Option<std::path::PathBuf> {
    paths::config_dir().map(|d| d.join("config.toml"))
}

/// Runs a subcommand. Each gets its own arm, so a new one cannot be forgotten here.
fn subcommand(cli: &Cli, command: &Command, root: &std::path::Path) -> anyhow::Result<i32> {
    match command {
        Command::Acp => {
            init_logging();
            let flags = flags(cli);
            let load = move |cwd: &std::path::Path| -> anyhow::Result<(config::Settings, config::project::Workspace)> {
                let place = config::project::Workspace::discover(cwd.to_path_buf());
                let user_config = user_config();
                let settings = config::load(&place.root, &flags, &config::process_env, user_config.as_deref())?;
                Ok((settings, place))
            };
            block_on(brute::acp::run(Box::new(load)))?
        }
        Command::Completions { shell } => {
            std::io::stdout().write_all(&brute::cli::completions(*shell))?;
            Ok(exit::OK)
        }
        Command::Undo {
            list,
            force,
            code_only,
            partial,
        } => undo_command(
            cli,
            root,
            *list,
            Move {
                force: *force,
                partial: *partial,
            },
            !*code_only,
            false,
        ),
        Command::Redo { force, partial } => undo_command(
            cli,
            root,
            false,
            Move {
                force: *force,
                partial: *partial,
            },
            false,
            true,
        ),
        Command::Trust { dir } | Command::Untrust { dir } => {
            let trusted = matches!(command, Command::Trust { .. });
            let dir = dir.clone().unwrap_or_else(|| root.to_path_buf());
            let path = config::trust::set_trusted(&dir, trusted)?;
            outln!(
                "{} {}",
                if trusted { "trusted" } else { "no longer trusted:" },
                path.display()
            );
            Ok(exit::OK)
        }
        Command::Permissions => {
            let user_config = user_config();
            let report = config::permissions_report(root, &flags(cli), &config::process_env, user_config.as_deref())?;
            let _ = write!(std::io::stdout(), "{report}");
            Ok(exit::OK)
        }
        Command::Mcp { action } => {
            let user_config = user_config();
            let servers = || config::mcp_servers(root, &flags(cli), &config::process_env, user_config.as_deref());
            let (text, code) = brute::cli::mcp::run(action, user_config.as_deref(), servers)?;
            let _ = write!(std::io::stdout(), "{text}");
            Ok(code)
        }
        Command::Config => {
            // Also works with nothing configured: then it says where it looked and what to set.
            let user_config = user_config();
            let report = config::report(root, &flags(cli), &config::process_env, user_config.as_deref())?;
            let _ = write!(std::io::stdout(), "{report}");
            Ok(exit::OK)
        }
    }
}

/// Before the UI starts in an untrusted project whose config has risky settings: asks at the
/// terminal whether to trust it (listing what would apply). Returns whether trust was given.
#[cfg(feature = "tui")]
fn ask_trust(settings: &config::Settings, root: &std::path::Path) -> anyhow::Result<bool> {
    use std::io::IsTerminal;
    if settings.untrusted_ignored.is_empty() || !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(false);
    }
    errln!(
        "{} sets {}.\nThese can run commands, widen the sandbox or send your API key elsewhere, so they apply only in\nprojects you trust. (brute trust / brute untrust do the same from the shell.)",
        root.join(".brute").join("config.toml").display(),
        settings.untrusted_ignored.join(", ")
    );
    let choice = dialoguer::Select::new()
        .with_prompt("Trust this project?")
        .items(["Not now (ignore those settings)", "Trust this project"])
        .default(0)
        .interact_opt()?;
    if choice == Some(1) {
        let path = config::trust::set_trusted(root, true)?;
        errln!("trusted {}", path.display());
        return Ok(true);
    }
    Ok(false)
}

#[cfg(not(feature = "tui"))]
fn ask_trust(_settings: &config::Settings, _root: &std::path::Path) -> anyhow::Result<bool> {
    Ok(false)
}

/// The session store of this directory.
fn store(root: &std::path::Path) -> anyhow::Result<SessionStore> {
    let data_dir = paths::data_dir().ok_or_else(|| anyhow::anyhow!("no data directory (set BRUTE_DATA_DIR)"))?;
    Ok(SessionStore::new(&data_dir, root))
}

/// `brute --resume` without an ID: a picker at a terminal, else the list.
fn pick_session(root: &std::path::Path) -> anyhow::Result<Option<String>> {
    let sessions = store(root)?.list();
    if sessions.is_empty() {
        errln!("brute: no saved sessions in this project");
        return Ok(None);
    }
    let lines: Vec<String> = sessions
        .iter()
        .map(|s| {
            // The first prompt is the session file's text: shown without escape sequences,
            // on stdout and in the picker alike.
            let prompt: String = s.first_prompt.lines().next().unwrap_or("").chars().take(60).collect();
            let prompt = brute::sanitize::sanitize(&prompt);
            format!(
                "{}  {}  {:>4} messages  {:>7} bytes  {prompt}",
                s.id,
                session::format_time(s.modified_ms),
                s.messages,
                s.bytes
            )
        })
        .collect();
    #[cfg(feature = "tui")]
    {
        use std::io::IsTerminal;
        if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
            let picked = dialoguer::Select::new()
                .with_prompt("Resume which session?")
                .items(&lines)
                .default(0)
                .interact_opt()?;
            return Ok(picked.map(|i| sessions[i].id.clone()));
        }
    }
    for line in lines {
        outln!("{line}");
    }
    Ok(None)
}

/// How `brute undo` / `brute redo` treat conflicts and missing contents.
struct Move {
    force: bool,
    partial: bool,
}

/// `brute undo` / `brute redo`: the last turn of the latest session in this project.
fn undo_command(
    cli: &Cli,
    root: &std::path::Path,
    list: bool,
    how: Move,
    rewind: bool,
    redo: bool,
) -> anyhow::Result<i32> {
    let store = store(root)?;
    let Some(id) = store.latest() else {
        errln!("brute: no saved session in this project");
        return Ok(exit::ERROR);
    };
    // Only the checkpoint size cap matters here; no provider is needed.
    let user_config = user_config();
    let max_file_bytes = config::load(root, &flags(cli), &config::process_env, user_config.as_deref())
        .map(|s| s.checkpoint_max_file_bytes.value)
        .unwrap_or(session::checkpoint::DEFAULT_MAX_FILE_BYTES);
    if list {
        // Reading only: works on a read-only data directory.
        let loaded = store.load(&id)?;
        for notice in loaded.notices(&store.file_path(&id)) {
            errln!("brute: note: {notice}");
        }
        outln!("session {id}");
        for (turn, changed) in session::checkpoints(&store, &loaded.turns) {
            let state = if turn.undone {
                "undone"
            } else if turn.end.is_some() {
                "done"
            } else {
                "unfinished"
            };
            let prompt: String = turn.prompt.lines().next().unwrap_or("").chars().take(60).collect();
            let prompt = brute::sanitize::sanitize(&prompt);
            let paths = if changed == 1 { "path " } else { "paths" };
            outln!(
                "  turn {:>3}  {}  {changed:>3} {paths} changed  {state:<10} {prompt}",
                turn.turn,
                session::format_time(turn.at_ms)
            );
        }
        return Ok(exit::OK);
    }
    let (file, loaded) = store.open(&id).map_err(|e| {
        if e.kind() == std::io::ErrorKind::WouldBlock {
            anyhow::anyhow!(
                "{e}: nothing was changed; use /undo in that brute, or run `brute undo` again when it has finished"
            )
        } else {
            e.into()
        }
    })?;
    for notice in loaded.notices(file.path()) {
        errln!("brute: note: {notice}");
    }
    let mut history = loaded.history.clone();
    let mut recorder = session::Recorder::new(store, file, &loaded, max_file_bytes);
    let moved = if redo {
        recorder.redo(&mut history, how.force, how.partial)?
    } else {
        recorder.undo(&mut history, rewind, how.force, how.partial)?
    };
    match moved {
        Some(moved) => {
            // Paths are the tree's: a name may hold escape sequences.
            let described = moved.describe(if redo { "redid" } else { "undid" });
            outln!("{}", brute::sanitize::sanitize(&described));
            Ok(exit::OK)
        }
        None => {
            errln!("brute: nothing to {}", if redo { "redo" } else { "undo" });
            Ok(exit::ERROR)
        }
    }
}
