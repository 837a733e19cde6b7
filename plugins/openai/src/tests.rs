//! Native unit tests of the translation (`cargo test --target x86_64-unknown-linux-gnu`).

use wasmgate_plugin_sdk::calls::{describe, native_dialects, passthrough, prepare, validate};
use wasmgate_plugin_sdk::{ErrorKind, HttpRequest, NativeCall, Operation, ProviderConfig};

use super::*;

#[test]
fn cases() {
    wasmgate_plugin_testkit::run_cases::<OpenAi>(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases"),
        "openai",
    );
}

#[test]
fn it_describes_its_default_and_telemetry_name() {
    let described = describe::<OpenAi>(&config(None, None, "{}"));
    let default = described.default_base_url.as_deref();
    assert_eq!(default, Some("https://api.openai.com/v1"));
    assert_eq!(described.system.as_deref(), Some("openai"));
}

#[test]
fn responses_are_native_for_openai_itself_and_where_the_option_says() {
    let native = |url: Option<&str>, options: &str| {
        native_dialects::<OpenAi>(&config(url, None, options)).contains(&RESPONSES.to_owned())
    };
    let local = Some("http://127.0.0.1:8000/v1");
    assert!(native(None, "{}"));
    assert!(native(Some("https://API.openai.com/v1/"), "{}"));
    assert!(!native(
        Some("https://api.openai.com.evil.example/v1"),
        "{}"
    ));
    assert!(!native(local, "{}"));
    assert!(native(local, r#"{"responses": "native"}"#));
    assert!(!native(None, r#"{"responses": "translate"}"#));
    assert_eq!(
        native_dialects::<OpenAi>(&config(local, None, r#"{"batches": true}"#)),
        vec![BATCHES_DIALECT.to_owned()]
    );
    let err = validate::<OpenAi>(&config(None, None, r#"{"responses": "yes"}"#)).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("responses"));
}

#[test]
fn websocket_mode_is_declared_for_openai_itself_and_where_the_option_says() {
    let socket = |url: Option<&str>, options: &str| {
        native_dialects::<OpenAi>(&config(url, None, options))
            .contains(&RESPONSES_WEBSOCKET.to_owned())
    };
    let local = Some("http://127.0.0.1:8000/v1");
    assert!(socket(None, "{}"));
    assert!(!socket(None, r#"{"websocket": false}"#));
    assert!(!socket(local, r#"{"responses": "native"}"#));
    assert!(socket(
        local,
        r#"{"responses": "native", "websocket": true}"#
    ));
    // Only with the Responses API served natively.
    assert!(!socket(local, r#"{"websocket": true}"#));
    assert!(!socket(None, r#"{"responses": "translate"}"#));
}

#[test]
fn openai_beta_goes_only_with_responses() {
    let cfg = config(None, Some("sk"), "{}");
    let mut req = request(Operation::ChatCompletions, "{}", false);
    req.headers = vec![("openai-beta".into(), "x=1".into())];
    let http = upstream(prepare::<OpenAi>(&cfg, req.clone()).unwrap());
    assert_eq!(header(&http, "openai-beta"), None);
    req.native = Some(NativeCall {
        dialect: RESPONSES.into(),
        route: "responses".into(),
        params: Vec::new(),
    });
    let http = upstream(prepare::<OpenAi>(&cfg, req.clone()).unwrap());
    assert_eq!(header(&http, "openai-beta"), Some("x=1"));
    assert!(http.url.ends_with("/v1/responses"), "{}", http.url);
    req.headers = vec![("openai-beta".into(), "x\r\nevil: 1".into())];
    let err = prepare::<OpenAi>(&cfg, req).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidRequest);
}

#[test]
fn validate_accepts_defaults_and_all_options() {
    assert!(validate::<OpenAi>(&config(None, None, "{}")).is_ok());
    let options = r#"{"organization": "org-1", "project": "proj-1",
        "headers": {"x-extra": "1"}, "auth_header": "api-key"}"#;
    assert!(validate::<OpenAi>(&config(Some("http://localhost:8000/v1"), None, options)).is_ok());
}

#[test]
fn validate_names_the_bad_key() {
    let bad = |base_url: Option<&str>, options: &str| {
        validate::<OpenAi>(&config(base_url, None, options)).unwrap_err()
    };
    assert_eq!(
        bad(Some("localhost:8000"), "{}").key.as_deref(),
        Some("base_url")
    );
    assert_eq!(
        bad(Some("http://h/v1?x=1"), "{}").key.as_deref(),
        Some("base_url")
    );
    let err = bad(None, r#"{"org": "x"}"#);
    assert_eq!(err.key.as_deref(), Some("org"));
    assert!(err.message.contains("`organization`"), "{}", err.message);
    assert_eq!(
        bad(None, r#"{"project": 7}"#).key.as_deref(),
        Some("project")
    );
    assert_eq!(
        bad(None, r#"{"project": "a\nb"}"#).key.as_deref(),
        Some("project")
    );
    assert_eq!(
        bad(None, r#"{"headers": {"x": "a\nb"}}"#).key.as_deref(),
        Some("headers.x")
    );
    assert_eq!(
        bad(None, r#"{"auth_header": "a b"}"#).key.as_deref(),
        Some("auth_header")
    );
}

#[test]
fn chat_goes_to_chat_completions_with_the_body_untouched() {
    let body = r#"{"model":"gpt-4o-mini",  "messages":[{"role":"user","content":"hi"}]}"#;
    let cfg = config(None, Some("sk-test"), "{}");
    let req = request(Operation::ChatCompletions, body, false);
    let http = upstream(prepare::<OpenAi>(&cfg, req).unwrap());
    assert_eq!(http.method, "POST");
    assert_eq!(http.url, "https://api.openai.com/v1/chat/completions");
    assert_eq!(http.body, body.as_bytes());
    assert_eq!(header(&http, "content-type"), Some("application/json"));
    assert_eq!(header(&http, "authorization"), Some("Bearer sk-test"));
    assert_eq!(header(&http, "accept"), None);
}

#[test]
fn streaming_asks_for_an_event_stream() {
    let req = request(Operation::ChatCompletions, "{}", true);
    let http = upstream(prepare::<OpenAi>(&config(None, None, "{}"), req).unwrap());
    assert_eq!(header(&http, "accept"), Some("text/event-stream"));
    assert_eq!(
        header(&http, "authorization"),
        None,
        "no key, no auth header"
    );
}

#[test]
fn each_operation_has_its_endpoint() {
    let cfg = config(Some("http://127.0.0.1:9/v1/"), None, "{}");
    let cases = [
        (
            Operation::Embeddings,
            "POST",
            "http://127.0.0.1:9/v1/embeddings",
        ),
        (
            Operation::ImageGenerations,
            "POST",
            "http://127.0.0.1:9/v1/images/generations",
        ),
        (Operation::ListModels, "GET", "http://127.0.0.1:9/v1/models"),
    ];
    for (operation, method, url) in cases {
        let http = upstream(prepare::<OpenAi>(&cfg, request(operation, "{}", false)).unwrap());
        assert_eq!((http.method.as_str(), http.url.as_str()), (method, url));
    }
    let req = request(Operation::ListModels, "{}", false);
    assert!(
        upstream(prepare::<OpenAi>(&cfg, req).unwrap())
            .body
            .is_empty()
    );
}

#[test]
fn options_become_headers() {
    let options = r#"{"organization": "org-1", "project": "proj-1", "auth_header": "API-Key",
        "headers": {"x-extra": "1", "OpenAI-Project": "override"}}"#;
    let cfg = config(None, Some("azure-key"), options);
    let req = request(Operation::ChatCompletions, "{}", false);
    let http = upstream(prepare::<OpenAi>(&cfg, req).unwrap());
    assert_eq!(header(&http, "api-key"), Some("azure-key"));
    assert_eq!(header(&http, "authorization"), None);
    assert_eq!(header(&http, "openai-organization"), Some("org-1"));
    assert_eq!(header(&http, "openai-project"), Some("override"));
    assert_eq!(header(&http, "x-extra"), Some("1"));
}

/// What the host sends for a plain operation (`plain-operation` in the contract) is what
/// `prepare` sends: the same URL, body and headers in the same order.
#[test]
fn plain_operations_are_sent_as_prepare_sends_them() {
    let options = r#"{"organization": "org-1", "project": "proj-1",
        "headers": {"x-extra": "1", "OpenAI-Project": "override", "accept": "x/y"}}"#;
    let cfg = config(Some("http://127.0.0.1:9/v1"), Some("sk-1"), options);
    let plain = describe::<OpenAi>(&cfg).plain;
    let ops: Vec<Operation> = plain.iter().map(|p| p.operation).collect();
    let expected = [
        Operation::ChatCompletions,
        Operation::Embeddings,
        Operation::Completions,
    ];
    assert_eq!(ops, expected);
    for op in plain {
        let call = PassthroughCall {
            method: "POST".into(),
            path: format!("/{}", op.path),
            headers: vec![],
        };
        let auth = passthrough::<OpenAi>(&cfg, &call).unwrap();
        assert!(auth.query.is_empty());
        for stream in [false, true] {
            let body = r#"{"model":"gpt-4o-mini","input":"hi"}"#;
            let sent =
                upstream(prepare::<OpenAi>(&cfg, request(op.operation, body, stream)).unwrap());
            let mut host =
                HttpRequest::post_json(format!("http://127.0.0.1:9/v1/{}", op.path), body);
            if stream {
                host.set_header("accept", "text/event-stream");
            }
            for (name, value) in &auth.headers {
                host.set_header(name.as_str(), value.as_str());
            }
            assert_eq!(sent, host, "{:?} stream={stream}", op.operation);
        }
    }
}

fn config(base_url: Option<&str>, api_key: Option<&str>, options: &str) -> ProviderConfig {
    ProviderConfig {
        name: "openai".into(),
        base_url: base_url.map(Into::into),
        api_key: api_key.map(Into::into),
        models: vec![],
        options: options.into(),
    }
}

fn request(operation: Operation, body: &str, stream: bool) -> CanonicalRequest {
    let (model, body, headers) = ("gpt-4o-mini".into(), body.into(), vec![]);
    CanonicalRequest {
        native: None,
        operation,
        model,
        body,
        stream,
        headers,
    }
}

fn upstream(prepared: Prepared) -> HttpRequest {
    match prepared {
        Prepared::Upstream(http) => http,
        _ => panic!("expected an upstream request"),
    }
}

fn header<'a>(http: &'a HttpRequest, name: &str) -> Option<&'a str> {
    let mut found = http
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name));
    let value = found.next().map(|(_, v)| v.as_str());
    assert!(found.next().is_none(), "header {name} sent twice");
    value
}
