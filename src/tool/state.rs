//! What tools may reach of their agent: the provider and model (for sub-agents), the todo
//! list, adjustable request settings, the skills, and the project root.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::skills::Skill;
use crate::protocol::requests::Requests;
use crate::protocol::{Event, EventSink, TodoItem};
use crate::provider::{Effort, Provider};

/// Shared state of one agent, handed to its tools through the tool context.
pub struct AgentState {
    pub provider: Arc<dyn Provider>,
    model: Mutex<String>,
    pub max_tokens: u32,
    /// The project root: the workspace the sandbox and the file-tool guards are about.
    pub root: PathBuf,
    /// The working directory: relative tool paths resolve here and commands start here (the
    /// root or a directory below it; see [`crate::config::project`]).
    pub cwd: PathBuf,
    pub skills: Vec<Skill>,
    /// Where truncated outputs are saved in full.
    pub overflow_dir: Option<PathBuf>,
    todos: Mutex<Vec<TodoItem>>,
    temperature: Mutex<Option<f32>>,
    effort: Mutex<Option<Effort>>,
    /// How tools ask the person (see [`Requests`]); headless unless a front end listens.
    pub requests: Requests,
    access: Mutex<Access>,
    /// Calls the person allowed for the rest of the session: (tool, summary).
    approved: Mutex<std::collections::HashSet<(String, String)>>,
    /// The session's hooks (none by default; see [`crate::hooks`]).
    pub hooks: Arc<crate::hooks::Hooks>,
    /// The session's background processes (shared with its sub-agents).
    pub background: Arc<crate::tool::background::Background>,
    /// Image files for the next turn that starts (`-i`), absolute.
    attachments: Mutex<Vec<PathBuf>>,
    /// `[models."NAME"] vision`: which models take images, beyond brute's table.
    vision: std::collections::BTreeMap<String, bool>,
    /// The models the configuration names, for `/model`'s picker.
    configured_models: Vec<String>,
}

/// What the sandbox and approvals allow right now (the mode can change mid-session).
#[derive(Debug, Clone, Default)]
pub struct Access {
    pub policy: crate::sandbox::Policy,
    /// `--yolo`: never ask.
    pub yolo: bool,
    /// Commands can be confined here; without it every command needs an approval. `None`:
    /// found out when a command first needs it (the check starts a process, a few ms nobody
    /// should wait for before the first request).
    pub sandbox_available: Option<bool>,
    /// The project's writable extra roots (to rebuild the policy when the mode changes).
    pub extra_roots: Vec<PathBuf>,
    /// brute's data and config directories: read-only to commands wherever they lie.
    pub own_dirs: Vec<PathBuf>,
    /// Permission rules: config files, then approvals saved for this project.
    pub rules: crate::permission::Rules,
    /// Where "always allow in this project" approvals are saved (the person's data, keyed by
    /// the project; never the project itself).
    pub approvals_file: Option<PathBuf>,
    /// `Some` while planning (the policy is then read-only): the sandbox mode an approved
    /// plan goes back to.
    pub plan: Option<crate::sandbox::Mode>,
}

impl Access {
    /// Whether the session is in plan mode.
    pub fn planning(&self) -> bool {
        self.plan.is_some()
    }

    /// The mode as the person picked it.
    pub fn mode(&self) -> crate::permission::Mode {
        match self.plan {
            Some(_) => crate::permission::Mode::Plan,
            None => self.policy.mode.into(),
        }
    }

    /// Whether commands can be confined here (see [`Access::sandbox_available`]).
    pub fn can_confine(&self) -> bool {
        self.sandbox_available
            .unwrap_or_else(|| crate::sandbox::available().is_ok())
    }
}

impl AgentState {
    /// Applies a setting op (model, sandbox mode, reasoning effort) to the agent's live state and
    /// tells the front ends; the same whether a turn runs or not, so both paths share it.
    pub fn apply_setting(&self, op: crate::protocol::Op, events: &EventSink) {
        match op {
            crate::protocol::Op::SetModel { model } => {
                self.set_model(model.clone());
                events.emit(Event::ModelChanged { model });
            }
            crate::protocol::Op::SetSandbox { mode } => {
                self.set_mode(mode);
                events.emit(Event::SandboxChanged {
                    mode: self.access().mode(),
                });
            }
            crate::protocol::Op::SetEffort { effort } => {
                self.set_effort(effort);
                events.emit(Event::EffortChanged { effort });
            }
            _ => {}
        }
    }

    pub fn new(provider: Arc<dyn Provider>, model: String, max_tokens: u32, root: PathBuf) -> Self {
        Self {
            provider,
            model: Mutex::new(model),
            max_tokens,
            cwd: root.clone(),
            root,
            skills: Vec::new(),
            overflow_dir: None,
            todos: Mutex::new(Vec::new()),
            temperature: Mutex::new(None),
            effort: Mutex::new(None),
            requests: Requests::headless(),
            access: Mutex::new(Access {
                policy: crate::sandbox::Policy::for_project(
                    crate::sandbox::Mode::FullAccess,
                    &PathBuf::new(),
                    &[],
                    &[],
                ),
                sandbox_available: Some(true),
                ..Access::default()
            }),
            approved: Mutex::default(),
            hooks: Arc::default(),
            background: Arc::default(),
            attachments: Mutex::default(),
            vision: std::collections::BTreeMap::new(),
            configured_models: Vec::new(),
        }
    }

    /// Shares `background` (a sub-agent's processes are its parent's).
    pub fn with_background(mut self, background: Arc<crate::tool::background::Background>) -> Self {
        self.background = background;
        self
    }

    /// Knows these models' vision beyond brute's table (`[models."NAME"] vision`).
    pub fn with_vision(mut self, vision: std::collections::BTreeMap<String, bool>) -> Self {
        self.vision = vision;
        self
    }

    /// Names the models the configuration offers (`/model`'s picker lists them first).
    pub fn with_configured_models(mut self, models: Vec<String>) -> Self {
        self.configured_models = models;
        self
    }

    /// Answers [`crate::protocol::Op::ListModels`]: the configured models now, the
    /// provider's list when it comes (the same whether a turn runs or not).
    pub async fn list_models(&self) -> Event {
        let (provider, error) = match self.provider.list_models().await {
            Ok(ids) => (ids, None),
            Err(error) => (Vec::new(), Some(error.to_string())),
        };
        Event::ModelList {
            current: self.model(),
            configured: self.configured_models.clone(),
            provider,
            error,
        }
    }

    /// Whether `model` is sent images: the setting, else brute's table; a model neither
    /// knows gets text notes in their place.
    pub fn sees_images(&self, model: &str) -> bool {
        self.vision
            .get(model)
            .copied()
            .or(crate::provider::spec::model_facts(model).vision)
            .unwrap_or(false)
    }

    /// Attaches image files to the next turn that starts.
    pub fn attach(&self, paths: Vec<PathBuf>) {
        self.attachments.lock().unwrap_or_else(|e| e.into_inner()).extend(paths);
    }

    /// The image files waiting for the turn that starts now.
    pub fn take_attachments(&self) -> Vec<PathBuf> {
        std::mem::take(&mut *self.attachments.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs these hooks in this agent's session (and its sub-agents').
    pub fn with_hooks(mut self, hooks: Arc<crate::hooks::Hooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// Sets what commands and tools may do (mode, yolo, rules).
    pub fn with_access(self, access: Access) -> Self {
        *self.access.lock().unwrap_or_else(|e| e.into_inner()) = access;
        self
    }

    /// What the sandbox and approvals allow now.
    pub fn access(&self) -> Access {
        self.access.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Switches the mode from the next call on. Entering plan mode keeps the sandbox mode to
    /// go back to; any other mode leaves plan mode.
    pub fn set_mode(&self, mode: crate::permission::Mode) {
        let mut access = self.access.lock().unwrap_or_else(|e| e.into_inner());
        access.plan = match (mode, access.plan) {
            (crate::permission::Mode::Plan, Some(before)) => Some(before),
            (crate::permission::Mode::Plan, None) => Some(access.policy.mode),
            _ => None,
        };
        access.policy =
            crate::sandbox::Policy::for_project(mode.sandbox(), &self.root, &access.extra_roots, &access.own_dirs);
    }

    /// Whether the person allowed calls like this one for the session.
    pub fn approved(&self, tool: &str, summary: &str) -> bool {
        self.approved
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&(tool.to_owned(), summary.to_owned()))
    }

    /// Remembers a rule for the rest of the session (e.g. "always allow in this project").
    pub fn add_rule(
        &self,
        kind: crate::permission::RuleKind,
        rule: crate::permission::Rule,
        source: crate::permission::Source,
    ) {
        let mut access = self.access.lock().unwrap_or_else(|e| e.into_inner());
        access.rules.push(kind, rule, source);
    }

    /// Remembers a session-wide approval.
    pub fn approve_for_session(&self, tool: &str, summary: &str) {
        self.approved
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((tool.to_owned(), summary.to_owned()));
    }

    /// Routes this agent's requests to the person (shared by its sub-agents).
    pub fn with_requests(mut self, requests: Requests) -> Self {
        self.requests = requests;
        self
    }

    /// Sets the working directory (default: the root).
    pub fn with_cwd(mut self, cwd: PathBuf) -> Self {
        self.cwd = cwd;
        self
    }

    pub fn with_skills(mut self, skills: Vec<Skill>) -> Self {
        self.skills = skills;
        self
    }

    pub fn with_overflow_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.overflow_dir = dir;
        self
    }

    /// The model requests use.
    pub fn model(&self) -> String {
        self.model.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Switches the model from the next request on.
    pub fn set_model(&self, model: String) {
        *self.model.lock().unwrap_or_else(|e| e.into_inner()) = model;
    }

    /// The current todo list.
    pub fn todos(&self) -> Vec<TodoItem> {
        self.todos.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the todo list and tells the front ends.
    pub fn set_todos(&self, todos: Vec<TodoItem>, events: &EventSink) {
        *self.todos.lock().unwrap_or_else(|e| e.into_inner()) = todos.clone();
        events.emit(Event::TodosUpdated { todos });
    }

    /// Starts with this reasoning effort.
    pub fn with_effort(mut self, effort: Option<Effort>) -> Self {
        self.effort = Mutex::new(effort);
        self
    }

    /// The reasoning effort for the next requests (`None`: the model's default).
    pub fn effort(&self) -> Option<Effort> {
        *self.effort.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the reasoning effort from the next request on.
    pub fn set_effort(&self, effort: Option<Effort>) {
        *self.effort.lock().unwrap_or_else(|e| e.into_inner()) = effort;
    }

    /// The sampling temperature for the next requests (`None`: the provider's default).
    pub fn temperature(&self) -> Option<f32> {
        *self.temperature.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the sampling temperature, e.g. from a tool.
    pub fn set_temperature(&self, temperature: Option<f32>) {
        *self.temperature.lock().unwrap_or_else(|e| e.into_inner()) = temperature;
    }
}
