//! {{name}}: a wasmgate router. Premium users get the targets in config order, everyone else the
//! healthy targets from the cheapest input price up.

use serde::Deserialize;
use wasmgate_plugin_sdk::routing::{Unmeasured, healthy, rank};
use wasmgate_plugin_sdk::{RouteRequest, Router, Target, export_router};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    #[serde(default = "premium")]
    premium_tag: String,
}

fn premium() -> String {
    "premium".to_owned()
}

struct Plugin;

impl Router for Plugin {
    type Options = Options;

    fn route(options: &Options, request: &RouteRequest, targets: &[Target]) -> Result<Vec<u32>, String> {
        if request.user_tags.contains(&options.premium_tag) {
            return Ok(healthy(targets).map(|(i, _)| i).collect());
        }
        Ok(rank(targets, Unmeasured::Last, |t| t.input_price))
    }
}

export_router!(Plugin);

#[cfg(test)]
mod tests {
    use wasmgate_plugin_sdk::routing::{route, validate};
    use wasmgate_plugin_sdk::{CircuitState, RouteRequest, Target};

    use super::Plugin;

    fn target(id: &str, input_price: f64) -> Target {
        Target {
            id: id.into(), provider: "p".into(), model: id.into(), weight: 1,
            input_price: Some(input_price), output_price: None, in_flight: 0, latency_ms: None,
            ttft_ms: None, tokens_per_second: None, error_rate: 0.0, circuit: CircuitState::Closed,
        }
    }

    fn request(tags: &[&str]) -> RouteRequest {
        RouteRequest {
            model: "v".into(), project: "default".into(), user_id: None, user_name: None,
            user_tags: tags.iter().map(|t| t.to_string()).collect(), estimated_input_tokens: 0,
            stream: false, metadata: vec![], random: 0,
        }
    }

    #[test]
    fn premium_users_keep_config_order_and_others_get_the_cheapest_first() {
        let targets = [target("a/big", 5.0), target("b/small", 0.1)];
        assert_eq!(route::<Plugin>("{}", &request(&["premium"]), &targets), Ok(vec![0, 1]));
        assert_eq!(route::<Plugin>("{}", &request(&[]), &targets), Ok(vec![1, 0]));
        assert!(validate::<Plugin>(r#"{"premium": "x"}"#, &[]).is_err());
    }
}
