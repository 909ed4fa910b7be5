//! The `brute` binary: parse the command line, set up logging, dispatch.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use brute::cli::{Cli, Command, exit};
use brute::config::{self, Flags, paths};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(code) => code,
        Err(error) => {
            let usage = error.downcast_ref::<config::ConfigError>().is_some();
            eprintln!("brute: {error:#}");
            if usage { exit::USAGE } else { exit::ERROR }
        }
    };
    let _ = std::io::stdout().flush();
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn flags(cli: &Cli) -> Flags {
    Flags {
        provider: cli.provider.clone(),
        model: cli.model.clone(),
        base_url: cli.base_url.clone(),
        max_turns: cli.max_turns,
        script: cli.script.clone(),
        no_stream: cli.no_stream,
        tools: cli.tools.clone(),
        no_tools: cli.no_tools,
    }
}

/// Logs go to a file in the data directory, never to the terminal.
fn init_logging() {
    let Some(dir) = paths::data_dir() else { return };
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let Ok(file) = std::fs::OpenOptions::new()
        .create(true)
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

/// `brute` without `-p`: the terminal UI when a terminal is there.
#[cfg(feature = "tui")]
fn interactive(settings: &config::Settings, root: &std::path::Path) -> anyhow::Result<i32> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!("brute: the interactive UI needs a terminal; use `brute -p \"...\"` in scripts and pipes");
        return Ok(exit::USAGE);
    }
    init_logging();
    runtime()?.block_on(brute::tui::run(settings, root))
}

#[cfg(not(feature = "tui"))]
fn interactive(_settings: &config::Settings, _root: &std::path::Path) -> anyhow::Result<i32> {
    eprintln!("brute: built without the `tui` feature; run a task with `brute -p \"...\"`");
    Ok(exit::USAGE)
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    let root = std::env::current_dir()?;
    if let Some(Command::Completions { shell }) = cli.command {
        std::io::stdout().write_all(&brute::cli::completions(shell))?;
        return Ok(exit::OK);
    }
    let user_config = paths::config_dir().map(|d| d.join("config.toml"));
    let settings = config::load(&root, &flags(&cli), &config::process_env, user_config.as_deref())?;
    if let Some(Command::Config) = cli.command {
        print!("{}", settings.describe());
        return Ok(exit::OK);
    }
    let Some(prompt) = cli.prompt.clone() else {
        return interactive(&settings, &root);
    };
    init_logging();
    let prompt = brute::oneshot::prompt_with_stdin(prompt)?;
    let options = brute::oneshot::Options {
        prompt,
        format: cli.output_format,
        quiet: cli.quiet,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(brute::oneshot::run(&settings, &root, options))
}
