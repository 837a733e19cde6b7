use serde_json::{Value, json};
use wasmgate_plugin_sdk::{AnswerInfo, Dialect, Event, Failure, StreamEncoder, Usage};

use crate::Messages;
use crate::stream::Encoder;

fn info() -> AnswerInfo {
    AnswerInfo {
        estimated_input_tokens: 21,
        ..AnswerInfo::new("claude-sonnet-4-5", "msg_01")
    }
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": null})
    .to_string()
}

fn usage_chunk(usage: Value) -> String {
    json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
           "choices": [], "usage": usage})
    .to_string()
}

/// Pushes `chunks`, then finishes with `usage`: every event, in order.
fn run(chunks: &[String], usage: Option<Usage>) -> Vec<Event> {
    let mut encoder = Encoder::new(info());
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(encoder.push(chunk).unwrap());
    }
    events.extend(encoder.finish(usage).unwrap());
    events
}

fn data(event: &Event) -> Value {
    let data: Value = serde_json::from_str(&event.data).unwrap();
    assert_eq!(
        data["type"],
        event.name.as_str(),
        "the event name is the data's type"
    );
    data
}

fn names(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.name.as_str()).collect()
}

/// Rebuilds the final message from the events, as the SDKs' stream accumulators do.
fn accumulate(events: &[Event]) -> Value {
    let mut message = Value::Null;
    let mut json_bufs: Vec<String> = Vec::new();
    for event in events {
        let data = data(event);
        match event.name.as_str() {
            "message_start" => message = data["message"].clone(),
            "content_block_start" => {
                let index = data["index"].as_u64().unwrap() as usize;
                assert_eq!(
                    index,
                    message["content"].as_array().unwrap().len(),
                    "blocks in order"
                );
                message["content"]
                    .as_array_mut()
                    .unwrap()
                    .push(data["content_block"].clone());
                json_bufs.push(String::new());
            }
            "content_block_delta" => {
                let index = data["index"].as_u64().unwrap() as usize;
                let block = &mut message["content"][index];
                let delta = &data["delta"];
                match delta["type"].as_str().unwrap() {
                    "text_delta" => {
                        let text = format!(
                            "{}{}",
                            block["text"].as_str().unwrap(),
                            delta["text"].as_str().unwrap()
                        );
                        block["text"] = json!(text);
                    }
                    "thinking_delta" => {
                        let text = format!(
                            "{}{}",
                            block["thinking"].as_str().unwrap(),
                            delta["thinking"].as_str().unwrap()
                        );
                        block["thinking"] = json!(text);
                    }
                    "input_json_delta" => {
                        json_bufs[index].push_str(delta["partial_json"].as_str().unwrap())
                    }
                    other => panic!("unexpected delta {other}"),
                }
            }
            "content_block_stop" => {
                let index = data["index"].as_u64().unwrap() as usize;
                if message["content"][index]["type"] == "tool_use" && !json_bufs[index].is_empty() {
                    message["content"][index]["input"] =
                        serde_json::from_str(&json_bufs[index]).unwrap();
                }
            }
            "message_delta" => {
                message["stop_reason"] = data["delta"]["stop_reason"].clone();
                message["stop_sequence"] = data["delta"]["stop_sequence"].clone();
                message["usage"] = data["usage"].clone();
            }
            "ping" | "message_stop" => {}
            other => panic!("unexpected event {other}"),
        }
    }
    message
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
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\""}}]}),
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
    let events = run(&chunks, Some(usage));
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let start = data(&events[0]);
    assert_eq!(start["message"]["id"], "msg_01");
    assert_eq!(start["message"]["model"], "claude-sonnet-4-5");
    assert_eq!(
        start["message"]["usage"]["input_tokens"], 21,
        "the host's estimate, not 0"
    );
    assert_eq!(
        data(&events[6]),
        json!({"type": "content_block_start", "index": 1,
               "content_block": {"type": "tool_use", "id": "call_a", "name": "get_weather", "input": {}}})
    );
    assert_eq!(
        data(&events[7]),
        json!({"type": "content_block_delta", "index": 1,
               "delta": {"type": "input_json_delta", "partial_json": "{\"city\":"}})
    );
    let message = accumulate(&events);
    assert_eq!(
        message,
        json!({
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "call_a", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_b", "name": "get_time", "input": {"tz": "CET"}},
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 9,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 20},
        })
    );
}

#[test]
fn the_stream_and_the_whole_answer_say_the_same() {
    let chunks = [
        chunk(json!({"reasoning_content": "Think"}), None),
        chunk(json!({"reasoning_content": "ing."}), None),
        chunk(json!({"content": "Done"}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{\"b\":2,\"a\":1}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ];
    let usage = Usage::tokens(5, 6);
    let streamed = accumulate(&run(&chunks, Some(usage)));
    let whole = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "Done", "reasoning_content": "Thinking.",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"b\":2,\"a\":1}"}}]}}]});
    let whole: Value =
        serde_json::from_str(&Messages::encode(&info(), &whole.to_string(), Some(usage)).unwrap())
            .unwrap();
    assert_eq!(streamed, whole);
}

#[test]
fn a_stream_cut_before_usage_still_closes_with_an_estimate() {
    let chunks = [chunk(
        json!({"content": "The answer is forty-two, as computed."}),
        None,
    )];
    let events = run(&chunks, None);
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let delta = data(&events[5]);
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(delta["usage"]["input_tokens"], 21);
    assert!(
        delta["usage"]["output_tokens"].as_u64().unwrap() > 0,
        "{delta}"
    );
}

#[test]
fn usage_from_the_last_chunk_when_the_host_has_none() {
    let chunks = [
        chunk(json!({"content": "x"}), Some("length")),
        usage_chunk(
            json!({"prompt_tokens": 50, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 8}}),
        ),
    ];
    let events = run(&chunks, None);
    let delta = data(&events[events.len() - 2]);
    assert_eq!(delta["delta"]["stop_reason"], "max_tokens");
    assert_eq!(
        delta["usage"],
        json!({"input_tokens": 42, "output_tokens": 4, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 8})
    );
}

#[test]
fn an_empty_stream_is_a_whole_empty_message() {
    let events = run(&[], Some(Usage::tokens(3, 0)));
    assert_eq!(
        names(&events),
        ["message_start", "ping", "message_delta", "message_stop"]
    );
    assert_eq!(accumulate(&events)["content"], json!([]));
}

#[test]
fn a_failure_is_an_error_event_and_ends_the_stream() {
    let mut encoder = Encoder::new(info());
    let first = encoder
        .push(&chunk(json!({"content": "Hel"}), None))
        .unwrap();
    assert_eq!(
        names(&first),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta"
        ]
    );
    let events = encoder.fail(529, &Failure::upstream("Overloaded"));
    assert_eq!(names(&events), ["error"]);
    assert_eq!(
        data(&events[0]),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
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
fn a_chunk_that_is_not_json_fails() {
    let mut encoder = Encoder::new(info());
    assert!(encoder.push("{\"choices\": [").is_err());
}
