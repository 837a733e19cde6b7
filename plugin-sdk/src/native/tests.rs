use serde_json::{Value, json};

use super::*;
use crate::ErrorKind;

fn config() -> ProviderConfig {
    ProviderConfig {
        name: "p".into(),
        base_url: None,
        api_key: None,
        models: vec![],
        options: "{}".into(),
    }
}

use crate::Operation;

fn info(native: Option<&str>) -> RequestInfo {
    RequestInfo {
        native: native.map(|dialect| NativeCall {
            dialect: dialect.into(),
            route: dialect.into(),
            params: Vec::new(),
        }),
        operation: Operation::ChatCompletions,
        model: "m".into(),
        stream: true,
    }
}

/// A Responses stream as OpenAI documents it, shortened: created, a text delta, completed.
const RESPONSES_STREAM: &str = concat!(
    "event: response.created\n",
    "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"usage\":null}}\n\n",
    "event: response.output_text.delta\n",
    "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi \\u00e9 \\ud83d\\udc4b\"}\n\n",
    ": keep-alive\n\n",
    "event: response.completed\n",
    "data: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"usage\":{\"input_tokens\":36,\"input_tokens_details\":{\"cached_tokens\":12},\"output_tokens\":87,\"output_tokens_details\":{\"reasoning_tokens\":64},\"total_tokens\":123}}}\n\n",
);

fn replay<D: StreamDecoder>(
    mut decoder: D,
    chunks: &[&[u8]],
) -> (Vec<String>, Option<Usage>, Option<PluginError>) {
    let (mut events, mut usage) = (Vec::new(), None);
    for i in 0..=chunks.len() {
        let out = match chunks.get(i) {
            Some(c) => decoder.push(c),
            None => decoder.finish(),
        };
        match out {
            Ok(out) => {
                events.extend(out.events);
                usage = out.usage.or(usage);
            }
            Err(err) => return (events, usage, Some(err)),
        }
    }
    (events, usage, None)
}

fn data_lines(stream: &str) -> Vec<String> {
    stream
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn responses_events_pass_through_unchanged_with_their_usage_at_every_split() {
    let body = RESPONSES_STREAM.as_bytes();
    let want = Usage {
        cached_input_tokens: 12,
        reasoning_tokens: 64,
        ..Usage::tokens(36, 87)
    };
    for split in 0..=body.len() {
        let (a, b) = body.split_at(split);
        let decoder = ResponsesStream::new(config(), info(Some(RESPONSES)), &[]);
        let (events, usage, error) = replay(decoder, &[a, b]);
        assert!(error.is_none(), "split {split}: {error:?}");
        assert_eq!(events, data_lines(RESPONSES_STREAM), "split {split}");
        assert_eq!(usage, Some(want), "split {split}");
    }
}

#[test]
fn responses_error_event_is_a_typed_error_after_the_events_before_it() {
    let stream = concat!(
        "event: response.created\n",
        "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"usage\":null}}\n\n",
        "event: error\n",
        "data: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"The server had an error\",\"param\":null,\"sequence_number\":1}\n\n",
    );
    let decoder = ResponsesStream::new(config(), info(Some(RESPONSES)), &[]);
    let (events, _, error) = replay(decoder, &[stream.as_bytes()]);
    assert_eq!(events.len(), 1);
    let error = error.unwrap();
    assert_eq!(error.kind, ErrorKind::Upstream);
    assert_eq!(error.message, "The server had an error");
    assert_eq!(error.code.as_deref(), Some("server_error"));
}

#[test]
fn responses_stream_cut_short_fails_and_failed_response_still_counts() {
    let cut = RESPONSES_STREAM
        .split("event: response.completed")
        .next()
        .unwrap();
    let decoder = ResponsesStream::new(config(), info(Some(RESPONSES)), &[]);
    let (events, usage, error) = replay(decoder, &[cut.as_bytes()]);
    assert_eq!(events.len(), 2);
    assert_eq!(usage, None);
    assert!(error.unwrap().message.contains("ended before"));

    let failed = "data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"x\"},\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n";
    let decoder = ResponsesStream::new(config(), info(Some(RESPONSES)), &[]);
    let (events, usage, error) = replay(decoder, &[failed.as_bytes()]);
    assert!(error.is_none());
    assert_eq!(events.len(), 1);
    assert_eq!(usage, Some(Usage::tokens(5, 1)));
}

#[test]
fn untyped_event_is_an_upstream_error() {
    let decoder = ResponsesStream::new(config(), info(Some(RESPONSES)), &[]);
    let (_, _, error) = replay(decoder, &[b"data: {\"no\":\"type\"}\n\n"]);
    assert_eq!(error.unwrap().kind, ErrorKind::Upstream);
}

#[test]
fn or_native_picks_by_whether_the_request_is_native() {
    type D = OrNative<crate::openai_compat::OpenAiStream, ResponsesStream>;
    assert!(matches!(
        D::new(config(), info(Some(RESPONSES)), &[]),
        OrNative::Native(_)
    ));
    assert!(matches!(
        D::new(config(), info(None), &[]),
        OrNative::Canonical(_)
    ));
}

#[test]
fn a_native_call_is_found_by_its_dialect() {
    let native = info(Some(MESSAGES)).native;
    assert!(native_call(&native, MESSAGES).is_some());
    assert!(native_call(&native, RESPONSES).is_none());
    assert!(native_call(&None, MESSAGES).is_none());
}

#[test]
fn with_model_changes_only_the_model() {
    let body = r#"{"model": "gpt-5", "input": [{"role":"user","content":"1.10e2 \u00e9"}], "temperature": 1.0, "store":false}"#;
    let out = with_model(body, "my-deployment").unwrap();
    assert_eq!(
        out,
        r#"{"model":"my-deployment","input":[{"role":"user","content":"1.10e2 \u00e9"}],"temperature":1.0,"store":false}"#
    );
    let value: Value = serde_json::from_str(&with_model(r#"{"a":1}"#, "m\"x").unwrap()).unwrap();
    assert_eq!(value, json!({"a": 1, "model": "m\"x"}));
    assert_eq!(with_model("{}", "m").unwrap(), r#"{"model":"m"}"#);
    assert!(with_model("[1]", "m").is_err());
    assert!(with_model(r#"{"a":1} x"#, "m").is_err());
}

#[test]
fn forwarded_headers_are_found_case_insensitively() {
    let request = CanonicalRequest {
        native: None,
        operation: Operation::ChatCompletions,
        model: "m".into(),
        body: "{}".into(),
        stream: false,
        headers: vec![("anthropic-beta".into(), "a,b".into())],
    };
    assert_eq!(forwarded_header(&request, "Anthropic-Beta"), Some("a,b"));
    assert_eq!(forwarded_header(&request, "anthropic-version"), None);
}
