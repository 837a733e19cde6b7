//! Native unit tests of the translation (`cargo test --target x86_64-unknown-linux-gnu`).

use wasmgate_plugin_sdk::{ErrorKind, StreamDecoder, StreamOutput, Usage};

use super::*;

#[test]
fn cases() {
    wasmgate_plugin_testkit::run_cases::<OpenAi>(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases"),
        "openai",
    );
}

#[test]
fn responses_are_native_for_openai_itself_and_where_the_option_says() {
    let native = |base_url: Option<&str>, options: &str| {
        OpenAi::native_operations(&config(base_url, None, options))
    };
    assert_eq!(native(None, "{}"), vec![Operation::Responses]);
    assert_eq!(
        native(Some("https://API.openai.com/v1/"), "{}"),
        vec![Operation::Responses]
    );
    assert_eq!(
        native(Some("https://api.openai.com.evil.example/v1"), "{}"),
        vec![]
    );
    assert_eq!(native(Some("http://127.0.0.1:8000/v1"), "{}"), vec![]);
    assert_eq!(
        native(
            Some("http://127.0.0.1:8000/v1"),
            r#"{"responses": "native"}"#
        ),
        vec![Operation::Responses]
    );
    assert_eq!(native(None, r#"{"responses": "translate"}"#), vec![]);
    let err = OpenAi::validate(&config(None, None, r#"{"responses": "yes"}"#)).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("responses"));
}

#[test]
fn openai_beta_goes_only_with_responses() {
    let cfg = config(None, Some("sk"), "{}");
    let mut req = request(Operation::ChatCompletions, "{}", false);
    req.headers = vec![("openai-beta".into(), "x=1".into())];
    let http = upstream(OpenAi::prepare(&cfg, req.clone()).unwrap());
    assert_eq!(header(&http, "openai-beta"), None);
    req.operation = Operation::Responses;
    let http = upstream(OpenAi::prepare(&cfg, req.clone()).unwrap());
    assert_eq!(header(&http, "openai-beta"), Some("x=1"));
    req.headers = vec![("openai-beta".into(), "x\r\nevil: 1".into())];
    let err = OpenAi::prepare(&cfg, req).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidRequest);
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
    CanonicalRequest {
        native: None,
        operation,
        model: "gpt-4o-mini".into(),
        body: body.into(),
        stream,
        headers: vec![],
    }
}

fn upstream(prepared: Prepared) -> HttpRequest {
    match prepared {
        Prepared::Upstream(http) => http,
        Prepared::Local(_)
        | Prepared::LocalStream(_)
        | Prepared::UpstreamForm(_)
        | Prepared::UpstreamRaw(_) => panic!("expected an upstream request"),
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

#[test]
fn validate_accepts_defaults_and_all_options() {
    assert!(OpenAi::validate(&config(None, None, "{}")).is_ok());
    let options = r#"{"organization": "org-1", "project": "proj-1",
        "headers": {"x-extra": "1"}, "auth_header": "api-key"}"#;
    assert!(OpenAi::validate(&config(Some("http://localhost:8000/v1"), None, options)).is_ok());
}

#[test]
fn validate_names_the_bad_key() {
    let err = OpenAi::validate(&config(Some("localhost:8000"), None, "{}")).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("base_url"));

    let err = OpenAi::validate(&config(None, None, r#"{"org": "x"}"#)).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("org"));
    assert!(err.message.contains("`organization`"), "{}", err.message);

    let err = OpenAi::validate(&config(None, None, r#"{"project": 7}"#)).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("project"));

    let err = OpenAi::validate(&config(None, None, r#"{"headers": {"x": "a\nb"}}"#)).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("headers.x"));

    let err = OpenAi::validate(&config(None, None, r#"{"auth_header": "a b"}"#)).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("auth_header"));
}

#[test]
fn chat_goes_to_chat_completions_with_the_body_untouched() {
    let body = r#"{"model":"gpt-4o-mini",  "messages":[{"role":"user","content":"hi"}]}"#;
    let cfg = config(None, Some("sk-test"), "{}");
    let http =
        upstream(OpenAi::prepare(&cfg, request(Operation::ChatCompletions, body, false)).unwrap());
    assert_eq!(http.method, "POST");
    assert_eq!(http.url, "https://api.openai.com/v1/chat/completions");
    assert_eq!(http.body, body.as_bytes());
    assert_eq!(header(&http, "content-type"), Some("application/json"));
    assert_eq!(header(&http, "authorization"), Some("Bearer sk-test"));
    assert_eq!(header(&http, "accept"), None);
}

#[test]
fn streaming_asks_for_an_event_stream() {
    let cfg = config(None, None, "{}");
    let http =
        upstream(OpenAi::prepare(&cfg, request(Operation::ChatCompletions, "{}", true)).unwrap());
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
        let http = upstream(OpenAi::prepare(&cfg, request(operation, "{}", false)).unwrap());
        assert_eq!((http.method.as_str(), http.url.as_str()), (method, url));
    }
    let http =
        upstream(OpenAi::prepare(&cfg, request(Operation::ListModels, "{}", false)).unwrap());
    assert!(http.body.is_empty());
}

#[test]
fn options_become_headers() {
    let options = r#"{"organization": "org-1", "project": "proj-1", "auth_header": "API-Key",
        "headers": {"x-extra": "1", "OpenAI-Project": "override"}}"#;
    let cfg = config(None, Some("azure-key"), options);
    let http =
        upstream(OpenAi::prepare(&cfg, request(Operation::ChatCompletions, "{}", false)).unwrap());
    assert_eq!(header(&http, "api-key"), Some("azure-key"));
    assert_eq!(header(&http, "authorization"), None);
    assert_eq!(header(&http, "openai-organization"), Some("org-1"));
    assert_eq!(header(&http, "openai-project"), Some("override"));
    assert_eq!(header(&http, "x-extra"), Some("1"));
}

fn response(status: u16, body: &str) -> HttpResponse {
    HttpResponse {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.as_bytes().to_vec(),
    }
}

fn parse(operation: Operation, status: u16, body: &str) -> Result<Completion, PluginError> {
    let cfg = config(None, None, "{}");
    OpenAi::parse_response(
        &cfg,
        &request(operation, "{}", false).info(),
        response(status, body),
    )
}

#[test]
fn success_passes_the_body_through_with_usage() {
    let body = r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[],
        "usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12,
        "prompt_tokens_details":{"cached_tokens":4}}}"#;
    let completion = parse(Operation::ChatCompletions, 200, body).unwrap();
    assert_eq!(completion.body, body);
    assert_eq!(
        completion.usage,
        Some(Usage {
            cached_input_tokens: 4,
            ..Usage::tokens(9, 3)
        })
    );

    let body = r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],
        "model":"m","usage":{"prompt_tokens":5,"total_tokens":5}}"#;
    let completion = parse(Operation::Embeddings, 200, body).unwrap();
    assert_eq!(completion.usage, Some(Usage::tokens(5, 0)));

    let body = r#"{"object":"list","data":[{"id":"gpt-4o","object":"model"}]}"#;
    assert_eq!(parse(Operation::ListModels, 200, body).unwrap().usage, None);
}

#[test]
fn images_count_the_images() {
    let body = r#"{"created":1,"data":[{"b64_json":"AA=="},{"b64_json":"AA=="}]}"#;
    let usage = parse(Operation::ImageGenerations, 200, body).unwrap().usage;
    assert_eq!(
        usage,
        Some(Usage {
            images: 2,
            ..Usage::default()
        })
    );

    let body = r#"{"created":1,"data":[{"b64_json":"AA=="}],
        "usage":{"input_tokens":50,"output_tokens":4160,"total_tokens":4210}}"#;
    let usage = parse(Operation::ImageGenerations, 200, body).unwrap().usage;
    assert_eq!(
        usage,
        Some(Usage {
            images: 1,
            ..Usage::tokens(50, 4160)
        })
    );
}

#[test]
fn errors_are_typed() {
    let body = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    let err = parse(Operation::ChatCompletions, 401, body).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Authentication);
    assert_eq!(err.message, "Incorrect API key provided");
    assert_eq!(err.code.as_deref(), Some("invalid_api_key"));
    assert_eq!(err.upstream_status, Some(401));

    let err = parse(Operation::ChatCompletions, 200, "<html>").unwrap_err();
    assert_eq!(err.kind, ErrorKind::Upstream);
}

fn decode(chunks: &[&[u8]]) -> Result<Vec<StreamOutput>, PluginError> {
    let cfg = config(None, None, "{}");
    let mut decoder = OpenAiStream::new(
        cfg,
        request(Operation::ChatCompletions, "{}", true).info(),
        &[],
    );
    let mut outputs = Vec::new();
    for chunk in chunks {
        outputs.push(decoder.push(chunk)?);
    }
    outputs.push(decoder.finish()?);
    Ok(outputs)
}

const CHUNK_1: &str = r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hé"}}],"usage":null}"#;
const CHUNK_2: &str = r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#;
const USAGE: &str = r#"{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":2,"total_tokens":10}}"#;

#[test]
fn stream_events_pass_through_and_usage_is_read() {
    let body = format!(
        ": OPENROUTER PROCESSING\n\ndata: {CHUNK_1}\n\ndata: {CHUNK_2}\r\n\r\ndata: {USAGE}\n\ndata: [DONE]\n\n"
    );
    let bytes = body.as_bytes();
    // Split inside the `é`, and between a `\r` and its `\n`.
    let e_acute = body.find('é').unwrap() + 1;
    let cr = body.find('\r').unwrap() + 1;
    let outputs = decode(&[&bytes[..e_acute], &bytes[e_acute..cr], &bytes[cr..]]).unwrap();
    let events: Vec<&str> = outputs
        .iter()
        .flat_map(|o| &o.events)
        .map(String::as_str)
        .collect();
    assert_eq!(events, [CHUNK_1, CHUNK_2, USAGE]);
    assert_eq!(outputs.last().unwrap().usage, Some(Usage::tokens(8, 2)));
}

#[test]
fn finish_flushes_an_unterminated_last_event() {
    let body = format!("data: {CHUNK_1}\n\ndata: {USAGE}");
    let outputs = decode(&[body.as_bytes()]).unwrap();
    assert_eq!(outputs[0].events, [CHUNK_1]);
    assert_eq!(outputs[1].events, [USAGE]);
    assert_eq!(outputs[1].usage, Some(Usage::tokens(8, 2)));
}

#[test]
fn nothing_after_done() {
    let body = format!("data: [DONE]\n\ndata: {CHUNK_1}\n\n");
    let outputs = decode(&[body.as_bytes()]).unwrap();
    assert!(outputs.iter().all(|o| o.events.is_empty()));
}

#[test]
fn an_error_event_fails_the_stream_after_earlier_events() {
    let error = r#"{"error":{"message":"The server had an error","type":"server_error","code":"overloaded"}}"#;
    let body = format!("data: {CHUNK_1}\n\ndata: {error}\n\n");
    let cfg = config(None, None, "{}");
    let mut decoder = OpenAiStream::new(
        cfg,
        request(Operation::ChatCompletions, "{}", true).info(),
        &[],
    );
    assert_eq!(decoder.push(body.as_bytes()).unwrap().events, [CHUNK_1]);
    let err = decoder.push(b"").unwrap_err();
    assert_eq!(err.kind, ErrorKind::Upstream);
    assert_eq!(err.message, "The server had an error");
    assert_eq!(err.code.as_deref(), Some("overloaded"));

    let err = decode(&[format!("data: {error}").as_bytes()]).unwrap_err();
    assert_eq!(err.message, "The server had an error");
    let err = decode(&[b"event: error\ndata: {\"message\":\"boom\"}\n\n"]).unwrap_err();
    assert_eq!(err.message, "boom");
    let err = decode(&[b"data: not json\n\n"]).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Upstream);
}
