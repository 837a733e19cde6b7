use wasmgate_plugin_sdk::routing::{route, validate};
use wasmgate_plugin_sdk::{CircuitState, RouteRequest, Target};

use super::Fastest;

/// Four targets: `a` slow overall but quick to start, `b` unmeasured, `c` fast, `d` in between.
fn targets() -> Vec<Target> {
    let stats = [
        ("p/a", Some(900.0), Some(50.0), Some(80.0), 0.01),
        ("p/b", None, None, None, 0.0),
        ("p/c", Some(200.0), Some(150.0), Some(40.0), 0.20),
        ("p/d", Some(500.0), Some(100.0), Some(120.0), 0.05),
    ];
    let targets = stats.into_iter();
    targets
        .map(
            |(id, latency_ms, ttft_ms, tokens_per_second, error_rate)| Target {
                latency_ms,
                ttft_ms,
                tokens_per_second,
                error_rate,
                ..Target::new(id)
            },
        )
        .collect()
}

fn order(options: &str, targets: &[Target]) -> Vec<u32> {
    route::<Fastest>(options, &RouteRequest::default(), targets).unwrap()
}

#[test]
fn by_latency_by_default_unmeasured_first() {
    assert_eq!(order("{}", &targets()), [1, 2, 3, 0]);
    assert_eq!(order(r#"{"by": "latency"}"#, &targets()), [1, 2, 3, 0]);
}

#[test]
fn by_time_to_first_token() {
    assert_eq!(order(r#"{"by": "ttft"}"#, &targets()), [1, 0, 3, 2]);
}

#[test]
fn by_error_rate() {
    assert_eq!(order(r#"{"by": "error_rate"}"#, &targets()), [1, 0, 3, 2]);
}

#[test]
fn by_tokens_per_second_highest_first() {
    assert_eq!(
        order(r#"{"by": "tokens_per_second"}"#, &targets()),
        [1, 3, 0, 2]
    );
}

#[test]
fn open_circuits_go_last_half_open_stay() {
    let mut targets = targets();
    targets[2].circuit = CircuitState::Open;
    targets[1].circuit = CircuitState::Open;
    targets[0].circuit = CircuitState::HalfOpen;
    assert_eq!(order("{}", &targets), [3, 0, 1, 2]);
}

#[test]
fn options_are_validated() {
    assert!(validate::<Fastest>(r#"{"by": "ttft"}"#, &[]).is_ok());
    let err = validate::<Fastest>(r#"{"by": "speed"}"#, &[]).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("by"));
    assert!(err.message.contains("tokens_per_second"), "{}", err.message);
    let err = validate::<Fastest>(r#"{"metric": "ttft"}"#, &[]).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("metric"));
}
