//! OpenAI batches run on Anthropic's Message Batches API. Anthropic keeps no input files: an
//! upload whose lines lead to an `anthropic` entry is translated line by line, as a live chat
//! completion is (the plugin's `prepare`), into `{"custom_id", "params"}` and held by the
//! gateway in `batches.spool_dir/held` until a batch is created from it; the batch then sends
//! them as `{"requests": [...]}`. Anthropic's batch object is shown as OpenAI's (its
//! `processing_status`, `request_counts` and times mapped), and its results, once it has ended,
//! as the OpenAI output and error files `{batch}.output` and `{batch}.errors` (see
//! [`super::results`]).
//!
//! Wire format: Anthropic's Message Batches reference (create, retrieve, cancel, results):
//! a `custom_id` matches `^[a-zA-Z0-9_-]{1,64}$`; `params` is a Messages request.

use std::path::{Path, PathBuf};

use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader, BufWriter};

use super::lines::LINE_MAX;
use super::spool::{Spooled, next_line, spool_failed};
use crate::error::ApiError;
use crate::gateway::Provider;
use crate::plugins::{
    CanonicalRequest, Operation, PluginCall, Prepared, ProviderConfig, ProviderPlugin, SlotKind,
};

pub use super::target::ANTHROPIC_DIALECT as DIALECT;
/// Bytes of a `custom_id` Anthropic takes, at most.
const CUSTOM_ID_MAX: usize = 64;

/// Where the gateway holds the translated lines of its file `id` (a gateway id: `file-` and
/// hex digits, so safe as a file name).
pub fn held_path(spool_dir: &Path, id: &str) -> PathBuf {
    spool_dir.join("held").join(format!("{id}.jsonl"))
}

/// A provider's plugin instance for a run of calls, started again after one fails.
pub struct Session {
    plugin: ProviderPlugin,
    pub config: ProviderConfig,
    call: Option<PluginCall>,
}

impl Session {
    pub fn new(provider: &Provider) -> Self {
        Self {
            plugin: provider.plugin.clone(),
            config: provider.config.clone(),
            call: None,
        }
    }

    pub async fn call(&mut self) -> Result<&mut PluginCall, ApiError> {
        match &mut self.call {
            Some(call) => Ok(call),
            slot @ None => {
                let call = self
                    .plugin
                    .start(SlotKind::Call)
                    .await
                    .map_err(ApiError::plugin)?;
                Ok(slot.insert(call))
            }
        }
    }

    /// Drops the instance, which a trap may have left unusable.
    pub fn reset(&mut self) {
        self.call = None;
    }
}

#[derive(serde::Deserialize)]
struct Line<'a> {
    custom_id: &'a str,
    url: &'a str,
    #[serde(borrow)]
    body: &'a RawValue,
}

/// Translates the checked (rewritten) lines of `input` into Message Batches requests, held at
/// `held`; a line Anthropic could not take is refused with its number.
pub async fn translate_lines(
    provider: &Provider,
    input: &Spooled,
    held: &Path,
) -> Result<u64, ApiError> {
    if let Some(dir) = held.parent() {
        tokio::fs::create_dir_all(dir).await.map_err(spool_failed)?;
    }
    let reader = tokio::fs::File::open(&input.path)
        .await
        .map_err(spool_failed)?;
    let mut reader = BufReader::with_capacity(256 << 10, reader);
    let out = tokio::fs::File::create(held).await.map_err(spool_failed)?;
    let mut out = BufWriter::with_capacity(256 << 10, out);
    let mut session = Session::new(provider);
    let mut line = Vec::new();
    let mut number = 0;
    let refused = |line: u64, message: String| ApiError::InvalidBatchLine { line, message };
    while let Some(text) = next_line(&mut reader, &mut line).await? {
        number += 1;
        let parsed: Line = serde_json::from_slice(text)
            .map_err(|_| refused(number, "could not be read again.".to_owned()))?;
        if parsed.url != "/v1/chat/completions" {
            return Err(refused(
                number,
                "Anthropic's Message Batches run `/v1/chat/completions` lines only.".to_owned(),
            ));
        }
        let id = parsed.custom_id;
        if id.is_empty()
            || id.len() > CUSTOM_ID_MAX
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(refused(
                number,
                "`custom_id` must be 1 to 64 letters, digits, `-` or `_` for Anthropic's \
                 Message Batches."
                    .to_owned(),
            ));
        }
        let params = params(&mut session, parsed.body.get())
            .await
            .map_err(|e| match e {
                ApiError::InvalidBatchLine { message, .. } => refused(number, message),
                other => other,
            })?;
        let request = format!(
            "{{\"custom_id\":{},\"params\":{params}}}\n",
            serde_json::to_string(id).unwrap_or_default()
        );
        out.write_all(request.as_bytes())
            .await
            .map_err(spool_failed)?;
    }
    out.flush().await.map_err(spool_failed)?;
    Ok(number)
}

/// One chat completions body as Messages `params`, by the plugin's live translation.
async fn params(session: &mut Session, body: &str) -> Result<String, ApiError> {
    let model = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("model").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default();
    let request = CanonicalRequest {
        operation: Operation::ChatCompletions,
        model,
        body: body.to_owned(),
        stream: false,
        headers: Vec::new(),
        native: None,
    };
    let config = session.config.clone();
    let prepared = match session.call().await?.prepare(&config, &request).await {
        Ok(prepared) => prepared,
        Err(failure) => {
            session.reset();
            return Err(ApiError::plugin(failure));
        }
    };
    match prepared {
        Ok(Prepared::Upstream(http)) if http.body.len() <= LINE_MAX => String::from_utf8(http.body)
            .map_err(|_| ApiError::InvalidBatchLine {
                line: 0,
                message: "its translation is not UTF-8.".to_owned(),
            }),
        Ok(_) => Err(ApiError::InvalidBatchLine {
            line: 0,
            message: "could not be translated to a Messages request.".to_owned(),
        }),
        Err(error) => Err(ApiError::InvalidBatchLine {
            line: 0,
            message: crate::clip::clip(&error.message, 512).into_owned(),
        }),
    }
}

/// The body of a create call, `{"requests": [...]}`, written from the held lines to a spooled
/// file to be streamed upstream.
pub async fn requests_body(held: &Path, dir: &Path) -> Result<Spooled, ApiError> {
    let reader = tokio::fs::File::open(held).await.map_err(spool_failed)?;
    let mut reader = BufReader::with_capacity(256 << 10, reader);
    let (mut spooled, out) = Spooled::create(dir).await.map_err(spool_failed)?;
    let mut out = BufWriter::with_capacity(256 << 10, out);
    out.write_all(b"{\"requests\":[")
        .await
        .map_err(spool_failed)?;
    let mut bytes = 13;
    let mut line = Vec::new();
    let mut first = true;
    while let Some(text) = next_line(&mut reader, &mut line).await? {
        if !first {
            out.write_all(b",").await.map_err(spool_failed)?;
            bytes += 1;
        }
        first = false;
        out.write_all(text).await.map_err(spool_failed)?;
        bytes += text.len() as u64;
    }
    out.write_all(b"]}").await.map_err(spool_failed)?;
    out.flush().await.map_err(spool_failed)?;
    spooled.bytes = bytes + 2;
    Ok(spooled)
}

/// Seconds since the epoch of an RFC 3339 time, as OpenAI's objects give times.
fn seconds(value: Option<&Value>) -> Option<i64> {
    let text = value?.as_str()?;
    let time =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    Some(time.unix_timestamp())
}

/// Anthropic's batch object `raw` as OpenAI's, over `previous` (what the client sent and the
/// gateway last showed: `endpoint`, `metadata`, ...). Ids are the upstream's; the caller puts
/// the gateway's in.
pub fn openai_batch(raw: &Value, previous: &Value) -> Value {
    let count = |name: &str| {
        raw.get("request_counts")
            .and_then(|c| c.get(name))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let (processing, succeeded) = (count("processing"), count("succeeded"));
    let failed = count("errored") + count("canceled") + count("expired");
    let id = raw.get("id").and_then(Value::as_str).unwrap_or_default();
    let cancelling = raw.get("cancel_initiated_at").is_some_and(|v| !v.is_null());
    let ended = seconds(raw.get("ended_at"));
    let status = match raw.get("processing_status").and_then(Value::as_str) {
        Some("ended") if cancelling => "cancelled",
        Some("ended") if succeeded == 0 && count("expired") > 0 => "expired",
        Some("ended") => "completed",
        Some("canceling") => "cancelling",
        _ => "in_progress",
    };
    let is = |s: &str| (status == s).then_some(ended).flatten();
    let mut object = previous.as_object().cloned().unwrap_or_default();
    let created = seconds(raw.get("created_at"));
    let fields = json!({
        "id": id,
        "object": "batch",
        "endpoint": previous.get("endpoint").cloned().unwrap_or(json!("/v1/chat/completions")),
        "errors": null,
        "completion_window": "24h",
        "status": status,
        "output_file_id": (ended.is_some() && succeeded > 0).then(|| format!("{id}.output")),
        "error_file_id": (ended.is_some() && failed > 0).then(|| format!("{id}.errors")),
        "created_at": created,
        "in_progress_at": created,
        "expires_at": seconds(raw.get("expires_at")),
        "finalizing_at": ended,
        "completed_at": is("completed"),
        "failed_at": null,
        "expired_at": is("expired"),
        "cancelling_at": seconds(raw.get("cancel_initiated_at")),
        "cancelled_at": is("cancelled"),
        "request_counts": {
            "total": processing + succeeded + failed,
            "completed": succeeded,
            "failed": failed,
        },
        "metadata": previous.get("metadata").cloned().unwrap_or(Value::Null),
    });
    if let Value::Object(fields) = fields {
        object.extend(fields);
    }
    Value::Object(object)
}
