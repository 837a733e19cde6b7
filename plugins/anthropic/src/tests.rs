//! Native tests: the data-driven cases under `tests/cases/`, and config validation.

use wasmgate_plugin_sdk::ProviderConfig;

use super::*;

#[test]
fn cases() {
    wasmgate_plugin_testkit::run_cases::<Anthropic>(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases"),
        "anthropic",
    );
}

fn config(base_url: Option<&str>, options: &str) -> ProviderConfig {
    ProviderConfig {
        name: "anthropic".into(),
        base_url: base_url.map(Into::into),
        api_key: Some("k".into()),
        models: vec![],
        options: options.into(),
    }
}

#[test]
fn validate_accepts_all_options() {
    let options = r#"{"version": "2023-06-01", "default_max_tokens": 1024,
        "beta": ["prompt-caching-2024-07-31"]}"#;
    assert!(
        wasmgate_plugin_sdk::calls::validate::<Anthropic>(&config(
            Some("http://127.0.0.1:1/v1"),
            options
        ))
        .is_ok()
    );
    assert!(wasmgate_plugin_sdk::calls::validate::<Anthropic>(&config(None, "{}")).is_ok());
}

#[test]
fn validate_names_the_bad_key() {
    let cases = [
        (None, r#"{"max_tokens": 5}"#, "max_tokens"),
        (None, r#"{"default_max_tokens": 0}"#, "default_max_tokens"),
        (None, r#"{"version": "a\nb"}"#, "version"),
        (None, r#"{"beta": ["a,b"]}"#, "beta[0]"),
        (Some("api.anthropic.com"), "{}", "base_url"),
    ];
    for (base_url, options, key) in cases {
        let err = wasmgate_plugin_sdk::calls::validate::<Anthropic>(&config(base_url, options))
            .unwrap_err();
        assert_eq!(err.key.as_deref(), Some(key), "{options}");
    }
}

#[test]
fn every_entry_serves_messages_natively() {
    assert_eq!(
        wasmgate_plugin_sdk::calls::native_dialects::<Anthropic>(&config(None, "{}")),
        vec!["messages".to_owned(), batches::DIALECT.to_owned()]
    );
}
