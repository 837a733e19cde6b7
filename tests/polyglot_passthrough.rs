//! Pass-through routes served by providers written with the Python and JavaScript SDKs
//! (`examples/plugins/py-provider`, `examples/plugins/js-provider`, built by
//! `scripts/polyglot.sh`): the SDK adds the entry's key, the JavaScript example its beta header
//! where the upstream wants one, and reads the usage of a whole answer and of a stream's tail,
//! against the strict mock of `common/mock_passthrough.rs`.

use crate::common;
use crate::polyglot::polyglot_plugins;

use common::mock_passthrough::{COMPLETION_TOKENS, MockPassthrough, OPENAI_KEY, PROMPT_TOKENS};
use common::{TestGateway, http, plugin_cache_dir};
use serde_json::{Value, json};

fn config(mock: &MockPassthrough) -> String {
    format!(
        r#"
auth: {{ required: true }}
plugins: {{ dir: "{dir}", cache_dir: "{cache}" }}
providers:
  py:
    plugin: py-provider
    catalog: openai
    base_url: {openai}
    api_key: {OPENAI_KEY}
    models: [gpt-4o-mini]
  js:
    plugin: js-provider
    catalog: openai
    base_url: {openai}
    api_key: {OPENAI_KEY}
    models: [gpt-4o-mini]
"#,
        dir = polyglot_plugins().display(),
        cache = plugin_cache_dir().display(),
        openai = mock.openai_url(),
    )
}

#[tokio::test]
async fn python_and_javascript_providers_serve_pass_through_routes_with_keys_and_usage() {
    let mock = MockPassthrough::start().await;
    let gateway = TestGateway::start(&config(&mock)).await;
    let key = gateway
        .passthrough_key(&["py/chat/*", "js/chat/*", "js/vector_stores"])
        .await;
    let chat = json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]});
    for entry in ["py", "js"] {
        let url = gateway.url(&format!("/passthrough/{entry}/chat/completions"));
        let whole = http()
            .post(&url)
            .bearer_auth(&key)
            .header("x-request-id", format!("{entry}-whole"))
            .json(&chat)
            .send()
            .await
            .unwrap();
        assert_eq!(whole.status(), 200, "{entry}");
        let answer: Value = whole.json().await.unwrap();
        assert_eq!(answer["choices"][0]["message"]["content"], "Passed.");

        let mut streamed = chat.clone();
        streamed["stream"] = json!(true);
        streamed["stream_options"] = json!({"include_usage": true});
        let stream = http()
            .post(&url)
            .bearer_auth(&key)
            .header("x-request-id", format!("{entry}-stream"))
            .json(&streamed)
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200, "{entry}");
        assert_eq!(stream.headers()["content-type"], "text/event-stream");
        // The upstream's events, as it wrote them.
        let body = stream.text().await.unwrap();
        let events: Vec<&str> = body.lines().filter(|l| l.starts_with("data:")).collect();
        assert_eq!(events.len(), 5, "{entry}: {body}");
        assert!(body.contains(r#""content":"Pass""#) && body.ends_with("data: [DONE]\n\n"));

        for id in [format!("{entry}-whole"), format!("{entry}-stream")] {
            let record = gateway.record_of(&id).await;
            assert_eq!(
                (record.operation.as_str(), record.status),
                ("passthrough", 200)
            );
            assert_eq!(record.provider.as_deref(), Some(entry), "{id}");
            assert_eq!(record.model.as_deref(), Some("gpt-4o-mini"), "{id}");
            assert_eq!(
                (record.input_tokens, record.output_tokens, record.estimated),
                (PROMPT_TOKENS, COMPLETION_TOKENS, false),
                "{id}"
            );
            assert!(
                record.cost_micros.is_some_and(|c| c > 0),
                "{id}: {record:?}"
            );
        }
    }

    // The JavaScript example adds the beta header to the Assistants-era endpoints.
    let stores = http()
        .get(gateway.url("/passthrough/js/vector_stores"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(stores.status(), 200);
    // Not allowed for this key: refused before anything is sent.
    let refused = http()
        .get(gateway.url("/passthrough/py/vector_stores"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);

    // The upstream saw its own key only, never the gateway's (the mock refuses anything else).
    let received = mock.received().await;
    assert_eq!(received.len(), 5, "{received:?}");
    for request in &received {
        assert_eq!(
            request.headers["authorization"],
            format!("Bearer {OPENAI_KEY}").as_str()
        );
        let beta = request.headers.get("openai-beta");
        if request.uri == "/v1/vector_stores" {
            assert_eq!(beta.unwrap(), "assistants=v2");
        } else {
            assert!(beta.is_none(), "{request:?}");
        }
    }
}
