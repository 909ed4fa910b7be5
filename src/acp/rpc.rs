//! JSON-RPC 2.0 as ACP uses it over stdio: one message a line. [`parse`] sorts a line into a
//! request, a notification or a response; [`Out`] writes brute's own.

use std::io::Write;

use serde_json::{Value, json};

/// One message from the client.
#[derive(Debug, PartialEq)]
pub enum Message {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// The answer to one of brute's requests: its result, or its error object.
    Response {
        id: Value,
        result: Result<Value, Value>,
    },
}

/// A JSON-RPC error.
#[derive(Debug, PartialEq)]
pub struct Error {
    pub code: i64,
    pub message: String,
}

impl Error {
    pub fn params(message: impl Into<String>) -> Self {
        Self {
            code: -32602,
            message: message.into(),
        }
    }

    pub fn method(method: &str) -> Self {
        Self {
            code: -32601,
            message: format!("brute does not handle `{method}`"),
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            code: -32603,
            message: message.into(),
        }
    }
}

/// Reads one line.
pub fn parse(line: &str) -> Result<Message, Error> {
    let value: Value = serde_json::from_str(line).map_err(|e| Error {
        code: -32700,
        message: format!("not JSON: {e}"),
    })?;
    let params = value.get("params").cloned().unwrap_or(Value::Null);
    let id = value.get("id").cloned().filter(|id| !id.is_null());
    match (value.get("method").and_then(Value::as_str), id) {
        (Some(method), Some(id)) => Ok(Message::Request {
            id,
            method: method.to_owned(),
            params,
        }),
        (Some(method), None) => Ok(Message::Notification {
            method: method.to_owned(),
            params,
        }),
        (None, Some(id)) => {
            let result = match value.get("error") {
                Some(error) => Err(error.clone()),
                None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
            };
            Ok(Message::Response { id, result })
        }
        (None, None) => Err(Error {
            code: -32600,
            message: "neither a request, a notification nor a response".to_owned(),
        }),
    }
}

/// Writes brute's messages to stdout, one line each, flushed at once.
pub struct Out;

impl Out {
    fn write(&self, message: &Value) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{message}");
        let _ = out.flush();
    }

    pub fn respond(&self, id: &Value, result: Result<Value, Error>) {
        self.write(&match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": error.code, "message": error.message}}),
        });
    }

    pub fn request(&self, id: &str, method: &str, params: Value) {
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    /// A `session/update` notification.
    pub fn update(&self, session: &str, update: Value) {
        self.write(
            &json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}}),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_sorted_by_what_they_hold() {
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#),
            Ok(Message::Request {
                id: json!(1),
                method: "initialize".into(),
                params: json!({"protocolVersion": 1})
            })
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#),
            Ok(Message::Notification {
                method: "session/cancel".into(),
                params: json!({"sessionId": "s"})
            })
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":"brute-1","error":{"code":-1,"message":"x"}}"#),
            Ok(Message::Response {
                id: json!("brute-1"),
                result: Err(json!({"code": -1, "message": "x"}))
            })
        );
        assert_eq!(parse("{").map_err(|e| e.code), Err(-32700));
        assert_eq!(parse("{}").map_err(|e| e.code), Err(-32600));
    }
}
