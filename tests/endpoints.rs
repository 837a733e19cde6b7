//! Embeddings, image generation, model listing and health through the real server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use async_openai::types::embeddings::CreateEmbeddingRequestArgs;
use async_openai::types::images::{CreateImageRequestArgs, ImageModel};
use common::gateway::{Gateway, Provider};
use common::mock_openai::MockOpenAi;
use common::{TestGateway, http};
use serde_json::{Value, json};

#[tokio::test]
async fn embeddings_reach_the_upstream_and_come_back_typed() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let request = CreateEmbeddingRequestArgs::default()
        .model("openai/text-embedding-3-small")
        .input(["first text", "second text"])
        .build()
        .unwrap();
    let response = gateway.openai().embeddings().create(request).await.unwrap();
    assert_eq!(response.data.len(), 2);
    assert_eq!(response.data[1].embedding, vec![0.25, -0.5, 0.75]);
    assert_eq!(response.usage.prompt_tokens, 8);
    let sent = mock.last_request().await;
    assert_eq!(sent.path, "/v1/embeddings");
    assert_eq!(sent.body["model"], "text-embedding-3-small");
    assert_eq!(sent.body["input"], json!(["first text", "second text"]));
}

#[tokio::test]
async fn echo_embeddings_are_deterministic_unit_vectors() {
    let gateway = TestGateway::start(wasmgate::config::DEFAULT_CONFIG).await;
    let embed = |dimensions: u32| {
        CreateEmbeddingRequestArgs::default()
            .model("echo/echo-embed")
            .input("hello world")
            .dimensions(dimensions)
            .build()
            .unwrap()
    };
    let a = gateway
        .openai()
        .embeddings()
        .create(embed(8))
        .await
        .unwrap();
    let b = gateway
        .openai()
        .embeddings()
        .create(embed(8))
        .await
        .unwrap();
    assert_eq!(a.data[0].embedding.len(), 8);
    assert_eq!(a.data[0].embedding, b.data[0].embedding);
    let norm: f32 = a.data[0]
        .embedding
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt();
    assert!((norm - 1.0).abs() < 1e-3, "{norm}");
    assert_eq!(
        a.usage.prompt_tokens,
        wasmgate::tokenizer::Tokenizer.count("hello world")
    );
}

#[tokio::test]
async fn image_generation_reaches_the_upstream() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let request = CreateImageRequestArgs::default()
        .model(ImageModel::Other("openai/dall-e-3".into()))
        .prompt("a lighthouse at dusk")
        .n(2)
        .build()
        .unwrap();
    let response = gateway.openai().images().generate(request).await.unwrap();
    assert_eq!(response.data.len(), 2);
    let sent = mock.last_request().await;
    assert_eq!(sent.path, "/v1/images/generations");
    assert_eq!(sent.body["model"], "dall-e-3");
    assert_eq!(sent.body["prompt"], "a lighthouse at dusk");
}

#[tokio::test]
async fn the_model_list_shows_every_configured_model() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let list = gateway.openai().models().list().await.unwrap();
    let ids: Vec<&str> = list.data.iter().map(|m| m.id.as_str()).collect();
    assert!(ids.contains(&"openai/gpt-4o-mini"), "{ids:?}");
    assert!(ids.contains(&"echo/echo-1"), "{ids:?}");
    assert!(ids.contains(&"echo/shared-model") && ids.contains(&"openai/shared-model"));
    assert!(
        mock.requests().await.is_empty(),
        "declared models need no upstream call"
    );

    let one = gateway.openai().models().retrieve("echo-1").await.unwrap();
    assert_eq!(one.id, "echo/echo-1");
    assert_eq!(one.owned_by, "echo");
}

#[tokio::test]
async fn an_entry_without_models_lists_and_passes_through_the_upstream_ones() {
    let mock = MockOpenAi::start().await;
    let local = Provider::plugin("openai").base_url(&mock.base_url());
    let gateway = Gateway::builder().provider("local", local).start().await;
    let list: Value = http()
        .get(gateway.url("/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["local/gpt-4o-mini", "local/text-embedding-3-small"]);
    let sent = mock.last_request().await;
    assert_eq!(sent.path, "/v1/models");
    assert!(
        !sent.headers.contains_key("authorization"),
        "no key configured, none sent"
    );

    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": "local/any-model-at-all", "messages": [{"role": "user", "content": "x"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(mock.last_request().await.body["model"], "any-model-at-all");
}

#[tokio::test]
async fn health_answers() {
    let gateway = TestGateway::start(wasmgate::config::DEFAULT_CONFIG).await;
    let response = http().get(gateway.url("/health")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], "ok");
}

#[tokio::test]
async fn every_built_in_provider_loads_and_checks_its_options() {
    // Each built-in plugin validates its entry at start-up; a missing required option is named.
    let aws = Provider::plugin("bedrock").models(["m"]);
    let err = Gateway::builder()
        .provider("aws", aws)
        .try_start()
        .await
        .err()
        .unwrap();
    let text = format!("{err:#}");
    assert!(
        text.contains("providers.aws") && text.contains("region"),
        "{text}"
    );
    let entry = |plugin: &str, key: &str| Provider::plugin(plugin).api_key(key).models(["m"]);
    let gateway = Gateway::builder()
        .provider("a", entry("anthropic", "k"))
        .provider("g", entry("gemini", "k"))
        .provider("c", entry("cohere", "k"))
        .provider(
            "z",
            entry("azure-openai", "k").base_url("https://x.openai.azure.com"),
        )
        .provider(
            "b",
            entry("bedrock", "AKID:SECRET").options("{ region: us-east-1 }"),
        )
        .provider("o", entry("openai", "k"))
        .start()
        .await;
    let list: Value = http()
        .get(gateway.url("/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["data"].as_array().unwrap().len(), 6);
}
