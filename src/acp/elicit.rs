//! The `question` tool as an ACP form elicitation (`elicitation/create`, mode `form`), for
//! clients that offer `elicitation.form`: every question is one field of one form, so the
//! person answers them together as in the terminal's dialog. A question with choices is a
//! single-select (`oneOf`) or, when several may be picked, a multi-select (`anyOf`); one
//! without is free text. Field names are `q1`, `q2`, … in the questions' order.

use serde_json::{Map, Value, json};

use crate::protocol::Question;

/// The field that holds the answer to question `n` (from 0).
fn field(n: usize) -> String {
    format!("q{}", n + 1)
}

/// The `elicitation/create` parameters for `questions` in `session`.
pub fn request(session: &str, questions: &[Question]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (n, question) in questions.iter().enumerate() {
        let title = question.header.clone().unwrap_or_else(|| format!("Question {}", n + 1));
        let choices: Vec<Value> = question
            .options
            .iter()
            .map(|o| match &o.description {
                Some(description) => json!({"const": o.label, "title": o.label, "description": description}),
                None => json!({"const": o.label, "title": o.label}),
            })
            .collect();
        let mut property = match (choices.is_empty(), question.multiple) {
            (true, _) => json!({"type": "string"}),
            (false, false) => json!({"type": "string", "oneOf": choices}),
            (false, true) => json!({"type": "array", "items": {"anyOf": choices}}),
        };
        property["title"] = json!(title);
        property["description"] = json!(question.question);
        match &question.default {
            Some(default) if question.multiple && !choices.is_empty() => property["default"] = json!([default]),
            Some(default) => property["default"] = json!(default),
            None => required.push(field(n)),
        }
        properties.insert(field(n), property);
    }
    let message = match questions {
        [one] => one.question.clone(),
        _ => format!("The model asks {} questions.", questions.len()),
    };
    json!({
        "sessionId": session,
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": properties, "required": required},
    })
}

/// The answers in an accepted form's `content`, one per question in order, as the terminal
/// dialog gives them (a multi-select's picks joined by `, `; a missing field is empty, so
/// the question's default applies). `None` when the person declined or cancelled.
pub fn answers(questions: &[Question], result: &Value) -> Option<Vec<String>> {
    if result["action"] != "accept" {
        return None;
    }
    let content = &result["content"];
    let answers = (0..questions.len())
        .map(|n| match &content[field(n)] {
            Value::String(text) => text.clone(),
            Value::Array(picks) => picks.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "),
            Value::Number(number) => number.to_string(),
            Value::Bool(yes) => yes.to_string(),
            _ => String::new(),
        })
        .collect();
    Some(answers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::QuestionOption;

    fn question(text: &str, options: &[&str], multiple: bool, default: Option<&str>) -> Question {
        Question {
            question: text.into(),
            header: None,
            options: options
                .iter()
                .map(|label| QuestionOption {
                    label: (*label).into(),
                    description: None,
                })
                .collect(),
            multiple,
            default: default.map(str::to_owned),
        }
    }

    #[test]
    fn questions_become_one_form_and_its_content_the_answers() {
        let questions = [
            question("Which colour?", &["red", "blue"], false, None),
            question("Which sizes?", &["S", "M", "L"], true, None),
            question("Anything else?", &[], false, Some("no")),
        ];
        let request = request("s1", &questions);
        assert_eq!(request["mode"], "form");
        assert_eq!(request["message"], "The model asks 3 questions.");
        let schema = &request["requestedSchema"];
        assert_eq!(
            schema["properties"]["q1"]["oneOf"][1],
            json!({"const": "blue", "title": "blue"})
        );
        assert_eq!(schema["properties"]["q2"]["type"], "array");
        assert_eq!(schema["properties"]["q2"]["items"]["anyOf"][2]["const"], "L");
        assert_eq!(
            schema["properties"]["q3"],
            json!({"type": "string", "title": "Question 3", "description": "Anything else?", "default": "no"})
        );
        assert_eq!(schema["required"], json!(["q1", "q2"]));

        let accepted = json!({"action": "accept", "content": {"q1": "blue", "q2": ["S", "L"]}});
        assert_eq!(
            answers(&questions, &accepted),
            Some(vec!["blue".to_owned(), "S, L".to_owned(), String::new()])
        );
        assert_eq!(answers(&questions, &json!({"action": "decline"})), None);
        assert_eq!(answers(&questions, &json!({"action": "cancel"})), None);
    }
}
