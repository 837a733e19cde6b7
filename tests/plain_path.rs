//! The plain path (issue 38): an operation the provider plugin declares plain (OpenAI's chat
//! completions and embeddings here) is sent and read by the host without an instance of the
//! plugin, and must be indistinguishable from the plugin's own path: the same bytes upstream,
//! the same bytes to the client, the same ledger record. Two entries on one mock differ only in
//! `plain_path`; each request goes to both and what each side saw is compared.

use serde_json::{Value, json};

use crate::common::TestGateway;
use crate::common::gateway::{Gateway, Provider};
use crate::common::mock_providers::{KEY, MockProvider};
use crate::common::mock_raw::{COMPLETION, EMBEDDINGS, MockRaw, RawRequest};

/// The entry on the host's path, and the one on the plugin's: names of one length, so that an
/// error message naming its entry differs in that name only.
const HOST: &str = "viahost";
const PLUGIN: &str = "viaplug";
const MODELS: [&str; 5] = [
    "gpt-4o-mini",
    "text-embedding-3-small",
    "error-429",
    "garbage",
    "broken-stream",
];

async fn gateway(mock: &MockRaw, anthropic: &MockProvider) -> TestGateway {
    // The organization and a configured header must reach the upstream on both paths.
    let entry = |plain: bool| {
        Provider::at("openai", &mock.base_url(), "sk-raw-key")
            .models(MODELS)
            .options("{ organization: org-1, headers: { x-extra: one } }")
            .set("plain_path", plain)
    };
    let claude =
        Provider::at("anthropic", &anthropic.base_url(), KEY).models(["claude-sonnet-4-5"]);
    Gateway::builder()
        .provider(HOST, entry(true))
        .provider(PLUGIN, entry(false))
        .provider("claude", claude)
        .start()
        .await
}

/// What one request did, on one path.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    upstream: Vec<RawRequest>,
    status: u16,
    answer: String,
    /// The ledger record's usage, cost, status and error type.
    record: Value,
    /// Plugin instances the request made.
    instances: u64,
}

async fn send(
    gateway: &TestGateway,
    mock: &MockRaw,
    path: &str,
    entry: &str,
    body: &Value,
) -> Seen {
    let id = format!("plain-{}", uuid::Uuid::new_v4());
    let mut body = body.clone();
    let model = format!("{entry}/{}", body["model"].as_str().unwrap());
    body["model"] = model.into();
    let before = gateway.state.plugins.work();
    let response = crate::common::http()
        .post(gateway.url(path))
        .header("x-request-id", &id)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let answer = response.text().await.unwrap();
    let r = gateway.record_of(&id).await;
    let instances = gateway.state.plugins.work().instantiations - before.instantiations;
    let mut upstream = mock.take();
    for request in &mut upstream {
        // A trace's id is new on every request, whichever path sent it.
        request.headers.retain(|(name, _)| name != "traceparent");
    }
    Seen {
        upstream,
        status,
        // Where the entry's name is written (an error message), it is the host's.
        answer: answer.replace(PLUGIN, HOST),
        record: json!({
            "model": r.model, "operation": r.operation, "input": r.input_tokens,
            "output": r.output_tokens, "cached": r.cached_input_tokens,
            "reasoning": r.reasoning_tokens, "cost": r.cost_micros, "status": r.status,
            "error": r.error_type, "estimated": r.estimated,
        }),
        instances,
    }
}

/// `body` through the plugin's path and the host's: returns the host's, having checked that
/// everything but the plugin instances made is the same.
async fn both(gateway: &TestGateway, mock: &MockRaw, path: &str, body: Value) -> Seen {
    let plugin = send(gateway, mock, path, PLUGIN, &body).await;
    let host = send(gateway, mock, path, HOST, &body).await;
    assert!(plugin.instances > 0, "the plugin's path made no instance");
    assert_eq!(
        Seen {
            instances: plugin.instances,
            ..host.clone()
        },
        plugin,
        "{body}"
    );
    host
}

#[tokio::test]
async fn chat_and_embeddings_go_upstream_and_back_as_the_plugin_sends_them() {
    let (mock, anthropic) = (MockRaw::start().await, MockProvider::anthropic().await);
    let gateway = gateway(&mock, &anthropic).await;
    let messages = json!([{"role": "user", "content": "Say hi."}]);

    let whole = both(
        &gateway,
        &mock,
        "/v1/chat/completions",
        json!({"model": "gpt-4o-mini", "messages": messages, "temperature": 0.5}),
    )
    .await;
    assert_eq!((whole.status, whole.answer.as_str()), (200, COMPLETION));
    assert_eq!(
        whole.instances, 0,
        "a plain request needs no plugin instance"
    );
    let sent = &whole.upstream[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    let header = |name: &str| {
        sent.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(header("authorization"), Some("Bearer sk-raw-key"));
    assert_eq!(header("openai-organization"), Some("org-1"));
    assert_eq!(header("x-extra"), Some("one"));
    assert_eq!(
        (
            whole.record["input"].as_u64(),
            whole.record["reasoning"].as_u64()
        ),
        (Some(11), Some(1))
    );
    assert!(
        whole.record["cost"].as_i64().is_some_and(|c| c > 0),
        "{}",
        whole.record
    );

    for include_usage in [false, true] {
        let streamed = both(&gateway, &mock, "/v1/chat/completions", json!({"model": "gpt-4o-mini",
            "messages": messages, "stream": true, "stream_options": {"include_usage": include_usage}})).await;
        assert_eq!(
            streamed.instances, 0,
            "a plain stream needs no plugin instance"
        );
        assert!(
            streamed.answer.contains(r#""content":" there""#),
            "{}",
            streamed.answer
        );
        assert_eq!(
            streamed.answer.contains(r#""prompt_tokens":11"#),
            include_usage
        );
        assert_eq!(header_of(&streamed, "accept"), Some("text/event-stream"));
        assert_eq!(streamed.record["output"].as_u64(), Some(2));
    }

    let embedded = both(
        &gateway,
        &mock,
        "/v1/embeddings",
        json!({"model": "text-embedding-3-small", "input": "hello"}),
    )
    .await;
    assert_eq!(
        (
            embedded.status,
            embedded.answer.as_str(),
            embedded.instances
        ),
        (200, EMBEDDINGS, 0)
    );
    assert_eq!(embedded.record["input"].as_u64(), Some(5));
}

fn header_of<'a>(seen: &'a Seen, name: &str) -> Option<&'a str> {
    let headers = &seen.upstream.first()?.headers;
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// What the host cannot read is the plugin's: an error status, a body that is not JSON, an
/// error inside a stream. Each reaches the client as the plugin's path maps it.
#[tokio::test]
async fn what_the_host_cannot_read_is_mapped_by_the_plugin() {
    let (mock, anthropic) = (MockRaw::start().await, MockProvider::anthropic().await);
    let gateway = gateway(&mock, &anthropic).await;
    let messages = json!([{"role": "user", "content": "Say hi."}]);
    for (model, stream, status) in [
        ("error-429", false, 429),
        ("error-429", true, 429),
        ("garbage", false, 502),
        ("broken-stream", true, 200),
    ] {
        let body = json!({"model": model, "messages": messages, "stream": stream});
        let seen = both(&gateway, &mock, "/v1/chat/completions", body).await;
        assert_eq!(seen.status, status, "{model}: {}", seen.answer);
        assert_eq!(seen.instances, 1, "{model}: the plugin reads it");
    }
}

/// A provider that declares nothing plain (Anthropic) still goes through its plugin.
#[tokio::test]
async fn a_provider_that_declares_nothing_uses_its_plugin() {
    let (mock, anthropic) = (MockRaw::start().await, MockProvider::anthropic().await);
    let gateway = gateway(&mock, &anthropic).await;
    let before = gateway.state.plugins.work();
    let response = crate::common::http()
        .post(gateway.url("/v1/chat/completions"))
        .json(
            &json!({"model": "claude/claude-sonnet-4-5", "max_tokens": 16,
                      "messages": [{"role": "user", "content": "Say hi."}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let after = gateway.state.plugins.work();
    assert_eq!(after.instantiations - before.instantiations, 1);
    assert!(
        after.calls - before.calls >= 2,
        "prepare and parse-response"
    );
}
