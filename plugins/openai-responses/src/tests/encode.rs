use serde_json::{Value, json};
use wasmgate_plugin_sdk::{AnswerInfo, Call, Dialect, ErrorKind, Failure, Usage};

use crate::Responses;

pub fn info(echo: &str) -> AnswerInfo {
    AnswerInfo {
        created: 1_741_476_542,
        echo: echo.to_owned(),
        estimated_input_tokens: 17,
        ..AnswerInfo::new("gpt-4.1", "resp_67ccd2bed1ec")
    }
}

pub fn completion(message: Value, finish: &str, usage: Option<Value>) -> String {
    let mut body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "claude",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    });
    if let Some(usage) = usage {
        body["usage"] = usage;
    }
    body.to_string()
}

fn encode(info: &AnswerInfo, completion: &str, usage: Option<Usage>) -> Value {
    serde_json::from_str(&Responses::encode(info, completion, usage).unwrap()).unwrap()
}

#[test]
fn a_text_answer_is_a_completed_response() {
    let body = completion(
        json!({"role": "assistant", "content": "In a peaceful grove..."}),
        "stop",
        Some(
            json!({"prompt_tokens": 36, "completion_tokens": 87, "total_tokens": 123,
                    "prompt_tokens_details": {"cached_tokens": 0},
                    "completion_tokens_details": {"reasoning_tokens": 0}}),
        ),
    );
    assert_eq!(
        encode(&info("{}"), &body, None),
        json!({
            "id": "resp_67ccd2bed1ec", "object": "response", "created_at": 1_741_476_542,
            "status": "completed", "background": false, "error": null, "incomplete_details": null,
            "instructions": null, "max_output_tokens": null, "max_tool_calls": null, "model": "gpt-4.1",
            "output": [{
                "id": "msg_67ccd2bed1ec_0", "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "In a peaceful grove...", "annotations": [], "logprobs": []}],
            }],
            "parallel_tool_calls": true, "previous_response_id": null,
            "reasoning": {"effort": null, "summary": null}, "service_tier": "default", "store": true,
            "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [],
            "top_logprobs": 0, "top_p": 1.0, "truncation": "disabled",
            "usage": {"input_tokens": 36, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 87,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 123},
            "user": null, "metadata": {},
        })
    );
}

#[test]
fn tool_calls_are_function_call_items() {
    let message = json!({"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"a\":1}"}},
        {"id": "toolu_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
    ]});
    let encoded = encode(&info("{}"), &completion(message, "tool_calls", None), None);
    assert_eq!(encoded["status"], "completed");
    assert_eq!(
        encoded["output"],
        json!([
            {"id": "msg_67ccd2bed1ec_0", "type": "message", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": "Checking.", "annotations": [], "logprobs": []}]},
            {"id": "fc_67ccd2bed1ec_1", "type": "function_call", "status": "completed",
             "arguments": "{\"city\":\"Paris\",\"a\":1}", "call_id": "toolu_1", "name": "get_weather"},
            {"id": "fc_67ccd2bed1ec_2", "type": "function_call", "status": "completed",
             "arguments": "{}", "call_id": "toolu_2", "name": "get_time"},
        ])
    );
}

#[test]
fn the_token_limit_makes_an_incomplete_response() {
    let encoded = encode(
        &info("{}"),
        &completion(json!({"content": "Once upon"}), "length", None),
        None,
    );
    assert_eq!(encoded["status"], "incomplete");
    assert_eq!(
        encoded["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
    assert_eq!(encoded["output"][0]["status"], "incomplete");

    let encoded = encode(
        &info("{}"),
        &completion(
            json!({"content": null, "refusal": "No."}),
            "content_filter",
            None,
        ),
        None,
    );
    assert_eq!(
        encoded["incomplete_details"],
        json!({"reason": "content_filter"})
    );
    assert_eq!(
        encoded["output"][0]["content"],
        json!([{"type": "refusal", "refusal": "No."}])
    );
}

#[test]
fn usage_prefers_the_hosts_count_and_keeps_reasoning_tokens() {
    let body = completion(
        json!({"content": "x"}),
        "stop",
        Some(json!({"prompt_tokens": 1, "completion_tokens": 1,
                    "completion_tokens_details": {"reasoning_tokens": 64}})),
    );
    let usage = Usage {
        cached_input_tokens: 900,
        cache_write_tokens: 50,
        ..Usage::tokens(1000, 120)
    };
    assert_eq!(
        encode(&info("{}"), &body, Some(usage))["usage"],
        json!({"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 900}, "output_tokens": 120,
               "output_tokens_details": {"reasoning_tokens": 64}, "total_tokens": 1120})
    );
    let body = completion(json!({"content": "x"}), "stop", None);
    assert_eq!(encode(&info("{}"), &body, None)["usage"]["total_tokens"], 0);
}

#[test]
fn the_request_is_echoed() {
    let decoded = Responses::decode(&Call::new(
        "responses",
        json!({"model": "gpt-4.1", "input": "hi", "instructions": "Be kind.", "store": false,
                "previous_response_id": "resp_prev", "metadata": {"ticket": "42"}, "temperature": 0.3,
                "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
                "tool_choice": "required", "text": {"format": {"type": "json_object"}},
                "reasoning": {"effort": "low"}, "max_output_tokens": 99, "user": "u",
                "safety_identifier": "s"})
        .to_string(),
    ))
    .unwrap();
    let encoded = encode(
        &info(&decoded.echo),
        &completion(json!({"content": "{}"}), "stop", None),
        None,
    );
    assert_eq!(encoded["instructions"], "Be kind.");
    assert_eq!(encoded["store"], false);
    assert_eq!(encoded["previous_response_id"], "resp_prev");
    assert_eq!(encoded["metadata"], json!({"ticket": "42"}));
    assert_eq!(encoded["temperature"], 0.3);
    assert_eq!(
        encoded["tools"],
        json!([{"type": "function", "name": "f", "parameters": {"type": "object"}}])
    );
    assert_eq!(encoded["tool_choice"], "required");
    assert_eq!(encoded["text"], json!({"format": {"type": "json_object"}}));
    assert_eq!(encoded["reasoning"], json!({"effort": "low"}));
    assert_eq!(encoded["max_output_tokens"], 99);
    assert_eq!(encoded["user"], "u");
    assert_eq!(encoded["safety_identifier"], "s");
    assert_eq!(encoded["model"], "gpt-4.1");
}

#[test]
fn an_answer_that_is_not_a_completion_fails_as_upstream() {
    for body in ["", "[]", "{\"choices\": {}}"] {
        let err = Responses::encode(&info("{}"), body, None).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Upstream, "{body}");
    }
}

#[test]
fn errors_have_openais_shape() {
    let failure = Failure::invalid_request("Invalid 'input[0].role'").with_param("input[0].role");
    let body: Value = serde_json::from_str(&Responses::encode_error(400, &failure)).unwrap();
    assert_eq!(
        body,
        json!({"error": {"message": "Invalid 'input[0].role'", "type": "invalid_request_error",
                         "param": "input[0].role", "code": null}})
    );
    let failure = Failure {
        openai_type: String::new(),
        ..Failure::for_status(503, "busy").with_code("overloaded")
    };
    let body: Value = serde_json::from_str(&Responses::encode_error(503, &failure)).unwrap();
    assert_eq!(body["error"]["type"], "api_error");
    assert_eq!(body["error"]["code"], "overloaded");
}
