use wasmgate_plugin_sdk::routing::{route, validate};
use wasmgate_plugin_sdk::{CircuitState, RouteRequest, Target};

use super::Weighted;

const IDS: [&str; 3] = ["openai/a", "anthropic/b", "gemini/c"];

fn ids() -> Vec<String> {
    IDS.map(String::from).to_vec()
}

fn targets(weights: [u32; 3]) -> Vec<Target> {
    let targets = IDS.iter().zip(weights);
    targets
        .map(|(id, weight)| Target {
            weight,
            ..Target::new(id)
        })
        .collect()
}

/// A well-mixed `random` for draw `k` (splitmix64), as the host's would be.
fn random(k: u64) -> u64 {
    let mut z = k.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How often each target comes first over 10,000 requests.
fn first_counts(options: &str, targets: &[Target]) -> Vec<u32> {
    let mut counts = vec![0; targets.len()];
    for k in 0..10_000 {
        let request = RouteRequest {
            random: random(k),
            ..RouteRequest::default()
        };
        let order = route::<Weighted>(options, &request, targets).unwrap();
        assert_eq!(order.len(), targets.len(), "every target is in the order");
        counts[order[0] as usize] += 1;
    }
    counts
}

fn assert_near(count: u32, expected: u32) {
    // ±3 percentage points of 10,000 draws.
    assert!(
        count.abs_diff(expected) <= 300,
        "{count} is not near {expected}"
    );
}

#[test]
fn option_weights_split_70_30() {
    let options = r#"{"weights": {"openai/a": 70, "gemini/c": 30}}"#;
    let counts = first_counts(options, &targets([1, 1, 1]));
    assert_near(counts[0], 7000);
    assert_eq!(
        counts[1], 0,
        "a target left out of `weights` is only a fallback"
    );
    assert_near(counts[2], 3000);
}

#[test]
fn config_weights_split_when_no_option() {
    let counts = first_counts("{}", &targets([1, 2, 1]));
    assert_near(counts[0], 2500);
    assert_near(counts[1], 5000);
    assert_near(counts[2], 2500);
}

#[test]
fn the_others_follow_in_config_order() {
    let request = RouteRequest {
        random: u64::MAX,
        ..RouteRequest::default()
    };
    let order = route::<Weighted>("{}", &request, &targets([1, 1, 1]));
    assert_eq!(order, Ok(vec![2, 0, 1]));
}

#[test]
fn open_circuits_are_not_picked_and_go_last() {
    let mut targets = targets([1, 1, 1]);
    targets[0].circuit = CircuitState::Open;
    let counts = first_counts(r#"{"weights": {"openai/a": 90, "gemini/c": 10}}"#, &targets);
    assert_eq!(counts, [0, 0, 10_000]);
    let order = route::<Weighted>("{}", &RouteRequest::default(), &targets);
    assert_eq!(order, Ok(vec![1, 2, 0]));
}

#[test]
fn config_order_when_nothing_weighs() {
    let order = route::<Weighted>("{}", &RouteRequest::default(), &targets([0, 0, 0]));
    assert_eq!(order, Ok(vec![0, 1, 2]));
}

#[test]
fn options_are_validated() {
    assert!(validate::<Weighted>("{}", &ids()).is_ok());
    assert!(validate::<Weighted>(r#"{"weights": {"gemini/c": 0.5}}"#, &ids()).is_ok());

    let cases = [
        (r#"{"weights": {"openai/x": 50}}"#, "weights.openai/x"),
        (r#"{"weights": {"openai/a": -1}}"#, "weights.openai/a"),
        (r#"{"weights": {"openai/a": 0, "gemini/c": 0}}"#, "weights"),
        (r#"{"weights": {}}"#, "weights"),
        (r#"{"weights": {"openai/a": "half"}}"#, "weights.openai/a"),
        (r#"{"weight": {"openai/a": 1}}"#, "weight"),
    ];
    for (options, key) in cases {
        let err = validate::<Weighted>(options, &ids()).unwrap_err();
        assert_eq!(err.key.as_deref(), Some(key), "{options}: {}", err.message);
    }
}
