//! Native tests: the data-driven cases under `tests/cases/`, config validation, and the signed
//! request as a whole at a fixed time.

use wasmgate_plugin_sdk::ProviderConfig;

use super::*;

#[test]
fn cases() {
    wasmgate_plugin_testkit::run_cases::<Bedrock>(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases"),
        "bedrock",
    );
}

fn config(base_url: Option<&str>, api_key: Option<&str>, options: &str) -> ProviderConfig {
    ProviderConfig {
        name: "bedrock".into(),
        base_url: base_url.map(Into::into),
        api_key: api_key.map(Into::into),
        models: vec![],
        options: options.into(),
    }
}

const KEYS: &str = r#""access_key_id": "AKIDEXAMPLE", "secret_access_key": "s""#;

#[test]
fn validate_accepts_both_credential_sources() {
    let options = format!(r#"{{"region": "eu-west-3", {KEYS}, "session_token": "t"}}"#);
    assert!(wasmgate_plugin_sdk::calls::validate::<Bedrock>(&config(None, None, &options)).is_ok());
    let from_key = config(
        Some("http://127.0.0.1:1"),
        Some("AKID:SECRET"),
        r#"{"region": "us-east-1"}"#,
    );
    assert!(wasmgate_plugin_sdk::calls::validate::<Bedrock>(&from_key).is_ok());
}

#[test]
fn validate_names_the_bad_key() {
    let cases = [
        (None, None, format!("{{{KEYS}}}"), Some("region")),
        (
            None,
            None,
            format!(r#"{{"region": "US East", {KEYS}}}"#),
            Some("region"),
        ),
        (
            None,
            None,
            format!(r#"{{"region": "us-east-1", {KEYS}, "profile": "x"}}"#),
            Some("profile"),
        ),
        (
            None,
            None,
            r#"{"region": "us-east-1", "access_key_id": "A"}"#.to_owned(),
            Some("secret_access_key"),
        ),
        (
            Some("bedrock.local"),
            None,
            format!(r#"{{"region": "us-east-1", {KEYS}}}"#),
            Some("base_url"),
        ),
        // No credentials anywhere, or an api_key that is not `ID:SECRET`.
        (
            None,
            Some("just-a-key"),
            r#"{"region": "us-east-1"}"#.to_owned(),
            None,
        ),
    ];
    for (base_url, api_key, options, key) in cases {
        let err =
            wasmgate_plugin_sdk::calls::validate::<Bedrock>(&config(base_url, api_key, &options))
                .unwrap_err();
        assert_eq!(err.key.as_deref(), key, "{options}");
        assert!(!err.message.contains("just-a-key"));
    }
}

#[test]
fn signed_request_at_a_fixed_time() {
    let options = format!(r#"{{"region": "us-east-1", {KEYS}}}"#);
    let request = CanonicalRequest {
        native: None,
        operation: Operation::ChatCompletions,
        model: "amazon.nova-lite-v1:0".into(),
        body: r#"{"model":"amazon.nova-lite-v1:0","messages":[{"role":"user","content":"Hi"}]}"#
            .into(),
        stream: false,
        headers: vec![],
    };
    let Ok(Prepared::Upstream(http)) = prepare_at(&entry(&options), request, 1_440_938_160) else {
        panic!("expected an upstream request");
    };
    assert_eq!(
        http.url,
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-lite-v1%3A0/converse"
    );
    let header = |name: &str| {
        http.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("x-amz-date").as_deref(), Some("20150830T123600Z"));
    assert_eq!(header("host"), None, "the host sets `host` itself");
    // The same signature, worked out from the canonical request by hand below.
    let canonical = format!(
        "POST\n/model/amazon.nova-lite-v1%253A0/converse\n\n\
         content-type:application/json\nhost:bedrock-runtime.us-east-1.amazonaws.com\n\
         x-amz-date:20150830T123600Z\n\ncontent-type;host;x-amz-date\n{}",
        sigv4::sha256_hex(&http.body)
    );
    let (built, _) = sigv4::canonical_request(&sigv4::Canonical {
        method: "POST",
        uri: "/model/amazon.nova-lite-v1%253A0/converse",
        query: "",
        headers: &[
            ("content-type".into(), "application/json".into()),
            (
                "host".into(),
                "bedrock-runtime.us-east-1.amazonaws.com".into(),
            ),
            ("x-amz-date".into(), "20150830T123600Z".into()),
        ],
        payload: &http.body,
    });
    assert_eq!(built, canonical);
    let auth = header("authorization").unwrap();
    assert!(
        auth.starts_with(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/bedrock/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, Signature="
        ),
        "{auth}"
    );
}

#[test]
fn model_ids_are_one_path_segment() {
    let options = format!(r#"{{"region": "us-east-1", {KEYS}}}"#);
    let url = |model: &str| {
        let request = CanonicalRequest {
            native: None,
            operation: Operation::ChatCompletions,
            model: model.into(),
            body: r#"{"model":"m","messages":[{"role":"user","content":"Hi"}]}"#.into(),
            stream: false,
            headers: vec![],
        };
        match prepare_at(&entry(&options), request, 1_440_938_160) {
            Ok(Prepared::Upstream(http)) => Ok(http.url),
            Ok(_) => Err(None),
            Err(e) => Err(e.param),
        }
    };
    let base = "https://bedrock-runtime.us-east-1.amazonaws.com/model";
    assert_eq!(
        url("arn:aws:bedrock:us-east-1:123:inference-profile/us.x"),
        Ok(format!(
            "{base}/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fus.x/converse"
        ))
    );
    assert_eq!(url("../x"), Ok(format!("{base}/..%2Fx/converse")));
    for hostile in ["..", ".", ""] {
        assert_eq!(url(hostile), Err(Some("model".into())), "{hostile:?}");
    }
}

#[test]
fn stream_ids_come_from_the_request_id() {
    use wasmgate_plugin_sdk::StreamDecoder;
    let info = RequestInfo {
        native: None,
        operation: Operation::ChatCompletions,
        model: "m".into(),
        stream: true,
    };
    let headers = [
        (
            "content-type".to_owned(),
            "application/vnd.amazon.eventstream".to_owned(),
        ),
        ("x-amzn-requestid".to_owned(), "req-1".to_owned()),
    ];
    let mut decoder = stream::Events::new(config(None, None, "{}"), info, &headers);
    let start = eventstream::encode(
        &[(":event-type", "messageStart"), (":message-type", "event")],
        br#"{"role":"assistant"}"#,
    );
    let out = decoder.push(&start).unwrap();
    assert!(
        out.events[0].contains(r#""id":"chatcmpl-req-1""#),
        "{out:?}"
    );
}

/// The entry of `options`, read as the SDK reads it.
fn entry(options: &str) -> wasmgate_plugin_sdk::Entry<Settings> {
    wasmgate_plugin_sdk::Entry::read::<Bedrock>(&config(None, None, options)).unwrap()
}
