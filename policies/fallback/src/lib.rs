//! The `fallback` router: the targets in config order, those whose circuit is open moved to the
//! end. The host tries the next target when one fails, so the config order is the fallback chain.
//! No options.

use wasmgate_plugin_sdk::routing::{config_order, open_last};
use wasmgate_plugin_sdk::{NoOptions, RouteRequest, Router, Target};

struct Fallback;

impl Router for Fallback {
    type Options = NoOptions;

    fn route(_: &NoOptions, _: &RouteRequest, targets: &[Target]) -> Result<Vec<u32>, String> {
        // Open circuits go last rather than away: when every healthy target has failed, one that
        // is cooling down is still worth a try before failing the request.
        Ok(open_last(config_order(targets), targets))
    }
}

wasmgate_plugin_sdk::export_router!(Fallback);

#[cfg(test)]
mod tests;
