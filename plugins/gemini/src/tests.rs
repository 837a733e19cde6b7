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
