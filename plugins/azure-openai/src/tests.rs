//! Native tests: the data-driven cases under `tests/cases/`, and config validation.

use wasmgate_plugin_sdk::Provider;

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
    assert!(AzureOpenAi::validate(&config(base, "{}")).is_ok());
    let options = r#"{"api_version": "2025-01-01-preview", "deployments": {"gpt-4o": "prod-4o"}}"#;
    assert!(AzureOpenAi::validate(&config(base, options)).is_ok());
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
        let err = AzureOpenAi::validate(&config(base_url, options)).unwrap_err();
        assert_eq!(err.key.as_deref(), Some(key), "{options}");
    }
}
