//! What tools may reach of their agent: the provider and model (for sub-agents), the todo
//! list, adjustable request settings, the skills, and the project root.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::requests::Requests;
use super::skills::Skill;
use crate::protocol::{Event, EventSink, TodoItem};
use crate::provider::Provider;

/// Shared state of one agent, handed to its tools through the tool context.
pub struct AgentState {
    pub provider: Arc<dyn Provider>,
    model: Mutex<String>,
    pub max_tokens: u32,
    pub root: PathBuf,
    pub skills: Vec<Skill>,
    /// Where truncated outputs are saved in full.
    pub overflow_dir: Option<PathBuf>,
    todos: Mutex<Vec<TodoItem>>,
    temperature: Mutex<Option<f32>>,
    /// How tools ask the person (see [`Requests`]); headless unless a front end listens.
    pub requests: Requests,
}

impl AgentState {
    pub fn new(provider: Arc<dyn Provider>, model: String, max_tokens: u32, root: PathBuf) -> Self {
        Self {
            provider,
            model: Mutex::new(model),
            max_tokens,
            root,
            skills: Vec::new(),
            overflow_dir: None,
            todos: Mutex::new(Vec::new()),
            temperature: Mutex::new(None),
            requests: Requests::headless(),
        }
    }

    /// Routes this agent's requests to the person (shared by its sub-agents).
    pub fn with_requests(mut self, requests: Requests) -> Self {
        self.requests = requests;
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

    /// The sampling temperature for the next requests (`None`: the provider's default).
    pub fn temperature(&self) -> Option<f32> {
        *self.temperature.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the sampling temperature, e.g. from a tool.
    pub fn set_temperature(&self, temperature: Option<f32>) {
        *self.temperature.lock().unwrap_or_else(|e| e.into_inner()) = temperature;
    }
}
