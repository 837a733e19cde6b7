//! Parsing and validating client requests into the canonical form plugins receive.
//!
//! The body is split once into its top-level fields as raw JSON text, in order (see
//! [`super::raw_json`]: no tree of it is built): the fields the gateway relies on are checked by
//! type, walking arrays one element at a time, and everything else is forwarded untouched.

use serde_json::value::RawValue;

use super::check::{Check, check_model, invalid, missing, wrong_type};
use super::end_user::UserInfo;
use super::raw_json::{self, Fields, Kind, MAX_FIELDS, Unreadable};
use crate::clip::echo;
use crate::error::ApiError;
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
    body: Fields,
    /// The file of a multipart upload (audio), beside its text fields in `body`.
    pub upload: Option<crate::upstream::Upload>,
}

impl ClientRequest {
    /// A request not read yet: no model, no body, nobody. What a context holds until `parse`.
    pub fn unparsed(operation: Operation) -> Self {
        Self {
            operation,
            model: String::new(),
            stream: false,
            client_wants_usage: false,
            user: UserInfo::default(),
            body: Fields::new(),
            upload: None,
        }
    }

    /// A multipart upload's request: its text fields as `body`, its file beside them.
    pub(in crate::pipeline) fn from_form(
        operation: Operation,
        model: String,
        stream: bool,
        body: Fields,
        upload: crate::upstream::Upload,
    ) -> Self {
        Self {
            model,
            stream,
            body,
            upload: Some(upload),
            ..Self::unparsed(operation)
        }
    }

    /// A top-level string field of the body (e.g. an upload's `response_format`).
    pub fn string_field(&self, name: &str) -> Option<String> {
        self.body.get(name).and_then(|raw| raw_json::string(raw))
    }

    /// The body's size as its fields' raw JSON (names and values), in bytes.
    pub fn body_bytes(&self) -> usize {
        self.body
            .iter()
            .map(|(name, raw)| name.len() + raw.get().len())
            .sum()
    }

    /// Lets the body go once it has been sent (a stream's context lives as long as the
    /// stream; its body need not). The model, the user and the flags stay.
    pub fn release_body(&mut self) {
        self.body = Fields::new();
    }

    pub fn parse(operation: Operation, bytes: &[u8]) -> Result<Self, ApiError> {
        let mut body = raw_json::object(bytes, MAX_FIELDS).map_err(|e| match e {
            Unreadable::Syntax(_) | Unreadable::NotAnObject | Unreadable::TooDeep => {
                ApiError::InvalidJson(e.to_string())
            }
            Unreadable::TooManyFields => ApiError::InvalidJson(format!("the body: {e}")),
        })?;
        let model = match body.get("model") {
            Some(raw) => match raw_json::string(raw) {
                Some(m) if !m.is_empty() => m,
                Some(_) => return Err(invalid("model", "'model' must not be empty.")),
                None => return Err(wrong_type("model", "a string", Kind::of(raw))),
            },
            None => return Err(missing("model")),
        };
        check_model(&model)?;
        let stream = match body.get("stream") {
            None => false,
            Some(raw) => match (Kind::of(raw), raw.get().trim()) {
                (Kind::Null, _) => false,
                (Kind::Bool, text) => text == "true",
                (other, _) => return Err(wrong_type("stream", "a boolean", other)),
            },
        };
        match operation {
            Operation::ChatCompletions => validate_chat(&body)?,
            Operation::Embeddings => validate_embeddings(&body)?,
            Operation::ImageGenerations => validate_images(&body)?,
            Operation::Completions => super::operations::completions(&body)?,
            Operation::Moderations => super::operations::moderations(&body)?,
            Operation::Rerank => super::operations::rerank(&body)?,
            Operation::AudioSpeech => super::operations::speech(&body)?,
            // Uploads are read by `upload.rs`, not here.
            Operation::ListModels
            | Operation::AudioTranscriptions
            | Operation::AudioTranslations => {}
        }
        let streams = matches!(
            operation,
            Operation::ChatCompletions | Operation::Completions
        );
        if stream && !streams {
            return Err(invalid(
                "stream",
                "Streaming is only supported for chat and text completions.",
            ));
        }
        let mut options = match body.get("stream_options") {
            None => None,
            Some(raw) => match Kind::of(raw) {
                Kind::Null => None,
                Kind::Object => Some(raw_json::fields(raw, MAX_FIELDS).map_err(|e| {
                    invalid("stream_options", &format!("Invalid 'stream_options': {e}."))
                })?),
                other => return Err(wrong_type("stream_options", "an object", other)),
            },
        };
        let client_wants_usage = match options.as_ref().and_then(|o| o.get("include_usage")) {
            None => false,
            Some(raw) => match (Kind::of(raw), raw.get().trim()) {
                (Kind::Null, _) => false,
                (Kind::Bool, text) => text == "true",
                (other, _) => {
                    return Err(wrong_type(
                        "stream_options.include_usage",
                        "a boolean",
                        other,
                    ));
                }
            },
        };
        if stream {
            // Always ask the upstream for usage, so streamed requests are never recorded at $0.
            let options = options.get_or_insert_with(Fields::new);
            options.insert("include_usage".to_owned(), raw_json_true());
            if let Ok(raw) = serde_json::value::to_raw_value(options) {
                body.insert("stream_options".to_owned(), raw);
            }
        }
        let user = UserInfo::from_body(&body)?;
        // Gateway-only metadata (users, tags) is never forwarded upstream.
        body.shift_remove("extra");
        Ok(Self {
            operation,
            model,
            stream,
            client_wants_usage,
            user,
            body,
            upload: None,
        })
    }

    /// The body's top-level fields as the target would get them (the cache's key).
    pub fn fields(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        self.body.iter().map(|(name, raw)| (name.as_str(), &**raw))
    }

    /// The output cap the client asked for (`max_completion_tokens`, else `max_tokens`).
    pub fn max_output_tokens(&self) -> Option<u32> {
        ["max_completion_tokens", "max_tokens"]
            .iter()
            .find_map(|k| self.body.get(*k).and_then(|raw| raw_json::integer(raw)))
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// The prompt's tokens by the host's tokenizer: message texts for chat, the input for
    /// embeddings, the prompt for images. Template tokens are not counted.
    pub fn estimate_input_tokens(&self, tokenizer: crate::tokenizer::Tokenizer) -> u32 {
        let count = |text: &str| tokenizer.count(text);
        ["messages", "input", "prompt"]
            .iter()
            .filter_map(|key| self.body.get(*key))
            .map(|raw| raw_json::count_texts(raw, &count))
            .fold(0, u32::saturating_add)
    }

    /// The prompt as the client sent it (`messages`, `input` or `prompt`), as JSON: for the log
    /// line, when the operator turned `observability.log_prompts` on.
    pub fn prompt_json(&self) -> String {
        ["messages", "input", "prompt"]
            .iter()
            .find_map(|k| self.body.get(*k))
            .map(|raw| raw_json::compact(raw))
            .unwrap_or_default()
    }

    /// The request as Chat Completions JSON, as guards see it.
    pub fn body_json(&self) -> String {
        write_fields(&self.body)
    }

    /// The request a guard rewrote into `body`, checked like a client's; its model, stream and
    /// user stay the client's own.
    pub fn rewritten(&self, body: &str) -> Result<Self, ApiError> {
        let mut request = Self::parse(Operation::ChatCompletions, body.as_bytes())?;
        request.operation = self.operation;
        request.model.clone_from(&self.model);
        request.client_wants_usage = self.client_wants_usage;
        request.user = self.user_after(request.string_field("user"));
        if let Ok(model) = serde_json::value::to_raw_value(&self.model) {
            request.body.insert("model".to_owned(), model);
        }
        if request.stream != self.stream {
            return Err(invalid("stream", "a guard may not change `stream`."));
        }
        Ok(request)
    }

    /// The request with `body` (a guard's rewrite of a request that is not a chat's: the same
    /// fields, some strings changed) as its fields; its model, stream, user and upload stay.
    pub fn with_body(mut self, body: &serde_json::Value) -> Result<Self, ApiError> {
        let serde_json::Value::Object(fields) = body else {
            return Err(ApiError::InvalidJson(
                "a guard's rewrite is not an object".to_owned(),
            ));
        };
        let mut rewritten = Fields::new();
        for (name, value) in fields {
            let raw = serde_json::value::to_raw_value(value)
                .map_err(|e| ApiError::InvalidJson(e.to_string()))?;
            rewritten.insert(name.clone(), raw);
        }
        if let Some(model) = self.body.get("model") {
            rewritten.insert("model".to_owned(), model.clone());
        }
        let user = self.user_after(rewritten.get("user").and_then(|raw| raw_json::string(raw)));
        self.body = rewritten;
        self.user = user;
        Ok(self)
    }

    /// The end user of a guard's rewrite of this request, whose `user` is `rewritten_user`:
    /// this one's, but for an id taken from the body's `user`, which becomes the rewritten one
    /// (the ledger keeps what the upstream was sent, never the value a guard took out).
    fn user_after(&self, rewritten_user: Option<String>) -> UserInfo {
        let mut user = self.user.clone();
        let client_user = self.string_field("user");
        if client_user.is_some() && user.id == client_user {
            user.id = rewritten_user;
        }
        user
    }

    /// The canonical request for the upstream model name `upstream_model`.
    pub fn canonical(&mut self, upstream_model: &str) -> CanonicalRequest {
        if let Ok(model) = serde_json::value::to_raw_value(upstream_model) {
            self.body.insert("model".to_owned(), model);
        }
        let body = write_fields(&self.body);
        CanonicalRequest {
            native: None,
            operation: self.operation,
            model: upstream_model.to_owned(),
            body,
            stream: self.stream,
            headers: Vec::new(),
        }
    }
}

/// `fields` as one JSON object, written into a buffer sized for it at once (grown by
/// doubling, a 1 KiB body took eight allocations and copies).
fn write_fields(fields: &Fields) -> String {
    // Each field: its quoted name, a colon, its raw value and a comma, plus the braces.
    let size = 2 + fields
        .iter()
        .map(|(name, raw)| name.len() + raw.get().len() + 4)
        .sum::<usize>();
    let mut buffer = Vec::with_capacity(size);
    match serde_json::to_writer(&mut buffer, fields) {
        // serde_json writes only valid UTF-8.
        Ok(()) => String::from_utf8(buffer).unwrap_or_else(|_| "{}".to_owned()),
        Err(_) => "{}".to_owned(),
    }
}

fn raw_json_true() -> Box<RawValue> {
    RawValue::from_string("true".to_owned()).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

fn validate_chat(body: &Fields) -> Result<(), ApiError> {
    let messages = match body.get("messages") {
        Some(raw) if Kind::of(raw) == Kind::Array => raw,
        Some(raw) => return Err(wrong_type("messages", "an array", Kind::of(raw))),
        None => return Err(missing("messages")),
    };
    let mut count = 0;
    raw_json::each(messages, |i, message| {
        count += 1;
        if Kind::of(message) != Kind::Object {
            return Err(wrong_type(
                &format!("messages[{i}]"),
                "an object",
                Kind::of(message),
            ));
        }
        let [role, content] = raw_json::pick(message, ["role", "content"]);
        match role.map(|raw| (Kind::of(raw), raw_json::string(raw))) {
            Some((_, Some(role)))
                if matches!(
                    role.as_str(),
                    "system" | "developer" | "user" | "assistant" | "tool" | "function"
                ) => {}
            Some((_, Some(role))) => {
                return Err(invalid(
                    &format!("messages[{i}].role"),
                    &format!(
                        "Invalid value for 'messages[{i}].role': '{}'. Supported values are: \
                         'system', 'developer', 'user', 'assistant', 'tool' and 'function'.",
                        echo(&role)
                    ),
                ));
            }
            Some((kind, None)) => {
                return Err(wrong_type(&format!("messages[{i}].role"), "a string", kind));
            }
            None => return Err(missing(&format!("messages[{i}].role"))),
        }
        match content.map(Kind::of) {
            None | Some(Kind::Null | Kind::String | Kind::Array) => Ok(()),
            Some(other) => Err(wrong_type(
                &format!("messages[{i}].content"),
                "a string or an array",
                other,
            )),
        }
    })?;
    if count == 0 {
        return Err(invalid(
            "messages",
            "Invalid 'messages': empty array. Expected an array with minimum length 1.",
        ));
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
    if let Some(tools) = body.get("tools") {
        raw_json::each(tools, |i, tool| {
            let [function] = raw_json::pick(tool, ["function"]);
            let [name] = function.map_or([None], |f| raw_json::pick(f, ["name"]));
            match name.map(Kind::of) {
                Some(Kind::String) => Ok(()),
                _ => Err(missing(&format!("tools[{i}].function.name"))),
            }
        })?;
    }
    match body.get("stop").map(|raw| Kind::of(raw)) {
        None | Some(Kind::Null | Kind::String | Kind::Array) => Ok(()),
        Some(other) => Err(wrong_type("stop", "a string or an array", other)),
    }
}

fn validate_embeddings(body: &Fields) -> Result<(), ApiError> {
    match body.get("input").map(|raw| (Kind::of(raw), raw)) {
        Some((Kind::String, _)) => {}
        Some((Kind::Array, raw)) => {
            let mut empty = true;
            // One element is enough to know: the walk stops there.
            let _ = raw_json::each(raw, |_, _| {
                empty = false;
                Err(())
            });
            if empty {
                return Err(invalid("input", "'input' must not be an empty array."));
            }
        }
        Some((other, _)) => return Err(wrong_type("input", "a string or an array", other)),
        None => return Err(missing("input")),
    }
    Check::PositiveInteger.apply(body, "dimensions")
}

fn validate_images(body: &Fields) -> Result<(), ApiError> {
    match body.get("prompt") {
        Some(raw) => match raw_json::string(raw) {
            Some(p) if !p.is_empty() => {}
            Some(_) => return Err(invalid("prompt", "'prompt' must not be empty.")),
            None => return Err(wrong_type("prompt", "a string", Kind::of(raw))),
        },
        None => return Err(missing("prompt")),
    }
    Check::PositiveInteger.apply(body, "n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

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

#[cfg(test)]
/// The smaller endpoints' checks (`operations.rs`), through the parse that runs them.
mod operations {
    use super::ClientRequest;
    use crate::error::ApiError;
    use crate::plugins::Operation;

    fn param_of(op: Operation, body: &str) -> String {
        match ClientRequest::parse(op, body.as_bytes()) {
            Err(ApiError::InvalidField { param, .. }) => param,
            Err(other) => format!("other: {other}"),
            Ok(_) => "ok".to_owned(),
        }
    }

    #[test]
    fn names_the_field_at_fault() {
        let completions = Operation::Completions;
        assert_eq!(param_of(completions, r#"{"model":"m"}"#), "prompt");
        assert_eq!(
            param_of(completions, r#"{"model":"m","prompt":3}"#),
            "prompt"
        );
        assert_eq!(
            param_of(completions, r#"{"model":"m","prompt":"hi","stream":true}"#),
            "ok"
        );
        assert_eq!(
            param_of(Operation::Moderations, r#"{"model":"m","input":[]}"#),
            "input"
        );
        assert_eq!(
            param_of(Operation::Moderations, r#"{"input":"x"}"#),
            "model"
        );
        let rerank = Operation::Rerank;
        assert_eq!(
            param_of(rerank, r#"{"model":"m","documents":["a"]}"#),
            "query"
        );
        assert_eq!(
            param_of(rerank, r#"{"model":"m","query":"q","documents":[]}"#),
            "documents"
        );
        assert_eq!(
            param_of(
                rerank,
                r#"{"model":"m","query":"q","documents":["a"],"top_n":0}"#
            ),
            "top_n"
        );
        assert_eq!(
            param_of(
                rerank,
                r#"{"model":"m","query":"q","documents":["a"],"stream":true}"#
            ),
            "stream"
        );
        let speech = Operation::AudioSpeech;
        assert_eq!(param_of(speech, r#"{"model":"m","input":"hi"}"#), "voice");
        assert_eq!(
            param_of(
                speech,
                r#"{"model":"m","input":"hi","voice":"alloy","response_format":"ogg"}"#
            ),
            "response_format"
        );
        let long = format!(
            r#"{{"model":"m","input":"{}","voice":"alloy"}}"#,
            "a".repeat(4097)
        );
        assert_eq!(param_of(speech, &long), "input");
    }
}
