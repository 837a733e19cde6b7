//! A finished batch's output file read as the upstream streams it, one usage record per line
//! at the catalog's batch price.
//!
//! Once, across restarts and replicas: the replica that meters a batch first takes it with a
//! conditional `UPDATE` (a lease of [`LEASE_US`]; see `ledger::batches`); every record's key
//! (request id `{batch}:{custom_id}`, time the batch's `completed_at`) is the same whoever
//! writes it, so a batch metered again after its meterer died mid-way adds only the lines the
//! ledger does not hold. The batch is marked metered once every line is queued in the journal.

use bytes::{Buf, BytesMut};
use futures_util::StreamExt;
use serde_json::Value;

use super::lines::LINE_MAX;
use super::results::{self, Results};
use super::upstream::{self, Api, Call};
use crate::catalog::cost_micros;
use crate::clip::clip;
use crate::error::ApiError;
use crate::gateway::{Gateway, Provider};
use crate::ledger::{StoredBatch, UsageRecord};
use crate::plugins::Usage;
use crate::state::AppState;

/// How long a replica may take to meter a batch before another may take it over.
pub const LEASE_US: i64 = 10 * 60 * 1_000_000;
/// Bytes of a `custom_id` kept in a record's request id.
const CUSTOM_ID_KEPT: usize = 200;

/// Meters `batch`'s output file (the upstream's `output_upstream_id`); returns the lines
/// recorded.
pub async fn meter(
    state: &AppState,
    gateway: &Gateway,
    provider: &Provider,
    batch: &StoredBatch,
    object: &Value,
    output_upstream_id: &str,
) -> Result<i64, ApiError> {
    // Every line is priced as the batch's model at this entry; a line whose upstream model
    // differs (a snapshot of it) is still the model the client asked for.
    let target = super::target::resolve(gateway, &batch.model).ok();
    let price = target
        .as_ref()
        .and_then(|t| t.provider.price(t.model))
        .and_then(|info| info.at_batch_price());
    let upstream_model = target.as_ref().map(|t| t.model.to_owned());
    let at = ["completed_at", "cancelled_at", "expired_at", "failed_at"]
        .iter()
        .find_map(|k| object.get(*k).and_then(Value::as_i64))
        .map_or(batch.created_us, |s| s.saturating_mul(1_000_000));
    let operation = operation_of(object);
    let mut lines = 0;
    let mut record_line = |line: &[u8], usage: Option<&Usage>| {
        let Some(record) = record(batch, line, at, operation, &upstream_model, price.as_ref())
        else {
            return;
        };
        let record = match usage {
            Some(usage) => with_usage(record, usage, price.as_ref()),
            None => record,
        };
        lines += 1;
        // The journal holds it from here; the batch is marked metered after the last.
        drop(state.ledger.record(record));
    };
    if let Some((batch_id, kind)) = results::named(output_upstream_id)
        .filter(|_| upstream::api(provider) == Some(Api::Anthropic))
    {
        let response =
            upstream::send(state, gateway, provider, Call::BatchResults(batch_id)).await?;
        let mut results = Results::new(provider, response, batch.model.clone(), kind);
        while let Some(translated) = results.next().await {
            let translated = translated?;
            let line = translated
                .line
                .strip_suffix(b"\n")
                .unwrap_or(&translated.line);
            record_line(line, translated.usage.as_ref());
        }
        return Ok(lines);
    }
    let response = upstream::send(
        state,
        gateway,
        provider,
        Call::FileContent(output_upstream_id),
    )
    .await?;
    let mut buffer = BytesMut::new();
    let mut body = response.bytes_stream();
    loop {
        let chunk = match tokio::time::timeout(provider.timeout, body.next()).await {
            Err(_) => {
                return Err(ApiError::UpstreamTimeout {
                    provider: provider.name.to_string(),
                });
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(ApiError::UpstreamUnreachable {
                    provider: provider.name.to_string(),
                    detail: e.without_url().to_string(),
                });
            }
            Ok(Some(Ok(chunk))) => chunk,
        };
        buffer.extend_from_slice(&chunk);
        while let Some(end) = memchr::memchr(b'\n', &buffer) {
            let line = buffer.split_to(end + 1);
            record_line(&line[..end], None);
        }
        if buffer.len() > LINE_MAX {
            // A line longer than any answer: skipped to its end rather than held.
            tracing::warn!(batch = %batch.id, "a batch output line is too long to meter");
            buffer.advance(buffer.len());
        }
    }
    if !buffer.is_empty() {
        record_line(&buffer, None);
    }
    Ok(lines)
}

/// `chat.completions` for a chat batch, as live records name the operation.
fn operation_of(object: &Value) -> &'static str {
    match object.get("endpoint").and_then(Value::as_str) {
        Some("/v1/embeddings") => "embeddings",
        Some("/v1/completions") => "completions",
        Some("/v1/moderations") => "moderations",
        _ => "chat.completions",
    }
}

/// `record` with the counts the plugin read from the upstream's own answer (cache writes
/// among them, which OpenAI's line has no place for).
fn with_usage(
    record: UsageRecord,
    usage: &Usage,
    price: Option<&crate::catalog::ModelInfo>,
) -> UsageRecord {
    let succeeded = (200..300).contains(&record.status);
    // As a live answer is priced: the tokens written to the cache at the cache-write price.
    let cache_write = usage.cache_write_tokens.min(usage.input_tokens);
    let cost = match (succeeded, price) {
        (true, Some(info)) => Some(cost_micros(
            info,
            usage.input_tokens - cache_write,
            usage.output_tokens,
            usage.cached_input_tokens,
            cache_write,
            0,
        )),
        (true, None) => None,
        (false, _) => Some(0),
    };
    UsageRecord {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cached_input_tokens: usage.cached_input_tokens,
        cache_write_tokens: usage.cache_write_tokens,
        reasoning_tokens: usage.reasoning_tokens,
        cost_micros: cost,
        ..record
    }
}

/// One output line's record; `None` for a blank or unreadable line.
fn record(
    batch: &StoredBatch,
    line: &[u8],
    time_us: i64,
    operation: &str,
    model: &Option<String>,
    price: Option<&crate::catalog::ModelInfo>,
) -> Option<UsageRecord> {
    let line: Value = serde_json::from_slice(line).ok()?;
    let custom_id = line.get("custom_id").and_then(Value::as_str)?;
    let response = line.get("response").filter(|r| !r.is_null());
    let status = response
        .and_then(|r| r.get("status_code"))
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .unwrap_or(500);
    let usage = response
        .and_then(|r| r.get("body"))
        .and_then(|b| b.get("usage"));
    let count = |keys: &[&[&str]]| -> u64 {
        keys.iter()
            .find_map(|path| {
                let mut v = usage?;
                for k in *path {
                    v = v.get(*k)?;
                }
                v.as_u64()
            })
            .unwrap_or(0)
    };
    let input = count(&[&["prompt_tokens"], &["input_tokens"]]);
    let output = count(&[&["completion_tokens"], &["output_tokens"]]);
    let cached = count(&[
        &["prompt_tokens_details", "cached_tokens"],
        &["input_tokens_details", "cached_tokens"],
    ]);
    let reasoning = count(&[
        &["completion_tokens_details", "reasoning_tokens"],
        &["output_tokens_details", "reasoning_tokens"],
    ]);
    let succeeded = (200..300).contains(&status);
    let cost = match (succeeded, price) {
        (true, Some(info)) => Some(cost_micros(info, input, output, cached, 0, 0)),
        (true, None) => None,
        (false, _) => Some(0),
    };
    let error_type = (!succeeded).then(|| {
        line.get("error")
            .and_then(|e| e.get("code"))
            .and_then(Value::as_str)
            .map_or_else(|| format!("http_{status}"), |c| clip(c, 64).into_owned())
    });
    Some(UsageRecord {
        request_id: format!("{}:{}", batch.id, clip(custom_id, CUSTOM_ID_KEPT)),
        time_us,
        project: batch.project.clone(),
        api_key_id: batch.api_key_id.clone(),
        provider: Some(batch.provider.clone()),
        model: model.clone(),
        operation: operation.to_owned(),
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: cached,
        reasoning_tokens: reasoning,
        cost_micros: cost,
        status,
        error_type,
        batch_id: Some(batch.id.clone()),
        ..UsageRecord::default()
    })
}
