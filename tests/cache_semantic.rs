//! The cache's semantic mode end to end: the mock's embeddings endpoint gives each text the
//! vector the test chose (there is no embeddings model offline), so that a paraphrase is near
//! its original and a different question in the same words is not. A hit is replayed as an
//! exact hit is and says how near it was; tool results, other projects and other answer-shaping
//! fields never hit; two gateways share vectors through one real Redis.

use crate::common;

use std::time::Duration;

use common::TestGateway;
use common::gateway::{Gateway, GatewayBuilder, Provider};
use common::mock_openai::MockOpenAi;
use serde_json::{Value, json};

use super::cache::{calls, chat, chat_stream, post};

const ORIGINAL: &str = "What is the capital of France?";
const PARAPHRASE: &str = "Which city is France's capital?";
/// The same words, another question.
const REORDERED: &str = "What is France the capital of?";

/// Vectors whose cosines to ORIGINAL's are 0.95 (the paraphrase) and 0.5.
async fn embeddings(mock: &MockOpenAi) {
    mock.set_embedding(ORIGINAL, &[1.0, 0.0, 0.0]).await;
    mock.set_embedding(PARAPHRASE, &[0.95, 0.312_25, 0.0]).await;
    mock.set_embedding(REORDERED, &[0.5, 0.0, 0.866_03]).await;
}

/// A gateway whose `openai` entry serves chat and the embeddings model `embedder`, with the
/// cache on in `store` and semantic lookups through `embedder`.
fn config(mock: &MockOpenAi, store: &str, embedder: &str) -> GatewayBuilder {
    let openai = Provider::openai(&mock.base_url()).models(["gpt-4o-mini", embedder]);
    Gateway::builder()
        .auth_required()
        .provider("openai", openai)
        .set("cache.enabled", true)
        .set("cache.store", store)
        .set("cache.semantic.enabled", true)
        .set("cache.semantic.model", format!("openai/{embedder}"))
        .set("cache.semantic.threshold", 0.9)
}

const EMBEDDER: &str = "text-embedding-3-small";

/// The gateway of [`config`] in memory, semantic lookups taking tool results in or not.
async fn start(tool_results: bool) -> (MockOpenAi, TestGateway) {
    let mock = MockOpenAi::start().await;
    embeddings(&mock).await;
    let mut config = config(&mock, "memory", EMBEDDER);
    if tool_results {
        config = config.set("cache.semantic.tool_results", true);
    }
    (mock, config.start().await)
}

const CHAT: &str = "/v1/chat/completions";

fn similarity(answer: &super::cache::Answer) -> Option<f64> {
    answer
        .headers
        .get("x-wasmgate-cache-similarity")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

/// The answer's write (and its vector's) happens off the answer's path.
async fn written() {
    tokio::time::sleep(Duration::from_millis(150)).await;
}

#[tokio::test]
async fn a_paraphrase_hits_and_a_different_question_in_the_same_words_misses() {
    let (mock, gateway) = start(false).await;
    let key = gateway.api_key("p").await;
    let first = post(&gateway, CHAT, &key, &chat(ORIGINAL), &[]).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.cache(), "miss");
    assert_eq!(similarity(&first), None);
    written().await;

    let paraphrase = chat(PARAPHRASE);
    let id = [("x-request-id", "semantic-hit-1")];
    let hit = post(&gateway, CHAT, &key, &paraphrase, &id).await;
    assert_eq!(hit.cache(), "hit", "{}", hit.body);
    let near = similarity(&hit).expect("a semantic hit says how near");
    assert!((near - 0.95).abs() < 0.001, "{near}");
    assert_eq!(hit.json(), first.json(), "the earlier answer, as it was");
    assert!(hit.headers.get("age").is_some());
    // Streamed, it is replayed as a stream.
    let mut streamed = paraphrase.clone();
    streamed["stream"] = json!(true);
    let replay = post(&gateway, CHAT, &key, &streamed, &[]).await;
    assert_eq!(replay.cache(), "hit");
    let (text, finishes, done) = chat_stream(&replay.body);
    assert_eq!(
        Some(text.as_str()),
        first.json()["choices"][0]["message"]["content"].as_str()
    );
    assert_eq!((finishes, done), (vec!["stop".to_owned()], true));

    let other = post(&gateway, CHAT, &key, &chat(REORDERED), &[]).await;
    assert_eq!(other.cache(), "miss", "cosine 0.5 is below 0.9");
    // The paraphrase under another sampling field is another scope.
    let mut warmer = paraphrase.clone();
    warmer["temperature"] = json!(0.9);
    assert_eq!(
        post(&gateway, CHAT, &key, &warmer, &[]).await.cache(),
        "miss"
    );
    assert_eq!(
        calls(&mock, CHAT).await,
        3,
        "the original, the other, the warmer"
    );

    // The hit is recorded as a hit; its embedding as a request of its own, under the project.
    let record = gateway.record_of("semantic-hit-1").await;
    assert!(record.cache_hit, "{record:?}");
    assert!(
        record.saved_cost_micros.is_some_and(|s| s > 0),
        "{record:?}"
    );
    let embedding = gateway.record_of("semantic-hit-1.embedding").await;
    assert_eq!(embedding.operation, "embeddings");
    assert_eq!(embedding.project, "p");
    assert_eq!(embedding.model.as_deref(), Some("text-embedding-3-small"));
    assert_eq!(embedding.input_tokens, 8);
    let metrics = gateway.metrics().await;
    assert!(
        metrics.contains("wasmgate_cache_semantic_lookups_total{outcome=\"hit\"} 2"),
        "{metrics}"
    );
}

/// One conversation with a tool's result in it, asking `text` last.
fn with_tool_result(text: &str) -> Value {
    json!({
        "model": "openai/gpt-4o-mini",
        "messages": [
            {"role": "user", "content": "Look up the weather."},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
              "function": {"name": "weather", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"},
            {"role": "user", "content": text},
        ],
        "temperature": 0,
    })
}

#[tokio::test]
async fn a_request_with_tool_results_hits_only_when_the_operator_allows_it() {
    let (mock, gateway) = start(false).await;
    let key = gateway.api_key("p").await;
    let first = post(&gateway, CHAT, &key, &with_tool_result(ORIGINAL), &[]).await;
    assert_eq!(
        (first.status, first.cache()),
        (200, "miss"),
        "{}",
        first.body
    );
    written().await;
    let second = post(&gateway, CHAT, &key, &with_tool_result(PARAPHRASE), &[]).await;
    assert_eq!(second.cache(), "miss", "tool results: exact only");
    assert_eq!(calls(&mock, "/v1/embeddings").await, 0, "nothing embedded");
    // The exact cache still serves the very same request.
    let again = post(&gateway, CHAT, &key, &with_tool_result(ORIGINAL), &[]).await;
    assert_eq!(again.cache(), "hit");

    let (mock, gateway) = start(true).await;
    let key = gateway.api_key("p").await;
    post(&gateway, CHAT, &key, &with_tool_result(ORIGINAL), &[]).await;
    written().await;
    let allowed = post(&gateway, CHAT, &key, &with_tool_result(PARAPHRASE), &[]).await;
    assert_eq!(allowed.cache(), "hit", "allowed by `tool_results`");
    assert_eq!(calls(&mock, CHAT).await, 1);
}

#[tokio::test]
async fn another_project_never_hits() {
    let (mock, gateway) = start(false).await;
    let a = gateway.api_key("team-a").await;
    let b = gateway.api_key("team-b").await;
    post(&gateway, CHAT, &a, &chat(ORIGINAL), &[]).await;
    written().await;
    let other = post(&gateway, CHAT, &b, &chat(PARAPHRASE), &[]).await;
    assert_eq!(other.cache(), "miss", "team-a's answer is not team-b's");
    written().await;
    // team-b's own paraphrase was kept under its own scope, and is near its original.
    let own = post(&gateway, CHAT, &b, &chat(ORIGINAL), &[]).await;
    assert_eq!(own.cache(), "hit");
    assert_eq!(calls(&mock, CHAT).await, 2);
}

/// A rule turns semantic lookups off for a model: its requests are looked up exactly only.
#[tokio::test]
async fn a_rule_keeps_a_model_exact() {
    let mock = MockOpenAi::start().await;
    embeddings(&mock).await;
    let gateway = config(&mock, "memory", EMBEDDER)
        .set_yaml(
            "cache.rules",
            "[{ models: [openai/gpt-4o-mini], semantic: false }]",
        )
        .start()
        .await;
    let key = gateway.api_key("p").await;
    post(&gateway, CHAT, &key, &chat(ORIGINAL), &[]).await;
    written().await;
    let second = post(&gateway, CHAT, &key, &chat(PARAPHRASE), &[]).await;
    assert_eq!(second.cache(), "miss");
    assert_eq!(calls(&mock, "/v1/embeddings").await, 0);
}

#[tokio::test]
async fn two_gateways_share_vectors_through_one_redis_and_a_redis_gone_is_a_miss() {
    let redis = common::redis::RedisServer::start();
    let mock = MockOpenAi::start().await;
    embeddings(&mock).await;
    let dir = common::binary::temp_dir("semantic-redis");
    let ledger = format!("sqlite://{}/l.db", dir.display());
    let one = config(&mock, &redis.url(), EMBEDDER)
        .ledger(&ledger)
        .start()
        .await;
    let two = config(&mock, &redis.url(), EMBEDDER)
        .ledger(&ledger)
        .start()
        .await;
    let key = one.api_key("p").await;
    assert_eq!(
        post(&one, CHAT, &key, &chat(ORIGINAL), &[]).await.cache(),
        "miss"
    );
    written().await;
    let hit = post(&two, CHAT, &key, &chat(PARAPHRASE), &[]).await;
    assert_eq!(hit.cache(), "hit", "{}", hit.body);
    assert!(similarity(&hit).is_some_and(|s| s > 0.9));
    assert_eq!(
        post(&two, CHAT, &key, &chat(REORDERED), &[]).await.cache(),
        "miss"
    );
    assert_eq!(calls(&mock, CHAT).await, 2);

    drop(redis);
    let started = std::time::Instant::now();
    let answer = post(&two, CHAT, &key, &chat(PARAPHRASE), &[]).await;
    assert_eq!(
        (answer.status, answer.cache()),
        (200, "miss"),
        "{}",
        answer.body
    );
    let took = started.elapsed();
    assert!(took < Duration::from_millis(1500), "a miss took {took:?}");
}

/// The embeddings model failing (here: one that does not exist) makes lookups exact only: the
/// request is answered, and the failed embedding is in the ledger.
#[tokio::test]
async fn an_embedding_that_fails_is_a_miss() {
    let mock = MockOpenAi::start().await;
    let gateway = config(&mock, "memory", "error-500").start().await;
    let key = gateway.api_key("p").await;
    let id = [("x-request-id", "semantic-failed-1")];
    let answer = post(&gateway, CHAT, &key, &chat(ORIGINAL), &id).await;
    assert_eq!(
        (answer.status, answer.cache()),
        (200, "miss"),
        "{}",
        answer.body
    );
    let embedding = gateway.record_of("semantic-failed-1.embedding").await;
    assert!(embedding.status >= 500, "{embedding:?}");
}
