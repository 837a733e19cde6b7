use wasmgate_plugin_sdk::routing::{route, validate};
use wasmgate_plugin_sdk::{CircuitState, RouteRequest, Target};

use super::Cheapest;

/// `a` cheap to read, dear to write; `b` unpriced; `c` the reverse of `a`; `d` input price only.
fn targets() -> Vec<Target> {
    let prices = [
        ("p/a", Some(1.0), Some(10.0)),
        ("p/b", None, None),
        ("p/c", Some(5.0), Some(2.0)),
        ("p/d", Some(0.5), None),
    ];
    let targets = prices.into_iter();
    targets
        .map(|(id, input_price, output_price)| Target {
            input_price,
            output_price,
            ..Target::new(id)
        })
        .collect()
}

fn order(options: &str, targets: &[Target]) -> Vec<u32> {
    route::<Cheapest>(options, &RouteRequest::default(), targets).unwrap()
}

#[test]
fn by_input_plus_output_price_unpriced_last() {
    // a: 11, c: 7; b and d lack a price that counts.
    assert_eq!(order("{}", &targets()), [2, 0, 1, 3]);
}

#[test]
fn weights_follow_the_token_mix() {
    // a: 10 + 10 = 20, c: 50 + 2 = 52.
    assert_eq!(order(r#"{"input_weight": 10}"#, &targets()), [0, 2, 1, 3]);
    // Output prices do not count: d (0.5) < a (1) < c (5).
    assert_eq!(order(r#"{"output_weight": 0}"#, &targets()), [3, 0, 2, 1]);
}

#[test]
fn open_circuits_go_last() {
    let mut targets = targets();
    targets[2].circuit = CircuitState::Open;
    targets[0].circuit = CircuitState::HalfOpen;
    assert_eq!(order("{}", &targets), [0, 1, 3, 2]);
}

#[test]
fn options_are_validated() {
    assert!(validate::<Cheapest>(r#"{"input_weight": 0.25}"#, &[]).is_ok());
    let cases = [
        (r#"{"input_weight": -1}"#, Some("input_weight")),
        (r#"{"output_weight": "x"}"#, Some("output_weight")),
        (r#"{"input_weight": 0, "output_weight": 0}"#, None),
        (r#"{"weight": 1}"#, Some("weight")),
    ];
    for (options, key) in cases {
        let err = validate::<Cheapest>(options, &[]).unwrap_err();
        assert_eq!(err.key.as_deref(), key, "{options}: {}", err.message);
    }
}
