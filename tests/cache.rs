//! The response cache end to end: a repeated request is answered without an upstream call (the
//! counting mock says how many it had), in the client's dialect, whole or streamed, and recorded
//! as a hit with its saving; other projects, `Cache-Control` and TTLs are respected; two
//! gateways share answers through one Redis.

use crate::common;

use std::time::Duration;

use common::gateway::{Gateway, GatewayBuilder, Guard, Provider};
use common::mock_openai::MockOpenAi;
use common::mock_providers::MockProvider;
use common::{TestGateway, http};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

/// A gateway with keys required, the mock's `openai` entry (Responses translated, so that every
/// dialect goes through the canonical form), and `cache` as its cache section.
fn config(mock: &MockOpenAi, cache: &str) -> GatewayBuilder {
    let openai = Provider::openai(&mock.base_url())
        .models(["gpt-4o-mini"])
        .options("{ responses: translate }");
    Gateway::builder()
        .auth_required()
        .provider("openai", openai)
        .set_yaml("cache", cache)
}

async fn start(cache: &str) -> (MockOpenAi, TestGateway) {
    let mock = MockOpenAi::start().await;
    let gateway = config(&mock, cache).start().await;
    (mock, gateway)
}

/// Upstream calls the mock had on `path`.
pub(crate) async fn calls(mock: &MockOpenAi, path: &str) -> usize {
    mock.requests()
        .await
        .iter()
        .filter(|r| r.path == path)
        .count()
}

pub(crate) struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn cache(&self) -> &str {
        self.headers
            .get("x-wasmgate-cache")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("(none)")
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

pub(crate) async fn post(
    gateway: &TestGateway,
    path: &str,
    key: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> Answer {
    let mut request = http().post(gateway.url(path)).bearer_auth(key).json(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    Answer {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.text().await.unwrap(),
    }
}

pub(crate) fn chat(text: &str) -> Value {
    json!({
        "model": "openai/gpt-4o-mini",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}],
        "temperature": 0,
        "max_tokens": 50,
    })
}

#[tokio::test]
async fn a_repeated_chat_request_is_answered_once_and_recorded_as_a_hit() {
    let (mock, gateway) = start("{ enabled: true }").await;
    let key = gateway.api_key("team-a").await;
    let body = chat("What is the capital of France?");
    let first = post(&gateway, "/v1/chat/completions", &key, &body, &[]).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.cache(), "miss");
    let second = post(
        &gateway,
        "/v1/chat/completions",
        &key,
        &body,
        &[("x-request-id", "cache-hit-1")],
    )
    .await;
    assert_eq!(second.status, 200, "{}", second.body);
    assert_eq!(second.cache(), "hit");
    assert!(second.headers.get("age").is_some(), "a hit carries its age");
    assert_eq!(first.json(), second.json(), "the same answer");
    assert_eq!(
        calls(&mock, "/v1/chat/completions").await,
        1,
        "one upstream call"
    );

    let record = gateway.record_of("cache-hit-1").await;
    assert!(record.cache_hit);
    assert_eq!(record.status, 200);
    assert_eq!(record.cost_micros, Some(0));
    assert!(
        record.saved_cost_micros.is_some_and(|saved| saved > 0),
        "the saving is recorded: {record:?}"
    );
    assert_eq!(record.provider.as_deref(), Some("openai"));
    // The usage API reads the hit and its saving (the miss's record is written before its answer).
    let usage = post(&gateway, "/usage/total", &key, &json!({}), &[])
        .await
        .json();
    assert_eq!(usage["cache"]["hits"], 1, "{usage}");
    assert_eq!(usage["cache"]["hit_rate"], 0.5, "{usage}");
    assert!(
        usage["cache"]["saved_cost"].as_f64().unwrap() > 0.0,
        "{usage}"
    );
    assert_eq!(
        usage["cache"]["saved_cost"], usage["total"]["total_cost"],
        "the hit saved what the miss cost"
    );
    // `/usage/models` has them per model.
    let models = post(&gateway, "/usage/models", &key, &json!({}), &[])
        .await
        .json();
    let mini = &models["models"][0];
    assert_eq!(mini["model_name"], "gpt-4o-mini", "{models}");
    assert_eq!(mini["cache"]["hits"], 1, "{models}");
    assert_eq!(mini["cache"]["hit_rate"], 0.5, "{models}");
    assert_eq!(mini["cache"]["saved_cost"], usage["cache"]["saved_cost"]);
    let metrics = gateway.metrics().await;
    assert!(
        metrics.contains("wasmgate_cache_lookups_total{outcome=\"hit\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn another_project_or_another_field_misses() {
    let (mock, gateway) = start("{ enabled: true }").await;
    let a = gateway.api_key("team-a").await;
    let b = gateway.api_key("team-b").await;
    let body = chat("Name a colour.");
    assert_eq!(
        post(&gateway, "/v1/chat/completions", &a, &body, &[])
            .await
            .cache(),
        "miss"
    );
    assert_eq!(
        post(&gateway, "/v1/chat/completions", &b, &body, &[])
            .await
            .cache(),
        "miss"
    );
    let mut warmer = body.clone();
    warmer["temperature"] = json!(0.7);
    assert_eq!(
        post(&gateway, "/v1/chat/completions", &a, &warmer, &[])
            .await
            .cache(),
        "miss"
    );
    assert_eq!(
        post(&gateway, "/v1/chat/completions", &a, &body, &[])
            .await
            .cache(),
        "hit"
    );
    assert_eq!(calls(&mock, "/v1/chat/completions").await, 3);
}

#[tokio::test]
async fn no_cache_skips_the_read_and_no_store_the_write() {
    let (mock, gateway) = start("{ enabled: true }").await;
    let key = gateway.api_key("p").await;
    let body = chat("Count to three.");
    let path = "/v1/chat/completions";
    let no_store = [("cache-control", "no-store")];
    assert_eq!(
        post(&gateway, path, &key, &body, &no_store).await.cache(),
        "miss"
    );
    // Not kept: the next one misses too, and is kept.
    assert_eq!(post(&gateway, path, &key, &body, &[]).await.cache(), "miss");
    let no_cache = [("cache-control", "no-cache")];
    assert_eq!(
        post(&gateway, path, &key, &body, &no_cache).await.cache(),
        "bypass"
    );
    assert_eq!(post(&gateway, path, &key, &body, &[]).await.cache(), "hit");
    assert_eq!(calls(&mock, "/v1/chat/completions").await, 3);
}

#[tokio::test]
async fn a_clients_ttl_expires_its_answer() {
    let (mock, gateway) = start("{ enabled: true, ttl_s: 600 }").await;
    let key = gateway.api_key("p").await;
    let body = chat("Say something short.");
    let path = "/v1/chat/completions";
    let ttl = [("x-wasmgate-cache-ttl", "1")];
    assert_eq!(
        post(&gateway, path, &key, &body, &ttl).await.cache(),
        "miss"
    );
    assert_eq!(post(&gateway, path, &key, &body, &[]).await.cache(), "hit");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(post(&gateway, path, &key, &body, &[]).await.cache(), "miss");
    assert_eq!(calls(&mock, "/v1/chat/completions").await, 2);
}

#[tokio::test]
async fn a_cache_off_for_a_model_bypasses() {
    let (mock, gateway) =
        start("{ enabled: true, rules: [ { models: [openai/gpt-4o-mini], enabled: false } ] }")
            .await;
    let key = gateway.api_key("p").await;
    let body = chat("Hello?");
    for _ in 0..2 {
        let answer = post(&gateway, "/v1/chat/completions", &key, &body, &[]).await;
        assert_eq!(answer.cache(), "bypass");
    }
    assert_eq!(calls(&mock, "/v1/chat/completions").await, 2);
}

/// The text and finish reason of a Chat Completions stream, and whether it ended with `[DONE]`.
pub(crate) fn chat_stream(body: &str) -> (String, Vec<String>, bool) {
    let mut text = String::new();
    let mut finishes = Vec::new();
    let mut done = false;
    for line in body.lines().filter_map(|l| l.strip_prefix("data: ")) {
        if line == "[DONE]" {
            done = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(line).unwrap();
        for choice in chunk["choices"].as_array().unwrap() {
            if let Some(t) = choice["delta"]["content"].as_str() {
                text.push_str(t);
            }
            if let Some(f) = choice["finish_reason"].as_str() {
                finishes.push(f.to_owned());
            }
        }
    }
    (text, finishes, done)
}

#[tokio::test]
async fn a_stream_is_kept_once_ended_and_replayed_as_a_stream() {
    let (mock, gateway) = start("{ enabled: true }").await;
    let key = gateway.api_key("p").await;
    let mut body = chat("Stream me a greeting.");
    body["stream"] = json!(true);
    let path = "/v1/chat/completions";
    let first = post(&gateway, path, &key, &body, &[]).await;
    assert_eq!(first.cache(), "miss");
    // The write happens off the answer's path.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = post(&gateway, path, &key, &body, &[]).await;
    assert_eq!(second.cache(), "hit");
    assert!(
        second.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let (live, replayed) = (chat_stream(&first.body), chat_stream(&second.body));
    assert!(!live.0.is_empty());
    assert_eq!(live, replayed, "the same text, finish and end");
    // The same request sent whole is answered from the stream's answer.
    body["stream"] = json!(false);
    let whole = post(&gateway, path, &key, &body, &[]).await;
    assert_eq!(whole.cache(), "hit");
    assert_eq!(
        whole.json()["choices"][0]["message"]["content"].as_str(),
        Some(live.0.as_str())
    );
    assert_eq!(calls(&mock, "/v1/chat/completions").await, 1);
}

#[tokio::test]
async fn messages_and_responses_hit_in_their_own_format() {
    let (mock, gateway) = start("{ enabled: true }").await;
    let key = gateway.api_key("p").await;
    let messages = json!({
        "model": "openai/gpt-4o-mini",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Hi from Messages"}],
    });
    let first = post(&gateway, "/v1/messages", &key, &messages, &[]).await;
    let second = post(&gateway, "/v1/messages", &key, &messages, &[]).await;
    assert_eq!(
        (first.cache(), second.cache()),
        ("miss", "hit"),
        "{}",
        second.body
    );
    let (a, b) = (first.json(), second.json());
    assert_eq!(a["type"], "message");
    assert_eq!(a["content"], b["content"]);
    assert_eq!(a["usage"], b["usage"]);
    assert_ne!(a["id"], b["id"], "each answer has its own id");

    let responses = json!({"model": "openai/gpt-4o-mini", "input": "Hi from Responses"});
    let first = post(&gateway, "/v1/responses", &key, &responses, &[]).await;
    let second = post(&gateway, "/v1/responses", &key, &responses, &[]).await;
    assert_eq!(
        (first.cache(), second.cache()),
        ("miss", "hit"),
        "{}",
        second.body
    );
    let (a, b) = (first.json(), second.json());
    assert_eq!(a["object"], "response");
    assert_eq!(a["output"][0]["content"], b["output"][0]["content"]);
    assert_ne!(a["id"], b["id"]);
    // A different input is a different request.
    let other = json!({"model": "openai/gpt-4o-mini", "input": "Bye from Responses"});
    assert_eq!(
        post(&gateway, "/v1/responses", &key, &other, &[])
            .await
            .cache(),
        "miss"
    );
    assert_eq!(calls(&mock, "/v1/chat/completions").await, 3);
}

#[tokio::test]
async fn two_gateways_share_answers_through_one_redis() {
    let redis = common::redis::RedisServer::start();
    let mock = MockOpenAi::start().await;
    let cache = format!("{{ enabled: true, store: \"{}\" }}", redis.url());
    let dir = common::binary::temp_dir("cache-redis");
    let ledger = format!("sqlite://{}/l.db", dir.display());
    let one = config(&mock, &cache).ledger(&ledger).start().await;
    let two = config(&mock, &cache).ledger(&ledger).start().await;
    let key = one.api_key("p").await;
    let mut body = chat("Shared across replicas?");
    assert_eq!(
        post(&one, "/v1/chat/completions", &key, &body, &[])
            .await
            .cache(),
        "miss"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let hit = post(&two, "/v1/chat/completions", &key, &body, &[]).await;
    assert_eq!(hit.cache(), "hit", "{}", hit.body);
    body["stream"] = json!(true);
    let replay = post(&two, "/v1/chat/completions", &key, &body, &[]).await;
    assert_eq!(replay.cache(), "hit");
    assert!(chat_stream(&replay.body).2, "a whole stream");
    assert_eq!(calls(&mock, "/v1/chat/completions").await, 1);
}

/// A gateway whose targets speak the clients' dialects: Messages pass through to the Anthropic
/// mock, Responses to the OpenAI mock (the `openai` plugin's default).
async fn native_gateway() -> (MockOpenAi, MockProvider, TestGateway) {
    let openai = MockOpenAi::start().await;
    let anthropic = MockProvider::anthropic().await;
    let claude = Provider::at(
        "anthropic",
        &anthropic.base_url(),
        common::mock_providers::KEY,
    )
    .models(["claude-sonnet-4-5"]);
    let gpt = Provider::at(
        "openai",
        &openai.base_url(),
        common::mock_openai::responses::API_KEY,
    )
    .models(["gpt-4.1-mini"])
    .options("{ responses: native }");
    let gateway = Gateway::builder()
        .auth_required()
        .provider("anthropic", claude)
        .provider("openai", gpt)
        .set_yaml("cache", "{ enabled: true }")
        .start()
        .await;
    (openai, anthropic, gateway)
}

/// The `data:` payloads of an SSE body, and their `event:` names.
fn sse(body: &str) -> (Vec<String>, Vec<Value>) {
    let events = common::sse::events(body);
    let names = common::sse::types(&events);
    let data = events.iter().map(|e| e.data.clone()).collect();
    (names, data)
}

#[tokio::test]
async fn native_answers_are_kept_and_replayed_to_their_own_dialect() {
    let (openai, anthropic, gateway) = native_gateway().await;
    let key = gateway.api_key("p").await;

    let messages = json!({
        "model": "anthropic/claude-sonnet-4-5",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Hello, Claude"}],
    });
    let first = post(&gateway, "/v1/messages", &key, &messages, &[]).await;
    let second = post(&gateway, "/v1/messages", &key, &messages, &[]).await;
    assert_eq!(
        (first.cache(), second.cache()),
        ("miss", "hit"),
        "{}",
        second.body
    );
    let (a, b) = (first.json(), second.json());
    assert_eq!(a["content"], b["content"]);
    assert_eq!(a["usage"], b["usage"]);
    assert_ne!(a["id"], b["id"], "a fresh id");

    // Streamed: a native whole answer does not answer a stream; the stream is kept itself.
    let mut streamed = messages.clone();
    streamed["stream"] = json!(true);
    let first = post(&gateway, "/v1/messages", &key, &streamed, &[]).await;
    assert_eq!(first.cache(), "miss");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = post(&gateway, "/v1/messages", &key, &streamed, &[]).await;
    assert_eq!(second.cache(), "hit", "{}", second.body);
    let ((names_a, data_a), (names_b, data_b)) = (sse(&first.body), sse(&second.body));
    assert_eq!(names_a, names_b, "the same events in the same order");
    assert_eq!(names_b.first().map(String::as_str), Some("message_start"));
    assert_eq!(names_b.last().map(String::as_str), Some("message_stop"));
    assert_ne!(data_a[0]["message"]["id"], data_b[0]["message"]["id"]);
    assert_eq!(data_a[1..], data_b[1..], "the same content and usage");
    assert_eq!(anthropic.requests().await.len(), 2);

    let responses = json!({"model": "openai/gpt-4.1-mini", "input": "Hello, GPT", "store": false});
    let first = post(&gateway, "/v1/responses", &key, &responses, &[]).await;
    let second = post(&gateway, "/v1/responses", &key, &responses, &[]).await;
    assert_eq!(
        (first.cache(), second.cache()),
        ("miss", "hit"),
        "{}",
        second.body
    );
    let (a, b) = (first.json(), second.json());
    assert_eq!(a["output"][0]["content"], b["output"][0]["content"]);
    assert_ne!(a["id"], b["id"]);
    let mut streamed = responses.clone();
    streamed["stream"] = json!(true);
    let first = post(&gateway, "/v1/responses", &key, &streamed, &[]).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = post(&gateway, "/v1/responses", &key, &streamed, &[]).await;
    assert_eq!(
        (first.cache(), second.cache()),
        ("miss", "hit"),
        "{}",
        second.body
    );
    let ((names_a, data_a), (names_b, data_b)) = (sse(&first.body), sse(&second.body));
    assert_eq!(names_a, names_b);
    assert_eq!(
        names_b.last().map(String::as_str),
        Some("response.completed")
    );
    let (last_a, last_b) = (&data_a[data_a.len() - 1], &data_b[data_b.len() - 1]);
    assert_eq!(last_a["response"]["output"], last_b["response"]["output"]);
    assert_ne!(last_a["response"]["id"], last_b["response"]["id"]);
    assert_eq!(
        calls(&openai, "/v1/responses").await,
        2,
        "{:?}",
        openai.targets().await
    );
}

/// The official SDKs get a hit as they got the live answer, in every dialect, whole and
/// streamed (`tests/sdk/cache_replay.py`); each scenario's pair costs one upstream call.
#[tokio::test]
async fn the_sdks_cannot_tell_a_hit_from_a_live_answer() {
    let (mock, gateway) = start("{ enabled: true }").await;
    let key = gateway.api_key("p").await;
    let model = "openai/gpt-4o-mini";
    let output = crate::sdk_clients::run_client(
        "cache_replay.py",
        &gateway.url(""),
        &key,
        &["--chat-model", model, "--messages-model", model],
    )
    .await;
    let scenarios = [
        "chat",
        "chat_stream",
        "chat_stream_tools",
        "messages",
        "messages_stream",
        "responses",
        "responses_stream",
    ];
    crate::sdk_clients::assert_passed(&output, &scenarios);
    // One call for each scenario, and one for the conversation continued from a hit.
    assert_eq!(
        calls(&mock, "/v1/chat/completions").await,
        scenarios.len() + 1
    );
}

/// A hit counts as a request for the rate limits (it is admitted before the lookup), and
/// spends no tokens: a token budget the miss used up is not charged again by the hits.
#[tokio::test]
async fn a_hit_counts_as_a_request_and_spends_no_tokens() {
    let mock = MockOpenAi::start().await;
    let gateway = config(&mock, "{ enabled: true }")
        .set("limits.store", "memory")
        .limit("rate-limit", "project", "{ requests_per_minute: 3 }")
        .start()
        .await;
    let key = gateway.api_key("p").await;
    let body = chat("Limits?");
    let path = "/v1/chat/completions";
    let ids = ["limit-1", "limit-2", "limit-3", "limit-4"];
    let mut outcomes = Vec::new();
    for id in ids {
        let answer = post(&gateway, path, &key, &body, &[("x-request-id", id)]).await;
        outcomes.push((answer.status, answer.cache().to_owned()));
    }
    assert_eq!(
        outcomes,
        [
            (200, "miss".to_owned()),
            (200, "hit".to_owned()),
            (200, "hit".to_owned()),
            (429, "(none)".to_owned()),
        ]
    );
    let hit = gateway.record_of("limit-2").await;
    assert!(hit.cache_hit);
    assert_eq!((hit.input_tokens, hit.output_tokens), (0, 0));
    assert_eq!(calls(&mock, "/v1/chat/completions").await, 1);
}

/// Through the whole path, a Messages request that differs from a kept one in any field that
/// shapes the answer misses (also a field its translation drops, `top_k`); one that differs in
/// who asked (`metadata`) or how it is delivered hits.
#[tokio::test]
async fn a_request_differing_in_any_shaping_field_misses() {
    let (mock, gateway) = start("{ enabled: true }").await;
    let key = gateway.api_key("p").await;
    let base = json!({
        "model": "openai/gpt-4o-mini",
        "max_tokens": 64,
        "system": "Be brief.",
        "temperature": 0.5,
        "messages": [{"role": "user", "content": "Which fields count?"}],
    });
    let path = "/v1/messages";
    assert_eq!(post(&gateway, path, &key, &base, &[]).await.cache(), "miss");
    let tool = json!([{"name": "f", "description": "d", "input_schema": {"type": "object"}}]);
    let changes = [
        ("system", json!("Be long.")),
        ("temperature", json!(0.6)),
        ("top_p", json!(0.9)),
        ("top_k", json!(5)),
        ("max_tokens", json!(65)),
        ("stop_sequences", json!(["END"])),
        ("tools", tool.clone()),
        (
            "messages",
            json!([{"role": "user", "content": "Which fields count!"}]),
        ),
        ("model", json!("gpt-4o-mini")),
    ];
    let mut misses = 1;
    for (field, value) in changes {
        let mut changed = base.clone();
        changed[field] = value;
        let answer = post(&gateway, path, &key, &changed, &[]).await;
        assert_eq!(answer.status, 200, "{field}: {}", answer.body);
        // `model` written another way resolves to the same target: the same request.
        let expected = if field == "model" { "hit" } else { "miss" };
        assert_eq!(answer.cache(), expected, "{field}");
        misses += usize::from(expected == "miss");
    }
    let mut tool_choice = base.clone();
    tool_choice["tools"] = tool;
    tool_choice["tool_choice"] = json!({"type": "any"});
    assert_eq!(
        post(&gateway, path, &key, &tool_choice, &[]).await.cache(),
        "miss"
    );
    misses += 1;
    let mut metadata = base.clone();
    metadata["metadata"] = json!({"user_id": "someone"});
    assert_eq!(
        post(&gateway, path, &key, &metadata, &[]).await.cache(),
        "hit"
    );
    assert_eq!(calls(&mock, "/v1/chat/completions").await, misses);
}

/// A Redis that goes away makes lookups misses, counted, never errors: the answer still comes.
#[tokio::test]
async fn a_redis_gone_is_a_miss_not_an_error() {
    let redis = common::redis::RedisServer::start();
    let mock = MockOpenAi::start().await;
    let cache = format!("{{ enabled: true, store: \"{}\" }}", redis.url());
    let gateway = config(&mock, &cache).start().await;
    let key = gateway.api_key("p").await;
    drop(redis);
    let body = chat("Is Redis there?");
    for _ in 0..2 {
        let started = std::time::Instant::now();
        let answer = post(&gateway, "/v1/chat/completions", &key, &body, &[]).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(answer.cache(), "miss");
        // The read gives up after 250 ms; the connection's own timeouts took 1 to 3 s.
        let took = started.elapsed();
        assert!(took < Duration::from_millis(900), "a miss took {took:?}");
    }
    assert!(
        gateway
            .metrics()
            .await
            .contains("wasmgate_cache_errors_total 2"),
        "the failed reads are counted"
    );
}

/// With a guard on, answers are neither served from the cache nor kept: a guard may rewrite an
/// answer for its own request (reversible redaction gives each client its own values back), so
/// an answer kept before the guards could hand one client what was held from another.
#[tokio::test]
async fn a_guarded_request_bypasses_the_cache() {
    let mock = MockOpenAi::start().await;
    let gateway = config(&mock, "{ enabled: true }")
        .guard(Guard::plugin("redact"))
        .start()
        .await;
    let key = gateway.api_key("team-a").await;
    let body = chat("What is the capital of France?");
    for _ in 0..2 {
        let answer = post(&gateway, "/v1/chat/completions", &key, &body, &[]).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(answer.cache(), "bypass");
    }
    assert_eq!(
        calls(&mock, "/v1/chat/completions").await,
        2,
        "each guarded request went upstream"
    );
}
