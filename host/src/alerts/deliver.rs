//! Sending one alert to one sink, in the sink's own format, retried with backoff.

use std::time::Duration;

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::config::alerts::{SinkEntry, SinkKind};
use crate::ledger::alerts::{Delivery, Fired};
use crate::ledger::time::now_us;

/// Attempts per sink, and the pause before the second (doubled before each next).
const ATTEMPTS: i64 = 4;
const FIRST_PAUSE: Duration = Duration::from_millis(500);
/// One attempt's time, at most.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of a sink's error kept in the delivery record, at most.
const ERROR_MAX: usize = 300;

/// The alert's id: the same for every sink and replica (PagerDuty deduplicates on it).
pub fn id(fired: &Fired) -> String {
    format!(
        "{}:{}:{}:{}",
        fired.rule, fired.subject, fired.threshold, fired.period_us
    )
}

/// The body `sink` is sent.
fn body(sink: &SinkEntry, fired: &Fired) -> Value {
    match sink.kind {
        SinkKind::Webhook => json!({
            "id": id(fired),
            "rule": fired.rule,
            "subject": fired.subject,
            "threshold": fired.threshold,
            "period_start_us": fired.period_us,
            "fired_us": fired.fired_us,
            "message": fired.message,
        }),
        SinkKind::Slack => json!({"text": format!("wasmgate: {}", fired.message)}),
        SinkKind::Pagerduty => json!({
            "routing_key": sink.secret.as_ref().map(|s| s.expose()).unwrap_or_default(),
            "event_action": "trigger",
            "dedup_key": id(fired),
            "payload": {
                "summary": fired.message,
                "source": "wasmgate",
                "severity": severity(fired),
                "custom_details": {"rule": fired.rule, "subject": fired.subject, "threshold": fired.threshold},
            },
        }),
    }
}

/// PagerDuty's severity: a budget below its 100 % and a slow provider are warnings; a budget
/// used up, failures, an open circuit and a filling journal are critical.
fn severity(fired: &Fired) -> &'static str {
    match fired.rule.as_str() {
        "budget" if fired.threshold < 100 => "warning",
        "latency" => "warning",
        _ => "critical",
    }
}

/// `x-wasmgate-signature` for `body` sent at `unix` seconds with `secret`.
pub fn signature(secret: &str, unix: u64, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(format!("{unix}.").as_bytes());
    mac.update(body);
    format!("t={unix},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// Sends `fired` to `sink`, retrying a failure with backoff; what happened.
pub async fn deliver(http: &reqwest::Client, sink: &SinkEntry, fired: &Fired) -> Delivery {
    let body = body(sink, fired).to_string();
    let mut pause = FIRST_PAUSE;
    let mut last_error = None;
    for attempt in 1..=ATTEMPTS {
        let mut request = http
            .post(&sink.url)
            .timeout(TIMEOUT)
            .header("content-type", "application/json")
            .body(body.clone());
        if let (SinkKind::Webhook, Some(secret)) = (sink.kind, &sink.secret) {
            let unix = u64::try_from(now_us() / 1_000_000).unwrap_or_default();
            request = request.header(
                "x-wasmgate-signature",
                signature(secret.expose(), unix, body.as_bytes()),
            );
        }
        match request.send().await {
            Ok(response) if response.status().is_success() => {
                return Delivery {
                    sink: sink.name.clone(),
                    attempts: attempt,
                    delivered_us: Some(now_us()),
                    last_error: None,
                };
            }
            // The sink's own words are not kept: they may echo what it was sent.
            Ok(response) => last_error = Some(format!("HTTP {}", response.status().as_u16())),
            Err(e) => {
                let mut text = format!("{}", crate::clip::echo(&e.without_url().to_string()));
                text.truncate(text.floor_char_boundary(ERROR_MAX));
                last_error = Some(text);
            }
        }
        if attempt < ATTEMPTS {
            tokio::time::sleep(pause).await;
            pause *= 2;
        }
    }
    Delivery {
        sink: sink.name.clone(),
        attempts: ATTEMPTS,
        delivered_us: None,
        last_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_an_hmac_of_the_time_and_the_body() {
        // echo -n '1700000000.{}' | openssl dgst -sha256 -hmac key
        assert_eq!(
            signature("key", 1_700_000_000, b"{}"),
            "t=1700000000,v1=9d713ed406bb7076d4123f0dc2c39d2df5c654ed4b0cd56b52c8b4c940bd63ae"
        );
    }
}
