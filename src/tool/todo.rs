//! `todo_write` and `todo_read`: the session's todo list, shown to the person.

use std::collections::HashSet;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::{Params, Tool, ToolContext, ToolError, ToolOutput};
use crate::protocol::{TodoItem, TodoStatus};

/// Renders the list the way the model and `/todo` show it.
pub fn render(todos: &[TodoItem]) -> String {
    if todos.is_empty() {
        return "The todo list is empty.".to_owned();
    }
    todos
        .iter()
        .map(|t| {
            let mark = match t.status {
                TodoStatus::Pending => "[ ]",
                TodoStatus::InProgress => "[~]",
                TodoStatus::Completed => "[x]",
                TodoStatus::Cancelled => "[-]",
            };
            format!("{mark} {}: {}\n", t.id, t.content)
        })
        .collect()
}

/// The built-in `todo_write` tool.
pub struct TodoWriteTool;

impl Tool for TodoWriteTool {
    fn name(&self) -> &str {
        "todo_write"
    }

    /// It changes nothing outside the session: offered in plan mode.
    fn reach(&self) -> crate::tool::Reach {
        crate::tool::Reach::Reads
    }

    fn description(&self) -> &str {
        "Replace the session's todo list (shown to the user). Use it to plan multi-step work and keep statuses current; keep at most one item in_progress."
    }

    fn display(&self) -> crate::protocol::Display {
        crate::protocol::Display::Todos
    }

    fn parameters(&self) -> Value {
        let item = json!({"type": "object", "properties": {
            "id": {"type": "string"},
            "content": {"type": "string"},
            "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "cancelled"]}
        }, "required": ["id", "content", "status"], "additionalProperties": false});
        Params::new().array("todos", item, "The whole new list", true).build()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let todos: Vec<TodoItem> = serde_json::from_value(args["todos"].clone())
                .map_err(|e| ToolError::invalid(format!("bad todos: {e}")))?;
            let mut seen = HashSet::new();
            for todo in &todos {
                if todo.content.trim().is_empty() {
                    return Err(ToolError::invalid(format!("todo `{}` has empty content", todo.id)));
                }
                if !seen.insert(todo.id.as_str()) {
                    return Err(ToolError::invalid(format!("todo id `{}` appears twice", todo.id)));
                }
            }
            ctx.agent.set_todos(todos.clone(), &ctx.events);
            Ok(ToolOutput::text(format!("Todo list updated:\n{}", render(&todos))))
        })
    }
}

/// The built-in `todo_read` tool.
pub struct TodoReadTool;

impl Tool for TodoReadTool {
    fn name(&self) -> &str {
        "todo_read"
    }

    /// It changes nothing outside the session: offered in plan mode.
    fn reach(&self) -> crate::tool::Reach {
        crate::tool::Reach::Reads
    }

    fn description(&self) -> &str {
        "Show the session's current todo list."
    }

    fn display(&self) -> crate::protocol::Display {
        crate::protocol::Display::Todos
    }

    fn parameters(&self) -> Value {
        Params::new().build()
    }

    fn call<'a>(&'a self, _args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move { Ok(ToolOutput::text(render(&ctx.agent.todos()))) })
    }
}
