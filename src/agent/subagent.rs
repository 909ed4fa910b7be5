//! Sub-agents as tools: a whole agent (own prompt, own tools, own iteration limit) behind a
//! `task` parameter, returning its final text. Its events reach the front ends wrapped in
//! [`crate::protocol::Event::Nested`] with the call's id, so they show in that call's pane.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::agent::{Agent, AgentConfig, prompt};
use crate::protocol::TurnOutcome;
use crate::tool::exec::Executor;
use crate::tool::state::AgentState;
use crate::tool::{Params, Registry, Tool, ToolContext, ToolError, ToolOutput, str_arg};

/// Builds a fresh tool registry for each sub-agent run.
pub type RegistryFactory = Arc<dyn Fn() -> Registry + Send + Sync>;

/// A sub-agent exposed as a tool.
pub struct SubAgentTool {
    name: String,
    description: String,
    system_prompt: String,
    tools: RegistryFactory,
    max_turns: u32,
    /// The least its tools can change (plan mode offers it only when that is nothing).
    reach: crate::tool::Reach,
}

/// The system prompt of the built-in `task` sub-agent.
const TASK_PROMPT: &str = "You are a research sub-agent of brute, a coding agent. Complete the task you are given using your read-only tools; you cannot change files or run commands. Work efficiently (call independent tools together), then reply with a concise, complete report: what you found, with file paths and line numbers, so the main agent can act without repeating your work.\n\nEnvironment: working directory {cwd}; git repository: {git}; platform: {platform}; date: {date}.";

impl SubAgentTool {
    /// A sub-agent tool named `name`, with its own prompt, tools and iteration limit.
    pub fn new(name: &str, description: &str, system_prompt: &str, tools: RegistryFactory, max_turns: u32) -> Self {
        let registry = tools();
        let reads_only = registry.names().into_iter().all(|name| {
            registry
                .get(name)
                .is_some_and(|tool| tool.reach() == crate::tool::Reach::Reads)
        });
        Self {
            reach: match reads_only {
                true => crate::tool::Reach::Reads,
                false => crate::tool::Reach::Anything,
            },
            name: name.to_owned(),
            description: description.to_owned(),
            system_prompt: system_prompt.to_owned(),
            tools,
            max_turns: max_turns.max(1),
        }
    }

    /// The built-in `task` tool: read-only tools (read, fs_search, fetch, skill), 25 turns.
    pub fn task() -> Self {
        let tools: RegistryFactory = Arc::new(|| {
            let mut registry = crate::pipeline::registry();
            registry.register(Arc::new(crate::tool::read::ReadTool));
            registry.register(Arc::new(crate::tool::fs_search::SearchTool::default()));
            registry.register(Arc::new(crate::tool::fetch::FetchTool::default()));
            registry.register(Arc::new(crate::tool::skill::SkillTool));
            registry
        });
        Self::new(
            "task",
            "Delegate a self-contained research task (finding code, reading docs, answering a question about the project) to a sub-agent with its own context and read-only tools. Returns its report. Use it to keep large explorations out of your context; run several at once for independent questions.",
            TASK_PROMPT,
            tools,
            25,
        )
    }
}

impl Tool for SubAgentTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn display(&self) -> crate::protocol::Display {
        crate::protocol::Display::Agent
    }

    fn reach(&self) -> crate::tool::Reach {
        self.reach
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string(
                "task",
                "The complete task, with all the context the sub-agent needs",
                true,
            )
            .string("description", "A 3-5 word summary shown to the user", false)
            .build()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let task = str_arg(&args, "task")?.to_owned();
            let events = ctx.events.nested(&ctx.call_id);
            let parent = &ctx.agent;
            let state = Arc::new(
                AgentState::new(
                    parent.provider.clone(),
                    parent.model(),
                    parent.max_tokens,
                    ctx.root.clone(),
                )
                .with_cwd(ctx.cwd.clone())
                .with_effort(parent.effort())
                .with_skills(parent.skills.clone())
                .with_overflow_dir(parent.overflow_dir.clone())
                .with_requests(parent.requests.clone())
                .with_hooks(parent.hooks.for_subagent())
                .with_background(parent.background.clone()),
            );
            let skills: Vec<_> = parent.skills.iter().map(|s| s.summary()).collect();
            let executor = Executor::new(
                Arc::new((self.tools)()),
                ctx.snapshots.clone(),
                state.clone(),
                events.clone(),
            );
            let config = AgentConfig {
                system_prompt: prompt::build(
                    &self.system_prompt,
                    &crate::config::project::Workspace {
                        root: ctx.root.clone(),
                        cwd: ctx.cwd.clone(),
                    },
                    crate::paths::config_dir().as_deref(),
                    &skills,
                ),
                max_turns: self.max_turns,
            };
            let mut agent = Agent::new(state, executor, config, events).without_background_notes();
            let end = agent.run_turn_with_cancel(task, ctx.cancel.child_token()).await;
            match end.outcome {
                TurnOutcome::Done => Ok(ToolOutput::text(end.text)),
                TurnOutcome::MaxTurns => Ok(ToolOutput::text(format!(
                    "{}\n\n[the sub-agent stopped at its limit of {} model requests; its report may be incomplete]",
                    end.text, self.max_turns
                ))),
                TurnOutcome::Interrupted => Err(ToolError::new("Interrupted", "the sub-agent was interrupted")),
                TurnOutcome::Error => Err(ToolError::new(
                    "SubAgentFailed",
                    end.error.unwrap_or_else(|| "the sub-agent failed".to_owned()),
                )),
            }
        })
    }
}
