//! `web_search`: a search through an endpoint the person configured (`web_search_url`), for
//! providers that host no search of their own (Chat Completions servers, local models).
//!
//! The endpoint speaks SearXNG's JSON API: `GET <url>?q=<query>&format=json` answers
//! `{"results": [{"title", "url", "content"}, ...]}`. Only that URL is ever asked: no redirect
//! is followed (a redirect could lead anywhere) and no key or credential is sent. The answer
//! is bounded: at most [`MAX_BYTES`] are read, at most [`MAX_RESULTS`] results are listed and
//! each snippet is cut at [`MAX_SNIPPET_CHARS`], so the result stays far under the universal
//! truncation caps; the whole call runs within [`TIMEOUT`] and stops at once on an interrupt.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;

use super::{Params, Tool, ToolContext, ToolError, ToolOutput, str_arg};

/// Most bytes read from the endpoint's answer.
pub const MAX_BYTES: usize = 2 * 1024 * 1024;
/// Results listed by default, and at most.
pub const DEFAULT_RESULTS: u64 = 8;
pub const MAX_RESULTS: u64 = 20;
/// Longest snippet kept per result, in characters.
pub const MAX_SNIPPET_CHARS: usize = 500;
/// The time budget for a whole call.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Why the tool could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("`web_search_url` is not an http(s) URL: {0}")]
    Url(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// The `web_search` tool, backed by the person's search endpoint.
pub struct WebSearchTool {
    endpoint: reqwest::Url,
    client: reqwest::Client,
}

impl WebSearchTool {
    pub fn new(url: &str) -> Result<Self, SetupError> {
        let endpoint = reqwest::Url::parse(url).map_err(|e| SetupError::Url(format!("{url}: {e}")))?;
        if !matches!(endpoint.scheme(), "http" | "https") || !endpoint.has_host() {
            return Err(SetupError::Url(url.to_owned()));
        }
        let client = crate::net::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| SetupError::Client(e.to_string()))?;
        Ok(Self { endpoint, client })
    }

    /// The request URL for `query`: the endpoint with `q` and `format=json` added to its own
    /// query parameters.
    fn url_for(&self, query: &str) -> reqwest::Url {
        let mut url = self.endpoint.clone();
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json");
        url
    }

    async fn fetch(&self, url: reqwest::Url) -> Result<Vec<u8>, ToolError> {
        let mut response = self.client.get(url).send().await.map_err(network)?;
        let status = response.status();
        if !status.is_success() {
            let hint = if status.is_redirection() {
                " (redirects are not followed: set `web_search_url` to the address that answers)"
            } else if status == reqwest::StatusCode::FORBIDDEN {
                " (SearXNG answers 403 when `json` is not among its `search.formats` in settings.yml)"
            } else {
                ""
            };
            let error = ToolError::new("Http", format!("the search endpoint answered HTTP {status}{hint}"));
            return Err(if status.is_server_error() || status.as_u16() == 429 {
                error.retryable()
            } else {
                error
            });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(network)? {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_BYTES {
                return Err(ToolError::new(
                    "TooLarge",
                    format!("the search endpoint sent more than {MAX_BYTES} bytes"),
                ));
            }
        }
        Ok(body)
    }
}

fn network(error: reqwest::Error) -> ToolError {
    let kind = if error.is_timeout() { "Timeout" } else { "Network" };
    ToolError::new(
        kind,
        format!(
            "the search endpoint could not be reached: {}",
            crate::provider::http::error_chain(&error)
        ),
    )
    .retryable()
}

/// Cuts `text` to at most `max` characters, marking the cut.
fn cut(text: &str, max: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// The results of a SearXNG JSON answer as the model reads them.
pub fn format_results(query: &str, answer: &Value, limit: usize) -> String {
    let results = answer["results"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut out = String::new();
    for text in answer["answers"].as_array().into_iter().flatten() {
        let text = text.as_str().or(text["answer"].as_str()).unwrap_or_default();
        if !text.is_empty() {
            out.push_str(&format!("Answer: {}\n\n", cut(text, MAX_SNIPPET_CHARS)));
        }
    }
    let listed: Vec<&Value> = results.iter().filter(|r| r["url"].is_string()).take(limit).collect();
    if listed.is_empty() && out.is_empty() {
        return format!("No results for \"{query}\".");
    }
    for (n, result) in listed.iter().enumerate() {
        let title = cut(result["title"].as_str().unwrap_or("(no title)"), 200);
        out.push_str(&format!(
            "{}. {title}\n   {}\n",
            n + 1,
            result["url"].as_str().unwrap_or_default()
        ));
        let snippet = cut(result["content"].as_str().unwrap_or_default(), MAX_SNIPPET_CHARS);
        if !snippet.is_empty() {
            out.push_str(&format!("   {snippet}\n"));
        }
    }
    let total = results.len();
    if total > listed.len() {
        out.push_str(&format!(
            "\n(Showing {} of {total} results. Use `fetch` to read a page.)\n",
            listed.len()
        ));
    }
    out.trim_end().to_owned()
}

impl Tool for WebSearchTool {
    fn name(&self) -> &str {
        "web_search"
    }

    /// It changes nothing: offered in plan mode.
    fn reach(&self) -> crate::tool::Reach {
        crate::tool::Reach::Reads
    }

    fn description(&self) -> &str {
        "Search the web. Returns titles, URLs and snippets of the top results; read a page with `fetch`."
    }

    fn parameters(&self) -> Value {
        Params::new()
            .string("query", "What to search for", true)
            .integer(
                "max_results",
                &format!("How many results to list (default {DEFAULT_RESULTS}, at most {MAX_RESULTS})"),
                false,
            )
            .build()
    }

    fn summary(&self, args: &Value) -> String {
        args["query"].as_str().unwrap_or_default().to_owned()
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let query = str_arg(&args, "query")?.trim();
            if query.is_empty() {
                return Err(ToolError::invalid("`query` is empty"));
            }
            let limit = match args.get("max_results").and_then(Value::as_u64) {
                None => DEFAULT_RESULTS,
                Some(n) if (1..=MAX_RESULTS).contains(&n) => n,
                Some(n) => {
                    return Err(ToolError::invalid(format!(
                        "`max_results` must be between 1 and {MAX_RESULTS}, not {n}"
                    )));
                }
            };
            let deadline = Instant::now() + TIMEOUT;
            let body = tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => {
                    return Err(ToolError::new("Interrupted", "the search was interrupted"));
                }
                done = tokio::time::timeout_at(deadline, self.fetch(self.url_for(query))) => match done {
                    Ok(body) => body?,
                    Err(_) => {
                        return Err(ToolError::new(
                            "Timeout",
                            format!("the search endpoint did not answer within {TIMEOUT:?}"),
                        )
                        .retryable());
                    }
                },
            };
            let answer: Value = serde_json::from_slice(&body).map_err(|e| {
                ToolError::new(
                    "BadAnswer",
                    format!("the search endpoint did not answer with SearXNG's JSON (`format=json`): {e}"),
                )
            })?;
            // `limit` is at most MAX_RESULTS, so it fits.
            Ok(ToolOutput::text(format_results(
                query,
                &answer,
                usize::try_from(limit).unwrap_or(usize::MAX),
            )))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_are_bounded_and_cut() {
        let long = "word ".repeat(400);
        let results: Vec<Value> = (0..30)
            .map(|i| json!({"title": format!("T{i}"), "url": format!("https://e.test/{i}"), "content": long}))
            .collect();
        let text = format_results("q", &json!({"results": results}), 3);
        assert!(text.starts_with("1. T0\n   https://e.test/0\n   word"));
        assert!(text.contains("3. T2") && !text.contains("4. T3"));
        assert!(text.ends_with("(Showing 3 of 30 results. Use `fetch` to read a page.)"));
        let snippet = text.lines().nth(2).unwrap_or_default();
        assert_eq!(
            snippet.trim().chars().count(),
            MAX_SNIPPET_CHARS + 1,
            "cut, with its mark"
        );
        assert_eq!(format_results("q", &json!({"results": []}), 3), "No results for \"q\".");
    }

    #[test]
    fn the_query_joins_the_endpoints_own_parameters() {
        let tool = WebSearchTool::new("http://127.0.0.1:8888/search?language=en").unwrap();
        assert_eq!(
            tool.url_for("rust & tokio").as_str(),
            "http://127.0.0.1:8888/search?language=en&q=rust+%26+tokio&format=json"
        );
        assert!(WebSearchTool::new("file:///etc/passwd").is_err());
    }
}
