//! A strict mock of Anthropic's Messages API (`POST /v1/messages`, `POST
//! /v1/messages/count_tokens`), after docs.anthropic.com/en/api/messages, /messages-streaming
//! and /messages-count-tokens. It refuses what the real API refuses (`validate.rs`), in
//! Anthropic's error shape, and answers as it does:
//!
//! | request | answer |
//! |---|---|
//! | no key (`x-api-key` or `Authorization: Bearer`, as current SDKs send it) or a wrong one | 401 `authentication_error` |
//! | no `anthropic-version`, or an `anthropic-beta` value that is not `name-YYYY-MM-DD` (or `name-YYYYMMDD`) | 400 |
//! | model `error-429` / `error-500` | that status in Anthropic's error shape |
//! | `thinking` enabled | a `thinking` block first, signed: the mock checks the signature when it comes back |
//! | custom tools, `tool_choice` not `none`, and the last user turn holds no `tool_result` | a `tool_use` of the first tool (or the one `tool_choice` names) |
//! | a [`Script`] is set, its tool offered, and no `tool_result` in the last user turn | a `tool_use` of that tool with the script's input |
//! | a [`Script`] is set and the last user turn holds a `tool_result` | a text answer quoting the result: `The tool said: ...` |
//! | `cache_control` anywhere | usage counted from the prompt: a prefix up to a breakpoint is written to the cache the first time and read from it after |
//! | no `cache_control` | the fixed usage the chat translation tests were written against (10 in, 3 written, 5 read, 12 out) |
//!
//! Every request is recorded with its headers (so tests can assert `anthropic-version` and
//! `anthropic-beta` were forwarded) and its `?query` (the SDKs' beta client sends `?beta=true`).

use super::*;
use sha2::{Digest, Sha256};

mod stream;
mod validate;
pub(crate) use validate::message_request;

pub const VERSION: &str = "2023-06-01";
pub const TEXT: &str = "Hi! My name is Claude.";
/// The streamed text, in the deltas the mock sends.
pub const STREAM_DELTAS: [&str; 3] = ["Hello", "! Ça va? 👋", " Nice to meet you."];
pub const INPUT_TOKENS: u64 = 10;
pub const CACHE_CREATION_TOKENS: u64 = 3;
pub const CACHE_READ_TOKENS: u64 = 5;
pub const OUTPUT_TOKENS: u64 = 12;
/// The output tokens a thinking block adds.
pub const THINKING_TOKENS: u64 = 21;
pub const TOOL_USE_ID: &str = "toolu_01A09q90qw90lq917835lq9";
pub const MESSAGE_ID: &str = "msg_013Zva2CMHLNnXjNJJKqJ2EF";
/// The thinking block's text, and the deltas it is streamed in.
pub const THINKING: &str = "The user asks something simple; a short, friendly answer will do.";
pub const THINKING_DELTAS: [&str; 2] = [
    "The user asks something simple;",
    " a short, friendly answer will do.",
];
/// The tool input a whole answer carries.
pub const TOOL_INPUT: &str = r#"{"location": "San Francisco, CA", "unit": "celsius"}"#;
/// The streamed tool input, cut inside keys and values as the real API cuts it.
pub const STREAM_TOOL_INPUT: [&str; 4] = ["", "{\"location\":", " \"San Fra", "ncisco, CA\"}"];

/// The signature the mock gives a thinking block: only the mock can make one, so a block whose
/// text or signature was changed on the way is refused when it comes back.
pub fn signature(thinking: &str) -> String {
    let digest = Sha256::digest(format!("mock-anthropic-signing-key\0{thinking}"));
    format!("Ep4B{}", hex::encode(digest))
}

fn error(status: u16, kind: &str, message: &str) -> Response {
    json_response(
        status,
        json!({"type": "error", "error": {"type": kind, "message": message},
               "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}),
    )
}

/// The answer to headers the real API refuses, if they are.
fn refused_headers(headers: &HeaderMap) -> Option<Response> {
    let bearer = format!("Bearer {KEY}");
    if header(headers, "x-api-key") != Some(KEY)
        && header(headers, "authorization") != Some(bearer.as_str())
    {
        return Some(error(401, "authentication_error", "invalid x-api-key"));
    }
    let Some(version) = header(headers, "anthropic-version") else {
        return Some(error(
            400,
            "invalid_request_error",
            "anthropic-version: header is required",
        ));
    };
    if !dated(version) {
        return Some(error(
            400,
            "invalid_request_error",
            &format!("anthropic-version: unknown version `{version}`"),
        ));
    }
    let betas = header(headers, "anthropic-beta").unwrap_or_default();
    let unknown: Vec<&str> = betas
        .split(',')
        .map(str::trim)
        .filter(|b| !b.is_empty() && !beta_name(b))
        .collect();
    if !unknown.is_empty() {
        return Some(error(
            400,
            "invalid_request_error",
            &format!(
                "Unexpected value(s) `{}` for the `anthropic-beta` header. Please consult our documentation at docs.claude.com or try again without the header.",
                unknown.join(", ")
            ),
        ));
    }
    None
}

/// `YYYY-MM-DD`.
fn dated(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
}

/// `name-YYYY-MM-DD` or `name-YYYYMMDD`, as every beta flag is (`interleaved-thinking-2025-05-14`,
/// `claude-code-20250219`).
fn beta_name(flag: &str) -> bool {
    let a_date =
        |date: &str| dated(date) || (date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()));
    [10, 8].into_iter().any(|len| {
        flag.len() > len + 1
            && flag.is_char_boundary(flag.len() - len)
            && a_date(&flag[flag.len() - len..])
            && flag.as_bytes()[flag.len() - len - 1] == b'-'
            && flag[..flag.len() - len - 1]
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    })
}

pub(super) async fn messages(
    State(shared): State<Arc<Shared>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = record(&shared, "/v1/messages".into(), query, &headers, &body).await;
    if let Some(refused) = refused_headers(&headers) {
        return refused;
    }
    if let Err(message) = validate::message_request(&request) {
        return error(400, "invalid_request_error", &message);
    }
    let model = request["model"].as_str().unwrap_or_default().to_owned();
    match model.as_str() {
        "error-429" => {
            return error(
                429,
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
            );
        }
        "error-500" => return error(500, "api_error", "Internal server error"),
        _ => {}
    }
    let answer = Answer::plan(&shared, &request).await;
    if request["stream"] == true {
        return match model.as_str() {
            "stream-cut" => stream::broken(&model, None),
            "stream-overloaded" => stream::broken(
                &model,
                Some(json!({"type": "error",
                            "error": {"type": "overloaded_error", "message": "Overloaded"}})),
            ),
            _ => stream::answer(&model, &answer),
        };
    }
    let mut content = Vec::new();
    if answer.thinking {
        content.push(
            json!({"type": "thinking", "thinking": THINKING, "signature": signature(THINKING)}),
        );
    }
    match &answer.tool {
        Some(name) => {
            let input = (answer.tool_input.clone())
                .unwrap_or_else(|| serde_json::from_str(TOOL_INPUT).unwrap_or_default());
            let text = (answer.text.as_deref())
                .unwrap_or("<thinking>I need to call the get_weather function</thinking>");
            content.push(json!({"type": "text", "text": text}));
            content
                .push(json!({"type": "tool_use", "id": TOOL_USE_ID, "name": name, "input": input}));
        }
        None => {
            content.push(json!({"type": "text", "text": answer.text.as_deref().unwrap_or(TEXT)}))
        }
    }
    axum::Json(json!({
        "id": MESSAGE_ID, "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": if answer.tool.is_some() { "tool_use" } else { "end_turn" },
        "stop_sequence": null, "usage": answer.usage.json()
    }))
    .into_response()
}

pub(super) async fn count_tokens(
    State(shared): State<Arc<Shared>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = record(
        &shared,
        "/v1/messages/count_tokens".into(),
        query,
        &headers,
        &body,
    )
    .await;
    if let Some(refused) = refused_headers(&headers) {
        return refused;
    }
    if let Err(message) = validate::count_request(&request) {
        return error(400, "invalid_request_error", &message);
    }
    let total: u64 = segments(&request).iter().map(|s| s.tokens).sum();
    axum::Json(json!({"input_tokens": total})).into_response()
}

/// An agent's turn for the mock to play, as a coding agent's backend would: call `tool` with
/// `input` (e.g. Claude Code's `Read` of a file), then answer with what the tool returned.
#[derive(Clone, Debug)]
pub struct Script {
    pub tool: String,
    pub input: Value,
}

/// What the mock will answer to a valid request.
pub(super) struct Answer {
    pub thinking: bool,
    /// The tool it calls, if any.
    pub tool: Option<String>,
    pub usage: Usage,
    /// The text, when not the fixed one.
    pub text: Option<String>,
    /// The tool's input, when not the fixed one.
    pub tool_input: Option<Value>,
}

/// The text of the `tool_result` blocks of `message`, if it has any.
fn tool_results(message: &Value) -> Option<String> {
    let results: Vec<&Value> = (message["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    if results.is_empty() {
        return None;
    }
    let mut text = String::new();
    for result in results {
        match &result["content"] {
            Value::String(s) => text.push_str(s),
            Value::Array(blocks) => {
                for block in blocks {
                    text.push_str(block["text"].as_str().unwrap_or_default());
                }
            }
            _ => {}
        }
    }
    Some(text)
}

#[derive(Clone, Copy)]
pub(super) struct Usage {
    pub input: u64,
    pub cache_creation: u64,
    pub cache_read: u64,
    pub output: u64,
}

impl Usage {
    pub fn json(self) -> Value {
        json!({"input_tokens": self.input, "cache_creation_input_tokens": self.cache_creation,
               "cache_read_input_tokens": self.cache_read, "output_tokens": self.output,
               "service_tier": "standard"})
    }
}

impl Answer {
    async fn plan(shared: &Shared, request: &Value) -> Self {
        let thinking = matches!(
            request["thinking"]["type"].as_str(),
            Some("enabled" | "adaptive")
        );
        let last_has_result = request["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_array())
            .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"));
        let tool = match request["tool_choice"]["type"].as_str() {
            Some("none") => None,
            Some("tool") => request["tool_choice"]["name"].as_str().map(str::to_owned),
            _ => request["tools"]
                .as_array()
                .and_then(|tools| tools.iter().find(|t| t["input_schema"].is_object()))
                .and_then(|t| t["name"].as_str())
                .map(str::to_owned),
        }
        .filter(|_| !last_has_result);
        let output = OUTPUT_TOKENS + if thinking { THINKING_TOKENS } else { 0 };
        let usage = match cache_usage(shared, request).await {
            Some((input, cache_creation, cache_read)) => Usage {
                input,
                cache_creation,
                cache_read,
                output,
            },
            None => Usage {
                input: INPUT_TOKENS,
                cache_creation: CACHE_CREATION_TOKENS,
                cache_read: CACHE_READ_TOKENS,
                output,
            },
        };
        let mut answer = Self {
            thinking,
            tool,
            usage,
            text: None,
            tool_input: None,
        };
        if let Some(script) = shared.script.lock().await.clone() {
            let last = request["messages"].as_array().and_then(|m| m.last());
            let offered = (request["tools"].as_array().into_iter().flatten())
                .any(|t| t["name"] == script.tool.as_str());
            match last.and_then(tool_results) {
                Some(result) => {
                    answer.tool = None;
                    answer.text = Some(format!("The tool said: {result}"));
                }
                None if offered => {
                    answer.tool = Some(script.tool);
                    answer.tool_input = Some(script.input);
                    answer.text = Some("Let me look at that file.".to_owned());
                }
                None => {}
            }
        }
        answer
    }
}

/// One piece of the prompt in the order Anthropic caches it (tools, system, messages).
struct Segment {
    /// The piece without its `cache_control`: what the cache is keyed on.
    content: Value,
    tokens: u64,
    breakpoint: bool,
}

/// A token is about four characters of text (the mock's stand-in for the tokenizer).
fn tokens(value: &Value) -> u64 {
    fn chars(value: &Value) -> usize {
        match value {
            Value::String(s) => s.chars().count(),
            Value::Array(items) => items.iter().map(chars).sum(),
            Value::Object(object) => object
                .iter()
                .filter(|(k, _)| *k != "cache_control" && *k != "signature")
                .map(|(_, v)| chars(v))
                .sum(),
            _ => 0,
        }
    }
    chars(value).div_ceil(4) as u64
}

fn segments(request: &Value) -> Vec<Segment> {
    let mut pieces: Vec<Value> = Vec::new();
    pieces.extend(request["tools"].as_array().cloned().unwrap_or_default());
    match &request["system"] {
        Value::String(s) => pieces.push(json!({"type": "text", "text": s})),
        Value::Array(blocks) => pieces.extend(blocks.iter().cloned()),
        _ => {}
    }
    for message in request["messages"].as_array().into_iter().flatten() {
        match &message["content"] {
            Value::String(s) => pieces.push(json!({"role": message["role"], "text": s})),
            Value::Array(blocks) => pieces.extend(
                blocks
                    .iter()
                    .map(|b| json!({"role": message["role"], "block": b})),
            ),
            _ => {}
        }
    }
    let automatic = request.get("cache_control").is_some();
    let last = pieces.len().saturating_sub(1);
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, mut content)| {
            let breakpoint = (automatic && i == last) || has_cache_control(&content);
            strip_cache_control(&mut content);
            Segment {
                tokens: tokens(&content),
                content,
                breakpoint,
            }
        })
        .collect()
}

fn has_cache_control(value: &Value) -> bool {
    match value {
        Value::Object(o) => o.contains_key("cache_control") || o.values().any(has_cache_control),
        Value::Array(items) => items.iter().any(has_cache_control),
        _ => false,
    }
}

fn strip_cache_control(value: &mut Value) {
    match value {
        Value::Object(o) => {
            o.remove("cache_control");
            o.values_mut().for_each(strip_cache_control);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

/// `(input, cache written, cache read)` for a prompt with breakpoints, None without: the longest
/// prefix seen before is read, the rest up to the last breakpoint written, every breakpoint's
/// prefix remembered.
async fn cache_usage(shared: &Shared, request: &Value) -> Option<(u64, u64, u64)> {
    let segments = segments(request);
    let breakpoints: Vec<usize> = (0..segments.len())
        .filter(|&i| segments[i].breakpoint)
        .collect();
    let last = *breakpoints.last()?;
    let total: u64 = segments.iter().map(|s| s.tokens).sum();
    let prefix_tokens = |end: usize| segments[..=end].iter().map(|s| s.tokens).sum::<u64>();
    let key = |end: usize| {
        let content: Vec<&Value> = segments[..=end].iter().map(|s| &s.content).collect();
        let text = format!(
            "{}\0{}",
            request["model"],
            Value::from(content.into_iter().cloned().collect::<Vec<_>>())
        );
        hex::encode(Sha256::digest(text))
    };
    let mut cache = shared.cached_prefixes.lock().await;
    let read = breakpoints
        .iter()
        .rev()
        .find(|&&b| cache.contains(&key(b)))
        .map_or(0, |&b| prefix_tokens(b));
    let written = prefix_tokens(last) - read;
    for &b in &breakpoints {
        cache.insert(key(b));
    }
    Some((total - read - written, written, read))
}
