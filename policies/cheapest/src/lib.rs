//! The `cheapest` router: the healthy targets by price, cheapest first.
//!
//! A target's price is `input-price × input_weight + output-price × output_weight` (options, both
//! 1 by default; per million tokens, from the host's catalog). Weigh them by a workload's token
//! mix: `input_weight: 3` for prompts three times longer than answers. Targets whose price is not
//! known come after the priced ones, in config order; open circuits last.

use serde::Deserialize;
use wasmgate_plugin_sdk::routing::{Unmeasured, rank};
use wasmgate_plugin_sdk::{ConfigError, RouteRequest, Router, Target};

struct Cheapest;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    #[serde(default = "one")]
    input_weight: f64,
    #[serde(default = "one")]
    output_weight: f64,
}

fn one() -> f64 {
    1.0
}

impl Options {
    /// The target's weighted price; `None` when a price that counts is unknown. A price weighted 0
    /// does not count, so `output_weight: 0` ranks targets that only list an input price.
    fn price(&self, target: &Target) -> Option<f64> {
        let part = |price: Option<f64>, weight: f64| {
            if weight == 0.0 {
                Some(0.0)
            } else {
                price.map(|price| price * weight)
            }
        };
        Some(
            part(target.input_price, self.input_weight)?
                + part(target.output_price, self.output_weight)?,
        )
    }
}

impl Router for Cheapest {
    type Options = Options;

    fn validate(options: &Options, _: &[String]) -> Result<(), ConfigError> {
        for (key, weight) in [
            ("input_weight", options.input_weight),
            ("output_weight", options.output_weight),
        ] {
            if !(weight.is_finite() && weight >= 0.0) {
                let message = format!("a weight must be a number of at least 0, not {weight}");
                return Err(ConfigError::at(key, message));
            }
        }
        if options.input_weight == 0.0 && options.output_weight == 0.0 {
            // Every target would cost 0: config order, which `fallback` says more plainly.
            let message = "`input_weight` and `output_weight` are both 0";
            return Err(ConfigError::new(message));
        }
        Ok(())
    }

    fn route(options: &Options, _: &RouteRequest, targets: &[Target]) -> Result<Vec<u32>, String> {
        Ok(rank(targets, Unmeasured::Last, |target| {
            options.price(target)
        }))
    }
}

wasmgate_plugin_sdk::export_router!(Cheapest);

#[cfg(test)]
mod tests;
