use serde_json::json;

use super::{decode, decode_full};
use crate::Messages;
use wasmgate_plugin_sdk::{Call, Dialect, ErrorKind};

#[test]
fn the_reference_example() {
    let body = json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Hello, world"}],
    });
    let decoded = decode_full(&body).unwrap();
    assert_eq!(decoded.model, "claude-sonnet-4-5");
    assert!(!decoded.stream);
    assert!(decoded.dropped.is_empty(), "{:?}", decoded.dropped);
    let canonical: serde_json::Value = serde_json::from_str(&decoded.body).unwrap();
    assert_eq!(
        canonical,
        json!({
            "model": "claude-sonnet-4-5",
            "messages": [{"role": "user", "content": "Hello, world"}],
            "max_completion_tokens": 1024,
        })
    );
}

#[test]
fn system_as_string_and_as_blocks() {
    let (chat, dropped) = decode(&json!({
        "model": "m", "max_tokens": 10, "system": "Be brief.",
        "messages": [{"role": "user", "content": "hi"}],
    }));
    assert_eq!(
        chat["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );

    let (chat, dropped_blocks) = decode(&json!({
        "model": "m", "max_tokens": 10,
        "system": [
            {"type": "text", "text": "You are Claude Code."},
            {"type": "text", "text": "Follow the rules.", "cache_control": {"type": "ephemeral"}},
        ],
        "messages": [{"role": "user", "content": "hi"}],
    }));
    assert!(dropped.is_empty());
    assert_eq!(
        chat["messages"][0],
        json!({"role": "system", "content": "You are Claude Code.\n\nFollow the rules."})
    );
    assert_eq!(dropped_blocks, ["system[1].cache_control"]);
}

#[test]
fn images_and_documents() {
    let (chat, dropped) = decode(&json!({
        "model": "m", "max_tokens": 10,
        "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}, "title": "q3.pdf"},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "plain words"}},
            {"type": "document", "source": {"type": "content", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}},
            {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
            {"type": "image", "source": {"type": "file", "file_id": "file_1"}},
            {"type": "text", "text": "What is in these?", "cache_control": {"type": "ephemeral"}},
        ]}],
    }));
    assert_eq!(
        chat["messages"][0]["content"],
        json!([
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "q3.pdf"}},
            {"type": "text", "text": "plain words"},
            {"type": "text", "text": "a\n\nb"},
            {"type": "text", "text": "What is in these?"},
        ])
    );
    assert_eq!(
        dropped,
        [
            "messages[0].content[5]",
            "messages[0].content[6]",
            "messages[0].content[7].cache_control"
        ]
    );
}

#[test]
fn tool_use_and_tool_results_round_trip() {
    let (chat, dropped) = decode(&json!({
        "model": "m", "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Two calls.", "signature": "sig"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris", "unit": "c"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
                 "content": [{"type": "text", "text": "timeout"}]},
                {"type": "text", "text": "Thanks"},
            ]},
        ],
    }));
    let messages = chat["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5);
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"], "Checking.");
    let calls = messages[1]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["id"], "toolu_1");
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    // The arguments keep the order the model wrote them in.
    assert_eq!(
        calls[0]["function"]["arguments"],
        r#"{"city":"Paris","unit":"c"}"#
    );
    assert_eq!(
        messages[2],
        json!({"role": "tool", "tool_call_id": "toolu_1", "content": "18C"})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "toolu_2", "content": "Error: timeout"})
    );
    assert_eq!(messages[4], json!({"role": "user", "content": "Thanks"}));
    assert_eq!(dropped, ["messages[1].content[0]"]);
}

#[test]
fn images_in_tool_results_follow_in_a_user_message() {
    let (chat, _) = decode(&json!({
        "model": "m", "max_tokens": 10,
        "messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "screenshot", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "here"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}},
            ]}]},
        ],
    }));
    let messages = chat["messages"].as_array().unwrap();
    assert_eq!(messages[0]["content"], serde_json::Value::Null);
    assert_eq!(
        messages[1],
        json!({"role": "tool", "tool_call_id": "t1", "content": "here"})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}}]})
    );
}

#[test]
fn redacted_thinking_alone_leaves_no_assistant_turn() {
    let (chat, dropped) = decode(&json!({
        "model": "m", "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xyz"}]},
            {"role": "user", "content": "b"},
        ],
    }));
    assert_eq!(chat["messages"].as_array().unwrap().len(), 2);
    assert_eq!(dropped, ["messages[1].content[0]"]);
}

#[test]
fn tools_and_tool_choice() {
    let tools = json!([
        {"name": "get_weather", "description": "Weather of a city",
         "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
         "cache_control": {"type": "ephemeral"}},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
        {"type": "custom", "name": "noop", "input_schema": {"type": "object"}},
    ]);
    let cases = [
        (json!({"type": "auto"}), json!("auto"), None),
        (json!({"type": "any"}), json!("required"), None),
        (json!({"type": "none"}), json!("none"), None),
        (
            json!({"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true}),
            json!({"type": "function", "function": {"name": "get_weather"}}),
            Some(false),
        ),
        (
            json!({"type": "auto", "disable_parallel_tool_use": false}),
            json!("auto"),
            None,
        ),
    ];
    for (choice, expected, parallel) in cases {
        let (chat, dropped) = decode(&json!({
            "model": "m", "max_tokens": 10, "tools": tools, "tool_choice": choice,
            "messages": [{"role": "user", "content": "hi"}],
        }));
        assert_eq!(chat["tool_choice"], expected, "{choice}");
        assert_eq!(
            chat.get("parallel_tool_calls").and_then(|p| p.as_bool()),
            parallel,
            "{choice}"
        );
        assert_eq!(dropped, ["tools[0].cache_control", "tools[1]"], "{choice}");
        assert_eq!(
            chat["tools"],
            json!([
                {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
                {"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}},
            ])
        );
    }
}

#[test]
fn a_choice_of_a_dropped_tool_is_dropped_and_so_are_settings_without_tools() {
    let (chat, dropped) = decode(&json!({
        "model": "m", "max_tokens": 10,
        "tools": [{"type": "web_search_20250305", "name": "web_search"}],
        "tool_choice": {"type": "tool", "name": "web_search", "disable_parallel_tool_use": true},
        "messages": [{"role": "user", "content": "hi"}],
    }));
    assert!(chat.get("tools").is_none());
    assert!(chat.get("tool_choice").is_none());
    assert!(chat.get("parallel_tool_calls").is_none());
    assert_eq!(dropped, ["tools[0]", "tool_choice", "parallel_tool_calls"]);

    let (chat, dropped) = decode(&json!({
        "model": "m", "max_tokens": 10, "tool_choice": {"type": "auto"},
        "messages": [{"role": "user", "content": "hi"}],
    }));
    assert!(chat.get("tool_choice").is_none());
    assert_eq!(dropped, ["tool_choice"]);
}

#[test]
fn sampling_metadata_and_stream() {
    let decoded = decode_full(&json!({
        "model": "m", "max_tokens": 300, "temperature": 0.5, "top_p": 0.9, "top_k": 40,
        "stop_sequences": ["END", "STOP"], "metadata": {"user_id": "u-123"}, "stream": true,
        "thinking": {"type": "enabled", "budget_tokens": 2048}, "service_tier": "auto",
        "messages": [{"role": "user", "content": "hi"}],
    }))
    .unwrap();
    assert!(decoded.stream);
    let chat: serde_json::Value = serde_json::from_str(&decoded.body).unwrap();
    assert_eq!(chat["stream"], true);
    assert_eq!(chat["max_completion_tokens"], 300);
    assert_eq!(chat["temperature"], 0.5);
    assert_eq!(chat["top_p"], 0.9);
    assert_eq!(chat["stop"], json!(["END", "STOP"]));
    assert_eq!(chat["user"], "u-123");
    assert!(chat.get("top_k").is_none() && chat.get("thinking").is_none());
    assert!(chat.get("reasoning_effort").is_none());
    assert_eq!(decoded.dropped, ["top_k", "thinking", "service_tier"]);
}

#[test]
fn a_user_id_too_long_for_openai_is_dropped() {
    let long = format!(
        "user_{}_account__session_{}",
        "a".repeat(64),
        "b".repeat(36)
    );
    let (chat, dropped) = decode(&json!({
        "model": "m", "max_tokens": 1, "metadata": {"user_id": long},
        "messages": [{"role": "user", "content": "hi"}],
    }));
    assert!(chat.get("user").is_none());
    assert_eq!(dropped, ["metadata.user_id"]);
}

#[test]
fn malformed_requests_fail_naming_the_field() {
    let cases = [
        (json!({"max_tokens": 1, "messages": []}), "model"),
        (json!({"model": "m", "max_tokens": 1}), "messages"),
        (
            json!({"model": "m", "messages": [{"role": "system", "content": "x"}]}),
            "messages[0].role",
        ),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "text"}]}]}),
            "messages[0].content[0].text",
        ),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64"}}]}]}),
            "messages[0].content[0].source.media_type",
        ),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "image", "source": 7}]}]}),
            "messages[0].content[0].source",
        ),
        (
            json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}),
            "messages[0].content[0].tool_use_id",
        ),
        (
            json!({"model": "m", "messages": [], "max_tokens": "many"}),
            "max_tokens",
        ),
        (
            json!({"model": "m", "messages": [], "tools": [{"input_schema": {}}]}),
            "tools[0].name",
        ),
        (
            json!({"model": "m", "messages": [], "tool_choice": {"type": "sometimes"}}),
            "tool_choice.type",
        ),
    ];
    for (body, param) in cases {
        let err = decode_full(&body).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidRequest, "{body}");
        assert_eq!(err.param.as_deref(), Some(param), "{body}: {}", err.message);
        assert_eq!(err.openai_type, "invalid_request_error");
    }
    for body in ["", "[]", "{\"model\":", "null"] {
        let err = Messages::decode(&Call::new("messages", body)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidRequest, "{body}");
    }
}

/// The shape Claude Code sends: a system prompt in blocks with cache breakpoints, many tools
/// (the last one marked for caching), a conversation with tool results, thinking and a stream.
#[test]
fn a_claude_code_request() {
    let mut tools: Vec<_> = (0..40)
        .map(|i| {
            json!({"name": format!("Tool{i}"), "description": "does things",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}})
        })
        .collect();
    tools[39]["cache_control"] = json!({"type": "ephemeral"});
    let body = json!({
        "model": "claude-sonnet-4-5-20250929", "max_tokens": 32000, "stream": true,
        "system": [
            {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Rules...", "cache_control": {"type": "ephemeral"}},
        ],
        "tools": tools,
        "metadata": {"user_id": format!("user_{}_account_{}_session_{}", "f".repeat(64), "1".repeat(36), "2".repeat(36))},
        "thinking": {"type": "enabled", "budget_tokens": 31999},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "fix the bug", "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "look", "signature": "EqQB"},
                {"type": "tool_use", "id": "toolu_01", "name": "Tool3", "input": {"path": "src/lib.rs"}},
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "fn main() {}",
              "cache_control": {"type": "ephemeral"}}]},
        ],
    });
    let decoded = decode_full(&body).unwrap();
    assert!(decoded.stream);
    let chat: serde_json::Value = serde_json::from_str(&decoded.body).unwrap();
    assert_eq!(chat["tools"].as_array().unwrap().len(), 40);
    assert_eq!(chat["messages"].as_array().unwrap().len(), 4);
    assert_eq!(chat["messages"][3]["role"], "tool");
    assert_eq!(
        decoded.dropped,
        [
            "system[0].cache_control",
            "system[1].cache_control",
            "messages[0].content[0].cache_control",
            "messages[1].content[0]",
            "messages[2].content[0].cache_control",
            "tools[39].cache_control",
            "metadata.user_id",
            "thinking",
        ]
    );
    // No value of a dropped field reaches the canonical body.
    assert!(!decoded.body.contains("ephemeral") && !decoded.body.contains("EqQB"));
}
