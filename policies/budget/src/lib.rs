//! The `budget` limiter: spending caps in US dollars per day, per month and in total, per scope
//! (the rule's key, user, project, model or everyone).
//!
//! Options, at least one, each a number of dollars above 0: `daily_usd`, `monthly_usd`,
//! `total_usd`. Days and months are UTC calendar days and months; `total` never resets. Also
//! `estimate_micros`: what to reserve, in micro-USD, for a request the host could not price (a
//! model without catalog prices). It defaults to 0: unpriced requests are not held back while
//! the budget has money left, and since their cost is unknown they spend none of it either.
//!
//! Budgets are kept in micro-USD. A request reserves its estimated cost (the host's estimate at
//! the model's prices, for its input and output cap) against each budget; if one would go over, or
//! is already used up, nothing is reserved and the request is refused (`insufficient_quota`).
//! When the request is done its reservation is replaced by its real cost (usually 0 when it
//! failed). So concurrent requests cannot together overshoot a budget by more than their
//! estimates were off.
//!
//! A refused request is told to retry when the budget's day or month ends; for a total budget,
//! which never resets, after a day (a `Retry-After` of 0 would invite a retry at once).
//!
//! Counters: `usd:<period>:<scope>`, `<period>` being `day`, `month` or `total`. Headers, for the
//! budget with the least left: `x-ratelimit-limit-usd` and `x-ratelimit-remaining-usd` in
//! dollars (`10.00`, `0.004321`), and `x-ratelimit-reset-usd` in OpenAI's duration format unless
//! that budget is a total one; a refusal carries those of the budget that refused it.

use serde::Deserialize;
use wasmgate_plugin_sdk::limits::{
    Exceeded, Reservation, Standing, ratelimit_headers, reset_header,
};
use wasmgate_plugin_sdk::{ConfigError, Decision, Denial, DenialCode, LimitRequest, Limiter};
use wasmgate_plugin_sdk::{Period, Settlement, counters};

struct Budget;

/// What a refusal of a total budget, which never resets, says to wait: a day.
const TOTAL_RETRY_AFTER_MS: u64 = 86_400_000;

/// The largest budget accepted, in dollars: far beyond any real one, and far within `i64` micros.
const MAX_USD: f64 = 1e12;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    daily_usd: Option<f64>,
    monthly_usd: Option<f64>,
    total_usd: Option<f64>,
    #[serde(default)]
    estimate_micros: i64,
}

/// One configured budget.
struct Cap {
    option: &'static str,
    period: Period,
    usd: f64,
}

impl Options {
    fn caps(&self) -> impl Iterator<Item = Cap> {
        let caps = [
            ("daily_usd", Period::Day, self.daily_usd),
            ("monthly_usd", Period::Month, self.monthly_usd),
            ("total_usd", Period::Total, self.total_usd),
        ];
        let caps = caps.into_iter();
        caps.filter_map(|(option, period, usd)| {
            Some(Cap {
                option,
                period,
                usd: usd?,
            })
        })
    }

    /// What a request reserves against each budget, in micro-USD.
    fn reserve(&self, request: &LimitRequest) -> i64 {
        let estimate = request
            .estimated_cost_micros
            .unwrap_or(self.estimate_micros);
        estimate.max(0)
    }
}

impl Cap {
    /// The budget in micro-USD. `validate` made sure it is at least 1 and fits.
    fn micros(&self) -> i64 {
        // `as` saturates, and the value is whole after rounding.
        (self.usd * 1e6).round() as i64
    }

    fn key(&self, request: &LimitRequest) -> String {
        format!("usd:{}:{}", self.period.name(), request.scope_key)
    }

    /// When its headers say it resets: never, for a total budget.
    fn reset(&self, resets_in_ms: u64) -> Option<u64> {
        (self.period != Period::Total).then_some(resets_in_ms)
    }

    fn refuse(&self, request: &LimitRequest, over: Exceeded) -> Denial {
        let (limit, scope) = (self.micros(), &request.scope_key);
        let per = match self.period {
            Period::Day => "per day",
            Period::Month => "per month",
            Period::Minute | Period::Hour | Period::Total => "in total",
        };
        let (used, cost) = (usd(over.used), usd(over.requested));
        let spent = if over.requested > 0 {
            format!("${used} spent, and this request may cost up to ${cost}")
        } else {
            format!("${used} spent")
        };
        let (when, retry_after_ms) = match self.reset(over.resets_in_ms) {
            Some(ms) => (format!("it resets in {}", reset_header(ms)), ms),
            None => ("it does not reset".to_owned(), TOTAL_RETRY_AFTER_MS),
        };
        let limit_usd = usd(limit);
        let remaining = usd(limit.saturating_sub(over.used).max(0));
        Denial {
            code: DenialCode::InsufficientQuota,
            message: format!(
                "Budget of ${limit_usd} {per} for {scope} is used up: {spent}; {when}"
            ),
            retry_after_ms,
            headers: ratelimit_headers("usd", limit_usd, remaining, self.reset(over.resets_in_ms)),
        }
    }
}

/// `micros` micro-USD as dollars, with cents always and further digits as needed: `10.00`,
/// `0.50`, `0.001234`.
fn usd(micros: i64) -> String {
    let sign = if micros < 0 { "-" } else { "" };
    let micros = micros.unsigned_abs();
    let (dollars, fraction) = (micros / 1_000_000, micros % 1_000_000);
    let fraction = format!("{fraction:06}");
    let digits = fraction.trim_end_matches('0').len().max(2);
    format!("{sign}{dollars}.{}", &fraction[..digits])
}

impl Limiter for Budget {
    type Options = Options;

    fn validate(options: &Options) -> Result<(), ConfigError> {
        let mut any = false;
        for cap in options.caps() {
            if !(cap.usd.is_finite() && cap.usd > 0.0) {
                let message = format!("must be a number of dollars above 0, not {}", cap.usd);
                return Err(ConfigError::at(cap.option, message));
            }
            if cap.usd > MAX_USD {
                let message = format!("must be at most {MAX_USD} dollars, not {}", cap.usd);
                return Err(ConfigError::at(cap.option, message));
            }
            if cap.micros() < 1 {
                let message = format!("{} dollars is less than one micro-dollar", cap.usd);
                return Err(ConfigError::at(cap.option, message));
            }
            any = true;
        }
        if !any {
            return Err(ConfigError::new(
                "set at least one budget: daily_usd, monthly_usd or total_usd",
            ));
        }
        if options.estimate_micros < 0 {
            let message = format!("must be at least 0, not {}", options.estimate_micros);
            return Err(ConfigError::at("estimate_micros", message));
        }
        Ok(())
    }

    fn check(options: &Options, request: &LimitRequest) -> Decision {
        let reserve = options.reserve(request);
        let mut reservation = Reservation::new();
        let mut standings = Vec::new();
        for cap in options.caps() {
            match reservation.add(cap.key(request), cap.period, reserve, cap.micros()) {
                Ok(counter) => standings.push((Standing::new(cap.micros(), &counter), cap)),
                Err(over) => return Decision::Deny(cap.refuse(request, over)),
            }
        }
        let tightest = standings
            .iter()
            .min_by_key(|(standing, _)| standing.remaining);
        let headers = tightest.map(|(standing, cap)| {
            let (limit, remaining) = (usd(standing.limit), usd(standing.remaining));
            ratelimit_headers("usd", limit, remaining, cap.reset(standing.resets_in_ms))
        });
        Decision::Allow(headers.unwrap_or_default())
    }

    fn settle(options: &Options, request: &LimitRequest, usage: &Settlement) {
        let cost = usage.cost_micros.unwrap_or(0).max(0);
        let correction = cost.saturating_sub(options.reserve(request));
        if correction == 0 {
            return;
        }
        for cap in options.caps() {
            counters::adjust(&cap.key(request), cap.period, correction);
        }
    }
}

wasmgate_plugin_sdk::export_limiter!(Budget);

#[cfg(test)]
mod tests;
