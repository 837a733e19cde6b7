//! Usage and cost as the ledger records them, per provider plugin and per catalog: for
//! `anthropic`, `gemini`, `cohere`, `azure-openai` and `bedrock`, streamed and not, the stored
//! record's tokens equal what the mock upstream reported and its cost is the catalog's price
//! times those tokens. Catalog overrides from the config reach the ledger's cost, budgets and
//! `/v1/models`; provider presets reach a real upstream. Records are read through the ledger's
//! store, as the gateway stored them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::gateway::{Gateway, GatewayBuilder, Provider};
use common::mock_bedrock;
use common::mock_openai::{self, MockOpenAi};
use common::mock_providers::{KEY, MockProvider, anthropic, azure, cohere, gemini};
use common::{TestGateway, http};
use serde_json::{Value, json};
use wasmgate::catalog::Catalog;

/// Token counts as the gateway accounts them: `input` holds every prompt token, `cached` the
/// cache reads among them and `written` the cache writes among them; `reasoning` is the part of
/// `output` the upstream reported as reasoning.
#[derive(Clone, Copy, Debug)]
struct Tokens {
    input: u64,
    output: u64,
    cached: u64,
    written: u64,
    reasoning: u64,
}

/// The catalog's price of `tokens` for `provider`/`model`, in micro-USD rounded half up: fresh
/// prompt tokens at the input price, cache reads and writes at theirs (the input price when the
/// catalog has none), completion tokens at the output price.
fn catalog_cost(catalog: &Catalog, provider: &str, model: &str, t: Tokens) -> i64 {
    let info = catalog
        .lookup(provider, model)
        .unwrap_or_else(|| panic!("{provider}/{model} is not in the catalog"));
    let p = &info.prices;
    let input = i128::from(p.input.expect("an input price"));
    let fresh = t.input - t.cached - t.written;
    let pico = i128::from(fresh) * input
        + i128::from(t.cached) * p.cached_input.map_or(input, i128::from)
        + i128::from(t.written) * p.cache_write.map_or(input, i128::from)
        + i128::from(t.output) * i128::from(p.output.expect("an output price"));
    i64::try_from((pico + 500_000) / 1_000_000).unwrap()
}

/// Sends a chat request for `model` as request `id`, reading the whole answer.
async fn send(gateway: &TestGateway, id: &str, model: &str, stream: bool) -> (u16, String) {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .header("x-request-id", id)
        .json(&json!({"model": model, "stream": stream, "max_tokens": 10,
                      "messages": [{"role": "user", "content": "Hello there"}]}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// A gateway with one provider entry `name` (plugin `name`) at `base_url`.
async fn gateway(
    name: &str,
    base_url: &str,
    api_key: &str,
    model: &str,
    extra: &str,
) -> TestGateway {
    let entry = Provider::at(name, base_url, api_key)
        .models([model])
        .timeout_ms(5000)
        .options(extra);
    Gateway::builder().provider(name, entry).start().await
}

/// Sends one whole and one streamed request for `model` and checks both records.
async fn check_both(gateway: &TestGateway, provider: &str, model: &str, tokens: Tokens, cost: i64) {
    assert_eq!(
        catalog_cost(Catalog::builtin(), provider, model, tokens),
        cost,
        "the hand-computed price of {tokens:?}"
    );
    for stream in [false, true] {
        let id = format!("{provider}-{}", if stream { "stream" } else { "whole" });
        let (status, body) = send(gateway, &id, &format!("{provider}/{model}"), stream).await;
        assert_eq!(status, 200, "{id}: {body}");
        if stream {
            assert!(body.ends_with("data: [DONE]\n\n"), "{id}: {body}");
        }
        let record = gateway.record_of(&id).await;
        let seen = (
            record.input_tokens,
            record.output_tokens,
            record.cached_input_tokens,
            record.reasoning_tokens,
        );
        assert_eq!(
            seen,
            (tokens.input, tokens.output, tokens.cached, tokens.reasoning),
            "{id}: {record:?}"
        );
        assert_eq!(record.cost_micros, Some(cost), "{id}: {record:?}");
        assert!(!record.estimated, "{id}: the upstream's own usage");
        assert_eq!(record.provider.as_deref(), Some(provider), "{id}");
        assert_eq!(record.model.as_deref(), Some(model), "{id}");
        assert_eq!(record.status, 200, "{id}");
    }
}

#[tokio::test]
async fn anthropic_usage_and_cost_are_recorded_exactly() {
    let mock = MockProvider::anthropic().await;
    let model = "claude-sonnet-4-5";
    let gw = gateway("anthropic", &mock.base_url(), KEY, model, "{}").await;
    let tokens = Tokens {
        input: anthropic::INPUT_TOKENS
            + anthropic::CACHE_CREATION_TOKENS
            + anthropic::CACHE_READ_TOKENS,
        output: anthropic::OUTPUT_TOKENS,
        cached: anthropic::CACHE_READ_TOKENS,
        written: anthropic::CACHE_CREATION_TOKENS,
        reasoning: 0,
    };
    // $3 in, $0.30 cache reads, $3.75 cache writes, $15 out per million:
    // 10 × 3 + 5 × 0.3 + 3 × 3.75 + 12 × 15 = 222.75 micro-USD.
    check_both(&gw, "anthropic", model, tokens, 223).await;
}

#[tokio::test]
async fn gemini_usage_and_cost_are_recorded_exactly() {
    let mock = MockProvider::gemini().await;
    let model = "gemini-3.5-flash";
    let gw = gateway("gemini", &mock.base_url(), KEY, model, "{}").await;
    let tokens = Tokens {
        input: gemini::PROMPT_TOKENS,
        // Thinking tokens are billed as output.
        output: gemini::CANDIDATES_TOKENS + gemini::THOUGHTS_TOKENS,
        cached: gemini::CACHED_TOKENS,
        written: 0,
        reasoning: gemini::THOUGHTS_TOKENS,
    };
    // $1.50 in, $0.15 cached, $9 out: 15 × 1.5 + 20 × 0.15 + 13 × 9 = 142.5 micro-USD.
    check_both(&gw, "gemini", model, tokens, 143).await;
}

#[tokio::test]
async fn cohere_usage_and_cost_are_recorded_exactly() {
    let mock = MockProvider::cohere().await;
    let model = "command-a-03-2025";
    let gw = gateway("cohere", &mock.base_url(), KEY, model, "{}").await;
    let tokens = Tokens {
        input: cohere::BILLED_INPUT_TOKENS,
        output: cohere::BILLED_OUTPUT_TOKENS,
        cached: cohere::CACHED_TOKENS,
        written: 0,
        reasoning: 0,
    };
    // $2.50 in (no cached price: cache hits at the input price), $10 out:
    // 17 × 2.5 + 12 × 10 = 162.5 micro-USD.
    check_both(&gw, "cohere", model, tokens, 163).await;
}

#[tokio::test]
async fn azure_openai_usage_and_cost_are_recorded_exactly() {
    let mock = MockProvider::azure().await;
    let model = "gpt-4o";
    let gw = gateway("azure-openai", &mock.base_url(), KEY, model, "{}").await;
    let tokens = Tokens {
        input: azure::PROMPT_TOKENS,
        output: azure::COMPLETION_TOKENS,
        cached: azure::CACHED_TOKENS,
        written: 0,
        reasoning: 0,
    };
    // $2.50 in, $1.25 cached, $10 out: 8 × 2.5 + 4 × 1.25 + 5 × 10 = 75 micro-USD.
    check_both(&gw, "azure-openai", model, tokens, 75).await;
}

#[tokio::test]
async fn bedrock_usage_and_cost_are_recorded_exactly() {
    let mock = MockProvider::bedrock().await;
    let model = "anthropic.claude-sonnet-4-5-20250929-v1:0";
    let key = format!(
        "{}:{}",
        mock_bedrock::ACCESS_KEY_ID,
        mock_bedrock::SECRET_ACCESS_KEY
    );
    let options = format!("{{ region: {} }}", mock_bedrock::REGION);
    let gw = gateway("bedrock", &mock.base_url(), &key, model, &options).await;
    let tokens = Tokens {
        input: mock_bedrock::INPUT_TOKENS
            + mock_bedrock::CACHE_READ_TOKENS
            + mock_bedrock::CACHE_WRITE_TOKENS,
        output: mock_bedrock::OUTPUT_TOKENS,
        cached: mock_bedrock::CACHE_READ_TOKENS,
        written: mock_bedrock::CACHE_WRITE_TOKENS,
        reasoning: 0,
    };
    // $3 in, $0.30 cache reads, $3.75 cache writes, $15 out:
    // 21 × 3 + 1024 × 0.3 + 300 × 3.75 + 17 × 15 = 1750.2 micro-USD.
    check_both(&gw, "bedrock", model, tokens, 1750).await;
}

/// A config whose catalog price of azure-openai's gpt-4o is overridden.
fn overridden() -> GatewayBuilder {
    Gateway::builder().set_yaml(
        "catalog.providers",
        r#"[{provider: azure-openai, source: "our negotiated rate", models: [
             {model: gpt-4o, kind: chat, context_window: 64000, capabilities: {tools: true},
              input_per_mtok: 100, output_per_mtok: 200, cached_input_per_mtok: 50}]}]"#,
    )
}

/// An `azure-openai` entry serving gpt-4o at `base_url`.
fn azure(base_url: &str) -> Provider {
    Provider::at("azure-openai", base_url, KEY).models(["gpt-4o"])
}

#[tokio::test]
async fn overridden_catalog_prices_are_what_the_ledger_charges() {
    let mock = MockProvider::azure().await;
    let gw = overridden()
        .provider("azure-openai", azure(&mock.base_url()))
        .start()
        .await;
    let tokens = Tokens {
        input: azure::PROMPT_TOKENS,
        output: azure::COMPLETION_TOKENS,
        cached: azure::CACHED_TOKENS,
        written: 0,
        reasoning: 0,
    };
    // 8 × 100 + 4 × 50 + 5 × 200 = 2000 micro-USD (the built-in price would give 75).
    assert_eq!(
        catalog_cost(
            &gw.state.gateway.load().config.models,
            "azure-openai",
            "gpt-4o",
            tokens
        ),
        2000
    );
    for stream in [false, true] {
        let id = format!("override-{stream}");
        let (status, body) = send(&gw, &id, "azure-openai/gpt-4o", stream).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(gw.record_of(&id).await.cost_micros, Some(2000), "{id}");
    }
}

#[tokio::test]
async fn budgets_reserve_at_the_overridden_prices() {
    let mock = MockProvider::azure().await;
    // $0.002 a day. A request with max_tokens 10 may cost, at the built-in prices, a few hundred
    // micro-USD: admitted. At the overridden ones its 10 output tokens alone cost $0.002, and its
    // prompt more: refused before it is sent.
    let with_budget = |config: GatewayBuilder| {
        config
            .provider("azure-openai", azure(&mock.base_url()))
            .limit("budget", "global", "{daily_usd: 0.002}")
    };
    let builtin = with_budget(Gateway::builder()).start().await;
    let (status, body) = send(&builtin, "budget-builtin", "azure-openai/gpt-4o", false).await;
    assert_eq!(status, 200, "{body}");

    let overridden = with_budget(overridden()).start().await;
    let before = mock.requests().await.len();
    let (status, body) = send(&overridden, "budget-override", "azure-openai/gpt-4o", false).await;
    assert_eq!(status, 429, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["code"], "insufficient_quota", "{body}");
    assert_eq!(mock.requests().await.len(), before, "never sent upstream");
}

#[tokio::test]
async fn a_preset_entry_reaches_its_host_with_a_bearer_key_and_is_priced_from_its_catalog() {
    let mock = MockOpenAi::start().await;
    let fast = Provider::preset("groq")
        .base_url(&mock.base_url())
        .api_key("gsk-test-key");
    let gw = Gateway::builder().provider("fast", fast).start().await;
    // A model of the groq catalog, which the preset lists; addressed by its full id.
    let model = "openai/gpt-oss-120b";
    let (status, body) = send(&gw, "preset", &format!("fast/{model}"), false).await;
    assert_eq!(status, 200, "{body}");
    let sent = mock.last_request().await;
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.headers
            .get("authorization")
            .and_then(|v| v.to_str().ok()),
        Some("Bearer gsk-test-key")
    );
    assert_eq!(sent.body["model"], model);
    let tokens = Tokens {
        input: mock_openai::PROMPT_TOKENS,
        output: mock_openai::COMPLETION_TOKENS,
        cached: mock_openai::CACHED_TOKENS,
        written: 0,
        reasoning: 0,
    };
    let record = gw.record_of("preset").await;
    assert_eq!(
        record.cost_micros,
        Some(catalog_cost(Catalog::builtin(), "groq", model, tokens))
    );
    assert_eq!(record.provider.as_deref(), Some("fast"));

    // A model outside the preset's list is unknown.
    let (status, _) = send(&gw, "preset-unknown", "fast/gpt-4o", false).await;
    assert_eq!(status, 404);
}

async fn get(gateway: &TestGateway, path: &str) -> Value {
    let response = http().get(gateway.url(path)).send().await.unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response.json().await.unwrap()
}

#[tokio::test]
async fn models_list_catalog_details_as_extra_fields_of_openais_list() {
    let mock = MockOpenAi::start().await;
    let url = mock.base_url();
    let gw = overridden()
        .provider("groq", Provider::preset("groq").base_url(&url))
        .provider(
            "azure-openai",
            Provider::plugin("azure-openai")
                .base_url(&url)
                .models(["gpt-4o"]),
        )
        .provider("echo", Provider::echo().models(["echo-1"]))
        .start()
        .await;
    let list = get(&gw, "/v1/models").await;
    assert_eq!(list["object"], "list");
    let data = list["data"].as_array().unwrap();
    let find = |id: &str| {
        data.iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("{id} not listed: {list}"))
            .clone()
    };
    let groq_models = Catalog::builtin().model_names("groq").count();
    assert_eq!(
        data.iter().filter(|m| m["owned_by"] == "groq").count(),
        groq_models,
        "the preset lists the groq catalog"
    );

    let llama = find("groq/llama-3.1-8b-instant");
    assert_eq!(llama["object"], "model");
    assert!(llama["created"].is_u64());
    assert_eq!(llama["owned_by"], "groq");
    assert_eq!(llama["kind"], "chat");
    assert_eq!(llama["context_window"], 128_000);
    assert_eq!(
        llama["capabilities"],
        json!({"tools": true, "vision": false, "json_mode": false})
    );
    assert_eq!(
        llama["pricing"],
        json!({"input_per_mtok": 0.05, "output_per_mtok": 0.08})
    );

    // The config's override, not the built-in entry.
    let gpt = find("azure-openai/gpt-4o");
    assert_eq!(gpt["context_window"], 64_000);
    assert_eq!(
        gpt["pricing"],
        json!({"input_per_mtok": 100.0, "output_per_mtok": 200.0, "cached_input_per_mtok": 50.0})
    );

    // Not in the catalog: the plain OpenAI fields only.
    let echo = find("echo/echo-1");
    let keys: Vec<&str> = echo
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 4, "{echo}");
    for key in ["id", "object", "created", "owned_by"] {
        assert!(keys.contains(&key), "{echo}");
    }

    let one = get(&gw, "/v1/models/groq/llama-3.1-8b-instant").await;
    assert_eq!(one, llama);
}
