use wasmgate_plugin_sdk::CircuitState::{Closed, HalfOpen, Open};
use wasmgate_plugin_sdk::routing::{route, validate};
use wasmgate_plugin_sdk::{CircuitState, RouteRequest, Target};

use super::Fallback;

fn targets(circuits: &[CircuitState]) -> Vec<Target> {
    let ids = ["openai/a", "anthropic/b", "gemini/c", "openai/d"];
    let targets = ids.iter().zip(circuits);
    targets
        .map(|(id, circuit)| Target {
            circuit: *circuit,
            ..Target::new(id)
        })
        .collect()
}

#[test]
fn config_order_when_all_are_healthy() {
    let targets = targets(&[Closed, HalfOpen, Closed, Closed]);
    let order = route::<Fallback>("{}", &RouteRequest::default(), &targets);
    assert_eq!(order, Ok(vec![0, 1, 2, 3]));
}

#[test]
fn open_circuits_move_to_the_end_in_config_order() {
    let targets = targets(&[Open, Closed, Open, HalfOpen]);
    let order = route::<Fallback>("{}", &RouteRequest::default(), &targets);
    assert_eq!(order, Ok(vec![1, 3, 0, 2]));
}

#[test]
fn takes_no_options() {
    assert!(validate::<Fallback>("", &[]).is_ok());
    let err = validate::<Fallback>(r#"{"order": "reverse"}"#, &[]).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("order"));
}
