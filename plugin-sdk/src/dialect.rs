//! The traits a dialect plugin implements ([`Dialect`], [`StreamEncoder`]), typed [`Failure`]s,
//! and the adapter to the generated bindings.

use core::cell::RefCell;
use core::marker::PhantomData;

use crate::wit::dialect::{Guest, GuestStreamEncoder};
use crate::{
    AnswerInfo, Call, Declaration, Decoded, ErrorKind, Event, Failure, Route, RouteKind, Usage,
    error_kind_for_status,
};

/// A dialect plugin: translates one client API (Anthropic's Messages, OpenAI's Responses, ...)
/// to the canonical Chat Completions form and its answers back. The host calls each function on
/// a fresh instance, so implementations are types without values (`struct Messages;`) and
/// everything arrives as arguments; a stream's state lives in its [`StreamEncoder`].
pub trait Dialect: 'static {
    /// Re-encodes canonical streams as the dialect's events.
    type Encoder: StreamEncoder;

    /// The dialect's name, routes and key sources, read once per config load.
    fn describe() -> Declaration;

    /// Decodes a request on one of its `call` or `count-tokens` routes into canonical JSON.
    /// Fields the canonical form cannot carry are dropped and named in [`Decoded::dropped`], not
    /// failed on.
    fn decode(call: &Call) -> Result<Decoded, Failure>;

    /// Encodes a complete canonical answer (`chat.completion` JSON) as the dialect's response
    /// body. `usage` is the host's count, when it has one; it takes precedence over the body's.
    fn encode(info: &AnswerInfo, completion: &str, usage: Option<Usage>)
    -> Result<String, Failure>;

    /// The body of an error response with HTTP `status`, in the dialect's shape.
    fn encode_error(status: u16, error: &Failure) -> String;

    /// The body answering a `count-tokens` route. The default is Anthropic's
    /// `{"input_tokens": n}`.
    fn encode_count(info: &AnswerInfo, tokens: u32) -> String {
        let _ = info;
        serde_json::json!({ "input_tokens": tokens }).to_string()
    }

    /// The body answering a `list-models` or `get-model` route from OpenAI's model `list`. The
    /// default passes the list on as it is.
    fn encode_models(route: &str, models: &str) -> Result<String, Failure> {
        let _ = route;
        Ok(models.to_owned())
    }
}

/// Re-encodes one canonical stream (`chat.completion.chunk` JSON, one per push) as the
/// dialect's server-sent events. One value lives as long as its stream.
pub trait StreamEncoder: Sized + 'static {
    /// Starts the stream answering the request described by `info`.
    fn new(info: AnswerInfo) -> Self;

    /// Takes the next canonical chunk and returns the events it completes (possibly none).
    fn push(&mut self, chunk: &str) -> Result<Vec<Event>, Failure>;

    /// The upstream stream ended, with the host's final `usage` if it has one: the closing
    /// events.
    fn finish(&mut self, usage: Option<Usage>) -> Result<Vec<Event>, Failure>;

    /// The stream broke after it started: the events that tell the client so.
    fn fail(&mut self, status: u16, error: &Failure) -> Vec<Event>;
}

/// The [`StreamEncoder`] of a dialect without streams: every push fails, and so does the end,
/// so that a stream the host should not have started tells the client so.
#[derive(Debug)]
pub struct NoStreamEncoder;

impl StreamEncoder for NoStreamEncoder {
    fn new(_: AnswerInfo) -> Self {
        NoStreamEncoder
    }

    fn push(&mut self, _: &str) -> Result<Vec<Event>, Failure> {
        Err(Failure::invalid_request("this dialect does not stream"))
    }

    fn finish(&mut self, _: Option<Usage>) -> Result<Vec<Event>, Failure> {
        Err(Failure::invalid_request("this dialect does not stream"))
    }

    fn fail(&mut self, _: u16, _: &Failure) -> Vec<Event> {
        Vec::new()
    }
}

impl Failure {
    /// A failure of `kind` with a client-facing `message`, OpenAI's `type` for the kind (as the
    /// host writes its own errors), and no code or param.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Failure {
            kind,
            message: message.into(),
            openai_type: openai_type(kind).to_owned(),
            code: None,
            param: None,
        }
    }

    /// The request is malformed (400).
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidRequest, message)
    }

    /// The answer to encode could not be understood (502): a provider plugin wrote something
    /// that is not canonical.
    pub fn upstream(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Upstream, message)
    }

    /// A failure for an HTTP `status`, of the kind that status means.
    pub fn for_status(status: u16, message: impl Into<String>) -> Self {
        Self::new(error_kind_for_status(status), message)
    }

    /// Names the request parameter at fault, as a dotted path (`messages[2].content`).
    #[must_use]
    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// Sets a machine-readable code.
    #[must_use]
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }
}

/// OpenAI's error `type` for a kind, the same the host uses for its own errors.
pub fn openai_type(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidRequest | ErrorKind::NotFound => "invalid_request_error",
        ErrorKind::Authentication => "authentication_error",
        ErrorKind::PermissionDenied => "permission_error",
        ErrorKind::RateLimited => "rate_limit_error",
        ErrorKind::Upstream | ErrorKind::Timeout => "api_error",
    }
}

impl Event {
    /// An event with an `event:` name and JSON `data`.
    pub fn named(name: impl Into<String>, data: &serde_json::Value) -> Self {
        Event {
            name: name.into(),
            data: data.to_string(),
        }
    }
}

/// The type [`export_dialect!`](crate::export_dialect) exports for a dialect `D`.
pub struct DialectAdapter<D>(PhantomData<D>);

impl<D: Dialect> Guest for DialectAdapter<D> {
    type StreamEncoder = EncoderResource<D::Encoder>;

    fn describe() -> Declaration {
        D::describe()
    }

    fn decode(call: Call) -> Result<Decoded, Failure> {
        D::decode(&call)
    }

    fn encode(
        info: AnswerInfo,
        completion: String,
        usage: Option<Usage>,
    ) -> Result<String, Failure> {
        D::encode(&info, &completion, usage)
    }

    fn encode_error(status: u16, error: Failure) -> String {
        D::encode_error(status, &error)
    }

    fn encode_count(info: AnswerInfo, tokens: u32) -> String {
        D::encode_count(&info, tokens)
    }

    fn encode_models(route: String, models: String) -> Result<String, Failure> {
        D::encode_models(&route, &models)
    }
}

/// A stream encoder as a WIT resource. Resource methods get `&self`, and an encoder is called by
/// one host task at a time, so a `RefCell` gives it the `&mut self` it wants.
pub struct EncoderResource<E>(RefCell<E>);

impl<E: StreamEncoder> GuestStreamEncoder for EncoderResource<E> {
    fn new(info: AnswerInfo) -> Self {
        EncoderResource(RefCell::new(E::new(info)))
    }

    fn push(&self, chunks: Vec<String>) -> Result<Vec<Event>, Failure> {
        let mut encoder = self.0.borrow_mut();
        let mut events = Vec::new();
        for chunk in &chunks {
            events.extend(encoder.push(chunk)?);
        }
        Ok(events)
    }

    fn finish(&self, usage: Option<Usage>) -> Result<Vec<Event>, Failure> {
        self.0.borrow_mut().finish(usage)
    }

    fn fail(&self, status: u16, error: Failure) -> Vec<Event> {
        self.0.borrow_mut().fail(status, &error)
    }
}

impl Call {
    /// The value of the path or query parameter `name`, if the request has it.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// A request on `route` with `body` and no parameters. For tests and single-route dialects.
    pub fn new(route: impl Into<String>, body: impl Into<String>) -> Self {
        Call {
            route: route.into(),
            params: Vec::new(),
            body: body.into(),
        }
    }
}

impl Route {
    /// A route of `kind` named `name`, for `method` and `path`.
    pub fn new(method: &str, path: &str, name: &str, kind: RouteKind) -> Self {
        Route {
            method: method.to_owned(),
            path: path.to_owned(),
            name: name.to_owned(),
            kind,
        }
    }
}

impl AnswerInfo {
    /// What the encoders are told of a request for `model` whose answer has the id `id`: created
    /// at 0, no estimate of the prompt's tokens, no echo. For tests, with struct update syntax.
    pub fn new(model: impl Into<String>, id: impl Into<String>) -> Self {
        AnswerInfo {
            route: String::new(),
            model: model.into(),
            id: id.into(),
            created: 0,
            estimated_input_tokens: 0,
            echo: String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Canonical, Framing};

    struct Upper;

    /// Streams each chunk back upper-cased, and counts them at the end.
    struct Count(u32);

    impl StreamEncoder for Count {
        fn new(_: AnswerInfo) -> Self {
            Count(0)
        }

        fn push(&mut self, chunk: &str) -> Result<Vec<Event>, Failure> {
            self.0 += 1;
            Ok(vec![Event {
                name: String::new(),
                data: chunk.to_uppercase(),
            }])
        }

        fn finish(&mut self, _: Option<Usage>) -> Result<Vec<Event>, Failure> {
            Ok(vec![Event::named("done", &serde_json::json!(self.0))])
        }

        fn fail(&mut self, status: u16, error: &Failure) -> Vec<Event> {
            vec![Event::named(
                "error",
                &serde_json::json!([status, error.message]),
            )]
        }
    }

    impl Dialect for Upper {
        type Encoder = Count;

        fn describe() -> Declaration {
            Declaration {
                name: "upper".into(),
                routes: vec![Route::new("POST", "/upper", "upper", RouteKind::Call)],
                keys: Vec::new(),
                typed_events: false,
                answer_id_prefix: "up_".into(),
                chains_turns: false,
                native_answers_guarded: true,
            }
        }

        fn decode(call: &Call) -> Result<Decoded, Failure> {
            let body = call.body.as_str();
            if body.is_empty() {
                return Err(Failure::invalid_request("empty").with_param("body"));
            }
            Ok(Decoded {
                operation: Canonical::ChatCompletions,
                framing: Framing::Sse,
                model: body.to_owned(),
                stream: false,
                body: body.to_uppercase(),
                dropped: Vec::new(),
                echo: String::new(),
            })
        }

        fn encode(
            info: &AnswerInfo,
            completion: &str,
            _: Option<Usage>,
        ) -> Result<String, Failure> {
            Ok(format!("{}:{}", info.id, completion.to_uppercase()))
        }

        fn encode_error(status: u16, error: &Failure) -> String {
            format!("{status} {}", error.openai_type)
        }
    }

    type Adapter = DialectAdapter<Upper>;

    #[test]
    fn adapter_calls_the_dialect() {
        assert_eq!(
            Adapter::decode(Call::new("upper", "ab")).unwrap().body,
            "AB"
        );
        let err = Adapter::decode(Call::new("upper", "")).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("body"));
        assert_eq!(err.openai_type, "invalid_request_error");
        let info = AnswerInfo::new("m", "id1");
        assert_eq!(Adapter::encode(info, "x".into(), None).unwrap(), "id1:X");
        let failure = Failure::for_status(429, "slow down");
        assert_eq!(failure.kind, ErrorKind::RateLimited);
        assert_eq!(Adapter::encode_error(429, failure), "429 rate_limit_error");
    }

    #[test]
    fn encoder_resource_keeps_state_between_calls() {
        let encoder = EncoderResource::<Count>::new(AnswerInfo::new("m", "id1"));
        assert_eq!(encoder.push(vec!["a".into()]).unwrap()[0].data, "A");
        // A read's chunks in one call: each encoded in order.
        let both = encoder.push(vec!["b".into(), "c".into()]).unwrap();
        let data: Vec<&str> = both.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, ["B", "C"]);
        let end = encoder.finish(None).unwrap();
        assert_eq!((end[0].name.as_str(), end[0].data.as_str()), ("done", "3"));
        let failed = encoder.fail(502, Failure::upstream("gone"));
        assert_eq!(failed[0].data, r#"[502,"gone"]"#);
    }

    #[test]
    fn failures_carry_openai_types() {
        let cases = [
            (ErrorKind::InvalidRequest, "invalid_request_error"),
            (ErrorKind::NotFound, "invalid_request_error"),
            (ErrorKind::Authentication, "authentication_error"),
            (ErrorKind::PermissionDenied, "permission_error"),
            (ErrorKind::RateLimited, "rate_limit_error"),
            (ErrorKind::Upstream, "api_error"),
            (ErrorKind::Timeout, "api_error"),
        ];
        for (kind, expected) in cases {
            assert_eq!(Failure::new(kind, "m").openai_type, expected, "{kind:?}");
        }
        let failure = Failure::invalid_request("m").with_code("c").with_param("p");
        assert_eq!(failure.code.as_deref(), Some("c"));
        assert_eq!(failure.param.as_deref(), Some("p"));
    }
}
