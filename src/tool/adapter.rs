//! Tool shapes and middleware. Every shape becomes the one neutral [`Tool`]:
//!
//! - a type implementing [`Tool`] (the built-ins);
//! - an inline tool from a name, description, parameters and a closure ([`fn_tool`]);
//! - a [`Pipeline`]: a tool wrapped in [`Middleware`] layers such as [`ValidateArgs`],
//!   [`FileQueue`], [`SnapshotFirst`] and [`LogCalls`] (the built-ins use the same layers);
//! - a sub-agent (`agent::subagent::SubAgentTool`, a layer above) and a command from config
//!   ([`super::command::CommandTool`]).
//!
//! ```no_run
//! use brute::tool::{fn_tool, Params, ToolOutput};
//! let shout = fn_tool(
//!     "shout",
//!     "Upper-cases a text",
//!     Params::new().string("text", "What to shout", true).build(),
//!     |args, _ctx| async move {
//!         Ok(ToolOutput::text(args["text"].as_str().unwrap_or_default().to_uppercase()))
//!     },
//! );
//! ```

use std::future::Future;
use std::sync::{Arc, OnceLock};

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{Tool, ToolContext, ToolError, ToolOutput};

/// The rest of a pipeline: the remaining layers, then the tool.
pub struct Next<'a> {
    layers: &'a [Arc<dyn Middleware>],
    tool: &'a dyn Tool,
}

impl<'a> Next<'a> {
    /// Runs the remaining layers and the tool.
    pub fn run(self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        match self.layers.split_first() {
            Some((layer, rest)) => layer.handle(
                args,
                ctx,
                Next {
                    layers: rest,
                    tool: self.tool,
                },
            ),
            None => self.tool.call(args, ctx),
        }
    }

    /// The tool at the end of the pipeline (for its name, schema, mutated path).
    pub fn tool(&self) -> &'a dyn Tool {
        self.tool
    }
}

/// A layer around a tool call: it may inspect or change the arguments, wait, record, or
/// short-circuit with an error, then call `next`.
pub trait Middleware: Send + Sync {
    fn handle<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// A tool wrapped in middleware; itself a [`Tool`]. Layers run in the order added.
pub struct Pipeline {
    tool: Arc<dyn Tool>,
    layers: Vec<Arc<dyn Middleware>>,
}

impl Pipeline {
    pub fn new(tool: Arc<dyn Tool>) -> Self {
        Self {
            tool,
            layers: Vec::new(),
        }
    }

    /// Adds a layer inside the ones already added.
    pub fn layer(mut self, middleware: impl Middleware + 'static) -> Self {
        self.layers.push(Arc::new(middleware));
        self
    }
}

impl Tool for Pipeline {
    fn name(&self) -> &str {
        self.tool.name()
    }
    fn description(&self) -> &str {
        self.tool.description()
    }
    fn parameters(&self) -> Value {
        self.tool.parameters()
    }
    fn mutated_path(&self, args: &Value) -> Option<String> {
        self.tool.mutated_path(args)
    }
    fn rule_subject(&self) -> crate::permission::RuleSubject {
        self.tool.rule_subject()
    }
    fn summary(&self, args: &Value) -> String {
        self.tool.summary(args)
    }
    fn display(&self) -> crate::protocol::Display {
        self.tool.display()
    }
    fn runs_commands(&self) -> bool {
        self.tool.runs_commands()
    }
    fn changes_unknown_files(&self) -> bool {
        self.tool.changes_unknown_files()
    }
    fn reach(&self) -> super::Reach {
        self.tool.reach()
    }
    fn only_while_planning(&self) -> bool {
        self.tool.only_while_planning()
    }
    fn follows_links(&self) -> bool {
        self.tool.follows_links()
    }
    fn snapshot_before(&self) -> bool {
        self.tool.snapshot_before()
    }
    fn escalation(&self, args: &Value) -> Option<String> {
        self.tool.escalation(args)
    }
    fn external(&self) -> Option<super::External> {
        self.tool.external()
    }
    fn parameters_in_draft_7(&self) -> bool {
        self.tool.parameters_in_draft_7()
    }
    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Next {
            layers: &self.layers,
            tool: self.tool.as_ref(),
        }
        .run(args, ctx)
    }
}

/// Checks `args` against a JSON Schema; the error tells the model exactly what was wrong.
pub fn validate(tool_name: &str, validator: &jsonschema::Validator, args: &Value) -> Result<(), ToolError> {
    let problems: Vec<String> = validator
        .iter_errors(args)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ToolError::invalid(format!(
            "arguments do not match the `{tool_name}` schema: {}",
            problems.join("; ")
        )))
    }
}

/// Compiles a tool's schema into a validator, as draft 7 or in the schema's own draft. (The
/// crate's non-generic constructors: its generic builder, called here, would be compiled into
/// brute a second time, 1.9 MB.)
pub fn compile(tool_name: &str, schema: &Value, draft_7: bool) -> Result<jsonschema::Validator, ToolError> {
    let built = if draft_7 {
        jsonschema::draft7::new(schema)
    } else {
        jsonschema::validator_for(schema)
    };
    built.map_err(|e| {
        ToolError::new(
            "BadToolSchema",
            format!("the `{tool_name}` tool's own schema is invalid: {e}"),
        )
    })
}

/// Validates arguments against the tool's schema before it runs (compiled once).
#[derive(Default)]
pub struct ValidateArgs {
    validator: OnceLock<Result<jsonschema::Validator, ToolError>>,
}

impl Middleware for ValidateArgs {
    fn handle<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let tool = next.tool();
            let validator = self
                .validator
                .get_or_init(|| compile(tool.name(), &tool.parameters(), tool.parameters_in_draft_7()));
            validate(tool.name(), validator.as_ref().map_err(Clone::clone)?, &args)?;
            next.run(args, ctx).await
        })
    }
}

/// Serializes calls on the same file in call order: waits for the place the executor
/// reserved for this call, and holds it until the call ends.
pub struct FileQueue;

impl Middleware for FileQueue {
    fn handle<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let mut ticket = ctx.take_ticket();
            if let Some(ticket) = ticket.as_mut() {
                ticket.wait().await;
            }
            let result = next.run(args, ctx).await;
            drop(ticket);
            result
        })
    }
}

/// Records the mutated path's content before the tool runs, so `undo` can restore it; the
/// snapshot is dropped again if the tool fails (it changed nothing).
pub struct SnapshotFirst;

impl Middleware for SnapshotFirst {
    fn handle<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(path) = next.tool().mutated_path(&args).map(|p| ctx.resolve(&p)) else {
                return next.run(args, ctx).await;
            };
            let follows_links = next.tool().follows_links();
            ctx.snapshots
                .record_for(&path, ctx.op, follows_links)
                .map_err(|e| ToolError::io(format!("cannot snapshot {}", ctx.display(&path)), &e))?;
            let result = next.run(args, ctx).await;
            if result.is_err() {
                ctx.snapshots.discard(&path, ctx.op);
            } else {
                ctx.snapshots.wrote(&path, ctx.op, follows_links);
            }
            result
        })
    }
}

/// Tells the snapshot store when a tool that runs commands, or an MCP server's tool, has
/// finished: brute cannot know what it changed, and the session keeps the git blobs of what the
/// file watcher saw it touch (see `session::keep`) before the turn ends.
pub struct KeepAfterCommands;

impl Middleware for KeepAfterCommands {
    fn handle<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let tool = next.tool();
            let unknown_changes = tool.runs_commands() || tool.external().is_some() || tool.changes_unknown_files();
            // What the call changes is brute's, not the person's (see `crate::busy`).
            let busy = match unknown_changes {
                true => Some(ctx.snapshots.spans().open().await),
                false => None,
            };
            let result = next.run(args, ctx).await;
            drop(busy);
            if unknown_changes {
                let snapshots = ctx.snapshots.clone();
                // It waits for the file watcher's events and copies files: off the runtime.
                let _ = tokio::task::spawn_blocking(move || snapshots.command_ran()).await;
            }
            result
        })
    }
}

/// Keeps the boundaries of [`super::guard`] for every tool that names a path it changes: the
/// project root, its parents, `$HOME` and `/` are never the target, and special files
/// (FIFOs, sockets, devices) are refused; a path through a `.git` has the sandbox find the
/// nested repositories again before the next command ([`crate::sandbox::git_dirs::changed`]). Added to every tool by the registry, so no tool
/// shape can skip it.
pub struct GuardPaths;

impl Middleware for GuardPaths {
    fn handle<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(shown) = next.tool().mutated_path(&args) else {
                return next.run(args, ctx).await;
            };
            let path = ctx.resolve(&shown);
            super::guard::check_destructive(&ctx.root, &path, &shown)?;
            super::guard::refuse_special(&path, &shown)?;
            // A `.git` it makes (approved) is read-only to the next command too: said before
            // the call and again when it ends (or is dropped), so a list found in between is
            // not kept either. The path as given, as resolved, and where the tool acts.
            let forms = vec![
                path.clone(),
                super::guard::real_path(&path),
                super::place::target(ctx, &path, next.tool().follows_links()),
            ];
            let _after = ThroughGit::said(forms);
            next.run(args, ctx).await
        })
    }
}

/// Says a change to these paths to the sandbox's list of nested repositories
/// ([`crate::sandbox::git_dirs::changed`]) now and again when dropped.
struct ThroughGit(Vec<std::path::PathBuf>);

impl ThroughGit {
    fn said(forms: Vec<std::path::PathBuf>) -> Self {
        forms.iter().for_each(|p| crate::sandbox::git_dirs::changed(p));
        Self(forms)
    }
}

impl Drop for ThroughGit {
    fn drop(&mut self) {
        self.0.iter().for_each(|p| crate::sandbox::git_dirs::changed(p));
    }
}

/// Logs each call and its outcome to the log file.
pub struct LogCalls;

impl Middleware for LogCalls {
    fn handle<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let name = next.tool().name().to_owned();
            tracing::debug!(tool = %name, call = %ctx.call_id, "tool call started");
            let result = next.run(args, ctx).await;
            match &result {
                Ok(out) => {
                    tracing::debug!(tool = %name, call = %ctx.call_id, bytes = out.content.len(), "tool call ok")
                }
                Err(e) => {
                    tracing::info!(tool = %name, call = %ctx.call_id, error = %e, "tool call failed")
                }
            }
            result
        })
    }
}

type Handler = dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync;

/// An inline tool: a name, a description, a parameter schema and a closure.
pub struct FnTool {
    name: String,
    description: String,
    parameters: Value,
    mutates: Option<String>,
    handler: Arc<Handler>,
}

impl FnTool {
    /// Declares that the string argument `param` names a file this tool changes, so calls on
    /// one file are serialized (with [`FileQueue`]) and snapshotted (with [`SnapshotFirst`]).
    pub fn mutating(mut self, param: &str) -> Self {
        self.mutates = Some(param.to_owned());
        self
    }
}

/// Makes an inline tool from a closure returning a future.
pub fn fn_tool<F, Fut>(name: &str, description: &str, parameters: Value, f: F) -> FnTool
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    FnTool {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters,
        mutates: None,
        handler: Arc::new(move |args, ctx| Box::pin(f(args, ctx))),
    }
}

impl Tool for FnTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Value {
        self.parameters.clone()
    }
    /// Whoever wrote the schema: its own `$schema`, else 2020-12.
    fn parameters_in_draft_7(&self) -> bool {
        false
    }
    fn mutated_path(&self, args: &Value) -> Option<String> {
        let param = self.mutates.as_ref()?;
        args.get(param).and_then(Value::as_str).map(str::to_owned)
    }
    /// A closure that names no path it changes may change any: brute cannot know which.
    fn changes_unknown_files(&self) -> bool {
        self.mutates.is_none()
    }
    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        (self.handler)(args, ctx.clone())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures_util::future::BoxFuture;
    use serde_json::{Value, json};

    use super::GuardPaths;
    use crate::protocol::EventSink;
    use crate::sandbox::git_dirs;
    use crate::tool::state::AgentState;
    use crate::tool::{Pipeline, Tool, ToolContext, ToolError, ToolOutput};

    /// A tool that names the path it changes and changes nothing.
    struct Changes;

    impl Tool for Changes {
        fn name(&self) -> &str {
            "changes"
        }
        fn description(&self) -> &str {
            "changes a file"
        }
        fn parameters(&self) -> Value {
            json!({"type": "object", "properties": {"file_path": {"type": "string"}}})
        }
        fn mutated_path(&self, args: &Value) -> Option<String> {
            args["file_path"].as_str().map(str::to_owned)
        }
        /// With `make`, a list is found during the call (as by a command running beside it)
        /// before the directory `make` is made.
        fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            Box::pin(async move {
                if let Some(make) = args["make"].as_str() {
                    git_dirs::below(&ctx.root);
                    std::fs::create_dir_all(ctx.root.join(make)).unwrap();
                }
                Ok(ToolOutput::text("done"))
            })
        }
    }

    /// A call that changes a path through a `.git` (as an approved write may) has the next
    /// command find the nested repositories again; one elsewhere keeps the list.
    #[tokio::test]
    async fn a_change_through_a_git_has_the_nested_repositories_found_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let provider = Arc::new(crate::provider::replay::ReplayProvider::from_script("").unwrap());
        let agent = Arc::new(AgentState::new(provider, "m".into(), 100, root.clone()));
        let ctx = ToolContext::standalone(agent, EventSink::channel().0);
        let guarded = Pipeline::new(Arc::new(Changes)).layer(GuardPaths);
        assert!(git_dirs::below(&root).is_empty());
        std::fs::create_dir_all(root.join("sub/.git")).unwrap();
        guarded.call(json!({"file_path": "src/main.rs"}), &ctx).await.unwrap();
        assert!(git_dirs::below(&root).is_empty(), "kept until a change through a .git");
        guarded
            .call(json!({"file_path": "sub/.git/config"}), &ctx)
            .await
            .unwrap();
        assert_eq!(*git_dirs::below(&root), vec![root.join("sub/.git")]);
        // A list found while the call ran, before it made a repository, is not kept.
        let call = json!({"file_path": "other/.git/config", "make": "other/.git"});
        guarded.call(call, &ctx).await.unwrap();
        assert!(git_dirs::below(&root).contains(&root.join("other/.git")));
    }
}
