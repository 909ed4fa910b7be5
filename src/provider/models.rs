//! The models a server offers, for `/model`'s picker: `GET /models` under the base URL
//! (OpenAI and every OpenAI-compatible server: `{"data": [{"id": …}]}`), or Anthropic's
//! `GET /v1/models`, paged with `has_more` / `last_id` → `after_id`. Asked only when the
//! person opens the picker, of the base URL the person chose (with the key it already
//! gets), bounded in time and size.

use std::time::Duration;

use serde_json::Value;

use super::spec::WireFormat;

/// How long one page may take, all of it.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The largest page read (OpenRouter's list of several hundred models is about 1 MB).
pub const MAX_PAGE_BYTES: usize = 8 << 20;

/// At most this many pages (Anthropic's pages hold up to 1,000 models).
pub const MAX_PAGES: usize = 5;

/// The path of the list under the base URL, and the query of its first page.
pub fn path(wire: WireFormat) -> &'static str {
    match wire {
        WireFormat::Anthropic => "/v1/models?limit=1000",
        WireFormat::OpenAiChat | WireFormat::Responses => "/models",
    }
}

/// The query that asks for the page after `cursor`.
pub fn next_page(first: &str, cursor: &str) -> String {
    let cursor: String = cursor
        .bytes()
        .flat_map(|b| match b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
            true => vec![char::from(b)],
            false => format!("%{b:02X}").chars().collect(),
        })
        .collect();
    format!("{first}&after_id={cursor}")
}

/// One page of a list: the ids in the server's order, and the cursor of the next page when
/// there is one.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Page {
    pub ids: Vec<String>,
    pub next: Option<String>,
}

/// Reads a page; `None` when the answer is no model list.
pub fn parse(answer: &Value) -> Option<Page> {
    let data = answer["data"].as_array().or_else(|| answer["models"].as_array())?;
    let ids = data
        .iter()
        .filter_map(|m| m["id"].as_str().or_else(|| m["name"].as_str()))
        .filter(|id| !id.is_empty() && id.len() <= 256 && !id.chars().any(char::is_control))
        .map(str::to_owned)
        .collect();
    let next = match answer["has_more"].as_bool() {
        Some(true) => answer["last_id"].as_str().map(str::to_owned),
        _ => None,
    };
    Some(Page { ids, next })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openai_lists_read_their_ids_in_order() {
        let answer = json!({"object": "list", "data": [
            {"id": "gpt-5.1", "object": "model", "created": 1, "owned_by": "openai"},
            {"id": "o4-mini", "object": "model", "created": 2, "owned_by": "openai"}]});
        let page = parse(&answer).unwrap_or_default();
        assert_eq!(page.ids, ["gpt-5.1", "o4-mini"]);
        assert_eq!(page.next, None);
    }

    #[test]
    fn anthropic_pages_name_the_next_one() {
        let answer = json!({"data": [
            {"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5", "created_at": "2025-09-29T00:00:00Z"}],
            "has_more": true, "first_id": "claude-sonnet-4-5", "last_id": "claude-sonnet-4-5"});
        let page = parse(&answer).unwrap_or_default();
        assert_eq!(page.ids, ["claude-sonnet-4-5"]);
        assert_eq!(page.next.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(
            next_page(path(WireFormat::Anthropic), "a b&c"),
            "/v1/models?limit=1000&after_id=a%20b%26c"
        );
        let last = json!({"data": [], "has_more": false, "last_id": null});
        assert_eq!(parse(&last), Some(Page::default()));
    }

    #[test]
    fn what_is_no_list_or_no_name_is_left_out() {
        assert_eq!(parse(&json!({"error": "not found"})), None);
        let odd = json!({"data": [{"id": ""}, {"id": "a\u{1b}[2J"}, {"object": "model"}, {"id": "ok"}]});
        assert_eq!(parse(&odd).unwrap_or_default().ids, ["ok"]);
        // Ollama's native shape, which some proxies pass on.
        let ollama = json!({"models": [{"name": "qwen3:8b"}]});
        assert_eq!(parse(&ollama).unwrap_or_default().ids, ["qwen3:8b"]);
    }
}
