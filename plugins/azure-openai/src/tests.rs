//! Native tests: the data-driven cases under `tests/cases/`, and config validation.

use wasmgate_plugin_sdk::ProviderConfig;

use super::*;

#[test]
fn cases() {
    wasmgate_plugin_testkit::run_cases::<AzureOpenAi>(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases"),
        "azure",
    );
}

fn config(base_url: Option<&str>, options: &str) -> ProviderConfig {
    ProviderConfig {
        name: "azure".into(),
        base_url: base_url.map(Into::into),
        api_key: Some("k".into()),
        models: vec![],
        options: options.into(),
    }
}

#[test]
fn validate_names_the_bad_key() {
    let base = Some("https://res.openai.azure.com");
    assert!(wasmgate_plugin_sdk::calls::validate::<AzureOpenAi>(&config(base, "{}")).is_ok());
    let options = r#"{"api_version": "2025-01-01-preview", "deployments": {"gpt-4o": "prod-4o"}}"#;
    assert!(wasmgate_plugin_sdk::calls::validate::<AzureOpenAi>(&config(base, options)).is_ok());
    let cases = [
        (None, "{}", "base_url"),
        (Some("res.openai.azure.com"), "{}", "base_url"),
        (base, r#"{"version": "x"}"#, "version"),
        (base, r#"{"api_version": "a&b=c"}"#, "api_version"),
        (
            base,
            r#"{"deployments": {"gpt-4o": "../x"}}"#,
            "deployments.gpt-4o",
        ),
    ];
    for (base_url, options, key) in cases {
        let err = wasmgate_plugin_sdk::calls::validate::<AzureOpenAi>(&config(base_url, options))
            .unwrap_err();
        assert_eq!(err.key.as_deref(), Some(key), "{options}");
    }
}

fn request(operation: Operation, body: &str) -> CanonicalRequest {
    CanonicalRequest {
        operation,
        model: "whisper-1".into(),
        body: body.into(),
        stream: false,
        headers: vec![],
        native: None,
    }
}

#[test]
fn completions_and_audio_go_to_the_deployment_and_the_rest_is_refused() {
    let config = config(Some("https://res.openai.azure.com"), "{}");
    let url = "https://res.openai.azure.com/openai/deployments/whisper-1";
    let form = r#"{"model":"whisper-1","response_format":"srt","language":"en"}"#;
    let Ok(Prepared::UpstreamForm(form)) = wasmgate_plugin_sdk::calls::prepare::<AzureOpenAi>(
        &config,
        request(Operation::AudioTranscriptions, form),
    ) else {
        panic!("a transcription is a form");
    };
    assert_eq!(
        form.request.url,
        format!("{url}/audio/transcriptions?api-version=2024-10-21")
    );
    assert_eq!(form.file_field, "file");
    assert!(
        form.request
            .headers
            .contains(&("api-key".into(), "k".into()))
    );
    // Whisper is asked for verbose_json: the duration it is billed by is only there.
    assert!(
        form.fields
            .contains(&("response_format".into(), "verbose_json".into()))
    );
    assert!(form.fields.contains(&("language".into(), "en".into())));

    let speech = r#"{"model":"whisper-1","input":"Hi there","voice":"alloy"}"#;
    let Ok(Prepared::UpstreamRaw(raw)) = wasmgate_plugin_sdk::calls::prepare::<AzureOpenAi>(
        &config,
        request(Operation::AudioSpeech, speech),
    ) else {
        panic!("speech is passed through");
    };
    assert_eq!(
        raw.request.url,
        format!("{url}/audio/speech?api-version=2024-10-21")
    );
    assert_eq!(raw.usage.map(|u| u.characters), Some(8));

    let Ok(Prepared::Upstream(http)) = wasmgate_plugin_sdk::calls::prepare::<AzureOpenAi>(
        &config,
        request(Operation::Completions, "{}"),
    ) else {
        panic!("a completion goes upstream");
    };
    assert_eq!(
        http.url,
        format!("{url}/completions?api-version=2024-10-21")
    );
    for operation in [Operation::Moderations, Operation::Rerank] {
        assert!(
            wasmgate_plugin_sdk::calls::prepare::<AzureOpenAi>(&config, request(operation, "{}"))
                .is_err()
        );
    }
}
