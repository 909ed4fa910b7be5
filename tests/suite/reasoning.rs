//! Reasoning on every wire format, with thinking on and off, across two turns with tool
//! calls, through the real binary against the strict mock (which refuses, as the real APIs
//! do, a tool loop whose thinking was not sent back, a thinking block without its signature,
//! a reasoning item Responses cannot use without `store`, and effort on models without it).
//!
//! Each run: turn 1 reads notes.txt with a tool and answers; turn 2 (`--continue`) reads
//! todo.txt and answers. The replies carry reasoning where the case says so; the test then
//! checks what went back: the effort as each wire and model takes it, and the turn's own
//! reasoning (Anthropic thinking blocks with signatures, Responses encrypted reasoning items)
//! in the turn's later requests only.

use crate::support;

use serde_json::{Value, json};
use support::{MockServer, Recorded, Reply, Sandbox};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wire {
    Chat,
    Anthropic,
    Responses,
}

/// One run: a wire, a model, an effort, and whether the replies carry reasoning.
struct Case {
    name: &'static str,
    wire: Wire,
    args: &'static [&'static str],
    reasoning: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "chat gpt-5.1, effort off",
        wire: Wire::Chat,
        args: &["--provider", "openai", "--model", "gpt-5.1"],
        reasoning: false,
    },
    Case {
        name: "chat gpt-5.1, effort low",
        wire: Wire::Chat,
        args: &["--provider", "openai", "--model", "gpt-5.1", "--effort", "low"],
        reasoning: false,
    },
    Case {
        name: "chat qwen3 (a compatible server), effort high, reasoning in the stream",
        wire: Wire::Chat,
        args: &["--provider", "openai", "--model", "qwen3", "--effort", "high"],
        reasoning: true,
    },
    Case {
        name: "anthropic sonnet 4.5, thinking off",
        wire: Wire::Anthropic,
        args: &["--provider", "anthropic", "--model", "claude-sonnet-4-5"],
        reasoning: false,
    },
    Case {
        name: "anthropic sonnet 4.5, thinking with a budget",
        wire: Wire::Anthropic,
        args: &[
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-5",
            "--effort",
            "medium",
        ],
        reasoning: true,
    },
    Case {
        name: "anthropic opus 4.7, adaptive thinking",
        wire: Wire::Anthropic,
        args: &[
            "--provider",
            "anthropic",
            "--model",
            "claude-opus-4-7",
            "--effort",
            "high",
        ],
        reasoning: true,
    },
    Case {
        name: "responses gpt-4.1, no reasoning",
        wire: Wire::Responses,
        args: &["--provider", "responses", "--model", "gpt-4.1"],
        reasoning: false,
    },
    Case {
        name: "responses gpt-5.1, effort unset (the model's default)",
        wire: Wire::Responses,
        args: &["--provider", "responses", "--model", "gpt-5.1"],
        reasoning: true,
    },
    Case {
        name: "responses gpt-5.1, effort medium",
        wire: Wire::Responses,
        args: &["--provider", "responses", "--model", "gpt-5.1", "--effort", "medium"],
        reasoning: true,
    },
];

impl Case {
    fn effort(&self) -> Option<&'static str> {
        let at = self.args.iter().position(|a| *a == "--effort")?;
        self.args.get(at + 1).copied()
    }

    fn model(&self) -> &'static str {
        let at = self.args.iter().position(|a| *a == "--model").unwrap_or(0);
        self.args.get(at + 1).copied().unwrap_or_default()
    }

    /// Reply `n` (1..=4): its reasoning marker is `n`, so what comes back names its reply.
    fn reply(&self, n: u32, text: &str, calls: &[(&str, &str, &str)]) -> Reply {
        let thought = format!("thought {n}");
        let secret = format!("secret-{n}");
        let reasoning = self.reasoning.then_some((thought.as_str(), secret.as_str()));
        Reply::sse(match self.wire {
            Wire::Chat => {
                let mut body = String::new();
                if let Some((thought, _)) = reasoning {
                    let chunk =
                        json!({"choices": [{"index": 0, "delta": {"reasoning": thought}, "finish_reason": null}]});
                    body.push_str(&format!("data: {chunk}\n\n"));
                }
                body + &support::openai_sse(text, calls)
            }
            Wire::Anthropic => support::anthropic_sse(reasoning, text, calls),
            Wire::Responses => support::responses_sse(reasoning, text, calls),
        })
    }

    fn brute(&self, sb: &Sandbox, server: &MockServer) -> assert_cmd::Command {
        let mut cmd = sb.bare();
        cmd.args(self.args);
        match self.wire {
            Wire::Anthropic => {
                cmd.env("ANTHROPIC_API_KEY", "test-key")
                    .env("ANTHROPIC_BASE_URL", server.url(""));
            }
            Wire::Chat | Wire::Responses => {
                cmd.env("OPENAI_API_KEY", "test-key")
                    .args(["--base-url", &server.url("/v1")]);
            }
        }
        cmd
    }

    /// The two turns; returns the four requests.
    fn converse(&self) -> Vec<Recorded> {
        let sb = Sandbox::new();
        sb.write("notes.txt", "hello from notes\n");
        sb.write("todo.txt", "buy milk\n");
        let server = MockServer::start();
        server.push(self.reply(1, "Let me look.", &[("call_1", "read", r#"{"file_path":"notes.txt"}"#)]));
        server.push(self.reply(2, "It says hello.", &[]));
        server.push(self.reply(3, "", &[("call_2", "read", r#"{"file_path":"todo.txt"}"#)]));
        server.push(self.reply(4, "Buy milk.", &[]));
        self.brute(&sb, &server)
            .args(["-p", "What is in notes.txt?"])
            .assert()
            .success()
            .stdout(predicates::str::contains("It says hello."));
        self.brute(&sb, &server)
            .args(["-p", "And todo.txt?", "--continue"])
            .assert()
            .success()
            .stdout("Buy milk.\n");
        let requests = server.requests();
        let refused: Vec<_> = requests.iter().filter_map(|r| r.refused).collect();
        assert!(refused.is_empty(), "{}: the strict mock refused {refused:?}", self.name);
        assert_eq!(requests.len(), 4, "{}", self.name);
        requests
    }
}

/// The markers of the reasoning a request sends back, in order.
fn sent_back(wire: Wire, body: &Value) -> Vec<String> {
    let items = match wire {
        Wire::Responses => body["input"].as_array().cloned().unwrap_or_default(),
        Wire::Chat | Wire::Anthropic => body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .collect(),
    };
    items
        .iter()
        .filter_map(|item| match item["type"].as_str() {
            Some("thinking") => Some(format!(
                "{} / {}",
                item["thinking"].as_str().unwrap_or_default(),
                item["signature"].as_str().unwrap_or_default()
            )),
            Some("reasoning") => Some(format!(
                "{} / {}",
                item["summary"][0]["text"].as_str().unwrap_or_default(),
                item["encrypted_content"].as_str().unwrap_or_default()
            )),
            _ => None,
        })
        .collect()
}

/// Where each sent-back item stands: the kind of the item after it.
fn followed_by(wire: Wire, body: &Value) -> Vec<String> {
    let items: Vec<Value> = match wire {
        Wire::Responses => body["input"].as_array().cloned().unwrap_or_default(),
        _ => body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "assistant")
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .collect(),
    };
    let kind = |v: &Value| v["type"].as_str().or(v["role"].as_str()).unwrap_or_default().to_owned();
    items
        .windows(2)
        .filter(|w| matches!(w[0]["type"].as_str(), Some("thinking" | "reasoning")))
        .map(|w| kind(&w[1]))
        .collect()
}

#[test]
fn reasoning_on_and_off_on_every_wire_across_two_turns() {
    for case in CASES {
        let requests = case.converse();
        let bodies: Vec<&Value> = requests.iter().map(|r| &r.body).collect();
        let name = case.name;
        let effort = case.effort();
        match case.wire {
            Wire::Chat => {
                for b in &bodies {
                    assert_eq!(b["reasoning_effort"].as_str(), effort, "{name}");
                    let limit = if case.model().starts_with("gpt-5") {
                        "max_completion_tokens"
                    } else {
                        "max_tokens"
                    };
                    assert!(b[limit].is_u64(), "{name}: {limit}");
                    // Chat Completions has no form to send reasoning back in.
                    assert!(sent_back(case.wire, b).is_empty(), "{name}");
                }
            }
            Wire::Anthropic => {
                for b in &bodies {
                    match (effort, case.model()) {
                        (None, _) => {
                            assert!(
                                b.get("thinking").is_none() && b.get("output_config").is_none(),
                                "{name}"
                            )
                        }
                        (Some(_), "claude-sonnet-4-5") => {
                            assert_eq!(
                                b["thinking"],
                                json!({"type": "enabled", "budget_tokens": 10000}),
                                "{name}"
                            );
                            assert!(b.get("output_config").is_none(), "{name}");
                        }
                        (Some(level), _) => {
                            assert_eq!(b["thinking"], json!({"type": "adaptive"}), "{name}");
                            assert_eq!(b["output_config"], json!({"effort": level}), "{name}");
                        }
                    }
                }
            }
            Wire::Responses => {
                let reasoning_model = case.model().starts_with("gpt-5");
                for b in &bodies {
                    assert_eq!(b["store"], false, "{name}");
                    if reasoning_model {
                        assert_eq!(b["include"], json!(["reasoning.encrypted_content"]), "{name}");
                        assert_eq!(b["reasoning"]["summary"], "auto", "{name}");
                        assert_eq!(b["reasoning"]["effort"].as_str(), effort, "{name}");
                    } else {
                        assert!(b.get("include").is_none() && b.get("reasoning").is_none(), "{name}");
                    }
                }
            }
        }
        if case.wire == Wire::Chat {
            continue;
        }
        // The turn's reasoning goes back in its later requests, and only there.
        let expected: [Vec<String>; 4] = if case.reasoning {
            [
                vec![],
                vec!["thought 1 / secret-1".into()],
                vec![],
                vec!["thought 3 / secret-3".into()],
            ]
        } else {
            Default::default()
        };
        for (n, want) in expected.iter().enumerate() {
            assert_eq!(&sent_back(case.wire, bodies[n]), want, "{name}: request {n}");
            // Each item goes back first in its answer: before the text (turn 1) or, without
            // text, before the call (turn 2).
            let next = match (case.wire, n) {
                (Wire::Anthropic, 1) => "text",
                (Wire::Anthropic, _) => "tool_use",
                (_, 1) => "assistant",
                _ => "function_call",
            };
            let after: Vec<&str> = want.iter().map(|_| next).collect();
            assert_eq!(followed_by(case.wire, bodies[n]), after, "{name}: request {n}");
        }
    }
}

/// A redacted thinking block goes back as it came, first in its message.
#[test]
fn a_redacted_thinking_block_goes_back_unchanged() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "hello\n");
    let server = MockServer::start();
    // A redacted thinking block, then the call, as the API streams them.
    let events = [
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking", "data": "EmwKAhgB"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"file_path\":\"notes.txt\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ];
    let first: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or_default()))
        .collect();
    server.push(Reply::sse(first));
    server.push(Reply::sse(support::anthropic_sse(None, "Done.", &[])));
    sb.bare()
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", server.url(""))
        .args(["--model", "claude-sonnet-4-5", "--effort", "low", "-p", "read it"])
        .assert()
        .success()
        .stdout("Done.\n");
    let requests = server.requests();
    assert!(requests.iter().all(|r| r.refused.is_none()));
    let assistant = &requests[1].body["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "redacted_thinking", "data": "EmwKAhgB"}),
        "{assistant}"
    );
    assert_eq!(assistant[1]["type"], "tool_use");
    assert_eq!(
        requests[1].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 4000})
    );
}

/// An organization that is not verified gets a 400 for reasoning summaries: the summary is
/// left out from then on, and the request goes through.
#[test]
fn an_unverified_organization_loses_the_summary_not_the_answer() {
    let sb = Sandbox::new();
    let server = MockServer::start();
    server.push(Reply::json(
        400,
        r#"{"error":{"message":"Your organization must be verified to generate reasoning summaries. Please go to: https://platform.openai.com/settings/organization/general and click on Verify Organization. If you just verified, it can take up to 15 minutes for access to propagate.","type":"invalid_request_error","param":"reasoning.summary","code":"unsupported_value"}}"#,
    ));
    server.push(Reply::sse(support::responses_sse(None, "Hi.", &[])));
    sb.bare()
        .env("OPENAI_API_KEY", "k")
        .args(["--provider", "responses", "--base-url", &server.url("/v1"), "-p", "hi"])
        .assert()
        .success()
        .stdout("Hi.\n")
        .stderr(predicates::str::contains("refused `reasoning.summary`: leaving it out"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["reasoning"], json!({"summary": "auto"}));
    assert!(requests[1].body.get("reasoning").is_none(), "{}", requests[1].body);
}
