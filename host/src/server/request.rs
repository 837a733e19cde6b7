//! Parsing and validating client requests into the canonical form plugins receive.
//!
//! The body is parsed once into an order-preserving JSON map: the fields the gateway relies on
//! are checked by type, and everything else is forwarded untouched.

use serde_json::{Map, Value};

use super::error::ApiError;
use crate::plugins::{CanonicalRequest, Operation};

/// A validated client request, before the model is resolved.
pub struct ClientRequest {
    pub operation: Operation,
    pub model: String,
    pub stream: bool,
    /// Whether the client itself asked for the final usage chunk of a stream.
    pub client_wants_usage: bool,
    /// The end user, from the gateway-only `extra` object (never forwarded).
    pub user: UserInfo,
    body: Map<String, Value>,
}

/// Who a request is for, as the hosted API documents it: `extra.user` (`id` or `user_id`,
/// `name` or `user_name`, `tags` or `user_tags`), with OpenAI's `user` field as a fallback id;
/// and `extra.metadata`, flattened to strings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UserInfo {
    pub id: Option<String>,
    pub name: Option<String>,
    pub tags: Vec<String>,
    pub metadata: Vec<(String, String)>,
}

impl UserInfo {
    fn from_body(body: &Map<String, Value>) -> Result<Self, ApiError> {
        let extra = match body.get("extra") {
            None | Some(Value::Null) => None,
            Some(Value::Object(extra)) => Some(extra),
            Some(other) => return Err(wrong_type("extra", "an object", other)),
        };
        let user = extra.and_then(|e| e.get("user")).and_then(Value::as_object);
        let text = |keys: [&str; 2]| {
            user.and_then(|u| keys.iter().find_map(|k| u.get(*k)))
                .and_then(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                })
        };
        let tags = user
            .and_then(|u| u.get("tags").or_else(|| u.get("user_tags")))
            .and_then(Value::as_array)
            .map(|tags| {
                tags.iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let metadata = extra
            .and_then(|e| e.get("metadata"))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let v = match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (k.clone(), v)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            id: text(["id", "user_id"])
                .or_else(|| body.get("user").and_then(Value::as_str).map(str::to_owned)),
            name: text(["name", "user_name"]),
            tags,
            metadata,
        })
    }
}

impl ClientRequest {
    pub fn parse(operation: Operation, bytes: &[u8]) -> Result<Self, ApiError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
        let Value::Object(mut body) = value else {
            return Err(ApiError::InvalidJson(
                "the body must be a JSON object".to_owned(),
            ));
        };
        let model = match body.get("model") {
            Some(Value::String(m)) if !m.is_empty() => m.clone(),
            Some(Value::String(_)) => return Err(invalid("model", "'model' must not be empty.")),
            Some(other) => return Err(wrong_type("model", "a string", other)),
            None => return Err(missing("model")),
        };
        let stream = match body.get("stream") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(wrong_type("stream", "a boolean", other)),
        };
        match operation {
            Operation::ChatCompletions => validate_chat(&body)?,
            Operation::Embeddings => validate_embeddings(&body)?,
            Operation::ImageGenerations => validate_images(&body)?,
            Operation::ListModels => {}
        }
        if stream && operation != Operation::ChatCompletions {
            return Err(invalid(
                "stream",
                "Streaming is only supported for chat completions.",
            ));
        }
        let client_wants_usage = match body.get("stream_options") {
            None | Some(Value::Null) => false,
            Some(Value::Object(o)) => match o.get("include_usage") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(other) => {
                    return Err(wrong_type(
                        "stream_options.include_usage",
                        "a boolean",
                        other,
                    ));
                }
            },
            Some(other) => return Err(wrong_type("stream_options", "an object", other)),
        };
        if stream {
            // Always ask the upstream for usage, so streamed requests are never recorded at $0.
            let options = body
                .entry("stream_options")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(o) = options {
                o.insert("include_usage".to_owned(), Value::Bool(true));
            }
        }
        let user = UserInfo::from_body(&body)?;
        // Gateway-only metadata (users, tags) is never forwarded upstream.
        body.remove("extra");
        Ok(Self {
            operation,
            model,
            stream,
            client_wants_usage,
            user,
            body,
        })
    }

    /// The output cap the client asked for (`max_completion_tokens`, else `max_tokens`).
    pub fn max_output_tokens(&self) -> Option<u32> {
        ["max_completion_tokens", "max_tokens"]
            .iter()
            .find_map(|k| self.body.get(*k).and_then(Value::as_u64))
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// The prompt's tokens by the host's tokenizer: message texts for chat, the input for
    /// embeddings, the prompt for images. Template tokens are not counted.
    pub fn estimate_input_tokens(&self, tokenizer: crate::tokenizer::Tokenizer) -> u32 {
        fn texts<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
            match value {
                Value::String(s) => out.push(s),
                Value::Array(items) => items.iter().for_each(|i| texts(i, out)),
                Value::Object(part) => {
                    if let Some(text) = part.get("text").or_else(|| part.get("content")) {
                        texts(text, out);
                    }
                }
                _ => {}
            }
        }
        let mut found = Vec::new();
        for key in ["messages", "input", "prompt"] {
            if let Some(value) = self.body.get(key) {
                texts(value, &mut found);
            }
        }
        found.iter().map(|t| tokenizer.count(t)).sum()
    }

    /// The prompt as the client sent it (`messages`, `input` or `prompt`), as JSON: for the log
    /// line, when the operator turned `observability.log_prompts` on.
    pub fn prompt_json(&self) -> String {
        ["messages", "input", "prompt"]
            .iter()
            .find_map(|k| self.body.get(*k))
            .map(|v| v.to_string())
            .unwrap_or_default()
    }

    /// The canonical request for the upstream model name `upstream_model`.
    pub fn canonical(&mut self, upstream_model: &str) -> CanonicalRequest {
        self.body
            .insert("model".to_owned(), Value::String(upstream_model.to_owned()));
        let body = serde_json::to_string(&self.body).unwrap_or_else(|_| "{}".to_owned());
        CanonicalRequest {
            operation: self.operation,
            model: upstream_model.to_owned(),
            body,
            stream: self.stream,
        }
    }
}

fn validate_chat(body: &Map<String, Value>) -> Result<(), ApiError> {
    let messages = match body.get("messages") {
        Some(Value::Array(m)) => m,
        Some(other) => return Err(wrong_type("messages", "an array", other)),
        None => return Err(missing("messages")),
    };
    if messages.is_empty() {
        return Err(invalid(
            "messages",
            "Invalid 'messages': empty array. Expected an array with minimum length 1.",
        ));
    }
    for (i, message) in messages.iter().enumerate() {
        let Value::Object(message) = message else {
            return Err(wrong_type(&format!("messages[{i}]"), "an object", message));
        };
        match message.get("role") {
            Some(Value::String(role))
                if matches!(
                    role.as_str(),
                    "system" | "developer" | "user" | "assistant" | "tool" | "function"
                ) => {}
            Some(Value::String(role)) => {
                return Err(invalid(
                    &format!("messages[{i}].role"),
                    &format!(
                        "Invalid value for 'messages[{i}].role': '{role}'. Supported values are: \
                         'system', 'developer', 'user', 'assistant', 'tool' and 'function'."
                    ),
                ));
            }
            Some(other) => {
                return Err(wrong_type(
                    &format!("messages[{i}].role"),
                    "a string",
                    other,
                ));
            }
            None => return Err(missing(&format!("messages[{i}].role"))),
        }
        match message.get("content") {
            None | Some(Value::Null | Value::String(_) | Value::Array(_)) => {}
            Some(other) => {
                return Err(wrong_type(
                    &format!("messages[{i}].content"),
                    "a string or an array",
                    other,
                ));
            }
        }
    }
    for (field, check) in [
        ("max_tokens", Check::PositiveInteger),
        ("max_completion_tokens", Check::PositiveInteger),
        ("n", Check::PositiveInteger),
        ("temperature", Check::Number),
        ("top_p", Check::Number),
        ("presence_penalty", Check::Number),
        ("frequency_penalty", Check::Number),
        ("tools", Check::Array),
        ("response_format", Check::Object),
    ] {
        check.apply(body, field)?;
    }
    if let Some(Value::Array(tools)) = body.get("tools") {
        for (i, tool) in tools.iter().enumerate() {
            let name = tool.get("function").and_then(|f| f.get("name"));
            if !matches!(name, Some(Value::String(_))) {
                return Err(missing(&format!("tools[{i}].function.name")));
            }
        }
    }
    match body.get("stop") {
        None | Some(Value::Null | Value::String(_) | Value::Array(_)) => Ok(()),
        Some(other) => Err(wrong_type("stop", "a string or an array", other)),
    }
}

fn validate_embeddings(body: &Map<String, Value>) -> Result<(), ApiError> {
    match body.get("input") {
        Some(Value::String(_)) => {}
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(invalid("input", "'input' must not be an empty array."));
        }
        Some(Value::Array(_)) => {}
        Some(other) => return Err(wrong_type("input", "a string or an array", other)),
        None => return Err(missing("input")),
    }
    Check::PositiveInteger.apply(body, "dimensions")
}

fn validate_images(body: &Map<String, Value>) -> Result<(), ApiError> {
    match body.get("prompt") {
        Some(Value::String(p)) if !p.is_empty() => {}
        Some(Value::String(_)) => return Err(invalid("prompt", "'prompt' must not be empty.")),
        Some(other) => return Err(wrong_type("prompt", "a string", other)),
        None => return Err(missing("prompt")),
    }
    Check::PositiveInteger.apply(body, "n")
}

#[derive(Clone, Copy)]
enum Check {
    PositiveInteger,
    Number,
    Array,
    Object,
}

impl Check {
    fn apply(self, body: &Map<String, Value>, field: &str) -> Result<(), ApiError> {
        let Some(value) = body.get(field) else {
            return Ok(());
        };
        let ok = match (self, value) {
            (_, Value::Null) => true,
            (Self::PositiveInteger, Value::Number(n)) => n.as_u64().is_some_and(|n| n >= 1),
            (Self::Number, Value::Number(_)) => true,
            (Self::Array, Value::Array(_)) => true,
            (Self::Object, Value::Object(_)) => true,
            _ => false,
        };
        if ok {
            return Ok(());
        }
        let expected = match self {
            Self::PositiveInteger => "a positive integer",
            Self::Number => "a number",
            Self::Array => "an array",
            Self::Object => "an object",
        };
        Err(wrong_type(field, expected, value))
    }
}

fn invalid(param: &str, message: &str) -> ApiError {
    ApiError::InvalidField {
        param: param.to_owned(),
        message: message.to_owned(),
    }
}

fn missing(param: &str) -> ApiError {
    invalid(param, &format!("Missing required parameter: '{param}'."))
}

fn wrong_type(param: &str, expected: &str, got: &Value) -> ApiError {
    let got = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    invalid(
        param,
        &format!("Invalid type for '{param}': expected {expected}, but got {got} instead."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param_of(op: Operation, body: &str) -> String {
        match ClientRequest::parse(op, body.as_bytes()) {
            Err(ApiError::InvalidField { param, .. }) => param,
            Err(other) => format!("other: {other}"),
            Ok(_) => "ok".to_owned(),
        }
    }

    #[test]
    fn names_the_field_at_fault() {
        let chat = Operation::ChatCompletions;
        assert_eq!(param_of(chat, r#"{"messages":[]}"#), "model");
        assert_eq!(param_of(chat, r#"{"model":"m"}"#), "messages");
        assert_eq!(
            param_of(chat, r#"{"model":"m","messages":"hi"}"#),
            "messages"
        );
        assert_eq!(
            param_of(chat, r#"{"model":"m","messages":[{"content":"x"}]}"#),
            "messages[0].role"
        );
        assert_eq!(
            param_of(
                chat,
                r#"{"model":"m","messages":[{"role":"user"}],"max_tokens":"9"}"#
            ),
            "max_tokens"
        );
        assert_eq!(
            param_of(
                chat,
                r#"{"model":"m","messages":[{"role":"user"}],"stream":1}"#
            ),
            "stream"
        );
        assert_eq!(param_of(Operation::Embeddings, r#"{"model":"m"}"#), "input");
        assert_eq!(
            param_of(Operation::ImageGenerations, r#"{"model":"m","prompt":3}"#),
            "prompt"
        );
    }

    #[test]
    fn streams_always_ask_for_usage_and_extra_is_dropped() {
        let body = r#"{"model":"p/m","messages":[{"role":"user","content":"hi"}],"stream":true,"extra":{"user":{"id":"u"}}}"#;
        let mut request = ClientRequest::parse(Operation::ChatCompletions, body.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!request.client_wants_usage);
        let canonical = request.canonical("m");
        let sent: Value = serde_json::from_str(&canonical.body).unwrap_or(Value::Null);
        assert_eq!(sent["model"], "m");
        assert_eq!(sent["stream_options"]["include_usage"], true);
        assert!(sent.get("extra").is_none());
    }

    #[test]
    fn users_come_from_extra_with_openais_user_as_a_fallback() {
        let parse = |body: &str| {
            ClientRequest::parse(Operation::ChatCompletions, body.as_bytes())
                .map(|r| r.user)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let user = parse(
            r#"{"model":"m","messages":[{"role":"user","content":"x"}],"user":"fallback",
                "extra":{"user":{"user_id":"u-1","name":"Ada","tags":["beta","eu"]},"metadata":{"team":"ml","n":3}}}"#,
        );
        assert_eq!(user.id.as_deref(), Some("u-1"));
        assert_eq!(user.name.as_deref(), Some("Ada"));
        assert_eq!(user.tags, ["beta", "eu"]);
        assert_eq!(
            user.metadata,
            [
                ("team".to_owned(), "ml".to_owned()),
                ("n".to_owned(), "3".to_owned())
            ]
        );
        let user =
            parse(r#"{"model":"m","messages":[{"role":"user","content":"x"}],"user":"fallback"}"#);
        assert_eq!(user.id.as_deref(), Some("fallback"));
    }

    #[test]
    fn malformed_json_is_invalid_json() {
        assert!(matches!(
            ClientRequest::parse(Operation::ChatCompletions, b"{not json"),
            Err(ApiError::InvalidJson(_))
        ));
    }
}
