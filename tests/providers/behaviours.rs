//! What every provider must do, one function a behaviour, each reading what differs from its
//! [`Row`]. `mod.rs` runs each for each row as its own test.

use async_openai::types::chat::{CompletionUsage, FinishReason};
use serde_json::Value;

use super::client::{
    answer_tool, ask_with_tool, cached, chat, error_of, events, raw_stream, setup, setup_with,
    stream_text, stream_tools,
};
use super::rows::{Cut, Row, Usage};
use crate::common::mock_providers::KEY;

fn assert_usage(row: &Row, usage: &CompletionUsage, expected: &Usage) {
    let plugin = row.plugin;
    assert_eq!(u64::from(usage.prompt_tokens), expected.prompt, "{plugin}");
    assert_eq!(
        u64::from(usage.completion_tokens),
        expected.completion,
        "{plugin}"
    );
    assert_eq!(
        u64::from(usage.total_tokens),
        expected.prompt + expected.completion,
        "{plugin}"
    );
    assert_eq!(
        cached(usage).map(u64::from),
        Some(expected.cached),
        "{plugin}"
    );
}

/// The answer's text (nothing else: no thoughts), `stop`, and usage with cached tokens.
pub async fn chat_answers_the_text_and_usage(row: &Row) {
    let (_mock, gw) = setup(row).await;
    let response = chat(&gw, &row.routed(row.model)).await;
    let choice = &response.choices[0];
    assert_eq!(choice.message.content.as_deref(), Some(row.text));
    assert_eq!(choice.finish_reason, Some(FinishReason::Stop));
    assert_usage(row, &response.usage.unwrap(), &row.usage);
}

/// The native request goes to the provider's path with the key in the provider's header, and
/// no other credential.
pub async fn request_goes_to_the_native_path_with_the_key(row: &Row) {
    let (mock, gw) = setup(row).await;
    chat(&gw, &row.routed(row.model)).await;
    let sent = mock.last_request().await;
    assert_eq!(sent.path, row.path);
    let key = format!("{}{KEY}", row.key.prefix);
    assert_eq!(sent.header(row.key.header), Some(key.as_str()));
    if row.key.header != "authorization" {
        assert_eq!(sent.header("authorization"), None, "no bearer token");
    }
    if row.model_in_body {
        assert_eq!(sent.body["model"], row.model);
    } else {
        assert!(sent.body.get("model").is_none(), "the model is in the path");
    }
}

/// A stream delivered in 5–9 byte pieces comes out as the text, `stop` and (asked for with
/// `include_usage`) the usage; the native request asks for a stream in the provider's way.
pub async fn stream_reassembles_the_text_and_reports_usage(row: &Row) {
    let (mock, gw) = setup(row).await;
    let (text, usage, finish) = stream_text(&gw, &row.routed(row.model)).await;
    assert_eq!(text, row.stream_deltas.concat());
    assert_eq!(finish, Some(FinishReason::Stop));
    let usage = usage.expect("a usage chunk for include_usage");
    assert_usage(row, &usage, &row.stream_usage);
    let sent = mock.last_request().await;
    assert_eq!(sent.path, row.stream_path);
    if row.stream_flag {
        assert_eq!(sent.body["stream"], true);
    } else {
        assert!(sent.body.get("stream").is_none(), "{}", sent.body);
    }
    if row.stream_options {
        assert_eq!(sent.body["stream_options"]["include_usage"], true);
    } else {
        assert!(
            sent.body.get("stream_options").is_none(),
            "no OpenAI-only fields"
        );
    }
}

/// A client that did not ask for usage gets none, a `stop` and `[DONE]`.
pub async fn stream_without_include_usage_ends_with_done_and_no_usage(row: &Row) {
    let (_mock, gw) = setup(row).await;
    let (status, content_type, body) = raw_stream(&gw, &row.routed(row.model)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(content_type, "text/event-stream");
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
    let events = events(&body);
    assert!(
        events.iter().all(|e| e["usage"].is_null()),
        "no usage for a client that did not ask: {body}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["choices"][0]["finish_reason"] == "stop"),
        "{body}"
    );
}

/// An upstream stream that stops after its first delta: the delta is relayed, then an error
/// event and no `[DONE]` (see [`Cut`] for the row that cannot tell).
pub async fn stream_cut_short_by_the_upstream_is_not_passed_off_as_whole(row: &Row) {
    let (_mock, gw) = setup(row).await;
    let (status, _, body) = raw_stream(&gw, &row.routed("stream-cut")).await;
    assert_eq!(status, 200, "{body}");
    let first = row.stream_deltas[0];
    assert!(
        body.contains(&format!("\"content\":\"{first}\"")),
        "the delta before the cut is relayed: {body}"
    );
    match row.cut {
        Cut::ErrorEvent => {
            assert!(!body.contains("[DONE]"), "{body}");
            let last = events(&body).pop().unwrap();
            assert!(
                last["error"]["message"].is_string(),
                "the stream ends with an error event: {body}"
            );
        }
        Cut::PassedOffAsWhole => {
            assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
            let rest = row.stream_deltas[1..].concat();
            assert!(!body.contains(&rest), "nothing after the cut: {body}");
        }
    }
}

/// The provider's tool call comes back as OpenAI's `tool_calls`, and the call and its result go
/// back to the provider in its own shape (the row's `wire`), answered with the text.
pub async fn tool_call_round_trips_in_the_providers_shape(row: &Row) {
    let (mock, gw) = setup(row).await;
    let model = row.routed(row.model);
    let expected = &row.tool_call;
    let message = ask_with_tool(&gw, &model).await;
    let call = &message["tool_calls"][0];
    match expected.id {
        Some(id) => assert_eq!(call["id"], id),
        None => assert!(call["id"].as_str().is_some_and(|id| !id.is_empty())),
    }
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(
        arguments,
        serde_json::from_str::<Value>(expected.arguments).unwrap()
    );
    if let Some(content) = expected.content {
        assert_eq!(message["content"], content);
    }
    let asked = mock.last_request().await.body;

    let reply = answer_tool(&gw, &model, &message, expected.result).await;
    assert_eq!(reply, row.text);
    let answered = mock.last_request().await.body;
    (expected.wire)(call, &asked, &answered);
}

/// Streamed tool calls arrive as indexed `tool_calls` deltas whose pieces join into each call's
/// id, name and arguments, beside the text, finishing with `tool_calls` whatever the provider
/// calls its ending.
pub async fn streamed_tool_calls_arrive_as_indexed_deltas(row: &Row) {
    let (_mock, gw) = setup(row).await;
    let expected = &row.streamed_tools;
    let streamed = stream_tools(&gw, &row.routed(row.model)).await;
    assert_eq!(streamed.text, expected.text.concat());
    assert_eq!(
        streamed.calls.len(),
        expected.arguments.len(),
        "{:?}",
        streamed.calls
    );
    let ids: Vec<&str> = streamed.calls.iter().map(|c| c.0.as_str()).collect();
    match expected.ids {
        Some(expected) => assert_eq!(ids, expected),
        None => {
            assert!(ids.iter().all(|id| !id.is_empty()), "{ids:?}");
            let distinct: std::collections::HashSet<_> = ids.iter().collect();
            assert_eq!(distinct.len(), ids.len(), "distinct ids: {ids:?}");
        }
    }
    assert_eq!(streamed.calls[0].1, "get_weather");
    for ((_, _, arguments), want) in streamed.calls.iter().zip(expected.arguments) {
        assert_eq!(*arguments, serde_json::from_str::<Value>(want).unwrap());
    }
    assert_eq!(streamed.finish, "tool_calls");
}

pub async fn upstream_429_is_a_rate_limit_error(row: &Row) {
    let (_mock, gw) = setup(row).await;
    let (status, error) = error_of(&gw, &row.routed("error-429")).await;
    assert_eq!(status, 429, "{error}");
    assert_eq!(error["type"], "rate_limit_error");
}

pub async fn upstream_500_is_a_bad_gateway(row: &Row) {
    let (_mock, gw) = setup(row).await;
    let (status, error) = error_of(&gw, &row.routed("error-500")).await;
    assert_eq!(status, 502, "an upstream 5xx is a bad gateway: {error}");
}

/// The provider's refusal of the key keeps its (4xx) status and message, typed as
/// authentication.
pub async fn wrong_key_is_an_authentication_error(row: &Row) {
    let (_mock, gw) = setup_with(row, "wrong-key", "{}").await;
    let (status, error) = error_of(&gw, &row.routed(row.model)).await;
    let (expected_status, message) = row.wrong_key;
    assert_eq!(status, expected_status, "{error}");
    assert_eq!(error["type"], "authentication_error");
    assert!(
        error["message"].as_str().unwrap().contains(message),
        "{error}"
    );
}

/// An upstream error before the first byte of a stream is a JSON error with its status, not a
/// stream.
pub async fn error_before_a_stream_is_json_not_a_stream(row: &Row) {
    let (_mock, gw) = setup(row).await;
    let (status, content_type, body) = raw_stream(&gw, &row.routed("error-429")).await;
    assert_eq!(status, 429, "{body}");
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
}
