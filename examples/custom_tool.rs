//! Adds a custom tool to an agent and runs a turn.
//!
//! By default the "model" is the replay provider playing a two-turn script that calls the
//! tool, so this runs anywhere: `cargo run --example custom_tool`. Point it at a real model
//! with `BRUTE_EXAMPLE_REAL=1` and the usual provider variables (e.g. `OPENAI_API_KEY`).

use std::sync::Arc;

use brute::agent::{Agent, AgentConfig};
use brute::protocol::{Event, EventSink, TurnOutcome};
use brute::provider::Provider;
use brute::provider::replay::ReplayProvider;
use brute::tool::exec::Executor;
use brute::tool::state::AgentState;
use brute::tool::{Params, ToolError, ToolOutput, fn_tool};

/// The script the replay provider plays: call the tool, then answer with its result.
const SCRIPT: &str = r#"{"text": "Let me count. ", "tool_calls": [{"name": "count_vowels", "arguments": {"text": "a coding agent"}}]}
{"text": "There are 5 vowels in \"a coding agent\"."}"#;

/// A tool written inline: the closure gets the validated arguments and the tool context.
fn count_vowels() -> Arc<dyn brute::tool::Tool> {
    Arc::new(fn_tool(
        "count_vowels",
        "Count the vowels in a text",
        Params::new().string("text", "The text to look at", true).build(),
        |args, _ctx| async move {
            let text = args["text"]
                .as_str()
                .ok_or_else(|| ToolError::invalid("text must be a string"))?;
            let count = text.chars().filter(|c| "aeiouAEIOU".contains(*c)).count();
            Ok(ToolOutput::text(count.to_string()))
        },
    ))
}

/// Runs one turn with the custom tool and returns the transcript the example prints.
pub async fn run(provider: Arc<dyn Provider>, model: &str) -> anyhow::Result<String> {
    let root = std::env::current_dir()?;
    let state = Arc::new(AgentState::new(provider, model.to_owned(), 4096, root));
    let mut registry = brute::app::builtin_tools();
    registry.register(count_vowels());
    let (events, mut rx) = EventSink::channel();
    let executor = Executor::new(Arc::new(registry), Arc::default(), state.clone(), events.clone());
    let config = AgentConfig {
        system_prompt: "You are a helpful assistant. Use your tools.".into(),
        max_turns: 5,
    };
    let mut agent = Agent::new(state, executor, config, events);
    let end = agent
        .run_turn("How many vowels are in \"a coding agent\"?".into())
        .await;
    drop(agent);
    let mut transcript = String::new();
    while let Ok(event) = rx.try_recv() {
        match event {
            Event::ToolResult(result) => transcript.push_str(&format!("[{} → {}]\n", result.name, result.content)),
            Event::TurnFinished { text, .. } => transcript.push_str(&text),
            _ => {}
        }
    }
    anyhow::ensure!(
        end.outcome == TurnOutcome::Done,
        "the turn ended with {:?}",
        end.outcome
    );
    Ok(transcript)
}

#[allow(dead_code)] // tests include this file as a module and call `run`
fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    let (provider, model): (Arc<dyn Provider>, String) = if std::env::var_os("BRUTE_EXAMPLE_REAL").is_some() {
        let root = std::env::current_dir()?;
        let settings = brute::config::load(&root, &Default::default(), &brute::config::process_env, None)?;
        (brute::app::provider(&settings)?, settings.model.value.clone())
    } else {
        (Arc::new(ReplayProvider::from_script(SCRIPT)?), "replay".to_owned())
    };
    println!("{}", runtime.block_on(run(provider, &model))?);
    Ok(())
}

/// The replay provider with the example's script (used by the example's test).
#[allow(dead_code)]
pub fn replay() -> Arc<dyn Provider> {
    Arc::new(ReplayProvider::from_script(SCRIPT).expect("the script parses"))
}
