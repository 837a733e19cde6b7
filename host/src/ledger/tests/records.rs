//! The usage records the ledger's tests and its benchmark (`host/benches/ledger.rs`, through
//! `#[path]`) write: one file, so that the benchmark measures the records the tests check.

use super::UsageRecord;

/// A successful chat record of project `p` at `time_us`, whose request id is its time.
pub fn record(time_us: i64, model: &str, input: u64, output: u64, cost: i64) -> UsageRecord {
    UsageRecord {
        request_id: format!("req-{time_us}"),
        time_us,
        project: "p".to_owned(),
        provider: Some("openai".to_owned()),
        model: Some(model.to_owned()),
        operation: "chat.completions".to_owned(),
        input_tokens: input,
        output_tokens: output,
        cost_micros: Some(cost),
        status: 200,
        ..UsageRecord::default()
    }
}

/// `r` as sent by a user with this id, name and tags.
pub fn by(mut r: UsageRecord, id: &str, name: &str, tags: &[&str]) -> UsageRecord {
    r.user_id = Some(id.to_owned());
    r.user_name = Some(name.to_owned());
    r.user_tags = tags.iter().map(|t| (*t).to_owned()).collect();
    r
}

/// A record of the request-log property and of the backfill's database: `i` picks everything,
/// from a multiplicative hash.
pub fn log_record(i: u64, time_us: i64) -> UsageRecord {
    let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut r = record(time_us, ["m1", "m2", "m3"][(h >> 8) as usize % 3], 1, 2, 3);
    r.request_id = format!("log-{:05}", (h >> 20) % 100_000 * 100_000 + i);
    r.project = if i.is_multiple_of(5) { "q" } else { "p" }.to_owned();
    r.provider = Some(["openai", "anthropic"][(h >> 12) as usize % 2].to_owned());
    r.api_key_id = [None, Some("key_a"), Some("key_b")][(h >> 16) as usize % 3].map(str::to_owned);
    r.status = [200, 200, 200, 200, 400, 429, 500, 502][(h >> 24) as usize % 8];
    r.operation =
        ["chat.completions", "chat.completions", "embeddings"][(h >> 28) as usize % 3].to_owned();
    // Some records carry guard verdicts, as the pipeline writes them (keys in order).
    r.guards = match (h >> 40) % 4 {
        0 => None,
        1 => Some(r#"[{"action":"refuse","counts":{"card":1},"guard":"no-cards","side":"request"}]"#.to_owned()),
        2 => Some(r#"[{"action":"rewrite","counts":{},"guard":"redact","side":"request"},{"action":"allow","counts":{},"guard":"deny","side":"answer"}]"#.to_owned()),
        _ => Some(r#"[{"action":"monitor_refuse","counts":{},"guard":"Redact","side":"request"}]"#.to_owned()),
    };
    match (h >> 32) % 12 {
        0 => r.model = None,
        1 | 2 => {}
        u => {
            r = by(
                r,
                &format!("u{u}"),
                &format!("name {}", u % 4),
                &[&format!("team-{}", u % 3)],
            );
        }
    }
    r
}
