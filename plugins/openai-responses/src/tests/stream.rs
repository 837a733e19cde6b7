use serde_json::{Value, json};
use wasmgate_plugin_sdk::{Dialect, Event, Failure, StreamEncoder, Usage};

use super::encode::{completion, info};
use crate::Responses;
use crate::stream::Encoder;

fn chunk(delta: Value, finish: Option<&str>) -> String {
    json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "claude",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": null})
    .to_string()
}

fn usage_chunk(usage: Value) -> String {
    json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "claude",
           "choices": [], "usage": usage})
    .to_string()
}

fn run(echo: &str, chunks: &[String], usage: Option<Usage>) -> Vec<Event> {
    let mut encoder = Encoder::new(info(echo));
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(encoder.push(chunk).unwrap());
    }
    events.extend(encoder.finish(usage).unwrap());
    events
}

/// Every event's data, checking that its name is its type and that sequence numbers count up
/// from 0.
fn data(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .enumerate()
        .map(|(n, event)| {
            let data: Value = serde_json::from_str(&event.data).unwrap();
            assert_eq!(data["type"], event.name.as_str());
            assert_eq!(data["sequence_number"], n, "{}", event.name);
            data
        })
        .collect()
}

fn names(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.name.as_str()).collect()
}

#[test]
fn text_then_several_tool_calls_with_split_arguments() {
    let chunks = [
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "Let me "}), None),
        chunk(json!({"content": "check."}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "function": {"arguments": ":\"CET\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(json!({"prompt_tokens": 30, "completion_tokens": 9})),
    ];
    let usage = Usage {
        cached_input_tokens: 20,
        ..Usage::tokens(30, 9)
    };
    let events = run("{}", &chunks, Some(usage));
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let data = data(&events);
    assert_eq!(data[0]["response"]["status"], "in_progress");
    assert_eq!(data[0]["response"]["output"], json!([]));
    assert_eq!(data[4]["delta"], "Let me ");
    assert_eq!(data[4]["item_id"], "msg_67ccd2bed1ec_0");
    assert_eq!(
        data[6]["item"],
        json!({"id": "fc_67ccd2bed1ec_1", "type": "function_call", "status": "in_progress",
               "arguments": "", "call_id": "call_a", "name": "get_weather"})
    );
    assert_eq!(
        data[10]["output_index"], 1,
        "a late piece goes to its own call"
    );
    assert_eq!(data[12]["text"], "Let me check.");
    assert_eq!(data[15]["arguments"], "{\"city\":\"Paris\"}");
    assert_eq!(data[17]["arguments"], "{\"tz\":\"CET\"}");

    // The completed response is the one the whole answer encodes to.
    let whole = completion(
        json!({"role": "assistant", "content": "Let me check.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\":\"CET\"}"}}]}),
        "tool_calls",
        None,
    );
    let whole: Value =
        serde_json::from_str(&Responses::encode(&info("{}"), &whole, Some(usage)).unwrap())
            .unwrap();
    assert_eq!(data[19]["response"], whole);
    assert_eq!(
        data[19]["response"]["usage"]["input_tokens_details"]["cached_tokens"],
        20
    );
}

#[test]
fn the_echo_is_in_every_response_object() {
    let echo = json!({"instructions": "Be kind.", "store": false}).to_string();
    let events = run(
        &echo,
        &[chunk(json!({"content": "hi"}), Some("stop"))],
        None,
    );
    for data in data(&events).iter().filter(|d| d.get("response").is_some()) {
        assert_eq!(data["response"]["instructions"], "Be kind.");
        assert_eq!(data["response"]["store"], false);
    }
}

#[test]
fn a_stream_cut_before_usage_still_completes_with_an_estimate() {
    let events = run(
        "{}",
        &[chunk(
            json!({"content": "The answer is forty-two, as computed."}),
            None,
        )],
        None,
    );
    let data = data(&events);
    let last = data.last().unwrap();
    assert_eq!(last["type"], "response.completed");
    assert_eq!(last["response"]["usage"]["input_tokens"], 17);
    assert!(
        last["response"]["usage"]["output_tokens"].as_u64().unwrap() > 0,
        "{last}"
    );
}

#[test]
fn the_token_limit_ends_with_response_incomplete() {
    let events = run(
        "{}",
        &[chunk(json!({"content": "Once"}), Some("length"))],
        Some(Usage::tokens(3, 1)),
    );
    let data = data(&events);
    let last = data.last().unwrap();
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    assert_eq!(data[data.len() - 2]["item"]["status"], "incomplete");
}

#[test]
fn a_failure_is_an_error_then_a_failed_response() {
    let mut encoder = Encoder::new(info("{}"));
    let mut events = encoder
        .push(&chunk(json!({"content": "Hel"}), None))
        .unwrap();
    events.extend(encoder.fail(429, &Failure::for_status(429, "Rate limit reached")));
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "error",
            "response.failed"
        ]
    );
    let data = data(&events);
    assert_eq!(
        data[5],
        json!({"type": "error", "code": null, "message": "Rate limit reached", "param": null, "sequence_number": 5})
    );
    assert_eq!(data[6]["response"]["status"], "failed");
    assert_eq!(
        data[6]["response"]["error"],
        json!({"code": "rate_limit_exceeded", "message": "Rate limit reached"})
    );
    assert_eq!(
        data[6]["response"]["output"][0]["content"][0]["text"],
        "Hel"
    );
    assert!(
        encoder
            .push(&chunk(json!({"content": "lo"}), None))
            .unwrap()
            .is_empty()
    );
    assert!(encoder.finish(None).unwrap().is_empty());
}

#[test]
fn a_failure_before_any_chunk_still_opens_the_response() {
    let mut encoder = Encoder::new(info("{}"));
    let events = encoder.fail(502, &Failure::upstream("upstream failed"));
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "error",
            "response.failed"
        ]
    );
    data(&events);
}
