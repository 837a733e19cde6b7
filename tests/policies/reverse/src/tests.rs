use wasmgate_plugin_sdk::routing::{route, validate};
use wasmgate_plugin_sdk::{RouteRequest, Target};

use super::Reverse;

#[test]
fn reverses_the_config_order() {
    let targets = ["a/1", "b/2", "c/3"].map(Target::new);
    let order = route::<Reverse>("{}", &RouteRequest::default(), &targets);
    assert_eq!(order, Ok(vec![2, 1, 0]));
    assert!(validate::<Reverse>(r#"{"x": 1}"#, &[]).is_err());
}
