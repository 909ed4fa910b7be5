//! The context window a local server reports of itself: llama.cpp's `GET /props` (`n_ctx`, the
//! context it was started with) and Ollama's `POST /api/show` (`num_ctx` when the model sets
//! one, else the model's trained `context_length`). Asked once in the background at start, and
//! only of plain-`http` servers (the local ones): a cloud API answers neither, and no key goes
//! to a path the person did not choose on a host they did not choose.

use std::time::Duration;

use serde_json::{Value, json};

/// How long a server gets to report its window; a request waiting for it waits at most this.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The largest answer read (Ollama's `/api/show` carries the chat template and license: tens
/// of KB).
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// The server's root for `base_url` (`http://host:port/v1` → `http://host:port`), or `None`
/// when the server is not one to ask (not plain `http`).
pub fn server_root(base_url: &str) -> Option<String> {
    let base = base_url.trim_end_matches('/');
    base.get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .then(|| base.strip_suffix("/v1").unwrap_or(base).to_owned())
}

/// The requests to make, in order of preference: (method is POST when a body is given, path,
/// body).
pub fn probes(model: &str) -> [(&'static str, Option<Value>); 2] {
    [("/props", None), ("/api/show", Some(json!({ "model": model })))]
}

/// The window in llama.cpp's `/props` answer: `default_generation_settings.n_ctx` (or a
/// top-level `n_ctx`, as some builds put it).
pub fn from_llama_props(props: &Value) -> Option<u64> {
    props["default_generation_settings"]["n_ctx"]
        .as_u64()
        .or_else(|| props["n_ctx"].as_u64())
        .filter(|&n| n > 0)
}

/// The window in Ollama's `/api/show` answer: the model's `num_ctx` parameter when it sets one
/// (what the server runs it with), else `<architecture>.context_length` from `model_info`.
pub fn from_ollama_show(show: &Value) -> Option<u64> {
    let num_ctx = show["parameters"].as_str().and_then(|params| {
        params.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx")).then(|| words.next()?.parse::<u64>().ok())?
        })
    });
    let trained = || {
        let info = show["model_info"].as_object()?;
        let arch = info.get("general.architecture")?.as_str()?;
        info.get(&format!("{arch}.context_length"))?.as_u64()
    };
    num_ctx.or_else(trained).filter(|&n| n > 0)
}

/// The window in the answer to probe `index` of [`probes`].
pub fn parse(index: usize, answer: &Value) -> Option<u64> {
    match index {
        0 => from_llama_props(answer),
        _ => from_ollama_show(answer),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_servers_are_asked() {
        assert_eq!(
            server_root("http://127.0.0.1:8080/v1").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            server_root("HTTP://gpu-box:11434/v1/").as_deref(),
            Some("HTTP://gpu-box:11434")
        );
        assert_eq!(server_root("http://host:1234").as_deref(), Some("http://host:1234"));
        assert_eq!(server_root("https://api.openai.com/v1"), None);
        assert_eq!(server_root("https://openrouter.ai/api/v1"), None);
        assert_eq!(server_root("ftp"), None);
    }

    #[test]
    fn llama_cpp_props() {
        let props = json!({"default_generation_settings": {"n_ctx": 8192, "temperature": 0.8}, "total_slots": 1});
        assert_eq!(from_llama_props(&props), Some(8192));
        assert_eq!(from_llama_props(&json!({"n_ctx": 4096})), Some(4096));
        assert_eq!(from_llama_props(&json!({"error": "not found"})), None);
        assert_eq!(from_llama_props(&json!({"n_ctx": 0})), None);
    }

    #[test]
    fn ollama_show() {
        let show = json!({
            "parameters": "stop \"<|im_end|>\"\nnum_ctx                        16384",
            "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}
        });
        assert_eq!(from_ollama_show(&show), Some(16384), "the runtime setting wins");
        let trained = json!({"model_info": {"general.architecture": "llama", "llama.context_length": 131072}});
        assert_eq!(from_ollama_show(&trained), Some(131072));
        assert_eq!(from_ollama_show(&json!({"parameters": "num_ctx x"})), None);
        assert_eq!(from_ollama_show(&json!({})), None);
    }
}
