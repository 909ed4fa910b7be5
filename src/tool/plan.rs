//! Plan mode for tools: which tools are offered while planning ([`offered`]), why a call is
//! refused while planning ([`refusal`]: the approval step asks before anything else, so no
//! rule, hook or `--yolo` lets a change through), and `exit_plan_mode`, which hands the plan
//! to the person.
//!
//! Only tools that change nothing ([`Reach::Reads`], an outside tool that declares itself
//! read-only) and tools whose commands run in the session's sandbox ([`Reach::Sandbox`]; it is
//! read-only while planning) are offered and run. A call that names a path it would change,
//! or asks to run outside the sandbox, is refused whatever its tool says about itself; where
//! no sandbox is available, commands are refused too (they would run unconfined).

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{Params, Reach, Tool, ToolContext, ToolError, ToolOutput, str_arg};
use crate::protocol::{Op, PlanDecision, RequestKind, Response};
use crate::tool::state::Access;

/// What every plan-mode refusal ends with.
const WAIT: &str = "nothing may change in plan mode until the person approves your plan: finish the plan and call exit_plan_mode with it";

/// Whether `tool` is offered to the model in this mode.
pub fn offered(tool: &dyn Tool, planning: bool) -> bool {
    if !planning {
        return !tool.only_while_planning();
    }
    match tool.reach() {
        Reach::Reads | Reach::Sandbox => true,
        Reach::Anything => tool.external().is_some_and(|external| external.read_only),
    }
}

/// Why this call may not run in plan mode, if it may not (`None` outside plan mode).
pub fn refusal(tool: &dyn Tool, args: &Value, access: &Access) -> Option<ToolError> {
    if !access.planning() {
        return None;
    }
    let name = tool.name();
    let why = if let Some(path) = tool.mutated_path(args) {
        format!("`{name}` would change {path}")
    } else if tool.escalation(args).is_some() {
        format!("`{name}` asks to run outside the sandbox, and commands run only in the read-only sandbox now")
    } else if !offered(tool, true) {
        format!("`{name}` can change files or other things outside the read-only sandbox")
    } else if tool.runs_commands() && !access.can_confine() {
        format!("`{name}` runs commands, and no sandbox is available here to keep them read-only")
    } else {
        return None;
    };
    Some(ToolError::new("PlanMode", format!("{why}; {WAIT}")))
}

/// The built-in `exit_plan_mode` tool: the plan goes to the person, who runs it (the session
/// leaves plan mode), or keeps planning with a note. With nobody to ask, the plan ends the
/// turn as its answer: `brute -p` prints it, and nothing changed.
pub struct ExitPlanModeTool;

impl Tool for ExitPlanModeTool {
    fn name(&self) -> &str {
        "exit_plan_mode"
    }

    fn description(&self) -> &str {
        "Plan mode only: present your finished plan to the user for approval. Call it once you have explored enough to say exactly what you will change (file by file), in what order, and how you will check it; pass the whole plan as Markdown. The user may approve it (then carry it out) or ask you to keep planning with a note."
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string("plan", "The complete plan, in Markdown", true)
            .build()
    }

    fn summary(&self, args: &Value) -> String {
        let first = args["plan"]
            .as_str()
            .unwrap_or("")
            .lines()
            .find(|l| !l.trim().is_empty());
        first
            .unwrap_or("")
            .trim()
            .trim_start_matches('#')
            .trim()
            .chars()
            .take(80)
            .collect()
    }

    fn reach(&self) -> Reach {
        Reach::Reads
    }

    fn only_while_planning(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let plan = str_arg(&args, "plan")?;
            if plan.trim().is_empty() {
                return Err(ToolError::invalid("the plan is empty: pass the whole plan"));
            }
            let Some(back_to) = ctx.agent.access().plan else {
                return Err(ToolError::new(
                    "NotPlanning",
                    "the session is not in plan mode (the user left it): carry on with the task",
                ));
            };
            let kind = RequestKind::Plan {
                plan: plan.to_owned(),
                back_to,
            };
            let switch = |mode: crate::permission::Mode| {
                ctx.agent.apply_setting(Op::SetSandbox { mode }, &ctx.events);
                mode
            };
            let approved = |mode: crate::permission::Mode| {
                format!(
                    "The user approved the plan. Plan mode is over; the mode is now {}. Carry the plan out now.",
                    mode.as_str()
                )
            };
            Ok(ToolOutput::text(match ctx.ask(kind).await {
                Response::Plan {
                    decision: PlanDecision::Run,
                    ..
                } => approved(switch(back_to.into())),
                Response::Plan {
                    decision: PlanDecision::RunAcceptingEdits,
                    ..
                } => approved(switch(crate::permission::Mode::WorkspaceWrite)),
                Response::Plan {
                    decision: PlanDecision::KeepPlanning,
                    note: Some(note),
                } if !note.trim().is_empty() => format!(
                    "The user has not approved the plan and wants you to keep planning (you are still in plan mode). Their note:\n{}\nRevise the plan, then call exit_plan_mode again.",
                    note.trim()
                ),
                Response::NoPerson => {
                    ctx.end_turn(plan);
                    "Nobody is here to approve the plan: it is the result of this run, and nothing was changed."
                        .to_owned()
                }
                // Kept planning without a note, or closed the dialog: the person speaks next.
                _ => {
                    ctx.end_turn("");
                    "The user has not approved the plan; you are still in plan mode. Wait for what they say next."
                        .to_owned()
                }
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{External, Params, fn_tool};

    fn access(planning: bool) -> Access {
        Access {
            plan: planning.then_some(crate::sandbox::Mode::WorkspaceWrite),
            sandbox_available: Some(true),
            ..Access::default()
        }
    }

    /// The built-ins answer for themselves: what changes files is neither offered nor run
    /// while planning, whatever it is called; `exit_plan_mode` is offered only then.
    #[test]
    fn planning_offers_and_runs_only_what_changes_nothing() {
        let registry = crate::app::builtin_tools();
        let offered_while = |planning: bool| -> Vec<&str> {
            registry
                .names()
                .into_iter()
                .filter(|name| registry.get(name).is_some_and(|t| offered(t.as_ref(), planning)))
                .collect()
        };
        assert_eq!(
            offered_while(true),
            [
                "read",
                "fs_search",
                "shell",
                "fetch",
                "todo_write",
                "todo_read",
                "question",
                "skill",
                "task",
                "exit_plan_mode"
            ]
        );
        assert!(!offered_while(false).contains(&"exit_plan_mode"));
        assert_eq!(offered_while(false).len(), registry.names().len() - 1);
        let tool = |name: &str| registry.get(name).unwrap();
        let refused = |name: &str, args: Value| refusal(tool(name).as_ref(), &args, &access(true));
        for (name, args) in [
            ("write", serde_json::json!({"file_path": "a", "content": "x"})),
            (
                "patch",
                serde_json::json!({"file_path": "a", "old_string": "x", "new_string": "y"}),
            ),
            ("remove", serde_json::json!({"path": "a"})),
            ("undo", serde_json::json!({"path": "a"})),
            ("shell", serde_json::json!({"command": "ls", "sandbox": "full"})),
        ] {
            let error = refused(name, args).unwrap_or_else(|| panic!("{name} ran"));
            assert_eq!(error.kind, "PlanMode");
            assert!(error.message.contains("exit_plan_mode"), "{}", error.message);
        }
        assert!(refused("shell", serde_json::json!({"command": "touch x"})).is_none());
        assert!(refused("read", serde_json::json!({"file_path": "a"})).is_none());
        let write = serde_json::json!({"file_path": "a", "content": "x"});
        assert!(refusal(tool("write").as_ref(), &write, &access(false)).is_none());
        // Without a sandbox a command would run unconfined: refused while planning.
        let unconfined = Access {
            sandbox_available: Some(false),
            ..access(true)
        };
        let ls = serde_json::json!({"command": "ls"});
        assert!(refusal(tool("shell").as_ref(), &ls, &unconfined).is_some());
    }

    /// A tool that says nothing about itself is taken to change anything; an outside tool is
    /// offered only when it declares itself read-only.
    #[test]
    fn unknown_tools_are_kept_out_while_planning() {
        let inline = fn_tool("mine", "d", Params::new().build(), |_, _| async {
            Ok(ToolOutput::text(""))
        });
        assert!(!offered(&inline, true) && offered(&inline, false));
        assert!(refusal(&inline, &Value::Null, &access(true)).is_some());
        struct Outside(bool);
        impl Tool for Outside {
            fn name(&self) -> &str {
                "mcp__x__y"
            }
            fn description(&self) -> &str {
                ""
            }
            fn parameters(&self) -> Value {
                Params::new().build()
            }
            fn external(&self) -> Option<External> {
                Some(External {
                    read_only: self.0,
                    family: "mcp__x__*".into(),
                })
            }
            fn call<'a>(&'a self, _: Value, _: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
                Box::pin(async { Ok(ToolOutput::text("")) })
            }
        }
        assert!(offered(&Outside(true), true));
        assert!(!offered(&Outside(false), true));
    }
}
