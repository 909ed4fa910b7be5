//! The `question` tool: its schema, and turning the person's raw answers into the result the
//! model reads. Front ends only collect strings; numbers, defaults and option labels are
//! resolved here so every front end behaves the same.

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use crate::protocol::{Question, RequestKind, Response};
use crate::tool::{Params, Tool, ToolContext, ToolError, ToolOutput};

/// The result when nobody can answer.
pub const NO_USER: &str = "No interactive user is present to answer questions. Proceed with your best judgement, state the assumptions you made, and do not ask again.";
/// The result when the person cancelled the dialog.
pub const DECLINED: &str = "The user declined to answer (the dialog was cancelled). Do not assume an answer; continue without it or stop and explain.";

/// The `question` tool: an ordinary tool that asks through the request service
/// ([`ToolContext::ask`]), so every front end answers it the way it answers any request.
pub struct QuestionTool;

impl Tool for QuestionTool {
    fn name(&self) -> &str {
        "question"
    }

    /// It changes nothing outside the session: offered in plan mode.
    fn reach(&self) -> crate::tool::Reach {
        crate::tool::Reach::Reads
    }

    fn description(&self) -> &str {
        "Ask the user one or more questions and wait for the answers. Use only when you cannot proceed without a decision; offer options when there are clear choices. Free text is always allowed."
    }

    fn parameters(&self) -> Value {
        let option = json!({"type": "object", "properties": {
            "label": {"type": "string"},
            "description": {"type": "string"}
        }, "required": ["label"]});
        let question = json!({"type": "object", "properties": {
            "question": {"type": "string", "description": "The full question"},
            "header": {"type": "string", "description": "A short title"},
            "options": {"type": "array", "items": option},
            "multiple": {"type": "boolean", "description": "Allow several options"},
            "default": {"type": "string", "description": "Label taken when the answer is empty"}
        }, "required": ["question"]});
        Params::new()
            .array("questions", question, "The questions, asked in order", true)
            .build()
    }

    fn summary(&self, args: &Value) -> String {
        let first = args["questions"][0]["question"].as_str().unwrap_or("");
        crate::tool::key_argument(&json!({ "name": first }))
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let questions = parse(&args)?;
            let kind = RequestKind::Question {
                questions: questions.clone(),
            };
            match ctx.ask(kind).await {
                Response::Answers { answers } => Ok(ToolOutput::text(format_answers(&questions, &answers))),
                Response::NoPerson => Ok(ToolOutput::text(NO_USER)),
                _ if ctx.cancel.is_cancelled() => Err(ToolError::new(
                    "Interrupted",
                    "the user interrupted the turn before answering",
                )),
                _ => Ok(ToolOutput {
                    failure: Some(crate::protocol::Failure::Declined),
                    ..ToolOutput::text(DECLINED)
                }),
            }
        })
    }
}

/// Parses validated `question` arguments.
pub fn parse(args: &Value) -> Result<Vec<Question>, ToolError> {
    let questions: Vec<Question> = serde_json::from_value(args["questions"].clone())
        .map_err(|e| ToolError::invalid(format!("bad questions: {e}")))?;
    if questions.is_empty() {
        return Err(ToolError::invalid("questions is empty"));
    }
    Ok(questions)
}

/// Resolves one raw answer: empty takes the default; a number or a label picks an option
/// (several, comma-separated, for multiple choice); anything else is free text.
pub fn resolve(question: &Question, raw: &str) -> String {
    let raw = raw.trim();
    if raw.is_empty() {
        return question.default.clone().unwrap_or_default();
    }
    let pick = |part: &str| -> Option<String> {
        let part = part.trim();
        if let Ok(n) = part.parse::<usize>() {
            return question.options.get(n.checked_sub(1)?).map(|o| o.label.clone());
        }
        question
            .options
            .iter()
            .find(|o| o.label.eq_ignore_ascii_case(part))
            .map(|o| o.label.clone())
    };
    if question.multiple && raw.contains(',') {
        let parts: Option<Vec<String>> = raw.split(',').map(pick).collect();
        if let Some(parts) = parts {
            return parts.join(", ");
        }
    }
    pick(raw).unwrap_or_else(|| raw.to_owned())
}

/// Formats the answers for the model.
pub fn format_answers(questions: &[Question], answers: &[String]) -> String {
    let mut out = String::from("The user answered:\n");
    for (i, question) in questions.iter().enumerate() {
        let raw = answers.get(i).map(String::as_str).unwrap_or("");
        let answer = resolve(question, raw);
        let answer = if answer.is_empty() {
            "(no answer)".to_owned()
        } else {
            answer
        };
        out.push_str(&format!("{}. {} → {answer}\n", i + 1, question.question));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::QuestionOption;

    fn q(multiple: bool) -> Question {
        Question {
            question: "Which?".into(),
            header: None,
            options: ["red", "green", "blue"]
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multiple,
            default: Some("green".into()),
        }
    }

    #[test]
    fn numbers_labels_defaults_and_free_text() {
        assert_eq!(resolve(&q(false), "1"), "red");
        assert_eq!(resolve(&q(false), "BLUE"), "blue");
        assert_eq!(resolve(&q(false), ""), "green");
        assert_eq!(resolve(&q(false), "purple please"), "purple please");
        assert_eq!(resolve(&q(false), "9"), "9");
        assert_eq!(resolve(&q(true), "1, 3"), "red, blue");
    }
}
