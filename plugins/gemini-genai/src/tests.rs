use serde_json::{Value, json};
use wasmgate_plugin_sdk::{AnswerInfo, Call, Dialect, ErrorKind, Failure, Framing, StreamEncoder};

use crate::Gemini;
use crate::stream::Encoder;

fn call(route: &str, model: &str, body: &Value) -> Call {
    Call {
        route: route.into(),
        params: vec![("model".into(), model.into())],
        body: body.to_string(),
    }
}

fn chat(route: &str, body: &Value) -> (Value, Vec<String>) {
    let decoded = Gemini::decode(&call(route, "openai/gpt-4o-mini", body)).unwrap();
    (
        serde_json::from_str(&decoded.body).unwrap(),
        decoded.dropped,
    )
}

#[test]
fn a_conversation_with_a_function_round_trip_decodes() {
    let body = json!({
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Paris?"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]},
            {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"temp": 21}}}]}
        ],
        "tools": [{"functionDeclarations": [{"name": "get_weather", "description": "d",
            "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING", "nullable": true}},
                           "required": ["city"], "propertyOrdering": ["city"]}}]},
                  {"googleSearch": {}}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
        "generationConfig": {"temperature": 0.2, "maxOutputTokens": 50, "stopSequences": ["x"],
            "responseMimeType": "application/json", "thinkingConfig": {"thinkingBudget": 0}, "topK": 3},
        "safetySettings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}]
    });
    let (chat, dropped) = chat("generateContent", &body);
    assert_eq!(chat["model"], "openai/gpt-4o-mini");
    assert_eq!(
        chat["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );
    assert_eq!(
        chat["messages"][1]["content"][1]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgo="
    );
    let call_id = chat["messages"][2]["tool_calls"][0]["id"].as_str().unwrap();
    assert_eq!(
        chat["messages"][2]["tool_calls"][0]["function"]["arguments"],
        r#"{"city":"Paris"}"#
    );
    assert_eq!(chat["messages"][3]["role"], "tool");
    assert_eq!(chat["messages"][3]["tool_call_id"], call_id);
    assert_eq!(
        chat["tools"][0]["function"]["parameters"]["properties"]["city"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(chat["tools"][0]["function"]["parameters"]["type"], "object");
    assert!(
        chat["tools"][0]["function"]["parameters"]
            .get("propertyOrdering")
            .is_none()
    );
    assert_eq!(chat["tool_choice"]["function"]["name"], "get_weather");
    assert_eq!(chat["max_completion_tokens"], 50);
    assert_eq!(chat["response_format"]["type"], "json_object");
    for name in [
        "safetySettings",
        "tools[1].googleSearch",
        "generationConfig.thinkingConfig",
        "generationConfig.topK",
    ] {
        assert!(dropped.iter().any(|d| d == name), "{name}: {dropped:?}");
    }
}

#[test]
fn roles_and_orphan_responses_are_refused_as_google_refuses_them() {
    let bad_role = json!({"contents": [{"role": "assistant", "parts": [{"text": "hi"}]}]});
    let err = Gemini::decode(&call("generateContent", "m", &bad_role)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidRequest);
    let orphan = json!({"contents": [{"role": "user", "parts": [
        {"functionResponse": {"name": "f", "response": {}}}]}]});
    let err = Gemini::decode(&call("generateContent", "m", &orphan)).unwrap_err();
    assert!(err.message.contains("no functionCall"), "{}", err.message);
    let body: Value = serde_json::from_str(&Gemini::encode_error(400, &err)).unwrap();
    assert_eq!(body["error"]["code"], 400);
    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
}

#[test]
fn schemas_and_stream_framing() {
    let body = json!({"contents": [{"parts": [{"text": "hi"}]}], "generationConfig": {
        "responseMimeType": "application/json",
        "responseJsonSchema": {"type": "object", "properties": {"a": {"type": "integer"}}}}});
    let (chat, _) = chat("streamGenerateContent", &body);
    assert_eq!(chat["stream"], true);
    assert_eq!(
        chat["response_format"]["json_schema"]["schema"]["properties"]["a"]["type"],
        "integer"
    );
    let decoded = Gemini::decode(&call("streamGenerateContent", "m", &body)).unwrap();
    assert_eq!(decoded.framing, Framing::JsonArray);
    let mut sse = call("streamGenerateContent", "m", &body);
    sse.params.push(("alt".into(), "sse".into()));
    assert_eq!(Gemini::decode(&sse).unwrap().framing, Framing::Sse);
}

fn info(route: &str) -> AnswerInfo {
    AnswerInfo {
        route: route.into(),
        ..AnswerInfo::new("openai/gpt-4o-mini", "resp_1")
    }
}

#[test]
fn a_whole_answer_with_a_call_encodes() {
    let completion = json!({"id": "c", "object": "chat.completion", "model": "gpt-4o-mini", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": "Let me look.", "tool_calls": [{"id": "call_9", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}});
    let out = Gemini::encode(&info("generateContent"), &completion.to_string(), None).unwrap();
    let out: Value = serde_json::from_str(&out).unwrap();
    let candidate = &out["candidates"][0];
    assert_eq!(candidate["finishReason"], "STOP");
    assert_eq!(candidate["content"]["role"], "model");
    assert_eq!(candidate["content"]["parts"][0]["text"], "Let me look.");
    assert_eq!(
        candidate["content"]["parts"][1]["functionCall"],
        json!({"id": "call_9", "name": "get_weather", "args": {"city": "Paris"}})
    );
    assert_eq!(out["usageMetadata"]["promptTokenCount"], 10);
    assert_eq!(out["usageMetadata"]["totalTokenCount"], 15);
    assert_eq!(out["responseId"], "resp_1");
}

#[test]
fn a_stream_encodes_text_as_it_comes_and_calls_whole_at_the_end() {
    let mut encoder = Encoder::new(info("streamGenerateContent"));
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": "c", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    let first = encoder
        .push(&chunk(json!({"role": "assistant", "content": "Hel"}), None))
        .unwrap();
    assert_eq!(first.len(), 1);
    assert!(first[0].name.is_empty());
    let data: Value = serde_json::from_str(&first[0].data).unwrap();
    assert_eq!(data["candidates"][0]["content"]["parts"][0]["text"], "Hel");
    let pieces = [
        json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{\"a\""}}]}),
        json!({"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]}),
    ];
    for piece in pieces {
        assert!(encoder.push(&chunk(piece, None)).unwrap().is_empty());
    }
    assert!(
        encoder
            .push(&chunk(json!({}), Some("tool_calls")))
            .unwrap()
            .is_empty()
    );
    let usage = wasmgate_plugin_sdk::Usage {
        input_tokens: 7,
        output_tokens: 3,
        cached_input_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        images: 0,
        ..wasmgate_plugin_sdk::Usage::default()
    };
    let last = encoder.finish(Some(usage)).unwrap();
    let data: Value = serde_json::from_str(&last[0].data).unwrap();
    assert_eq!(
        data["candidates"][0]["content"]["parts"][0]["functionCall"],
        json!({"id": "call_1", "name": "f", "args": {"a": 1}})
    );
    assert_eq!(data["candidates"][0]["finishReason"], "STOP");
    assert_eq!(data["usageMetadata"]["candidatesTokenCount"], 3);
    let failed = encoder.fail(429, &Failure::for_status(429, "slow down"));
    let data: Value = serde_json::from_str(&failed[0].data).unwrap();
    assert_eq!(data["error"]["status"], "RESOURCE_EXHAUSTED");
}

#[test]
fn embeddings_count_and_models() {
    let one = json!({"content": {"parts": [{"text": "hello"}]}, "outputDimensionality": 8, "taskType": "RETRIEVAL_QUERY"});
    let decoded = Gemini::decode(&call(
        "embedContent",
        "models/openai/text-embedding-3-small",
        &one,
    ))
    .unwrap();
    let body: Value = serde_json::from_str(&decoded.body).unwrap();
    assert_eq!(
        body,
        json!({"model": "openai/text-embedding-3-small", "input": ["hello"], "dimensions": 8})
    );
    assert_eq!(decoded.dropped, ["taskType"]);
    let list =
        json!({"object": "list", "data": [{"object": "embedding", "index": 1, "embedding": [0.5]},
        {"object": "embedding", "index": 0, "embedding": [0.25]}]})
        .to_string();
    let batch: Value =
        serde_json::from_str(&Gemini::encode(&info("batchEmbedContents"), &list, None).unwrap())
            .unwrap();
    assert_eq!(
        batch,
        json!({"embeddings": [{"values": [0.25]}, {"values": [0.5]}]})
    );
    let count = Gemini::encode_count(&info("countTokens"), 12);
    assert_eq!(count, r#"{"totalTokens":12}"#);
    let models = json!({"object": "list", "data": [{"id": "openai/gpt-4o", "object": "model", "kind": "chat"}]}).to_string();
    let listed: Value =
        serde_json::from_str(&Gemini::encode_models("listModels", &models).unwrap()).unwrap();
    assert_eq!(listed["models"][0]["name"], "models/openai/gpt-4o");
}
