//! Native unit tests (`cargo test --target x86_64-unknown-linux-gnu`). Natively the SDK counts
//! one token per four bytes, which is enough to check the arithmetic.

use serde_json::{Value, json};
use wasmgate_plugin_sdk::{ErrorKind, ProviderConfig, StreamOutput, Usage, count_tokens};

use super::*;
use crate::chunks::word_pieces;
use crate::embeddings::base64_encode;

fn config(options: &str) -> ProviderConfig {
    ProviderConfig {
        name: "echo".into(),
        base_url: None,
        api_key: None,
        models: vec!["echo-1".into(), "echo-2".into()],
        options: options.into(),
    }
}

fn request(operation: Operation, body: Value, stream: bool) -> CanonicalRequest {
    CanonicalRequest {
        native: None,
        operation,
        model: "echo-1".into(),
        body: body.to_string(),
        stream,
        headers: vec![],
    }
}

fn local(options: &str, operation: Operation, body: Value) -> (Value, Option<Usage>) {
    match wasmgate_plugin_sdk::calls::prepare::<Echo>(
        &config(options),
        request(operation, body, false),
    )
    .unwrap()
    {
        Prepared::Local(c) => (serde_json::from_str(&c.body).unwrap(), c.usage),
        Prepared::Upstream(_)
        | Prepared::LocalStream(_)
        | Prepared::UpstreamForm(_)
        | Prepared::UpstreamRaw(_) => panic!("expected a local answer"),
    }
}

fn streamed(options: &str, body: Value) -> (Vec<Value>, StreamOutput) {
    match wasmgate_plugin_sdk::calls::prepare::<Echo>(
        &config(options),
        request(Operation::ChatCompletions, body, true),
    )
    .unwrap()
    {
        Prepared::LocalStream(out) => {
            let events = out
                .events
                .iter()
                .map(|e| serde_json::from_str(e).unwrap())
                .collect();
            (events, out)
        }
        Prepared::Upstream(_)
        | Prepared::Local(_)
        | Prepared::UpstreamForm(_)
        | Prepared::UpstreamRaw(_) => panic!("expected a local stream"),
    }
}

fn chat_body() -> Value {
    json!({
        "model": "echo-1",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hello there, big world"},
            {"role": "assistant", "content": null},
        ],
    })
}

#[test]
fn validate_names_bad_options() {
    assert!(
        wasmgate_plugin_sdk::calls::validate::<Echo>(&config(
            r#"{"reply": "hi", "chunk_size": 3}"#
        ))
        .is_ok()
    );
    let err =
        wasmgate_plugin_sdk::calls::validate::<Echo>(&config(r#"{"replay": "hi"}"#)).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("replay"));
    assert!(err.message.contains("`reply`"), "{}", err.message);
    let err =
        wasmgate_plugin_sdk::calls::validate::<Echo>(&config(r#"{"chunk_size": 0}"#)).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("chunk_size"));
    let err = wasmgate_plugin_sdk::calls::validate::<Echo>(&config(r#"{"chunk_size": "2"}"#))
        .unwrap_err();
    assert_eq!(err.key.as_deref(), Some("chunk_size"));
}

#[test]
fn chat_echoes_the_last_user_message() {
    let (body, usage) = local("{}", Operation::ChatCompletions, chat_body());
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "echo-1");
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-echo-"));
    assert!(body["created"].as_u64().unwrap() > 1_700_000_000);
    let choice = &body["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Hello there, big world");
    assert_eq!(choice["finish_reason"], "stop");

    let per_message =
        |role: &str, text: &str| u64::from(count_tokens(role) + count_tokens(text) + 3);
    let prompt = per_message("system", "Be brief.")
        + per_message("user", "Hello there, big world")
        + per_message("assistant", "")
        + 3;
    let completion = u64::from(count_tokens("Hello there, big world"));
    assert_eq!(usage, Some(Usage::tokens(prompt, completion)));
    assert_eq!(body["usage"]["prompt_tokens"], prompt);
    assert_eq!(body["usage"]["total_tokens"], prompt + completion);
}

#[test]
fn ids_are_deterministic() {
    let (a, _) = local("{}", Operation::ChatCompletions, chat_body());
    let (b, _) = local("{}", Operation::ChatCompletions, chat_body());
    let mut other = chat_body();
    other["messages"][1]["content"] = json!("something else");
    let (c, _) = local("{}", Operation::ChatCompletions, other);
    assert_eq!(a["id"], b["id"]);
    assert_ne!(a["id"], c["id"]);
}

#[test]
fn array_content_and_fixed_reply() {
    let body = json!({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:,"}},
        {"type": "text", "text": "here"},
    ]}]});
    let (answer, _) = local("{}", Operation::ChatCompletions, body.clone());
    assert_eq!(answer["choices"][0]["message"]["content"], "look here");
    let (answer, _) = local(r#"{"reply": "fixed"}"#, Operation::ChatCompletions, body);
    assert_eq!(answer["choices"][0]["message"]["content"], "fixed");

    let no_user = json!({"messages": [{"role": "system", "content": "x"}]});
    let (answer, _) = local("{}", Operation::ChatCompletions, no_user);
    assert_eq!(answer["choices"][0]["message"]["content"], "");
}

#[test]
fn bad_shapes_name_the_param() {
    let prepare = |body: Value| {
        wasmgate_plugin_sdk::calls::prepare::<Echo>(
            &config("{}"),
            request(Operation::ChatCompletions, body, false),
        )
        .unwrap_err()
    };
    let err = prepare(json!({"messages": "hi"}));
    assert_eq!(err.kind, ErrorKind::InvalidRequest);
    assert_eq!(err.param.as_deref(), Some("messages"));
    let err = prepare(json!({"messages": [{"content": "hi"}]}));
    assert_eq!(err.param.as_deref(), Some("messages[0].role"));
    let err = prepare(json!({"messages": [{"role": "user", "content": 3}]}));
    assert_eq!(err.param.as_deref(), Some("messages[0].content"));
}

#[test]
fn stream_chunks_concatenate_to_the_reply() {
    let mut body = chat_body();
    body["stream_options"] = json!({"include_usage": true});
    let (events, out) = streamed(r#"{"chunk_size": 2}"#, body);
    let id = &events[0]["id"];
    assert!(
        events
            .iter()
            .all(|e| &e["id"] == id && e["object"] == "chat.completion.chunk")
    );
    assert_eq!(
        events[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    let pieces: Vec<&str> = events[1..events.len() - 2]
        .iter()
        .map(|e| e["choices"][0]["delta"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(pieces, ["Hello there,", " big world"]);
    let last = &events[events.len() - 2];
    assert_eq!(last["choices"][0]["delta"], json!({}));
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(last["usage"], Value::Null);
    let usage = &events[events.len() - 1];
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"]["completion_tokens"],
        out.usage.unwrap().output_tokens
    );
}

#[test]
fn stream_without_include_usage_still_reports_usage_to_the_host() {
    let (events, out) = streamed("{}", chat_body());
    assert!(events.last().unwrap()["choices"][0]["finish_reason"] == "stop");
    assert!(events.iter().all(|e| e.get("usage").is_none()));
    assert!(out.usage.is_some());
    assert_eq!(events.len(), 1 + 4 + 1, "role, four words, finish");
}

#[test]
fn word_pieces_keep_every_space() {
    let text = "  Hello   big\nwide world  ";
    for words in 1..6 {
        assert_eq!(word_pieces(text, words).concat(), text, "{words} words");
    }
    assert_eq!(word_pieces("a b c", 1), ["a", " b", " c"]);
    assert_eq!(word_pieces("a b c", 2), ["a b", " c"]);
    assert!(word_pieces("", 1).is_empty());
}

fn tool_body() -> Value {
    json!({
        "messages": [{"role": "user", "content": r#"call get_weather {"city": "Paris"}"#}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
        "stream_options": {"include_usage": true},
    })
}

#[test]
fn call_makes_a_tool_call() {
    let (body, _) = local("{}", Operation::ChatCompletions, tool_body());
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["id"], "call_echo_0");
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], r#"{"city": "Paris"}"#);

    let mut without_tools = tool_body();
    without_tools.as_object_mut().unwrap().remove("tools");
    let (body, _) = local("{}", Operation::ChatCompletions, without_tools);
    assert_eq!(
        body["choices"][0]["message"]["content"],
        r#"call get_weather {"city": "Paris"}"#
    );
}

#[test]
fn streamed_tool_call_reassembles() {
    let (events, _) = streamed("{}", tool_body());
    let first = &events[0]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(first["id"], "call_echo_0");
    assert_eq!(first["function"]["name"], "get_weather");
    let arguments: String = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(arguments, r#"{"city": "Paris"}"#);
    assert!(events.len() > 4, "arguments arrive in several chunks");
    assert_eq!(
        events[events.len() - 2]["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[test]
fn embeddings_are_deterministic_unit_vectors() {
    let body = json!({"model": "echo-1", "input": ["alpha", "beta", "alpha"]});
    let (answer, usage) = local("{}", Operation::Embeddings, body);
    assert_eq!(answer["object"], "list");
    assert_eq!(answer["model"], "echo-1");
    let data = answer["data"].as_array().unwrap();
    assert_eq!(data.len(), 3);
    let vector = |i: usize| -> Vec<f64> {
        data[i]["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    assert_eq!(vector(0).len(), 16);
    let norm: f64 = vector(0).iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!((norm - 1.0).abs() < 1e-5, "{norm}");
    assert_eq!(vector(0), vector(2));
    assert_ne!(vector(0), vector(1));
    assert_eq!(data[1]["index"], 1);
    let tokens = u64::from(count_tokens("alpha") * 2 + count_tokens("beta"));
    assert_eq!(usage, Some(Usage::tokens(tokens, 0)));
    assert_eq!(
        answer["usage"],
        json!({"prompt_tokens": tokens, "total_tokens": tokens})
    );
}

#[test]
fn embeddings_take_dimensions_tokens_and_base64() {
    let body = json!({"input": [[1, 2, 3], [4]], "dimensions": 4, "encoding_format": "base64"});
    let (answer, usage) = local("{}", Operation::Embeddings, body);
    assert_eq!(usage, Some(Usage::tokens(4, 0)));
    let b64 = answer["data"][0]["embedding"].as_str().unwrap();
    assert_eq!(b64.len(), 24, "4 floats are 16 bytes");

    let (answer, _) = local(
        "{}",
        Operation::Embeddings,
        json!({"input": "x", "dimensions": 3}),
    );
    assert_eq!(answer["data"][0]["embedding"].as_array().unwrap().len(), 3);

    let prepare = |body: Value| {
        wasmgate_plugin_sdk::calls::prepare::<Echo>(
            &config("{}"),
            request(Operation::Embeddings, body, false),
        )
        .unwrap_err()
    };
    assert_eq!(
        prepare(json!({"input": []})).param.as_deref(),
        Some("input")
    );
    assert_eq!(prepare(json!({"input": 3})).param.as_deref(), Some("input"));
    assert_eq!(
        prepare(json!({"input": "x", "dimensions": 0}))
            .param
            .as_deref(),
        Some("dimensions")
    );
}

#[test]
fn base64_matches_the_standard() {
    assert_eq!(base64_encode(b""), "");
    assert_eq!(base64_encode(b"f"), "Zg==");
    assert_eq!(base64_encode(b"fo"), "Zm8=");
    assert_eq!(base64_encode(b"foo"), "Zm9v");
    assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
    assert_eq!(base64_encode(&[0xff, 0xfe, 0xfd, 0x00]), "//79AA==");
}

#[test]
fn images_repeat_n_times() {
    let (answer, usage) = local(
        "{}",
        Operation::ImageGenerations,
        json!({"prompt": "a cat", "n": 2}),
    );
    let data = answer["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!(data[0]["revised_prompt"], "a cat");
    assert!(
        data[0]["b64_json"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo")
    );
    assert_eq!(usage.unwrap().images, 2);

    let (answer, usage) = local("{}", Operation::ImageGenerations, json!({"prompt": "x"}));
    assert_eq!(answer["data"].as_array().unwrap().len(), 1);
    assert_eq!(usage.unwrap().images, 1);
    let err = wasmgate_plugin_sdk::calls::prepare::<Echo>(
        &config("{}"),
        request(Operation::ImageGenerations, json!({}), false),
    )
    .unwrap_err();
    assert_eq!(err.param.as_deref(), Some("prompt"));
}

#[test]
fn models_are_the_configured_ones() {
    let (answer, usage) = local("{}", Operation::ListModels, json!({}));
    assert_eq!(usage, None);
    assert_eq!(
        answer,
        json!({"object": "list", "data": [
            {"id": "echo-1", "object": "model", "created": 0, "owned_by": "echo"},
            {"id": "echo-2", "object": "model", "created": 0, "owned_by": "echo"},
        ]})
    );
}

#[test]
fn completions_echo_the_prompt_whole_or_word_by_word() {
    let (answer, usage) = local(
        "{}",
        Operation::Completions,
        json!({"prompt": "once upon a time"}),
    );
    assert_eq!(answer["object"], "text_completion");
    assert_eq!(answer["choices"][0]["text"], "once upon a time");
    assert_eq!(
        answer["usage"]["prompt_tokens"],
        usage.unwrap().input_tokens
    );
    let Ok(Prepared::LocalStream(output)) = wasmgate_plugin_sdk::calls::prepare::<Echo>(
        &config("{}"),
        request(
            Operation::Completions,
            json!({"prompt": "once upon a time"}),
            true,
        ),
    ) else {
        panic!("a stream");
    };
    let text: String = output
        .events
        .iter()
        .map(|e| serde_json::from_str::<Value>(e).unwrap())
        .flat_map(|e| e["choices"].as_array().cloned().unwrap_or_default())
        .map(|c| c["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "once upon a time");
    assert!(output.usage.is_some());
}

#[test]
fn moderation_flags_nothing_and_rerank_orders_by_shared_words() {
    let (answer, usage) = local("{}", Operation::Moderations, json!({"input": ["a", "b"]}));
    assert_eq!(answer["results"].as_array().unwrap().len(), 2);
    assert_eq!(answer["results"][0]["flagged"], false);
    assert_eq!(usage, Some(Usage::default()));
    let (answer, usage) = local(
        "{}",
        Operation::Rerank,
        json!({"query": "red apple", "documents": ["a banana", "a red apple", "red car"], "top_n": 2}),
    );
    let order: Vec<u64> = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    assert_eq!(order, [1, 2]);
    assert_eq!(usage.map(|u| u.search_units), Some(1));
}
