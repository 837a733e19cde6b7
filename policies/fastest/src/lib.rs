//! The `fastest` router: the targets by what the host has measured of them, best first.
//!
//! Option `by`: `latency` (the default; the whole request), `ttft` (time to the first streamed
//! byte), `error_rate`, or `tokens_per_second` (higher is better). Targets not measured yet go
//! first, in config order, so that they get measured; open circuits go last.

use serde::Deserialize;
use wasmgate_plugin_sdk::routing::{Unmeasured, rank};
use wasmgate_plugin_sdk::{RouteRequest, Router, Target};

struct Fastest;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    #[serde(default)]
    by: By,
}

/// The measure to rank by.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum By {
    #[default]
    Latency,
    Ttft,
    ErrorRate,
    TokensPerSecond,
}

impl Router for Fastest {
    type Options = Options;

    fn route(options: &Options, _: &RouteRequest, targets: &[Target]) -> Result<Vec<u32>, String> {
        // `rank` puts the lowest first.
        let measure = |target: &Target| match options.by {
            By::Latency => target.latency_ms,
            By::Ttft => target.ttft_ms,
            // Always "measured": a target without attempts has a rate of 0, so it comes first
            // anyway.
            By::ErrorRate => Some(target.error_rate),
            By::TokensPerSecond => target.tokens_per_second.map(|tps| -tps),
        };
        Ok(rank(targets, Unmeasured::First, measure))
    }
}

wasmgate_plugin_sdk::export_router!(Fastest);

#[cfg(test)]
mod tests;
