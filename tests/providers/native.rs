//! What only one provider does: parameters only its API has, options of its entry, its wire's
//! own cases; and what every entry learns from its plugin when the config loads.

use async_openai::types::embeddings::CreateEmbeddingRequestArgs;
use serde_json::{Value, json};

use super::client::{chat, chat_request, raw_stream, setup, setup_with};
use super::rows::{
    ANTHROPIC, AZURE, CLAUDE, COHERE, COHERE_EMBED, COMMAND, GEMINI, GEMINI_EMBED, GEMINI_MODEL,
    GPT, weather_tool,
};
use crate::common::gateway::{Gateway, Provider};
use crate::common::http;
use crate::common::mock_openai::MockOpenAi;
use crate::common::mock_providers::{KEY, anthropic, azure, gemini};

// ---------------------------------------------------------------------------------------------
// Anthropic

#[tokio::test]
async fn anthropic_request_has_its_version_top_level_system_and_default_max_tokens() {
    let (mock, gw) = setup(&ANTHROPIC).await;
    let mut request = chat_request(&format!("anthropic/{CLAUDE}"), Some("You are terse."));
    request.temperature = Some(0.5);
    gw.openai().chat().create(request).await.unwrap();

    let sent = mock.last_request().await;
    assert_eq!(sent.header("anthropic-version"), Some(anthropic::VERSION));
    assert_eq!(sent.body["max_tokens"], 4096, "max_tokens is required");
    assert_eq!(sent.body["system"], "You are terse.");
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "user", "content": "Hello there"}]),
        "the system message is not among the messages"
    );
    assert_eq!(sent.body["temperature"], 0.5);
    assert!(sent.body.get("stream").is_none_or(|s| s == false));
}

#[tokio::test]
async fn anthropic_request_maps_stop_max_completion_tokens_user_images_and_tool_choice() {
    let (mock, gw) = setup(&ANTHROPIC).await;
    let _: Value = gw
        .openai()
        .chat()
        .create_byot(json!({
            "model": format!("anthropic/{CLAUDE}"),
            "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQSkZJRg=="}},
                {"type": "text", "text": "What is this?"}]}],
            "stop": ["END"],
            "max_completion_tokens": 20,
            "user": "user-123",
            "tools": [weather_tool()],
            "tool_choice": "required"
        }))
        .await
        .unwrap();
    let sent = mock.last_request().await.body;
    assert_eq!(sent["max_tokens"], 20);
    assert_eq!(sent["stop_sequences"], json!(["END"]));
    assert_eq!(sent["metadata"], json!({"user_id": "user-123"}));
    assert_eq!(sent["tool_choice"]["type"], "any");
    assert_eq!(
        sent["messages"][0]["content"],
        json!([{"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                            "data": "/9j/4AAQSkZJRg=="}},
               {"type": "text", "text": "What is this?"}])
    );
    for openai_only in ["stop", "max_completion_tokens", "user"] {
        assert!(sent.get(openai_only).is_none(), "{openai_only}: {sent}");
    }
}

#[tokio::test]
async fn anthropic_default_max_tokens_option_applies_when_the_client_sets_none() {
    let (mock, gw) = setup_with(&ANTHROPIC, KEY, "{default_max_tokens: 777}").await;
    chat(&gw, &format!("anthropic/{CLAUDE}")).await;
    assert_eq!(mock.last_request().await.body["max_tokens"], 777);
}

#[tokio::test]
async fn anthropic_parallel_tool_results_go_back_in_one_user_message() {
    let (mock, gw) = setup(&ANTHROPIC).await;
    let _: Value = gw
        .openai()
        .chat()
        .create_byot(json!({
            "model": format!("anthropic/{CLAUDE}"),
            "messages": [
                {"role": "user", "content": "Weather in Paris and Rome?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "toolu_A", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris\"}"}},
                    {"id": "toolu_B", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"location\":\"Rome\"}"}}]},
                {"role": "tool", "tool_call_id": "toolu_A", "content": "15 degrees"},
                {"role": "tool", "tool_call_id": "toolu_B",
                 "content": [{"type": "text", "text": "20 degrees"}]}
            ],
            "tools": [weather_tool()]
        }))
        .await
        .unwrap();
    let messages = mock.last_request().await.body["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 3, "{messages}");
    assert_eq!(
        messages[1]["content"],
        json!([{"type": "tool_use", "id": "toolu_A", "name": "get_weather", "input": {"location": "Paris"}},
               {"type": "tool_use", "id": "toolu_B", "name": "get_weather", "input": {"location": "Rome"}}])
    );
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(results.len(), 2, "{messages}");
    assert_eq!(results[0]["tool_use_id"], "toolu_A");
    assert_eq!(results[0]["content"], "15 degrees");
    assert_eq!(results[1]["tool_use_id"], "toolu_B");
    let second = &results[1]["content"];
    assert!(
        *second == json!("20 degrees")
            || *second == json!([{"type": "text", "text": "20 degrees"}]),
        "{second}"
    );
}

#[tokio::test]
async fn anthropic_error_event_mid_stream_becomes_an_openai_error_event() {
    let (_mock, gw) = setup(&ANTHROPIC).await;
    let (status, _, body) = raw_stream(&gw, "anthropic/stream-overloaded").await;
    assert_eq!(status, 200);
    assert!(body.contains("\"content\":\"Hello\""), "{body}");
    assert!(!body.contains("[DONE]"), "{body}");
    let last: Value = body
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .last()
        .map(|e| serde_json::from_str(e).unwrap())
        .unwrap();
    let error = &last["error"];
    assert!(
        error["message"].as_str().unwrap().contains("Overloaded"),
        "{body}"
    );
    assert_eq!(error["code"], "overloaded_error", "{body}");
}

// ---------------------------------------------------------------------------------------------
// Gemini

#[tokio::test]
async fn gemini_request_has_a_system_instruction_and_generation_config() {
    let (mock, gw) = setup(&GEMINI).await;
    let mut request = chat_request(&format!("gemini/{GEMINI_MODEL}"), Some("You are a cat."));
    request.temperature = Some(0.7);
    request.max_completion_tokens = Some(64);
    request.stop = Some(async_openai::types::chat::StopConfiguration::StringArray(
        vec!["END".into()],
    ));
    gw.openai().chat().create(request).await.unwrap();

    let sent = mock.last_request().await;
    assert_eq!(
        sent.body["contents"],
        json!([{"role": "user", "parts": [{"text": "Hello there"}]}])
    );
    assert_eq!(
        sent.body["systemInstruction"],
        json!({"parts": [{"text": "You are a cat."}]})
    );
    let config = &sent.body["generationConfig"];
    assert_eq!(config["temperature"], 0.7);
    assert_eq!(config["maxOutputTokens"], 64);
    assert_eq!(config["stopSequences"], json!(["END"]));
}

#[tokio::test]
async fn gemini_request_sends_images_as_inline_data_and_file_data() {
    let (mock, gw) = setup(&GEMINI).await;
    let _: Value = gw
        .openai()
        .chat()
        .create_byot(json!({
            "model": format!("gemini/{GEMINI_MODEL}"),
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "Caption these."},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQSkZJRg=="}},
                {"type": "image_url", "image_url": {"url": "https://example.com/photos/cat.png"}}]}]
        }))
        .await
        .unwrap();
    assert_eq!(
        mock.last_request().await.body["contents"][0]["parts"],
        json!([{"text": "Caption these."},
               {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQSkZJRg=="}},
               {"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/photos/cat.png"}}])
    );
}

#[tokio::test]
async fn gemini_second_tool_turn_reusing_call_0_gets_its_own_function_name() {
    let (mock, gw) = setup(&GEMINI).await;
    let _: Value = gw
        .openai()
        .chat()
        .create_byot(json!({
            "model": format!("gemini/{GEMINI_MODEL}"),
            "messages": [
                {"role": "user", "content": "Weather in Paris, then the time there?"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_0", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "call_0", "content": "{\"temperature\": 15}"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_0", "type": "function",
                    "function": {"name": "get_time", "arguments": "{\"city\":\"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "call_0", "content": "10:00"}
            ]
        }))
        .await
        .unwrap();
    let contents = mock.last_request().await.body["contents"].clone();
    assert_eq!(contents.as_array().unwrap().len(), 5, "{contents}");
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"]["name"],
        "get_weather"
    );
    assert_eq!(
        contents[4]["parts"][0]["functionResponse"]["name"],
        "get_time"
    );
    assert_eq!(
        contents[4]["parts"][0]["functionResponse"]["response"],
        json!({"output": "10:00"}),
        "a non-JSON result is wrapped"
    );
}

#[tokio::test]
async fn gemini_embeddings_use_embed_content_and_batch_embed_contents() {
    let (mock, gw) = setup(&GEMINI).await;
    let one = CreateEmbeddingRequestArgs::default()
        .model(format!("gemini/{GEMINI_EMBED}"))
        .input("What is the meaning of life?")
        .dimensions(3u32)
        .build()
        .unwrap();
    let response = gw.openai().embeddings().create(one).await.unwrap();
    assert_eq!(response.data.len(), 1);
    let expected: Vec<f32> = gemini::EMBEDDING.iter().map(|&x| x as f32).collect();
    assert_eq!(response.data[0].embedding, expected);
    let sent = mock.last_request().await;
    assert_eq!(
        sent.path,
        format!("/v1beta/models/{GEMINI_EMBED}:embedContent")
    );
    assert_eq!(sent.header("x-goog-api-key"), Some(KEY));
    assert_eq!(
        sent.body["content"],
        json!({"parts": [{"text": "What is the meaning of life?"}]})
    );
    assert_eq!(sent.body["outputDimensionality"], 3);

    let two = CreateEmbeddingRequestArgs::default()
        .model(format!("gemini/{GEMINI_EMBED}"))
        .input(["first", "second"])
        .build()
        .unwrap();
    let response = gw.openai().embeddings().create(two).await.unwrap();
    assert_eq!(response.data.len(), 2);
    assert_eq!(response.data[1].index, 1);
    let sent = mock.last_request().await;
    assert_eq!(
        sent.path,
        format!("/v1beta/models/{GEMINI_EMBED}:batchEmbedContents")
    );
    assert_eq!(
        sent.body["requests"][1],
        json!({"model": format!("models/{GEMINI_EMBED}"), "content": {"parts": [{"text": "second"}]}})
    );
}

// ---------------------------------------------------------------------------------------------
// Cohere

#[tokio::test]
async fn cohere_request_keeps_the_system_message_and_renames_parameters() {
    let (mock, gw) = setup(&COHERE).await;
    let mut request = chat_request(&format!("cohere/{COMMAND}"), Some("Be concise."));
    request.top_p = Some(0.75);
    request.max_completion_tokens = Some(100);
    gw.openai().chat().create(request).await.unwrap();

    let sent = mock.last_request().await;
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "system", "content": "Be concise."},
               {"role": "user", "content": "Hello there"}])
    );
    assert_eq!(sent.body["p"], 0.75, "top_p is Cohere's p");
    assert_eq!(sent.body["max_tokens"], 100);
}

#[tokio::test]
async fn cohere_embeddings_go_to_v2_embed_as_float_texts() {
    let (mock, gw) = setup(&COHERE).await;
    let request = CreateEmbeddingRequestArgs::default()
        .model(format!("cohere/{COHERE_EMBED}"))
        .input(["hello", "goodbye"])
        .build()
        .unwrap();
    let response = gw.openai().embeddings().create(request).await.unwrap();
    assert_eq!(response.data.len(), 2);
    assert_eq!(response.data[1].index, 1);
    assert_eq!(response.data[1].embedding[0], 1.016_296_4);
    assert_eq!(response.usage.prompt_tokens, 2);
    let sent = mock.last_request().await;
    assert_eq!(sent.path, "/v2/embed");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(sent.body["model"], COHERE_EMBED);
    assert_eq!(sent.body["texts"], json!(["hello", "goodbye"]));
    assert_eq!(sent.body["embedding_types"], json!(["float"]));
    assert!(
        sent.body["input_type"].is_string(),
        "input_type is required"
    );
}

#[tokio::test]
async fn cohere_embed_input_type_comes_from_the_provider_options() {
    let (mock, gw) = setup_with(&COHERE, KEY, "{input_type: search_query}").await;
    let request = CreateEmbeddingRequestArgs::default()
        .model(format!("cohere/{COHERE_EMBED}"))
        .input("hello")
        .build()
        .unwrap();
    let response = gw.openai().embeddings().create(request).await.unwrap();
    assert_eq!(response.data.len(), 1);
    let sent = mock.last_request().await.body;
    assert_eq!(sent["input_type"], "search_query");
    assert_eq!(sent["texts"], json!(["hello"]));
}

// ---------------------------------------------------------------------------------------------
// Azure OpenAI

#[tokio::test]
async fn azure_request_keeps_openais_messages() {
    let (mock, gw) = setup(&AZURE).await;
    gw.openai()
        .chat()
        .create(chat_request(
            &format!("azure-openai/{GPT}"),
            Some("Be brief."),
        ))
        .await
        .unwrap();
    let sent = mock.last_request().await;
    assert_eq!(sent.body["messages"][0]["role"], "system");
    assert_eq!(sent.body["messages"][1]["content"], "Hello there");
}

#[tokio::test]
async fn azure_deployments_and_api_version_options_choose_the_url() {
    let options = "{api_version: 2025-01-01-preview, deployments: {gpt-4o: prod-gpt4o-eastus}}";
    let (mock, gw) = setup_with(&AZURE, KEY, options).await;
    let response = chat(&gw, &format!("azure-openai/{GPT}")).await;
    assert_eq!(
        response.choices[0].message.content.as_deref(),
        Some(azure::TEXT)
    );
    let sent = mock.last_request().await;
    assert_eq!(
        sent.path,
        "/openai/deployments/prod-gpt4o-eastus/chat/completions?api-version=2025-01-01-preview"
    );
}

// ---------------------------------------------------------------------------------------------
// Across entries

#[tokio::test]
async fn requests_a_provider_cannot_express_are_400s_naming_the_param_and_never_sent() {
    let (anthropic_mock, anthropic_gw) = setup(&ANTHROPIC).await;
    let response = http()
        .post(anthropic_gw.url("/v1/chat/completions"))
        .json(&json!({"model": format!("anthropic/{CLAUDE}"), "n": 2,
                      "messages": [{"role": "user", "content": "Hello"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    assert_eq!(body["error"]["param"], "n", "{body}");
    assert!(anthropic_mock.requests().await.is_empty());

    let (gemini_mock, gemini_gw) = setup(&GEMINI).await;
    let response = http()
        .post(gemini_gw.url("/v1/chat/completions"))
        .json(
            &json!({"model": format!("gemini/{GEMINI_MODEL}"), "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "tool", "tool_call_id": "call_9", "content": "42"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["param"], "messages[1].tool_call_id", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("call_9"),
        "{body}"
    );
    assert!(gemini_mock.requests().await.is_empty());
}

/// Each entry's native dialects are what its built-in plugin says when the config loads:
/// Messages for Anthropic, Responses for OpenAI's own API, an Azure resource and a preset whose
/// host serves it, none for a compatible host without it or for the other plugins; OpenAI's
/// Files and Batch APIs (`openai-batches`) for OpenAI's own API and every Azure resource, and
/// Anthropic's Message Batches (`anthropic-message-batches`) for Anthropic.
#[tokio::test]
async fn entries_learn_their_native_dialects_from_their_plugins() {
    let entry = |plugin: &str, model: &str| Provider::plugin(plugin).api_key("k").models([model]);
    let azure = "https://res.openai.azure.com";
    let gateway = Gateway::builder()
        .provider("anthropic", entry("anthropic", "claude-haiku-4-5"))
        .provider("openai", entry("openai", "gpt-4o-mini"))
        .provider(
            "deepseek",
            entry("openai", "deepseek-chat").base_url("https://api.deepseek.com/v1"),
        )
        .provider("groq", Provider::preset("groq").api_key("k"))
        .provider("azure", entry("azure-openai", "gpt-4o").base_url(azure))
        .provider(
            "azure-old",
            entry("azure-openai", "gpt-4o")
                .base_url(azure)
                .options("{ responses: translate }"),
        )
        .provider("gemini", entry("gemini", "gemini-2.5-flash"))
        .provider("echo", Provider::echo().models(["echo-1"]))
        .start()
        .await;
    let loaded = gateway.state.gateway.load();
    let native = |name: &str| {
        let provider = loaded.providers.iter().find(|p| &*p.name == name).unwrap();
        provider.native.clone()
    };
    assert_eq!(
        native("anthropic"),
        ["messages", "anthropic-message-batches"]
    );
    // OpenAI's own base URL: its Responses endpoint takes WebSocket mode too.
    assert_eq!(
        native("openai"),
        ["responses", "openai-responses-websocket", "openai-batches"]
    );
    assert!(native("deepseek").is_empty());
    assert_eq!(native("groq"), ["responses"]);
    assert_eq!(native("azure"), ["responses", "openai-batches"]);
    assert_eq!(native("azure-old"), ["openai-batches"]);
    assert!(native("echo").is_empty());
}

/// Each entry's default base URL and telemetry name are what its plugin states when the config
/// loads (the contract's `describe`): the host keeps no table of plugin names.
#[tokio::test]
async fn entries_learn_their_default_base_url_and_telemetry_name_from_their_plugins() {
    let entry = |plugin: &str, model: &str| Provider::plugin(plugin).api_key("k").models([model]);
    let bedrock = |region: &str| {
        Provider::plugin("bedrock")
            .api_key("AKID:SECRET")
            .models(["m"])
            .options(&format!("{{ region: {region:?} }}"))
    };
    let gateway = Gateway::builder()
        .provider("openai", entry("openai", "gpt-4o-mini"))
        .provider(
            "local",
            Provider::plugin("openai")
                .base_url("http://127.0.0.1:9/v1")
                .models(["m"]),
        )
        .provider("anthropic", entry("anthropic", "claude-haiku-4-5"))
        .provider("gemini", entry("gemini", "gemini-2.5-flash"))
        .provider("cohere", entry("cohere", "command-a-03-2025"))
        .provider(
            "azure",
            entry("azure-openai", "gpt-4o").base_url("https://res.openai.azure.com"),
        )
        .provider("bedrock", bedrock("eu-west-3"))
        .provider("echo", Provider::echo().models(["echo-1"]))
        .start()
        .await;
    let loaded = gateway.state.gateway.load();
    let stated = |name: &str| {
        let provider = loaded.providers.iter().find(|p| &*p.name == name).unwrap();
        (
            provider.config.base_url.clone(),
            provider.system.to_string(),
        )
    };
    let cases = [
        ("openai", Some("https://api.openai.com/v1"), "openai"),
        ("local", Some("http://127.0.0.1:9/v1"), "openai"),
        (
            "anthropic",
            Some("https://api.anthropic.com/v1"),
            "anthropic",
        ),
        (
            "gemini",
            Some("https://generativelanguage.googleapis.com/v1beta"),
            "gcp.gemini",
        ),
        ("cohere", Some("https://api.cohere.com/v2"), "cohere"),
        (
            "azure",
            Some("https://res.openai.azure.com"),
            "azure.ai.openai",
        ),
        (
            "bedrock",
            Some("https://bedrock-runtime.eu-west-3.amazonaws.com"),
            "aws.bedrock",
        ),
        // States no name: the plugin's own.
        ("echo", None, "echo"),
    ];
    for (name, base_url, system) in cases {
        let expected = (base_url.map(str::to_owned), system.to_owned());
        assert_eq!(stated(name), expected, "{name}");
    }

    // A default is one the SDK would accept: a region that is no region name gives none, and
    // the entry is refused for it, naming the option.
    let bad_region = Gateway::builder().provider("bedrock", bedrock("evil.example/x"));
    let err = bad_region.try_start().await.err().unwrap();
    assert!(format!("{err:#}").contains("options.region"), "{err:#}");
    // Azure states none: the entry must give its resource's endpoint.
    let no_endpoint = Gateway::builder().provider("azure", entry("azure-openai", "m"));
    let err = no_endpoint.try_start().await.err().unwrap();
    assert!(
        format!("{err:#}").contains("base_url: is required"),
        "{err:#}"
    );
}

/// A provider the host has never heard of (tests/plugins/tiny-provider, built from the test
/// tree) states its default base URL (from its own option `port`) and its telemetry name, and
/// gets its key sent in the header it declares, without any change to the host.
#[tokio::test]
async fn a_new_provider_needs_no_change_to_the_host() {
    let mock = MockOpenAi::start().await;
    let port = mock.addr.port();
    let tiny = Provider::plugin("tiny-provider")
        .api_key("sk-tiny")
        .models(["gpt-4o-mini"])
        .options(&format!(
            "{{ port: {port}, headers: {{ x-team: search }} }}"
        ));
    let gateway = Gateway::builder().provider("tiny", tiny).start().await;
    {
        let loaded = gateway.state.gateway.load();
        let entry = &loaded.providers[0];
        assert_eq!(&*entry.system, "tiny");
        let base_url = format!("http://127.0.0.1:{port}/v1");
        assert_eq!(entry.config.base_url.as_deref(), Some(base_url.as_str()));
    }

    let body =
        json!({"model": "tiny/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]});
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let sent = mock.requests().await;
    assert_eq!(sent.len(), 1);
    let header = |name: &str| {
        sent[0]
            .headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    assert_eq!(header("x-tiny-key").as_deref(), Some("sk-tiny"));
    assert_eq!(header("authorization"), None);
    assert_eq!(header("x-team").as_deref(), Some("search"));

    // Its options are checked when the config loads, naming the key.
    let typo = Provider::plugin("tiny-provider")
        .models(["m"])
        .options("{ prot: 1 }");
    let err = Gateway::builder()
        .provider("tiny", typo)
        .try_start()
        .await
        .err()
        .unwrap();
    assert!(format!("{err:#}").contains("options.prot"), "{err:#}");
}
