//! The mock's strict mode: it refuses what the real APIs refuse, with their status and error
//! shape, so a request brute would get refused in the field fails its test here.
//!
//! Each rule is derived from the providers' API references and SDK types (the request
//! parameter lists of the official Python SDKs, `openai` 3.57 and `anthropic` 2.14) or from
//! widely reported error messages; [`RULES`] names the source of each, and
//! `tests/strict_mock.rs` proves that every rule fires. The model facts here are the mock's
//! own, written from those sources, never brute's table: a test of brute against its own
//! beliefs would prove nothing.

use serde_json::{Value, json};

/// The wire formats the mock can judge, told apart by the request path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Chat,
    Anthropic,
    Responses,
}

/// A rule of one API, with where it comes from.
pub struct Rule {
    pub id: &'static str,
    pub api: Option<Api>,
    pub source: &'static str,
}

const fn rule(id: &'static str, api: Option<Api>, source: &'static str) -> Rule {
    Rule { id, api, source }
}

const SDK_OPENAI_CHAT: &str = "openai-python 3.57 types/chat/completion_create_params.py";
const SDK_OPENAI_RESPONSES: &str = "openai-python 3.57 types/responses/response_create_params.py";
const SDK_ANTHROPIC: &str =
    "anthropic-sdk-python 2.14 types/message_create_params.py (API version 2023-06-01 adds temperature, top_p, top_k)";

/// Every rule strict mode enforces.
pub const RULES: &[Rule] = &[
    rule(
        "path",
        None,
        "each API serves one path (OpenAI: /v1/chat/completions, /v1/responses; Anthropic: /v1/messages at the host root); anything else is a 404",
    ),
    rule(
        "tool-name",
        None,
        "function names: 'a-z, A-Z, 0-9, underscores and dashes, maximum length 64' (openai-python shared_params/function_definition.py); Anthropic tool names ^[a-zA-Z0-9_-]{1,64}$ (docs: tool use, specifying tools)",
    ),
    rule("chat.unknown-param", Some(Api::Chat), SDK_OPENAI_CHAT),
    rule(
        "chat.stream-options",
        Some(Api::Chat),
        "'The stream_options parameter is only allowed when stream is enabled' (API reference: stream_options)",
    ),
    rule(
        "chat.max-tokens-reasoning",
        Some(Api::Chat),
        "max_tokens 'is not compatible with o-series models' (openai-python completion_create_params.py); 400 'Unsupported parameter: max_tokens ... Use max_completion_tokens instead' for gpt-5 (brute issue)",
    ),
    rule(
        "chat.temperature-reasoning",
        Some(Api::Chat),
        "400 'Unsupported value: temperature does not support 0.5 with this model. Only the default (1) value is supported' on o-series and gpt-5 (reasoning guide; widely reported)",
    ),
    rule(
        "chat.effort-non-reasoning",
        Some(Api::Chat),
        "reasoning_effort 'for reasoning models' only (openai-python completion_create_params.py); 400 unsupported_parameter on gpt-4.1 (BoundaryML/baml#2708)",
    ),
    rule(
        "chat.tool-without-call",
        Some(Api::Chat),
        "400 'messages with role tool must be a response to a preceeding message with tool_calls' (miurla/morphic#136, FoundationAgents/OpenManus#23)",
    ),
    rule(
        "chat.call-without-result",
        Some(Api::Chat),
        "400 'An assistant message with tool_calls must be followed by tool messages responding to each tool_call_id' (microsoft/promptflow#3130)",
    ),
    rule(
        "chat.empty-assistant",
        Some(Api::Chat),
        "assistant content 'Required unless tool_calls or function_call is specified' (openai-python chat_completion_assistant_message_param.py)",
    ),
    rule(
        "chat.tool-image",
        Some(Api::Chat),
        "tool message content: 'Union[str, Iterable[ChatCompletionContentPartTextParam]]', text parts only (openai-python chat_completion_tool_message_param.py)",
    ),
    rule(
        "chat.user-part",
        Some(Api::Chat),
        "user content parts: text, image_url {url, detail}, input_audio, file (openai-python chat_completion_content_part_param.py, chat_completion_content_part_image_param.py)",
    ),
    rule(
        "chat.image-url",
        Some(Api::Chat),
        "image_url.url: 'Either a URL of the image or the base64 encoded image data' (openai-python chat_completion_content_part_image_param.py); 400 invalid_image_format / 'You uploaded an unsupported image' for data that is not PNG, JPEG, WEBP or non-animated GIF (vision guide: image input requirements)",
    ),
    rule(
        "chat.image-model",
        Some(Api::Chat),
        "400 'Invalid content type. image_url is only supported by certain models.' on gpt-3.5-turbo and the text-only o-series minis (widely reported)",
    ),
    rule("responses.unknown-param", Some(Api::Responses), SDK_OPENAI_RESPONSES),
    rule(
        "responses.input-part",
        Some(Api::Responses),
        "input message content parts: input_text, input_image {detail: Required low|high|auto, image_url | file_id}, input_file (openai-python response_input_image_param.py, response_input_content_param.py)",
    ),
    rule(
        "responses.image-url",
        Some(Api::Responses),
        "input_image.image_url: 'A fully qualified URL or base64 encoded image in a data URL' (openai-python response_input_image_param.py); PNG, JPEG, WEBP, non-animated GIF (vision guide)",
    ),
    rule(
        "responses.temperature-reasoning",
        Some(Api::Responses),
        "400 'Unsupported parameter: temperature is not supported with this model' on reasoning models (reasoning guide; widely reported)",
    ),
    rule(
        "responses.reasoning-non-reasoning",
        Some(Api::Responses),
        "400 'Unsupported parameter: reasoning.effort is not supported with this model' on gpt-4.1 (BoundaryML/baml#2708)",
    ),
    rule(
        "responses.output-without-call",
        Some(Api::Responses),
        "400 'No tool call found for function call output with call_id ...' (smallmain/vscode-unify-chat-provider#117)",
    ),
    rule(
        "responses.call-without-output",
        Some(Api::Responses),
        "400 'No tool output found for function call ...' (function calling guide: every call needs its output)",
    ),
    rule(
        "responses.reasoning-not-stored",
        Some(Api::Responses),
        "404 'Item with id rs_... not found. Items are not persisted when store is set to false' (vercel/ai#7543, openai/openai-agents-python#1757); encrypted_content is what makes an item usable with store: false (openai-python response_reasoning_item_param.py)",
    ),
    rule(
        "responses.reasoning-last",
        Some(Api::Responses),
        "400 'Item rs_... of type reasoning was provided without its required following item' (openai/openai-agents-python#1757)",
    ),
    rule(
        "responses.tool-type",
        Some(Api::Responses),
        "tools[].type is one of the documented tool types (openai-python 3.57 types/responses/tool_param.py: function, web_search, web_search_2025_08_26, web_search_preview, ...); 400 'Invalid value' otherwise",
    ),
    rule(
        "responses.include-value",
        Some(Api::Responses),
        "include[] takes only the ResponseIncludable values (openai-python 3.57 types/responses/response_includable.py: web_search_call.action.sources, web_search_call.results, reasoning.encrypted_content, ...)",
    ),
    rule(
        "responses.web-search-call",
        Some(Api::Responses),
        "a web_search_call input item: action (search, open_page or find) and status are Required (openai-python response_function_web_search_param.py); with store: false an item id names a stored item, refused like reasoning ids with 404 'Items are not persisted when store is set to false' (vercel/ai#7543), so clients replay the item without it (openai/codex protocol models.rs: WebSearchCall id skip_serializing)",
    ),
    rule("anthropic.unknown-param", Some(Api::Anthropic), SDK_ANTHROPIC),
    rule(
        "anthropic.image-source",
        Some(Api::Anthropic),
        "image block source: {type: base64, media_type: image/jpeg|image/png|image/gif|image/webp, data} (anthropic-sdk-python base64_image_source_param.py); 400 'Image does not match the provided media type' (widely reported)",
    ),
    rule(
        "anthropic.image-size",
        Some(Api::Anthropic),
        "400 'image exceeds 5 MB maximum: N bytes > 5242880 bytes' (base64 length; anthropics/claude-code#14887); 'images larger than 8000x8000 px will be rejected' (docs: vision, image size)",
    ),
    rule(
        "anthropic.image-place",
        Some(Api::Anthropic),
        "images only in user turns: text and image blocks in user content and in tool_result content (anthropic-sdk-python tool_result_block_param.py: content str | Iterable[text | image | search_result | document]); assistant content takes no image (message_param.py, docs: vision)",
    ),
    rule(
        "anthropic.version-header",
        Some(Api::Anthropic),
        "'anthropic-version: header is required' (API reference: versions)",
    ),
    rule(
        "anthropic.api-key",
        Some(Api::Anthropic),
        "401 authentication_error 'x-api-key header is required' (API reference: authentication)",
    ),
    rule(
        "anthropic.max-tokens",
        Some(Api::Anthropic),
        "max_tokens: Required (anthropic-sdk-python message_create_params.py)",
    ),
    rule(
        "anthropic.tool-use-without-result",
        Some(Api::Anthropic),
        "400 'tool_use ids were found without tool_result blocks immediately after ... Each tool_use block must have a corresponding tool_result block in the next message' (anthropics/claude-code#5989, Kilo-Org/kilocode#5163); tool_result blocks come first in the user message (docs: handling tool results)",
    ),
    rule(
        "anthropic.result-without-tool-use",
        Some(Api::Anthropic),
        "400 'unexpected tool_use_id found in tool_result blocks ... Each tool_result block must have a corresponding tool_use block in the previous message' (docs: handling tool results)",
    ),
    rule(
        "anthropic.empty-text",
        Some(Api::Anthropic),
        "400 'text content blocks must be non-empty' / 'must contain non-whitespace text' (widely reported)",
    ),
    rule(
        "anthropic.empty-content",
        Some(Api::Anthropic),
        "400 'all messages must have non-empty content except for the optional final assistant message' (widely reported)",
    ),
    rule(
        "anthropic.cache-breakpoints",
        Some(Api::Anthropic),
        "400 'A maximum of 4 blocks with cache_control may be provided' (docs: prompt caching)",
    ),
    rule(
        "anthropic.budget",
        Some(Api::Anthropic),
        "budget_tokens 'Must be >=1024 and less than max_tokens' (anthropic-sdk-python thinking_config_enabled_param.py)",
    ),
    rule(
        "anthropic.budget-removed",
        Some(Api::Anthropic),
        "'Claude 4.7 and later models do not support it [thinking.type enabled] and reject requests that use it, returning a 400' (docs: extended thinking); 400 on claude-sonnet-5 (memberjunction UsesAdaptiveThinking)",
    ),
    rule(
        "anthropic.adaptive-unsupported",
        Some(Api::Anthropic),
        "'Older models (Claude Sonnet 4.5, Claude Opus 4.5, etc.) do not support adaptive thinking' (docs: adaptive thinking)",
    ),
    rule(
        "anthropic.temperature-thinking",
        Some(Api::Anthropic),
        "'temperature ... incompatible with thinking' (docs: extended thinking, feature compatibility)",
    ),
    rule(
        "anthropic.temperature-fixed",
        Some(Api::Anthropic),
        "Claude 4.7 and later reject non-default temperature, top_p and top_k on every request (docs: thinking, sampling parameters; yologdev/yoagent v0.27.3)",
    ),
    rule(
        "anthropic.thinking-signature",
        Some(Api::Anthropic),
        "thinking block signature: Required, passed back unmodified (anthropic-sdk-python thinking_block_param.py)",
    ),
    rule(
        "anthropic.server-tool",
        Some(Api::Anthropic),
        "a typed tool is a documented server or client tool: web_search_20250305 (or web_search_20260209) with name 'web_search' (anthropic-sdk-python 2.14 web_search_tool_20250305_param.py: name Required Literal['web_search']); 400 'Input tag ... found using type does not match any of the expected tags' otherwise",
    ),
    rule(
        "anthropic.server-tool-result",
        Some(Api::Anthropic),
        "a server_tool_use block is answered by its web_search_tool_result (tool_use_id = its id) later in the same assistant message, and a result answers one before it (docs: web search tool, response; the pair is one unit: vellum-ai/vellum-assistant#19986), except in the final message, a paused turn's (anthropic-sdk-python#1339: the paused assistant turn has to stay the last message); server tool blocks are assistant content only",
    ),
    rule(
        "anthropic.server-tool-verbatim",
        Some(Api::Anthropic),
        "blocks sent back verbatim: server_tool_use id ^srvtoolu_[a-zA-Z0-9_]+$ with its input; each web_search_result has url, title and encrypted_content (Required: anthropic-sdk-python 2.14 web_search_result_block_param.py, server_tool_use_block_param.py); the error result has error_code",
    ),
    rule(
        "anthropic.thinking-first",
        Some(Api::Anthropic),
        "400 'When thinking is enabled, a final assistant message must start with a thinking block (preceeding the lastmost set of tool_use and tool_result blocks)' (OpenRouterTeam/ai-sdk-provider#162, n8n-io/n8n#22550)",
    ),
];

/// Top-level request keys each API takes.
const CHAT_PARAMS: &[&str] = &[
    "messages",
    "model",
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "moderation",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "service_tier",
    "stop",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
];

const RESPONSES_PARAMS: &[&str] = &[
    "background",
    "context_management",
    "conversation",
    "include",
    "input",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "model",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning",
    "safety_identifier",
    "service_tier",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
];

const ANTHROPIC_PARAMS: &[&str] = &[
    "max_tokens",
    "messages",
    "model",
    "cache_control",
    "container",
    "context_management",
    "inference_geo",
    "mcp_servers",
    "metadata",
    "output_config",
    "service_tier",
    "speed",
    "stop_sequences",
    "stream",
    "system",
    "thinking",
    "tool_choice",
    "tools",
    "temperature",
    "top_k",
    "top_p",
];

/// Tool types Responses takes (openai-python 3.57 types/responses/tool_param.py).
const RESPONSES_TOOL_TYPES: &[&str] = &[
    "function",
    "file_search",
    "computer_use_preview",
    "web_search",
    "web_search_2025_08_26",
    "web_search_preview",
    "web_search_preview_2025_03_11",
    "mcp",
    "code_interpreter",
    "image_generation",
    "local_shell",
    "shell",
    "custom",
    "apply_patch",
];

/// Values of Responses' `include` (openai-python 3.57 types/responses/response_includable.py).
const RESPONSES_INCLUDABLE: &[&str] = &[
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
];

/// Typed tools Messages takes (anthropic-sdk-python 2.14 types/tool_union_param.py).
const ANTHROPIC_TOOL_TYPES: &[&str] = &[
    "bash_20250124",
    "text_editor_20250124",
    "text_editor_20250429",
    "text_editor_20250728",
    "web_search_20250305",
    "web_search_20260209",
    "web_fetch_20250910",
    "code_execution_20250825",
];

/// A refused request: the rule, and the answer the real API gives.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub rule: &'static str,
    pub status: u16,
    pub body: String,
}

/// The strict judge, with the models it treats as reasoning models beyond its own list.
#[derive(Debug, Clone, Default)]
pub struct Strict {
    pub reasoning_models: Vec<String>,
}

/// Which API a path belongs to; `None` for paths that are no model API (the fetch tests
/// serve pages from the same server).
pub fn api_of(path: &str) -> Option<Api> {
    let path = path.split('?').next().unwrap_or(path);
    if path.ends_with("/chat/completions") {
        Some(Api::Chat)
    } else if path.ends_with("/responses") {
        Some(Api::Responses)
    } else if path.ends_with("/messages") {
        Some(Api::Anthropic)
    } else {
        None
    }
}

impl Strict {
    /// Judges one request; `Ok` when the real API would take it.
    pub fn check(&self, path: &str, headers: &[(String, String)], body: &Value) -> Result<(), Refusal> {
        let Some(api) = api_of(path) else { return Ok(()) };
        let path = path.split('?').next().unwrap_or(path);
        let at_home = match api {
            Api::Chat => path == "/v1/chat/completions",
            Api::Responses => path == "/v1/responses",
            Api::Anthropic => path == "/v1/messages",
        };
        let judge = Judge { api };
        if !at_home {
            return Err(judge.not_found(path));
        }
        match api {
            Api::Chat => self.chat(&judge, body),
            Api::Responses => self.responses(&judge, body),
            Api::Anthropic => anthropic(&judge, headers, body),
        }
    }

    fn reasoning(&self, model: &str) -> bool {
        self.reasoning_models.iter().any(|m| m == model) || openai_reasoning(model)
    }

    fn chat(&self, j: &Judge, body: &Value) -> Result<(), Refusal> {
        j.known_params(body, CHAT_PARAMS)?;
        let model = body["model"].as_str().unwrap_or_default();
        if body.get("stream_options").is_some() && body["stream"] != true {
            return Err(j.bad(
                "chat.stream-options",
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                Some("stream_options"),
                "invalid_request_error",
            ));
        }
        if self.reasoning(model) {
            if body.get("max_tokens").is_some() {
                return Err(j.bad(
                    "chat.max-tokens-reasoning",
                    "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
                    Some("max_tokens"),
                    "unsupported_parameter",
                ));
            }
            if let Some(t) = body["temperature"].as_f64().filter(|t| *t != 1.0) {
                return Err(j.bad(
                    "chat.temperature-reasoning",
                    &format!("Unsupported value: 'temperature' does not support {t} with this model. Only the default (1) value is supported."),
                    Some("temperature"),
                    "unsupported_value",
                ));
            }
        } else if openai_non_reasoning(model) && body.get("reasoning_effort").is_some() {
            return Err(j.bad(
                "chat.effort-non-reasoning",
                "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
                Some("reasoning_effort"),
                "unsupported_parameter",
            ));
        }
        for (i, tool) in array(&body["tools"]).iter().enumerate() {
            j.tool_name(tool["function"]["name"].as_str(), &format!("tools[{i}].function.name"))?;
        }
        let mut open: Vec<String> = Vec::new();
        let unanswered = |open: &[String]| {
            j.bad(
                "chat.call-without-result",
                &format!(
                    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                    open.join(", ")
                ),
                Some("messages"),
                "invalid_request_error",
            )
        };
        for (i, m) in array(&body["messages"]).iter().enumerate() {
            let role = m["role"].as_str().unwrap_or_default();
            chat_parts(j, i, role, m, model)?;
            if role == "tool" {
                let id = m["tool_call_id"].as_str().unwrap_or_default();
                match open.iter().position(|o| o == id) {
                    Some(p) => {
                        open.remove(p);
                    }
                    None => {
                        return Err(j.bad(
                            "chat.tool-without-call",
                            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                            Some(&format!("messages.[{i}].role")),
                            "invalid_request_error",
                        ));
                    }
                }
                continue;
            }
            if !open.is_empty() {
                return Err(unanswered(&open));
            }
            let calls = array(&m["tool_calls"]);
            if role == "assistant" {
                if calls.is_empty() && m["content"].is_null() {
                    return Err(j.bad(
                        "chat.empty-assistant",
                        "Invalid value for 'content': expected a string, got null.",
                        Some(&format!("messages.[{i}].content")),
                        "invalid_value",
                    ));
                }
                open = calls
                    .iter()
                    .map(|c| c["id"].as_str().unwrap_or_default().to_owned())
                    .collect();
            }
        }
        if !open.is_empty() {
            return Err(unanswered(&open));
        }
        Ok(())
    }

    fn responses(&self, j: &Judge, body: &Value) -> Result<(), Refusal> {
        j.known_params(body, RESPONSES_PARAMS)?;
        let model = body["model"].as_str().unwrap_or_default();
        if self.reasoning(model) {
            if body["temperature"].as_f64().is_some_and(|t| t != 1.0) {
                return Err(j.bad(
                    "responses.temperature-reasoning",
                    "Unsupported parameter: 'temperature' is not supported with this model.",
                    Some("temperature"),
                    "unsupported_parameter",
                ));
            }
        } else if openai_non_reasoning(model) && body.get("reasoning").is_some() {
            return Err(j.bad(
                "responses.reasoning-non-reasoning",
                "Unsupported parameter: 'reasoning.effort' is not supported with this model.",
                Some("reasoning.effort"),
                "unsupported_parameter",
            ));
        }
        for (i, tool) in array(&body["tools"]).iter().enumerate() {
            let kind = tool["type"].as_str().unwrap_or_default();
            if !RESPONSES_TOOL_TYPES.contains(&kind) {
                return Err(j.bad(
                    "responses.tool-type",
                    &format!(
                        "Invalid value: '{kind}'. Supported values are: {}.",
                        RESPONSES_TOOL_TYPES.join(", ")
                    ),
                    Some(&format!("tools[{i}].type")),
                    "invalid_value",
                ));
            }
            if kind == "function" {
                j.tool_name(tool["name"].as_str(), &format!("tools[{i}].name"))?;
            }
        }
        for (i, value) in array(&body["include"]).iter().enumerate() {
            let value = value.as_str().unwrap_or_default();
            if !RESPONSES_INCLUDABLE.contains(&value) {
                return Err(j.bad(
                    "responses.include-value",
                    &format!(
                        "Invalid value: '{value}'. Supported values are: {}.",
                        RESPONSES_INCLUDABLE.join(", ")
                    ),
                    Some(&format!("include[{i}]")),
                    "invalid_value",
                ));
            }
        }
        let items = array(&body["input"]);
        for (i, item) in items.iter().enumerate() {
            responses_parts(j, i, item)?;
        }
        let stored = body["store"] != false;
        let mut calls: Vec<&str> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item["type"].as_str().unwrap_or_default() {
                "function_call" => calls.push(item["call_id"].as_str().unwrap_or_default()),
                "function_call_output" => {
                    let id = item["call_id"].as_str().unwrap_or_default();
                    if !calls.contains(&id) {
                        return Err(j.bad(
                            "responses.output-without-call",
                            &format!("No tool call found for function call output with call_id {id}."),
                            Some("input"),
                            "invalid_request_error",
                        ));
                    }
                }
                "web_search_call" => {
                    let action = item["action"]["type"].as_str().unwrap_or_default();
                    if !matches!(action, "search" | "open_page" | "find") || item["status"].as_str().is_none() {
                        return Err(j.bad(
                            "responses.web-search-call",
                            &format!("Missing required parameter: 'input[{i}].action' and 'input[{i}].status' (a web_search_call with action type search, open_page or find)."),
                            Some(&format!("input[{i}]")),
                            "missing_required_parameter",
                        ));
                    }
                    if let (false, Some(id)) = (stored, item["id"].as_str()) {
                        let mut refusal = j.bad(
                            "responses.web-search-call",
                            &format!("Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."),
                            Some("input"),
                            "invalid_request_error",
                        );
                        refusal.status = 404;
                        return Err(refusal);
                    }
                }
                "reasoning" => {
                    let id = item["id"].as_str().unwrap_or("rs_(no id)");
                    if !stored && item["encrypted_content"].as_str().is_none_or(str::is_empty) {
                        let mut refusal = j.bad(
                            "responses.reasoning-not-stored",
                            &format!("Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."),
                            Some("input"),
                            "invalid_request_error",
                        );
                        refusal.status = 404;
                        return Err(refusal);
                    }
                    if i + 1 == items.len() {
                        return Err(j.bad(
                            "responses.reasoning-last",
                            &format!(
                                "Item '{id}' of type 'reasoning' was provided without its required following item."
                            ),
                            Some("input"),
                            "invalid_request_error",
                        ));
                    }
                }
                _ => {}
            }
        }
        for call in calls {
            let answered = items
                .iter()
                .any(|item| item["type"] == "function_call_output" && item["call_id"] == call);
            if !answered {
                return Err(j.bad(
                    "responses.call-without-output",
                    &format!("No tool output found for function call {call}."),
                    Some("input"),
                    "invalid_request_error",
                ));
            }
        }
        Ok(())
    }
}

/// A model list (`GET /v1/models`): Anthropic's takes the same version and key headers as
/// every request to its API; OpenAI-compatible servers (local ones too) are not judged.
pub fn check_list(api: Api, headers: &[(String, String)]) -> Result<(), Refusal> {
    match api {
        Api::Anthropic => anthropic_headers(&Judge { api }, headers),
        Api::Chat | Api::Responses => Ok(()),
    }
}

fn anthropic(j: &Judge, headers: &[(String, String)], body: &Value) -> Result<(), Refusal> {
    anthropic_headers(j, headers)?;
    anthropic_body(j, body)
}

fn anthropic_headers(j: &Judge, headers: &[(String, String)]) -> Result<(), Refusal> {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    if header("anthropic-version").is_none() {
        return Err(j.bad(
            "anthropic.version-header",
            "anthropic-version: header is required",
            None,
            "invalid_request_error",
        ));
    }
    if header("x-api-key").is_none_or(str::is_empty) {
        let mut refusal = j.bad(
            "anthropic.api-key",
            "x-api-key header is required",
            None,
            "authentication_error",
        );
        refusal.status = 401;
        return Err(refusal);
    }
    Ok(())
}

fn anthropic_body(j: &Judge, body: &Value) -> Result<(), Refusal> {
    j.known_params(body, ANTHROPIC_PARAMS)?;
    let Some(max_tokens) = body["max_tokens"].as_u64() else {
        return Err(j.bad(
            "anthropic.max-tokens",
            "max_tokens: Field required",
            None,
            "invalid_request_error",
        ));
    };
    let model = body["model"].as_str().unwrap_or_default();
    let version = claude_version(model);
    let thinking = body["thinking"]["type"].as_str().unwrap_or("disabled");
    let newest = version.is_some_and(|v| v >= (4, 7)) || model.contains("mythos-preview");
    match thinking {
        "enabled" => {
            let budget = body["thinking"]["budget_tokens"].as_u64().unwrap_or(0);
            if newest {
                return Err(j.bad(
                    "anthropic.budget-removed",
                    "\"thinking.type.enabled\" is not supported for this model. Use \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking behavior.",
                    None,
                    "invalid_request_error",
                ));
            }
            if budget < 1024 || budget >= max_tokens {
                return Err(j.bad(
                    "anthropic.budget",
                    &format!("thinking.budget_tokens: must be >= 1024 and less than max_tokens ({budget} given, max_tokens {max_tokens})"),
                    None,
                    "invalid_request_error",
                ));
            }
        }
        "adaptive" if version.is_some_and(|v| v < (4, 6)) => {
            return Err(j.bad(
                "anthropic.adaptive-unsupported",
                &format!(
                    "thinking.type.adaptive is not supported for {model}: use thinking.type.enabled with budget_tokens"
                ),
                None,
                "invalid_request_error",
            ));
        }
        _ => {}
    }
    let thinking_on = matches!(thinking, "enabled" | "adaptive");
    if let Some(t) = body["temperature"].as_f64().filter(|t| *t != 1.0) {
        if newest {
            return Err(j.bad(
                "anthropic.temperature-fixed",
                &format!("temperature: {t} is not supported for this model; only the default is accepted"),
                None,
                "invalid_request_error",
            ));
        }
        if thinking_on {
            return Err(j.bad(
                "anthropic.temperature-thinking",
                "temperature may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
                None,
                "invalid_request_error",
            ));
        }
    }
    for (i, tool) in array(&body["tools"]).iter().enumerate() {
        if tool.get("type").is_none() || tool["type"] == "custom" {
            j.tool_name(tool["name"].as_str(), &format!("tools.{i}.name"))?;
            continue;
        }
        let kind = tool["type"].as_str().unwrap_or_default();
        let known = ANTHROPIC_TOOL_TYPES.contains(&kind);
        let searching = kind.starts_with("web_search_");
        if !known || (searching && tool["name"] != "web_search") {
            return Err(j.bad(
                "anthropic.server-tool",
                &format!("tools.{i}: Input tag '{kind}' found using 'type' does not match any of the expected tags, or its name is not the one it takes (web_search for web_search_*)"),
                None,
                "invalid_request_error",
            ));
        }
    }
    let messages = array(&body["messages"]);
    let mut breakpoints = array(&body["tools"])
        .iter()
        .chain(array(&body["system"]))
        .filter(|b| b.get("cache_control").is_some())
        .count();
    for (i, m) in messages.iter().enumerate() {
        let blocks = array(&m["content"]);
        breakpoints += blocks.iter().filter(|b| b.get("cache_control").is_some()).count();
        let last_assistant = i + 1 == messages.len() && m["role"] == "assistant";
        let empty = match &m["content"] {
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            _ => true,
        };
        if empty && !last_assistant {
            return Err(j.bad(
                "anthropic.empty-content",
                &format!("messages.{i}: all messages must have non-empty content except for the optional final assistant message"),
                None,
                "invalid_request_error",
            ));
        }
        if m["content"].as_str().is_some_and(|s| s.trim().is_empty()) && !empty {
            return Err(j.bad(
                "anthropic.empty-text",
                "messages: text content blocks must contain non-whitespace text",
                None,
                "invalid_request_error",
            ));
        }
        for (k, b) in blocks.iter().enumerate() {
            anthropic_images(j, i, k, m["role"].as_str().unwrap_or_default(), b)?;
            match b["type"].as_str().unwrap_or_default() {
                "text" if b["text"].as_str().is_none_or(|t| t.trim().is_empty()) => {
                    return Err(j.bad(
                        "anthropic.empty-text",
                        &format!("messages.{i}.content.{k}: text content blocks must be non-empty"),
                        None,
                        "invalid_request_error",
                    ));
                }
                "thinking" if b["signature"].as_str().is_none_or(str::is_empty) => {
                    return Err(j.bad(
                        "anthropic.thinking-signature",
                        &format!("messages.{i}.content.{k}.thinking.signature: Field required"),
                        None,
                        "invalid_request_error",
                    ));
                }
                _ => {}
            }
        }
        server_blocks(j, i, m, i + 1 == messages.len())?;
        if m["role"] == "user" {
            let previous: Vec<&str> = i
                .checked_sub(1)
                .and_then(|p| messages.get(p))
                .filter(|p| p["role"] == "assistant")
                .map(|p| tool_use_ids(p))
                .unwrap_or_default();
            for (k, b) in blocks.iter().enumerate() {
                let id = b["tool_use_id"].as_str().unwrap_or_default();
                if b["type"] == "tool_result" && !previous.contains(&id) {
                    return Err(j.bad(
                        "anthropic.result-without-tool-use",
                        &format!("messages.{i}.content.{k}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."),
                        None,
                        "invalid_request_error",
                    ));
                }
            }
        }
        let ids = tool_use_ids(m);
        if m["role"] == "assistant" && !ids.is_empty() {
            // The results must open the next message, one per call.
            let next = messages.get(i + 1);
            let leading: Vec<&str> = next
                .filter(|n| n["role"] == "user")
                .map(|n| {
                    array(&n["content"])
                        .iter()
                        .take_while(|b| b["type"] == "tool_result")
                        .filter_map(|b| b["tool_use_id"].as_str())
                        .collect()
                })
                .unwrap_or_default();
            let missing: Vec<&str> = ids.iter().copied().filter(|id| !leading.contains(id)).collect();
            if !missing.is_empty() {
                return Err(j.bad(
                    "anthropic.tool-use-without-result",
                    &format!("messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i + 1, missing.join(", ")),
                    None,
                    "invalid_request_error",
                ));
            }
        }
    }
    if breakpoints > 4 {
        return Err(j.bad(
            "anthropic.cache-breakpoints",
            &format!("A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."),
            None,
            "invalid_request_error",
        ));
    }
    // A turn still in its tool loop: the assistant message before the last results must
    // start with its thinking.
    let in_loop = messages.last().is_some_and(|m| {
        m["role"] == "user" && array(&m["content"]).first().is_some_and(|b| b["type"] == "tool_result")
    });
    if thinking == "enabled"
        && in_loop
        && let Some(i) = messages.len().checked_sub(2)
        && messages[i]["role"] == "assistant"
    {
        let first = array(&messages[i]["content"])
            .first()
            .and_then(|b| b["type"].as_str())
            .unwrap_or("text")
            .to_owned();
        if first != "thinking" && first != "redacted_thinking" {
            return Err(j.bad(
                "anthropic.thinking-first",
                &format!("messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"),
                None,
                "invalid_request_error",
            ));
        }
    }
    Ok(())
}

/// The server tool blocks of one message: in an assistant message each `server_tool_use` is
/// answered later in it, each result answers one before it, and both are as the API sent them.
fn server_blocks(j: &Judge, i: usize, m: &Value, last: bool) -> Result<(), Refusal> {
    let pairing = |message: String| Err(j.bad("anthropic.server-tool-result", &message, None, "invalid_request_error"));
    let verbatim = |message: String| {
        Err(j.bad(
            "anthropic.server-tool-verbatim",
            &message,
            None,
            "invalid_request_error",
        ))
    };
    let blocks = array(&m["content"]);
    let server_result = |b: &Value| {
        let kind = b["type"].as_str().unwrap_or_default();
        kind.ends_with("_tool_result") && kind != "tool_result"
    };
    let mut open: Vec<&str> = Vec::new();
    for (k, b) in blocks.iter().enumerate() {
        let is_use = b["type"] == "server_tool_use";
        if (is_use || server_result(b)) && m["role"] != "assistant" {
            return pairing(format!(
                "messages.{i}.content.{k}: server tool blocks may only appear in assistant messages"
            ));
        }
        if is_use {
            let id = b["id"].as_str().unwrap_or_default();
            let well_formed = id
                .strip_prefix("srvtoolu_")
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'));
            if !well_formed || !b["input"].is_object() || b["name"].as_str().is_none() {
                return verbatim(format!(
                    "messages.{i}.content.{k}.server_tool_use: id must match ^srvtoolu_[a-zA-Z0-9_]+$, with name and input (got id {id:?})"
                ));
            }
            open.push(id);
        } else if server_result(b) {
            let id = b["tool_use_id"].as_str().unwrap_or_default();
            match open.iter().position(|o| *o == id) {
                Some(p) => {
                    open.remove(p);
                }
                None => {
                    return pairing(format!(
                        "messages.{i}.content.{k}: unexpected `tool_use_id` found in `{}` blocks: {id}. Each result block must follow its `server_tool_use` block in the same message.",
                        b["type"].as_str().unwrap_or_default()
                    ));
                }
            }
            match &b["content"] {
                Value::Array(results) => {
                    for (r, result) in results.iter().enumerate() {
                        let field = |name: &str| result[name].as_str().is_some_and(|v| !v.is_empty());
                        if result["type"] == "web_search_result"
                            && !(field("url") && field("title") && field("encrypted_content"))
                        {
                            return verbatim(format!(
                                "messages.{i}.content.{k}.content.{r}: web_search_result needs url, title and encrypted_content: Field required"
                            ));
                        }
                    }
                }
                error if error["error_code"].is_string() => {}
                _ => {
                    return verbatim(format!(
                        "messages.{i}.content.{k}.content: a list of results or an error with error_code: Field required"
                    ));
                }
            }
        }
    }
    // The final message may be a paused turn's, whose last call the API has yet to answer.
    if let Some(id) = open.first().filter(|_| !last) {
        return pairing(format!(
            "messages.{i}: `server_tool_use` ids were found without result blocks after them: {id}. Each `server_tool_use` block must be followed by its result in the same message."
        ));
    }
    Ok(())
}

/// The media type of image bytes, from their magic numbers (the mock's own reading, not
/// brute's), and a PNG's size from its IHDR chunk.
fn image_kind(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF8") {
        Some("image/gif")
    } else if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        Some("image/webp")
    } else {
        None
    }
}

fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let word = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    (bytes.starts_with(b"\x89PNG") && bytes.get(12..16) == Some(b"IHDR")).then(|| Some((word(16)?, word(20)?)))?
}

fn decode_base64(data: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(data).ok()
}

/// An OpenAI image URL: http(s), or a base64 `data:` URL of a PNG, JPEG, GIF or WebP whose
/// bytes are what it says.
fn openai_image_url(url: &str) -> Result<(), String> {
    if url.starts_with("https://") || url.starts_with("http://") {
        return Ok(());
    }
    let Some((media, data)) = url.strip_prefix("data:").and_then(|rest| rest.split_once(";base64,")) else {
        return Err(format!(
            "Invalid image URL: expected a URL or a base64 data URL, got {:?}",
            url.chars().take(40).collect::<String>()
        ));
    };
    if !["image/png", "image/jpeg", "image/gif", "image/webp"].contains(&media) {
        return Err(format!("Invalid MIME type. Only image types are supported: {media}"));
    }
    let bytes = decode_base64(data).ok_or("Invalid base64 image_url.")?;
    match image_kind(&bytes) {
        Some(kind) if kind == media => Ok(()),
        _ => Err("You uploaded an unsupported image. Please make sure your image is valid.".to_owned()),
    }
}

/// Models that take no images on Chat Completions.
fn openai_text_only(model: &str) -> bool {
    let m = bare(model);
    ["gpt-3.5", "o1-mini", "o3-mini"].iter().any(|p| m.starts_with(p))
}

/// The content parts of one Chat Completions message.
fn chat_parts(j: &Judge, i: usize, role: &str, m: &Value, model: &str) -> Result<(), Refusal> {
    for (k, part) in array(&m["content"]).iter().enumerate() {
        let kind = part["type"].as_str().unwrap_or_default();
        let at = format!("messages[{i}].content[{k}].type");
        if role == "tool" && kind != "text" {
            return Err(j.bad(
                "chat.tool-image",
                &format!("Invalid value: '{kind}'. Supported values are: 'text'."),
                Some(&at),
                "invalid_value",
            ));
        }
        if role != "user" {
            continue;
        }
        match kind {
            "text" | "input_audio" | "file" => {}
            "image_url" => {
                if openai_text_only(model) {
                    return Err(j.bad(
                        "chat.image-model",
                        "Invalid content type. image_url is only supported by certain models.",
                        Some(&format!("messages.[{i}].content.[{k}].type")),
                        "invalid_value",
                    ));
                }
                let url = part["image_url"]["url"].as_str().unwrap_or_default();
                if let Err(message) = openai_image_url(url) {
                    return Err(j.bad(
                        "chat.image-url",
                        &message,
                        Some(&format!("messages[{i}].content[{k}].image_url.url")),
                        "invalid_image_format",
                    ));
                }
            }
            other => {
                return Err(j.bad(
                    "chat.user-part",
                    &format!("Invalid value: '{other}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'."),
                    Some(&at),
                    "invalid_value",
                ));
            }
        }
    }
    Ok(())
}

/// The content parts of one Responses input message.
fn responses_parts(j: &Judge, i: usize, item: &Value) -> Result<(), Refusal> {
    if item.get("role").is_none() {
        return Ok(());
    }
    for (k, part) in array(&item["content"]).iter().enumerate() {
        let at = format!("input[{i}].content[{k}]");
        match part["type"].as_str().unwrap_or_default() {
            "input_text" | "input_file" | "output_text" | "refusal" => {}
            "input_image" => {
                if !matches!(part["detail"].as_str(), Some("low" | "high" | "auto")) {
                    return Err(j.bad(
                        "responses.input-part",
                        &format!("Missing required parameter: '{at}.detail'."),
                        Some(&format!("{at}.detail")),
                        "missing_required_parameter",
                    ));
                }
                if part.get("file_id").is_none() {
                    let url = part["image_url"].as_str().unwrap_or_default();
                    if let Err(message) = openai_image_url(url) {
                        return Err(j.bad(
                            "responses.image-url",
                            &message,
                            Some(&format!("{at}.image_url")),
                            "invalid_image_format",
                        ));
                    }
                }
            }
            other => {
                return Err(j.bad(
                    "responses.input-part",
                    &format!(
                        "Invalid value: '{other}'. Supported values are: 'input_text', 'input_image', and 'input_file'."
                    ),
                    Some(&format!("{at}.type")),
                    "invalid_value",
                ));
            }
        }
    }
    Ok(())
}

/// The image blocks of one Messages content block (and of a tool result's content).
fn anthropic_images(j: &Judge, i: usize, k: usize, role: &str, block: &Value) -> Result<(), Refusal> {
    let kind = block["type"].as_str().unwrap_or_default();
    if kind == "tool_result" {
        for (n, inner) in array(&block["content"]).iter().enumerate() {
            match inner["type"].as_str().unwrap_or_default() {
                "text" | "search_result" | "document" => {}
                "image" => anthropic_image(j, &format!("messages.{i}.content.{k}.content.{n}"), inner)?,
                other => {
                    return Err(j.bad(
                        "anthropic.image-place",
                        &format!("messages.{i}.content.{k}.content.{n}.type: Input tag '{other}' found using 'type' does not match any of the expected tags: 'text', 'image', 'search_result', 'document'"),
                        None,
                        "invalid_request_error",
                    ));
                }
            }
        }
        return Ok(());
    }
    if kind != "image" {
        return Ok(());
    }
    if role != "user" {
        return Err(j.bad(
            "anthropic.image-place",
            &format!("messages.{i}.content.{k}: image content blocks are only allowed in user messages"),
            None,
            "invalid_request_error",
        ));
    }
    anthropic_image(j, &format!("messages.{i}.content.{k}"), block)
}

fn anthropic_image(j: &Judge, at: &str, block: &Value) -> Result<(), Refusal> {
    let source = &block["source"];
    if source["type"] == "url" && source["url"].is_string() {
        return Ok(());
    }
    let media = source["media_type"].as_str().unwrap_or_default();
    let bad = |message: String| j.bad("anthropic.image-source", &message, None, "invalid_request_error");
    if source["type"] != "base64" {
        return Err(bad(format!(
            "{at}.source.type: Input tag found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'"
        )));
    }
    if !["image/jpeg", "image/png", "image/gif", "image/webp"].contains(&media) {
        return Err(bad(format!(
            "{at}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
        )));
    }
    let data = source["data"].as_str().unwrap_or_default();
    if data.len() > 5 * 1024 * 1024 {
        return Err(j.bad(
            "anthropic.image-size",
            &format!(
                "{at}.source.base64: image exceeds 5 MB maximum: {} bytes > 5242880 bytes",
                data.len()
            ),
            None,
            "invalid_request_error",
        ));
    }
    let Some(bytes) = decode_base64(data) else {
        return Err(bad(format!("{at}.source.base64.data: invalid base64 data")));
    };
    if image_kind(&bytes) != Some(media) {
        return Err(bad(format!(
            "{at}.source.base64.data: Image does not match the provided media type {media}"
        )));
    }
    if let Some((w, h)) = png_size(&bytes).filter(|(w, h)| *w > 8000 || *h > 8000) {
        return Err(j.bad(
            "anthropic.image-size",
            &format!("{at}.source.base64.data: image dimensions exceed max allowed size: 8000 pixels ({w}x{h})"),
            None,
            "invalid_request_error",
        ));
    }
    Ok(())
}

fn tool_use_ids(message: &Value) -> Vec<&str> {
    array(&message["content"])
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .filter_map(|b| b["id"].as_str())
        .collect()
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// Builds refusals in one API's error shape.
struct Judge {
    api: Api,
}

impl Judge {
    fn bad(&self, rule: &'static str, message: &str, param: Option<&str>, code: &str) -> Refusal {
        let body = match self.api {
            Api::Anthropic => json!({"type": "error", "error": {"type": code, "message": message}}),
            Api::Chat | Api::Responses => json!({"error": {
                "message": message,
                "type": "invalid_request_error",
                "param": param,
                "code": code,
            }}),
        };
        Refusal {
            rule,
            status: 400,
            body: body.to_string(),
        }
    }

    fn not_found(&self, path: &str) -> Refusal {
        let body = match self.api {
            Api::Anthropic => json!({"type": "error", "error": {"type": "not_found_error", "message": "Not Found"}}),
            Api::Chat | Api::Responses => json!({"error": {
                "message": format!("Invalid URL (POST {path})"),
                "type": "invalid_request_error",
                "param": null,
                "code": null,
            }}),
        };
        Refusal {
            rule: "path",
            status: 404,
            body: body.to_string(),
        }
    }

    fn known_params(&self, body: &Value, known: &[&str]) -> Result<(), Refusal> {
        let rule = match self.api {
            Api::Chat => "chat.unknown-param",
            Api::Responses => "responses.unknown-param",
            Api::Anthropic => "anthropic.unknown-param",
        };
        let Some(object) = body.as_object() else {
            return Err(self.bad(
                rule,
                "We could not parse the JSON body of your request.",
                None,
                "invalid_request_error",
            ));
        };
        for key in object.keys() {
            if !known.contains(&key.as_str()) {
                let message = match self.api {
                    Api::Chat => format!("Unrecognized request argument supplied: {key}"),
                    Api::Responses => format!("Unknown parameter: '{key}'."),
                    Api::Anthropic => format!("{key}: Extra inputs are not permitted"),
                };
                return Err(self.bad(rule, &message, Some(key), "unknown_parameter"));
            }
        }
        Ok(())
    }

    fn tool_name(&self, name: Option<&str>, at: &str) -> Result<(), Refusal> {
        let name = name.unwrap_or_default();
        let ok = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if ok {
            return Ok(());
        }
        let message = match self.api {
            Api::Anthropic => format!("{at}: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"),
            Api::Chat | Api::Responses => format!(
                "Invalid '{at}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$' of at most 64 characters."
            ),
        };
        Err(self.bad("tool-name", &message, Some(at), "invalid_value"))
    }
}

/// The model's name without a router's `vendor/` prefix.
fn bare(model: &str) -> &str {
    model.rsplit('/').next().unwrap_or(model)
}

/// OpenAI reasoning models (the o-series and gpt-5 on): they take `max_completion_tokens`
/// and no sampling temperature but the default.
pub fn openai_reasoning(model: &str) -> bool {
    let m = bare(model);
    let o_series = m.len() > 1 && m.starts_with('o') && m.as_bytes()[1].is_ascii_digit();
    let numbered_gpt = m
        .strip_prefix("gpt-")
        .and_then(|rest| rest.split(['.', '-']).next())
        .and_then(|major| major.parse::<u32>().ok())
        .is_some_and(|major| major >= 5);
    o_series || numbered_gpt || m.starts_with("codex-mini")
}

/// OpenAI models known not to reason (they refuse reasoning parameters).
fn openai_non_reasoning(model: &str) -> bool {
    let m = bare(model);
    ["gpt-4", "gpt-3.5", "chatgpt-4o"].iter().any(|p| m.starts_with(p))
}

/// A Claude model's (major, minor) version from its id (`claude-sonnet-4-5-20250929`,
/// `claude-3-7-sonnet-20250219`, `claude-opus-4-20250514`, `anthropic/claude-opus-4.6`).
pub fn claude_version(model: &str) -> Option<(u32, u32)> {
    let m = bare(model);
    let rest = m.strip_prefix("claude-")?;
    let numbers: Vec<u32> = rest
        .split(['-', '.'])
        .filter(|p| !p.is_empty() && p.len() < 8 && p.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|p| p.parse().ok())
        .collect();
    let major = *numbers.first()?;
    Some((major, numbers.get(1).copied().unwrap_or(0)))
}
