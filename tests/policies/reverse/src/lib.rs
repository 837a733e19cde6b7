//! A router that tries the targets in reverse config order: the host's tests load it as an
//! operator's own router, and it is the manual's example of one (docs/src/plugins/rust.md).

use wasmgate_plugin_sdk::routing::config_order;
use wasmgate_plugin_sdk::{NoOptions, RouteRequest, Router, Target};

struct Reverse;

impl Router for Reverse {
    type Options = NoOptions;

    fn route(_: &NoOptions, _: &RouteRequest, targets: &[Target]) -> Result<Vec<u32>, String> {
        Ok(config_order(targets).rev().collect())
    }
}

wasmgate_plugin_sdk::export_router!(Reverse);

#[cfg(test)]
mod tests;
