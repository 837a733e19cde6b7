//! The `rate-limit` limiter: requests and tokens per minute, hour and day, per scope (the rule's
//! key, user, project, model or everyone), as OpenAI counts them.
//!
//! Options, at least one, each a whole number of at least 1: `requests_per_minute`,
//! `requests_per_hour`, `requests_per_day`, `tokens_per_minute`, `tokens_per_hour`,
//! `tokens_per_day`. Windows are fixed and aligned to UTC (a minute starts at second 0).
//!
//! A request counts 1 against each request limit, and reserves the most tokens it may use (its
//! estimated input plus its `max_tokens`, 0 when not given) against each token limit. If any limit
//! would be exceeded, nothing is counted and the request is refused (`rate_limit_exceeded`) until
//! that limit's window resets. When the request is done its token reservation is replaced by the
//! tokens it really used (none, if it failed); its request stays counted.
//!
//! Counters: `req:<period>:<scope>` and `tok:<period>:<scope>`, `<period>` being `minute`, `hour`
//! or `day`. Headers, for the tightest limit of each kind (the one with the least left):
//! `x-ratelimit-limit-requests`, `x-ratelimit-remaining-requests`, `x-ratelimit-reset-requests`
//! and the same with `-tokens`; a refusal carries those of the limit that refused it.

use serde::Deserialize;
use wasmgate_plugin_sdk::limits::{
    Exceeded, Reservation, Standing, ratelimit_headers, reset_header,
};
use wasmgate_plugin_sdk::{ConfigError, Decision, Denial, DenialCode, LimitRequest, Limiter};
use wasmgate_plugin_sdk::{Period, Settlement, counters};

struct RateLimit;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    requests_per_minute: Option<i64>,
    requests_per_hour: Option<i64>,
    requests_per_day: Option<i64>,
    tokens_per_minute: Option<i64>,
    tokens_per_hour: Option<i64>,
    tokens_per_day: Option<i64>,
}

/// What a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Requests,
    Tokens,
}

impl Unit {
    /// The word in option names, messages and headers.
    fn name(self) -> &'static str {
        match self {
            Unit::Requests => "requests",
            Unit::Tokens => "tokens",
        }
    }

    /// The first part of its counter keys.
    fn prefix(self) -> &'static str {
        match self {
            Unit::Requests => "req",
            Unit::Tokens => "tok",
        }
    }
}

/// One configured limit.
struct Limit {
    unit: Unit,
    period: Period,
    max: i64,
}

impl Options {
    /// The configured limits: requests before tokens, shorter windows first.
    fn limits(&self) -> impl Iterator<Item = Limit> {
        let limits = [
            (Unit::Requests, Period::Minute, self.requests_per_minute),
            (Unit::Requests, Period::Hour, self.requests_per_hour),
            (Unit::Requests, Period::Day, self.requests_per_day),
            (Unit::Tokens, Period::Minute, self.tokens_per_minute),
            (Unit::Tokens, Period::Hour, self.tokens_per_hour),
            (Unit::Tokens, Period::Day, self.tokens_per_day),
        ];
        let limits = limits.into_iter();
        limits.filter_map(|(unit, period, max)| {
            Some(Limit {
                unit,
                period,
                max: max?,
            })
        })
    }
}

impl Limit {
    /// The option that sets it, `requests_per_minute`, ...
    fn option(&self) -> String {
        format!("{}_per_{}", self.unit.name(), self.period.name())
    }

    fn key(&self, request: &LimitRequest) -> String {
        let (prefix, period) = (self.unit.prefix(), self.period.name());
        format!("{prefix}:{period}:{}", request.scope_key)
    }

    /// What the request counts against this limit when it is checked.
    fn reserve(&self, request: &LimitRequest) -> i64 {
        match self.unit {
            Unit::Requests => 1,
            Unit::Tokens => request.token_estimate(),
        }
    }

    fn refuse(&self, request: &LimitRequest, over: Exceeded) -> Denial {
        let (max, unit, period) = (self.max, self.unit.name(), self.period.name());
        let scope = &request.scope_key;
        let retry = reset_header(over.resets_in_ms);
        let message = if self.unit == Unit::Tokens && over.requested > max {
            // Waiting does not help this one.
            format!(
                "Request too large for the rate limit of {max} tokens per {period} for {scope}: \
                 it may use up to {} tokens (its input and max_tokens); lower max_tokens or \
                 shorten the input",
                over.requested
            )
        } else if self.unit == Unit::Tokens {
            format!(
                "Rate limit of {max} tokens per {period} reached for {scope}: {} used, this \
                 request may use up to {}; retry in {retry}",
                over.used, over.requested
            )
        } else {
            format!("Rate limit of {max} {unit} per {period} reached for {scope}; retry in {retry}")
        };
        let remaining = max.saturating_sub(over.used).max(0);
        Denial {
            code: DenialCode::RateLimitExceeded,
            message,
            retry_after_ms: over.resets_in_ms,
            headers: ratelimit_headers(unit, max, remaining, Some(over.resets_in_ms)),
        }
    }
}

impl Limiter for RateLimit {
    type Options = Options;

    fn validate(options: &Options) -> Result<(), ConfigError> {
        let mut any = false;
        for limit in options.limits() {
            if limit.max < 1 {
                let message = format!("must be a whole number of at least 1, not {}", limit.max);
                return Err(ConfigError::at(limit.option(), message));
            }
            any = true;
        }
        if !any {
            return Err(ConfigError::new(
                "set at least one limit: requests_per_minute, requests_per_hour, \
                 requests_per_day, tokens_per_minute, tokens_per_hour or tokens_per_day",
            ));
        }
        Ok(())
    }

    fn check(options: &Options, request: &LimitRequest) -> Decision {
        let mut reservation = Reservation::new();
        let mut standings = Vec::new();
        for limit in options.limits() {
            let key = limit.key(request);
            match reservation.add(key, limit.period, limit.reserve(request), limit.max) {
                Ok(counter) => standings.push((limit.unit, Standing::new(limit.max, &counter))),
                Err(over) => return Decision::Deny(limit.refuse(request, over)),
            }
        }
        let mut headers = Vec::new();
        for unit in [Unit::Requests, Unit::Tokens] {
            let of_unit = standings.iter().filter(|(u, _)| *u == unit);
            if let Some(tightest) = Standing::tightest(of_unit.map(|(_, standing)| *standing)) {
                let Standing {
                    limit,
                    remaining,
                    resets_in_ms,
                } = tightest;
                headers.extend(ratelimit_headers(
                    unit.name(),
                    limit,
                    remaining,
                    Some(resets_in_ms),
                ));
            }
        }
        Decision::Allow(headers)
    }

    fn settle(options: &Options, request: &LimitRequest, usage: &Settlement) {
        let correction = usage.tokens().saturating_sub(request.token_estimate());
        if correction == 0 {
            return;
        }
        for limit in options.limits().filter(|limit| limit.unit == Unit::Tokens) {
            counters::adjust(&limit.key(request), limit.period, correction);
        }
    }
}

wasmgate_plugin_sdk::export_limiter!(RateLimit);

#[cfg(test)]
mod tests;
