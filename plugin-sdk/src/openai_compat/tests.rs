//! OpenAI's answers and streams read as they pass through.

use super::{OpenAiStream, parse_response};
use crate::{
    CanonicalRequest, Completion, ErrorKind, HttpResponse, Operation, PluginError, ProviderConfig,
    StreamDecoder, StreamOutput, Usage,
};

fn request(operation: Operation, stream: bool) -> CanonicalRequest {
    CanonicalRequest {
        native: None,
        operation,
        model: "gpt-4o-mini".into(),
        body: "{}".into(),
        stream,
        headers: vec![],
    }
}

fn config() -> ProviderConfig {
    ProviderConfig {
        name: "openai".into(),
        base_url: None,
        api_key: None,
        models: vec![],
        options: "{}".into(),
    }
}

fn response(status: u16, body: &str) -> HttpResponse {
    HttpResponse {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.as_bytes().to_vec(),
    }
}

fn parse(operation: Operation, status: u16, body: &str) -> Result<Completion, PluginError> {
    parse_response(operation, response(status, body))
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
    let mut decoder = OpenAiStream::new(
        config(),
        request(Operation::ChatCompletions, true).info(),
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
    let mut decoder = OpenAiStream::new(
        config(),
        request(Operation::ChatCompletions, true).info(),
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
