use wasmgate_plugin_sdk::routing::{route, validate};
use wasmgate_plugin_sdk::{CircuitState, RouteRequest, Target};

use super::Conditional;

const IDS: [&str; 3] = ["openai/big", "openai/small", "local/llama"];

fn ids() -> Vec<String> {
    IDS.map(String::from).to_vec()
}

fn targets() -> Vec<Target> {
    IDS.iter().map(|id| Target::new(id)).collect()
}

/// Premium users to `big` then `small`; project `internal` with `env: dev` to `llama`; the
/// rest to `small`.
const OPTIONS: &str = r#"{
    "rules": [
        {"when": {"user_tags_any": ["premium", "staff"]}, "targets": ["openai/big", "openai/small"]},
        {"when": {"project": ["internal"], "metadata": {"env": "dev"}}, "targets": ["local/llama"]}
    ],
    "default": ["openai/small"]
}"#;

fn request(project: &str, tags: &[&str], metadata: &[(&str, &str)]) -> RouteRequest {
    RouteRequest {
        model: "smart".into(),
        project: project.into(),
        user_tags: tags.iter().map(|tag| tag.to_string()).collect(),
        metadata: metadata
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..RouteRequest::default()
    }
}

fn order(options: &str, request: &RouteRequest) -> Result<Vec<u32>, String> {
    route::<Conditional>(options, request, &targets())
}

#[test]
fn the_first_matching_rule_picks_in_its_order() {
    let premium = request("internal", &["staff"], &[("env", "dev")]);
    assert_eq!(order(OPTIONS, &premium), Ok(vec![0, 1]));
    let dev = request("internal", &["free"], &[("env", "dev"), ("team", "x")]);
    assert_eq!(order(OPTIONS, &dev), Ok(vec![2]));
}

#[test]
fn every_condition_must_hold_else_the_default() {
    let wrong_env = request("internal", &[], &[("env", "prod")]);
    assert_eq!(order(OPTIONS, &wrong_env), Ok(vec![1]));
    let wrong_project = request("web", &[], &[("env", "dev")]);
    assert_eq!(order(OPTIONS, &wrong_project), Ok(vec![1]));
}

#[test]
fn user_id_and_all_tags() {
    let options = r#"{"rules": [{"when": {"user_id": ["u1", "u2"], "user_tags_all": ["a", "b"]},
        "targets": ["local/llama", "openai/big"]}]}"#;
    let mut both = request("p", &["b", "c", "a"], &[]);
    both.user_id = Some("u2".into());
    assert_eq!(order(options, &both), Ok(vec![2, 0]));

    let mut one_tag = request("p", &["a"], &[]);
    one_tag.user_id = Some("u2".into());
    let anonymous = request("p", &["a", "b"], &[]);
    for request in [one_tag, anonymous] {
        let err = order(options, &request).unwrap_err();
        assert!(err.contains("no routing rule matched"), "{err}");
        assert!(err.contains("smart"), "{err}");
    }
}

#[test]
fn a_rule_without_conditions_matches_all() {
    let options = r#"{"rules": [{"targets": ["local/llama"]}]}"#;
    assert_eq!(order(options, &request("p", &[], &[])), Ok(vec![2]));
}

#[test]
fn open_circuits_go_last_within_the_rule() {
    let mut targets = targets();
    targets[0].circuit = CircuitState::Open;
    let premium = request("p", &["premium"], &[]);
    let order = route::<Conditional>(OPTIONS, &premium, &targets);
    assert_eq!(order, Ok(vec![1, 0]));
}

#[test]
fn options_are_validated() {
    assert!(validate::<Conditional>(OPTIONS, &ids()).is_ok());
    assert!(validate::<Conditional>(r#"{"default": ["local/llama"]}"#, &ids()).is_ok());

    let cases = [
        (
            r#"{"rules": [{"targets": ["openai/big", "openai/huge"]}]}"#,
            Some("rules[0].targets[1]"),
        ),
        (r#"{"rules": [{"targets": []}]}"#, Some("rules[0].targets")),
        (r#"{"default": ["x/y"]}"#, Some("default[0]")),
        (
            r#"{"rules": [{"when": {"user_tag": ["a"]}, "targets": ["local/llama"]}]}"#,
            Some("rules[0].when.user_tag"),
        ),
        (
            r#"{"rules": [{"when": {"metadata": {"tier": 1}}, "targets": ["local/llama"]}]}"#,
            Some("rules[0].when.metadata.tier"),
        ),
        (r#"{"rules": [{"when": {}}]}"#, Some("rules[0]")),
        (r#"{"rule": []}"#, Some("rule")),
        ("{}", None),
    ];
    for (options, key) in cases {
        let err = validate::<Conditional>(options, &ids()).unwrap_err();
        assert_eq!(err.key.as_deref(), key, "{options}: {}", err.message);
    }
}
