//! The agent loop in-process, driven by the replay provider: questions answered through the
//! Op protocol, critical errors, the iteration cap, tools that change agent settings.

use std::sync::Arc;

use brute::agent::{Agent, AgentConfig};
use brute::protocol::requests::Requests;
use brute::protocol::{Event, EventSink, RequestKind, Response, TurnOutcome};
use brute::provider::Message;
use brute::provider::replay::ReplayProvider;
use brute::tool::exec::Executor;
use brute::tool::state::AgentState;
use brute::tool::{Params, ToolError, ToolOutput, fn_tool};
use serde_json::json;
use tokio::sync::mpsc;

struct Setup {
    agent: Agent,
    events: mpsc::UnboundedReceiver<Event>,
    _dir: tempfile::TempDir,
}

fn setup(script: &str, interactive: bool, max_turns: u32, extra: Vec<Arc<dyn brute::tool::Tool>>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(ReplayProvider::from_script(script).unwrap());
    let (sink, events) = EventSink::channel();
    let requests = if interactive {
        Requests::new(sink.clone())
    } else {
        Requests::headless()
    };
    let state =
        Arc::new(AgentState::new(provider, "replay".into(), 100, dir.path().to_path_buf()).with_requests(requests));
    let mut registry = brute::app::builtin_tools();
    for tool in extra {
        registry.register(tool);
    }
    let executor = Executor::new(Arc::new(registry), Arc::default(), state.clone(), sink.clone());
    let config = AgentConfig {
        system_prompt: "test".into(),
        max_turns,
    };
    Setup {
        agent: Agent::new(state, executor, config, sink),
        events,
        _dir: dir,
    }
}

fn tool_results(agent: &Agent) -> Vec<(String, String, bool)> {
    agent
        .history()
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => Some((call_id.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

const ASK: &str = r#"{"tool_calls": [{"id": "q1", "name": "question", "arguments": {"questions": [{"question": "Which database?", "options": [{"label": "sqlite"}, {"label": "postgres"}], "default": "sqlite"}, {"question": "Port?"}]}}]}
{"text": "thanks"}"#;

#[tokio::test]
async fn questions_go_to_the_front_end_and_answers_come_back() {
    let mut s = setup(ASK, true, 10, Vec::new());
    let requests = s.agent.state().requests.clone();
    let front_end = tokio::spawn(async move {
        while let Some(event) = s.events.recv().await {
            if let Event::Request {
                id,
                kind: RequestKind::Question { questions },
            } = event
            {
                assert_eq!(questions.len(), 2);
                assert_eq!(questions[0].options[1].label, "postgres");
                requests.resolve(
                    &id,
                    Response::Answers {
                        answers: vec!["2".into(), "5432".into()],
                    },
                );
            }
        }
    });
    let end = s.agent.run_turn("set up".into()).await;
    assert_eq!(end.outcome, TurnOutcome::Done);
    let results = tool_results(&s.agent);
    assert_eq!(
        results[0].1,
        "The user answered:\n1. Which database? → postgres\n2. Port? → 5432\n"
    );
    drop(s.agent);
    front_end.abort();
}

#[tokio::test]
async fn a_cancelled_dialog_says_the_user_declined() {
    let mut s = setup(ASK, true, 10, Vec::new());
    let requests = s.agent.state().requests.clone();
    tokio::spawn(async move {
        while let Some(event) = s.events.recv().await {
            if let Event::Request { id, .. } = event {
                requests.resolve(&id, Response::Declined);
            }
        }
    });
    s.agent.run_turn("set up".into()).await;
    assert!(tool_results(&s.agent)[0].1.starts_with("The user declined to answer"));
}

#[tokio::test]
async fn an_empty_answer_takes_the_default_and_interrupt_answers_the_question() {
    let mut s = setup(ASK, true, 10, Vec::new());
    let requests = s.agent.state().requests.clone();
    tokio::spawn(async move {
        while let Some(event) = s.events.recv().await {
            if let Event::Request { id, .. } = event {
                let answers = vec![String::new(), String::new()];
                requests.resolve(&id, Response::Answers { answers });
            }
        }
    });
    s.agent.run_turn("x".into()).await;
    assert!(tool_results(&s.agent)[0].1.contains("Which database? → sqlite"));

    let mut s = setup(ASK, true, 10, Vec::new());
    // An interrupt is the conversation cancelling the turn's token.
    let cancel = tokio_util::sync::CancellationToken::new();
    let interrupt = cancel.clone();
    tokio::spawn(async move {
        while let Some(event) = s.events.recv().await {
            if let Event::Request { .. } = event {
                interrupt.cancel();
            }
        }
    });
    let end = s.agent.run_turn_with_cancel("x".into(), cancel).await;
    assert_eq!(end.outcome, TurnOutcome::Interrupted);
    let results = tool_results(&s.agent);
    assert_eq!(results.len(), 1, "the question still has a result");
    assert!(results[0].2);
}

#[tokio::test]
async fn a_critical_error_ends_the_turn_visibly() {
    let fatal = fn_tool("fatal", "aborts", Params::new().build(), |_, _| async {
        Err(ToolError::new("Corrupt", "index corrupt").critical())
    });
    let script = r#"{"tool_calls": [{"name": "fatal"}, {"name": "read", "arguments": {"file_path": "."}}]}
{"text": "never reached"}"#;
    let mut s = setup(script, false, 10, vec![Arc::new(fatal)]);
    let end = s.agent.run_turn("x".into()).await;
    assert_eq!(end.outcome, TurnOutcome::Error);
    assert_eq!(
        end.error.as_deref(),
        Some("a critical tool error ended the turn: Error: Corrupt: index corrupt")
    );
    assert_eq!(tool_results(&s.agent).len(), 2, "every call still has its result");
    let mut saw_error = false;
    while let Ok(e) = s.events.try_recv() {
        saw_error |= matches!(e, Event::Error { .. });
    }
    assert!(saw_error);
}

#[tokio::test]
async fn the_iteration_cap_stops_with_a_notice() {
    let script = r#"{"tool_calls": [{"name": "todo_read"}]}
{"tool_calls": [{"name": "todo_read"}]}
{"tool_calls": [{"name": "todo_read"}]}"#;
    let mut s = setup(script, false, 2, Vec::new());
    let end = s.agent.run_turn("x".into()).await;
    assert_eq!(end.outcome, TurnOutcome::MaxTurns);
    assert!(
        matches!(s.agent.history().last(), Some(Message::Tool { .. })),
        "no dangling call"
    );
    assert_eq!(tool_results(&s.agent).len(), 2);
}

#[tokio::test]
async fn tools_reach_their_agent_through_the_context() {
    let set_temperature = fn_tool(
        "set_temperature",
        "Changes the sampling temperature",
        Params::new().param("value", "number", "new temperature", true).build(),
        |args, ctx| async move {
            let value = args["value"].as_f64().unwrap_or(1.0) as f32;
            ctx.agent.set_temperature(Some(value));
            Ok(ToolOutput::text(format!("temperature is now {value}")))
        },
    );
    let script = r#"{"tool_calls": [{"name": "set_temperature", "arguments": {"value": 0.25}}]}
{"text": "done"}"#;
    let mut s = setup(script, false, 10, vec![Arc::new(set_temperature)]);
    s.agent.run_turn("x".into()).await;
    assert_eq!(s.agent.state().temperature(), Some(0.25));
    assert_eq!(tool_results(&s.agent)[0].1, "temperature is now 0.25");
}

#[tokio::test]
async fn schema_violations_are_reported_for_inline_tools_too() {
    let typed = fn_tool(
        "typed",
        "needs n",
        Params::new().integer("n", "a number", true).build(),
        |_, _| async { Ok(ToolOutput::text("ran")) },
    );
    let script = r#"{"tool_calls": [{"name": "typed", "arguments": {"n": "five"}}, {"name": "typed", "arguments": {}}]}
{"text": "ok"}"#;
    let mut s = setup(script, false, 10, vec![Arc::new(typed)]);
    s.agent.run_turn("x".into()).await;
    let results = tool_results(&s.agent);
    assert_eq!(
        results[0].1,
        "Error: InvalidArguments: arguments do not match the `typed` schema: /n: \"five\" is not of type \"integer\""
    );
    assert_eq!(
        results[1].1,
        "Error: InvalidArguments: arguments do not match the `typed` schema: \"n\" is a required property"
    );
    let _ = json!({});
}
