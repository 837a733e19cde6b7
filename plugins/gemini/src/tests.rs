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
