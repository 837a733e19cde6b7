//! {{name}}: a wasmgate limiter. At most `per_minute` requests a minute per scope.

use serde::Deserialize;
use wasmgate_plugin_sdk::limits::{Reservation, ratelimit_headers};
use wasmgate_plugin_sdk::{ConfigError, Decision, Denial, DenialCode, LimitRequest, Limiter, Period};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    per_minute: i64,
}

struct Plugin;

impl Limiter for Plugin {
    type Options = Options;

    fn validate(options: &Options) -> Result<(), ConfigError> {
        if options.per_minute < 1 {
            return Err(ConfigError::at("per_minute", "must be at least 1"));
        }
        Ok(())
    }

    fn check(options: &Options, request: &LimitRequest) -> Decision {
        let key = format!("req:{}", request.scope_key);
        match Reservation::new().add(key, Period::Minute, 1, options.per_minute) {
            Ok(counter) => Decision::Allow(ratelimit_headers(
                "requests",
                options.per_minute,
                options.per_minute - counter.value,
                Some(counter.resets_in_ms),
            )),
            Err(over) => Decision::Deny(Denial {
                code: DenialCode::RateLimitExceeded,
                message: format!("{} requests a minute: try again shortly", options.per_minute),
                retry_after_ms: over.resets_in_ms,
                headers: Vec::new(),
            }),
        }
    }
}

wasmgate_plugin_sdk::export_limiter!(Plugin);

#[cfg(test)]
mod tests {
    use wasmgate_plugin_sdk::limits::{check, validate};
    use wasmgate_plugin_sdk::{Decision, LimitRequest};

    use super::Plugin;

    fn request(scope: &str) -> LimitRequest {
        LimitRequest {
            scope_key: scope.into(), project: "default".into(), api_key_id: None, user_id: None,
            model: "m".into(), estimated_input_tokens: 0, max_output_tokens: None,
            estimated_cost_micros: None,
        }
    }

    #[test]
    fn the_request_over_the_limit_is_refused() {
        let options = r#"{"per_minute": 2}"#;
        let denied = (0..3).map(|_| matches!(check::<Plugin>(options, &request("user:u1")), Decision::Deny(_)));
        assert_eq!(denied.collect::<Vec<_>>(), [false, false, true]);
        assert!(validate::<Plugin>(r#"{"per_minute": 0}"#).is_err());
    }
}
