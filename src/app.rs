//! Wiring shared by the front ends: from [`Settings`] to a ready [`Agent`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::conversation::{Conversation, Resumer};
use crate::agent::{Agent, AgentConfig, Compaction, prompt, question::QuestionTool};
use crate::config::Settings;
use crate::config::project::Workspace;
use crate::paths;
use crate::protocol::EventSink;
use crate::protocol::requests::Requests;
use crate::provider::http::{HttpProvider, HttpSettings};
use crate::provider::replay::{DEMO_SCRIPT, ReplayProvider};
use crate::provider::spec::Transport;
use crate::provider::text_calls::{self, TextCalls};
use crate::provider::{Provider, ProviderError};
use crate::session;
use crate::tool::command::CommandTool;
use crate::tool::exec::Executor;
use crate::tool::registry::ToolFilter;
use crate::tool::skills;
use crate::tool::state::AgentState;
use crate::tool::{Registry, Snapshots, Tool, fetch, fs_search, patch, read, remove, shell, skill, todo, undo, write};

/// Why the agent could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("cannot read the replay script {path}: {message}")]
    Script { path: PathBuf, message: String },
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("{0}")]
    Session(String),
    #[error(transparent)]
    Rules(#[from] crate::permission::RuleError),
}

/// Builds the provider the settings describe.
pub fn provider(settings: &Settings) -> Result<Arc<dyn Provider>, SetupError> {
    // A key from a config file is kept out of tool output like the environment's keys.
    if let Some(key) = &settings.api_key {
        crate::secrets::register(&key.value);
    }
    let spec = settings.provider.value.spec();
    let endpoint = match spec.transport {
        Transport::Replay => {
            let script = match &settings.script {
                Some(path) => std::fs::read_to_string(&path.value).map_err(|e| SetupError::Script {
                    path: path.value.clone(),
                    message: e.to_string(),
                })?,
                None => DEMO_SCRIPT.to_owned(),
            };
            let replay: Arc<dyn Provider> = Arc::new(ReplayProvider::from_script(&script)?);
            return Ok(with_text_calls(replay, settings.text_tool_calls.value.unwrap_or(false)));
        }
        Transport::Http(endpoint) => spec.endpoint_for(&settings.base_url.value).unwrap_or(endpoint),
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
        web_search: settings.hosted_web_search(),
    };
    let text_calls = settings
        .text_tool_calls
        .value
        .unwrap_or_else(|| text_calls::on_by_default(endpoint.wire, &http.base_url));
    let http: Arc<dyn Provider> = Arc::new(HttpProvider::new(endpoint, spec.name, http)?);
    Ok(with_text_calls(http, text_calls))
}

/// `provider`, recovering tool calls written as text when `on` (the `text_tool_calls` setting).
fn with_text_calls(provider: Arc<dyn Provider>, on: bool) -> Arc<dyn Provider> {
    if on {
        Arc::new(TextCalls::new(provider))
    } else {
        provider
    }
}

/// The built-in tools, in the order they are advertised.
pub fn builtin_tools() -> Registry {
    let mut registry = crate::pipeline::registry();
    registry.register(Arc::new(read::ReadTool));
    registry.register(Arc::new(write::WriteTool));
    registry.register(Arc::new(patch::PatchTool));
    registry.register(Arc::new(remove::RemoveTool));
    registry.register(Arc::new(undo::UndoTool));
    registry.register(Arc::new(fs_search::SearchTool::default()));
    registry.register(Arc::new(shell::ShellTool));
    registry.register(Arc::new(crate::tool::background::ShellOutputTool));
    registry.register(Arc::new(crate::tool::background::ShellKillTool));
    registry.register(Arc::new(fetch::FetchTool::default()));
    registry.register(Arc::new(todo::TodoWriteTool));
    registry.register(Arc::new(todo::TodoReadTool));
    registry.register(Arc::new(QuestionTool));
    registry.register(Arc::new(skill::SkillTool));
    registry.register(Arc::new(crate::agent::subagent::SubAgentTool::task()));
    registry.register(Arc::new(crate::tool::plan::ExitPlanModeTool));
    registry
}

#[cfg(test)]
mod tests {
    #[test]
    fn builtin_names_match_the_registry() {
        assert_eq!(super::builtin_tools().names(), crate::tool::BUILTIN_NAMES);
    }

    /// Built-in arguments are checked as draft 7 (its meta-schema is the cheaper one to
    /// build): their schemas must mean the same under 2020-12, the draft the model's provider
    /// and any other reader assume. So no keyword either draft lacks or reads otherwise.
    #[test]
    fn builtin_schemas_mean_the_same_in_draft_7_and_2020_12() {
        use serde_json::Value;
        const DIFFERENT: &[&str] = &[
            "$schema",
            "$ref",
            "$defs",
            "$id",
            "$anchor",
            "$dynamicRef",
            "$dynamicAnchor",
            "$recursiveRef",
            "prefixItems",
            "dependencies",
            "dependentRequired",
            "dependentSchemas",
            "unevaluatedProperties",
            "unevaluatedItems",
            "minContains",
            "maxContains",
            "contentSchema",
            "format",
            "additionalItems",
        ];
        fn check(tool: &str, schema: &Value, at: &str) {
            let Some(object) = schema.as_object() else { return };
            for (key, value) in object {
                assert!(!DIFFERENT.contains(&key.as_str()), "`{tool}` uses `{key}` at {at}");
                let at = format!("{at}/{key}");
                match key.as_str() {
                    "properties" => value
                        .as_object()
                        .into_iter()
                        .flatten()
                        .for_each(|(name, sub)| check(tool, sub, &format!("{at}/{name}"))),
                    "items" => {
                        assert!(
                            value.is_object(),
                            "`{tool}`: an `items` list is a tuple only in draft 7"
                        );
                        check(tool, value, &at);
                    }
                    "additionalProperties" | "not" => check(tool, value, &at),
                    "oneOf" | "anyOf" | "allOf" => value
                        .as_array()
                        .into_iter()
                        .flatten()
                        .for_each(|sub| check(tool, sub, &at)),
                    _ => {}
                }
            }
        }
        let registry = super::builtin_tools();
        for name in registry.names() {
            let tool = registry.get(name).unwrap();
            assert!(tool.parameters_in_draft_7(), "`{name}`");
            let schema = tool.parameters();
            check(name, &schema, "");
            crate::tool::adapter::compile(name, &schema, true).unwrap();
        }
    }

    /// `docs/tools.md` is the tool contract people read: every built-in tool has a row naming
    /// exactly its parameters, and every limit it states is the one in the code.
    #[test]
    fn docs_tools_md_is_true() {
        use crate::tool::{fetch, fs_search, shell, truncate};
        let doc = include_str!("../docs/tools.md");
        let flat = doc.split_whitespace().collect::<Vec<_>>().join(" ");
        let rows: std::collections::BTreeMap<String, Vec<String>> = doc
            .lines()
            .filter(|line| line.starts_with("| `"))
            .map(|line| {
                let cells: Vec<&str> = line.split('|').collect();
                let name = cells[1].trim().trim_matches('`').to_owned();
                let params = cells[2].split(',').map(|p| p.trim().trim_matches('`').to_owned());
                (name, params.filter(|p| !p.is_empty()).collect())
            })
            .collect();
        let registry = super::builtin_tools();
        let mut documented: Vec<&str> = rows.keys().map(String::as_str).collect();
        let mut registered = registry.names();
        documented.sort_unstable();
        registered.sort_unstable();
        assert_eq!(documented, registered, "docs/tools.md lists other tools than brute has");
        for spec in registry.specs() {
            let mut schema: Vec<String> = spec.parameters["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            let mut doc_params = rows[&spec.name].clone();
            schema.sort();
            doc_params.sort();
            assert_eq!(doc_params, schema, "the parameters of `{}` in docs/tools.md", spec.name);
        }
        let thousands = |n: usize| {
            let digits = n.to_string();
            let mut out = String::new();
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i).is_multiple_of(3) {
                    out.push(',');
                }
                out.push(c);
            }
            out
        };
        let claims = [
            format!(
                "at most **{} lines** and **{} bytes**",
                truncate::MAX_LINES,
                thousands(truncate::MAX_BYTES)
            ),
            format!("longer than **{} characters**", truncate::MAX_LINE_CHARS),
            format!(
                "removed after **{} days**",
                truncate::OVERFLOW_MAX_AGE.as_secs() / 86_400
            ),
            format!("at most {} matches", fs_search::MAX_RESULTS),
            format!("Stops after {} s", fs_search::DEFAULT_BUDGET.as_secs()),
            format!("over {} MB compiled", fs_search::REGEX_SIZE_LIMIT >> 20),
            format!("(default {} s)", shell::DEFAULT_TIMEOUT_SECS),
            format!(
                "at most {} redirects, {} s for the whole call and {} MB",
                fetch::MAX_REDIRECTS,
                fetch::TIMEOUT.as_secs(),
                fetch::MAX_BYTES >> 20
            ),
            format!("bounded ({} MiB)", crate::files::MAX_FILE_BYTES >> 20),
            format!("(default {})", crate::tool::registry::DEFAULT_MAX_TOOLS),
        ];
        for claim in claims {
            assert!(flat.contains(&claim), "docs/tools.md should say {claim:?}");
        }
    }
}

/// What commands and tools may do for this run: the sandbox mode made concrete for the
/// project, `--yolo`, and whether a sandbox is available here at all.
pub fn access(settings: &Settings, root: &Path) -> crate::tool::state::Access {
    let data_dir = paths::data_dir();
    let extra_roots = settings.extra_roots();
    let approvals_file = data_dir.as_deref().map(|d| crate::permission::approvals::file(d, root));
    let own_dirs: Vec<PathBuf> = data_dir.iter().cloned().chain(paths::config_dir()).collect();
    // They are made read-only to commands by a bind mount, which needs them to exist: one that
    // did not could be made by a command (a trust list, a config with hooks) under a `HOME` in
    // a writable tree.
    for dir in &own_dirs {
        if !dir.exists()
            && let Err(e) = paths::private_dir(dir)
        {
            tracing::warn!("cannot create {}: {e}", dir.display());
        }
    }
    let mut rules = settings.rules.clone();
    if let Some(file) = &approvals_file {
        rules.append(crate::permission::approvals::load(file));
    }
    crate::tool::state::Access {
        policy: crate::sandbox::Policy::for_project(
            settings.permission_mode().sandbox(),
            root,
            &extra_roots,
            &own_dirs,
        ),
        plan: settings.plan.then(|| settings.sandbox_mode()),
        yolo: settings.yolo,
        sandbox_available: None,
        extra_roots,
        own_dirs,
        rules,
        approvals_file,
    }
}

/// Which session an agent records into.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SessionChoice {
    /// Nothing is saved (tests, embedding).
    Off,
    /// A new session.
    #[default]
    New,
    /// The latest session of this project (a new one when there is none).
    Continue,
    /// This session of this project.
    Resume(String),
}

/// An agent ready to run, plus notices for the person (e.g. tools dropped by the cap).
pub struct Built {
    pub agent: Agent,
    /// The tools besides the built-ins and command tools (the library's, then skill scripts):
    /// what a rebuild of the registry keeps when MCP tools change.
    pub fixed_tools: Vec<Arc<dyn Tool>>,
    /// Why turn checkpoints are paused until the person agrees to copy the tree (started in
    /// `/`, in `$HOME`, or in a large tree that is not a repository); `None` when they run.
    pub checkpoints_paused: Option<String>,
    pub notices: Vec<String>,
}

/// The session a run records into, or the conversation it resumes without saving.
enum Opened {
    /// Recorded as it happens.
    Saved(Box<session::Recorder>, session::Loaded),
    /// A resumed conversation that cannot be saved (a read-only data directory): the run
    /// goes on with it, said once.
    Unsaved(session::Loaded),
}

/// A session file opened for writing, or why not with what could be read of it.
type Attempt = Result<(session::SessionFile, session::Loaded), (std::io::Error, session::Loaded)>;

/// Why a run's session cannot be saved, as the person is told (once).
fn unsaved_notice(error: &std::io::Error) -> String {
    format!("cannot save this session ({error}); /undo covers single tool calls only")
}

/// Opens (or creates) the session to record into. A session that can be read but not written
/// (a read-only data directory) is resumed unsaved; one that cannot be read is an error.
fn open_session(
    settings: &Settings,
    root: &Path,
    choice: &SessionChoice,
    notices: &mut Vec<String>,
) -> Result<Option<Opened>, SetupError> {
    if *choice == SessionChoice::Off {
        return Ok(None);
    }
    let Some(data_dir) = paths::private_data_dir() else {
        notices.push("no data directory: this session is not saved and /undo covers single tool calls only".into());
        return Ok(None);
    };
    session::prune::maybe_prune(&data_dir);
    let store = session::SessionStore::new(&data_dir, root);
    // First: a pack a killed writer left without its index may be what fills the disk.
    if let Err(error) = store.objects().discard_partial() {
        tracing::warn!(%error, "cannot discard unfinished packs");
    }
    // A session id that names nothing says how to find the real ones (no internal paths).
    let unreadable = |id: &str, e: std::io::Error| {
        SetupError::Session(if e.kind() == std::io::ErrorKind::NotFound {
            format!("no such session: {id}; `brute -r` lists them")
        } else {
            format!("cannot open session {id}: {}", e.kind())
        })
    };
    // One writer per session file: a session another brute is writing is forked.
    let open = |id: &str, notices: &mut Vec<String>| -> Result<Attempt, SetupError> {
        match store.open(id) {
            Ok((file, loaded)) => {
                notices.extend(loaded.notices(file.path()));
                Ok(Ok((file, loaded)))
            }
            Err(e) => {
                let loaded = store.load(id).map_err(|e| unreadable(id, e))?;
                notices.extend(loaded.notices(&store.file_path(id)));
                if e.kind() != std::io::ErrorKind::WouldBlock {
                    return Ok(Err((e, loaded)));
                }
                match store.fork(&loaded) {
                    Ok((file, forked)) => {
                        notices.push(format!(
                        "session {id} is in use by another brute process; continuing its conversation in a new session {} (its undo covers only this session's turns)",
                        file.id
                    ));
                        Ok(Ok((file, forked)))
                    }
                    Err(e) => Ok(Err((e, loaded))),
                }
            }
        }
    };
    let opened = match choice {
        SessionChoice::Resume(id) => open(id, notices)?,
        SessionChoice::Continue if store.latest().is_some() => {
            let id = store.latest().unwrap_or_default();
            open(&id, notices)?
        }
        SessionChoice::Continue | SessionChoice::New | SessionChoice::Off => {
            if *choice == SessionChoice::Continue {
                notices.push("no earlier session in this project; starting a new one".into());
            }
            store
                .create()
                .map(|file| (file, session::Loaded::default()))
                .map_err(|e| (e, session::Loaded::default()))
        }
    };
    let (file, loaded) = match opened {
        Ok(opened) => opened,
        // An unwritable data directory costs the session, not the run.
        Err((e, loaded)) => {
            notices.push(unsaved_notice(&e));
            return Ok((!loaded.history.is_empty() || !loaded.todos.is_empty()).then_some(Opened::Unsaved(loaded)));
        }
    };
    let mut recorder = session::Recorder::new(store, file, &loaded, settings.checkpoint_max_file_bytes.value);
    recorder.set_budget(session::checkpoint::Budget {
        entries: settings.checkpoint_max_entries.value,
        ..Default::default()
    });
    Ok(Some(Opened::Saved(Box::new(recorder), loaded)))
}

/// The tools of a run: the built-ins, the configured command tools, `extra` (library users'
/// own) and the MCP tools `mcp` has ready, after the run's filter, deny list and cap.
fn run_registry(
    settings: &Settings,
    extra: &[Arc<dyn Tool>],
    mcp: Option<&crate::mcp::Manager>,
    notices: &mut Vec<String>,
) -> Registry {
    let mut registry = builtin_tools();
    // Before the configured tools, so none of them takes its name.
    if let Some(url) = settings.web_search_endpoint() {
        match crate::tool::web_search::WebSearchTool::new(url) {
            Ok(tool) => registry.register(Arc::new(tool)),
            Err(problem) => notices.push(format!("web_search tool skipped: {problem}")),
        }
    }
    for spec in &settings.command_tools {
        match CommandTool::new(spec.value.clone()).and_then(|tool| registry.register_new(Arc::new(tool))) {
            Ok(()) => {}
            Err(problem) => notices.push(format!("command tool skipped: {problem}")),
        }
    }
    for tool in extra {
        if let Err(problem) = registry.register_new(tool.clone()) {
            notices.push(format!("tool skipped: {problem}"));
        }
    }
    if let Some(mcp) = mcp {
        let taken = registry.names().into_iter().map(str::to_owned).collect();
        for tool in mcp.tools(&taken) {
            if let Err(problem) = registry.register_new(tool) {
                notices.push(format!("MCP tool skipped: {problem}"));
            }
        }
    }
    let filter = match &settings.allow_tools {
        None => ToolFilter::All,
        Some(list) if list.value.is_empty() => ToolFilter::None,
        Some(list) => ToolFilter::Only(list.value.clone()),
    };
    notices.extend(registry.apply(&filter, &settings.deny_tools.value, settings.max_tools.value));
    registry
}

/// The agent's view of the session's MCP servers: its registry is rebuilt from
/// [`run_registry`] between turns when their tools changed. Notices already given at start
/// are not repeated.
fn live_tools(
    settings: &Settings,
    extra: &[Arc<dyn Tool>],
    manager: Arc<crate::mcp::Manager>,
    settle_first: bool,
    given: Vec<String>,
) -> crate::mcp::LiveTools {
    let (settings, extra) = (settings.clone(), extra.to_vec());
    let rebuild: crate::mcp::manager::Rebuild = Box::new(move |manager| {
        let mut notices = Vec::new();
        let registry = run_registry(&settings, &extra, Some(manager), &mut notices);
        notices.retain(|n| !given.contains(n));
        (registry, notices)
    });
    crate::mcp::LiveTools::new(manager, settle_first, rebuild)
}

/// The models the configuration names, for `/model`'s picker: the chosen one, then each
/// `[models."NAME"]` table.
fn configured_models(settings: &Settings) -> Vec<String> {
    let mut names = vec![settings.model.value.clone()];
    for name in settings.models.keys() {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

/// Builds the agent for the workspace `place` from `settings`, with `extra` tools (library
/// users' own) added after the built-ins and the configured command tools. The project root
/// holds the session, the checkpoints and the sandbox's workspace; tools work from the
/// working directory.
pub fn build_agent_with(
    settings: &Settings,
    place: &Workspace,
    events: EventSink,
    requests: Requests,
    extra: Vec<Arc<dyn Tool>>,
    session: &SessionChoice,
) -> Result<Built, SetupError> {
    let provider = provider(settings)?;
    let mut notices = Vec::new();
    let root = place.root.as_path();
    let config_dir = paths::config_dir();
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let found = skills::discover(&skills::dirs(root, config_dir.as_deref(), home.as_deref()));
    notices.extend(found.warnings);
    let skills = found.skills;
    // Skill scripts become tools, each confined to its skill's grant (see skill_script).
    let user_skill_dirs: Vec<PathBuf> = config_dir
        .iter()
        .map(|d| d.join("skills"))
        .chain(home.iter().map(|h| h.join(".agents").join("skills")))
        .collect();
    // Built-in names stay taken even when the tool list leaves the built-in out; so do the
    // command tools' and the library's.
    let taken: Vec<String> = crate::tool::BUILTIN_NAMES
        .iter()
        .map(|n| (*n).to_owned())
        .chain(settings.command_tools.iter().map(|spec| spec.value.name.clone()))
        .chain(extra.iter().map(|tool| tool.name().to_owned()))
        .collect();
    let (scripts, script_notices) = crate::tool::skill_script::tools(
        &skills,
        &taken,
        &settings.skill_sandbox.value,
        root,
        home.as_deref(),
        &user_skill_dirs,
    );
    notices.extend(script_notices);
    // What every rebuild of the registry (MCP servers coming and going) starts from.
    let mut fixed_tools = extra;
    fixed_tools.extend(scripts.into_iter().map(|tool| Arc::new(tool) as Arc<dyn Tool>));
    let registry = run_registry(settings, &fixed_tools, None, &mut notices);
    let summaries: Vec<_> = if registry.get("skill").is_some() {
        skills.iter().map(skills::Skill::summary).collect()
    } else {
        Vec::new()
    };
    let template = settings.system_prompt.value.as_deref().unwrap_or(prompt::TEMPLATE);
    let mut system_prompt = prompt::build(template, place, config_dir.as_deref(), &summaries);
    if let Some(more) = &settings.append_system_prompt {
        system_prompt = format!("{}\n\n{more}", system_prompt.trim_end());
    }
    let overflow_dir = paths::data_dir().map(|d| d.join("tool-output"));
    if let Some(dir) = &overflow_dir {
        crate::tool::truncate::clean_overflow(dir);
    }
    // A rule's pattern is read as its tools say (a path glob for the file tools): one that a
    // tool of this session cannot read stops the start, as a malformed rule does.
    let access = access(settings, root);
    for name in registry.names() {
        if let Some(tool) = registry.get(name) {
            access.rules.check_patterns(name, tool.rule_subject())?;
        }
    }
    let state = Arc::new(
        AgentState::new(
            provider,
            settings.model.value.clone(),
            settings.max_tokens.value,
            root.to_path_buf(),
        )
        .with_cwd(place.cwd.clone())
        .with_effort(settings.reasoning_effort())
        .with_skills(skills)
        .with_overflow_dir(overflow_dir)
        .with_requests(requests.clone())
        .with_access(access)
        .with_hooks({
            let hooks = crate::hooks::Hooks::new(
                settings.hooks.iter().map(|h| h.value.clone()).collect(),
                root.to_path_buf(),
            );
            hooks.set_requests(requests);
            Arc::new(hooks)
        })
        .with_vision(
            settings
                .models
                .iter()
                .filter_map(|(name, m)| m.value.vision.map(|v| (name.clone(), v)))
                .collect(),
        )
        .with_configured_models(configured_models(settings)),
    );
    // `-i`: for the first prompt, sent now or typed later.
    state.attach(settings.images.clone());
    let executor = Executor::new(
        Arc::new(registry),
        Arc::new(Snapshots::default()),
        state.clone(),
        events.clone(),
    );
    let config = AgentConfig {
        system_prompt,
        max_turns: settings.max_turns.value,
    };
    let model_config = settings.models.get(&settings.model.value).map(|m| &m.value);
    let configured_window = settings
        .context_window
        .value
        .or_else(|| model_config.and_then(|m| m.context_window));
    let mut agent = Agent::new(state.clone(), executor, config, events.clone()).with_compaction(Compaction {
        window: configured_window.or_else(|| crate::agent::compact::context_window(&settings.model.value)),
        at: settings.compact_at.value,
        to: settings.compact_to.value,
        price: model_config
            .and_then(|m| m.price())
            .or_else(|| crate::provider::pricing::builtin(&settings.model.value)),
    });
    if configured_window.is_none()
        && let Ok(runtime) = tokio::runtime::Handle::try_current()
    {
        let provider = state.provider.clone();
        let model = settings.model.value.clone();
        agent = agent.with_window_probe(runtime.spawn(async move { provider.context_window(&model).await }));
    }
    let mut found_commands = crate::agent::commands::discover(&crate::agent::commands::dirs(
        root,
        config_dir.as_deref(),
        home.as_deref(),
    ));
    found_commands.project_trusted = crate::config::trust::check(root) == crate::config::trust::Trust::Trusted;
    if !found_commands.commands.iter().any(|c| c.name == "init") {
        found_commands.commands.push(crate::agent::commands::init());
    }
    notices.append(&mut found_commands.notices);
    agent = agent.with_commands(Arc::new(found_commands));
    let mut checkpoints_paused = None;
    let opened = open_session(settings, root, session, &mut notices)?;
    if let Some(Opened::Unsaved(loaded)) = opened {
        if !loaded.todos.is_empty() {
            state.set_todos(loaded.todos.clone(), &events);
        }
        agent = agent
            .with_unsaved_history(loaded.history)
            .with_outcomes(loaded.outcomes);
    } else if let Some(Opened::Saved(mut recorder, loaded)) = opened {
        if !recorder.has_history()
            && let Some(reason) = session::checkpoint::copy_warning(root)
        {
            recorder.set_checkpoints(false);
            checkpoints_paused = Some(reason);
        }
        // Later checkpoints re-list only what the watcher saw touched (-p: the turn's end
        // needs no second walk after a command); without inotify every checkpoint walks. A
        // tree known to be small is walked instead: the watcher would cost more than the walk
        // (about 15 ms of a `brute -p` run against 1-2 ms). Decided by the first walk, which
        // loads what is known of the tree beside the first model request.
        recorder.watch_tree_when_big(session::checkpoint::WatchFrom::FirstWalk);
        if !loaded.todos.is_empty() {
            state.set_todos(loaded.todos.clone(), &events);
        }
        agent = agent
            .with_session(*recorder, loaded.history)
            .with_outcomes(loaded.outcomes);
    }
    Ok(Built {
        agent,
        fixed_tools,
        checkpoints_paused,
        notices,
    })
}

/// Builds the agent for the workspace `place` from `settings` with the built-in and configured
/// tools, recording into the chosen session.
pub fn build_agent(
    settings: &Settings,
    place: &Workspace,
    events: EventSink,
    requests: Requests,
    session: &SessionChoice,
) -> Result<Built, SetupError> {
    build_agent_with(settings, place, events, requests, Vec::new(), session)
}

/// Which front end starts a conversation: it decides who answers requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontEnd {
    /// The terminal UI: every request becomes a dialog.
    Ui,
    /// `brute -p` with a person at the terminal: questions are asked there, every other
    /// request takes its default.
    HeadlessAtTerminal,
    /// `brute -p` without a terminal: every request takes its default at once.
    Headless,
    /// A program drives the session (`--input-format stream-json`): every request reaches the
    /// front end, which asks the program or takes the default.
    Program,
    /// An editor (`brute acp`): like a program, and when it offers them, `read` reads its open
    /// files (unsaved changes included) through it and `write` and `patch` write through it.
    Editor {
        buffers: crate::protocol::requests::Buffers,
    },
}

/// A started conversation and what its front end shows first.
pub struct Started {
    pub handle: crate::agent::conversation::Handle,
    pub notices: Vec<String>,
    pub tools: Vec<String>,
    /// Custom slash commands as `(/name, description)`.
    pub commands: Vec<(String, String)>,
    pub provider: String,
    pub session_id: Option<String>,
}

/// Builds the agent and starts the conversation actor that owns it; the front end then only
/// sends ops to `handle.ops` and renders what arrives on the receiver of `events`.
pub fn start(
    settings: &Settings,
    place: &Workspace,
    events: EventSink,
    front_end: FrontEnd,
    extra: Vec<Arc<dyn Tool>>,
    session: &SessionChoice,
) -> Result<Started, SetupError> {
    let requests = match front_end {
        FrontEnd::Ui | FrontEnd::HeadlessAtTerminal | FrontEnd::Program => Requests::new(events.clone()),
        FrontEnd::Editor { buffers } => Requests::with_buffers(events.clone(), buffers),
        FrontEnd::Headless => Requests::headless(),
    };
    let built = build_agent_with(
        settings,
        place,
        events.clone(),
        requests.clone(),
        extra.clone(),
        session,
    )?;
    let mut notices = built.notices;
    notices.extend(settings.mcp_notices.iter().cloned());
    let mut agent = built.agent;
    if front_end != FrontEnd::Ui {
        agent = agent.with_failure_limit(crate::agent::doom_loop::FAILURES_ENDING_THE_TURN);
    }
    if matches!(front_end, FrontEnd::Headless | FrontEnd::HeadlessAtTerminal) {
        // One turn: its end re-lists what a command touched only if a watcher saw it, and a
        // run whose model runs no command has no use for one.
        agent.watch_tree_from_first_command();
    }
    // MCP servers start now, in the background; with none configured nothing runs.
    let mcp = (!settings.mcp_servers.is_empty())
        .then(|| crate::mcp::Manager::start(settings.mcp_servers.clone(), place.root.clone(), events.clone()));
    if let Some(manager) = &mcp {
        let settle_first = front_end != FrontEnd::Ui;
        agent = agent.with_live_tools(live_tools(
            settings,
            &built.fixed_tools,
            manager.clone(),
            settle_first,
            notices.clone(),
        ));
    }
    let tools = agent.tool_names();
    let commands = agent.command_listing();
    let provider = agent.provider_name().to_owned();
    let session_id = agent.session_id();
    if !agent.history().is_empty() {
        events.emit(agent.history_event());
    }
    let resumer: Resumer = {
        let (settings, place, events) = (settings.clone(), place.clone(), events.clone());
        Box::new(move |id, requests| {
            build_agent_with(
                &settings,
                &place,
                events.clone(),
                requests.clone(),
                extra.clone(),
                &SessionChoice::Resume(id.to_owned()),
            )
            .map(|built| match &mcp {
                // The resumed conversation keeps the running servers.
                Some(manager) => built.agent.with_live_tools(live_tools(
                    &settings,
                    &built.fixed_tools,
                    manager.clone(),
                    false,
                    Vec::new(),
                )),
                None => built.agent,
            })
            .map_err(|e| e.to_string())
        })
    };
    // The UI walks the tree from start-up: the person types meanwhile, and the first turn's
    // checkpoint only re-stats what this walk read.
    if front_end == FrontEnd::Ui && built.checkpoints_paused.is_none() {
        agent.warm_checkpoints();
    }
    let (mut conversation, ops) = Conversation::new(agent, events, requests, Some(resumer));
    if let Some(reason) = &built.checkpoints_paused {
        if front_end == FrontEnd::Ui {
            conversation.ask_checkpoints(reason);
        } else {
            notices.push(session::checkpoint::paused_notice(reason));
        }
    }
    Ok(Started {
        handle: conversation.spawn(ops),
        notices,
        tools,
        commands,
        provider,
        session_id,
    })
}
