//! The `weighted` router: an A/B split. One target is picked at random in proportion to its
//! weight, then the others follow in config order as fallbacks, open circuits last.
//!
//! Weights are the config's (`targets: [{id, weight}]`, 1 when not given) unless the option
//! `weights: {"<target id>": <number>}` (percentages, say) is given. It replaces them all: a target
//! it leaves out weighs 0 and only serves as a fallback. Mixing it with the config's weights would
//! make a partial map's numbers mean nothing.

use std::collections::BTreeMap;

use serde::Deserialize;
use wasmgate_plugin_sdk::routing::{config_order, open_last, weighted_pick};
use wasmgate_plugin_sdk::{ConfigError, RouteRequest, Router, Target};

struct Weighted;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    weights: Option<BTreeMap<String, f64>>,
}

impl Router for Weighted {
    type Options = Options;

    fn validate(options: &Options, targets: &[String]) -> Result<(), ConfigError> {
        let Some(weights) = &options.weights else {
            return Ok(());
        };
        for (id, weight) in weights {
            if !targets.contains(id) {
                let message = format!("`{id}` is not one of this model's targets");
                return Err(ConfigError::at(format!("weights.{id}"), message));
            }
            if !(weight.is_finite() && *weight >= 0.0) {
                let message = format!("a weight must be a number of at least 0, not {weight}");
                return Err(ConfigError::at(format!("weights.{id}"), message));
            }
        }
        if weights.values().all(|weight| *weight == 0.0) {
            let message = "at least one target needs a weight above 0";
            return Err(ConfigError::at("weights", message));
        }
        Ok(())
    }

    fn route(
        options: &Options,
        request: &RouteRequest,
        targets: &[Target],
    ) -> Result<Vec<u32>, String> {
        // An open circuit weighs nothing: the split is among the targets that can answer now.
        let weight = |target: &Target| match (&options.weights, target.is_open()) {
            (_, true) => 0.0,
            (Some(weights), false) => weights.get(&target.id).copied().unwrap_or(0.0),
            (None, false) => f64::from(target.weight),
        };
        let weights: Vec<f64> = targets.iter().map(weight).collect();
        // No pick when every healthy target weighs 0: then plain config order.
        let first = weighted_pick(&weights, request.random).and_then(|i| u32::try_from(i).ok());
        let rest = config_order(targets).filter(|i| Some(*i) != first);
        Ok(open_last(first.into_iter().chain(rest), targets))
    }
}

wasmgate_plugin_sdk::export_router!(Weighted);

#[cfg(test)]
mod tests;
