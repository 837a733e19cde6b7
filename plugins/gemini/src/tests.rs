//! Native tests: the data-driven cases under `tests/cases/`, and config validation.

use wasmgate_plugin_sdk::Provider;

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
    assert!(Gemini::validate(&config(None, "{}")).is_ok());
    let err = Gemini::validate(&config(None, r#"{"api_version": "v1"}"#)).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("api_version"));
    let err = Gemini::validate(&config(Some("localhost"), "{}")).unwrap_err();
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
fn no_dialect_is_native() {
    assert!(Gemini::native_operations(&config(None, "{}")).is_empty());
}
