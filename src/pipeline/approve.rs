//! The approval step: a tool call that goes beyond what the sandbox mode allows waits for the
//! person. Added to every tool by the registry, so no tool shape can skip it.
//!
//! The permission rules decide first: a `deny` rule refuses the call, an `ask` rule asks even
//! where the mode would allow it, an `allow` rule lets it through without asking. Otherwise a
//! call needs approval when it would change a path outside the writable roots (or anything in
//! `read-only` mode), when it asks to run a command beyond the sandbox
//! ([`crate::tool::Tool::escalation`]), or when it runs commands and no sandbox is available here.
//! `--yolo` and approvals for the session skip the question; without a person (`brute -p`) the
//! call is denied with a result that names what would allow it.
//!
//! # Rules decide whether to ask, never whether to confine
//!
//! The rules see where a call's path really leads (made absolute, `..` folded, symlinks
//! followed: [`crate::permission::rules::Facts`]), so `write(src/**)` does not allow a write
//! through a link in `src/` that leads elsewhere. And an `allow` rule only answers the question
//! for a call that stays in the sandbox. A call goes beyond it ("unsandboxed") when
//!
//! - it asks to run unconfined (`shell` with `sandbox: "full"`), or runs commands where no
//!   sandbox is available, or
//! - it changes a path outside the writable roots; in `read-only` mode, where nothing is
//!   writable, outside the project root (or inside its `.git/` or `.brute/`): there an allow
//!   rule may let the built-in tools change the project, never anything else.
//!
//! Such a call is allowed only by an `allow_unsandboxed` rule the person wrote, their yes in
//! the dialog, or `--yolo`; a plain allow rule that matches it is named in the question
//! ("the rule allow `…` does not cover this call: …"). "Always allow in this project" for an
//! unsandboxed call is kept as an `allow_unsandboxed` rule, and a session approval is keyed on
//! whether the call was unsandboxed (and where its path led), so approving a confined call
//! never covers the same call out of the sandbox.
//!
//! A `pre_tool_use` hook's `permissionDecision` ([`super::hooks::decision`]) is weighed
//! here too: `ask` asks even where the rules or the mode would allow; `allow` answers the
//! question the mode would ask (like the person approving once) but never a rule's, and like
//! an allow rule it never lets a call out of the sandbox: a hook is a script, and leaving the
//! sandbox is the person's word only.
//!
//! In plan mode a call that could change anything is refused before any of this
//! ([`crate::tool::plan::refusal`]).
//!
//! An external tool ([`crate::tool::Tool::external`], e.g. an MCP server's) is allowed without
//! asking when it declares itself read-only; otherwise it is asked about once per tool per
//! session (its arguments mean nothing brute could judge), and an allow rule on its name
//! (`mcp__github__*`) lets it through.

use std::path::{Path, PathBuf};

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::hooks::Permission;
use crate::permission::rules::{Facts, Target};
use crate::permission::{Decision, Rule, RuleKind, Source};
use crate::protocol::{ApprovalDecision, RequestKind, Response};
use crate::sandbox::{Mode, Policy};
use crate::tool::adapter::{Middleware, Next};
use crate::tool::state::Access;
use crate::tool::{Tool, ToolContext, ToolError, ToolOutput};

/// The approval middleware (see the module docs).
pub struct Approve;

/// What the approval step finds out about one call before deciding.
struct Call {
    /// For the rules: where its path leads, whether it is unsandboxed.
    facts: Facts,
    /// Where the path it changes really leads (absolute, symlinks followed).
    changed: Option<PathBuf>,
    /// Why it would run commands unconfined, if it would.
    unconfined: Option<String>,
    /// Why a changed path is beyond what an allow rule may allow, if it is.
    beyond: Option<String>,
    /// The path named leads elsewhere than it reads (through a symlink).
    through_link: bool,
}

impl Call {
    fn of(tool: &dyn Tool, args: &Value, ctx: &ToolContext, access: &Access) -> Call {
        let real =
            |shown: &str| crate::tool::guard::real_path(&crate::tool::guard::normalize(&ctx.cwd, &ctx.resolve(shown)));
        let mutated = tool.mutated_path(args);
        let changed = mutated.as_deref().map(real);
        let given = mutated.or_else(|| crate::permission::rules::path_argument(tool.rule_subject(), args));
        let through_link = given
            .as_deref()
            .is_some_and(|given| crate::tool::guard::normalize(&ctx.cwd, &ctx.resolve(given)) != real(given));
        let target = given.map(|given| {
            let path = real(&given);
            Target {
                relative: relative_to(&path, &ctx.root),
                absolute: path.to_string_lossy().into_owned(),
                given,
            }
        });
        let unconfined = unconfined(tool, args, access);
        let beyond = changed
            .as_deref()
            .and_then(|path| beyond_rules(path, access, &ctx.root));
        Call {
            facts: Facts {
                target,
                unsandboxed: unconfined.is_some() || beyond.is_some(),
            },
            changed,
            unconfined,
            beyond,
            through_link,
        }
    }

    /// Why no allow rule of the plain kind (and no hook) can let the call through.
    fn limit(&self) -> Option<&str> {
        self.unconfined.as_deref().or(self.beyond.as_deref())
    }
}

/// `path` relative to the project root when it lies inside it (`.` for the root itself).
fn relative_to(path: &Path, root: &Path) -> Option<String> {
    [crate::tool::guard::real_path(root), root.to_path_buf()]
        .iter()
        .find_map(|root| path.strip_prefix(root).ok())
        .map(|rel| match rel.as_os_str().is_empty() {
            true => ".".to_owned(),
            false => rel.to_string_lossy().into_owned(),
        })
}

/// Why the call would run commands outside the sandbox, if it would.
fn unconfined(tool: &dyn Tool, args: &Value, access: &Access) -> Option<String> {
    if let Some(justification) = tool.escalation(args) {
        return Some(format!("it asks to run without the sandbox: {justification}"));
    }
    (tool.runs_commands() && access.policy.confined() && !access.can_confine())
        .then(|| "no sandbox is available here, so the command would run unconfined".to_owned())
}

/// Why an allow rule may not let a change of `path` (absolute, symlinks followed) through:
/// it lies outside the writable roots, or, in `read-only` mode, outside the project (or in its
/// `.git/` or `.brute/`).
fn beyond_rules(path: &Path, access: &Access, root: &Path) -> Option<String> {
    match access.policy.mode {
        Mode::ReadOnly => {
            let project = Policy {
                mode: Mode::WorkspaceWrite,
                writable: vec![root.to_path_buf()],
                read_only: vec![root.join(".git"), root.join(".brute")],
                ..Policy::default()
            };
            (!project.allows_write(path)).then(|| {
                format!(
                    "{} is outside the project (in read-only mode a rule may allow changes in the project only, not its .git or .brute)",
                    path.display()
                )
            })
        }
        _ => (!access.policy.allows_write(path)).then(|| format!("{} is outside the writable roots", path.display())),
    }
}

/// Why a call needs the person, if it does.
fn reason(tool: &dyn Tool, call: &Call, access: &Access) -> Option<String> {
    if let Some(path) = &call.changed
        && !access.policy.allows_write(path)
    {
        return Some(match access.policy.mode {
            Mode::ReadOnly => "the sandbox is read-only".to_owned(),
            _ => format!("{} is outside the writable roots", path.display()),
        });
    }
    if let Some(unconfined) = &call.unconfined {
        return Some(unconfined.clone());
    }
    match tool.external() {
        Some(external) if !external.read_only => {
            Some("it is a tool of an outside server that does not declare itself read-only".to_owned())
        }
        _ => None,
    }
}

/// "Always allow in this project": an exact rule for this call, saved in the person's data
/// (never the project) and applied for the rest of the session. An unsandboxed call is kept as
/// an `allow_unsandboxed` rule, any other as an `allow` rule.
fn remember_for_project(tool: &dyn Tool, args: &Value, call: &Call, ctx: &ToolContext) {
    let (subject, name) = (tool.rule_subject(), tool.name());
    let argument = crate::permission::rules::argument(subject, args).unwrap_or_default();
    // An external tool is approved as a whole: the rule is its bare name.
    let rule = match tool.external() {
        Some(_) => Rule::parse(name),
        None => Rule::exact(name, subject, &argument),
    };
    let rule = match rule {
        Ok(rule) => rule,
        Err(e) => {
            tracing::warn!("cannot keep the approval: {e}");
            return;
        }
    };
    let kind = match call.facts.unsandboxed {
        true => RuleKind::AllowUnsandboxed,
        false => RuleKind::Allow,
    };
    // The kept rule must cover exactly this call: an allow rule covers a compound command only
    // part by part, and a path only where it really leads, so either would allow more (or
    // other) than was approved; such a call is allowed for this session only.
    let mut check = crate::permission::Rules::default();
    check.push(kind, rule.clone(), Source::ProjectApprovals);
    if !matches!(check.decide_call(name, subject, args, &call.facts), Decision::Allow(_)) {
        let why = match call.facts.target {
            Some(_) => "a rule for this path would not cover where it really leads",
            None => "this command has several parts",
        };
        ctx.events.emit(crate::protocol::Event::Notice {
            message: format!("{why}: allowed for this session only, not kept for the project"),
        });
        return;
    }
    if let Some(file) = ctx.agent.access().approvals_file
        && let Err(e) = crate::permission::approvals::save(&file, kind, &rule)
    {
        ctx.events.emit(crate::protocol::Event::Notice {
            message: format!("could not save the approval in {}: {e}", file.display()),
        });
    }
    ctx.agent.add_rule(kind, rule, Source::ProjectApprovals);
}

/// What a session approval is keyed on: the tool's whole argument (the command, the path, or
/// all arguments), whether the call leaves the sandbox, and where its path really led.
fn approval_key(tool: &dyn Tool, args: &Value, call: &Call) -> String {
    let argument = crate::permission::rules::argument(tool.rule_subject(), args).unwrap_or_else(|| args.to_string());
    let leads = call
        .facts
        .target
        .as_ref()
        .map(|t| format!(" -> {}", t.absolute))
        .unwrap_or_default();
    let unsandboxed = if call.facts.unsandboxed { "[unsandboxed] " } else { "" };
    format!("{unsandboxed}{argument}{leads}")
}

/// What allows such a call without asking, for the denial `brute -p` gives.
fn how_to_allow(tool: &str, summary: &str, external: Option<&crate::tool::External>, call: &Call) -> String {
    if let Some(external) = external {
        return format!(
            "allow it in config with `allow = [\"{tool}\"]` (or `\"{}\"` for all of its server's tools) under [permissions], or run brute with --yolo",
            external.family
        );
    }
    let first = summary.split_whitespace().next().unwrap_or("");
    // An escalated call asks whatever the mode; a change beyond the roots does not in
    // full-access mode.
    let flags = match call.unconfined.is_some() {
        true => "run brute with --yolo",
        false => "run brute with --sandbox full-access (or --yolo)",
    };
    let kind = match call.facts.unsandboxed {
        true => RuleKind::AllowUnsandboxed,
        false => RuleKind::Allow,
    };
    let note = match kind {
        RuleKind::AllowUnsandboxed => " (an `allow` rule never lets a call out of the sandbox)",
        _ => "",
    };
    match &call.facts.target {
        Some(target) if call.through_link => format!(
            "{flags}, or allow it in config under [permissions] with an `{kind}` rule matching both `{}` and where it leads, `{}`{note}",
            target.given, target.absolute
        ),
        _ => format!(
            "{flags}, or allow it in config with a rule like `{kind} = [\"{tool}({first}*)\"]` under [permissions]{note}"
        ),
    }
}

/// The arguments as pretty JSON for an approval; empty when there are none.
fn all_arguments(args: &Value) -> String {
    match args {
        Value::Object(map) if map.is_empty() => String::new(),
        Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

impl Middleware for Approve {
    fn handle<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let tool = next.tool();
            let access = ctx.agent.access();
            // Plan mode first: no rule, hook, approval or `--yolo` lets a change through.
            if let Some(refused) = crate::tool::plan::refusal(tool, &args, &access) {
                return Err(refused);
            }
            let call = Call::of(tool, &args, ctx, &access);
            // The path judged here (by the rules, the mode or the person) is the one the tool
            // may act on: `place` refuses if it leads elsewhere by then.
            ctx.pin_approved_target(
                tool.mutated_path(&args)
                    .map(|shown| crate::tool::place::target(ctx, &ctx.resolve(&shown), tool.follows_links())),
            );
            // A pre_tool_use hook's say: `ask` forces the question, `allow` answers only the
            // question the mode would ask, and never for an unsandboxed call; neither overrides
            // a deny (or ask) rule.
            let hook = super::hooks::decision();
            let hook_asks = "a pre_tool_use hook asks for approval";
            let subject = tool.rule_subject();
            let decision = access.rules.decide_call(tool.name(), subject, &args, &call.facts);
            let reason = match decision {
                Decision::Deny(matched) => {
                    return Err(ToolError::new(
                        "Denied",
                        format!(
                            "the permission rule deny `{}` ({}) refuses this call",
                            matched.rule, matched.source
                        ),
                    ));
                }
                Decision::Allow(_) if hook == Some(Permission::Ask) => hook_asks.to_owned(),
                Decision::Allow(_) => {
                    // A rule that covers what the mode would ask about (an `allow_unsandboxed`
                    // rule, or a change inside the project in read-only mode) lets the file
                    // tools act there too.
                    if reason(tool, &call, &access).is_some() {
                        ctx.approve_beyond_roots();
                    }
                    return next.run(args, ctx).await;
                }
                Decision::Ask(Some(matched)) => format!("the rule ask `{}` ({})", matched.rule, matched.source),
                Decision::Ask(None) | Decision::Default => {
                    // A rule that allows the call as written is named, with why it does not
                    // apply (where the path leads, or that the call leaves the sandbox).
                    let limited = match access.rules.decide(tool.name(), subject, &args) {
                        Decision::Allow(matched) => {
                            let confined = Facts {
                                unsandboxed: false,
                                ..call.facts.clone()
                            };
                            let covers_target = matches!(
                                access.rules.decide_call(tool.name(), subject, &args, &confined),
                                Decision::Allow(_)
                            );
                            let leads = call
                                .facts
                                .target
                                .as_ref()
                                .filter(|_| !covers_target)
                                .map(|t| format!("{} leads to {}", t.given, t.absolute));
                            let why: Vec<String> = leads.into_iter().chain(call.limit().map(str::to_owned)).collect();
                            (!why.is_empty()).then(|| {
                                format!(
                                    "the rule {} `{}` ({}) does not cover this call: {}",
                                    matched.kind,
                                    matched.rule,
                                    matched.source,
                                    why.join("; ")
                                )
                            })
                        }
                        _ => None,
                    };
                    match (limited, reason(tool, &call, &access), hook) {
                        (Some(limited), _, _) => limited,
                        (None, Some(_), Some(Permission::Allow)) if !call.facts.unsandboxed => {
                            ctx.approve_beyond_roots();
                            return next.run(args, ctx).await;
                        }
                        (None, Some(reason), _) => reason,
                        (None, None, Some(Permission::Ask)) => hook_asks.to_owned(),
                        (None, None, _) => return next.run(args, ctx).await,
                    }
                }
            };
            let summary = tool.summary(&args);
            // "For this session" covers exactly this call: the whole argument (not the shown
            // summary), whether it leaves the sandbox and where its path leads.
            let external = tool.external();
            let key = match &external {
                // Once per tool: its arguments mean nothing brute could judge.
                Some(_) => String::new(),
                None => approval_key(tool, &args, &call),
            };
            if access.yolo || ctx.agent.approved(tool.name(), &key) {
                ctx.approve_beyond_roots();
                return next.run(args, ctx).await;
            }
            // What the person judges: the whole command or content, else every argument (an
            // outside server's tool, a removal), so nothing of the call is left out.
            let detail = ["command", "content", "new_string"]
                .iter()
                .find_map(|k| args.get(*k).and_then(Value::as_str))
                .map_or_else(|| all_arguments(&args), str::to_owned);
            let kind = RequestKind::Approval {
                tool: tool.name().to_owned(),
                summary: summary.clone(),
                detail,
                reason: reason.clone(),
                call_id: ctx.call_id.clone(),
                input: args.clone(),
            };
            match ctx.ask(kind).await {
                Response::Approval {
                    decision: ApprovalDecision::Once,
                    ..
                } => {
                    ctx.approve_beyond_roots();
                    next.run(args, ctx).await
                }
                Response::Approval {
                    decision: ApprovalDecision::Session,
                    ..
                } => {
                    ctx.approve_beyond_roots();
                    ctx.agent.approve_for_session(tool.name(), &key);
                    next.run(args, ctx).await
                }
                Response::Approval {
                    decision: ApprovalDecision::Project,
                    ..
                } => {
                    ctx.approve_beyond_roots();
                    ctx.agent.approve_for_session(tool.name(), &key);
                    remember_for_project(tool, &args, &call, ctx);
                    next.run(args, ctx).await
                }
                Response::Approval {
                    decision: ApprovalDecision::Deny,
                    reason: why,
                } => {
                    let why = why
                        .filter(|w| !w.trim().is_empty())
                        .map(|w| format!(" They said: {}", w.trim()))
                        .unwrap_or_default();
                    Err(ToolError::new(
                        "Denied",
                        format!("the user denied this call ({reason}).{why} Do not retry it as is."),
                    ))
                }
                Response::NoPerson => Err(ToolError::new(
                    "Denied",
                    format!(
                        "not allowed without approval ({reason}), and nobody is here to approve it: {}",
                        how_to_allow(tool.name(), &summary, external.as_ref(), &call)
                    ),
                )),
                _ if ctx.cancel.is_cancelled() => Err(ToolError::new(
                    "Interrupted",
                    "the user interrupted the turn before approving this call",
                )),
                _ => Err(ToolError::new(
                    "Denied",
                    format!("the user dismissed the approval ({reason}). Do not retry it as is."),
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures_util::future::BoxFuture;
    use serde_json::{Value, json};

    use super::{Access, Approve, Mode, Policy, Rule, RuleKind, Source};
    use crate::protocol::requests::Requests;
    use crate::protocol::{ApprovalDecision, Event, EventSink, RequestKind, Response};
    use crate::tool::state::AgentState;
    use crate::tool::{External, Pipeline, Tool, ToolContext, ToolError, ToolOutput};

    /// An outside tool that counts its runs.
    struct Outside {
        read_only: bool,
        runs: AtomicUsize,
    }

    impl Tool for Outside {
        fn name(&self) -> &str {
            if self.read_only {
                "mcp__srv__look"
            } else {
                "mcp__srv__change"
            }
        }
        fn description(&self) -> &str {
            "outside"
        }
        fn parameters(&self) -> Value {
            json!({"type": "object", "properties": {}})
        }
        fn external(&self) -> Option<External> {
            Some(External {
                read_only: self.read_only,
                family: "mcp__srv__*".to_owned(),
            })
        }
        fn call<'a>(&'a self, _: Value, _: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(ToolOutput::text("ran")) })
        }
    }

    /// A call without a command or content is shown with every argument.
    #[test]
    fn approvals_show_all_arguments_when_there_is_no_command() {
        assert_eq!(super::all_arguments(&json!({})), "");
        assert_eq!(
            super::all_arguments(&json!({"path": "a", "body": "x\ny"})),
            "{\n  \"body\": \"x\\ny\",\n  \"path\": \"a\"\n}"
        );
    }

    /// An outside tool is asked about once per session, whatever its arguments; a read-only
    /// one is never asked about.
    #[tokio::test]
    async fn outside_tools_are_approved_once_per_tool() {
        let (events, mut rx) = EventSink::channel();
        let requests = Requests::new(events.clone());
        let provider = Arc::new(crate::provider::replay::ReplayProvider::from_script("").unwrap());
        let dir = tempfile::tempdir().unwrap();
        let agent = Arc::new(
            AgentState::new(provider, "m".into(), 100, dir.path().to_path_buf()).with_requests(requests.clone()),
        );
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = asked.clone();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                if let Event::Request {
                    id,
                    kind: RequestKind::Approval { .. },
                } = event
                {
                    counter.fetch_add(1, Ordering::SeqCst);
                    let answer = Response::Approval {
                        decision: ApprovalDecision::Session,
                        reason: None,
                    };
                    requests.resolve(&id, answer);
                }
            }
        });
        let ctx = ToolContext::standalone(agent, events);
        let change = Arc::new(Outside {
            read_only: false,
            runs: AtomicUsize::new(0),
        });
        let look = Arc::new(Outside {
            read_only: true,
            runs: AtomicUsize::new(0),
        });
        let changing = Pipeline::new(change.clone()).layer(Approve);
        let looking = Pipeline::new(look.clone()).layer(Approve);
        for args in [json!({"a": 1}), json!({"a": 2}), json!({})] {
            assert_eq!(changing.call(args, &ctx).await.unwrap().content, "ran");
            looking.call(json!({"x": 1}), &ctx).await.unwrap();
        }
        assert_eq!(asked.load(Ordering::SeqCst), 1, "asked once for the changing tool only");
        assert_eq!(change.runs.load(Ordering::SeqCst), 3);
        assert_eq!(look.runs.load(Ordering::SeqCst), 3);
    }

    /// A stand-in for a built-in that counts its runs: `write` changes its `file_path`,
    /// `shell` runs commands and asks to leave the sandbox with `sandbox: "full"`.
    struct Probe {
        name: &'static str,
        runs: AtomicUsize,
    }

    impl Tool for Probe {
        fn name(&self) -> &str {
            self.name
        }
        fn description(&self) -> &str {
            "probe"
        }
        fn parameters(&self) -> Value {
            json!({"type": "object", "properties": {}})
        }
        fn mutated_path(&self, args: &Value) -> Option<String> {
            (self.name == "write").then(|| args["file_path"].as_str().map(str::to_owned))?
        }
        fn runs_commands(&self) -> bool {
            self.name == "shell"
        }
        fn escalation(&self, args: &Value) -> Option<String> {
            (self.name == "shell" && args["sandbox"].as_str() == Some("full")).then(|| "test".to_owned())
        }
        fn call<'a>(&'a self, _: Value, _: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(ToolOutput::text("ran")) })
        }
    }

    /// A project (writable root: the project only), a directory outside it, and a context
    /// whose person answers every approval with `answer` (`None`: nobody is there).
    struct Setup {
        root: std::path::PathBuf,
        outside: std::path::PathBuf,
        ctx: ToolContext,
        asked: Arc<AtomicUsize>,
        _dirs: [tempfile::TempDir; 3],
    }

    fn setup(mode: Mode, rules: &[(RuleKind, &str)], answer: Option<ApprovalDecision>) -> Setup {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let root = project.path().canonicalize().unwrap();
        let (events, mut rx) = EventSink::channel();
        let requests = match answer {
            Some(_) => Requests::new(events.clone()),
            None => Requests::headless(),
        };
        let mut set = crate::permission::Rules::default();
        for (kind, text) in rules {
            set.push(*kind, Rule::parse(text).unwrap(), Source::CommandLine);
        }
        let policy = match mode {
            Mode::WorkspaceWrite => Policy {
                mode,
                writable: vec![root.clone()],
                read_only: vec![root.join(".git"), root.join(".brute")],
                ..Policy::default()
            },
            mode => Policy::for_project(mode, &root, &[], &[]),
        };
        let access = Access {
            policy,
            sandbox_available: Some(true),
            rules: set,
            approvals_file: Some(data.path().join("approvals.toml")),
            ..Access::default()
        };
        let provider = Arc::new(crate::provider::replay::ReplayProvider::from_script("").unwrap());
        let agent = Arc::new(
            AgentState::new(provider, "m".into(), 100, root.clone())
                .with_requests(requests.clone())
                .with_access(access),
        );
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = asked.clone();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                if let (
                    Event::Request {
                        id,
                        kind: RequestKind::Approval { .. },
                    },
                    Some(decision),
                ) = (event, answer)
                {
                    counter.fetch_add(1, Ordering::SeqCst);
                    requests.resolve(&id, Response::Approval { decision, reason: None });
                }
            }
        });
        Setup {
            outside: outside.path().canonicalize().unwrap(),
            root,
            ctx: ToolContext::standalone(agent, events),
            asked,
            _dirs: [project, outside, data],
        }
    }

    fn probe(name: &'static str) -> (Arc<Probe>, Pipeline) {
        let probe = Arc::new(Probe {
            name,
            runs: AtomicUsize::new(0),
        });
        (probe.clone(), Pipeline::new(probe).layer(Approve))
    }

    /// The error message of a refused call.
    async fn refused(pipeline: &Pipeline, args: Value, ctx: &ToolContext) -> String {
        match pipeline.call(args, ctx).await {
            Ok(out) => panic!("the call ran: {}", out.content),
            Err(e) => e.message,
        }
    }

    /// `write(src/**)` allows `src/a` but not `src/out/x` when `src/out` is a link out of the
    /// project: without a person that write is denied, naming the rule and where it leads.
    #[tokio::test]
    async fn a_path_allow_rule_sees_where_the_path_really_leads() {
        let s = setup(Mode::WorkspaceWrite, &[(RuleKind::Allow, "write(src/**)")], None);
        std::fs::create_dir(s.root.join("src")).unwrap();
        std::os::unix::fs::symlink(&s.outside, s.root.join("src/out")).unwrap();
        let (write, pipeline) = probe("write");
        pipeline.call(json!({"file_path": "src/a.rs"}), &s.ctx).await.unwrap();
        let message = refused(&pipeline, json!({"file_path": "src/out/x"}), &s.ctx).await;
        let leads = s.outside.join("x").display().to_string();
        assert!(
            message.contains(&format!(
                "the rule allow `write(src/**)` (command line) does not cover this call: src/out/x leads to {leads}; {leads} is outside the writable roots"
            )) && message.contains("nobody is here to approve it"),
            "{message}"
        );
        assert!(
            message.contains(&format!(
                "an `allow_unsandboxed` rule matching both `src/out/x` and where it leads, `{leads}`"
            )),
            "{message}"
        );
        assert_eq!(write.runs.load(Ordering::SeqCst), 1, "only the write inside ran");
    }

    /// In read-only mode a rule may allow changes in the project, never outside it, nor in
    /// its `.git`; and a link inside `src/` leading elsewhere in the project is not `src/`.
    #[tokio::test]
    async fn in_read_only_mode_an_allow_rule_covers_the_project_only() {
        let s = setup(
            Mode::ReadOnly,
            &[(RuleKind::Allow, "write(**)"), (RuleKind::Allow, "write(/**)")],
            None,
        );
        let (write, pipeline) = probe("write");
        pipeline.call(json!({"file_path": "notes.txt"}), &s.ctx).await.unwrap();
        let outside = s.outside.join("x").display().to_string();
        let message = refused(&pipeline, json!({ "file_path": outside }), &s.ctx).await;
        assert!(
            message.contains("does not cover this call") && message.contains("is outside the project"),
            "{message}"
        );
        let message = refused(&pipeline, json!({"file_path": ".git/config"}), &s.ctx).await;
        assert!(message.contains("does not cover this call"), "{message}");
        assert_eq!(write.runs.load(Ordering::SeqCst), 1);

        let s = setup(Mode::ReadOnly, &[(RuleKind::Allow, "write(src/**)")], None);
        std::fs::create_dir_all(s.root.join("docs")).unwrap();
        std::fs::create_dir(s.root.join("src")).unwrap();
        std::os::unix::fs::symlink(s.root.join("docs"), s.root.join("src/docs")).unwrap();
        let (write, pipeline) = probe("write");
        let message = refused(&pipeline, json!({"file_path": "src/docs/x"}), &s.ctx).await;
        assert!(
            message.contains(&format!(
                "does not cover this call: src/docs/x leads to {}),",
                s.root.join("docs/x").display()
            )),
            "{message}"
        );
        pipeline.call(json!({"file_path": "src/x"}), &s.ctx).await.unwrap();
        assert_eq!(write.runs.load(Ordering::SeqCst), 1);
    }

    /// `shell(git status*)` allows `git status` in the sandbox, never out of it: that takes an
    /// `allow_unsandboxed` rule, which also covers the confined call.
    #[tokio::test]
    async fn an_allow_rule_never_lets_a_call_out_of_the_sandbox() {
        let escalated = json!({"command": "git status > /x", "sandbox": "full", "justification": "j"});
        let s = setup(Mode::WorkspaceWrite, &[(RuleKind::Allow, "shell(git status*)")], None);
        let (shell, pipeline) = probe("shell");
        pipeline.call(json!({"command": "git status"}), &s.ctx).await.unwrap();
        let message = refused(&pipeline, escalated.clone(), &s.ctx).await;
        assert!(
            message.contains(
                "the rule allow `shell(git status*)` (command line) does not cover this call: it asks to run without the sandbox: test"
            ),
            "{message}"
        );
        assert!(
            message.contains("`allow_unsandboxed = [\"shell(git*)\"]`") && message.contains("--yolo"),
            "{message}"
        );
        assert!(!message.contains("--sandbox full-access"), "{message}");
        assert_eq!(shell.runs.load(Ordering::SeqCst), 1);

        let s = setup(
            Mode::WorkspaceWrite,
            &[(RuleKind::AllowUnsandboxed, "shell(git status*)")],
            None,
        );
        let (shell, pipeline) = probe("shell");
        pipeline.call(escalated, &s.ctx).await.unwrap();
        pipeline.call(json!({"command": "git status"}), &s.ctx).await.unwrap();
        assert_eq!(shell.runs.load(Ordering::SeqCst), 2);
    }

    /// Where no sandbox works, every command runs unconfined: a plain allow rule does not
    /// cover it either.
    #[tokio::test]
    async fn without_a_sandbox_an_allow_rule_does_not_run_a_command_unconfined() {
        let s = setup(Mode::WorkspaceWrite, &[(RuleKind::Allow, "shell(ls*)")], None);
        let mut access = s.ctx.agent.access();
        access.sandbox_available = Some(false);
        let agent = Arc::new(
            AgentState::new(
                Arc::new(crate::provider::replay::ReplayProvider::from_script("").unwrap()),
                "m".into(),
                100,
                s.root.clone(),
            )
            .with_access(access),
        );
        let ctx = ToolContext::standalone(agent, s.ctx.events.clone());
        let (shell, pipeline) = probe("shell");
        let message = refused(&pipeline, json!({"command": "ls"}), &ctx).await;
        assert!(
            message.contains("does not cover this call: no sandbox is available here"),
            "{message}"
        );
        assert_eq!(shell.runs.load(Ordering::SeqCst), 0);
    }

    /// A hook's `allow` answers the mode's question (read-only, inside the project) but never
    /// lets a call out of the sandbox.
    #[tokio::test]
    async fn a_hook_allow_does_not_lift_the_sandbox() {
        use crate::hooks::Permission;
        use crate::pipeline::hooks::with_decision;
        let s = setup(Mode::WorkspaceWrite, &[], None);
        let (shell, pipeline) = probe("shell");
        let escalated = json!({"command": "ls", "sandbox": "full"});
        let result = with_decision(Permission::Allow, pipeline.call(escalated, &s.ctx)).await;
        assert!(result.is_err_and(|e| e.message.contains("it asks to run without the sandbox")));
        assert_eq!(shell.runs.load(Ordering::SeqCst), 0);
        let (write, pipeline) = probe("write");
        let outside = s.outside.join("x").display().to_string();
        let result = with_decision(
            Permission::Allow,
            pipeline.call(json!({ "file_path": outside }), &s.ctx),
        )
        .await;
        assert!(result.is_err_and(|e| e.message.contains("is outside the writable roots")));
        assert_eq!(write.runs.load(Ordering::SeqCst), 0);

        let s = setup(Mode::ReadOnly, &[], None);
        let (write, pipeline) = probe("write");
        let inside = json!({"file_path": "notes.txt"});
        with_decision(Permission::Allow, pipeline.call(inside, &s.ctx))
            .await
            .unwrap();
        assert_eq!(write.runs.load(Ordering::SeqCst), 1);
    }

    /// "Always allow in this project" for an escalated call keeps an `allow_unsandboxed`
    /// rule; for a confined call an `allow` rule, which never covers the escalated one.
    #[tokio::test]
    async fn project_approvals_keep_whether_the_call_left_the_sandbox() {
        let escalated = json!({"command": "git fetch", "sandbox": "full"});
        let s = setup(Mode::WorkspaceWrite, &[], Some(ApprovalDecision::Project));
        let (shell, pipeline) = probe("shell");
        pipeline.call(escalated.clone(), &s.ctx).await.unwrap();
        let rules = s.ctx.agent.access().rules;
        let kept = |kind| -> Vec<String> { rules.list(kind).iter().map(|(r, _)| r.to_string()).collect() };
        assert_eq!(kept(RuleKind::AllowUnsandboxed), ["shell(git fetch)"]);
        assert!(kept(RuleKind::Allow).is_empty());
        let file = s.ctx.agent.access().approvals_file.unwrap();
        let saved = crate::permission::approvals::load(&file);
        assert_eq!(saved.list(RuleKind::AllowUnsandboxed).len(), 1);
        assert!(saved.list(RuleKind::Allow).is_empty());
        pipeline.call(escalated.clone(), &s.ctx).await.unwrap();
        assert_eq!(s.asked.load(Ordering::SeqCst), 1, "the kept rule covers the next one");
        assert_eq!(shell.runs.load(Ordering::SeqCst), 2);

        // An ask rule makes the confined call ask: approving it for the project keeps a
        // plain allow rule; a write outside the writable roots is kept as unsandboxed.
        let s = setup(
            Mode::WorkspaceWrite,
            &[(RuleKind::Ask, "shell(git push*)")],
            Some(ApprovalDecision::Project),
        );
        let (_, pipeline) = probe("shell");
        let outside = s.outside.join("x").display().to_string();
        let (_, writing) = probe("write");
        writing.call(json!({ "file_path": outside }), &s.ctx).await.unwrap();
        pipeline.call(json!({"command": "git push"}), &s.ctx).await.unwrap();
        let rules = s.ctx.agent.access().rules;
        let kept = |kind| -> Vec<String> { rules.list(kind).iter().map(|(r, _)| r.to_string()).collect() };
        assert_eq!(kept(RuleKind::AllowUnsandboxed), [format!("write({outside})")]);
        assert_eq!(kept(RuleKind::Allow), ["shell(git push)"]);
    }

    /// Plan mode refuses a change before any rule, approval or `--yolo` is asked; commands run
    /// (confined) unless they ask to leave the sandbox. Leaving plan mode lifts it.
    #[tokio::test]
    async fn plan_mode_refuses_changes_whatever_allows_them() {
        let s = setup(
            Mode::WorkspaceWrite,
            &[
                (RuleKind::AllowUnsandboxed, "write(**)"),
                (RuleKind::AllowUnsandboxed, "shell(*)"),
            ],
            Some(ApprovalDecision::Once),
        );
        s.ctx.agent.set_mode(crate::permission::Mode::Plan);
        assert_eq!(s.ctx.agent.access().policy.mode, Mode::ReadOnly);
        let (write, writing) = probe("write");
        let message = refused(&writing, json!({"file_path": "a.txt"}), &s.ctx).await;
        assert!(
            message.contains("would change a.txt") && message.contains("plan mode"),
            "{message}"
        );
        let (shell, pipeline) = probe("shell");
        let escalated = json!({"command": "ls", "sandbox": "full"});
        assert!(
            refused(&pipeline, escalated, &s.ctx)
                .await
                .contains("read-only sandbox")
        );
        pipeline.call(json!({"command": "ls"}), &s.ctx).await.unwrap();
        assert_eq!(
            (write.runs.load(Ordering::SeqCst), shell.runs.load(Ordering::SeqCst)),
            (0, 1)
        );
        assert_eq!(s.asked.load(Ordering::SeqCst), 0, "nobody was asked");
        // Back to the mode before planning: the rule lets the write through again.
        assert_eq!(s.ctx.agent.access().plan, Some(Mode::WorkspaceWrite));
        s.ctx.agent.set_mode(crate::permission::Mode::WorkspaceWrite);
        writing.call(json!({"file_path": "a.txt"}), &s.ctx).await.unwrap();
        assert_eq!(write.runs.load(Ordering::SeqCst), 1);
    }

    /// A session approval of a confined call does not cover the same call out of the sandbox.
    #[tokio::test]
    async fn session_approvals_keep_whether_the_call_left_the_sandbox() {
        let s = setup(
            Mode::WorkspaceWrite,
            &[(RuleKind::Ask, "shell(git*)")],
            Some(ApprovalDecision::Session),
        );
        let (shell, pipeline) = probe("shell");
        for _ in 0..2 {
            pipeline.call(json!({"command": "git status"}), &s.ctx).await.unwrap();
        }
        assert_eq!(s.asked.load(Ordering::SeqCst), 1);
        pipeline
            .call(json!({"command": "git status", "sandbox": "full"}), &s.ctx)
            .await
            .unwrap();
        assert_eq!(s.asked.load(Ordering::SeqCst), 2, "the escalated call is asked about");
        assert_eq!(shell.runs.load(Ordering::SeqCst), 3);
    }
}
