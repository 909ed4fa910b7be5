//! `fetch`: HTTP(S) GET of one URL, as text the model can read.

use std::sync::OnceLock;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{Params, Tool, ToolContext, ToolError, ToolOutput, str_arg};

/// Most bytes read from one response.
pub const MAX_BYTES: usize = 5 * 1024 * 1024;
pub const TIMEOUT: Duration = Duration::from_secs(30);
pub const MAX_REDIRECTS: usize = 5;

/// The built-in `fetch` tool.
#[derive(Default)]
pub struct FetchTool {
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl FetchTool {
    fn client(&self) -> Result<&reqwest::Client, ToolError> {
        self.client
            .get_or_init(|| {
                crate::provider::http::install_crypto_provider();
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
                    .timeout(TIMEOUT)
                    .user_agent(concat!("brute/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| ToolError::new("Internal", format!("cannot build the HTTP client: {e}")))
    }
}

impl Tool for FetchTool {
    fn name(&self) -> &str {
        "fetch"
    }

    fn description(&self) -> &str {
        "HTTP GET a URL (http or https) and return it as text: HTML becomes Markdown, JSON is pretty-printed. Use for documentation and APIs."
    }

    fn parameters(&self) -> Value {
        Params::new().string("url", "The http:// or https:// URL", true).build()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let url = str_arg(&args, "url")?;
            let parsed =
                reqwest::Url::parse(url).map_err(|e| ToolError::invalid(format!("not a valid URL `{url}`: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(ToolError::invalid(format!(
                    "only http and https URLs can be fetched, not `{}`",
                    parsed.scheme()
                )));
            }
            let request = self.client()?.get(parsed).send();
            let mut response = tokio::select! {
                r = request => r.map_err(network)?,
                _ = ctx.cancel.cancelled() => return Err(ToolError::new("Interrupted", "the fetch was interrupted")),
            };
            let status = response.status();
            let final_url = response.url().to_string();
            let content_type = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            let mut body = Vec::new();
            let mut cut = false;
            loop {
                let chunk = tokio::select! {
                    c = response.chunk() => c.map_err(network)?,
                    _ = ctx.cancel.cancelled() => return Err(ToolError::new("Interrupted", "the fetch was interrupted")),
                };
                let Some(chunk) = chunk else { break };
                body.extend_from_slice(&chunk);
                if body.len() >= MAX_BYTES {
                    body.truncate(MAX_BYTES);
                    cut = true;
                    break;
                }
            }
            let text = to_text(&content_type, &body)?;
            let mut out = format!(
                "GET {final_url}\nStatus: {status}\nContent-Type: {}\n",
                if content_type.is_empty() {
                    "(none)"
                } else {
                    &content_type
                }
            );
            if cut {
                out.push_str(&format!("[body cut at {MAX_BYTES} bytes]\n"));
            }
            out.push('\n');
            out.push_str(&text);
            if status.is_client_error() || status.is_server_error() {
                let error = ToolError::new("HttpStatus", out);
                return Err(if status.is_server_error() || status.as_u16() == 429 {
                    error.retryable()
                } else {
                    error
                });
            }
            Ok(ToolOutput::text(out))
        })
    }
}

fn network(error: reqwest::Error) -> ToolError {
    if error.is_redirect() {
        return ToolError::new(
            "TooManyRedirects",
            format!("gave up after {MAX_REDIRECTS} redirects: {error}"),
        );
    }
    let kind = if error.is_timeout() { "Timeout" } else { "Network" };
    ToolError::new(kind, crate::provider::http::error_chain(&error)).retryable()
}

/// Turns a body into text by its content type; binary content is an error.
pub fn to_text(content_type: &str, body: &[u8]) -> Result<String, ToolError> {
    let mime = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let looks_html = mime.contains("html") || (mime.is_empty() && body.trim_ascii_start().starts_with(b"<"));
    if looks_html {
        let html = String::from_utf8_lossy(body);
        return htmd::convert(&html).map_err(|e| ToolError::new("Decode", format!("cannot convert HTML: {e}")));
    }
    if mime.contains("json") {
        if let Ok(value) = serde_json::from_slice::<Value>(body) {
            return Ok(serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string()));
        }
        return Ok(String::from_utf8_lossy(body).into_owned());
    }
    let textual = mime.starts_with("text/")
        || mime.contains("xml")
        || mime.contains("javascript")
        || mime.contains("yaml")
        || mime.contains("toml");
    if textual || (mime.is_empty() && !content_inspector::inspect(&body[..body.len().min(8192)]).is_binary()) {
        return Ok(String::from_utf8_lossy(body).into_owned());
    }
    Err(ToolError::new(
        "BinaryContent",
        format!(
            "the response is binary ({}, {} bytes); fetch returns text only",
            if mime.is_empty() { "unknown type" } else { &mime },
            body.len()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::to_text;

    #[test]
    fn converts_by_content_type() {
        let md = to_text(
            "text/html; charset=utf-8",
            b"<html><body><h1>Title</h1><p>Some <b>bold</b> text</p></body></html>",
        )
        .unwrap();
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("**bold**"), "{md}");
        assert_eq!(
            to_text("application/json", br#"{"a":[1,2]}"#).unwrap(),
            "{\n  \"a\": [\n    1,\n    2\n  ]\n}"
        );
        assert_eq!(to_text("text/plain", b"plain").unwrap(), "plain");
        let err = to_text("image/png", b"\x89PNG\r\n\x1a\n\0\0").unwrap_err();
        assert_eq!(err.kind, "BinaryContent");
    }
}
