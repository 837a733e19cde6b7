use serde_json::{Value, json};
use wasmgate_plugin_sdk::{Call, Dialect, ErrorKind};

use super::{decode, decode_full};
use crate::Responses;

#[test]
fn the_reference_example() {
    let decoded = decode_full(&json!({
        "model": "gpt-4.1",
        "input": "Tell me a three sentence bedtime story about a unicorn.",
    }))
    .unwrap();
    assert_eq!(decoded.model, "gpt-4.1");
    assert!(!decoded.stream);
    assert!(decoded.dropped.is_empty());
    assert_eq!(decoded.echo, "{}");
    let chat: Value = serde_json::from_str(&decoded.body).unwrap();
    assert_eq!(
        chat,
        json!({"model": "gpt-4.1", "messages": [
            {"role": "user", "content": "Tell me a three sentence bedtime story about a unicorn."}]})
    );
}

#[test]
fn instructions_lead_and_messages_keep_their_roles() {
    let (chat, dropped) = decode(&json!({
        "model": "m",
        "instructions": "Talk like a pirate.",
        "input": [
            {"role": "developer", "content": "Be terse."},
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "No emojis."}]},
            {"role": "user", "content": [
                {"type": "input_text", "text": "What is in this image?"},
                {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "low"},
                {"type": "input_image", "file_id": "file-1"},
                {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBE"},
                {"type": "input_file", "file_id": "file-2"},
                {"type": "input_file", "file_url": "https://example.com/a.pdf"},
            ]},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "A cat.", "annotations": []},
                {"type": "refusal", "refusal": "No more."},
            ]},
        ],
    }));
    assert_eq!(
        chat["messages"],
        json!([
            {"role": "system", "content": "Talk like a pirate."},
            {"role": "developer", "content": "Be terse."},
            {"role": "system", "content": "No emojis."},
            {"role": "user", "content": [
                {"type": "text", "text": "What is in this image?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}},
                {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"}},
                {"type": "file", "file": {"file_id": "file-2"}},
            ]},
            {"role": "assistant", "content": "A cat.\nNo more."},
        ])
    );
    assert_eq!(dropped, ["input[2].content[2]", "input[2].content[5]"]);
}

#[test]
fn function_calls_merge_into_one_assistant_message_and_outputs_become_tool_messages() {
    let (chat, dropped) = decode(&json!({
        "model": "m",
        "input": [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
             "arguments": "{\"city\":\"Paris\",\"unit\":\"c\"}", "status": "completed"},
            {"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": "{\"city\":\"Rome\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "18C"},
            {"type": "function_call_output", "call_id": "call_2",
             "output": [{"type": "input_text", "text": "21C"}, {"type": "input_image", "image_url": "https://x/y.png"}]},
            {"type": "function_call", "call_id": "call_3", "name": "get_time", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_3", "output": "noon"},
            {"type": "item_reference", "id": "msg_0"},
        ],
    }));
    assert_eq!(
        chat["messages"],
        json!([
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"unit\":\"c\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
            {"role": "tool", "tool_call_id": "call_2", "content": "21C"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_3", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_3", "content": "noon"},
        ])
    );
    assert_eq!(dropped, ["input[1]", "input[6].output[1]", "input[9]"]);
}

#[test]
fn tools_and_tool_choice() {
    let tools = json!([
        {"type": "function", "name": "get_weather", "description": "Weather of a city",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": false},
        {"type": "web_search_preview"},
        {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
    ]);
    let cases = [
        (json!("auto"), Some(json!("auto")), false),
        (json!("required"), Some(json!("required")), false),
        (json!("none"), Some(json!("none")), false),
        (
            json!({"type": "function", "name": "get_weather"}),
            Some(json!({"type": "function", "function": {"name": "get_weather"}})),
            false,
        ),
        (
            json!({"type": "function", "name": "apply_patch"}),
            None,
            true,
        ),
        (
            json!({"type": "allowed_tools", "mode": "auto", "tools": []}),
            None,
            true,
        ),
        (json!({"type": "web_search_preview"}), None, true),
    ];
    for (choice, expected, choice_dropped) in cases {
        let (chat, dropped) = decode(&json!({
            "model": "m", "input": "hi", "tools": tools, "tool_choice": choice, "parallel_tool_calls": false,
        }));
        assert_eq!(chat.get("tool_choice").cloned(), expected, "{choice}");
        assert_eq!(chat["parallel_tool_calls"], false);
        assert_eq!(
            chat["tools"],
            json!([{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": false}}])
        );
        let mut expected_dropped = vec!["tools[1]", "tools[2]"];
        if choice_dropped {
            expected_dropped.push("tool_choice");
        }
        assert_eq!(dropped, expected_dropped, "{choice}");
    }
    let (chat, dropped) = decode(&json!({
        "model": "m", "input": "hi", "tools": [{"type": "web_search_preview"}],
        "tool_choice": "required", "parallel_tool_calls": true,
    }));
    assert!(chat.get("tools").is_none() && chat.get("tool_choice").is_none());
    assert!(chat.get("parallel_tool_calls").is_none());
    assert_eq!(dropped, ["tools[0]", "tool_choice", "parallel_tool_calls"]);
}

#[test]
fn text_format_becomes_response_format() {
    let schema =
        json!({"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]});
    let cases = [
        (
            json!({"format": {"type": "json_schema", "name": "answer", "schema": schema, "strict": true}}),
            Some(
                json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": true}}),
            ),
            vec![],
        ),
        (
            json!({"format": {"type": "json_object"}}),
            Some(json!({"type": "json_object"})),
            vec![],
        ),
        (
            json!({"format": {"type": "text"}, "verbosity": "low"}),
            Some(json!({"type": "text"})),
            vec!["text.verbosity"],
        ),
        (json!({"verbosity": "medium"}), None, vec!["text.verbosity"]),
    ];
    for (text, expected, expected_dropped) in cases {
        let (chat, dropped) = decode(&json!({"model": "m", "input": "hi", "text": text}));
        assert_eq!(chat.get("response_format").cloned(), expected, "{text}");
        assert_eq!(dropped, expected_dropped, "{text}");
    }
}

#[test]
fn sampling_reasoning_user_and_stream() {
    let decoded = decode_full(&json!({
        "model": "o4-mini", "input": "hi", "max_output_tokens": 500, "temperature": 0.2, "top_p": 0.8,
        "reasoning": {"effort": "high", "summary": "auto"}, "user": "u1", "safety_identifier": "s1",
        "stream": true, "truncation": "auto", "prompt_cache_key": "k",
    }))
    .unwrap();
    assert!(decoded.stream);
    let chat: Value = serde_json::from_str(&decoded.body).unwrap();
    assert_eq!(chat["stream"], true);
    assert_eq!(chat["max_completion_tokens"], 500);
    assert_eq!(chat["temperature"], 0.2);
    assert_eq!(chat["top_p"], 0.8);
    assert_eq!(chat["reasoning_effort"], "high");
    assert_eq!(chat["user"], "u1");
    assert_eq!(
        decoded.dropped,
        ["reasoning.summary", "truncation", "prompt_cache_key"]
    );

    let (chat, _) = decode(&json!({"model": "m", "input": "hi", "safety_identifier": "s1"}));
    assert_eq!(chat["user"], "s1");
}

#[test]
fn the_hosts_fields_leave_the_body_and_what_is_echoed_goes_to_echo() {
    let decoded = decode_full(&json!({
        "model": "m", "input": "hi", "instructions": "Be kind.", "store": false,
        "previous_response_id": "resp_prev", "include": ["reasoning.encrypted_content"],
        "metadata": {"ticket": "42"}, "tools": [{"type": "function", "name": "f"}],
        "temperature": 0.3, "service_tier": "flex",
    }))
    .unwrap();
    let chat: Value = serde_json::from_str(&decoded.body).unwrap();
    for name in [
        "store",
        "previous_response_id",
        "include",
        "metadata",
        "service_tier",
    ] {
        assert!(chat.get(name).is_none(), "{name}");
    }
    assert_eq!(decoded.dropped, ["service_tier"]);
    let echo: Value = serde_json::from_str(&decoded.echo).unwrap();
    assert_eq!(
        echo,
        json!({"instructions": "Be kind.", "store": false, "previous_response_id": "resp_prev",
               "metadata": {"ticket": "42"}, "tools": [{"type": "function", "name": "f"}],
               "temperature": 0.3, "service_tier": "flex"})
    );
}

/// The shape Codex sends: `store: false`, the whole conversation as input with encrypted
/// reasoning, function tools with `strict: false`, and a stream.
#[test]
fn a_codex_request() {
    let decoded = decode_full(&json!({
        "model": "gpt-5-codex", "instructions": "You are Codex.", "stream": true, "store": false,
        "include": ["reasoning.encrypted_content"], "parallel_tool_calls": false,
        "reasoning": {"effort": "medium", "summary": "auto"}, "tool_choice": "auto",
        "prompt_cache_key": "0199-session",
        "tools": [
            {"type": "function", "name": "shell", "description": "Runs a command", "strict": false,
             "parameters": {"type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}},
                            "required": ["command"], "additionalProperties": false}},
            {"type": "function", "name": "update_plan", "strict": false, "parameters": {"type": "object", "properties": {}}},
        ],
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>...</environment_context>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "ls"}], "encrypted_content": "gAAAAB"},
            {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "call_X"},
            {"type": "function_call_output", "call_id": "call_X", "output": "Cargo.toml\nsrc"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Two entries."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
        ],
    }))
    .unwrap();
    assert!(decoded.stream);
    let chat: Value = serde_json::from_str(&decoded.body).unwrap();
    let messages = chat["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 7);
    assert_eq!(
        messages[3]["tool_calls"][0]["function"]["arguments"],
        "{\"command\":[\"ls\"]}"
    );
    assert_eq!(messages[4]["role"], "tool");
    assert_eq!(chat["tool_choice"], "auto");
    assert_eq!(chat["parallel_tool_calls"], false);
    assert_eq!(chat["reasoning_effort"], "medium");
    assert_eq!(
        decoded.dropped,
        ["input[2]", "reasoning.summary", "prompt_cache_key"]
    );
    assert!(!decoded.body.contains("gAAAAB"));
}

#[test]
fn malformed_requests_fail_naming_the_field() {
    let cases = [
        (json!({"input": "hi"}), "model"),
        (json!({"model": "m"}), "input"),
        (json!({"model": "m", "input": 3}), "input"),
        (
            json!({"model": "m", "input": [{"role": "tool", "content": "x"}]}),
            "input[0].role",
        ),
        (
            json!({"model": "m", "input": [{"type": "message", "content": "x"}]}),
            "input[0].role",
        ),
        (
            json!({"model": "m", "input": [{"role": "user"}]}),
            "input[0].content",
        ),
        (
            json!({"model": "m", "input": [{"type": "function_call", "name": "f"}]}),
            "input[0].call_id",
        ),
        (
            json!({"model": "m", "input": [{"type": "function_call_output", "call_id": "c"}]}),
            "input[0].output",
        ),
        (
            json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_text"}]}]}),
            "input[0].content[0].text",
        ),
        (
            json!({"model": "m", "input": "hi", "tools": [{"type": "function"}]}),
            "tools[0].name",
        ),
        (
            json!({"model": "m", "input": "hi", "max_output_tokens": -1}),
            "max_output_tokens",
        ),
        (
            json!({"model": "m", "input": "hi", "tool_choice": "sometimes"}),
            "tool_choice",
        ),
    ];
    for (body, param) in cases {
        let err = decode_full(&body).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidRequest, "{body}");
        assert_eq!(err.param.as_deref(), Some(param), "{body}: {}", err.message);
    }
    assert!(Responses::decode(&Call::new("responses", "not json")).is_err());
}
