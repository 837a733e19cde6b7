//! Native tests: the data-driven cases under `tests/cases/`, and config validation.

use wasmgate_plugin_sdk::ProviderConfig;

use super::*;

#[test]
fn cases() {
    wasmgate_plugin_testkit::run_cases::<Gemini>(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases"),
        "gemini",
    );
}

fn config(base_url: Option<&str>, options: &str) -> ProviderConfig {
    ProviderConfig {
        name: "gemini".into(),
        base_url: base_url.map(Into::into),
        api_key: Some("k".into()),
        models: vec![],
        options: options.into(),
    }
}

#[test]
fn validate_names_the_bad_key() {
    assert!(wasmgate_plugin_sdk::calls::validate::<Gemini>(&config(None, "{}")).is_ok());
    let err =
        wasmgate_plugin_sdk::calls::validate::<Gemini>(&config(None, r#"{"api_version": "v1"}"#))
            .unwrap_err();
    assert_eq!(err.key.as_deref(), Some("api_version"));
    let err = wasmgate_plugin_sdk::calls::validate::<Gemini>(&config(Some("localhost"), "{}"))
        .unwrap_err();
    assert_eq!(err.key.as_deref(), Some("base_url"));
}

#[test]
fn model_paths() {
    assert_eq!(model_path("gemini-2.0-flash"), "models/gemini-2.0-flash");
    assert_eq!(model_path("tunedModels/my-model"), "tunedModels/my-model");
}

#[test]
fn url_paths_keep_the_name_one_segment() {
    let path = |model: &str| url_path(model).map_err(|e| e.param);
    assert_eq!(
        path("gemini-2.0-flash"),
        Ok("models/gemini-2.0-flash".into())
    );
    assert_eq!(
        path("tunedModels/my-model"),
        Ok("tunedModels/my-model".into())
    );
    assert_eq!(path("models/a/b"), Ok("models/a%2Fb".into()));
    assert_eq!(
        path("x?key=abc&alt=json"),
        Ok("models/x%3Fkey%3Dabc%26alt%3Djson".into())
    );
    assert_eq!(
        path("x:streamGenerateContent"),
        Ok("models/x%3AstreamGenerateContent".into())
    );
    for hostile in [
        "../../v1/other",
        "..",
        ".",
        "models/..",
        "x/y",
        "",
        "%2e%2e/x",
    ] {
        assert_eq!(path(hostile), Err(Some("model".into())), "{hostile:?}");
    }
}

#[test]
fn thinking_tokens_are_reasoning_tokens_within_the_output() {
    let usage: response::UsageMetadata = serde_json::from_str(
        r#"{"promptTokenCount": 12, "candidatesTokenCount": 40, "thoughtsTokenCount": 350,
            "cachedContentTokenCount": 8, "totalTokenCount": 402}"#,
    )
    .unwrap();
    let usage = usage.to_usage();
    assert_eq!(usage.output_tokens, 390);
    assert_eq!(usage.reasoning_tokens, 350);
    assert_eq!(usage.input_tokens, 12);
    assert_eq!(usage.cached_input_tokens, 8);
}

#[test]
fn google_s_own_dialect_is_native() {
    assert_eq!(
        wasmgate_plugin_sdk::calls::native_dialects::<Gemini>(&config(None, "{}")),
        ["gemini"]
    );
}

fn native_request(route: &str, body: &str) -> CanonicalRequest {
    CanonicalRequest {
        operation: Operation::ChatCompletions,
        native: Some(wasmgate_plugin_sdk::NativeCall {
            dialect: "gemini".into(),
            route: route.into(),
            params: vec![("model".into(), "gemini-2.5-flash".into())],
        }),
        model: "gemini-2.5-flash".into(),
        body: body.into(),
        stream: route == "streamGenerateContent",
        headers: vec![],
    }
}

/// A native request goes as the client wrote it: only the URL's model and the key are the
/// gateway's, and a stream is asked for as SSE whatever framing the client chose.
#[test]
fn a_native_request_passes_through_with_the_model_and_key_swapped() {
    let body = r#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"safetySettings":[]}"#;
    let Prepared::Upstream(http) = wasmgate_plugin_sdk::calls::prepare::<Gemini>(
        &config(Some("http://127.0.0.1:9/v1beta"), "{}"),
        native_request("streamGenerateContent", body),
    )
    .unwrap() else {
        panic!("not upstream");
    };
    assert_eq!(
        http.url,
        "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(String::from_utf8(http.body).unwrap(), body);
    assert!(
        http.headers
            .iter()
            .any(|(k, v)| k == "x-goog-api-key" && v == "k")
    );

    let batch =
        r#"{"requests":[{"model":"models/client-name","content":{"parts":[{"text":"a"}]}}]}"#;
    let Prepared::Upstream(http) = wasmgate_plugin_sdk::calls::prepare::<Gemini>(
        &config(Some("http://127.0.0.1:9/v1beta"), "{}"),
        native_request("batchEmbedContents", batch),
    )
    .unwrap() else {
        panic!("not upstream");
    };
    let sent: serde_json::Value = serde_json::from_slice(&http.body).unwrap();
    assert_eq!(sent["requests"][0]["model"], "models/gemini-2.5-flash");
}

/// A native answer comes back untouched, with the usage it reports.
#[test]
fn a_native_answer_is_passed_on_with_its_usage() {
    let body = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4}}"#;
    let info = native_request("generateContent", "{}").info();
    let completion = wasmgate_plugin_sdk::calls::parse_response::<Gemini>(
        &config(None, "{}"),
        &info,
        HttpResponse {
            status: 200,
            headers: vec![],
            body: body.as_bytes().to_vec(),
        },
    )
    .unwrap();
    assert_eq!(completion.body, body);
    let usage = completion.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (3, 1));
}
