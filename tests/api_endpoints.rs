//! The rest of the API clients call (issue 24): moderations, legacy completions (streamed and
//! not), rerank in Cohere's v2 shape (to Cohere, billed in search units, and to a vLLM-style
//! host, billed in tokens), transcriptions and translations in every `response_format`, and
//! speech streamed to a file. The official `openai` Python SDK drives the OpenAI endpoints
//! (`tests/sdk/openai_api.py`), and the Node one a call of each kind (`openai_api.mjs`),
//! against the strict mock of `common/mock_api.rs`; every call's
//! ledger record is checked for its exact cost at the catalog's published prices.

use crate::common;

use common::gateway::{Gateway, GatewayBuilder, Provider};
use common::http;
use common::mock_api::{self, API_KEY, MockApi};
use serde_json::{Value, json};

use crate::sdk_clients::{assert_passed, run_client};

fn config(mock: &MockApi) -> GatewayBuilder {
    let openai = mock.openai_url();
    let entry = |plugin: &str, base_url: &str, models: &[&str]| {
        Provider::at(plugin, base_url, API_KEY).models(models.iter().copied())
    };
    let openai_models = [
        "omni-moderation-latest",
        "gpt-3.5-turbo-instruct",
        "whisper-1",
        "gpt-4o-transcribe",
        "tts-1",
    ];
    let azure_models = ["gpt-35-turbo-instruct", "whisper", "tts"];
    Gateway::builder()
        .provider("openai", entry("openai", &openai, &openai_models))
        .provider(
            "cohere",
            entry("cohere", &mock.cohere_url(), &["rerank-v3.5"]),
        )
        .provider(
            "wrongkey",
            entry("openai", &openai, &["tts-1"]).api_key("sk-not-the-mocks"),
        )
        .provider(
            "azure",
            entry("azure-openai", &mock.azure_url(), &azure_models),
        )
        .provider("vllm", entry("openai", &openai, &["bge-reranker-v2-m3"]))
}

/// Each scenario's exact cost in micro-USD, from OpenAI's published prices.
const COSTS: &[(&str, i64)] = &[
    // Moderation is free.
    ("moderation", 0),
    // gpt-3.5-turbo-instruct: 10 prompt tokens at $1.50/M + 20 completion tokens at $2/M.
    ("completion", 55),
    ("completion_stream", 55),
    // whisper-1: 8.47 s of audio, billed as 8 s at $0.006/min = $0.0008.
    ("transcription_json", 800),
    ("transcription_text", 800),
    ("transcription_srt", 800),
    ("transcription_verbose_json", 800),
    ("transcription_vtt", 800),
    ("translation", 800),
    // gpt-4o-transcribe: 14 audio tokens at $6/M + 45 text tokens at $10/M.
    ("transcription_tokens", 534),
    // The same, streamed: the usage of its last event.
    ("transcription_stream", 534),
    // tts-1: "Hello from wasmgate." is 20 characters at $15/M characters.
    ("speech", 300),
];

#[tokio::test]
async fn the_openai_python_sdk_calls_each_endpoint_and_each_call_is_metered_exactly() {
    let mock = MockApi::start().await;
    let gateway = config(&mock).start().await;
    let key = gateway.api_key("default").await;
    let out = tempfile_dir("api-sdk");
    let output = run_client(
        "openai_api.py",
        &gateway.url("/v1"),
        &key,
        &["--out", out.to_str().unwrap()],
    )
    .await;
    let scenarios: Vec<&str> = COSTS
        .iter()
        .map(|(name, _)| *name)
        .chain(["errors"])
        .collect();
    assert_passed(&output, &scenarios);

    for (name, cost) in COSTS {
        let record = gateway.record_of(&format!("api-{name}")).await;
        assert_eq!(record.status, 200, "{name}: {record:?}");
        assert_eq!(record.cost_micros, Some(*cost), "{name}: {record:?}");
        assert_eq!(record.project, "default", "{name}");
    }
    let record = gateway.record_of("api-completion_stream").await;
    assert_eq!(
        (record.input_tokens, record.output_tokens, record.estimated),
        (mock_api::PROMPT_TOKENS, mock_api::COMPLETION_TOKENS, false),
        "the stream's usage is the upstream's"
    );
    assert_eq!(
        gateway.record_of("api-transcription_srt").await.operation,
        "audio.transcriptions"
    );

    // What the upstream got: Whisper asked for verbose_json whatever the client wanted (the
    // duration it is billed by is only there), the file as the client sent it, the client's
    // other fields untouched; gpt-4o-transcribe asked for json (its tokens are there).
    let received = mock.received().await;
    let whisper: Vec<_> = received
        .iter()
        .filter(|r| r.path == "/v1/audio/transcriptions")
        .filter(|r| {
            r.fields
                .contains(&("model".to_owned(), "whisper-1".to_owned()))
        })
        .collect();
    assert_eq!(
        whisper.len(),
        5,
        "one a format (`mp3` is refused before it leaves)"
    );
    for form in &whisper {
        let format: Vec<_> = form
            .fields
            .iter()
            .filter(|(n, _)| n == "response_format")
            .collect();
        assert_eq!(
            format,
            [&("response_format".to_owned(), "verbose_json".to_owned())]
        );
        assert_eq!(
            form.body["file"],
            json!({"file_name": "speech.mp3", "content_type": "audio/mpeg", "len": 16384})
        );
        assert!(
            form.fields
                .contains(&("language".to_owned(), "en".to_owned()))
        );
        let auth = form.headers.get("authorization").unwrap().to_str().unwrap();
        assert_eq!(auth, format!("Bearer {API_KEY}"));
    }
    let tokens = received
        .iter()
        .find(|r| {
            r.fields
                .contains(&("model".to_owned(), "gpt-4o-transcribe".to_owned()))
        })
        .expect("the gpt-4o-transcribe request");
    assert!(
        tokens
            .fields
            .contains(&("response_format".to_owned(), "json".to_owned()))
    );
    let granularities: Vec<_> = received
        .iter()
        .flat_map(|r| &r.fields)
        .filter(|(n, _)| n == "timestamp_granularities[]")
        .collect();
    assert_eq!(granularities.len(), 1, "a repeated field is passed on");
    let speech = received
        .iter()
        .find(|r| r.path == "/v1/audio/speech")
        .unwrap();
    assert_eq!(speech.body["input"], "Hello from wasmgate.");
    assert_eq!(speech.body["model"], "tts-1");
    let _ = std::fs::remove_dir_all(out);
}

/// The Node SDK, one call of each kind, each metered as the Python SDK's are.
#[tokio::test]
async fn the_openai_node_sdk_calls_one_of_each_and_each_is_metered_exactly() {
    let mock = MockApi::start().await;
    let gateway = config(&mock).start().await;
    let key = gateway.api_key("default").await;
    let output = run_client("openai_api.mjs", &gateway.url("/v1"), &key, &[]).await;
    let costs = [
        ("moderation", 0),
        ("completion_stream", 55),
        ("transcription", 800),
        ("speech", 300),
    ];
    let scenarios: Vec<&str> = costs.iter().map(|(name, _)| *name).collect();
    assert_passed(&output, &scenarios);
    for (name, cost) in costs {
        let record = gateway.record_of(&format!("node-{name}")).await;
        assert_eq!(
            (record.status, record.cost_micros),
            (200, Some(cost)),
            "{name}: {record:?}"
        );
    }
}

/// Speech whose client leaves mid-audio is recorded with its cost all the same (the upstream
/// bills the text); an upstream's refusal reaches the client in OpenAI's shape, not as audio.
#[tokio::test]
async fn speech_is_metered_when_its_client_leaves_and_upstream_errors_are_openai_errors() {
    use futures_util::StreamExt;
    let mock = MockApi::start().await;
    let gateway = config(&mock).start().await;
    let speech = |model: &str, voice: &str| {
        http()
            .post(gateway.url("/v1/audio/speech"))
            .json(&json!({"model": model, "voice": voice, "input": "Hello from wasmgate."}))
    };
    let response = speech("openai/tts-1", "slow")
        .header("x-request-id", "speech-left")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "audio/mpeg");
    let mut body = response.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(!first.is_empty());
    drop(body);
    let record = gateway.record_of("speech-left").await;
    assert_eq!(record.cost_micros, Some(300), "{record:?}");
    assert_eq!(record.error_type.as_deref(), Some("stream_incomplete"));

    let response = speech("wrongkey/tts-1", "alloy")
        .header("x-request-id", "speech-refused")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["error"]["message"], "Incorrect API key provided.",
        "{body}"
    );
    let record = gateway.record_of("speech-refused").await;
    assert_eq!(
        (record.status, record.cost_micros),
        (401, None),
        "{record:?}"
    );
}

/// The same operations through an Azure OpenAI entry: its deployments' paths, its key header.
#[tokio::test]
async fn completions_and_audio_reach_azure_deployments() {
    use futures_util::StreamExt;
    let mock = MockApi::start().await;
    let gateway = config(&mock).start().await;
    let (status, body) = post(
        &gateway,
        "/v1/completions",
        "azure-completion",
        json!({"model": "azure/gpt-35-turbo-instruct", "prompt": "Once", "max_tokens": 5}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "text_completion");
    let record = gateway.record_of("azure-completion").await;
    assert_eq!(
        (record.input_tokens, record.output_tokens),
        (mock_api::PROMPT_TOKENS, mock_api::COMPLETION_TOKENS)
    );

    let form = reqwest::multipart::Form::new()
        .text("model", "azure/whisper")
        .text("response_format", "vtt")
        .part(
            "file",
            reqwest::multipart::Part::bytes(vec![9u8; 4096])
                .file_name("call.wav")
                .mime_str("audio/wav")
                .unwrap(),
        );
    let response = http()
        .post(gateway.url("/v1/audio/transcriptions"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/vtt")
    );
    assert!(
        response
            .text()
            .await
            .unwrap()
            .starts_with("WEBVTT\n\n00:00:00.000 --> 00:00:03.200")
    );

    let response = http()
        .post(gateway.url("/v1/audio/speech"))
        .json(&json!({"model": "azure/tts", "voice": "alloy", "input": "Hi", "response_format": "wav"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "audio/wav");
    let mut audio = 0;
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        audio += chunk.unwrap().len();
    }
    assert_eq!(audio, mock_api::speech_bytes().len());

    let received = mock.received().await;
    let azure: Vec<_> = received
        .iter()
        .filter(|r| r.headers.contains_key("x-azure-deployment"))
        .collect();
    assert_eq!(azure.len(), 3, "{azure:?}");
    let form = azure
        .iter()
        .find(|r| r.path.ends_with("transcriptions"))
        .unwrap();
    assert!(
        form.fields
            .contains(&("response_format".to_owned(), "verbose_json".to_owned()))
    );
    assert_eq!(form.body["file"]["file_name"], "call.wav");
}

/// A directory of its own under the system's temporary directory.
fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("wasmgate-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn post(gateway: &common::TestGateway, path: &str, id: &str, body: Value) -> (u16, Value) {
    let response = http()
        .post(gateway.url(path))
        .header("x-request-id", id)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn rerank_goes_to_cohere_in_search_units_and_to_an_openai_compatible_host_in_tokens() {
    let mock = MockApi::start().await;
    let gateway = config(&mock).start().await;
    let documents = json!([
        "Carson City is the capital city of the American state of Nevada.",
        "Washington, D.C. is the capital of the United States.",
        "Capital punishment has existed in the United States since before it was a country.",
    ]);
    let (status, body) = post(
        &gateway,
        "/v1/rerank",
        "rerank-cohere",
        json!({"model": "cohere/rerank-v3.5", "query": "capital of the United States",
               "documents": documents, "top_n": 2}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"].as_array().map(Vec::len), Some(2), "{body}");
    assert_eq!(body["results"][0]["index"], 1, "{body}");
    assert_eq!(body["meta"]["billed_units"]["search_units"], 1);
    let record = gateway.record_of("rerank-cohere").await;
    // One search at $2.00 per thousand.
    assert_eq!(record.cost_micros, Some(2_000), "{record:?}");
    assert_eq!(record.operation, "rerank");
    let sent = mock.received().await;
    let sent = sent.iter().find(|r| r.path == "/v2/rerank").unwrap();
    assert_eq!(sent.body["model"], "rerank-v3.5");
    assert_eq!(sent.body["top_n"], 2);

    let (status, body) = post(
        &gateway,
        "/v1/rerank",
        "rerank-vllm",
        json!({"model": "vllm/bge-reranker-v2-m3", "query": "capital of the United States",
               "documents": documents}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"].as_array().map(Vec::len), Some(3), "{body}");
    let record = gateway.record_of("rerank-vllm").await;
    assert_eq!(record.input_tokens, mock_api::RERANK_TOKENS, "{record:?}");
    assert_eq!(
        record.cost_micros, None,
        "a model the catalog does not price"
    );

    // Refused before any upstream call, in OpenAI's error shape.
    let before = mock.received().await.len();
    let (status, body) = post(
        &gateway,
        "/v1/rerank",
        "rerank-bad",
        json!({"model": "cohere/rerank-v3.5", "query": "q", "documents": []}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "documents", "{body}");
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    assert_eq!(mock.received().await.len(), before);
}

#[tokio::test]
async fn an_upload_past_the_body_limit_is_refused_before_it_is_read_whole() {
    let mock = MockApi::start().await;
    let gateway = config(&mock)
        .set("server.max_body_bytes", 65536)
        .start()
        .await;
    let form = |len: usize| {
        reqwest::multipart::Form::new()
            .text("model", "openai/whisper-1")
            .part(
                "file",
                reqwest::multipart::Part::bytes(vec![7u8; len])
                    .file_name("speech.mp3")
                    .mime_str("audio/mpeg")
                    .unwrap(),
            )
    };
    let send = |form| {
        http()
            .post(gateway.url("/v1/audio/transcriptions"))
            .multipart(form)
            .send()
    };
    let response = send(form(100_000)).await.unwrap();
    assert_eq!(response.status().as_u16(), 413);
    let body: Value = response.json().await.unwrap();
    assert!(body["error"]["message"].is_string(), "{body}");
    let response = send(form(30_000)).await.unwrap();
    assert_eq!(
        response.status().as_u16(),
        200,
        "{}",
        response.text().await.unwrap()
    );

    // Not a form, a form without a file, a file without a model: 400s naming the field.
    let response = http()
        .post(gateway.url("/v1/audio/transcriptions"))
        .json(&json!({"model": "openai/whisper-1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let no_file = reqwest::multipart::Form::new().text("model", "openai/whisper-1");
    let body: Value = send(no_file).await.unwrap().json().await.unwrap();
    assert_eq!(body["error"]["param"], "file", "{body}");
    let no_model = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(vec![1u8; 10]).file_name("a.mp3"),
    );
    let body: Value = send(no_model).await.unwrap().json().await.unwrap();
    assert_eq!(body["error"]["param"], "model", "{body}");
    // Text parts are bounded in number, repeated names included.
    let many = (0..65).fold(form(10), |form, _| {
        form.text("timestamp_granularities[]", "word")
    });
    let response = send(many).await.unwrap();
    assert_eq!(response.status().as_u16(), 400);
}
