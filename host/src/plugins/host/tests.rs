//! The host's loading: by name, reused while unchanged, built-ins that decompress, a dialect
//! plugin through the host.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::*;
use crate::plugins::*;

fn host() -> PluginHost {
    host_with_deadline(Duration::from_millis(200))
}

fn host_with_deadline(cpu_budget: Duration) -> PluginHost {
    let limits = PluginLimits {
        cpu_budget,
        wall_backstop: cpu_budget * 10,
        memory_bytes: 64 << 20,
        max_instances: 4,
        max_stream_instances: 3,
        instance_wait: Duration::from_secs(2),
    };
    PluginHost::new(
        limits,
        None,
        crate::tokenizer::Tokenizer,
        Arc::new(Unobserved),
    )
    .unwrap()
}

#[test]
fn an_unchanged_plugin_is_not_loaded_again() {
    let host = host();
    let compiled = || host.inner.compiled.load(Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("wasmgate-loaded-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    host.load_router("fallback", &dir).unwrap();
    host.load_router("fallback", &dir).unwrap();
    assert_eq!(compiled(), 1, "the built-in is reused");

    // A file of that name takes precedence, and is reused while it stays the same.
    let bytes = built_in("fallback").unwrap();
    let file = dir.join("fallback.wasm");
    std::fs::write(&file, bytes).unwrap();
    host.load_router("fallback", &dir).unwrap();
    host.load_router("fallback", &dir).unwrap();
    assert_eq!(compiled(), 2);

    // A new file (as `plugin build` renames one into place) is loaded again.
    let other = built_in("weighted").unwrap();
    let partial = dir.join(".fallback.wasm.partial");
    std::fs::write(&partial, other).unwrap();
    std::fs::rename(&partial, &file).unwrap();
    host.load_router("fallback", &dir).unwrap();
    assert_eq!(compiled(), 3);
    assert_eq!(host.loaded().len(), 1, "one entry per plugin name");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every embedded plugin decompresses into a WebAssembly component (its preamble: the
/// magic, then the component layer), and packed smaller than it is.
#[test]
fn every_built_in_is_a_compressed_component() {
    assert!(BUILT_IN.len() >= 10, "{} built-ins", BUILT_IN.len());
    for (name, packed) in BUILT_IN {
        let component = built_in(name).unwrap_or_else(|| panic!("{name} does not unpack"));
        assert_eq!(&component[..8], b"\0asm\x0d\0\x01\0", "{name}");
        assert!(packed.len() < component.len(), "{name}");
    }
}

/// The built-in dialect plugins load as dialects and translate through the host's bindings:
/// a Messages request decodes into chat JSON, a whole answer and a stream encode back.
#[tokio::test]
async fn a_dialect_plugin_decodes_and_encodes_through_the_host() {
    // A deadline that a loaded test machine cannot miss: the calls are checked, not timed.
    let host = host_with_deadline(Duration::from_secs(10));
    let dir = std::env::temp_dir();
    assert!(host.load_provider("anthropic-messages", &dir).is_err());
    let plugin = host.load_dialect("anthropic-messages", &dir).unwrap();
    let mut call = plugin.start(SlotKind::Call).await.unwrap();
    let body = r#"{"model":"m","max_tokens":9,"system":"be brief",
        "messages":[{"role":"user","content":[{"type":"text","text":"hi",
        "cache_control":{"type":"ephemeral"}}]}]}"#;
    let request = DialectCallRequest {
        route: "messages".into(),
        params: Vec::new(),
        body: body.into(),
    };
    let decoded = call.decode(&request).await.unwrap().unwrap();
    assert_eq!((decoded.model.as_str(), decoded.stream), ("m", false));
    let chat: serde_json::Value = serde_json::from_str(&decoded.body).unwrap();
    assert_eq!(chat["messages"][0]["role"], "system");
    let content = &chat["messages"][1]["content"];
    assert!(content == "hi" || content[0]["text"] == "hi", "{content}");
    assert!(decoded.dropped.iter().any(|d| d.contains("cache_control")));

    let info = AnswerInfo {
        route: "messages".into(),
        model: "m".into(),
        id: "msg_1".into(),
        created: 1,
        estimated_input_tokens: 5,
        echo: decoded.echo.clone(),
    };
    let completion = r#"{"id":"c","object":"chat.completion","model":"up","choices":[{"index":0,
        "message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}"#;
    let answer = call.encode(&info, completion, None).await.unwrap().unwrap();
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["type"], "message");
    assert_eq!(answer["content"][0]["text"], "hello");
    assert_eq!(answer["stop_reason"], "end_turn");

    let mut stream = plugin
        .start(SlotKind::Stream)
        .await
        .unwrap()
        .open_stream(&info)
        .await
        .unwrap();
    let chunk = r#"{"id":"c","object":"chat.completion.chunk","model":"up","choices":[{"index":0,
        "delta":{"role":"assistant","content":"he"},"finish_reason":null}]}"#;
    let mut names: Vec<String> = Vec::new();
    for event in stream.push(&[chunk.to_owned()]).await.unwrap().unwrap() {
        names.push(event.name);
    }
    for event in stream.finish(None).await.unwrap().unwrap() {
        names.push(event.name);
    }
    assert_eq!(names.first().map(String::as_str), Some("message_start"));
    assert!(names.iter().any(|n| n == "content_block_delta"));
    assert_eq!(names.last().map(String::as_str), Some("message_stop"));
}
