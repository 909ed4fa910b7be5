//! `fetch`: HTTP(S) GET of one URL, as text the model can read.
//!
//! A page is hostile input, so the whole call (connecting, downloading and converting) runs
//! within one time budget ([`TIMEOUT`] by default) and stops at once when the person
//! interrupts. Bodies are decoded (gzip, brotli) before the [`MAX_BYTES`] cap is applied, so a
//! compression bomb costs at most that much memory. HTML is converted by [`super::html`] on a
//! thread of its own with a known stack, raced against the budget. When the budget runs out:
//! - during the download: a retryable `Timeout` error (there is nothing useful to show yet);
//! - during the conversion: the page's text with the tags stripped, with a note saying so,
//!   since the page did arrive and its text is what the model wants.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::html::{self, Markdown};
use super::{Params, Tool, ToolContext, ToolError, ToolOutput, str_arg};

/// Most bytes read from one response, counted after decompression.
pub const MAX_BYTES: usize = 5 * 1024 * 1024;
/// The default time budget for a whole call: download and conversion.
pub const TIMEOUT: Duration = Duration::from_secs(30);
pub const MAX_REDIRECTS: usize = 5;

/// The built-in `fetch` tool.
pub struct FetchTool {
    client: OnceLock<Result<reqwest::Client, String>>,
    budget: Duration,
}

impl Default for FetchTool {
    fn default() -> Self {
        Self::with_budget(TIMEOUT)
    }
}

/// Why a call stopped before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum Halt {
    #[error("the time budget ran out")]
    OutOfTime,
    #[error("the person interrupted")]
    Interrupted,
}

fn interrupted() -> ToolError {
    ToolError::new("Interrupted", "the fetch was interrupted")
}

/// Runs `work` until it finishes, the deadline passes or the call is cancelled.
async fn within<T>(work: impl Future<Output = T>, deadline: Instant, cancel: &CancellationToken) -> Result<T, Halt> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Halt::Interrupted),
        done = tokio::time::timeout_at(deadline, work) => done.map_err(|_| Halt::OutOfTime),
    }
}

impl FetchTool {
    /// A fetch tool whose calls each get `budget` in all (tests use a short one).
    pub fn with_budget(budget: Duration) -> Self {
        Self {
            client: OnceLock::new(),
            budget,
        }
    }

    fn client(&self) -> Result<&reqwest::Client, ToolError> {
        self.client
            .get_or_init(|| {
                crate::net::client_builder()
                    .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| ToolError::new("Internal", format!("cannot build the HTTP client: {e}")))
    }

    fn download_timeout(&self, received: usize) -> ToolError {
        ToolError::new(
            "Timeout",
            format!(
                "the download did not finish within the {:?} budget ({received} bytes received); the server is slow or the response does not end",
                self.budget
            ),
        )
        .retryable()
    }

    /// Converts HTML on its own thread, racing the deadline and the person's interrupt; the
    /// notes say what the model should know about the result.
    async fn convert(
        &self,
        page: String,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<(String, Vec<String>), ToolError> {
        let page: Arc<str> = page.into();
        let stop = CancellationToken::new();
        // However this function ends, the converter thread is told to give up.
        let _stop_on_exit = stop.clone().drop_guard();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread = {
            let page = page.clone();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("fetch-html".to_owned())
                .stack_size(html::STACK)
                .spawn(move || {
                    let _ = tx.send(html::to_markdown(&page, &stop));
                })
        };
        let failure = match thread {
            Err(e) => format!("the converter could not start: {e}"),
            Ok(_) => match within(rx, deadline, cancel).await {
                Ok(Ok(Ok(Markdown { text, flattened }))) => {
                    let mut notes = Vec::new();
                    if flattened > 0 {
                        notes.push(format!(
                            "[Note: the page nests elements more than {} levels deep; {flattened} tags beyond that were dropped and their text kept.]",
                            html::MAX_DEPTH
                        ));
                    }
                    return Ok((text, notes));
                }
                Ok(Ok(Err(html::Stopped))) | Ok(Err(_)) => "the converter failed".to_owned(),
                Err(Halt::Interrupted) => return Err(interrupted()),
                Err(Halt::OutOfTime) => format!("it did not finish within the {:?} budget", self.budget),
            },
        };
        stop.cancel();
        let text = tokio::task::spawn_blocking(move || html::strip_tags(&page))
            .await
            .map_err(|e| ToolError::new("Internal", e.to_string()))?;
        let note = format!(
            "[Note: the HTML could not be converted to Markdown ({failure}); this is the page's text with the tags stripped.]"
        );
        Ok((text, vec![note]))
    }
}

impl Tool for FetchTool {
    fn name(&self) -> &str {
        "fetch"
    }

    fn rule_subject(&self) -> crate::permission::RuleSubject {
        crate::permission::RuleSubject::Text("url")
    }

    /// It changes nothing outside the session: offered in plan mode.
    fn reach(&self) -> crate::tool::Reach {
        crate::tool::Reach::Reads
    }

    fn description(&self) -> &str {
        "HTTP GET a URL (http or https) and return it as text: HTML becomes Markdown, JSON is pretty-printed. Use for documentation and APIs."
    }

    fn parameters(&self) -> Value {
        Params::new().string("url", "The http:// or https:// URL", true).build()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let deadline = Instant::now() + self.budget;
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
            let mut response = match within(request, deadline, &ctx.cancel).await {
                Ok(response) => response.map_err(network)?,
                Err(Halt::Interrupted) => return Err(interrupted()),
                Err(Halt::OutOfTime) => return Err(self.download_timeout(0)),
            };
            let status = response.status();
            let final_url = response.url().to_string();
            let content_type = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            // Chunks arrive decompressed, so the cap bounds what a small compressed body can
            // grow into.
            let mut body = Vec::new();
            let mut cut = false;
            loop {
                let chunk = match within(response.chunk(), deadline, &ctx.cancel).await {
                    Ok(chunk) => chunk.map_err(network)?,
                    Err(Halt::Interrupted) => return Err(interrupted()),
                    Err(Halt::OutOfTime) => return Err(self.download_timeout(body.len())),
                };
                let Some(chunk) = chunk else { break };
                body.extend_from_slice(&chunk[..chunk.len().min(MAX_BYTES - body.len())]);
                if body.len() >= MAX_BYTES {
                    cut = true;
                    break;
                }
            }
            drop(response);
            let (text, notes) = match decode(&content_type, body)? {
                Body::Html(page) => self.convert(page, deadline, &ctx.cancel).await?,
                Body::Text(text) => (text, Vec::new()),
            };
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
            for note in notes {
                out.push_str(&note);
                out.push('\n');
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
    ToolError::new(
        kind,
        crate::net::tls::explain(crate::provider::http::error_chain(&error)),
    )
    .retryable()
}

/// A response body as text: HTML still to be converted (that takes a thread and a budget), or
/// anything else already readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Html(String),
    Text(String),
}

/// Turns a body into text by its content type; binary content is an error.
pub fn decode(content_type: &str, body: Vec<u8>) -> Result<Body, ToolError> {
    let mime = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let looks_html = mime.contains("html") || (mime.is_empty() && body.trim_ascii_start().starts_with(b"<"));
    let lossy =
        |body: Vec<u8>| String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    if looks_html {
        return Ok(Body::Html(lossy(body)));
    }
    if mime.contains("json") {
        if let Ok(value) = serde_json::from_slice::<Value>(&body) {
            return Ok(Body::Text(
                serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string()),
            ));
        }
        return Ok(Body::Text(lossy(body)));
    }
    let textual = mime.starts_with("text/")
        || mime.contains("xml")
        || mime.contains("javascript")
        || mime.contains("yaml")
        || mime.contains("toml");
    if textual || (mime.is_empty() && !content_inspector::inspect(&body[..body.len().min(8192)]).is_binary()) {
        return Ok(Body::Text(lossy(body)));
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
    use std::time::Duration;

    use tokio::time::Instant;
    use tokio_util::sync::CancellationToken;

    use super::{Body, FetchTool, TIMEOUT, decode};

    /// About 2 MB of ordinary HTML: seconds of conversion in a debug build.
    fn big_page() -> String {
        "<p>para <b>bold</b></p>".repeat(100_000)
    }

    #[test]
    fn decodes_by_content_type() {
        let page = "<html><body><h1>Title</h1></body></html>";
        assert_eq!(
            decode("text/html; charset=utf-8", page.into()).unwrap(),
            Body::Html(page.to_owned())
        );
        assert_eq!(decode("", page.into()).unwrap(), Body::Html(page.to_owned()));
        assert_eq!(
            decode("application/json", br#"{"a":[1,2]}"#.to_vec()).unwrap(),
            Body::Text("{\n  \"a\": [\n    1,\n    2\n  ]\n}".to_owned())
        );
        assert_eq!(
            decode("text/plain", b"plain".to_vec()).unwrap(),
            Body::Text("plain".to_owned())
        );
        let err = decode("image/png", b"\x89PNG\r\n\x1a\n\0\0".to_vec()).unwrap_err();
        assert_eq!(err.kind, "BinaryContent");
    }

    #[tokio::test]
    async fn a_conversion_out_of_time_gives_the_text() {
        let tool = FetchTool::default();
        let (text, notes) = tool
            .convert(big_page(), Instant::now(), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(
            notes,
            [
                "[Note: the HTML could not be converted to Markdown (it did not finish within the 30s budget); this is the page's text with the tags stripped.]"
            ]
        );
        assert!(text.starts_with("para bold\npara bold\n"), "{}", &text[..100]);
    }

    #[tokio::test]
    async fn an_interrupted_conversion_stops() {
        let tool = FetchTool::default();
        let cancel = CancellationToken::new();
        let convert = tool.convert(big_page(), Instant::now() + TIMEOUT, &cancel);
        // The conversion starts its thread on the first poll; the interrupt comes after.
        let interrupt = async { cancel.cancel() };
        let both = async { tokio::join!(convert, interrupt).0 };
        let result = tokio::time::timeout(Duration::from_secs(10), both)
            .await
            .expect("an interrupt stops the conversion");
        assert_eq!(result.unwrap_err().kind, "Interrupted");
    }
}
