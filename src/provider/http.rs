//! The HTTP driver shared by every wire format: builds the request, retries transient
//! failures with backoff, and streams the body through the wire format's decoder.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::future::BoxFuture;
use reqwest::{Response, StatusCode};
use serde_json::Value;

use super::{
    ChatRequest, Completion, Delta, DeltaSink, Provider, ProviderError, StreamDecoder, anthropic, openai, responses,
    sse::decode_stream,
};

pub use super::spec::WireFormat;
use super::spec::{Auth, Endpoint};

/// What each wire format does, apart from its facts in [`super::spec`].
trait WireCodec {
    fn body(self, req: &ChatRequest<'_>, stream: bool) -> Value;
    fn decoder(self) -> Box<dyn StreamDecoder>;
    fn decode_full(self, body: &Value) -> Result<Completion, ProviderError>;
}

impl WireCodec for WireFormat {
    fn body(self, req: &ChatRequest<'_>, stream: bool) -> Value {
        match self {
            WireFormat::OpenAiChat => openai::request_body(req, stream),
            WireFormat::Anthropic => anthropic::request_body(req, stream),
            WireFormat::Responses => responses::request_body(req, stream),
        }
    }

    fn decoder(self) -> Box<dyn StreamDecoder> {
        match self {
            WireFormat::OpenAiChat => Box::new(openai::Decoder::new()),
            WireFormat::Anthropic => Box::new(anthropic::Decoder::new()),
            WireFormat::Responses => Box::new(responses::Decoder::new()),
        }
    }

    fn decode_full(self, body: &Value) -> Result<Completion, ProviderError> {
        match self {
            WireFormat::OpenAiChat => openai::decode_full(body),
            WireFormat::Anthropic => anthropic::decode_full(body),
            WireFormat::Responses => responses::decode_full(body),
        }
    }
}

/// Connection and retry settings of an HTTP provider.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Base URL, e.g. `https://api.openai.com/v1` or `https://api.anthropic.com`.
    pub base_url: String,
    pub api_key: Option<String>,
    /// Where the person sets the key, named in authentication errors.
    pub key_hint: String,
    /// Stream responses (off for servers that cannot stream tool calls).
    pub stream: bool,
    /// Total attempts for a request, the first included.
    pub max_attempts: u32,
    /// First backoff delay; doubled each retry, with jitter.
    pub retry_base: Duration,
    /// Upper bound for one backoff delay, `retry-after` included.
    pub retry_max: Duration,
    pub connect_timeout: Duration,
    /// Longest silence allowed while a response streams.
    pub idle_timeout: Duration,
    /// Offer the provider's hosted web search (Anthropic Messages, OpenAI Responses) beside
    /// the tools of a request that offers any; other wire formats have none.
    pub web_search: bool,
}

/// A provider that talks HTTP in one of the [`WireFormat`]s.
pub struct HttpProvider {
    endpoint: Endpoint,
    label: String,
    settings: HttpSettings,
    client: reqwest::Client,
    /// Parameters each model refused, adapted on every later request to it.
    adapted: Mutex<HashMap<String, Vec<Adapt>>>,
    /// The server's model list once read (the picker asks again each time it opens).
    models: Mutex<Option<Vec<String>>>,
}

/// A change to a request body after a model refused one of its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Adapt {
    /// Send the value under another name (`max_tokens` → `max_completion_tokens`).
    Rename { from: String, to: String },
    /// Leave the parameter out (a dotted path reaches into objects: `reasoning.summary`).
    Drop(String),
}

/// Parameters no adaptation may touch: without them the request means something else.
const ESSENTIAL: &[&str] = &[
    "model",
    "messages",
    "input",
    "instructions",
    "system",
    "tools",
    "stream",
    "store",
];

impl Adapt {
    /// The adaptation a 400 body asks for: an OpenAI-style `unsupported_parameter` /
    /// `unsupported_value` (param from the error's `param` or its message), an unknown
    /// parameter, or Anthropic's "Extra inputs are not permitted". `None` for other errors.
    pub fn from_error(body: &str) -> Option<Self> {
        let value: Value = serde_json::from_str(body).ok()?;
        let err = &value["error"];
        let message = err["message"].as_str().unwrap_or_default();
        let code = err["code"].as_str().unwrap_or_default();
        let quoted = |prefix: &str| {
            let rest = message.strip_prefix(prefix)?.trim_start();
            let rest = rest.strip_prefix('\'').unwrap_or(rest);
            let end = rest.find(['\'', ' ', ',']).unwrap_or(rest.len());
            Some(rest[..end].trim_end_matches('.').to_owned())
        };
        let refused = matches!(
            code,
            "unsupported_parameter" | "unsupported_value" | "unknown_parameter"
        ) || [
            "Unsupported parameter",
            "Unsupported value",
            "Unknown parameter",
            "Unrecognized request argument",
        ]
        .iter()
        .any(|p| message.starts_with(p));
        let param = if refused {
            err["param"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| quoted("Unsupported parameter:"))
                .or_else(|| quoted("Unsupported value:"))
                .or_else(|| quoted("Unknown parameter:"))
                .or_else(|| quoted("Unrecognized request argument supplied:"))?
        } else {
            let (param, _) = message.split_once(": Extra inputs are not permitted")?;
            param.to_owned()
        };
        let top = param.split('.').next().unwrap_or_default();
        if param.is_empty() || ESSENTIAL.contains(&top) {
            return None;
        }
        // "... Use 'max_completion_tokens' instead."
        let instead = message
            .split_once("Use '")
            .and_then(|(_, rest)| rest.split_once("' instead"))
            .map(|(to, _)| to.to_owned())
            .filter(|to| !to.contains('.') && !ESSENTIAL.contains(&to.as_str()));
        Some(match instead {
            Some(to) => Adapt::Rename { from: param, to },
            None => Adapt::Drop(param),
        })
    }

    /// Applies the change; false when the body has nothing it changes.
    pub fn apply(&self, body: &mut Value) -> bool {
        match self {
            Adapt::Rename { from, to } => {
                let Some(object) = body.as_object_mut() else {
                    return false;
                };
                match object.remove(from) {
                    Some(value) => {
                        object.insert(to.clone(), value);
                        true
                    }
                    None => false,
                }
            }
            Adapt::Drop(path) => {
                let (parent, key) = match path.rsplit_once('.') {
                    Some((parent, key)) => (Some(parent), key),
                    None => (None, path.as_str()),
                };
                let target = match parent {
                    Some(parent) => parent.split('.').try_fold(&mut *body, |v, k| v.get_mut(k)),
                    None => Some(&mut *body),
                };
                let removed = target
                    .and_then(Value::as_object_mut)
                    .and_then(|object| object.remove(key))
                    .is_some();
                // An object left empty goes too (`reasoning: {}` is no better than none).
                if let Some(parent) = parent.filter(|_| removed)
                    && let Some(object) = body.as_object_mut()
                    && object
                        .get(parent)
                        .is_some_and(|v| v.as_object().is_some_and(|o| o.is_empty()))
                {
                    object.remove(parent);
                }
                removed
            }
        }
    }

    /// What the person is told.
    fn describe(&self, model: &str) -> String {
        match self {
            Adapt::Rename { from, to } => {
                format!("{model} refused `{from}`: sending `{to}` instead (remembered for this model)")
            }
            Adapt::Drop(param) => {
                format!("{model} refused `{param}`: leaving it out (remembered for this model)")
            }
        }
    }
}

impl HttpProvider {
    /// Builds the provider and its HTTP client; `endpoint` comes from the provider's
    /// [`ProviderSpec`](super::spec::ProviderSpec).
    pub fn new(endpoint: Endpoint, label: impl Into<String>, settings: HttpSettings) -> Result<Self, ProviderError> {
        // reqwest is built with gzip and brotli for `fetch`; provider streams stay
        // uncompressed, so a server cannot hold events back in a compression buffer.
        // No redirect is followed: a key goes only to the base URL the person chose (reqwest
        // drops `authorization` on a cross-host redirect, but not `x-api-key`).
        let client = crate::net::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_gzip()
            .no_brotli()
            .connect_timeout(settings.connect_timeout)
            .build()
            .map_err(|e| ProviderError::Connect {
                url: settings.base_url.clone(),
                message: e.to_string(),
            })?;
        if settings.base_url.starts_with("https:") {
            crate::net::tls::preload();
        }
        Ok(Self {
            endpoint,
            label: label.into(),
            settings,
            client,
            adapted: Mutex::default(),
            models: Mutex::default(),
        })
    }

    fn url(&self) -> String {
        self.url_of(self.endpoint.wire.path())
    }

    /// `path` under the base URL, as this wire format's SDKs join them.
    fn url_of(&self, path: &str) -> String {
        let base = self.settings.base_url.trim_end_matches('/');
        // Anthropic's base URL is the host root; one given with the SDKs' other habit
        // (`.../v1`) must not become `/v1/v1/messages`.
        let base = match path.strip_prefix("/v1/") {
            Some(_) => base.strip_suffix("/v1").unwrap_or(base),
            None => base,
        };
        format!("{base}{path}")
    }

    /// What to check when the URL answers with no model API.
    fn url_hint(&self) -> String {
        let base = self.settings.base_url.trim_end_matches('/');
        match self.endpoint.wire {
            WireFormat::Anthropic => {
                "Check the base URL: Anthropic-compatible servers take the host root (brute adds /v1/messages)."
                    .to_owned()
            }
            WireFormat::OpenAiChat | WireFormat::Responses if !base.ends_with("/v1") => {
                format!("Check the base URL: OpenAI-compatible servers serve their API under /v1 (try {base}/v1).")
            }
            WireFormat::OpenAiChat | WireFormat::Responses => {
                "Check the base URL (and that the server speaks this API).".to_owned()
            }
        }
    }

    fn request(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut builder = self.client.post(self.url()).json(body);
        for (name, value) in self.endpoint.wire.headers() {
            builder = builder.header(*name, *value);
        }
        builder = self.authorize(builder);
        if self.settings.stream {
            builder = builder.header("accept", "text/event-stream");
        }
        builder
    }

    /// Adds the key the way this provider takes it (every request to its base URL).
    fn authorize(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match (&self.settings.api_key, self.endpoint.auth) {
            (Some(key), Auth::Bearer) => builder.bearer_auth(key),
            (Some(key), Auth::Header(name)) => builder.header(name, key),
            _ => builder,
        }
    }

    /// Sends once: returns the successful response or a classified error.
    async fn send(&self, body: &Value) -> Result<Response, Attempt> {
        // A server that accepts the connection but never answers is as dead as one that refuses it.
        let limit = self.settings.idle_timeout;
        crate::timing::request_sent();
        let response = tokio::time::timeout(limit, self.request(body).send())
            .await
            .map_err(|_| Attempt::retry(ProviderError::IdleTimeout(limit.as_secs())))?
            .map_err(|e| {
                // reqwest names the URL in its own message; the error names it once.
                let mut attempt = Attempt::retry(ProviderError::Connect {
                    url: self.url(),
                    message: crate::net::tls::explain(root_cause(&e)),
                });
                attempt.connect = true;
                attempt
            })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after(&response);
        let text = response.text().await.unwrap_or_default();
        Err(self.classify(status, &text, retry_after, model_of(body)))
    }

    fn classify(&self, status: StatusCode, body: &str, retry_after: Option<Duration>, model: &str) -> Attempt {
        let message = error_message(body);
        let code = status.as_u16();
        let error = match code {
            401 | 403 => ProviderError::Auth {
                status: code,
                message,
                hint: self.settings.key_hint.clone(),
            },
            400 | 413 if super::says_too_long(body) => ProviderError::ContextTooLong(message),
            400 | 404 if is_unknown_model(body) => ProviderError::UnknownModel {
                model: model.to_owned(),
                message,
            },
            404 => ProviderError::NotFound {
                url: self.url(),
                detail: if body.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {message}")
                },
                hint: self.url_hint(),
            },
            _ => ProviderError::Http { status: code, message },
        };
        let retryable =
            matches!(code, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529) || body.contains("overloaded_error");
        Attempt {
            error,
            retryable,
            retry_after,
            adapt: (code == 400).then(|| Adapt::from_error(body)).flatten(),
            connect: false,
        }
    }

    /// The error for a 200 whose body is no model API's: an HTML page (a web server or a
    /// proxy's login page) or other text.
    fn not_an_api(&self, content_type: &str, body: &str) -> ProviderError {
        let trimmed = body.trim_start();
        let what = if content_type.contains("html") || trimmed.starts_with('<') {
            match html_title(trimmed) {
                Some(title) => format!("an HTML page (\"{title}\")"),
                None => "an HTML page".to_owned(),
            }
        } else if trimmed.is_empty() {
            "an empty body".to_owned()
        } else {
            let snippet: String = trimmed.chars().take(80).collect();
            format!(
                "a body that is neither JSON nor an event stream (\"{}\")",
                snippet.trim_end()
            )
        };
        ProviderError::NotAnApi {
            url: self.url(),
            what,
            hint: self.url_hint(),
        }
    }

    /// A whole answer (not streamed, or a server that ignored `stream: true`), decoded and
    /// forwarded as deltas.
    fn whole(
        &self,
        content_type: &str,
        text: &str,
        on_delta: &mut (dyn FnMut(Delta) + Send),
    ) -> Result<Completion, ProviderError> {
        let value: Value = serde_json::from_str(text).map_err(|_| self.not_an_api(content_type, text))?;
        let completion = self.endpoint.wire.decode_full(&value)?;
        if !completion.reasoning.is_empty() {
            on_delta(Delta::Reasoning(completion.reasoning.clone()));
        }
        if !completion.text.is_empty() {
            on_delta(Delta::Text(completion.text.clone()));
        }
        Ok(completion)
    }

    async fn attempt(&self, body: &Value, on_delta: &mut (dyn FnMut(Delta) + Send)) -> Result<Completion, Attempt> {
        let response = self.send(body).await?;
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let streamed = content_type.contains("event-stream");
        if !self.settings.stream || !streamed && !content_type.is_empty() {
            // A whole (non-streamed) answer can take long to generate: allow several idle periods.
            let limit = self.settings.idle_timeout.saturating_mul(5);
            let text = tokio::time::timeout(limit, response.text())
                .await
                .map_err(|_| Attempt::fatal(ProviderError::IdleTimeout(limit.as_secs())))?
                .map_err(|e| Attempt::fatal(ProviderError::StreamCut(error_chain(&e.without_url()))))?;
            // A stream sent under another content type is still a stream.
            if self.settings.stream && text.lines().any(|l| l.starts_with("data:")) {
                let chunks = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(text.into_bytes())]);
                return decode_stream(chunks, self.endpoint.wire.decoder(), None, on_delta)
                    .await
                    .map_err(Attempt::fatal);
            }
            return self.whole(&content_type, &text, on_delta).map_err(Attempt::fatal);
        }
        let mut emitted = false;
        let mut forward = |delta: Delta| {
            emitted = true;
            on_delta(delta);
        };
        let result = decode_stream(
            response.bytes_stream(),
            self.endpoint.wire.decoder(),
            Some(self.settings.idle_timeout),
            &mut forward,
        )
        .await;
        result.map_err(|error| {
            // An overload reported inside the stream before anything reached the person is
            // as retryable as an HTTP 529.
            let overloaded = matches!(&error, ProviderError::Remote(m) if m.contains("overloaded"));
            Attempt {
                error,
                retryable: overloaded && !emitted,
                retry_after: None,
                adapt: None,
                connect: false,
            }
        })
    }

    /// One page of the server's model list.
    async fn models_page(&self, url: &str) -> Result<super::models::Page, ProviderError> {
        let mut builder = self.client.get(url);
        for (name, value) in self.endpoint.wire.headers() {
            builder = builder.header(*name, *value);
        }
        let connect = |e: reqwest::Error| ProviderError::Connect {
            url: url.to_owned(),
            message: crate::net::tls::explain(root_cause(&e)),
        };
        let limit = super::models::TIMEOUT;
        let timed_out = || ProviderError::IdleTimeout(limit.as_secs());
        let mut response = tokio::time::timeout(limit, self.authorize(builder).send())
            .await
            .map_err(|_| timed_out())?
            .map_err(connect)?;
        let status = response.status();
        let mut body = Vec::new();
        loop {
            let chunk = tokio::time::timeout(limit, response.chunk())
                .await
                .map_err(|_| timed_out())?
                .map_err(connect)?;
            let Some(chunk) = chunk else { break };
            body.extend_from_slice(&chunk);
            if body.len() > super::models::MAX_PAGE_BYTES {
                return Err(ProviderError::Decode(format!(
                    "the model list at {url} is over {} MiB",
                    super::models::MAX_PAGE_BYTES >> 20
                )));
            }
        }
        let text = String::from_utf8_lossy(&body);
        if !status.is_success() {
            let message: String = text.chars().take(300).collect();
            return Err(ProviderError::Http {
                status: status.as_u16(),
                message: crate::sanitize::sanitize(message.trim()),
            });
        }
        serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|answer| super::models::parse(&answer))
            .ok_or_else(|| ProviderError::Decode(format!("{url} answered with no model list")))
    }

    /// What `model` refused so far.
    fn adaptations(&self, model: &str) -> Vec<Adapt> {
        let adapted = self.adapted.lock().unwrap_or_else(|e| e.into_inner());
        adapted.get(model).cloned().unwrap_or_default()
    }

    /// Remembers an adaptation for `model`; false when it was already known (so adapting
    /// did not help).
    fn learn(&self, model: &str, adapt: &Adapt) -> bool {
        let mut adapted = self.adapted.lock().unwrap_or_else(|e| e.into_inner());
        let known = adapted.entry(model.to_owned()).or_default();
        if known.contains(adapt) {
            return false;
        }
        known.push(adapt.clone());
        true
    }

    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let max = self.settings.retry_max;
        if let Some(after) = retry_after {
            return after.min(max);
        }
        let base = self.settings.retry_base.as_millis() as u64;
        let exp = base.saturating_mul(1u64 << (attempt - 1).min(16));
        let jitter = if base == 0 { 0 } else { fastrand::u64(0..=base) };
        Duration::from_millis(exp.saturating_add(jitter)).min(max)
    }
}

/// One failed attempt and whether trying again may help.
struct Attempt {
    error: ProviderError,
    retryable: bool,
    retry_after: Option<Duration>,
    /// A refused parameter, when changing it may make the request acceptable.
    adapt: Option<Adapt>,
    /// The server could not be reached: worth one more try, not more (a server that is not
    /// there rarely appears within seconds, and each try costs the connect timeout).
    connect: bool,
}

impl Attempt {
    fn retry(error: ProviderError) -> Self {
        Self {
            error,
            retryable: true,
            retry_after: None,
            adapt: None,
            connect: false,
        }
    }
    /// How many attempts a failure like this one deserves, at most `max`.
    fn attempts(&self, max: u32) -> u32 {
        if self.connect { max.min(2) } else { max }
    }
    fn fatal(error: ProviderError) -> Self {
        Self {
            error,
            retryable: false,
            retry_after: None,
            adapt: None,
            connect: false,
        }
    }
}

impl Provider for HttpProvider {
    fn name(&self) -> &str {
        &self.label
    }

    fn list_models<'a>(&'a self) -> BoxFuture<'a, Result<Vec<String>, ProviderError>> {
        Box::pin(async move {
            let cached = self.models.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if let Some(ids) = cached {
                return Ok(ids);
            }
            let first = super::models::path(self.endpoint.wire);
            let mut query = first.to_owned();
            let mut ids: Vec<String> = Vec::new();
            for _ in 0..super::models::MAX_PAGES {
                let url = self.url_of(&query);
                let limit = super::models::TIMEOUT;
                let page = tokio::time::timeout(limit, self.models_page(&url))
                    .await
                    .map_err(|_| ProviderError::IdleTimeout(limit.as_secs()))??;
                for id in page.ids {
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
                // Only Anthropic's list is paged by cursor (`after_id`).
                match page.next.filter(|_| self.endpoint.wire == WireFormat::Anthropic) {
                    Some(cursor) => query = super::models::next_page(first, &cursor),
                    None => break,
                }
            }
            *self.models.lock().unwrap_or_else(|e| e.into_inner()) = Some(ids.clone());
            Ok(ids)
        })
    }

    fn context_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Option<u64>> {
        Box::pin(async move {
            // Every wire format: a local server answering Anthropic Messages or Responses has
            // the same `/props` (llama.cpp) or `/api/show` (Ollama); hosted APIs are skipped.
            if super::spec::known_provider_host(&self.settings.base_url) {
                return None;
            }
            let root = super::window::server_root(&self.settings.base_url)?;
            let asks = super::window::probes(model).map(|(path, body)| {
                let url = format!("{root}{path}");
                let builder = self.authorize(match &body {
                    Some(body) => self.client.post(url).json(body),
                    None => self.client.get(url),
                });
                async move {
                    let mut response = builder.send().await.ok()?.error_for_status().ok()?;
                    // The answer is a few KB; a server sending more is not one to believe.
                    let mut body = Vec::new();
                    while let Some(chunk) = response.chunk().await.ok()? {
                        body.extend_from_slice(&chunk);
                        if body.len() > super::window::MAX_ANSWER_BYTES {
                            return None;
                        }
                    }
                    serde_json::from_slice::<Value>(&body).ok()
                }
            });
            let [props, show] = asks;
            let answers = tokio::time::timeout(super::window::PROBE_TIMEOUT, futures_util::future::join(props, show))
                .await
                .ok()?;
            [answers.0, answers.1]
                .iter()
                .enumerate()
                .find_map(|(i, answer)| super::window::parse(i, answer.as_ref()?))
        })
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest<'a>,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, ProviderError>> {
        Box::pin(async move {
            let mut body = self.endpoint.wire.body(request, self.settings.stream);
            if self.settings.web_search {
                match self.endpoint.wire {
                    WireFormat::Anthropic => anthropic::add_web_search(&mut body),
                    WireFormat::Responses => responses::add_web_search(&mut body),
                    WireFormat::OpenAiChat => {}
                }
            }
            for adapt in self.adaptations(request.model) {
                adapt.apply(&mut body);
            }
            let max_attempts = self.settings.max_attempts.max(1);
            let mut attempt = 1;
            loop {
                match self.attempt(&body, on_delta).await {
                    Ok(completion) => {
                        crate::timing::answer_ended();
                        return Ok(completion);
                    }
                    // A refused parameter is changed once and remembered; refused again
                    // after that, the error stands.
                    Err(Attempt {
                        adapt: Some(adapt),
                        error,
                        ..
                    }) => {
                        if !self.learn(request.model, &adapt) || !adapt.apply(&mut body) {
                            return Err(error);
                        }
                        tracing::info!(model = request.model, ?adapt, %error, "adapting the request");
                        on_delta(Delta::Notice(adapt.describe(request.model)));
                    }
                    Err(failed) if failed.retryable && attempt < failed.attempts(max_attempts) => {
                        let max_attempts = failed.attempts(max_attempts);
                        let delay = self.backoff(attempt, failed.retry_after);
                        tracing::warn!(attempt, ?delay, error = %failed.error, "retrying request");
                        on_delta(Delta::Retrying {
                            attempt: attempt + 1,
                            max_attempts,
                            delay_ms: delay.as_millis() as u64,
                            reason: failed.error.to_string(),
                        });
                        tokio::time::sleep(delay).await;
                        attempt += 1;
                    }
                    Err(failed) => return Err(failed.error),
                }
            }
        })
    }
}

fn retry_after(response: &Response) -> Option<Duration> {
    let value = response.headers().get("retry-after")?.to_str().ok()?;
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// Pulls the human message out of a JSON error body, or returns the (shortened) body text.
pub fn error_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        let err = if value["error"].is_object() {
            &value["error"]
        } else {
            &value
        };
        if let Some(message) = err["message"].as_str() {
            return match err["type"].as_str().or(err["code"].as_str()) {
                Some(kind) => format!("{kind}: {message}"),
                None => message.to_owned(),
            };
        }
        if let Some(message) = value["error"].as_str() {
            return message.to_owned();
        }
    }
    let trimmed = body.trim();
    match trimmed.char_indices().nth(500) {
        Some((cut, _)) => format!("{}…", &trimmed[..cut]),
        None if trimmed.is_empty() => "(empty body)".to_owned(),
        None => trimmed.to_owned(),
    }
}

/// The model a request body names.
fn model_of(body: &Value) -> &str {
    body["model"].as_str().unwrap_or_default()
}

/// An error that says the model does not exist (OpenAI `model_not_found`, Anthropic
/// `not_found_error` "model: ...", Ollama "model ... not found", OpenRouter "not a valid model ID").
fn is_unknown_model(body: &str) -> bool {
    let value: Value = serde_json::from_str(body).unwrap_or_default();
    if value["error"]["code"] == "model_not_found" {
        return true;
    }
    let message = error_message(body).to_ascii_lowercase();
    message.contains("model")
        && [
            "not found",
            "does not exist",
            "not exist",
            "not a valid model",
            "unknown model",
            "model: ",
        ]
        .iter()
        .any(|needle| message.contains(needle))
}

/// The `<title>` of an HTML page, shortened.
fn html_title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open = start + lower[start..].find('>')? + 1;
    let end = open + lower[open..].find("</title")?;
    let title: String = html.get(open..end)?.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then(|| title.chars().take(60).collect())
}

/// The innermost cause of an error (`Connection refused (os error 111)`): the layers above
/// it only repeat the URL and the library's plumbing.
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

/// An error with its causes, joined by `: `.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn openai_error(message: &str, param: Value, code: &str) -> String {
        json!({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}})
            .to_string()
    }

    #[test]
    fn refused_parameters_become_adaptations() {
        let max_tokens = openai_error(
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            json!("max_tokens"),
            "unsupported_parameter",
        );
        assert_eq!(
            Adapt::from_error(&max_tokens),
            Some(Adapt::Rename {
                from: "max_tokens".into(),
                to: "max_completion_tokens".into()
            })
        );
        let temperature = openai_error(
            "Unsupported value: 'temperature' does not support 0.5 with this model. Only the default (1) value is supported.",
            Value::Null,
            "unsupported_value",
        );
        assert_eq!(Adapt::from_error(&temperature), Some(Adapt::Drop("temperature".into())));
        let effort = openai_error(
            "Unsupported parameter: 'reasoning.effort' is not supported with this model.",
            json!("reasoning.effort"),
            "unsupported_parameter",
        );
        assert_eq!(Adapt::from_error(&effort), Some(Adapt::Drop("reasoning.effort".into())));
        let unknown = openai_error(
            "Unrecognized request argument supplied: reasoning_effort",
            Value::Null,
            "",
        );
        assert_eq!(
            Adapt::from_error(&unknown),
            Some(Adapt::Drop("reasoning_effort".into()))
        );
        let anthropic = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "output_config: Extra inputs are not permitted"}});
        assert_eq!(
            Adapt::from_error(&anthropic.to_string()),
            Some(Adapt::Drop("output_config".into()))
        );
        // What a request cannot do without is never adapted away, nor are other errors.
        let tools = openai_error(
            "Unsupported parameter: 'tools'",
            json!("tools"),
            "unsupported_parameter",
        );
        assert_eq!(Adapt::from_error(&tools), None);
        let other = openai_error("The model `x` does not exist", Value::Null, "model_not_found");
        assert_eq!(Adapt::from_error(&other), None);
        assert_eq!(Adapt::from_error("<html>"), None);
    }

    #[test]
    fn adaptations_change_only_what_is_there() {
        let mut body = json!({"max_tokens": 5, "reasoning": {"effort": "low"}, "temperature": 0.5});
        let rename = Adapt::Rename {
            from: "max_tokens".into(),
            to: "max_completion_tokens".into(),
        };
        assert!(rename.apply(&mut body));
        assert!(!rename.apply(&mut body), "nothing left to rename");
        assert!(Adapt::Drop("reasoning.effort".into()).apply(&mut body));
        assert!(Adapt::Drop("temperature".into()).apply(&mut body));
        assert!(!Adapt::Drop("reasoning.summary".into()).apply(&mut body));
        assert_eq!(body, json!({"max_completion_tokens": 5}), "an emptied object goes too");
    }
}
