//! The trait a limiter plugin implements, and its adapter to the generated bindings.

use core::marker::PhantomData;

use serde::de::DeserializeOwned;

use crate::kept_options::parse_kept;
use crate::wit::limiter::Guest;
use crate::{ConfigError, Decision, Denial, LimitRequest, Settlement, parse_options};

/// A limiter plugin: admits or refuses requests before they are forwarded (a rate limit, a
/// budget), and settles the admitted ones with what they really used. The host calls each
/// function on a fresh instance, so implementations are types without values
/// (`struct MyLimit;`); whatever must outlive a call goes in [`counters`](crate::counters).
/// See [`limits`](crate::limits) for reservations over several counters and the usual headers.
pub trait Limiter: 'static {
    /// The rule's `options`, read with [`parse_options`] once per distinct
    /// text by each instance (a reading depends on the text alone). Give it
    /// `#[serde(deny_unknown_fields)]` so that a misspelt option fails when the config loads;
    /// [`NoOptions`](crate::NoOptions) for a limiter that takes none.
    type Options: DeserializeOwned + 'static;

    /// Checks the options once, when the config loads, after they have been read into
    /// [`Self::Options`]. The default accepts anything.
    fn validate(options: &Self::Options) -> Result<(), ConfigError> {
        let _ = options;
        Ok(())
    }

    /// Admits the request, with `x-ratelimit-*` headers for its response, or refuses it with a
    /// 429. May reserve (add to counters) what the request is expected to use; a refusal should
    /// leave the counters as they were ([`Reservation`](crate::limits::Reservation) does that).
    fn check(options: &Self::Options, request: &LimitRequest) -> Decision;

    /// Replaces what [`check`](Self::check) reserved for an admitted request with what it really
    /// used. Also called, with a failed, zero-usage settlement, when a later rule refused the
    /// request after this one admitted it. Nothing is passed from `check`: recompute the
    /// reservation from the request. The default does nothing, for limiters that reserve nothing.
    fn settle(options: &Self::Options, request: &LimitRequest, usage: &Settlement) {
        let _ = (options, request, usage);
    }
}

/// The type [`export_limiter!`](crate::export_limiter) exports for a limiter `L`.
pub struct LimiterAdapter<L>(PhantomData<L>);

impl<L: Limiter> Guest for LimiterAdapter<L> {
    fn validate(options: String) -> Result<(), ConfigError> {
        validate::<L>(&options)
    }

    fn check(options: String, request: LimitRequest) -> Decision {
        check::<L>(&options, &request)
    }

    fn settle(options: String, request: LimitRequest, usage: Settlement) {
        settle::<L>(&options, &request, &usage);
    }
}

/// Checks `options` (JSON text) as the host has `L` do it when the config loads: read into
/// [`Limiter::Options`], then [`Limiter::validate`]. For a limiter's unit tests.
pub fn validate<L: Limiter>(options: &str) -> Result<(), ConfigError> {
    L::validate(&parse_options(options)?)
}

/// Checks `request` as the host has `L` do it, with `options` as JSON text. For a limiter's unit
/// tests.
///
/// # Panics
///
/// If the options cannot be read, which `validate` refused when the config loaded. `check` has no
/// error to return, and neither allowing nor refusing (with a 429 the client would retry) is
/// right, so the plugin traps: the host refuses the request as a failed limiter, and logs it.
pub fn check<L: Limiter>(options: &str, request: &LimitRequest) -> Decision {
    match parse_kept::<L::Options>(options) {
        Ok(options) => L::check(&options, request),
        Err(err) => {
            let message = unreadable(&err);
            crate::log::error(&message);
            panic!("{message}");
        }
    }
}

/// Settles `request` with `usage` as the host has `L` do it, with `options` as JSON text. For a
/// limiter's unit tests. Options that cannot be read (which `validate` refused when the config
/// loaded) are logged and nothing is settled.
pub fn settle<L: Limiter>(options: &str, request: &LimitRequest, usage: &Settlement) {
    match parse_kept::<L::Options>(options) {
        Ok(options) => L::settle(&options, request, usage),
        Err(err) => crate::log::error(&unreadable(&err)),
    }
}

fn unreadable(err: &ConfigError) -> String {
    match &err.key {
        Some(key) => format!("invalid limiter options at `{key}`: {}", err.message),
        None => format!("invalid limiter options: {}", err.message),
    }
}

impl LimitRequest {
    /// The most tokens the request may use: its estimated input plus its output cap (none: 0).
    /// What token limits reserve in `check`, and recompute in `settle` to correct.
    pub fn token_estimate(&self) -> i64 {
        let output = self.max_output_tokens.unwrap_or(0);
        i64::from(self.estimated_input_tokens) + i64::from(output)
    }
}

/// A request to model `""` of project `""` in the `global` scope, without key, user, tokens or
/// price. For tests, with struct update syntax.
impl Default for LimitRequest {
    fn default() -> Self {
        LimitRequest {
            scope_key: "global".to_owned(),
            project: String::new(),
            api_key_id: None,
            user_id: None,
            model: String::new(),
            estimated_input_tokens: 0,
            max_output_tokens: None,
            estimated_cost_micros: None,
        }
    }
}

impl Settlement {
    /// The tokens the request really used, input and output: 0 for a failed request, which
    /// used none upstream.
    pub fn tokens(&self) -> i64 {
        if !self.succeeded {
            return 0;
        }
        let total = self.input_tokens.saturating_add(self.output_tokens);
        i64::try_from(total).unwrap_or(i64::MAX)
    }

    /// A request that failed before it used anything (or was never sent), as the host settles
    /// a request that a later rule refused.
    pub fn failed() -> Self {
        Settlement {
            input_tokens: 0,
            output_tokens: 0,
            cost_micros: Some(0),
            succeeded: false,
        }
    }
}

impl Decision {
    /// Whether the request may go on.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    /// The headers of either outcome.
    pub fn headers(&self) -> &[(String, String)] {
        match self {
            Decision::Allow(headers) | Decision::Deny(Denial { headers, .. }) => headers,
        }
    }

    /// The refusal, if the request was refused.
    pub fn denial(&self) -> Option<&Denial> {
        match self {
            Decision::Allow(_) => None,
            Decision::Deny(denial) => Some(denial),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::limits::Reservation;
    use crate::{DenialCode, Period, counters};

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Opts {
        max: i64,
    }

    /// At most `max` requests per scope, all time; settling a failed request gives its slot back.
    struct Max;

    impl Limiter for Max {
        type Options = Opts;

        fn validate(options: &Opts) -> Result<(), ConfigError> {
            if options.max >= 1 {
                Ok(())
            } else {
                Err(ConfigError::at("max", "must be at least 1"))
            }
        }

        fn check(options: &Opts, request: &LimitRequest) -> Decision {
            let key = format!("n:{}", request.scope_key);
            match Reservation::new().add(key, Period::Total, 1, options.max) {
                Ok(_) => Decision::Allow(vec![("x-n".to_owned(), "ok".to_owned())]),
                Err(over) => Decision::Deny(Denial {
                    code: DenialCode::RateLimitExceeded,
                    message: "too many".to_owned(),
                    retry_after_ms: over.resets_in_ms,
                    headers: Vec::new(),
                }),
            }
        }

        fn settle(_: &Opts, request: &LimitRequest, usage: &Settlement) {
            if !usage.succeeded {
                counters::add(&format!("n:{}", request.scope_key), Period::Total, -1);
            }
        }
    }

    type Adapter = LimiterAdapter<Max>;

    #[test]
    fn options_are_read_then_validated() {
        assert!(Adapter::validate(r#"{"max": 2}"#.into()).is_ok());
        let err = Adapter::validate(r#"{"max": 0}"#.into()).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("max"));
        let err = Adapter::validate(r#"{"maks": 2}"#.into()).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("maks"));
    }

    #[test]
    fn check_and_settle_get_typed_options() {
        let options = || r#"{"max": 1}"#.to_owned();
        let first = Adapter::check(options(), LimitRequest::default());
        assert!(first.is_allowed());
        assert_eq!(first.headers(), [("x-n".to_owned(), "ok".to_owned())]);
        let second = Adapter::check(options(), LimitRequest::default());
        assert_eq!(
            second.denial().map(|d| d.code),
            Some(DenialCode::RateLimitExceeded)
        );

        Adapter::settle(options(), LimitRequest::default(), Settlement::failed());
        assert!(Adapter::check(options(), LimitRequest::default()).is_allowed());
    }

    #[test]
    #[should_panic(expected = "invalid limiter options at `max`")]
    fn check_traps_on_options_that_validate_refused() {
        Adapter::check(r#"{"max": "x"}"#.into(), LimitRequest::default());
    }

    #[test]
    fn settle_ignores_options_that_validate_refused() {
        Adapter::settle("[]".into(), LimitRequest::default(), Settlement::failed());
        assert!(counters::memory::snapshot().is_empty());
    }

    #[test]
    fn token_estimate_and_usage() {
        let request = LimitRequest {
            estimated_input_tokens: 100,
            max_output_tokens: Some(50),
            ..LimitRequest::default()
        };
        assert_eq!(request.token_estimate(), 150);
        let request = LimitRequest {
            max_output_tokens: None,
            ..request
        };
        assert_eq!(request.token_estimate(), 100);

        let usage = Settlement {
            input_tokens: 90,
            output_tokens: 20,
            cost_micros: None,
            succeeded: true,
        };
        assert_eq!(usage.tokens(), 110);
        assert_eq!(
            Settlement {
                succeeded: false,
                ..usage
            }
            .tokens(),
            0
        );
    }
}
