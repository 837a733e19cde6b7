use wasmgate_plugin_sdk::counters::{self, memory};
use wasmgate_plugin_sdk::limits::{check, settle, validate};
use wasmgate_plugin_sdk::{Decision, DenialCode, LimitRequest, Period, Settlement};

use super::RateLimit;

fn user(id: &str) -> LimitRequest {
    LimitRequest {
        scope_key: format!("user:{id}"),
        user_id: Some(id.to_owned()),
        ..LimitRequest::default()
    }
}

/// A request of user `u1` with `input` estimated tokens and `max_tokens` of `output`.
fn sized(input: u32, output: Option<u32>) -> LimitRequest {
    LimitRequest {
        estimated_input_tokens: input,
        max_output_tokens: output,
        ..user("u1")
    }
}

fn used(input: u64, output: u64) -> Settlement {
    Settlement {
        input_tokens: input,
        output_tokens: output,
        cost_micros: None,
        succeeded: true,
    }
}

fn value(key: &str, period: Period) -> i64 {
    counters::get(key, period).value
}

fn headers(decision: &Decision) -> Vec<(&str, &str)> {
    let headers = decision.headers().iter();
    headers.map(|(n, v)| (n.as_str(), v.as_str())).collect()
}

#[test]
fn allows_up_to_the_limit_then_refuses() {
    memory::set_resets_in_ms(Period::Minute, 12_000);
    let options = r#"{"requests_per_minute": 3}"#;
    for _ in 0..3 {
        assert!(check::<RateLimit>(options, &user("u1")).is_allowed());
    }
    let decision = check::<RateLimit>(options, &user("u1"));
    let denial = decision.denial().expect("the fourth is refused");
    assert_eq!(denial.code, DenialCode::RateLimitExceeded);
    assert_eq!(denial.retry_after_ms, 12_000);
    assert_eq!(
        denial.message,
        "Rate limit of 3 requests per minute reached for user:u1; retry in 12s"
    );
    assert_eq!(
        headers(&decision),
        [
            ("x-ratelimit-limit-requests", "3"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "12s"),
        ]
    );
    // The refusal was not counted.
    assert_eq!(value("req:minute:user:u1", Period::Minute), 3);

    // Other scopes have their own counts; a new window starts from 0.
    assert!(check::<RateLimit>(options, &user("u2")).is_allowed());
    memory::end_window(Period::Minute);
    assert!(check::<RateLimit>(options, &user("u1")).is_allowed());
}

#[test]
fn each_window_counts_on_its_own() {
    let options = r#"{"requests_per_minute": 2, "requests_per_hour": 3}"#;
    let allowed = |n| (0..n).filter(|_| check::<RateLimit>(options, &user("u1")).is_allowed());
    assert_eq!(allowed(5).count(), 2);
    memory::end_window(Period::Minute);
    assert_eq!(allowed(5).count(), 1, "the hour has one request left");
    let decision = check::<RateLimit>(options, &user("u1"));
    let message = &decision.denial().expect("refused").message;
    assert!(
        message.starts_with("Rate limit of 3 requests per hour"),
        "{message}"
    );
}

#[test]
fn a_refusal_leaves_every_counter_as_it_was() {
    let options =
        r#"{"requests_per_minute": 10, "requests_per_day": 10, "tokens_per_minute": 1000}"#;
    assert!(check::<RateLimit>(options, &sized(400, Some(500))).is_allowed());
    let before = memory::snapshot();

    // Both request limits count it before the token limit refuses it.
    let decision = check::<RateLimit>(options, &sized(100, Some(100)));
    let denial = decision.denial().expect("over the token limit");
    assert_eq!(
        denial.message,
        "Rate limit of 1000 tokens per minute reached for user:u1: 900 used, this request may \
         use up to 200; retry in 1m0s"
    );
    assert_eq!(memory::snapshot(), before);
    assert_eq!(value("req:minute:user:u1", Period::Minute), 1);
    assert_eq!(value("req:day:user:u1", Period::Day), 1);
    assert_eq!(value("tok:minute:user:u1", Period::Minute), 900);
}

#[test]
fn tokens_are_reserved_then_settled_to_what_was_used() {
    let options = r#"{"tokens_per_minute": 1000, "tokens_per_day": 5000}"#;
    let request = sized(100, Some(500));
    assert!(check::<RateLimit>(options, &request).is_allowed());
    assert_eq!(value("tok:minute:user:u1", Period::Minute), 600);
    assert_eq!(value("tok:day:user:u1", Period::Day), 600);

    settle::<RateLimit>(options, &request, &used(90, 60));
    assert_eq!(value("tok:minute:user:u1", Period::Minute), 150);
    assert_eq!(value("tok:day:user:u1", Period::Day), 150);

    // Without max_tokens only the input is reserved; the output is charged when it is known.
    let request = sized(100, None);
    assert!(check::<RateLimit>(options, &request).is_allowed());
    assert_eq!(value("tok:minute:user:u1", Period::Minute), 250);
    settle::<RateLimit>(options, &request, &used(100, 700));
    assert_eq!(value("tok:minute:user:u1", Period::Minute), 950);
}

#[test]
fn a_failed_request_gives_its_tokens_back_but_stays_counted() {
    let options = r#"{"requests_per_minute": 5, "tokens_per_minute": 1000}"#;
    let request = sized(300, Some(300));
    assert!(check::<RateLimit>(options, &request).is_allowed());
    settle::<RateLimit>(options, &request, &Settlement::failed());
    assert_eq!(value("tok:minute:user:u1", Period::Minute), 0);
    assert_eq!(value("req:minute:user:u1", Period::Minute), 1);
}

#[test]
fn a_settlement_in_a_later_window_leaves_no_credit() {
    let options = r#"{"tokens_per_minute": 1000}"#;
    let request = sized(100, Some(800));
    assert!(check::<RateLimit>(options, &request).is_allowed());
    memory::end_window(Period::Minute);
    settle::<RateLimit>(options, &request, &used(100, 50));
    assert_eq!(value("tok:minute:user:u1", Period::Minute), 0);
}

#[test]
fn a_request_larger_than_the_limit_is_told_so() {
    let options = r#"{"tokens_per_minute": 1000}"#;
    let decision = check::<RateLimit>(options, &sized(600, Some(600)));
    let denial = decision.denial().expect("too large");
    assert_eq!(
        denial.message,
        "Request too large for the rate limit of 1000 tokens per minute for user:u1: it may use \
         up to 1200 tokens (its input and max_tokens); lower max_tokens or shorten the input"
    );
    assert!(memory::snapshot().is_empty());
}

#[test]
fn headers_report_the_tightest_limit_of_each_kind() {
    memory::set_resets_in_ms(Period::Minute, 12_345);
    memory::set_resets_in_ms(Period::Day, 6 * 3_600_000);
    let options = r#"{
        "requests_per_minute": 60, "requests_per_day": 10,
        "tokens_per_minute": 10000, "tokens_per_day": 1000000
    }"#;
    let decision = check::<RateLimit>(options, &sized(100, Some(50)));
    assert_eq!(
        headers(&decision),
        [
            ("x-ratelimit-limit-requests", "10"),
            ("x-ratelimit-remaining-requests", "9"),
            ("x-ratelimit-reset-requests", "6h0m0s"),
            ("x-ratelimit-limit-tokens", "10000"),
            ("x-ratelimit-remaining-tokens", "9850"),
            ("x-ratelimit-reset-tokens", "12.345s"),
        ]
    );

    // Only request limits: only request headers.
    let decision = check::<RateLimit>(r#"{"requests_per_hour": 2}"#, &user("u1"));
    assert_eq!(
        headers(&decision),
        [
            ("x-ratelimit-limit-requests", "2"),
            ("x-ratelimit-remaining-requests", "1"),
            ("x-ratelimit-reset-requests", "1h0m0s"),
        ]
    );
}

#[test]
fn options_are_validated() {
    assert!(validate::<RateLimit>(r#"{"requests_per_minute": 1}"#).is_ok());
    assert!(validate::<RateLimit>(r#"{"tokens_per_day": 1000000}"#).is_ok());

    let cases = [
        (r#"{"requests_per_minute": 0}"#, Some("requests_per_minute")),
        (r#"{"tokens_per_hour": -5}"#, Some("tokens_per_hour")),
        (r#"{"requests_per_day": 1.5}"#, Some("requests_per_day")),
        (r#"{"requests_per_day": "10"}"#, Some("requests_per_day")),
        (
            r#"{"requests_per_second": 10}"#,
            Some("requests_per_second"),
        ),
        (r#"{"requests_per_minute": 10, "burst": 2}"#, Some("burst")),
        ("{}", None),
        (r#"{"requests_per_minute": null}"#, None),
    ];
    for (options, key) in cases {
        let err = validate::<RateLimit>(options).unwrap_err();
        assert_eq!(err.key.as_deref(), key, "{options}: {}", err.message);
    }
    let err = validate::<RateLimit>(r#"{"requests_per_minute": 0}"#).unwrap_err();
    assert_eq!(err.message, "must be a whole number of at least 1, not 0");
}
