use wasmgate_plugin_sdk::counters::{self, memory};
use wasmgate_plugin_sdk::limits::{check, settle, validate};
use wasmgate_plugin_sdk::{Decision, DenialCode, LimitRequest, Period, Settlement};

use super::{Budget, usd};

/// A request of project `p1` whose cost the host estimates at `micros` (None: unpriced).
fn costing(micros: Option<i64>) -> LimitRequest {
    LimitRequest {
        scope_key: "project:p1".to_owned(),
        project: "p1".to_owned(),
        estimated_cost_micros: micros,
        ..LimitRequest::default()
    }
}

fn cost(micros: Option<i64>) -> Settlement {
    Settlement {
        input_tokens: 10,
        output_tokens: 10,
        cost_micros: micros,
        succeeded: true,
    }
}

fn spent(period: Period) -> i64 {
    counters::get(&format!("usd:{}:project:p1", period.name()), period).value
}

fn headers(decision: &Decision) -> Vec<(&str, &str)> {
    let headers = decision.headers().iter();
    headers.map(|(n, v)| (n.as_str(), v.as_str())).collect()
}

#[test]
fn allows_until_the_budget_would_be_exceeded() {
    memory::set_resets_in_ms(Period::Day, 3 * 3_600_000 + 120_000);
    let options = r#"{"daily_usd": 1}"#;
    for _ in 0..3 {
        assert!(check::<Budget>(options, &costing(Some(300_000))).is_allowed());
    }
    assert_eq!(spent(Period::Day), 900_000);

    let decision = check::<Budget>(options, &costing(Some(300_000)));
    let denial = decision.denial().expect("the fourth would overshoot");
    assert_eq!(denial.code, DenialCode::InsufficientQuota);
    assert_eq!(denial.retry_after_ms, 10_920_000);
    assert_eq!(
        denial.message,
        "Budget of $1.00 per day for project:p1 is used up: $0.90 spent, and this request may \
         cost up to $0.30; it resets in 3h2m0s"
    );
    assert_eq!(
        headers(&decision),
        [
            ("x-ratelimit-limit-usd", "1.00"),
            ("x-ratelimit-remaining-usd", "0.10"),
            ("x-ratelimit-reset-usd", "3h2m0s"),
        ]
    );
    assert_eq!(spent(Period::Day), 900_000, "the refusal reserved nothing");

    // A cheaper request still fits.
    assert!(check::<Budget>(options, &costing(Some(100_000))).is_allowed());
    assert_eq!(spent(Period::Day), 1_000_000);
}

#[test]
fn concurrent_checks_cannot_pass_more_than_the_budget_allows() {
    // Ten requests are checked before any of them finishes: reservations make the budget of
    // $1.00 admit four of them at an estimated $0.25 each.
    let options = r#"{"daily_usd": 1.0, "total_usd": 50}"#;
    let request = costing(Some(250_000));
    let admitted = (0..10)
        .filter(|_| check::<Budget>(options, &request).is_allowed())
        .count();
    assert_eq!(admitted, 4);
    assert_eq!(spent(Period::Day), 1_000_000);
    assert_eq!(spent(Period::Total), 1_000_000);

    // They cost less than estimated: settling frees the difference for more requests.
    for _ in 0..admitted {
        settle::<Budget>(options, &request, &cost(Some(100_000)));
    }
    assert_eq!(spent(Period::Day), 400_000);
    assert_eq!(spent(Period::Total), 400_000);
    let admitted = (0..10)
        .filter(|_| check::<Budget>(options, &request).is_allowed())
        .count();
    assert_eq!(admitted, 2);
}

#[test]
fn settling_replaces_the_reservation_with_the_real_cost() {
    let options = r#"{"monthly_usd": 20}"#;
    let request = costing(Some(50_000));
    assert!(check::<Budget>(options, &request).is_allowed());
    assert_eq!(spent(Period::Month), 50_000);
    settle::<Budget>(options, &request, &cost(Some(72_500)));
    assert_eq!(spent(Period::Month), 72_500);

    // A request that failed costs what it cost: usually nothing.
    assert!(check::<Budget>(options, &request).is_allowed());
    settle::<Budget>(options, &request, &Settlement::failed());
    assert_eq!(spent(Period::Month), 72_500);
}

#[test]
fn a_refusal_leaves_every_budget_as_it_was() {
    let options = r#"{"daily_usd": 10, "monthly_usd": 1}"#;
    assert!(check::<Budget>(options, &costing(Some(900_000))).is_allowed());
    let before = memory::snapshot();
    // The daily budget reserves it before the monthly one refuses it.
    let decision = check::<Budget>(options, &costing(Some(200_000)));
    let message = &decision.denial().expect("over the monthly budget").message;
    assert!(
        message.starts_with("Budget of $1.00 per month"),
        "{message}"
    );
    assert_eq!(memory::snapshot(), before);
}

#[test]
fn a_spent_budget_refuses_even_unpriced_requests() {
    let options = r#"{"daily_usd": 1}"#;
    // Unpriced requests reserve nothing by default, and spend nothing.
    let request = costing(None);
    assert!(check::<Budget>(options, &request).is_allowed());
    settle::<Budget>(options, &request, &cost(None));
    assert_eq!(spent(Period::Day), 0);

    assert!(check::<Budget>(options, &costing(Some(1_000_000))).is_allowed());
    let decision = check::<Budget>(options, &request);
    let denial = decision.denial().expect("nothing is left");
    assert_eq!(
        denial.message,
        "Budget of $1.00 per day for project:p1 is used up: $1.00 spent; it resets in 24h0m0s"
    );
}

#[test]
fn estimate_micros_holds_back_unpriced_requests() {
    let options = r#"{"daily_usd": 0.01, "estimate_micros": 4000}"#;
    let request = costing(None);
    assert!(check::<Budget>(options, &request).is_allowed());
    assert!(check::<Budget>(options, &request).is_allowed());
    assert!(!check::<Budget>(options, &request).is_allowed());
    assert_eq!(spent(Period::Day), 8_000);
    // The real cost is unknown too: the reservation is given back.
    settle::<Budget>(options, &request, &cost(None));
    assert_eq!(spent(Period::Day), 4_000);
    // A priced request reserves its own estimate.
    assert!(check::<Budget>(options, &costing(Some(6_000))).is_allowed());
}

#[test]
fn a_total_budget_never_resets() {
    let options = r#"{"total_usd": 5}"#;
    assert!(check::<Budget>(options, &costing(Some(4_999_999))).is_allowed());
    let decision = check::<Budget>(options, &costing(Some(2)));
    let denial = decision.denial().expect("over the total");
    assert_eq!(denial.retry_after_ms, 86_400_000);
    assert_eq!(
        denial.message,
        "Budget of $5.00 in total for project:p1 is used up: $4.999999 spent, and this request \
         may cost up to $0.000002; it does not reset"
    );
    assert_eq!(
        headers(&decision),
        [
            ("x-ratelimit-limit-usd", "5.00"),
            ("x-ratelimit-remaining-usd", "0.000001"),
        ]
    );
}

#[test]
fn headers_report_the_budget_with_the_least_left() {
    memory::set_resets_in_ms(Period::Month, 10 * 86_400_000);
    let options = r#"{"daily_usd": 10, "monthly_usd": 100, "total_usd": 1000}"#;
    counters::add("usd:month:project:p1", Period::Month, 95_000_000);
    let decision = check::<Budget>(options, &costing(Some(300_000)));
    assert_eq!(
        headers(&decision),
        [
            ("x-ratelimit-limit-usd", "100.00"),
            ("x-ratelimit-remaining-usd", "4.70"),
            ("x-ratelimit-reset-usd", "240h0m0s"),
        ]
    );
}

#[test]
fn dollars_are_written_with_cents_and_the_digits_needed() {
    let cases = [
        (0, "0.00"),
        (1, "0.000001"),
        (1_234, "0.001234"),
        (500_000, "0.50"),
        (10_000_000, "10.00"),
        (12_345_678, "12.345678"),
        (-250_000, "-0.25"),
    ];
    for (micros, text) in cases {
        assert_eq!(usd(micros), text, "{micros}");
    }
}

#[test]
fn options_are_validated() {
    assert!(validate::<Budget>(r#"{"daily_usd": 5}"#).is_ok());
    assert!(validate::<Budget>(r#"{"monthly_usd": 0.5, "estimate_micros": 1000}"#).is_ok());

    let cases = [
        (r#"{"daily_usd": 0}"#, Some("daily_usd")),
        (r#"{"monthly_usd": -1}"#, Some("monthly_usd")),
        (r#"{"total_usd": "10"}"#, Some("total_usd")),
        (r#"{"total_usd": 0.0000001}"#, Some("total_usd")),
        (r#"{"total_usd": 1e15}"#, Some("total_usd")),
        (
            r#"{"daily_usd": 5, "estimate_micros": -1}"#,
            Some("estimate_micros"),
        ),
        (
            r#"{"daily_usd": 5, "estimate_micros": 0.5}"#,
            Some("estimate_micros"),
        ),
        (r#"{"weekly_usd": 5}"#, Some("weekly_usd")),
        (r#"{"daily": 5}"#, Some("daily")),
        (r#"{"estimate_micros": 1000}"#, None),
        ("{}", None),
    ];
    for (options, key) in cases {
        let err = validate::<Budget>(options).unwrap_err();
        assert_eq!(err.key.as_deref(), key, "{options}: {}", err.message);
    }
}
