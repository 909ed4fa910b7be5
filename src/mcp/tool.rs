//! An MCP server's tool as a brute [`Tool`]: advertised as `mcp__<server>__<tool>` (names
//! made to fit the providers' `^[a-zA-Z0-9_-]{1,64}$`), its schema passed through as an
//! object schema every provider accepts, its result turned into text item by item (images go
//! to the model as images, within the providers' limits; audio and resources become short
//! placeholders, and so does an item of a type brute does not know, without losing the
//! others), with a per-call timeout and cancellation.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::client::{CallError, RemoteTool};
use super::manager::Link;
use crate::provider::image::Image;
use crate::tool::{External, Keep, Tool, ToolContext, ToolError, ToolOutput};

/// How long a call whose connection closed waits to learn how the server ended.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The longest tool name providers accept.
pub const MAX_NAME: usize = 64;

/// An MCP tool with its advertised name.
pub struct McpTool {
    name: String,
    server: String,
    remote: RemoteTool,
    parameters: Value,
    link: Arc<Link>,
}

impl McpTool {
    pub fn new(name: String, server: &str, remote: RemoteTool, link: Arc<Link>) -> Self {
        Self {
            name,
            server: server.to_owned(),
            parameters: object_schema(&remote.input_schema),
            remote,
            link,
        }
    }
}

/// Replaces every character outside `[a-zA-Z0-9_-]` with `_`.
pub fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The advertised name for `tool` of `server`: `mcp__<server>__<tool>` sanitized, at most 64
/// characters, and distinct from every name in `taken` (built-ins and tools named before):
/// a clash gets `_2`, `_3`… The same servers and tools in the same order always get the same
/// names.
pub fn advertised_name(server: &str, tool: &str, taken: &BTreeSet<String>) -> String {
    let base = sanitize(&format!("mcp__{server}__{tool}"));
    let fit = |text: &str, room: usize| text.chars().take(room).collect::<String>();
    let mut name = fit(&base, MAX_NAME);
    let mut n = 2;
    while taken.contains(&name) {
        let suffix = format!("_{n}");
        name = format!("{}{suffix}", fit(&base, MAX_NAME - suffix.len()));
        n += 1;
    }
    name
}

/// The server's input schema as an object schema providers accept: a missing or non-object
/// schema becomes the empty object schema; `type` is forced to `object` and `properties`
/// added when absent. A schema brute cannot compile (e.g. a remote `$ref`) is replaced by an
/// open object schema, so the server's own validation decides.
pub fn object_schema(schema: &Value) -> Value {
    let mut schema = match schema {
        Value::Object(map) => Value::Object(map.clone()),
        _ => json!({}),
    };
    schema["type"] = json!("object");
    if !schema.get("properties").is_some_and(Value::is_object) {
        schema["properties"] = json!({});
    }
    if jsonschema::validator_for(&schema).is_err() {
        return json!({"type": "object", "properties": {}});
    }
    schema
}

/// Turns a `tools/call` result (wire form) into text: text content joined, other content as
/// placeholders, structured content as JSON when there is nothing else. `isError` makes it an
/// error. Read item by item: one the client cannot read becomes a placeholder naming its type
/// (cut, it is the server's) and costs the others nothing.
pub fn result_text(result: &Value) -> (String, bool) {
    let (text, is_error, _) = result_content(result, "image");
    (text, is_error)
}

/// [`result_text`] with the result's images: each image item is sent as an image (named
/// `name`) and marked in the text by its label; one brute cannot send (not PNG, JPEG, GIF or
/// WebP, or over a limit) stays a placeholder saying why.
pub fn result_content(result: &Value, name: &str) -> (String, bool, Vec<Image>) {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for item in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        let kind = item.get("type").and_then(Value::as_str);
        let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
        let Some(kind) = kind else {
            parts.push("[unsupported content item without a type]".to_owned());
            continue;
        };
        parts.push(match kind {
            "text" => match item.get("text") {
                Some(Value::String(text)) => text.clone(),
                _ => "[unsupported text content item: its text is not a string]".to_owned(),
            },
            "image" => match Image::from_base64(name, text("data")) {
                Ok(image) => {
                    let label = image.label();
                    images.push(image);
                    label
                }
                Err(e) => format!(
                    "[image: {}, {} bytes; not sent: {e}]",
                    text("mimeType"),
                    base64_len(text("data"))
                ),
            },
            "audio" => format!("[{kind}: {}, {} bytes]", text("mimeType"), base64_len(text("data"))),
            "resource" => {
                let resource = item.get("resource").cloned().unwrap_or_default();
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
                let mime = resource
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown type");
                let bytes = match (resource.get("text"), resource.get("blob")) {
                    (Some(Value::String(t)), _) => t.len(),
                    (_, Some(Value::String(b))) => base64_len(b),
                    _ => 0,
                };
                format!("[resource: {uri}, {mime}, {bytes} bytes]")
            }
            "resource_link" => format!("[resource link: {}]", text("uri")),
            other => {
                let kind: String = other.chars().take(KIND_CHARS).collect();
                let more = if other.chars().count() > KIND_CHARS { "…" } else { "" };
                format!("[unsupported content item of type {}]", json!(format!("{kind}{more}")))
            }
        });
    }
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
    {
        parts.push(structured.to_string());
    }
    let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    (parts.join("\n"), is_error, images)
}

/// How much of an unknown content type a placeholder shows.
const KIND_CHARS: usize = 40;

/// The decoded size of base64 text.
fn base64_len(data: &str) -> usize {
    let data = data.trim_end_matches('=');
    data.len() * 3 / 4
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.remote.description
    }
    fn parameters(&self) -> Value {
        self.parameters.clone()
    }
    /// The server's schema: its own `$schema`, else 2020-12 (MCP's default).
    fn parameters_in_draft_7(&self) -> bool {
        false
    }
    fn external(&self) -> Option<External> {
        Some(External {
            read_only: self.remote.read_only,
            family: format!("mcp__{}__*", sanitize(&self.server)),
        })
    }
    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let server = &self.server;
            let peer = self.link.peer().ok_or_else(|| self.link.gone_error())?;
            let call = super::client::call(&peer, &self.remote.name, args);
            let timeout = self.link.tool_timeout;
            let result = tokio::select! {
                result = call => result,
                _ = self.link.closed() => return Err(self.link.gone_error()),
                _ = ctx.cancel.cancelled() => return Err(ToolError::new(
                    "Interrupted",
                    format!("the user interrupted the call to the MCP server `{server}`"),
                )),
                _ = tokio::time::sleep(timeout) => return Err(ToolError::new(
                    "Timeout",
                    format!("the MCP server `{server}` did not answer within {} s (tool_timeout_secs)", timeout.as_secs()),
                ).retryable()),
            };
            let result = match result {
                Ok(result) => result,
                Err(CallError::Closed) => {
                    // The process watcher says how the server ended a moment later.
                    let _ = tokio::time::timeout(CLOSE_GRACE, self.link.closed()).await;
                    return Err(self.link.gone_error());
                }
                Err(_) if self.link.is_closed() => return Err(self.link.gone_error()),
                Err(CallError::TooLarge(e)) => {
                    return Err(ToolError::new(
                        "ResultTooLarge",
                        format!("the MCP server `{server}`: {e}"),
                    ));
                }
                Err(e) => return Err(ToolError::new("McpError", format!("the MCP server `{server}`: {e}"))),
            };
            let (text, is_error, images) = result_content(&result, &self.name);
            if is_error {
                // Error results skip the universal truncation: bound them here.
                let text =
                    crate::tool::truncate::truncate(&text, Keep::Head, ctx.overflow_dir.as_deref(), &ctx.call_id);
                return Err(ToolError::new("ToolError", text));
            }
            Ok(ToolOutput {
                images,
                ..ToolOutput::text(text)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_providers_pattern_and_never_clash() {
        let mut taken: BTreeSet<String> = ["read".to_owned()].into();
        let name = advertised_name("my server", "do.thing/now", &taken);
        assert_eq!(name, "mcp__my_server__do_thing_now");
        taken.insert(name.clone());
        assert_eq!(
            advertised_name("my server", "do thing/now", &taken),
            "mcp__my_server__do_thing_now_2"
        );
        let long = advertised_name("s", &"x".repeat(100), &taken);
        assert_eq!(long.len(), MAX_NAME);
        taken.insert(long.clone());
        let again = advertised_name("s", &"x".repeat(120), &taken);
        assert!(again.len() <= MAX_NAME && again.ends_with("_2") && again != long);
        let pattern = |n: &str| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        assert!(pattern(&again) && pattern(&advertised_name("ü", "ß", &taken)));
    }

    #[test]
    fn schemas_become_object_schemas() {
        assert_eq!(object_schema(&Value::Null), json!({"type": "object", "properties": {}}));
        let given = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
        assert_eq!(object_schema(&given), given);
        assert_eq!(
            object_schema(&json!({"properties": {"a": {}}})),
            json!({"type": "object", "properties": {"a": {}}})
        );
        // A schema that cannot be compiled is opened up rather than failing every call.
        let broken = json!({"type": "object", "properties": {"a": {"type": 7}}});
        assert_eq!(object_schema(&broken), json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn results_become_text_with_placeholders() {
        let result = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mimeType": "image/png", "data": "aGVsbG8="},
            {"type": "resource", "resource": {"uri": "file:///a", "mimeType": "text/plain", "text": "abc"}},
            {"type": "resource_link", "uri": "file:///b", "name": "b"},
            {"type": "text", "text": "bye"}
        ]});
        assert_eq!(
            result_text(&result),
            (
                "hello\n[image: image/png, 5 bytes; not sent: image is not a PNG, JPEG, GIF or WebP image (or its header is damaged)]\n[resource: file:///a, text/plain, 3 bytes]\n[resource link: file:///b]\nbye".to_owned(),
                false
            )
        );
        let error = json!({"content": [{"type": "text", "text": "boom"}], "isError": true});
        assert_eq!(result_text(&error), ("boom".to_owned(), true));
        let structured = json!({"content": [], "structuredContent": {"n": 1}});
        assert_eq!(result_text(&structured).0, r#"{"n":1}"#);
        let odd = json!({"content": [
            {"type": "text", "text": "kept"},
            {"type": "foo", "data": 1},
            {"data": 2},
            {"type": "text", "text": 3},
            {"type": "x".repeat(100)},
            "not an object",
            {"type": "text", "text": "also kept"}
        ]});
        let want = [
            "kept".to_owned(),
            r#"[unsupported content item of type "foo"]"#.to_owned(),
            "[unsupported content item without a type]".to_owned(),
            "[unsupported text content item: its text is not a string]".to_owned(),
            format!(r#"[unsupported content item of type "{}…"]"#, "x".repeat(KIND_CHARS)),
            "[unsupported content item without a type]".to_owned(),
            "also kept".to_owned(),
        ];
        assert_eq!(result_text(&odd), (want.join("\n"), false));
    }
}
