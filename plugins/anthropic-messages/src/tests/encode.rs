use serde_json::{Value, json};
use wasmgate_plugin_sdk::{AnswerInfo, Dialect, ErrorKind, Failure, Usage};

use crate::Messages;
use crate::errors::error_type;

fn info() -> AnswerInfo {
    AnswerInfo::new("claude-sonnet-4-5", "msg_01")
}

fn completion(message: Value, finish: &str, usage: Option<Value>) -> String {
    let mut body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    });
    if let Some(usage) = usage {
        body["usage"] = usage;
    }
    body.to_string()
}

fn encode(completion: &str, usage: Option<Usage>) -> Value {
    serde_json::from_str(&Messages::encode(&info(), completion, usage).unwrap()).unwrap()
}

#[test]
fn a_text_answer_is_a_message() {
    let body = completion(
        json!({"role": "assistant", "content": "Hi there"}),
        "stop",
        Some(json!({"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15})),
    );
    assert_eq!(
        encode(&body, None),
        json!({
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Hi there"}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 12, "output_tokens": 3,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        })
    );
}

#[test]
fn tool_calls_are_tool_use_blocks_with_parsed_input() {
    let message = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"a\":1}"}},
        {"id": "call_2", "type": "function", "function": {"name": "noop", "arguments": ""}},
        {"id": "call_3", "type": "function", "function": {"name": "broken", "arguments": "{\"city\":"}},
    ]});
    let encoded =
        Messages::encode(&info(), &completion(message, "tool_calls", None), None).unwrap();
    // The input is written as the model wrote it, keys in its order.
    assert!(
        encoded.contains(r#""input":{"city":"Paris","a":1}"#),
        "{encoded}"
    );
    let encoded: Value = serde_json::from_str(&encoded).unwrap();
    assert_eq!(encoded["stop_reason"], "tool_use");
    assert_eq!(
        encoded["content"],
        json!([
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris", "a": 1}},
            {"type": "tool_use", "id": "call_2", "name": "noop", "input": {}},
            {"type": "tool_use", "id": "call_3", "name": "broken", "input": {}},
        ])
    );
}

#[test]
fn stop_reasons() {
    let call =
        json!([{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]);
    let cases = [
        (json!({"content": "x"}), "stop", "end_turn"),
        (json!({"content": "x"}), "length", "max_tokens"),
        (json!({"content": "x"}), "content_filter", "refusal"),
        (
            json!({"content": null, "tool_calls": call}),
            "tool_calls",
            "tool_use",
        ),
        // Some providers say `stop` when the model called tools.
        (
            json!({"content": null, "tool_calls": call}),
            "stop",
            "tool_use",
        ),
        (json!({"content": "x"}), "function_call", "end_turn"),
    ];
    for (message, finish, expected) in cases {
        let encoded = encode(&completion(message, finish, None), None);
        assert_eq!(encoded["stop_reason"], expected, "{finish}");
    }
}

#[test]
fn usage_excludes_cached_and_cache_write_tokens_and_the_hosts_count_wins() {
    let body = completion(
        json!({"content": "x"}),
        "stop",
        Some(json!({"prompt_tokens": 1, "completion_tokens": 1})),
    );
    let usage = Usage {
        cached_input_tokens: 600,
        cache_write_tokens: 300,
        ..Usage::tokens(1000, 50)
    };
    assert_eq!(
        encode(&body, Some(usage))["usage"],
        json!({"input_tokens": 100, "output_tokens": 50,
               "cache_creation_input_tokens": 300, "cache_read_input_tokens": 600})
    );
    let body = completion(
        json!({"content": "x"}),
        "stop",
        Some(
            json!({"prompt_tokens": 40, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 30}}),
        ),
    );
    assert_eq!(
        encode(&body, None)["usage"],
        json!({"input_tokens": 10, "output_tokens": 7,
               "cache_creation_input_tokens": 0, "cache_read_input_tokens": 30})
    );
    let body = completion(json!({"content": "x"}), "stop", None);
    assert_eq!(encode(&body, None)["usage"]["input_tokens"], 0);
}

#[test]
fn reasoning_comes_first_as_a_thinking_block_and_refusals_as_text() {
    let body = completion(
        json!({"content": "42", "reasoning_content": "6 times 7"}),
        "stop",
        None,
    );
    assert_eq!(
        encode(&body, None)["content"],
        json!([
            {"type": "thinking", "thinking": "6 times 7", "signature": ""},
            {"type": "text", "text": "42"},
        ])
    );
    let body = completion(
        json!({"content": null, "refusal": "I can't."}),
        "content_filter",
        None,
    );
    let encoded = encode(&body, None);
    assert_eq!(
        encoded["content"],
        json!([{"type": "text", "text": "I can't."}])
    );
    assert_eq!(encoded["stop_reason"], "refusal");
}

#[test]
fn an_answer_that_is_not_a_completion_fails_as_upstream() {
    for body in ["", "[]", "{\"choices\": 3}"] {
        let err = Messages::encode(&info(), body, None).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Upstream, "{body}");
    }
    // No choice at all: an empty message, not a failure.
    let encoded = encode(r#"{"choices": []}"#, None);
    assert_eq!(encoded["content"], json!([]));
}

#[test]
fn errors_have_anthropics_shape_and_types() {
    let cases = [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (402, "billing_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (408, "invalid_request_error"),
        (413, "request_too_large"),
        (422, "invalid_request_error"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (502, "api_error"),
        (503, "api_error"),
        (504, "timeout_error"),
        (529, "overloaded_error"),
    ];
    for (status, expected) in cases {
        assert_eq!(error_type(status), expected, "{status}");
    }
    let body = Messages::encode_error(429, &Failure::for_status(429, "slow down"));
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
    );
}
