//! Wiring shared by the front ends: from [`Settings`] to a ready [`Agent`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::state::AgentState;
use crate::agent::{Agent, AgentConfig, prompt, question::QuestionTool, skills};
use crate::config::{ProviderKind, Settings, paths};
use crate::protocol::EventSink;
use crate::provider::http::{HttpProvider, HttpSettings, WireFormat};
use crate::provider::replay::{DEMO_SCRIPT, ReplayProvider};
use crate::provider::{Provider, ProviderError};
use crate::session;
use crate::tool::adapter::{FileQueue, SnapshotFirst};
use crate::tool::command::CommandTool;
use crate::tool::exec::Executor;
use crate::tool::registry::ToolFilter;
use crate::tool::{
    Pipeline, Registry, Snapshots, Tool, fetch, fs_search, patch, read, remove, shell, skill, subagent, todo, undo,
    write,
};

/// Why the agent could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("cannot read the replay script {path}: {message}")]
    Script { path: PathBuf, message: String },
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("{0}")]
    Session(String),
}

/// Builds the provider the settings describe.
pub fn provider(settings: &Settings) -> Result<Arc<dyn Provider>, SetupError> {
    let kind = settings.provider.value;
    let format = match kind {
        ProviderKind::Replay => {
            let script = match &settings.script {
                Some(path) => std::fs::read_to_string(&path.value).map_err(|e| SetupError::Script {
                    path: path.value.clone(),
                    message: e.to_string(),
                })?,
                None => DEMO_SCRIPT.to_owned(),
            };
            return Ok(Arc::new(ReplayProvider::from_script(&script)?));
        }
        ProviderKind::OpenAi | ProviderKind::Ollama => WireFormat::OpenAiChat,
        ProviderKind::Anthropic => WireFormat::Anthropic,
        ProviderKind::Responses => WireFormat::Responses,
    };
    let http = HttpSettings {
        base_url: settings.base_url.value.clone(),
        api_key: settings.api_key.as_ref().map(|k| k.value.clone()),
        key_hint: settings.key_hint(),
        stream: settings.stream.value,
        max_attempts: settings.max_attempts.value,
        retry_base: std::time::Duration::from_millis(settings.retry_base_ms.value),
        retry_max: std::time::Duration::from_secs(60),
        connect_timeout: settings.connect_timeout(),
        idle_timeout: settings.idle_timeout(),
    };
    Ok(Arc::new(HttpProvider::new(format, kind.as_str(), http)?))
}

/// Wraps a mutating built-in so calls on one file are queued in call order and the file is
/// snapshotted before it changes (the registry adds validation and logging around this).
fn mutating(tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
    Arc::new(Pipeline::new(tool).layer(FileQueue).layer(SnapshotFirst))
}

/// The built-in tools, in the order they are advertised.
pub fn builtin_tools() -> Registry {
    let mut registry = Registry::new();
    registry.register(Arc::new(read::ReadTool));
    registry.register(mutating(Arc::new(write::WriteTool)));
    registry.register(mutating(Arc::new(patch::PatchTool)));
    registry.register(mutating(Arc::new(remove::RemoveTool)));
    registry.register(Arc::new(Pipeline::new(Arc::new(undo::UndoTool)).layer(FileQueue)));
    registry.register(Arc::new(fs_search::SearchTool::default()));
    registry.register(Arc::new(shell::ShellTool));
    registry.register(Arc::new(fetch::FetchTool::default()));
    registry.register(Arc::new(todo::TodoWriteTool));
    registry.register(Arc::new(todo::TodoReadTool));
    registry.register(Arc::new(QuestionTool));
    registry.register(Arc::new(skill::SkillTool));
    registry.register(Arc::new(subagent::SubAgentTool::task()));
    registry
}

/// Which session an agent records into.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SessionChoice {
    /// Nothing is saved (tests, embedding).
    Off,
    /// A new session.
    #[default]
    New,
    /// The latest session of this directory (a new one when there is none).
    Continue,
    /// This session of this directory.
    Resume(String),
}

/// An agent ready to run, plus notices for the person (e.g. tools dropped by the cap) and,
/// for a resumed session, what it already holds.
pub struct Built {
    pub agent: Agent,
    pub notices: Vec<String>,
    pub history: Vec<crate::provider::Message>,
    pub todos: Vec<crate::protocol::TodoItem>,
    pub durations: std::collections::BTreeMap<String, u64>,
}

/// Opens (or creates) the session to record into.
fn open_session(
    settings: &Settings,
    root: &Path,
    choice: &SessionChoice,
    notices: &mut Vec<String>,
) -> Result<Option<(session::Recorder, session::Loaded)>, SetupError> {
    if *choice == SessionChoice::Off {
        return Ok(None);
    }
    let Some(data_dir) = paths::data_dir() else {
        notices.push("no data directory: this session is not saved and /undo covers single tool calls only".into());
        return Ok(None);
    };
    session::prune::maybe_prune(&data_dir);
    let store = session::SessionStore::new(&data_dir, root);
    let (file, loaded) = match choice {
        SessionChoice::Resume(id) => store
            .open(id)
            .map_err(|e| SetupError::Session(format!("cannot open session {id}: {e}")))?,
        SessionChoice::Continue if store.latest().is_some() => {
            let id = store.latest().unwrap_or_default();
            store
                .open(&id)
                .map_err(|e| SetupError::Session(format!("cannot open session {id}: {e}")))?
        }
        SessionChoice::Continue | SessionChoice::New | SessionChoice::Off => {
            if *choice == SessionChoice::Continue {
                notices.push("no earlier session in this directory; starting a new one".into());
            }
            match store.create() {
                Ok(file) => (file, session::Loaded::default()),
                // An unwritable data directory costs the session, not the run.
                Err(e) => {
                    notices.push(format!(
                        "cannot save this session ({e}); /undo covers single tool calls only"
                    ));
                    return Ok(None);
                }
            }
        }
    };
    let recorder = session::Recorder::new(store, file, &loaded, settings.checkpoint_max_file_bytes.value);
    Ok(Some((recorder, loaded)))
}

/// Builds the agent for `root` from `settings`, with `extra` tools (library users' own)
/// added after the built-ins and the configured command tools.
pub fn build_agent_with(
    settings: &Settings,
    root: &Path,
    events: EventSink,
    interactive: bool,
    extra: Vec<Arc<dyn Tool>>,
    session: &SessionChoice,
) -> Result<Built, SetupError> {
    let provider = provider(settings)?;
    let mut registry = builtin_tools();
    let mut notices = Vec::new();
    for spec in &settings.command_tools {
        match CommandTool::new(spec.clone()) {
            Ok(tool) => registry.register(Arc::new(tool)),
            Err(problem) => notices.push(format!("command tool skipped: {problem}")),
        }
    }
    for tool in extra {
        registry.register(tool);
    }
    let filter = match &settings.allow_tools {
        None => ToolFilter::All,
        Some(list) if list.value.is_empty() => ToolFilter::None,
        Some(list) => ToolFilter::Only(list.value.clone()),
    };
    notices.extend(registry.apply(&filter, &settings.deny_tools.value, settings.max_tools.value));
    let user_skills = paths::config_dir().map(|d| d.join("skills"));
    let skills = skills::discover(root, user_skills.as_deref());
    let summaries: Vec<_> = if registry.get("skill").is_some() {
        skills.iter().map(skills::Skill::summary).collect()
    } else {
        Vec::new()
    };
    let template = settings
        .system_prompt
        .as_ref()
        .map_or(prompt::TEMPLATE, |p| p.value.as_str());
    let system_prompt = prompt::build(template, root, &summaries);
    let overflow_dir = paths::data_dir().map(|d| d.join("tool-output"));
    if let Some(dir) = &overflow_dir {
        crate::tool::truncate::clean_overflow(dir);
    }
    let state = Arc::new(
        AgentState::new(
            provider,
            settings.model.value.clone(),
            settings.max_tokens.value,
            root.to_path_buf(),
        )
        .with_skills(skills)
        .with_overflow_dir(overflow_dir),
    );
    let executor = Executor::new(
        Arc::new(registry),
        Arc::new(Snapshots::default()),
        state.clone(),
        events.clone(),
    );
    let config = AgentConfig {
        system_prompt,
        max_turns: settings.max_turns.value,
        interactive,
    };
    let mut agent = Agent::new(state.clone(), executor, config, events.clone());
    let (mut history, mut todos, mut durations) = (Vec::new(), Vec::new(), Default::default());
    if let Some((recorder, loaded)) = open_session(settings, root, session, &mut notices)? {
        history = loaded.history.clone();
        todos = loaded.todos.clone();
        if !todos.is_empty() {
            state.set_todos(todos.clone(), &events);
        }
        durations = loaded.durations.clone();
        agent = agent
            .with_session(recorder, loaded.history)
            .with_durations(loaded.durations);
    }
    Ok(Built {
        agent,
        notices,
        history,
        todos,
        durations,
    })
}

/// Builds the agent for `root` from `settings` with the built-in and configured tools,
/// recording into the chosen session.
pub fn build_agent(
    settings: &Settings,
    root: &Path,
    events: EventSink,
    interactive: bool,
    session: &SessionChoice,
) -> Result<Built, SetupError> {
    build_agent_with(settings, root, events, interactive, Vec::new(), session)
}
