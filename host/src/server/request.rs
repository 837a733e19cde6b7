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
    body: Map<String, Value>,
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
        // Gateway-only metadata (users, tags) is never forwarded upstream.
        body.remove("extra");
        Ok(Self {
            operation,
            model,
            stream,
            client_wants_usage,
            body,
        })
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
    fn malformed_json_is_invalid_json() {
        assert!(matches!(
            ClientRequest::parse(Operation::ChatCompletions, b"{not json"),
            Err(ApiError::InvalidJson(_))
        ));
    }
}
