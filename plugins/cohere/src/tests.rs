//! Native tests: the data-driven cases under `tests/cases/`, and config validation.

use wasmgate_plugin_sdk::ProviderConfig;

use super::*;

#[test]
fn cases() {
    wasmgate_plugin_testkit::run_cases::<Cohere>(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases"),
        "cohere",
    );
}

fn config(base_url: Option<&str>, options: &str) -> ProviderConfig {
    ProviderConfig {
        name: "cohere".into(),
        base_url: base_url.map(Into::into),
        api_key: Some("k".into()),
        models: vec![],
        options: options.into(),
    }
}

#[test]
fn validate_names_the_bad_key() {
    assert!(
        wasmgate_plugin_sdk::calls::validate::<Cohere>(&config(
            None,
            r#"{"input_type": "search_query"}"#
        ))
        .is_ok()
    );
    let cases = [
        (None, r#"{"input_type": "documents"}"#, "input_type"),
        (None, r#"{"embedding_types": ["int8"]}"#, "embedding_types"),
        (Some("api.cohere.com"), "{}", "base_url"),
    ];
    for (base_url, options, key) in cases {
        let err =
            wasmgate_plugin_sdk::calls::validate::<Cohere>(&config(base_url, options)).unwrap_err();
        assert_eq!(err.key.as_deref(), Some(key), "{options}");
    }
}
